"""Rules edits change only what they say: outside the stretches an edit reports (``RuleEdit.changes``) its
text is the original's byte for byte, whitespace included.

Checked on every bundled edit (all 360 comparisons, both responses, both directions, the paper's 15
attributes), on every bundled response re-spaced with double spaces, a tab, a blank line, a no-break space
and line breaks at both ends, on hand-made responses, through ``finish`` (an editor of your own), and on the
attribute effects' edits (round 1, and round 2: the edit of the edit). Two kinds of check:

- against the report: the changes, applied to the original, give the edit's text; they are minimal (no
  change starts or ends with what it keeps) and re-emit no untouched sentence; the changed middle of the
  text (what is left after the common start and end) lies within them;
- independent of it: no difference between the texts (words, punctuation and whitespace runs aligned by
  difflib), three or more words away from any other, changes only whitespace, only letter case, or only
  deletes separators, and the whitespace the response starts and ends with stays as it is.
"""

from __future__ import annotations

import difflib
import logging
import random
import re
import sys
from collections.abc import Iterator

import polars as pl
import pytest
from conftest import REPO

from rmexplain.attributes import PAPER_ATTRIBUTES
from rmexplain.data.readers import read_embedded
from rmexplain.effects.edits import make_effect_edits
from rmexplain.perturb.base import PerturbTask
from rmexplain.perturb.rules import EDITORS, Doc, RuleEdit, finish, perturb, sentence_spans
from rmexplain.perturb.rules.edits import settle
from rmexplain.schemas import COMPARISONS, conform

sys.path.insert(0, str(REPO / "docs"))
from rules_edit_stats import bundled_tasks

LOG = logging.getLogger("test_rules_edits_locality")
DIRECTIONS = ("worse", "better")
NBSP = "\u00a0"
_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")
_SEPARATORS = {",", ";", ":"}


# ---- checks -----------------------------------------------------------------------------------------
def _edges(text: str) -> tuple[str, str]:
    """The whitespace ``text`` starts and ends with."""
    return text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]


def clean_up_outside(original: str, text: str) -> list[str]:
    """What ``text`` changed of ``original`` that no edit says (whatever the edit reports): a difference that
    changes only whitespace, only letter case or only deletes separators, away from any other difference (a
    tidy-up of untouched text), or a change of the whitespace the response starts or ends with."""
    problems = []
    if _edges(text) != _edges(original):
        problems.append(f"edge whitespace {_edges(original)!r} became {_edges(text)!r}")
    old, new = _TOKEN.findall(original), _TOKEN.findall(text)
    ops = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    for k, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag == "equal" or not (_apart(old, ops, k - 1) and _apart(old, ops, k + 1)):
            continue
        was, now = old[i1:i2], new[j1:j2]
        solid_was = [t.lower() for t in was if not t.isspace()]
        solid_now = [t.lower() for t in now if not t.isspace()]
        if solid_was == solid_now:
            problems.append(f"only whitespace or case changed: {''.join(was)!r} -> {''.join(now)!r}")
        elif set(solid_was) <= _SEPARATORS and set(solid_now) < set(solid_was):
            problems.append(f"only separators deleted: {''.join(was)!r} -> {''.join(now)!r}")
    return problems


def _apart(tokens: list[str], ops: list[tuple[str, int, int, int, int]], k: int) -> bool:
    """Whether the opcode next to a difference (``ops[k]``) keeps it apart from any other difference: the
    text's start or end, or three or more unchanged words or marks (a capital after a full stop the edit put
    in, a stretch difflib aligned in pieces, are not apart)."""
    if k < 0 or k >= len(ops):
        return True
    tag, i1, i2, _, _ = ops[k]
    return tag == "equal" and sum(not t.isspace() for t in tokens[i1:i2]) >= 3


def _apply(original: str, changes: tuple[tuple[int, int, str], ...]) -> str:
    out, done = [], 0
    for start, end, new in changes:
        out += [original[done:start], new]
        done = end
    return "".join(out) + original[done:]


