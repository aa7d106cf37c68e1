"""The carrier re-scored (rmexplain.findings.attribution): each class's change undone at the same length, the
share a class carries by hand, the re-scoring deciding the placement, a class measured on the edits of the
findings it carries, and the carrier edits' texts a scoring job reads."""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest

from rmexplain.analysis.bootstrap import BootstrapSettings
from rmexplain.discovery.base import SkipEdit
from rmexplain.findings.attribution import (
    RESCORED,
    Candidate,
    Check,
    carrier_checks,
    carrier_edits,
    class_effect,
    rescored_classes,
    signed_coefficient,
    undone_apart,
    undone_pair,
)
from rmexplain.findings.carriers import class_named, place_attributes_under_classes, proposals
from rmexplain.findings.landing import finding_line
from rmexplain.findings.summary import FindingSettings, discovered_findings, findings_frame
from rmexplain.ids import text_id
from rmexplain.schemas import CARRIER_EDITS, write_table
from rmexplain.score.stages import STAGE_TEXTS

NUMBERS, FIRST, SECOND, FILLER = (
    "numbers as digits",
    "pronouns first person",
    "pronouns second person",
    "filler words",
)


@pytest.mark.parametrize(
    ("name", "source", "edited", "undone"),
    [
        # a numbered list's markers spelled out: "Step 1:" → "Step one:"
        (
            NUMBERS,
            "Boil the egg. Serve it.",
            "Step 1: Boil the egg.\nStep 2: Serve it.",
            ("Boil the egg. Serve it.", "Step one: Boil the egg.\nStep two: Serve it."),
        ),
        # an inserted "I" made "they", capitalised where a sentence starts; the "I" the edit kept stays
        (
            FIRST,
            "I can help. Boil it.",
            "I can help. I think you should boil it.",
            ("I can help. Boil it.", "I can help. They think you should boil it."),
        ),
        # inside a sentence "I" is "they" ("I" is upper case anywhere)
        (
            FIRST,
            "Boil it.",
            "Boil it, I think, and I’m done.",
            ("Boil it.", "Boil it, they think, and they’re done."),
        ),
        # a deleted first-person clause: the source's instances stand in, the edit removes the stand-ins
        (FIRST, "Let me know. I’m here.", "Here.", ("Let them know. They’re here.", "Here.")),
        # "you" after "thank" is an object: "them"; "Your" → "Their"
        (SECOND, "Thank you! Your call.", "Thanks! A call.", ("Thank them! Their call.", "Thanks! A call.")),
        (FILLER, "It works.", "Honestly, it really works.", ("It works.", "Also, it also works.")),
        # an inserted exclamation mark: a full stop stands in
        ("exclamation", "Boil it.", "Hi there! Boil it.", ("Boil it.", "Hi there. Boil it.")),
        # the edit changes no instance of the class: both texts as they were
        (NUMBERS, "Boil it.", "Boil it now.", ("Boil it.", "Boil it now.")),
    ],
)
def test_each_class_is_undone_at_the_same_length_where_the_edit_changed_it(name, source, edited, undone):
    assert undone_pair(class_named(name), source, edited) == undone


@pytest.mark.parametrize(
    ("name", "edited", "why"),
    [
        (NUMBERS, "Add 3.5 cups.", "“3.5” has no one-word spelling (a whole number up to 99)"),
        (NUMBERS, "In 2024 it rained.", "“2024” has no one-word spelling (a whole number up to 99)"),
        (FIRST, "Let's boil it.", "“Let's” has no one-word third-person stand-in"),
        (
            "shape ends on a question",
            "Boil it. Does that help?",
            "shape ends on a question is no class of words or marks: it has no stand-in of the same length",
        ),
        ("emoji", "Boil it. 🙂", "a stand-in changes the length in words"),  # a lone emoji is a word
    ],
)
def test_an_instance_without_a_stand_in_of_the_same_length_is_a_skip_saying_why(name, edited, why):
    with pytest.raises(SkipEdit) as raised:
        undone_pair(class_named(name), "Boil it.", edited)
    assert str(raised.value) == why


