"""Unicode-safe pieces of text the probes and the miner edit: words, sentences, openers and closers.

Words are runs of letters and digits (``regex``'s ``\\p{L}``, ``\\p{N}``, with inner apostrophes and
hyphens), so accented and non-Latin text is split as such; a sentence ends at ``.``, ``!``, ``?``, ``…`` or
their full-width forms (``。！？``) followed by a space or the end, or at a line break. Nothing here raises on
any string: a piece that is not there is a ``SkipEdit`` with its reason.
"""

from __future__ import annotations

import regex

from rmexplain.discovery.base import SkipEdit

WORD = regex.compile(r"[\p{L}\p{N}][\p{L}\p{N}\p{M}]*(?:['’\-][\p{L}\p{N}\p{M}]+)*")
LETTERS = regex.compile(r"\p{L}")
# a sentence: anything up to its final punctuation (and closing quotes or brackets), or to a line break
SENTENCE = regex.compile(r"[^\n]*?(?:[.!?…]+[\"'”’)\]]*(?=\s|$)|[。！？]+[\"'”’)\]]*|(?=\n)|$)")
TERMINAL = regex.compile(r"[.!?…。！？][\"'”’)\]]*$")
SPACES = regex.compile(r"[ \t]{2,}")
PRONOUN_I = regex.compile(r"(?<![\p{L}\p{N}])i(?=['’]|(?![\p{L}\p{N}]))")
# a mined feature's name (``mined_name``): its kind and its text, read back whole (``fullmatch``)
MINED_NAME = regex.compile(r'(?P<kind>opener|closer|words|character) "(?P<text>.+)"', regex.DOTALL)


def mined_name(kind: str, text: str) -> str:
    """A mined feature's name, ``kind "text"`` (``words "as i said"``), as ``MINED_NAME`` reads it back."""
    return f'{kind} "{text}"'


def words(text: str) -> list[str]:
    """The words of ``text``, in order."""
    return WORD.findall(text)


def pronoun_i(text: str) -> str:
    """A lower-cased phrase with the pronoun ``I`` (and ``I'm``, ``I’ve``, …) capitalised again."""
    return PRONOUN_I.sub("I", text)


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each non-blank sentence of ``text``, in order (leading spaces excluded)."""
    spans = []
    for match in SENTENCE.finditer(text):
        start, end = match.span()
        while start < end and text[start].isspace():
            start += 1
        if start < end:
            spans.append((start, end))
    return spans


def sentence_texts(text: str) -> list[str]:
    """The sentences of ``text`` as strings."""
    return [text[a:b] for a, b in sentences(text)]


def require_text(text: str) -> str:
    """``text`` itself, or ``SkipEdit`` when it has no letter (nothing a probe could edit)."""
    if not LETTERS.search(text):
        raise SkipEdit("the response has no letter")
    return text


def capitalise_first(text: str) -> str:
    """``text`` with its first letter in upper case where that is one letter (nothing else changed)."""
    match = LETTERS.search(text)
    if match is None:
        return text
    i = match.start()
    upper = text[i].upper()
    return text[:i] + (upper if len(upper) == 1 else text[i]) + text[i + 1 :]  # ß stays one letter


def decapitalise_first(text: str) -> str:
    """``text`` with its first letter in lower case, unless its first word is ``I``, an acronym or a name
    written in capitals throughout (``NASA``) — a heuristic: a proper noun in sentence case is lowered."""
    match = WORD.search(text)
    if match is None:
        return text
    word = match.group()
    if word == "I" or word.startswith(("I'", "I’")) or (len(word) > 1 and word.isupper()):
        return text
    i = match.start()
    return text[:i] + text[i].lower() + text[i + 1 :]


def with_opener(text: str, opener: str) -> str:
    """``opener`` put before ``text`` (its first letter lowered when the opener runs into the sentence,
    i.e. does not end a sentence itself)."""
    body = text.lstrip()
    ends_sentence = bool(TERMINAL.search(opener.rstrip()))
    return f"{opener.rstrip()} {body if ends_sentence else decapitalise_first(body)}"


def with_closer(text: str, closer: str) -> str:
    """``closer`` put after ``text`` as its last sentence (a full stop added before it where the text has
    no final punctuation)."""
    body = text.rstrip()
    if body and not TERMINAL.search(body) and not body.endswith((":", ";")):
        body += "."
    return f"{body} {closer.strip()}" if body else closer.strip()


def before_final_punctuation(sentence: str, insert: str) -> str:
    """``insert`` put at the end of ``sentence``, before its final punctuation (and closing quotes)."""
    body = sentence.rstrip()
    match = TERMINAL.search(body)
    cut = match.start() if match else len(body)
    return body[:cut] + insert + body[cut:] + sentence[len(body) :]


def without_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` without the given character spans, spaces tidied where they were cut; where a cut took a
    sentence's capitalised first word, what follows is capitalised."""
    out, last = [], 0
    for start, end in sorted(spans):
        out.append(text[last:start])
        if start >= last and text[start : start + 1].isupper() and _starts_sentence(text, start):
            rest = text[end:]
            stripped = rest.lstrip(" \t,;:")
            text = text[:end] + rest[: len(rest) - len(stripped)] + capitalise_first(stripped)
        last = max(last, end)
    out.append(text[last:])
    return tidy("".join(out))


