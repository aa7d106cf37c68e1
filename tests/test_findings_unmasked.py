"""A class that works against a finding: "I hope this helps!" adds a phrase an RM rewards and a mark it
penalises; the feature's edits scored again with the mark undone give what the phrase itself does."""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest

from rmexplain.analysis.bootstrap import BootstrapSettings
from rmexplain.findings.attribution import (
    MIN_MASKING_PART,
    Candidate,
    Check,
    carrier_checks,
    carrier_edits,
    masks,
    signed_coefficient,
    unmasked_effect,
)
from rmexplain.findings.carriers import class_named, proposals
from rmexplain.findings.landing import finding_line, unmasked_sentence
from rmexplain.findings.summary import FindingSettings, discovered_findings, findings_frame
from rmexplain.ids import text_id

BOOTSTRAP = BootstrapSettings(n_resamples=400, seed=0)
EXCLAMATION = "exclamation"
HOPE = re.compile(r"\bhope (?:this|that|it) helps\b", re.IGNORECASE)


def check_of(whole: list[float], part: list[float], words: list[float], direction: list[float] | None = None):
    """A re-scored finding over pairs c0, c1, … (one edit each, one instance)."""
    n = len(whole)
    direction = direction or [1.0] * n
    return Check(
        share=0.0,
        checked=n,
        skipped=0,
        edits=tuple((f"d-s0-{i}", f"S{i}", f"E{i}") for i in range(n)),
        undone=tuple((f"S{i}", f"U{i}") for i in range(n)),
        change=np.ones(n),
        part=np.array(part),
        whole=np.array(whole),
        direction=np.array(direction),
        dose=np.array(direction),
        words_change=np.array(words),
    )


def test_the_effect_with_the_class_undone_by_hand():
    """Six additions, each +0.2 or +0.3 reward sd as edited and 4 words longer; the RM's slope 0.05 sd per sd
    of 2 words takes 0.1 from each: as edited +0.15 (the finding's own fit). The class took −1 from each, so
    undone each is +1.1 or +1.2: +1.15, its interval within the edits' values, significant (six pairs)."""
    check = check_of([0.2, 0.3] * 3, [-1.0] * 6, [4.0] * 6)
    found = unmasked_effect(check, "d", slope=0.05, length_sd=2.0, bootstrap=BOOTSTRAP)
    assert found["effect"] == pytest.approx(1.15)
    assert found["as_edited"] == pytest.approx(0.15)
    assert 1.1 - 1e-9 <= found["low"] < found["effect"] < found["high"] <= 1.2 + 1e-9
    assert (found["pairs"], found["significant"]) == (6, True)
    assert masks(check, found)


def test_both_ways_the_fit_is_the_findings_own():
    """Additions and removals: an intercept and the signed instance, as ``signed_coefficient`` fits it."""
    whole, part, words = (
        [0.5, 0.7, -0.4, -0.6, 0.6, -0.5],
        [-1.0, -1.0, 1.0, 1.0, -1.0, 1.0],
        [3, 3, -3, -3, 3, -3],
    )
    direction = [1.0, 1.0, -1.0, -1.0, 1.0, -1.0]
    check = check_of(whole, part, words, direction)
    found = unmasked_effect(check, "d", slope=0.1, length_sd=3.0, bootstrap=BOOTSTRAP)
    sign = np.array(direction)
    as_edited = np.array(whole) - 0.1 * np.array(words) / 3.0
    pairs = [edit[0] for edit in check.edits]
    assert found["as_edited"] == pytest.approx(signed_coefficient(sign, sign, as_edited, pairs))
    assert found["effect"] == pytest.approx(signed_coefficient(sign, sign, as_edited - np.array(part), pairs))


