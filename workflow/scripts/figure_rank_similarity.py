from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.analysis.stages import run_rank_similarity_figure  # noqa: E402 - the log is open first

run_rank_similarity_figure(
    list(snakemake.input.tau_rms),
    list(snakemake.input.tau_sides),
    snakemake.params.figures,
    snakemake.output[0],
    snakemake.params.level,
)
log.info("wrote %s", snakemake.output[0])
