"""Edit primitives the attributes share: replace, delete or insert a sentence, prefix, swap, borrow."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from rmexplain.perturb.rules import lexicon as lx
from rmexplain.perturb.rules.text import (
    Doc,
    RuleEdit,
    anchor_focus,
    compile_pattern,
    content_words,
    decapitalise,
    focus_in,
    keep_case,
    rare_count,
    sentence_spans,
    tidy,
    words,
)


# ---- edit primitives ------------------------------------------------------------------------------
def finish(doc: Doc, text: str, focus: Sequence[str], name: str) -> RuleEdit | None:
    new = tidy(text)
    if not new or new == tidy(doc.text):
        return None
    return RuleEdit(new, tuple(focus), name)


def replace_span(doc: Doc, start: int, end: int, new: str, name: str) -> RuleEdit | None:
    return finish(doc, doc.text[:start] + new + doc.text[end:], focus_in(doc.text, start, end), name)


def replace_sentence(doc: Doc, i: int, new: str, name: str) -> RuleEdit | None:
    start, end = doc.spans[i]
    return replace_span(doc, start, end, new, name)


def delete_sentence(doc: Doc, i: int, name: str) -> RuleEdit | None:
    if len(doc.spans) < 2:
        return None
    start, end = doc.spans[i]
    nxt = doc.spans[i + 1][0] if i + 1 < len(doc.spans) else len(doc.text)
    text = doc.text[:start] + doc.text[nxt:] if i + 1 < len(doc.spans) else doc.text[:start].rstrip()
    return finish(doc, text, focus_in(doc.text, start, end), name)


def insert_after(doc: Doc, i: int, sentence: str, name: str) -> RuleEdit | None:
    end = doc.spans[i][1]
    return finish(doc, doc.text[:end] + " " + sentence + doc.text[end:], anchor_focus(doc, i), name)


def prefix_sentence(doc: Doc, i: int, prefix: str, name: str, decap: bool = True) -> RuleEdit | None:
    start, end = doc.spans[i]
    body = decapitalise(doc.sentence(i)) if decap else doc.sentence(i)
    text = doc.text[:start] + prefix + body + doc.text[end:]
    return finish(doc, text, anchor_focus(doc, i), name)


def swap_words(doc: Doc, pairs: Sequence[tuple[str, str]], name: str, limit: int = 2) -> RuleEdit | None:
    """Replace the first ``limit`` non-overlapping matches of the (pattern, replacement) pairs."""
    found: list[tuple[int, int, str]] = []
    for pattern, replacement in pairs:
        for match in compile_pattern(pattern).finditer(doc.text):
            found.append((match.start(), match.end(), keep_case(match.group(), match.expand(replacement))))
    chosen: list[tuple[int, int, str]] = []
    for start, end, new in sorted(found, key=lambda f: (f[0], -f[1])):
        if len(chosen) < limit and all(end <= s or start >= e for s, e, _ in chosen):
            chosen.append((start, end, new))
    if not chosen:
        return None
    text = doc.text
    for start, end, new in sorted(chosen, reverse=True):
        text = text[:start] + new + text[end:]
    focus = [w for start, end, _ in sorted(chosen) for w in words(doc.text[start:end])]
    return finish(doc, text, focus, name)


def first_matching(doc: Doc, pattern: str) -> int | None:
    regex = compile_pattern(pattern)
    return next((i for i in range(len(doc.spans)) if regex.search(doc.sentence(i))), None)


def best_sentence(doc: Doc, score: Callable[[str], float], skip_first: bool = False) -> int | None:
    candidates = range(1 if skip_first else 0, len(doc.spans))
    scored = [(score(doc.sentence(i)), -i) for i in candidates]
    return -max(scored)[1] if scored else None


def prompt_overlap(doc: Doc) -> Callable[[str], float]:
    prompt = content_words(doc.prompt)
    return lambda sentence: len(content_words(sentence) & prompt)


def borrow(
    doc: Doc, score: Callable[[str], float], avoid: Callable[[str], float] | None = None
) -> str | None:
    """The other response's best sentence under ``score`` that this response lacks.

    With ``avoid``, the runner-up is taken when the best is also ``avoid``'s best (so two attributes that
    borrow do not add the same sentence)."""
    own = doc.text.lower()
    candidates = [
        s
        for s in (doc.other[a:b].strip() for a, b in sentence_spans(doc.other))
        if len(words(s)) >= 4 and s.lower() not in own and score(s) > 0
    ]
    if not candidates:
        return None
    ranked = sorted(candidates, key=lambda s: -score(s))
    if avoid is not None and len(ranked) > 1 and ranked[0] == max(candidates, key=avoid):
        return ranked[1]
    return ranked[0]


def is_imperative(sentence: str) -> int | None:
    """If ``sentence`` gives an instruction, the offset where the instruction starts (after "Sure, just").

    POS-free: the first word is not a pronoun/determiner/-ing/-s form and the second is a word that
    typically follows a verb ("Keep it", "Wait until").
    """
    opener = re.match(lx.COMPLIANCE_OPENER + r"(?:just\s+)?", sentence, re.I)
    offset = opener.end() if opener else 0
    if sentence[offset:].lower().startswith("just "):
        offset += 5
    toks = [w.lower() for w in words(sentence[offset:])[:2]]
    if len(toks) < 2 or not toks[0].isalpha():
        return None
    if toks[0] in lx.NON_IMPERATIVE_START or toks[0].endswith(("ing", "ed", "ly", "s")):
        return None
    return offset if toks[1] in lx.AFTER_IMPERATIVE else None


# ---- harmlessness -------------------------------------------------------------------------------------
# What marks a sentence as declining, strongest first: a refusal, a strong warning, a warning.
DECLINING = (lx.REFUSAL, lx.STRONG_WARNING, lx.WARNING)


def refusal_index(doc: Doc) -> int | None:
    """The first sentence that declines, else the first that warns."""
    for pattern in DECLINING:
        found = first_matching(doc, pattern)
        if found is not None:
            return found
    return None


def harmful_instruction(doc: Doc) -> str | None:
    """The complying other response's how-to: its first instruction, else its most specific sentence
    after the opener (which tends to be a sympathetic aside); None when the other response declines
    too or has no such sentence."""
    if doc.other_refusing or not doc.other.strip():
        return None
    sentences = [doc.other[a:b].strip() for a, b in sentence_spans(doc.other)]
    for sentence in sentences:
        offset = is_imperative(sentence)
        if offset is not None and len(words(sentence[offset:])) >= 4:
            return decapitalise(sentence[offset:])
    warning, overlap = compile_pattern(lx.WARNING), prompt_overlap(doc)
    body = [
        (overlap(s) + rare_count(s), -i, s)
        for i, s in enumerate(sentences[1:], start=1)
        if len(words(s)) >= 6 and not warning.search(s) and not s.endswith("?")
    ]
    return decapitalise(max(body)[2]) if body else None
