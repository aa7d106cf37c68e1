"""Candidate features mined from the responses, screened by their association with each RM's reward.

Nine kinds of candidate, each a ``Feature`` with its edits:

- ``opener``: the clause a response opens with, up to its first punctuation (``Good question!``, ``Yes,``,
  ``Unfortunately,``), when it has at most four words;
- ``closer``: a response's last sentence when it has at most eight words (``Hope this helps!``);
- ``words``: word n-grams (1 to ``ngram_max`` words; scikit-learn's ``CountVectorizer`` over Unicode words,
  ``rmexplain.discovery.text.WORD``);
- ``character``: a character that is neither a letter, a digit nor a space (``;``, ``(``, ``%``);
- ``lexicon``: words of a kept lexicon — AFINN's positive and negative words (``afinn``, AFINN-en-165) and
  rare words (``wordfreq`` Zipf frequency below 3);
- ``numbers``, ``pronouns``, ``shape``, ``filler``: classes (``rmexplain.discovery.classes``) — numbers
  written as digits, first- and second-person words, ending on a question and opening with "I", filler
  words — each edited as a whole (every instance changed), where a string-at-a-time miner splits a class
  over many rows and misses it when each string is weak.

A candidate needs ``min_support`` responses that have it. Each is screened on the original responses, per
RM: the least-squares t statistic of its presence in y = r/sd (less the reference's r_ref/sd where the RM
has one) ~ 1 + presence + words, i.e. its association with the reward at equal length. The ``per_rm`` with
the largest |t| of each RM (ties by name) are taken in turns, RM by RM in order of rank, until
``max_candidates``. Candidates whose presence over the responses equals one already taken (or a catalogue
probe's) are left out: the same responses, the same test.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, partial

import numpy as np
import regex

from rmexplain.discovery.base import Feature, SkipEdit, probe, probes
from rmexplain.discovery.classes import (
    AFINN,
    CLASS_KINDS,
    LONG_WORD_NAME,
    LongWords,
    class_features,
    sentiment_spans,
)
from rmexplain.discovery.text import (
    MINED_NAME,
    WORD,
    before_final_punctuation,
    capitalise_first,
    mined_name,
    pronoun_i,
    sentence_texts,
    sentences,
    tidy,
    with_closer,
    with_opener,
    without_spans,
    words,
)
from rmexplain.effects.estimators import by_largest_t

MINED = "mined from the responses"
OPENER = regex.compile(r"^\s*(?P<clause>[^\n,.!?;:—–]+)(?P<punct>[,.!?;:—–]+)")
RARE_ZIPF = 3.0
FLAGS = regex.IGNORECASE | regex.VERSION1


def phrase_pattern(phrase: str) -> str:
    """A pattern matching the words of ``phrase`` as whole words, any whitespace between them."""
    return r"(?<![\p{L}\p{N}])" + r"\s+".join(regex.escape(w) for w in phrase.split()) + r"(?![\p{L}\p{N}])"


class MinedOpener(Feature):
    """A response opening with ``surface`` (matched on its words, case-insensitive)."""

    kind, source = "opener", MINED

    def __init__(self, key: str, surface: str) -> None:
        self.name, self.surface = mined_name("opener", surface), surface
        self.description = f"Opens with “{surface}”."
        self.start = regex.compile(r"^\s*" + phrase_pattern(key) + r"[ \t]*[,.!?;:—–]*\s*", FLAGS)

    def present(self, text: str) -> bool:
        return self.start.match(text) is not None

    def add(self, text: str) -> str:
        return with_opener(text, self.surface)

    def remove(self, text: str) -> str:
        return tidy(self.start.sub("", text, count=1))


class MinedCloser(Feature):
    """A response whose last sentence is ``surface`` (its words, case-insensitive)."""

    kind, source = "closer", MINED

    def __init__(self, key: str, surface: str) -> None:
        self.name, self.surface = mined_name("closer", surface), surface
        self.description = f"Closes with “{surface}”."
        self.sentence = regex.compile(r"^\W*" + phrase_pattern(key) + r"\W*$", FLAGS)

    def _last(self, text: str) -> tuple[int, int] | None:
        spans = sentences(text)
        return spans[-1] if spans and self.sentence.match(text[spans[-1][0] : spans[-1][1]]) else None

    def present(self, text: str) -> bool:
        return self._last(text) is not None

    def add(self, text: str) -> str:
        return with_closer(text, self.surface)

    def remove(self, text: str) -> str:
        last = self._last(text)
        if last is None:
            raise SkipEdit("the response does not close with it")
        return without_spans(text, [last])


class MinedWords(Feature):
    """Word n-gram ``phrase`` anywhere (whole words, case-insensitive). Removed: every occurrence deleted.
    Added where it mostly stands in the responses: opening a sentence (``However,``) before the last
    sentence, otherwise at the end of the last sentence (``…, for example.``), the pronoun I written as I."""

    kind, source = "words", MINED

    def __init__(self, phrase: str, opens_sentences: bool) -> None:
        self.name, self.phrase, self.opens = mined_name("words", phrase), phrase, opens_sentences
        self.description = f"Uses the words “{phrase}”."
        self.pattern = regex.compile(phrase_pattern(phrase), FLAGS)

    def present(self, text: str) -> bool:
        return self.pattern.search(text) is not None

    def count(self, text: str) -> int:
        return sum(1 for _ in self.pattern.finditer(text))

    def add(self, text: str) -> str:
        spans = sentences(text)
        if not spans:
            raise SkipEdit("the response has no sentence")
        a, b = spans[-1]
        written = pronoun_i(self.phrase)  # mined in lower case: "and i" is added as "and I"
        if self.opens:
            return text[:a] + with_opener(text[a:b], capitalise_first(written) + ",") + text[b:]
        return text[:a] + before_final_punctuation(text[a:b], f", {written}") + text[b:]

    def remove(self, text: str) -> str:
        return without_spans(text, [m.span() for m in self.pattern.finditer(text)])


class WordClass(MinedWords):
    """Words an RM rewards alike, merged into one class (``rmexplain.discovery.merging``): a mined word whose
    pattern matches any member, so it is present where any member is, removed by deleting every occurrence
    of every member, and counted over all of them; added as its first member (the one with the largest effect
    in round 1), where ``MinedWords`` adds a word."""

    kind, source = "word class", "merged from the word features of the round before"

    def __init__(self, members: Sequence[str], opens_sentences: bool = False) -> None:
        if len(members) < 2:
            raise ValueError(f"a word class needs two members or more, not {list(members)}")
        super().__init__(members[0], opens_sentences)
        self.members = tuple(members)
        self.name = "word class " + ", ".join(f'"{m}"' for m in self.members)
        written = [f"“{pronoun_i(m)}”" for m in self.members]
        self.description = f"Uses any of the words {', '.join(written[:-1])} or {written[-1]}."
        longest_first = sorted(self.members, key=lambda m: (-len(m), m))
        self.pattern = regex.compile("|".join(f"(?:{phrase_pattern(m)})" for m in longest_first), FLAGS)


CHARACTER_NAMES = {
    ";": "semicolon", ":": "colon", ")": "parentheses", "]": "brackets", "}": "braces", "?": "question mark",
    '"': "double quote", "'": "apostrophe", "%": "percent sign", "$": "dollar sign", "&": "ampersand",
    "/": "slash", "-": "hyphen", "*": "asterisk", "#": "hash",
}  # fmt: skip
CHARACTER_REPLACEMENTS = {";": ",", ":": ",", "?": ".", "&": " and ", "%": " percent", "/": " or "}


class MinedCharacter(Feature):
    """A character that is no letter, digit or space. Removed only (replaced by its plain equivalent where
    it has one — ``;`` by ``,``, ``?`` by ``.``, ``%`` by `` percent`` — deleted otherwise; brackets in
    pairs): there is no natural place to add an arbitrary character."""

    kind, source = "character", MINED

    def __init__(self, char: str) -> None:
        pair = "()" if char in "()" else "[]" if char in "[]" else "{}" if char in "{}" else char
        self.name, self.chars = mined_name("character", pair), set(pair)
        self.description = f"Uses the character “{pair}” ({CHARACTER_NAMES.get(char, 'a symbol')})."

    def present(self, text: str) -> bool:
        return any(c in text for c in self.chars)

    def count(self, text: str) -> int:
        return sum(c in self.chars for c in text)

    def add(self, text: str) -> str:
        raise SkipEdit("a mined character is only removed")

    def remove(self, text: str) -> str:
        out = "".join(CHARACTER_REPLACEMENTS.get(c, "") if c in self.chars else c for c in text)
        return tidy(out)


class LexiconWords(Feature):
    """Words of a lexicon category anywhere (``instances``: each word's (start, end, how many of the
    category it holds), as ``rmexplain.discovery.classes.sentiment_spans`` reads them). Removed: every such
    word deleted. Added (where ``opener`` is set): ``opener`` before the last sentence."""

    kind, source = "lexicon", MINED

    def __init__(
        self,
        name: str,
        description: str,
        instances: Callable[[str], list[tuple[int, int, int]]],
        opener: str | None,
    ) -> None:
        self.name, self.description, self.instances, self.opener = name, description, instances, opener

    def _spans(self, text: str) -> list[tuple[int, int]]:
        return [(start, end) for start, end, _ in self.instances(text)]

    def present(self, text: str) -> bool:
        return bool(self.instances(text))

    def count(self, text: str) -> int:
        return sum(count for *_, count in self.instances(text))

    def add(self, text: str) -> str:
        if self.opener is None:
            raise SkipEdit("this lexicon category is only removed")
        spans = sentences(text)
        if not spans:
            raise SkipEdit("the response has no sentence")
        a, b = spans[-1]
        return text[:a] + with_opener(text[a:b], self.opener) + text[b:]

    def remove(self, text: str) -> str:
        return without_spans(text, self._spans(text))


# ── the candidates a corpus offers ────────────────────────────────────────────────────────────────────────
def mined_openers(texts: Sequence[str], min_support: int) -> list[Feature]:
    """Opening clauses of at most four words that ``min_support`` responses share (their most common
    written form; ties: the first in sorted order)."""
    forms: dict[str, Counter[str]] = {}
    for text in texts:
        match = OPENER.match(text)
        if match and 1 <= len(words(match.group("clause"))) <= 4:
            key = " ".join(w.lower() for w in words(match.group("clause")))
            surface = match.group("clause").strip() + match.group("punct")[:1]
            forms.setdefault(key, Counter())[surface] += 1
    return [
        MinedOpener(key, _most_common(forms[key]))
        for key in sorted(forms)
        if sum(forms[key].values()) >= min_support
    ]


def mined_closers(texts: Sequence[str], min_support: int) -> list[Feature]:
    """Last sentences of at most eight words that ``min_support`` responses share."""
    forms: dict[str, Counter[str]] = {}
    for text in texts:
        last = sentence_texts(text)[-1:] if text.strip() else []
        if last and 1 <= len(words(last[0])) <= 8 and len(sentence_texts(text)) > 1:
            key = " ".join(w.lower() for w in words(last[0]))
            forms.setdefault(key, Counter())[last[0].strip()] += 1
    return [
        MinedCloser(key, _most_common(forms[key]))
        for key in sorted(forms)
        if sum(forms[key].values()) >= min_support
    ]


def ngrams(text: str, ngram_max: int) -> list[str]:
    """The distinct lower-cased word n-grams (1 to ``ngram_max`` words) of ``text``, within runs of words
    that only spaces separate (no n-gram crosses punctuation), in order of first appearance."""
    found: dict[str, None] = {}
    for run in regex.split(r"[^\p{L}\p{N}\p{M}'’\-\s]+", text):
        tokens = [w.lower() for w in words(run)]
        for n in range(1, ngram_max + 1):
            for i in range(len(tokens) - n + 1):
                found.setdefault(" ".join(tokens[i : i + n]))
    return list(found)


def mined_words(texts: Sequence[str], min_support: int, ngram_max: int) -> tuple[list[Feature], np.ndarray]:
    """Word n-grams that ``min_support`` responses use, and their presence ([texts, n-grams], 0/1)."""
    if not any(words(t) for t in texts):
        return [], np.zeros((len(texts), 0), dtype=np.uint8)
    from sklearn.feature_extraction.text import CountVectorizer  # scikit-learn loads SciPy: seconds

    vectorizer = CountVectorizer(
        analyzer=lambda text: ngrams(text, ngram_max), min_df=min(min_support, len(texts)), binary=True
    )
    try:
        matrix = vectorizer.fit_transform(texts)
    except ValueError as err:  # scikit-learn's way of saying that no n-gram reaches min_df
        if "no terms remain" not in str(err):
            raise
        return [], np.zeros((len(texts), 0), dtype=np.uint8)
    phrases = vectorizer.get_feature_names_out().tolist()
    starts = Counter(
        " ".join(w.lower() for w in words(sentence)[:n])
        for text in texts
        for sentence in sentence_texts(text)
        for n in range(1, ngram_max + 1)
    )
    uses = np.asarray(matrix.sum(axis=0)).ravel()
    features: list[Feature] = [
        MinedWords(p, opens_sentences=starts[p] * 2 > uses[j]) for j, p in enumerate(phrases)
    ]
    return features, matrix.toarray().astype(np.uint8)


def opens_sentences(phrase: str, texts: Sequence[str]) -> bool:
    """Whether ``phrase`` mostly opens a sentence where ``texts`` use it (as ``mined_words`` decides where a
    mined word is added): more than half as many sentence starts as responses that use it."""
    n = len(phrase.split())
    starts = sum(
        " ".join(w.lower() for w in words(sentence)[:n]) == phrase
        for text in texts
        for sentence in sentence_texts(text)
    )
    pattern = regex.compile(phrase_pattern(phrase), FLAGS)
    return starts * 2 > sum(pattern.search(text) is not None for text in texts)


def mined_characters(texts: Sequence[str], min_support: int) -> list[Feature]:
    """Characters that are no letter, digit or space, used by ``min_support`` responses (a bracket stands
    for its pair)."""
    counts: Counter[str] = Counter()
    for text in texts:
        chars = {c for c in text if not (c.isalnum() or c.isspace())}
        counts.update({")" if c == "(" else "]" if c == "[" else "}" if c == "{" else c for c in chars})
    return [MinedCharacter(c) for c in sorted(counts) if counts[c] >= min_support]


def lexicon_features() -> list[Feature]:
    """AFINN's positive and negative words (added as Fortunately, / Sadly,) and rare words (wordfreq
    Zipf < 3; removed only)."""
    from wordfreq import zipf_frequency  # loads its word lists

    @cache
    def rare(word: str) -> bool:
        return not any(c.isdigit() for c in word) and zipf_frequency(word, "en") < RARE_ZIPF

    def rare_words(text: str) -> list[tuple[int, int, int]]:
        return [(*m.span(), 1) for m in WORD.finditer(text) if rare(m.group().lower())]

    return [
        LexiconWords("lexicon positive", f"Uses a positive word ({AFINN} score > 0).",
                     partial(sentiment_spans, sign=+1), "Fortunately,"),
        LexiconWords("lexicon negative", f"Uses a negative word ({AFINN} score < 0).",
                     partial(sentiment_spans, sign=-1), "Sadly,"),
        LexiconWords("lexicon rare", f"Uses a rare word (wordfreq Zipf frequency < {RARE_ZIPF:g}).",
                     rare_words, None),
    ]  # fmt: skip


def _most_common(forms: Counter[str]) -> str:
    return sorted(forms.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


# ── the screen ────────────────────────────────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class ScreenSettings:
    """``discovery.offline.mined`` as the screen needs it."""

    max_candidates: int
    per_rm: int
    min_support: int


def association(y: np.ndarray, presence: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Per candidate (columns of ``presence``, 0/1): the t statistic of its coefficient in the least squares
    y ~ 1 + presence + length over the rows where y is finite (0 where presence does not vary apart from
    length; ±inf where it fits y exactly, as an RM without noise that rewards just it does)."""
    keep = np.isfinite(y)
    y, x, length = y[keep], presence[keep].astype(np.float64), length[keep]
    n = y.size
    if n < 4:
        return np.zeros(presence.shape[1])
    base = np.column_stack([np.ones(n), length])
    projector = base @ np.linalg.pinv(base)
    ry = y - projector @ y
    rx = x - projector @ x
    sxx = np.einsum("ij,ij->j", rx, rx)
    sxy = rx.T @ ry
    with np.errstate(invalid="ignore", divide="ignore"):
        beta = sxy / sxx
        sigma2 = np.maximum(ry @ ry - beta * sxy, 0.0) / (n - 3)  # an exact fit's rounds to ±0
        t = beta / np.sqrt(sigma2 / sxx)
    return np.where((sxx > 1e-12) & ~np.isnan(t), t, 0.0)