def test_the_signed_coefficient_is_the_findings_own_fit():
    """Additions only, one instance each: the mean; both ways: the half difference (an intercept); doses
    1 and 2 of additions, each size from five pairs: the first instance's coefficient (2 per further
    instance beside it); the one from a single pair: the change per instance through the origin, as the
    discovery estimate fits it (Σ y·d / Σ d²)."""
    ones = np.array([1.0, 1.0])
    assert signed_coefficient(ones, ones, np.array([2.0, 4.0]), ["a", "b"]) == pytest.approx(3.0)
    both = signed_coefficient(np.array([1.0, -1.0]), np.array([1.0, -1.0]), np.array([3.0, -1.0]), ["a", "a"])
    assert both == pytest.approx(2.0)  # (3 − (−1)) / 2, the intercept 1
    pairs = [f"p{i}" for i in range(10)]
    dosed = signed_coefficient(np.ones(10), np.repeat([1.0, 2.0], 5), np.repeat([1.0, 3.0], 5), pairs)
    assert dosed == pytest.approx(1.0)
    thin = signed_coefficient(
        np.ones(3), np.array([1.0, 2.0, 2.0]), np.array([1.0, 3.0, 3.0]), ["a", "b", "c"]
    )
    assert thin == pytest.approx(13 / 9)
    assert np.isnan(signed_coefficient(np.zeros(0), np.zeros(0), np.zeros(0), []))


def carrier_rows(rows: list[tuple]) -> pl.DataFrame:
    """CARRIER_EDITS of one candidate (d, discovered, offline, F, first person) from (comparison, direction,
    dose, class change, S, E, S′, E′, skip)."""
    names = [
        "comparison_id",
        "direction",
        "dose",
        "class_change",
        "source_text",
        "edited_text",
        "source_undone",
        "edited_undone",
        "skip",
    ]
    frame = pl.DataFrame([dict(zip(names, r, strict=True)) for r in rows], orient="row")
    return frame.with_columns(
        dataset=pl.lit("d"),
        kind=pl.lit("discovered"),
        method=pl.lit("offline"),
        finding=pl.lit("F"),
        carrier=pl.lit(FIRST),
        target=pl.lit("chosen"),
    )


# Six additions of F (one instance each) on pairs c1..c6, one of which changes no first-person word, and a
# skip. The RM "a" gives −1 per first-person word and 0.5 for anything else F adds; its reward sd is 2.
HAND = [
    ("c1", 1, 1, 1, "S1", "E1", "S1", "U1", None),
    ("c2", 1, 1, 1, "S2", "E2", "S2", "U2", None),
    ("c3", 1, 1, 1, "S3", "E3", "S3", "U3", None),
    ("c4", 1, 1, 1, "S4", "E4", "S4", "U4", None),
    ("c5", 1, 1, 1, "S5", "E5", "S5", "U5", None),
    ("c6", 1, 1, 0, "S6", "E6", "S6", "E6", None),  # no first-person word: E′ = E
    ("c7", 1, 1, 1, "S7", "E7", None, None, "no stand-in"),
]
REWARDS = {
    **{f"S{i}": 0.0 for i in range(1, 8)},
    **{f"E{i}": -0.5 for i in range(1, 6)},
    "E6": 0.5,
    **{f"U{i}": 0.5 for i in range(1, 6)},
}


def rewards_of(values: dict[str, float], prompt: str = "p") -> dict[str, float]:
    return {text_id(prompt, text): value for text, value in values.items()}


