import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.tokens.stages import import_official_scan  # after the log is open

import_official_scan(
    snakemake.input[0], snakemake.wildcards.rm, snakemake.wildcards.prompt, snakemake.output[0]
)
