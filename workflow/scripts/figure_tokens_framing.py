import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger
from rmexplain.tokens.stages import plot_framing

log = script_logger(snakemake)
plot_framing(
    list(snakemake.input),
    snakemake.wildcards.a,
    snakemake.wildcards.b,
    snakemake.params.figures,
    snakemake.output[0],
)
