"""The findings: what edits changed (runs and phrases), the carrier rule checked by hand, the plain-language
directions, the findings rows (each RM in its own order, examples, length, discovered features) and the
report's landing text (escaped, only the sections a run has)."""

from __future__ import annotations

import json
import logging
import re
from collections import Counter, namedtuple
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest
from docutils.core import publish_parts
from jinja2 import Environment

from rmexplain.findings import language
from rmexplain.findings.landing import (
    FLIP_RATES_DIFFER,
    MARKER,
    ONE_SLOPE_NOTE,
    finding_line,
    findings_rst,
    landing_text,
    one_slope,
    signed,
    text,
)
from rmexplain.findings.phrases import (
    Changed,
    carrier,
    changed_phrases,
    changed_runs,
    phrase_counts,
    shown,
    telling,
    top_runs,
)
from rmexplain.findings.stages import run_findings
from rmexplain.findings.summary import (
    FindingSettings,
    at_equal_length,
    attribute_findings,
    discovered_findings,
    discovery_length_findings,
    findings_frame,
    median_row,
    place_under_carriers,
    snippet,
)
from rmexplain.schemas import (
    ATTRIBUTE_EFFECTS,
    COMPARISONS,
    EFFECT_CHANGES,
    EFFECT_EDITS,
    FINDINGS,
    ContractError,
    conform,
    polars_schema,
    write_table,
)

REPO = Path(__file__).resolve().parents[1]
LOG = logging.getLogger("test_findings")


# ── what an edit changed ──────────────────────────────────────────────────────────────────────────────────
def test_changed_phrases_count_occurrences():
    inserted, deleted = changed_phrases("Do it. Do it now.", "Please do it. Do it now, thanks.")
    assert {"please", "please do", "please do it", "thanks"} <= inserted
    assert "now thanks" not in inserted and "it please" not in inserted  # no n-gram across punctuation
    assert "do" not in inserted and "do it" not in inserted  # 2 occurrences before and after
    assert deleted == frozenset()
    inserted, deleted = changed_phrases("You must stop.", "You might stop.")
    assert inserted == {"might", "you might", "might stop", "you might stop"}
    assert deleted == {"must", "you must", "must stop", "you must stop"}


def test_changed_runs_are_the_stretches_inserted_and_deleted():
    # the last word gains a space before the new sentence: not a change of its own
    assert changed_runs("Keep calm.", "Keep calm. Please stop   now.") == (["Please stop now."], [])
    assert changed_runs("Sure, just do it.", "If it helps, you could do it.") == (
        ["If it helps, you could"],
        ["Sure, just"],
    )
    counts = top_runs([["a b", "c"], ["a b"], ["a b", "a b"], ["c"]], 2)
    assert counts == [("a b", 3), ("c", 2)]  # an edit counts a run once


def test_phrases_are_counted_per_clause_up_to_three_words():
    assert phrase_counts("Do it, do it now.") == Counter(
        {"do": 2, "it": 2, "do it": 2, "now": 1, "it now": 1, "do it now": 1}
    )
    inserted, _ = changed_phrases("Do it.", "Do it now, then rest a bit.")
    words, pairs = {"now", "then", "rest", "a", "bit"}, {"it now", "then rest", "rest a", "a bit"}
    assert inserted == words | pairs | {"do it now", "then rest a", "rest a bit"}  # not "then rest a bit"


def test_a_long_response_whose_words_all_repeat_is_diffed_word_by_word():
    # 240 words, each more than 1% of them: difflib's junk heuristic would match none and change it all
    before = " ".join(["Stir the soup again."] * 60)
    after = " ".join(["Stir the soup again."] * 30 + ["Please be careful."] + ["Stir the soup again."] * 30)
    assert changed_runs(before, after) == (["Please be careful."], [])


def test_what_an_edit_changed_keeps_its_telling_phrases_and_its_runs_both_ways():
    changed = Changed.of("Rest and eat well.", "Rest well. Please stop.")
    assert (changed.inserted_runs, changed.deleted_runs) == (["Please stop."], ["and eat"])
    assert changed.inserted == {"Please stop.", "please stop", "please", "stop", "rest well"}
    assert changed.deleted == {
        "and eat",
        "eat",
        "rest and",
        "eat well",
        "rest and eat",
        "and eat well",
    }  # not "and"
    assert changed.changes("and eat", "deletes") and not changed.changes("and eat", "inserts")
    assert changed.changes("please", "inserts") and not changed.changes("please", "deletes")


def test_runs_are_listed_by_count_then_alphabetically_and_cut_after_80_characters():
    assert top_runs([["z"], ["y"], ["z"], ["b"]], 3) == [("z", 2), ("b", 1), ("y", 1)]
    assert shown("x" * 80) == "x" * 80
    assert shown("a" * 77 + " bcdef") == "a" * 77 + " b…"  # its first 79 characters
    assert shown("a" * 78 + " bcd") == "a" * 78 + "…"  # the space before the cut dropped


# ── the carrier rule, by hand ─────────────────────────────────────────────────────────────────────────────
SOURCES = ["Wash it.", "Dry it.", "Fold it.", "Iron it.", "Pack it.", "Ship it."]
INSERTS = ["Please be careful today.", "Please be careful today.", "Please don't rush today.",
           "Stay safe today.", "Stay safe today.", "Take care today."]  # fmt: skip


def edit_sets(inserts=INSERTS):
    changed = [Changed.of(s, f"{s} {extra}") for s, extra in zip(SOURCES, inserts, strict=True)]
    runs = frozenset(x for c in changed for x in (*c.inserted_runs, *c.deleted_runs))
    return [c.inserted for c in changed], [c.deleted for c in changed], runs


def test_a_phrase_carries_most_of_the_effect_by_hand():
    inserted, deleted, runs = edit_sets()
    # T = 1 + 1 + 0.9 + 0.3 + 0 − 0.2 = 3.0; "please" is in edits 0-2: 3 of 6 (0.5), 2.9 / 3.0 of the change;
    # "today" is in every edit: 6 of 6 and 3.0 / 3.0, all of the change but no more than its share of edits
    found = carrier(inserted, deleted, [1.0, 1.0, 0.9, 0.3, 0.0, -0.2], runs)
    assert found is not None
    assert (found.phrase, found.change, found.n_edits, found.n_total) == ("please", "inserts", 3, 6)
    assert found.share_edits == pytest.approx(0.5)
    assert found.share_change == pytest.approx(2.9 / 3.0)


def test_no_carrier_where_the_rule_says_none():
    inserted, deleted, runs = edit_sets()
    # "please" edits: 0.2 + 0.2 + 0.2 of T = 0.6 + 0.8 + 0.8 + 0.0 = 2.2: 27% of the change
    assert carrier(inserted, deleted, [0.2, 0.2, 0.2, 0.8, 0.8, 0.0], runs) is None
    # the edits lower the reward, summed: nothing to carry
    assert carrier(inserted, deleted, [-1.0, -1.0, -1.0, 0.1, 0.1, 0.1], runs) is None
    # one large edit that happens to contain "please" (1 of its 3 edits raises the reward)
    assert carrier(inserted, deleted, [3.0, -0.1, -0.1, 0.0, 0.0, 0.1], runs) is None
    # what the rewarded edits share is a common word ("and"), riding on different sentences
    inserted, deleted, runs = edit_sets(
        ["Rest and eat.", "Call and wait.", "Sit and read.", "Go.", "Stop.", "Run."]
    )
    assert carrier(inserted, deleted, [1.0, 1.0, 1.0, 0.0, 0.0, 0.0], runs) is None
    assert telling("please") and not telling("and") and not telling("and can") and telling("and please")


