"""Bias discovery: the catalogue's edits, the miner and its screen, the edit maker, the estimate, the p-values
and the Benjamini–Hochberg step by hand, the recall of planted biases, and the contract tables."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import re

import numpy as np
import polars as pl
import pytest
from scipy import stats

from rmexplain.analysis.bootstrap import BootstrapSettings, interval
from rmexplain.discovery import catalogue, mining
from rmexplain.discovery.base import ADD, CATALOGUE, REMOVE, Feature, SkipEdit, engines, probe, probes
from rmexplain.discovery.edits import EditSettings, directions, make_edits, original_units, sampling_key
from rmexplain.discovery.estimate import (
    AddedEffect,
    _directions,
    discovered_biases,
    discovery_input,
    example_edit,
    feature_effects,
    fitted,
    p_value,
    rank_biases,
    round_effects,
)
from rmexplain.discovery.recall import describe, moved_shares, recall_table, rm_slopes
from rmexplain.discovery.text import capitalise_first, tidy, without_spans
from rmexplain.effects.base import EffectInput, RewardChanges
from rmexplain.ids import text_id
from rmexplain.perturb.skips import SkipRecorder
from rmexplain.schemas import (
    BIAS_DISCOVERY_CANDIDATES,
    BIAS_DISCOVERY_EDITS,
    BIAS_DISCOVERY_EFFECTS,
    DISCOVERED_BIASES,
    ContractError,
)

LOG = logging.getLogger("test_discovery")
EGG = (
    "For a runny yolk with set whites, lower a large egg straight from the fridge into boiling water and "
    "cook it for about 6 minutes. Then move it into a bowl of ice water for a minute so it stops cooking. "
    "If you like it slightly jammier, go to 7 minutes."
)
ENGLISH = [
    EGG,
    "Just boil it for a while until it looks done.",
    "I'm sorry, but I can't help with that. It could hurt someone.",
    "Good question! Brush the cut surface with lemon juice, leave the pit in, and wrap it tightly.",
    'The label says "keep cold", so it\'s best in the fridge. Use it within a week.',
]
FOREIGN = [
    "L'été est très chaud. N'est-ce pas? Il faut boire de l'eau, beaucoup d'eau.",
    "这是中文。这是第二句！",
    "مرحبا بك. كيف حالك؟",
    "Привет! Как дела? Всё хорошо.",
    "",
    "   ",
    "😊",
    "12345",
]


def edit_both_ways(feature: Feature, text: str) -> tuple[int, str] | None:
    """(direction, edited) as the edit maker would make it, or None for a counted skip."""
    try:
        return (REMOVE, feature.remove(text)) if feature.present(text) else (ADD, feature.add(text))
    except SkipEdit:
        return None


# ── the catalogue ─────────────────────────────────────────────────────────────────────────────────────────
def test_the_catalogue_registers_exactly_the_names_the_lazy_map_lists():
    registered = {name for name, entry in probes._entries.items() if isinstance(entry, catalogue.Probe)}
    assert registered == set(CATALOGUE)
    assert set(CATALOGUE) <= set(probes.names())
    for name in CATALOGUE:
        assert probe(name).name == name and probe(name).source and probe(name).description


@pytest.mark.parametrize("name", CATALOGUE)
def test_every_probe_adds_and_removes_what_its_own_detector_sees(name):
    feature = probe(name)
    made = 0
    for text in ENGLISH:
        result = edit_both_ways(feature, text)
        if result is None:
            continue
        direction, edited = result
        assert edited != text
        assert feature.present(edited) == (direction == ADD), (name, text, edited)
        made += 1
        if direction == ADD:  # and back again: the removal undoes what the addition added
            assert not feature.present(feature.remove(edited)), (name, edited)
    assert made >= 2, f"{name} edits fewer than two of the English examples"


@pytest.mark.parametrize("name", CATALOGUE)
def test_no_probe_raises_on_other_scripts_or_empty_text_only_skips(name):
    feature = probe(name)
    for text in FOREIGN:
        result = edit_both_ways(feature, text)  # anything but SkipEdit would raise here
        if result is not None:
            assert isinstance(result[1], str)


def test_probes_put_each_feature_where_it_naturally_goes():
    assert probe("affirmative_opener").add(EGG).startswith("Sure! For a runny yolk")
    assert probe("affirmative_opener").remove("Sure! For a runny yolk.") == "For a runny yolk."
    assert probe("flattering_opener").remove(ENGLISH[3]).startswith("Brush the cut surface")
    assert probe("hedging").add("Boil it.") == "I think boil it."
    assert probe("hedging").add("I know.") == "I think I know."  # "I" is not lowered
    assert probe("hope_this_helps").add("Boil it") == "Boil it. I hope this helps!"
    assert probe("bold").add("Use a big spoon.") == "Use a big **spoon**."  # the longest word; ties: first
    assert probe("bold").remove("Use **a big** spoon.") == "Use a big spoon."
    assert probe("exclamation").add(EGG).startswith(EGG.split(".")[0] + "! Then")
    assert probe("exclamation").remove("Wow!! Really?! Yes!") == "Wow. Really? Yes."
    assert probe("extra_spaces").add("Boil it, then cool.") == "Boil   it,   then   cool."
    assert probe("extra_spaces").remove("Boil   it,  then cool.") == "Boil it, then cool."
    assert probe("header").add("Boil it.") == "## Overview\n\nBoil it."
    assert probe("bullet_list").add("One. Two.") == "- One.\n- Two."
    assert probe("bullet_list").add("Intro. One. Two.") == "Intro.\n\n- One.\n- Two."
    assert probe("bullet_list").remove("Intro.\n\n- One\n- Two.") == "Intro.\n\nOne. Two."
    assert probe("numbered_list").add("Intro. One. Two.") == "Intro.\n\n1. One.\n2. Two."
    assert probe("emoji").add("Enjoy.") == "Enjoy. 😊"
    assert probe("emoji").remove("Enjoy 👍🏽 it ❤️.") == "Enjoy it."
    assert probe("all_caps_word").add("Keep it frozen.") == "Keep it FROZEN."
    assert probe("apology").remove("I'm sorry, but I can't help with that.") == "I can't help with that."
    assert probe("double_space_sentences").add("One. Two.") == "One.  Two."
    assert probe("paragraph_breaks").add("One. Two. Three.") == "One.\n\nTwo. Three."
    assert probe("em_dash").add("Yes, it works.") == "Yes — it works."
    assert probe("extra_blank_lines").add("One. Two. Three.") == "One.\n\n\nTwo. Three."
    assert probe("trailing_spaces").add("One.\nTwo.") == "One.   \nTwo.   "
    assert probe("greeting_opener").remove("Hello there! Boil it.") == "Boil it."
    assert probe("parentheses").add("Boil it. Cool it.") == "Boil it. Cool it (see above)."
    assert probe("parentheses").remove("Use lemon (or lime) juice.") == "Use lemon or lime juice."
    stripped = probe("llm_vocabulary").remove("It is crucial to delve in. Additionally, rest.")
    assert stripped == "It is to in. Rest."


@pytest.mark.parametrize(
    ("name", "text", "reason"),
    [
        ("bullet_list", "Just one sentence.", "fewer than 2 sentences"),
        ("em_dash", "No comma here.", "no comma"),
        ("bold", "", "no letter"),
        ("exclamation", "Is it? Yes!", "no sentence ends with '.'"),
    ],
)
def test_an_edit_that_cannot_be_made_says_why(name, text, reason):
    with pytest.raises(SkipEdit, match=reason):
        probe(name).add(text)


def test_tidy_capitalises_a_cyrillic_or_greek_sentence_start_as_an_english_one():
    assert tidy("  , boil it.") == "Boil it."
    assert tidy("  , привет,  мир .") == "Привет, мир."
    assert tidy("— γεια σου.") == "Γεια σου."
    assert capitalise_first("«ёлка»") == "«Ёлка»"
    # a cut that takes the sentence's first word capitalises what follows, in any script
    assert without_spans("Конечно, это просто.", [(0, 7)]) == "Это просто."
    assert mining.MinedOpener("ну", "Ну,").remove("Ну, это просто.") == "Это просто."


# ── mining ────────────────────────────────────────────────────────────────────────────────────────────────
CORPUS = [
    "Good question! Boil the egg for six minutes. Hope this helps!",
    "Good question! Use a sharp knife; then rinse. Hope this helps!",
    "Good question! Try lemon juice (or lime). Hope this helps!",
    "Boil it, for example, in salted water. Enjoy your meal.",
    "However, rinse it first. It is great.",
]


def test_word_ngrams_stay_within_runs_of_words():
    assert mining.ngrams("Boil it, for example in water", 2) == [
        "boil", "it", "boil it", "for", "example", "in", "water", "for example", "example in", "in water",
    ]  # fmt: skip
    assert "it for" not in mining.ngrams("Boil it, for example", 2)  # no n-gram across the comma
    assert mining.ngrams("L'été est très chaud", 1) == ["l'été", "est", "très", "chaud"]


def test_miner_finds_openers_closers_words_and_characters_with_their_support():
    features, presence = mining.all_candidates(CORPUS, 3, 2, ["opener", "closer", "character", "words"])
    by_name = {f.name: presence[:, j] for j, f in enumerate(features)}
    assert by_name['opener "Good question!"'].tolist() == [1, 1, 1, 0, 0]
    assert by_name['closer "Hope this helps!"'].tolist() == [1, 1, 1, 0, 0]
    assert by_name['words "hope this"'].tolist() == [1, 1, 1, 0, 0]
    assert 'character "!"' in by_name and 'character ";"' not in by_name  # ";" in one response only
    for j, feature in enumerate(features):  # the presence the screen reads is each feature's own detector
        assert [feature.present(t) for t in CORPUS] == presence[:, j].astype(bool).tolist(), feature.name
    opener = next(f for f in features if f.name == 'opener "Good question!"')
    assert opener.remove(CORPUS[0]) == "Boil the egg for six minutes. Hope this helps!"
    assert opener.add("Rinse it.") == "Good question! Rinse it."


def test_mined_words_are_added_where_they_mostly_stand():
    opening = mining.MinedWords("however", opens_sentences=True)
    inner = mining.MinedWords("for example", opens_sentences=False)
    assert opening.add("Boil it. Cool it.") == "Boil it. However, cool it."
    assert inner.add("Boil it. Cool it.") == "Boil it. Cool it, for example."
    assert inner.remove("Boil it, for example, in water.") == "Boil it, in water."
    # mined in lower case, the pronoun I is added as people write it
    assert mining.MinedWords("and i", False).add("No.") == "No, and I."
    assert mining.MinedWords("i’d", True).add("Boil it. Cool it.") == "Boil it. I’d, cool it."


def test_no_mined_words_where_no_word_reaches_the_support():
    """Few, short, distinct responses: no n-gram is used by min_support of them. No word candidates (not a
    crash of the round: scikit-learn raises where nothing is left after its min_df)."""
    features, presence = mining.mined_words(["Boil it.", "Rinse greens.", "Serve warm."], 3, 2)
    assert features == [] and presence.shape == (3, 0) and presence.dtype == np.uint8


def test_lexicon_and_character_candidates_edit_only_what_they_can():
    positive, negative, rare = mining.lexicon_features()
    assert positive.present("It is great.") and not positive.present("It is a spoon.")
    assert positive.remove("It is great fun.") == "It is."
    assert negative.add("Boil it. Cool it.") == "Boil it. Sadly, cool it."
    with pytest.raises(SkipEdit, match="only removed"):
        rare.add("Boil it.")
    semicolon = mining.MinedCharacter(";")
    assert semicolon.remove("Rinse; then dry.") == "Rinse, then dry."
    assert mining.MinedCharacter(")").remove("Lemon (or lime) works.") == "Lemon or lime works."


def test_the_screen_is_a_t_statistic_at_equal_length():
    rng = np.random.default_rng(0)
    length = rng.normal(50, 10, 40)
    presence = (rng.random((40, 2)) < 0.4).astype(np.uint8)
    y = 0.02 * length + 0.8 * presence[:, 0] + rng.normal(0, 0.3, 40)
    t = mining.association(y, presence, length)
    design = np.column_stack([np.ones(40), presence[:, 0], length])
    beta, *_ = np.linalg.lstsq(design, y, rcond=None)
    residual = y - design @ beta
    se = np.sqrt(residual @ residual / (40 - 3) * np.linalg.inv(design.T @ design)[1, 1])
    assert t[0] == pytest.approx(beta[1] / se)


def test_the_screen_takes_each_rms_strongest_in_turns_and_skips_presence_already_tested():
    features = [mining.MinedWords(w, False) for w in ("a", "b", "c", "d")]
    presence = np.array([[1, 1, 0, 1], [1, 1, 1, 0], [0, 0, 1, 1], [0, 0, 0, 0], [0, 0, 1, 0]], np.uint8)
    length = np.array([10.0, 12, 9, 11, 10])
    rewards = {"r1": np.array([3.0, 3.1, 0.0, 0.1, 0.0]), "r2": np.array([0.0, 0.2, 2.0, 0.0, 2.1])}
    settings = mining.ScreenSettings(max_candidates=3, per_rm=2, min_support=2)
    chosen = mining.screen(features, presence, rewards, length, [], settings)
    names = [f.name for f, _, _ in chosen]
    # r1's strongest is a (b has the same presence: left out); r2's is c; then each RM's second
    assert names[0] == 'words "a"' and names[1] == 'words "c"' and 'words "b"' not in names
    assert len(chosen) == 3
    taken = [presence[:, 0]]  # a catalogue probe with a's presence: a is not tested again
    again = mining.screen(features, presence, rewards, length, taken, settings)
    assert 'words "a"' not in [f.name for f, _, _ in again]


def test_the_screen_leaves_out_a_candidate_every_response_has_even_with_a_slot_to_spare():
    features = [mining.MinedWords(w, False) for w in ("a", "every", "b")]
    presence = np.array([[1, 1, 0], [1, 1, 0], [0, 1, 1], [0, 1, 1], [0, 1, 1]], np.uint8)
    length = np.array([10.0, 12, 9, 11, 10])
    rewards = {"r1": np.array([2.0, 2.2, 0.0, 0.1, 0.3])}
    settings = mining.ScreenSettings(max_candidates=3, per_rm=3, min_support=2)
    chosen = mining.screen(features, presence, rewards, length, [], settings)
    # no edit could add "every"; a and b are complements, their |t| equal: the tie goes by name
    assert [f.name for f, _, _ in chosen] == ['words "a"', 'words "b"']
    one = mining.ScreenSettings(max_candidates=1, per_rm=3, min_support=2)
    assert [f.name for f, _, _ in mining.screen(features, presence, rewards, length, [], one)] == [
        'words "a"'
    ]


def test_mined_openers_and_closers_by_their_rules():
    texts = [
        *("Yes, boil it.", "Yes, cool it.", "Yes! Rinse it.", "yes, dry it."),  # "Yes," twice: the form
        *("Sure. Go.", "Sure! Run."),  # a tie: the first in sorted order
        *("Good question!! Boil it. See you.", "Good question. Rinse it. See you.", "Good question. Dry it."),
        *("One two three four, go. Then stop.", "one two three four. Go. Then stop."),  # four words
        *("One two three four five, go.", "one two three four five, stop."),  # five: no opener
        *("Straße, links.", "Strasse, rechts."),  # two words, not one
        *("Keep it in the fridge for a day or so.", "Keep the basil in some water.") * 2,  # one sentence
        *("Wow!! Nice.", "Wow!! Great.", "First. Thanks!", "Second. Thanks!", "A. Straße.", "B. Strasse."),
        "No punctuation here",
    ]
    openers = {f.name: f for f in mining.mined_openers(texts, 2)}
    assert list(openers) == [
        'opener "Good question."',  # twice, to "Good question!!" once (its first mark only)
        'opener "One two three four,"',
        'opener "Sure!"',
        'opener "Wow!"',  # its first mark
        'opener "Yes,"',
    ]
    assert openers['opener "Yes,"'].description == "Opens with “Yes,”."
    assert openers['opener "Yes,"'].remove("Yes, yes, boil it.") == "Yes, boil it."  # the opening one only
    closers = {f.name: f for f in mining.mined_closers(texts, 2)}
    assert list(closers) == ['closer "See you."', 'closer "Thanks!"', 'closer "Then stop."']  # not Straße
    closer = closers['closer "See you."']
    assert closer.description == "Closes with “See you.”." and closer.add("Boil it") == "Boil it. See you."
    assert closer.remove("Go. Boil it. See you.") == "Go. Boil it."
    with pytest.raises(SkipEdit, match=r"^the response does not close with it$"):
        closer.remove("See you. Boil it. Go.")
    eight = mining.mined_closers(["Go. a b c d e f g h.", "Run. A b c d e f g h."], 2)
    assert [f.name for f in eight] == ['closer "A b c d e f g h."']
    assert mining.mined_closers(["Go. a b c d e f g h i.", "Run. A b c d e f g h i."], 2) == []  # nine words
    assert mining.mined_closers(["Go. Stop.", "Run. Stop."], 3) == []  # two responses: below 3


def test_mined_words_open_sentences_where_more_than_half_their_uses_do():
    texts = ["However, rinse it. Then boil it, boil it.", "However, dry it.", "It is fine however.",
             "For example, boil it.", "For example, dry it.", "Rinse it now."]  # fmt: skip
    features, presence = mining.mined_words(texts, 2, 2)
    opens = {f.phrase: f.opens for f in features}
    assert opens["however"] and opens["for example"]  # 2 of 3 uses, 2 of 2 (a 2-gram)
    assert not opens["rinse"] and not opens["boil it"]  # 1 of 2 uses: half; none
    assert presence[0, [f.phrase for f in features].index("boil")] == 1  # used twice: present, 0/1
    assert features[0].description == f"Uses the words “{features[0].phrase}”."
    with pytest.raises(SkipEdit, match=r"^the response has no sentence$"):
        features[0].add("  ")
    added = mining.MinedWords("for example", False).add("Go. Boil it. Cool it.")
    assert added == "Go. Boil it. Cool it, for example."  # the last of three sentences
    none, matrix = mining.mined_words(["", "!!"], 2, 2)
    assert none == [] and matrix.shape == (2, 0) and matrix.dtype == np.uint8


def test_mined_characters_count_a_bracket_pair_once_and_nothing_else():
    names = [f.name for f in mining.mined_characters(["Hi (there) [1] {x}!", "Yo (you) [2] {y}! a1"], 2)]
    assert names == ['character "!"', 'character "()"', 'character "[]"', 'character "{}"']
    assert {c: mining.MinedCharacter(c).description for c in (")", "]", "}", "@")} == {
        ")": "Uses the character “()” (parentheses).",
        "]": "Uses the character “[]” (brackets).",
        "}": "Uses the character “{}” (braces).",
        "@": "Uses the character “@” (a symbol).",
    }
    at = mining.MinedCharacter("@")
    assert at.present("a@b") and not at.present("ab") and not mining.MinedCharacter(")").present("No.")
    with pytest.raises(SkipEdit, match=r"^a mined character is only removed$"):
        at.add("a b")


def test_the_lexicon_categories_by_name_with_their_words():
    positive, negative, rare = mining.lexicon_features()
    assert [(f.name, f.description) for f in (positive, negative, rare)] == [
        ("lexicon positive", "Uses a positive word (AFINN-en-165 score > 0)."),
        ("lexicon negative", "Uses a negative word (AFINN-en-165 score < 0)."),
        ("lexicon rare", "Uses a rare word (wordfreq Zipf frequency < 3)."),
    ]
    assert positive.present("I accept.")  # AFINN: +1
    assert positive.add("Go. Boil it. Cool it.") == "Go. Boil it. Fortunately, cool it."
    assert negative.present("It is bad.") and not negative.present("It is a spoon.")  # AFINN: −3; none
    assert rare.present("A xylophonist.") and not rare.present("The end.")
    with pytest.raises(SkipEdit, match=r"^this lexicon category is only removed$"):
        rare.add("Boil it.")
    with pytest.raises(SkipEdit, match=r"^the response has no sentence$"):
        negative.add("")
    both = mining.all_candidates(["Yes, go.", "Yes, run."], 2, 1, ["opener", "lexicon"])[0]
    assert {'opener "Yes,"', "lexicon positive"} <= {f.name for f in both}
    openers_only = mining.all_candidates(["Yes, go."], 1, 1, ["opener"])[0]
    assert not any(f.name.startswith("lexicon") for f in openers_only)
    assert mining.all_candidates(["Yes, go.", "Yes, run."], 2, 1, ["opener", "words"])[1].dtype == np.uint8


def test_the_association_needs_four_responses_and_is_zero_where_presence_follows_length():
    y = np.array([1.0, 0.0, 2.0, 0.5])
    assert (
        mining.association(y, np.array([[1], [0], [1], [0]], np.uint8), np.array([3.0, 5.0, 4.0, 6.0]))[0]
        != 0
    )
    assert mining.association(y[:3], np.ones((3, 2), np.uint8), np.arange(3.0)).tolist() == [0.0, 0.0]
    presence = np.array([[1, 0], [0, 1], [1, 1], [0, 0], [1, 0], [0, 1]], np.uint8)
    t = mining.association(np.array([1.0, 2.0, 0.5, 3.0, 1.5, 2.5]), presence, presence[:, 0] * 10.0 + 5)
    assert t[0] == 0.0 and t[1] != 0.0  # the first column is the length itself: no test at equal length


# ── the edits ─────────────────────────────────────────────────────────────────────────────────────────────
def test_directions_balance_the_sample_and_drop_a_direction_too_few_responses_call_for():
    settings = EditSettings(responses_per_feature=10, min_per_direction=3)
    assert directions(np.array([True] * 4 + [False] * 20), settings) == {ADD: 6, REMOVE: 4}
    assert directions(np.array([True] * 2 + [False] * 20), settings) == {ADD: 10}  # 2 < 3: add only
    assert directions(np.array([False] * 20), settings) == {ADD: 10}
    assert directions(np.array([True] * 20), settings) == {REMOVE: 10}
    assert directions(np.array([True, False]), settings) == {ADD: 1}  # neither reaches 3: the add side
    assert directions(np.array([True] * 7 + [False] * 7), settings) == {ADD: 5, REMOVE: 5}
    assert directions(np.array([True, True, False]), settings) == {REMOVE: 2}  # neither reaches 3: the larger
    odd = EditSettings(responses_per_feature=7, min_per_direction=1)
    assert directions(np.array([True] * 10 + [False] * 10), odd) == {ADD: 4, REMOVE: 3}  # the odd one adds
    assert directions(np.array([True] * 10 + [False] * 3), odd) == {ADD: 3, REMOVE: 4}  # what ADD cannot use
    assert all(type(n) is int for n in directions(np.array([True] * 10 + [False] * 10), odd).values())


def _comparisons() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "comparison_id": ["d-s0-1", "d-s0-2", "d-s1-1"],  # d-s1-1 draws pair 1 again
            "dataset": ["d"] * 3,
            "seed": [0, 0, 1],
            "source_index": ["1", "2", "1"],
            "prompt": ["How do I boil an egg?", "How do I keep basil?", "How do I boil an egg?"],
            "chosen": [ENGLISH[0], "Trim the stems. Stand them in water!", ENGLISH[0]],
            "rejected": [ENGLISH[1], "Put it in the fridge.", ENGLISH[1]],
        }
    )


def test_the_edit_maker_edits_each_distinct_response_once_checks_and_counts_skips():
    units = original_units(_comparisons())
    assert units.height == 4  # the pair drawn twice is edited under its first comparison id only
    skips = SkipRecorder()
    features = [probe("exclamation"), probe("bullet_list")]
    edits, candidates = make_edits(features, units, EditSettings(10, 1), "offline", 1, {}, skips)
    assert edits.columns[:4] == ["feature", "direction", "source_text", "edited_text"]
    exclamation = candidates.filter(pl.col("feature") == "exclamation").row(0, named=True)
    assert (exclamation["n_present"], exclamation["n_removed"], exclamation["n_added"]) == (1, 1, 3)
    assert exclamation["support"] == pytest.approx(0.25)
    bullets = edits.filter(pl.col("feature") == "bullet_list")
    assert bullets.height == 2  # two responses of one sentence are skipped, with the reason
    reasons = skips.frame()["reason"].to_list()
    assert reasons.count("add: the response has fewer than 2 sentences") == 2
    again, _ = make_edits(features, units, EditSettings(10, 1), "offline", 1, {}, SkipRecorder())
    assert again.equals(edits)  # deterministic


class FirstLineBang(Feature):
    """A plugin probe whose detector reads the first line only, while its addition goes at the end."""

    name, kind, source = "first_line_bang", "punctuation", "a test's plugin"
    description = "The first line ends with '!'."

    def present(self, text: str) -> bool:
        return text.split("\n")[0].endswith("!")

    def add(self, text: str) -> str:
        return text.removesuffix(".") + "!"

    def remove(self, text: str) -> str:
        return text.replace("!", ".")


def test_an_addition_the_features_own_detector_does_not_see_is_a_counted_skip_not_an_edit(monkeypatch):
    monkeypatch.setattr(probes, "_entries", dict(probes._entries))  # registered for this test only
    probes.register("first_line_bang")(FirstLineBang)
    comparisons = pl.DataFrame(
        {"comparison_id": ["c1", "c2"], "prompt": ["p1", "p2"], "chosen": ["Boil it.", "Rinse it.\nDry it."],
         "rejected": ["Peel it.", "Cut it.\nServe it."]}
    )  # fmt: skip
    skips = SkipRecorder()
    units = original_units(comparisons)
    edits, candidates = make_edits(
        [probe("first_line_bang")], units, EditSettings(4, 1), "plugin", 1, {}, skips
    )
    assert sorted(edits["edited_text"]) == ["Boil it!", "Peel it!"]  # the two one-line responses
    assert candidates.select("n_present", "n_added", "n_removed").row(0) == (0, 2, 0)
    assert skips.frame()["reason"].to_list() == ["add: the add edit left the feature absent"] * 2


class Unsure(Feature):
    """A plugin probe whose detector answers with a match object or None, and whose removal returns None
    where it has nothing to remove."""

    name, description, kind, source = "unsure", "Says 'maybe'.", "hedge", "a test's plugin"

    def present(self, text: str):
        return re.search(r"\bmaybe\b", text, re.I)

    def add(self, text: str) -> str:
        return "Maybe " + text[0].lower() + text[1:]

    def remove(self, text: str):
        return None if text.startswith("Never") else re.sub(r"\bmaybe\s*", "", text, flags=re.I).capitalize()


def test_a_detector_that_answers_with_a_match_is_read_as_present_and_a_removal_returning_none_is_an_error():
    comparisons = pl.DataFrame(
        {"comparison_id": ["c1", "c2"], "prompt": ["p1", "p2"],
         "chosen": ["It is maybe fine.", "Sure."], "rejected": ["Maybe not.", "Never maybe."]}
    )  # fmt: skip
    skips = SkipRecorder()
    units = original_units(comparisons).filter(pl.col("text") != "Never maybe.")
    edits, candidates = make_edits([Unsure()], units, EditSettings(3, 1), "plugin", 1, {}, skips)
    assert candidates.select("n_present", "n_added", "n_removed").row(0) == (2, 1, 2)
    assert sorted(edits["edited_text"]) == ["It is fine.", "Maybe sure.", "Not."]
    assert skips.frame().height == 0
    refusal = (
        r"^discovery feature 'unsure': test_discovery\.Unsure\.remove returned NoneType, not the edited text "
        r"\(str\); raise rmexplain\.discovery\.base\.SkipEdit to skip a response it cannot edit$"
    )
    with pytest.raises(TypeError, match=refusal):  # "Never maybe." among the removals
        make_edits([Unsure()], original_units(comparisons), EditSettings(4, 1), "plugin", 1, {}, skips)


class Fussy(Feature):
    """A plugin probe with every way an edit can fail."""

    name, description, kind, source = "fussy", "Uses '!'.", "punctuation", "a test's plugin"

    def present(self, text: str) -> bool:
        return "!" in text

    def add(self, text: str) -> str:
        if text.startswith("Skip"):
            raise SkipEdit("it says skip")
        return text if text.startswith("Same") else text + "!"

    def remove(self, text: str) -> str:
        return text.replace("!!", "!") if "!!" in text else text.replace("!", "")


def test_every_skip_names_its_response_feature_and_reason_and_the_candidate_counts_what_was_made():
    comparisons = pl.DataFrame(
        {"comparison_id": ["c1", "c2", "c3"], "prompt": ["p1", "p2", "p3"],
         "chosen": ["Skip it.", "Wow!! Nice.", "Yes! Sure."], "rejected": ["Same here.", "Fine.", "Ok."]}
    )  # fmt: skip
    skips = SkipRecorder()  # 2 of 6 responses have it: 4 additions, 2 removals (7 asked, 6 there)
    edits, candidates = make_edits([Fussy()], original_units(comparisons), EditSettings(7, 1), "plugin", 2,
                                   {"fussy": ("rm-a", 2.5)}, skips)  # fmt: skip
    assert sorted(skips.frame().select("comparison_id", "target", "attribute", "reason").rows()) == [
        ("c1", "chosen", "fussy", "add: it says skip"),
        ("c1", "rejected", "fussy", "add: the edit changed nothing"),
        ("c2", "chosen", "fussy", "remove: the remove edit left the feature present"),
    ]
    assert sorted(edits.select("comparison_id", "target", "direction", "edited_text").rows()) == [
        ("c2", "rejected", ADD, "Fine.!"),
        ("c3", "chosen", REMOVE, "Yes Sure."),
        ("c3", "rejected", ADD, "Ok.!"),
    ]
    assert edits.select("engine", "round").unique().rows() == [("plugin", 2)]
    assert candidates.select("n_present", "n_added", "n_removed", "support", "screen_rm", "screen_t").row(
        0
    ) == (2, 2, 1, pytest.approx(2 / 6), "rm-a", 2.5)


def test_the_sample_of_a_direction_is_the_first_responses_by_their_sha256_key():
    assert sampling_key("f", "c1", "chosen") == hashlib.sha256(b"f\x1fc1\x1fchosen").hexdigest()
    units = original_units(_comparisons())
    edits, _ = make_edits([probe("bold")], units, EditSettings(2, 1), "x", 1, {}, SkipRecorder())
    keys = sorted(
        (sampling_key("bold", c, t), c, t) for c, t in units.select("comparison_id", "target").rows()
    )
    assert sorted(edits.select("comparison_id", "target").rows()) == sorted((c, t) for _, c, t in keys[:2])


def test_no_units_or_features_give_empty_tables_and_a_feature_without_a_description_is_refused():
    none = original_units(_comparisons().clear())
    edits, candidates = make_edits([probe("bold")], none, EditSettings(4, 1), "x", 1, {}, SkipRecorder())
    assert edits.height == 0 and edits.columns == list(BIAS_DISCOVERY_EDITS)
    assert np.isnan(candidates["support"][0])  # no response: no share
    edits, candidates = make_edits(
        [], original_units(_comparisons()), EditSettings(4, 1), "x", 1, {}, SkipRecorder()
    )
    assert (edits.height, candidates.height, candidates.columns) == (0, 0, list(BIAS_DISCOVERY_CANDIDATES))
    nameless = Fussy()
    nameless.description = None
    with pytest.raises(ContractError, match=r"^discovery candidates: column 'description' is null in row 0"):
        make_edits([nameless], none, EditSettings(4, 1), "x", 1, {}, SkipRecorder())


def test_each_distinct_response_is_edited_under_the_first_comparison_and_target_that_holds_it():
    comparisons = pl.DataFrame(
        {"comparison_id": ["d-s1-1", "d-s0-2", "d-s0-1"], "prompt": ["q", "q", "q"],
         "chosen": ["Boil it.", "Cool it.", "Boil it."], "rejected": ["Cool it.", "Boil it.", "Peel it."]}
    )  # fmt: skip
    assert original_units(comparisons).select("comparison_id", "target", "text").rows() == [
        ("d-s0-1", "chosen", "Boil it."), ("d-s0-1", "rejected", "Peel it."), ("d-s0-2", "chosen", "Cool it.")
    ]  # fmt: skip


def test_a_feature_name_proposed_twice_is_refused():
    with pytest.raises(ValueError, match=r"\['bold'\] are proposed twice"):
        make_edits([probe("bold"), probe("bold")], original_units(_comparisons()), EditSettings(4, 1), "x", 1,
                   {}, SkipRecorder())  # fmt: skip


# ── the estimate ──────────────────────────────────────────────────────────────────────────────────────────
def _input(y: list[float], feature: list[int], direction: list[int], dl: list[float], comparison: list[int],
           reference: list[float] | None = None) -> EffectInput:  # fmt: skip
    empty = np.zeros(0, dtype=np.int64)
    rms = {"rm": RewardChanges(np.array(y) * 2.0, 2.0, empty, empty, np.zeros(0), np.zeros(0))}
    if reference is not None:
        rms["ref"] = RewardChanges(np.array(reference), 1.0, empty, empty, np.zeros(0), np.zeros(0))
    return EffectInput(
        comparisons=[f"c{i}" for i in range(max(comparison) + 1)],
        attributes=["both", "added"],
        comparison=np.array(comparison),
        attribute=np.array(feature),
        direction=np.array(direction),
        round=np.ones(len(y), dtype=np.int64),
        chain=np.array(direction),
        length_change=np.array(dl, dtype=np.float64),
        rms=rms,
    )


def test_added_effect_is_the_length_adjusted_change_when_added_one_direction_features_included():
    # feature "both": y = 0.1 + 0.7 s - 0.4 dl; feature "added" (added only): y = 0.5 - 0.4 dl
    dl = [0.5, 1.0, -0.5, -1.5, 2.0, 0.0, 1.0]
    s = [1, 1, -1, -1, 1, 1, 1]
    f = [0, 0, 0, 0, 1, 1, 1]
    y = [0.1 + 0.7 * si - 0.4 * d if fi == 0 else 0.5 - 0.4 * d for fi, si, d in zip(f, s, dl, strict=True)]
    data = _input(y, f, s, dl, comparison=[0, 1, 2, 3, 0, 1, 2])
    estimator = AddedEffect()
    out = estimator.estimate(estimator.observations(data, "rm", None), np.ones((1, 4)), 4, 2)[0]
    assert out == pytest.approx((0.7, 0.5, -0.4))  # both, added, the length row


def test_without_length_change_a_one_way_feature_is_its_mean_change_and_a_two_way_one_half_the_gap():
    # hand: "both" adds 1.0, 0.6 (mean 0.8), removes -0.2 (mean -0.2): (0.8 - (-0.2)) / 2 = 0.5;
    # "added": mean of 0.3, 0.9 = 0.6
    data = _input([1.0, 0.6, -0.2, 0.3, 0.9], [0, 0, 0, 1, 1], [1, 1, -1, 1, 1], [0.0] * 5, [0, 1, 2, 0, 1])
    estimator = AddedEffect()
    out = estimator.estimate(estimator.observations(data, "rm", None), np.ones((1, 3)), 3, 2)[0]
    assert out[:2] == pytest.approx((0.5, 0.6))


def test_the_reference_rms_change_is_subtracted_before_the_estimate():
    # the RM's changes in its sd (2): y; the reference's raw changes r: y - r / 2
    data = _input([1.0, 0.6, -0.2, 0.3, 0.9], [0, 0, 0, 1, 1], [1, 1, -1, 1, 1], [0.0] * 5, [0, 1, 2, 0, 1],
                  reference=[0.4, 0.4, 0.4, 0.2, 0.2])  # fmt: skip
    estimator = AddedEffect()
    out = estimator.estimate(estimator.observations(data, "rm", "ref"), np.ones((1, 3)), 3, 2)[0]
    # "both": adds 0.8, 0.4 (0.6), removes -0.4: (0.6 + 0.4) / 2 = 0.5; "added": 0.2, 0.8 -> 0.5
    assert out[:2] == pytest.approx((0.5, 0.5))


def test_p_values_are_a_t_test_with_the_bootstraps_standard_error():
    boot = np.array([0.9, 1.1, 1.0, 1.2, 0.8, np.nan])
    se = np.std([0.9, 1.1, 1.0, 1.2, 0.8], ddof=1)  # 0.158…; NaN replicates left out
    assert p_value(0.5, boot, clusters=11) == pytest.approx(2 * stats.t.sf(0.5 / se, 10))
    assert p_value(-0.5, boot, clusters=11) == p_value(0.5, boot, clusters=11)
    assert p_value(0.3, np.full(5, 0.3), 5) == 0.0  # every replicate equal: a sure effect
    assert p_value(0.0, np.zeros(5), 5) == 1.0
    assert np.isnan(p_value(float("nan"), boot, 5))
    assert np.isnan(p_value(0.3, np.full(5, 0.3), 1))  # one cluster: nothing to test against
    # fewer than MIN_FINDING_PAIRS (5) clusters: too few pairs to say, however sure the bootstrap
    assert np.isnan(p_value(0.3, np.full(5, 0.3), 4)) and np.isnan(p_value(1.0, boot, 4))
    # unlike a count of replicates beyond zero, it can pass BH's smallest threshold, 0.05 / m
    assert p_value(1.0, boot, 40) < 0.05 / 100
    # a minimum effect: the null |beta| <= 0.1, p = P(T > (|b| - 0.1)/se) + P(T < (-|b| - 0.1)/se)
    by_hand = stats.t.sf((0.5 - 0.1) / se, 10) + stats.t.cdf((-0.5 - 0.1) / se, 10)
    assert p_value(0.5, boot, 11, min_effect=0.1) == pytest.approx(by_hand)
    assert p_value(0.05, boot, 11, min_effect=0.1) > 0.5  # inside the null
    assert p_value(0.3, np.full(5, 0.3), 5, min_effect=0.5) == 1.0  # sure, but not beyond 0.5
    two = np.std([0.4, 0.6], ddof=1)  # two replicates and five clusters are enough: 4 degrees of freedom
    assert p_value(0.5, np.array([0.4, 0.6]), 5) == pytest.approx(2 * stats.t.sf(0.5 / two, 4))


def filled(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with every other column of BIAS_DISCOVERY_EFFECTS: a placeholder where it may not be null."""
    placeholder = {pl.String: "x", pl.Int64: 0, pl.Float64: 0.0}
    for name, column in BIAS_DISCOVERY_EFFECTS.items():
        if name not in frame.columns:
            value = None if column.nullable else placeholder[column.dtype]
            frame = frame.with_columns(pl.lit(value, dtype=column.dtype).alias(name))
    return frame


