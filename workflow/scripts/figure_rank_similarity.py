import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.analysis.stages import run_rank_similarity_figure  # after the log is open

run_rank_similarity_figure(
    list(snakemake.input.tau_rms),
    list(snakemake.input.tau_sides),
    snakemake.params.figures,
    snakemake.output[0],
    snakemake.params.level,
    snakemake.params.foreign,
)
log.info("wrote %s", snakemake.output[0])
