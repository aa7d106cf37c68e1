import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.effects.stages import run_planted_recovery
from rmexplain.logs import script_logger

log = script_logger(snakemake)
run_planted_recovery(
    inputs={k: list(snakemake.input[k]) for k in ("effects", "edits", "comparisons")},
    pairs=snakemake.params.pairs,
    expectations=snakemake.params.expectations,
    planted=snakemake.params.planted,
    primary=snakemake.params.primary,
    level=snakemake.params.level,
    outputs=dict(snakemake.output.items()),
    log=log,
)
