"""Words people read: a discovered feature's finding is one grammatical phrase built from the feature's kind,
the quoted text in its own case ("penalises the word “I”", "penalises ending with “I hope this helps!”"),
for every kind of feature the code makes — catalogue probes, mined text, the llm engine's hypotheses."""

from __future__ import annotations

from types import SimpleNamespace

import polars as pl
import pytest

from rmexplain.discovery import mining
from rmexplain.discovery.base import CATALOGUE, Feature, probe
from rmexplain.discovery.classes import CLASS_KINDS, LongWords, class_features
from rmexplain.discovery.llm import Hypothesis, Loop
from rmexplain.findings import language
from rmexplain.findings.phrases import written_form
from rmexplain.findings.summary import FindingSettings, discovered_findings
from rmexplain.llm.devserver import BIAS_FEATURES


def _llm_kinds() -> set[str]:
    """The kinds of the llm engine's candidates (a proposal and a variation), as its table writes them."""
    loop = SimpleNamespace(context=SimpleNamespace(round=2))
    hypotheses = [Hypothesis("Use bold text", "rm"), Hypothesis("Use italics", "rm", parent="llm_x")]
    tally = {h.name: {"present": 0, "absent": 0, 1: 0, -1: 0} for h in hypotheses}
    return set(Loop._candidates(loop, hypotheses, tally)["kind"])


def _llm_feature(text: str, kind: str) -> Feature:
    feature = Feature()
    feature.name, feature.description, feature.kind = Hypothesis(text, "rm").name, text, kind
    return feature


def _features() -> list[Feature]:
    """One feature of every kind the code makes, as it makes them."""
    mined: list[Feature] = [
        mining.MinedOpener("good question", "Good question!"),
        mining.MinedCloser("i hope this helps", "I hope this helps!"),
        mining.MinedWords("i", opens_sentences=True),
        mining.MinedWords("i can", opens_sentences=False),
        mining.MinedWords("however", opens_sentences=True),
        mining.MinedCharacter(";"),
        *mining.lexicon_features(),
        *class_features(CLASS_KINDS),
        LongWords(10),
    ]
    llm = [_llm_feature(text, kind) for kind in sorted(_llm_kinds()) for text in BIAS_FEATURES]
    return [*(probe(name) for name in CATALOGUE), *mined, *llm]


FEATURES = _features()
KNOWN_KINDS = sorted({f.kind for f in FEATURES})
FINITE_FIRST = {"uses", "use", "opens", "closes", "begin", "begins", "end", "ends", "put", "add"}


def test_every_mined_class_kind_is_among_the_kinds_the_phrases_cover():
    assert set(CLASS_KINDS) <= set(KNOWN_KINDS)


@pytest.mark.parametrize("kind", KNOWN_KINDS)
def test_every_kind_the_code_makes_has_a_form(kind):
    assert kind in language.FORMS, f"feature kind {kind!r} has no phrase form: add it to language.FORMS"


@pytest.mark.parametrize("feature", FEATURES, ids=lambda f: f"{f.kind}:{f.name}")
@pytest.mark.parametrize("effect", [0.5, -0.5])
def test_every_features_phrase_is_a_clause_after_its_verb(feature, effect):
    phrase = language.feature_phrase(feature.name, feature.description, effect, feature.kind)
    verb, _, what = phrase.partition(" ")
    assert verb == ("rewards" if effect > 0 else "penalises")
    assert what and what.split()[0] not in FINITE_FIRST  # no "rewards uses …", "penalises end …"
    assert not what.endswith(".") and "  " not in phrase
    first = what.split()[0]
    assert not (first[0].isupper() and first[1:].islower() and first != "I")  # "An apology" lowered
    assert language.feature_phrase(feature.name, feature.description, effect) == phrase  # kind from the name


MINED_BY_HAND = [
    (mining.MinedWords("i", True), -0.3, "penalises the word “I”"),
    (LongWords(10), 0.5, "rewards words of 10 letters or more"),
    (mining.MinedWords("i can", False), -0.3, "penalises the words “I can”"),
    (mining.MinedWords("i'm sure", False), 0.3, "rewards the words “I'm sure”"),
    (mining.MinedWords("it is", False), 0.3, "rewards the words “it is”"),
    (mining.MinedCloser("i hope this helps", "I hope this helps!"), -0.3,
     "penalises ending with “I hope this helps!”"),
    (mining.MinedOpener("good question", "Good question!"), 0.3, "rewards opening with “Good question!”"),
    (mining.MinedCharacter(";"), 0.3, "rewards the character “;” (semicolon)"),
    (probe("bold"), 0.3, "rewards markdown bold text (**…**)"),
    (probe("hedging"), -0.3, "penalises a hedge (I think, maybe, perhaps, might)"),
    (probe("all_caps_word"), 0.3, "rewards a word in capitals for emphasis (VERY)"),
    *zip(class_features(CLASS_KINDS), (0.3, -0.3, 0.3, 0.3, -0.3, -0.3), (
        "rewards numbers written as digits",
        "penalises first-person words (I, me, my, we, our)",
        "rewards second-person words (you, your, yours)",
        "rewards ending on a question",
        "penalises sentences that open with the word “I”",
        "penalises filler words (honestly, actually, basically, really, just, …)",
    ), strict=True),
]  # fmt: skip


@pytest.mark.parametrize(("feature", "effect", "phrase"), MINED_BY_HAND, ids=lambda x: getattr(x, "name", x))
def test_mined_and_catalogue_phrases_by_hand(feature, effect, phrase):
    assert language.feature_phrase(feature.name, feature.description, effect) == phrase


