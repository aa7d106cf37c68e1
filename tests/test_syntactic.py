"""Syntactic distance with and without punctuation counted as words."""

import pytest

from rmexplain.explanations.metrics import syntactic_distance, words


@pytest.mark.parametrize(
    ("original", "perturbed", "with_punctuation", "without"),
    [
        ("Yes.", "Yes!", 1 / 2, 0.0),  # punctuation alone: no word changed
        ("I can't help, sorry.", "I can help, sorry.", 1 / 6, 1 / 4),  # "can't" is one word
        ("Sure. Here it is.", "Sure, here it is!", 3 / 6, 1 / 4),  # Here → here is the only word edit
        ("Boil it for nine minutes.", "Boil it for nine minutes", 1 / 6, 0.0),
        ("?!", "...", 1.0, 0.0),  # no words at all without punctuation
        ("", "", 0.0, 0.0),
    ],
)
def test_punctuation_option(original, perturbed, with_punctuation, without):
    assert syntactic_distance(original, perturbed) == pytest.approx(with_punctuation)
    assert syntactic_distance(original, perturbed, punctuation_as_words=False) == pytest.approx(without)


def test_words():
    assert words("Don't panic, it's 9 o'clock!") == ["Don't", "panic", ",", "it's", "9", "o'clock", "!"]
    assert words("Don't panic, it's 9 o'clock!", punctuation_as_words=False) == [
        "Don't",
        "panic",
        "it's",
        "9",
        "o'clock",
    ]
