import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.tokens.stages import plot_paper_figures  # after the log is open

plot_paper_figures(
    list(snakemake.input),
    snakemake.params.prompts,
    snakemake.params.options,
    snakemake.params.framing_pairs,
    snakemake.params.figures,
    dict(snakemake.output.items()),
)
