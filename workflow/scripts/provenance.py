import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger
from rmexplain.provenance import write_provenance

log = script_logger(snakemake)
write_provenance(
    config_hash=snakemake.params.config_sha256,
    bundled=snakemake.params.bundled,
    markers=snakemake.input.markers,
    origins=snakemake.input.origins,
    llm_uses=snakemake.input.llm_use,
    history=snakemake.params.history,
    workflow_dir=snakemake.scriptdir,
    json_out=snakemake.output.json,
    csv=snakemake.output.csv,
    md=snakemake.output.md,
    html=snakemake.output.html,
    log=log,
)
