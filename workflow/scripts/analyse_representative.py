from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.analysis.stages import run_representative  # noqa: E402 - the log is open first

run_representative(
    list(snakemake.input.explanations),
    snakemake.input.pfr,
    snakemake.wildcards.dataset,
    snakemake.wildcards.method,
    {"variants": snakemake.params.variants},
    snakemake.params.rms,
    snakemake.params.pairs,
    dict(snakemake.output.items()),
    log,
)
