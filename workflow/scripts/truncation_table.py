import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger
from rmexplain.score.stages import run_truncation_table

log = script_logger(snakemake)
run_truncation_table(snakemake.params.parts, snakemake.params.policies, dict(snakemake.output.items()), log)
