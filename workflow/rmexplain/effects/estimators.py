"""Registered estimators of how much each attribute moves an RM's reward (docs/effects.md).

Every estimator reads one ``EffectInput`` of a (dataset, method) — the attribute effects' edits with every
RM's reward change, and the paper's explanations — and returns, for each attribute, the standardised change
in reward when a response moves in the attribute's *better* direction (``flip_rate``: the paper's flip rate,
a share). All are computed under weights over the comparisons, so one function gives the point estimate
(weights 1), the bootstrap replicates (multinomial counts) and the jackknife replicates (leave one out) that
``rmexplain.analysis.bootstrap.interval`` turns into BCa or percentile intervals; every RM and estimator of a
(dataset, method) sees the same resamples.

Notation: for an edit e of a text t (the original response in round 1, the round-1 edit in round 2),
Δ(e) = r(e) − r(t); with a reference RM, Δ(e) = [r(e) − r(t)] − [r_ref(e) − r_ref(t)]; y(e) = Δ(e) / sd, sd
the RM's reward sd over the dataset's original responses; s(e) = +1 for an edit in the better direction,
−1 for worse.

- ``flip_rate`` (the paper, §4.1): per comparison, the share of counterfactuals among the perturbations of
  an attribute, both sides pooled; averaged over comparisons. One direction, against the RM's preference.
- ``paper_delta``: the same perturbations' reward delta against the preference (which is the change of
  moving the perturbation back to its original: the better direction), standardised; per comparison first.
- ``two_way``: ½ [mean y(e) over better round-1 edits − mean y(e) over worse ones] — both directions, so
  an edit artifact shared by both (words inserted either way) cancels.
- ``rate_att``, ``rate_atu``, ``rate_ate`` (Reber et al., RATE, Algorithm 1; ``toddnief/RATE``,
  ``src/rate/treatment_effects.py``): the rewrite of the rewrite against the rewrite. A worse chain (the
  original as "W = 1", made worse, edited back better) gives ATT units y(e₂); a better chain ("W = 0", made
  better, edited back worse) gives ATU units −y(e₂); ATE pools both (n_T·ATT + n_U·ATU)/(n_T + n_U).
- ``length_adjusted``: least squares over the round-1 edits, y = c_a + β_a·s + γ·Δℓ, Δℓ the edit's change
  in words over the sd of the originals' word counts: β_a (the two-way effect with the edits' length
  changes held equal) per attribute and γ as the ``length`` row (reward sd per sd of length, longer).
- ``robust_length_adjusted``: the same design and two steps as Huber's M-estimate, each edit weighted by
  Huber's weight at the whole sample's fit, so that a few edits far from the rest cannot make an effect.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

import numpy as np

from rmexplain.analysis.bootstrap import resampled_means
from rmexplain.effects.base import EffectInput, Estimator, Observations, estimators


def cluster_sums(
    obs: Observations, values: np.ndarray, mask: np.ndarray, shape: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """Per (comparison, attribute): the sum of ``values`` and the count of observations where ``mask``."""
    sums, counts = np.zeros(shape), np.zeros(shape)
    np.add.at(sums, (obs.comparison[mask], obs.attribute[mask]), values[mask])
    np.add.at(counts, (obs.comparison[mask], obs.attribute[mask]), 1.0)
    return sums, counts


def pooled_mean(weights: np.ndarray, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Mean over the drawn observations (a comparison drawn k times counts k times): [resamples, rows]."""
    total, n = weights @ sums, weights @ counts
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.where(n > 0, n, 1.0), np.nan)


def comparison_means(obs: Observations, shape: tuple[int, int]) -> np.ndarray:
    """[comparisons, attributes]: each comparison's mean value (NaN where it has none), as the paper's PFR."""
    sums, counts = cluster_sums(obs, obs.value, np.ones(obs.value.size, dtype=bool), shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.where(counts > 0, counts, 1.0), np.nan)


def _finite(obs: Observations) -> Observations:
    keep = np.isfinite(obs.value)
    return Observations(
        obs.comparison[keep],
        obs.attribute[keep],
        obs.value[keep],
        None if obs.sign is None else obs.sign[keep],
        None if obs.length_change is None else obs.length_change[keep],
        None if obs.dose is None else obs.dose[keep],
        None if obs.covariates is None else obs.covariates[keep],
        None if obs.in_slope is None else obs.in_slope[keep],
    )


class _PaperEstimator(Estimator):
    """The paper's perturbations (explanations), per comparison first, then over comparisons."""

    referenced = False
    reads_perturbations = True

    def estimate(
        self, obs: Observations, weights: np.ndarray, n_comparisons: int, n_attributes: int
    ) -> np.ndarray:
        return resampled_means(weights, comparison_means(obs, (n_comparisons, n_attributes)))


@estimators.register("flip_rate")
class FlipRate(_PaperEstimator):
    """The paper's preference flip rate (§4.1), both sides pooled per comparison: a share, unsigned."""

    signed = False

    def observations(self, data: EffectInput, rm: str, reference: str | None) -> Observations:
        view = data.rms[rm]
        return Observations(view.paper_comparison, view.paper_attribute, view.paper_counterfactual)


@estimators.register("paper_delta")
class PaperDelta(_PaperEstimator):
    """The paper's mean reward delta against the preference, standardised: one direction."""

    def observations(self, data: EffectInput, rm: str, reference: str | None) -> Observations:
        view = data.rms[rm]
        return _finite(Observations(view.paper_comparison, view.paper_attribute, view.paper_delta / view.sd))


class _EditEstimator(Estimator):
    """Reads the attribute effects' edits of one round."""

    round_read: ClassVar[int] = 1

    def observations(self, data: EffectInput, rm: str, reference: str | None) -> Observations:
        rows, value = self.kept(data, rm, reference)
        return Observations(
            data.comparison[rows],
            data.attribute[rows],
            value,
            data.direction[rows].astype(np.float64),
            data.length_change[rows],
            None if data.dose is None else data.dose[rows].astype(np.float64),
            None if data.covariates is None else data.covariates[rows].astype(np.float64),
        )

    def kept(self, data: EffectInput, rm: str, reference: str | None) -> tuple[np.ndarray, np.ndarray]:
        """The edits it reads, in order — those of its round whose value is finite (both texts scored) —
        and their values."""
        rows = np.flatnonzero(data.round == self.round_read)
        y = data.standardised(rm, reference)[rows]
        value = self.unit_value(y, data.direction[rows], data.chain[rows])
        finite = np.isfinite(value)
        return rows[finite], value[finite]

    def unit_value(self, y: np.ndarray, direction: np.ndarray, chain: np.ndarray) -> np.ndarray:
        return y


