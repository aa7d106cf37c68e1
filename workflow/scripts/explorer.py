import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.explorer.build import run_explorer  # after the log is open

sizes = run_explorer(dict(snakemake.input.items()), snakemake.output.index, snakemake.params.settings)
log.info(
    "wrote %s and %d data files, %d bytes in all", snakemake.output.index, len(sizes) - 1, sum(sizes.values())
)
