"""Which class carries a finding: a catalogue probe, a mined string or an attribute whose edits change a
class the RM rewards or penalises (a numbered list adds digits, "Let me know if …" adds a first-person
word) is listed under that class, not as a finding of its own (docs/findings.md).

The classes are the discovered features of ``rmexplain.discovery.classes`` (numbers as digits, first- and
second-person words, filler words, ending on a question, opening with "I") and the features that count one
character class (the catalogue's punctuation probes — an exclamation mark, an ellipsis, … — its emoji
probe, a mined character): "Sure!", "Hi there!" and "Good luck!" are the exclamation mark an RM penalises.
Each is tested with its own edits, so its effect per instance, β_c, is measured causally. A feature F's
effect per instance β_F is fitted on its own edits at the length slope
(``rmexplain.effects.estimators.length_design``: an intercept where F has edits both ways, the signed
instance s, the instances beyond the first, dose − s, where their number varies); the same fit of each
edit's change in the class's count, Δc = count(edited) − count(source), gives b_c, the class's instances
that come with one instance of F. Where the RM's reward is additive in the classes, F's
fit is Σ_c β_c·b_c plus what F does besides, so β_c·b_c / β_F is the share of F's effect that the class's
own measured effect accounts for. F goes under the class whose share is nearest the whole of it (ties by
the class's name), where that share is at least ``MIN_SHARE`` and both are significant: of two nested
classes (opening with "I" holds a first-person word) the one that overshoots is not the carrier. A class
may go under another (opening with "I" under first-person words), never under itself: the placements are
made share nearest the whole first, and a row under a class carries none. An attribute effect is read the
same way over its round-1 edits (an intercept and the signed direction: b_c per edit towards the better
side); one a class does not carry may still go under a discovered feature by its carrier phrase
(``rmexplain.findings.summary.place_under_carriers``).

This reads the edits already scored: it names the carrier from the classes' measured effects; it does not
re-score F's edits with the class undone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any

import numpy as np
import polars as pl

from rmexplain.discovery.base import Feature
from rmexplain.discovery.classes import CLASS_KINDS
from rmexplain.discovery.mining import feature_named

MIN_SHARE = 0.5  # of F's effect the class must account for
CHARACTER_KINDS = ("punctuation", "character")  # catalogue punctuation probes, mined characters: a class each
CHARACTER_PROBES = ("emoji",)  # a catalogue format probe that counts a character class
TOLERANCE = 1e-9  # a share of exactly MIN_SHARE, up to rounding, counts


def place_under_classes(
    rows: list[dict[str, Any]], edits: Mapping[str, pl.DataFrame]
) -> list[dict[str, Any]]:
    """``rows`` (discovered FINDINGS rows) with ``under``, ``under_share`` and ``under_per_instance`` set on
    each significant feature a significant class of the same dataset and RM carries; ``edits``: dataset ->
    its discovery edits (``feature``, ``direction``, ``source_text``, ``edited_text``; ``engine`` and ``dose``
    where the table has them). A class may go under another class (opening with "I" under first-person
    words); the placements are made share nearest the whole first (ties by the feature's, then the class's
    name), and a row that is under a class carries none, so no class ends up under itself."""
    held = _classes(rows)
    fitted = _PerInstance(
        lambda dataset, method, name: _feature_edits(edits[dataset], method, name)
    )  # every RM of a dataset shares a feature's edits: each b_c is fitted once
    candidates = []
    for row in rows:
        mine = held.get((row["dataset"], row["rm"]), [])
        if mine and row["significant"] and row["dataset"] in edits:
            candidates += [(*c, row) for c in _shares(row, mine, fitted) if c[1] != row["name"]]
    placed: set[tuple[str, str, str]] = set()  # (dataset, RM, feature)
    carriers: set[tuple[str, str, str]] = set()
    nearest_first = sorted(candidates, key=lambda c: (_from_whole(c[0]), c[3]["name"], c[1]))
    for share, name, per_instance, row in nearest_first:
        key = (row["dataset"], row["rm"])
        if (*key, row["name"]) in placed or (*key, row["name"]) in carriers or (*key, name) in placed:
            continue
        row.update(under=name, under_share=share, under_per_instance=per_instance)
        placed.add((*key, row["name"]))
        carriers.add((*key, name))
    return rows


def place_attributes_under_classes(
    attributes: list[dict[str, Any]],
    discovered: Sequence[Mapping[str, Any]],
    edits: Mapping[tuple[str, str], pl.DataFrame],
) -> list[dict[str, Any]]:
    """``attributes`` (attribute FINDINGS rows) with ``under``, ``under_share`` and ``under_per_instance``
    set on each significant attribute effect a significant class of the same dataset and RM carries, its
    edits fitted as its effect is (an intercept and the signed direction); ``edits``: (dataset, method) ->
    its round-1 edits (``attribute``, ``direction`` better/worse, ``source_text``, ``text``). Per edit, as the
    attribute effects are: b_c is the class's instances one edit towards the better side changes."""
    held = _classes(discovered)
    fitted = _PerInstance(
        lambda dataset, method, name: (
            edits[(dataset, method)]
            .filter(pl.col("attribute") == name)
            .select(
                pl.when(pl.col("direction") == "better").then(1).otherwise(-1).alias("direction"),
                "source_text",
                pl.col("text").alias("edited_text"),
            )
        )
    )  # every RM of a (dataset, method) shares an attribute's edits: each b_c is fitted once
    for row in attributes:
        mine = held.get((row["dataset"], row["rm"]), [])
        pair = edits.get((row["dataset"], row["method"]))
        if row["kind"] != "attribute" or not mine or not row["significant"] or pair is None:
            continue
        shares = _shares(row, mine, fitted)
        if shares:
            share, name, per_instance = min(shares, key=lambda c: (_from_whole(c[0]), c[1]))
            row.update(under=name, under_share=share, under_per_instance=per_instance)
    return attributes