def screen(
    candidates: Sequence[Feature],
    presence: np.ndarray,
    rewards: dict[str, np.ndarray],
    length: np.ndarray,
    taken: Sequence[np.ndarray],
    settings: ScreenSettings,
) -> list[tuple[Feature, str, float]]:
    """(feature, the RM that chose it, its t there) of the candidates to test, in the order taken.

    ``presence``: [responses, candidates] 0/1; ``rewards``: per RM the standardised reward (less its
    reference's) per response; ``taken``: presence vectors already tested (the catalogue's)."""
    support = presence.sum(axis=0)
    eligible = (support >= settings.min_support) & (support < presence.shape[0])
    names = [feature.name for feature in candidates]
    ranked = {}
    stats = {}
    for rm, y in rewards.items():
        t = association(y, presence, length)
        stats[rm] = t
        order = sorted(np.flatnonzero(eligible), key=by_largest_t(t, names))
        ranked[rm] = order[: settings.per_rm]
    seen = {_key(column) for column in taken}
    chosen: list[tuple[Feature, str, float]] = []
    for depth in range(settings.per_rm):
        for rm, order in ranked.items():
            if depth < len(order) and len(chosen) < settings.max_candidates:
                j = order[depth]
                key = _key(presence[:, j])
                if key not in seen:
                    seen.add(key)
                    chosen.append((candidates[j], rm, float(stats[rm][j])))
    return chosen


