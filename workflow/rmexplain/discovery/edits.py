"""The edits that test each feature: on sampled original responses, remove it where present, add it where not.

The originals are the responses of the sampled comparisons (chosen and rejected), each distinct (prompt,
response) once (a pair drawn by two seeds is edited under its first comparison id). For each feature, the
responses that have it are candidates for a removal and the others for an addition; a direction is edited
only when at least ``min_per_direction`` responses call for it (fewer would leave its bootstrap replicates
without a unit of that direction), else the feature is tested in the other direction alone; with neither,
in the direction more responses call for (ties: adding). Up to ``responses_per_feature`` responses are
edited, half per direction where both are (the rest from the other), each direction's responses taken in
the order of sha256(feature, comparison id, target) — a fixed, seed-free order.

An edit the feature cannot make is a counted skip with its reason; so is an edit that leaves the text
unchanged or fails the feature's own detector afterwards (an addition the detector does not see). Each edit
records its dose: the instances it adds (+) or removes (−), the change of the feature's ``count``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from rmexplain.discovery.base import ADD, DIRECTION_NAMES, REMOVE, Feature, SkipEdit
from rmexplain.effects.analysis import original_texts
from rmexplain.ids import text_id
from rmexplain.perturb.skips import SkipRecorder
from rmexplain.schemas import BIAS_DISCOVERY_CANDIDATES, BIAS_DISCOVERY_EDITS, conform, polars_schema

STAGE = "discovery"


@dataclass(frozen=True)
class EditSettings:
    """``discovery.responses_per_feature`` and ``discovery.min_per_direction``."""

    responses_per_feature: int
    min_per_direction: int


def original_units(comparisons: pl.DataFrame) -> pl.DataFrame:
    """``comparison_id, target, prompt, text`` of every distinct (prompt, response), under the first
    comparison id (in sorted order) that holds it."""
    frame = original_texts(comparisons).sort("comparison_id", "target")
    return frame.unique(["prompt", "text"], keep="first", maintain_order=True)


def sampling_key(feature: str, comparison_id: str, target: str) -> str:
    return hashlib.sha256("\x1f".join([feature, comparison_id, target]).encode()).hexdigest()


def directions(present: np.ndarray, settings: EditSettings) -> dict[int, int]:
    """Direction -> how many responses to edit that way, given which responses have the feature."""
    available = {REMOVE: int(present.sum()), ADD: int(present.size - present.sum())}
    usable = [d for d in (ADD, REMOVE) if available[d] >= settings.min_per_direction]
    if not usable:
        usable = [max((ADD, REMOVE), key=lambda d: (available[d], d == ADD))]
        usable = [d for d in usable if available[d]]
    total = settings.responses_per_feature
    if len(usable) == 1:
        return {usable[0]: min(total, available[usable[0]])}
    half = {d: min(available[d], total // 2 + (total % 2 if d == ADD else 0)) for d in usable}
    spare = total - sum(half.values())
    for d in usable:  # what one direction cannot use goes to the other
        extra = min(spare, available[d] - half[d])
        half[d] += extra
        spare -= extra
    return half


def feature_edits(
    feature: Feature, units: pl.DataFrame, settings: EditSettings, skips: SkipRecorder
) -> tuple[list[dict], np.ndarray]:
    """The edit rows of one feature (feature, direction, dose, source_text, edited_text, comparison_id,
    target) and its presence over ``units``."""
    texts = units["text"].to_list()
    ids, targets = units["comparison_id"].to_list(), units["target"].to_list()
    present = np.array([bool(feature.present(t)) for t in texts], dtype=bool)
    rows = []
    for direction, count in directions(present, settings).items():
        pool = np.flatnonzero(present if direction == REMOVE else ~present)
        order = sorted(pool, key=lambda i: sampling_key(feature.name, ids[i], targets[i]))[:count]
        for i in order:
            edited = _edit(feature, texts[i], direction, ids[i], targets[i], skips)
            if edited is not None:
                rows.append(
                    {
                        "feature": feature.name,
                        "direction": direction,
                        "dose": edit_dose(feature, texts[i], edited, direction),
                        "source_text": texts[i],
                        "edited_text": edited,
                        "comparison_id": ids[i],
                        "target": targets[i],
                    }
                )
    return rows, present


def _edit(
    feature: Feature, text: str, direction: int, comparison_id: str, target: str, skips: SkipRecorder
) -> str | None:
    """The edited text, or None with the reason recorded."""
    verb = DIRECTION_NAMES[direction]
    edit = feature.add if direction == ADD else feature.remove
    try:
        edited = edit(text)
    except SkipEdit as reason:
        skips.add(comparison_id, STAGE, f"{verb}: {reason}", target=target, attribute=feature.name)
        return None
    if not isinstance(edited, str):
        raise TypeError(
            f"discovery feature {feature.name!r}: {type(feature).__module__}.{type(feature).__qualname__}"
            f".{edit.__name__} returned {type(edited).__name__}, not the edited text (str); raise "
            "rmexplain.discovery.base.SkipEdit to skip a response it cannot edit"
        )
    if edited == text:
        reason = "the edit changed nothing"
    elif bool(feature.present(edited)) != (direction == ADD):
        reason = f"the {verb} edit left the feature {'absent' if direction == ADD else 'present'}"
    else:
        return edited
    skips.add(comparison_id, STAGE, f"{verb}: {reason}", target=target, attribute=feature.name)
    return None


def edit_dose(feature: Feature, source: str, edited: str, direction: int) -> int:
    """The instances an edit adds (+) or removes (−): ``count(edited) − count(source)``, which must have the
    edit's direction (a ``count`` that says 0 where ``present`` says the feature is there is an error)."""
    dose = feature.count(edited) - feature.count(source)
    if dose * direction <= 0:
        raise ValueError(
            f"discovery feature {feature.name!r}: {type(feature).__module__}.{type(feature).__qualname__}"
            f".count gives {feature.count(source)} instance(s) before the {DIRECTION_NAMES[direction]} edit "
            f"and {feature.count(edited)} after it: count must be 0 exactly where present is false"
        )
    return dose


