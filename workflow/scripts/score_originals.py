import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.hub import use_local_copies
from rmexplain.logs import script_logger
from rmexplain.provenance import write_job_record
from rmexplain.resources import use_job_threads
from rmexplain.schemas import ORIGINAL_SCORES, write_table
from rmexplain.score.stages import score_originals
from rmexplain.score.store import open_store

log = script_logger(snakemake)
use_job_threads(snakemake.threads)
use_local_copies(snakemake.input.hub, log)  # models fetched by download_model: cache only
artifacts = {k: v for k, v in snakemake.input.items() if k not in ("comparisons", "hub")}
spec = snakemake.params.spec
store = open_store(snakemake.params.store, spec, artifacts, snakemake.input.hub)  # null: off
frame = score_originals(snakemake.input.comparisons, snakemake.wildcards.rm, spec, artifacts, log, store)
write_table(frame, snakemake.output[0], ORIGINAL_SCORES, "original_scores")
write_job_record(
    snakemake.output.job_record,
    rule=snakemake.rule,
    gpus=snakemake.resources.get("gpu", 0),
    rms={snakemake.wildcards.rm: snakemake.params.spec},
)
