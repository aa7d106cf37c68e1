import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger
from rmexplain.tokens.stages import run_framing

log = script_logger(snakemake)
run_framing(list(snakemake.input), snakemake.wildcards.a, snakemake.wildcards.b, snakemake.output[0])
