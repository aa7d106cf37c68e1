"""Correctness, engagement, helpfulness and informativeness edits, both directions."""

from __future__ import annotations

import re

from rmexplain.perturb.rules import lexicon as lx
from rmexplain.perturb.rules.edits import (
    DECLINING,
    best_sentence,
    borrow,
    delete_sentence,
    insert_after,
    is_imperative,
    make_edit,
    prompt_overlap,
    replace_sentence,
    replace_span,
    swap_words,
    swaps,
)
from rmexplain.perturb.rules.text import (
    Doc,
    RuleEdit,
    compile_pattern,
    keep_case,
    rare_count,
    strip_end,
    words,
)

# ---- correctness ---------------------------------------------------------------------------------------
_NUMBER = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w])")


def falsify_number(doc: Doc) -> RuleEdit | None:
    """The first number is changed (×3, or ÷3 for large ones); else the first number word is shifted."""
    starts = {start for start, _ in doc.spans}
    for match in _NUMBER.finditer(doc.text):
        if match.start() in starts and doc.text[match.end() : match.end() + 1] in (".", ")"):
            continue  # a list marker, not a fact
        new = _scaled(match.group(1), match.group(2))
        return replace_span(doc, match.start(), match.end(), new, "falsify-number")
    match = compile_pattern("|".join(lx.NUMBER_WORDS)).search(doc.text)
    if match:
        k = lx.NUMBER_WORDS.index(match.group().lower())
        new = lx.NUMBER_WORDS[(k + 3) % len(lx.NUMBER_WORDS)]
        return replace_span(doc, match.start(), match.end(), keep_case(match.group(), new), "falsify-number")
    return None


def _scaled(integer: str, decimals: str | None) -> str:
    value = float(integer.replace(",", "") + (decimals or ""))
    new = value * 3 if value < 500 else value / 3
    if decimals:
        return f"{new:.{len(decimals) - 1}f}"
    new_int = max(round(new), 2)
    return f"{new_int:,}" if "," in integer else str(new_int)


def flip_fact(doc: Doc) -> RuleEdit | None:
    """A fact word is replaced by its opposite ("illegal" → "legal", "before" → "after")."""
    return swap_words(doc, lx.FACT_FLIPS, "flip-fact", limit=1)


def flip_negation(doc: Doc) -> RuleEdit | None:
    """A statement is negated ("is" → "is not", "can't" → "can")."""
    return swap_words(doc, lx.NEGATION_FLIPS, "negate", limit=1)


def false_claim(doc: Doc) -> RuleEdit | None:
    return insert_after(doc, len(doc.spans) - 1, doc.pick(lx.FALSE_CLAIMS), "false-claim")


def correct_claims(doc: Doc) -> RuleEdit | None:
    """False reassurances ("nobody will notice", "works every time") are corrected."""
    return swap_words(doc, lx.CORRECTIONS, "correct-claim", limit=2)


def qualify_absolutes(doc: Doc) -> RuleEdit | None:
    """Absolute claims are qualified ("always" → "usually", "everyone" → "most people")."""
    return swap_words(doc, lx.ABSOLUTE_TO_QUALIFIED, "qualify", limit=2)


def correctness_hedge(doc: Doc) -> RuleEdit | None:
    return insert_after(doc, len(doc.spans) - 1, doc.pick(lx.CORRECTNESS_HEDGES), "double-check")


# ---- engagement ----------------------------------------------------------------------------------------
def drop_engaging(doc: Doc) -> RuleEdit | None:
    """A sentence that engages the user (a question to them, an offer, empathy) is deleted."""
    regex = re.compile(lx.ENGAGING, re.I)
    hits = [i for i in range(len(doc.spans)) if regex.search(doc.sentence(i).strip())]
    return delete_sentence(doc, hits[0], "drop-engaging") if hits and len(doc.spans) > 1 else None


def depersonalise(doc: Doc) -> RuleEdit | None:
    """The first statement (not instruction) that addresses the user is made impersonal ("you" → "people")."""
    regex = compile_pattern(r"you|your|you're|you'll|yourself")
    statements = [i for i in range(len(doc.spans)) if is_imperative(doc.sentence(i)) is None]
    hits = [i for i in statements if regex.search(doc.sentence(i))]
    if not hits:
        return None
    start, end = doc.spans[hits[0]]
    chosen = swaps(doc.text[start:end], lx.DEPERSONALISE, 6, offset=start)
    if not chosen:
        return None
    return make_edit(doc, chosen, [w for s, e, _ in chosen for w in words(doc.text[s:e])], "impersonal")


def curt_close(doc: Doc) -> RuleEdit | None:
    return insert_after(doc, len(doc.spans) - 1, doc.pick(lx.CURT_CLOSERS), "curt")


def follow_up(doc: Doc) -> RuleEdit | None:
    """A follow-up question to the user is appended."""
    return insert_after(doc, len(doc.spans) - 1, doc.template(lx.FOLLOW_UPS), "follow-up")


