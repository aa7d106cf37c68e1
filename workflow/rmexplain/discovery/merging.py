"""Word classes merged from the words an RM rewards alike: the offline engine's second round.

Round 1 tests each mined word n-gram on its own, so a class the RM rewards word by word ("maybe",
"perhaps", "possibly"; "I", "me", "my") comes out as several rows, each weaker than the class. Round 2
(``discovery.offline.rounds: 2``) merges, per RM, the significant word features of round 1 (Benjamini–
Hochberg over the round's features of that RM at ``discovery.fdr``) that behave alike, and tests each merged
class as one feature (``rmexplain.discovery.mining.WordClass``: every member removed together; one member
added), its effect per instance, as a word's.

Alike: the same sign and a per-instance effect within a factor ``merge.max_ratio`` of the class's first
member's; related to a member, the cosine of the two words' sentence embeddings (``evaluate.embedding_model``,
all-MiniLM-L6-v2 by default) at least ``merge.min_similarity`` ("may" joins "could" through "might").
Greedy, in order of |effect| (ties by name): the largest unmerged word opens a class, which takes every
unmerged word alike to it until none joins; a class needs two members, listed in that order. A word that
holds another member's words ("i can" beside "i") joins no class with it: its effect is mostly the shorter
word's. At most ``merge.max_classes`` classes per dataset, the classes of every RM together
(largest first member first; the same member set once).

Round 2 also tests words the attribute edits change (``rmexplain.discovery.edit_words``), which round 1 could
not merge: their effects are not known yet. A class takes such a word (``with_edited_words``) where the RM
that screened it in moves with it the way the class's first member moves that RM (the sign of its screen t)
and it relates to a member as above; the word is still tested on its own beside the class. The screened
words that join no such class are merged among themselves the same way (``screened_word_classes``: per RM,
in the order screened, one sign of t and related; no ratio, their effects being unknown).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import polars as pl

from rmexplain.discovery.classes import of_a_word_class
from rmexplain.discovery.estimate import discovered_biases
from rmexplain.discovery.text import MINED_NAME
from rmexplain.embeddings import configured_encoder, embed
from rmexplain.settings import schema_defaults

Similarity = Callable[[Sequence[str]], np.ndarray]  # words -> their [words, words] cosine similarities


@dataclass(frozen=True)
class MergeSettings:
    """``discovery.offline.merge`` (its defaults the config schema's) and ``discovery.fdr``."""

    fdr: float
    min_similarity: float
    max_ratio: float
    max_classes: int

    @classmethod
    def of(cls, merge: Mapping[str, Any], fdr: float) -> MergeSettings:
        given = {**schema_defaults("discovery", "offline", "merge"), **merge}
        similarity, ratio, most = given["min_similarity"], given["max_ratio"], given["max_classes"]
        return cls(float(fdr), float(similarity), float(ratio), int(most))


@dataclass(frozen=True)
class WordEffect:
    """A significant word feature of round 1 on one RM: its phrase and per-instance effect."""

    phrase: str
    effect: float


def significant_words(previous: pl.DataFrame, fdr: float) -> dict[str, list[WordEffect]]:
    """RM -> its significant mined word features of the rounds before (q ≤ ``fdr`` by Benjamini–Hochberg
    over each RM's tested features), largest |effect| first (ties by phrase); none that a class of words
    counts (``classes.of_a_word_class``: its class is tested always)."""
    if previous.is_empty():
        return {}
    table = discovered_biases(previous, fdr).filter(pl.col("significant") & (pl.col("kind") == "words"))
    out: dict[str, list[WordEffect]] = {}
    for row in table.sort("rm", "feature").iter_rows(named=True):
        named = MINED_NAME.fullmatch(row["feature"])
        if not named or named.group("kind") != "words" or of_a_word_class(named.group("text")):
            continue  # a word of a class of words ("i", "and i") is its class's, tested always
        if np.isfinite(row["effect"]) and row["effect"] != 0:
            out.setdefault(row["rm"], []).append(WordEffect(named.group("text"), float(row["effect"])))
    return {rm: sorted(found, key=lambda w: (-abs(w.effect), w.phrase)) for rm, found in out.items()}


def nested(a: str, b: str) -> bool:
    """Whether the words of one phrase hold the other's, in order ("i can" holds "i")."""
    short, long = sorted((a.split(), b.split()), key=len)
    return any(long[i : i + len(short)] == short for i in range(len(long) - len(short) + 1))


def alike_groups(
    found: Sequence[WordEffect], similarity: np.ndarray, settings: MergeSettings
) -> list[list[str]]:
    """The classes of one RM's words (``found`` in order, ``similarity`` their cosines): see the module."""
    left = list(range(len(found)))
    groups = []
    while left:
        first, *rest = left
        members = [first]
        joined = True
        while joined:  # until no word left joins: one may relate only to a word that joined after it
            joined = False
            for j in rest:
                if j not in members and _joins(found, similarity, members, j, settings):
                    members.append(j)
                    joined = True
        left = [j for j in left if j not in members]
        if len(members) > 1:
            groups.append([found[m].phrase for m in sorted(members)])
    return groups


def _joins(
    found: Sequence[WordEffect],
    similarity: np.ndarray,
    members: Sequence[int],
    j: int,
    settings: MergeSettings,
) -> bool:
    """Whether word ``j`` joins the class ``members`` (its first the seed, whose |effect| no later word's
    exceeds): see the module."""
    seed, word = found[members[0]], found[j]
    return bool(
        np.sign(word.effect) == np.sign(seed.effect)
        and abs(word.effect) * settings.max_ratio >= abs(seed.effect)
        and max(similarity[m, j] for m in members) >= settings.min_similarity
        and not any(nested(word.phrase, found[m].phrase) for m in members)
    )


def word_classes(
    previous: pl.DataFrame, settings: MergeSettings, similarity: Similarity
) -> list[tuple[str, ...]]:
    """The members of each merged class to test (see the module); none where no RM has two words alike."""
    chosen: dict[tuple[str, ...], float] = {}
    for found in significant_words(previous, settings.fdr).values():
        if len(found) < 2:
            continue
        effect_of = {w.phrase: w.effect for w in found}
        for group in alike_groups(found, similarity([w.phrase for w in found]), settings):
            key = tuple(group)
            chosen[key] = max(chosen.get(key, 0.0), abs(effect_of[group[0]]))
    order = sorted(chosen, key=lambda members: (-chosen[members], members))
    return order[: settings.max_classes]


def embedding_similarity(encoder: Mapping[str, Any]) -> Similarity:
    """Cosine similarity of words under the sentence encoder ``evaluate`` names (its unit-normalised
    embeddings' dot products)."""

    def similarity(phrases: Sequence[str]) -> np.ndarray:
        model, batch_size = configured_encoder(encoder)
        vectors = embed(list(phrases), model, batch_size)
        return vectors @ vectors.T

    return similarity


def with_edited_words(
    classes: Sequence[tuple[str, ...]],
    previous: pl.DataFrame,
    screened: Sequence[tuple[str, str, float]],
    settings: MergeSettings,
    similarity: Similarity,
) -> list[tuple[str, ...]]:
    """Each class with the screened words that join it, appended in the order screened (``screened``:
    (word, the RM whose screen took it, its t there); see the module); the same member set once, as it
    came first."""
    if not classes or not screened:
        return list(classes)
    signs = {
        (rm, w.phrase): np.sign(w.effect)
        for rm, found in significant_words(previous, settings.fdr).items()
        for w in found
    }
    phrases = sorted({m for members in classes for m in members} | {word for word, _, _ in screened})
    index = {phrase: i for i, phrase in enumerate(phrases)}
    cosine = similarity(phrases)
    widened = []
    for members in classes:
        grown = list(members)
        for word, rm, t in screened:
            if (
                word not in grown
                and signs.get((rm, members[0])) == np.sign(t)
                and not any(nested(word, m) for m in grown)
                and max(cosine[index[word], index[m]] for m in grown) >= settings.min_similarity
            ):
                grown.append(word)
        widened.append(tuple(grown))
    return first_of_each_member_set(widened)


def screened_word_classes(
    screened: Sequence[tuple[str, str, float]],
    classes: Sequence[tuple[str, ...]],
    settings: MergeSettings,
    similarity: Similarity,
) -> list[tuple[str, ...]]:
    """The classes of the screened words (``screened`` as for ``with_edited_words``) that are in none of
    ``classes``: per RM (in name order), ``alike_groups`` over its words in the order screened, with their
    t for an effect and no bound on its ratio; the same member set once."""
    members = {m for group in classes for m in group}
    per_rm: dict[str, list[WordEffect]] = {}
    for word, rm, t in screened:
        if word not in members:
            per_rm.setdefault(rm, []).append(WordEffect(word, t))
    unbounded = replace(settings, max_ratio=math.inf)
    found = [
        tuple(group)
        for rm in sorted(per_rm)
        if len(per_rm[rm]) > 1
        for group in alike_groups(per_rm[rm], similarity([w.phrase for w in per_rm[rm]]), unbounded)
    ]
    return first_of_each_member_set(found)


def first_of_each_member_set(groups: Sequence[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """``groups`` in order, a group whose members an earlier one has (in any order) left out."""
    kept: dict[frozenset[str], tuple[str, ...]] = {}
    for group in groups:
        kept.setdefault(frozenset(group), group)
    return list(kept.values())
