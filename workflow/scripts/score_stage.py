import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.hub import use_local_copies
from rmexplain.logs import script_logger
from rmexplain.provenance import write_job_record
from rmexplain.resources import use_job_threads
from rmexplain.schemas import REWARDS, write_table
from rmexplain.score.stages import score_stage
from rmexplain.score.store import open_store

log = script_logger(snakemake)
use_job_threads(snakemake.threads)
use_local_copies(snakemake.input.hub, log)  # models fetched by download_model: cache only
# The RM's own files (a demo head, a planted RM's base scale, the texts' embeddings), none empty
inputs = ("comparisons", "texts", "known", "hub")
artifacts = {k: v for k, v in snakemake.input.items() if k not in inputs and len(v)}
store = open_store(snakemake.params.store, snakemake.params.spec, artifacts, snakemake.input.hub)
frame = score_stage(
    snakemake.params.stage,  # perturbations, effects (the attribute effects' edits) or discovery (a round's)
    snakemake.input.comparisons,
    list(snakemake.input.texts),
    snakemake.wildcards.rm,
    snakemake.params.spec,
    artifacts,
    log,
    known=list(snakemake.input.known),  # the RM's earlier score tables: their texts are copied
    store=store,  # the RM's score store outside results/ (null: off)
)
write_table(frame, snakemake.output[0], REWARDS, f"{snakemake.params.stage} rewards")
write_job_record(
    snakemake.output.job_record,
    rule=snakemake.rule,
    gpus=snakemake.resources.get("gpu", 0),
    rms={snakemake.wildcards.rm: snakemake.params.spec},
)