# ---- helpfulness / informativeness ---------------------------------------------------------------------
def vague_out(doc: Doc) -> RuleEdit | None:
    """The sentence that best addresses the question is replaced by a vague line."""
    if len(doc.spans) < 2:
        return None
    if doc.harmful and doc.refusing:
        return _vague_alternative(doc)
    i = best_sentence(doc, prompt_overlap(doc))
    return None if i is None else replace_sentence(doc, i, doc.pick(lx.VAGUE_LINES), "vague")


def _vague_alternative(doc: Doc) -> RuleEdit | None:
    """Declining response: its most specific sentence that neither declines nor warns (the safe
    alternative it offers) becomes a vague line; the refusal itself is left alone (that is harmlessness)."""
    declining = compile_pattern("|".join(DECLINING))
    offers = [i for i in range(len(doc.spans)) if not declining.search(doc.sentence(i))]
    if not offers:
        return None
    i = max(offers, key=lambda k: (rare_count(doc.sentence(k)), len(words(doc.sentence(k)))))
    return replace_sentence(doc, i, doc.pick(lx.VAGUE_ALTERNATIVES), "vague-alternative")


def vague_fragment(doc: Doc) -> RuleEdit | None:
    """A one-sentence answer is cut at its first clause boundary and trails off vaguely."""
    sentence = doc.sentence(0)
    match = re.search(r", | and | then | so | until | with | by ", sentence)
    if not match or len(words(sentence[: match.start()])) < 2:
        return insert_after(doc, 0, doc.pick(lx.VAGUE_LINES), "vague-tail")
    start = doc.spans[0][0]
    new = sentence[: match.start()] + lx.VAGUE_TAIL
    return replace_span(doc, start + match.start(), doc.spans[0][1], new[match.start() :], "vague-fragment")


def add_helpful(doc: Doc) -> RuleEdit | None:
    """The other response's sentence that best addresses the question is appended."""
    borrowed = borrow(doc, prompt_overlap(doc))
    return None if borrowed is None else insert_after(doc, len(doc.spans) - 1, borrowed, "add-answer")


def generic_help(doc: Doc) -> RuleEdit | None:
    """Last resort: a pointer to specific help is appended."""
    return insert_after(doc, len(doc.spans) - 1, doc.pick(lx.GENERIC_HELP), "next-step")


def vague_numbers(doc: Doc) -> RuleEdit | None:
    """A figure with its unit becomes vague ("about 6 minutes" → "a few minutes")."""
    pattern = r"(?:about |around |roughly |at least |up to )?\d[\d,.]*(?: to \d[\d,.]*)? (?=[a-z]+s\b)"
    return swap_words(doc, [(pattern, "a few ")], "vague-number", limit=2)


def drop_informative(doc: Doc) -> RuleEdit | None:
    """The most informative sentence other than the first is deleted."""
    if len(doc.spans) < 2:
        return None
    i = best_sentence(doc, rare_count, skip_first=True)
    return None if i is None else delete_sentence(doc, i, "drop-fact")


def truncate_detail(doc: Doc) -> RuleEdit | None:
    """The last sentence loses its trailing detail (after its last clause boundary)."""
    sentence = doc.sentence(len(doc.spans) - 1)
    cuts = list(re.finditer(r", | and | with | until | because | by | for | if | when | whenever ", sentence))
    if re.match(lx.SUBORDINATOR, sentence, re.I) and cuts and cuts[0].group() == ", ":
        cuts = cuts[1:]  # "If it looks fat, it is": the first comma closes the condition
    if not cuts:
        return None
    start = doc.spans[-1][0]
    return replace_span(doc, start + cuts[-1].start(), doc.spans[-1][1], ".", "drop-detail-clause")


def blur(doc: Doc) -> RuleEdit | None:
    """Last resort: the final statement is blurred ("…, or something along those lines")."""
    i = len(doc.spans) - 1
    start, end = doc.spans[i]
    body = strip_end(doc.sentence(i))
    new = body + lx.BLUR_TAIL + (doc.sentence(i)[len(body) :] or ".")
    return make_edit(doc, [(start, end, new)], words(body)[-2:], "blur")


def add_informative(doc: Doc) -> RuleEdit | None:
    """The other response's most informative sentence is appended (not the one "helpfulness" adds).

    A declining response does not borrow from a complying one: that would be a harmlessness edit.
    """
    if doc.refusing and not doc.other_refusing:
        return None
    borrowed = borrow(doc, rare_count, avoid=prompt_overlap(doc))
    return None if borrowed is None else insert_after(doc, len(doc.spans) - 1, borrowed, "add-fact")


def informative_tail(doc: Doc) -> RuleEdit | None:
    """Last resort: legal consequences (when the response names an offence), else a pointer to a reference."""
    legal = doc.harmful and compile_pattern(lx.STRONG_WARNING).search(doc.text)
    line = lx.HARM_CONSEQUENCE if legal else doc.pick(lx.INFORMATIVE_TAIL)
    return insert_after(doc, len(doc.spans) - 1, line, "add-explanation")