def test_benjamini_hochberg_by_hand_per_rm_and_the_ranking():
    # p (sorted): 0.001, 0.008, 0.039, 0.041, 0.6 over m = 5: q_(i) = min_{j>=i} p_(j) m / j
    # = 0.005, 0.02, 0.05125, 0.05125, 0.6 (0.039 * 5 / 3 = 0.065 > 0.041 * 5 / 4 = 0.05125)
    features = ["a", "b", "c", "d", "e", "f"]
    effects = pl.DataFrame(
        {
            **{k: [v] * 6 for k, v in {"dataset": "d", "rm": "rm", "engine": "offline"}.items()},
            "feature": features,
            "description": features,
            "effect": [0.2, -0.9, 0.5, 0.3, 0.05, float("nan")],
            "low": [0.0] * 6,
            "high": [1.0] * 6,
            "p_value": [0.008, 0.001, 0.039, 0.041, 0.6, float("nan")],
            "n": [10] * 6,
            "support": [0.0] * 6,
            "round": [1] * 6,
        }
    )
    table = discovered_biases(filled(effects), fdr=0.05).sort("feature")
    assert table["q_value"][:5].to_list() == pytest.approx([0.02, 0.005, 0.05125, 0.05125, 0.6])
    assert np.isnan(table["q_value"][5])
    assert table["significant"].to_list() == [True, True, False, False, False, False]
    # significant first by |effect| (b -0.9, a 0.2), then the rest by |effect|, the undefined last
    assert table.sort("rank")["feature"].to_list() == ["b", "a", "c", "d", "e", "f"]
    contract = "dataset, rm, engine, feature, description, effect, low, high, q_value, n, support"
    assert table.columns[:11] == contract.split(", ")