@estimators.register("two_way")
class TwoWay(_EditEstimator):
    """Half the difference of the mean reward changes of the better and of the worse round-1 edits."""

    def estimate(
        self, obs: Observations, weights: np.ndarray, n_comparisons: int, n_attributes: int
    ) -> np.ndarray:
        shape = (n_comparisons, n_attributes)
        better = pooled_mean(weights, *cluster_sums(obs, obs.value, obs.sign > 0, shape))
        worse = pooled_mean(weights, *cluster_sums(obs, obs.value, obs.sign < 0, shape))
        return (better - worse) / 2.0


class _Rate(_EditEstimator):
    """RATE's rewritten-rewrite effects: the round-2 edit against the round-1 edit it was made from."""

    round_read = 2
    needs_round_two = True
    chains: ClassVar[tuple[int, ...]] = (-1, 1)

    def unit_value(self, y: np.ndarray, direction: np.ndarray, chain: np.ndarray) -> np.ndarray:
        # the unit's effect of W = 1 (better) against W = 0: y when the round-2 edit went better, −y when
        # worse;
        # units of chains this estimator does not read are NaN (dropped)
        value = np.where(direction > 0, y, -y)
        return np.where(np.isin(chain, self.chains), value, np.nan)

    def estimate(
        self, obs: Observations, weights: np.ndarray, n_comparisons: int, n_attributes: int
    ) -> np.ndarray:
        mask = np.ones(obs.value.size, dtype=bool)
        return pooled_mean(weights, *cluster_sums(obs, obs.value, mask, (n_comparisons, n_attributes)))


@estimators.register("rate_att")
class RateATT(_Rate):
    """RATE's ATT: responses made worse, then edited back; the edit back against the edit."""

    chains = (-1,)


@estimators.register("rate_atu")
class RateATU(_Rate):
    """RATE's ATU: responses made better, then edited back; the edit against the edit back."""

    chains = (1,)


@estimators.register("rate_ate")
class RateATE(_Rate):
    """RATE's ATE: ATT and ATU pooled, weighted by their numbers of units."""


@estimators.register("length_adjusted")
class LengthAdjusted(_EditEstimator):
    """Both directions, least squares with the edit's length change: each attribute's effect at equal
    length, and the RM's sensitivity to length as its own row. A coefficient the edits cannot identify is
    NaN (``undefined_reasons`` says why at the point estimate)."""

    length_row = True
    # An attribute edited in one direction only: False leaves it undefined (NaN, its reason logged); True
    # gives its β without an intercept (the length-adjusted mean change in that direction, signed).
    one_way_defined: ClassVar[bool] = False

    def observations(self, data: EffectInput, rm: str, reference: str | None) -> Observations:
        """The round-1 edits, and after them ``data.slope_edits``' (which inform γ only): their attributes
        numbered after ``data``'s and the length row's, their comparisons as ``data`` numbers them. Their
        covariates: the classes', then the summed effect of the words the RM's reward moves with
        (``held_words``)."""
        words = self.held_words(data, rm, reference)
        own = super().observations(with_word_columns(data, words), rm, reference)
        in_slope = np.full(own.value.size, data.slope_own)
        if data.slope_edits is None:
            return own if data.slope_own else dataclasses.replace(own, in_slope=in_slope)
        slope = super().observations(with_word_columns(data.slope_edits, words), rm, reference)
        index = {c: i for i, c in enumerate(data.comparisons)}
        comparison = np.array([index[c] for c in np.asarray(data.slope_edits.comparisons)[slope.comparison]])
        if (own.covariates is None) != (slope.covariates is None):
            raise ValueError("the slope edits and the edits hold the classes equal for γ in one case only")
        return Observations(
            np.concatenate([own.comparison, comparison.astype(np.int64)]),
            np.concatenate([own.attribute, slope.attribute + len(data.attributes) + 1]),
            *(np.concatenate(pair) for pair in zip(_slope_parts(own), _slope_parts(slope), strict=True)),
            None if own.covariates is None else np.vstack([own.covariates, slope.covariates]),
            np.concatenate([in_slope, np.ones(slope.value.size, dtype=bool)]),
        )

    def held_words(self, data: EffectInput, rm: str, reference: str | None) -> dict[str, float]:
        """The words whose counts the length slope holds equal for ``rm`` beside the classes, each with its
        coefficient in the whole sample's fit: those the edits that inform it change (``slope_edits``, else
        ``data``'s own) whose change moves the RM's reward at equal length and equal classes
        (``screened_words``, ``word_weights``). None where no class is held equal or the edits' words are not
        known (a dataset with discovery alone)."""
        source = data.slope_edits if data.slope_edits is not None else (data if data.slope_own else None)
        if source is None or source.covariates is None or source.word_changes is None:
            return {}
        theirs = None if reference is None else source.rms[reference].change
        read = (type(self).unit_value, self.round_read, source.word_changes, source.covariates,
                source.length_change, source.attribute, source.round, source.rms[rm].change,
                theirs)  # fmt: skip
        key = (*map(id, read), rm, reference)
        if key not in _SCREENED:  # the point, the robust fit and the halves of one job ask for the same words
            rows, _ = self.kept(source, rm, reference)
            changes = [source.word_changes[i] for i in rows]
            if len(_SCREENED) >= SCREENS_KEPT:
                del _SCREENED[next(iter(_SCREENED))]
            obs = super().observations(source, rm, reference)
            _SCREENED[key] = (read, word_weights(obs, changes, screened_words(obs, changes)))
        return dict(_SCREENED[key][1])

    def estimate(
        self, obs: Observations, weights: np.ndarray, n_comparisons: int, n_attributes: int
    ) -> np.ndarray:
        design, columns = length_design(obs)
        return self.estimate_on(obs, design, columns, weights, n_comparisons, n_attributes)

    def estimate_on(
        self,
        obs: Observations,
        design: np.ndarray,
        columns: dict[int, int],
        weights: np.ndarray,
        n_comparisons: int,
        n_attributes: int,
    ) -> np.ndarray:
        """``estimate`` on ``design`` (``length_design(obs)``, its rows weighted as ``obs``' values are)."""
        if obs.covariates is None:
            coefficients = least_squares(obs, design, weights, n_comparisons)
            slope = coefficients[:, -1]
        else:
            coefficients, slope = two_steps(obs, design, weights, n_comparisons)
        out = np.full((weights.shape[0], n_attributes + 1), np.nan)
        one_way = set(one_direction(obs))
        for a, column in columns.items():  # the slope edits' attributes, numbered after these, are not rows
            if a < n_attributes and (self.one_way_defined or a not in one_way):
                out[:, a] = coefficients[:, column]
        out[:, n_attributes] = slope
        return out

    def undefined_reasons(self, obs: Observations, n_attributes: int) -> dict[int, str]:
        reasons = {} if self.one_way_defined else {a: ONE_DIRECTION for a in one_direction(obs)}
        design, columns = length_design(obs)
        if not design.shape[0]:
            return _own_rows(reasons, n_attributes)
        blocks, _ = comparison_blocks(obs, design, int(obs.comparison.max()) + 1)
        lost = unidentified(np.einsum("rc,cpq->rpq", np.ones((1, len(blocks))), blocks))[0]
        if obs.covariates is not None:  # the length slope from the design with the covariates
            slope = slope_rows(obs)
            informs, full_design = _rows_of(obs, slope), with_covariates(design, obs)[slope]
            full, _ = comparison_blocks(informs, full_design, len(blocks))
            lost[-1] = unidentified(full.sum(axis=0)[None])[0][-1]
        if lost[-1]:
            reasons[n_attributes] = LENGTH_CONFOUNDED if np.any(obs.length_change) else NO_LENGTH_CHANGE
            for a, column in columns.items():
                if lost[column] and a not in reasons:
                    reasons[a] = LENGTH_CONFOUNDED
        return _own_rows(reasons, n_attributes)


