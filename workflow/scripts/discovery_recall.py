import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.discovery.stages import run_discovery_recall
from rmexplain.logs import script_logger

log = script_logger(snakemake)
datasets = snakemake.params.datasets
run_discovery_recall(
    biases=snakemake.input.biases,
    edits=dict(zip(datasets, snakemake.input.edits, strict=True)),
    comparisons=dict(zip(datasets, snakemake.input.comparisons, strict=True)),
    planted=snakemake.params.planted,
    moved_share=snakemake.params.moved_share,
    outputs=dict(snakemake.output.items()),
    log=log,
    scales=dict(zip(snakemake.params.planted, snakemake.input.scales, strict=True)),  # RM -> its base's scale
)
