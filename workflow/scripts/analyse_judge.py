import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.hub import use_local_copies
from rmexplain.logs import script_logger
from rmexplain.provenance import write_job_record

log = script_logger(snakemake)
use_local_copies(snakemake.input.get("hub", []), log)  # models fetched by download_model: cache only
from rmexplain.analysis.stages import run_judge  # after the log is open

run_judge(
    snakemake.input.perturbations,
    snakemake.input.comparisons,
    (snakemake.wildcards.dataset, snakemake.wildcards.method, snakemake.wildcards.orienter),
    snakemake.params.settings,
    snakemake.params.llm,
    snakemake.params.attributes,
    snakemake.output.judgements,
    log,
    snakemake.output.llm_use,
)
write_job_record(snakemake.output.job_record, rule=snakemake.rule, gpus=snakemake.resources.get("gpu", 0))
