import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.findings.stages import run_effect_changes
from rmexplain.logs import script_logger

log = script_logger(snakemake)
run_effect_changes(
    inputs=dict(snakemake.input.items()),
    rms=snakemake.params.rms,
    references=snakemake.params.references,
    attributes=snakemake.params.attributes,
    dataset=snakemake.wildcards.dataset,
    method=snakemake.wildcards.method,
    output=snakemake.output[0],
    log=log,
)