def test_the_share_a_class_carries_by_hand():
    """Per edit the class's part is (r(E) − r(E′)) − (r(S) − r(S′)) = −1 on c1..c5 and 0 on c6, over the RM's
    sd of 2: −0.5 and 0. F's own effect per instance, fitted the same way on its reward changes, is
    (5·(−0.25) + 0.25) / 6 = −1/6; the class carries the mean part (−2.5/6) over it: 2.5, over 5 re-scored
    edits that change it, the skip counted. The reference "b" (the same RM less 0.5 on U texts) changes
    each part by −0.5 before the sd: (−1 + 0.5) / 2 on c1..c5."""
    prompts = {f"c{i}": "p" for i in range(1, 8)}
    reference = {**REWARDS, **{f"U{i}": 0.0 for i in range(1, 6)}}
    checks = carrier_checks(
        carrier_rows(HAND),
        prompts,
        {"a": rewards_of(REWARDS), "b": rewards_of(reference), "c": rewards_of(REWARDS)},
        {"a": 2.0, "b": 2.0, "c": 2.0},
        {"a": None, "c": "b"},
        {("d", "a", "discovered", "offline", "F"): -1 / 6, ("d", "c", "discovered", "offline", "F"): -1 / 6},
    )
    alone = checks[("d", "a", "discovered", "offline", "F", FIRST)]
    assert alone.share == pytest.approx((-2.5 / 6) / (-1 / 6))
    assert (alone.checked, alone.skipped, alone.decides, alone.carries) == (5, 1, True, True)
    assert alone.part.tolist() == pytest.approx([-0.5] * 5 + [0.0])
    with_reference = checks[("d", "c", "discovered", "offline", "F", FIRST)]
    assert with_reference.part.tolist() == pytest.approx([-0.25] * 5 + [0.0])
    assert ("d", "b", "discovered", "offline", "F", FIRST) not in checks  # "b" has no such finding


def test_an_unscored_text_is_a_skip_and_four_edits_do_not_decide():
    prompts = {f"c{i}": "p" for i in range(1, 8)}
    unscored = {k: v for k, v in REWARDS.items() if k != "U5"}
    check = carrier_checks(
        carrier_rows(HAND),
        prompts,
        {"a": rewards_of(unscored)},
        {"a": 2.0},
        {"a": None},
        {("d", "a", "discovered", "offline", "F"): -1 / 6},
    )[("d", "a", "discovered", "offline", "F", FIRST)]
    assert (check.checked, check.skipped, check.decides) == (4, 2, False)


NUMBER_EDITS = [
    ("numbered_list", 1, 1, "Cut it.", "1. Cut it."),
    ("numbered_list", 1, 1, "Boil it.", "1. Boil it."),
]


def discovery_edits(rows: list[tuple[str, int, int, str, str]]) -> pl.DataFrame:
    feature, direction, dose, source, edited = zip(*rows, strict=True)
    return pl.DataFrame(
        {
            "engine": ["offline"] * len(rows),
            "feature": list(feature),
            "direction": list(direction),
            "dose": list(dose),
            "source_text": list(source),
            "edited_text": list(edited),
            "comparison_id": [f"c{i}" for i in range(len(rows))],
        }
    )


def biases(effects: dict[str, float], significant: dict[str, bool] | None = None) -> pl.DataFrame:
    names, significant = list(effects), significant or {}
    return pl.DataFrame(
        {
            "dataset": ["d"] * len(names),
            "rm": ["a"] * len(names),
            "engine": ["offline"] * len(names),
            "feature": names,
            "description": names,
            "effect": [effects[n] for n in names],
            "low": [0.0] * len(names),
            "high": [1.0] * len(names),
            "q_value": [0.01] * len(names),
            "n": [9] * len(names),
            "support": [0.5] * len(names),
            "significant": [significant.get(n, True) for n in names],
        }
    )


def key(finding: str, carrier: str = NUMBERS) -> tuple[str, ...]:
    return ("d", "a", "discovered", "offline", finding, carrier)


def placed(checks: dict) -> dict:
    rows = discovered_findings(
        biases({NUMBERS: 0.5, "numbered_list": 0.6}),
        {"d": discovery_edits(NUMBER_EDITS)},
        FindingSettings(),
        checks,
    )
    return {r["name"]: r for r in rows}["numbered_list"]


