import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger
from rmexplain.tokens.stages import plot_human_disagreements

log = script_logger(snakemake)
plot_human_disagreements(snakemake.input[0], snakemake.params.figures, snakemake.output[0])