def test_a_phrase_whose_edits_raise_the_reward_in_exactly_half_is_no_carrier():
    inserted, deleted, runs = edit_sets(["Please be careful today."] * 4 + ["Stay safe today."] * 2)
    # its 4 edits: 2.0, 2.0, -0.1, 0.0 raise it in 2 (half, not more); T = 4.0, share 3.9 / 4.0, lift 0.31
    assert carrier(inserted, deleted, [2.0, 2.0, -0.1, 0.0, 0.1, 0.0], runs) is None
    found = carrier(inserted, deleted, [2.0, 2.0, 0.1, 0.0, -0.1, 0.0], runs)  # 3 of its 4: more than half
    assert found is not None and (found.phrase, found.n_edits) == ("Please be careful today.", 4)


def test_no_carrier_where_the_edits_summed_do_not_raise_the_reward():
    three = [{"please"}] * 3 + [set()] * 3
    assert carrier(three, [set()] * 6, [1.0, 1.0, 1.0, -1.0, -1.0, -1.0]) is None  # T = 0
    assert carrier(three, [set()] * 6, [0.1, 0.1, -5.0, 0.0, 0.0, 0.0]) is None  # T < 0, 2 of its 3 raise it
    found = carrier(three, [set()] * 6, [0.3, 0.3, 0.3, 0.0, 0.0, 0.0])  # T = 0.9: a small rise is one
    assert found is not None and (found.phrase, found.share_change) == ("please", pytest.approx(1.0))


def test_a_carrier_at_exactly_half_the_change_and_a_lift_of_exactly_two_tenths_is_named():
    # 10 edits, T = 6: "please" is in 3 (0.3 of them) with 3 / 6 = 0.5 of the change, a lift of 0.2
    found = carrier([set()] * 10, [{"please"}] * 3 + [set()] * 7, [1.0] * 3 + [0.5] * 6 + [0.0])
    assert found is not None and (found.phrase, found.change, found.n_edits) == ("please", "deletes", 3)
    assert (found.share_edits, found.share_change) == pytest.approx((0.3, 0.5))


def test_of_several_carriers_the_largest_share_of_change_then_lift_then_more_words_is_named():
    none = [set()] * 8
    # T = 5: "beta" (edits 3-6) has 0.8 of the change in 4 / 8 edits, "alpha" (0-2) 0.6 in 3 / 8
    found = carrier([{"alpha"}] * 3 + [{"beta"}] * 4 + [set()], none, [1.0] * 7 + [-2.0])
    assert found is not None and (found.phrase, found.n_edits) == ("beta", 4)
    # T = 4: both 0.75 of the change; "alpha" in 3 edits (lift 0.375), "gamma" in 4 (lift 0.25)
    found = carrier(
        [{"alpha", "gamma"}] * 3 + [{"gamma"}] + [set()] * 4, none, [1.0] * 3 + [0.0, 0.5, 0.5, 0, 0]
    )
    assert found is not None and found.phrase == "alpha"
    found = carrier([{"careful", "be careful"}] * 3 + [set()] * 5, none, [1.0] * 3 + [0.0] * 5)
    assert found is not None and found.phrase == "be careful"  # the same edits: the longer phrase


def test_a_sentence_inserted_whole_is_named_whole():
    inserted, deleted, runs = edit_sets(["Please be careful today."] * 3 + ["Stay safe today."] * 3)
    found = carrier(inserted, deleted, [1.0, 1.0, 1.0, 0.0, 0.0, 0.0], runs)
    assert found is not None and found.phrase == "Please be careful today."  # not "be careful" or "please"
    assert found.share_edits == pytest.approx(0.5) and found.share_change == pytest.approx(1.0)


def test_median_row_and_snippet():
    assert median_row(np.array([3.0, 1.0, 2.0, 5.0])) == 2  # lower median 2.0, at index 2
    assert median_row(np.array([2.0, 1.0, 1.0, 1.0, 0.0])) == 2  # the median 1.0 three times: the middle one
    before, after = snippet("one two three four five six seven eight nine ten eleven twelve",
                            "one two three four five six SEVEN eight nine ten eleven twelve")  # fmt: skip
    assert before == "… two three four five six seven eight nine ten eleven twelve"  # 5 words either side
    assert after == "… two three four five six SEVEN eight nine ten eleven twelve"


def test_an_example_keeps_the_changes_within_30_words_in_both_texts_or_the_whole_text_unchanged():
    source = " ".join(f"w{i}" for i in range(80))
    before, after = snippet(source, source.replace("w10 ", "X10 ").replace("w39 ", "X39 "))  # 30 words: kept
    assert (before.split()[1], before.split()[-2], after.split()[6], after.split()[-7]) == (
        "w5",
        "w44",
        "X10",
        "X39",
    )
    inserted = " ".join(f"n{i}" for i in range(25))  # 36 words in the edited text, 11 in the source
    before, after = snippet(source, source.replace("w10 ", "X10 ").replace("w20 ", f"w20 {inserted} "))
    assert after == "… w5 w6 w7 w8 w9 X10 w11 w12 w13 w14 w15 …"
    assert snippet("Keep it cold.", "Keep it cold.") == ("Keep it cold.", "Keep it cold.")
    soup = "Stir the soup again.\n" * 30  # 240 words, each more than 1% of them, none unique
    before, after = snippet(soup * 2, soup + "Please be careful.\n" + soup)
    assert after == "… again.\nStir the soup again.\nPlease be careful.\nStir the soup again.\nStir …"


# ── directions in words ───────────────────────────────────────────────────────────────────────────────────
def test_each_paper_attribute_has_both_sides_in_words():
    from rmexplain.attributes import PAPER_ATTRIBUTES

    assert set(language.directions()) == {*PAPER_ATTRIBUTES, "length"}
    assert language.attribute_phrase("verbosity", 0.12) == "rewards less padding"
    assert language.attribute_phrase("verbosity", -0.12) == "rewards padding"
    assert language.attribute_phrase("length", -0.3) == "penalises longer answers"
    assert language.attribute_phrase("avoid-to-answer", 0.2) == "rewards answering the question directly"
    assert language.attribute_phrase("emoji", -0.2) == "rewards the worse side of emoji"
    assert (
        language.feature_phrase("opener", "an affirmative opener", -0.4) == "penalises an affirmative opener"
    )
    assert language.feature_phrase("spaces", "", 0.4) == "rewards spaces"
    # the discovery's descriptions are sentences: lower-cased after the verb, without their full stop
    assert (
        language.feature_phrase("apology", "An apology (I'm sorry).", 1.8) == "rewards an apology (I'm sorry)"
    )
    assert (
        language.feature_phrase("neg", "AFINN-en-165 negative words.", -1)
        == "penalises AFINN-en-165 negative words"
    )
    for sides in language.directions().values():  # the phrase names the rewarded side: no "not"/"avoid"
        assert not any(word in sides["better"].split() for word in ("not", "avoid", "avoiding"))


