import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger
from rmexplain.paths import ELO_TABLES
from rmexplain.tokens.stages import run_elo_figure5

log = script_logger(snakemake)
run_elo_figure5(
    snakemake.wildcards.elo_prompt,
    {part: getattr(snakemake.output, part) for part in ELO_TABLES},
    snakemake.params.n_differences,
    snakemake.params.n_background,
    snakemake.params.n_highlight,
)
