"""Words the attribute edits change, screened by the reward change they come with: round 2's candidates
beside the merged word classes (``rmexplain.discovery.offline``).

Mining reads the responses, so it cannot test a word they seldom hold: an RM that rewards "please" shows it in
two of 60 real comparisons' 120 responses, below any support, while the harmlessness edits insert it in 54. So
with a class of form: an RM that rewards long words rewards no one of them often enough to be screened. The
round-1 attribute edits (``rmexplain.effects``) are scored by every RM before round 2, so each word they
insert or delete has a reward change beside it. Per RM, each word's change in count, x = count(edited) −
count(source), is screened against the edits' reward changes at equal length (``mining.association``: the t of
x in y ~ 1 + x + Δwords, y the change less the reference's, in the RM's reward sd), and the strongest
``mined.per_rm`` of each RM are tested as mined words (``mining.MinedWords``: added to every response where
the edits put it, removed where a response has it), ``mined.max_candidates`` in all. A word is a candidate
where at least ``mined.min_support`` edits change it; a word of a class (a pronoun, a filler word, a number)
is tested as its class already, and a word round 1 tested is not tested again. Beside the words, the long-word
classes (``classes.long_words``: words of at least 8, …, 14 letters) are screened the same way, as the length
slope holds them (``held_word_changes``); they are nested, so per RM only the one of largest |t| (ties: the
fewest letters) may be taken, and it is tested as a class (``classes.LongWords``). Words that only ever change
together (every word of one inserted sentence) tie in the screen and are all taken, so the word the RM rewards
among them is tested on its own: no two are merged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from rmexplain.discovery.base import Feature
from rmexplain.discovery.classes import LONG_WORD_NAME, LongWords, long_words, of_a_word_class
from rmexplain.discovery.mining import MinedWords, ScreenSettings, association, opens_sentences
from rmexplain.discovery.text import mined_name, words
from rmexplain.effects.estimators import TIE_DIGITS, by_largest_t

EDIT_SCHEMA = {
    "rm": pl.String, "edit_id": pl.String, "source_text": pl.String, "edited_text": pl.String,
    "effect_change": pl.Float64, "words_change": pl.Int64,
}  # fmt: skip
EDIT_COLUMNS = tuple(EDIT_SCHEMA)


def edit_word_candidates(
    edits: pl.DataFrame, tested: set[str], settings: ScreenSettings
) -> list[tuple[Feature, str, float]]:
    """(feature, the RM that chose it, its t there) of the words to test, in the order taken: per RM its
    ``per_rm`` largest |t| (``by_largest_t``: to 9 decimals; ties by the word), taken round-robin over the RMs
    (in name order, a word another RM took before passed over) up to ``max_candidates``. ``edits``: the
    round-1 attribute edits with each RM's change (``EDIT_COLUMNS``); ``tested``: names of the features tested
    before."""
    if edits.is_empty():
        return []
    texts = edits.unique("edit_id").sort("edit_id")  # an edit's texts and length, the same for every RM
    changes = [held_word_changes(s, e) for s, e in texts.select("source_text", "edited_text").iter_rows()]
    vocabulary = _candidates(changes, tested, settings.min_support)
    if not vocabulary:
        return []
    x = np.array([[change.get(w, 0) for w in vocabulary] for change in changes])
    row = {edit: i for i, edit in enumerate(texts["edit_id"].to_list())}
    length = texts["words_change"].cast(pl.Float64).to_numpy()
    ranked: dict[str, list[tuple[int, float]]] = {}
    for rm in sorted(set(edits["rm"].to_list())):
        y = _per_edit(edits.filter(pl.col("rm") == rm), row)
        ranked[rm] = strongest(
            one_long_word_class(association(y, x, length), vocabulary), vocabulary, settings.per_rm
        )
    placed = _edited_texts_by_word(texts["edited_text"].to_list(), vocabulary, x)
    chosen: list[tuple[Feature, str, float]] = []
    taken: set[int] = set()
    for depth in range(settings.per_rm):
        for rm, order in ranked.items():
            if depth < len(order) and len(chosen) < settings.max_candidates and order[depth][0] not in taken:
                j, t_value = order[depth]
                taken.add(j)
                word = vocabulary[j]
                chosen.append((_feature(word, placed[word]), rm, t_value))
    return chosen


def _feature(word: str, placed: Sequence[str]) -> Feature:
    """The feature that tests a screened word (added where the edits put it) or long-word class."""
    long = LONG_WORD_NAME.fullmatch(word)
    return LongWords(int(long.group("letters"))) if long else MinedWords(word, opens_sentences(word, placed))


def one_long_word_class(t: np.ndarray, vocabulary: Sequence[str]) -> np.ndarray:
    """``t`` with every long-word class's set to 0 (none) but the one of largest |t| (to ``TIE_DIGITS``
    decimals; ties: the fewest letters): the classes are nested, so one names what the others would."""
    classes = [j for j, w in enumerate(vocabulary) if LONG_WORD_NAME.fullmatch(w)]
    if not classes:
        return t
    letters = {j: int(LONG_WORD_NAME.fullmatch(vocabulary[j]).group("letters")) for j in classes}
    kept = min(classes, key=lambda j: (-round(abs(t[j]), TIE_DIGITS), letters[j]))
    out = t.copy()
    out[[j for j in classes if j != kept]] = 0.0
    return out


def strongest(t: np.ndarray, vocabulary: Sequence[str], most: int) -> list[tuple[int, float]]:
    """(index, t) of the ``most`` words of largest |t| (``by_largest_t``); a word
    whose t is 0 (its count does not vary apart from length) is none."""
    order = sorted(range(len(vocabulary)), key=by_largest_t(t, vocabulary))
    return [(j, float(t[j])) for j in order[:most] if t[j] != 0]


def word_changes(source: str, edited: str) -> dict[str, int]:
    """Each word's count in ``edited`` less its count in ``source`` (lower case), where they differ: what
    round 2 screens here, and the words whose counts the length slope may hold equal
    (``held_word_changes``)."""
    before, after = Counter(w.lower() for w in words(source)), Counter(w.lower() for w in words(edited))
    return {w: after[w] - before[w] for w in before.keys() | after.keys() if after[w] != before[w]}


def held_word_changes(source: str, edited: str) -> dict[str, int]:
    """``word_changes`` and the changes of the long-word classes (``classes.long_words``), by name: what the
    length slope may hold equal (``rmexplain.effects.estimators.screened_words``)."""
    changes = word_changes(source, edited)
    before, after = long_words(source), long_words(edited)
    changes.update({name: after[name] - before[name] for name in after if after[name] != before[name]})
    return changes


def _candidates(changes: Sequence[Mapping[str, int]], tested: set[str], min_support: int) -> list[str]:
    """The words and long-word classes at least ``min_support`` edits change, sorted; no word a class counts,
    none tested before."""
    support = Counter(w for change in changes for w in change)
    return sorted(w for w, n in support.items() if n >= min_support and _new(w, tested))


def _new(word: str, tested: set[str]) -> bool:
    """Whether a screened word (or long-word class) is no class's word and was not tested before."""
    if LONG_WORD_NAME.fullmatch(word):
        return word not in tested
    return mined_name("words", word) not in tested and not of_a_word_class(word)


def _per_edit(changes: pl.DataFrame, row: Mapping[str, int]) -> np.ndarray:
    """One RM's ``effect_change`` per edit in ``row`` order (NaN where unscored)."""
    y = np.full(len(row), np.nan)
    for edit, value in changes.select("edit_id", "effect_change").iter_rows():
        if value is not None:
            y[row[edit]] = value
    return y


def _edited_texts_by_word(
    edited: Sequence[str], vocabulary: Sequence[str], x: np.ndarray
) -> dict[str, list[str]]:
    """Per word, the edited texts that added it: where it stands there is where a response gets it."""
    return {w: [edited[i] for i in np.flatnonzero(x[:, j] > 0)] for j, w in enumerate(vocabulary)}