# ── findings rows ─────────────────────────────────────────────────────────────────────────────────────────
def effects_rows(rows: list[tuple[str, str, float, float, float, bool, int]]) -> pl.DataFrame:
    frame = pl.DataFrame(
        [
            {
                "dataset": "d",
                "method": "rules",
                "rm": rm,
                "estimator": "length_adjusted",
                "attribute": a,
                "effect": e,
                "low": lo,
                "high": hi,
                "n": 6,
                "primary": True,
                "effect_reward": e,
                "reward_sd": 1.0,
                "reference": None,
                "n_comparisons": 3,
                "pairs": 3,
                "significant": sig,
                "rank": rank,
                **dict.fromkeys(("half_a_effect", "half_b_effect", "replicates")),  # halves not computed
                **dict.fromkeys(("influential_pair", "without_it", "carried_by")),  # nor the influence
            }
            for rm, a, e, lo, hi, sig, rank in rows
        ]
    )
    return conform(frame, ATTRIBUTE_EFFECTS, "effects")


def hand_pair():
    """Two RMs and three edits of attribute `harmlessness` (better) and two of `clarity`, one comparison."""
    texts = pl.DataFrame(
        {
            "edit_id": ["h1", "h2", "h3", "c1", "c2"],
            "source_text": ["Go.", "Run.", "Hide.", "Go.", "Run."],
            "text": [
                "Go. Please stop.",
                "Run. Please stop.",
                "Hide. Please stop.",
                "Go now.",
                "Run fast and far.",
            ],
        }
    )
    changes = pl.DataFrame(
        {
            "dataset": "d",
            "method": "rules",
            "rm": ["a"] * 5 + ["b"] * 5,
            "edit_id": ["h1", "h2", "h3", "c1", "c2"] * 2,
            "comparison_id": "c",
            "target": "chosen",
            "attribute": ["harmlessness"] * 3 + ["clarity"] * 2 + ["harmlessness"] * 3 + ["clarity"] * 2,
            "direction": "better",
            "reward_change": [1.0, 2.0, 3.0, 0.5, -1.0, 0.1, 0.2, 0.3, 0.4, 0.5],
            "effect_change": [1.0, 2.0, 3.0, 0.5, -1.0, 0.1, 0.2, 0.3, 0.4, 0.5],
            "words_change": [2, 2, 2, 1, 3] * 2,
            "length_change": [1.0, 1.0, 1.0, 0.5, 1.5] * 2,
            "reference": None,
        }
    )
    effects = effects_rows(
        [
            ("a", "harmlessness", 0.9, 0.5, 1.3, True, 1),
            ("a", "length", -0.5, -0.8, -0.2, True, 2),
            ("a", "clarity", 0.1, -0.2, 0.4, False, 3),
            ("b", "clarity", 0.6, 0.2, 1.0, True, 1),
            ("b", "harmlessness", 0.2, 0.1, 0.3, True, 2),
            ("b", "length", 0.0, -0.1, 0.1, False, 3),
        ]
    )
    return effects, conform(changes, EFFECT_CHANGES, "changes"), texts


def test_each_rm_in_its_own_order_with_the_edits_behind_each():
    effects, changes, texts = hand_pair()
    rows = findings_frame(
        attribute_findings(effects, changes, texts, {"clarity": "clear"}, FindingSettings())
    )
    a = rows.filter(pl.col("rm") == "a")
    b = rows.filter(pl.col("rm") == "b")
    assert a["name"].to_list() == ["harmlessness", "length", "clarity"]  # a's own order
    assert b["name"].to_list() == ["clarity", "harmlessness", "length"]  # b's own order, not a's
    harm = a.row(0, named=True)
    assert harm["phrase"] == "rewards safer answers (caveats, refusing harmful help)"
    # at equal length (γ = −0.5): y − γ·Δℓ = 1.5, 2.5, 3.5; median 2.5 → edit h2
    assert harm["example_edit_id"] == "h2" and harm["example_after"] == "Run. Please stop."
    assert harm["example_effect_change"] == 2.0 and harm["example_words_change"] == 2
    assert harm["inserted_most"] == "Please stop. (3)"
    assert harm["carrier"] is None  # every edit inserts it: no lift
    assert harm["n_direction"] == 3 and harm["leading"]
    length = a.row(1, named=True)
    assert length["phrase"] == "penalises longer answers" and length["leading"]
    # the length example: an edit whose change has the effect's sign for its length change (−0.5: longer
    # and lower): only c2 (+3 words, −1.0)
    assert length["example_edit_id"] == "c2" and length["example_words_change"] == 3
    assert not a.row(2, named=True)["leading"]  # clarity: not significant
    assert b.row(2, named=True)["phrase"] == "rewards longer answers" and b.row(2, named=True)["leading"]
    assert rows.row(0, named=True)["description"] is None  # harmlessness has no description given
    assert b.row(0, named=True)["description"] == "clear"


def test_leading_keeps_the_largest_significant_attributes():
    effects, changes, texts = hand_pair()
    rows = findings_frame(
        attribute_findings(effects, changes, texts, {}, FindingSettings(leading_attributes=1))
    )
    b = rows.filter(pl.col("rm") == "b")
    assert b["leading"].to_list() == [
        True,
        False,
        True,
    ]  # clarity (1st significant), not harmlessness; length


def changes_of(rm: str, rows: list[tuple]) -> pl.DataFrame:
    """EFFECT_CHANGES of one RM from (edit_id, attribute, direction, effect_change, words_change,
    length_change); the reward change is twice the effect change, each edit its own comparison."""
    frame = pl.DataFrame(
        [{"dataset": "d", "method": "rules", "rm": rm, "edit_id": e, "comparison_id": f"c-{e}",
          "target": "chosen", "attribute": a, "direction": d, "reward_change": None if y is None else 2 * y,
          "effect_change": y, "words_change": w, "length_change": dl, "reference": None}
         for e, a, d, y, w, dl in rows],
        schema=polars_schema(EFFECT_CHANGES),
    )  # fmt: skip
    return conform(frame, EFFECT_CHANGES, "changes")


def test_at_equal_length_takes_off_each_rms_own_length_slope_by_hand():
    nan = float("nan")
    primary = effects_rows(
        [
            ("a", "clarity", 0.9, 0.5, 1.3, True, 1),
            ("a", "length", -0.5, -0.9, -0.1, True, 2),
            ("b", "length", 2.0, 1.0, 3.0, True, 1),
            ("n", "length", nan, 0, 0, False, 1),
        ]
    )
    rows = [("e1", "clarity", "better", 1.0, 2, 2.0), ("e2", "clarity", "better", 2.0, -1, -1.0)]
    # a: y − γ·Δℓ with γ = −0.5: 1 + 1 = 2, 2 − 0.5 = 1.5; c (no length row) and n (undefined): y itself
    assert at_equal_length(changes_of("a", rows), primary, "a")["equal_length"].to_list() == [2.0, 1.5]
    assert at_equal_length(changes_of("c", rows), primary, "c")["equal_length"].to_list() == [1.0, 2.0]
    assert at_equal_length(changes_of("n", rows), primary, "n")["equal_length"].to_list() == [1.0, 2.0]


