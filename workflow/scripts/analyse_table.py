import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.analysis.stages import run_table  # after the log is open

run_table(
    snakemake.wildcards.table,
    list(snakemake.input),
    list(snakemake.output),
    snakemake.params.level,
    snakemake.params.foreign,
)
log.info("wrote %s", ", ".join(snakemake.output))
