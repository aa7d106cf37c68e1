import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger
from rmexplain.tokens.stages import run_gcg_summary

log = script_logger(snakemake)
run_gcg_summary(list(snakemake.input), snakemake.output[0])
