"""A discovered feature under the class that carries it (rmexplain.findings.carriers): the class's instances
per instance of the feature fitted by hand, the share its own effect accounts for, the rule's thresholds and
signs, the leading slot passed on, and what the landing page says."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from rmexplain.findings.carriers import MIN_SHARE, place_under_classes
from rmexplain.findings.landing import finding_line
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
    """Discovery edits from (feature, direction, dose, source, edited)."""
    feature, direction, dose, source, edited = zip(*rows, strict=True)
    return pl.DataFrame(
        {"engine": ["offline"] * len(rows), "feature": list(feature), "direction": list(direction),
         "dose": list(dose), "source_text": list(source), "edited_text": list(edited)}
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
    per further item."""
    rows_in = [
        ("numbered_list", 1, 1, "Cut it.", "Step 1: 1. 2. 3. Cut it."),  # +4 tokens: s=1, dose−s=0
        ("numbered_list", 1, 2, "Cut it.", "Step 1: 1. 2. 3. 4. 5. 6. Cut it."),  # +7: dose−s=1
        ("numbered_list", -1, -1, "Step 1: 1. 2. 3. Cut it.", "Cut it."),  # −4
        ("numbered_list", -1, -2, "Step 1: 1. 2. 3. 4. 5. 6. Cut it.", "Cut it."),  # −7
    ]
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


def test_of_two_classes_the_larger_share_carries_and_a_removal_counts_its_sign():
    """"Let me know if you need 2 more!" removed: one first-person word and one number token less per removal
    (b = 1 for each, the removals' sign). The feature −0.6; first-person words −0.8 account for 133 %,
    numbers −0.4 for 67 %: both over half, the larger carries."""
    rows_in = [
        ("let_me_know", -1, -1, "Boil it. Let me know if you need 2 more!", "Boil it."),
        ("let_me_know", -1, -1, "Cut it. Let me know if you need 2 more!", "Cut it."),
    ]
    rows = discovered_findings(
        table({NUMBERS: -0.4, FIRST: -0.8, "let_me_know": -0.6}), {"d": edits(rows_in)}, FindingSettings()
    )
    found = by_name(rows)["let_me_know"]
    assert (found["under"], found["under_per_instance"]) == (FIRST, pytest.approx(1.0))
    assert found["under_share"] == pytest.approx(0.8 / 0.6)


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
        "added): each instance adds 1\\.0 of this class, whose own effect accounts for 83\\% of it."
    )


def test_rows_without_edits_for_their_dataset_are_left_as_they_are():
    rows = [
        dict(r)
        for r in discovered_findings(table({NUMBERS: 0.5, "numbered_list": 0.6}), {}, FindingSettings())
    ]
    assert place_under_classes(rows, {}) == rows and not any(r.get("under") for r in rows)