def test_the_re_scoring_decides_where_it_can_and_the_proposed_share_stands_where_it_cannot():
    """The class's measured effect proposes 0.5 · 1 / 0.6 = 83 %; re-scored at 10 % the list is on its own,
    at 95 % it is under the class with the measured share; with four edits the proposed share stands."""
    assert placed({key("numbered_list"): Check(0.1, 5, 0)}).get("under") is None
    rescored = placed({key("numbered_list"): Check(0.95, 5, 0)})
    assert (rescored["under"], rescored["under_check"], rescored["under_checked_edits"]) == (
        NUMBERS,
        "re-scored",
        5,
    )
    assert rescored["under_share"] == 0.95 and rescored["under_inferred_share"] == pytest.approx(0.5 / 0.6)
    inferred = placed({key("numbered_list"): Check(0.95, 4, 0)})
    assert (inferred["under_check"], inferred["under_share"]) == ("inferred", pytest.approx(0.5 / 0.6))
    assert inferred["under_checked_edits"] is None


def test_an_attribute_is_placed_by_its_re_scoring_too():
    attributes = [
        {
            "dataset": "d",
            "rm": "a",
            "kind": "attribute",
            "method": "rules",
            "name": "clarity",
            "effect": 0.4,
            "significant": True,
        }
    ]
    discovered = [
        {
            "dataset": "d",
            "rm": "a",
            "kind": "discovered",
            "method": "offline",
            "name": NUMBERS,
            "effect": 0.5,
            "significant": True,
        }
    ]
    edits = {
        ("d", "rules"): pl.DataFrame(
            {
                "attribute": ["clarity"] * 2,
                "direction": ["better", "worse"],
                "source_text": ["Cut it.", "1. Cut it."],
                "text": ["1. Cut it.", "Cut it."],
            }
        )
    }
    checks = {("d", "a", "attribute", "rules", "clarity", NUMBERS): Check(0.2, 6, 0)}
    assert (
        place_attributes_under_classes([dict(a) for a in attributes], discovered, edits, checks)[0].get(
            "under"
        )
        is None
    )
    checks = {("d", "a", "attribute", "rules", "clarity", NUMBERS): Check(0.9, 6, 0)}
    row = place_attributes_under_classes([dict(a) for a in attributes], discovered, edits, checks)[0]
    assert (row["under"], row["under_share"], row["under_check"]) == (NUMBERS, 0.9, "re-scored")


def test_proposals_are_the_significant_classes_shares_and_the_word_classes_that_could_carry():
    """numbered_list brings a number token per instance: numbers is proposed though not significant, as the
    top of its interval (+0.5 · 1 / 0.6 = 83 %) could carry it; the bold edits bring none; a finding that is
    not significant gets no proposal; "hope" brings a first-person word, the class significant at −0.5
    (100 %); "filled" brings a filler word, whose estimate lies tightly near 0 (under 2 %: not proposed);
    "asked" brings a second-person word, the class without an estimate (one instance each: proposed)."""
    rows = [
        ("numbered_list", 1, 1, "Cut it.", "1. Cut it."),
        ("numbered_list", 1, 1, "Boil it.", "1. Boil it."),
        ("bold", 1, 1, "Boil it.", "**Boil** it."),
        ("hope", 1, 1, "Cut it.", "Cut it. I hope it helps."),
        ("quiet", 1, 1, "Cut it.", "Cut it 2."),
        ("filled", 1, 1, "Cut it.", "Really, cut it."),
        ("asked", 1, 1, "Cut it.", "You cut it."),
    ]
    discovered = [
        {"dataset": "d", "rm": "a", "kind": "discovered", "method": "offline", "name": name, "effect": effect,
         "low": low, "high": high, "significant": significant}
        for name, effect, low, high, significant in [
            (NUMBERS, 0.1, -0.2, 0.5, False), ("numbered_list", 0.6, 0.4, 0.8, True),
            ("bold", 0.4, 0.2, 0.6, True), (FIRST, -0.5, -0.6, -0.4, True), ("hope", -0.5, -0.7, -0.3, True),
            ("quiet", 0.3, -0.1, 0.7, False), (FILLER, 0.0, -0.01, 0.01, False),
            ("filled", 0.6, 0.3, 0.9, True), ("asked", 0.6, 0.3, 0.9, True),
        ]
    ]  # fmt: skip
    found = proposals([], discovered, {}, {"d": discovery_edits(rows)})
    assert found == [
        Candidate("d", "discovered", "offline", "numbered_list", NUMBERS),
        Candidate("d", "discovered", "offline", "hope", FIRST),
        Candidate("d", "discovered", "offline", "asked", SECOND),
    ]


