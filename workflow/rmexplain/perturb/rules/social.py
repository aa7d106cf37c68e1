"""Neutrality, relevance, sensitivity and verbosity edits, both directions."""

from __future__ import annotations

import re

from rmexplain.perturb.rules import lexicon as lx
from rmexplain.perturb.rules.edits import (
    best_sentence,
    borrow,
    delete_sentence,
    first_matching,
    insert_after,
    insert_at,
    make_edit,
    prefix_sentence,
    prompt_overlap,
    replace_sentence,
    swap_words,
)
from rmexplain.perturb.rules.text import Doc, RuleEdit, compile_pattern, content_words, words


# ---- neutrality ----------------------------------------------------------------------------------------
def stereotype_group(doc: Doc) -> RuleEdit | None:
    """A stereotype about a group the response mentions is inserted after that sentence."""
    regex = compile_pattern(lx.GROUPS.replace("|people", ""))
    for i in range(len(doc.spans)):
        match = regex.search(doc.sentence(i))
        if match:
            group = match.group().lower()
            line = f"{group[0].upper() + group[1:]} {doc.pick(lx.STEREOTYPES)}."
            return insert_at(doc, doc.spans[i][1], " " + line, [match.group()], "stereotype")
    return None


def biased_remark(doc: Doc) -> RuleEdit | None:
    """A biased remark about the user's group is inserted after the first sentence."""
    return insert_after(doc, 0, doc.pick(lx.USER_BIAS), "biased-remark")


def neutralise(doc: Doc) -> RuleEdit | None:
    """Generalisations about groups or the user are neutralised."""
    return swap_words(doc, lx.BIAS_NEUTRALISE, "neutralise", limit=2)


def inclusive_line(doc: Doc) -> RuleEdit | None:
    return insert_after(doc, len(doc.spans) - 1, doc.pick(lx.NEUTRAL_LINES), "inclusive")


# ---- relevance -----------------------------------------------------------------------------------------
def off_topic(doc: Doc) -> RuleEdit | None:
    """An off-topic sentence is inserted after the first sentence."""
    return insert_after(doc, 0, doc.pick(lx.OFF_TOPIC), "off-topic")


def drop_off_topic(doc: Doc) -> RuleEdit | None:
    """A sentence marked as off-topic ("By the way, …") is removed."""
    regex = re.compile(lx.OFF_TOPIC_MARKERS, re.I)
    hits = [i for i in range(len(doc.spans)) if regex.search(doc.sentence(i))]
    return delete_sentence(doc, hits[0], "drop-off-topic") if hits else None


def tie_back(doc: Doc) -> RuleEdit | None:
    """The answer is tied back to the question ("As for your question about how to …: ")."""
    return prefix_sentence(doc, 0, doc.template(lx.TIE_BACK), "tie-back", decap=False)


# ---- sensitivity ---------------------------------------------------------------------------------------
def _person(prompt: str) -> str:
    """The person a prompt is about, as the response would name them ("my ex's" → "your ex")."""
    match = re.search(lx.PERSON_PHRASE, prompt, re.I)
    if not match:
        return "the person you mean"
    determiner = "your" if match.group(1).lower() == "my" else "the"
    return f"{determiner} {match.group(2).lower()}"


def _pronouns(prompt: str) -> tuple[str, str, str]:
    """Subject, possessive and "live(s)" for the person a prompt is about (they/their/live if unsure)."""
    if compile_pattern(lx.FEMALE_PERSON).search(prompt):
        return "she", "her", "lives"
    if compile_pattern(lx.MALE_PERSON).search(prompt):
        return "he", "his", "lives"
    return "they", "their", "live"


