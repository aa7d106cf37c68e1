"""Edit versus nature: a discovered feature's association with the reward among the natural responses.

A feature's effect is what its edits do; the same feature as people write it can go with another reward (an
edit that triples every space is not spacing as users write it). Where the feature has a detector (every
feature the shared edit maker edits; an LLM's rewrites have none), its association with the reward among
the original responses is estimated within comparisons, at equal length: over the comparisons of the
dataset, with d the chosen response minus the rejected one,

    d(y) = β·d(present) + γ·d(ℓ),   y = r/sd (less the reference RM's r_ref/sd_ref),   ℓ = words/sd(words),

by least squares without an intercept (the order of a pair's two responses is arbitrary). Comparisons whose
two responses both have the feature, or both lack it, inform γ only; β is the reward difference between a
response with the feature and one without it in the same comparison, at equal length. Its interval is the
cluster bootstrap's (the effects' settings, the same resamples as the effects: a pair drawn by two seeds is
one cluster). Where the words do not measure length (one length in every response) the fit is without γ.

The verdict (``nature``), beside the causal effect:

- ``agrees``: the natural interval excludes 0 on the effect's side;
- ``the edit does something the natural feature does not``: it excludes 0 on the other side;
- ``natural responses neither show nor contradict it``: it holds 0;
- ``never in your data: what the RM would do if it were``: no original response has the feature;
- ``too few pairs differ in it to compare``: fewer than ``MIN_NATURAL_PAIRS`` comparisons whose responses
  differ in it, or β undefined;
- ``not compared: its edits come without a detector``: the engine wrote its own edits (an LLM's rewrites).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl

from rmexplain.analysis.bootstrap import (
    BootstrapSettings,
    clusters_of,
    interval,
    jackknife_counts,
    resample_counts,
)
from rmexplain.effects.analysis import (
    measures_length,
    original_length_sd,
    original_rewards,
    reward_sd,
    settled,
    word_counts,
)
from rmexplain.ids import text_id

MIN_NATURAL_PAIRS = 5  # comparisons whose two responses differ in the feature, at least, for a verdict
AGREES = "agrees"
DIFFERS = "the edit does something the natural feature does not"
UNCLEAR = "natural responses neither show nor contradict it"
NEVER = "never in your data: what the RM would do if it were"
TOO_FEW = "too few pairs differ in it to compare"
NO_DETECTOR = "not compared: its edits come without a detector"
NATURE_COLUMNS = ("natural_effect", "natural_low", "natural_high", "natural_pairs", "nature")


@dataclass(frozen=True)
class NaturalPairs:
    """The dataset's comparisons as chosen-minus-rejected differences: their ids (sorted), the text ids of
    both responses, the length difference in sd of words (0 where words measure nothing), and the
    bootstrap's and the jackknife's comparison weights over their clusters (drawn once, for every feature
    and RM)."""

    comparison_ids: list[str]
    chosen_ids: list[str]
    rejected_ids: list[str]
    length: np.ndarray
    resamples: np.ndarray
    jackknife: np.ndarray

    @classmethod
    def of(cls, comparisons: pl.DataFrame, dataset: str | None, settings: BootstrapSettings) -> NaturalPairs:
        frame = comparisons.sort("comparison_id")
        ids = frame["comparison_id"].to_list()
        prompts, chosen, rejected = (frame[c].to_list() for c in ("prompt", "chosen", "rejected"))
        words = word_counts(chosen) - word_counts(rejected)
        length_sd = original_length_sd(comparisons)
        length = words / length_sd if measures_length(length_sd) else np.zeros_like(words)
        clusters = clusters_of(ids, dataset)
        return cls(
            comparison_ids=ids,
            chosen_ids=[text_id(p, r) for p, r in zip(prompts, chosen, strict=True)],
            rejected_ids=[text_id(p, r) for p, r in zip(prompts, rejected, strict=True)],
            length=np.asarray(length, dtype=np.float64),
            resamples=resample_counts(clusters, settings),
            jackknife=jackknife_counts(clusters),
        )

    def presence(self, present_in: Collection[str]) -> np.ndarray:
        """d(present) per comparison: +1 where only the chosen response has the feature, −1 where only the
        rejected one does, 0 otherwise."""
        has = set(present_in)
        chosen = np.array([t in has for t in self.chosen_ids], dtype=np.float64)
        rejected = np.array([t in has for t in self.rejected_ids], dtype=np.float64)
        return chosen - rejected

    def rewards(self, originals: pl.DataFrame, reference: pl.DataFrame | None) -> np.ndarray:
        """d(y) per comparison: the RM's standardised reward difference less its reference's; NaN where a
        response went unscored."""
        out = self._standardised(originals)
        return out if reference is None else out - self._standardised(reference)

    def _standardised(self, originals: pl.DataFrame) -> np.ndarray:
        source, sd = original_rewards(originals), reward_sd(originals)
        chosen, rejected = (
            np.array([_value(source.get((c, target))) for c in self.comparison_ids], dtype=np.float64)
            for target in ("chosen", "rejected")
        )
        return (chosen - rejected) / sd if sd and np.isfinite(sd) and sd > 0 else np.full(chosen.size, np.nan)


def _value(reward: float | None) -> float:
    return float("nan") if reward is None else float(reward)


def natural_fit(y: np.ndarray, presence: np.ndarray, length: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """β of d(y) = β·d(present) + γ·d(ℓ) per row of ``weights`` (comparison weights), over the comparisons
    with a finite d(y); NaN where β is undefined (no weighted comparison differs in the feature, or its
    difference is a multiple of the length difference). With no length difference at all, β alone."""
    keep = np.isfinite(y)
    w = np.atleast_2d(weights)[:, keep].astype(np.float64)
    y, p, ell = y[keep], presence[keep], length[keep]
    s_pp, s_pl, s_ll = w @ (p * p), w @ (p * ell), w @ (ell * ell)
    s_py, s_ly = w @ (p * y), w @ (ell * y)
    with np.errstate(invalid="ignore", divide="ignore"):
        if not np.any(length):
            return np.where(s_pp > 0, s_py / s_pp, np.nan)
        det = s_pp * s_ll - s_pl * s_pl
        defined = (s_pp > 0) & (det > 1e-12 * np.maximum(s_pp * s_ll, 1e-300))
        return np.where(defined, (s_ll * s_py - s_pl * s_ly) / det, np.nan)


def natural_association(
    pairs: NaturalPairs, present_in: Collection[str], y: np.ndarray, settings: BootstrapSettings
) -> dict[str, float | int]:
    """``natural_effect``, ``natural_low``, ``natural_high`` and ``natural_pairs`` (comparisons whose two
    responses differ in the feature and are both scored) of one feature for one RM, whose d(y) per
    comparison is ``y`` (``NaturalPairs.rewards``)."""
    presence = pairs.presence(present_in)
    differing = int(np.sum((presence != 0) & np.isfinite(y)))
    n = len(pairs.comparison_ids)
    point = float(natural_fit(y, presence, pairs.length, np.ones((1, n)))[0]) if n else float("nan")
    out = {"natural_effect": float("nan"), "natural_low": float("nan"), "natural_high": float("nan"),
           "natural_pairs": differing}  # fmt: skip
    if not np.isfinite(point):
        return out
    boot = natural_fit(y, presence, pairs.length, pairs.resamples)
    jack = natural_fit(y, presence, pairs.length, pairs.jackknife)
    low, high = interval(point, boot, jack, settings)[:2]
    bounds = {"natural_low": settled(low), "natural_high": settled(high)}
    return {**out, "natural_effect": settled(point), **bounds}


def nature_verdict(effect: float, natural: Mapping[str, float | int] | None, n_present: int) -> str | None:
    """The verdict of the module's docstring (None where the causal effect is undefined); ``natural`` None:
    the feature has no detector."""
    if effect is None or not np.isfinite(effect):
        return None
    if natural is None:
        return NO_DETECTOR
    if n_present == 0:
        return NEVER
    low, high = natural["natural_low"], natural["natural_high"]
    if natural["natural_pairs"] < MIN_NATURAL_PAIRS or not (np.isfinite(low) and np.isfinite(high)):
        return TOO_FEW
    if low <= 0 <= high:
        return UNCLEAR
    return AGREES if (low > 0) == (effect > 0) else DIFFERS


def nature_columns(
    effect: float,
    present_in: Collection[str] | None,
    pairs: NaturalPairs,
    y: np.ndarray,
    settings: BootstrapSettings,
) -> dict[str, float | int | str | None]:
    """The ``NATURE_COLUMNS`` of one feature for one RM (its d(y) per comparison: ``y``); ``present_in``:
    the text ids of the original responses that have it (None: no detector, every column null but the
    verdict)."""
    if present_in is None:
        return {**dict.fromkeys(NATURE_COLUMNS), "nature": nature_verdict(effect, None, 0)}
    natural = natural_association(pairs, present_in, y, settings)
    return {**natural, "nature": nature_verdict(effect, natural, len(present_in))}
