import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.analysis.stages import run_judge_figure  # after the log is open

run_judge_figure(list(snakemake.input), snakemake.params.level, snakemake.params.figures, snakemake.output[0])
log.info("wrote %s", snakemake.output[0])
