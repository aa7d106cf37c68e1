"""The mined classes (rmexplain.discovery.classes): numbers, personal pronouns, sentence shape and filler
words, each found, added and removed on hand-made texts (the expected strings written out, the text around an
edit kept byte for byte), their skips with their reasons; the miner offering them in its stated order; and
the screen finding a reward per digit and per first-person word as the classes they are."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from rmexplain.data.readers import EMBEDDED_PARTS, EMBEDDED_SPLITS, read_embedded
from rmexplain.discovery import mining
from rmexplain.discovery.base import SkipEdit
from rmexplain.discovery.classes import (
    CLASS_KINDS,
    COUNTED_CLASSES,
    DIGIT,
    FIRST_PERSON,
    LONG_WORD_LETTERS,
    EndsOnQuestion,
    FillerWords,
    FirstPerson,
    LongWords,
    NumbersAsDigits,
    OpensWithI,
    SecondPerson,
    class_counts,
    class_features,
    long_words,
    number_phrases,
    number_words,
    sentiment_spans,
    sentiment_words,
    word_key,
)
from rmexplain.discovery.edits import EditSettings, make_edits
from rmexplain.discovery.text import delete_words, opens_sentence, word_cut, words
from rmexplain.perturb.skips import SkipRecorder

REPO = Path(__file__).resolve().parents[1]
NUMBERS, FIRST, SECOND = NumbersAsDigits(), FirstPerson(), SecondPerson()
QUESTION, OPENS_I, FILLER = EndsOnQuestion(), OpensWithI(), FillerWords()


def check(feature, direction: str, source: str, expected: str) -> None:
    """The edit gives ``expected`` exactly, and the feature's own detector agrees with the direction."""
    edited = getattr(feature, direction)(source)
    assert edited == expected
    assert feature.present(source) == (direction == "remove")
    assert feature.present(edited) == (direction == "add")


# ── numbers ───────────────────────────────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize(
    ("n", "spelled"),
    [(0, "zero"), (7, "seven"), (12, "twelve"), (19, "nineteen"), (20, "twenty"), (42, "forty-two"),
     (100, "one hundred"), (105, "one hundred five"), (310, "three hundred ten"), (1000, "one thousand"),
     (2024, "two thousand twenty-four"), (9999, "nine thousand nine hundred ninety-nine")],
)  # fmt: skip
def test_numbers_are_spelled_to_9999(n, spelled):
    assert number_words(n) == spelled


def test_numbers_beyond_9999_are_not_spelled():
    for n in (-1, 10000):
        with pytest.raises(ValueError):
            number_words(n)


def test_numbers_present_is_any_digit():
    assert NUMBERS.present("Boil for 6 minutes.") and NUMBERS.present("COVID-19")
    assert not NUMBERS.present("Boil for six minutes.")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("Boil 12 eggs for 6 minutes.  Then  cool.\n", "Boil twelve eggs for six minutes.  Then  cool.\n"),
        ("12 eggs. In 2024, 1,000 cats.", "Twelve eggs. In two thousand twenty-four, one thousand cats."),
        ("A 5-minute boil for a 10-year-old.", "A five-minute boil for a ten-year-old."),
        ("- 3 eggs\n- 0 salt", "- Three eggs\n- Zero salt"),
        ("Step 1: boil.", "Step one: boil."),
    ],
)
def test_numbers_are_removed_by_spelling_out_every_one(source, expected):
    check(NUMBERS, "remove", source, expected)


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("Use 3.5 cups.", "“3.5” is no whole number"),
        ("Wait 2:30 hours.", "“2:30” is no whole number"),
        ("The 5th egg.", "“5th” is no whole number"),
        ("Feed 12,000 hens.", "“12,000” is beyond 9999"),
        ("It costs $5.", "“5” goes with a sign"),
        ("Add 10% more.", "“10” goes with a sign"),
        ("Dial 007.", "“007” has a leading zero"),
        ("1. Boil\n2. Cool", "“1” is a numbered list's marker"),
        ("Boil 2 eggs.\n  3) Cool", "“3” is a numbered list's marker"),
    ],
)
def test_numbers_that_cannot_be_spelled_skip_the_response(source, reason):
    with pytest.raises(SkipEdit, match=r"^" + reason):
        NUMBERS.remove(source)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("Boil twelve eggs for twenty-five minutes, then two hundred and five more.\n",
         "Boil 12 eggs for 25 minutes, then 205 more.\n"),
        ("No one saw the nine-year-old  or Two thousand twenty four hens.",
         "No one saw the 9-year-old  or 2024 hens."),
        ("Five and six, one hundred.", "5 and 6, 100."),
    ],
)  # fmt: skip
def test_numbers_are_added_by_putting_every_spelled_number_in_digits(source, expected):
    check(NUMBERS, "add", source, expected)