def test_benjamini_hochberg_is_one_family_per_rm_not_one_per_dataset():
    # r1: p 0.01, 0.04, 0.03 (m = 3): q = 0.03, 0.04, min(0.03 * 3 / 2, 0.04) = 0.04
    # r2: p 0.02, 0.5 (m = 2): q = 0.04, 0.5; pooled (m = 5) every q of p <= 0.04 would be 0.05
    effects = pl.DataFrame(
        {
            "dataset": ["d"] * 5,
            "rm": ["r1", "r2", "r1", "r2", "r1"],
            "engine": ["offline"] * 5,
            "feature": ["a", "a", "b", "b", "c"],
            "description": ["x"] * 5,
            "effect": [0.5, 0.4, 0.3, 0.1, 0.2],
            "p_value": [0.01, 0.02, 0.04, 0.5, 0.03],
            "round": [1] * 5,
        }
    )
    table = discovered_biases(filled(effects), fdr=0.045).sort("rm", "feature")
    assert table["q_value"].to_list() == pytest.approx([0.03, 0.04, 0.04, 0.04, 0.5])
    assert table["significant"].to_list() == [True, True, True, True, False]
    assert table["rank"].to_list() == [1, 2, 3, 1, 2]  # by |effect| within each RM


def test_the_example_edit_is_an_addition_closest_to_the_median_change():
    edits = pl.DataFrame(
        {
            "feature": ["f"] * 4,
            "direction": [1, 1, 1, -1],
            "source_text": ["a", "b", "c", "d"],
            "edited_text": ["a!", "b!", "c!", "d"],
            "comparison_id": ["c0", "c1", "c2", "c3"],
            "target": ["chosen"] * 4,
        }
    )
    example = example_edit(edits, np.array([0.1, 0.5, 0.9, 5.0]), np.array([1.0, 2.0, 3.0, 4.0]))
    assert example == {
        "example_comparison_id": "c1",
        "example_direction": 1,
        "example_before": "b",
        "example_after": "b!",
        "example_reward_change": 2.0,
    }


