import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.analysis.stages import run_global_sensitivity  # after the log is open

run_global_sensitivity(
    list(snakemake.input.explanations),
    snakemake.wildcards.dataset,
    snakemake.wildcards.method,
    snakemake.params.settings,
    snakemake.params.attributes,
    snakemake.params.rms,
    dict(snakemake.output.items()),
    log,
)
