import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.hub import use_local_copies
from rmexplain.logs import script_logger
from rmexplain.tokens.stages import run_gcg

log = script_logger(snakemake)
use_local_copies(snakemake.input.get("hub", []), log)  # models fetched by download_model: cache only
run_gcg(
    snakemake.wildcards.rm,
    snakemake.params.spec,
    snakemake.wildcards.prompt,
    snakemake.params.prompt,
    snakemake.wildcards.objective,
    snakemake.params.gcg,
    snakemake.params.scan,
    snakemake.output[0],
    threads=snakemake.threads,
)
