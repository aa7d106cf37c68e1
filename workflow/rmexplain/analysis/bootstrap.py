"""A seeded percentile bootstrap over comparisons, shared by every confidence interval of the analyses.

Resamples are drawn once per (dataset, method) as multinomial *counts* over the comparisons, so the
same resampled sets of comparisons feed the flip rates of every RM, side and attribute, and the τ
between them (a paired bootstrap). With a count matrix ``C`` (resamples × comparisons) and a value
matrix ``V`` (comparisons × attributes, NaN where a comparison has no perturbation of that
attribute), the resampled means are ``(C @ V₀) / (C @ M)`` — one matrix product instead of
materialising every resample. ``scipy.stats.bootstrap`` resamples one statistic at a time and cannot
share resamples across RMs, which the τ intervals need.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BootstrapSettings:
    """Number of resamples, confidence level and seed (config ``analysis.bootstrap``)."""

    n_resamples: int = 2000
    confidence_level: float = 0.95
    seed: int = 0

    @classmethod
    def from_config(cls, section: dict | None) -> BootstrapSettings:
        """Build from the ``analysis.bootstrap`` config section."""
        section = section or {}
        return cls(
            n_resamples=int(section.get("n_resamples", cls.n_resamples)),
            confidence_level=float(section.get("confidence_level", cls.confidence_level)),
            seed=int(section.get("seed", cls.seed)),
        )


def resample_counts(n: int, settings: BootstrapSettings) -> np.ndarray:
    """``n_resamples × n`` multinomial counts: how often each comparison is drawn in each resample."""
    rng = np.random.default_rng(settings.seed)
    if n == 0:
        return np.zeros((settings.n_resamples, 0), dtype=np.int64)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=settings.n_resamples)


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
