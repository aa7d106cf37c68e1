"""Global sensitivity (paper §4.1): preference flip rates (PFR) per attribute and the Kendall τ between them.

Definitions (one dataset and perturbation method at a time):

- Unit of analysis: a comparison. For RM r, side s (``plus`` = perturbations of y+, ``minus`` = of y−)
  and attribute a, the comparison's *flip value* is the share of its perturbations of (s, a) that are
  counterfactuals (``variants: mean``; 0 or 1 with one perturbation per attribute, as in the paper) or
  1 if any of them is (``variants: any``). Its *delta* is the mean ``reward_delta`` of those perturbations.
- PFR(r, s, a) is the mean flip value over the comparisons that have at least one perturbation of (s, a);
  comparisons without one are not counted (``n_comparisons`` says how many were).
- Confidence intervals: BCa (default) or percentile bootstrap over distinct pairs (``bootstrap.py``: a
  pair drawn by several seeds is one cluster), the same resamples for every RM, side and attribute.
- τ is Kendall's τ-b (``scipy.stats.kendalltau``), which handles tied PFRs, computed on the attributes
  with a defined PFR in both vectors. It is NaN (undefined) with fewer than two such attributes or when
  either vector is constant (e.g. every PFR is 0); resamples where it is undefined are left out of the
  interval and counted in ``n_undefined``.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import polars as pl

from rmexplain.analysis.bootstrap import (
    BootstrapSettings,
    clusters_of,
    interval,
    jackknife_counts,
    resample_counts,
    resampled_means,
)
from rmexplain.explanations.metrics import SIDES

VARIANT_RULES = ("mean", "any")


class AnalysisError(ValueError):
    """Bad input to an analysis (the message names the table, column or setting)."""


def attribute_rows(explanations: pl.DataFrame, log: logging.Logger | None = None) -> pl.DataFrame:
    """The rows with an attribute; rows without one are dropped and counted in the log."""
    dropped = explanations["attribute"].null_count()
    if dropped and log is not None:
        log.info("skipping %d of %d explanation rows without an attribute", dropped, explanations.height)
    return explanations.filter(pl.col("attribute").is_not_null())


def comparison_values(explanations: pl.DataFrame, variants: str = "mean") -> pl.DataFrame:
    """One row per (rm, side, attribute, comparison_id): ``flip``, ``delta``, ``n_perturbations``."""
    if variants not in VARIANT_RULES:
        raise AnalysisError(f"analysis.variants: {variants!r} is not one of {VARIANT_RULES}")
    bad = explanations.filter(~pl.col("side").is_in(list(SIDES)))
    if bad.height:
        raise AnalysisError(f"explanations: side {bad['side'][0]!r} in row of {bad['perturbation_id'][0]}")
    is_cf = (pl.col("kind") == "counterfactual").cast(pl.Float64)
    flip = is_cf.mean() if variants == "mean" else is_cf.max()
    return (
        explanations.group_by("rm", "side", "attribute", "comparison_id")
        .agg(
            flip.alias("flip"),
            pl.col("reward_delta").mean().alias("delta"),
            pl.len().alias("n_perturbations"),
        )
        .sort("rm", "side", "attribute", "comparison_id")
    )


@dataclass
class Matrices:
    """Per-comparison values as arrays indexed [rm, side, comparison, attribute]; NaN = no perturbation."""

    rms: list[str]
    comparisons: list[str]
    attributes: list[str]
    flip: np.ndarray
    delta: np.ndarray
    n_perturbations: np.ndarray

    def side_index(self, side: str) -> int:
        """Index of a side in the second axis."""
        return SIDES.index(side)


def _ordered(present: set[str], order: list[str] | None) -> list[str]:
    """``order`` restricted to ``present``, then the rest of ``present`` sorted."""
    first = [x for x in (order or []) if x in present]
    return first + sorted(present - set(first))


def build_matrices(
    values: pl.DataFrame, attribute_order: list[str] | None = None, rm_order: list[str] | None = None
) -> Matrices:
    """Arrange ``comparison_values`` output as dense arrays (RMs and attributes in the given orders first)."""
    rms = _ordered(set(values["rm"].to_list()), rm_order)
    comparisons = sorted(set(values["comparison_id"].to_list()))
    attributes = _ordered(set(values["attribute"].to_list()), attribute_order)
    shape = (len(rms), len(SIDES), len(comparisons), len(attributes))
    flip, delta = np.full(shape, np.nan), np.full(shape, np.nan)
    counts = np.zeros(shape, dtype=np.int64)
    r_ix = {r: i for i, r in enumerate(rms)}
    c_ix = {c: i for i, c in enumerate(comparisons)}
    a_ix = {a: i for i, a in enumerate(attributes)}
    for row in values.iter_rows(named=True):
        key = (r_ix[row["rm"]], SIDES.index(row["side"]), c_ix[row["comparison_id"]], a_ix[row["attribute"]])
        flip[key], delta[key], counts[key] = row["flip"], row["delta"], row["n_perturbations"]
    return Matrices(rms, comparisons, attributes, flip, delta, counts)


def _nanmean(values: np.ndarray, axis: int) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns are NaN by design
        return np.nanmean(values, axis=axis)


def point_pfr(matrices: Matrices) -> np.ndarray:
    """PFR per [rm, side, attribute] (NaN where no comparison has that perturbation)."""
    return _nanmean(matrices.flip, axis=2)


def resampled(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Means of ``values`` [rm, side, comparison, attribute] per row of ``counts``: [rm, side, row, attr]."""
    n_rm, n_side = values.shape[:2]
    out = np.full((n_rm, n_side, counts.shape[0], values.shape[3]), np.nan)
    for r in range(n_rm):
        for s in range(n_side):
            out[r, s] = resampled_means(counts, values[r, s])
    return out