@pytest.mark.parametrize(
    ("whole", "part", "why"),
    [
        ([1.0, 1.1] * 3, [1.0, 1.1] * 3, "the class carries it: undone, nothing is left"),
        (
            [1.0, 1.1] * 3,
            [1.2] * 6,
            "the class carries it and a little more: undone, a small rest of the other sign",
        ),
        ([0.6, 0.7] * 3, [0.5, 0.5] * 3, "the class took of the finding's own sign"),
        ([0.6, 0.7] * 3, [-0.05] * 6, f"the class took less than {MIN_MASKING_PART}"),
        ([0.0, 0.1, -0.1] * 2, [-0.05, 0.05, 0.0] * 2, "undone it is not significant"),
    ],
)
def test_a_class_that_does_not_work_against_the_finding_does_not_mask_it(whole, part, why):
    check = check_of(whole, part, [0.0] * 6)
    assert not masks(check, unmasked_effect(check, "d", 0.0, 1.0, BOOTSTRAP)), why


def test_four_re_scored_edits_do_not_decide():
    check = check_of([0.2, 0.3, 0.2, 0.3], [-1.0] * 4, [0.0] * 4)
    found = unmasked_effect(check, "d", 0.0, 1.0, BOOTSTRAP)
    assert found["significant"] is False  # four pairs
    assert not masks(Check(**{**vars(check), "checked": 4}), {**found, "significant": True})


def test_without_a_slope_or_edits_there_is_no_estimate():
    assert np.isnan(
        unmasked_effect(check_of([0.2] * 6, [-1.0] * 6, [1.0] * 6), "d", np.nan, 1.0, BOOTSTRAP)["effect"]
    )
    assert unmasked_effect(check_of([], [], []), "d", 0.1, 1.0, BOOTSTRAP)["significant"] is False


def row(name: str, effect: float, significant: bool) -> dict:
    return {"dataset": "d", "rm": "a", "kind": "discovered", "method": "offline", "name": name,
            "effect": effect, "low": effect - 0.1, "high": effect + 0.1,
            "significant": significant}  # fmt: skip


def edits_of(rows: list[tuple[str, str, str]]) -> pl.DataFrame:
    feature, source, edited = zip(*rows, strict=True)
    return pl.DataFrame(
        {"engine": "offline", "feature": list(feature), "direction": 1, "dose": 1,
         "source_text": list(source), "edited_text": list(edited),
         "comparison_id": [f"d-s0-{i}" for i in range(len(rows))]}
    )  # fmt: skip


def test_proposals_undo_a_significant_class_that_may_work_against_a_feature():
    """The RM penalises "!" (−1.2 per instance). "hope" adds one and is not significant: its two parts may
    cancel, so it is proposed; "cheer" is rewarded (+0.5) though it adds one: proposed; "shout" is penalised
    three times as much as its "!" would (share 40 %: no carrier) and of the same sign: not proposed; "calm"
    adds no "!"."""
    rows = [
        ("hope", "Cut it.", "Cut it. I hope this helps!"),
        ("cheer", "Cut it.", "Cut it, great!"),
        ("shout", "Cut it.", "CUT IT!"),
        ("calm", "Cut it.", "Cut it, calmly."),
    ]
    discovered = [row(EXCLAMATION, -1.2, True), row("hope", 0.02, False), row("cheer", 0.5, True),
                  row("shout", -3.0, True), row("calm", -0.4, False)]  # fmt: skip
    found = proposals([], discovered, {}, {"d": edits_of(rows)})
    assert found == [
        Candidate("d", "discovered", "offline", "hope", EXCLAMATION),
        Candidate("d", "discovered", "offline", "cheer", EXCLAMATION),
    ]


def mask_rm(texts: list[str]) -> list[float]:
    """+0.6 per "hope this helps", −0.5 per "!", +0.01 per word."""
    return [0.6 * len(HOPE.findall(t)) - 0.5 * t.count("!") + 0.01 * len(t.split()) for t in texts]


SOURCES = [
    "It does.",
    "Boil the water first.",
    "No, not today.",
    "Ask a doctor about it.",
    "Yes.",
    "Try again!",
]