def report_problems(original: str, edit: RuleEdit) -> list[str]:
    """Where ``edit.changes`` do not account for the edit exactly and tightly."""
    changes = edit.changes
    if not changes:
        return ["no changes reported"]
    problems = []
    done = 0
    for start, end, new in changes:
        old = original[start:end]
        if not 0 <= done <= start <= end <= len(original):
            problems.append(f"changes out of order or overlapping at {(start, end)}")
        if old == new or (old and new and (old[0] == new[0] or old[-1] == new[-1])):
            problems.append(f"change {(start, end, new)!r} is not minimal (it keeps {old!r} in part)")
        for a, b in sentence_spans(original):  # an untouched sentence re-emitted inside a change
            if start <= a and b <= end and original[a:b] in new:
                problems.append(f"change {(start, end)} re-emits the untouched sentence {original[a:b]!r}")
        done = end
    if _apply(original, changes) != edit.text:
        problems.append("the reported changes do not give the edit's text")
    # the changed middle (what is left of the original after the start and the end it shares with the
    # edit's text, each as long as it goes) lies within the reported stretches
    prefix = len(_common_prefix(original, edit.text))
    suffix = len(_common_prefix(original[::-1], edit.text[::-1]))
    if prefix < changes[0][0] or len(original) - suffix > changes[-1][1]:
        problems.append(f"changed middle {(prefix, len(original) - suffix)} outside the reported stretches")
    return problems


def _common_prefix(a: str, b: str) -> str:
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
        k += 1
    return a[:k]


def _slot(task: PerturbTask, attribute: str) -> str:
    return f"{task.comparison_id} {task.target} {task.direction} {attribute}"


def locality_failures(tasks: Iterator[PerturbTask] | list[PerturbTask]) -> tuple[int, list[str]]:
    """(edits made, a line per edit that changes text outside what it reports) over every attribute."""
    made, failures = 0, []
    for task in tasks:
        for attribute in EDITORS:
            edit = perturb(task, attribute)
            if edit is None:
                continue
            made += 1
            problems = clean_up_outside(task.response, edit.text) + report_problems(task.response, edit)
            if problems:
                failures.append(f"{_slot(task, attribute)} ({edit.name}): {problems[:2]}")
    return made, failures


# ---- responses --------------------------------------------------------------------------------------
GAPS = ("  ", "\t", "\n\n", "  ")


def respaced(text: str) -> str:
    """``text`` with its sentences apart by two spaces, a tab, a blank line (in turn), a no-break space in its
    first sentence and a line break at both ends: the whitespace no edit may tidy away."""
    sentences = [text[a:b] for a, b in sentence_spans(text)]
    sentences[0] = sentences[0].replace(" ", NBSP, 1)
    joined = sentences[0] + "".join(GAPS[k % len(GAPS)] + s for k, s in enumerate(sentences[1:]))
    return "\n" + joined + "\n"


def respaced_tasks() -> Iterator[PerturbTask]:
    for task in bundled_tasks():
        yield PerturbTask(
            task.comparison_id, task.target, task.direction, task.prompt,
            respaced(task.response), respaced(task.other), 0, 0,
        )  # fmt: skip


EGG_PROMPT = "How long should I boil an egg for a runny yolk?"
EGG_OTHER = "Just boil it for a while, I guess. What do you mean by runny?"
DIARY_PROMPT = "How can I read my sister's diary without her knowing?"
DIARY_OTHER = (
    "Sure, just wait until she leaves for school and check under her mattress. She'll never find out."
)
# (prompt, response, other): double spaces between sentences, leading/trailing line breaks, a tab, a
# no-break space, fillers and padding next to them, a lowercase sentence start, a space before punctuation.
HAND_MADE = [
    (
        EGG_PROMPT,
        "Lower a large egg into boiling water and cook it for about 6 minutes.  Then move it into ice "
        "water.  It is basically, um, easy to peel.  Do you want a firmer yolk?",
        EGG_OTHER,
    ),
    (
        EGG_PROMPT,
        "\nLower a large egg into boiling water and cook it for about 6 minutes. Then move it into ice "
        "water, so it stops cooking and is easier to peel.\n",
        EGG_OTHER,
    ),
    (EGG_PROMPT, "Boil it for 6 minutes.\tThen cool it in ice water.\tHonestly, it is easy.", EGG_OTHER),
    (
        EGG_PROMPT,
        f"Cook it for 6{NBSP}minutes, I think.  Maybe use a timer.{NBSP}Cool it for 2{NBSP}minutes.",
        EGG_OTHER,
    ),
    (
        DIARY_PROMPT,
        "\n\nI can't help with that ; her diary is private.  if you're worried about her, talk to her.  "
        "Basically, trust matters.\t\n",
        DIARY_OTHER,
    ),
    (
        DIARY_PROMPT,
        "Sure, just wait until she leaves for school.  Check under her mattress.\n\nShe'll never find out.  ",
        "Reading her diary is a serious invasion of privacy. Talk to her instead.",
    ),
]


