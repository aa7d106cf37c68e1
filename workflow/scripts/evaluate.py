from rmexplain.evaluation import evaluate_explanations
from rmexplain.logs import script_logger
from rmexplain.schemas import (
    COMPARISONS,
    DISTANCES,
    EXPLANATIONS,
    METRICS,
    ORIGINAL_SCORES,
    read_table,
    write_table,
)

log = script_logger(snakemake)
frame = evaluate_explanations(
    read_table(snakemake.input.explanations, EXPLANATIONS, "explanations"),
    read_table(snakemake.input.distances, DISTANCES, "distances"),
    read_table(snakemake.input.originals, ORIGINAL_SCORES, "original_scores"),
    [read_table(p, ORIGINAL_SCORES, "original_scores") for p in snakemake.input.orienting],
    read_table(snakemake.input.comparisons, COMPARISONS, "comparisons"),
    snakemake.wildcards.dataset,
    snakemake.wildcards.rm,
    snakemake.wildcards.method,
)
log.info("%d metric rows", frame.height)
write_table(frame, snakemake.output[0], METRICS, "metrics")
