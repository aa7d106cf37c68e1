import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger
from rmexplain.perturb.stages import run_skips_table

log = script_logger(snakemake)
run_skips_table(list(snakemake.input), snakemake.params.parts, snakemake.output, log)
