import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.discovery.stages import run_discovery_round
from rmexplain.hub import use_local_copies
from rmexplain.logs import script_logger

log = script_logger(snakemake)
use_local_copies(snakemake.input.get("hub", []), log)  # a later round's encoder: the downloaded copy only
run_discovery_round(
    inputs={
        "comparisons": snakemake.input.comparisons,
        "originals": list(snakemake.input.originals),
        "previous": list(snakemake.input.previous),
        "previous_edits": list(snakemake.input.previous_edits),
        "attribute_edits": list(snakemake.input.attribute_edits),  # a later round's: the attribute edits
        "attribute_changes": list(snakemake.input.attribute_changes),  # and each RM's change of them
    },
    rms=snakemake.params.rms,
    references=snakemake.params.references,
    settings=snakemake.params.settings,
    dataset=snakemake.wildcards.dataset,
    engine=snakemake.wildcards.engine,
    round_=int(snakemake.wildcards.round),
    outputs=dict(snakemake.output.items()),
    log=log,
    llm=snakemake.params.llm,
)
