from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.analysis.stages import run_pfr_figure  # noqa: E402 - the log is open first

run_pfr_figure(
    snakemake.input[0],
    snakemake.wildcards.dataset,
    snakemake.wildcards.method,
    snakemake.params.figures,
    snakemake.output[0],
    snakemake.params.level,
)
log.info("wrote %s", snakemake.output[0])