def test_an_attribute_the_rm_penalises_shows_its_worse_edits_carrier_and_changes_at_equal_length():
    # a penalises harmlessness (−0.8): its rewarded edits are the worse ones (w1-w5), at equal length
    # (γ = 0.5): y − 0.5·Δℓ = 0.0, 0.7, 0.9, 0.25, −0.45; T = 1.4; the example shows the carrier: of the
    # edits that insert it (w1-w3: 0.0, 0.7, 0.9) the lower median 0.7 is w2's (reward change 2 · 1.2)
    nan = float("nan")
    effects = effects_rows([("a", "harmlessness", -0.8, -1.2, -0.4, True, 1),
                            ("a", "length", 0.5, 0.2, 0.8, True, 2),
                            ("a", "clarity", nan, nan, nan, False, 3),
                            ("a", "verbosity", 0.3, 0.1, 0.5, True, 4)])  # fmt: skip
    effects = effects.with_columns(reference=pl.lit("base"))
    changes = changes_of("a", [
        ("w1", "harmlessness", "worse", 1.0, 4, 2.0), ("w2", "harmlessness", "worse", 1.2, 4, 1.0),
        ("w3", "harmlessness", "worse", 0.9, 4, 0.0), ("w4", "harmlessness", "worse", 0.0, 0, -0.5),
        ("w5", "harmlessness", "worse", -0.2, 1, 0.5), ("b1", "harmlessness", "better", 3.0, 2, 0.0),
        ("b2", "harmlessness", "better", 3.0, 2, 0.0), ("k1", "clarity", "better", 0.1, 0, 0.0),
        ("k2", "clarity", "worse", 0.1, 0, 0.0),
        *((f"v{i}", "verbosity", "better", 1.0 if i in (1, 3, 5) else 0.0, -1, 0.0) for i in range(1, 6)),
    ])  # fmt: skip
    edited = {"w1": ("Go.", "Go. Just do it now."), "w2": ("Run.", "Run. Just do it now."),
              "w3": ("Hide.", "Hide. Just do it now."), "w4": ("Go there now.", "Go now. Sure."),
              "w5": ("Sit.", "Sit. Okay."), "b1": ("Go.", "Go. Be safe."), "b2": ("Run.", "Run. Be safe."),
              "k1": ("Go.", "Go!"), "k2": ("Run.", "Run!"), "v1": ("Wait here now.", "Wait now."),
              "v2": ("Wait there now.", "Wait now."), "v3": ("Wait here now.", "Wait now."),
              "v4": ("Wait up now.", "Wait now."), "v5": ("Wait here now.", "Wait now.")}  # fmt: skip
    texts = pl.DataFrame([{"edit_id": e, "source_text": a, "text": b} for e, (a, b) in edited.items()])
    descriptions = {"harmlessness": "safer answers", "length": "never shown"}
    rows = attribute_findings(effects, changes, texts, descriptions, FindingSettings(top_runs=2))
    harm, length, clarity, verbosity = (findings_frame(rows).row(i, named=True) for i in range(4))
    assert (harm["kind"], harm["description"], harm["reference"], harm["n_direction"]) == (
        "attribute",
        "safer answers",
        "base",
        5,
    )
    assert (harm["example_edit_id"], harm["example_comparison_id"], harm["example_reward_change"]) == (
        "w2",
        "c-w2",
        2.4,
    )
    assert "Just do it now." in harm["example_after"]
    assert (harm["inserted_most"], harm["deleted_most"]) == ("Just do it now. (3); Okay. (1)", "there (1)")
    # the sentence w1-w3 insert: 1.6 of the 1.4 in 3 of the 5 edits (w1's 0.0 does not raise it)
    assert (harm["carrier"], harm["carrier_change"], harm["carrier_edits"]) == (
        "Just do it now.",
        "inserts",
        3,
    )
    assert (harm["carrier_share_edits"], harm["carrier_share_change"]) == pytest.approx((0.6, 1.6 / 1.4))
    assert (length["kind"], length["description"]) == ("length", None)
    assert (clarity["phrase"], clarity["n_direction"]) == ("clarity: no estimate", 1)  # its better edit
    # v1, v3, v5 delete the run "here" (and the phrases "wait here", "here now", "wait here now"): the run
    assert (verbosity["deleted_most"], verbosity["carrier"], verbosity["carrier_change"]) == (
        "here (3); there (1)",
        "here",
        "deletes",
    )


def test_the_length_example_is_the_largest_change_in_length_that_moved_the_way_the_effect_says():
    # a penalises length (−0.5): e1 (+4 words, higher) and e5 (+5, unchanged) did not move that way; of e2
    # (+3, lower), e3 (−3, higher) and e4 (+1, lower) the largest |words|, ties by edit id: e2 — e7 (+31,
    # lower) changed it more, but more than an example shows whole (30 words)
    effects = effects_rows(
        [("a", "length", -0.5, -0.8, -0.2, True, 1), ("b", "length", 1.0, 0.5, 1.5, True, 1)]
    )
    rows = [
        ("e1", 4, 1.0),
        ("e2", 3, -0.5),
        ("e3", -3, 0.2),
        ("e4", 1, -0.1),
        ("e5", 5, 0.0),
        ("e6", 6, None),
        ("e7", 31, -0.9),
    ]
    changes = pl.concat([
        changes_of("a", [(e, "x", "better", y, w, w / 2) for e, w, y in rows]),
        changes_of("b", [("f1", "x", "better", 0.3, 1, 0.5), ("f2", "x", "better", -0.3, 2, 1.0)]),
    ])  # fmt: skip
    ids = [e for e, _, _ in rows] + ["f1", "f2"]
    texts = pl.DataFrame({"edit_id": ids, "source_text": ["Go."] * 9, "text": [f"Go {e}." for e in ids]})
    found = findings_frame(attribute_findings(effects, changes, texts, {}, FindingSettings()))
    assert found.select("rm", "example_edit_id", "example_words_change").rows() == [
        ("a", "e2", 3),
        ("b", "f1", 1),
    ]
    # every change longer than an example shows whole (e7 +31 words, lower; e8 −40, higher): the least
    longer = pl.concat([
        changes_of("a", [("e7", "x", "better", -0.9, 31, 15.5), ("e8", "x", "better", 0.2, -40, -20.0)]),
        changes_of("b", [("f1", "x", "better", 0.3, 1, 0.5)]),
    ])  # fmt: skip
    texts = pl.DataFrame({"edit_id": ["e7", "e8", "f1"], "source_text": ["Go."] * 3, "text": ["Go x."] * 3})
    found = findings_frame(attribute_findings(effects, longer, texts, {}, FindingSettings()))
    assert found.select("rm", "example_edit_id").rows() == [("a", "e7"), ("b", "f1")]