def with_word_columns(data: EffectInput, weights: Mapping[str, float]) -> EffectInput:
    """``data`` with one covariate after its classes': each edit's summed effect of the held words, their
    count changes weighted by ``weights`` (0 where its words are not known: edits that do not inform the
    slope). One column, not one a word, keeps every resample's system the size it was: the words are held
    equal at the whole sample's coefficients, each resample fitting how much of their sum to take."""
    if not weights or data.covariates is None:
        return data
    changes = data.word_changes or [{}] * data.covariates.shape[0]
    column = word_columns(changes, list(weights)) @ np.array(list(weights.values()))
    return dataclasses.replace(data, covariates=np.column_stack([data.covariates, column]))


def word_weights(
    obs: Observations, changes: Sequence[Mapping[str, int]], words: Sequence[str]
) -> dict[str, float]:
    """Each of ``words`` with its coefficient in the least squares of ``obs``' values on the slope's design
    (attributes, classes, length: ``with_covariates``) and the words' count changes together."""
    if not words:
        return {}
    design = np.column_stack([with_covariates(length_design(obs)[0], obs), word_columns(changes, words)])
    coefficients = np.linalg.lstsq(design, obs.value, rcond=None)[0][-len(words) :]
    return dict(zip(words, coefficients.tolist(), strict=True))


def screened_words(obs: Observations, changes: Sequence[Mapping[str, int]]) -> list[str]:
    """The words whose counts ``length_adjusted``'s slope holds equal beside the classes, chosen forward over
    the words the edits ``obs`` (``changes``: each row's changed words) change in at least ``HELD_WORD_PAIRS``
    comparisons: each step takes the word whose count change moves the reward most at equal length, classes,
    attributes and words taken before — the largest |t| of its coefficient added alone to that design,
    clustered by comparison (``clustered_t``; ties by the word: ``by_largest_t``) — of those whose two-sided
    p-value, on Student's t with one degree of freedom fewer than the comparisons that change the word, passes
    the Bonferroni bound at ``HELD_WORD_ALPHA`` over the words screened; ``HELD_WORDS_MOST`` at most, and none
    once nothing is left to explain. An RM that rewards "please", which the edits that lengthen a response
    insert, would otherwise lend "please" to the slope."""
    from scipy.special import stdtr  # SciPy is not imported where the workflow is only read (snakemake -n)

    pairs: dict[str, set[int]] = {}
    for comparison, change in zip(obs.comparison.tolist(), changes, strict=True):
        for word in change:
            pairs.setdefault(word, set()).add(comparison)
    vocabulary = sorted(w for w, seen in pairs.items() if len(seen) >= HELD_WORD_PAIRS)
    if not vocabulary or obs.covariates is None:
        return []
    counts = word_columns(changes, vocabulary)
    design = with_covariates(length_design(obs)[0], obs)
    stacked = np.column_stack([obs.value, counts])
    residual = stacked - design @ np.linalg.lstsq(design, stacked, rcond=None)[0]
    scale = np.einsum("ij,ij->j", counts, counts)
    freedom = np.array([len(pairs[w]) - 1 for w in vocabulary], dtype=np.float64)
    nothing_left = ROUNDING * float(obs.value @ obs.value)
    chosen: list[int] = []
    family = 0
    while len(chosen) < HELD_WORDS_MOST and float(residual[:, 0] @ residual[:, 0]) > nothing_left:
        t = clustered_t(residual[:, 0], residual[:, 1:], scale, obs.comparison)
        family = family or int(np.count_nonzero(t))
        t[chosen] = 0.0
        passing = (t != 0) & (2.0 * stdtr(freedom, -np.abs(t)) <= HELD_WORD_ALPHA / max(family, 1))
        if not passing.any():
            break
        chosen.append(int(min(np.flatnonzero(passing), key=by_largest_t(t, vocabulary))))
        taken = residual[:, 1 + chosen[-1]] / np.linalg.norm(residual[:, 1 + chosen[-1]])
        residual -= np.outer(taken, taken @ residual)  # the next step's design holds the word equal too
    return [vocabulary[j] for j in chosen]


