import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.explanations.stages import run_evaluation_tables
from rmexplain.logs import script_logger

log = script_logger(snakemake)
run_evaluation_tables(snakemake.input, snakemake.output, log)
