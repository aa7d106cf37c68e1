import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.data.stages import sample_comparisons
from rmexplain.logs import script_logger
from rmexplain.schemas import COMPARISONS, write_table

log = script_logger(snakemake)
frame = sample_comparisons(
    snakemake.wildcards.dataset,
    snakemake.params.spec,
    snakemake.params.n_per_seed,
    snakemake.params.seeds,
    snakemake.params.max_words,
    log,
)
write_table(frame, snakemake.output[0], COMPARISONS, "comparisons")
