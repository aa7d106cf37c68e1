import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger
from rmexplain.provenance import write_provenance

log = script_logger(snakemake)
write_provenance(
    config=snakemake.params.config,
    config_files=snakemake.params.config_files,
    bundled=snakemake.params.bundled,
    markers=snakemake.input.markers,
    origins=snakemake.input.origins,
    llm_uses=snakemake.input.llm_use,
    jobs=snakemake.input.jobs,
    history=snakemake.params.history,
    workflow_dir=snakemake.scriptdir,
    json_out=snakemake.output.json,
    config_out=snakemake.output.config,
    csv=snakemake.output.csv,
    md=snakemake.output.md,
    html=snakemake.output.html,
    log=log,
)
