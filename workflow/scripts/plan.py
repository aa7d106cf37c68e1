import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger
from rmexplain.plan import write_plan

log = script_logger(snakemake)
log.info("plan:\n%s", write_plan(snakemake.params.config, snakemake.output[0]))
