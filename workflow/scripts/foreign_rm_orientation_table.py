import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.explanations.stages import run_foreign_orientation_table
from rmexplain.logs import script_logger

log = script_logger(snakemake)
run_foreign_orientation_table(
    list(snakemake.input), snakemake.params.parts, snakemake.params.datasets, snakemake.output, log
)
