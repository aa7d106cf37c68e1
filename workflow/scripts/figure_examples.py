from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.analysis.stages import run_examples  # noqa: E402 - the log is open first

run_examples(
    snakemake.input.examples,
    list(snakemake.input.explanations),
    list(snakemake.input.perturbations),
    snakemake.input.comparisons,
    snakemake.params.rms,
    snakemake.params.pairs,
    snakemake.params.figures,
    list(snakemake.output.figures),
    list(snakemake.output.pages),
)
log.info("wrote %d example pages", len(snakemake.output.pages))
