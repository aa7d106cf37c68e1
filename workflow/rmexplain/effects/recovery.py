"""Planted-bias recovery: does each estimator put what an RM is known to reward (its ``expect``) on top?

As Wang, Arcuschin & Conmy validate their bias search (``chry-santhemum/rm-bias``, ``recall.py``) and RATE
its estimator (semi-synthetic RMs with known effects): for every RM that declares ``expect`` and every
estimator, the best rank of an expected attribute among the RM's rows (by |effect|, ties by name), whether
its sign is the expected one, and recall@1 / recall@3 per estimator over the RMs with a bias.

A hit at k: an expected attribute ranks ≤ k and its effect has the expected sign (flip rates have no sign, so
only the rank counts for them). A control (``attributes: []``) expects no effect: it counts how many of its
rows are significant instead, and is left out of recall.

*Visibility*: for a planted RM, the share of the edits whose detector value differs from their source's. Where
it is 0 no edit touches the feature: the table says the bias cannot be seen instead of ranking noise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from rmexplain.effects.analysis import with_sources
from rmexplain.effects.base import estimators
from rmexplain.schemas import PLANTED_RECOVERY, conform
from rmexplain.score.planted import detector


def recovery_rows(effects: pl.DataFrame, expectations: Mapping[str, Mapping[str, Any]]) -> pl.DataFrame:
    """PLANTED_RECOVERY rows (``visible_share`` null) of every (dataset, method, RM with ``expect``,
    estimator)."""
    rows = []
    keys = ["dataset", "method", "rm", "estimator"]
    for (dataset, method, rm, estimator), group in effects.group_by(keys, maintain_order=True):
        if rm not in expectations:
            continue
        expect = expectations[rm]
        signed = estimators.get(estimator).signed
        judged = _judge(group.sort("rank"), list(expect["attributes"]), expect.get("sign"), signed)
        rows.append({"dataset": dataset, "method": method, "rm": rm, "estimator": estimator, **judged})
    frame = pl.DataFrame(rows, schema={k: c.dtype for k, c in PLANTED_RECOVERY.items() if k != "verdict"})
    return conform(with_verdicts(frame), PLANTED_RECOVERY, "planted recovery")


NOT_FOUND = dict.fromkeys(("found", "rank", "effect", "low", "high", "sign_ok"))
INVISIBLE = "invisible: no edit changes the planted feature"


def verdict(row: Mapping[str, Any]) -> str:
    """One recovery row in words (a bias no edit can reveal is said to be invisible, not ranked)."""
    if not row["expected"]:
        n = row["n_significant"]
        return "control: no significant effect" if n == 0 else f"control: {n} row{'s' * (n > 1)} significant"
    if row["visible_share"] == 0:
        return INVISIBLE
    if row["rank"] is None:
        return "no defined effect"
    if row["sign_ok"] is False:
        return f"wrong sign (rank {row['rank']})"
    if row["hit_at_1"]:
        return "found first"
    return "in the top 3" if row["hit_at_3"] else f"missed (rank {row['rank']})"


def with_verdicts(recovery: pl.DataFrame) -> pl.DataFrame:
    """``recovery`` with each row's ``verdict`` (after its ``visible_share`` is known)."""
    return recovery.with_columns(
        verdict=pl.Series([verdict(row) for row in recovery.iter_rows(named=True)], dtype=pl.String)
    )


def _judge(ranked: pl.DataFrame, expected: list[str], sign: int | None, signed: bool) -> dict[str, Any]:
    """Where the expected attributes rank among one RM's rows of one estimator (ranked), and the hits."""
    top = ", ".join(f"{a} {e:+.2f}" for a, e in ranked.head(3).select("attribute", "effect").iter_rows())
    significant = int(ranked["significant"].sum())
    base = {
        "expected": ", ".join(expected),
        "expected_sign": sign,
        "top": top,
        "n_significant": significant,
        "visible_share": None,
    }
    if not expected:  # a control: a hit when nothing is significant
        return {**base, **NOT_FOUND, "hit_at_1": significant == 0, "hit_at_3": significant == 0}
    candidates = ranked.filter(pl.col("attribute").is_in(expected) & pl.col("effect").is_not_nan())
    if not candidates.height:
        return {**base, **NOT_FOUND, "hit_at_1": False, "hit_at_3": False}
    best = candidates.row(0, named=True)
    sign_ok = None if not signed or sign is None else bool(np.sign(best["effect"]) == sign)
    good = sign_ok is not False
    return {
        **base,
        "found": best["attribute"],
        "rank": best["rank"],
        "effect": best["effect"],
        "low": best["low"],
        "high": best["high"],
        "sign_ok": sign_ok,
        "hit_at_1": good and best["rank"] <= 1,
        "hit_at_3": good and best["rank"] <= 3,
    }


def visible_shares(
    edits: pl.DataFrame, comparisons: pl.DataFrame, planted: Mapping[str, Mapping[str, Any]]
) -> dict[str, float]:
    """Per planted RM: the share of the edits whose detector value differs from their source's."""
    sourced = with_sources(edits, comparisons)
    prompts, texts, sources = (sourced[c].to_list() for c in ("prompt", "text", "source_text"))
    shares = {}
    for rm, spec in planted.items():
        if "bias" not in spec or not sourced.height:
            continue
        detect = detector(dict(spec["bias"]))
        changed = detect(prompts, texts) != detect(prompts, sources)
        shares[rm] = float(np.mean(changed))
    return shares


def recall_table(recovery: pl.DataFrame, primary: str) -> pl.DataFrame:
    """recall@1 and recall@3 per (dataset, method, estimator) and over all datasets, biased RMs only (controls
    apart: how many of them showed no significant effect)."""
    biased = recovery.filter(pl.col("expected") != "")
    controls = recovery.filter(pl.col("expected") == "")

    def summarise(frame: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
        return frame.group_by(*by, maintain_order=True).agg(
            pl.col("hit_at_1").sum().cast(pl.Int64).alias("hits_at_1"),
            pl.col("hit_at_3").sum().cast(pl.Int64).alias("hits_at_3"),
            pl.len().cast(pl.Int64).alias("biases"),
            pl.col("sign_ok").fill_null(True).not_().sum().cast(pl.Int64).alias("wrong_sign"),
        )

    keys = ["dataset", "method", "estimator"]
    per = summarise(biased, keys)
    overall = (
        summarise(biased, ["method", "estimator"]).with_columns(dataset=pl.lit("all")).select(per.columns)
    )
    table = pl.concat([per, overall])
    quiet = pl.concat(
        [
            controls.group_by(keys, maintain_order=True).agg(
                pl.col("hit_at_1").sum().cast(pl.Int64).alias("quiet_controls"),
                pl.len().cast(pl.Int64).alias("controls"),
            ),
            controls.group_by("method", "estimator", maintain_order=True)
            .agg(
                pl.col("hit_at_1").sum().cast(pl.Int64).alias("quiet_controls"),
                pl.len().cast(pl.Int64).alias("controls"),
            )
            .with_columns(dataset=pl.lit("all"))
            .select(*keys, "quiet_controls", "controls"),
        ]
    )
    table = table.join(quiet, on=keys, how="left").with_columns(
        pl.col("quiet_controls", "controls").fill_null(0)
    )
    return table.with_columns(
        recall_at_1=pl.col("hits_at_1") / pl.col("biases"),
        recall_at_3=pl.col("hits_at_3") / pl.col("biases"),
        primary=pl.col("estimator") == primary,
    ).sort(
        "dataset",
        "method",
        "recall_at_1",
        "recall_at_3",
        "estimator",
        descending=[False, False, True, True, False],
    )
