"""Word classes merged from the words round 1 found alike: the offline engine's second round
(rmexplain.discovery.merging, mining.WordClass), by hand."""

from __future__ import annotations

import copy
import logging

import numpy as np
import polars as pl
import pytest
from conftest import REPO
from test_discovery_edit_words import edits

from rmexplain.config import load
from rmexplain.design import Design
from rmexplain.discovery.base import RoundContext
from rmexplain.discovery.edit_words import EDIT_SCHEMA
from rmexplain.discovery.merging import (
    MergeSettings,
    WordEffect,
    alike_groups,
    embedding_similarity,
    nested,
    screened_word_classes,
    significant_words,
    with_edited_words,
    word_classes,
)
from rmexplain.discovery.mining import WordClass, feature_named
from rmexplain.discovery.offline import NOTHING_TO_TEST, OfflineEngine
from rmexplain.findings.carriers import class_named
from rmexplain.findings.language import feature_phrase
from rmexplain.schemas import BIAS_DISCOVERY_EFFECTS, conform, polars_schema
from rmexplain.settings import schema_defaults

LOG = logging.getLogger("test_discovery_merging")
SETTINGS = MergeSettings.of({}, 0.05)  # the schema's defaults: 0.5, 2, 10


def _merge(**given: float) -> MergeSettings:
    return MergeSettings.of(given, 0.05)


def _effects(rows: list[tuple[str, str, float, float]]) -> pl.DataFrame:
    """Round-1 effects: (RM, feature, effect, p-value) rows of the offline engine on dataset "d"."""
    full = [
        {"dataset": "d", "rm": rm, "engine": "offline", "feature": feature, "description": feature,
         "effect": effect, "low": effect - 0.1, "high": effect + 0.1, "p_value": p, "n": 40, "support": 0.5,
         "round": 1, "kind": "words" if feature.startswith("words ") else "format", "source": "mined",
         "directions": "both", "n_comparisons": 20, "pairs": 20, "reference": None, "reward_sd": 1.0,
         "example_comparison_id": None, "example_direction": None, "example_before": None,
         "example_after": None, "example_reward_change": None}
        for rm, feature, effect, p in rows
    ]  # fmt: skip
    return conform(
        pl.DataFrame(full, schema=polars_schema(BIAS_DISCOVERY_EFFECTS)), BIAS_DISCOVERY_EFFECTS, "e"
    )


def _words(*pairs: tuple[str, float]) -> list[WordEffect]:
    return [WordEffect(p, e) for p, e in pairs]


def test_alike_words_share_a_sign_a_size_and_a_meaning():
    found = _words(("maybe", -0.6), ("perhaps", -0.5), ("great", -0.45), ("possibly", 0.5), ("likely", -0.2))
    similarity = np.array([
        [1.0, 0.9, 0.2, 0.9, 0.8],
        [0.9, 1.0, 0.2, 0.8, 0.8],
        [0.2, 0.2, 1.0, 0.2, 0.2],
        [0.9, 0.8, 0.2, 1.0, 0.8],
        [0.8, 0.8, 0.2, 0.8, 1.0],
    ])  # fmt: skip
    # "great": unrelated; "possibly": the other sign; "likely": 0.2 is under half of 0.6
    assert alike_groups(found, similarity, SETTINGS) == [["maybe", "perhaps"]]
    assert alike_groups(found, similarity, _merge(max_ratio=3.0)) == [["maybe", "perhaps", "likely"]]
    assert alike_groups(found, similarity, _merge(min_similarity=0.1)) == [["maybe", "perhaps", "great"]]


