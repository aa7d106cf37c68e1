import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.hub import download_model
from rmexplain.logs import script_logger

log = script_logger(snakemake)
download_model(snakemake.params.spec, snakemake.output[0], log)
