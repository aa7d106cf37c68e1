import json
import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.hub import use_local_copies
from rmexplain.logs import script_logger
from rmexplain.provenance import write_job_record
from rmexplain.resources import use_job_threads
from rmexplain.score.stages import reward_scale

log = script_logger(snakemake)
use_job_threads(snakemake.threads)
use_local_copies(snakemake.input.hub, log)  # models fetched by download_model: cache only
artifacts = {k: v for k, v in snakemake.input.items() if k != "hub" and len(v)}
scale = reward_scale(snakemake.wildcards.rm, snakemake.params.spec, artifacts, log)
with open(snakemake.output[0], "w", encoding="utf-8") as out:
    json.dump(scale, out, indent=2, sort_keys=True)
    out.write("\n")
write_job_record(
    snakemake.output.job_record,
    rule=snakemake.rule,
    gpus=snakemake.resources.get("gpu", 0),
    rms={snakemake.wildcards.rm: snakemake.params.spec},
)
