"""The estimator interface and registry of the attribute effects, and the arrays every estimator reads.

A light module (numpy only): the config check and the rules list the registered names without importing the
estimators, which
live in ``rmexplain.effects.estimators`` (the registry's lazy map) or in a plugin (entry-point group
``rmexplain.effect_estimators``). A new estimator is one ``Estimator`` subclass registered by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from rmexplain.registry import Registry

LENGTH = "length"  # the row of the RM's sensitivity to length itself
BUILT_IN = (
    "flip_rate",
    "paper_delta",
    "two_way",
    "rate_att",
    "rate_atu",
    "rate_ate",
    "length_adjusted",
    "robust_length_adjusted",
)


@dataclass
class RewardChanges:
    """One RM's view of the edits: reward changes (NaN where a text went unscored) and its reward sd."""

    change: np.ndarray  # [edits] r(edit) − r(its source), reward units
    sd: float  # reward sd over the dataset's original responses
    # the paper's perturbations of this RM (its explanations), as arrays over rows
    paper_comparison: np.ndarray
    paper_attribute: np.ndarray
    paper_counterfactual: np.ndarray  # 1.0 for a CF, 0.0 for an SF
    paper_delta: np.ndarray  # reward delta against the RM's preference, reward units


@dataclass
class EffectInput:
    """The edits of one (dataset, method) as arrays over edit rows, and each RM's rewards on them."""

    comparisons: list[str]  # the bootstrap's units, sorted
    attributes: list[str]
    comparison: np.ndarray  # [edits] index into comparisons
    attribute: np.ndarray  # [edits] index into attributes
    direction: np.ndarray  # [edits] +1 better, −1 worse (relative to the edited text)
    round: np.ndarray  # [edits] 1 or 2
    chain: np.ndarray  # [edits] the round-1 direction of the edit's chain: +1 better, −1 worse
    length_change: np.ndarray  # [edits] change in words / sd of the originals' word counts
    rms: dict[str, RewardChanges]
    dataset: str | None = None  # of the comparisons: the bootstrap splits their ids into pairs exactly
    length_measured: bool = True  # False: the originals' word counts have no sd, every length_change 0
    dose: np.ndarray | None = None  # [edits] instances added (+) or removed (−); None: one per edit
    covariates: np.ndarray | None = None  # [edits, classes] count changes the length slope holds equal
    # [edits] each edit's change in the count of every word it changes (lower case): the words an RM's
    # reward moves with at equal length are held equal for its slope too (``length_adjusted``)
    word_changes: list[Mapping[str, int]] | None = None
    # Other edits of the dataset that inform the length slope γ only (``length_adjusted``'s first step: the
    # dataset's attribute edits of every method), so that one γ adjusts every effect; their comparisons are
    # among ``comparisons``. ``slope_own`` False: this input's own edits do not inform γ (discovery's, where
    # the attribute edits do).
    slope_edits: EffectInput | None = None
    slope_own: bool = True

    def standardised(self, rm: str, reference: str | None) -> np.ndarray:
        """y(e): the RM's reward changes less the reference's, in the RM's reward sd (NaN where unscored)."""
        change = self.rms[rm].change
        if reference is not None:
            change = change - self.rms[reference].change
        return change / self.rms[rm].sd


@dataclass
class Observations:
    """What one estimator averages: per observation its comparison, attribute and value (and extras)."""

    comparison: np.ndarray
    attribute: np.ndarray
    value: np.ndarray
    sign: np.ndarray | None = None  # two_way, length_adjusted: +1 better, −1 worse
    length_change: np.ndarray | None = None
    dose: np.ndarray | None = None  # length_adjusted: signed instances; None: the sign (one instance)
    covariates: np.ndarray | None = None  # length_adjusted: [n, classes] held equal for the length slope
    in_slope: np.ndarray | None = None  # length_adjusted: [n] whether it informs the length slope (None: all)


class Estimator:
    """Base of the estimators: what the report and the planted suite must know about one.

    A subclass implements ``observations`` (what it reads, for one RM) and ``estimate`` (values under
    comparison weights), declares the class attributes below, and registers with ``@estimators.register``.
    """

    signed: ClassVar[bool] = True  # its sign says which direction the RM rewards (flip rates have none)
    referenced: ClassVar[bool] = True  # reward changes of the RM's reference are subtracted (paper: no)
    length_row: ClassVar[bool] = False  # it reports the RM's sensitivity to length as a row
    needs_round_two: ClassVar[bool] = False  # it reads the edits of edits
    reads_perturbations: ClassVar[bool] = False  # it reads the paper's perturbations (their explanations)

    def observations(self, data: EffectInput, rm: str, reference: str | None) -> Observations:
        raise NotImplementedError

    def estimate(
        self, obs: Observations, weights: np.ndarray, n_comparisons: int, n_attributes: int
    ) -> np.ndarray:
        """[resamples, rows]: one value per attribute (and the length row), NaN where undefined."""
        raise NotImplementedError

    def undefined_reasons(self, obs: Observations, n_attributes: int) -> dict[int, str]:
        """Rows (by index) this estimator leaves undefined on ``obs`` although they have observations, and
        why; the table logs them. Default: none (a row without observations needs no reason)."""
        return {}


estimators: Registry[type[Estimator]] = Registry(
    "analysis.effects.estimators",
    dict.fromkeys(BUILT_IN, "rmexplain.effects.estimators"),
    group="rmexplain.effect_estimators",
    error=KeyError,
)


def reported_estimators(effects: Mapping[str, Any]) -> list[str]:
    """The estimators the attribute-effects tables report under ``analysis.effects`` (defaults filled):
    ``estimators``, else all but, without ``rewrite_of_rewrite``, those that read the edits of edits."""
    chosen = effects.get("estimators")
    if chosen:
        return list(chosen)
    if effects["rewrite_of_rewrite"]:
        return estimators.names()
    return [name for name in estimators.names() if not estimators.get(name).needs_round_two]


def row_names(estimator: type[Estimator], attributes: list[str]) -> list[str]:
    """The rows an estimator reports: the attributes, and ``length`` where it has that row."""
    return [*attributes, LENGTH] if estimator.length_row else list(attributes)
