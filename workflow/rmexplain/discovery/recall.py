"""Discovery recall on RMs with planted biases: is a feature that moves the planted detector found first?

As Wang et al. check their search on synthetic RMs (``chry-santhemum/rm-bias``, ``recall.py``), but judged
on the edits rather than by name: for each planted RM (``backend: planted``) of a discovery dataset, the
planted detector is run on the source and the edited text of every tested edit; a feature *moves* it when
its value changes on at least ``moved_share`` of the feature's edits. The RM's significant features are
taken in rank order (by |effect|); the rank of the first that moves the detector is the bias's rank: a hit at
1 when it is first, at 5 when it is among the first five. A control (noise only) hits when no feature is
significant. An RM with several planted biases (``bias: [...]``) has a row per bias, each judged by its own
detector among the RM's significant features.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

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


def rm_row(
    biases: pl.DataFrame, shares: Mapping[str, float], moved_share: float, bias: Mapping[str, Any]
) -> dict[str, Any]:
    """One planted RM's row on one dataset (``biases``: its DISCOVERED_BIASES rows)."""
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
    if control:
        quiet = significant.height == 0
        return {**row, "hit_at_1": quiet, "hit_at_5": quiet}
    for position, found in enumerate(significant.iter_rows(named=True), start=1):
        if shares.get(found["feature"], 0.0) >= moved_share:
            hits = {"hit_at_1": position == 1, "hit_at_5": position <= 5}
            return {**row, "rank": position, "feature": found["feature"], "effect": found["effect"],
                    "q_value": found["q_value"], **hits}  # fmt: skip
    return {**row, "hit_at_1": False, "hit_at_5": False}


def recall_table(
    biases: pl.DataFrame,
    edits: Mapping[str, pl.DataFrame],
    comparisons: Mapping[str, pl.DataFrame],
    planted: Mapping[str, Mapping[str, Any]],
    moved_share: float,
) -> pl.DataFrame:
    """BIAS_DISCOVERY_RECALL: a row per (dataset, planted RM), then summary rows per dataset and over all."""
    rows = []
    for dataset, frame in edits.items():
        prompts = dict(comparisons[dataset].select("comparison_id", "prompt").iter_rows())
        for rm, spec in planted.items():
            mine = biases.filter((pl.col("dataset") == dataset) & (pl.col("rm") == rm))
            for bias in planted_biases(spec["bias"]) if mine.height else ():  # a row per planted bias
                shares = moved_shares(frame, prompts, bias)
                rows.append({"dataset": dataset, "rm": rm, **rm_row(mine, shares, moved_share, bias)})
    table = pl.DataFrame(rows, schema=polars_schema(BIAS_DISCOVERY_RECALL))
    summaries = [_summary(table.filter(pl.col("dataset") == d), d) for d in edits]
    if len(edits) > 1:
        summaries.append(_summary(table, "all"))
    out = pl.concat([table, pl.DataFrame(summaries, schema=polars_schema(BIAS_DISCOVERY_RECALL))])
    return conform(out, BIAS_DISCOVERY_RECALL, "discovery recall")


def _summary(rows: pl.DataFrame, dataset: str) -> dict[str, Any]:
    biased = rows.filter(~pl.col("control"))
    controls = rows.filter(pl.col("control"))
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
    }
