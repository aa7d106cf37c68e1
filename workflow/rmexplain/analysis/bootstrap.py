"""A seeded percentile bootstrap over comparisons, shared by every confidence interval of the analyses.

Resamples are drawn once per (dataset, method) as multinomial *counts* over the comparisons, so the
same resampled sets of comparisons feed the flip rates of every RM, side and attribute, and the τ
between them (a paired bootstrap). With a count matrix ``C`` (resamples × comparisons) and a value
matrix ``V`` (comparisons × attributes, NaN where a comparison has no perturbation of that
attribute), the resampled means are ``(C @ V₀) / (C @ M)`` — one matrix product instead of
materialising every resample. ``scipy.stats.bootstrap`` resamples one statistic at a time, cannot
share resamples across RMs (which the τ intervals need) and turns the whole interval into NaN as soon as
one resample is undefined (a τ of a constant ranking), which is common with few flips.

Intervals are BCa (bias-corrected and accelerated, Efron 1987; the default) or plain percentile
intervals. BCa matters for τ: resampling adds noise to the flip rates, which lowers rank agreement, so the
bootstrap distribution of τ sits below the estimate and a percentile interval can miss it entirely. The
acceleration comes from the leave-one-comparison-out jackknife. Undefined (NaN) resamples and jackknife
values are left out and counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

METHODS = ("bca", "percentile")


@dataclass(frozen=True)
class BootstrapSettings:
    """Number of resamples, confidence level and seed (config ``analysis.bootstrap``)."""

    n_resamples: int = 2000
    confidence_level: float = 0.95
    seed: int = 0
    method: str = "bca"

    @classmethod
    def from_config(cls, section: dict | None) -> BootstrapSettings:
        """Build from the ``analysis.bootstrap`` config section."""
        section = section or {}
        return cls(
            n_resamples=int(section.get("n_resamples", cls.n_resamples)),
            confidence_level=float(section.get("confidence_level", cls.confidence_level)),
            seed=int(section.get("seed", cls.seed)),
            method=str(section.get("method", cls.method)),
        )


def resample_counts(n: int, settings: BootstrapSettings) -> np.ndarray:
    """``n_resamples × n`` multinomial counts: how often each comparison is drawn in each resample."""
    rng = np.random.default_rng(settings.seed)
    if n == 0:
        return np.zeros((settings.n_resamples, 0), dtype=np.int64)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=settings.n_resamples)


def jackknife_counts(n: int) -> np.ndarray:
    """``n × n`` counts of the leave-one-comparison-out samples (row i leaves out comparison i)."""
    return np.ones((n, n), dtype=np.int64) - np.eye(n, dtype=np.int64)


def resampled_means(counts: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Column means of ``values`` (comparisons × k, NaN = missing) under each resample: resamples × k.

    A column with no drawn non-missing value in a resample is NaN there.
    """
    present = ~np.isnan(values)
    weight = counts @ present.astype(np.float64)
    total = counts @ np.where(present, values, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(weight > 0, total / np.where(weight > 0, weight, 1.0), np.nan)


def percentile_interval(samples: np.ndarray, level: float) -> tuple[float, float, int]:
    """Percentile interval of the finite bootstrap samples, and how many samples were undefined (NaN).

    Returns (NaN, NaN, n) when no sample is finite.
    """
    samples = np.asarray(samples, dtype=np.float64)
    finite = samples[np.isfinite(samples)]
    undefined = int(samples.size - finite.size)
    if finite.size == 0:
        return float("nan"), float("nan"), undefined
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(finite, [alpha, 1.0 - alpha])
    return float(low), float(high), undefined


def _acceleration(jackknife: np.ndarray) -> float:
    values = jackknife[np.isfinite(jackknife)]
    if values.size < 3:
        return 0.0
    d = values.mean() - values
    denominator = 6.0 * np.sum(d**2) ** 1.5
    return float(np.sum(d**3) / denominator) if denominator > 0 else 0.0


def bca_interval(
    estimate: float, samples: np.ndarray, jackknife: np.ndarray, level: float
) -> tuple[float, float, int]:
    """BCa interval from the bootstrap samples and the jackknife values; also the count of undefined samples.

    Ties with the estimate count half below (the statistics here are discrete), and the bias correction
    is kept finite when every sample lies on one side of the estimate.
    """
    samples = np.asarray(samples, dtype=np.float64)
    finite = samples[np.isfinite(samples)]
    undefined = int(samples.size - finite.size)
    if finite.size == 0 or not np.isfinite(estimate):
        return float("nan"), float("nan"), undefined
    below = (np.sum(finite < estimate) + 0.5 * np.sum(finite == estimate)) / finite.size
    z0 = norm.ppf(np.clip(below, 0.5 / finite.size, 1 - 0.5 / finite.size))
    a = _acceleration(np.asarray(jackknife, dtype=np.float64))
    z = norm.ppf([(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    alphas = norm.cdf(z0 + (z0 + z) / (1.0 - a * (z0 + z)))
    low, high = np.quantile(finite, alphas)
    return float(low), float(high), undefined


def interval(
    estimate: float, samples: np.ndarray, jackknife: np.ndarray, settings: BootstrapSettings
) -> tuple[float, float, int]:
    """The configured interval (``bca`` or ``percentile``) and the number of undefined resamples."""
    if settings.method == "percentile":
        return percentile_interval(samples, settings.confidence_level)
    if settings.method == "bca":
        return bca_interval(estimate, samples, jackknife, settings.confidence_level)
    raise ValueError(f"analysis.bootstrap.method: {settings.method!r} is not one of {METHODS}")