def test_a_lone_one_is_no_number_to_put_in_digits():
    assert number_phrases("one of them, no one, someone, one hundred") == [(30, 41, 100)]
    with pytest.raises(SkipEdit, match=r"^the response has no number written in words"):
        NUMBERS.add("One of them is done.")


# ── personal pronouns ─────────────────────────────────────────────────────────────────────────────────────
def test_pronouns_are_found_by_their_class():
    for text in ("I think so.", "We can.", "Ask me.", "I’m here.", "Let's go.", "i guess"):
        assert FIRST.present(text), text
    for text in ("It works.", "The US is big.", "Iris is here."):
        assert not FIRST.present(text), text
    for text in ("You can.", "Is it yours?", "You’re right.", "Thank you."):
        assert SECOND.present(text), text
    assert not SECOND.present("Young people.")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("I think it works.\n\n  Boil  it.", "It works.\n\n  Boil  it."),
        ("I believe that the egg is done.", "The egg is done."),
        ("I think that is wrong.", "That is wrong."),  # "that" the clause's subject: kept
        ("I think that Python  is great.", "Python  is great."),
        ("Yes, I think the answer is four.", "Yes, the answer is four."),
        ("It is, I think, fine.", "It is fine."),
        ("It works, I think.", "It works."),
        ("In my opinion, boil it. I'd say it is done.", "Boil it. It is done."),
        ("Boil it, and I really think you will like it.", "Boil it, and you will like it."),
        ("i guess it works.", "it works."),  # lower case where it was: no capital added
    ],
)
def test_first_person_is_removed_by_dropping_i_think_style_clauses(source, expected):
    check(FIRST, "remove", source, expected)


@pytest.mark.parametrize(
    "source",
    ["I can help.", "Do I think the egg is done? Yes.", "I feel sick.", "I believe in it.", "I think so.",
     "My egg. I think it works.", "We recommend it."],
)  # fmt: skip
def test_first_person_without_a_neutral_rewrite_is_a_skip(source):
    with pytest.raises(SkipEdit, match=r"^a first-person word outside an “I think”-style clause"):
        FIRST.remove(source)


def test_first_person_is_added_inside_the_last_statement_opening_with_its_subject():
    """ ", I think" before the full stop, never at the sentence's start: the word, not the opening, added."""
    check(FIRST, "add", "Boil it. The egg is done. Serve it!  Cool it.",
          "Boil it. The egg is done, I think. Serve it!  Cool it.")  # fmt: skip
    check(FIRST, "add", "It boils. NASA is sure.", "It boils, I think. NASA is sure.")  # NASA opens no clause
    check(FIRST, "add", "Wait.\nThere is time.  ", "Wait.\nThere is time, I think.  ")
    check(FIRST, "add", 'The egg is done. It is "hot."', 'The egg is done. It is "hot, I think."')
    check(
        FIRST, "add", "The egg is done. It is hot. Eat.", "The egg is done. It is hot, I think. Eat."
    )  # the last
    assert OPENS_I.count(FIRST.add("The egg is done.")) == 0
    assert FIRST.remove(FIRST.add("The egg is done. It is hot.")) == "The egg is done. It is hot."
    with pytest.raises(
        SkipEdit, match=r"^the response has no statement opening with its subject to put “, I"
    ):
        FIRST.add("Boil it. Serve it.")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("Thank you for asking. As you may know, eggs crack.", "Thanks for asking. Eggs crack."),
        ("You know, it works.", "It works."),
        ("It works, you know.", "It works."),
        ("Boil it, as you can see, then cool it.", "Boil it, then cool it."),
    ],
)
def test_second_person_is_removed_only_from_asides_and_thank_you(source, expected):
    check(SECOND, "remove", source, expected)