def _from_whole(share: float) -> float:
    """How far a share is from the whole of a finding (to 1e-9: shares equal but for rounding tie)."""
    return round(abs(1 - share), 9)


def _classes(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], list[tuple[str, float, Feature]]]:
    """(dataset, RM) -> its significant classes: (name, effect per instance, detector)."""
    out: dict[tuple[str, str], list[tuple[str, float, Feature]]] = {}
    for row in rows:
        found = _class_of(row)
        if found is not None:
            out.setdefault((row["dataset"], row["rm"]), []).append((row["name"], row["effect"], found))
    return out


class _PerInstance:
    """b_c of a finding's edits, fitted once per (dataset, method, finding, class) whatever the RM;
    ``edits_of(dataset, method, finding)`` gives the finding's edits."""

    def __init__(self, edits_of: Callable[[str, str, str], pl.DataFrame]) -> None:
        self.edits_of = edits_of
        self.edits: dict[tuple[str, str, str], pl.DataFrame] = {}
        self.fitted: dict[tuple[str, str, str, str], float] = {}

    def __call__(self, row: Mapping[str, Any], name: str, detector: Feature) -> float:
        finding = (row["dataset"], row["method"], row["name"])
        if (*finding, name) not in self.fitted:
            if finding not in self.edits:
                self.edits[finding] = self.edits_of(*finding)
            self.fitted[(*finding, name)] = _per_instance(self.edits[finding], detector)
        return self.fitted[(*finding, name)]


def _shares(
    row: Mapping[str, Any], classes: Sequence[tuple[str, float, Feature]], per_instance_of: _PerInstance
) -> list[tuple[float, str, float]]:
    """(share, class, b_c) of each class that accounts for at least ``MIN_SHARE`` of ``row``'s effect."""
    if not np.isfinite(row["effect"]) or row["effect"] == 0:
        return []
    out = []
    for name, effect, detector in classes:
        per_instance = per_instance_of(row, name, detector)
        share = per_instance * effect / row["effect"]
        if np.isfinite(share) and share >= MIN_SHARE - TOLERANCE:
            out.append((float(share), name, per_instance))
    return out


def _class_of(row: Mapping[str, Any]) -> Feature | None:
    """The class a significant discovered row with a finite effect is, else None."""
    if not row["significant"] or not np.isfinite(row["effect"]) or row["effect"] == 0:
        return None
    return _class_named(row["name"])


@cache
def _class_named(name: str) -> Feature | None:
    """The detector of a carrier class from its name: a class, or a feature that counts one character class
    (``CHARACTER_KINDS``, ``CHARACTER_PROBES``); None for any other feature."""
    found = feature_named(name)
    if found is None:
        return None
    carries = found.kind in CLASS_KINDS or found.kind in CHARACTER_KINDS or found.name in CHARACTER_PROBES
    return found if carries else None


def _feature_edits(edits: pl.DataFrame, engine: str, feature: str) -> pl.DataFrame:
    """One feature's edits of one engine (every engine's where the table names none)."""
    mine = edits.filter(pl.col("feature") == feature)
    return mine.filter(pl.col("engine") == engine) if "engine" in mine.columns else mine


def _per_instance(edits: pl.DataFrame, detector: Feature) -> float:
    """b_c: the class instances that come with one instance of the feature (the signed instance's
    coefficient when each edit's change in the class's count is fitted as the feature's effect is); NaN
    without edits."""
    if not edits.height:
        return float("nan")
    sign = edits["direction"].cast(pl.Float64).to_numpy()
    dose = edits["dose"].cast(pl.Float64).to_numpy() if "dose" in edits.columns else sign
    pairs = edits.select("source_text", "edited_text").iter_rows()
    change = np.array([detector.count(e) - detector.count(s) for s, e in pairs], dtype=np.float64)
    columns = [np.ones_like(sign)] if np.unique(sign).size > 1 else []
    signed_column = len(columns)
    columns.append(sign)
    if any(np.unique(np.abs(dose[sign == s])).size > 1 for s in (-1.0, 1.0)):
        columns.append(dose - sign)
    coefficients = np.linalg.lstsq(np.column_stack(columns), change, rcond=None)[0]
    return float(coefficients[signed_column])
