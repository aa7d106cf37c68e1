import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.tokens.stages import run_paper_analyses  # after the log is open

run_paper_analyses(
    list(snakemake.input),
    snakemake.params.prompt_ids,
    snakemake.params.options,
    snakemake.params.framing_pairs,
    snakemake.params.properties,
    dict(snakemake.output.items()),
)
