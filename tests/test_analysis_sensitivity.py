"""PFR, bootstrap and Kendall τ tables on hand-computed cases (ties and undefined τ included)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import polars as pl
import pytest
from scipy import stats

from rmexplain.analysis.bootstrap import (
    BootstrapSettings,
    bca_interval,
    interval,
    percentile_interval,
    resample_counts,
    resampled_means,
)
from rmexplain.analysis.sensitivity import (
    AnalysisError,
    build_matrices,
    comparison_values,
    global_sensitivity,
    kendall_tau,
)
from rmexplain.schemas import EXPLANATIONS, PFR, TAU_RMS, TAU_SIDES, conform

BOOT = BootstrapSettings(n_resamples=400, confidence_level=0.9, seed=3)


def row(
    rm: str, cid: str, side: str, attribute: str | None, cf: bool, delta: float, variant: int = 0
) -> dict:
    """One explanation row; only the fields the analyses read carry meaning."""
    return {
        "dataset": "d",
        "rm": rm,
        "method": "rules",
        "comparison_id": cid,
        "seed": 0,
        "perturbation_id": f"{rm}/{cid}/{side}/{attribute}/{variant}",
        "target": "chosen" if side == "plus" else "rejected",
        "side": side,
        "attribute": attribute,
        "variant": variant,
        "reward_plus": 1.0,
        "reward_minus": 0.0,
        "reward_perturbed": 0.0,
        "kind": "counterfactual" if cf else "semifactual",
        "sf_subkind": None if cf else "between",
        "reward_delta": delta,
        "agrees_with_human": True,
    }


def frame(rows: list[dict]) -> pl.DataFrame:
    return conform(pl.DataFrame(rows), EXPLANATIONS, "test explanations")


# c1: a CF, b SF; c2: a has a CF and an SF variant, b SF; c3: a SF, no b perturbation.
HAND = [
    row("r", "c1", "plus", "a", True, 2.0),
    row("r", "c1", "plus", "b", False, 0.5),
    row("r", "c2", "plus", "a", True, 3.0),
    row("r", "c2", "plus", "a", False, 1.0, variant=1),
    row("r", "c2", "plus", "b", False, -0.5),
    row("r", "c3", "plus", "a", False, 0.0),
    row("r", "c1", "minus", "a", False, 0.1),
    row("r", "c1", "minus", "b", True, 0.9),
    row("r", "c9", "plus", None, True, 5.0),  # unconditioned: never counted
]


def test_pfr_hand_computed_with_variants_and_missing_attribute():
    result = global_sensitivity(frame(HAND), "d", "rules", BOOT)
    pfr = {(r["side"], r["attribute"]): r for r in result.pfr.iter_rows(named=True)}
    # a on Y+: per-comparison shares 1, 1/2, 0 -> 0.5; b: 0, 0 over two comparisons (c3 has none).
    assert pfr["plus", "a"]["pfr"] == pytest.approx(0.5)
    assert pfr["plus", "a"]["n_comparisons"] == 3 and pfr["plus", "a"]["n_perturbations"] == 4
    assert pfr["plus", "b"]["pfr"] == 0.0 and pfr["plus", "b"]["n_comparisons"] == 2
    # mean delta of a: per-comparison means 2, 2, 0 -> 4/3; of b: (0.5 - 0.5) / 2 = 0.
    assert pfr["plus", "a"]["mean_delta"] == pytest.approx(4 / 3)
    assert pfr["plus", "b"]["mean_delta"] == pytest.approx(0.0)
    assert pfr["minus", "b"]["pfr"] == 1.0 and pfr["minus", "a"]["pfr"] == 0.0
    assert set(pfr) == {("plus", "a"), ("plus", "b"), ("minus", "a"), ("minus", "b")}
    conform(result.pfr, PFR, "pfr")


def test_pfr_any_variant_rule_counts_a_comparison_once():
    values = comparison_values(frame(HAND[:6]), variants="any")
    c2 = values.filter((pl.col("comparison_id") == "c2") & (pl.col("attribute") == "a"))
    assert c2["flip"].to_list() == [1.0] and c2["n_perturbations"].to_list() == [2]
    result = global_sensitivity(frame(HAND[:6]), "d", "rules", BOOT, variants="any")
    a = result.pfr.filter((pl.col("side") == "plus") & (pl.col("attribute") == "a"))
    assert a["pfr"][0] == pytest.approx(2 / 3)
    with pytest.raises(AnalysisError, match=r"analysis\.variants"):
        comparison_values(frame(HAND), variants="median")


def test_pfr_interval_contains_the_estimate_and_is_degenerate_for_constant_data():
    result = global_sensitivity(frame(HAND), "d", "rules", BOOT)
    for r in result.pfr.iter_rows(named=True):
        assert r["pfr_low"] <= r["pfr"] + 1e-12 and r["pfr"] <= r["pfr_high"] + 1e-12
    b = result.pfr.filter((pl.col("side") == "plus") & (pl.col("attribute") == "b")).row(0, named=True)
    assert (b["pfr_low"], b["pfr_high"]) == (0.0, 0.0)
    again = global_sensitivity(frame(HAND), "d", "rules", BOOT)
    assert again.pfr.equals(result.pfr)  # seeded


def test_resampled_means_equal_materialised_resamples():
    rng = np.random.default_rng(0)
    values = rng.normal(size=(7, 3))
    values[rng.random((7, 3)) < 0.3] = np.nan
    counts = resample_counts(np.arange(7), BootstrapSettings(n_resamples=50, seed=1))
    fast = resampled_means(counts, values)
    for b in range(50):
        drawn = np.repeat(values, counts[b], axis=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
            expected = np.nanmean(drawn, axis=0)
        np.testing.assert_allclose(fast[b], expected, equal_nan=True)
    assert counts.sum(axis=1).tolist() == [7] * 50


def test_percentile_interval_skips_and_counts_undefined_samples():
    low, high, undefined = percentile_interval(np.array([np.nan, 0.0, 1.0, 2.0, np.nan]), 0.5)
    assert (low, high, undefined) == (0.5, 1.5, 2)
    low, high, undefined = percentile_interval(np.array([np.nan, np.nan]), 0.95)
    assert math.isnan(low) and math.isnan(high) and undefined == 2


def test_bca_interval_equals_scipys_on_the_same_resamples():
    x = np.random.default_rng(0).exponential(size=30)
    ref = stats.bootstrap(
        (x,), np.mean, n_resamples=999, method="BCa", confidence_level=0.9, rng=np.random.default_rng(1)
    )
    jackknife = np.array([np.delete(x, i).mean() for i in range(x.size)])
    low, high, undefined = bca_interval(x.mean(), ref.bootstrap_distribution, jackknife, 0.9)
    assert (low, high) == pytest.approx(tuple(ref.confidence_interval), rel=1e-12) and undefined == 0


def test_bca_moves_the_interval_towards_a_biased_estimate():
    samples = np.linspace(0.0, 0.7, 101)  # every resample below the estimate, as for τ with noisy ranks
    low, high, _ = bca_interval(0.75, samples, np.full(10, 0.75), 0.95)
    p_low, p_high, _ = percentile_interval(samples, 0.95)
    assert high == pytest.approx(0.7) and high > p_high and low > p_low
    assert bca_interval(0.3, np.full(50, 0.3), np.full(5, 0.3), 0.95)[:2] == (0.3, 0.3)  # degenerate
    assert math.isnan(bca_interval(float("nan"), samples, samples, 0.95)[0])
    with pytest.raises(ValueError, match=r"analysis\.bootstrap\.method"):
        interval(0.0, samples, samples, BootstrapSettings(method="basic"))


@pytest.mark.parametrize(
    ("x", "y", "tau"),
    [
        ([0.1, 0.2, 0.3, 0.4], [1, 2, 3, 4], 1.0),
        ([0.4, 0.3, 0.2, 0.1], [1, 2, 3, 4], -1.0),
        # One tied pair in x: C = 5, D = 0, n0 = 6, n1 = 1 -> 5 / sqrt(5 * 6).
        ([0.1, 0.2, 0.2, 0.4], [1, 2, 3, 4], 5 / math.sqrt(30)),
        # Ties in both: x ties (1,2), y ties (3,4); C = 4, D = 0 -> 4 / sqrt(5 * 5).
        ([0.1, 0.1, 0.3, 0.4], [1, 2, 3, 3], 4 / 5),
        # NaN entries are left out: the rest is perfectly concordant.
        ([0.1, np.nan, 0.3, 0.4], [1, 2, 3, 4], 1.0),
    ],
)
def test_kendall_tau_b_hand_computed(x, y, tau):
    value, p_value, n = kendall_tau(np.array(x), np.array(y))
    assert value == pytest.approx(tau)
    assert 0.0 <= p_value <= 1.0
    assert n == int(np.isfinite(np.array(x, dtype=float)).sum())


@pytest.mark.parametrize(("x", "y"), [([0.0, 0.0, 0.0], [1, 2, 3]), ([0.5], [1]), ([np.nan, 1.0], [1, 2])])
def test_kendall_tau_is_undefined_for_constant_or_too_short_rankings(x, y):
    value, p_value, _ = kendall_tau(np.array(x), np.array(y))
    assert math.isnan(value) and math.isnan(p_value)


def _pfr_rows(rm: str, side: str, flips: dict[str, list[bool]]) -> list[dict]:
    """Rows giving each attribute the listed per-comparison CF flags."""
    return [
        row(rm, f"c{i}", side, attribute, cf, 1.0)
        for attribute, cfs in flips.items()
        for i, cf in enumerate(cfs)
    ]


def test_tau_tables_hand_computed_with_ties_and_undefined():
    rows = (
        # r1: PFR a=1, b=0.5, c=0 on both sides.
        _pfr_rows("r1", "plus", {"a": [True, True], "b": [True, False], "c": [False, False]})
        + _pfr_rows("r1", "minus", {"a": [True, True], "b": [True, False], "c": [False, False]})
        # r2: reversed on Y+ (τ = −1); ties a=b=1 on Y− (τ-b vs r1 = 2/sqrt(6)).
        + _pfr_rows("r2", "plus", {"a": [False, False], "b": [True, False], "c": [True, True]})
        + _pfr_rows("r2", "minus", {"a": [True, True], "b": [True, True], "c": [False, False]})
        # r3: never flips: constant ranking, τ undefined everywhere.
        + _pfr_rows("r3", "plus", {"a": [False, False], "b": [False, False], "c": [False, False]})
        + _pfr_rows("r3", "minus", {"a": [False, False], "b": [False, False], "c": [False, False]})
    )
    result = global_sensitivity(frame(rows), "d", "rules", BOOT, rm_order=["r1", "r2", "r3"])
    tau = {(r["side"], r["rm_a"], r["rm_b"]): r for r in result.tau_rms.iter_rows(named=True)}
    assert list(tau) == [
        ("plus", "r1", "r2"),
        ("plus", "r1", "r3"),
        ("plus", "r2", "r3"),
        ("minus", "r1", "r2"),
        ("minus", "r1", "r3"),
        ("minus", "r2", "r3"),
    ]
    assert tau["plus", "r1", "r2"]["tau"] == pytest.approx(-1.0)
    assert tau["minus", "r1", "r2"]["tau"] == pytest.approx(2 / math.sqrt(6))
    undefined = tau["plus", "r1", "r3"]
    assert math.isnan(undefined["tau"]) and math.isnan(undefined["ci_low"])
    assert undefined["n_undefined"] == BOOT.n_resamples and undefined["n_attributes"] == 3
    sides = {r["rm"]: r for r in result.tau_sides.iter_rows(named=True)}
    assert sides["r1"]["tau"] == pytest.approx(1.0)
    assert sides["r2"]["tau"] == pytest.approx(-2 / math.sqrt(6))  # (0, .5, 1) vs (1, 1, 0)
    assert math.isnan(sides["r3"]["tau"])
    for table in (result.tau_rms, result.tau_sides):
        defined = table.filter(pl.col("tau").is_not_nan())
        assert (defined["ci_low"] <= defined["tau"] + 1e-12).all() and (
            defined["tau"] <= defined["ci_high"] + 1e-12
        ).all()
    conform(result.tau_rms, TAU_RMS, "tau_rms")
    conform(result.tau_sides, TAU_SIDES, "tau_sides")


def test_attribute_and_rm_order_follow_config():
    values = comparison_values(frame(HAND[:8]))
    matrices = build_matrices(values, attribute_order=["b", "zz", "a"], rm_order=["r"])
    assert matrices.attributes == ["b", "a"] and matrices.rms == ["r"]


def test_bad_rows_are_named():
    bad = frame([{**HAND[0], "side": "left"}])
    with pytest.raises(AnalysisError, match="side 'left'"):
        global_sensitivity(bad, "d", "rules", BOOT)
    with pytest.raises(AnalysisError, match="contain a row of d/rules"):
        global_sensitivity(frame(HAND), "other", "rules", BOOT)


def test_no_attribute_rows_give_empty_tables():
    result = global_sensitivity(frame([HAND[-1]]), "d", "rules", BOOT)
    assert result.pfr.height == 0 and result.tau_rms.height == 0 and result.tau_sides.height == 0
