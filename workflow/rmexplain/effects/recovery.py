"""Planted-bias recovery: does each estimator put what an RM is known to reward (its ``expect``) on top?

As Wang, Arcuschin & Conmy validate their bias search (``chry-santhemum/rm-bias``, ``recall.py``) and RATE
its estimator (semi-synthetic RMs with known effects): for every RM that declares ``expect`` and every
estimator, the best rank of an expected attribute among the RM's rows, whether its sign is the expected one,
and recall@1 / recall@3 per estimator over the RMs with a bias.

*Rank* of an expected row: 1 + the RM's rows with a defined effect at least as large in magnitude, ties
counted *against* it (an expected row tied with another for first is rank 2, and an effect of exactly 0, which
finds nothing, is no hit whatever its rank). The effects table's own order (ties by attribute name) is only
for display.

A hit at k: an expected attribute ranks ≤ k and its effect has the expected sign (``expect.sign``: one for
every attribute, or one per attribute; flip rates have no sign, so only the rank counts for them).
*Visibility*: for a planted RM, the share of the edits whose detector value differs from their source's. Where
it is 0 no edit touches the feature: the row says the bias cannot be seen, and it counts as a miss.

A control (``attributes: []``) expects no effect: it is a hit when none of its rows is significant, and is
left out of recall. Its rows against a reference (an RM with no effect beyond its reference but noise) give
the observed false-positive rate, beside the nominal one (1 − the confidence level).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from rmexplain.effects.analysis import with_sources
from rmexplain.effects.base import estimators
from rmexplain.schemas import PLANTED_RECOVERY, conform
from rmexplain.score.planted import detector, planted_biases

Key = tuple[str, str, str]  # (dataset, method, rm)


def recovery_rows(
    effects: pl.DataFrame,
    expectations: Mapping[str, Mapping[str, Any]],
    visible: Mapping[Key, float] | None = None,
) -> pl.DataFrame:
    """PLANTED_RECOVERY rows of every (dataset, method, RM with ``expect``, estimator); ``visible``: the
    planted RMs' visible shares (``visible_shares``) by (dataset, method, rm), null where not given."""
    rows = []
    keys = ["dataset", "method", "rm", "estimator"]
    for (dataset, method, rm, estimator), group in effects.group_by(keys, maintain_order=True):
        if rm not in expectations:
            continue
        share = (visible or {}).get((dataset, method, rm))
        judged = judge(group.sort("rank"), expectations[rm], estimators.get(estimator).signed, share)
        rows.append({"dataset": dataset, "method": method, "rm": rm, "estimator": estimator, **judged})
    frame = pl.DataFrame(rows, schema={k: c.dtype for k, c in PLANTED_RECOVERY.items()})
    return conform(frame, PLANTED_RECOVERY, "planted recovery")


NOT_FOUND = dict.fromkeys(("found", "rank", "effect", "low", "high", "sign_ok"))
INVISIBLE = "invisible: no edit changes the planted feature"
NO_EFFECT = "no effect: undefined or exactly 0"


def expected_sign(expect: Mapping[str, Any], attribute: str | None) -> int | None:
    """The sign ``expect`` gives ``attribute`` (one for all, or one per attribute); None if it gives none."""
    sign = expect.get("sign")
    if isinstance(sign, Mapping):
        return None if attribute is None else sign.get(attribute)
    return sign


def verdict(row: Mapping[str, Any]) -> str:
    """One recovery row in words (a bias no edit can reveal is said to be invisible, not ranked)."""
    if not row["expected"]:
        n = row["n_significant"]
        return "control: no significant effect" if n == 0 else f"control: {n} row{'s' * (n > 1)} significant"
    if row["visible_share"] == 0:
        return INVISIBLE
    if row["rank"] is None:
        return NO_EFFECT
    if row["sign_ok"] is False:
        return f"wrong sign (rank {row['rank']})"
    if row["hit_at_1"]:
        return "found first"
    return "in the top 3" if row["hit_at_3"] else f"missed (rank {row['rank']})"


def rank_against(magnitudes: np.ndarray, effect: float) -> int:
    """The rank of a row of ``effect`` among rows of ``magnitudes`` (|effect|, defined rows, itself included):
    every row at least as large counts as ahead of it or tied with it, so ties rank against it."""
    return int(np.sum(magnitudes >= abs(effect)))