def test_second_person_elsewhere_is_a_skip_and_is_added_before_a_statement():
    with pytest.raises(SkipEdit, match=r"^a second-person word outside “thank you” and “as you know”"):
        SECOND.remove("Thank you for your question.")
    check(SECOND, "add", "Boil it. The egg is done.", "Boil it. You'll find that the egg is done.")
    with pytest.raises(SkipEdit, match=r"^the response has no statement opening with its subject"):
        SECOND.add("Boil it! Is it done?")


# ── sentence shape ────────────────────────────────────────────────────────────────────────────────────────
def test_ends_on_a_question_reads_the_last_sentence():
    assert QUESTION.present("Boil it. Want more?") and QUESTION.present("Ready? “Is it done?”\n")
    assert not QUESTION.present("Boil it.") and not QUESTION.present("Why? Because.")


def test_a_closing_question_is_added_after_the_last_sentence():
    check(QUESTION, "add", "Boil it.  Cool it.\n", "Boil it.  Cool it. Does that help?\n")
    check(QUESTION, "add", "Steps:\n- eggs\n- salt", "Steps:\n- eggs\n- salt\n\nDoes that help?")


def test_the_questions_that_end_a_response_are_dropped():
    check(QUESTION, "remove", "Boil it.  Does it help? Want more?\n", "Boil it.\n")
    check(QUESTION, "remove", "Why? Boil it.\n\nReady?", "Why? Boil it.")
    with pytest.raises(SkipEdit, match=r"^every sentence of the response is a question$"):
        QUESTION.remove("Why? How?")


def test_opens_with_i_counts_the_sentences_whose_first_word_is_i():
    for text, count in [("I'm glad.", 1), ("I’ve done it.", 1), ("  I think so.", 1), ("**I** can.", 1),
                        ("It is. I think so! I can?", 2), ("Go.\n- I can.\n- I will.", 2), ("It is.", 0),
                        ("Ice is cold.", 0), ("Yes, I can.", 0), ("It is, I think.", 0)]:  # fmt: skip
        assert OPENS_I.count(text) == count, text
        assert OPENS_I.present(text) == (count > 0), text


def test_opens_with_i_is_added_as_i_think_and_removed_with_each_sentences_clause():
    check(OPENS_I, "add", "The egg is done.  Boil it.", "I think the egg is done.  Boil it.")
    check(OPENS_I, "remove", "I believe that the egg is done.  Serve it.", "The egg is done.  Serve it.")
    check(
        OPENS_I,
        "remove",
        "Yes. I think the egg is done.\n- I guess it is hot.",
        "Yes. The egg is done.\n- It is hot.",
    )
    for text in ("Boil it.", "Sure! It is done."):
        with pytest.raises(SkipEdit, match=r"^the response does not open with a statement opening with its"):
            OPENS_I.add(text)
    for text in ("I can help.", "I think it is. I can help."):
        with pytest.raises(SkipEdit, match=r"^a sentence opens with “I …” but not with an “I think”-style"):
            OPENS_I.remove(text)
    with pytest.raises(SkipEdit, match=r"^a sentence still opens with “I …” after its “I think”-style"):
        OPENS_I.remove("I think I can help.")


# ── filler words ──────────────────────────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("Honestly, it is, really, fine.  Just   go.\n", "It is fine.  Go.\n"),
        ("It works, honestly.", "It works."),
        ("It is good really.", "It is good."),
        ("- Basically, boil it.\n- Cool it.", "- Boil it.\n- Cool it."),
        ("Boil it.\n\tIt is simply  done.", "Boil it.\n\tIt is  done."),  # the shorter run of spaces goes
        ("Go. Just   go.", "Go. Go."),  # at a sentence start: the spaces after it
        ("NASA   actually said so.", "NASA   said so."),
    ],
)
def test_filler_words_are_deleted_with_their_comma(source, expected):
    check(FILLER, "remove", source, expected)


def test_filler_words_that_cannot_go_are_a_skip():
    with pytest.raises(SkipEdit, match=r"^the sentence “Really\?” is filler words alone$"):
        FILLER.remove("Really? Yes.")
    with pytest.raises(SkipEdit, match=r"^“really” touches no space"):
        FILLER.remove("It (really) works.")


def test_filler_is_added_as_honestly_before_the_first_sentence():
    check(FILLER, "add", "The egg is done.  Boil it.", "Honestly, the egg is done.  Boil it.")
    check(FILLER, "add", "NASA says so.", "Honestly, NASA says so.")
    check(FILLER, "add", "I can help.", "Honestly, I can help.")
    for text in ("**Bold** start.", "", "1. Boil."):
        with pytest.raises(SkipEdit, match=r"^the response does not open with a sentence of words$"):
            FILLER.add(text)


