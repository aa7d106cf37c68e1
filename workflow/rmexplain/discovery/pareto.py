"""Which features the llm engine mutates: Wang et al.'s Pareto selection (``evo.py``, ``EvoPlanner``).

A candidate is a feature with two effects: the RM's (metric A, their "student") and the judge's (metric B,
their "teacher"). Seeking what an RM rewards (their direction ``plus``), a candidate dominates another when
its RM effect is at least as high and its judge effect at most as high, one of them strictly
(``_dominates``); seeking what it penalises (``minus``), both inequalities turn around, which is the same
as the ``plus`` rule on the negated effects, so everything below works on ``plus`` values.

Before sorting, their filters (``filter_by_student_scores``, ``update_pop_pareto``; never ``strict`` here:
their strict filter makes the final step's population, and ours only chooses what to vary next): the RM
threshold min(0, 40th percentile of the RM effects), lowered where needed so that at least ``population``
candidates pass; the judge threshold max(0, 70th percentile of the judge effects of those that pass, the
ones theirs judges); and no candidate whose effects are both within 0.1 of 0 (a no-op). The rest is sorted
into fronts (non-dominated sorting, ``_get_pareto_fronts``); the population is filled front by front, each
front by RM effect, highest first (``_pareto_tiebreak``), ties by feature name.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SEEK_SIGN = {"rewarded": 1.0, "penalised": -1.0}  # their "plus" and "minus"
RM_PERCENTILE, JUDGE_PERCENTILE, NO_OP_TOLERANCE = 40, 70, 0.1  # evo.py's constants


@dataclass(frozen=True)
class Candidate:
    """A tested feature with its RM effect (metric A) and judge effect (metric B; 0 without a judge)."""

    feature: str
    rm_effect: float
    judge_effect: float


def dominates(a: Candidate, b: Candidate) -> bool:
    """``plus``: a's RM effect ≥ b's and its judge effect ≤ b's, one strictly."""
    at_least = a.rm_effect >= b.rm_effect and a.judge_effect <= b.judge_effect
    return at_least and (a.rm_effect > b.rm_effect or a.judge_effect < b.judge_effect)


def pareto_fronts(candidates: Sequence[Candidate]) -> list[list[Candidate]]:
    """The candidates sorted into fronts: the first is dominated by none, each next one only by earlier
    fronts (non-dominated sorting); within a front, the input order."""
    n = len(candidates)
    dominated_by = [0] * n
    dominated: list[list[int]] = [[] for _ in range(n)]
    for i in range(n):
        for j in range(n):
            if i != j and dominates(candidates[i], candidates[j]):
                dominated[i].append(j)
                dominated_by[j] += 1
    fronts, current = [], [i for i in range(n) if dominated_by[i] == 0]
    while current:
        fronts.append([candidates[i] for i in current])
        following = []
        for i in current:
            for j in dominated[i]:
                dominated_by[j] -= 1
                if dominated_by[j] == 0:
                    following.append(j)
        current = sorted(following)
    return fronts


def rm_threshold(effects: Sequence[float], population: int) -> float:
    """min(0, 40th percentile), lowered to the ``population``-th highest effect where fewer would pass."""
    if not effects:
        return 0.0
    threshold = min(0.0, float(np.percentile(effects, RM_PERCENTILE)))
    if len(effects) > population:
        threshold = min(threshold, sorted(effects, reverse=True)[population - 1])
    return threshold


def judge_threshold(effects: Sequence[float]) -> float:
    """max(0, 70th percentile) of the judge effects."""
    return max(0.0, float(np.percentile(effects, JUDGE_PERCENTILE))) if effects else math.inf


def passing(candidates: Sequence[Candidate], population: int) -> list[Candidate]:
    """The candidates that pass the RM and judge thresholds and are not no-ops (defined effects only)."""
    defined = [c for c in candidates if math.isfinite(c.rm_effect) and math.isfinite(c.judge_effect)]
    low_rm = rm_threshold([c.rm_effect for c in defined], population)
    judged = [c for c in defined if c.rm_effect >= low_rm]  # theirs: only these are judged
    high_judge = judge_threshold([c.judge_effect for c in judged])
    return [
        c
        for c in judged
        if c.judge_effect <= high_judge
        and not (abs(c.rm_effect) < NO_OP_TOLERANCE and abs(c.judge_effect) < NO_OP_TOLERANCE)
    ]


def select(candidates: Sequence[Candidate], population: int, seek: str = "rewarded") -> list[Candidate]:
    """Up to ``population`` candidates to mutate: the filters, then the fronts in order, each front by RM
    effect (highest first when seeking what the RM rewards, lowest first when what it penalises)."""
    sign = SEEK_SIGN[seek]
    signed = {
        Candidate(c.feature, sign * c.rm_effect, sign * c.judge_effect): c
        for c in sorted(candidates, key=lambda c: c.feature)
    }
    chosen: list[Candidate] = []
    for front in pareto_fronts(passing(list(signed), population)):
        if len(chosen) >= population:
            break
        best_first = sorted(front, key=lambda c: -c.rm_effect)  # stable: ties keep the name order
        chosen += best_first[: population - len(chosen)]
    return [signed[c] for c in chosen]
