"""The robust length-adjusted estimator: Huber's M-estimate of ``length_adjusted``'s design and two steps."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm

from rmexplain.analysis.bootstrap import BootstrapSettings
from rmexplain.effects.analysis import EffectSettings, effects_table, excludes_zero
from rmexplain.effects.base import EffectInput, Observations, RewardChanges, estimators, reported_estimators
from rmexplain.effects.estimators import huber_weights, length_design, residual_scale

N_COMPARISONS = 30


def _edits(seed: int = 0, outlier: float = 8.0) -> Observations:
    """Six edits per comparison (attributes a, b, c, each both ways) of an RM with a heavy-tailed noise,
    +0.5 for a, −0.3 for b, 0 for c and +0.2 per sd of length; comparison 0's edits ``outlier`` sd further
    in their own direction (a one-word response that every edit moves tenfold)."""
    rng = np.random.default_rng(seed)
    comparison = np.repeat(np.arange(N_COMPARISONS), 6)
    attribute = np.tile([0, 0, 1, 1, 2, 2], N_COMPARISONS)
    sign = np.tile([1.0, -1.0], N_COMPARISONS * 3)
    length = rng.normal(size=comparison.size)
    noise = 0.2 * rng.standard_t(2, size=comparison.size)
    y = 0.5 * sign * (attribute == 0) - 0.3 * sign * (attribute == 1) + 0.2 * length + noise
    y[comparison == 0] += outlier * sign[comparison == 0]
    return Observations(comparison, attribute, y, sign, length, None, None)


def _robust(obs: Observations, weights: np.ndarray | None = None) -> np.ndarray:
    weights = np.ones((1, N_COMPARISONS)) if weights is None else weights
    return estimators.get("robust_length_adjusted")().estimate(obs, weights, N_COMPARISONS, 3)


def test_without_classes_it_is_statsmodels_huber_rlm_on_the_same_design():
    obs = _edits()
    design, columns = length_design(obs)
    fit = sm.RLM(obs.value, design, M=sm.robust.norms.HuberT()).fit(tol=1e-13, maxiter=500, conv="coefs")
    expected = [fit.params[columns[a]] for a in range(3)] + [fit.params[-1]]
    assert _robust(obs)[0] == pytest.approx(expected, abs=1e-8)
    assert huber_weights(obs, design, N_COMPARISONS) == pytest.approx(fit.weights, abs=1e-7)


def test_a_comparison_far_off_moves_least_squares_and_not_the_robust_fit():
    clean, spoilt = _edits(outlier=0.0), _edits(outlier=8.0)
    least = estimators.get("length_adjusted")()
    shift_ls = least.estimate(spoilt, np.ones((1, N_COMPARISONS)), N_COMPARISONS, 3) - least.estimate(
        clean, np.ones((1, N_COMPARISONS)), N_COMPARISONS, 3
    )
    shift_robust = _robust(spoilt) - _robust(clean)
    # c's effect: comparison 0's edits 8 sd further each way; least squares moves c by 8/30 (half the
    # difference of its two directions' means), the robust fit by ten times less
    assert shift_ls[0, 2] == pytest.approx(8 / N_COMPARISONS, rel=0.05)
    assert abs(shift_robust[0, 2]) < abs(shift_ls[0, 2]) / 10


def test_an_rm_without_noise_gives_the_least_squares_numbers():
    obs = _edits(outlier=0.0)
    exact = Observations(obs.comparison, obs.attribute, _linear(obs), obs.sign, obs.length_change, None, None)
    weights = huber_weights(exact, length_design(exact)[0], N_COMPARISONS)
    assert np.all(weights == 1.0)
    least = estimators.get("length_adjusted")().estimate(exact, np.ones((1, N_COMPARISONS)), N_COMPARISONS, 3)
    assert _robust(exact) == pytest.approx(least, abs=1e-12)
    assert _robust(exact)[0] == pytest.approx([0.5, -0.3, 0.0, 0.2], abs=1e-12)


def _linear(obs: Observations) -> np.ndarray:
    return (
        0.5 * obs.sign * (obs.attribute == 0)
        - 0.3 * obs.sign * (obs.attribute == 1)
        + 0.2 * obs.length_change
    )


def test_the_scale_is_the_mad_about_zero_and_falls_back_where_most_residuals_vanish():
    assert residual_scale(np.array([1.0, -2.0, 3.0, -4.0, 0.5])) == pytest.approx(2.0 / 0.6744897501960817)
    # four of five exact: the MAD is 0, the mean absolute residual × √(π/2) stands in
    assert residual_scale(np.array([0.0, 0.0, 0.0, 0.0, 5.0])) == pytest.approx(1.0 * np.sqrt(np.pi / 2))
    assert residual_scale(np.zeros(4)) == 0.0
    assert residual_scale(None) == 0.0


def test_with_classes_its_weights_are_the_fixed_point_of_the_two_steps_by_hand():
    obs = _edits()
    rng = np.random.default_rng(1)
    classes = rng.integers(-2, 3, size=(obs.value.size, 2)).astype(np.float64)
    y = obs.value + 0.4 * classes[:, 0] + 0.3 * classes[:, 1] * obs.length_change
    with_classes = Observations(obs.comparison, obs.attribute, y, obs.sign, obs.length_change, None, classes)
    design, columns = length_design(with_classes)
    weights = huber_weights(with_classes, design, N_COMPARISONS)
    root = np.sqrt(weights)
    # step 1 by hand: γ from the weighted fit with the classes; step 2: the rest on y − γ·Δℓ without them
    full = np.column_stack([design[:, :-1], classes, design[:, -1]])
    gamma = np.linalg.lstsq(full * root[:, None], y * root, rcond=None)[0][-1]
    rest = np.linalg.lstsq(design[:, :-1] * root[:, None], (y - gamma * design[:, -1]) * root, rcond=None)[0]
    residuals = y - design[:, :-1] @ rest - gamma * design[:, -1]
    scale = np.median(np.abs(residuals)) / 0.6744897501960817
    assert weights == pytest.approx(np.minimum(1.0, 1.345 * scale / np.abs(residuals)), abs=1e-8)
    assert weights.min() < 0.5  # comparison 0's edits weigh less
    estimate = estimators.get("robust_length_adjusted")().estimate(
        with_classes, np.ones((1, N_COMPARISONS)), N_COMPARISONS, 3
    )[0]
    assert estimate == pytest.approx([rest[columns[a]] for a in range(3)] + [gamma], abs=1e-9)


def test_a_resample_refits_with_the_whole_samples_weights_fixed():
    obs = _edits()
    design, columns = length_design(obs)
    weights = huber_weights(obs, design, N_COMPARISONS)
    counts = np.random.default_rng(2).multinomial(N_COMPARISONS, np.full(N_COMPARISONS, 1 / N_COMPARISONS))
    drawn = counts[obs.comparison] * weights
    keep = drawn > 0
    root = np.sqrt(drawn[keep])
    by_hand = np.linalg.lstsq(design[keep] * root[:, None], obs.value[keep] * root, rcond=None)[0]
    resampled = _robust(obs, counts[None].astype(np.float64))[0]
    assert resampled == pytest.approx([by_hand[columns[a]] for a in range(3)] + [by_hand[-1]], abs=1e-9)


def _effect_input(obs: Observations, changes: np.ndarray, sd: float) -> EffectInput:
    """The effects' input of one RM "rm" whose reward changes by ``changes`` (its reward sd ``sd``) on
    ``obs``'s edits of attributes a, b and c."""
    return EffectInput(
        comparisons=[f"c{i:02d}" for i in range(N_COMPARISONS)],
        attributes=["a", "b", "c"],
        comparison=obs.comparison,
        attribute=obs.attribute,
        direction=obs.sign.astype(np.int64),
        round=np.ones(obs.value.size, dtype=np.int64),
        chain=obs.sign.astype(np.int64),
        length_change=obs.length_change,
        rms={"rm": RewardChanges(changes, sd, *(np.zeros(0),) * 4)},
    )