# ── the text helpers the classes use ──────────────────────────────────────────────────────────────────────
def test_a_deleted_word_takes_its_comma_or_one_side_of_spaces():
    text = "It is, honestly, fine"
    assert word_cut(text, 7, 15) == (5, 16)
    assert delete_words("Honestly, it works. Really good.", [(0, 8), (20, 26)]) == "It works. Good."
    assert delete_words("so honestly, it works", [(3, 11)]) == "so it works"  # not a sentence start
    assert opens_sentence("Go. It", 4) and opens_sentence("## It", 3) and not opens_sentence("Go, it", 4)


# ── the miner and the screen ──────────────────────────────────────────────────────────────────────────────
def test_the_miner_offers_the_classes_in_its_stated_order():
    texts = ["I think it is 5. Honestly?", "You have 3 eggs. Really good.", "Yes, go.", "Yes, run."]
    features, presence = mining.all_candidates(texts, 2, 1, ["words", *CLASS_KINDS, "opener"])
    names = [f.name for f in features]
    classes = ["numbers as digits", "pronouns first person", "pronouns second person",
               "shape ends on a question", "shape opens with I", "filler words"]  # fmt: skip
    assert names[0] == 'opener "Yes,"' and names[1:7] == classes
    assert all(n.startswith("words ") for n in names[7:])
    assert [f.kind for f in features[1:7]] == ["numbers", "pronouns", "pronouns", "shape", "shape", "filler"]
    assert presence[:, 1].tolist() == [1, 1, 0, 0]  # numbers
    assert [f.name for f in class_features(["shape"])] == classes[3:5]
    assert not any(f.kind in CLASS_KINDS for f in mining.all_candidates(texts, 2, 1, ["opener"])[0])


def test_the_config_offers_the_classes_by_default():
    schema = yaml.safe_load((REPO / "workflow" / "rmexplain" / "config" / "schema.yaml").read_text())
    mined = schema["properties"]["discovery"]["properties"]["offline"]["properties"]["mined"]["properties"]
    assert set(CLASS_KINDS) <= set(mined["kinds"]["default"]) <= set(mined["kinds"]["items"]["enum"])


def bundled_texts() -> list[str]:
    texts = [
        text
        for part in EMBEDDED_PARTS
        for split in EMBEDDED_SPLITS
        for pair in read_embedded(part, split)
        for text in (pair.chosen, pair.rejected)
    ]
    return list(dict.fromkeys(texts))


def test_the_screen_names_a_reward_per_digit_and_per_first_person_word_as_classes():
    """An RM giving +1 per token holding a digit and −0.8 per first-person word (noise 0.5, fixed seed) on the
    bundled responses: the two classes are its two strongest candidates, ahead of the strings they hold
    ("1", "i"), and the screen takes them first."""
    texts = bundled_texts()
    tokens = [words(t) for t in texts]
    digits = np.array([sum(DIGIT.search(w) is not None for w in ws) for ws in tokens], dtype=float)
    first = np.array([sum(word_key(w) in FIRST_PERSON for w in ws) for ws in tokens], dtype=float)
    reward = digits - 0.8 * first + np.random.default_rng(0).normal(0.0, 0.5, len(texts))
    reward /= reward.std()
    length = np.array([len(ws) for ws in tokens], dtype=float)
    kinds = ["opener", "closer", "words", "character", "lexicon", *CLASS_KINDS]
    features, presence = mining.all_candidates(texts, 3, 2, kinds)
    t = mining.association(reward, presence, length)
    strongest = sorted(range(len(features)), key=lambda j: (-abs(t[j]), features[j].name))[:2]
    assert {features[j].name for j in strongest} == {"numbers as digits", "pronouns first person"}
    by_name = {f.name: t[j] for j, f in enumerate(features)}
    assert by_name["numbers as digits"] > 0 > by_name["pronouns first person"]
    assert abs(by_name["pronouns first person"]) > abs(by_name['words "i"'])
    chosen = mining.screen(features, presence, {"rm": reward}, length, [], mining.ScreenSettings(10, 5, 3))
    assert [f.name for f, _, _ in chosen[:2]] == ["numbers as digits", "pronouns first person"]