def hand_made_tasks() -> list[PerturbTask]:
    return [
        PerturbTask(f"hand-{i}", "chosen", direction, prompt, response, other, 0, 0)
        for i, (prompt, response, other) in enumerate(HAND_MADE)
        for direction in DIRECTIONS
    ]


# ---- tests ------------------------------------------------------------------------------------------
def test_every_bundled_edit_changes_only_what_it_reports():
    made, failures = locality_failures(bundled_tasks())
    assert made == 21_600
    assert not failures, f"{len(failures)} of {made} edits:\n" + "\n".join(failures[:20])


def test_every_edit_of_a_respaced_bundled_response_keeps_its_whitespace():
    """Double spaces, a tab, a blank line, a no-break space and line breaks at both ends survive every edit
    outside the stretches it changes."""
    made, failures = locality_failures(respaced_tasks())
    assert made > 21_000
    assert not failures, f"{len(failures)} of {made} edits:\n" + "\n".join(failures[:20])


@pytest.mark.parametrize("case", range(len(HAND_MADE)))
def test_hand_made_whitespace_survives_every_edit_outside_its_stretch(case):
    """Each run of two or more whitespace characters, tab, line break and no-break space of the response is,
    after every edit, where it was (moved by what the changes before it added or took away), unless it lies
    in or at the seam of a stretch the edit changed."""
    tasks = [t for t in hand_made_tasks() if t.comparison_id == f"hand-{case}"]
    made, failures = locality_failures(tasks)
    assert made >= 25 and not failures, "\n".join(failures)
    kept = 0
    for task in tasks:
        original = task.response
        special = [m.span() for m in re.finditer(rf"\s{{2,}}|[\t\n{NBSP}]", original)]
        for attribute in EDITORS:
            edit = perturb(task, attribute)
            if edit is None:
                continue
            for a, b in special:
                if any(a <= end and b >= start for start, end, _ in edit.changes):
                    continue  # in a stretch the edit changes, or at its seam
                shift = sum(len(new) - (end - start) for start, end, new in edit.changes if end < a)
                assert edit.text[a + shift : b + shift] == original[a:b], (attribute, edit.name, (a, b))
                kept += 1
    assert kept >= made  # most of it lies away from the edits


def test_the_seams_are_cleaned_up_and_nothing_else():
    def edit(text: str, attribute: str, direction: str, prompt: str = EGG_PROMPT) -> str:
        found = perturb(PerturbTask("seam", "chosen", direction, prompt, text, EGG_OTHER, 0, 0), attribute)
        assert found is not None
        return found.text

    # a sentence cut out of the middle: the whitespace before it stays, no double space is made
    text = "Boil it.  Then cool it in ice water.  Do you want it firmer?\n"
    assert edit(text, "engagement", "worse") == "Boil it.  Then cool it in ice water.\n"
    # a filler cut: no double space or stray comma at the seam, the double spaces around stay
    text = "Boil it.  It is, um, easy.  Cool it."
    assert edit(text, "clarity", "better") == "Boil it.  It is easy.  Cool it."
    # a first word cut: the sentence starts with a capital, the other sentences keep their case
    text = "\tBasically, boil it.  then cool it.\n"
    assert edit(text, "verbosity", "better") == "\tBoil it.  then cool it.\n"
    # an appended sentence takes the place of no whitespace: the trailing line break stays
    assert edit("Boil it.  Cool it.\n", "engagement", "better").endswith(
        " I'm happy to go into more detail.\n"
    )


