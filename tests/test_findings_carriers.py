"""A discovered feature under the class that carries it (rmexplain.findings.carriers): the class's instances
per instance of the feature fitted by hand, the share its own effect accounts for, the rule's thresholds and
signs, the leading slot passed on, and what the landing page says."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from rmexplain.findings.carriers import MIN_SHARE, place_under_classes
from rmexplain.findings.landing import CARRIED_NOTE, finding_line, findings_rst
from rmexplain.findings.summary import FindingSettings, discovered_findings, findings_frame

NUMBERS, FIRST = "numbers as digits", "pronouns first person"


def table(
    effects: dict[str, float], significant: dict[str, bool] | None = None, rm: str = "a"
) -> pl.DataFrame:
    """A discovered-biases table of one RM: the features and effects given, every one significant unless
    ``significant`` says otherwise."""
    names = list(effects)
    significant = significant or {}
    return pl.DataFrame(
        {"dataset": ["d"] * len(names), "rm": [rm] * len(names), "engine": ["offline"] * len(names),
         "feature": names, "description": names, "effect": [effects[n] for n in names],
         "low": [0.0] * len(names), "high": [1.0] * len(names), "q_value": [0.01] * len(names),
         "n": [9] * len(names), "support": [0.5] * len(names),
         "significant": [significant.get(n, True) for n in names]}
    )  # fmt: skip


def edits(rows: list[tuple[str, int, int, str, str]]) -> pl.DataFrame:
    """Discovery edits from (feature, direction, dose, source, edited), each of a comparison of its own."""
    feature, direction, dose, source, edited = zip(*rows, strict=True)
    return pl.DataFrame(
        {"engine": ["offline"] * len(rows), "feature": list(feature), "direction": list(direction),
         "dose": list(dose), "source_text": list(source), "edited_text": list(edited),
         "comparison_id": [f"c{i}" for i in range(len(rows))]}
    )  # fmt: skip


# Each addition of the list puts one "1." (one number token) in; the bold edits change no number.
LIST_EDITS = [
    ("numbered_list", 1, 1, "Cut it.", "1. Cut it."),
    ("numbered_list", 1, 1, "Boil it.", "1. Boil it."),
    ("bold", 1, 1, "Boil it.", "**Boil** it."),
]


def by_name(rows: list[dict]) -> dict[str, dict]:
    return {r["name"]: r for r in rows}


def test_a_numbered_list_goes_under_numbers_as_digits_with_the_share_by_hand():
    """b = 1 number token per list item (every addition adds one); the class's +0.5 of the list's +0.6 is
    0.5 · 1 / 0.6 = 83 %: under the class. Bold changes no number: on its own."""
    rows = discovered_findings(
        table({NUMBERS: 0.5, "numbered_list": 0.6, "bold": 0.4}), {"d": edits(LIST_EDITS)}, FindingSettings()
    )
    found = by_name(rows)
    assert found["numbered_list"]["under"] == NUMBERS
    assert found["numbered_list"]["under_per_instance"] == pytest.approx(1.0)
    assert found["numbered_list"]["under_share"] == pytest.approx(0.5 / 0.6)
    assert (
        found["bold"].get("under") is None and found[NUMBERS].get("under") is None
    )  # a class is never under


def test_the_instances_per_instance_are_the_signed_coefficient_of_the_features_own_fit():
    """Edits both ways, of doses 1 and 2: the first list item comes with a heading "Step 1:" and three number
    tokens, each further item with three more (+4 for dose 1, +7 for dose 2, the mirror for removals).
    Fitted as the feature's effect is (intercept, s, dose − s): intercept 0, b = 4 (the s coefficient), 3
    per further item. Each edit five times, from five comparisons: enough pairs for the dose column."""
    rows_in = [
        ("numbered_list", 1, 1, "Cut it.", "Step 1: 1. 2. 3. Cut it."),  # +4 tokens: s=1, dose−s=0
        ("numbered_list", 1, 2, "Cut it.", "Step 1: 1. 2. 3. 4. 5. 6. Cut it."),  # +7: dose−s=1
        ("numbered_list", -1, -1, "Step 1: 1. 2. 3. Cut it.", "Cut it."),  # −4
        ("numbered_list", -1, -2, "Step 1: 1. 2. 3. 4. 5. 6. Cut it.", "Cut it."),  # −7
    ] * 5
    design = np.array([[1, 1, 0], [1, 1, 1], [1, -1, 0], [1, -1, -1]], dtype=float)
    expected = np.linalg.lstsq(design, np.array([4.0, 7.0, -4.0, -7.0]), rcond=None)[0][1]
    assert expected == pytest.approx(4.0)
    rows = discovered_findings(
        table({NUMBERS: 0.2, "numbered_list": 1.0}), {"d": edits(rows_in)}, FindingSettings()
    )
    listed = by_name(rows)["numbered_list"]
    assert listed["under_per_instance"] == pytest.approx(expected)
    assert listed["under_share"] == pytest.approx(0.2 * 4.0 / 1.0)


@pytest.mark.parametrize(
    ("class_effect", "class_significant", "placed"),
    [
        (0.6 * MIN_SHARE, True, True),  # exactly half of the list's effect: placed
        (0.6 * MIN_SHARE - 1e-9, True, False),  # just below half
        (-0.5, True, False),  # a class of the other sign explains nothing
        (0.5, False, False),  # a class that is not significant
    ],
)
def test_the_rule_needs_half_the_effect_the_same_sign_and_a_significant_class(
    class_effect, class_significant, placed
):
    rows = discovered_findings(
        table({NUMBERS: class_effect, "numbered_list": 0.6}, {NUMBERS: class_significant}),
        {"d": edits(LIST_EDITS)},
        FindingSettings(),
    )
    assert (by_name(rows)["numbered_list"].get("under") == NUMBERS) is placed


def test_a_feature_that_is_not_significant_or_has_no_edits_stays_on_its_own():
    unsure = discovered_findings(
        table({NUMBERS: 0.5, "numbered_list": 0.6}, {"numbered_list": False}), {"d": edits(LIST_EDITS)},
        FindingSettings(),
    )  # fmt: skip
    assert by_name(unsure)["numbered_list"].get("under") is None
    other_engine = edits(LIST_EDITS).with_columns(engine=pl.lit("llm"))
    alone = discovered_findings(
        table({NUMBERS: 0.5, "numbered_list": 0.6}), {"d": other_engine}, FindingSettings()
    )
    assert by_name(alone)["numbered_list"].get("under") is None  # the llm's edits are not this row's


LET_ME_KNOW_EDITS = [
    ("let_me_know", -1, -1, "Boil it. Let me know if you need 2 more!", "Boil it."),
    ("let_me_know", -1, -1, "Cut it. Let me know if you need 2 more!", "Cut it."),
]


@pytest.mark.parametrize(
    ("numbers", "first", "carrier", "share"),
    [
        (-0.45, -0.6, FIRST, 1.0),  # 75 % and 100 %: the whole of it
        (-0.54, -0.9, NUMBERS, 0.9),  # 90 % and 150 %: the one that overshoots is not the carrier
        (-0.6, -0.6, NUMBERS, 1.0),  # a tie: by the class's name
    ],
)
def test_of_two_classes_the_share_nearest_the_whole_carries_and_a_removal_counts_its_sign(
    numbers, first, carrier, share
):
    """ "Let me know if you need 2 more!" removed: one first-person word and one number token less per
    removal (b = 1 for each, the removals' sign); the feature −0.6."""
    rows = discovered_findings(
        table({NUMBERS: numbers, FIRST: first, "let_me_know": -0.6}),
        {"d": edits(LET_ME_KNOW_EDITS)},
        FindingSettings(),
    )
    found = by_name(rows)["let_me_know"]
    assert (found["under"], found["under_per_instance"]) == (carrier, pytest.approx(1.0))
    assert found["under_share"] == pytest.approx(share)


def test_a_tie_of_two_classes_goes_by_the_class_name_not_its_instances_or_the_tables_order():
    """ "Let me know if you need 2 or 3 more!" removed: two number tokens and one first-person word less per
    removal; numbers −0.3 per token (2 · 0.3 / 0.6 = 100 %) and first-person words −0.6 (100 %), listed
    first in the table: numbers as digits, first by name."""
    rows_in = [
        ("let_me_know", -1, -1, "Boil it. Let me know if you need 2 or 3 more!", "Boil it."),
        ("let_me_know", -1, -1, "Cut it. Let me know if you need 2 or 3 more!", "Cut it."),
    ]
    effects = {FIRST: -0.6, NUMBERS: -0.3, "let_me_know": -0.6}
    found = by_name(discovered_findings(table(effects), {"d": edits(rows_in)}, FindingSettings()))[
        "let_me_know"
    ]
    assert (found["under"], found["under_per_instance"]) == (NUMBERS, pytest.approx(2.0))


OPENS = "shape opens with I"
# "I think " added before the first sentence (opening with "I"); ", I think" inside a statement (the words)
I_ADDED = [
    (OPENS, 1, 1, "It is done.", "I think it is done."),
    (OPENS, 1, 1, "The egg boils.", "I think the egg boils."),
    (FIRST, 1, 1, "It is done.", "It is done, I think."),
    (FIRST, 1, 1, "Boil it. The egg is done.", "Boil it. The egg is done, I think."),
]


def test_a_class_goes_under_the_class_it_holds_never_both_ways():
    """ "I think " added before the first sentence: opening with "I" adds one first-person word each time
    (b = 1: 100 % of its −0.8); first-person words, added inside the last statement (", I think"), open no
    sentence (b = 0). Nearest the whole first: opening with "I" goes under first-person words, which then
    carry it and stay on their own."""
    rows = discovered_findings(table({FIRST: -0.8, OPENS: -0.8}), {"d": edits(I_ADDED)}, FindingSettings())
    found = by_name(rows)
    assert (found[OPENS]["under"], found[OPENS]["under_share"]) == (FIRST, pytest.approx(1.0))
    assert found[FIRST].get("under") is None and found[FIRST]["leading"]


def test_first_person_words_go_under_sentences_opening_with_i_where_only_the_opening_moves_the_rm():
    """An RM that penalises sentences opening with "I" (−0.5 each) and not the word: first-person words
    added inside a statement move it by nothing, removed from a sentence's opening by +0.5, so their fit
    (an intercept and the signed instance) is −0.25, and b for the openings is 0.5 (0 added, −1 removed):
    −0.5 · 0.5 / −0.25 = 100 %. Opening with "I" holds one first-person word (b = 1: −0.25 / −0.5 = 50 %).
    Nearest the whole first: the words go under the openings, which lead."""
    rows_in = [
        *I_ADDED,
        (FIRST, -1, 1, "Go. I think it is hot.", "Go. It is hot."),
        (FIRST, -1, 1, "I believe the egg is done.", "The egg is done."),
    ]
    rows = discovered_findings(table({FIRST: -0.25, OPENS: -0.5}), {"d": edits(rows_in)}, FindingSettings())
    found = by_name(rows)
    assert (found[FIRST]["under"], found[FIRST]["under_share"]) == (OPENS, pytest.approx(1.0))
    assert found[OPENS].get("under") is None and found[OPENS]["leading"]


def test_a_class_that_carries_a_feature_is_not_put_under_another_class():
    """Let me know carried by first-person words (100 %) is placed first; first-person words' own edits
    happen to add a number (numbers −0.56 of their −0.8: 70 %), but a class that carries stays on its own."""
    rows_in = [
        *LET_ME_KNOW_EDITS[:1],
        ("let_me_know", -1, -1, "Cut it. Let me know if you need more!", "Cut it."),
        (FIRST, 1, 1, "It is done.", "I think it is done at 5."),
        (FIRST, 1, 1, "The egg is done.", "I think the egg is done at 6."),
    ]
    rows_in += [("numbered_list", 1, 1, "Go.", "1. Go."), ("numbered_list", 1, 1, "Stop.", "1. Stop.")]
    effects = {NUMBERS: -0.56, FIRST: -0.8, "let_me_know": -0.8, "numbered_list": -0.93}
    found = by_name(discovered_findings(table(effects), {"d": edits(rows_in)}, FindingSettings()))
    assert found["let_me_know"]["under"] == FIRST and found[FIRST].get("under") is None
    # placed after the pair passed over (60 % is further from the whole than 70 %)
    assert found["numbered_list"]["under"] == NUMBERS


def test_an_attribute_goes_under_the_class_its_edits_change_per_edit_by_hand():
    """Clarity's better edits number a sentence and say "I" ("1. I cut it.": +1 number token, +1 first-person
    word), its worse edits spell a number out (−1 number token): fitted on an intercept and the signed
    direction, numbers Δc = 0 + 1·s (b = 1), first person Δc = 0.5 + 0.5·s (b = 0.5). Numbers +0.4 per
    token of clarity's +0.5: 80 %; first person +1.4: 140 %, further from the whole: numbers carry. Tone's
    edits change neither: on its own."""
    from rmexplain.findings.carriers import place_attributes_under_classes

    texts = pl.DataFrame(
        {"attribute": ["clarity"] * 4 + ["tone"] * 2,
         "direction": ["better", "better", "worse", "worse", "better", "worse"],
         "source_text": ["Cut it.", "Boil it.", "Cut it 3 times.", "Boil it 2 times.", "Go.", "Go."],
         "text": ["1. I cut it.", "1. I boil it.", "Cut it three times.", "Boil it two times.", "Please go.",
                  "Go now."]}
    )  # fmt: skip
    discovered = discovered_findings(table({NUMBERS: 0.4, FIRST: 1.4}), {}, FindingSettings())

    def attribute(name: str, effect: float, significant: bool = True) -> dict:
        return {"dataset": "d", "method": "rules", "rm": "a", "kind": "attribute", "name": name,
                "effect": effect, "significant": significant}  # fmt: skip

    rows = [attribute("clarity", 0.5), attribute("tone", 0.5), attribute("length", 0.5) | {"kind": "length"}]
    placed = by_name(place_attributes_under_classes(rows, discovered, {("d", "rules"): texts}))
    assert placed["clarity"]["under"] == NUMBERS
    assert placed["clarity"]["under_per_instance"] == pytest.approx(1.0)
    assert placed["clarity"]["under_share"] == pytest.approx(0.4 * 1.0 / 0.5)
    assert placed["tone"].get("under") is None and placed["length"].get("under") is None
    unsure = place_attributes_under_classes(
        [attribute("clarity", 0.5, False)], discovered, {("d", "rules"): texts}
    )
    assert unsure[0].get("under") is None


def test_a_feature_under_a_class_gives_its_leading_slot_to_the_next():
    rows = findings_frame(
        discovered_findings(
            table({NUMBERS: 0.5, "numbered_list": 0.6, "bold": 0.4}),
            {"d": edits(LIST_EDITS)},
            FindingSettings(leading_discovered=2),
        )
    )
    assert rows.select("name", "leading", "under").rows() == [
        ("numbered_list", False, NUMBERS), (NUMBERS, True, None), ("bold", True, None)
    ]  # fmt: skip
    assert rows.filter(pl.col("name") == "numbered_list").select("under_share", "under_per_instance").row(
        0
    ) == (
        pytest.approx(0.5 / 0.6),
        pytest.approx(1.0),
    )


def test_the_landing_page_lists_the_feature_under_its_class_word_for_word():
    rows = findings_frame(
        discovered_findings(
            table({NUMBERS: 0.5, "numbered_list": 0.6}), {"d": edits(LIST_EDITS)}, FindingSettings()
        )
    )
    numbers, listed = (
        rows.filter(pl.col("name") == n).row(0, named=True) for n in (NUMBERS, "numbered_list")
    )
    line = finding_line(numbers, [listed])
    assert line.endswith(
        " It is what **rewards numbered\\_list** reads (numbered\\_list \\+0\\.60 reward sd per instance "
        "added): each instance adds 1 of this class, whose own effect accounts for 83\\% of it (inferred: its"
        " edits could not be re-scored without the class)."
    )


def test_the_landing_says_what_a_finding_under_a_class_is_only_where_there_is_one():
    def block(effects: dict[str, float]) -> str:
        found = discovered_findings(table(effects), {"d": edits(LIST_EDITS)}, FindingSettings())
        return findings_rst(findings_frame(found), ["d"], ["a"], 0.95, "1. Findings", None)

    placed = block({NUMBERS: 0.5, "numbered_list": 0.6})
    assert CARRIED_NOTE in placed and "It is what **rewards numbered\\_list** reads" in placed
    assert CARRIED_NOTE not in block({"numbered_list": 0.6, "bold": 0.4})  # nothing under a class


def test_a_share_over_the_whole_is_said_so():
    """A class that accounts for more than all of a finding (its edits' other changes move it back)."""
    rows = findings_frame(
        discovered_findings(
            table({NUMBERS: 0.9, "numbered_list": 0.6}), {"d": edits(LIST_EDITS)}, FindingSettings()
        )
    )
    numbers, listed = (
        rows.filter(pl.col("name") == n).row(0, named=True) for n in (NUMBERS, "numbered_list")
    )
    assert finding_line(numbers, [listed]).endswith(
        "whose own effect accounts for more than all of it (150\\%: the edits' other changes move it back)"
        " (inferred: its edits could not be re-scored without the class)."
    )


def test_a_line_lists_three_findings_under_it_in_full_and_names_the_rest():
    """Five features under one class: the three largest in full, the other two by name, largest first."""
    effects = {NUMBERS: 0.5, **{f"list_{k}": 0.5 + k / 10 for k in range(5)}}
    rows_in = [(f"list_{k}", 1, 1, "Cut it.", "1. Cut it.") for k in range(5)]
    rows = findings_frame(discovered_findings(table(effects), {"d": edits(rows_in)}, FindingSettings()))
    numbers = rows.filter(pl.col("name") == NUMBERS).row(0, named=True)
    under = rows.filter(pl.col("under") == NUMBERS).sort("order").to_dicts()
    line = finding_line(numbers, under)
    shown = [line.index(f"(list\\_{k} ") for k in (4, 3, 2)]
    assert shown == sorted(shown) and "(list\\_1 " not in line
    assert line.endswith(" It also carries 2 more: list\\_1, list\\_0.")


def test_a_feature_that_counts_a_character_class_carries_too():
    """An opener "Hi there!" adds one exclamation mark: the catalogue's exclamation probe (−0.45 per mark)
    accounts for 87 % of its −0.52; the opener is under it, so it carries nothing; the emoji probe and a
    mined character count a character class as well, a mined string does not."""
    rows_in = [
        ("greeting_opener", 1, 1, "Boil it.", "Hi there! Boil it."),
        ("greeting_opener", 1, 1, "Cut it.", "Hi there! Cut it."),
        ("bold", 1, 1, "Boil it.", "**Boil** it."),
    ]
    effects = {"exclamation": -0.45, "greeting_opener": -0.52, "bold": 0.44}
    found = by_name(discovered_findings(table(effects), {"d": edits(rows_in)}, FindingSettings()))
    assert found["greeting_opener"]["under"] == "exclamation"
    assert found["greeting_opener"]["under_share"] == pytest.approx(0.45 / 0.52)
    assert found["bold"].get("under") is None
    from rmexplain.findings.carriers import class_named

    assert class_named("emoji") is not None and class_named('character ";"') is not None
    assert class_named('opener "Hi there!"') is None and class_named('words "hi there"') is None


APOLOGY_EDITS = [
    ('opener "I’m sorry,"', 1, 1, "Boil it.", "I’m sorry, boil it."),
    ('opener "I’m sorry,"', 1, 1, "Cut it.", "I’m sorry, cut it."),
    ('words "so sorry"', 1, 1, "Boil it.", "Boil it, I am so sorry."),
    ("apology", 1, 1, "Boil it.", "I apologize for any confusion. Boil it."),
    ("bold", 1, 1, "Boil it.", "**Boil** it."),
]


def test_mined_strings_of_a_probes_phrases_go_under_the_probe():
    """An RM penalising "sorry": the apology probe (−1.26 per instance) and two mined strings that each add
    one apology (b = 1: −1.26 · 1 / −1.25 = 101 %, −1.26 · 1 / −1.30 = 97 %) go under the probe, its share
    inferred (a phrase has no stand-in of the same length); bold adds no apology and stays on its own."""
    effects = {"apology": -1.26, 'opener "I’m sorry,"': -1.25, 'words "so sorry"': -1.30, "bold": 1.7}
    found = by_name(discovered_findings(table(effects), {"d": edits(APOLOGY_EDITS)}, FindingSettings()))
    for name, effect in (('opener "I’m sorry,"', -1.25), ('words "so sorry"', -1.30)):
        assert found[name]["under"] == "apology" and found[name]["under_check"] == "inferred"
        assert found[name]["under_per_instance"] == pytest.approx(1.0)
        assert found[name]["under_share"] == pytest.approx(-1.26 / effect)
    assert found["apology"].get("under") is None and found["bold"].get("under") is None
    assert not found['opener "I’m sorry,"']["leading"] and found["apology"]["leading"]


def test_a_probe_of_phrases_is_never_proposed_for_re_scoring_a_probe_of_marks_is():
    """The apology would carry the mined opener by its share, but has no stand-in: no candidate, so no
    carrier edit skipped for it; the first-person word of "I’m" is (a word class), and so is the
    exclamation probe carrying "Hi there!"."""
    from rmexplain.findings.carriers import proposals

    effects = {"apology": -1.26, 'opener "I’m sorry,"': -1.25, "exclamation": -0.45, "greeting_opener": -0.52}
    rows_in = [*APOLOGY_EDITS[:2], ("greeting_opener", 1, 1, "Boil it.", "Hi there! Boil it.")]
    rows = discovered_findings(table(effects), {"d": edits(rows_in)}, FindingSettings())
    found = proposals([], rows, {}, {"d": edits(rows_in)})
    assert [(c.finding, c.carrier) for c in found] == [
        ('opener "I’m sorry,"', FIRST),
        ("greeting_opener", "exclamation"),
    ]


def test_only_the_direction_whose_doses_differ_gets_the_further_instances_column():
    """Additions of one list item (+4 number tokens each), removals of one or two (−4, −7): only the removals'
    doses differ, and the fit needs the further-instances column for them: b = 4 (without it, 4.75). Each
    edit from five comparisons: a dose that fewer hold gets no column of its own (``dose_spreads``)."""
    rows_in = [
        ("numbered_list", 1, 1, "Cut it.", "Step 1: 1. 2. 3. Cut it."),
        ("numbered_list", 1, 1, "Boil it.", "Step 1: 1. 2. 3. Boil it."),
        ("numbered_list", -1, -1, "Step 1: 1. 2. 3. Cut it.", "Cut it."),
        ("numbered_list", -1, -2, "Step 1: 1. 2. 3. 4. 5. 6. Cut it.", "Cut it."),
    ] * 5
    found = by_name(discovered_findings(table({NUMBERS: 0.2, "numbered_list": 1.0}), {"d": edits(rows_in)},
                                        FindingSettings()))  # fmt: skip
    assert found["numbered_list"]["under_per_instance"] == pytest.approx(4.0)
    same_dose = [
        ("numbered_list", 1, 2, "Cut it.", "1. 2. Cut it."),
        ("numbered_list", 1, 2, "Go.", "1. 2. Go."),
    ]
    found = by_name(discovered_findings(table({NUMBERS: 0.5, "numbered_list": 1.0}), {"d": edits(same_dose)},
                                        FindingSettings()))  # fmt: skip
    assert found["numbered_list"]["under_per_instance"] == pytest.approx(2.0)  # doses of one size: no column
    adds_only = [("numbered_list", 1, 1, "Cut it.", "Step 1: 1. 2. 3. Cut it."),
                 ("numbered_list", 1, 2, "Cut it.", "Step 1: 1. 2. 3. 4. 5. 6. Cut it.")] * 5  # fmt: skip
    found = by_name(discovered_findings(table({NUMBERS: 0.2, "numbered_list": 0.8}), {"d": edits(adds_only)},
                                        FindingSettings()))  # fmt: skip
    assert found["numbered_list"]["under_per_instance"] == pytest.approx(4.0)  # the additions' doses differ


def test_an_unbalanced_attribute_needs_its_intercept_and_edits_without_an_engine_column_all_count():
    """Three better edits adding a number and one worse edit adding one too: Δc = 1 either way, all intercept,
    b = 0 (without the intercept b would be 0.5): numbers carry nothing. Discovery edits without an
    ``engine`` column (an older table) are every engine's."""
    from rmexplain.findings.carriers import place_attributes_under_classes

    texts = pl.DataFrame(
        {"attribute": ["clarity"] * 4, "direction": ["better", "better", "better", "worse"],
         "source_text": ["Cut it.", "Boil it.", "Go.", "Stop."],
         "text": ["1. Cut it.", "1. Boil it.", "1. Go.", "1. Stop."]}
    )  # fmt: skip
    discovered = discovered_findings(table({NUMBERS: 0.5}), {}, FindingSettings())
    row = {"dataset": "d", "method": "rules", "rm": "a", "kind": "attribute", "name": "clarity",
           "effect": 0.5, "significant": True}  # fmt: skip
    assert place_attributes_under_classes([row], discovered, {("d", "rules"): texts})[0].get("under") is None
    no_engine = edits(LIST_EDITS).drop("engine")
    found = by_name(discovered_findings(table({NUMBERS: 0.5, "numbered_list": 0.6}), {"d": no_engine},
                                        FindingSettings()))  # fmt: skip
    assert found["numbered_list"]["under"] == NUMBERS


def test_every_row_is_read_past_one_that_is_skipped_and_ties_go_by_the_class_name():
    """A length row and an attribute no class carries come first and are passed over, not the end of the
    list; of two classes the attribute's share is nearest the whole for (100 % and 100 %), the one first by
    name (not by its instances per edit, nor by the table's order), and of 60 % and 110 %, the 110 %."""
    from rmexplain.findings.carriers import place_attributes_under_classes

    texts = pl.DataFrame(
        {"attribute": ["clarity", "clarity", "tone", "tone"], "direction": ["better", "worse"] * 2,
         "source_text": ["Cut it.", "Cut it 3 times.", "Go.", "Go."],
         "text": ["1. I cut it, 2. I cut it.", "Cut it three times.", "Please go.", "Go now."]}
    )  # fmt: skip
    # clarity: numbers Δc = 0.5 + 1.5·s (b = 1.5), first person Δc = 1 + 1·s (b = 1)

    def attribute(name: str, kind: str = "attribute") -> dict:
        return {"dataset": "d", "method": "rules", "rm": "a", "kind": kind, "name": name, "effect": 0.6,
                "significant": True}  # fmt: skip

    def carrier(numbers: float, first: float) -> str | None:
        discovered = discovered_findings(table({FIRST: first, NUMBERS: numbers}), {}, FindingSettings())
        rows = [attribute("length", "length"), attribute("tone"), attribute("clarity")]
        return by_name(place_attributes_under_classes(rows, discovered, {("d", "rules"): texts}))[
            "clarity"
        ].get("under")

    assert carrier(0.4, 0.6) == NUMBERS  # 1.5 · 0.4 / 0.6 = 100 % and 1 · 0.6 / 0.6 = 100 %: by name
    assert carrier(0.24, 0.66) == FIRST  # 60 % and 110 %


def test_rows_without_edits_for_their_dataset_are_left_as_they_are():
    rows = [
        dict(r)
        for r in discovered_findings(table({NUMBERS: 0.5, "numbered_list": 0.6}), {}, FindingSettings())
    ]
    assert place_under_classes(rows, {}) == rows and not any(r.get("under") for r in rows)


# ── the same edits from two engines ───────────────────────────────────────────────────────────────────────
CLOSER = "Let me know if you have questions."
SOURCES = ("Cut it.", "Boil it.", "Fry it.", "Bake it.")


def two_engines(llm_edits: list[tuple[str, int, str]], llm_q: float = 0.02) -> dict[str, dict]:
    """The offline engine's let_me_know and the llm engine's hypothesis "ends inviting questions" (its edits
    ``llm_edits``: source, direction, edited), both significant, on one RM; the findings by name."""
    found = table({"let_me_know": -0.58, "ends inviting questions": -0.76})
    found = found.with_columns(engine=pl.Series(["offline", "llm"]), q_value=pl.Series([0.01, llm_q]))
    offline = [("let_me_know", 1, 1, s, f"{s} {CLOSER}") for s in SOURCES]
    llm = [("ends inviting questions", d, 1, s, e) for s, d, e in llm_edits]
    frame = edits(offline + llm).with_columns(
        engine=pl.Series(["offline"] * len(offline) + ["llm"] * len(llm))
    )
    return by_name(discovered_findings(found, {"d": frame}, FindingSettings()))


def test_one_row_for_the_same_edits_tested_by_two_engines():
    """Where two engines' features edit three or more of the same (response, direction) pairs into the same
    texts, the one with the smaller q-value is shown and the other listed under it, whatever their effects
    (each engine fits its own length slope); differing on any shared edit, or sharing fewer than three,
    they are not the same edits: the llm's, each adding the closer, goes under the catalogue's probe as its
    carrier (−0.58 · 1 / −0.76 = 76 %)."""
    same = [(s, 1, f"{s} {CLOSER}") for s in SOURCES[1:]]  # three shared, one source each edits alone
    found = two_engines(same)
    llm, offline = found["ends inviting questions"], found["let_me_know"]
    assert llm["under"] == "let_me_know" and llm["same_edits"] and not llm["leading"]
    assert offline.get("under") is None and offline["leading"]
    found = two_engines(same, llm_q=0.001)  # the llm's q smaller: it is shown, the catalogue's under it
    assert found["let_me_know"]["under"] == "ends inviting questions"
    assert found["ends inviting questions"].get("under") is None
    differing = [*same[:2], (SOURCES[3], 1, f"{SOURCES[3]} Let me know if you have any questions.")]
    for llm_edits in (differing, same[:2]):  # two shared: too few
        found = two_engines(llm_edits)
        llm = found["ends inviting questions"]
        assert llm["under"] == "let_me_know" and not llm.get("same_edits")
        assert llm["under_share"] == pytest.approx(0.58 / 0.76) and found["let_me_know"].get("under") is None
    block = findings_rst(
        findings_frame(list(two_engines(same).values())), ["d"], ["a"], 0.95, "1. Findings", None
    ).replace("\\", "")
    said = "The llm engine's “ends inviting questions” made the same edits (−0.76 reward sd per instance"
    assert said in block
    assert CARRIED_NOTE not in block  # under another engine's feature, not under a class


LIST_AND_STRING_EDITS = [
    ("numbered_list", 1, 1, "Cut it.", "1. Cut it."),
    ("numbered_list", 1, 1, "Boil it.", "1. Boil it."),
    ('words "1. boil"', 1, 1, "Boil it.", "1. Boil it."),
    ('words "1. boil"', 1, 1, "Boil them.", "1. Boil them."),
]


def test_a_class_another_class_carries_is_placed_first_and_then_carries_nothing():
    """Digits +0.5 per token; a numbered list +0.6 (one "1." per item: 83 % digits); a mined "1. Boil"
    +0.6, one list item and one digit per instance: the list would account for 100 % of it, but the list is
    under the digits, so it carries nothing and the mined string goes under the digits (83 %), whatever
    order the shares come in."""
    effects = {NUMBERS: 0.5, "numbered_list": 0.6, 'words "1. boil"': 0.6}
    found = by_name(
        discovered_findings(table(effects), {"d": edits(LIST_AND_STRING_EDITS)}, FindingSettings())
    )
    assert found["numbered_list"]["under"] == NUMBERS
    assert found['words "1. boil"']["under"] == NUMBERS
    assert found['words "1. boil"']["under_share"] == pytest.approx(0.5 / 0.6)


def test_an_attribute_never_goes_under_a_finding_that_is_itself_under_a_class():
    """Clarity's edits each add one list item and one digit: the list (+0.5) would account for 100 % of its
    +0.5 and the digits (+0.45) for 90 %; the list is under the digits (90 %), so clarity goes under the
    digits; with no digits class the list carries it."""
    from rmexplain.findings.carriers import place_attributes_under_classes

    texts = pl.DataFrame(
        {"attribute": ["clarity"] * 2, "direction": ["better", "worse"],
         "source_text": ["Cut it.", "1. Boil it."], "text": ["1. Cut it.", "Boil it."]}
    )  # fmt: skip
    row = {"dataset": "d", "method": "rules", "rm": "a", "kind": "attribute", "name": "clarity",
           "effect": 0.5, "significant": True}  # fmt: skip
    for effects, carrier in (
        ({NUMBERS: 0.45, "numbered_list": 0.5}, NUMBERS),
        ({"numbered_list": 0.5}, None),
    ):
        discovered = discovered_findings(table(effects), {"d": edits(LIST_EDITS[:2])}, FindingSettings())
        placed = place_attributes_under_classes([dict(row)], discovered, {("d", "rules"): texts})[0]
        assert placed["under"] == (carrier or "numbered_list")


NEGATIVE = "lexicon negative"
NEGATIVE_EDITS = [
    ('words "bad"', 1, 1, "Boil it.", "Boil it, bad."),
    ('words "bad"', -1, -1, "It is bad to boil it.", "It is to boil it."),
    ('words "problem"', 1, 1, "Cut it.", "Cut it, problem."),
    ('words "problem"', -1, -1, "No problem, cut it.", "No, cut it."),
    ('words "please"', 1, 1, "Cut it.", "Cut it, please."),
    (NEGATIVE, 1, 1, "Boil it.", "Sadly, boil it."),
]


def test_the_words_of_a_lexicon_category_go_under_it_and_its_share_is_inferred():
    """An RM penalising AFINN's negative words (−0.51 per word): "bad" and "problem" are one negative word
    each (b = 1: −0.51 · 1 / −0.52 = 98 %), so both go under the category, its share inferred (a negative
    word has no neutral stand-in) and never proposed for re-scoring; "please" is no negative word ("No" is
    one: its removal takes none out) and stays on its own."""
    from rmexplain.findings.carriers import class_named, proposals

    effects = {NEGATIVE: -0.51, 'words "bad"': -0.52, 'words "problem"': -0.515, 'words "please"': 0.9}
    rows = discovered_findings(table(effects), {"d": edits(NEGATIVE_EDITS)}, FindingSettings())
    found = by_name(rows)
    for name, effect in (('words "bad"', -0.52), ('words "problem"', -0.515)):
        assert found[name]["under"] == NEGATIVE and found[name]["under_check"] == "inferred"
        assert found[name]["under_per_instance"] == pytest.approx(1.0)
        assert found[name]["under_share"] == pytest.approx(-0.51 / effect)
    assert found[NEGATIVE].get("under") is None and found['words "please"'].get("under") is None
    assert class_named("lexicon positive") is not None and class_named("lexicon rare") is not None
    assert not [c for c in proposals([], rows, {}, {"d": edits(NEGATIVE_EDITS)}) if c.carrier == NEGATIVE]
