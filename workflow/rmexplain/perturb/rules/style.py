"""Appropriateness, assertiveness, clarity, coherence and complexity edits, both directions."""

from __future__ import annotations

import re

from rmexplain.perturb.rules import lexicon as lx
from rmexplain.perturb.rules.edits import (
    best_sentence,
    insert_after,
    insert_at,
    is_imperative,
    make_edit,
    prefix_sentence,
    replace_sentence,
    replace_span,
    swap_words,
)
from rmexplain.perturb.rules.text import WORD, Doc, RuleEdit, compile_pattern, decapitalise, strip_end, words


# ---- appropriateness ----------------------------------------------------------------------------------
def the_hell(doc: Doc) -> RuleEdit | None:
    """ "What do you mean?" → "What the hell do you mean?"."""
    match = re.search(lx.WH_QUESTION, doc.text, re.I)
    if not match:
        return None
    return insert_at(doc, match.end(), " the hell", [match.group()], "the-hell")


def polite_to_rude(doc: Doc) -> RuleEdit | None:
    """A polite phrase becomes a rude or sarcastic one."""
    return swap_words(doc, lx.POLITE_TO_RUDE, "polite-to-rude", limit=1)


def rude_opener(doc: Doc) -> RuleEdit | None:
    """A rude, sarcastic opener is put before the response."""
    opener = doc.pick(lx.RUDE_OPENERS)
    return insert_at(doc, doc.spans[0][0], opener, words(doc.sentence(0))[:4], "rude-opener")


def rude_to_polite(doc: Doc) -> RuleEdit | None:
    """Rude, sarcastic or slangy words are removed or made neutral."""
    return swap_words(doc, lx.RUDE_TO_POLITE, "rude-to-polite", limit=3)


def soften_command(doc: Doc) -> RuleEdit | None:
    """A curt "(Sure,) just do X" becomes "If it helps, you could do X" (a bare imperative is left alone)."""
    for i in range(len(doc.spans)):
        offset = is_imperative(doc.sentence(i))
        if offset:  # > 0: the instruction follows "Sure," / "Just"
            new = "If it helps, you could " + decapitalise(doc.sentence(i)[offset:])
            return replace_sentence(doc, i, new, "soften-command")
    return None


def polite_frame(doc: Doc) -> RuleEdit | None:
    """A polite opener is added."""
    opener = doc.pick(lx.POLITE_OPENERS)
    return insert_at(doc, doc.spans[0][0], opener, words(doc.sentence(0))[:4], "polite-opener")


# ---- assertiveness -----------------------------------------------------------------------------------
def hedge_words(doc: Doc) -> RuleEdit | None:
    """Certainty words and modal verbs become hedges ("will" → "might", "is" → "may be")."""
    return swap_words(doc, lx.CERTAIN_TO_HEDGE, "hedge", limit=2)


def hedge_prefix(doc: Doc) -> RuleEdit | None:
    """A hedging preface is put before the first sentence."""
    return prefix_sentence(doc, 0, doc.pick(lx.HEDGE_PREFIXES), "hedge-prefix")


def drop_hedges(doc: Doc) -> RuleEdit | None:
    """Hedges are deleted and modal verbs made certain ("could" → "will")."""
    return swap_words(doc, lx.HEDGE_TO_CERTAIN, "assert", limit=2)


def add_judgement(doc: Doc) -> RuleEdit | None:
    """A confident judgement is appended."""
    return insert_after(doc, len(doc.spans) - 1, doc.pick(lx.JUDGEMENTS), "judgement")


# ---- clarity ----------------------------------------------------------------------------------------
def ramble(doc: Doc) -> RuleEdit | None:
    """The first two sentences are fused into a run-on with fillers."""
    if len(doc.spans) < 2:
        return None
    (a, b), (_, d) = doc.spans[0], doc.spans[1]
    fused = strip_end(doc.text[a:b]) + doc.pick(lx.RAMBLE_JOINS) + decapitalise(doc.text[doc.spans[1][0] : d])
    return make_edit(doc, [(a, d, fused)], words(doc.text[a:b])[-2:] + words(doc.sentence(1))[:2], "run-on")


def filler_clause(doc: Doc) -> RuleEdit | None:
    """Fillers are inserted after the first comma (or the third word)."""
    sentence = doc.sentence(0)
    comma = sentence.find(", ")
    cut = comma + 2 if comma > 0 else _nth_word_end(sentence, min(3, len(words(sentence)) - 1))
    if cut is None:
        return None
    at = doc.spans[0][0] + cut
    return insert_at(doc, at, doc.pick(lx.CLAUSE_FILLERS), words(sentence[:cut])[-2:], "fillers")


def _nth_word_end(sentence: str, n: int) -> int | None:
    """One past the end of the ``n``-th word (``n`` 0: the last word); None when the sentence has no word
    or fewer than ``n + 1``."""
    found = list(WORD.finditer(sentence))
    return found[n - 1].end() + 1 if found and len(found) > n else None


def drop_fillers(doc: Doc) -> RuleEdit | None:
    """Fillers ("um", "you know", "basically") are removed."""
    return swap_words(doc, [(lx.FILLER, " ")], "drop-fillers", limit=4)


