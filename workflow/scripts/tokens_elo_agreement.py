import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.tokens.stages import run_elo_agreement  # after the log is open

run_elo_agreement(
    snakemake.wildcards.elo_prompt,
    snakemake.params.permutations,
    snakemake.params.seed,
    snakemake.params.figures,
    dict(snakemake.output.items()),
)
