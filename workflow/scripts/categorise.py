import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.explanations.stages import run_categorise
from rmexplain.logs import script_logger

log = script_logger(snakemake)
run_categorise(
    snakemake.input,
    snakemake.params.orientation,
    snakemake.wildcards.dataset,
    snakemake.wildcards.rm,
    snakemake.wildcards.method,
    snakemake.output[0],
    log,
)
