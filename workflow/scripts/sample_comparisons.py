import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.data.stages import sample_to_files
from rmexplain.logs import script_logger

log = script_logger(snakemake)
sample_to_files(
    snakemake.wildcards.dataset,
    snakemake.params.spec,
    snakemake.params.n_per_seed,
    snakemake.params.seeds,
    snakemake.params.max_words,
    snakemake.output.comparisons,
    snakemake.output.origin,
    log,
)
