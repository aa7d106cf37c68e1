import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.hub import use_local_copies
from rmexplain.logs import script_logger
from rmexplain.provenance import write_job_record
from rmexplain.resources import use_job_threads

log = script_logger(snakemake)
use_job_threads(snakemake.threads)
use_local_copies(snakemake.input.get("hub", []), log)  # models fetched by download_model: cache only

from rmexplain.effects.stages import run_embed_effect_texts  # after the log is open

run_embed_effect_texts(
    list(snakemake.input.get("edits", [])),
    list(snakemake.input.known),
    snakemake.params.encoder,
    snakemake.output[0],
    log,
    discovery=list(snakemake.input.get("discovery", [])),  # bias discovery's edits
    carriers=list(snakemake.input.get("carriers", [])),  # the carrier edits' undone texts
)
write_job_record(snakemake.output.job_record, rule=snakemake.rule, gpus=snakemake.resources.get("gpu", 0))