def test_the_effects_table_reports_it_by_default_beside_the_primary():
    obs = _edits()
    data = _effect_input(obs, obs.value * 2.0, 2.0)
    assert "robust_length_adjusted" in reported_estimators({"estimators": None, "rewrite_of_rewrite": False})
    settings = EffectSettings(
        ("length_adjusted", "robust_length_adjusted"), "length_adjusted", BootstrapSettings(n_resamples=100)
    )
    table = effects_table(data, ["rm"], {}, settings)
    robust = table.filter(pl.col("estimator") == "robust_length_adjusted").sort("attribute")
    assert robust["attribute"].to_list() == ["a", "b", "c", "length"]
    assert robust["effect"].to_list() == pytest.approx(_robust(obs)[0][[0, 1, 2, 3]].tolist(), abs=1e-12)
    assert not robust["primary"].any()
    assert robust.filter(pl.col("attribute") == "a")["significant"].item()


def test_one_estimator_fits_each_observations_its_own_weights():
    estimator = estimators.get("robust_length_adjusted")()
    ones = np.ones((1, N_COMPARISONS))
    first, second = _edits(seed=0), _edits(seed=5, outlier=0.0)
    assert estimator.estimate(first, ones, N_COMPARISONS, 3) == pytest.approx(_robust(first), abs=1e-12)
    # the same number of comparisons, other observations: not the first's weights
    assert estimator.estimate(second, ones, N_COMPARISONS, 3) == pytest.approx(_robust(second), abs=1e-12)
    assert not np.allclose(_robust(first), _robust(second))


def test_with_classes_and_no_length_change_the_outlying_edits_still_weigh_less():
    obs = _edits()
    classes = np.random.default_rng(4).integers(-2, 3, size=(obs.value.size, 1)).astype(np.float64)
    flat = Observations(obs.comparison, obs.attribute, obs.value + 0.4 * classes[:, 0], obs.sign,
                        np.zeros(obs.value.size), None, classes)  # fmt: skip
    weights = huber_weights(flat, length_design(flat)[0], N_COMPARISONS)
    assert weights[flat.comparison == 0].max() < 0.5  # γ is undefined and taken as 0, not as NaN
    assert weights[flat.comparison != 0].min() > weights[flat.comparison == 0].max()


def test_an_effect_at_rounding_level_is_no_finding_however_tight_its_interval():
    """An RM its counts span exactly leaves effects of about 1e-10 whose every resample rounds alike: the
    interval misses 0 but not the ±1e-6 reward sd of rounding, so the row is no finding."""
    obs = _edits(outlier=0.0)
    rounding = 1e-9 * obs.sign * (obs.attribute == 2)  # c: 0 in exact arithmetic, 1e-9 as computed
    data = _effect_input(obs, _linear(obs) + rounding, 1.0)
    settings = EffectSettings(
        ("length_adjusted", "robust_length_adjusted"), "length_adjusted", BootstrapSettings(n_resamples=100)
    )
    table = effects_table(data, ["rm"], {}, settings).filter(pl.col("attribute") == "c")
    assert table["effect"].to_list() == pytest.approx([1e-9, 1e-9], abs=1e-11)
    assert (table["low"] > 0).all()  # the interval alone would call it significant
    assert not table["significant"].any()
    assert excludes_zero(2e-6, 3e-6) and excludes_zero(-3e-6, -2e-6)
    assert not excludes_zero(-1.4e-10, -5.8e-11) and not excludes_zero(5e-7, 9e-7, signed=False)