def by_largest_t(t: np.ndarray, vocabulary: Sequence[str]) -> Callable[[int], tuple[float, str]]:
    """The order of word indices by |t|, largest first (to ``TIE_DIGITS`` decimals), ties by the word: words
    that always change together differ only in rounding. Round 2's screen orders its words the same way."""
    return lambda j: (-round(abs(t[j]), TIE_DIGITS), vocabulary[j])


def word_columns(changes: Sequence[Mapping[str, int]], vocabulary: Sequence[str]) -> np.ndarray:
    """[edits, words]: each edit's change in the count of every word of ``vocabulary``."""
    index = {w: j for j, w in enumerate(vocabulary)}
    counts = np.zeros((len(changes), len(vocabulary)))
    for i, change in enumerate(changes):
        for word, count in change.items():
            if word in index:
                counts[i, index[word]] = count
    return counts


def clustered_t(ry: np.ndarray, rx: np.ndarray, scale: np.ndarray, cluster: np.ndarray) -> np.ndarray:
    """Per column of ``rx`` (a regressor's residual after a design, ``scale`` its sum of squares before):
    the t of its coefficient on ``ry`` (the outcome's residual), its variance robust to errors correlated
    within a ``cluster`` (the sandwich G/(G − 1) Σ_g (Σ_{i∈g} x̃ᵢeᵢ)² / (Σ x̃ᵢ²)², G the clusters, e the
    residual with the column added): infinite where it explains all that is left, 0 where the column has
    nothing left after the design (at most ``IDENTIFIED_TOLERANCE`` of ``scale``) or there is one cluster."""
    order = np.argsort(cluster, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(cluster[order]) != 0])
    if starts.size < 2:
        return np.zeros(rx.shape[1])
    sxx = np.einsum("ij,ij->j", rx, rx)
    own = sxx > IDENTIFIED_TOLERANCE * scale
    with np.errstate(invalid="ignore", divide="ignore"):
        beta = (rx.T @ ry) / sxx
        per_row = rx * (ry[:, None] - rx * beta)
        scores = np.add.reduceat(per_row[order], starts, axis=0)  # [clusters, columns]
        variance = starts.size / (starts.size - 1) * np.einsum("gj,gj->j", scores, scores) / sxx**2
        t = beta / np.sqrt(variance)
    return np.where(own & ~np.isnan(t), t, 0.0)


def slope_rows(obs: Observations) -> np.ndarray:
    """[observations] whether each informs the length slope (all where ``in_slope`` is None)."""
    return np.ones(obs.value.size, dtype=bool) if obs.in_slope is None else obs.in_slope.astype(bool)


def _own_rows(reasons: dict[int, str], n_attributes: int) -> dict[int, str]:
    """``reasons`` of the attributes' rows and the length row (not of the slope edits' attributes)."""
    return {a: why for a, why in reasons.items() if a <= n_attributes}


def _slope_parts(obs: Observations) -> tuple[np.ndarray, ...]:
    """(value, sign, length change, dose) of ``obs``; a missing dose is the sign (one instance)."""
    assert obs.sign is not None and obs.length_change is not None
    dose = obs.sign if obs.dose is None else obs.dose
    return obs.value, obs.sign, obs.length_change, dose


def _rows_of(obs: Observations, keep: np.ndarray) -> Observations:
    """``obs``' observations where ``keep``."""
    return Observations(*(None if v is None else v[keep] for v in dataclasses.astuple(obs)))


@estimators.register("robust_length_adjusted")
class RobustLengthAdjusted(LengthAdjusted):
    """``length_adjusted`` as Huber's M-estimate: the same design and two steps, each edit weighted by
    Huber's weight at the whole sample's fit (``huber_weights``), so that a few edits far from the rest (a
    one-word response whose every edit moves the reward tenfold) cannot make an effect or the length slope.
    Resamples refit with those weights fixed (the one-step bootstrap of a robust fit): the weights are
    found once per observations (the last ones asked for are kept), not again for every set of resamples."""

    def __init__(self) -> None:
        self._weighed: tuple[Observations, int, np.ndarray] | None = None

    def estimate(
        self, obs: Observations, weights: np.ndarray, n_comparisons: int, n_attributes: int
    ) -> np.ndarray:
        design, columns = length_design(obs)
        weighted, weighted_design = reweighted(obs, design, self.huber_weights(obs, design, n_comparisons))
        return self.estimate_on(weighted, weighted_design, columns, weights, n_comparisons, n_attributes)

    def huber_weights(self, obs: Observations, design: np.ndarray, n_comparisons: int) -> np.ndarray:
        """``huber_weights`` of ``obs``, found once for the same observations object."""
        if self._weighed is None or self._weighed[0] is not obs or self._weighed[1] != n_comparisons:
            self._weighed = (obs, n_comparisons, huber_weights(obs, design, n_comparisons))
        return self._weighed[2]


HUBER_ITERATIONS, HUBER_TOLERANCE = 100, 1e-8  # IRLS stops when no weight moves by more than this


def huber_weights(obs: Observations, design: np.ndarray, n_comparisons: int) -> np.ndarray:
    """[observations]: Huber's weights (statsmodels' ``HuberT``, k = 1.345: 95 % of least squares'
    efficiency at normal errors) at the M-estimate of ``length_adjusted``'s fit over every comparison,
    by iteratively reweighted least squares from the least-squares fit, the residuals' scale
    (``residual_scale``) updated each step as statsmodels' ``RLM`` does; all 1 where the fit leaves γ
    undefined or the residuals vanish. Written here rather than with ``RLM`` for the two steps: γ at equal
    class counts, the effects without them (``RLM`` gives the same weights on a design without classes)."""
    from statsmodels.robust.norms import HuberT  # 0.2 s to import: only where it is used

    norm, weights = HuberT(), np.ones(obs.value.size)
    for _ in range(HUBER_ITERATIONS):
        residuals = weighted_residuals(obs, design, weights, n_comparisons)
        scale = residual_scale(residuals)
        if residuals is None or scale == 0.0:
            return np.ones(obs.value.size)
        updated = norm.weights(residuals / scale)
        if np.max(np.abs(updated - weights)) <= HUBER_TOLERANCE:  # some observations: scale > 0
            return updated
        weights = updated
    return weights


