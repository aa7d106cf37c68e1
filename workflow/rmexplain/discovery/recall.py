"""Discovery recall on RMs with planted biases: is a feature that moves the planted detector found first?

As Wang et al. check their search on synthetic RMs (``chry-santhemum/rm-bias``, ``recall.py``), but judged
on the edits rather than by name: for each planted RM (``backend: planted``) of a discovery dataset, the
planted detector is run on the source and the edited text of every tested edit; a feature *moves* it when
its value changes on at least ``moved_share`` of the feature's edits. The RM's significant features are
taken in rank order (by |effect|); the rank of the first that moves the detector is the bias's rank: a hit at
1 when it is first, at 5 when it is among the first five. A control (noise only) hits when no feature is
significant. An RM with several planted biases (``bias: [...]``) has a row per bias, each judged by its own
detector among the RM's significant features.

A planted length bias (``detector: length``) is judged by the length slope instead: every edit that
changes the word count moves its detector, so no feature can name it. Each row carries its RM's length
sensitivity γ as discovery estimated it (``length_slope`` of the RM's largest fit, ``largest_fit_slope``)
beside the truth the planted terms give: with the base as reference, γ_true = Σ strength · s_base ·
sd(words) / (per_words · reward sd) over the RM's length biases (0 without one), in the unit γ is
estimated in (the RM's reward sd on the originals per sd of their word counts); explained without its base,
the base's own slope is in γ and the truth is unknown (NaN).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import polars as pl

from rmexplain.discovery.estimate import largest_fit_slope
from rmexplain.effects.analysis import original_length_sd
from rmexplain.schemas import BIAS_DISCOVERY_RECALL, conform, polars_schema
from rmexplain.score.planted import detector, planted_biases

SUMMARY = "all planted RMs"


def describe(bias: Mapping[str, Any]) -> str:
    """A planted bias in words: its detector and strength (base reward sd)."""
    kind = bias.get("detector", "none")
    if kind == "none" or not bias.get("strength"):
        return "noise only"
    what = {
        "length": f"words / {bias.get('per_words', 100)}",
        "regex": f"{'matches of' if bias.get('count') else 'any match of'} {bias.get('pattern')}",
        "callable": f"{bias.get('callable')}",
    }[kind]
    return f"{float(bias['strength']):+g} x {what}"


def moved_shares(
    edits: pl.DataFrame, prompts: Mapping[str, str], bias: Mapping[str, Any]
) -> dict[str, float]:
    """Per feature: the share of its edits on which the planted detector's value changes."""
    detect = detector(dict(bias))
    asked = [prompts[c] for c in edits["comparison_id"]]
    changed = detect(asked, edits["edited_text"].to_list()) != detect(asked, edits["source_text"].to_list())
    frame = edits.select("feature").with_columns(changed=pl.Series(changed))
    shares = frame.group_by("feature").agg(pl.col("changed").mean())
    return dict(shares.iter_rows())


def slope_truth(
    spec: Mapping[str, Any], reference: str | None, base_sd: float, length_sd: float, reward_sd: float
) -> float:
    """The planted RM's length sensitivity by construction, in discovery's unit (reward sd per sd of the
    originals' word counts): Σ strength · ``base_sd`` · ``length_sd`` / (per_words · ``reward_sd``) over its
    length biases, 0 without one; NaN unless its base is the ``reference`` (the base's own slope is then
    in the estimate)."""
    if reference is None or reference != spec.get("base"):
        return float("nan")
    lengths = [b for b in planted_biases(spec["bias"]) if b.get("detector") == "length"]
    per_sd = sum(float(b.get("strength", 0.0)) / float(b.get("per_words", 100)) for b in lengths)
    return per_sd * base_sd * length_sd / reward_sd


def slope_columns(biases: pl.DataFrame, truth: float) -> dict[str, Any]:
    """``largest_fit_slope`` of the RM (``biases``: its rows) with the truth, the error and whether the
    interval holds the truth (null where either is unknown)."""
    slope, low, high = largest_fit_slope(biases)
    known = math.isfinite(truth) and all(v is not None and math.isfinite(v) for v in (slope, low, high))
    return {
        "slope": slope,
        "slope_low": low,
        "slope_high": high,
        "slope_truth": truth,
        "slope_error": slope - truth if known else float("nan"),
        "slope_holds": bool(low <= truth <= high) if known else None,
    }