def test_a_word_joins_through_any_member_and_the_first_members_effect_bounds_the_class():
    found = _words(("a", 1.0), ("b", 0.9), ("c", 0.8), ("e", 0.6), ("f", 0.55), ("d", 0.45))
    # a chain a-b-c (c relates to b only); d relates to c, but its effect is under half of a's: a's class
    # stops at c; e then opens the next, which takes f and d (0.45 is within twice 0.6)
    similarity = np.eye(6)
    for i, j in ((0, 1), (1, 2), (2, 5), (5, 3), (5, 4), (3, 4)):
        similarity[i, j] = similarity[j, i] = 0.9
    assert alike_groups(found, similarity, SETTINGS) == [["a", "b", "c"], ["e", "f", "d"]]
    # c relates to b only, and b comes after it: c joins on the second pass, the class in |effect| order
    chained = np.array([[1.0, 0.0, 0.9], [0.0, 1.0, 0.9], [0.9, 0.9, 1.0]])
    assert alike_groups(_words(("a", 1.0), ("c", 0.9), ("b", 0.8)), chained, SETTINGS) == [["a", "c", "b"]]
    assert alike_groups(found[:1], np.ones((1, 1)), SETTINGS) == []
    assert alike_groups(found[:3], np.eye(3), SETTINGS) == []


def test_the_bounds_hold_at_their_edges():
    # half the first member's effect, and a cosine of exactly min_similarity, still join
    found = _words(("a", -1.0), ("b", -0.5), ("c", -0.49))
    similarity = np.full((3, 3), 0.5)
    assert alike_groups(found, similarity, SETTINGS) == [["a", "b"]]
    assert alike_groups(found, np.full((3, 3), 0.49), SETTINGS) == []


def test_one_class_per_member_set_ranked_by_its_largest_first_member():
    previous = _effects([
        ("a", 'words "maybe"', -0.3, 1e-6), ("a", 'words "perhaps"', -0.3, 1e-6),
        ("b", 'words "maybe"', -0.9, 1e-6), ("b", 'words "perhaps"', -0.8, 1e-6),
        ("c", 'words "dangerous"', 0.5, 1e-6), ("c", 'words "harmful"', 0.5, 1e-6),
    ])  # fmt: skip
    related = lambda w: np.ones((len(w),) * 2)  # noqa: E731
    assert word_classes(previous, SETTINGS, related) == [("maybe", "perhaps"), ("dangerous", "harmful")]
    assert word_classes(previous, _merge(max_classes=1), related) == [("maybe", "perhaps")]
    # the largest over the RMs, whichever RM comes first
    previous = previous.with_columns(rm=pl.col("rm").replace({"a": "b", "b": "a"})).sort("rm")
    assert word_classes(previous, SETTINGS, related) == [("maybe", "perhaps"), ("dangerous", "harmful")]
    # an RM with one significant word has no class; the RMs after it are still merged
    one_word = _effects([
        ("a", 'words "maybe"', -0.5, 1e-6),
        ("c", 'words "dangerous"', 0.5, 1e-6), ("c", 'words "harmful"', 0.5, 1e-6),
    ])  # fmt: skip
    assert word_classes(one_word, SETTINGS, related) == [("dangerous", "harmful")]
    # ranked by its first member's effect, not another member's: −0.9 ranks above 0.5, −0.46 would not
    previous = _effects([
        ("a", 'words "maybe"', -0.9, 1e-6), ("a", 'words "perhaps"', -0.46, 1e-6),
        ("c", 'words "dangerous"', 0.5, 1e-6), ("c", 'words "harmful"', 0.5, 1e-6),
    ])  # fmt: skip
    assert word_classes(previous, SETTINGS, related) == [("maybe", "perhaps"), ("dangerous", "harmful")]


def test_nothing_to_merge_where_round_one_found_no_word():
    previous = _effects(
        [
            ("rm", 'words "maybe"', 0.0, 1e-6),  # no effect: nothing to merge on
            ("rm", 'words "perhaps"', -0.5, 1e-6),
            ("rm", "my_words", -0.5, 1e-6),  # a plugin's feature of kind words, no mined name
        ]
    ).with_columns(kind=pl.lit("words"))
    assert significant_words(previous, 0.05) == {"rm": _words(("perhaps", -0.5))}
    assert significant_words(previous.clear(), 0.05) == {}
    pronouns = _effects([
        ("rm", 'words "i"', -0.8, 1e-6), ("rm", 'words "and i"', -0.8, 1e-6),
        ("rm", 'words "really"', 0.5, 1e-6), ("rm", 'words "maybe"', -0.5, 1e-6),
    ])  # fmt: skip
    assert significant_words(pronouns, 0.05) == {"rm": _words(("maybe", -0.5))}  # the rest: classes' words
    assert word_classes(previous.clear(), SETTINGS, embedding_similarity({})) == []