def weighted_residuals(
    obs: Observations, design: np.ndarray, weights: np.ndarray, n_comparisons: int
) -> np.ndarray | None:
    """The residuals y − ŷ of ``length_adjusted``'s fit with each observation weighted by ``weights``
    (ŷ = X·β̂ + γ̂·Δℓ of the two steps with covariates; unidentified coefficients count 0); None where γ is
    measured but undefined."""
    ones = np.ones((1, n_comparisons))
    weighted, weighted_design = reweighted(obs, design, weights)
    if obs.covariates is None:
        coefficients = least_squares(weighted, weighted_design, ones, n_comparisons)
        return obs.value - design @ np.nan_to_num(coefficients[0])
    coefficients, slope = two_steps(weighted, weighted_design, ones, n_comparisons)
    measured = bool(np.any(obs.length_change[slope_rows(obs)]))
    if measured and not np.isfinite(slope[0]):
        return None
    gamma = float(slope[0]) if measured else 0.0
    return obs.value - design[:, :-1] @ np.nan_to_num(coefficients[0]) - gamma * design[:, -1]


def reweighted(obs: Observations, design: np.ndarray, weights: np.ndarray) -> tuple[Observations, np.ndarray]:
    """``obs`` and ``design`` with each observation's row (value, classes, design) times √weight: least
    squares on them is weighted least squares on the originals."""
    root = np.sqrt(weights)
    covariates = None if obs.covariates is None else obs.covariates * root[:, None]
    return dataclasses.replace(obs, value=obs.value * root, covariates=covariates), design * root[:, None]


def residual_scale(residuals: np.ndarray | None) -> float:
    """The residuals' scale: their median absolute deviation about 0 over Φ⁻¹(¾) (statsmodels' ``mad``, as
    ``RLM`` takes it); where more than half are 0 (an RM without noise), their mean absolute value × √(π/2)
    (the same σ at normal errors); 0 where all are."""
    from statsmodels.robust.scale import mad

    if residuals is None or not residuals.size:
        return 0.0
    size = np.abs(residuals)
    tiny = 1e-12 * max(1.0, float(size.max()))
    median = float(mad(residuals, center=0.0))
    if median > tiny:
        return median
    mean = float(size.mean())
    return mean * math.sqrt(math.pi / 2) if mean > tiny else 0.0


ONE_DIRECTION = (
    "edited in one direction only: what an edit along the attribute does in either direction (c_a) cannot"
    " be told apart from its effect (β_a)"
)
LENGTH_CONFOUNDED = (
    "the edits' length changes are a linear function of each attribute's direction: length cannot be told "
    "apart from the attributes (γ and these β_a are not identified)"
)
NO_LENGTH_CHANGE = (
    "no edit changes the length in words (or the original responses all have one length): the RM's "
    "sensitivity to length cannot be measured (γ is not identified)"
)
IDENTIFIED_TOLERANCE = 1e-10  # an eigenvalue of the scaled Gram matrix below this (× the largest) is 0


HELD_WORD_PAIRS = 5  # comparisons whose edits change a word, for its count to be screened
MIN_DOSE_PAIRS = 5  # comparisons whose edits' doses differ from the commonest, for a further-instance slope
HELD_WORD_ALPHA = 0.05  # the screen's family-wise error rate (Bonferroni over the words screened)
HELD_WORDS_MOST = 20  # words held equal per RM at most
SCREENS_KEPT = 8  # the last screens found, by the arrays they read (kept alive so that their ids stay theirs)
_SCREENED: dict[tuple, tuple[tuple, dict[str, float]]] = {}
ROUNDING = 1e-16  # a residual sum of squares at most this share of y's: nothing left to explain
TIE_DIGITS = 9  # |t| equal to these decimals tie (words that always change together), taken by the word
CHUNK = 200  # weight rows solved at once: bounds the memory of their normal equations ([rows, p, p])


def least_squares(
    obs: Observations, design: np.ndarray, weights: np.ndarray, n_comparisons: int
) -> np.ndarray:
    """[resamples, columns]: the coefficients of ``obs.value`` on ``design`` under each row of comparison
    ``weights`` (NaN where unidentified)."""
    blocks = comparison_blocks(obs, design, n_comparisons)
    return np.vstack(
        [_solved(*blocks, weights[i : i + CHUNK]) for i in range(0, len(weights), CHUNK)]
        or [np.zeros((0, design.shape[1]))]
    )


def with_covariates(design: np.ndarray, obs: Observations) -> np.ndarray:
    """``design`` with ``obs.covariates`` put before its last (the length) column, those that hold something
    equal for γ: a covariate that no edit informing the slope changes (a probe's count in a discovery round
    whose γ is the attribute edits') or that ``spanned`` leaves out would only widen every resample's
    system."""
    informs = slope_rows(obs)
    held = np.any(obs.covariates[informs] != 0, axis=0)
    held[held] = ~spanned(design[:, :-1], obs.covariates[:, held], obs.attribute, informs)
    return np.column_stack([design[:, :-1], obs.covariates[:, held], design[:, -1:]])


def spanned(
    own: np.ndarray, covariates: np.ndarray, attribute: np.ndarray, informs: np.ndarray
) -> np.ndarray:
    """[covariates]: whether each lies, over the edits that inform the slope (``informs``), in the span of
    the design's columns ``own`` — each attribute's edits fitted by their own columns (intercept, β, dose),
    what is left at most ``IDENTIFIED_TOLERANCE`` of the covariate's sum of squares. A probe's count that
    changes only in its own edits is its dose. Such a covariate holds nothing equal beyond the design, under
    any resample's weights, and least squares gives γ the same with it or without."""
    residual = np.zeros(covariates.shape[1])
    for a in np.unique(attribute[informs]):
        rows = informs & (attribute == a)
        x, z = own[rows], covariates[rows]
        x = x[:, np.any(x != 0, axis=0)]
        residual += ((z - x @ np.linalg.lstsq(x, z, rcond=None)[0]) ** 2).sum(axis=0)
    return residual <= IDENTIFIED_TOLERANCE * (covariates[informs] ** 2).sum(axis=0)


