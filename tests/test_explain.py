"""Categorisation (paper §2.2) on hand-computed cases, ties included."""

import logging

import polars as pl
import pytest

from rmexplain.explanations.categorise import (
    agreed_preference,
    categorise,
    classify,
    disagreements,
    explained_comparisons,
    foreign_orientation_counts,
    orient,
    unscored_sides,
)
from rmexplain.ids import text_id
from rmexplain.perturb.base import Draft, drafts_to_frame
from rmexplain.schemas import EXPLANATIONS

LOG = logging.getLogger("test")


@pytest.mark.parametrize(
    ("side", "r_pert", "kind", "subkind", "delta"),
    [
        # y+ = 2.0, y- = 1.0
        ("plus", 0.5, "counterfactual", None, 1.5),  # below y-: flips
        ("plus", 1.0, "semifactual", "tie", 1.0),  # tie with y-: no flip (the paper's YS+ is ≥), a tie
        ("plus", 1.5, "semifactual", "between", 0.5),
        ("plus", 2.0, "semifactual", "between", 0.0),  # tie with its own original: not beyond
        ("plus", 2.5, "semifactual", "beyond", -0.5),  # better than y+ itself
        ("minus", 2.5, "counterfactual", None, 1.5),  # above y+: flips
        ("minus", 2.0, "semifactual", "tie", 1.0),  # tie with y+: no flip (the paper's YS− is ≤), a tie
        ("minus", 1.0, "semifactual", "between", 0.0),  # unchanged: between, not beyond
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


def _categorise_agreed(
    comparisons: pl.DataFrame, originals: pl.DataFrame, perturbations: pl.DataFrame, rewards: pl.DataFrame
) -> pl.DataFrame:
    """RM ``rm``'s explanations on dataset ``d``, method ``rules``, oriented by its own originals (agreed)."""
    return categorise(
        comparisons, originals, perturbations, rewards, "d", "rm", "rules", LOG,
        orienting=[originals], orientation="agreed",
    )  # fmt: skip


def test_categorise_end_to_end_on_hand_rewards(caplog):
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
    with caplog.at_level(logging.INFO, logger="test"):
        out = _categorise_agreed(comparisons, originals, perturbations, rewards).sort(
            "comparison_id", "target"
        )
    assert caplog.messages == [  # what was skipped, counted, and what each side became
        "1 comparisons skipped: the RM scores chosen and rejected exactly equal",
        "1 perturbations skipped: their comparison is tied, unoriented or oriented the other way for rm",
        "rm on d/rules: 4 perturbations categorised [('minus', 'counterfactual', 1), "
        "('minus', 'semifactual', 1), ('plus', 'counterfactual', 1), ('plus', 'semifactual', 1)]",
    ]
    assert out.height == 4
    assert out.select("comparison_id", "side", "kind", "sf_subkind").rows() == [
        ("c1", "plus", "counterfactual", None),
        ("c1", "minus", "semifactual", "tie"),
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
    first = perturbations["perturbation_id"][0]
    message = rf"^1 perturbations have no reward from rm \(first: {first}\); the rewards table is stale"
    with pytest.raises(ValueError, match=message + ": rerun score_perturbations$"):
        _categorise_agreed(comparisons, originals, perturbations, rewards)


def test_explained_comparisons_shared_agreement():
    a = pl.DataFrame(
        {
            "comparison_id": ["c1", "c2", "c3"],
            "plus_target": ["chosen", "chosen", None],
            "agrees_with_human": [True, True, None],
        }
    )
    b = pl.DataFrame(
        {
            "comparison_id": ["c1", "c2", "c3"],
            "plus_target": ["chosen", "rejected", "chosen"],
            "agrees_with_human": [True, False, True],
        }
    )
    assert explained_comparisons(a, [a])["comparison_id"].to_list() == ["c1", "c2"]
    assert explained_comparisons(a, [a, b])["comparison_id"].to_list() == ["c1"]
    assert explained_comparisons(a, [b])["comparison_id"].to_list() == ["c1"]  # a foreign to b's set
    assert explained_comparisons(a, [b], "own")["comparison_id"].to_list() == ["c1", "c2"]


def _foreign_case():
    """Two shared RMs agree on c1 (y+ = chosen), c2 (y+ = the human-rejected response) and c3 (chosen); the
    foreign RM prefers c1's chosen (with them), c2's chosen (against them) and ties c3. The shared set holds a
    perturbation of c1's y+, and of c2's agreed y+ (rejected, made worse) and y− (chosen, made better)."""
    comparisons = _comparisons()
    shared = [
        orient(comparisons, "a", [2.0, 0.0, 2.0], [1.0, 1.0, 1.0]),
        orient(comparisons, "b", [5.0, 1.0, 5.0], [4.0, 2.0, 4.0]),
    ]
    foreign = orient(comparisons, "f", [2.0, 3.0, 1.0], [1.0, 1.0, 1.0])
    drafts = [
        Draft("c1", "chosen", "worse", "clarity", 0, "c1 chosen worse"),
        Draft("c2", "rejected", "worse", "clarity", 0, "c2 rejected worse"),
        Draft("c2", "chosen", "better", "clarity", 0, "c2 chosen better"),
    ]
    perturbations = drafts_to_frame(drafts, "two_step", "shared")
    reward_of = {"c1 chosen worse": 0.5, "c2 rejected worse": 0.0, "c2 chosen better": 4.0}
    prompts = dict(zip(comparisons["comparison_id"], comparisons["prompt"], strict=True))
    rewards = pl.DataFrame(
        {
            "text_id": [text_id(prompts[d.comparison_id], d.text) for d in drafts],
            "rm": ["f"] * 3,
            "reward": [reward_of[d.text] for d in drafts],
            "truncated": [False] * 3,
            "max_length": pl.Series([None] * 3, dtype=pl.Int64),
        }
    )
    return comparisons, shared, foreign, perturbations, rewards


def test_a_foreign_rm_is_explained_only_where_it_shares_the_agreed_preference(caplog):
    comparisons, shared, foreign, perturbations, rewards = _foreign_case()
    with caplog.at_level(logging.WARNING, logger="test"):
        agreed = categorise(
            comparisons, foreign, perturbations, rewards, "d", "f", "two_step", LOG,
            orienting=shared, orientation="agreed",
        )  # fmt: skip
    # c1: f's y+ is the agreed chosen (2.0 over 1.0); its perturbation to 0.5 falls below y− (1.0): a CF,
    # delta 2.0 − 0.5. c2, which f orients against the agreed y+, is skipped and counted; c3 is f's tie.
    assert agreed.select("comparison_id", "side", "kind", "reward_delta").rows() == [
        ("c1", "plus", "counterfactual", 1.5)
    ]
    assert "1 comparisons where f prefers the response the agreed preference rejects: skipped" in caplog.text
    assert "1 comparisons skipped: the RM scores chosen and rejected exactly equal" in caplog.text
    # ``own``: c2 is oriented by f's y+ (chosen, 3.0 over 1.0). The edit that made the agreed y+ worse made
    # f's y− worse (1.0 -> 0.0: beyond, delta 0.0 − 1.0), the edit that made the agreed y− better made f's y+
    # better (3.0 -> 4.0: beyond, delta 3.0 − 4.0): they move with f's preference, never against it.
    own = categorise(
        comparisons, foreign, perturbations, rewards, "d", "f", "two_step", LOG,
        orienting=shared, orientation="own",
    ).sort("comparison_id", "target")  # fmt: skip
    assert own.select("comparison_id", "target", "side", "kind", "sf_subkind", "reward_delta").rows() == [
        ("c1", "chosen", "plus", "counterfactual", None, 1.5),
        ("c2", "chosen", "plus", "semifactual", "beyond", -1.0),
        ("c2", "rejected", "minus", "semifactual", "beyond", -1.0),
    ]
    assert foreign_orientation_counts(foreign, shared, "agreed") == {
        "shared_set": 3, "ties": 1, "against_agreed": 1, "explained": 1
    }  # fmt: skip
    assert foreign_orientation_counts(foreign, shared, "own")["explained"] == 2


def test_a_shared_rm_orients_a_human_rejected_y_plus_as_plus():
    comparisons, shared, _, perturbations, _ = _foreign_case()
    prompts = dict(zip(comparisons["comparison_id"], comparisons["prompt"], strict=True))
    rewards = pl.DataFrame(
        {
            "text_id": [
                text_id(prompts[c], t) for c, t in perturbations.select("comparison_id", "text").rows()
            ],
            "rm": ["a"] * 3,
            "reward": [0.5, 0.5, 0.5],
        }
    )
    out = categorise(
        comparisons, shared[0], perturbations, rewards, "d", "a", "two_step", LOG,
        orienting=shared, orientation="agreed",
    ).sort("comparison_id", "target")  # fmt: skip
    # c2: a prefers the human-rejected response (1.0 over 0.0): its perturbation is of y+, the chosen one's of
    # y−; 0.5 lies between them either way.
    assert out.select("comparison_id", "target", "side", "kind", "agrees_with_human").rows() == [
        ("c1", "chosen", "plus", "counterfactual", True),
        ("c2", "chosen", "minus", "semifactual", False),
        ("c2", "rejected", "plus", "semifactual", False),
    ]


def test_disagreements_refusals_and_unscored_sides_by_hand():
    """The RM orients c1 as the orienting RM does and c2 the other way, and ties c3; the refusals name
    what is missing; a side whose every perturbation went unscored is listed by comparison, then side."""
    comparisons = _comparisons()
    own = orient(comparisons, "rm", [2.0, 0.0, 1.0], [1.0, 3.0, 1.0])  # c1 chosen, c2 rejected, c3 tied
    other = orient(comparisons, "o", [2.0, 5.0, 1.0], [1.0, 3.0, 0.0])  # all three chosen
    assert disagreements(own, [other])["comparison_id"].to_list() == ["c2"]
    assert foreign_orientation_counts(own, [other], "agreed") == {
        "shared_set": 3, "ties": 1, "against_agreed": 1, "explained": 1,
    }  # fmt: skip
    with pytest.raises(
        ValueError, match=r"^no orienting RM: a perturbation set is oriented by at least one RM's"
    ):
        agreed_preference([])
    with pytest.raises(ValueError, match=r"^orientation must be one of \('agreed', 'own'\), got 'nope'$"):
        explained_comparisons(own, [own], "nope")
    drafts = [
        Draft("c1", "chosen", "worse", "clarity", 0, "c1 cut"),  # c1's y+: every perturbation cut
        Draft("c1", "rejected", "better", "clarity", 0, "c1 scored"),
        Draft("c2", "chosen", "better", "clarity", 0, "c2 cut a"),  # c2's y- (the RM prefers rejected)
        Draft("c2", "chosen", "better", "coherence", 0, "c2 cut b"),
        Draft("c2", "rejected", "worse", "clarity", 0, "c2 scored"),
    ]
    prompt_of = dict(zip(comparisons["comparison_id"], comparisons["prompt"], strict=True))
    rewards = pl.DataFrame(
        {
            "text_id": [text_id(prompt_of[d.comparison_id], d.text) for d in drafts],
            "reward": [None if "cut" in d.text else 1.0 for d in drafts],
        },
        schema={"text_id": pl.String, "reward": pl.Float64},
    )
    oriented = explained_comparisons(own, [own])
    sides = unscored_sides(comparisons, oriented, drafts_to_frame(drafts, "rules", "rm"), rewards)
    assert sides.rows() == [("c1", "plus"), ("c2", "minus")]


def test_originals_cut_for_length_are_counted_apart_from_ties_and_each_treatment_is_said(caplog):
    """c3's rejected original is over the RM's token limit: one comparison skipped for length, no tie.
    The RM prefers c2's rejected response where the orienting RM prefers the chosen one: what became of it is
    said in the treatment's words, or in the caller's."""
    comparisons = _comparisons()
    own = orient(comparisons, "rm", [2.0, 0.0, 1.0], [1.0, 3.0, None])
    other = orient(comparisons, "o", [2.0, 5.0, 1.0], [1.0, 3.0, 0.0])
    drafts = [Draft("c1", "chosen", "worse", "clarity", 0, "c1 edited")]
    rewards = pl.DataFrame({"text_id": [text_id("p1", "c1 edited")], "reward": [0.5]})
    treatments = {
        ("own", None): "kept, oriented by the RM's own preference (orientation own)",
        ("agreed", None): "skipped (orientation agreed: the perturbations there move with the RM's "
        "preference)",
        ("agreed", "kept as probe items"): "kept as probe items",
    }
    for (orientation, against_agreed), said in treatments.items():
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="test"):
            out = categorise(
                comparisons, own, drafts_to_frame(drafts, "rules", "rm"), rewards, "d", "rm", "rules", LOG,
                orienting=[other], orientation=orientation, against_agreed=against_agreed,
            )  # fmt: skip
        assert caplog.messages == [
            "1 comparisons skipped: an original is over the RM's token limit (skipped)",
            f"1 comparisons where rm prefers the response the agreed preference rejects: {said}",
            "rm on d/rules: 1 perturbations categorised [('plus', 'counterfactual', 1)]",
        ]
        assert out.select("attribute", "variant", "kind", "reward_delta").rows() == [
            ("clarity", 0, "counterfactual", 1.5)
        ]


def test_sides_left_wholly_unscored_are_listed_by_comparison_then_side():
    """Twelve comparisons whose both sides went unscored: the order is the sort's, not the grouping's."""
    ids = [f"c{i:02d}" for i in range(12)]
    comparisons = pl.DataFrame(
        {
            "comparison_id": ids,
            "dataset": ["d"] * 12,
            "seed": [0] * 12,
            "source_index": ids,
            "prompt": [f"p{c}" for c in ids],
            "chosen": ["good"] * 12,
            "rejected": ["bad"] * 12,
        }
    )
    oriented = orient(comparisons, "rm", [2.0] * 12, [1.0] * 12)
    drafts = [Draft(c, t, "worse", "clarity", 0, f"{c} {t} cut") for c in ids for t in ("chosen", "rejected")]
    rewards = pl.DataFrame(
        {"text_id": [text_id(f"p{d.comparison_id}", d.text) for d in drafts], "reward": [None] * len(drafts)},
        schema={"text_id": pl.String, "reward": pl.Float64},
    )
    sides = unscored_sides(comparisons, oriented, drafts_to_frame(drafts, "rules", "rm"), rewards)
    assert sides.rows() == [(c, side) for c in ids for side in ("minus", "plus")]


def test_nothing_left_to_categorise_gives_the_contracts_empty_table(caplog):
    """An RM that ties every comparison, and a perturbation table with no row: no explanation, every column
    of the contract, and the log says so."""
    comparisons = _comparisons()
    tied = orient(comparisons, "rm", [1.0, 1.0, 1.0], [1.0, 1.0, 1.0])
    drafts = drafts_to_frame([Draft("c1", "chosen", "worse", "clarity", 0, "x")], "rules", "rm")
    rewards = pl.DataFrame({"text_id": [text_id("p1", "x")], "reward": [0.5]})
    oriented = orient(comparisons, "rm", [2.0, 0.0, 1.0], [1.0, 3.0, 1.0])
    for originals, perturbations in ((tied, drafts), (oriented, drafts_to_frame([], "rules", "rm"))):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="test"):
            out = _categorise_agreed(comparisons, originals, perturbations, rewards)
        assert out.height == 0
        assert out.schema == pl.Schema({name: column.dtype for name, column in EXPLANATIONS.items()})
        assert caplog.messages[-1] == "rm on d/rules: 0 perturbations categorised []"