def test_carrier_edits_undo_each_candidates_edits_and_say_why_not():
    edits = discovery_edits(
        [("numbered_list", 1, 1, "Cut it.", "1. Cut it."), ("numbered_list", 1, 1, "Add it.", "100. Add it.")]
    )
    candidate = Candidate("d", "discovered", "offline", "numbered_list", NUMBERS)
    frame = carrier_edits(
        [candidate],
        {NUMBERS: class_named(NUMBERS)},
        lambda c: edits.with_columns(target=pl.lit("chosen")).drop("engine", "feature"),
    )
    assert frame.columns[: len(CARRIER_EDITS)] == list(CARRIER_EDITS)
    assert frame["edited_undone"].to_list() == ["one. Cut it.", None]
    assert frame["class_change"].to_list() == [1, 1]
    assert frame["skip"].to_list() == [None, "“100” has no one-word spelling (a whole number up to 99)"]


def test_stand_ins_that_change_another_class_too_are_a_skip():
    """ "I think " before a sentence holds a first-person word, and "They think " undoes the sentence's
    opening "I" too, so the part re-scored is as much the opening's as the words' (a skip); ", I think"
    inside a statement opens nothing and is re-scored. A "?" made a full stop ends no response on a question
    any more (a skip). A numbered list is no class: "one. Cut it." is re-scored though the list is gone (its
    digits are what it is tested for)."""
    edits = pl.DataFrame({"comparison_id": ["a", "b"], "target": ["chosen"] * 2, "direction": [1, 1],
                          "dose": [1, 1], "source_text": ["It is done.", "It works."],
                          "edited_text": ["I think it is done.", "It works, I think."]})  # fmt: skip
    frame = carrier_edits(
        [Candidate("d", "discovered", "offline", "hedging", FIRST)],
        {FIRST: class_named(FIRST)},
        lambda c: edits,
    )
    why = f"undoing {FIRST} changes shape opens with I too: the two cannot be told apart"
    assert frame["skip"].to_list() == [why, None]
    assert frame["edited_undone"].to_list() == [None, "It works, they think."]
    question_mark = 'character "?"'
    with pytest.raises(
        SkipEdit, match=re.escape(f"undoing {question_mark} changes shape ends on a question")
    ):
        undone_apart(class_named(question_mark), "Done.", "Done?")
    assert undone_apart(class_named(question_mark), "Done.", "Done? Yes.") == ("Done.", "Done. Yes.")
    listed = pl.DataFrame({"comparison_id": ["a"], "target": ["chosen"], "direction": [1], "dose": [1],
                           "source_text": ["Cut it."], "edited_text": ["1. Cut it."]})  # fmt: skip
    frame = carrier_edits(
        [Candidate("d", "discovered", "offline", "numbered_list", NUMBERS)],
        {NUMBERS: class_named(NUMBERS)},
        lambda c: listed,
    )
    assert frame["skip"].to_list() == [None] and frame["edited_undone"].to_list() == ["one. Cut it."]


def test_a_scoring_job_reads_the_four_texts_of_every_edit_undone(tmp_path):
    frame = carrier_rows(HAND[:2] + HAND[-1:])
    path = tmp_path / "edits.parquet"
    write_table(frame.select(*CARRIER_EDITS), str(path), CARRIER_EDITS, "carrier edits")
    texts = STAGE_TEXTS["carriers"](str(path))
    assert sorted(texts["text"].to_list()) == [
        "E1",
        "E2",
        "S1",
        "S1",
        "S2",
        "S2",
        "U1",
        "U2",
    ]  # the skip: none
    assert texts["id"].n_unique() == texts.height


