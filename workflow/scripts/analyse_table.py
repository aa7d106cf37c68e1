from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.analysis.stages import run_table  # noqa: E402 - the log is open first

run_table(snakemake.wildcards.table, list(snakemake.input), list(snakemake.output), snakemake.params.level)
log.info("wrote %s", ", ".join(snakemake.output))