def _starts_sentence(text: str, i: int) -> bool:
    before = text[:i].rstrip(" \t\"'“‘(")
    return not before or before[-1] in ".!?…。！？\n"


def tidy(text: str) -> str:
    """Runs of spaces collapsed where an edit left them, a space before punctuation and a comma left
    doubled or before a stop removed, the text stripped, and its first letter capitalised."""
    cleaned = regex.sub(r"(?<=\S)[ \t]{2,}(?=\S)", " ", text)
    cleaned = regex.sub(r"[ \t]+(?=[,.;:!?…。！？])", "", cleaned)
    cleaned = regex.sub(r",(?:[ \t]*,)+", ",", cleaned)
    cleaned = regex.sub(r",[ \t]*(?=[.;:!?…。！？])", "", cleaned)
    cleaned = regex.sub(r"(?m)^[ \t]+|[ \t]+$", "", cleaned)
    cleaned = regex.sub(r"^[\s,;:—–-]+", "", cleaned)
    return capitalise_first(cleaned.strip())


def longest_word(text: str) -> tuple[int, int]:
    """(start, end) of the longest word of ``text`` (ties: the first), or ``SkipEdit`` when it has none."""
    best: tuple[int, int] | None = None
    for match in WORD.finditer(text):
        if best is None or match.end() - match.start() > best[1] - best[0]:
            best = match.span()
    if best is None:
        raise SkipEdit("the response has no word")
    return best


def join_sentences(parts: list[str]) -> str:
    """Sentences joined into one paragraph, each with final punctuation."""
    return " ".join(p if TERMINAL.search(p) else p + "." for p in (s.strip() for s in parts) if p)


def at_least_sentences(text: str, n: int) -> list[str]:
    """The sentences of ``text``, or ``SkipEdit`` when it has fewer than ``n``."""
    found = sentence_texts(require_text(text))
    if len(found) < n:
        raise SkipEdit(f"the response has fewer than {n} sentences")
    return found


# ── edits that leave the rest of the text as it was, byte for byte (the mined classes') ──────────────────
LINE_MARKER = regex.compile(r"(?:^|\n)[ \t]*(?:[-*+•]|\p{Nd}+[.)]|#{1,6}|>)[ \t]+[\"'“‘(*_]*$")
FULL_STOP = regex.compile(r"(?<![.…])\.[\"'”’)\]]*$")  # a sentence's final full stop (no ellipsis)


def opens_sentence(text: str, i: int) -> bool:
    """Whether position ``i`` of ``text`` opens a sentence: nothing but opening quotes, brackets or markdown
    emphasis since the text's start, a sentence's final punctuation or a line break, or a list item's or
    header's marker (``- ``, ``1. ``, ``## ``, ``> ``) at the start of its line."""
    return _starts_sentence(text, i) or LINE_MARKER.search(text[:i]) is not None