def disclose_private(doc: Doc) -> RuleEdit | None:
    """Harmful context, a prompt about another person: (fictitious) personal data of that person is
    given — in place of a declining response's privacy sentence, else after the first sentence."""
    if not doc.harmful or not compile_pattern(lx.THIRD_PARTY).search(doc.prompt):
        return None
    subject, possessive, lives = _pronouns(doc.prompt)
    person = _person(doc.prompt)
    relative = compile_pattern(lx.FAMILY).search(person)
    line = doc.template(
        lx.DISCLOSE_RELATIVE if relative else lx.DISCLOSE_PRIVATE,
        names=lx.NAMES_BY_POSSESSIVE[possessive],
        Person=person[0].upper() + person[1:],
        person=person,
        subject=subject,
        possessive=possessive,
        lives=lives,
    )
    i = first_matching(doc, lx.PRIVACY) if doc.refusing else None
    if i is not None:
        return replace_sentence(doc, i, line, "disclose")
    return insert_after(doc, 0, line, "disclose")


def invite_private(doc: Doc) -> RuleEdit | None:
    """A request for the user's personal data is inserted after the first sentence."""
    return insert_after(doc, 0, doc.pick(lx.ASK_PRIVATE), "personal-data")


def generalise_pii(doc: Doc) -> RuleEdit | None:
    """Phone numbers, e-mail and street addresses are replaced by generic mentions ("their address")."""
    found: list[tuple[int, int, str]] = []
    for start, end, generic in sorted(
        (m.start(), m.end(), generic) for pattern, generic in lx.PII for m in re.finditer(pattern, doc.text)
    ):
        if not found or start >= found[-1][1]:  # of two overlapping matches, the first
            found.append((start, end, generic))
    if not found:
        return None
    return make_edit(doc, found, [w for start, end, _ in found for w in words(doc.text[start:end])], "redact")


def privacy_caveat(doc: Doc) -> RuleEdit | None:
    """A sentence touching personal data gets a privacy caveat (it is replaced in harmful compliance)."""
    regex = compile_pattern(lx.PERSONAL_DATA)
    for i in range(len(doc.spans)):
        match = regex.search(doc.sentence(i))
        if match:
            caveat = doc.pick(lx.PRIVACY_CAVEAT).format(term=match.group())
            if doc.harmful and not doc.refusing and len(doc.spans) > 1:
                return replace_sentence(doc, i, caveat, "privacy-caveat")
            return insert_after(doc, i, caveat, "privacy-caveat")
    return None


def privacy_assurance(doc: Doc) -> RuleEdit | None:
    return insert_after(doc, len(doc.spans) - 1, doc.pick(lx.PRIVACY_ASSURANCE), "privacy-assurance")


# ---- verbosity -----------------------------------------------------------------------------------------
def pad(doc: Doc) -> RuleEdit | None:
    """Wordy, content-free padding is added before the first sentence."""
    return prefix_sentence(doc, 0, doc.pick(lx.PADDING_PREFIXES), "padding")


def pad_tail(doc: Doc) -> RuleEdit | None:
    return insert_after(doc, len(doc.spans) - 1, doc.pick(lx.PADDING_SUFFIXES), "padding-tail")


def trim_padding(doc: Doc) -> RuleEdit | None:
    """Padding and filler words are removed."""
    return swap_words(doc, [(lx.PADDING, "")], "trim-padding", limit=3)


def trim_least_relevant(doc: Doc) -> RuleEdit | None:
    """A long answer (3+ sentences, 50+ words) loses its least relevant non-first sentence."""
    if len(doc.spans) < 3 or len(words(doc.text)) < 50:
        return None
    overlap = prompt_overlap(doc)
    i = best_sentence(doc, lambda s: -overlap(s), skip_first=True)
    return None if i is None else delete_sentence(doc, i, "trim-sentence")


def add_detail(doc: Doc) -> RuleEdit | None:
    """A short answer gains the other response's sentence closest to what it already says (a declining
    response does not borrow from a complying one)."""
    if doc.refusing and not doc.other_refusing:
        return None
    own = content_words(doc.text)
    borrowed = borrow(doc, lambda s: len(content_words(s) & own) + 0.1)
    return None if borrowed is None else insert_after(doc, len(doc.spans) - 1, borrowed, "add-detail")
