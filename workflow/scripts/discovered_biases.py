import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.discovery.stages import run_discovered_biases
from rmexplain.logs import script_logger

log = script_logger(snakemake)
outputs = {k: snakemake.output[k] for k in ("parquet", "csv", "md", "html")}
outputs["edits"] = dict(zip(snakemake.params.datasets, snakemake.output.edits, strict=True))
run_discovered_biases(
    effects=list(snakemake.input.effects),
    edits=snakemake.params.parts,
    fdr=snakemake.params.fdr,
    outputs=outputs,
    log=log,
)
