"""Evaluation metrics of contrastive explanations (paper §3, Tables 1, 2 and 5).

- CF (SF) coverage on a side: the fraction of explained comparisons with at least one counterfactual
  (semifactual) among the perturbations of y+ (side ``plus``, the paper's "chosen") or of y− (``minus``,
  "rejected"); ``both``: at least one on each side. The denominator is every comparison the RM
  explains (non-tied, and in shared orientation agreed on by all shared RMs), so a comparison whose
  perturbations all failed counts as not covered. A side whose every perturbation the RM could not score
  (over its token limit under ``overlong: skip``) is left out of that side's denominator and of ``both``'s,
  as it is left out of the flip rates: the explainer made perturbations there, the RM read none of them.
- Syntactic distance: word-level Levenshtein distance between a perturbation and its original, divided by
  the longer length in words (rapidfuzz on word lists).
- Semantic distance: 1 − cosine similarity of the Sentence-BERT embeddings.
- Semantic diversity: mean pairwise semantic distance within each set of CFs (or SFs) of one response,
  averaged over the sets with at least two members (NaN when there is no such set).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import polars as pl
from rapidfuzz.distance import Levenshtein

from rmexplain.schemas import METRICS, conform

WORD = re.compile(r"\w+(?:'\w+)?|[^\w\s]")
WORD_ONLY = re.compile(r"\w+(?:'\w+)?")
SIDES = ("plus", "minus")
KINDS = {"cf": "counterfactual", "sf": "semifactual"}


def words(text: str, punctuation_as_words: bool = True) -> list[str]:
    """Word tokens: ``\\w+`` runs (with one inner apostrophe: "don't"); every other non-space character is
    a token of its own, unless ``punctuation_as_words`` is false, when punctuation is dropped."""
    return (WORD if punctuation_as_words else WORD_ONLY).findall(text)


def syntactic_distance(original: str, perturbed: str, punctuation_as_words: bool = True) -> float:
    """Word-level Levenshtein distance normalised by the longer length (0 = same words, 1 = all changed).

    The paper (§3) says only "word-level Levenshtein edit distance"; by default punctuation marks count as
    words ("Yes." → "Yes!" is one edit in two words), ``punctuation_as_words=False`` counts words alone
    (docs/distances.md measures the difference on the bundled data)."""
    a, b = words(original, punctuation_as_words), words(perturbed, punctuation_as_words)
    longest = max(len(a), len(b))
    return Levenshtein.distance(a, b) / longest if longest else 0.0


def semantic_distances(original: np.ndarray, perturbed: np.ndarray) -> np.ndarray:
    """Row-wise 1 − cosine similarity of two matrices of unit-normalised embeddings."""
    return 1.0 - np.sum(original * perturbed, axis=1)


def mean_pairwise_distance(embeddings: np.ndarray) -> float:
    """Mean 1 − cosine over all unordered pairs of rows (NaN for fewer than two rows)."""
    n = len(embeddings)
    if n < 2:
        return float("nan")
    similarity = embeddings @ embeddings.T
    upper = np.triu_indices(n, k=1)
    return float(np.mean(1.0 - similarity[upper]))


def coverage(
    explanations: pl.DataFrame,
    denominator: Iterable[str],
    unscored: Iterable[tuple[str, str]] = (),
) -> dict[str, tuple[float, int]]:
    """CF/SF coverage on each side and on both sides: {metric: (value, n comparisons)}. ``unscored``:
    (comparison_id, side) whose every perturbation is unscored, left out of that side's and both's
    denominators."""
    ids = set(denominator)
    cut = set(unscored)
    on_side = {side: ids - {c for c, s in cut if s == side} for side in SIDES}
    on_both = on_side["plus"] & on_side["minus"]
    found: dict[tuple[str, str], set[str]] = {
        (side, kind): set(
            explanations.filter((pl.col("side") == side) & (pl.col("kind") == KINDS[kind]))["comparison_id"]
        )
        & on_side[side]
        for side in SIDES
        for kind in KINDS
    }
    out: dict[str, tuple[float, int]] = {}
    for kind in KINDS:
        for side in SIDES:
            out[f"{kind}_coverage_{side}"] = _share(found[(side, kind)], on_side[side])
        out[f"{kind}_coverage_both"] = _share(found[("plus", kind)] & found[("minus", kind)], on_both)
    return out


def _share(found: set[str], denominator: set[str]) -> tuple[float, int]:
    n = len(denominator)
    return (len(found & denominator) / n if n else float("nan"), n)


def _mean(values: pl.Series) -> tuple[float, int]:
    values = values.drop_nulls().drop_nans() if values.dtype.is_float() else values.drop_nulls()
    return (float(values.mean()) if values.len() else float("nan"), values.len())


def distance_metrics(explained: pl.DataFrame) -> dict[str, tuple[float, int]]:
    """Mean syntactic/semantic distance over all, CF and SF perturbations."""
    out = {}
    for label, frame in (
        ("", explained),
        ("_cf", explained.filter(pl.col("kind") == KINDS["cf"])),
        ("_sf", explained.filter(pl.col("kind") == KINDS["sf"])),
    ):
        out[f"syntactic_distance{label}"] = _mean(frame["syntactic_distance"])
        out[f"semantic_distance{label}"] = _mean(frame["semantic_distance"])
    return out


def diversity(explained: pl.DataFrame) -> dict[str, tuple[float, int]]:
    """Semantic diversity over CF sets, SF sets, and both, of each (comparison, side)."""
    per_kind: dict[str, list[float]] = {"cf": [], "sf": []}
    for (_, _, kind), group in explained.group_by("comparison_id", "side", "kind"):
        value = mean_pairwise_distance(np.asarray(group["embedding"].to_list(), dtype=np.float32))
        if not np.isnan(value):
            per_kind["cf" if kind == KINDS["cf"] else "sf"].append(value)
    both = per_kind["cf"] + per_kind["sf"]
    return {
        "semantic_diversity": (float(np.mean(both)) if both else float("nan"), len(both)),
        "semantic_diversity_cf": (
            float(np.mean(per_kind["cf"])) if per_kind["cf"] else float("nan"),
            len(per_kind["cf"]),
        ),
        "semantic_diversity_sf": (
            float(np.mean(per_kind["sf"])) if per_kind["sf"] else float("nan"),
            len(per_kind["sf"]),
        ),
    }


def evaluate(
    explanations: pl.DataFrame,
    distances: pl.DataFrame,
    denominator: pl.DataFrame,
    seeds: pl.DataFrame,
    dataset: str,
    rm: str,
    method: str,
    unscored: Iterable[tuple[str, str]] = (),
) -> pl.DataFrame:
    """METRICS rows per seed and subset (all, correct, wrong) for one (dataset, RM, method).

    ``denominator`` has ``comparison_id, agrees_with_human`` of the explained comparisons and ``seeds``
    maps ``comparison_id`` to ``seed``; ``unscored`` is passed to ``coverage``.
    """
    unscored = list(unscored)
    explained = explanations.join(distances, on="perturbation_id", how="left")
    units = denominator.join(seeds.select("comparison_id", "seed"), on="comparison_id", how="inner")
    rows = []
    for seed in sorted(units["seed"].unique().to_list()):
        for subset, condition in (
            ("all", pl.lit(True)),
            ("correct", pl.col("agrees_with_human")),
            ("wrong", ~pl.col("agrees_with_human")),
        ):
            ids = units.filter((pl.col("seed") == seed) & condition)["comparison_id"]
            subset_rows = explained.filter(pl.col("comparison_id").is_in(ids.to_list()))
            values = (
                coverage(subset_rows, ids.to_list(), unscored)
                | distance_metrics(subset_rows)
                | diversity(subset_rows)
            )
            rows.extend(
                {
                    "dataset": dataset,
                    "rm": rm,
                    "method": method,
                    "seed": seed,
                    "subset": subset,
                    "metric": metric,
                    "value": value,
                    "n": n,
                }
                for metric, (value, n) in values.items()
            )
    frame = pl.DataFrame(rows, schema={k: c.dtype for k, c in METRICS.items()})
    return conform(frame, METRICS, f"metrics[{dataset}/{method}/{rm}]")
