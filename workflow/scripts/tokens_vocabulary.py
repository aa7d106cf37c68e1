from rmexplain.logs import script_logger
from rmexplain.tokens.pipeline import run_vocabulary

log = script_logger(snakemake)
run_vocabulary(
    snakemake.wildcards.rm, snakemake.params.spec, snakemake.params.vocabulary, snakemake.output[0]
)
