"""Categorisation (paper §2.2) on hand-computed cases, ties included."""

import logging

import polars as pl
import pytest

from rmexplain.explanations.categorise import categorise, classify, orient
from rmexplain.ids import text_id
from rmexplain.perturb.base import Draft, drafts_to_frame

LOG = logging.getLogger("test")


@pytest.mark.parametrize(
    ("side", "r_pert", "kind", "subkind", "delta"),
    [
        # y+ = 2.0, y- = 1.0
        ("plus", 0.5, "counterfactual", None, 1.5),  # below y-: flips
        ("plus", 1.0, "semifactual", "between", 1.0),  # tie with y-: no flip
        ("plus", 1.5, "semifactual", "between", 0.5),
        ("plus", 2.0, "semifactual", "between", 0.0),  # tie with its own original: not beyond
        ("plus", 2.5, "semifactual", "beyond", -0.5),  # better than y+ itself
        ("minus", 2.5, "counterfactual", None, 1.5),  # above y+: flips
        ("minus", 2.0, "semifactual", "between", 1.0),  # tie with y+: no flip
        ("minus", 1.0, "semifactual", "between", 0.0),
        ("minus", 0.5, "semifactual", "beyond", -0.5),  # worse than y- itself
    ],
)
def test_classify_hand_cases(side, r_pert, kind, subkind, delta):
    assert classify(side, 2.0, 1.0, r_pert) == (kind, subkind, pytest.approx(delta))


def test_classify_rejects_unknown_side():
    with pytest.raises(ValueError, match="side"):
        classify("middle", 1.0, 0.0, 0.5)


def _comparisons():
    return pl.DataFrame(
        {
            "comparison_id": ["c1", "c2", "c3"],
            "dataset": ["d"] * 3,
            "seed": [0, 0, 1],
            "source_index": ["1", "2", "3"],
            "prompt": ["p1", "p2", "p3"],
            "chosen": ["good 1", "good 2", "same"],
            "rejected": ["bad 1", "bad 2", "other"],
        }
    )


def test_orient_marks_ties_and_agreement():
    frame = orient(_comparisons(), "rm", [2.0, 0.0, 1.0], [1.0, 3.0, 1.0])
    assert frame["plus_target"].to_list() == ["chosen", "rejected", None]
    assert frame["agrees_with_human"].to_list() == [True, False, None]


def test_categorise_end_to_end_on_hand_rewards():
    comparisons = _comparisons()
    originals = orient(comparisons, "rm", [2.0, 0.0, 1.0], [1.0, 3.0, 1.0])
    drafts = [
        Draft("c1", "chosen", "worse", "clarity", 0, "c1 chosen edited"),  # y+ of c1 -> 0.5: CF
        Draft("c1", "rejected", "better", "clarity", 0, "c1 rejected edited"),  # y- of c1 -> 2.0: SF tie
        Draft(
            "c2", "rejected", "worse", "harmlessness", 0, "c2 rejected edited"
        ),  # y+ of c2 (3.0) -> 3.5: beyond
        Draft("c2", "chosen", "better", "harmlessness", 0, "c2 chosen edited"),  # y- of c2 (0.0) -> 3.1: CF
        Draft("c3", "chosen", "worse", "clarity", 0, "c3 edited"),  # tied comparison: skipped
    ]
    perturbations = drafts_to_frame(drafts, "rules", "rm")
    prompt_of = dict(zip(comparisons["comparison_id"], comparisons["prompt"], strict=True))
    reward_of = {
        "c1 chosen edited": 0.5,
        "c1 rejected edited": 2.0,
        "c2 rejected edited": 3.5,
        "c2 chosen edited": 3.1,
        "c3 edited": 0.0,
    }
    rewards = pl.DataFrame(
        {
            "text_id": [text_id(prompt_of[d.comparison_id], d.text) for d in drafts],
            "rm": ["rm"] * len(drafts),
            "reward": [reward_of[d.text] for d in drafts],
        }
    )
    out = categorise(comparisons, originals, perturbations, rewards, "d", "rm", "rules", LOG).sort(
        "comparison_id", "target"
    )
    assert out.height == 4
    assert out.select("comparison_id", "side", "kind", "sf_subkind").rows() == [
        ("c1", "plus", "counterfactual", None),
        ("c1", "minus", "semifactual", "between"),
        ("c2", "minus", "counterfactual", None),
        ("c2", "plus", "semifactual", "beyond"),
    ]
    assert out["reward_delta"].to_list() == pytest.approx([1.5, 1.0, 3.1, -0.5])
    assert out["agrees_with_human"].to_list() == [True, True, False, False]


def test_categorise_fails_on_stale_rewards():
    comparisons = _comparisons()
    originals = orient(comparisons, "rm", [2.0, 0.0, 1.0], [1.0, 3.0, 1.0])
    perturbations = drafts_to_frame([Draft("c1", "chosen", "worse", "clarity", 0, "x")], "rules", "rm")
    rewards = pl.DataFrame({"text_id": ["nope"], "rm": ["rm"], "reward": [0.0]})
    with pytest.raises(ValueError, match="rerun score_perturbations"):
        categorise(comparisons, originals, perturbations, rewards, "d", "rm", "rules", LOG)
