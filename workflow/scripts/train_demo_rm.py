import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger
from rmexplain.score.stages import train_demo_rm

log = script_logger(snakemake)
train_demo_rm(snakemake.params.part, snakemake.params.training, snakemake.output[0], log)
