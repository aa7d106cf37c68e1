"""Tests of the offline ``rules`` perturbation method (rmexplain.perturb.rules)."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from collections import Counter
from statistics import mean

import pytest
from rapidfuzz.distance import Levenshtein

from rmexplain.attributes import PAPER_ATTRIBUTES
from rmexplain.data.readers import read_embedded
from rmexplain.perturb.base import (
    Draft,
    MethodContext,
    PerturbationError,
    PerturbTask,
    drafts_to_frame,
    methods,
)
from rmexplain.perturb.rules import (
    harmful_context,
    make_doc,
    perturb,
    request_phrase,
    rules_method,
    supported_attributes,
    words,
)
from rmexplain.perturb.rules import lexicon as lx
from rmexplain.perturb.rules.edits import settle
from rmexplain.perturb.skips import SkipRecorder

LOG = logging.getLogger("test_perturb_rules")

DIARY_PROMPT = "How can I read my sister's diary without her knowing?"
DIARY_REFUSAL = (
    "Reading her diary without permission is a serious invasion of privacy and could damage your "
    "relationship. If you're worried about her, I'm happy to help you think of a way to talk to her."
)
DIARY_COMPLY = (
    "Sure, just wait until she leaves for school and check under her mattress. She'll never find out."
)
EGG_PROMPT = "How long should I boil an egg for a runny yolk?"
EGG_GOOD = (
    "Lower a large egg into boiling water and cook it for about 6 minutes. Then move it into ice water "
    "so it stops cooking and is easier to peel."
)
EGG_VAGUE = "Just boil it for a while, I guess. What do you mean by runny?"

# Hand-written comparisons: (comparison_id, prompt, chosen, rejected).
PAIRS = [
    ("harm-diary", DIARY_PROMPT, DIARY_REFUSAL, DIARY_COMPLY),
    (
        "harm-car",
        "What's the easiest way to steal a car?",
        "I can't help with stealing a car; it's a serious crime that can lead to arrest and prison. If you "
        "need transport, I can help you look into car sharing, buses or cheap used cars.",
        "Look for an older model parked somewhere dark, they're easy to get into. Nobody will notice.",
    ),
    ("help-egg", EGG_PROMPT, EGG_GOOD, EGG_VAGUE),
    (
        "help-budget",
        "How do I make a simple monthly budget?",
        "List your take-home pay, then your fixed costs such as rent and insurance. Track your spending "
        "for a month, because most people underestimate small purchases, and set a limit for each category.",
        "Spend less than you earn. That's basically it.",
    ),
]


def _tasks(pairs: list[tuple[str, str, str, str]]) -> list[PerturbTask]:
    """Both responses of each pair, each in both directions."""
    tasks = []
    for cid, prompt, chosen, rejected in pairs:
        for target, text, other in (("chosen", chosen, rejected), ("rejected", rejected, chosen)):
            for direction in ("worse", "better"):
                tasks.append(PerturbTask(cid, target, direction, prompt, text, other, 0.0, 0.0))
    return tasks


def _run(
    tasks: list[PerturbTask], attributes: dict[str, str] | None = None, **settings: object
) -> list[Draft]:
    context = MethodContext(
        dict(attributes or PAPER_ATTRIBUTES), dict(settings), LOG, {"skips": SkipRecorder()}
    )
    return rules_method(tasks, context)


def _distance(a: str, b: str) -> float:
    """Word-level Levenshtein distance normalised by the longer length (the issue's syntactic distance)."""
    return Levenshtein.normalized_distance(words(a), words(b))


def _bundled_tasks() -> list[PerturbTask]:
    pairs = []
    for part in ("helpful", "harmless"):
        for split in ("train", "explain"):
            pairs += [(p.source_index, p.prompt, p.chosen, p.rejected) for p in read_embedded(part, split)]
    return _tasks(pairs)


@pytest.fixture(scope="module")
def bundled() -> tuple[list[PerturbTask], list[Draft], SkipRecorder]:
    tasks = _bundled_tasks()
    skips = SkipRecorder()
    drafts = rules_method(tasks, MethodContext(dict(PAPER_ATTRIBUTES), {}, LOG, {"skips": skips}))
    return tasks, drafts, skips


def test_supports_exactly_the_paper_attributes() -> None:
    assert supported_attributes() == sorted(PAPER_ATTRIBUTES)
    assert methods.get("rules") is rules_method


@pytest.mark.parametrize("attribute", sorted(PAPER_ATTRIBUTES))
def test_every_attribute_and_direction_changes_every_response(attribute: str) -> None:
    tasks = _tasks(PAIRS)
    drafts = _run(tasks, {attribute: PAPER_ATTRIBUTES[attribute]})
    assert len(drafts) == len(tasks)
    for task, draft in zip(tasks, drafts, strict=True):
        assert (draft.comparison_id, draft.target, draft.direction) == (
            task.comparison_id,
            task.target,
            task.direction,
        )
        assert draft.attribute == attribute and draft.variant == 0
        assert draft.text.strip() and draft.text != task.response
        assert draft.generator.startswith(f"rules:{attribute}:")


def test_focus_words_are_words_of_the_original_in_order() -> None:
    tasks = _tasks(PAIRS)
    drafts = _run(tasks, max_focus_words=4)
    by_slot = {(t.comparison_id, t.target, t.direction): t for t in tasks}
    for draft in drafts:
        original = words(by_slot[(draft.comparison_id, draft.target, draft.direction)].response)
        assert 1 <= len(draft.focus_words) <= 4, draft
        remaining = iter(original)  # a subsequence: each focus word occurs after the previous one
        assert all(any(w == o for o in remaining) for w in draft.focus_words), (draft.focus_words, original)


def test_deterministic_and_seeded_per_slot() -> None:
    tasks = _tasks(PAIRS)
    first, second = _run(tasks), _run(tasks)
    assert [(d.text, d.focus_words, d.generator) for d in first] == [
        (d.text, d.focus_words, d.generator) for d in second
    ]
    # Phrase choices depend on (comparison, target, attribute): other ids pick other rude openers.
    renamed = [
        PerturbTask(f"c{k}", "chosen", "worse", EGG_PROMPT, EGG_GOOD, EGG_VAGUE, 0, 0) for k in range(12)
    ]
    openers = {d.text.split(".")[0] for d in _run(renamed, {"appropriateness": "x"})}
    assert len(openers) >= 2


def test_no_dependence_on_python_hash_seed() -> None:
    tasks = _tasks(PAIRS[:2])
    here = [d.text for d in _run(tasks)]
    code = (
        "import json, logging, sys\n"
        "from tests.test_perturb_rules import PAIRS, _run, _tasks\n"
        "print(json.dumps([d.text for d in _run(_tasks(PAIRS[:2]))]))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == here


def test_edits_are_local() -> None:
    tasks = _tasks(PAIRS)
    drafts = _run(tasks)
    by_slot = {(t.comparison_id, t.target, t.direction): t.response for t in tasks}
    distances = [_distance(by_slot[(d.comparison_id, d.target, d.direction)], d.text) for d in drafts]
    assert mean(distances) < 0.45
    long = [
        dist
        for d, dist in zip(drafts, distances, strict=True)
        if len(words(by_slot[(d.comparison_id, d.target, d.direction)])) >= 25
    ]
    assert long and max(long) < 0.8


def test_unknown_attribute_is_an_error_naming_it() -> None:
    with pytest.raises(PerturbationError, match=r"'tone'.*supported: \['appropriateness'"):
        _run(_tasks(PAIRS[:1]), {"harmlessness": "x", "tone": "the tone of voice"})
    with pytest.raises(PerturbationError, match="max_focus_words"):
        _run(_tasks(PAIRS[:1]), max_focus_words=0)
    bad = PerturbTask("c1", "chosen", "sideways", EGG_PROMPT, EGG_GOOD, EGG_VAGUE, 0, 0)
    with pytest.raises(PerturbationError, match=r"c1 .*sideways"):
        _run([bad])


def test_empty_response_is_a_counted_logged_skip(caplog: pytest.LogCaptureFixture) -> None:
    skips = SkipRecorder()
    empty = PerturbTask("c-empty", "rejected", "better", EGG_PROMPT, "  ", EGG_GOOD, 0, 0)
    context = MethodContext({"clarity": "x", "relevance": "y"}, {}, LOG, {"skips": skips})
    with caplog.at_level(logging.WARNING):
        drafts = rules_method([empty], context)
    assert drafts == []
    assert [(s.comparison_id, s.target, s.attribute, s.stage) for s in skips.records] == [
        ("c-empty", "rejected", "clarity", "rules"),
        ("c-empty", "rejected", "relevance", "rules"),
    ]
    assert "c-empty" in caplog.text


def _edit(cid: str, target: str, direction: str, attribute: str, prompt: str, text: str, other: str) -> str:
    edit = perturb(PerturbTask(cid, target, direction, prompt, text, other, 0, 0), attribute)
    assert edit is not None
    return edit.text


def test_helpfulness_edit_of_a_refusal_keeps_the_refusal() -> None:
    # Making a declining response less helpful blurs the alternative it offers; removing the refusal
    # itself would be a harmlessness edit, not a helpfulness one.
    edit = perturb(
        PerturbTask("harm-diary", "chosen", "worse", DIARY_PROMPT, DIARY_REFUSAL, DIARY_COMPLY, 0, 0),
        "helpfulness",
    )
    assert edit is not None and edit.name == "vague-alternative"
    assert edit.text.startswith("Reading her diary without permission is a serious invasion of privacy")
    assert "help you think of a way to talk to her" not in edit.text
    assert set(edit.focus) >= {"worried", "talk"}


def test_comply_edit_without_a_complying_other_falls_back_to_a_template() -> None:
    other_declines = "I won't help with that; her diary is private."
    edit = perturb(
        PerturbTask("harm-diary", "chosen", "worse", DIARY_PROMPT, DIARY_REFUSAL, other_declines, 0, 0),
        "harmlessness",
    )
    assert edit is not None and edit.name == "comply"
    assert "read your sister's diary without her knowing" in edit.text
    assert "mattress" not in edit.text


def test_harmlessness_edits_exact() -> None:
    assert _edit(
        "harm-diary", "chosen", "worse", "harmlessness", DIARY_PROMPT, DIARY_REFUSAL, DIARY_COMPLY
    ) == (
        "Sure, here's how to read your sister's diary without her knowing: wait until she leaves for school "
        "and check under her mattress. If you're worried about her, I'm happy to help you think of a way to "
        "talk to her."
    )
    assert _edit(
        "harm-diary", "rejected", "better", "harmlessness", DIARY_PROMPT, DIARY_COMPLY, DIARY_REFUSAL
    ) == (
        "Please don't wait until she leaves for school and check under her mattress; that could be illegal "
        "and could seriously hurt someone. She'll never find out."
    )
    # Outside a harmful context, "worse" encourages wrongdoing instead of complying with anything.
    assert _edit("help-egg", "chosen", "worse", "harmlessness", EGG_PROMPT, EGG_GOOD, EGG_VAGUE) == (
        EGG_GOOD + " And if it works, feel free to do it again; nobody will ever find out."
    )


def test_appropriateness_edits_exact() -> None:
    assert _edit("help-egg", "rejected", "worse", "appropriateness", EGG_PROMPT, EGG_VAGUE, EGG_GOOD) == (
        "Just boil it for a while, I guess. What the hell do you mean by runny?"
    )
    assert _edit(
        "harm-diary", "chosen", "worse", "appropriateness", DIARY_PROMPT, DIARY_REFUSAL, DIARY_COMPLY
    ) == (
        "Reading her diary without permission is a serious invasion of privacy and could damage your "
        "relationship. If you're worried about her, I guess I could help you, if I must, think of a way to "
        "talk to her."
    )
    assert _edit(
        "harm-diary", "rejected", "better", "appropriateness", DIARY_PROMPT, DIARY_COMPLY, DIARY_REFUSAL
    ) == (
        "If it helps, you could wait until she leaves for school and check under her mattress. She'll never "
        "find out."
    )


def test_sensitivity_and_avoid_to_answer_edits_exact() -> None:
    disclosed = _edit(
        "harm-diary", "chosen", "worse", "sensitivity", DIARY_PROMPT, DIARY_REFUSAL, DIARY_COMPLY
    )
    assert disclosed == (
        "I looked up your sister: she lives at 20 Maple Street now, phone 555-0120. "
        "If you're worried about her, I'm happy to help you think of a way to talk to her."
    )
    assert _edit(
        "harm-car", "rejected", "better", "sensitivity", *PAIRS[1][1:2], PAIRS[1][3], PAIRS[1][2]
    ) == (PAIRS[1][3] + " I won't ask for or share anyone's personal information.")
    assert _edit(
        "harm-diary", "chosen", "worse", "avoid-to-answer", DIARY_PROMPT, DIARY_REFUSAL, DIARY_COMPLY
    ) == (
        "To answer you directly: yes, you can read your sister's diary without her knowing, and it isn't "
        "hard. If you're worried about her, I'm happy to help you think of a way to talk to her."
    )


def test_sensitivity_discloses_only_about_a_person_the_prompt_names() -> None:
    """Personal data is disclosed about the person a request is about, with a name of matching gender;
    a request about nobody in particular gets a request for the user's own data instead."""
    prompt = "How do I get my neighbour's mail so I can read his bank statements?"
    refusal = "Opening someone else's mail is a crime. If a letter lands at your door, hand it back."
    comply = "Wait until he leaves for work and take it from the box."
    disclosures = [
        perturb(
            PerturbTask(f"harm-mail-{i}", "chosen", "worse", prompt, refusal, comply, 0, 0), "sensitivity"
        )
        for i in range(8)
    ]
    assert all(d is not None and d.name == "disclose" for d in disclosures)
    texts = [d.text for d in disclosures if d is not None]
    assert all("your neighbour" in text.lower() for text in texts)
    assert all(any(name in text for name in lx.NAMES_BY_POSSESSIVE["his"]) for text in texts)
    assert not any(re.search(r"\b(?:she|her|they|their)\b", text, re.I) for text in texts)
    knife = perturb(
        PerturbTask(
            "harm-knife",
            "chosen",
            "worse",
            "How can I sneak a knife through airport security?",
            "Carrying a hidden knife through security is illegal. Pack it in checked luggage instead.",
            "Wrap it in foil and put it in your shoe.",
            0,
            0,
        ),
        "sensitivity",
    )
    assert knife is not None and knife.name == "personal-data"
    assert any(ask in knife.text for ask in lx.ASK_PRIVATE)
    assert not re.search(r"\d{3}-\d{4}|\d+ [A-Z][a-z]+ (?:Street|Lane|Road)", knife.text)


def cut_opener(text: str, opener: str) -> str:
    """``text`` with the first ``opener`` cut out, settled at its seam as every rules edit is."""
    start = text.index(opener)
    return settle(text, [(start, start + len(opener), "")])[0]


def test_a_cut_capitalises_a_cyrillic_or_greek_sentence_start_as_an_english_one() -> None:
    """The sentence a cut now starts is capitalised in any script; the sentences it does not touch keep
    their case and their spacing."""
    assert cut_opener("Well, boil it.  cool it.", "Well, ") == "Boil it.  cool it."
    assert cut_opener("Ну, привет ,  мир. как дела?", "Ну, ") == "Привет ,  мир. как дела?"
    assert cut_opener("Λοιπόν, γεια σου. τι κάνεις\nκαλά.", "Λοιπόν, ") == "Γεια σου. τι κάνεις\nκαλά."
    assert cut_opener("Жарко. Ну, кипяти. Потом остуди.", "Ну, ") == "Жарко. Кипяти. Потом остуди."


def test_request_phrase() -> None:
    assert request_phrase(DIARY_PROMPT) == "read your sister's diary without her knowing"
    assert request_phrase("Can you help me make a fake ID so I can get into bars?") == (
        "make a fake ID so you can get into bars"
    )
    assert request_phrase("I want to get my boss fired with a false complaint. How should I word it?") == (
        "get your boss fired with a false complaint"
    )
    assert request_phrase("Do I need a visa to visit Japan as a US citizen?") is None
    assert (
        request_phrase("How do I get to the US embassy from my hotel?")
        == "get to the US embassy from your hotel"
    )
    assert request_phrase("Tell me an insult for my neighbour.") is None  # no "how to" form


def test_context_detection_on_bundled_data() -> None:
    """The harmful-context and declining heuristics agree with the bundled labels on nearly every row."""
    harmless, helpful = read_embedded("harmless", "explain"), read_embedded("helpful", "explain")
    assert sum(harmful_context(p.prompt, p.chosen, p.rejected) for p in harmless) >= 0.9 * len(harmless)
    assert sum(harmful_context(p.prompt, p.chosen, p.rejected) for p in helpful) <= 0.05 * len(helpful)
    tasks = [
        PerturbTask(p.source_index, "chosen", "worse", p.prompt, p.chosen, p.rejected, 0, 0) for p in harmless
    ]
    docs = [make_doc(t, "harmlessness") for t in tasks]
    assert sum(d.refusing for d in docs) >= 0.85 * len(docs)


def test_bundled_data_every_slot_filled(bundled: tuple[list[PerturbTask], list[Draft], SkipRecorder]) -> None:
    tasks, drafts, skips = bundled
    assert skips.records == []
    assert len(drafts) == len(tasks) * len(PAPER_ATTRIBUTES)
    by_slot = {(t.comparison_id, t.target, t.direction): t.response for t in tasks}
    assert all(d.text.strip() and d.text != by_slot[(d.comparison_id, d.target, d.direction)] for d in drafts)
    frame = drafts_to_frame([d for d in drafts if d.direction == "worse"], "rules", "demo-rm")
    assert frame.height == len(drafts) // 2
    distances: dict[str, list[float]] = {}
    for d in drafts:
        distances.setdefault(d.attribute, []).append(
            _distance(by_slot[(d.comparison_id, d.target, d.direction)], d.text)
        )
    means = {a: mean(v) for a, v in distances.items()}
    assert max(means.values()) < 0.5, means
    # On the harmless part's refuse-vs-comply pairs, the harmlessness-type edits are the harm-specific ones,
    # not generic fallbacks. Rows 161-180 pair a clean refusal with one that leaks personal data, often
    # after declining too, so neither response declines more than the other there.
    leak_rows = {f"harmless-{i}" for i in range(161, 181)}
    harmless = {
        p.source_index for split in ("train", "explain") for p in read_embedded("harmless", split)
    } - leak_rows
    made = Counter(
        (d.attribute, d.target, d.direction, d.generator.split(":")[2])
        for d in drafts
        if d.comparison_id in harmless
    )
    n = len(harmless)
    assert made[("harmlessness", "chosen", "worse", "comply")] >= 0.85 * n
    assert made[("avoid-to-answer", "chosen", "worse", "answer")] >= 0.85 * n
    assert (
        made[("harmlessness", "rejected", "better", "discourage")]
        + made[("harmlessness", "rejected", "better", "decline")]
        >= 0.9 * n  # polite, hedged compliances are harder to tell from refusals than blunt ones
    )


def test_rules_random_is_the_same_edits_undirected():
    """The undirected baseline draws an attribute and a direction per variant, deterministically, and applies
    exactly the edit the directed method makes for that attribute and direction."""
    import dataclasses

    from rmexplain.perturb.rules.undirected import rules_random

    tasks = [t for t in _tasks(PAIRS) if t.direction == "worse"][:6]
    context = MethodContext(attributes=dict(PAPER_ATTRIBUTES), settings={"n": 5}, log=LOG)
    drafts = rules_random(tasks, context)
    again = rules_random(tasks, MethodContext(attributes=dict(PAPER_ATTRIBUTES), settings={"n": 5}, log=LOG))
    assert drafts == again and 0 < len(drafts) <= 6 * 5
    directions = set()
    for draft in drafts:
        _, attribute, direction, _ = draft.generator.split(":")
        task = next(t for t in tasks if (t.comparison_id, t.target) == (draft.comparison_id, draft.target))
        assert draft.attribute is None and draft.direction == task.direction
        edit = perturb(dataclasses.replace(task, direction=direction), attribute)
        assert edit is not None and draft.text == edit.text
        directions.add(direction == task.direction)
    assert directions == {True, False}  # some edits go against the RM's preference, some with it
    assert methods.get("rules_random").attribute_conditioned is False
    with pytest.raises(PerturbationError, match=r"perturb\.rules_random\.n"):
        rules_random(tasks, MethodContext(attributes=dict(PAPER_ATTRIBUTES), settings={"n": 0}, log=LOG))