def split_long(doc: Doc) -> RuleEdit | None:
    """The longest sentence (18+ words) is split in two at "; " or ", and/but/so/which/while"."""
    i = best_sentence(doc, lambda s: len(words(s)))
    if i is None or len(words(doc.sentence(i))) < 18:
        return None
    sentence = doc.sentence(i)
    match = re.search(r"; |, (?:and|but|so|which|while) ", sentence)
    if not match or len(words(sentence[: match.start()])) < 5 or len(words(sentence[match.end() :])) < 4:
        return None
    joint = {"which": "This ", "while": "Meanwhile, "}.get(match.group().strip(" ,;"), "")
    rest = sentence[match.end() :]
    new = sentence[: match.start()] + ". " + joint + (decapitalise(rest) if joint else rest)
    return replace_sentence(doc, i, new, "split-sentence")


def number_points(doc: Doc) -> RuleEdit | None:
    """Two or more sentences are laid out as numbered points, one a line (a line break between two
    sentences stays as it is; other whitespace between them becomes one)."""
    if len(doc.spans) < 2 or re.search(r"^\s*\d+[.)]", doc.text, re.M):
        return None
    changes = [(doc.spans[0][0], doc.spans[0][0], "1. ")]
    for k in range(1, len(doc.spans)):
        (_, end), (start, _) = doc.spans[k - 1], doc.spans[k]
        gap = end if "\n" not in doc.text[end:start] else start  # a line break between them stays
        changes.append((gap, start, ("\n" if gap < start else "") + f"{k + 1}. "))
    return make_edit(doc, changes, words(doc.sentence(0))[:2], "numbered-points")


def plain_prefix(doc: Doc) -> RuleEdit | None:
    """Last resort: the point is announced plainly."""
    return prefix_sentence(doc, 0, doc.pick(lx.PLAIN_PREFIXES), "plain-prefix", decap=False)


# ---- coherence -----------------------------------------------------------------------------------------
def dangling_subject(doc: Doc) -> RuleEdit | None:
    """An explicit subject (2–8 words before "is/can/…") becomes "That", whose referent is missing."""
    order = [*range(1, len(doc.spans)), 0]
    for i in order:
        sentence = doc.sentence(i)
        match = re.match(r"((?:[\w'’-]+ ){1,7}?[\w'’-]+) " + lx.SUBJECT_AUX + r"\b", sentence)
        if match and match.group(1).split()[0].lower() not in lx.NON_IMPERATIVE_START - {"the", "a", "an"}:
            start = doc.spans[i][0]
            return replace_span(doc, start, start + match.end(1), "That", "dangling-reference")
    return None


def dangling_sentence(doc: Doc) -> RuleEdit | None:
    """A sentence referring to context that does not exist is inserted after the first one."""
    return insert_after(doc, 0, doc.pick(lx.DANGLING_SENTENCES), "dangling-sentence")


def drop_dangling(doc: Doc) -> RuleEdit | None:
    """References to absent context ("as I said before", "anyway") are removed."""
    return swap_words(doc, [(lx.DANGLING, "")], "drop-dangling", limit=2)


def connect(doc: Doc) -> RuleEdit | None:
    """The second sentence gets a connective: "Instead, " after a warning, else "Also, "."""
    if len(doc.spans) < 2:
        return None
    second = doc.sentence(1)
    if re.match(
        r"(?:also|instead|however|then|so|but|and|in addition|that said|because|this|that)\b", second, re.I
    ):
        return None
    warns = compile_pattern(lx.WARNING).search(doc.sentence(0)) or compile_pattern(lx.REFUSAL).search(
        doc.sentence(0)
    )
    link = lx.CONNECT_AFTER_WARNING if warns else doc.pick(lx.CONNECT_ADDITIVE)
    return prefix_sentence(doc, 1, link, "connective")


def tie_in(doc: Doc) -> RuleEdit | None:
    """A single sentence is introduced as the answer to the question."""
    return prefix_sentence(doc, 0, lx.CLOSING_TIE, "tie-in")


# ---- complexity ----------------------------------------------------------------------------------------
def jargonise(doc: Doc) -> RuleEdit | None:
    """Plain words become jargon ("use" → "utilise", "because" → "inasmuch as")."""
    return swap_words(doc, lx.PLAIN_TO_JARGON, "jargon", limit=3)


def jargon_clause(doc: Doc) -> RuleEdit | None:
    """A jargon-laden clause is attached to the first sentence."""
    start, end = doc.spans[0]
    sentence = doc.sentence(0)
    body = strip_end(sentence)
    new = body + doc.pick(lx.JARGON_CLAUSES) + (sentence[len(body) :] or ".")
    return make_edit(doc, [(start, end, new)], words(body)[-3:], "jargon-clause")


def plain_words(doc: Doc) -> RuleEdit | None:
    """Jargon becomes plain words ("approximately" → "about")."""
    return swap_words(doc, lx.JARGON_TO_PLAIN, "plain-words", limit=3)


def drop_detail_clause(doc: Doc) -> RuleEdit | None:
    """A parenthesis or an example clause ("such as …", "for example …") is removed."""
    return swap_words(doc, [(lx.DETAIL_CLAUSE, "")], "drop-detail", limit=1)
