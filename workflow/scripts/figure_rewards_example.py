import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.analysis.stages import run_rewards_example  # after the log is open

example = snakemake.params.example
run_rewards_example(
    list(snakemake.input.explanations),
    snakemake.input.examples,
    example["comparison_id"],
    example["rm"],
    example["rms"],
    snakemake.params.figures,
    snakemake.output[0],
)
