"""A seeded cluster bootstrap over comparisons, shared by every confidence interval of the analyses.

The unit resampled is a *cluster*: a distinct pair of the dataset. Seeds draw from the same pool, so one pair
can be sampled by several seeds under several comparison ids; those copies are not independent draws, and
resampling them as if they were makes intervals too narrow. ``clusters_of`` labels each comparison with
its pair (``{dataset}-s{seed}-{source_index}``: the source index), and a resample draws clusters with
replacement, every comparison of a drawn cluster getting its cluster's count. Where every comparison is its
own cluster this is the plain bootstrap over comparisons, resample for resample.

Resamples are drawn once per (dataset, method) as multinomial *counts* over the clusters, so the
same resampled sets of comparisons feed the flip rates of every RM, side and attribute, and the τ
between them (a paired bootstrap). With a count matrix ``C`` (resamples × comparisons) and a value
matrix ``V`` (comparisons × attributes, NaN where a comparison has no perturbation of that
attribute), the resampled means are ``(C @ V₀) / (C @ M)`` — one matrix product instead of
materialising every resample. ``scipy.stats.bootstrap`` resamples one statistic at a time, cannot
share resamples across RMs (which the τ intervals need) and turns the whole interval into NaN as soon as
one resample is undefined (a τ of a constant ranking), which is common with few flips.

Intervals are BCa (bias-corrected and accelerated, Efron 1987; the default) or plain percentile
intervals, drawn by default at the level expanded for the number of clusters (``expanded_level``). BCa
matters for τ: resampling adds noise to the flip rates, which lowers rank agreement, so the bootstrap
distribution of τ sits below the estimate and a percentile interval can miss it entirely. The acceleration
comes from the leave-one-cluster-out jackknife. Undefined (NaN) resamples and jackknife values are left out
and counted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

METHODS = ("bca", "percentile")
MAX_LEVEL = 1.0 - 1e-9  # an expanded level stays short of 1 (few clusters): its normal quantiles finite
TIE_TOLERANCE = 1e-12  # a resample this close to the estimate ties with it (rounding error, not a difference)


@dataclass(frozen=True)
class BootstrapSettings:
    """Number of resamples, confidence level and seed (config ``analysis.bootstrap``)."""

    n_resamples: int = 2000
    confidence_level: float = 0.95
    seed: int = 0
    method: str = "bca"
    expand: bool = True  # widen for the number of clusters (``expanded_level``)

    @classmethod
    def from_config(cls, section: dict | None) -> BootstrapSettings:
        """Build from the ``analysis.bootstrap`` config section."""
        section = section or {}
        return cls(
            n_resamples=int(section.get("n_resamples", cls.n_resamples)),
            confidence_level=float(section.get("confidence_level", cls.confidence_level)),
            seed=int(section.get("seed", cls.seed)),
            method=str(section.get("method", cls.method)),
            expand=bool(section.get("expand", cls.expand)),
        )


def clusters_of(comparison_ids: Sequence[str], dataset: str | None = None) -> np.ndarray:
    """One cluster label per comparison: the pair it copies, numbered 0, 1, … in order of first appearance.

    A comparison id is ``{dataset}-s{seed}-{source_index}``; its pair is (dataset, source index), the seed
    dropped. With ``dataset`` (every id of one dataset, as every caller here has) the split is exact; without
    it the seed is the last ``-s<digits>-`` of the id. An id of another form is its own cluster.
    """
    labels: dict[str, int] = {}
    out = np.empty(len(comparison_ids), dtype=np.int64)
    for i, comparison_id in enumerate(comparison_ids):
        out[i] = labels.setdefault(pair_id(comparison_id, dataset), len(labels))
    return out


_COMPARISON_ID = re.compile(r"(?P<dataset>.+)-s-?\d+-(?P<source>.+)")
_SEED_SOURCE = re.compile(r"-?\d+-(?P<source>.+)")


def pair_id(comparison_id: str, dataset: str | None) -> str:
    """The id of a comparison's pair, the cluster ``clusters_of`` numbers: the dataset's name and the source
    index joined by a NUL character (``"{dataset}\\0{source_index}"``), or, for an id not of the form
    ``{dataset}-s{seed}-{source_index}``, a \\x01 character and the comparison id."""
    if dataset is None:
        match = _COMPARISON_ID.fullmatch(comparison_id)
        pair = (match["dataset"], match["source"]) if match else None
    else:
        prefix = f"{dataset}-s"
        match = (
            _SEED_SOURCE.fullmatch(comparison_id.removeprefix(prefix))
            if comparison_id.startswith(prefix)
            else None
        )
        pair = (dataset, match["source"]) if match else None
    return "\x00".join(pair) if pair else f"\x01{comparison_id}"


def resample_counts(clusters: np.ndarray, settings: BootstrapSettings) -> np.ndarray:
    """``n_resamples × n`` counts: each comparison's weight in each resample, its cluster's number of draws
    when the distinct clusters are drawn with replacement (``clusters``: a label per comparison)."""
    rng = np.random.default_rng(settings.seed)
    codes, k = _codes(clusters)
    if k == 0:
        return np.zeros((settings.n_resamples, 0), dtype=np.int64)
    drawn = rng.multinomial(k, np.full(k, 1.0 / k), size=settings.n_resamples)
    return drawn[:, codes]


def jackknife_counts(clusters: np.ndarray) -> np.ndarray:
    """``k × n`` counts of the leave-one-cluster-out samples (row j leaves out the j-th cluster)."""
    codes, k = _codes(clusters)
    return (codes[None, :] != np.arange(k)[:, None]).astype(np.int64)


def _codes(clusters: np.ndarray) -> tuple[np.ndarray, int]:
    """Cluster labels as 0..k-1 in order of first appearance, and k."""
    labels = np.asarray(clusters)
    if labels.size == 0:
        return np.zeros(0, dtype=np.int64), 0
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))
    return order[inverse.reshape(-1)].astype(np.int64), int(first.size)


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

    Ties with the estimate count half below (the statistics here are discrete; a tie is a sample within
    ``TIE_TOLERANCE`` of it, so that a resample equal to the estimate in exact arithmetic but summed in
    another order still ties), and the bias correction is kept finite when every sample lies on one side.
    """
    from scipy.stats import norm  # SciPy's statistics take a second to import

    samples = np.asarray(samples, dtype=np.float64)
    finite = samples[np.isfinite(samples)]
    undefined = int(samples.size - finite.size)
    if finite.size == 0 or not np.isfinite(estimate):
        return float("nan"), float("nan"), undefined
    tied = np.abs(finite - estimate) <= TIE_TOLERANCE
    below = (np.sum((finite < estimate) & ~tied) + 0.5 * np.sum(tied)) / finite.size
    z0 = norm.ppf(np.clip(below, 0.5 / finite.size, 1 - 0.5 / finite.size))
    a = _acceleration(np.asarray(jackknife, dtype=np.float64))
    z = norm.ppf([(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    alphas = norm.cdf(z0 + (z0 + z) / (1.0 - a * (z0 + z)))
    low, high = np.quantile(finite, alphas)
    return float(low), float(high), undefined


def expanded_level(level: float, k: int) -> float:
    """The level a bootstrap interval over ``k`` clusters is drawn at so that it covers ``level`` (Hesterberg
    2015, the "expanded percentile interval"): the one whose normal quantile is √(k / (k − 1)) · t(k − 1).

    A bootstrap interval is a normal interval with the plug-in variance (÷ k, not k − 1) and no t quantile,
    too narrow with few clusters: with 42 pairs a 95 % interval covers about 94 %. ``level`` itself below 2
    clusters (no t quantile)."""
    if k < 2:
        return level
    from scipy.stats import norm, t  # SciPy's statistics take a second to import

    quantile = np.sqrt(k / (k - 1)) * t.ppf((1.0 + level) / 2.0, k - 1)
    return min(float(1.0 - 2.0 * norm.sf(quantile)), MAX_LEVEL)


def interval(
    estimate: float, samples: np.ndarray, jackknife: np.ndarray, settings: BootstrapSettings
) -> tuple[float, float, int]:
    """The configured interval (``bca`` or ``percentile``) and the number of undefined resamples; with
    ``expand`` at the level expanded for the number of clusters (one jackknife value per cluster)."""
    level = settings.confidence_level
    if settings.expand:
        level = expanded_level(level, int(np.asarray(jackknife).size))
    if settings.method == "percentile":
        return percentile_interval(samples, level)
    if settings.method == "bca":
        return bca_interval(estimate, samples, jackknife, level)
    raise ValueError(f"analysis.bootstrap.method: {settings.method!r} is not one of {METHODS}")
