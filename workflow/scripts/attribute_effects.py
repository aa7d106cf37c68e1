import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.discovery.classes import class_counts
from rmexplain.discovery.edit_words import held_word_changes
from rmexplain.effects.stages import run_attribute_effects
from rmexplain.logs import script_logger

log = script_logger(snakemake)
run_attribute_effects(
    inputs=dict(snakemake.input.items()),
    rms=snakemake.params.rms,
    references=snakemake.params.references,
    settings=snakemake.params.settings,
    attributes=snakemake.params.attributes,
    dataset=snakemake.wildcards.dataset,
    method=snakemake.wildcards.method,
    output=snakemake.output[0],
    log=log,
    class_counts=class_counts,
    word_changes=held_word_changes,
)
