import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.hub import use_local_copies
from rmexplain.logs import script_logger
from rmexplain.tokens.stages import run_vocabulary

log = script_logger(snakemake)
use_local_copies(snakemake.input.get("hub", []), log)  # models fetched by download_model: cache only
run_vocabulary(
    snakemake.wildcards.rm, snakemake.params.spec, snakemake.params.vocabulary, snakemake.output[0]
)