def check_of(edits: list[tuple[str, float, float]], share: float = 1.0) -> Check:
    """A check from (comparison, class change, part) per edit, each edit's texts its own."""
    return Check(
        share,
        len(edits),
        0,
        tuple((c, f"S{i}", f"E{i}") for i, (c, _, _) in enumerate(edits)),
        tuple((f"S{i}", f"U{i}") for i in range(len(edits))),
        np.array([e[1] for e in edits]),
        np.array([e[2] for e in edits]),
    )


def test_a_class_measured_on_the_edits_it_carries_by_hand():
    """Parts 0.4 per instance on six pairs (two instances on one), one edit that changes no instance left
    out: Σ x·y / Σ x² = (5·0.4 + 2·0.8) / (5 + 4) = 0.4; every resample 0.4, so the interval is [0.4, 0.4];
    six pairs: significant, both halves 0.4. Its example is the stand-in made the class again."""
    edits = [(f"d-s0-{i}", 1.0, 0.4) for i in range(5)] + [("d-s0-5", 2.0, 0.8), ("d-s0-6", 0.0, 0.0)]
    found = class_effect([check_of(edits)], "d", BootstrapSettings(n_resamples=200))
    assert found["effect"] == pytest.approx(0.4) and found["low"] == pytest.approx(0.4)
    assert (found["n"], found["pairs"], found["significant"], found["replicates"]) == (6, 6, True, True)
    assert found["example_before"] in {f"U{i}" for i in range(6)} and found["example_after"].startswith("E")


def test_a_class_over_four_pairs_is_too_few_to_say_and_an_edit_carried_twice_counts_once():
    edits = [(f"d-s0-{i}", 1.0, 0.4 + i / 10) for i in range(4)]
    twice = class_effect([check_of(edits), check_of(edits)], "d", BootstrapSettings(n_resamples=200))
    once = class_effect([check_of(edits)], "d", BootstrapSettings(n_resamples=200))
    assert twice == once and (once["n"], once["pairs"], once["significant"]) == (4, 4, False)


def test_a_class_without_a_significant_row_is_measured_where_it_carries():
    """numbers carries the list by re-scoring (a row is made for it, engine re-scored); first person carries
    nothing here (10 %), and a class with a significant row of its own gets none."""
    edits = [(f"d-s0-{i}", 1.0, 0.5) for i in range(6)]
    checks = {
        key("numbered_list"): check_of(edits),
        key("bold", FIRST): check_of(edits, share=0.1),
        key("table", SECOND): check_of(edits),
    }
    rows = rescored_classes(
        checks, {("d", "a", SECOND)}, {("d", "a"): "base"}, BootstrapSettings(n_resamples=200)
    )
    assert rows["feature"].to_list() == [NUMBERS] and rows["engine"].to_list() == [RESCORED]
    assert rows["reference"].to_list() == ["base"] and rows["effect"].to_list() == pytest.approx([0.5])


def test_the_landing_line_of_a_finding_re_scored_word_for_word():
    checks = {key("numbered_list"): Check(0.95, 5, 0)}
    table, edits = biases({NUMBERS: 0.5, "numbered_list": 0.6}), {"d": discovery_edits(NUMBER_EDITS)}
    rows = findings_frame(discovered_findings(table, edits, FindingSettings(), checks))
    numbers, listed = (
        rows.filter(pl.col("name") == n).row(0, named=True) for n in (NUMBERS, "numbered_list")
    )
    assert finding_line(numbers, [listed]).endswith(
        " It is what **rewards numbered\\_list** reads (numbered\\_list \\+0\\.60 reward sd per instance"
        " added): each instance adds 1 of this class; scored again with the class undone in the 5 edits that"
        " change it, 95\\% of its effect goes."
    )


