"""Text utilities of the rules method: words, sentence spans, casing, and the Doc and RuleEdit types."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import regex

from rmexplain.perturb.rules import lexicon as lx

# A word: a run of letters, combining marks (Devanagari's vowel signs) and digits in any script, with inner
# apostrophes; an ideograph (Han, Hiragana) is a word by itself, as Unicode's word boundaries (UAX #29) have
# it. On ASCII text these are exactly the runs of [A-Za-z0-9] the lexicon's edits were written for.
_LETTER = r"[\p{L}\p{M}\p{N}--\p{Han}\p{Hiragana}]"
WORD = regex.compile(rf"[\p{{Han}}\p{{Hiragana}}]|{_LETTER}+(?:['’]{_LETTER}+)*", regex.V1)

# A sentence ends at . ! ? (and the Arabic ؟, the Devanagari danda) before a space or the end, at the
# full-width 。！？ of Chinese and Japanese (no space follows them), or at a line break.
_SENTENCE = re.compile(r"\S.*?(?:[.!?؟।॥]+[\"'”’)]*(?=\s|$)|[。！？]+[”’」』）]*|(?=\n)|$)", re.S)


_NO_SPLIT_AFTER = re.compile(r"(?:^\d+[.)]|(?:^|\s)(?:e\.g|i\.e|vs|Dr|Mr|Mrs|Ms|St|etc)\.|(?:[A-Z]\.){2,})$")


_END_PUNCT = re.compile(r"[.!?؟।॥。！？]+[\"'”’)」』）]*$")


_RARE_ZIPF = 4.0


# One change of an edit: the original's text[start:end] becomes new.
Change = tuple[int, int, str]


@dataclass(frozen=True)
class RuleEdit:
    """One edit: the new text, the words of the original it centred on, and the strategy's name.

    ``changes`` are the stretches of the original the edit changed, as (start, end, new) in the original's
    offsets, in order and apart: outside them the new text is the original, byte for byte (whitespace
    included). The built-in edits (and ``finish``) always set them; a ``RuleEdit`` made by hand may leave
    them empty.
    """

    text: str
    focus: tuple[str, ...]
    name: str
    changes: tuple[Change, ...] = field(default=(), repr=False)


@dataclass
class Doc:
    """A response being edited, with the context the strategies need."""

    text: str
    prompt: str
    other: str
    rng: random.Random
    request: str | None = None
    harmful: bool = False
    refusing: bool = False
    other_refusing: bool = False
    spans: list[tuple[int, int]] = field(default_factory=list)

    def sentence(self, i: int) -> str:
        start, end = self.spans[i]
        return self.text[start:end]

    def pick(self, options: Sequence[str]) -> str:
        return options[self.rng.randrange(len(options))]

    def template(self, options: Sequence[str], names: Sequence[str] = lx.NAMES, **extra: str) -> str:
        """A seeded choice among ``options`` (those needing ``{request}`` only when there is one), filled
        with the request, a seeded name from ``names``, address and phone, and ``extra``."""
        usable = [o for o in options if "{request}" not in o or self.request] or list(options)
        filled = self.pick(usable)
        name, street = self.pick(names), self.pick(lx.STREETS)
        number = 10 + self.rng.randrange(90)
        return filled.format(
            request=self.request or "do that",
            name=name,
            address=f"{number} {street}",
            phone=f"555-01{number:02d}",
            **extra,
        )


Strategy = Callable[[Doc], "RuleEdit | None"]


# ---- text helpers -----------------------------------------------------------------------------------
def words(text: str) -> list[str]:
    """The words of ``text`` in any script (letters, marks and digits with inner apostrophes; an ideograph is
    a word by itself), in order."""
    return WORD.findall(text)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text`` (list markers and abbreviations do not end one)."""
    spans: list[tuple[int, int]] = []
    for match in _SENTENCE.finditer(text):
        if spans and _NO_SPLIT_AFTER.search(text[spans[-1][0] : spans[-1][1]]):
            spans[-1] = (spans[-1][0], match.end())
        else:
            spans.append((match.start(), match.end()))
    return spans


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Case-insensitive pattern with word boundaries on the ends that are words."""
    pre = r"(?<![\w'])" if re.match(r"[\w(]", pattern) else ""
    post = "" if pattern.endswith((" ", ",", "*", ":", r"\s*")) else r"(?![\w'])"
    return re.compile(pre + "(?:" + pattern + ")" + post, re.I)


def keep_case(original: str, replacement: str) -> str:
    if replacement and original[:1].isupper():
        return replacement[0].upper() + replacement[1:]
    return replacement


def decapitalise(sentence: str) -> str:
    first = (words(sentence) or [""])[0]
    if first.startswith(("I'", "I’")) or first == "I" or (len(first) > 1 and first.isupper()):
        return sentence
    return sentence[:1].lower() + sentence[1:]


def strip_end(sentence: str) -> str:
    return _END_PUNCT.sub("", sentence.rstrip())


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """scikit-learn's English stop words (imported on first use: scikit-learn loads SciPy)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return ENGLISH_STOP_WORDS


def content_words(text: str) -> set[str]:
    return {w.lower().rstrip("s") for w in words(text) if len(w) > 2 and w.lower() not in stop_words()}


def rare_count(text: str) -> int:
    """Specific words (rare in English) and numbers: a proxy for how much information a text carries."""
    from wordfreq import zipf_frequency  # loads its word lists

    toks = [w for w in words(text) if w.lower() not in stop_words()]
    return sum(1 for w in toks if w[0].isdigit() or zipf_frequency(w.lower(), "en") < _RARE_ZIPF)


def focus_in(text: str, start: int, end: int) -> tuple[str, ...]:
    return tuple(words(text[start:end]))


def anchor_focus(doc: Doc, i: int) -> tuple[str, ...]:
    """Focus for an insertion next to sentence ``i``: its words shared with the prompt, else its content."""
    start, end = doc.spans[i]
    prompt = content_words(doc.prompt)
    shared = [w for w in words(doc.sentence(i)) if w.lower().rstrip("s") in prompt]
    content = [w for w in words(doc.sentence(i)) if w.lower() not in stop_words()]
    return tuple(shared or content or words(doc.text[start:end]))
