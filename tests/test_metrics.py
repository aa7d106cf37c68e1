"""Coverage, distances and diversity against hand-computed cases, including empty sets."""

import math

import numpy as np
import polars as pl
import pytest

from rmexplain.explanations.metrics import (
    coverage,
    diversity,
    evaluate,
    mean_pairwise_distance,
    semantic_distances,
    syntactic_distance,
    words,
)


def test_words_split_punctuation():
    assert words("Don't panic, it's fine.") == ["Don't", "panic", ",", "it's", "fine", "."]


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("the cat sat", "the cat sat", 0.0),
        ("the cat sat", "the dog sat", 1 / 3),  # one substitution over 3 words
        ("the cat sat", "the cat sat down", 1 / 4),  # one insertion over the longer (4)
        ("a b", "c d e f", 1.0),  # 2 substitutions + 2 insertions over 4
        ("", "", 0.0),
        ("", "hello", 1.0),
    ],
)
def test_syntactic_distance(a, b, expected):
    assert syntactic_distance(a, b) == pytest.approx(expected)


def test_semantic_distance_and_diversity():
    e = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], dtype=np.float32)
    assert semantic_distances(e[:1].repeat(3, 0), e).tolist() == pytest.approx([0.0, 1.0, 2.0])
    # pairs: (0,1)=1, (0,2)=2, (1,2)=1 -> mean 4/3
    assert mean_pairwise_distance(e) == pytest.approx(4 / 3)
    assert math.isnan(mean_pairwise_distance(e[:1]))
    assert math.isnan(mean_pairwise_distance(e[:0]))


def _explanations(rows):
    return pl.DataFrame(rows, schema=["comparison_id", "side", "kind"], orient="row")


def test_coverage_hand_case():
    rows = [
        ("c1", "plus", "counterfactual"),
        ("c1", "minus", "counterfactual"),
        ("c1", "minus", "semifactual"),
        ("c2", "plus", "semifactual"),
        ("c3", "minus", "counterfactual"),
        ("other", "plus", "counterfactual"),  # not in the denominator: ignored
    ]
    out = coverage(_explanations(rows), ["c1", "c2", "c3", "c4"])
    assert out["cf_coverage_plus"] == (0.25, 4)
    assert out["cf_coverage_minus"] == (0.5, 4)
    assert out["cf_coverage_both"] == (0.25, 4)
    assert out["sf_coverage_plus"] == (0.25, 4)
    assert out["sf_coverage_minus"] == (0.25, 4)
    assert out["sf_coverage_both"] == (0.0, 4)


def test_coverage_empty():
    out = coverage(_explanations([]), [])
    assert all(math.isnan(v) and n == 0 for v, n in out.values())
    out = coverage(_explanations([]), ["c1"])
    assert all(v == 0.0 and n == 1 for v, n in out.values())


def test_diversity_sets_and_singletons():
    frame = pl.DataFrame(
        {
            "comparison_id": ["c1", "c1", "c1", "c2"],
            "side": ["plus", "plus", "plus", "plus"],
            "kind": ["counterfactual", "counterfactual", "semifactual", "counterfactual"],
            "embedding": [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]],
        }
    )
    out = diversity(frame)
    assert out["semantic_diversity_cf"] == (pytest.approx(1.0), 1)  # only c1's CF pair counts
    assert math.isnan(out["semantic_diversity_sf"][0]) and out["semantic_diversity_sf"][1] == 0
    assert out["semantic_diversity"] == (pytest.approx(1.0), 1)


def test_evaluate_per_seed_and_subsets():
    explanations = pl.DataFrame(
        {
            "comparison_id": ["c1", "c1", "c2"],
            "perturbation_id": ["p1", "p2", "p3"],
            "side": ["plus", "minus", "plus"],
            "kind": ["counterfactual", "semifactual", "semifactual"],
        }
    )
    distances = pl.DataFrame(
        {
            "perturbation_id": ["p1", "p2", "p3"],
            "syntactic_distance": [0.2, 0.4, 0.6],
            "semantic_distance": [0.1, 0.1, 0.4],
            "embedding": [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]],
        }
    )
    denominator = pl.DataFrame({"comparison_id": ["c1", "c2"], "agrees_with_human": [True, False]})
    seeds = pl.DataFrame({"comparison_id": ["c1", "c2"], "seed": [0, 0]})
    out = evaluate(explanations, distances, denominator, seeds, "d", "rm", "m")
    value = {(r["subset"], r["metric"]): r["value"] for r in out.iter_rows(named=True)}
    assert value[("all", "cf_coverage_plus")] == 0.5
    assert value[("all", "syntactic_distance")] == pytest.approx(0.4)
    assert value[("all", "syntactic_distance_cf")] == pytest.approx(0.2)
    assert value[("correct", "cf_coverage_plus")] == 1.0
    assert value[("wrong", "cf_coverage_plus")] == 0.0
    assert value[("wrong", "sf_coverage_plus")] == 1.0
    assert math.isnan(value[("all", "semantic_diversity")])
