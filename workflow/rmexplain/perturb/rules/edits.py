"""Edit primitives the attributes share: replace, delete or insert a sentence, prefix, swap, borrow."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import regex

from rmexplain.perturb.rules import lexicon as lx
from rmexplain.perturb.rules.text import (
    Change,
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
    words,
)

# ---- seams ------------------------------------------------------------------------------------------------
# An edit changes stretches of the response and leaves the rest byte for byte as it was. Clean-up happens
# only at the seams, to what the change created: no whitespace doubled where a stretch was cut out, no
# space before punctuation or separator run left behind, no separator opening a sentence, and a capital
# where a sentence now starts that did not start there before.
_SEAM_RULES = (
    (re.compile(r"[ \t]{2,}"), " "),  # a double space
    (re.compile(r"[ \t]+([,.;:!?])"), r"\1"),  # a space before punctuation
    (re.compile(r"([,;:])(?:\s*[,;:])+"), r"\1"),  # repeated separators
    (re.compile(r"[,;:]+([.!?])"), r"\1"),  # a separator just before the sentence ends
    (re.compile(r"(^\s*|[.!?]\s+|\n\s*)[,;:]+[ \t]*"), r"\1"),  # a separator opening a sentence
)
_CAPITAL = regex.compile(r"(?:^\s*|[.!?]\s+|\n\s*)(\p{Ll})")  # a lowercase letter opening a sentence
_OPENS_SENTENCE = regex.compile(r"(?:^\s*|[.!?]\s+|\n\s*)\Z")  # a sentence starts at the end of this
# Two changes with only these between them are settled as one (what lies between stays as it was).
_BETWEEN = re.compile(r"[\s,;:.!?\"'”’)]*")
_TOKEN = re.compile(r"\s+|\w+|.", re.S)


@dataclass
class _Seam:
    """A change being settled: ``joined`` is the new text before it, its new text (``joined[lo:hi]``) and
    the original after it (``original[end:]``); the change replaces ``original[start:end]``. Clean-up never
    reaches before ``floor``, where the previous change ended."""

    original: str
    joined: str
    lo: int
    hi: int
    start: int
    end: int
    floor: int

    def replace(self, a: int, b: int, new: str) -> None:
        """``joined[a:b]`` becomes ``new``; the change grows to cover it, and shrinks to what differs from
        the original (so that what it kept counts as the original's)."""
        self.joined = self.joined[:a] + new + self.joined[b:]
        if a < self.lo:
            self.start -= self.lo - a
            self.lo = a
        if b > self.hi:
            self.end += b - self.hi
            self.hi = b
        self.hi += len(new) - (b - a)
        start, end, kept = _trimmed(self.original, self.start, self.end, self.joined[self.lo : self.hi])
        self.lo, self.hi = self.lo + start - self.start, self.lo + start - self.start + len(kept)
        self.start, self.end = start, end

    def in_original(self, i: int) -> int:
        """Where position ``i`` of ``joined`` (outside the change) is in the original."""
        return self.end + i - self.hi if i >= self.hi else self.start - (self.lo - i)

    def created(self, pattern: re.Pattern[str], match: re.Match[str]) -> bool:
        """Whether ``match`` (of ``pattern`` in ``joined``) is new: it overlaps or straddles the change, or
        the original has no such match there (its context changed)."""
        a, b = match.span()
        if a < self.floor:
            return False
        if b <= self.lo or a >= self.hi:
            before = pattern.match(self.original, self.in_original(a))
            return before is None or before.group() != match.group()
        return True


def _ws_run(text: str, backwards: bool = False) -> int:
    """Length of the whitespace that ``text`` starts with (ends with, ``backwards``)."""
    return len(text) - len(text.rstrip() if backwards else text.lstrip())


def _settle_whitespace(seam: _Seam) -> None:
    """No run of whitespace made of two: the new text's edge yields to the original's whitespace (and to the
    ends of the response); where a cut joins two runs, one stays: the response's own opening or closing
    whitespace, else the one with more line breaks, else the left one."""
    j = seam.joined
    lead = _ws_run(j[seam.lo : seam.hi])
    if lead and (seam.lo == 0 or j[seam.lo - 1].isspace()):
        seam.replace(seam.lo, seam.lo + lead, "")
    j = seam.joined
    trail = _ws_run(j[seam.lo : seam.hi], backwards=True)
    if trail and (seam.hi == len(j) or j[seam.hi].isspace()):
        seam.replace(seam.hi - trail, seam.hi, "")
    j = seam.joined
    if seam.lo != seam.hi or seam.start == seam.end:
        return
    left, right = _ws_run(j[seam.floor : seam.lo], backwards=True), _ws_run(j[seam.hi :])
    if left and right:  # the response's own opening or closing whitespace stays, else the likelier break
        if seam.hi + right == len(j) or (
            seam.lo - left > 0
            and j[seam.hi : seam.hi + right].count("\n") > j[seam.lo - left : seam.lo].count("\n")
        ):
            seam.replace(seam.lo - left, seam.lo, "")
        else:
            seam.replace(seam.hi, seam.hi + right, "")
    elif right and seam.lo == 0:
        seam.replace(seam.hi, seam.hi + right, "")
    elif left and seam.hi == len(j):
        seam.replace(seam.lo - left, seam.lo, "")


def _settle_punctuation(seam: _Seam) -> None:
    """The seam rules, each applied to the matches the change created and touches, until none is left."""
    for pattern, replacement in _SEAM_RULES:
        pos = seam.floor
        while match := _created_match(seam, pattern, pos):
            seam.replace(match.start(), match.end(), match.expand(replacement))
            pos = match.start()


def _created_match(seam: _Seam, pattern: re.Pattern[str], pos: int) -> re.Match[str] | None:
    """The first match of ``pattern`` from ``pos`` on that touches the change and that it created."""
    for match in pattern.finditer(seam.joined, pos):
        if match.start() > seam.hi:
            return None
        if match.end() >= seam.lo and seam.created(pattern, match):
            return match
    return None


def _settle_capitals(seam: _Seam) -> None:
    """A capital where the change starts a sentence: in its new text, and at the first letter after it when
    that letter did not start a sentence in the original."""
    letters = []
    for match in _CAPITAL.finditer(seam.joined, seam.floor):
        q = match.start(1)
        if seam.lo <= q < seam.hi:
            letters.append(q)
        elif q >= seam.hi:
            if not seam.joined[seam.hi : q].strip() and not _OPENS_SENTENCE.search(
                seam.original[: seam.in_original(q)]
            ):
                letters.append(q)
            break
    for q in reversed(letters):
        seam.replace(q, q + 1, seam.joined[q].upper())


def _spaced(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` has whitespace (or an end of the text) on both sides, inside or out."""
    left = start == 0 or text[start - 1].isspace() or text[start].isspace()
    right = end == len(text) or text[end].isspace() or text[end - 1].isspace()
    return left and right


def _trimmed(original: str, start: int, end: int, new: str) -> Change:
    """The change without the start and end it shares with the original."""
    old = original[start:end]
    k = 0
    while k < min(len(old), len(new)) and old[k] == new[k]:
        k += 1
    start, old, new = start + k, old[k:], new[k:]
    k = 0
    while k < min(len(old), len(new)) and old[-1 - k] == new[-1 - k]:
        k += 1
    return start, end - k, new[: len(new) - k]


def settle(original: str, changes: Sequence[Change]) -> tuple[str, tuple[Change, ...]]:
    """The text made by ``changes`` (stretches of ``original`` as (start, end, new), apart) and the changes
    it actually makes, each cleaned up at its seams; outside them the text is the original's."""
    merged: list[Change] = []
    for start, end, new in sorted(_trimmed(original, *c) for c in changes):
        if original[start:end] == new:
            continue
        if merged and start < merged[-1][1]:
            raise ValueError(f"overlapping changes of an edit: {merged[-1][:2]} and {(start, end)}")
        if merged and _BETWEEN.fullmatch(original, merged[-1][1], start):
            s0, e0, n0 = merged.pop()
            start, new = s0, n0 + original[e0:start] + new
        merged.append((start, end, new))
    out, done, settled = "", 0, []
    for start, end, new in merged:
        old = original[start:end]
        if not new and old.strip() and _spaced(original, start, end):
            # a cut with whitespace on both sides: its own edge whitespace joins the runs outside it, and
            # of the two runs the seam keeps one
            start, end = start + _ws_run(old), end - _ws_run(old, backwards=True)
        before = out + original[done:start]
        seam = _Seam(original, before + new + original[end:], len(before), len(before) + len(new),
                     start, end, len(out))  # fmt: skip
        for _ in range(3):
            was = seam.joined
            _settle_whitespace(seam)
            _settle_punctuation(seam)
            if seam.joined == was:
                break
        _settle_capitals(seam)
        out, done = seam.joined[: seam.hi], seam.end
        change = _trimmed(original, seam.start, seam.end, seam.joined[seam.lo : seam.hi])
        if original[change[0] : change[1]] != change[2]:
            settled.append(change)
    return out + original[done:], tuple(settled)


def make_edit(doc: Doc, changes: Sequence[Change], focus: Sequence[str], name: str) -> RuleEdit | None:
    """The edit making ``changes`` to the response (stretches as (start, end, new)), cleaned up at their
    seams only; None when it changes nothing or leaves nothing."""
    text, made = settle(doc.text, changes)
    if not made or not text.strip():
        return None
    return RuleEdit(text, tuple(focus), name, made)


def diff(original: str, text: str) -> list[Change]:
    """The stretches in which ``text`` differs from ``original`` (words, punctuation and whitespace runs
    aligned by ``difflib``)."""
    old, new = _TOKEN.findall(original), _TOKEN.findall(text)
    at = [0]
    for token in old:
        at.append(at[-1] + len(token))
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return [
        (at[i1], at[i2], "".join(new[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


# ---- edit primitives ------------------------------------------------------------------------------
def finish(doc: Doc, text: str, focus: Sequence[str], name: str) -> RuleEdit | None:
    """The edit turning the response into ``text``: the stretches where they differ, cleaned up at their
    seams (the rest stays the response's, byte for byte); None when nothing changes."""
    return make_edit(doc, diff(doc.text, text), focus, name)


def replace_span(doc: Doc, start: int, end: int, new: str, name: str) -> RuleEdit | None:
    return make_edit(doc, [(start, end, new)], focus_in(doc.text, start, end), name)


def replace_sentence(doc: Doc, i: int, new: str, name: str) -> RuleEdit | None:
    start, end = doc.spans[i]
    return replace_span(doc, start, end, new, name)


def insert_at(doc: Doc, at: int, new: str, focus: Sequence[str], name: str) -> RuleEdit | None:
    return make_edit(doc, [(at, at, new)], focus, name)


def delete_sentence(doc: Doc, i: int, name: str) -> RuleEdit | None:
    """Sentence ``i`` is cut out; of the whitespace around it, the run with more line breaks stays."""
    if len(doc.spans) < 2:
        return None
    start, end = doc.spans[i]
    return make_edit(doc, [(start, end, "")], focus_in(doc.text, start, end), name)


def insert_after(doc: Doc, i: int, sentence: str, name: str) -> RuleEdit | None:
    end = doc.spans[i][1]
    return insert_at(doc, end, " " + sentence, anchor_focus(doc, i), name)


def prefix_sentence(doc: Doc, i: int, prefix: str, name: str, decap: bool = True) -> RuleEdit | None:
    start, end = doc.spans[i]
    body = decapitalise(doc.sentence(i)) if decap else doc.sentence(i)
    return make_edit(doc, [(start, end, prefix + body)], anchor_focus(doc, i), name)


def swaps(
    text: str, pairs: Sequence[tuple[str, str]], limit: int, offset: int = 0
) -> list[tuple[int, int, str]]:
    """The first ``limit`` non-overlapping matches of the (pattern, replacement) pairs in ``text``, as
    changes (offsets moved by ``offset``)."""
    found: list[tuple[int, int, str]] = []
    for pattern, replacement in pairs:
        for match in compile_pattern(pattern).finditer(text):
            found.append((match.start(), match.end(), keep_case(match.group(), match.expand(replacement))))
    chosen: list[tuple[int, int, str]] = []
    for start, end, new in sorted(found, key=lambda f: (f[0], -f[1])):
        if len(chosen) < limit and all(end <= s or start >= e for s, e, _ in chosen):
            chosen.append((start, end, new))
    return sorted((start + offset, end + offset, new) for start, end, new in chosen)


def swap_words(doc: Doc, pairs: Sequence[tuple[str, str]], name: str, limit: int = 2) -> RuleEdit | None:
    """Replace the first ``limit`` non-overlapping matches of the (pattern, replacement) pairs."""
    chosen = swaps(doc.text, pairs, limit)
    if not chosen:
        return None
    focus = [w for start, end, _ in chosen for w in words(doc.text[start:end])]
    return make_edit(doc, chosen, focus, name)


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