def two_steps(
    obs: Observations, design: np.ndarray, weights: np.ndarray, n_comparisons: int
) -> tuple[np.ndarray, np.ndarray]:
    """([resamples, columns − 1], [resamples]): under each row of ``weights``, the length slope γ from least
    squares on ``design`` with ``obs.covariates`` (``with_covariates``), then the other coefficients of
    ``design`` fitted to ``obs.value − γ·length_change`` without them (NaN where unidentified; where no
    edit changes the length, γ is NaN and the others are fitted as the unadjusted fit has them).

    With X ``design`` less its length column and U = [Z, ℓ] the covariates and the length, γ is the last
    coefficient of the Schur complement's system (C − B'A⁺B)·θ = c − B'A⁺a (A = X'WX, B = X'WU, C = U'WU,
    a = X'Wy, c = U'Wy: exact with the pseudo-inverse, as B's columns lie in A's range), and the
    coefficients are A⁺(a − γ·X'Wℓ). Where ``obs.in_slope`` marks the edits that inform γ, the first step
    is theirs alone (their rows of C and c, their attributes' blocks of B'A⁺B and B'A⁺a) and the second
    step every attribute's. Each column of X belongs to one attribute's edits (its intercept, β,
    dose), so A is block-diagonal by attribute (``AttributeBlocks``): A⁺ is found a block at a time, each
    with ``generalised_inverse``'s test against the largest eigenvalue of all blocks, which is the test on
    the whole of A — a few 3 × 3 decompositions where the whole matrix would take one of hundreds of
    columns per resample."""
    p = design.shape[1] - 1  # the columns of X
    if not obs.value.size:  # nothing to fit
        return np.full((len(weights), p), np.nan), np.full(len(weights), np.nan)
    shared = with_covariates(design, obs)[:, p:]
    blocks = AttributeBlocks(obs, design[:, :p], shared, n_comparisons)
    measured = bool(np.any(obs.length_change[blocks.in_slope]))
    informs = blocks.slope_blocks[None, :, None, None]  # the blocks of the edits that inform γ
    coefficients, slopes = [], []
    for i in range(0, len(weights), CHUNK):
        gram, cross, moment, shared_gram, shared_moment = blocks.weighted(weights[i : i + CHUNK])
        a_inverse, lost = blocks.generalised_inverse(gram)
        a_inverse_b = a_inverse @ cross * informs  # A⁺B per block: [r, blocks, size, q]
        schur = shared_gram - np.einsum("rkpi,rkpj->rij", cross, a_inverse_b)
        right = shared_moment - np.einsum("rkpi,rkp->ri", a_inverse_b, moment)
        schur, right = without_spanned(schur, right, shared_gram)
        theta = np.einsum("rij,rj->ri", np.linalg.pinv(schur, hermitian=True), right)
        slope = np.where(slope_unidentified(schur, shared_gram), np.nan, theta[:, -1])
        used = slope if measured else np.zeros_like(slope)
        solved = np.einsum("rkpq,rkq->rkp", a_inverse, moment - used[:, None, None] * cross[..., -1])
        coefficients.append(blocks.columns_of(np.where(lost, np.nan, solved)))
        slopes.append(slope)
    if not coefficients:
        return np.zeros((0, p)), np.zeros(0)
    return np.vstack(coefficients), np.concatenate(slopes)


