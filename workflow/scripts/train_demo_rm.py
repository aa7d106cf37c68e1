from rmexplain.logs import script_logger
from rmexplain.score.demo import train_demo_head

log = script_logger(snakemake)
train_demo_head(snakemake.params.part, snakemake.params.training, snakemake.output[0], log)
