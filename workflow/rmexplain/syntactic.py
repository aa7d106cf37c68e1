"""Syntactic distance (paper §3: "word-level Levenshtein edit distance"), with a choice about punctuation.

Words are ``\\w+`` runs (with one inner apostrophe: "don't") and, by default, every other non-space
character is a word of its own, so "Yes." → "Yes!" is one edit in two words. With
``punctuation_as_words=False`` punctuation is dropped before the edit distance is taken, so only
changes of words count (and a text of punctuation alone has no words).
"""

from __future__ import annotations

import re

from rapidfuzz.distance import Levenshtein

WORD = re.compile(r"\w+(?:'\w+)?|[^\w\s]")
WORD_ONLY = re.compile(r"\w+(?:'\w+)?")


def words(text: str, punctuation_as_words: bool = True) -> list[str]:
    """Word tokens of ``text``; punctuation marks are tokens of their own unless ``punctuation_as_words``
    is false, when they are dropped."""
    return (WORD if punctuation_as_words else WORD_ONLY).findall(text)


def syntactic_distance(original: str, perturbed: str, punctuation_as_words: bool = True) -> float:
    """Word-level Levenshtein distance normalised by the longer length (0 = same words, 1 = all changed)."""
    a, b = words(original, punctuation_as_words), words(perturbed, punctuation_as_words)
    longest = max(len(a), len(b))
    return Levenshtein.distance(a, b) / longest if longest else 0.0