def test_the_rms_phrase_is_measured_with_the_mark_undone_through_the_re_scoring():
    """Real edits of the catalogue's closer, the exclamation mark undone by the carrier step and the texts
    scored by the RM: as edited (slope 0) the closer is worth 0.6 − 0.5 + 0.04 = +0.14 reward, undone
    +0.64; over the RM's sd of 0.5, +0.28 and +1.28. "Try again!" keeps its own "!" in S′ and E′."""
    edits = edits_of([("hope", s, f"{s} I hope this helps!") for s in SOURCES])
    candidate = Candidate("d", "discovered", "offline", "hope", EXCLAMATION)
    columns = ["comparison_id", "direction", "dose", "source_text", "edited_text"]
    finding_edits = edits.select(columns).with_columns(target=pl.lit("chosen"))
    frame = carrier_edits([candidate], {EXCLAMATION: class_named(EXCLAMATION)}, lambda _: finding_edits)
    assert frame["edited_undone"][0] == "It does. I hope this helps."
    assert frame["source_undone"][5] == "Try again!"
    texts = {t for c in ("source_text", "edited_text", "source_undone", "edited_undone") for t in frame[c]}
    rewards = {text_id("p", t): r for t, r in zip(texts, mask_rm(list(texts)), strict=True)}
    prompts = dict.fromkeys(edits["comparison_id"], "p")
    checks = carrier_checks(frame, prompts, {"a": rewards}, {"a": 0.5}, {"a": None},
                            {("d", "a", "discovered", "offline", "hope"): 0.28})  # fmt: skip
    check = checks[("d", "a", "discovered", "offline", "hope", EXCLAMATION)]
    found = unmasked_effect(check, "d", slope=0.0, length_sd=5.0, bootstrap=BOOTSTRAP)
    assert found["as_edited"] == pytest.approx(0.28)
    assert found["effect"] == pytest.approx(1.28)
    assert masks(check, found)
    assert check.carries is False  # it takes of the other sign: no carrier


def discovered_table() -> pl.DataFrame:
    names = [EXCLAMATION, "hope_this_helps", "link"]
    return pl.DataFrame(
        {"dataset": "d", "rm": "a", "engine": "offline", "feature": names,
         "description": ["An exclamation mark (a full stop made one).",
                         "A closer hoping it helps (I hope this helps!).", "A link."],
         "effect": [-1.24, 0.25, 0.5], "low": [-1.3, 0.2, 0.4], "high": [-1.2, 0.3, 0.6],
         "q_value": [0.001, 0.01, 0.01], "n": 60, "support": 0.1, "significant": True}
    )  # fmt: skip


UNMASKED = {
    ("d", "a", "discovered", "offline", "hope_this_helps"): {
        "effect": 1.48, "low": 1.45, "high": 1.5, "pairs": 43, "significant": True, "by": EXCLAMATION}
}  # fmt: skip


def test_the_first_screen_ranks_and_names_the_feature_by_its_effect_undone():
    """+1.48 undone ranks the closer first, ahead of the mark (−1.24) and the link (+0.5); its phrase and its
    line say it; the table keeps the effect as edited."""
    rows = discovered_findings(discovered_table(), {}, FindingSettings(), None, UNMASKED)
    hope = {r["name"]: r for r in rows}["hope_this_helps"]
    assert (
        hope["phrase"] == "rewards a closer hoping it helps (I hope this helps!), its exclamation mark undone"
    )
    assert (hope["effect"], hope["unmasked_effect"], hope["unmasked_by"]) == (0.25, 1.48, EXCLAMATION)
    frame = findings_frame(rows)
    assert frame.sort("order")["name"].to_list() == ["hope_this_helps", EXCLAMATION, "link"]
    assert unmasked_sentence(hope) == (
        "Scored again with its exclamation mark undone, its edits give +1.48 [+1.45, +1.50] reward sd per"
        " instance added (43 pairs); as edited, +0.25: the RM moves the other way with the exclamation mark."
    )
    assert "Scored again with its exclamation mark undone" in finding_line(hope).replace("\\", "")
    assert unmasked_sentence({**hope, "unmasked_by": None}) is None


def test_a_feature_unmasked_leads_though_as_edited_it_is_not_significant():
    table = discovered_table().with_columns(
        significant=pl.Series([True, False, True]), effect=pl.Series([-1.24, 0.01, 0.5])
    )
    rows = {r["name"]: r for r in discovered_findings(table, {}, FindingSettings(), None, UNMASKED)}
    assert rows["hope_this_helps"]["leading"] and not rows["hope_this_helps"]["significant"]
