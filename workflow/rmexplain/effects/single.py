"""Attribute effects of one comparison (``rmexplain explain``): both responses edited along every attribute in
both directions by the method's editor, every RM scoring the edits, and the effects layer's primary
estimator over them.

With one comparison there are two original responses: no reward sd to standardise by and no spread of lengths,
and a bootstrap over one comparison has nothing to resample. So the effects here are in the RM's reward units
(the length row per word), point estimates over the edits of this one comparison, without intervals; the
table says so. The workflow's effects over many comparisons are the ones to read for what an RM rewards.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import polars as pl

from rmexplain.analysis.bootstrap import BootstrapSettings
from rmexplain.design import Design
from rmexplain.effects.analysis import EffectSettings, effect_input, effects_table, with_sources, word_counts
from rmexplain.effects.edits import effect_editor, make_effect_edits
from rmexplain.perturb.stages import method_services
from rmexplain.schemas import EFFECT_EDITS, REWARDS, write_table
from rmexplain.score.stages import score_stage

NOTE = (
    "Attribute effects of this one comparison: both responses edited along every attribute, once each way, "
    "every RM scoring the edits; the primary estimator's change in reward (reward units; length: per word "
    "added) when a response moves to an attribute's better side. n: the edits behind each row. One "
    "comparison has no reward sd and nothing to resample: point estimates from {n} edits per attribute, no "
    "intervals; run "
    "the workflow on many comparisons for what an RM rewards."
)


def one_comparison_effects(
    design: Design,
    comparisons: pl.DataFrame,
    comparisons_path: str,
    method: str,
    rms: Sequence[str],
    originals: Mapping[str, pl.DataFrame],
    explanations: Mapping[str, pl.DataFrame],
    artifacts: Mapping[str, Mapping[str, str]],
    work: Path,
    log: logging.Logger,
) -> pl.DataFrame | None:
    """Per RM and attribute (and length) of the primary estimator: its effect on this comparison's edits, in
    reward units, its rank by |effect| and its direction in words; None where ``method`` has no editor."""
    entry = design.method(method)
    if effect_editor(entry.registered) is None:
        log.warning("%s makes no attribute-effect edits: no effects for this comparison", method)
        return None
    attributes = dict(design.config["attributes"])
    services = method_services(entry.registered, design.llm if entry.uses_llm else None, log)
    edits, _ = make_effect_edits(comparisons, method, entry.registered, entry.settings, attributes, services,
                                 False, log)  # fmt: skip
    edits_path = work / "effect_edits.parquet"
    write_table(edits, edits_path, EFFECT_EDITS, "effect edits")
    rewards = {}
    for rm in rms:
        frame = score_stage("effects", comparisons_path, [str(edits_path)], rm, design.scoring_spec(rm),
                                   dict(artifacts[rm]), log)  # fmt: skip
        write_table(frame, work / f"effect_rewards_{rm}.parquet", REWARDS, "effect rewards")
        rewards[rm] = frame
    data = in_reward_units(
        effect_input(
            comparisons, edits, {rm: originals[rm] for rm in rms}, rewards, explanations, list(attributes)
        ),
        edits,
        comparisons,
        list(attributes),
    )
    primary = str(design.effects["primary"])
    settings = EffectSettings((primary,), primary, BootstrapSettings(n_resamples=1, method="percentile"))
    table = effects_table(data, list(rms), {rm: None for rm in rms}, settings)
    return table.select(
        "rm",
        "rank",
        "attribute",
        pl.col("effect").round(4).alias("effect (reward units)"),
        pl.col("n").alias("n edits"),
    ).sort("rm", "rank")


def in_reward_units(data, edits: pl.DataFrame, comparisons: pl.DataFrame, attributes: list[str]):
    """The effect input with every RM's sd set to 1 (effects in reward units) and the length change in words
    (a length row per word, so measured even where its two responses have one length): one comparison's two
    responses give neither a reward sd nor a length sd."""
    sourced = with_sources(edits.filter(pl.col("attribute").is_in(attributes)), comparisons)
    words = word_counts(sourced["text"].to_list()) - word_counts(sourced["source_text"].to_list())
    rms = {rm: dataclasses.replace(changes, sd=1.0) for rm, changes in data.rms.items()}
    length = np.asarray(words, dtype=np.float64)
    return dataclasses.replace(data, length_change=length, rms=rms, length_measured=True)
