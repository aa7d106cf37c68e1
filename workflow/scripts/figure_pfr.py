import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.analysis.stages import run_pfr_figure  # after the log is open

run_pfr_figure(
    snakemake.input[0],
    snakemake.wildcards.dataset,
    snakemake.wildcards.method,
    snakemake.params.figures,
    snakemake.output[0],
    snakemake.params.level,
    snakemake.params.foreign,
)
log.info("wrote %s", snakemake.output[0])