def judge(
    ranked: pl.DataFrame, expect: Mapping[str, Any], signed: bool, visible_share: float | None = None
) -> dict[str, Any]:
    """Where the expected attributes rank among one RM's rows of one estimator (``ranked``: in the table's
    order), the hits and the verdict."""
    expected = list(expect["attributes"])
    defined = ranked.filter(pl.col("effect").is_not_nan())
    top = ", ".join(f"{a} {e:+.2f}" for a, e in ranked.head(3).select("attribute", "effect").iter_rows())
    significant = int(ranked["significant"].sum())
    base = {
        "expected": ", ".join(expected),
        "expected_sign": None,
        "top": top,
        "n_significant": significant,
        "n_rows": defined.height,
        "reference": ranked["reference"][0] if ranked.height else None,
        "visible_share": visible_share,
    }
    if not expected:  # a control: a hit when nothing is significant
        quiet = significant == 0
        return _with_verdict({**base, **NOT_FOUND, "hit_at_1": quiet, "hit_at_3": quiet})
    magnitudes = defined["effect"].abs().to_numpy()
    candidates = [
        (rank_against(magnitudes, row["effect"]), order, row)
        for order, row in enumerate(defined.iter_rows(named=True))
        if row["attribute"] in expected and row["effect"] != 0
    ]
    if not candidates:
        single = expect.get("sign") if not isinstance(expect.get("sign"), Mapping) else None
        return _with_verdict({**base, **NOT_FOUND, "expected_sign": single, "hit_at_1": False,
                              "hit_at_3": False})  # fmt: skip
    rank, _, best = min(candidates, key=lambda c: c[:2])
    sign = expected_sign(expect, best["attribute"])
    sign_ok = None if not signed or sign is None else bool(np.sign(best["effect"]) == sign)
    good = sign_ok is not False and visible_share != 0
    return _with_verdict(
        {
            **base,
            "expected_sign": sign,
            "found": best["attribute"],
            "rank": rank,
            "effect": best["effect"],
            "low": best["low"],
            "high": best["high"],
            "sign_ok": sign_ok,
            "hit_at_1": good and rank <= 1,
            "hit_at_3": good and rank <= 3,
        }
    )


def _with_verdict(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "verdict": verdict(row)}


def visible_shares(
    edits: pl.DataFrame, comparisons: pl.DataFrame, planted: Mapping[str, Mapping[str, Any]]
) -> dict[str, float]:
    """Per planted RM: the share of the edits whose detector value (any of its detectors) differs from their
    source's."""
    sourced = with_sources(edits, comparisons)
    prompts, texts, sources = (sourced[c].to_list() for c in ("prompt", "text", "source_text"))
    shares = {}
    for rm, spec in planted.items():
        if "bias" not in spec or not sourced.height:
            continue
        detectors = [detector(bias) for bias in planted_biases(spec["bias"])]
        changed = np.any([d(prompts, texts) != d(prompts, sources) for d in detectors], axis=0)
        shares[rm] = float(np.mean(changed))
    return shares


def recall_table(recovery: pl.DataFrame, primary: str, level: float = 0.95) -> pl.DataFrame:
    """recall@1 and recall@3 per (dataset, method, estimator) and over all datasets, biased RMs only (an
    invisible bias a miss, and counted; null without a bias), and the controls apart: how many showed no
    significant row, and the share of their rows against a reference that are significant beside the nominal
    ``1 − level``."""
    biased = recovery.filter(pl.col("expected") != "")
    controls = recovery.filter(pl.col("expected") == "")
    keys = ["dataset", "method", "estimator"]
    table = _over_datasets(biased, keys, _recall_columns())
    quiet = _over_datasets(controls, keys, _control_columns())
    counts = ["hits_at_1", "hits_at_3", "biases", "wrong_sign", "invisible"]
    counts += ["quiet_controls", "controls", "control_rows", "control_significant"]
    table = table.join(quiet, on=keys, how="full", coalesce=True).with_columns(pl.col(counts).fill_null(0))
    return table.with_columns(
        recall_at_1=pl.when(pl.col("biases") > 0).then(pl.col("hits_at_1") / pl.col("biases")),
        recall_at_3=pl.when(pl.col("biases") > 0).then(pl.col("hits_at_3") / pl.col("biases")),
        false_positive_rate=pl.when(pl.col("control_rows") > 0).then(
            pl.col("control_significant") / pl.col("control_rows")
        ),
        nominal_rate=pl.lit(round(1.0 - level, 12)),
        primary=pl.col("estimator") == primary,
    ).sort(
        "dataset",
        "method",
        "recall_at_1",
        "recall_at_3",
        "estimator",
        descending=[False, False, True, True, False],
    )


def _recall_columns() -> list[pl.Expr]:
    return [
        pl.col("hit_at_1").sum().cast(pl.Int64).alias("hits_at_1"),
        pl.col("hit_at_3").sum().cast(pl.Int64).alias("hits_at_3"),
        pl.len().cast(pl.Int64).alias("biases"),
        pl.col("sign_ok").fill_null(True).not_().sum().cast(pl.Int64).alias("wrong_sign"),  # null: no sign
        (pl.col("visible_share") == 0).sum().cast(pl.Int64).alias("invisible"),
    ]


def _control_columns() -> list[pl.Expr]:
    """Controls: quiet ones, and their rows against a reference (a control without one has its base's own
    effects: its significant rows are no false positives)."""
    against = pl.col("reference").is_not_null()
    return [
        pl.col("hit_at_1").sum().cast(pl.Int64).alias("quiet_controls"),
        pl.len().cast(pl.Int64).alias("controls"),
        pl.col("n_rows").filter(against).sum().cast(pl.Int64).alias("control_rows"),
        pl.col("n_significant").filter(against).sum().cast(pl.Int64).alias("control_significant"),
    ]


def _over_datasets(frame: pl.DataFrame, keys: list[str], columns: Sequence[pl.Expr]) -> pl.DataFrame:
    """``columns`` per ``keys`` and per (method, estimator) over every dataset (``dataset`` "all")."""
    per = frame.group_by(*keys, maintain_order=True).agg(*columns)
    overall = frame.group_by("method", "estimator", maintain_order=True).agg(*columns)
    return pl.concat([per, overall.with_columns(dataset=pl.lit("all")).select(per.columns)])