def test_a_phrase_holding_a_members_words_joins_no_class_with_it():
    assert nested("i can", "i") and nested("i", "i can") and nested("can i help", "i help")
    assert not nested("i can help", "i help")
    assert not nested("in", "i") and nested("so i can", "i can")
    found = _words(("i", -0.8), ("i can", -0.7), ("me", -0.6))
    assert alike_groups(found, np.ones((3, 3)), SETTINGS) == [["i", "me"]]


def test_only_significant_word_features_of_each_rm_are_merged_by_bh_per_rm():
    previous = _effects([
        ("rm", 'words "maybe"', -0.6, 1e-6), ("rm", 'words "perhaps"', -0.5, 1e-6),
        ("rm", 'words "possibly"', -0.4, 0.2),  # BH over the rm's 4 features: q = 0.2·4/4 > 0.05
        ("rm", "bold", -0.9, 1e-6),  # not a word feature
        ("other", 'words "maybe"', 0.3, 0.02), ("other", 'words "perhaps"', 0.3, 0.5),  # q 0.04, 0.5
    ])  # fmt: skip
    found = significant_words(previous, 0.05)
    assert found == {"rm": _words(("maybe", -0.6), ("perhaps", -0.5)), "other": _words(("maybe", 0.3))}
    # the RMs in name order, whatever their words
    words = _effects([("b", 'words "apple"', 0.5, 1e-6), ("a", 'words "zebra"', 0.5, 1e-6)])
    assert list(significant_words(words, 0.05)) == ["a", "b"]
    assert significant_words(previous, 0.3)["rm"] == _words(
        ("maybe", -0.6), ("perhaps", -0.5), ("possibly", -0.4)
    )


def test_the_classes_of_every_rm_related_by_the_bundled_encoder():
    previous = _effects([
        ("hedges", 'words "maybe"', -0.6, 1e-6), ("hedges", 'words "perhaps"', -0.5, 1e-6),
        ("hedges", 'words "possibly"', -0.45, 1e-6), ("hedges", 'words "dog"', -0.5, 1e-6),
        ("self", 'words "dangerous"', -0.8, 1e-6), ("self", 'words "harmful"', -0.7, 1e-6),
        ("self", 'words "maybe"', -0.7, 1e-6),
    ])  # fmt: skip
    classes = word_classes(previous, SETTINGS, embedding_similarity({}))  # the bundled all-MiniLM-L6-v2
    # all-MiniLM-L6-v2: maybe/perhaps/possibly 0.85-0.94, dog 0.12; dangerous/harmful 0.78, maybe 0.18-0.24
    assert classes == [("dangerous", "harmful"), ("maybe", "perhaps", "possibly")]
    related = lambda w: np.ones((len(w),) * 2)  # noqa: E731
    # every word related: one class per RM, the one whose first member is largest kept; harmful and maybe
    # tie at -0.7, by phrase
    assert word_classes(previous, _merge(max_classes=1), related) == [("dangerous", "harmful", "maybe")]


