import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.hub import use_local_copies
from rmexplain.logs import script_logger
from rmexplain.provenance import write_job_record
from rmexplain.tokens.stages import run_human_scores

log = script_logger(snakemake)
use_local_copies(snakemake.input.get("hub", []), log)  # models fetched by download_model: cache only
artifacts = {k: v for k, v in snakemake.input.items() if k not in ("ranking", "hub")}
run_human_scores(
    snakemake.wildcards.rm,
    snakemake.params.spec,
    artifacts,
    snakemake.input.ranking,
    snakemake.params.prompt,
    snakemake.output[0],
    threads=snakemake.threads,
    scan=snakemake.params.scan,
)
write_job_record(
    snakemake.output.job_record,
    rule=snakemake.rule,
    gpus=snakemake.resources.get("gpu", 0),
    rms={snakemake.wildcards.rm: snakemake.params.spec},
)
