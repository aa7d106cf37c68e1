import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.explanations.stages import run_distances
from rmexplain.logs import script_logger

log = script_logger(snakemake)
run_distances(dict(snakemake.input.items()), snakemake.params.settings, snakemake.output[0], log)
