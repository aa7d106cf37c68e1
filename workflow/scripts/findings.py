import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.findings.stages import run_findings
from rmexplain.logs import script_logger

log = script_logger(snakemake)
run_findings(
    inputs=dict(snakemake.input.items()),
    descriptions=snakemake.params.descriptions,
    order=snakemake.params.order,
    level=snakemake.params.level,
    links=snakemake.params.links,
    outputs=dict(snakemake.output.items()),
    log=log,
    carriers=snakemake.params.carriers,  # dataset -> RM -> its reference, where carriers are re-scored
    bootstrap=snakemake.params.bootstrap,  # for the interval of a class measured by re-scoring
)