def test_a_class_takes_the_screened_words_its_rm_moves_its_way_that_relate_to_a_member():
    previous = _effects([
        ("hedges", 'words "maybe"', -0.6, 1e-6), ("hedges", 'words "perhaps"', -0.5, 1e-6),
        ("other", 'words "maybe"', 0.4, 1e-6),
    ])  # fmt: skip
    classes = [("maybe", "perhaps")]
    screened = [
        ("probably", "hedges", -5.0),  # joins: the class's way for hedges, related to "maybe"
        ("possibly", "hedges", 3.0),  # the other way
        ("likely", "other", -4.0),  # other rewards "maybe": "likely" moving it down is not the class's way
        ("dog", "hedges", -6.0),  # unrelated
        ("maybe so", "hedges", -2.0),  # holds a member's words
        ("surely", "hedges", -1.0),  # related to "probably" only, which joined before it
        ("hardly", "nobody", -1.0),  # an RM with no significant word: no class of its
    ]
    related = {("maybe", "probably"), ("perhaps", "possibly"), ("likely", "maybe"), ("maybe", "maybe so"),
               ("probably", "surely"), ("hardly", "maybe")}  # fmt: skip

    def similarity(phrases):
        return np.array(
            [[float(a == b or tuple(sorted((a, b))) in related) for b in phrases] for a in phrases]
        )

    widened = with_edited_words(classes, previous, screened, SETTINGS, similarity)
    assert widened == [("maybe", "perhaps", "probably", "surely")]
    assert with_edited_words(classes, previous, [], SETTINGS, similarity) == classes
    assert with_edited_words([], previous, screened, SETTINGS, similarity) == []
    # two RMs' classes that grow to the same members are one, as it came first
    previous = _effects([
        ("a", 'words "maybe"', -0.6, 1e-6), ("a", 'words "perhaps"', -0.5, 1e-6),
        ("b", 'words "maybe"', -0.6, 1e-6), ("b", 'words "probably"', -0.5, 1e-6),
    ])  # fmt: skip
    grown = with_edited_words(
        [("maybe", "perhaps"), ("maybe", "probably")],
        previous,
        [("probably", "a", -2.0), ("perhaps", "b", -2.0)],
        SETTINGS,
        lambda w: np.ones((len(w),) * 2),
    )
    assert grown == [("maybe", "perhaps", "probably")]


def test_a_word_class_counts_removes_and_adds_its_members_and_is_named_back():
    words = WordClass(["maybe", "perhaps"], opens_sentences=True)
    assert words.name == 'word class "maybe", "perhaps"'
    assert words.description == "Uses any of the words “maybe” or “perhaps”."
    text = "Maybe it works. Perhaps not, maybe later."
    assert words.count(text) == 3 and words.present(text) and not words.present("It works.")
    assert words.remove(text) == "It works. Not, later."
    assert words.add("It works. Try it.") == "It works. Maybe, try it."
    named = feature_named(words.name)
    assert isinstance(named, WordClass) and named.members == ("maybe", "perhaps")
    assert class_named(words.name) is not None  # a carrier: its member words go under it
    assert WordClass(["i", "me", "my"]).description == "Uses any of the words “I”, “me” or “my”."
    with pytest.raises(ValueError, match="two members"):
        WordClass(["maybe"])


def test_a_word_class_reads_as_a_sentence():
    words = WordClass(["i", "me", "my"])
    assert feature_phrase(words.name, words.description, -0.5, words.kind) == (
        "penalises any of the words “I”, “me” or “my”"
    )


def _context(previous: pl.DataFrame) -> RoundContext:
    responses = ["Maybe so. It works.", "Perhaps it does.", "It may. Maybe not.", "Yes. It works."]
    comparisons = pl.DataFrame({
        "comparison_id": ["d-s0-0", "d-s0-1"], "dataset": "d", "seed": 0, "source_index": ["0", "1"],
        "prompt": ["Does it?", "Will it?"], "chosen": responses[:2], "rejected": responses[2:],
    })  # fmt: skip
    settings = {"offline": {}, "fdr": 0.05, "encoder": schema_defaults("evaluate")}
    return RoundContext("d", 2, comparisons, {}, {}, previous, settings, LOG)


def test_the_offline_engines_second_round_tests_the_classes_or_stops_saying_why(caplog):
    previous = _effects([("rm", 'words "maybe"', -0.6, 1e-6), ("rm", 'words "perhaps"', -0.5, 1e-6)])
    with caplog.at_level(logging.INFO, logger=LOG.name):
        output = OfflineEngine().run_round(_context(previous))
    assert [f.name for f in output.features] == ['word class "maybe", "perhaps"'] and output.stopped is None
    assert output.features[0].add("It works.") == "Maybe, it works."  # "maybe" opens its sentences here
    assert "1 word classes merged" in caplog.text
    alone = OfflineEngine().run_round(_context(previous.head(1)))
    assert alone.features == [] and alone.stopped == NOTHING_TO_TEST.format(round=2, fdr=0.05)


