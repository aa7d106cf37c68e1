import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger
from rmexplain.tokens.stages import run_figures

log = script_logger(snakemake)
tables = {k: v for k, v in snakemake.input.items() if k != "scans"}
run_figures(
    list(snakemake.input.scans),
    snakemake.params.prompts,
    tables,
    snakemake.params.figures,
    dict(snakemake.output.items()),
)
