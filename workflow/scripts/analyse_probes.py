from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.analysis.stages import run_probes  # noqa: E402 - the log is open first

run_probes(
    list(snakemake.input.explanations),
    list(snakemake.input.perturbations),
    snakemake.input.comparisons,
    snakemake.wildcards.dataset,
    snakemake.wildcards.method,
    snakemake.params.probes,
    snakemake.params.level,
    snakemake.output[0],
    log,
)
