import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger
from rmexplain.tokens.stages import run_lexical

log = script_logger(snakemake)
run_lexical(list(snakemake.input), snakemake.params.lexicon, dict(snakemake.output.items()))
