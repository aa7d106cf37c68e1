from rmexplain.explain import categorise
from rmexplain.logs import script_logger
from rmexplain.schemas import (
    COMPARISONS,
    EXPLANATIONS,
    ORIGINAL_SCORES,
    PERTURBATIONS,
    REWARDS,
    read_table,
    write_table,
)

log = script_logger(snakemake)
frame = categorise(
    read_table(snakemake.input.comparisons, COMPARISONS, "comparisons"),
    read_table(snakemake.input.originals, ORIGINAL_SCORES, "original_scores"),
    read_table(snakemake.input.perturbations, PERTURBATIONS, "perturbations"),
    read_table(snakemake.input.rewards, REWARDS, "rewards"),
    snakemake.wildcards.dataset,
    snakemake.wildcards.rm,
    snakemake.wildcards.method,
    log,
)
write_table(frame, snakemake.output[0], EXPLANATIONS, "explanations")