def _key(column: np.ndarray) -> str:
    return hashlib.sha256(np.asarray(column, dtype=np.uint8).tobytes()).hexdigest()


def all_candidates(
    texts: Sequence[str], min_support: int, ngram_max: int, kinds: Sequence[str]
) -> tuple[list[Feature], np.ndarray]:
    """Every mined candidate of the kinds asked for and their presence ([texts, candidates], 0/1), in a
    stated order: openers, closers, characters, lexicon categories, the classes (numbers, pronouns, shape,
    filler), then word n-grams (each kind by name; the lexicon categories positive, negative, rare)."""
    features: list[Feature] = []
    if "opener" in kinds:
        features += mined_openers(texts, min_support)
    if "closer" in kinds:
        features += mined_closers(texts, min_support)
    if "character" in kinds:
        features += mined_characters(texts, min_support)
    if "lexicon" in kinds:
        features += lexicon_features()
    features += class_features(kinds)
    presence = presence_matrix(features, texts)
    if "words" in kinds:
        phrases, matrix = mined_words(texts, min_support, ngram_max)
        features, presence = [*features, *phrases], np.hstack([presence, matrix])
    return features, presence


WORD_CLASS_NAME = regex.compile(r'^word class (?P<members>"[^"]+"(?:, "[^"]+")+)$')


