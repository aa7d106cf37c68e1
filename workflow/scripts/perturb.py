import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.hub import use_local_copies
from rmexplain.logs import script_logger
from rmexplain.provenance import write_job_record

log = script_logger(snakemake)
use_local_copies(snakemake.input.get("hub", []), log)  # models fetched by download_model: cache only

from rmexplain.perturb.stages import perturb_to_parquet  # after the log is open

perturb_to_parquet(
    comparisons=snakemake.input.comparisons,
    scores=snakemake.input.scores,
    method=snakemake.wildcards.method,
    registered_method=snakemake.params.registered_method,
    orienter=snakemake.wildcards.orienter,
    settings=snakemake.params.settings,
    llm=snakemake.params.llm,
    attributes=snakemake.params.attributes,
    output=snakemake.output.perturbations,
    skipped=snakemake.output.skipped,
    llm_use=snakemake.output.llm_use,
    log=log,
)
write_job_record(snakemake.output.job_record, rule=snakemake.rule, gpus=snakemake.resources.get("gpu", 0))