def make_edits(
    features: Sequence[Feature],
    units: pl.DataFrame,
    settings: EditSettings,
    engine: str,
    round_: int,
    screened: dict[str, tuple[str, float]],
    skips: SkipRecorder,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """DISCOVERY_EDITS rows of every feature (in ``features`` order) and DISCOVERY_CANDIDATES, one row per
    feature; ``screened``: feature -> (the RM whose screen chose it, its t statistic) for mined ones."""
    names = [f.name for f in features]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise ValueError(f"discovery engine {engine!r}: feature names {clash} are proposed twice")
    edit_rows, candidate_rows = [], []
    unit_ids = np.array([text_id(p, t) for p, t in units.select("prompt", "text").iter_rows()], dtype=object)
    for feature in features:
        rows, present = feature_edits(feature, units, settings, skips)
        edit_rows += rows
        made = {d: sum(r["direction"] == d for r in rows) for d in (ADD, REMOVE)}
        rm, t = screened.get(feature.name, (None, None))
        candidate_rows.append(
            {
                "feature": feature.name,
                "description": feature.description,
                "kind": feature.kind,
                "source": feature.source,
                "engine": engine,
                "round": round_,
                "n_present": int(present.sum()),
                "support": float(present.mean()) if present.size else float("nan"),
                "n_added": made[ADD],
                "n_removed": made[REMOVE],
                "screen_rm": rm,
                "screen_t": t,
                "present_in": sorted(unit_ids[present].tolist()),
            }
        )
    edits = pl.DataFrame(edit_rows, schema={k: v for k, v in polars_schema(BIAS_DISCOVERY_EDITS).items()
                                            if k not in ("engine", "round")})  # fmt: skip
    edits = edits.with_columns(engine=pl.lit(engine), round=pl.lit(round_, dtype=pl.Int64))
    candidates = pl.DataFrame(candidate_rows, schema=polars_schema(BIAS_DISCOVERY_CANDIDATES))
    return conform(edits, BIAS_DISCOVERY_EDITS, "discovery edits"), conform(
        candidates, BIAS_DISCOVERY_CANDIDATES, "discovery candidates"
    )