def rm_row(
    biases: pl.DataFrame, shares: Mapping[str, float], moved_share: float, bias: Mapping[str, Any]
) -> dict[str, Any]:
    """One planted bias's row on one dataset (``biases``: its RM's DISCOVERED_BIASES rows); a length bias
    has no hit (the slope columns judge it)."""
    significant = biases.filter(pl.col("significant")).sort("rank")
    control = describe(bias) == "noise only"
    top = ", ".join(f"{f} {e:+.2f}" for f, e in significant.head(3).select("feature", "effect").iter_rows())
    row: dict[str, Any] = {
        "planted": describe(bias),
        "control": control,
        "n_significant": significant.height,
        "n_moving": sum(share >= moved_share for share in shares.values()),
        "top": top,
    }
    if bias.get("detector") == "length":
        return row
    if control:
        quiet = significant.height == 0
        return {**row, "hit_at_1": quiet, "hit_at_5": quiet}
    for position, found in enumerate(significant.iter_rows(named=True), start=1):
        if shares.get(found["feature"], 0.0) >= moved_share:
            hits = {"hit_at_1": position == 1, "hit_at_5": position <= 5}
            return {**row, "rank": position, "feature": found["feature"], "effect": found["effect"],
                    "q_value": found["q_value"], **hits}  # fmt: skip
    return {**row, "hit_at_1": False, "hit_at_5": False}


def rm_slopes(
    biases: pl.DataFrame,
    comparisons: Mapping[str, pl.DataFrame],
    planted: Mapping[str, Mapping[str, Any]],
    base_sds: Mapping[str, float],
) -> dict[tuple[str, str], dict[str, Any]]:
    """(dataset, planted RM) -> ``slope_columns`` of every planted RM with discovered-bias rows
    (``base_sds``: each planted RM's base reward sd, its ``reward_scale``)."""
    slopes = {}
    for dataset, frame in comparisons.items():
        length_sd = original_length_sd(frame)
        for rm, spec in planted.items():
            mine = biases.filter((pl.col("dataset") == dataset) & (pl.col("rm") == rm))
            if mine.height:
                first = mine.row(0, named=True)
                truth = slope_truth(spec, first["reference"], base_sds[rm], length_sd, first["reward_sd"])
                slopes[dataset, rm] = slope_columns(mine, truth)
    return slopes


def recall_table(
    biases: pl.DataFrame,
    edits: Mapping[str, pl.DataFrame],
    comparisons: Mapping[str, pl.DataFrame],
    planted: Mapping[str, Mapping[str, Any]],
    moved_share: float,
    slopes: Mapping[tuple[str, str], Mapping[str, Any]],
) -> pl.DataFrame:
    """BIAS_DISCOVERY_RECALL: a row per (dataset, planted bias), then summary rows per dataset and over all
    (``slopes``: ``rm_slopes``; an RM it does not hold has null slope columns)."""
    rows = []
    for dataset, frame in edits.items():
        prompts = dict(comparisons[dataset].select("comparison_id", "prompt").iter_rows())
        for rm, spec in planted.items():
            mine = biases.filter((pl.col("dataset") == dataset) & (pl.col("rm") == rm))
            for bias in planted_biases(spec["bias"]) if mine.height else ():  # a row per planted bias
                shares = moved_shares(frame, prompts, bias)
                row = rm_row(mine, shares, moved_share, bias)
                rows.append({"dataset": dataset, "rm": rm, **row, **slopes.get((dataset, rm), {})})
    table = pl.DataFrame(rows, schema=polars_schema(BIAS_DISCOVERY_RECALL))
    summaries = [_summary(table.filter(pl.col("dataset") == d), d) for d in edits]
    if len(edits) > 1:
        summaries.append(_summary(table, "all"))
    out = pl.concat([table, pl.DataFrame(summaries, schema=polars_schema(BIAS_DISCOVERY_RECALL))])
    return conform(out, BIAS_DISCOVERY_RECALL, "discovery recall")


def _summary(rows: pl.DataFrame, dataset: str) -> dict[str, Any]:
    biased = rows.filter(~pl.col("control") & pl.col("hit_at_5").is_not_null())  # a length bias has no hit
    controls = rows.filter(pl.col("control"))
    slopes = rows.unique(["dataset", "rm"], keep="first").filter(pl.col("slope_holds").is_not_null())
    n = biased.height
    hits1, hits5 = int(biased["hit_at_1"].sum()), int(biased["hit_at_5"].sum())
    return {
        "dataset": dataset,
        "rm": SUMMARY,
        "planted": "",
        "control": False,
        "n_significant": int(controls["n_significant"].sum()) if controls.height else None,
        "hits_at_1": hits1,
        "hits_at_5": hits5,
        "biases": n,
        "recall_at_1": hits1 / n if n else float("nan"),
        "recall_at_5": hits5 / n if n else float("nan"),
        "slopes": slopes.height,
        "slopes_held": int(slopes["slope_holds"].sum()),
    }
