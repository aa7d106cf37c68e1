import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.discovery.stages import run_round_effects
from rmexplain.logs import script_logger

log = script_logger(snakemake)
run_round_effects(
    inputs={
        "comparisons": snakemake.input.comparisons,
        "edits": snakemake.input.edits,
        "candidates": snakemake.input.candidates,
        "originals": list(snakemake.input.originals),
        "rewards": list(snakemake.input.rewards),
        "slope_edits": list(snakemake.input.slope_edits),  # the attribute edits: γ is theirs
        "slope_rewards": list(snakemake.input.slope_rewards),
    },
    rms=snakemake.params.rms,
    references=snakemake.params.references,
    bootstrap=snakemake.params.bootstrap,
    min_effect=snakemake.params.min_effect,
    fdr=snakemake.params.fdr,
    dataset=snakemake.wildcards.dataset,
    output=snakemake.output[0],
    log=log,
)