def test_the_example_edit_is_the_addition_nearest_the_median_not_the_shortest():
    # additions' y: 0.25, 1.0, 0.5, 3.0: median 0.75, distances 0.5, 0.25, 0.25, 2.25; of the two nearest
    # (c1, c2) the shorter edited text, c2's; the shortest of all (c3's) is the farthest
    edits = pl.DataFrame(
        {
            "feature": ["f"] * 5,
            "direction": [1, 1, 1, 1, -1],
            "source_text": ["a", "b", "c", "d", "e"],
            "edited_text": ["a, really!", "b, truly so!", "c, yes!", "d!", "e"],
            "comparison_id": ["c0", "c1", "c2", "c3", "c4"],
            "target": ["chosen"] * 5,
        }
    )
    y = np.array([0.25, 1.0, 0.5, 3.0, 0.75])
    example = example_edit(edits, y, np.array([0.5, 2.0, 1.0, 6.0, 1.5]))
    assert (example["example_comparison_id"], example["example_after"]) == ("c2", "c, yes!")
    assert example["example_reward_change"] == 1.0


def test_round_effects_from_tables_find_a_planted_feature_and_keep_a_null_one_quiet():
    comparisons = pl.DataFrame(
        {
            "comparison_id": [f"d-s0-{i}" for i in range(24)],
            "dataset": ["d"] * 24,
            "seed": [0] * 24,
            "source_index": [str(i) for i in range(24)],
            "prompt": [f"Question {i}?" for i in range(24)],
            "chosen": [f"Answer number {i}. It is fine." for i in range(24)],
            "rejected": [f"No {i}." for i in range(24)],
        }
    )
    units = original_units(comparisons)
    features = [probe("exclamation"), probe("bold")]
    edits, candidates = make_edits(features, units, EditSettings(48, 5), "offline", 1, {}, SkipRecorder())
    prompts = dict(comparisons.select("comparison_id", "prompt").iter_rows())

    def reward(prompt: str, text: str) -> float:  # a base RM, and one that also rewards "!" by 2
        return len(text) / 10 + (hash(prompt + text) % 7) / 7

    originals, rewards = {}, {}
    for rm, bonus in (("base", 0.0), ("biased", 2.0)):
        score = {
            (c, t): reward(p, x) + bonus * ("!" in x)
            for c, p, cx, rx in comparisons.select(
                "comparison_id", "prompt", "chosen", "rejected"
            ).iter_rows()
            for t, x in (("chosen", cx), ("rejected", rx))
        }
        originals[rm] = pl.DataFrame(
            {
                "comparison_id": comparisons["comparison_id"],
                "rm": [rm] * 24,
                "reward_chosen": [score[(c, "chosen")] for c in comparisons["comparison_id"]],
                "reward_rejected": [score[(c, "rejected")] for c in comparisons["comparison_id"]],
            }
        )
        edited = edits.select("comparison_id", "edited_text").rows()
        rewards[rm] = pl.DataFrame(
            {
                "text_id": [text_id(prompts[c], t) for c, t in edited],
                "reward": [reward(prompts[c], t) + bonus * ("!" in t) for c, t in edited],
            }
        ).unique("text_id")
    references = {"base": None, "biased": "base"}
    effects = round_effects(
        comparisons, edits, candidates, originals, rewards, references, "d", BootstrapSettings(300), 0.1, LOG
    )
    table = discovered_biases(effects, 0.05)
    biased = {r["feature"]: r for r in table.filter(pl.col("rm") == "biased").iter_rows(named=True)}
    scores = originals["biased"]
    sd = float(np.std(np.concatenate([scores["reward_chosen"], scores["reward_rejected"]]), ddof=1))
    assert biased["exclamation"]["effect"] == pytest.approx(2.0 / sd)  # exact: the reference cancels the rest
    assert biased["exclamation"]["significant"] and biased["exclamation"]["rank"] == 1
    assert biased["bold"]["effect"] == pytest.approx(0.0, abs=1e-12) and not biased["bold"]["significant"]
    assert biased["exclamation"]["example_after"].count("!") == 1


