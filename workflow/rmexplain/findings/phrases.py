"""What edits changed, in words, and whether one phrase carries most of an effect.

Two word-level views of an edit (its source text → its edited text):

- **runs**: the maximal stretches of words a word diff inserted and deleted (``changed_runs``: difflib over
  the words, as the explorer's edits, whitespace collapsed). Counted per edit, they say what a set of edits
  changed most often ("Thanks for asking." in 16 edits).
- **phrases**: word n-grams (1 to ``MAX_WORDS`` lower-cased Unicode words, within one clause) whose count
  in the edited text differs from their count in the source: the edit *inserts* a phrase it adds occurrences
  of and *deletes* one it removes occurrences of. Counting occurrences, not reading the diff, keeps a word
  the diff drops and puts back (a sentence rewritten around it) from counting as changed.

**Carries most of the effect.** Take the round-1 edits of an attribute in the direction the RM rewards
(better when the effect is positive, worse when negative) whose reward change is known, E, each with its
reward change y(e) at equal length (``values``: the findings pass y(e) − γ·Δℓ(e), γ the primary estimator's
length coefficient, so that words the edit adds or removes count for the phrase, not for length), and their
sum T = Σ_{e∈E} y(e). A candidate p is a run, or a phrase not made of common words alone (wordfreq Zipf ≥
``COMMON_ZIPF``: "a", "and", "can" ride on whatever sentence an edit adds), that at least ``MIN_EDITS``
edits of E insert (or delete); E_p are those edits:

- share of edits = |E_p| / |E|;
- share of change = Σ_{e∈E_p} y(e) / T.

p carries most of the effect when T > 0 (the edits raise the reward, summed), share of change ≥ ``MOST``
(½: most of it), share of change ≥ share of edits + ``LIFT`` (the edits with p move the reward more than
their number says: what every edit inserts explains nothing), and more than half of E_p raise the reward
(y > 0: the phrase's edits move it together, not one large edit that happens to contain p). Of the
candidates that do, the one with the largest share of change is named; ties (the same edits) go to the
larger lift, then to a run over a phrase (a sentence inserted whole is named whole, not by one of its
n-grams), then to more words, then alphabetically. A share of change above 100 % means the other edits of E
lower the reward, summed.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np
import regex
from wordfreq import zipf_frequency

from rmexplain.textdiff import words

MAX_WORDS = 3  # longest phrase tested as a carrier
MIN_EDITS = 3  # edits a phrase must change to be named as a carrier
COMMON_ZIPF = 6.0  # a phrase of words this frequent or more (wordfreq's Zipf scale) is never named
MOST = 0.5  # share of the summed reward change a carrier accounts for, at least
LIFT = 0.2  # ... beyond its share of the edits
RUN_CHARS = 80  # a run longer than this is cut (with "…") where shown
_WORD = regex.compile(r"[\p{L}\p{N}]+(?:['’][\p{L}]+)*")
_SPACE = re.compile(r"\s+")
_CLAUSE = re.compile(r"[.!?;:,()\[\]\"“”\n]+")


def tokens(text: str) -> list[str]:
    """The lower-cased Unicode words of a text."""
    return [w.lower() for w in _WORD.findall(text)]


def phrase_counts(text: str, max_words: int = MAX_WORDS) -> Counter[str]:
    """Occurrences of every word n-gram (1 to ``max_words`` words) of a text; an n-gram does not run across
    punctuation that ends a sentence or a clause."""
    counts: Counter[str] = Counter()
    for part in _CLAUSE.split(text):
        toks = tokens(part)
        counts.update(
            " ".join(toks[i : i + n]) for n in range(1, max_words + 1) for i in range(len(toks) - n + 1)
        )
    return counts


def changed_phrases(source: str, edited: str) -> tuple[frozenset[str], frozenset[str]]:
    """(inserted, deleted): the phrases the edited text has more, and fewer, occurrences of than its
    source."""
    before, after = phrase_counts(source), phrase_counts(edited)
    inserted = frozenset(p for p, n in after.items() if n > before.get(p, 0))
    deleted = frozenset(p for p, n in before.items() if n > after.get(p, 0))
    return inserted, deleted


def written_form(phrase: str, texts: Iterable[str]) -> str | None:
    """The form a phrase is most often written in ``texts`` inside a sentence (at a sentence's start only
    where it never stands inside one, so a word that mostly opens sentences keeps its own case): its words
    matched whole and case-insensitive, any whitespace between them (shown as one space); ties go to the first
    in sorted order (capitals first). None where no text has it."""
    if not phrase.split():
        return None
    pattern = regex.compile(
        r"(?<![\p{L}\p{N}])" + r"\s+".join(map(regex.escape, phrase.split())) + r"(?![\p{L}\p{N}])",
        regex.IGNORECASE,
    )
    inside, opening = Counter(), Counter()
    for text in texts:
        for match in pattern.finditer(text):
            at_start = _SENTENCE_START.search(text[: match.start()]) is not None
            (opening if at_start else inside)[" ".join(match.group().split())] += 1
    forms = inside or opening
    return min(forms.items(), key=lambda item: (-item[1], item[0]))[0] if forms else None


_SENTENCE_START = regex.compile(r"(?:\A|[.!?:。！？؟…]|\n)[\s\p{Pi}\p{Ps}\"'*#>-]*\Z")


def _clean(run: str) -> str:
    return _SPACE.sub(" ", run).strip()


def changed_runs(source: str, edited: str) -> tuple[list[str], list[str]]:
    """(inserted, deleted): the stretches of words a word diff of the two texts inserted and deleted, in text
    order. Words are compared without the whitespace after them (a last word that gains a space is not
    changed); the stretches keep their own spacing, collapsed."""
    a, b = words(source), words(edited)
    matcher = SequenceMatcher(None, [w.strip() for w in a], [w.strip() for w in b], autojunk=False)
    inserted, deleted = [], []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if _clean("".join(a[i1:i2])):
            deleted.append(_clean("".join(a[i1:i2])))
        if _clean("".join(b[j1:j2])):
            inserted.append(_clean("".join(b[j1:j2])))
    return inserted, deleted


@functools.cache
def common(word: str) -> bool:
    """Whether a word is one of English's most common (wordfreq Zipf ≥ ``COMMON_ZIPF``: more than once in a
    thousand words, as "a", "and", "can", "also"; "please" is 5.7)."""
    return zipf_frequency(word, "en") >= COMMON_ZIPF


def telling(phrase: str) -> bool:
    """Whether a phrase can be named as a carrier: not made of common words alone (those ride on whatever
    sentence an edit adds)."""
    return not all(common(word) for word in phrase.split())


@dataclass(frozen=True)
class Changed:
    """What one edit changed: its inserted and deleted runs, and its carrier candidates (runs, and the
    telling phrases)."""

    inserted_runs: list[str]
    deleted_runs: list[str]
    inserted: frozenset[str]
    deleted: frozenset[str]

    @classmethod
    def of(cls, source: str, edited: str) -> Changed:
        (ins_runs, del_runs), (ins, dels) = changed_runs(source, edited), changed_phrases(source, edited)
        ins, dels = frozenset(filter(telling, ins)), frozenset(filter(telling, dels))
        return cls(ins_runs, del_runs, ins | frozenset(ins_runs), dels | frozenset(del_runs))

    def changes(self, candidate: str, change: str) -> bool:
        """Whether the edit inserts (``change`` ``inserts``) or deletes a candidate."""
        return candidate in (self.inserted if change == "inserts" else self.deleted)


def shown(run: str) -> str:
    """A run as tables show it: cut after ``RUN_CHARS`` characters."""
    return run if len(run) <= RUN_CHARS else run[: RUN_CHARS - 1].rstrip() + "…"


def top_runs(runs_per_edit: Iterable[Sequence[str]], k: int) -> list[tuple[str, int]]:
    """The ``k`` runs most edits contain (each edit counted once per run), most first, ties alphabetical."""
    counts = Counter(run for runs in runs_per_edit for run in set(runs))
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:k]


@dataclass(frozen=True)
class Carrier:
    """A phrase that carries most of an effect (see the module docstring)."""

    phrase: str
    change: str  # "inserts" or "deletes"
    n_edits: int  # |E_p|
    n_total: int  # |E|
    share_edits: float
    share_change: float

    @property
    def lift(self) -> float:
        return self.share_change - self.share_edits


def carrier(
    inserted: Sequence[Iterable[str]],
    deleted: Sequence[Iterable[str]],
    values: Sequence[float],
    runs: frozenset[str] = frozenset(),
) -> Carrier | None:
    """The candidate carrying most of the summed change ``values`` of a set of edits (per edit: the runs and
    phrases it inserts and deletes, and its reward change), or None. ``runs``: which candidates are runs."""
    y = np.asarray(values, dtype=np.float64)
    known = np.isfinite(y)
    total = float(y[known].sum())
    n = int(known.sum())
    if n == 0 or total <= 0:
        return None
    found: list[Carrier] = []
    for change, sets in (("inserts", inserted), ("deletes", deleted)):
        members: dict[str, list[int]] = {}
        for i, candidates in enumerate(sets):
            if known[i]:
                for p in set(candidates):
                    members.setdefault(p, []).append(i)
        for phrase, rows in members.items():
            if len(rows) >= MIN_EDITS and 2 * int((y[rows] > 0).sum()) > len(rows):
                found.append(
                    Carrier(phrase, change, len(rows), n, len(rows) / n, float(y[rows].sum()) / total)
                )
    carriers = [c for c in found if c.share_change >= MOST and c.lift >= LIFT - 1e-12]
    if not carriers:
        return None
    return min(
        carriers,
        key=lambda c: (
            -c.share_change,
            -c.lift,
            c.phrase not in runs,
            -len(c.phrase.split()),
            c.phrase,
            c.change,
        ),
    )
