from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.analysis.stages import run_global_sensitivity  # noqa: E402 - the log is open first

run_global_sensitivity(
    list(snakemake.input.explanations),
    snakemake.wildcards.dataset,
    snakemake.wildcards.method,
    snakemake.params.settings,
    snakemake.params.attributes,
    snakemake.params.rms,
    dict(snakemake.output.items()),
    log,
)