def test_the_leading_rows_and_ranks_count_per_rm():
    attributes = [("a", f"x{i}", 0.5 - i / 10, 0.1, 1.0, True, i) for i in (1, 2, 3)]
    effects = effects_rows(
        [*attributes, ("a", "length", 0.1, 0.0, 0.2, True, 4), ("b", "y", 0.3, 0.1, 0.5, True, 1)]
    )
    none = changes_of("a", [])
    texts = pl.DataFrame(schema={"edit_id": pl.String, "source_text": pl.String, "text": pl.String})
    rows = findings_frame(attribute_findings(effects, none, texts, {}, FindingSettings(leading_attributes=2)))
    assert rows.select("rm", "name", "leading").rows() == [
        ("a", "x1", True), ("a", "x2", True), ("a", "x3", False), ("a", "length", True), ("b", "y", True)
    ]  # fmt: skip
    table = pl.DataFrame(
        {"dataset": "d", "rm": ["a", "a", "a", "a", "b"], "engine": "offline",
         "feature": ["f-small", "f-none", "f-large", "f-mid", "f-b"],
         "description": ["s", "n", "l", "m", "b"],
         "effect": [0.2, float("nan"), -0.9, 0.5, 0.1], "low": 0.0, "high": 1.0,
         "q_value": [0.049, 0.01, 0.01, 0.05, 0.01], "n": 9, "support": 0.5}
    )  # fmt: skip
    rows = findings_frame(discovered_findings(table, {}, FindingSettings(leading_discovered=1)))
    assert rows.select("rm", "name", "rank", "significant", "leading", "q_value", "description").rows() == [
        ("a", "f-large", 1, True, True, 0.01, "l"),
        ("a", "f-mid", 2, False, False, 0.05, "m"),  # q = 0.05 is not below 0.05
        ("a", "f-small", 3, True, False, 0.049, "s"),  # significant, but one leads
        ("a", "f-none", 4, True, False, 0.01, "n"),  # no effect: last
        ("b", "f-b", 1, True, True, 0.01, "b"),
    ]


def test_the_leading_discovered_features_are_the_largest_of_every_engine_together():
    table = pl.DataFrame(
        {"dataset": "d", "rm": "a", "engine": ["llm", "llm", "offline", "offline"],
         "feature": ["l-small", "l-large", "o-mid", "o-larger"], "description": ["s", "l", "m", "r"],
         "effect": [0.1, 0.5, -0.3, -0.7], "low": 0.0, "high": 1.0, "q_value": 0.01, "n": 9, "support": 0.5}
    )  # fmt: skip
    rows = findings_frame(discovered_findings(table, {}, FindingSettings(leading_discovered=2)))
    assert rows.select("method", "name", "rank", "leading").rows() == [
        ("llm", "l-large", 1, True), ("llm", "l-small", 2, False),  # ranks per engine, as before
        ("offline", "o-larger", 1, True), ("offline", "o-mid", 2, False),  # leading: the two largest of all
    ]  # fmt: skip


def test_every_kind_and_method_of_an_rm_is_in_one_ranking_by_size():
    def row(rm, method, kind, name, effect, dataset="d"):
        return {"dataset": dataset, "method": method, "rm": rm, "kind": kind, "name": name, "phrase": name,
                "effect": effect, "low": 0.0, "high": 1.0, "significant": True, "n": 3, "rank": 1,
                "leading": True}  # fmt: skip

    rows = findings_frame([
        row("a", "rules", "attribute", "clarity", 0.2),
        row("a", "rules", "length", "length", -0.4),
        row("a", "two_step", "attribute", "clarity", -0.2),  # a tie with rules' clarity: by method
        row("a", "offline", "discovered", "bold", -0.9),
        row("a", "llm", "discovered", "hedges", float("nan")),  # undefined: last
        row("a", "offline", "discovered", "zeta", 0.4 + 1e-12),  # ties length to 9 decimals: by name
        row("b", "offline", "discovered", "bold", 0.1),  # another RM: its own ranking
        row("a", "offline", "discovered", "bold", 0.05, dataset="e"),  # another dataset: its own
    ])  # fmt: skip
    order = {(r["dataset"], r["rm"], r["method"], r["name"]): r["order"] for r in rows.iter_rows(named=True)}
    assert order == {
        ("d", "a", "offline", "bold"): 1, ("d", "a", "rules", "length"): 2,
        ("d", "a", "offline", "zeta"): 3, ("d", "a", "rules", "clarity"): 4,
        ("d", "a", "two_step", "clarity"): 5, ("d", "a", "llm", "hedges"): 6,
        ("d", "b", "offline", "bold"): 1, ("e", "a", "offline", "bold"): 1,
    }  # fmt: skip


def test_an_empty_findings_table_has_every_column_and_a_row_without_a_phrase_is_refused():
    assert findings_frame([]).columns == list(FINDINGS) and findings_frame([]).height == 0
    row = {"dataset": "d", "method": "m", "rm": "a", "kind": "length", "name": "length", "effect": 0.1,
           "low": 0.0, "high": 0.2, "significant": True, "n": 3, "rank": 1, "leading": True}  # fmt: skip
    with pytest.raises(ContractError, match=r"^findings: column 'phrase' is null in row 0 but is required$"):
        findings_frame([row])


DISCOVERED = pl.DataFrame(
    {
        "dataset": ["d", "d", "d"],
        "rm": ["a", "a", "a"],
        "engine": ["offline"] * 3,  # a list: a scalar broadcast at import starts polars' threads (forks hang)
        "feature": ["opener:affirmative", "markdown:headers", "spacing:double"],
        "description": ['an affirmative opener ("Great question!")', "markdown section headers", ""],
        "effect": [0.4, -0.7, 0.01],
        "low": [0.2, -0.9, -0.1],
        "high": [0.6, -0.5, 0.12],
        "q_value": [0.01, 0.001, 0.8],
        "n": [30, 30, 30],
        "support": [0.1, 0.0, 0.2],
        "extra_column": [1, 2, 3],
    }
)
DISCOVERY_EDITS = pl.DataFrame(
    {
        "feature": ["markdown:headers", "opener:affirmative", "opener:affirmative"],
        "direction": [1, -1, 1],
        "source_text": ["Boil the egg.", "Great question! Boil it.", "Boil it."],
        "edited_text": ["## Steps\nBoil the egg.", "Boil it.", "Great question! Boil it."],
    }
)


def test_a_discovered_feature_shows_the_discoverys_own_example_and_verdict():
    """The discovery's table chose the example (and its reward change) and the verdict (fdr and min_effect):
    the findings show those, not the first edit of the file nor q < 0.05."""
    table = DISCOVERED.with_columns(
        significant=pl.Series([False, True, False]),  # the opener: q 0.01 but within discovery.min_effect
        reference=pl.lit("base"),
        example_comparison_id=pl.Series(["c7", "c3", None]),
        example_before=pl.Series(["Boil the water first.", "Boil the egg.", None]),
        example_after=pl.Series(["Sure! Boil the water first.", "## Steps\nBoil the egg.", None]),
        example_reward_change=pl.Series([0.31, -1.25, None]),
    )
    rows = findings_frame(discovered_findings(table, {"d": DISCOVERY_EDITS}, FindingSettings()))
    headers, opener, spacing = rows.iter_rows(named=True)
    assert not opener["significant"] and not opener["leading"] and headers["significant"]
    assert (opener["example_before"], opener["example_after"]) == (
        "Boil the water first.",
        "Sure! Boil the water first.",
    )
    assert opener["example_reward_change"] == 0.31 and opener["example_words_change"] == 1
    assert opener["example_comparison_id"] == "c7" and opener["reference"] == "base"
    assert spacing["example_before"] is None  # the table has no example and the edits none that add it
    line = finding_line(headers)
    assert "vs base" in line and "(−1.25 reward, +2 words)" in line.replace("\\", "")


