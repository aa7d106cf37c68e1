"""Coverage, distances and diversity against hand-computed cases, including empty sets."""

import logging
import math

import numpy as np
import polars as pl
import pytest

from rmexplain.explanations.categorise import categorise, orient
from rmexplain.explanations.metrics import (
    coverage,
    diversity,
    evaluate,
    mean_pairwise_distance,
    semantic_distances,
    syntactic_distance,
    words,
)
from rmexplain.explanations.stages import evaluate_explanations
from rmexplain.ids import text_id
from rmexplain.perturb.base import Draft, drafts_to_frame


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


def test_a_side_the_rm_could_not_score_leaves_coverage_as_it_leaves_the_flip_rates(caplog):
    """overlong: skip. c2's only y+ perturbation is over the RM's token limit (reward null): no flip rate
    counts c2's y+ side, and neither does y+ coverage (nor both's), counted in the log and in ``n``; its y−
    side stays in y− coverage."""
    comparisons = pl.DataFrame(
        {
            "comparison_id": ["c1", "c2"],
            "dataset": ["d"] * 2,
            "seed": [0, 0],
            "source_index": ["1", "2"],
            "prompt": ["p1", "p2"],
            "chosen": ["good 1", "good 2"],
            "rejected": ["bad 1", "bad 2"],
        }
    )
    originals = orient(comparisons, "r", [2.0, 2.0], [1.0, 1.0])
    drafts = [
        Draft("c1", "chosen", "worse", "clarity", 0, "c1 chosen worse"),  # 0.5 < 1.0: CF
        Draft("c1", "rejected", "better", "clarity", 0, "c1 rejected better"),  # 1.5 < 2.0: SF
        Draft("c2", "chosen", "worse", "clarity", 0, "c2 chosen worse " * 50),  # cut: unscored
        Draft("c2", "rejected", "better", "clarity", 0, "c2 rejected better"),  # 3.0 > 2.0: CF
    ]
    perturbations = drafts_to_frame(drafts, "m", "r")
    prompts = dict(comparisons.select("comparison_id", "prompt").iter_rows())
    rewards = pl.DataFrame(
        {
            "text_id": [text_id(prompts[d.comparison_id], d.text) for d in drafts],
            "rm": ["r"] * 4,
            "reward": [0.5, 1.5, None, 3.0],
            "truncated": [False, False, True, False],
            "max_length": [40] * 4,
        }
    )
    log = logging.getLogger("test")
    explanations = categorise(
        comparisons,
        originals,
        perturbations,
        rewards,
        "d",
        "r",
        "m",
        log,
        orienting=[originals],
        orientation="agreed",
    )
    assert explanations.select("comparison_id", "side", "kind").rows() == [
        ("c1", "plus", "counterfactual"),
        ("c1", "minus", "semifactual"),
        ("c2", "minus", "counterfactual"),
    ]
    distances = pl.DataFrame(
        {
            "perturbation_id": perturbations["perturbation_id"],
            "syntactic_distance": [0.5] * 4,
            "semantic_distance": [0.1] * 4,
            "embedding": [[1.0, 0.0]] * 4,
        }
    )
    with caplog.at_level(logging.WARNING, logger="test"):
        metrics = evaluate_explanations(
            explanations, distances, originals, [originals], comparisons, "d", "r", "m", "agreed",
            perturbations, rewards, log,
        )  # fmt: skip
    got = {
        r["metric"]: (r["value"], r["n"])
        for r in metrics.filter(pl.col("subset") == "all").iter_rows(named=True)
    }
    assert got["cf_coverage_plus"] == (1.0, 1)  # c1 only: c2's y+ side was never read by the RM
    assert got["cf_coverage_minus"] == (0.5, 2)  # c1 (an SF only) and c2 (a CF)
    assert got["sf_coverage_minus"] == (0.5, 2)
    assert got["cf_coverage_both"] == (0.0, 1)  # c1: a CF of y+ but none of y−
    assert "1 comparisons with every perturbation of their y+ side over the RM's token limit" in caplog.text
