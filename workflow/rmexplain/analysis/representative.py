"""Representative examples (paper §4.2): comparisons whose local attribute ranking matches the global one.

For RM r, side s and comparison c, the *local* ranking orders the attributes by the mean reward delta of
c's perturbations of (s, attribute) — how far each pushed the reward against r's preference — and the
*global* ranking orders them by PFR(r, s, ·). ``local τ`` is Kendall's τ-b between the two over the
attributes defined in both (tied deltas or PFRs are handled by τ-b). It is undefined (NaN) with fewer than
two attributes or when either vector is constant.

Selection, paper §4.2.1/4.2.2:

- one RM: the comparison with the highest τ(plus) + τ(minus), among comparisons where both are defined;
- two RMs on one side: the comparison with the highest τ_a + τ_b on that side, among comparisons where both
  are defined and both RMs prefer the same original response (so "side" names the same text for both).

A comparison with an undefined τ in its sum is not eligible (a constant ranking says nothing about which
attributes matter). Ties in the sum go to the smallest ``comparison_id``, so the choice is deterministic.
"""

from __future__ import annotations

import polars as pl

from rmexplain.analysis.sensitivity import comparison_values, kendall_tau
from rmexplain.explanations.metrics import SIDES

_LOCAL_SCHEMA = {
    "rm": pl.String,
    "comparison_id": pl.String,
    "side": pl.String,
    "plus_target": pl.String,
    "tau": pl.Float64,
    "n_attributes": pl.Int64,
}


def plus_targets(explanations: pl.DataFrame) -> pl.DataFrame:
    """Which original (``chosen``/``rejected``) is y+ for each (rm, comparison_id)."""
    other = pl.when(pl.col("target") == "chosen").then(pl.lit("rejected")).otherwise(pl.lit("chosen"))
    plus = pl.when(pl.col("side") == "plus").then(pl.col("target")).otherwise(other)
    return explanations.group_by("rm", "comparison_id").agg(plus.first().alias("plus_target"))


def local_tau(explanations: pl.DataFrame, pfr: pl.DataFrame, variants: str = "mean") -> pl.DataFrame:
    """τ between each comparison's local delta ranking and the global PFR ranking, per (rm, side)."""
    values = comparison_values(explanations.filter(pl.col("attribute").is_not_null()), variants)
    joined = values.join(
        pfr.select("rm", "side", "attribute", "pfr"), on=["rm", "side", "attribute"], how="left"
    )
    rows = []
    for (rm, side, comparison_id), group in joined.group_by("rm", "side", "comparison_id"):
        tau, _, n_attr = kendall_tau(
            group["delta"].to_numpy(), group["pfr"].fill_null(float("nan")).to_numpy()
        )
        rows.append(
            {"rm": rm, "comparison_id": comparison_id, "side": side, "tau": tau, "n_attributes": n_attr}
        )
    frame = pl.DataFrame(rows, schema={k: v for k, v in _LOCAL_SCHEMA.items() if k != "plus_target"})
    frame = frame.join(plus_targets(explanations), on=["rm", "comparison_id"], how="left")
    return frame.select(list(_LOCAL_SCHEMA)).sort("rm", "comparison_id", "side")


def _defined(local: pl.DataFrame) -> pl.DataFrame:
    return local.filter(pl.col("tau").is_not_nan())


def _best(candidates: pl.DataFrame) -> dict:
    """The top candidate (highest score, then smallest comparison_id) and how many were eligible."""
    if candidates.height == 0:
        return {"comparison_id": None, "score": None, "tau_1": None, "tau_2": None, "n_eligible": 0}
    # Sums of τ that are equal on paper can differ in the last bit (0.2 + 1.0 vs 0.4 + 0.8): compare rounded.
    ranked = candidates.with_columns(_key=pl.col("score").round(9)).sort(
        ["_key", "comparison_id"], descending=[True, False]
    )
    top = ranked.row(0, named=True)
    return {
        "comparison_id": top["comparison_id"],
        "score": top["score"],
        "tau_1": top["tau_1"],
        "tau_2": top["tau_2"],
        "n_eligible": candidates.height,
    }


def select_for_rm(local: pl.DataFrame, rm: str) -> dict:
    """Most representative comparison for one RM: max τ(plus) + τ(minus) (``tau_1``, ``tau_2``)."""
    mine = _defined(local.filter(pl.col("rm") == rm))
    plus = mine.filter(pl.col("side") == "plus").select("comparison_id", pl.col("tau").alias("tau_1"))
    minus = mine.filter(pl.col("side") == "minus").select("comparison_id", pl.col("tau").alias("tau_2"))
    both = plus.join(minus, on="comparison_id", how="inner")
    return _best(both.with_columns(score=pl.col("tau_1") + pl.col("tau_2")))


def select_for_pair(local: pl.DataFrame, rm_a: str, rm_b: str, side: str) -> dict:
    """Most representative comparison for two RMs on one side: max τ_a + τ_b (``tau_1``: a, ``tau_2``: b)."""
    on_side = _defined(local.filter(pl.col("side") == side))
    a = on_side.filter(pl.col("rm") == rm_a).select(
        "comparison_id", "plus_target", pl.col("tau").alias("tau_1")
    )
    b = on_side.filter(pl.col("rm") == rm_b).select(
        "comparison_id", "plus_target", pl.col("tau").alias("tau_2")
    )
    both = a.join(b, on=["comparison_id", "plus_target"], how="inner")
    return _best(both.with_columns(score=pl.col("tau_1") + pl.col("tau_2")))


_EXAMPLES_SCHEMA = {
    "kind": pl.String,
    "rm_a": pl.String,
    "rm_b": pl.String,
    "side": pl.String,
    "comparison_id": pl.String,
    "score": pl.Float64,
    "tau_1": pl.Float64,
    "tau_2": pl.Float64,
    "n_eligible": pl.Int64,
}


def select_examples(local: pl.DataFrame, rms: list[str], pairs: list[tuple[str, str]]) -> pl.DataFrame:
    """One row per example slot: one per RM (``kind = rm``) and one per (pair, side) (``kind = pair``)."""
    rows = [{"kind": "rm", "rm_a": rm, "rm_b": None, "side": None, **select_for_rm(local, rm)} for rm in rms]
    rows += [
        {"kind": "pair", "rm_a": a, "rm_b": b, "side": side, **select_for_pair(local, a, b, side)}
        for a, b in pairs
        for side in SIDES
    ]
    return pl.DataFrame(rows, schema=_EXAMPLES_SCHEMA)