def test_a_class_measured_by_re_scoring_is_not_listed_under_its_own_edits_row():
    """The class's own edits' row (offline, not significant) and its re-scored row share a name, and so the
    same edits by name: the re-scored row has no edits of its own and stays on its own, leading."""
    own = [(NUMBERS, 1, 1, f"Add {w}.", f"Add {d}.") for w, d in (("two", 2), ("six", 6), ("nine", 9))]
    table = biases({NUMBERS: 0.1}, {NUMBERS: False})
    rescored = pl.DataFrame(
        {"dataset": ["d"], "rm": ["a"], "engine": [RESCORED], "feature": [NUMBERS], "description": [NUMBERS],
         "effect": [0.5], "low": [0.4], "high": [0.6], "q_value": [None], "n": [12], "support": [None],
         "significant": [True]}
    )  # fmt: skip
    both = pl.concat([table, rescored], how="diagonal_relaxed")
    rows = discovered_findings(both, {"d": discovery_edits(own)}, FindingSettings())
    measured = next(r for r in rows if r["method"] == RESCORED)
    assert measured.get("under") is None and measured["leading"]
    assert all(r.get("same_edits") is None for r in rows)


def test_a_check_keeps_each_re_scored_edits_texts_change_and_part_in_order_past_a_skip():
    """A skip in the middle is counted and passed over (the rows after it read); a removal whose source held
    the class (S′ ≠ S) carries −(r(S) − r(S′)); each re-scored edit keeps (comparison, S, E), (S′, E′), its
    class change and its part, in table order."""
    rows = [
        ("c1", 1, 1, 1, "S1", "E1", "S1", "U1", None),
        ("c7", 1, 1, 1, "S7", "E7", None, None, "no stand-in"),
        ("c2", -1, -1, -1, "R2", "F2", "V2", "F2", None),  # a removal: S held the class, E does not
        ("c3", 1, 2, 2, "S3", "E3", "S3", "U3", None),
    ]
    rewards = {"S1": 0.0, "E1": -1.0, "U1": 0.0, "R2": -2.0, "V2": -1.0, "F2": 0.0, "S3": 0.0, "E3": -3.0,
               "U3": -1.0}  # fmt: skip
    check = carrier_checks(carrier_rows(rows), {c: "p" for c in ("c1", "c2", "c3", "c7")},
                           {"a": rewards_of(rewards)}, {"a": 2.0}, {"a": None},
                           {("d", "a", "discovered", "offline", "F"): -0.5})[key("F", FIRST)]  # fmt: skip
    assert (check.checked, check.skipped) == (3, 1)
    assert check.edits == (("c1", "S1", "E1"), ("c2", "R2", "F2"), ("c3", "S3", "E3"))
    assert check.undone == (("S1", "U1"), ("V2", "F2"), ("S3", "U3"))
    assert check.change.tolist() == [1.0, -1.0, 2.0]
    # parts: (−1 − 0) − 0 = −1; (0 − 0) − (−2 − (−1)) = +1; (−3 − (−1)) − 0 = −2; over the sd of 2
    assert check.part.tolist() == pytest.approx([-0.5, 0.5, -1.0])
    # fitted as F's effect: both signs (an intercept), doses 1 and 2 among additions (a further-instance
    # column): the signed instance's coefficient solves −0.5 = a + b, 0.5 = a − b, −1.0 = a + b + c
    assert check.share == pytest.approx(-0.5 / -0.5)


def test_a_class_with_varying_parts_by_hand_interval_halves_and_example():
    """Parts that vary: the effect Σ x·y / Σ x², its interval the configured bootstrap's over the pairs
    (recomputed here with the same seed and the bootstrap's own functions), its halves each over the pairs
    split_halves gives them, its example the lower-median part per instance among additions."""
    from rmexplain.analysis.bootstrap import clusters_of, interval, jackknife_counts, resample_counts
    from rmexplain.effects.analysis import split_halves

    parts = [0.1, 0.5, 0.3, 0.9, 0.2, 0.7, 0.4, 0.6]
    changes = [1.0, 1.0, 2.0, 1.0, -1.0, 1.0, 1.0, 2.0]
    edits = [(f"d-s0-{i}", x, y) for i, (x, y) in enumerate(zip(changes, parts, strict=True))]
    settings = BootstrapSettings(n_resamples=300, seed=7)
    found = class_effect([check_of(edits)], "d", settings)
    x, y = np.array(changes), np.array(parts)
    assert found["effect"] == pytest.approx(np.sum(x * y) / np.sum(x * x))
    ids = [e[0] for e in edits]
    clusters = clusters_of(ids, "d")
    boot, jack = resample_counts(clusters, settings), jackknife_counts(clusters)
    resampled, left_out = (boot @ (x * y)) / (boot @ (x * x)), (jack @ (x * y)) / (jack @ (x * x))
    expected = interval(found["effect"], resampled, left_out, settings)
    assert (found["low"], found["high"]) == pytest.approx(expected[:2])
    half = split_halves(ids, "d")
    for h, column in ((0, "half_a_effect"), (1, "half_b_effect")):
        xs, ys = x[half == h], y[half == h]
        assert found[column] == pytest.approx(np.sum(xs * ys) / np.sum(xs * xs))
    assert (found["n"], found["pairs"]) == (8, 8)
    # additions' parts per instance: 0.1 0.5 0.15 0.9 0.7 0.4 0.3 → lower median 0.4 (edit 6)
    assert (found["example_comparison_id"], found["example_before"], found["example_after"]) == (
        "d-s0-6",
        "U6",
        "E6",
    )