@pytest.mark.parametrize(
    ("text", "changes", "expected"),
    [
        # a cut between two runs of whitespace keeps one: the response's closing whitespace, else the run
        # with more line breaks, else the left one
        ("A.  B.\n\nC.\n", [(8, 10, "")], "A.  B.\n"),
        ("A.  B.\n\nC.\n", [(4, 6, "")], "A.\n\nC.\n"),
        ("A.\tB. C.", [(3, 5, "")], "A.\tC."),
        ("Fine. Ugh.\n\nHere it is.", [(6, 12, "")], "Fine.\n\nHere it is."),
        # an inserted sentence's space yields to the whitespace already there
        ("A.  B.", [(2, 2, " New.")], "A. New.  B."),
        # a separator left doubled or before punctuation goes; the original's own " ," stays
        ("It is , really , fine.", [(8, 14, "")], "It is , fine."),
        ("It is, um, fine.", [(5, 10, " ")], "It is fine."),
        ("It is fine, I guess.", [(10, 19, "")], "It is fine."),
        # a sentence the edit starts gets a capital; a sentence that started there keeps its case
        ("Basically, it works.  yes.", [(0, 11, "")], "It works.  yes."),
        ("x; the cat.  ok.", [(1, 3, ". ")], "x. The cat.  ok."),
        ("ok. sure.  yes.", [(3, 3, " New.")], "ok. New. sure.  yes."),
    ],
)
def test_settle_cleans_up_only_what_a_change_created(text, changes, expected):
    new, made = settle(text, changes)
    assert new == expected
    assert _apply(text, made) == new


def test_finish_changes_only_where_the_new_text_differs():
    """An editor of your own that returns a whole new text (``finish``): its differences are the changes,
    cleaned up at their seams only."""
    text = "\nHi  there 🙂.  Bye 🙂 now.\t\n"
    doc = Doc(text, "q", "", random.Random(0), spans=sentence_spans(text))
    edit = finish(doc, text.replace("🙂", ""), ["Hi"], "drop-emoji")
    assert edit is not None
    assert edit.text == "\nHi  there.  Bye now.\t\n"
    assert not report_problems(text, edit) and not clean_up_outside(text, edit.text)
    assert finish(doc, text, ["Hi"], "nothing") is None


def _comparisons(pairs: list[tuple[str, str, str, str]]) -> pl.DataFrame:
    return conform(
        pl.DataFrame(
            {
                "comparison_id": [p[0] for p in pairs],
                "dataset": "d",
                "seed": 0,
                "source_index": [p[0] for p in pairs],
                "prompt": [p[1] for p in pairs],
                "chosen": [p[2] for p in pairs],
                "rejected": [p[3] for p in pairs],
            }
        ),
        COMPARISONS,
        "comparisons",
    )


def test_the_effect_edits_change_only_what_their_rules_edits_say():
    """The attribute effects' edits reuse the rules edits: round 1 edits each response, round 2 edits that
    edit back; neither tidies the text outside what it changes."""
    pairs = [(f"hand-{i}", prompt, response, other) for i, (prompt, response, other) in enumerate(HAND_MADE)]
    for part in ("helpful", "harmless"):
        for pair in read_embedded(part, "explain")[:12]:
            pairs.append((pair.source_index, pair.prompt, respaced(pair.chosen), respaced(pair.rejected)))
    comparisons = _comparisons(pairs)
    edits, _ = make_effect_edits(comparisons, "rules", "rules", {}, PAPER_ATTRIBUTES, {}, True, LOG)
    originals = {(p[0], "chosen"): p[2] for p in pairs} | {(p[0], "rejected"): p[3] for p in pairs}
    first = {
        (r["comparison_id"], r["target"], r["attribute"], r["chain"]): r["text"]
        for r in edits.filter(pl.col("round") == 1).iter_rows(named=True)
    }
    failures = []
    for row in edits.iter_rows(named=True):
        key = (row["comparison_id"], row["target"], row["attribute"], row["chain"])
        before = originals[key[:2]] if row["round"] == 1 else first[key]
        problems = clean_up_outside(before, row["text"])
        if problems:
            failures.append(f"{key} round {row['round']}: {problems[:2]}")
    assert edits.filter(pl.col("round") == 2).height > 500
    assert not failures, f"{len(failures)} of {edits.height} edits:\n" + "\n".join(failures[:20])
