import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.tokens.stages import run_scan_modes  # after the log is open

run_scan_modes(
    [tuple(pair) for pair in snakemake.params.pairs],
    snakemake.params.specs,
    snakemake.params.prompts,
    snakemake.params.n,
    snakemake.params.figures,
    snakemake.output.table,
    snakemake.output.figure,
    snakemake.params.scan,
)