def test_the_estimates_input_by_hand():
    comparisons = pl.DataFrame(
        {"comparison_id": ["d-s0-2", "d-s0-1"], "prompt": ["q2", "q1"], "chosen": ["a", "a b c"],
         "rejected": ["a b", "a b c d e"]}
    )  # fmt: skip
    edits = pl.DataFrame(
        {"feature": ["g", "f", "g"], "direction": [ADD, REMOVE, ADD],
         "source_text": ["a b c", "a b c d e", "a"],
         "edited_text": ["a b c x y", "a b c d", "a z"], "comparison_id": ["d-s0-1", "d-s0-1", "d-s0-2"],
         "target": ["chosen", "rejected", "chosen"]}
    )  # fmt: skip
    originals = {"r": pl.DataFrame({"comparison_id": ["d-s0-1", "d-s0-2"], "rm": "r",
                                    "reward_chosen": [1.0, 2.0], "reward_rejected": [0.5, 3.0]})}  # fmt: skip
    scored = [text_id("q1", "a b c x y"), text_id("q1", "a b c d")]  # "a z" went unscored
    data = discovery_input(
        comparisons, edits, originals, {"r": pl.DataFrame({"text_id": scored, "reward": [1.5, 0.25]})}
    )
    assert (data.comparisons, data.attributes) == (["d-s0-1", "d-s0-2"], ["g", "f"])
    assert (data.comparison.tolist(), data.attribute.tolist(), data.direction.tolist()) == (
        [0, 0, 1],
        [0, 1, 0],
        [1, -1, 1],
    )
    words_sd = np.sqrt(
        ((1 - 2.75) ** 2 + (3 - 2.75) ** 2 + (2 - 2.75) ** 2 + (5 - 2.75) ** 2) / 3
    )  # 1, 3, 2, 5 words
    assert data.length_change == pytest.approx(np.array([2, -1, 1]) / words_sd)
    assert data.rms["r"].change[:2].tolist() == [1.5 - 1.0, 0.25 - 0.5] and np.isnan(data.rms["r"].change[2])
    rewards = {"r": pl.DataFrame({"text_id": scored, "reward": [1.5, 0.25]})}
    one = discovery_input(comparisons.head(1), edits.tail(1), originals, rewards)
    assert one.length_change == pytest.approx([np.sqrt(2)])  # one comparison: 1 and 2 words, sd √½


def test_one_rms_effects_counts_and_logged_length_slope_by_hand(caplog):
    # "both": y = 0.1 + 0.7 s − 0.4 dl, "added" (added only): y = 0.5 − 0.4 dl, in 4 and 3 comparisons
    dl = [0.5, 1.0, -0.5, -1.5, 2.0, 0.0, 1.0]
    s, f = [1, 1, -1, -1, 1, 1, 1], [0, 0, 0, 0, 1, 1, 1]
    y = [0.1 + 0.7 * si - 0.4 * d if fi == 0 else 0.5 - 0.4 * d for fi, si, d in zip(f, s, dl, strict=True)]
    data = _input(y, f, s, dl, comparison=[0, 1, 2, 3, 0, 1, 2])
    with caplog.at_level(logging.INFO, logger=LOG.name):
        both, added = feature_effects(data, "rm", None, BootstrapSettings(200), 5.0, LOG)
    assert caplog.messages == [
        "rm: length sensitivity γ -0.400 reward sd per sd of words (held equal)",
        # no noise: the robust fit is the same
        "rm: length sensitivity γ as Huber's robust fit -0.400 reward sd per sd of words",
    ]
    assert [(r["feature"], r["n"], r["n_comparisons"]) for r in (both, added)] == [
        ("both", 4, 4),
        ("added", 3, 3),
    ]
    assert (both["effect"], added["effect"]) == pytest.approx((0.7, 0.5))
    assert np.isnan(both["p_value"])  # 4 pairs, fewer than MIN_FINDING_PAIRS: too few to say (not tested)
    # an unscored edit (NaN) and one whose reference went unscored are left out; "added" has none left
    data = _input([1.0, 0.6, -0.2, 0.3, np.nan, 0.9], [0, 0, 0, 0, 1, 1], [1, 1, -1, 1, 1, 1], [0.0] * 6,
                  [0, 1, 2, 3, 0, 1], reference=[0.0, 0.0, 0.0, np.nan, 0.0, np.nan])  # fmt: skip
    both, added = feature_effects(data, "rm", "ref", BootstrapSettings(200), 0.0, LOG)
    assert (both["n"], both["n_comparisons"], both["effect"]) == (3, 3, pytest.approx(0.5))
    assert (added["n"], added["n_comparisons"]) == (0, 0)
    assert all(np.isnan(added[k]) for k in ("effect", "low", "high", "p_value"))
    # a skewed feature (additions 3.8 / 8, a removal −0.1: (0.475 + 0.1) / 2): its BCa interval, from its own
    # bootstrap and jackknife replicates (the acceleration moves it)
    data = _input([0.1, 0.2, 0.15, 0.3, 0.25, 2.5, 0.2, 0.1, -0.1, 0.4], [0] * 9 + [1], [1] * 8 + [-1, 1],
                  [0.0] * 10, [*range(9), 0])  # fmt: skip
    skewed = feature_effects(data, "rm", None, BootstrapSettings(200), 0.0, LOG)[0]
    _, boot, jack = fitted(AddedEffect(), data, "rm", None, BootstrapSettings(200))
    assert skewed["low"] < skewed["effect"] < skewed["high"] and skewed["effect"] == pytest.approx(0.2875)
    bca = interval(skewed["effect"], boot[:, 0], jack[:, 0], BootstrapSettings(200))[:2]
    assert (skewed["low"], skewed["high"]) == pytest.approx(bca)