def test_the_edit_maker_makes_and_counts_every_class_edit_on_the_bundled_responses():
    """Through the shared edit maker: every edit it keeps changes the text and its detector agrees; every
    other response is a counted skip with a reason; numbers, question endings and filler go both ways (every
    response is tried)."""
    texts = bundled_texts()
    units = pl.DataFrame({
        "comparison_id": [f"c{i}" for i in range(len(texts))], "target": ["chosen"] * len(texts),
        "prompt": ["Q"] * len(texts), "text": texts,
    })  # fmt: skip
    skips = SkipRecorder()
    _, candidates = make_edits(
        class_features(CLASS_KINDS), units, EditSettings(len(texts), 3), "offline", 1, {}, skips
    )
    made = candidates.select("feature", "n_added", "n_removed").rows_by_key("feature", unique=True)
    for name in ("numbers as digits", "shape ends on a question", "filler words"):
        assert made[name][0] > 0 and made[name][1] > 0, (name, made[name])
    assert made["pronouns first person"][0] > 0 and made["pronouns second person"][0] > 0
    reasons = skips.frame()["reason"].to_list()
    assert any(r.startswith("remove: a second-person word outside") for r in reasons)
    assert not any("left the feature" in r or "changed nothing" in r for r in reasons), reasons


def test_a_hyphenated_word_afinn_does_not_list_is_read_whole_and_by_its_parts():
    """Read whole, "no-parking" is no negative word; by its parts it holds AFINN's "no", as an RM's tokeniser
    that splits at the hyphen reads it, and as the length slope counts it. "well-being", which AFINN lists
    whole, is one positive word either way. The miner's category reads words whole."""
    text = "A no-parking sign, some self-doubt, her well-being is bad."
    spans = [(text.index(w), text.index(w) + len(w), 1) for w in ("no-parking", "self-doubt", "bad")]
    assert sentiment_spans(text, -1, by_parts=True) == spans
    assert sentiment_spans(text, -1) == spans[-1:]
    assert [sentiment_words(text, sign, by_parts) for sign in (-1, +1) for by_parts in (False, True)] == [
        1,
        3,
        1,
        1,
    ]
    held = dict(zip(COUNTED_CLASSES, class_counts(text), strict=False))
    assert (held["negative words"], held["positive words"]) == (3, 1)
    negative = next(f for f in mining.lexicon_features() if f.name == "lexicon negative")
    assert negative.count(text) == 1


def test_the_long_word_classes_count_each_part_of_a_word_by_its_letters():
    """A word's parts between hyphens and apostrophes are words: "neighbour's" is a word of nine letters and
    "self-consideration" holds one of thirteen."""
    counts = long_words("Her neighbour's self-consideration is heterogeneous, epistemically.")
    assert [counts[f"words of {n} letters or more"] for n in LONG_WORD_LETTERS] == [4, 4, 3, 3, 3, 3, 0]


def test_a_run_of_chinese_is_no_long_word_and_arabic_words_count_by_their_letters():
    """Chinese is written without spaces: each character is a word (``word_count``), never a long one;
    Arabic words are spaced and counted by their letters."""
    assert set(long_words("这是一个很长的中文句子没有空格的文本内容").values()) == {0}
    counts = long_words("المستشفيات كبيرة")  # "the hospitals" (10 letters), "big" (5)
    assert counts["words of 10 letters or more"] == 1 and counts["words of 11 letters or more"] == 0


def test_a_long_word_class_is_removed_word_by_word_counted_by_its_parts_and_never_added():
    """Every word holding a part of ten letters or more is deleted (with the space it takes); its count is the
    long parts it holds, as ``long_words`` reads them; a sentence of long words alone is a skip; nothing is
    added. The name says the class, and the feature is found from it again."""
    feature = LongWords(10)
    text = "Unfortunately, the well-established consideration is contingent on approval. Yes."
    assert feature.name == "words of 10 letters or more"
    assert feature.count(text) == 4 == long_words(text)[feature.name]
    assert feature.remove(text) == "The is on approval. Yes."
    assert not feature.present(feature.remove(text))
    with pytest.raises(SkipEdit, match="long words alone"):
        feature.remove("Unfortunately. Yes.")
    with pytest.raises(SkipEdit, match="only removed"):
        feature.add(text)
    assert mining.feature_named(feature.name).count(text) == 4
    assert mining.feature_named("words of 12 letters or more").letters == 12
