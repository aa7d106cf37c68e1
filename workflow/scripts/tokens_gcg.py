import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.hub import use_local_copies
from rmexplain.logs import script_logger
from rmexplain.provenance import write_job_record
from rmexplain.tokens.stages import run_gcg_variant

log = script_logger(snakemake)
use_local_copies(snakemake.input.get("hub", []), log)  # models fetched by download_model: cache only
run_gcg_variant(
    snakemake.params.variant,
    name=snakemake.wildcards.rm,
    spec=snakemake.params.spec,
    prompt_id=snakemake.wildcards.prompt,
    prompt=snakemake.params.prompt,
    objective=snakemake.wildcards.objective,
    gcg=snakemake.params.gcg,
    scan=snakemake.params.scan,
    output=snakemake.output[0],
    threads=snakemake.threads,
)
write_job_record(
    snakemake.output.job_record,
    rule=snakemake.rule,
    gpus=snakemake.resources.get("gpu", 0),
    rms={snakemake.wildcards.rm: snakemake.params.spec},
)