def test_the_bootstrap_draws_each_pair_with_its_copies_in_chunks():
    data = _input([1.0, 0.6, -0.2, 0.3, 0.9], [0, 0, 0, 1, 1], [1, 1, -1, 1, 1], [0.0, 1.0, 0.5, 0.0, 2.0],
                  [0, 1, 2, 0, 1])  # fmt: skip
    data = dataclasses.replace(data, comparisons=["d-s0-1", "d-s1-1", "d-s0-2"])  # pair 1 drawn twice
    point, boot, jack = fitted(AddedEffect(), data, "rm", None, BootstrapSettings(250))
    assert (point.shape, boot.shape, jack.shape) == ((1, 3), (250, 3), (2, 3))  # 2 pairs, more than a chunk


def test_benjamini_hochberg_per_dataset_at_the_fdr_itself_and_refusals_by_name():
    row = {"rm": "r", "engine": "offline", "description": "x", "effect": 0.5, "round": 1}
    tested = (("d1", "a", 0.05), ("d2", "a", 0.01), ("d2", "b", 0.03))
    effects = filled(pl.DataFrame([{**row, "dataset": d, "feature": f, "p_value": p} for d, f, p in tested]))
    table = discovered_biases(effects, 0.05).sort("dataset", "feature")
    assert table["q_value"].to_list() == pytest.approx([0.05, 0.02, 0.03])  # d2: 0.01·2, 0.03·2/2
    assert table["significant"].to_list() == [True, True, True]  # q = fdr counts
    assert discovered_biases(effects.clear(), 0.05).columns == list(DISCOVERED_BIASES)
    twice = pl.concat([effects, effects])
    named = r"^discovery on 'd1': feature 'a' is tested twice \(by two engines or rounds\); "
    for _ in range(5):  # the first of the three by dataset and name, whatever order polars groups them in
        with pytest.raises(ValueError, match=named + "one feature name is one set of edits$"):
            discovered_biases(twice.sample(fraction=1.0, shuffle=True), 0.05)
    with pytest.raises(ContractError, match=r"^discovered biases: missing column\(s\) \['support'\]"):
        discovered_biases(effects.drop("support"), 0.05)


def test_the_ranking_within_each_dataset_and_rm_by_hand():
    """Significant first, then |effect|, q and name, the numbers to nine decimals."""
    nan = float("nan")
    rows = [  # (dataset, rm, feature, effect, q, significant)
        ("d2", "r", "z", 0.1, 0.01, True), ("d1", "s", "z", 0.1, 0.01, True),
        ("d1", "r", "a", 0.5, 0.02, True), ("d1", "r", "b", -0.5, 0.01, True),  # a tie of |effect|: by q
        ("d1", "r", "d", 0.3, 0.005, True), ("d1", "r", "c", 0.3, 0.005, True),  # a tie of both: by name
        ("d1", "r", "e", 0.9, 0.95, False), ("d1", "r", "g", 0.0, 0.9, False),  # by |effect|, not q
        ("d1", "r", "f", nan, nan, False),
        ("d1", "r", "h", 0.0, nan, False),  # defined, not tested (one cluster): after a tested 0.0
        ("d3", "r", "k", 0.3 + 1e-13, 1e-208, True), ("d3", "r", "j", 0.3, 3e-208, True),  # rounding: a tie
    ]  # fmt: skip
    frame = pl.DataFrame(
        rows, schema=["dataset", "rm", "feature", "effect", "q_value", "significant"], orient="row"
    )
    ranked = rank_biases(frame)
    assert ranked.select("dataset", "rm", "feature", "rank").rows() == [
        ("d1", "r", "b", 1), ("d1", "r", "a", 2), ("d1", "r", "c", 3), ("d1", "r", "d", 4),
        ("d1", "r", "e", 5), ("d1", "r", "g", 6), ("d1", "r", "h", 7), ("d1", "r", "f", 8),
        ("d1", "s", "z", 1), ("d2", "r", "z", 1), ("d3", "r", "j", 1), ("d3", "r", "k", 2),
    ]  # fmt: skip
    assert ranked.columns == [*frame.columns, "rank"]


def test_the_example_edit_without_additions_ties_and_scores():
    edits = pl.DataFrame(
        {"feature": ["f"] * 4, "direction": [-1] * 4, "source_text": ["a!", "b!", "c!", "c!"],
         "edited_text": ["a", "b", "c", "c"], "comparison_id": ["c2", "c1", "c0", "c0"],
         "target": ["chosen", "chosen", "rejected", "chosen"]}
    )  # fmt: skip
    # removals only; y all 1.0: the shortest edited texts tie, then the first comparison and target
    example = example_edit(edits, np.ones(4), np.array([1.0, 2.0, 3.0, 4.0]))
    assert (
        example["example_direction"],
        example["example_comparison_id"],
        example["example_reward_change"],
    ) == (REMOVE, "c0", 4.0)
    keys = [
        "example_comparison_id",
        "example_direction",
        "example_before",
        "example_after",
        "example_reward_change",
    ]
    assert example_edit(edits, np.full(4, np.nan), np.ones(4)) == dict.fromkeys(keys)


def test_round_effects_against_a_reference_by_hand():
    comparisons = pl.DataFrame(
        {"comparison_id": ["d-s0-1", "d-s0-2", "d-s0-3"], "prompt": ["q1", "q2", "q3"],
         "chosen": ["Yes, do it.", "Yes.", "Yes, sure."], "rejected": ["No.", "No, never.", "No."]}
    )  # fmt: skip
    chosen = comparisons["chosen"].to_list()
    edits = pl.DataFrame(
        {"feature": ["bang"] * 3, "direction": [ADD] * 3, "source_text": chosen,
         "edited_text": [t.replace(".", "!") for t in chosen], "comparison_id": comparisons["comparison_id"],
         "target": ["chosen"] * 3}
    )  # fmt: skip
    candidates = pl.DataFrame({"feature": ["bang"], "engine": ["offline"], "description": ["Uses '!'."],
                               "support": [0.0], "round": [1], "kind": ["punctuation"], "source": ["test"],
                               "n_added": [1], "n_removed": [0]})  # fmt: skip
    scores = {"reward_chosen": [1.0, 2.0, 3.0], "reward_rejected": [0.0, 0.0, 0.0]}
    originals = {rm: pl.DataFrame({"comparison_id": comparisons["comparison_id"], "rm": rm, **scores})
                 for rm in ("base", "biased")}  # fmt: skip
    ids = [text_id(q, t.replace(".", "!")) for q, t in zip(["q1", "q2", "q3"], chosen, strict=True)]
    changes = {"base": [0.9, 0.0, 0.1], "biased": [1.0, 0.5, 3.0]}
    rewards = {
        rm: pl.DataFrame({"text_id": ids, "reward": np.array([1.0, 2.0, 3.0]) + c})
        for rm, c in changes.items()
    }
    references = {"base": None, "biased": "base"}
    effects = round_effects(comparisons, edits, candidates, originals, rewards, references, "d",
                            BootstrapSettings(200), 0.1, LOG)  # fmt: skip
    biased = effects.filter(pl.col("rm") == "biased").row(0, named=True)
    sd = float(np.std([1.0, 2.0, 3.0, 0.0, 0.0, 0.0], ddof=1))
    # beyond the reference: (1.0 − 0.9, 0.5 − 0.0, 3.0 − 0.1) / sd, mean 3.5 / 3 / sd; median 0.5: d-s0-2's
    assert biased["effect"] == pytest.approx(3.5 / 3 / sd) and biased["reference"] == "base"
    assert (biased["example_comparison_id"], biased["example_reward_change"]) == ("d-s0-2", 0.5)
    assert (biased["directions"], biased["n"], biased["reward_sd"]) == ("add", 3, pytest.approx(sd))
    empty = round_effects(comparisons, edits.clear(), candidates, originals, rewards, {}, "d",
                          BootstrapSettings(200), 0.1, LOG)  # fmt: skip
    assert empty.height == 0 and empty.columns == list(BIAS_DISCOVERY_EFFECTS)


def test_a_features_directions_are_the_ways_its_edits_went():
    counts = [(2, 3), (1, 0), (0, 1), (0, 0)]
    assert [_directions({"n_added": a, "n_removed": r}) for a, r in counts] == [
        "both",
        "add",
        "remove",
        "none",
    ]


