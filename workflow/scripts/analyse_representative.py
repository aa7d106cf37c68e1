import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.analysis.stages import run_representative  # after the log is open

run_representative(
    list(snakemake.input.explanations),
    snakemake.input.pfr,
    snakemake.wildcards.dataset,
    snakemake.wildcards.method,
    {"variants": snakemake.params.variants},
    snakemake.params.rms,
    snakemake.params.pairs,
    dict(snakemake.output.items()),
    log,
)
