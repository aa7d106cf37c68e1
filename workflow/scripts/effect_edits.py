import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.hub import use_local_copies
from rmexplain.logs import script_logger
from rmexplain.provenance import write_job_record

log = script_logger(snakemake)
use_local_copies(snakemake.input.get("hub", []), log)  # models fetched by download_model: cache only

from rmexplain.effects.stages import run_effect_edits  # after the log is open

run_effect_edits(
    comparisons=snakemake.input.comparisons,
    method=snakemake.wildcards.method,
    registered=snakemake.params.registered_method,
    settings=snakemake.params.settings,
    attributes=snakemake.params.attributes,
    rewrite_of_rewrite=snakemake.params.rewrite_of_rewrite,
    llm=snakemake.params.llm,
    outputs={k: snakemake.output[k] for k in ("edits", "skipped", "llm_use")},
    log=log,
)
write_job_record(snakemake.output.job_record, rule=snakemake.rule, gpus=snakemake.resources.get("gpu", 0))