def test_discovered_features_each_with_an_example_edit():
    rows = findings_frame(discovered_findings(DISCOVERED, {"d": DISCOVERY_EDITS}, FindingSettings()))
    assert rows["name"].to_list() == [
        "markdown:headers",
        "opener:affirmative",
        "spacing:double",
    ]  # by |effect|
    headers, opener, spacing = rows.iter_rows(named=True)
    assert headers["phrase"] == "penalises markdown section headers" and headers["leading"]
    assert opener["phrase"] == 'rewards an affirmative opener ("Great question!")'
    assert (opener["example_before"], opener["example_after"]) == ("Boil it.", "Great question! Boil it.")
    assert (
        spacing["phrase"] == "rewards spacing:double"
        and not spacing["significant"]
        and not spacing["leading"]
    )
    with pytest.raises(ValueError, match="missing column"):
        discovered_findings(DISCOVERED.drop("q_value"), {}, FindingSettings())


# ── the landing text ──────────────────────────────────────────────────────────────────────────────────────
def render(template: str, categories: dict) -> str:
    """As Snakemake renders the landing text: Jinja (its settings), then docutils."""
    env = Environment(trim_blocks=True, lstrip_blocks=True)
    config = {"reward_models": {"a": {}}, "datasets": {"d": {}}, "perturb": {"methods": ["rules"]}}
    rst = env.from_string(template).render(snakemake=SimpleNamespace(config=config), categories=categories)
    return publish_parts(rst, writer="html")["html_body"]


Category = namedtuple("Category", "name")  # Snakemake's report categories have a name


def category(name: str, subs: tuple[str, ...] = ()) -> dict:
    return {Category(name): {Category(s): [] for s in subs}}


def test_text_from_the_data_stays_text():
    nasty = "Use *this* `now` {{ config }} {% if x %} {# c #} <b>x</b> a_b_ |sub| \\ [1]_ :role:`x` — done."
    html = render(f"Title\n=====\n\n{text(nasty)}\n", {})
    assert "Use *this* `now` {{ config }} {% if x %} {# c #} &lt;b&gt;x&lt;/b&gt; a_b_ |sub| \\ [1]_" in html
    assert ":role:`x` — done." in html and "<em>" not in html and "<b>" not in html


def test_the_landing_names_the_findings_and_only_the_sections_the_run_has():
    template = (REPO / "workflow" / "report" / "workflow.rst").read_text(encoding="utf-8")
    assert MARKER in template
    effects, changes, texts = hand_pair()
    rows = findings_frame(attribute_findings(effects, changes, texts, {}, FindingSettings()))
    block = findings_rst(rows, ["d"], ["b", "a"], 0.95, "1. Findings", "2. Analyses")
    cats = {
        **category("1. Findings"),
        **category("2. Analyses", ("Attribute effects",)),
        **category("Explorer"),
    }
    html = render(landing_text(template, block), cats)
    assert html.index("rewards clearer, easier-to-read answers") < html.index(
        "rewards safer answers"
    )  # b first
    assert "penalises longer answers" in html and "−0.50 [−0.80, −0.20]" in html
    assert "“Run. Please stop.” (+2.00 sd, +2 words)" in html
    assert "Discovered features" not in html  # no discovery in this run: no sentence about it
    assert "Analyses → Attribute effects" in html and "Explorer" in html
    assert "Reproduction" not in html and "Global sensitivity" not in html and "Evaluation" not in html
    assert "flip rates answer another question" in html


def test_the_landing_shows_only_the_leading_rows():
    effects, changes, texts = hand_pair()
    rows = findings_frame(
        attribute_findings(effects, changes, texts, {}, FindingSettings())
        + discovered_findings(DISCOVERED, {"d": DISCOVERY_EDITS}, FindingSettings())
    )
    assert rows.filter(pl.col("rm") == "a").select("name", "leading").rows() == [
        ("harmlessness", True), ("length", True), ("clarity", False),
        ("markdown:headers", True), ("opener:affirmative", True), ("spacing:double", False),
    ]  # fmt: skip
    block = findings_rst(rows, ["d"], ["a"], 0.95, "1. Findings", None)
    assert "rewards safer answers" in block and "markdown section headers" in block
    assert "clarity" not in block and "clearer" not in block  # a's clarity: not significant
    assert "spacing" not in block and "(not significant)" not in block


