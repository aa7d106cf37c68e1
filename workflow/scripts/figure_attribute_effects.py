import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.effects.stages import run_effects_figure
from rmexplain.logs import script_logger

log = script_logger(snakemake)
run_effects_figure(
    snakemake.input[0], snakemake.params.figures, snakemake.params.level, snakemake.output[0], log
)
