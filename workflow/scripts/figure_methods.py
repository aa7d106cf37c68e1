import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.explanations.stages import run_methods_figure
from rmexplain.logs import script_logger

log = script_logger(snakemake)
run_methods_figure(
    snakemake.input.coverage, snakemake.input.distances, snakemake.params.figures, snakemake.output[0]
)
log.info("wrote %s", snakemake.output[0])