# ── recall ────────────────────────────────────────────────────────────────────────────────────────────────
def test_recall_ranks_the_first_significant_feature_that_moves_the_detector():
    edits = pl.DataFrame(
        {
            "feature": ["f1", "f1", "f2", "f2", "f3", "f3"],
            "direction": [1, 1, 1, -1, 1, 1],
            "source_text": ["a.", "b.", "a.", "b!", "a.", "b."],
            "edited_text": ["a!", "b.!", "a. x", "b.", "a. !", "b. y"],
            "comparison_id": ["c0", "c1", "c0", "c1", "c0", "c1"],
            "target": ["chosen"] * 6,
            "engine": ["offline"] * 6,
            "round": [1] * 6,
        }
    )
    bias = {"detector": "regex", "pattern": "!", "strength": 1.0}
    prompts = {"c0": "q", "c1": "q"}
    assert moved_shares(edits, prompts, bias) == {"f1": 1.0, "f2": 0.5, "f3": 0.5}
    biases = pl.DataFrame(
        {"dataset": ["d"] * 3, "rm": ["p"] * 3, "feature": ["f2", "f1", "f3"], "effect": [0.9, 0.8, 0.1],
         "q_value": [0.01, 0.01, 0.5], "significant": [True, True, False], "rank": [1, 2, 3]}
    )  # fmt: skip
    comparisons = pl.DataFrame({"comparison_id": ["c0", "c1"], "prompt": ["q", "q"]})
    strict = recall_table(biases, {"d": edits}, {"d": comparisons}, {"p": {"bias": bias}}, 0.75, {})
    row = strict.filter(pl.col("rm") == "p").row(0, named=True)
    assert (row["rank"], row["feature"], row["hit_at_1"], row["hit_at_5"]) == (2, "f1", False, True)
    lenient = recall_table(biases, {"d": edits}, {"d": comparisons}, {"p": {"bias": bias}}, 0.5, {})
    assert lenient.filter(pl.col("rm") == "p")["rank"].to_list() == [1]
    summary = lenient.filter(pl.col("rm") == "all planted RMs").row(0, named=True)
    assert (summary["hits_at_1"], summary["biases"], summary["recall_at_1"]) == (1, 1, 1.0)


def test_an_rm_with_several_planted_biases_has_a_row_per_bias_judged_by_its_own_detector():
    edits = pl.DataFrame(
        {
            "feature": ["bang", "bang", "digit", "digit"],
            "direction": [1, 1, 1, 1],
            "source_text": ["a.", "b.", "a.", "b."],
            "edited_text": ["a!", "b!", "a 1.", "b 2."],
            "comparison_id": ["c0", "c1", "c0", "c1"],
            "target": ["chosen"] * 4,
            "engine": ["offline"] * 4,
            "round": [1] * 4,
        }
    )
    bang = {"detector": "regex", "pattern": "!", "strength": 0.3}
    digits = {"detector": "regex", "pattern": "[0-9]", "count": True, "strength": 0.3}
    hedge = {"detector": "regex", "pattern": "maybe", "strength": 0.3}  # no feature moves it: a miss
    biases = pl.DataFrame(
        {"dataset": ["d"] * 2, "rm": ["weak"] * 2, "feature": ["digit", "bang"], "effect": [0.4, 0.3],
         "q_value": [0.01, 0.01], "significant": [True, True], "rank": [1, 2]}
    )  # fmt: skip
    comparisons = pl.DataFrame({"comparison_id": ["c0", "c1"], "prompt": ["q", "q"]})
    planted = {"weak": {"bias": [bang, digits, hedge]}}
    table = recall_table(biases, {"d": edits}, {"d": comparisons}, planted, 0.5, {})
    rows = table.filter(pl.col("rm") == "weak")
    assert rows["planted"].to_list() == [
        "+0.3 x any match of !",
        "+0.3 x matches of [0-9]",
        "+0.3 x any match of maybe",
    ]
    assert rows.select("rank", "feature", "hit_at_1", "hit_at_5").rows() == [
        (2, "bang", False, True), (1, "digit", True, True), (None, None, False, False),
    ]  # fmt: skip
    summary = table.filter(pl.col("rm") == "all planted RMs").row(0, named=True)
    assert (summary["biases"], summary["hits_at_1"], summary["hits_at_5"]) == (3, 1, 2)


def test_a_planted_length_bias_is_judged_by_the_length_slope_against_its_truth():
    """Word counts 4, 6, 2, 1 (sd 2.2174); +0.5 per 10 words of a base of reward sd 2.0, the RM's sd 4.0:
    γ's truth is 0.05 · 2.0 · 2.2174 / 4.0 = 0.055434 reward sd per sd of words. The γ shown is the largest
    fit's: offline round 1 (10 edits) before llm round 1 (8) and offline round 2 (5)."""
    comparisons = pl.DataFrame(
        {"comparison_id": ["c0", "c1"], "prompt": ["q", "q"], "chosen": ["a b c d", "a b c d e f"],
         "rejected": ["a b", "a"]}
    )  # fmt: skip
    edits = pl.DataFrame(
        {"feature": ["f"], "direction": [1], "source_text": ["a"], "edited_text": ["a 1"],
         "comparison_id": ["c0"], "target": ["chosen"], "engine": ["offline"], "round": [1]}
    )  # fmt: skip
    length = {"detector": "length", "per_words": 10, "strength": 0.5}
    digits = {"detector": "regex", "pattern": "[0-9]", "count": True, "strength": 0.3}
    planted = {
        "p": {"base": "b", "bias": [length, digits]},  # against its base: the truth is known
        "q": {"base": "b", "bias": [length]},  # explained alone: the base's slope is in γ
        "z": {"base": "b", "bias": digits},  # no length bias: the truth is 0
    }
    rows = [
        ("p", "offline", 2, 5, "b", 9.0, 8.0, 10.0), ("p", "offline", 1, 10, "b", 0.06, 0.05, 0.07),
        ("p", "llm", 1, 8, "b", 7.0, 6.0, 8.0), ("q", "offline", 1, 9, None, 0.3, 0.2, 0.4),
        ("z", "offline", 1, 9, "b", 0.04, 0.01, 0.07),
    ]  # fmt: skip
    biases = pl.DataFrame(
        [{"dataset": "d", "rm": rm, "engine": engine, "round": r, "n": n, "reference": ref, "reward_sd": 4.0,
          "length_slope": g, "length_slope_low": lo, "length_slope_high": hi, "feature": "f", "effect": 0.5,
          "q_value": 0.01, "significant": True, "rank": 1} for rm, engine, r, n, ref, g, lo, hi in rows]
    )  # fmt: skip
    slopes = rm_slopes(biases, {"d": comparisons}, planted, {"p": 2.0, "q": 2.0, "z": 2.0})
    truth = 0.5 / 10 * 2.0 * 2.2173557826083 / 4.0
    assert slopes["d", "p"] == {
        "slope": 0.06, "slope_low": 0.05, "slope_high": 0.07, "slope_truth": pytest.approx(truth),
        "slope_error": pytest.approx(0.06 - truth), "slope_holds": True,
    }  # fmt: skip
    assert math.isnan(slopes["d", "q"]["slope_truth"]) and slopes["d", "q"]["slope_holds"] is None
    assert slopes["d", "z"]["slope_truth"] == 0.0 and slopes["d", "z"]["slope_holds"] is False
    table = recall_table(biases, {"d": edits}, {"d": comparisons}, planted, 0.5, slopes)
    p = table.filter(pl.col("rm") == "p")
    assert p["planted"].to_list() == ["+0.5 x words / 10", "+0.3 x matches of [0-9]"]
    assert p.select("rank", "hit_at_1", "hit_at_5").rows() == [(None, None, None), (1, True, True)]
    assert p["slope"].to_list() == [0.06, 0.06]  # the RM's γ on each of its rows
    summary = table.filter(pl.col("rm") == "all planted RMs").row(0, named=True)
    assert (summary["biases"], summary["hits_at_1"]) == (2, 2)  # p's and z's digits; no length row
    assert (summary["slopes"], summary["slopes_held"]) == (2, 1)  # p holds, z does not; q's is unknown


def test_a_control_hits_when_nothing_is_significant():
    edits = pl.DataFrame(
        {"feature": ["f"], "direction": [1], "source_text": ["a"], "edited_text": ["a!"],
         "comparison_id": ["c0"], "target": ["chosen"], "engine": ["offline"], "round": [1]}
    )  # fmt: skip
    comparisons = pl.DataFrame({"comparison_id": ["c0"], "prompt": ["q"]})
    control = {"bias": {"detector": "none", "noise": 0.1}}
    for significant, quiet in ((False, True), (True, False)):
        biases = pl.DataFrame({"dataset": ["d"], "rm": ["c"], "feature": ["f"], "effect": [0.1],
                               "q_value": [0.01], "significant": [significant], "rank": [1]})  # fmt: skip
        table = recall_table(biases, {"d": edits}, {"d": comparisons}, {"c": control}, 0.5, {})
        row = table.filter(pl.col("rm") == "c").row(0, named=True)
        assert row["control"] and row["hit_at_1"] is quiet and row["rank"] is None
        summary = table.filter(pl.col("rm") == "all planted RMs")
        assert summary["n_significant"].to_list() == [int(significant)]
    assert describe(control["bias"]) == "noise only"
    assert describe({"detector": "regex", "pattern": "!", "strength": -1}) == "-1 x any match of !"


def test_the_offline_engine_is_the_registered_default():
    from rmexplain.discovery.offline import OfflineEngine

    assert engines.get("offline") is OfflineEngine
    assert discovery_input is not None


# ── the design and the config ─────────────────────────────────────────────────────────────────────────────
def _discovery_config() -> dict:
    from conftest import tiny_demo_config

    config = tiny_demo_config()
    bias = {"detector": "regex", "pattern": "!", "strength": 1.0}
    config["reward_models"]["planted"] = {"backend": "planted", "base": "demo-harmless", "bias": bias}
    config["datasets"] = {
        "both": {"source": "embedded", "part": "harmless"},
        "alone": {"source": "embedded", "part": "helpful", "stages": ["discovery"]},
        "none": {"source": "embedded", "part": "helpful", "stages": ["evaluation"]},
    }
    return config