@dataclass
class Resampled:
    """Point estimates, bootstrap replicates and jackknife replicates of PFR and mean delta."""

    pfr: np.ndarray  # [rm, side, attribute]
    delta: np.ndarray
    pfr_boot: np.ndarray  # [rm, side, resample, attribute]
    delta_boot: np.ndarray
    pfr_jack: np.ndarray  # [rm, side, left-out comparison, attribute]
    delta_jack: np.ndarray
    settings: BootstrapSettings

    @classmethod
    def compute(
        cls, matrices: Matrices, settings: BootstrapSettings, dataset: str | None = None
    ) -> Resampled:
        """Resample the comparisons' pairs (of ``dataset``) once for every RM, side and attribute."""
        clusters = clusters_of(matrices.comparisons, dataset)
        counts, jack = resample_counts(clusters, settings), jackknife_counts(clusters)
        return cls(
            pfr=point_pfr(matrices),
            delta=_nanmean(matrices.delta, axis=2),
            pfr_boot=resampled(matrices.flip, counts),
            delta_boot=resampled(matrices.delta, counts),
            pfr_jack=resampled(matrices.flip, jack),
            delta_jack=resampled(matrices.delta, jack),
            settings=settings,
        )

    def tau(
        self, first: tuple[int, int], second: tuple[int, int]
    ) -> tuple[float, float, float, float, int, int]:
        """τ between the PFR vectors at [rm, side] ``first`` and ``second``, its interval and counts."""
        tau, p_value, n_attr = kendall_tau(self.pfr[first], self.pfr[second])
        boot = _tau_samples(self.pfr_boot[first], self.pfr_boot[second])
        jack = _tau_samples(self.pfr_jack[first], self.pfr_jack[second])
        low, high, undefined = interval(tau, boot, jack, self.settings)
        return tau, low, high, p_value, n_attr, undefined