@pytest.mark.parametrize(
    ("description", "phrase"),
    [
        ("End the response with the sentence 'I hope this helps!'",
         "penalises ending the response with the sentence 'I hope this helps!'"),
        ("Begin the response with the phrase 'Sure!'",
         "penalises beginning the response with the phrase 'Sure!'"),
        ("Use bold text", "penalises bold text"),
        ("Uses a positive word (AFINN-en-165 score > 0).",
         "penalises a positive word (AFINN-en-165 score > 0)"),
        ("Puts one key word in markdown bold.", "penalises putting one key word in markdown bold"),
        ("The response begins with 'Sure!'", "penalises a response that begins with 'Sure!'"),
        ("A response in the second person", "penalises a response in the second person"),
        ("Thanks for asking", "penalises thanks for asking"),
        ("I think statements", "penalises I think statements"),
        ("AFINN-en-165 negative words.", "penalises AFINN-en-165 negative words"),
    ],
)  # fmt: skip
def test_a_description_becomes_a_noun_phrase_or_an_ing_clause(description, phrase):
    assert language.feature_phrase("llm_some_feature_abc123", description, -1.0, "hypothesis") == phrase


def test_the_words_are_quoted_as_most_often_written():
    texts = ["Yes, I can help. So I can.", "Sure, i can.", "We like Python.", "I use Python; python -V."]
    assert written_form("i can", texts) == "I can"
    assert written_form("python", texts) == "Python"  # 2 to 1
    assert written_form("i  can", ["Yes I\ncan"]) == "I can"  # any whitespace, shown as one space
    assert written_form("can", ["Cannot."]) is None  # whole words only
    assert written_form("b", ["x B b"]) == "B"  # a tie inside sentences: the first in sorted order
    words = mining.MinedWords("python", False)
    assert (
        language.feature_phrase(words.name, words.description, 1.0, texts=texts)
        == "rewards the word “Python”"
    )
    assert (
        language.feature_phrase(words.name, words.description, 1.0) == "rewards the word “python”"
    )  # as named
    assert language.pronoun_i("hi i think i'm it i’ve") == "hi I think I'm it I’ve"


def test_the_findings_table_phrases_a_mined_word_with_its_case():
    names = [mining.MinedWords("i", True), mining.MinedCloser("i hope this helps", "I hope this helps!")]
    table = pl.DataFrame({
        "dataset": ["d", "d"], "rm": ["a", "a"], "engine": ["offline", "offline"],
        "feature": [f.name for f in names], "description": [f.description for f in names],
        "effect": [-0.6, -0.4], "low": [-0.8, -0.6], "high": [-0.4, -0.2], "q_value": [0.01, 0.02],
        "n": [20, 20], "support": [0.3, 0.2],
    })  # fmt: skip
    rows = discovered_findings(table, {}, FindingSettings())
    assert [r["phrase"] for r in rows] == [
        "penalises the word “I”",
        "penalises ending with “I hope this helps!”",
    ]


def test_the_findings_quote_a_mined_word_as_its_edits_responses_write_it():
    """The source texts of a feature's edits give its case; the edited texts (the edit's own lower-case
    insertions) do not, nor do another feature's or another dataset's edits."""
    python, docs = mining.MinedWords("python", False), mining.MinedWords("the docs", False)
    table = pl.DataFrame({
        "dataset": ["d", "d", "e"], "rm": ["a"] * 3, "engine": ["offline"] * 3,
        "feature": [python.name, docs.name, python.name], "kind": ["words"] * 3,
        "description": [python.description, docs.description, python.description],
        "effect": [0.6, -0.4, 0.5], "low": [0.4, -0.6, 0.3], "high": [0.8, -0.2, 0.7],
        "q_value": [0.01, 0.02, 0.01], "n": [20] * 3, "support": [0.3] * 3,
    })  # fmt: skip
    edits = pl.DataFrame({
        "feature": [python.name] * 3 + [docs.name] * 2,
        "direction": [-1, 1, 1, -1, -1],
        "source_text": ["I use Python daily.", "Use a loop.", "Use a map.", "Read the docs on python.",
                        "See the docs: python -V."],
        "edited_text": ["I use daily.", "Use a loop, python.", "Use a map, python.", "Read on python.",
                        "See: python -V."],
    })  # fmt: skip
    rows = discovered_findings(table, {"d": edits}, FindingSettings())
    phrases = {(r["dataset"], r["name"]): r["phrase"] for r in rows}
    assert phrases == {
        ("d", python.name): "rewards the word “Python”",
        ("d", docs.name): "penalises the words “the docs”",
        ("e", python.name): "rewards the word “python”",  # no edits of its own: as named
    }


def test_a_word_that_mostly_opens_sentences_is_quoted_as_written_inside_one():
    """Three of four "if"s open a sentence ("If …"); the one inside a sentence says how the word is written.
    Where a word only ever opens sentences, that form is all there is."""
    texts = ["If you go, fine. If not, ok.", "Tell me if you can.", "If so, yes."]
    assert written_form("if", texts) == "if"
    assert written_form("if", ["If you go.", "Sure. If so."]) == "If"
    assert written_form("i can", ["Yes, I can help.", "I can do it."]) == "I can"
    assert written_form("ok", ["好的。Ok 吗？Ok 好", "是的 ok"]) == "ok"  # Chinese sentence ends too
    assert written_form("ok", ["هل؟ Ok يا", "نعم ok"]) == "ok"  # and the Arabic question mark