def feature_named(name: str) -> Feature | None:
    """The detector of a tested feature from its name, where the name says it: a catalogue probe, a class, a
    mined opener, closer, word n-gram or character (``words "as i said"``), a merged word class (``word class
    "maybe", "perhaps"``) or a class of long words (``words of 10 letters or more``); None for a lexicon
    category (its word lists are the miner's) and an engine's own features (an LLM's, no detector)."""
    if name in probes.names():
        return probe(name)
    by_name = {f.name: f for f in class_features(CLASS_KINDS)}
    if name in by_name:
        return by_name[name]
    merged = WORD_CLASS_NAME.match(name)
    if merged is not None:
        return WordClass(regex.findall(r'"([^"]+)"', merged.group("members")))
    long = LONG_WORD_NAME.fullmatch(name)
    if long is not None:
        return LongWords(int(long.group("letters")))
    found = MINED_NAME.fullmatch(name)
    if found is None:
        return None
    kind, text = found.group("kind"), found.group("text")
    if kind == "opener":
        return MinedOpener(text.lower(), text)
    if kind == "closer":
        return MinedCloser(text.lower(), text)
    if kind == "words":
        return MinedWords(text, opens_sentences=False)
    return MinedCharacter(text[0])


def presence_matrix(features: Sequence[Feature], texts: Sequence[str]) -> np.ndarray:
    """[texts, features] 1 where the feature is present."""
    out = np.zeros((len(texts), len(features)), dtype=np.uint8)
    for j, feature in enumerate(features):
        out[:, j] = [feature.present(t) for t in texts]
    return out