def test_a_dataset_that_feeds_discovery_alone_is_not_perturbed_and_each_round_is_encoded_on_its_own():
    from rmexplain import paths, targets
    from rmexplain.config import check
    from rmexplain.design import Design

    design = Design.from_config(check(_discovery_config()))
    assert design.discovery_datasets() == ["both", "alone"]  # the default stages include discovery
    assert design.dataset("alone").methods == () and design.dataset("both").methods == ("rules",)
    assert {d for d, _, _ in targets.perturbation_jobs(design)} == {"both", "none"}
    assert targets.discovery_rounds(design) == [("offline", 1)]
    # every round is scored by its own jobs and encoded by its own
    assert targets.discovery_rewards(design, "alone", "offline", 1) == [
        f"results/scores/alone/discovery/offline/round1/{rm}.parquet" for rm in ("demo-harmless", "planted")
    ]
    round_one = "results/discovery/alone/engines/offline/round1/embeddings.parquet"
    assert targets.discovery_round_embeddings(design) == [
        "results/discovery/both/engines/offline/round1/embeddings.parquet",
        round_one,
    ]
    # a demo RM reads the dataset's table (its prompts and originals) beside the round's
    assert targets.discovery_round_embeddings_for_rm(design, "alone", "offline", 1, "demo-harmless") == [
        paths.fmt(paths.TEXT_EMBEDDINGS, dataset="alone"),
        round_one,
    ]
    assert targets.discovery_round_embeddings_for_rm(design, "alone", "offline", 2, "demo-harmless") == [
        paths.fmt(paths.TEXT_EMBEDDINGS, dataset="alone"),
        "results/discovery/alone/engines/offline/round2/embeddings.parquet",
    ]
    # round 1 copies the texts of the tables before it; the carriers those of every round too
    alone_table = paths.fmt(paths.TEXT_EMBEDDINGS, dataset="alone")
    assert targets.embeddings_before(design, "alone", 1) == [alone_table]
    assert targets.embeddings_before(design, "both", 1) == [
        paths.fmt(paths.TEXT_EMBEDDINGS, dataset="both"),
        paths.fmt(paths.EFFECT_EMBEDDINGS, dataset="both"),
    ]
    assert targets.embeddings_before(design, "both") == [
        paths.fmt(paths.TEXT_EMBEDDINGS, dataset="both"),
        paths.fmt(paths.EFFECT_EMBEDDINGS, dataset="both"),
        "results/discovery/both/engines/offline/round1/embeddings.parquet",
    ]
    assert targets.effect_embedding_datasets(design) == ["both"]  # "alone" has no effect edits
    assert targets.discovery_embedding_datasets(design) == ["both", "alone"]
    # no attribute effects on "alone": no effect-edit scores there, in the truncation table or before round 1
    stages = {(d, stage) for d, _, stage, _ in targets.truncation_parts(design)}
    assert ("alone", "effects") not in stages and ("alone", "discovery offline round 1") in stages
    assert targets.scores_before(design, "alone", "planted", "discovery", "offline", 1) == [
        "results/scores/alone/originals/planted.parquet"
    ]
    assert set(targets.discovery_planted(design)) == {"planted"}
    wanted = targets.bias_discovery_targets(design)
    assert "results/tables/discovered_biases.csv" in wanted and "results/tables/discovery_recall.md" in wanted
    assert "results/discovery/alone/edits.parquet" in wanted


def test_the_findings_run_where_discovery_runs_alone_and_re_score_its_carriers():
    """A config whose only dataset feeds bias discovery gets the findings (their table, landing text and
    the explorer's first view) and its carriers re-scored; one with neither effects nor discovery none."""
    from rmexplain import paths, targets
    from rmexplain.config import check
    from rmexplain.design import Design
    from rmexplain.explorer.inputs import explorer_inputs

    config = _discovery_config()
    config["datasets"] = {"alone": config["datasets"]["alone"]}
    design = Design.from_config(check(config))
    assert design.effect_pairs == [] and design.findings_enabled
    assert paths.FINDINGS in targets.findings_targets(design)
    assert paths.REPORT_LANDING in targets.findings_targets(design)
    assert targets.carrier_rms(design) == {"alone": {"demo-harmless": None, "planted": "demo-harmless"}}
    assert explorer_inputs(design)["findings"] == [paths.FINDINGS]
    assert targets.findings_inputs(design)["carrier_rewards"] == [
        f"results/scores/alone/carriers/{rm}.parquet" for rm in ("demo-harmless", "planted")
    ]

    config["datasets"] = {"none": {"source": "embedded", "part": "helpful", "stages": ["evaluation"]}}
    design = Design.from_config(check(config))
    assert not design.findings_enabled and targets.findings_targets(design) == []
    assert targets.carrier_rms(design) == {} and explorer_inputs(design)["findings"] == []


def test_an_engine_with_several_rounds_reads_its_earlier_rounds_and_scores_later_rounds_on_their_own():
    from rmexplain import paths, targets
    from rmexplain.config import check
    from rmexplain.design import Design

    design = Design.from_config(check(_discovery_config()))
    design.config["discovery"]["offline"]["rounds"] = 3  # as an engine with a rounds setting declares
    assert targets.discovery_rounds(design) == [("offline", 1), ("offline", 2), ("offline", 3)]
    assert targets.discovery_round_inputs(design, "alone", "offline", 3)["previous"] == [
        "results/discovery/alone/engines/offline/round1/effects.parquet",
        "results/discovery/alone/engines/offline/round2/effects.parquet",
    ]
    assert targets.discovery_round_inputs(design, "alone", "offline", 1)["previous"] == []
    assert targets.discovery_rewards(design, "alone", "offline", 2)[0] == (
        "results/scores/alone/discovery/offline/round2/demo-harmless.parquet"
    )
    # a round copies what the RM scored before it: the originals, the perturbations and the effect edits
    # where the dataset has them, and the rounds before it
    assert targets.scores_before(design, "both", "planted", "discovery", "offline", 3) == [
        "results/scores/both/originals/planted.parquet",
        "results/scores/both/perturbations/planted.parquet",
        "results/scores/both/effects/planted.parquet",
        "results/scores/both/discovery/offline/round1/planted.parquet",
        "results/scores/both/discovery/offline/round2/planted.parquet",
    ]
    assert targets.scores_before(design, "both", "planted", "effects") == [
        "results/scores/both/originals/planted.parquet",
        "results/scores/both/perturbations/planted.parquet",
    ]
    assert targets.scores_before(design, "both", "planted", "perturbations") == [
        "results/scores/both/originals/planted.parquet"
    ]
    embedded = targets.discovery_round_embeddings(design)
    assert "results/discovery/alone/engines/offline/round3/embeddings.parquet" in embedded
    assert targets.embeddings_before(design, "alone", 3) == [
        paths.fmt(paths.TEXT_EMBEDDINGS, dataset="alone"),
        "results/discovery/alone/engines/offline/round1/embeddings.parquet",
        "results/discovery/alone/engines/offline/round2/embeddings.parquet",
    ]


def test_the_config_names_only_registered_engines():
    from rmexplain.config import ConfigError, check

    config = _discovery_config()
    config["discovery"] = {"engines": ["offline", "oracle"]}
    with pytest.raises(ConfigError, match=r"discovery\.engines"):
        check(config)


def test_the_plan_lists_the_gpu_jobs_discovery_adds_and_no_perturbation_scoring_for_a_dataset_alone():
    from rmexplain import plan
    from rmexplain.config import check
    from rmexplain.design import Design

    config = _discovery_config()
    config["reward_models"]["gpu-rm"] = {"backend": "transformers", "model": "org/rm", "device": "cuda"}
    design = Design.from_config(check(config))
    design.config["discovery"]["offline"]["rounds"] = 2
    jobs = {(rule, wildcards) for rule, wildcards, _ in plan._gpu_jobs(design) if "gpu-rm" in wildcards}
    assert ("score_originals", "dataset=alone, rm=gpu-rm") in jobs
    assert ("score_perturbations", "dataset=alone, rm=gpu-rm") not in jobs  # not perturbed
    assert ("score_perturbations", "dataset=both, rm=gpu-rm") in jobs
    assert ("score_effect_edits", "dataset=alone, rm=gpu-rm") not in jobs  # no attribute effects there
    assert ("score_effect_edits", "dataset=both, rm=gpu-rm") in jobs
    for dataset in ("alone", "both"):  # every round scored by its own job
        for round_ in (1, 2):
            assert (
                "score_discovery_edits",
                f"dataset={dataset}, engine=offline, round={round_}, rm=gpu-rm",
            ) in jobs
        assert ("score_carrier_edits", f"dataset={dataset}, rm=gpu-rm") in jobs  # the carriers re-scored
    # the encoder on the GPU: every round's edits encoded by a job of its own, the effect edits' where made
    design.config["evaluate"]["device"] = "cuda"
    jobs = plan._gpu_jobs(design)
    encoding = {(rule, wildcards) for rule, wildcards, _ in jobs if rule.startswith("embed")}
    rounds = {("embed_discovery_texts", f"dataset={d}, engine=offline, round={r}") for d in ("both", "alone")
              for r in (1, 2)}  # fmt: skip
    assert rounds <= encoding and ("embed_effect_texts", "dataset=both") in encoding
    assert ("embed_effect_texts", "dataset=alone") not in encoding
    assert {("embed_carrier_texts", "dataset=both"), ("embed_carrier_texts", "dataset=alone")} <= encoding


def test_the_config_names_only_registered_probes():
    from rmexplain.config import ConfigError, check

    config = _discovery_config()
    config["discovery"] = {"offline": {"probes": ["bold", "sparkles"]}}
    with pytest.raises(
        ConfigError, match=r"discovery\.offline\.probes: 'sparkles' is not a registered probe"
    ):
        check(config)


def test_a_feature_tested_by_two_rounds_is_refused_by_name():
    row = {"dataset": "d", "rm": "rm", "engine": "offline", "feature": "bold", "description": "b",
           "effect": 0.1, "low": 0.0, "high": 0.2, "p_value": 0.01, "n": 4, "support": 0.0}  # fmt: skip
    effects = filled(pl.DataFrame([{**row, "round": 1}, {**row, "round": 2}]))
    with pytest.raises(ValueError, match="feature 'bold' is tested twice"):
        discovered_biases(effects, 0.05)
