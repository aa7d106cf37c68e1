"""The findings: per dataset and RM, what it rewards and penalises, in words and numbers (docs/findings.md).

Rows come from three places: the primary estimator's attribute effects and its ``length`` row (with the edits
behind each: an example, what they changed most often, and a phrase that carries most of the effect), and,
where the discovery stage ran, its discovered features (with an example of their edits). Each RM's rows are
ranked by its own |effect|; the leading ones are what the report's landing page and the explorer's first view
show.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

import numpy as np
import polars as pl

from rmexplain.discovery.estimate import SLOPE_COLUMNS, largest_fit
from rmexplain.discovery.mining import feature_named
from rmexplain.effects.analysis import median_row
from rmexplain.effects.base import LENGTH
from rmexplain.effects.estimators import TIE_DIGITS
from rmexplain.findings import language
from rmexplain.findings.attribution import RESCORED, Check, CheckKey
from rmexplain.findings.carriers import (
    EditTexts,
    class_named,
    feature_edit_texts,
    place_under_classes,
    same_edits_alike,
)
from rmexplain.findings.phrases import Changed, carrier, shown, top_runs
from rmexplain.schemas import FINDINGS, conform, polars_schema
from rmexplain.textdiff import words

ALPHA = 0.05  # a discovered feature is significant when its q-value is below this
HALF_COLUMNS = ("half_a_effect", "half_b_effect", "replicates")
INFLUENCE_COLUMNS = ("influential_pair", "without_it", "carried_by")
NATURE_COLUMNS = ("natural_effect", "natural_low", "natural_high", "natural_pairs", "nature")
ROBUST_ESTIMATOR = "robust_length_adjusted"  # the robust fit of the primary estimator below
ROBUST_OF = "length_adjusted"
ROBUST_AGREES = "agrees"
ROBUST_DIFFERS = "a few edits far from the rest make it"
ROBUST_SHARE = 0.5  # the robust fit agrees where it keeps the sign and at least this share of the effect
HOLDS = "holds in both halves"
FAILS = "does not hold in both halves"
TOO_FEW_PAIRS = "too few pairs to split"
NO_HALF_ESTIMATE = "no estimate in a half"
CONTEXT_WORDS = 5  # words of context on each side of an example's change
EXAMPLE_WORDS = 30  # an example's stretch of changes keeps within it; the length example changes no more


@dataclass(frozen=True)
class FindingSettings:
    """How many findings lead, and how many changed stretches a finding lists."""

    leading_attributes: int = 5  # largest significant attribute effects shown first (length always is)
    leading_discovered: int = 5  # largest significant discovered features shown first
    top_runs: int = 3  # inserted and deleted stretches listed per finding


# ── examples ──────────────────────────────────────────────────────────────────────────────────────────────
def snippet(source: str, edited: str) -> tuple[str, str]:
    """(before, after): the stretch of each text from its first change through the following changes that
    keep the stretch within ``EXAMPLE_WORDS`` words in both texts (a single longer change is kept whole), with
    ``CONTEXT_WORDS`` words around it and "…" where text is left out."""
    a, b = words(source), words(edited)
    changes = [op for op in SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    if not changes:
        return _cut(a, 0, len(a)), _cut(b, 0, len(b))
    _, i1, i2, j1, j2 = changes[0]
    for _, _, k2, _, l2 in changes[1:]:
        if k2 - i1 > EXAMPLE_WORDS or l2 - j1 > EXAMPLE_WORDS:
            break
        i2, j2 = k2, l2
    return (
        _cut(a, max(0, i1 - CONTEXT_WORDS), min(len(a), i2 + CONTEXT_WORDS)),
        _cut(b, max(0, j1 - CONTEXT_WORDS), min(len(b), j2 + CONTEXT_WORDS)),
    )


def _cut(pieces: list[str], start: int, end: int) -> str:
    text = "".join(pieces[start:end]).strip()
    return ("… " if start > 0 else "") + text + (" …" if end < len(pieces) else "")


# ── attribute and length findings of one (dataset, method) ───────────────────────────────────────────────
def edit_texts(edits: pl.DataFrame, comparisons: pl.DataFrame) -> pl.DataFrame:
    """``edit_id, source_text, text`` of round-1 edits (their source is the original response)."""
    originals = pl.concat(
        [comparisons.select("comparison_id", pl.lit(t).alias("target"), pl.col(t).alias("source_text"))
         for t in ("chosen", "rejected")]
    )  # fmt: skip
    return edits.filter(pl.col("round") == 1).join(originals, on=["comparison_id", "target"], how="left")


def _effects_rows(effects: pl.DataFrame) -> pl.DataFrame:
    return effects.filter(pl.col("primary")).sort(["rm", "rank"])


def attribute_findings(
    effects: pl.DataFrame,
    changes: pl.DataFrame,
    texts: pl.DataFrame,
    descriptions: Mapping[str, str],
    settings: FindingSettings,
) -> list[dict[str, Any]]:
    """FINDINGS rows of one (dataset, method): every RM's primary-estimator rows, with the edits behind them.

    ``changes``: EFFECT_CHANGES of the pair; ``texts``: ``edit_id, source_text, text`` of its round-1
    edits."""
    by_edit = {r["edit_id"]: r for r in texts.select("edit_id", "source_text", "text").iter_rows(named=True)}
    edits = {e: Changed.of(r["source_text"], r["text"]) for e, r in by_edit.items()}
    primary = _effects_rows(effects)
    robust = robust_effects(effects)
    rows = []
    for row in primary.iter_rows(named=True):
        mine = at_equal_length(changes.filter(pl.col("rm") == row["rm"]), primary, row["rm"])
        base = _base_row(row, descriptions)
        base.update(robust_of(row["effect"], robust.get((row["rm"], row["attribute"])), base["significant"]))
        if row["attribute"] == LENGTH:
            base.update(_length_example(mine, by_edit, row["effect"]))
        else:
            attribute = mine.filter(pl.col("attribute") == row["attribute"])
            base.update(_behind(attribute, row["effect"], by_edit, edits, settings))
        rows.append(base)
    return _lead(rows, settings.leading_attributes)


def robust_effects(effects: pl.DataFrame) -> dict[tuple[str, str], float]:
    """(rm, attribute) -> the effect of ``robust_length_adjusted``, where the primary estimator is
    ``length_adjusted`` and the table reports both; else empty."""
    primary = effects.filter(pl.col("primary"))["estimator"].unique().to_list()
    if primary != [ROBUST_OF]:
        return {}
    rows = effects.filter(pl.col("estimator") == ROBUST_ESTIMATOR).select("rm", "attribute", "effect")
    return {(r["rm"], r["attribute"]): r["effect"] for r in rows.iter_rows(named=True)}


def robust_of(effect: float | None, robust: float | None, significant: bool) -> dict[str, Any]:
    """``robust_effect`` (Huber's fit of the same design; docs/effects.md) and, for a significant finding,
    ``robust`` in words: it agrees where it keeps the effect's sign and at least half its size, else a few
    edits far from the rest make the effect; null where there is no robust estimate."""
    defined = robust is not None and np.isfinite(robust) and effect is not None and np.isfinite(effect)
    if not defined or not significant:
        return {"robust_effect": robust, "robust": None}
    agrees = robust * effect > 0 and abs(robust) >= ROBUST_SHARE * abs(effect)
    return {"robust_effect": robust, "robust": ROBUST_AGREES if agrees else ROBUST_DIFFERS}


def at_equal_length(changes: pl.DataFrame, primary: pl.DataFrame, rm: str) -> pl.DataFrame:
    """One RM's changes with ``equal_length``: y(e) − γ·Δℓ(e), γ the RM's ``length`` effect under the
    primary estimator (0 where it has no length row), so what the RM gives or takes for length itself is not
    credited to the phrases an edit inserts or deletes."""
    gamma = primary.filter((pl.col("rm") == rm) & (pl.col("attribute") == LENGTH))["effect"]
    slope = float(gamma[0]) if gamma.len() and np.isfinite(gamma[0]) else 0.0
    return changes.with_columns(equal_length=pl.col("effect_change") - slope * pl.col("length_change"))


def _base_row(row: Mapping[str, Any], descriptions: Mapping[str, str]) -> dict[str, Any]:
    name, effect = row["attribute"], row["effect"]
    defined = effect is not None and np.isfinite(effect)
    return {
        "dataset": row["dataset"],
        "method": row["method"],
        "rm": row["rm"],
        "kind": LENGTH if name == LENGTH else "attribute",
        "name": name,
        "description": None if name == LENGTH else descriptions.get(name),
        "phrase": language.attribute_phrase(name, effect) if defined else f"{name}: no estimate",
        "effect": effect,
        "low": row["low"],
        "high": row["high"],
        "significant": bool(row["significant"]),
        "q_value": None,
        "reference": row["reference"],
        "n": row["n"],
        "pairs": row.get("pairs"),
        "rank": row["rank"],
        **replication_of(row, bool(row["significant"])),
        **influence_of(row, bool(row["significant"])),
    }


def replication_of(row: Mapping[str, Any], significant: bool) -> dict[str, Any]:
    """A finding's halves (``half_a_effect``, ``half_b_effect``, ``replicates``, from its table's row) and
    ``replication`` in words: for a significant finding, whether it holds in both halves of the pairs, or
    why that could not be said (a half with fewer than two of its pairs: null; an undefined half: NaN);
    nothing for a finding that is not significant, or from a table without the halves."""
    if not all(c in row for c in HALF_COLUMNS):
        return {}
    out = {c: row[c] for c in HALF_COLUMNS}
    if not significant:
        return {**out, "replication": None}
    if row["replicates"] is not None:
        return {**out, "replication": HOLDS if row["replicates"] else FAILS}
    missing = row["half_a_effect"] is None or row["half_b_effect"] is None
    return {**out, "replication": TOO_FEW_PAIRS if missing else NO_HALF_ESTIMATE}


def influence_of(row: Mapping[str, Any], significant: bool) -> dict[str, Any]:
    """A finding's most influential pair (``influential_pair``, ``without_it``, ``carried_by``, from its
    table's row; docs/findings.md): for a significant finding, as its table has it; null for one that is
    not; nothing from a table without them."""
    if not all(c in row for c in INFLUENCE_COLUMNS):
        return {}
    return {c: row[c] if significant else None for c in INFLUENCE_COLUMNS}


def _behind(
    edits: pl.DataFrame,
    effect: float,
    texts: Mapping[str, Mapping[str, str]],
    changed: Mapping[str, Changed],
    settings: FindingSettings,
) -> dict[str, Any]:
    """The example (the median change at equal length, among the edits that change the carrier where there
    is one: the example shows it), the most frequent changes and the carrier of an attribute's
    rewarded-direction edits."""
    rewarded = language.side(effect) if np.isfinite(effect) else "better"
    chosen = edits.filter((pl.col("direction") == rewarded) & pl.col("equal_length").is_not_null())
    chosen = chosen.sort("edit_id")
    ids, values = chosen["edit_id"].to_list(), chosen["equal_length"].to_numpy()
    out: dict[str, Any] = {"n_direction": len(ids)}
    if not ids:
        return out
    out["inserted_most"] = _listed(top_runs([changed[e].inserted_runs for e in ids], settings.top_runs))
    out["deleted_most"] = _listed(top_runs([changed[e].deleted_runs for e in ids], settings.top_runs))
    runs = frozenset(r for e in ids for r in (*changed[e].inserted_runs, *changed[e].deleted_runs))
    found = carrier([changed[e].inserted for e in ids], [changed[e].deleted for e in ids], values, runs)
    shows = chosen
    if found is not None:
        shows = chosen.filter(pl.Series([changed[e].changes(found.phrase, found.change) for e in ids]))
    out.update(_example(shows.row(median_row(shows["equal_length"].to_numpy()), named=True), texts))
    if found is not None:
        out.update(
            carrier=found.phrase,
            carrier_change=found.change,
            carrier_edits=found.n_edits,
            carrier_share_edits=found.share_edits,
            carrier_share_change=found.share_change,
        )
    return out


def _length_example(changes: pl.DataFrame, texts: Mapping[str, Mapping[str, str]], effect: float) -> dict:
    """An edit that shows the length effect: of the round-1 edits whose reward moved the way the effect says
    for their change in length, the one that changed the length most within ``EXAMPLE_WORDS`` words, so that
    the example reads whole on the first screen (none within: the one that changed it least; ties by edit
    id)."""
    if effect is None or not np.isfinite(effect) or effect == 0:
        return {}
    sign = np.sign(effect)
    fitting = changes.filter(
        (pl.col("words_change") != 0)
        & pl.col("effect_change").is_not_null()
        & (pl.col("effect_change") * pl.col("words_change").sign() * sign > 0)
    )
    if not fitting.height:
        return {}
    size = pl.col("words_change").abs()
    within = fitting.filter(size <= EXAMPLE_WORDS)
    if within.height:
        pick = within.sort([size, "edit_id"], descending=[True, False]).row(0, named=True)
    else:
        pick = fitting.sort([size, "edit_id"]).row(0, named=True)
    return _example(pick, texts)


def _example(row: Mapping[str, Any], texts: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    text = texts[row["edit_id"]]
    before, after = snippet(text["source_text"], text["text"])
    return {
        "example_edit_id": row["edit_id"],
        "example_comparison_id": row["comparison_id"],
        "example_before": before,
        "example_after": after,
        "example_effect_change": row["effect_change"],
        "example_reward_change": row["reward_change"],
        "example_words_change": row["words_change"],
    }


def _listed(items: Sequence[tuple[str, int]]) -> str | None:
    return "; ".join(f"{shown(run)} ({n})" for run, n in items) or None


def _lead(rows: list[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """Mark the leading rows of each (dataset, method, RM): its length row, and its ``k`` largest significant
    attribute rows that are not listed under a discovered feature (``under``)."""
    taken: dict[tuple[str, str, str], int] = {}
    for row in sorted(rows, key=lambda r: (r["dataset"], r["method"], r["rm"], r["rank"])):
        key = (row["dataset"], row["method"], row["rm"])
        if row["kind"] == LENGTH:
            row["leading"] = True
        elif row["significant"] and not row.get("under") and taken.get(key, 0) < k:
            taken[key] = taken.get(key, 0) + 1
            row["leading"] = True
        else:
            row["leading"] = False
    return rows


def place_under_carriers(
    attributes: list[dict[str, Any]], discovered: Sequence[Mapping[str, Any]], k: int
) -> list[dict[str, Any]]:
    """``attributes`` with ``under`` set where an attribute's carrier explains it by a discovered feature:
    a significant attribute effect whose carrier holds a leading (so significant) feature of the same RM and
    dataset (the feature's detector, ``rmexplain.discovery.mining.feature_named``, finds it in the carrier),
    whose sign says why — the rewarded direction inserts what the RM rewards, or deletes what it penalises. Of
    several, the largest |effect| (ties by name). Leading is marked again (``k``), placed ones left out."""
    features: dict[tuple[str, str], list[tuple[Mapping[str, Any], Any]]] = {}
    for row in discovered:
        found = feature_named(row["name"]) if row["leading"] else None  # shown first: room for those under it
        if found is not None:
            features.setdefault((row["dataset"], row["rm"]), []).append((row, found))
    for row in attributes:
        phrase = row.get("carrier")
        if row["kind"] != "attribute" or not row["significant"] or not phrase or row.get("under"):
            continue
        rewarded = row.get("carrier_change") == "inserts"
        held = [f for f, detector in features.get((row["dataset"], row["rm"]), ())
                if (f["effect"] > 0) == rewarded and detector.present(phrase)]  # fmt: skip
        if held:
            row["under"] = min(held, key=lambda f: (-abs(f["effect"]), f["name"]))["name"]
    return _lead(attributes, k)


# ── discovered features ───────────────────────────────────────────────────────────────────────────────────
DISCOVERED_COLUMNS = ("dataset", "rm", "engine", "feature", "description", "effect", "low", "high", "q_value",
                      "n", "support")  # fmt: skip
DISCOVERY_EDIT_COLUMNS = ("feature", "direction", "source_text", "edited_text")
FIT_COLUMNS = ("reference", "round", *SLOPE_COLUMNS)  # what a length row from discovery's fit reads


def discovery_length_findings(discovered: pl.DataFrame, measured: Collection[str]) -> list[dict[str, Any]]:
    """The ``length`` row of each RM with discovered features on a dataset without attribute effects
    (``measured``: the datasets with them, whose length row is theirs): the RM's length slope γ as bias
    discovery estimated it and held its features at (its largest fit's, ``largest_fit``; a class measured by
    re-scoring is no fit), per sd of words as the attribute effects' row, significant where its interval
    excludes 0, always leading. No example: discovery's edits add or remove a feature, not length."""
    alone = discovered.filter(~pl.col("dataset").is_in(list(measured)) & (pl.col("engine") != RESCORED))
    if alone.is_empty():
        return []
    missing = [c for c in FIT_COLUMNS if c not in alone.columns]
    if missing:
        raise ValueError(f"discovered biases: missing column(s) {missing} for the length row")
    rows = []
    for (dataset, rm), group in alone.group_by("dataset", "rm", maintain_order=True):
        fit = largest_fit(group)
        gamma, low, high = (fit[c] for c in SLOPE_COLUMNS)
        defined = all(v is not None and np.isfinite(v) for v in (gamma, low, high))
        rows.append(
            {"dataset": dataset, "method": fit["engine"], "rm": rm, "kind": LENGTH, "name": LENGTH,
             "description": None,
             "phrase": language.attribute_phrase(LENGTH, gamma) if defined else f"{LENGTH}: no estimate",
             "effect": gamma, "low": low, "high": high, "significant": defined and (low > 0 or high < 0),
             "reference": group["reference"][0], "n": fit["n"], "rank": 1, "leading": True}
        )  # fmt: skip
    return rows


def discovered_findings(
    discovered: pl.DataFrame,
    discovery_edits: Mapping[str, pl.DataFrame],
    settings: FindingSettings,
    checks: Mapping[CheckKey, Check] | None = None,
    unmasked: Mapping[tuple[str, str, str, str, str], Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """FINDINGS rows of the discovered features (``discovered_biases``'s rows), each with the first edit that
    adds it (file order) as its example; ``discovery_edits``: dataset -> that dataset's discovery edits,
    whose source texts give a mined phrase its case as the responses write it ("I", "Python"); ``checks``: the
    carriers re-scored (``rmexplain.findings.attribution``); ``unmasked``: (dataset, RM, kind, engine,
    feature) -> its effect with a class that works against it undone (``unmasked_of``)."""
    missing = [c for c in DISCOVERED_COLUMNS if c not in discovered.columns]
    if missing:
        raise ValueError(f"discovered biases: missing column(s) {missing}; have {discovered.columns}")
    texts = _source_texts(discovery_edits)
    rows = []
    for r in discovered.iter_rows(named=True):
        row = {
            "dataset": r["dataset"], "method": r["engine"], "rm": r["rm"], "kind": "discovered",
            "name": r["feature"], "description": r["description"],
            "phrase": _feature_phrase(r, texts.get((r["dataset"], r["feature"]), [])),
            "effect": r["effect"], "low": r["low"], "high": r["high"],
            "significant": discovered_significant(r), "q_value": r["q_value"],
            "reference": r.get("reference"), "n": r["n"], "pairs": r.get("pairs"),
        }  # fmt: skip
        row.update(replication_of(r, row["significant"]))
        row.update(influence_of(r, row["significant"]))
        row.update({c: r.get(c) for c in NATURE_COLUMNS})
        row.update(robust_of(r["effect"], r.get("robust_effect"), row["significant"]))
        row.update(_discovered_example(r, discovery_edits.get(r["dataset"])))
        if r.get("named_members"):  # a class the RM moves in some members only: read by them
            row["phrase"] = language.members_phrase(r["feature"], r["effect"], r["named_members"])
        row["members"] = r.get("members")
        row.update(unmasked_of(r, (unmasked or {}).get((r["dataset"], r["rm"], "discovered", r["engine"],
                                                         r["feature"])), texts))  # fmt: skip
        rows.append(row)
    texts = feature_edit_texts(discovery_edits)
    placed = place_under_same_edits(place_under_classes(rows, discovery_edits, checks, texts), texts)
    return _rank_discovered(placed, settings.leading_discovered)


def unmasked_of(
    row: Mapping[str, Any], unmasked: Mapping[str, Any] | None, texts: Mapping[tuple[str, str], list[str]]
) -> dict[str, Any]:
    """The FINDINGS columns of a discovered feature a class works against (``unmasked``: its effect with the
    class undone, ``by`` the class; none where no class does): ``unmasked_*``, and the phrase said of the
    feature without the class ("rewards a closer hoping it helps (I hope this helps!), its exclamation mark
    undone"), which the first screen ranks it by."""
    if unmasked is None:
        return {}
    mine = texts.get((row["dataset"], row["feature"]), [])
    said = language.feature_phrase(
        row["feature"], row["description"], unmasked["effect"], row.get("kind"), mine
    )
    return {
        "phrase": f"{said}, its {class_noun(unmasked['by'])} undone",
        "unmasked_by": unmasked["by"],
        "unmasked_effect": unmasked["effect"],
        "unmasked_low": unmasked["low"],
        "unmasked_high": unmasked["high"],
        "unmasked_pairs": unmasked["pairs"],
    }


def class_noun(name: str) -> str:
    """A carrier class as the object of "its" ("exclamation mark", "first-person words"):
    ``language.class_noun`` from its detector's description."""
    detector = class_named(name)
    return language.class_noun(name, None if detector is None else detector.description)


def shown_effect(row: Mapping[str, Any]) -> float:
    """The effect the first screen ranks a finding by: with a class that works against it undone where one
    does (``unmasked_effect``), else its own."""
    unmasked = row.get("unmasked_effect")
    return unmasked if unmasked is not None else row["effect"]


def place_under_same_edits(
    rows: list[dict[str, Any]], edits: Mapping[tuple[str, str], EditTexts]
) -> list[dict[str, Any]]:
    """``rows`` with ``under`` and ``same_edits`` set on each discovered feature whose edits a feature of
    another engine made too, word for word (``same_edits_alike``): of two such features of one dataset and
    RM, the one not already under a class, then the smaller q-value, the larger |effect|, the engine's and
    the feature's names first, is shown; the other is listed under it. A class measured by re-scoring
    (engine ``re-scored``) has no edits of its own and is never one of the two. ``edits``: each feature's
    edits (``feature_edit_texts``)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["dataset"], row["rm"]), []).append(row)
    for (dataset, _), group in groups.items():
        ordered = sorted(group, key=_shown_first)
        for i, shown_row in enumerate(ordered):
            if shown_row.get("same_edits") or shown_row["method"] == RESCORED:
                continue
            mine = edits.get((dataset, shown_row["name"]), {})
            for other in ordered[i + 1 :]:
                if other["method"] in (shown_row["method"], RESCORED) or other.get("under"):
                    continue
                if same_edits_alike(mine, edits.get((dataset, other["name"]), {})):
                    other.update(under=shown_row["name"], same_edits=True)
    return rows


def _shown_first(row: Mapping[str, Any]) -> tuple:
    """Which of two features with the same edits is shown: one not under a class, then the smaller q-value
    (an undefined one last), the larger |effect|, the engine's and the feature's names."""
    q = row.get("q_value")
    return (
        row.get("under") is not None,
        q if q is not None and np.isfinite(q) else 2.0,
        _by_size(row)[0],
        row["method"],
        row["name"],
    )


def _feature_phrase(row: Mapping[str, Any], texts: Sequence[str]) -> str:
    """A discovered feature's phrase, from its kind (where the table has it) and its responses."""
    return language.feature_phrase(
        row["feature"], row["description"], row["effect"], kind=row.get("kind"), texts=texts
    )


def _source_texts(discovery_edits: Mapping[str, pl.DataFrame]) -> dict[tuple[str, str], list[str]]:
    """(dataset, feature) -> the distinct responses its edits were made from (the responses' own words)."""
    out: dict[tuple[str, str], list[str]] = {}
    for dataset, edits in discovery_edits.items():
        grouped = edits.group_by("feature").agg(pl.col("source_text").unique())
        out.update({(dataset, feature): texts for feature, texts in grouped.iter_rows()})
    return out


def discovered_significant(row: Mapping[str, Any]) -> bool:
    """The discovery's own verdict where its table has one (q-value within ``discovery.fdr`` and beyond
    ``discovery.min_effect``), else q < 0.05."""
    if row.get("significant") is not None:
        return bool(row["significant"])
    return row["q_value"] is not None and row["q_value"] < ALPHA


def _discovered_example(row: Mapping[str, Any], edits: pl.DataFrame | None) -> dict[str, Any]:
    """The example of a discovered feature: the one the discovery's table chose (an addition whose change is
    the median of its direction, with its reward change), else the first edit adding it in ``edits``."""
    if row.get("example_after") is not None:
        before, after = snippet(row["example_before"], row["example_after"])
        return {
            "example_comparison_id": row.get("example_comparison_id"),
            "example_before": before,
            "example_after": after,
            "example_reward_change": row.get("example_reward_change"),
            "example_words_change": len(words(row["example_after"])) - len(words(row["example_before"])),
        }
    if edits is None:
        return {}
    adds = edits.filter((pl.col("feature") == row["feature"]) & (pl.col("direction") == 1))
    if not adds.height:
        return {}
    before, after = snippet(adds["source_text"][0], adds["edited_text"][0])
    return {"example_before": before, "example_after": after}


def _rank_discovered(rows: list[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """Each discovered feature's ``rank`` within its (dataset, engine, RM), and ``leading`` for the ``k``
    largest significant ones of each (dataset, RM), every engine together, that are not listed under a
    class (``under``)."""
    ranks: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    leads: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        ranks.setdefault((row["dataset"], row["method"], row["rm"]), []).append(row)
        leads.setdefault((row["dataset"], row["rm"]), []).append(row)
    for group in ranks.values():
        for i, row in enumerate(sorted(group, key=_by_size), start=1):
            row["rank"] = i
    for group in leads.values():
        lead = 0
        for row in sorted(group, key=lambda r: (*_by_size(r), r["method"])):
            shown = row["significant"] or row.get("unmasked_by") is not None
            row["leading"] = bool(shown and not row.get("under") and lead < k)
            lead += row["leading"]
    return rows


def _by_size(row: Mapping[str, Any]) -> tuple[float, str]:
    """Largest |effect| first (``shown_effect``; an undefined effect last), ties by name."""
    effect = shown_effect(row)
    return (-abs(effect) if np.isfinite(effect) else 1.0, row["name"])


# ── the table ─────────────────────────────────────────────────────────────────────────────────────────────
def findings_frame(rows: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    """FINDINGS from rows (missing keys null), each with its ``order`` among its RM's findings on its dataset
    (``one_ranking``), sorted by dataset, RM, kind (effects before discoveries), method and rank."""
    schema = polars_schema(FINDINGS)
    frame = pl.DataFrame([{k: row.get(k) for k in schema if k != "order"} for row in rows],
                         schema={k: v for k, v in schema.items() if k != "order"})  # fmt: skip
    frame = one_ranking(frame).with_columns(_discovered=pl.col("kind") == "discovered")
    frame = frame.sort(["dataset", "rm", "_discovered", "method", "rank"]).drop("_discovered")
    return conform(frame, FINDINGS, "findings")


def one_ranking(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with ``order``: per (dataset, RM), every finding of every kind and method by |effect| (with
    a class that works against it undone, where one does), largest first (to ``TIE_DIGITS`` decimals; an
    undefined effect last; ties: by name, then method) — the order of the first screen."""
    shown = pl.coalesce("unmasked_effect", "effect")  # with a class that works against it undone
    keyed = frame.with_row_index("_row").with_columns(
        _size=pl.when(shown.is_nan() | shown.is_null())
        .then(pl.lit(-1.0))
        .otherwise(shown.abs().round(TIE_DIGITS))
    )
    ranked = keyed.sort(
        ["dataset", "rm", "_size", "name", "method"], descending=[False, False, True, False, False]
    )
    ranked = ranked.with_columns(order=pl.int_range(1, pl.len() + 1).over("dataset", "rm").cast(pl.Int64))
    return ranked.sort("_row").drop("_row", "_size")
