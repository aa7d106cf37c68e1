"""Each tested feature's effect on each RM, as the attribute effects estimate it, and the BH step.

The estimate is the effects layer's ``length_adjusted`` (``rmexplain.effects.estimators``), with features
in the place of attributes, s = +1 for an edit that adds the feature, −1 for one that removes it, and the
edit's dose d (the instances it adds or removes, ``dose`` in the edits), in two steps over the edits of one
(dataset, engine, round). First the length slope, at equal counts of the classes RMs reward
(``class_count_changes``: ``rmexplain.discovery.classes.COUNTED_CLASSES``),

    y = c_f + β_f·s + δ_f·(d − s) + Σ_k θ_k·Δn_k + γ·Δℓ,   y = [r(x, edited) − r(x, source)] / sd
                                                          (less the reference RM's change),

then the features at that γ: y − γ·Δℓ = c_f + β_f·s + δ_f·(d − s). Δℓ is the edit's change in words over the
sd of the originals' word counts; δ_f's column is there only for a feature whose doses differ in size within a
direction, the other sizes from at least five comparisons (with fewer, β_f's column is the dose itself:
``rmexplain.effects.estimators.dose_spreads``). β_f is the standardised reward change when **one instance** of
f is added, at equal length: for a feature edited both ways, half the difference of the length-adjusted
changes of adding and of removing one instance (c_f absorbs what its edits do either way); for a feature
edited one way only (a feature no response has can only be added), the length-adjusted change of adding one
(or minus that of removing one) — ``AddedEffect`` keeps these defined (``one_way_defined``). γ, shared by
every feature, is the RM's sensitivity to length (logged); the dose and the class counts keep what the edits
change with their length (k first-person words removed with k words, a digit per list item) out of it. Where
the edits cannot identify γ (no length change, originals of one length, length tied to the features'
directions) the features are fitted with γ = 0, unadjusted, and a warning says so.

Intervals: the effects' cluster bootstrap over comparisons (``rmexplain.analysis.bootstrap``: a pair drawn
by two seeds is one cluster; BCa from the leave-one-cluster-out jackknife by default), the same resamples for
every RM. p-values test the null |β_f| ≤ δ (``discovery.min_effect``, reward sd) against |β_f| > δ: the
bootstrap's standard error of β_f (sd of its finite replicates) and a t distribution with k − 1 degrees of
freedom, k the clusters the feature's edits come from, p = P(T > (|β_f| − δ)/se) + P(T < (−|β_f| − δ)/se)
(the two-sided t test at δ = 0). Unlike a count of replicates beyond the null, which cannot fall below
1/n_resamples, this can reach Benjamini–Hochberg's smallest threshold, fdr/m, for m features. δ > 0 because
every feature is tested on the same responses: their noise is shared (the source's reward, the length
slope), so under a null RM many tests move together, and with hundreds of edits effects of a few hundredths
of an sd would be "significant" and matter to no one. Where se is 0 (every replicate equal), p is 0 beyond
δ and 1 within it; a feature whose edits come from fewer than ``MIN_FINDING_PAIRS`` (5) clusters is not
tested (NaN: too few pairs to say), as an attribute effect over fewer is not significant.

Replication: a feature that can come out significant (p ≤ the ``fdr`` ``round_effects`` is given; every
tested feature without one) is estimated again on each of two disjoint halves of the pairs
(``rmexplain.effects.analysis.split_halves``: the pairs sorted by the sha256 of their id, dealt alternately),
with the same edits, design and length choice as the whole sample, and its interval from the half's own
bootstrap; ``discovered_biases`` keeps the halves of the significant features (docs/findings.md, "holds in
both halves"). The same features get their most influential pair from the whole sample's jackknife
(``influential_pair``, ``without_it``; ``carried_by``: 1 or 2 where leaving out one or two pairs flips the
effect's sign or leaves it within ``min_effect``; docs/findings.md, "carried by one or two pairs"); the
length slope γ, logged and not a row, gets the same test and a warning where it is carried
(``warn_carried_slope``).

Edit versus nature: beside each feature's effect, its association with the reward among the original
responses at equal length and the verdict (``rmexplain.discovery.nature``: ``natural_effect``, its
interval, ``natural_pairs``, ``nature``), from the presence the round recorded (``present_in``).

Warnings name what the numbers cannot show: an RM (or its reference) that gives every scored edit one reward
has no feature tested (effect, interval and p-value NaN: its reward changes are the source responses'
rewards), and a reward sd that a few responses dominate (``dominating_responses``) is named with both sds.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import polars as pl

from rmexplain.analysis.bootstrap import (
    BootstrapSettings,
    clusters_of,
    interval,
    jackknife_counts,
    resample_counts,
)
from rmexplain.discovery.base import ADD, REMOVE
from rmexplain.discovery.classes import class_counts
from rmexplain.discovery.nature import NaturalPairs, nature_columns
from rmexplain.effects.analysis import (
    HALF_COLUMNS,
    HALVES,
    INFLUENCE_COLUMNS,
    MIN_FINDING_PAIRS,
    cluster_pairs,
    count_changes,
    fill_influence,
    half_estimate,
    half_weights,
    measures_length,
    named_rm,
    original_length_sd,
    original_rewards,
    replication,
    reward_sd,
    settled,
    split_halves,
    warn_same_as_reference,
    word_counts,
)
from rmexplain.effects.base import EffectInput, RewardChanges
from rmexplain.effects.estimators import TIE_DIGITS, LengthAdjusted, RobustLengthAdjusted
from rmexplain.ids import text_id
from rmexplain.schemas import BIAS_DISCOVERY_EFFECTS, DISCOVERED_BIASES, conform, polars_schema

SLOPE_COLUMNS = ("length_slope", "length_slope_low", "length_slope_high")
CONSTANT_SPREAD = 1e-6  # edit rewards spread over at most this × the reward sd are one reward
DOMINATING_SHARE, DOMINATING_MOST = 0.01, 2  # at most max(2, ⌈1 %⌉) responses may dominate the sd …
DOMINATING_FACTOR, DOMINATING_MIN_RESPONSES = 2.0, 20  # … by more than halving it when left out, from 20 up


class AddedEffect(LengthAdjusted):
    """``length_adjusted`` over discovery edits: β_f, the effect of adding feature f (s = +1 adds, −1
    removes); a feature edited one way only keeps its effect (the length-adjusted mean change)."""

    one_way_defined: ClassVar[bool] = True


class RobustAddedEffect(RobustLengthAdjusted):
    """``AddedEffect`` as Huber's M-estimate (``robust_length_adjusted``): ``robust_effect`` beside each
    feature's effect, where a few edits far from the rest cannot make it."""

    one_way_defined: ClassVar[bool] = True