def without_spanned(
    schur: np.ndarray, right: np.ndarray, shared_gram: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The Schur complement C − B'A⁺B and its right-hand side with the row and column of each covariate
    that lies in the span of the features' columns set to 0: what is left of its Z'WZ after them at most
    ``IDENTIFIED_TOLERANCE`` of it. Such a covariate holds nothing equal beyond them (a probe that changes
    only in its own edits: its count is its dose), and its remainder is rounding, which scaled to a unit
    diagonal would be noise as large as the rest. The length (the last column) is left to
    ``slope_unidentified``."""
    kept = ~in_span(schur, shared_gram)
    kept[:, -1] = True
    return schur * kept[:, :, None] * kept[:, None, :], right * kept


def in_span(schur: np.ndarray, shared_gram: np.ndarray) -> np.ndarray:
    """[resamples, q]: whether each column of U = [Z, ℓ] lies almost wholly in the span of the attributes'
    columns: what is left of its U'WU after them (the Schur complement's diagonal) at most
    ``IDENTIFIED_TOLERANCE`` of it."""
    return np.einsum("rii->ri", schur) <= IDENTIFIED_TOLERANCE * np.einsum("rii->ri", shared_gram)


def slope_unidentified(schur: np.ndarray, shared_gram: np.ndarray) -> np.ndarray:
    """[resamples]: whether γ is not identified — a component of the length in the null space of the Schur
    complement C − B'A⁺B (``unidentified``), or the length almost wholly in the span of the attributes'
    columns: what is left of ℓ'Wℓ after them at most ``IDENTIFIED_TOLERANCE`` of it (the Schur complement's
    own diagonal, scaled to 1, would hide a remainder of rounding: ``in_span``)."""
    return unidentified(schur)[:, -1] | in_span(schur, shared_gram)[:, -1]


class AttributeBlocks:
    """The normal equations of ``two_steps`` by comparison and attribute: X's columns grouped by the
    attribute whose edits they are nonzero on (a block of at most three: intercept, β, dose; ``size`` the
    largest, smaller blocks padded with slots never drawn), U = [Z, ℓ] shared. Each comparison's share of
    every block is summed once; a resample's sums are one product with its comparison weights."""

    def __init__(self, obs: Observations, own: np.ndarray, shared: np.ndarray, n_comparisons: int) -> None:
        self.block_of_column, self.slot_of_column, block_of = column_blocks(obs.attribute, own)
        self.n_blocks = int(self.block_of_column.max()) + 1  # every edit has its attribute's β column
        self.size = int(np.bincount(self.block_of_column).max())
        row_block = np.array([block_of[int(a)] for a in obs.attribute], dtype=np.int64)
        self.in_slope = slope_rows(obs)
        self.slope_blocks = slope_blocks(row_block, self.in_slope, self.n_blocks)
        x = np.zeros((len(own), self.size))
        for j in range(own.shape[1]):  # a row is nonzero in its own block's columns only
            x[:, self.slot_of_column[j]] += own[:, j]
        cell = obs.comparison * self.n_blocks + row_block
        k, q, cells = self.size, shared.shape[1], n_comparisons * self.n_blocks
        self.xx = _sums_by(cell, (x[:, :, None] * x[:, None, :]).reshape(-1, k * k), cells)
        self.xu = _sums_by(cell, (x[:, :, None] * shared[:, None, :]).reshape(-1, k * q), cells)
        self.xy = _sums_by(cell, x * obs.value[:, None], cells)
        u, y, at = shared[self.in_slope], obs.value[self.in_slope], obs.comparison[self.in_slope]
        self.uu = _sums_by(at, (u[:, :, None] * u[:, None, :]).reshape(-1, q * q), n_comparisons)
        self.uy = _sums_by(at, u * y[:, None], n_comparisons)
        self.n_comparisons, self.q = n_comparisons, q

    def weighted(self, weights: np.ndarray) -> tuple[np.ndarray, ...]:
        """(A, B, a per block: [r, blocks, size, size], [r, blocks, size, q], [r, blocks, size]; C, c:
        [r, q, q], [r, q]) under each row of comparison ``weights``."""
        r, b, k, q = len(weights), self.n_blocks, self.size, self.q

        def summed(per_cell: np.ndarray, *shape: int) -> np.ndarray:
            return (weights @ per_cell.reshape(self.n_comparisons, -1)).reshape(r, *shape)

        return (
            summed(self.xx, b, k, k),
            summed(self.xu, b, k, q),
            summed(self.xy, b, k),
            summed(self.uu, q, q),
            summed(self.uy, q),
        )

    def generalised_inverse(self, gram: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """([r, blocks, size, size], [r, blocks, size]): a generalised inverse of the block-diagonal A from
        its blocks, and the coefficients it leaves unidentified, as ``unidentified`` tests the whole matrix
        (its eigenvalues are the blocks', the tolerance against the largest of all): D·S⁺·D, S = D·A·D
        scaled to a unit diagonal (D = diag(1/√A_ii)), its null eigenvalues left out. It solves the normal
        equations of any target in A's range, so every identified coefficient is the pseudo-inverse's. A
        slot no column fills is never drawn (unidentified, and left out)."""
        r, b, k = gram.shape[0], gram.shape[1], self.size
        diagonal, scale, values, vectors, _ = _scaled_spectrum(gram.reshape(r * b, k, k))
        largest = np.repeat(np.maximum(values.reshape(r, b * k).max(axis=1), 1e-300), b)
        null = values <= IDENTIFIED_TOLERANCE * largest[:, None]
        inverse_values = np.where(null, 0.0, 1.0 / np.where(null, 1.0, values))
        scaled_inverse = (vectors * inverse_values[:, None, :]) @ vectors.transpose(0, 2, 1)
        inverse = scale[:, :, None] * scaled_inverse * scale[:, None, :]
        return inverse.reshape(r, b, k, k), _in_null_space(diagonal, vectors, null).reshape(r, b, k)

    def columns_of(self, per_block: np.ndarray) -> np.ndarray:
        """[r, columns of X]: each column's value from its block and slot ([r, blocks, size])."""
        return per_block[:, self.block_of_column, self.slot_of_column]


def column_blocks(attribute: np.ndarray, own: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[int, int]]:
    """(block, slot) of each column of X and each attribute's block: the block numbers the attributes whose
    edits the columns are nonzero on (in order of first column), the slot a column's place among its
    block's. A column nonzero on two attributes' edits is not ``length_design``'s and is refused; one nonzero
    nowhere gets a block of its own (never drawn: unidentified)."""
    blocks: dict[int, int] = {}
    block_of_column, slot_of_column, filled = [], [], []
    for j in range(own.shape[1]):
        owners = np.unique(attribute[own[:, j] != 0])
        if owners.size > 1:
            raise ValueError(f"design column {j} is nonzero on the edits of {owners.size} attributes")
        key = int(owners[0]) if owners.size else -1 - j
        if key not in blocks:
            blocks[key] = len(blocks)
            filled.append(0)
        block_of_column.append(blocks[key])
        slot_of_column.append(filled[blocks[key]])
        filled[blocks[key]] += 1
    return (
        np.array(block_of_column, dtype=np.int64),
        np.array(slot_of_column, dtype=np.int64),
        {a: b for a, b in blocks.items() if a >= 0},
    )


def slope_blocks(row_block: np.ndarray, in_slope: np.ndarray, n_blocks: int) -> np.ndarray:
    """[blocks] 1.0 where the block's edits inform the length slope, else 0.0; an attribute's edits do all
    or none."""
    informing = np.bincount(row_block, weights=in_slope, minlength=n_blocks)
    rows = np.bincount(row_block, minlength=n_blocks)
    if np.any((informing > 0) & (informing < rows)):
        raise ValueError("an attribute's edits inform the length slope in part: all or none of them must")
    return (informing > 0).astype(np.float64)


def comparison_blocks(
    obs: Observations, design: np.ndarray, n_comparisons: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each comparison's share of X'X and X'y ([comparisons, p, p] and [comparisons, p]): made once per fit,
    then weighted by every row of resample weights."""
    p = design.shape[1]
    outer = (design[:, :, None] * design[:, None, :]).reshape(len(design), p * p)
    blocks = _sums_by(obs.comparison, outer, n_comparisons).reshape(n_comparisons, p, p)
    return blocks, _sums_by(obs.comparison, design * obs.value[:, None], n_comparisons)


def _sums_by(index: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """The rows of ``values`` summed by ``index`` ([n, columns]), each sum in row order (as ``np.add.at``
    adds them, several times faster)."""
    sums = [np.bincount(index, weights=values[:, j], minlength=n) for j in range(values.shape[1])]
    return np.stack(sums, axis=1) if sums else np.zeros((n, 0))


def _solved(blocks: np.ndarray, targets: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The least-squares coefficients under each row of comparison ``weights`` (NaN where unidentified)."""
    gram, moment = np.einsum("rc,cpq->rpq", weights, blocks), np.einsum("rc,cp->rp", weights, targets)
    coefficients = np.einsum("rpq,rq->rp", np.linalg.pinv(gram, hermitian=True), moment)
    return np.where(unidentified(gram), np.nan, coefficients)


def unidentified(gram: np.ndarray) -> np.ndarray:
    """[resamples, p]: whether each coefficient is *not* identified by its Gram matrix X'WX — it has a
    component in the matrix's null space (a column never drawn, or a linear combination of the others), so
    least squares leaves it free and a pseudo-inverse would return an arbitrary (minimum-norm) value.

    The Gram matrix is scaled to a unit diagonal first, so the tolerance does not depend on the columns'
    units or the number of draws."""
    diagonal, _, _, vectors, null = _scaled_spectrum(gram)
    return _in_null_space(diagonal, vectors, null)


def _scaled_spectrum(gram: np.ndarray) -> tuple[np.ndarray, ...]:
    """(diagonal, scale, eigenvalues, eigenvectors, null) of each Gram matrix scaled to a unit diagonal;
    ``null``: the eigenvalues at most ``IDENTIFIED_TOLERANCE`` × the largest."""
    diagonal = np.einsum("rpp->rp", gram)
    scale = np.where(diagonal > 0, 1.0 / np.sqrt(np.where(diagonal > 0, diagonal, 1.0)), 0.0)
    values, vectors = np.linalg.eigh(gram * scale[:, :, None] * scale[:, None, :])
    null = values <= IDENTIFIED_TOLERANCE * np.maximum(values.max(axis=1, keepdims=True), 1e-300)
    return diagonal, scale, values, vectors, null


def _in_null_space(diagonal: np.ndarray, vectors: np.ndarray, null: np.ndarray) -> np.ndarray:
    """[resamples, p]: the coefficients with a component in the null space, or a column never drawn."""
    in_null_space = np.einsum("rpk,rk->rp", vectors**2, null.astype(np.float64))
    return (in_null_space > 1e-10) | (diagonal <= 0)


def one_direction(obs: Observations) -> list[int]:
    """Attributes with round-1 edits in one direction only (the design gives them no c_a)."""
    assert obs.sign is not None
    return [
        int(a)
        for a in np.unique(obs.attribute)
        if not ((obs.sign[obs.attribute == a] > 0).any() and (obs.sign[obs.attribute == a] < 0).any())
    ]


def length_design(obs: Observations) -> tuple[np.ndarray, dict[int, int]]:
    """The least-squares design of ``length_adjusted`` and the column of each attribute's β.

    Columns: per attribute with edits in both directions an intercept c_a (what an edit along it does in
    either direction); per attribute with edits the signed β_a; per attribute whose edits' doses (``dose``:
    instances added or removed) differ in size within a direction, the instances beyond the first, dose − s
    (δ_a: what each further instance does, so that β_a is the effect of one instance and no dose reaches the
    length slope) — where no edit is of one instance or few comparisons hold the other sizes
    (``dose_spreads``: linear), β_a's column is the dose instead, and no δ_a; last, the length change. An
    attribute with edits in one direction only gets no intercept: its β_a column absorbs its edits' mean, as
    c_a would (the two cannot be told apart there), so the other coefficients are unaffected and its β_a is
    undefined (``one_way_defined`` reports it anyway, as the length-adjusted mean change in that direction).
    """
    assert obs.sign is not None and obs.length_change is not None
    present = np.unique(obs.attribute)
    one_way = set(one_direction(obs))
    cols: list[np.ndarray] = [(obs.attribute == a).astype(np.float64) for a in present if a not in one_way]
    beta_columns, spreads = {}, dose_spreads(obs)
    for a in present:
        beta_columns[int(a)] = len(cols)
        cols.append(
            np.where(obs.attribute == a, obs.dose if spreads.get(int(a)) == "linear" else obs.sign, 0.0)
        )
    cols += [
        np.where(obs.attribute == a, obs.dose - obs.sign, 0.0)
        for a, spread in spreads.items()
        if spread == "varied"
    ]
    cols.append(obs.length_change.astype(np.float64))
    return np.column_stack(cols) if obs.value.size else np.zeros((0, len(cols))), beta_columns


def dose_spreads(obs: Observations) -> dict[int, str]:
    """Per attribute whose edits' doses differ in size within one direction, how its β is fitted:
    ``varied`` (β one instance's, δ a further one's) where, in some direction, edits of one instance are among
    them and the edits off the commonest size (the smaller of two as common) come from at least
    ``MIN_DOSE_PAIRS`` distinct comparisons; else ``linear``: β's column is the edits' doses, the change per
    instance through all of them. A slope per further instance drawn from one list of three items among lists
    of two extrapolates that one edit's noise to every instance (its pair then decides the effect, and
    resamples without it leave it undefined); from lists of two and three alone, one item's effect is 2·y₂ −
    y₃, outside the doses edited, with the noise of both five times over."""
    if obs.dose is None:
        return {}
    assert obs.sign is not None
    sizes, spreads = np.abs(obs.dose), {}
    for a in np.unique(obs.attribute):
        directions = [(obs.attribute == a) & (obs.sign == s) for s in (-1, 1)]
        if not any(np.unique(sizes[rows]).size > 1 for rows in directions):
            continue
        varied = any(
            (sizes[rows] == 1).any() and _off_pairs(sizes, obs.comparison, rows) >= MIN_DOSE_PAIRS
            for rows in directions
        )
        spreads[int(a)] = "varied" if varied else "linear"
    return spreads


def _off_pairs(sizes: np.ndarray, comparison: np.ndarray, rows: np.ndarray) -> int:
    """Distinct comparisons of the edits at ``rows`` whose dose size is not their commonest."""
    values, counts = np.unique(sizes[rows], return_counts=True)
    return int(np.unique(comparison[rows & (sizes != values[np.argmax(counts)])]).size)


def support(obs: Observations, n_attributes: int, length_row: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the observations and the distinct comparisons behind it (the length row: all of those that
    inform the length slope)."""
    n = np.bincount(obs.attribute, minlength=n_attributes)[:n_attributes].astype(np.int64)
    n_comp = np.array(
        [np.unique(obs.comparison[obs.attribute == a]).size for a in range(n_attributes)], dtype=np.int64
    )
    if length_row:
        slope = slope_rows(obs)
        n = np.append(n, int(slope.sum()))
        n_comp = np.append(n_comp, np.unique(obs.comparison[slope]).size)
    return n, n_comp