@pytest.mark.parametrize(
    ("name", "source", "edited", "undone"),
    [
        (NUMBERS, "Go.", "Go 99 times.", ("Go.", "Go ninety-nine times.")),  # the largest one-word number
        (FIRST, "Do it.", "I did it for your sake. Do it.", ("Do it.", "They did it for your sake. Do it.")),
        (SECOND, "Do it.", "I did it for your sake. Do it.", ("Do it.", "I did it for their sake. Do it.")),
    ],
)  # fmt: skip
def test_stand_ins_at_their_edges(name, source, edited, undone):
    """99 has a one-word spelling; "your" after "for" is "their" (only "you" turns "them" there)."""
    assert undone_pair(class_named(name), source, edited) == undone


@pytest.mark.parametrize(("edited", "token"), [("Go 100 times.", "100"), ("Wait 07 days.", "07")])
def test_a_number_of_three_digits_or_a_leading_zero_has_no_stand_in(edited, token):
    with pytest.raises(SkipEdit, match=f"“{token}” has no one-word spelling"):
        undone_pair(class_named(NUMBERS), "Go.", edited)


def test_the_class_change_is_the_edits_count_minus_its_sources():
    """A source with two number tokens edited to one: −1 (not the sum, 3)."""
    edits = pl.DataFrame({"comparison_id": ["c"], "target": ["chosen"], "direction": [-1], "dose": [-1],
                          "source_text": ["Step 1 and 2."], "edited_text": ["Step 1 and two."]})  # fmt: skip
    candidate = Candidate("d", "discovered", "offline", "f", NUMBERS)
    frame = carrier_edits([candidate], {NUMBERS: class_named(NUMBERS)}, lambda c: edits)
    assert frame["class_change"].to_list() == [-1] and frame["source_undone"].to_list() == ["Step 1 and two."]


def test_an_rm_without_the_finding_is_passed_over_and_every_column_of_a_re_scored_class_is_set():
    prompts = {f"c{i}": "p" for i in range(1, 8)}
    effects = {("d", "b", "discovered", "offline", "F"): -1 / 6}  # "a", first, has no such finding
    checks = carrier_checks(carrier_rows(HAND), prompts, {"a": rewards_of(REWARDS), "b": rewards_of(REWARDS)},
                            {"a": 2.0, "b": 2.0}, {"a": None, "b": None}, effects)  # fmt: skip
    assert list(checks) == [("d", "b", "discovered", "offline", "F", FIRST)]
    edits = [(f"d-s0-{i}", 1.0, 0.5) for i in range(6)]
    rows = rescored_classes(
        {key("numbered_list"): check_of(edits)}, set(), {}, BootstrapSettings(n_resamples=200)
    )
    row = rows.row(0, named=True)
    detector = class_named(NUMBERS)
    expected = {"dataset": "d", "rm": "a", "engine": RESCORED, "feature": NUMBERS,
                "description": detector.description, "kind": "numbers", "q_value": None, "support": None,
                "reference": None}  # fmt: skip
    assert {k: row[k] for k in expected} == expected
