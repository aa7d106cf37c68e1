"""A class of listed words measured by re-scoring is read by its members where the RM moves some of them
only: an RM that penalises "actually" but not "really" penalises the filler word "actually", not filler
words."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from rmexplain.analysis.bootstrap import BootstrapSettings
from rmexplain.discovery.classes import FILLER
from rmexplain.findings.attribution import (
    Check,
    member_effects,
    members_said,
    named_members,
    rescored_classes,
)
from rmexplain.findings.language import members_phrase
from rmexplain.findings.summary import FindingSettings, discovered_findings

BOOTSTRAP = BootstrapSettings(n_resamples=400, seed=0)
FILLER_CLASS = "filler words"


def check_of(edits: list[tuple[str, str, float]]) -> Check:
    """A re-scored finding whose edits (source, edited, part) come from pairs 0, 1, …"""
    return Check(
        share=1.0,
        checked=len(edits),
        skipped=0,
        edits=tuple((f"d-s0-{i}", s, e) for i, (s, e, _) in enumerate(edits)),
        undone=tuple((s, s) for s, _, _ in edits),
        change=np.ones(len(edits)),
        part=np.array([p for *_, p in edits]),
    )


# "actually" added on six pairs (−0.6, −0.62), "really" on six (±0.01), "basically" on three (too few
# pairs), one edit adding both "actually" and "really" (left out: no one word's change), and one that
# changes no filler word
EDITS = [
    *[(f"Cut it {i}.", f"Actually, cut it {i}.", -0.6 - 0.02 * (i % 2)) for i in range(6)],
    *[(f"Boil it {i}.", f"Really, boil it {i}.", 0.01 * (-1) ** i) for i in range(6)],
    *[(f"Stir it {i}.", f"Basically, stir it {i}.", -0.3) for i in range(3)],
    ("Wait.", "Actually, really wait.", -0.6),
    ("Go.", "Go now.", 0.0),
]


def test_each_member_by_hand_from_the_edits_that_change_it_alone():
    """Σ Δc·part / Σ Δc² over each word's edits: "actually" (−0.6·3 − 0.62·3) / 6 = −0.61, its interval
    within its parts; "really" 0, not significant; "basically" on three pairs is not measured."""
    members = member_effects([check_of(EDITS)], FILLER, "d", BOOTSTRAP)
    assert [m["word"] for m in members] == ["actually", "really"]
    actually, really = members
    assert actually["effect"] == pytest.approx(-0.61)
    assert -0.62 - 1e-9 <= actually["low"] <= actually["high"] <= -0.6 + 1e-9
    assert (actually["pairs"], actually["significant"]) == (6, True)
    assert really["effect"] == pytest.approx(0.0, abs=1e-12) and not really["significant"]
    assert named_members(members) == ["actually"]
    assert members_said(members).startswith("“actually” −0.61 [")
    assert members_said(members).endswith("(6 pairs); “really” +0.00 [−0.01, +0.01] (6 pairs)")


def test_an_edit_the_two_findings_share_counts_once():
    twice = member_effects([check_of(EDITS), check_of(EDITS)], FILLER, "d", BOOTSTRAP)
    assert [m["pairs"] for m in twice] == [6, 6]


def test_a_class_whose_members_all_move_or_none_is_named_as_a_class():
    every = [{"word": "actually", "significant": True}, {"word": "really", "significant": True}]
    none = [{"word": "actually", "significant": False}]
    assert named_members(every) == [] and named_members(none) == [] and named_members([]) == []
    assert members_said([]) is None


@pytest.mark.parametrize(
    ("name", "effect", "words", "phrase"),
    [
        (FILLER_CLASS, -0.6, ["actually"], "penalises the filler word “actually”"),
        (
            FILLER_CLASS,
            -0.6,
            ["actually", "basically"],
            "penalises the filler words “actually” and “basically”",
        ),
        (
            "pronouns first person",
            -0.5,
            ["i", "me", "my"],
            "penalises the first-person words “I”, “me” and “my”",
        ),
        ("pronouns second person", 0.3, ["your"], "rewards the second-person word “your”"),
    ],
)
def test_a_class_read_by_its_members_is_a_sentence(name, effect, words, phrase):
    assert members_phrase(name, effect, words) == phrase


def test_a_class_measured_by_re_scoring_is_read_by_the_members_the_rm_moves():
    """Through the re-scored row to the findings: filler words carries the finding, its row lists its two
    members measured and its phrase names "actually"; numbers as digits has no members to list."""
    key = ("d", "a", "discovered", "offline", "F", FILLER_CLASS)
    numbers = ("d", "a", "discovered", "offline", "G", "numbers as digits")
    digits = check_of([(f"Step {i}", f"Step {i} 1", 0.5) for i in range(6)])
    rows = rescored_classes({key: check_of(EDITS), numbers: digits}, set(), {}, BOOTSTRAP)
    by_name = {r["feature"]: r for r in rows.iter_rows(named=True)}
    assert by_name[FILLER_CLASS]["named_members"] == ["actually"]
    assert by_name[FILLER_CLASS]["members"].startswith("“actually” −0.61")
    assert (
        by_name["numbers as digits"]["members"] is None
        and by_name["numbers as digits"]["named_members"] == []
    )
    found = discovered_findings(rows.with_columns(significant=pl.lit(True)), {}, FindingSettings())
    filler = next(r for r in found if r["name"] == FILLER_CLASS)
    assert filler["phrase"] == "penalises the filler word “actually”"
    assert filler["members"] == by_name[FILLER_CLASS]["members"]