def kendall_tau(x: np.ndarray, y: np.ndarray) -> tuple[float, float, int]:
    """τ-b, its p-value and the number of attributes used (finite in both); NaN τ when undefined."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    mask = np.isfinite(x) & np.isfinite(y)
    n = int(mask.sum())
    if n < 2 or np.ptp(x[mask]) == 0 or np.ptp(y[mask]) == 0:
        return float("nan"), float("nan"), n
    from scipy.stats import kendalltau  # SciPy's statistics take a second to import

    result = kendalltau(x[mask], y[mask], variant="b")
    return float(result.statistic), float(result.pvalue), n


def _tau_samples(x_rows: np.ndarray, y_rows: np.ndarray) -> np.ndarray:
    return np.array([kendall_tau(x, y)[0] for x, y in zip(x_rows, y_rows, strict=True)])


def pfr_table(matrices: Matrices, res: Resampled) -> pl.DataFrame:
    """PFR with its interval and the mean reward delta with its interval, per (rm, side, attribute)."""
    rows = []
    for r, rm in enumerate(matrices.rms):
        for s, side in enumerate(SIDES):
            n_comp = (~np.isnan(matrices.flip[r, s])).sum(axis=0)
            for a, attribute in enumerate(matrices.attributes):
                if n_comp[a] == 0:
                    continue
                p_low, p_high, _ = interval(
                    res.pfr[r, s, a], res.pfr_boot[r, s, :, a], res.pfr_jack[r, s, :, a], res.settings
                )
                d_low, d_high, _ = interval(
                    res.delta[r, s, a], res.delta_boot[r, s, :, a], res.delta_jack[r, s, :, a], res.settings
                )
                rows.append(
                    {
                        "rm": rm,
                        "side": side,
                        "attribute": attribute,
                        "pfr": res.pfr[r, s, a],
                        "pfr_low": p_low,
                        "pfr_high": p_high,
                        "mean_delta": res.delta[r, s, a],
                        "delta_low": d_low,
                        "delta_high": d_high,
                        "n_comparisons": int(n_comp[a]),
                        "n_perturbations": int(matrices.n_perturbations[r, s, :, a].sum()),
                    }
                )
    return pl.DataFrame(rows, schema=_PFR_SCHEMA)


_PFR_SCHEMA = {
    "rm": pl.String,
    "side": pl.String,
    "attribute": pl.String,
    "pfr": pl.Float64,
    "pfr_low": pl.Float64,
    "pfr_high": pl.Float64,
    "mean_delta": pl.Float64,
    "delta_low": pl.Float64,
    "delta_high": pl.Float64,
    "n_comparisons": pl.Int64,
    "n_perturbations": pl.Int64,
}
_TAU_COLUMNS = ("tau", "ci_low", "ci_high", "p_value", "n_attributes", "n_undefined")
_TAU_TYPES = dict(zip(_TAU_COLUMNS, (pl.Float64,) * 4 + (pl.Int64,) * 2, strict=True))


def tau_between_rms(matrices: Matrices, res: Resampled) -> pl.DataFrame:
    """Table 3: τ between the PFR vectors of each pair of RMs, per side, with a bootstrap interval."""
    rows = [
        {
            "side": side,
            "rm_a": matrices.rms[a],
            "rm_b": matrices.rms[b],
            **dict(zip(_TAU_COLUMNS, res.tau((a, s), (b, s)), strict=True)),
        }
        for s, side in enumerate(SIDES)
        for a, b in combinations(range(len(matrices.rms)), 2)
    ]
    return pl.DataFrame(rows, schema={"side": pl.String, "rm_a": pl.String, "rm_b": pl.String, **_TAU_TYPES})


def tau_between_sides(matrices: Matrices, res: Resampled) -> pl.DataFrame:
    """Table 6: τ between each RM's Y+ and Y− PFR vectors, with a bootstrap interval."""
    plus, minus = SIDES.index("plus"), SIDES.index("minus")
    rows = [
        {"rm": rm, **dict(zip(_TAU_COLUMNS, res.tau((r, plus), (r, minus)), strict=True))}
        for r, rm in enumerate(matrices.rms)
    ]
    return pl.DataFrame(rows, schema={"rm": pl.String, **_TAU_TYPES})


def with_keys(frame: pl.DataFrame, dataset: str, method: str) -> pl.DataFrame:
    """Prepend the dataset and method columns."""
    return frame.select(pl.lit(dataset).alias("dataset"), pl.lit(method).alias("method"), pl.all())


@dataclass
class GlobalSensitivity:
    """The three global-sensitivity tables of one (dataset, method)."""

    pfr: pl.DataFrame
    tau_rms: pl.DataFrame
    tau_sides: pl.DataFrame


def check_keys(explanations: pl.DataFrame, dataset: str, method: str) -> None:
    """Raise if any row belongs to another dataset or method than the one analysed."""
    other = explanations.filter((pl.col("dataset") != dataset) | (pl.col("method") != method))
    if other.height:
        row = other.row(0, named=True)
        raise AnalysisError(
            f"explanations for {dataset}/{method} contain a row of {row['dataset']}/{row['method']}"
            f" (perturbation {row['perturbation_id']})"
        )


def global_sensitivity(
    explanations: pl.DataFrame,
    dataset: str,
    method: str,
    bootstrap: BootstrapSettings,
    variants: str = "mean",
    attribute_order: list[str] | None = None,
    rm_order: list[str] | None = None,
    log: logging.Logger | None = None,
) -> GlobalSensitivity:
    """PFR (with intervals), τ between RMs and τ between sides for one (dataset, method)."""
    check_keys(explanations, dataset, method)
    rows = attribute_rows(explanations, log)
    matrices = build_matrices(comparison_values(rows, variants), attribute_order, rm_order)
    res = Resampled.compute(matrices, bootstrap, dataset)
    if log is not None:
        log.info(
            "%s/%s: %d RMs, %d comparisons, %d attributes, %d resamples",
            dataset,
            method,
            len(matrices.rms),
            len(matrices.comparisons),
            len(matrices.attributes),
            bootstrap.n_resamples,
        )
    return GlobalSensitivity(
        pfr=with_keys(pfr_table(matrices, res), dataset, method),
        tau_rms=with_keys(tau_between_rms(matrices, res), dataset, method),
        tau_sides=with_keys(tau_between_sides(matrices, res), dataset, method),
    )
