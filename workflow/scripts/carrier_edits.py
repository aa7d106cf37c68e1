import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.findings.stages import run_carrier_edits
from rmexplain.logs import script_logger

log = script_logger(snakemake)
run_carrier_edits(dict(snakemake.input.items()), snakemake.wildcards.dataset, snakemake.output[0], log)