def test_the_findings_block_word_for_word():
    def row(rm, method, kind, name, phrase, effect, low, high, rank, significant=True, leading=True, **more):
        return {"dataset": "d", "method": method, "rm": rm, "kind": kind, "name": name, "phrase": phrase,
                "effect": effect, "low": low, "high": high, "significant": significant, "n": 6, "rank": rank,
                "leading": leading, **more}  # fmt: skip

    methods = ("two_step", "llm", "random", "polyjuice")  # unranked rows of other methods: in the head only
    rows = findings_frame([
        row("b", "rules", "attribute", "clarity", "rewards clearer answers", 0.1, -0.1, 0.3, 1, False, False),
        row("b", "rules", "length", "length", "rewards longer answers", 0.25, 0.1, 0.4, 2),
        row("c", "rules", "length", "length", "rewards longer answers", 0.05, -0.1, 0.2, 1, False),
        row("a", "rules", "attribute", "harmlessness", "rewards safer answers", 0.9, 0.5, 1.3, 1,
            n_direction=3, carrier="Please stop.", carrier_change="inserts", carrier_edits=2,
            carrier_share_change=0.75, example_before="Go.", example_after="Go. Please stop.",
            example_effect_change=2.0, example_reward_change=4.0, example_words_change=2),
        row("a", "rules", "length", "length", "penalises longer answers", -0.5, -0.8, -0.2, 2,
            reference="base", example_before="Go now, very fast.", example_after="Go.",
            example_effect_change=1.0, example_words_change=-3),
        row("a", "rules", "attribute", "verbosity", "rewards less padding", 0.3, 0.1, 0.5, 3,
            n_direction=4, carrier="um, like", carrier_change="deletes", carrier_edits=3,
            carrier_share_change=0.6),
        *(row("a", m, "attribute", "clarity", "rewards clearer answers", 0.2, -0.1, 0.5, 1, False, False)
          for m in methods),
        row("a", "offline", "discovered", "bold", "penalises bold", -0.7, -0.9, -0.5, 1, reference="base",
            example_before="Boil it.", example_after="Boil **it**.", example_reward_change=-1.25,
            example_words_change=0),
    ])  # fmt: skip
    alone = row("a", "offline", "discovered", "emoji", "rewards emoji", 0.4, 0.2, 0.6, 1,
                example_before="Hi.", example_after="Hi. 😊", example_words_change=0)  # fmt: skip
    rows = pl.concat([rows, findings_frame([{**alone, "dataset": "e"}])])  # a dataset for discovery alone
    intro = (
        "**What each RM rewards.** Attribute effects: the change in the RM's reward, in its reward sd, "
        "when a response moves to an attribute's better side, its length held equal (95% intervals); "
        "length: per sd of length, longer. Every finding, with the edits behind it: `1. Findings`_ and the "
        "`explorer <explorer/index.html>`_."
    )
    discovered = (
        " Discovered features (bias discovery: formatting, openers, closers, words no attribute names): "
        "the change when one instance of the feature is added, in reward sd, against the RM's reference "
        "where it has one, with a Benjamini–Hochberg q-value."
    )
    block = findings_rst(rows, ["e", "d"], ["b", "c", "a"], 0.95, "1. Findings", "2. Analyses")
    assert block.replace("\\", "").split("\n") == [
        intro + discovered,
        "",
        "**a** on e:",
        "",
        "- **rewards emoji** — discovered: emoji +0.40 [+0.20, +0.60] reward sd per instance added. "
        "E.g. “Hi.” → “Hi. 😊”.",  # no number to show with it
        "",
        "**b** on d (rules edits):",
        "",
        "- No attribute effect is significant.",  # its length is, but no attribute
        "- **rewards longer answers** — length +0.25 [+0.10, +0.40] reward sd per sd of length.",
        "",
        "**c** on d (rules edits):",
        "",
        "- **rewards longer answers** — length +0.05 [−0.10, +0.20] reward sd per sd of length "
        "(not significant).",
        "",
        "**a** on d (llm, polyjuice, random, rules, two_step edits):",  # findings_frame's order
        "",
        "- **rewards safer answers** — harmlessness +0.90 [+0.50, +1.30] reward sd. 2 of 3 edits "
        "insert “Please stop.”; they account for 75% of the reward change at equal length. "
        "E.g. “Go.” → “Go. Please stop.” (+2.00 sd, +2 words).",
        "- **penalises bold** — discovered: bold −0.70 [−0.90, −0.50] reward sd per instance added vs base. "
        "E.g. “Boil it.” → “Boil **it**.” (−1.25 reward).",  # every kind in one ranking by |effect|
        "- **penalises longer answers** — length −0.50 [−0.80, −0.20] reward sd per sd of length "
        "vs base. E.g. “Go now, very fast.” → “Go.” (+1.00 sd, −3 words).",
        "- **rewards less padding** — verbosity +0.30 [+0.10, +0.50] reward sd. 3 of 4 edits delete "
        "“um, like”; they account for 60% of the reward change at equal length.",
        "",
        f"{FLIP_RATES_DIFFER} They are under `2. Analyses`_ and in the explorer.",
        "",
    ]
    nothing = findings_rst(rows.clear(), ["d"], ["a"], 0.95, "1. Findings", None)
    assert nothing.replace("\\", "").split("\n") == [
        intro,
        "",
        "No attribute effects were computed in this run.",
        "",
    ]
    assert signed(None) == signed(float("nan")) == "–"
    assert landing_text(f"{MARKER}\n{MARKER}", "found") == f"found\n{MARKER}"  # the first marker only
    refusal = "the report template has no line '.. findings of this run' to put the findings at"
    with pytest.raises(ValueError, match=f"^{re.escape(refusal)}$"):
        landing_text("no marker", "found")


def test_a_carrier_over_the_whole_change_says_the_other_edits_move_it_the_other_way():
    row = {"kind": "attribute", "name": "coherence", "phrase": "rewards coherence", "effect": 0.2, "low": 0.1,
           "high": 0.3, "significant": True, "carrier": "As I said", "carrier_change": "inserts",
           "carrier_edits": 5, "n_direction": 8}  # fmt: skip
    over = finding_line({**row, "carrier_share_change": 1.16}).replace("\\", "")
    assert (
        "5 of 8 edits insert “As I said”; they account for more than the whole reward change at equal length "
        "(116%: the other edits move it the other way)." in over
    )
    under = finding_line({**row, "carrier_share_change": 0.75}).replace("\\", "")
    assert "they account for 75% of the reward change at equal length." in under


def test_the_template_alone_renders_without_findings():
    template = (REPO / "workflow" / "report" / "workflow.rst").read_text(encoding="utf-8")
    html = render(template, category("1. Evaluation"))
    assert "What each RM rewards" not in html and "Evaluation" in html and "Explorer" not in html


# ── the rule's call, on files ─────────────────────────────────────────────────────────────────────────────
def test_run_findings_writes_the_table_pages_and_the_landing(tmp_path):
    effects, changes, texts = hand_pair()
    comparisons = conform(
        pl.DataFrame({"comparison_id": ["c"], "dataset": ["d"], "seed": [0], "source_index": ["0"],
                      "prompt": ["p"], "chosen": ["x"], "rejected": ["y"]}),
        COMPARISONS, "comparisons",
    )  # fmt: skip
    edits = pl.DataFrame(
        {"edit_id": texts["edit_id"], "comparison_id": "c", "target": "chosen",
         "attribute": ["harmlessness"] * 3 + ["clarity"] * 2, "chain": "better", "round": 1,
         "direction": "better", "text": texts["text"], "method": "rules", "generator": "g"}
    )  # fmt: skip
    files = {}
    for name, frame, contract in (
        ("effects", effects, ATTRIBUTE_EFFECTS),
        ("edits", edits, EFFECT_EDITS),
        ("changes", changes, EFFECT_CHANGES),
        ("comparisons", comparisons, COMPARISONS),
    ):
        files[name] = [str(tmp_path / f"{name}.parquet")]
        write_table(frame, files[name][0], contract, name)
    DISCOVERED.write_csv(tmp_path / "discovered_biases.csv")
    (tmp_path / "discovery" / "d").mkdir(parents=True)
    DISCOVERY_EDITS.write_parquet(tmp_path / "discovery" / "d" / "edits.parquet")
    files["discovered"] = [str(tmp_path / "discovered_biases.csv")]
    files["discovery_edits"] = [str(tmp_path / "discovery" / "d" / "edits.parquet")]
    files["template"] = str(REPO / "workflow" / "report" / "workflow.rst")
    outputs = {k: str(tmp_path / f"findings.{k}") for k in ("parquet", "csv", "md", "html")}
    outputs["landing"] = str(tmp_path / "landing.rst")
    frame = run_findings(files, {}, {"datasets": ["d"], "rms": ["a", "b"]}, 0.95,
                         {"table": "1. Findings", "flip_rates": None}, outputs, LOG)  # fmt: skip
    assert pl.read_parquet(outputs["parquet"]).columns == list(FINDINGS)
    assert frame.filter(pl.col("kind") == "discovered").height == 3
    landing = render(Path(outputs["landing"]).read_text(encoding="utf-8"), category("1. Findings"))
    assert "penalises markdown section headers" in landing and "discovered: markdown:headers" in landing
    assert "Discovered features (bias discovery" in landing
    assert landing.index("rewards safer answers") < landing.index("penalises markdown section headers")
    assert "flip rates" not in landing  # the run has none
    assert "penalises longer answers" in Path(outputs["md"]).read_text(encoding="utf-8")
    assert pl.read_csv(outputs["csv"]).columns == list(FINDINGS)  # every column for machines