def test_the_screened_words_that_join_no_class_are_merged_among_themselves_per_rm():
    screened = [
        ("safety", "a", 6.0), ("dog", "b", 5.0), ("safely", "a", 4.0), ("unsafe", "a", -3.0),
        ("maybe", "a", 2.0), ("safe", "a", 0.5), ("cat", "b", 4.5), ("puppy", "b", -1.0),
    ]  # fmt: skip
    related = {frozenset(pair) for pair in [("safety", "safely"), ("safely", "safe"), ("safety", "unsafe"),
               ("dog", "cat"), ("dog", "puppy"), ("maybe", "safe")]}  # fmt: skip

    def similarity(phrases):
        return np.array([[float(a == b or {a, b} in related) for b in phrases] for a in phrases])

    # per RM in name order, in the order screened: one sign of t (no ratio: 0.5 joins 6.0), related to a
    # member; "maybe" is a class's already
    classes = screened_word_classes(screened, [("maybe", "perhaps")], SETTINGS, similarity)
    assert classes == [("safety", "safely", "safe"), ("dog", "cat")]
    # with "safely" a class's, "safety" relates to none of its sign; "safe" still to "maybe"
    widened = screened_word_classes(screened, [("safely", "x")], SETTINGS, similarity)
    assert widened == [("maybe", "safe"), ("dog", "cat")]
    assert screened_word_classes(screened[:1], [], SETTINGS, similarity) == []
    # one member set once, as it came first
    twice = [("safety", "a", 6.0), ("safely", "a", 4.0), ("safely", "b", 3.0), ("safety", "b", 2.0)]
    assert screened_word_classes(twice, [], SETTINGS, similarity) == [("safety", "safely")]


def test_the_second_round_widens_a_class_by_a_related_word_the_attribute_edits_change(caplog):
    """Round 1 found "plz" and "pls" (+0.6 each, related 0.73 by the bundled encoder); the attribute edits
    single out "please" (+1 per instance), related to "plz" by 0.60 (to "pls" 0.48): the class takes it,
    and it is still tested on its own. A class the RM moves the other way takes it not."""
    previous = _effects([("rm", 'words "plz"', 0.6, 1e-6), ("rm", 'words "pls"', 0.6, 1e-6)])
    context = _context(previous)
    widened = RoundContext(**{**vars(context), "attribute_edits": edits()})
    with caplog.at_level(logging.INFO, logger=LOG.name):
        names = [f.name for f in OfflineEngine().run_round(widened).features]
    assert names[0] == 'word class "pls", "plz", "please"' and 'words "please"' in names  # ties by phrase
    assert 'word class "pls", "plz", "please"; ' in caplog.text
    penalised = _effects([("rm", 'words "plz"', -0.6, 1e-6), ("rm", 'words "pls"', -0.6, 1e-6)])
    other_way = RoundContext(**{**vars(_context(penalised)), "attribute_edits": edits()})
    assert OfflineEngine().run_round(other_way).features[0].name == 'word class "pls", "plz"'


def test_the_second_round_merges_related_words_the_attribute_edits_change_with_no_class_of_round_one():
    """No word of round 1; the edits insert "careful" and "safe" (+1 each) and "home" (0): the screen takes
    the three, and "careful" and "safe" (related 0.61 by the bundled encoder, one sign of t) are tested as a
    class besides each on its own."""
    inserts = [" Stay careful."] * 3 + [" Stay safe."] * 3 + [" Stay home."] * 3
    noise = [0.02, -0.01, 0.03, -0.02, 0.01, 0.0, -0.03, 0.02, 0.01]
    rows = [
        {"rm": "rm", "edit_id": f"e{i}", "source_text": f"Step {i} is done.",
         "edited_text": f"Step {i} is done.{insert}", "effect_change": float("home" not in insert) + n,
         "words_change": 2}
        for i, (insert, n) in enumerate(zip(inserts, noise, strict=True))
    ]  # fmt: skip
    previous = pl.DataFrame(schema=polars_schema(BIAS_DISCOVERY_EFFECTS))
    context = RoundContext(
        **{**vars(_context(previous)), "attribute_edits": pl.DataFrame(rows, schema=EDIT_SCHEMA)}
    )
    names = [f.name for f in OfflineEngine().run_round(context).features]
    assert names[0] == 'word class "careful", "safe"'
    assert {'words "careful"', 'words "safe"', 'words "home"'} <= set(names)