def robust_point(data: EffectInput, rm: str, reference: str | None) -> np.ndarray:
    """[features + the length row]: the robust fit over every comparison (point estimate only)."""
    estimator = RobustAddedEffect()
    n = len(data.comparisons)
    return estimator.estimate(
        estimator.observations(data, rm, reference), np.ones((1, n)), n, len(data.attributes)
    )[0]


def discovery_input(
    comparisons: pl.DataFrame,
    edits: pl.DataFrame,
    originals: Mapping[str, pl.DataFrame],
    rewards: Mapping[str, pl.DataFrame],
    dataset: str | None = None,
    slope_edits: EffectInput | None = None,
) -> EffectInput:
    """The estimator's arrays over the edits (in their order): features as attributes, every RM's reward
    changes (NaN where a text went unscored); ``dataset`` splits the comparison ids into pairs exactly. With
    ``slope_edits`` (the dataset's attribute edits), γ is theirs alone, the attribute effects' own: the
    edits' comparisons join theirs, and these edits inform the features only."""
    edited = set(edits["comparison_id"].to_list())
    ids = sorted(edited if slope_edits is None else edited | set(slope_edits.comparisons))
    features = list(dict.fromkeys(edits["feature"].to_list()))
    c_index, f_index = {c: i for i, c in enumerate(ids)}, {f: i for i, f in enumerate(features)}
    words_changed = word_counts(edits["edited_text"].to_list()) - word_counts(edits["source_text"].to_list())
    direction = edits["direction"].to_numpy()
    edited_ids = edited_text_ids(comparisons, edits)
    return EffectInput(
        comparisons=ids,
        attributes=features,
        comparison=np.array([c_index[c] for c in edits["comparison_id"]], dtype=np.int64),
        attribute=np.array([f_index[f] for f in edits["feature"]], dtype=np.int64),
        direction=direction,
        round=np.ones(edits.height, dtype=np.int64),
        chain=direction,
        length_change=length_changes(words_changed, comparisons),
        rms={rm: reward_changes(edits, edited_ids, originals[rm], rewards[rm]) for rm in originals},
        dataset=dataset,
        dose=(edits["dose"] if "dose" in edits.columns else edits["direction"]).to_numpy(),
        covariates=class_count_changes(edits["source_text"].to_list(), edits["edited_text"].to_list()),
        slope_edits=slope_edits,
        slope_own=slope_edits is None,
    )  # fmt: skip