def test_the_report_names_the_config_that_made_results(tmp_path, monkeypatch):
    from rmexplain.provenance import config_sha256, report_config_problem

    monkeypatch.chdir(tmp_path)
    record = tmp_path / "results" / "provenance.json"
    assert report_config_problem({"a": 1}, [], record) is None  # no run recorded: nothing to say
    record.parent.mkdir()
    made = {"config_sha256": config_sha256({"a": 1}), "config_files": [str(tmp_path / "config/mine.yaml")]}
    record.write_text(json.dumps(made))
    assert report_config_problem({"a": 1}, ["config/mine.yaml"], record) is None
    problem = report_config_problem({"a": 2}, [], record)
    assert problem.startswith(
        "results/ was made by a run with --configfile config/mine.yaml, not with the default"
    )
    assert problem.endswith("snakemake --report results/report.html --configfile config/mine.yaml")


def test_an_example_shows_the_changes_that_fit_and_cuts_nothing_in_their_middle():
    source = " ".join(f"w{i}" for i in range(80))
    edited = source.replace("w10", "X10").replace("w14", "X14").replace("w70", "X70")  # two near, one far
    before, after = snippet(source, edited)
    assert before == "… w5 w6 w7 w8 w9 w10 w11 w12 w13 w14 w15 w16 w17 w18 w19 …"
    assert after == "… w5 w6 w7 w8 w9 X10 w11 w12 w13 X14 w15 w16 w17 w18 w19 …"  # X70: beyond the stretch
    long = " ".join(f"n{i}" for i in range(40))
    before, after = snippet("a b. " + "c d.", "a b. " + long + " c d.")
    assert after == "a b. " + long + " c d." and before == "a b. c d."  # one long change, whole


def test_an_attribute_whose_carrier_holds_a_discovered_feature_is_listed_under_it():
    """Clarity's edits insert "1." (a digit: numbers as digits, rewarded); coherence's rewarded edits delete
    "As I said before," (a first-person word, penalised): each reads as its feature and leaves the leading
    attributes. Sensitivity inserts "I can help." — first person too, but the RM penalises it while the
    edits that insert it are rewarded: not explained by it, it stays. One not significant stays too."""

    def attribute(name: str, effect: float, carrier: str, change: str, rank: int, significant: bool = True):
        return {"dataset": "d", "method": "rules", "rm": "a", "kind": "attribute", "name": name, "rank": rank,
                "phrase": f"rewards {name}", "effect": effect, "significant": significant, "carrier": carrier,
                "carrier_change": change, "carrier_edits": 4, "n_direction": 6}  # fmt: skip

    def feature(name: str, effect: float, leading: bool = True) -> dict:
        return {"dataset": "d", "method": "offline", "rm": "a", "kind": "discovered", "name": name,
                "effect": effect, "significant": True, "leading": leading}  # fmt: skip

    attributes = [
        attribute("clarity", 0.9, "1.", "inserts", 1),
        attribute("coherence", 0.5, "As I said before,", "deletes", 2),
        attribute("sensitivity", 0.3, "I can help.", "inserts", 3),
        attribute("verbosity", 0.2, "1.", "inserts", 4, significant=False),
    ]
    features = [feature("pronouns first person", -0.6), feature("numbers as digits", 0.5),
                feature("bold", 0.4, leading=False)]  # fmt: skip
    placed = place_under_carriers(attributes, features, k=5)
    assert [(r["name"], r.get("under"), r["leading"]) for r in placed] == [
        ("clarity", "numbers as digits", False),
        ("coherence", "pronouns first person", False),
        ("sensitivity", None, True),
        ("verbosity", None, False),
    ]
    line = finding_line(
        {**features[1], "phrase": "rewards numbers as digits", "low": 0.3, "high": 0.7}, [placed[0]]
    ).replace("\\", "")
    assert line.endswith(
        "It is what **rewards clarity** reads (clarity +0.90 reward sd): 4 of 6 of that attribute's edits "
        "insert “1.”."
    )


def test_a_dataset_of_discovery_alone_has_its_rms_length_row_from_their_largest_fit():
    """Per RM on a dataset without attribute effects: γ of the (engine, round) with the most edits (ties: the
    engine's name, then the earlier round), per sd of words, significant where its interval excludes 0,
    leading; a dataset with attribute effects keeps theirs alone."""

    def fit(dataset, rm, engine, round_, n, gamma, low, high):
        return {"dataset": dataset, "rm": rm, "engine": engine, "round": round_, "n": n, "reference": "base",
                "length_slope": gamma, "length_slope_low": low, "length_slope_high": high}  # fmt: skip

    discovered = pl.DataFrame(
        [
            fit("e", "a", "offline", 1, 40, 0.30, 0.20, 0.40),  # two features of one fit: 80 edits
            fit("e", "a", "offline", 1, 40, 0.30, 0.20, 0.40),
            fit("e", "a", "llm", 1, 60, 0.90, 0.80, 1.00),
            fit("e", "b", "offline", 1, 30, -0.05, -0.10, 0.02),
            fit("e", "b", "offline", 2, 30, 0.50, 0.40, 0.60),  # a tie: the earlier round
            fit("d", "a", "offline", 1, 99, 0.70, 0.60, 0.80),  # d has attribute effects
            fit("e", "a", "re-scored", None, 999, None, None, None),  # a class measured by re-scoring: no fit
        ]
    )
    rows = discovery_length_findings(discovered, {"d"})
    assert [(r["dataset"], r["rm"], r["method"], r["effect"], r["n"]) for r in rows] == [
        ("e", "a", "offline", 0.30, 80),
        ("e", "b", "offline", -0.05, 30),
    ]
    assert [r["significant"] for r in rows] == [True, False] and all(r["leading"] for r in rows)
    assert all(r["kind"] == r["name"] == "length" and r["reference"] == "base" for r in rows)
    assert rows[0]["phrase"] == language.attribute_phrase("length", 0.30)
    assert discovery_length_findings(discovered, {"d", "e"}) == []
    with pytest.raises(ValueError, match=r"missing column\(s\) \['round'\]"):
        discovery_length_findings(discovered.drop("round"), {"d"})


def test_the_landing_says_one_slope_where_every_discovered_dataset_has_attribute_effects():
    def row(dataset, kind, name, effect, method=None):
        method = method or ("offline" if kind == "discovered" else "rules")
        return {"dataset": dataset, "method": method, "rm": "r", "kind": kind, "name": name, "n": 6,
                "phrase": f"rewards {name}", "effect": effect, "low": effect - 0.1, "high": effect + 0.1,
                "significant": True, "rank": 1, "leading": True}  # fmt: skip

    both = findings_frame(
        [
            row("d", "length", "length", 0.3),
            row("d", "attribute", "clarity", 0.2),
            row("d", "discovered", "bold", 0.5),
        ]
    )
    assert one_slope(both) and ONE_SLOPE_NOTE in findings_rst(both, ["d"], ["r"], 0.95, "1. F", "2. A")
    # e: discovery alone, its length row discovery's own γ
    e = [row("e", "discovered", "emoji", 0.4), row("e", "length", "length", 0.2, method="offline")]
    alone = pl.concat([both, findings_frame(e)])
    assert not one_slope(alone) and ONE_SLOPE_NOTE not in findings_rst(
        alone, ["d", "e"], ["r"], 0.95, "1. F", "2. A"
    )
    assert not one_slope(findings_frame([row("d", "length", "length", 0.3)]))  # nothing discovered
