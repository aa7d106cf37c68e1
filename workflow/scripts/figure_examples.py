import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.analysis.stages import run_examples  # after the log is open

run_examples(
    snakemake.input.examples,
    list(snakemake.input.explanations),
    list(snakemake.input.perturbations),
    snakemake.input.comparisons,
    snakemake.params.slot["rms"],
    snakemake.params.slot["pairs"],
    snakemake.params.figures,
    [snakemake.output.figure],
    [snakemake.output.page],
    sides=snakemake.params.slot["sides"],
)
log.info("wrote %s", snakemake.output.page)
