import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger
from rmexplain.resources import use_job_threads
from rmexplain.score.stages import train_demo_rm

log = script_logger(snakemake)
use_job_threads(snakemake.threads)  # one thread: the head is tiny; the same bits as on two
train_demo_rm(snakemake.params.part, snakemake.params.training, snakemake.output[0], log)