def test_a_later_round_reads_the_significance_level_and_the_encoder():
    design = Design({"discovery": {"fdr": 0.1, "offline": {"rounds": 2}}, "evaluate": {"batch_size": 8}})
    first, second = (design.discovery_round_settings("offline", r) for r in (1, 2))
    assert "fdr" not in first and "encoder" not in first
    assert second["fdr"] == 0.1 and second["encoder"]["batch_size"] == 8
    assert second["encoder"]["embedding_model"] == schema_defaults("evaluate")["embedding_model"]
    assert design.discovery_rounds("offline") == [1, 2]
    # round 1 reads neither the merge settings nor how many rounds there are: editing them reruns round 2
    config = load(REPO / "config" / "own_rm" / "hedging.yaml")  # two rounds, the schema's defaults filled in
    design, edited = Design(config), Design(copy.deepcopy(config))
    edited.config["discovery"]["offline"]["merge"]["max_classes"] = 3
    first, second = (design.discovery_round_settings("offline", r) for r in (1, 2))
    assert (
        "merge" not in first["offline"] and "rounds" not in first["offline"] and "mined" in first["offline"]
    )
    assert second["offline"]["merge"]["min_similarity"] == 0.5 and "rounds" not in second["offline"]
    assert edited.discovery_round_settings("offline", 1) == first
    assert edited.discovery_round_settings("offline", 2)["offline"]["merge"]["max_classes"] == 3
    assert MergeSettings.of({}, 0.1) == MergeSettings(0.1, 0.5, 2.0, 10)  # the schema's defaults
    assert MergeSettings.of({"max_classes": 3}, 0.1).max_classes == 3


def test_the_hedging_example_config_passes_the_check_and_its_rm_scores_by_hand():
    """config/own_rm/hedging.yaml (docs/discovery.md's example): two offline rounds on the bundled harmless
    pairs, its RM −0.5 per hedging word and +0.01 per word."""
    import importlib.util

    from rmexplain.config import load

    config = load(REPO / "config" / "own_rm" / "hedging.yaml")
    assert config["discovery"]["offline"]["rounds"] == 2  # the check fills the rest with defaults
    assert Design(config).discovery_rounds("offline") == [1, 2]
    spec = importlib.util.spec_from_file_location("hedging_rm", REPO / "config" / "own_rm" / "hedging_rm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.score(["?"], ["Maybe it could work, probably not."]) == [pytest.approx(-1.5 + 0.06)]


def test_the_hedging_example_through_snakemake_leads_with_the_class(workflow_copy):
    """docs/discovery.md's example, as its comment runs it: round 2 merges the five hedging words the data
    holds, and the class leads the first screen, its member words under it (each word's own effect, at round
    1's γ, may be a little larger than the class's: they are listed in the findings, not on the screen)."""
    args = ("results/findings/findings.parquet", "--cores", "2", "--configfile", "config/own_rm/hedging.yaml")
    workflow_copy.snakemake(*args)
    root = workflow_copy.root
    findings = pl.read_parquet(root / "results/findings/findings.parquet").sort("order")
    first = findings.filter(pl.col("leading")).row(0, named=True)
    members = ("could", "may", "maybe", "might", "probably")  # perhaps, possibly: not in these responses
    assert first["name"] == "word class " + ", ".join(f'"{word}"' for word in members)
    assert first["phrase"] == "penalises any of the words “could”, “may”, “maybe”, “might” or “probably”"
    assert first["leading"] and first["significant"] and first["effect"] < -1.5
    under = findings.filter(pl.col("under") == first["name"])["name"].to_list()
    assert {f'words "{word}"' for word in members} <= set(under)  # its members one click away