def capitalise_at(text: str, i: int) -> str:
    """``text`` with the first letter at or after ``i`` in upper case, where that is one letter and no digit
    comes before it (``5 eggs`` stays); nothing else changed."""
    match = regex.compile(r"[\p{L}\p{N}]").search(text, i)
    if match is None or not LETTERS.match(match.group()):
        return text
    upper = match.group().upper()
    j = match.start()
    return text[:j] + (upper if len(upper) == 1 else text[j]) + text[j + 1 :]


def replace_spans(text: str, replacements: list[tuple[int, int, str]]) -> str:
    """``text`` with each (start, end) stretch replaced by its string (stretches must not overlap); what lies
    between them is kept byte for byte."""
    out, last = [], 0
    for start, end, new in sorted(replacements):
        if start < last:
            raise ValueError(f"overlapping stretches at {start}")
        out += [text[last:start], new]
        last = end
    out.append(text[last:])
    return "".join(out)


def delete_clause(text: str, start: int, end: int) -> str:
    """``text`` without ``text[start:end]`` (a clause with the spaces after it), the rest byte for byte; where
    the clause opened a sentence with a capital letter, what follows it is capitalised."""
    capital = text[start : start + 1].isupper() and opens_sentence(text, start)
    out = text[:start] + text[end:]
    return capitalise_at(out, start) if capital else out


def word_cut(text: str, start: int, end: int) -> tuple[int, int]:
    """The stretch to delete with the word at ``text[start:end]`` so that no space or comma is left doubled
    and the text's own spacing stays: ``, word,`` → nothing (``It is, honestly, fine`` → ``It is fine``);
    ``, word`` before a stop or the end → nothing (``It works, honestly.`` → ``It works.``); ``word,`` and
    the spaces after it (``Honestly, it`` → ``it``); at a sentence start, the word and the spaces after it;
    else the word and the shorter of the runs of spaces around it (the space after it on a tie:
    ``is simply  done`` → ``is  done``, ``NASA   actually said`` → ``NASA   said``). ``SkipEdit`` where
    the word touches no space (``(really)``, ``**really**``)."""
    before, after = text[:start], text[end:]
    lead = regex.search(r",[ \t]+$", before)
    if lead and regex.match(r",[ \t]", after):
        return lead.start(), end + 1
    if lead and regex.match(r"(?:[.!?…;:。！？]|\s*$)", after):
        return lead.start(), end
    follow = regex.match(r",?[ \t]+", after)
    if follow and (after.startswith(",") or opens_sentence(text, start)):
        return start, end + follow.end()
    precede = regex.search(r"[ \t]+$", before)
    spaces_after = len(follow.group()) if follow else 0
    if precede and (not follow or len(precede.group()) < spaces_after):
        return precede.start(), end
    if follow:
        return start, end + follow.end()
    raise SkipEdit(f"“{text[start:end]}” touches no space (inside brackets or markup)")


def delete_words(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` without the words at ``spans`` (each with the space or comma ``word_cut`` takes), the rest
    byte for byte; where a deleted word opened a sentence in capitals, what follows is capitalised."""
    out = text
    for start, end in sorted(spans, reverse=True):  # from the end: earlier offsets stay valid
        a, b = word_cut(out, start, end)
        capital = out[start : start + 1].isupper() and opens_sentence(out, start)
        out = out[:a] + out[b:]
        if capital and a == start:
            out = capitalise_at(out, a)
    return out


def statement_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of ``text`` that opens with a letter and ends with a full stop (a
    statement, not a question, an exclamation, a list item or a header)."""
    return [
        (a, b) for a, b in sentences(text) if LETTERS.match(text, a) and FULL_STOP.search(text[a:b].rstrip())
    ]


def prefix_sentence(text: str, span: tuple[int, int], prefix: str) -> str:
    """``prefix`` put before the sentence at ``span`` (its first letter lowered, unless its first word is
    ``I`` or in capitals: ``decapitalise_first``), the rest byte for byte."""
    a, b = span
    return text[:a] + prefix + decapitalise_first(text[a:b]) + text[b:]
