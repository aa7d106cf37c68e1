import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.explanations.stages import run_evaluate
from rmexplain.logs import script_logger

log = script_logger(snakemake)
run_evaluate(
    snakemake.input,
    snakemake.params.orientation,
    snakemake.params.settings,
    snakemake.wildcards.dataset,
    snakemake.wildcards.rm,
    snakemake.wildcards.method,
    snakemake.output[0],
    log,
)
