from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.analysis.stages import run_probe_figure  # noqa: E402 - the log is open first

run_probe_figure(list(snakemake.input), snakemake.params.figures, snakemake.output[0])
log.info("wrote %s", snakemake.output[0])
