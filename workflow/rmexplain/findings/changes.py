"""Each attribute-effect edit's reward change under each RM: the numbers behind one effect, edit by edit.

The attribute effects (``rmexplain.effects``) turn every round-1 edit's reward change into one number per
attribute; this table keeps the edits' own changes, so a finding can name the edits behind it, what they
changed, and which of them moved the reward. ``effect_change`` is the y(e) the estimators average (the
change less the reference RM's, in the RM's reward sd), ``reward_change`` the RM's own change in reward units.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from rmexplain.effects.analysis import effect_input, with_sources, word_counts
from rmexplain.schemas import EFFECT_CHANGES, conform


def round_one(edits: pl.DataFrame, attributes: Sequence[str]) -> pl.DataFrame:
    """The round-1 edits of the configured attributes (what the primary estimators read), in edit order."""
    return edits.filter((pl.col("round") == 1) & pl.col("attribute").is_in(list(attributes)))


def effect_changes(
    comparisons: pl.DataFrame,
    edits: pl.DataFrame,
    originals: Mapping[str, pl.DataFrame],
    rewards: Mapping[str, pl.DataFrame],
    references: Mapping[str, str | None],
    attributes: Sequence[str],
    dataset: str,
    method: str,
) -> pl.DataFrame:
    """EFFECT_CHANGES rows: every round-1 edit × every RM of ``originals`` (rows by RM, then edit id)."""
    mine = round_one(edits, attributes)
    data = effect_input(comparisons, mine, originals, rewards, {}, list(attributes))
    sourced = with_sources(mine, comparisons)  # the rows effect_input's arrays follow
    words_change = word_counts(sourced["text"].to_list()) - word_counts(sourced["source_text"].to_list())
    frames = []
    for rm in originals:
        reference = references.get(rm)
        frames.append(
            sourced.select("edit_id", "comparison_id", "target", "attribute", "direction").with_columns(
                dataset=pl.lit(dataset),
                method=pl.lit(method),
                rm=pl.lit(rm),
                reward_change=pl.Series(_nullable(data.rms[rm].change)),
                effect_change=pl.Series(_nullable(data.standardised(rm, reference))),
                words_change=pl.Series(words_change.astype(np.int64)),
                length_change=pl.Series(data.length_change),
                reference=pl.lit(reference, dtype=pl.String),
            )
        )
    frame = (
        pl.concat(frames) if frames else pl.DataFrame(schema={k: c.dtype for k, c in EFFECT_CHANGES.items()})
    )
    return conform(frame.select(list(EFFECT_CHANGES)), EFFECT_CHANGES, f"effect changes[{dataset}/{method}]")


def _nullable(values: np.ndarray) -> list[float | None]:
    """NaN (a text some RM did not score) as null."""
    return [float(v) if np.isfinite(v) else None for v in values]
