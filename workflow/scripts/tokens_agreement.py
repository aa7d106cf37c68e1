import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger
from rmexplain.tokens.stages import run_agreement

log = script_logger(snakemake)
run_agreement(
    list(snakemake.input),
    snakemake.params.prompt_ids,
    snakemake.params.analysis,
    snakemake.params.properties,
    dict(snakemake.output.items()),
)
