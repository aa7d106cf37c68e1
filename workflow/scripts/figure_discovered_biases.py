import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.discovery.stages import run_biases_figure
from rmexplain.logs import script_logger

log = script_logger(snakemake)
run_biases_figure(
    snakemake.input[0],
    snakemake.params.figures,
    snakemake.params.level,
    snakemake.params.fdr,
    snakemake.output[0],
    log,
)