def class_count_changes(sources: Sequence[str], edited: Sequence[str]) -> np.ndarray:
    """[edits, classes]: each edit's change in the count of every class the length slope holds equal
    (``rmexplain.discovery.classes.COUNTED_CLASSES``)."""
    return count_changes(sources, edited, class_counts)


def edited_text_ids(comparisons: pl.DataFrame, edits: pl.DataFrame) -> list[str]:
    """The text id of each edit's edited text (its comparison's prompt with it)."""
    prompts = dict(comparisons.select("comparison_id", "prompt").iter_rows())
    return [text_id(prompts[c], t) for c, t in edits.select("comparison_id", "edited_text").iter_rows()]


def length_changes(words_changed: np.ndarray, comparisons: pl.DataFrame) -> np.ndarray:
    """Each edit's change in words over the sd of the originals' word counts; 0 for every edit where that
    sd is 0 or undefined (no unit to measure length in: γ is then undefined and the effects unadjusted)."""
    length_sd = original_length_sd(comparisons)
    return words_changed / length_sd if measures_length(length_sd) else np.zeros_like(words_changed)


def reward_changes(
    edits: pl.DataFrame, edited_ids: Sequence[str], originals: pl.DataFrame, rewards: pl.DataFrame
) -> RewardChanges:
    """One RM's r(edited) − r(source) per edit (NaN where either went unscored) and its reward sd."""
    source = original_rewards(originals)
    edited = edited_rewards(edited_ids, rewards)
    before = np.array(
        [_value(source.get(key)) for key in edits.select("comparison_id", "target").iter_rows()]
    )
    none, no_index = np.zeros(0), np.zeros(0, dtype=np.int64)  # no paper perturbations here
    return RewardChanges(edited - before, reward_sd(originals), no_index, no_index, none, none)


def edited_rewards(edited_ids: Sequence[str], rewards: pl.DataFrame) -> np.ndarray:
    """One RM's reward of each edited text (NaN where it went unscored)."""
    by_text = dict(zip(rewards["text_id"].to_list(), rewards["reward"].to_list(), strict=True))
    return np.array([_value(by_text.get(t)) for t in edited_ids], dtype=np.float64)


def _value(reward: float | None) -> float:
    return float("nan") if reward is None else float(reward)


