"""Harmlessness and avoid-to-answer edits (paper App. A), both directions."""

from __future__ import annotations

import re

from rmexplain.perturb.rules import lexicon as lx
from rmexplain.perturb.rules.edits import (
    first_matching,
    harmful_instruction,
    insert_after,
    insert_at,
    is_imperative,
    make_edit,
    prefix_sentence,
    refusal_index,
    replace_sentence,
    swap_words,
)
from rmexplain.perturb.rules.text import Doc, RuleEdit, decapitalise, sentence_spans, strip_end, words


def harm_comply(doc: Doc) -> RuleEdit | None:
    """Harmful context, refusing response: its refusal sentence becomes compliance with the request,
    with the complying other response's how-to when there is one."""
    i = refusal_index(doc) if doc.harmful and doc.refusing else None
    if i is None:
        return None
    how_to = harmful_instruction(doc)
    if how_to and doc.request:
        line = doc.template(lx.COMPLY_WITH_HOW_TO, how_to=how_to)
    else:
        line = doc.template(lx.COMPLY_WITH_REQUEST if doc.request else lx.COMPLY_GENERIC)
    return replace_sentence(doc, i, line, "comply")


def harm_undermine_safety(doc: Doc) -> RuleEdit | None:
    """Benign context: a sentence with safety advice is followed by advice to skip it."""
    i = None if doc.harmful else first_matching(doc, lx.SAFETY_ADVICE)
    return None if i is None else insert_after(doc, i, doc.pick(lx.UNDERMINE_SAFETY), "undermine-safety")


def harm_escalate(doc: Doc) -> RuleEdit | None:
    """Immoral encouragement (lie, repeat, ignore who gets hurt) is appended."""
    return insert_after(doc, len(doc.spans) - 1, doc.pick(lx.ESCALATE_HARM), "encourage-wrongdoing")


def harm_discourage(doc: Doc) -> RuleEdit | None:
    """Harmful compliance: the first instruction becomes "Please don't …; that could be illegal …"."""
    if not doc.harmful or doc.refusing:
        return None
    for i in range(len(doc.spans)):
        offset = is_imperative(doc.sentence(i))
        if offset is not None:
            body = decapitalise(strip_end(doc.sentence(i)[offset:]))
            return replace_sentence(
                doc, i, "Please don't " + body + doc.pick(lx.DISCOURAGE_TAIL), "discourage"
            )
    return None


def harm_decline(doc: Doc) -> RuleEdit | None:
    """Harmful compliance without an instruction sentence: its first sentence becomes a refusal."""
    if not doc.harmful or doc.refusing:
        return None
    line = doc.template(lx.DECLINE_HARMFUL if doc.request else lx.DECLINE_GENERIC)
    return replace_sentence(doc, 0, line, "decline")


def harm_reinforce(doc: Doc) -> RuleEdit | None:
    """Harmful context, declining response: an explicit "please don't <request>" is appended."""
    if not (doc.harmful and doc.refusing and doc.request):
        return None
    return insert_after(doc, len(doc.spans) - 1, doc.template(lx.REINFORCE_REFUSAL), "reinforce-refusal")


def harm_safety_caveat(doc: Doc) -> RuleEdit | None:
    """A safety caveat is appended."""
    return insert_after(doc, len(doc.spans) - 1, doc.pick(lx.SAFETY_CAVEAT), "safety-caveat")


# ---- avoid-to-answer ----------------------------------------------------------------------------------
def answer_directly_harmful(doc: Doc) -> RuleEdit | None:
    """Harmful context, refusing response: the refusal becomes a direct "yes, you can <request>"."""
    i = refusal_index(doc) if doc.harmful and doc.refusing else None
    if i is None:
        return None
    line = doc.template(lx.ANSWER_HARMFUL_DIRECTLY if doc.request else lx.ANSWER_GENERIC_DIRECTLY)
    return replace_sentence(doc, i, line, "answer")


def answer_more_directly(doc: Doc) -> RuleEdit | None:
    """Harmful compliance: the instructions are announced as exactly what to do, openers dropped."""
    if not doc.harmful or doc.refusing:
        return None
    opener = re.match(lx.COMPLIANCE_OPENER, doc.sentence(0), re.I)
    start = doc.spans[0][0] + (opener.end() if opener else 0)
    rest = doc.text[start : doc.spans[0][1]]
    new = doc.pick(lx.DIRECT_PREFIX) + decapitalise(rest)
    return make_edit(doc, [(start, doc.spans[0][1], new)], words(doc.sentence(0))[:3], "answer-outright")


def evade(doc: Doc) -> RuleEdit | None:
    """The direct answer (first sentence) is replaced by an evasive line (prefixed if it is all there is)."""
    line = doc.pick(lx.EVASIVE_LINES)
    if len(doc.spans) >= 2:
        return replace_sentence(doc, 0, line, "evade")
    return insert_at(doc, doc.spans[0][0], line + " ", words(doc.sentence(0)), "evade")


def deflect(doc: Doc) -> RuleEdit | None:
    """Harmful compliance: the first sentence (the instruction) becomes a deflection."""
    if not doc.harmful or doc.refusing:
        return None
    return replace_sentence(doc, 0, doc.pick(lx.DEFLECT_LINES), "deflect")


def decline_more(doc: Doc) -> RuleEdit | None:
    """Harmful context, refusing response: an explicit refusal to go into details is added."""
    if not doc.harmful:
        return None
    return insert_after(doc, len(doc.spans) - 1, doc.pick(lx.DEFLECT_LINES), "decline-details")


def drop_evasion(doc: Doc) -> RuleEdit | None:
    """Benign context: evasive phrases ("I'm not sure", "it depends", "look it up") are deleted."""
    if doc.harmful:
        return None
    edit = swap_words(doc, [(lx.EVASION, "")], "drop-evasion", limit=3)
    return edit if edit and len(words(edit.text)) >= 3 else None


def direct_answer_from_other(doc: Doc) -> RuleEdit | None:
    """Benign context: the other response's opening (direct) answer is put first."""
    if doc.harmful or not doc.other.strip():
        return None
    first = doc.other[slice(*sentence_spans(doc.other)[0])].strip()
    if first.lower() in doc.text.lower():
        return None
    return insert_at(doc, doc.spans[0][0], first + " ", words(doc.sentence(0)), "direct-answer")


def direct_prefix(doc: Doc) -> RuleEdit | None:
    """Last resort: the answer is announced as a direct one."""
    return prefix_sentence(doc, 0, lx.DIRECT_PREFIX[1], "direct-prefix")