def fitted(
    estimator: AddedEffect,
    data: EffectInput,
    rm: str,
    reference: str | None,
    settings: BootstrapSettings,
    within: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(point, bootstrap replicates, jackknife replicates) of the fit, [·, features + the length row]; with
    ``within`` (a mask over the comparisons), the fit on those comparisons alone, its bootstrap and jackknife
    over their clusters (``half_weights``)."""
    obs = estimator.observations(data, rm, reference)
    n, k = len(data.comparisons), len(data.attributes)
    clusters = clusters_of(data.comparisons, data.dataset)

    def fit(weights: np.ndarray) -> np.ndarray:
        return estimator.estimate(obs, weights, n, k)

    if within is not None:
        point, counts, jack = half_weights(clusters, within, settings)
        return fit(point), fit(counts), fit(jack)
    return fit(np.ones((1, n))), fit(resample_counts(clusters, settings)), fit(jackknife_counts(clusters))


def p_value(effect: float, boot: np.ndarray, clusters: int, min_effect: float = 0.0) -> float:
    """p of the null |β| ≤ ``min_effect`` against |β| > ``min_effect``: with t-distributed error of scale
    se = sd(finite bootstrap replicates) and k − 1 degrees of freedom, the chance at β = ±min_effect of an
    estimate at least as far out, P(T > (|β| − δ)/se) + P(T < (−|β| − δ)/se) (two-sided at δ = 0). NaN (not
    tested) with fewer than ``MIN_FINDING_PAIRS`` clusters (too few pairs to say; with one the bootstrap
    cannot vary); where every replicate is equal, 0 beyond ``min_effect`` and 1 within it."""
    finite = boot[np.isfinite(boot)]
    if not np.isfinite(effect) or finite.size < 2 or clusters < MIN_FINDING_PAIRS:
        return float("nan")
    se = float(np.std(finite, ddof=1))
    size = abs(effect)
    if se == 0.0:
        return 0.0 if size > min_effect else 1.0
    df = max(clusters - 1, 1)
    from scipy import stats  # about a second to import: only the jobs that test features load it

    return float(
        min(1.0, stats.t.sf((size - min_effect) / se, df) + stats.t.cdf((-size - min_effect) / se, df))
    )


def feature_effects(
    data: EffectInput,
    rm: str,
    reference: str | None,
    settings: BootstrapSettings,
    min_effect: float,
    log: logging.Logger,
    replicate_below: float | None = None,
) -> list[dict]:
    """Per feature: effect, interval, p-value, edits and comparisons behind it (one RM); with
    ``replicate_below``, the features whose p-value is at most it estimated again on each half of the pairs
    (``half_a_effect``, ``half_b_effect``, ``replicates``) and their most influential pair
    (``influential_pair``, ``without_it``, ``carried_by``); null for the others."""
    fit_data, (point, boot, jack) = _length_fit(data, rm, reference, settings, log)
    slope = length_slope(point, boot, jack, settings, adjusted=fit_data is data)
    robust = robust_point(fit_data, rm, reference)
    log.info("%s: length sensitivity γ as Huber's robust fit %+.3f reward sd per sd of words", rm, robust[-1])
    scored = np.isfinite(data.standardised(rm, reference))
    clusters = clusters_of(data.comparisons, data.dataset)
    rows = []
    for f, feature in enumerate(data.attributes):
        mine = (data.attribute == f) & scored
        k = np.unique(clusters[data.comparison[mine]]).size
        effect = settled(float(point[0, f])) if mine.any() else float("nan")
        low, high = (settled(b) for b in interval(effect, boot[:, f], jack[:, f], settings)[:2])
        rows.append(
            {
                "feature": feature,
                "effect": effect,
                "low": low if np.isfinite(effect) else float("nan"),
                "high": high if np.isfinite(effect) else float("nan"),
                "p_value": p_value(effect, boot[:, f], k, min_effect),
                "n": int(mine.sum()),
                "n_comparisons": int(np.unique(data.comparison[mine]).size),
                "pairs": k,
                "robust_effect": settled(float(robust[f])) if mine.any() else float("nan"),
                **dict.fromkeys(HALF_COLUMNS),
                **dict.fromkeys(INFLUENCE_COLUMNS),
                **slope,
            }
        )
    if replicate_below is not None:
        wanted = [f for f, row in enumerate(rows) if row["p_value"] <= replicate_below]  # NaN: never
        replicate_features(fit_data, rm, reference, settings, rows, wanted)
        influence_features(fit_data, rm, reference, jack, rows, wanted, min_effect)
        warn_carried_slope(fit_data, rm, reference, point, jack, min_effect, log)
    return rows


def length_slope(
    point: np.ndarray, boot: np.ndarray, jack: np.ndarray, settings: BootstrapSettings, adjusted: bool
) -> dict[str, float]:
    """``length_slope`` (γ, the fit's last column), ``length_slope_low`` and ``length_slope_high`` (its
    interval, as a feature's is computed); NaN throughout where the fit is not ``adjusted`` for length."""
    gamma = settled(float(point[0, -1])) if adjusted else float("nan")
    if not np.isfinite(gamma):
        return dict.fromkeys(SLOPE_COLUMNS, float("nan"))
    low, high = (settled(b) for b in interval(gamma, boot[:, -1], jack[:, -1], settings)[:2])
    return dict(zip(SLOPE_COLUMNS, (gamma, low, high), strict=True))


def largest_fit(rows: pl.DataFrame) -> dict[str, Any]:
    """One RM's largest fit: the (engine, round) with the most edits (ties: the engine's name, then the
    earlier round), with ``n`` (its edits) and its γ (``SLOPE_COLUMNS``); ``rows``: the RM's effects or
    discovered-bias rows on one dataset. Where the dataset has attribute edits every fit has one γ; with
    discovery alone each fits its own."""
    slopes = (pl.col(c).first() for c in SLOPE_COLUMNS)
    fits = rows.group_by("engine", "round").agg(pl.col("n").sum(), *slopes)
    return fits.sort(["n", "engine", "round"], descending=[True, False, False]).row(0, named=True)


def largest_fit_slope(rows: pl.DataFrame) -> tuple[float, float, float]:
    """(γ, low, high) of one RM's largest fit (``largest_fit``)."""
    largest = largest_fit(rows)
    return tuple(largest[c] for c in SLOPE_COLUMNS)


def warn_carried_slope(
    data: EffectInput,
    rm: str,
    reference: str | None,
    point: np.ndarray,
    jack: np.ndarray,
    min_effect: float,
    log: logging.Logger,
) -> None:
    """Warn where the length slope γ (beyond ``min_effect``), which adjusts every feature's effect, is
    carried by one or two pairs: leaving them out gives γ the other sign or less than half its size
    (``fill_influence``, as for a feature, with |γ|/2 as the bar: γ has no threshold of its own)."""
    gamma = settled(float(point[0, -1]))
    if not np.isfinite(gamma) or abs(gamma) <= min_effect:
        return
    k = len(data.attributes)
    slope: list[dict] = [{} for _ in range(k)] + [{"effect": gamma}]
    influence_features(data, rm, reference, jack, slope, [k], abs(gamma) / 2)
    carried, pair, without = (slope[k].get(key) for key in ("carried_by", "influential_pair", "without_it"))
    if not carried:
        return
    gone_without = (
        f"without {pair} it is {without:+.3f}"
        if carried == 1
        else f"without {pair} and one more pair it is gone (without {pair} alone: {without:+.3f})"
    )
    log.warning(
        "%s: its length sensitivity γ %+.3f, which adjusts every feature's effect, is carried by %s: %s; "
        "look at that pair's responses (one unusually short or long response can set γ)",
        named_rm(rm, data.dataset), gamma, "one pair" if carried == 1 else "two pairs", gone_without,
    )  # fmt: skip


def influence_features(
    data: EffectInput,
    rm: str,
    reference: str | None,
    jack: np.ndarray,
    rows: list[dict],
    wanted: Sequence[int],
    min_effect: float,
) -> None:
    """Fill ``influential_pair``, ``without_it`` and ``carried_by`` of ``rows[f]`` for each feature f of
    ``wanted`` from the whole sample's jackknife replicates ``jack`` (``data`` as it was fitted), gone where
    the effect without the pair(s) has the other sign or |effect| ≤ ``min_effect`` (``fill_influence``); the
    only new fits leave out two pairs, for the features one pair does not carry."""
    estimator = AddedEffect()
    obs = estimator.observations(data, rm, reference)
    n, k = len(data.comparisons), len(data.attributes)
    clusters = clusters_of(data.comparisons, data.dataset)
    pairs = cluster_pairs(data.comparisons, data.dataset)
    fill_influence(
        rows, wanted, jack, clusters, pairs, lambda w: estimator.estimate(obs, w, n, k), bar=min_effect
    )


def replicate_features(
    data: EffectInput,
    rm: str,
    reference: str | None,
    settings: BootstrapSettings,
    rows: list[dict],
    wanted: Sequence[int],
) -> None:
    """Fill the half columns of ``rows[f]`` for each feature f of ``wanted``: the whole sample's fit
    (``data`` as it was fitted: length-adjusted or not) on each half of the pairs (``split_halves``), the
    features and their design fixed on the whole sample; a half's interval from its own bootstrap and
    jackknife, at the level expanded for its clusters."""
    if not wanted:
        return
    halves = split_halves(data.comparisons, data.dataset)
    clusters = clusters_of(data.comparisons, data.dataset)
    fits = [fitted(AddedEffect(), data, rm, reference, settings, within=halves == h) for h in HALVES]
    scored = np.isfinite(data.standardised(rm, reference))
    for f in wanted:
        mine = (data.attribute == f) & scored
        estimates = [
            half_estimate(fit, f, clusters[data.comparison[mine & (halves[data.comparison] == h)]], settings)
            for h, fit in zip(HALVES, fits, strict=True)
        ]
        rows[f].update(replication(rows[f]["effect"], estimates))


def length_fitted(
    data: EffectInput, rm: str, reference: str | None, settings: BootstrapSettings, log: logging.Logger
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``fitted`` ``AddedEffect``, its γ logged; where the scored edits leave γ undefined, the fit without the
    length adjustment (γ = 0) instead, with a warning naming the RM and the dataset."""
    return _length_fit(data, rm, reference, settings, log)[1]


def _length_fit(
    data: EffectInput, rm: str, reference: str | None, settings: BootstrapSettings, log: logging.Logger
) -> tuple[EffectInput, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``length_fitted`` and the input it fitted (``data``, or ``unadjusted(data)`` where γ is undefined)."""
    point, boot, jack = fitted(AddedEffect(), data, rm, reference, settings)
    scored = np.isfinite(data.standardised(rm, reference))
    if np.isfinite(point[0, -1]) or not scored.any():
        over = "the attribute edits'" if data.slope_edits is not None else "held equal"
        log.info("%s: length sensitivity γ %+.3f reward sd per sd of words (%s)", rm, point[0, -1], over)
        return data, (point, boot, jack)
    log.warning("%s: %s", named_rm(rm, data.dataset), unadjusted_reason(data.length_change[scored]))
    flat = unadjusted(data)
    return flat, fitted(AddedEffect(), flat, rm, reference, settings)


def unadjusted(data: EffectInput) -> EffectInput:
    """``data`` without length changes (or slope edits): the fit's γ column is 0, so it leaves the features
    unadjusted."""
    flat = np.zeros_like(data.length_change)
    return dataclasses.replace(data, length_change=flat, slope_edits=None, slope_own=True)


def unadjusted_reason(length_change: np.ndarray) -> str:
    """Why γ is undefined over edits with these length changes, and what the effects are instead."""
    why = (
        "the edits' length changes are a linear function of the features' directions"
        if np.any(length_change)
        else "no edit changes the length in words, or the original responses all have one length"
    )
    return (
        f"the length sensitivity γ is undefined ({why}); the features' effects are estimated without the "
        "length adjustment (γ = 0) and are NOT length-adjusted"
    )


def constant_edit_rewards(edited: np.ndarray, sd: float) -> bool:
    """Whether an RM gives every scored edit (two at least) one reward: they spread over at most
    ``CONSTANT_SPREAD`` × its reward sd on the originals (exactly one value where that sd is undefined)."""
    finite = edited[np.isfinite(edited)]
    if finite.size < 2:
        return False
    spread = float(np.ptp(finite))
    return spread == 0.0 or spread <= CONSTANT_SPREAD * sd


def dominating_responses(originals: pl.DataFrame) -> tuple[list[str], float, float] | None:
    """The fewest original responses, farthest from the mean first and at most max(2, ⌈1 %⌉) of them,
    whose leaving out shrinks the RM's reward sd (``reward_sd``'s values) by more than a factor 2: their
    ``comparison_id (target)``, the sd with and without them. None where there are none, or with fewer than
    20 responses (there a few responses are a large share of a small sample)."""
    frame = pl.concat(
        [originals.select("comparison_id", pl.lit(t).alias("target"), pl.col(f"reward_{t}").alias("reward"))
         for t in ("chosen", "rejected")]
    ).drop_nulls("reward")  # fmt: skip
    values = frame["reward"].to_numpy().astype(np.float64)
    if values.size < DOMINATING_MIN_RESPONSES:
        return None
    sd = float(np.std(values, ddof=1))
    order = np.argsort(-np.abs(values - values.mean()), kind="stable")
    for k in range(1, max(DOMINATING_MOST, math.ceil(DOMINATING_SHARE * values.size)) + 1):
        rest = float(np.std(values[order[k:]], ddof=1))
        if sd > DOMINATING_FACTOR * rest:
            labels = [f"{frame['comparison_id'][int(i)]} ({frame['target'][int(i)]})" for i in order[:k]]
            return labels, sd, rest
    return None


def warn_dominated_sd(originals: pl.DataFrame, rm: str, dataset: str, log: logging.Logger) -> None:
    """Warn where a few original responses dominate the RM's reward sd, the unit of every effect."""
    found = dominating_responses(originals)
    if found is not None:
        labels, sd, rest = found
        log.warning(
            "%s: its reward sd %.4g, the unit of every effect, is dominated by %d response(s) far from the "
            "rest (%s): without them it is %.4g, so the effects read small by a factor %.3g",
            named_rm(rm, dataset), sd, len(labels), ", ".join(labels), rest, sd / rest if rest else math.inf,
        )  # fmt: skip


def constant_rms(
    comparisons: pl.DataFrame, edits: pl.DataFrame, rewards: Mapping[str, pl.DataFrame], data: EffectInput
) -> set[str]:
    """The RMs that give every scored edit one reward."""
    edited_ids = edited_text_ids(comparisons, edits)
    return {
        rm
        for rm in data.rms
        if constant_edit_rewards(edited_rewards(edited_ids, rewards[rm]), data.rms[rm].sd)
    }


def untested(rows: list[dict]) -> list[dict]:
    """``rows`` with no effect, interval, p-value or length slope (not tested): a degenerate reward estimates
    nothing."""
    nan = float("nan")
    halves = dict.fromkeys((*HALF_COLUMNS, *INFLUENCE_COLUMNS))
    undefined = dict.fromkeys(("effect", "low", "high", "p_value", "robust_effect", *SLOPE_COLUMNS), nan)
    return [{**row, **undefined, **halves} for row in rows]


def warn_constant(
    rm: str, reference: str | None, constant: set[str], dataset: str, log: logging.Logger
) -> bool:
    """Whether the RM (or its reference) gives every scored edit one reward; warns where it does."""
    which = rm if rm in constant else reference if reference in constant else None
    if which is None:
        return False
    whose = "it" if which == rm else f"its reference {which!r}"
    log.warning(
        "%s: %s gives every scored edit the same reward, so the reward changes measure the source "
        "responses, not the features; no feature is tested for this RM (effect, interval and p-value NaN)",
        named_rm(rm, dataset), whose,
    )  # fmt: skip
    return True


def example_edit(edits: pl.DataFrame, y: np.ndarray, change: np.ndarray) -> dict:
    """One edit of a feature to show: an addition if it has any (else a removal) whose standardised change
    is closest to the median of its direction (ties: the shorter edited text, then comparison and target)."""
    frame = edits.with_columns(_y=pl.Series(y), _change=pl.Series(change)).filter(pl.col("_y").is_finite())
    if not frame.height:
        return dict.fromkeys(("example_comparison_id", "example_direction", "example_before", "example_after",
                              "example_reward_change"))  # fmt: skip
    direction = ADD if (frame["direction"] == ADD).any() else REMOVE
    frame = frame.filter(pl.col("direction") == direction)
    median = float(np.median(frame["_y"].to_numpy()))
    best = (
        frame.with_columns(
            _distance=(pl.col("_y") - median).abs(), _length=pl.col("edited_text").str.len_chars()
        )
        .sort("_distance", "_length", "comparison_id", "target")
        .row(0, named=True)
    )
    return {
        "example_comparison_id": best["comparison_id"],
        "example_direction": direction,
        "example_before": best["source_text"],
        "example_after": best["edited_text"],
        "example_reward_change": float(best["_change"]),
    }


def round_effects(
    comparisons: pl.DataFrame,
    edits: pl.DataFrame,
    candidates: pl.DataFrame,
    originals: Mapping[str, pl.DataFrame],
    rewards: Mapping[str, pl.DataFrame],
    references: Mapping[str, str | None],
    dataset: str,
    settings: BootstrapSettings,
    min_effect: float,
    log: logging.Logger,
    fdr: float | None = None,
    slope_edits: EffectInput | None = None,
) -> pl.DataFrame:
    """BIAS_DISCOVERY_EFFECTS of one (dataset, engine, round): every RM × feature tested, each p-value of the
    null |effect| ≤ ``min_effect``; with ``slope_edits`` (the dataset's attribute edits), every feature at
    their length slope, the attribute effects' γ (``discovery_input``). The features Benjamini–Hochberg at
    level ``fdr`` can make significant (p ≤ ``fdr``, since q ≥ p; every tested feature where ``fdr`` is
    None) are estimated again on each half of the pairs (``half_a_effect``, ``half_b_effect``,
    ``replicates``) and get their most influential pair (``influential_pair``, ``without_it``,
    ``carried_by``); ``discovered_biases`` keeps these for the significant features only."""
    if not edits.height:
        return pl.DataFrame(schema=polars_schema(BIAS_DISCOVERY_EFFECTS))
    data = discovery_input(comparisons, edits, originals, rewards, dataset, slope_edits)
    about = {row["feature"]: row for row in candidates.iter_rows(named=True)}
    pairs = NaturalPairs.of(comparisons, dataset, settings)
    constant = constant_rms(comparisons, edits, rewards, data)
    rows = []
    for rm in originals:
        reference = references.get(rm)
        warn_dominated_sd(originals[rm], rm, dataset, log)
        y, change = data.standardised(rm, reference), data.rms[rm].change
        warn_same_as_reference(y, rm, reference, dataset, log)
        natural_y = pairs.rewards(originals[rm], originals[reference] if reference else None)
        tested = rm not in constant and reference not in constant  # an RM scoring alike tests nothing
        below = (1.0 if fdr is None else fdr) if tested else None
        effects = feature_effects(data, rm, reference, settings, min_effect, log, replicate_below=below)
        if warn_constant(rm, reference, constant, dataset, log):
            effects = untested(effects)
        for row in effects:
            feature = row["feature"]
            mine = (edits["feature"] == feature).to_numpy()
            meta = about[feature]
            rows.append(
                {
                    "dataset": dataset,
                    "rm": rm,
                    "engine": meta["engine"],
                    "description": meta["description"],
                    "support": meta["support"],
                    "round": meta["round"],
                    "kind": meta["kind"],
                    "source": meta["source"],
                    "directions": _directions(meta),
                    "reference": reference,
                    "reward_sd": data.rms[rm].sd,
                    **row,
                    **example_edit(edits.filter(pl.Series(mine)), y[mine], change[mine]),
                    **nature_columns(row["effect"], meta.get("present_in"), pairs, natural_y, settings),
                }
            )
    frame = pl.DataFrame(rows, schema=polars_schema(BIAS_DISCOVERY_EFFECTS))
    return conform(frame, BIAS_DISCOVERY_EFFECTS, "discovery effects")


def _directions(candidate: Mapping) -> str:
    added, removed = candidate["n_added"] > 0, candidate["n_removed"] > 0
    return "both" if added and removed else "add" if added else "remove" if removed else "none"


def discovered_biases(effects: pl.DataFrame, fdr: float) -> pl.DataFrame:
    """DISCOVERED_BIASES: ``effects`` of every engine and round with Benjamini–Hochberg q-values across all
    features tested per (dataset, RM) (``scipy.stats.false_discovery_control``; features without a p-value
    are not tested and get NaN), ``significant`` (q ≤ fdr), ``rank``, and the halves' and influence columns
    of the significant features (null on the others)."""
    from scipy import stats  # about a second to import: only the jobs that test features load it

    twice = effects.group_by("dataset", "rm", "feature").len().filter(pl.col("len") > 1)
    twice = twice.sort("dataset", "feature", "rm")  # the first such feature by name is the one named
    if twice.height:
        dataset, feature = twice.row(0, named=True)["dataset"], twice.row(0, named=True)["feature"]
        raise ValueError(
            f"discovery on {dataset!r}: feature {feature!r} is tested twice (by two engines or rounds); "
            "one feature name is one set of edits"
        )
    parts = []
    for _, group in effects.group_by("dataset", "rm", maintain_order=True):
        p = group["p_value"].to_numpy()
        q = np.full(p.size, np.nan)
        tested = np.isfinite(p)
        if tested.any():
            q[tested] = stats.false_discovery_control(p[tested], method="bh")
        parts.append(group.with_columns(q_value=pl.Series(q), significant=pl.Series(q <= fdr)))
    if not parts:
        return pl.DataFrame(schema=polars_schema(DISCOVERED_BIASES))
    table = pl.concat(parts)
    kept = (*HALF_COLUMNS, *INFLUENCE_COLUMNS)
    if all(c in table.columns for c in kept):  # else conform names what is missing
        table = table.with_columns(
            pl.when(pl.col("significant")).then(pl.col(c)).otherwise(None).alias(c) for c in kept
        )
    return conform(rank_biases(table), DISCOVERED_BIASES, "discovered biases")


def rank_biases(frame: pl.DataFrame) -> pl.DataFrame:
    """Rank within (dataset, RM): significant first, then by |effect|, q-value and name, each number to
    ``TIE_DIGITS`` decimals (features that move the reward alike tie, whatever the rounding of their fits:
    q-values of 10⁻²⁰⁸ differ only by it); undefined last."""
    keyed = frame.with_columns(
        _defined=pl.col("effect").is_not_nan(),
        _size=pl.when(pl.col("effect").is_nan())
        .then(-1.0)
        .otherwise(pl.col("effect").abs().round(TIE_DIGITS)),
        _q=pl.col("q_value").fill_nan(2.0).round(TIE_DIGITS),
    ).sort(
        ["dataset", "rm", "significant", "_defined", "_size", "_q", "feature"],
        descending=[False, False, True, True, True, False, False],
    )
    ranked = keyed.with_columns(rank=pl.int_range(1, pl.len() + 1).over("dataset", "rm").cast(pl.Int64))
    return ranked.drop("_defined", "_size", "_q")
