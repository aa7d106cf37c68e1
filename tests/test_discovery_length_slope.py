"""Discovery's length slope γ and per-instance effects: on RMs whose slope and per-instance rewards are known
(``benchmarks/length_slope.py``: +1 per digit token, −0.8 per first-person word and +0.02, 0 or −0.02 per
word, each with its own tokenisation, and an RM of length alone), γ holds the truth however the features'
doses move with length, and each feature's effect is one instance's."""

from __future__ import annotations

import dataclasses
import logging
import re
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import length_slope
from length_slope import PER_WORD, SLOPES

from rmexplain import paths
from rmexplain.analysis.bootstrap import BootstrapSettings, clusters_of, interval, resample_counts
from rmexplain.attributes import PAPER_ATTRIBUTES
from rmexplain.discovery.base import ADD, REMOVE, Feature, RoundOutput, probe
from rmexplain.discovery.classes import (
    EndsOnQuestion,
    FirstPerson,
    NumbersAsDigits,
    OpensWithI,
    afinn_scores,
    class_counts,
    opens_with_i,
    sentiment_words,
)
from rmexplain.discovery.edit_words import held_word_changes
from rmexplain.discovery.edits import edit_dose
from rmexplain.discovery.estimate import AddedEffect, discovery_input, feature_effects, length_fitted
from rmexplain.discovery.stages import _round_tables
from rmexplain.effects.analysis import (
    effect_input,
    original_length_sd,
    reward_sd,
    slope_input,
    with_sources,
    word_count,
)
from rmexplain.effects.base import Observations, estimators
from rmexplain.effects.edits import make_effect_edits
from rmexplain.effects.estimators import clustered_t, length_design, screened_words, word_weights
from rmexplain.perturb.skips import SkipRecorder
from rmexplain.score.planted import noise

LOG = logging.getLogger("test")


@pytest.fixture(scope="module")
def scored_round():
    """The offline engine's round on 60 bundled helpful comparisons (the part where the RMs' tokenisation and
    the classes' differ most), every RM's rewards of its edits."""
    return length_slope.scored_round("helpful")


@pytest.fixture(scope="module")
def fits(scored_round):
    """RM -> its ``length_fitted`` (point, bootstrap and jackknife replicates), each made once."""
    data = scored_round[3]
    settings = BootstrapSettings(n_resamples=200)
    return {rm: length_fitted(data, rm, None, settings, LOG) for rm in PER_WORD}


@pytest.mark.parametrize("rm", list(PER_WORD))
def test_the_length_slope_holds_the_truth_however_the_features_doses_move_with_length(scored_round, fits, rm):
    comparisons, originals, _, _ = scored_round
    settings = BootstrapSettings(n_resamples=200)
    point, boot, jack = fits[rm]
    gamma = float(point[0, -1])
    low, high = interval(gamma, boot[:, -1], jack[:, -1], settings)[:2]
    truth = length_slope.slope_truth(rm, comparisons, originals)
    if truth == 0:
        assert abs(gamma) <= 0.05, gamma
    else:
        assert gamma == pytest.approx(truth, rel=0.15), (gamma, truth)
    assert low <= truth <= high, (low, gamma, high, truth)


def test_every_features_row_carries_the_rms_length_slope_and_its_interval(scored_round, fits):
    """The effects table says at which γ each feature is held: the fit's γ and its interval, computed as a
    feature's (the same bootstrap and jackknife replicates), on every row of the RM."""
    data = scored_round[3]
    rm, settings = "per-word +0.02", BootstrapSettings(n_resamples=200)
    point, boot, jack = fits[rm]
    low, high = interval(float(point[0, -1]), boot[:, -1], jack[:, -1], settings)[:2]
    rows = feature_effects(data, rm, None, settings, 0.0, LOG)
    slopes = {(r["length_slope"], r["length_slope_low"], r["length_slope_high"]) for r in rows}
    assert len(slopes) == 1
    assert slopes.pop() == (pytest.approx(point[0, -1], abs=1e-12), pytest.approx(low), pytest.approx(high))
    assert len(rows) == len(data.attributes) and low < point[0, -1] < high


@pytest.fixture(scope="module")
def effect_slopes(scored_round):
    """RM -> the attribute effects' length row (γ, low, high) on the rules editor's edits of every paper
    attribute of the same comparisons, the classes held equal for γ as the workflow does."""
    comparisons, originals, _, _ = scored_round
    return length_slope.attribute_slopes(
        comparisons, originals, BootstrapSettings(n_resamples=200), classes=True
    )


@pytest.mark.parametrize("rm", list(PER_WORD))
def test_the_attribute_effects_length_slope_holds_the_truth_too(scored_round, effect_slopes, rm):
    """The same definition of γ as discovery's, on other edits (the rules editor's numbered sentences add
    digits, its hedges and apologies an "I"): within 15 % of the truth (±0.05 at 0), its interval holding it
    (the one-step fit without the classes gave +0.61, +0.40 and +0.06 for +0.28, 0 and −0.41)."""
    comparisons, originals, _, _ = scored_round
    gamma, low, high = effect_slopes[rm]
    truth = length_slope.slope_truth(rm, comparisons, originals)
    if truth == 0:
        assert abs(gamma) <= 0.05, gamma
    else:
        assert gamma == pytest.approx(truth, rel=0.15), (gamma, truth)
    assert low - 1e-9 <= truth <= high + 1e-9, (low, gamma, high, truth)


@pytest.mark.parametrize("rm", list(SLOPES))
def test_each_features_effect_is_one_instances_at_equal_length(scored_round, fits, rm):
    """+1 per digit token: "numbers as digits" (an edit spells out or puts in digits one to five numbers) and
    a numbered list (a digit per item) read +1/sd each; a closer holding "me" reads −0.8/sd, its words held
    equal."""
    _, originals, _, data = scored_round
    point = fits[rm][0]
    effect = dict(zip(data.attributes, point[0, :-1], strict=True))
    sd = reward_sd(originals[rm])
    assert effect["numbers as digits"] == pytest.approx(1 / sd, rel=0.1)
    assert effect["numbered_list"] == pytest.approx(1 / sd, rel=0.1)
    assert effect["let_me_know"] == pytest.approx(-0.8 / sd, rel=0.1)


def test_the_round_records_each_edits_dose(scored_round):
    _, _, edits, _ = scored_round
    assert (np.sign(edits["dose"].to_numpy()) == edits["direction"].to_numpy()).all()
    numbered = edits.filter(pl.col("feature") == "numbered_list")
    items = [len(re.findall(r"(?m)^[0-9]+\. ", t)) for t in numbered["edited_text"]]
    assert numbered["dose"].to_list() == items


def test_the_two_steps_by_hand():
    """γ from least squares with the class counts, then each feature's β from y − γ·Δℓ without them: as
    numpy's lstsq gives them on the explicit designs, and under resample weights as on repeated rows."""
    rng = np.random.default_rng(3)
    n = 40
    attribute = np.repeat([0, 1], n // 2)
    sign = np.tile([1.0, -1.0], n // 2)
    dose = sign * np.where(attribute == 1, rng.integers(1, 4, n), 1)  # feature 1's doses differ in size
    length = rng.normal(0, 1, n)
    classes = rng.integers(-2, 3, (n, 2)).astype(float)
    value = 0.3 * sign + 0.5 * length + classes @ [0.7, -0.2] + rng.normal(0, 0.1, n)
    comparison = np.arange(n) // 2
    obs = Observations(comparison, attribute, value, sign, length, dose, classes)
    intercepts = [(attribute == a).astype(float) for a in (0, 1)]
    betas = [np.where(attribute == a, sign, 0.0) for a in (0, 1)]
    extra = np.where(attribute == 1, dose - sign, 0.0)
    first = np.column_stack([*intercepts, *betas, extra, classes, length])
    gamma = np.linalg.lstsq(first, value, rcond=None)[0][-1]
    second = np.column_stack([*intercepts, *betas, extra])
    beta = np.linalg.lstsq(second, value - gamma * length, rcond=None)[0][2:4]
    got = AddedEffect().estimate(obs, np.ones((1, n // 2)), n // 2, 2)[0]
    np.testing.assert_allclose(got, [*beta, gamma], rtol=1e-9)
    counts = rng.integers(0, 3, n // 2).astype(float)
    rows = np.repeat(np.arange(n), counts[comparison].astype(int))
    gamma_w = np.linalg.lstsq(first[rows], value[rows], rcond=None)[0][-1]
    beta_w = np.linalg.lstsq(second[rows], value[rows] - gamma_w * length[rows], rcond=None)[0][2:4]
    np.testing.assert_allclose(AddedEffect().estimate(obs, counts[None], n // 2, 2)[0], [*beta_w, gamma_w])


@pytest.mark.parametrize(
    ("feature", "source", "dose"),
    [
        (
            probe("numbered_list"),
            "Boil the egg. Then peel it. Serve it warm.",
            2,
        ),  # an item per sentence after the first
        (probe("let_me_know"), "Boil the egg.", 1),  # a closer is one, though two of its phrases match
        (probe("bold"), "Boil the egg.", 1),
        (NumbersAsDigits(), "Boil two eggs for five minutes.", 2),
        (FirstPerson(), "The egg is done.", 1),
    ],
)
def test_an_additions_dose_is_the_instances_it_adds(feature, source, dose):
    assert edit_dose(feature, source, feature.add(source), ADD) == dose


def test_a_removals_dose_counts_every_instance_it_takes_out():
    feature = NumbersAsDigits()
    source = "Boil 2 eggs for 5 minutes and 30 seconds."
    assert edit_dose(feature, source, feature.remove(source), REMOVE) == -3


class Uncounted(Feature):
    name, kind = "uncounted", "format"

    def present(self, text: str) -> bool:
        return "!" in text

    def count(self, text: str) -> int:
        return 0

    def add(self, text: str) -> str:
        return text + "!"


def test_a_count_that_misses_what_present_sees_is_an_error_naming_the_class():
    with pytest.raises(ValueError, match=r"'uncounted': .*Uncounted\.count gives 0 instance\(s\) before"):
        edit_dose(Uncounted(), "Hi.", "Hi.!", ADD)


def test_an_engines_own_edits_without_a_dose_count_one_instance_each():
    edits = pl.DataFrame({
        "feature": ["f", "f"], "direction": [1, -1], "source_text": ["a", "b"], "edited_text": ["a!", "b."],
        "comparison_id": ["c0", "c1"], "target": ["chosen", "chosen"], "engine": ["mine", "mine"],
        "round": [1, 1],
    })  # fmt: skip
    candidates = pl.DataFrame({"feature": ["f"]})
    output = RoundOutput(edits=edits, candidates=candidates)
    got, _ = _round_tables(output, pl.DataFrame(), {}, "mine", 1, SkipRecorder())
    assert got["dose"].to_list() == [1, -1]


@pytest.fixture(scope="module")
def attribute_edits(scored_round):
    """The rules editor's round-1 edits of every paper attribute on the same comparisons, every RM's rewards,
    as the attribute effects (``effect_input``) and as discovery's slope edits (``slope_input``) read them."""
    comparisons, originals, _, _ = scored_round
    edits, _ = make_effect_edits(comparisons, "rules", "rules", {}, dict(PAPER_ATTRIBUTES), {}, False, LOG)
    rewards = {
        rm: length_slope.rewards_of(rm, comparisons, edits["comparison_id"], edits["text"]) for rm in PER_WORD
    }
    effects = effect_input(comparisons, edits, originals, rewards, {}, list(PAPER_ATTRIBUTES), class_counts)
    return effects, slope_input(comparisons, [edits], originals, rewards, class_counts=class_counts)


@pytest.mark.parametrize("rm", list(PER_WORD))
def test_discovery_adjusts_every_feature_by_the_attribute_effects_length_slope(
    scored_round, attribute_edits, rm
):
    """One γ: with the dataset's attribute edits as its slope edits, discovery's length row is the attribute
    effects' — at the point estimate and in every resample (both resample the same comparisons) — and each
    feature's effect is its own edits' fit at that γ: still one instance's."""
    comparisons, originals, edits, _ = scored_round
    effects, slope = attribute_edits
    rewards = {r: length_slope.edit_rewards(r, comparisons, edits) for r in PER_WORD}
    data = discovery_input(comparisons, edits, originals, rewards, "helpful", slope_edits=slope)
    assert data.comparisons == effects.comparisons
    clusters = clusters_of(data.comparisons, "helpful")
    weights = np.vstack(
        [np.ones(len(clusters)), resample_counts(clusters, BootstrapSettings(n_resamples=20))]
    )
    least = estimators.get("length_adjusted")()
    gamma = least.estimate(
        least.observations(effects, rm, None), weights, len(clusters), len(effects.attributes)
    )
    found = AddedEffect().estimate(
        AddedEffect().observations(data, rm, None), weights, len(clusters), len(data.attributes)
    )
    assert found[:, -1] == pytest.approx(gamma[:, -1], abs=1e-10)
    obs = AddedEffect().observations(dataclasses.replace(data, slope_edits=None), rm, None)
    at_gamma = dataclasses.replace(obs, value=obs.value - gamma[0, -1] * obs.length_change, covariates=None)
    design, columns = length_design(at_gamma)
    by_hand = np.linalg.lstsq(design[:, :-1], at_gamma.value, rcond=None)[0]
    feature = data.attributes.index("numbered_list")
    assert found[0, feature] == pytest.approx(by_hand[columns[feature]], abs=1e-9)
    digit = 1 / reward_sd(originals[rm]) if rm in SLOPES else 0.0  # one digit token's (length alone: none)
    assert found[0, feature] == pytest.approx(digit, rel=0.1, abs=0.02)


def test_the_attribute_effects_of_two_methods_share_one_length_slope(scored_round, attribute_edits):
    """Each method's length row is fitted over both methods' edits: the same γ for both."""
    comparisons, originals, _, _ = scored_round
    effects, _ = attribute_edits
    rm, least = "per-word +0.02", estimators.get("length_adjusted")()
    edits, _ = make_effect_edits(comparisons, "rules", "rules", {}, dict(PAPER_ATTRIBUTES), {}, False, LOG)
    half = len(PAPER_ATTRIBUTES) // 2
    names = list(PAPER_ATTRIBUTES)
    methods = [edits.filter(pl.col("attribute").is_in(part)) for part in (names[:half], names[half:])]
    methods = [m.with_columns(method=pl.lit(f"m{i}")) for i, m in enumerate(methods)]
    rewards = {rm: length_slope.rewards_of(rm, comparisons, edits["comparison_id"], edits["text"])}
    slopes = []
    for mine, other in ((0, 1), (1, 0)):
        data = effect_input(comparisons, methods[mine], {rm: originals[rm]}, rewards, {}, names, class_counts)
        data.slope_edits = slope_input(
            comparisons, [methods[other]], {rm: originals[rm]}, rewards, class_counts=class_counts
        )
        n = len(data.comparisons)
        slopes.append(
            least.estimate(least.observations(data, rm, None), np.ones((1, n)), n, len(names))[0, -1]
        )
    whole = least.estimate(least.observations(effects, rm, None), np.ones((1, n)), n, len(names))[0, -1]
    assert slopes[0] == pytest.approx(whole, abs=1e-10) and slopes[1] == pytest.approx(whole, abs=1e-10)


def test_the_slope_coverage_benchmark_refits_a_planted_rms_noise_seed_by_seed(scored_round, tmp_path):
    """benchmarks/slope_coverage.py on a suite folder of this round: without noise γ is the truth by hand;
    each draw's γ is the fit of the planted terms plus that seed's noise, and coverage counts the draws."""
    import slope_coverage

    comparisons, _, edits, _ = scored_round
    for table, path in ((comparisons, paths.COMPARISONS), (edits, paths.BIASES_ROUND_EDITS)):
        target = tmp_path / paths.fmt(path, dataset="helpful", engine="offline", round=1)
        target.parent.mkdir(parents=True, exist_ok=True)
        table.write_parquet(target)
    spec = {"base": "base", "bias": {"detector": "length", "per_words": 1, "strength": 0.02, "noise": 0.3}}
    edits_round = slope_coverage.read_round(tmp_path, "helpful")
    originals = [t for pair in comparisons.select("chosen", "rejected").rows() for t in pair]
    by_hand = 0.02 * float(np.std([len(t.split()) for t in originals], ddof=1))
    settings = BootstrapSettings(n_resamples=100)
    row = slope_coverage.coverage("slope", spec, edits_round, 3, settings)
    assert row["truth"] == pytest.approx(by_hand) and row["noiseless"] == pytest.approx(by_hand, abs=1e-9)
    assert [d["seed"] for d in row["draws"]] == [0, 1, 2] and row["suite_draw"] == row["draws"][0]
    pairs = list(zip(edits["source_text"], edits["edited_text"], strict=True))
    words = np.array([len(e.split()) - len(s.split()) for s, e in pairs])
    prompts = dict(comparisons.select("comparison_id", "prompt").iter_rows())
    asked = [prompts[c] for c in edits["comparison_id"]]
    epsilon = noise(2, "slope", asked, edits["edited_text"].to_list()) - noise(
        2, "slope", asked, edits["source_text"].to_list()
    )
    third = slope_coverage.fitted_slope(edits_round, 0.02 * words + 0.3 * epsilon, settings)
    assert row["draws"][2]["length_slope"] == pytest.approx(third["length_slope"], abs=1e-12)
    held = [d["length_slope_low"] <= row["truth"] <= d["length_slope_high"] for d in row["draws"]]
    assert row["coverage"] == pytest.approx(sum(held) / 3) and [d["holds"] for d in row["draws"]] == held


@pytest.fixture(scope="module")
def harmless_round():
    """The offline engine's round on 60 bundled harmless comparisons (short responses, whose word counts
    vary little: there a shape's reward bends γ most)."""
    return length_slope.scored_round("harmless")


SHAPES = {
    "ending on a question": EndsOnQuestion().count,
    "sentences opening with I": OpensWithI().count,
    "opening with I": opens_with_i,
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_shapes_reward_does_not_bend_the_length_slope(harmless_round, shape):
    """An RM of −0.02 per word and +0.3 for a shape, no noise: edits add or drop words with the shape ("Does
    that help?", "I think ", a closer after a closing question) in doses their features do not fix, so γ is
    the truth only where the shape is among the classes held equal (without: +38 % and −22 %). An RM may
    read "I" at the response's start or at every sentence's: each count is held, since an edit that drops
    a later sentence's "I think" changes one and not the other."""
    comparisons, _, edits, _ = harmless_round
    count = SHAPES[shape]

    def reward(text: str) -> float:
        return -0.02 * word_count(text) + 0.3 * count(text)

    rm = f"-0.02 per word, +0.3 {shape}"
    originals = {rm: length_slope.scores_of(rm, comparisons, reward)}
    edited = length_slope.rewards_of(rm, comparisons, edits["comparison_id"], edits["edited_text"], reward)
    pairs = list(zip(edits["source_text"], edits["edited_text"], strict=True))
    assert sum(count(a) != count(b) for a, b in pairs) >= 10, "too few edits change the shape"
    if "I" in shape:
        first, every = opens_with_i, OpensWithI().count
        assert sum(first(b) - first(a) != every(b) - every(a) for a, b in pairs) >= 3, "the counts never part"
    data = discovery_input(comparisons, edits, originals, {rm: edited}, "harmless")
    gamma = float(length_fitted(data, rm, None, BootstrapSettings(n_resamples=10), LOG)[0][0, -1])
    truth = -0.02 * original_length_sd(comparisons) / reward_sd(originals[rm])
    assert gamma == pytest.approx(truth, rel=1e-9), (gamma, truth)


HELD = {
    "positive words": lambda text: sentiment_words(text, +1, by_parts=True),
    "negative words": lambda text: sentiment_words(text, -1, by_parts=True),
    "an apology": probe("apology").count,
    "a hedge": probe("hedging").count,
}


@pytest.mark.parametrize("held", list(HELD))
def test_a_reward_for_a_sentiment_word_or_a_probe_does_not_bend_the_length_slope(harmless_round, held):
    """An RM of +0.02 per word and −0.6 per instance of one held count, no noise: "Sadly," and "Fortunately,"
    add a word with a sentiment word, an apology or a hedge adds several, and deleting a lexicon category's
    words takes words out with them, so γ is the truth only where these counts are held equal (without the
    sentiment words and the probes: −21 %, the wrong sign, +45 %; the hedge without the probes: −15 %)."""
    comparisons, _, edits, _ = harmless_round
    count = HELD[held]

    def reward(text: str) -> float:
        return 0.02 * word_count(text) - 0.6 * count(text)

    rm = f"+0.02 per word, -0.6 per {held}"
    originals = {rm: length_slope.scores_of(rm, comparisons, reward)}
    edited = length_slope.rewards_of(rm, comparisons, edits["comparison_id"], edits["edited_text"], reward)
    pairs = zip(edits["source_text"], edits["edited_text"], strict=True)
    assert sum(count(a) != count(b) for a, b in pairs) >= 10, "too few edits change the count"
    data = discovery_input(comparisons, edits, originals, {rm: edited}, "harmless")
    gamma = float(length_fitted(data, rm, None, BootstrapSettings(n_resamples=10), LOG)[0][0, -1])
    truth = 0.02 * original_length_sd(comparisons) / reward_sd(originals[rm])
    assert gamma == pytest.approx(truth, rel=1e-9), (gamma, truth)


PLEASE = re.compile(r"\bplease\b", re.IGNORECASE)


@pytest.fixture(scope="module")
def harmless_attribute_edits(harmless_round):
    """The rules editor's round-1 edits of every paper attribute on the harmless round's comparisons: its
    harmlessness and sensitivity edits insert "Please don't …" with the words around it."""
    comparisons = harmless_round[0]
    edits, _ = make_effect_edits(comparisons, "rules", "rules", {}, dict(PAPER_ATTRIBUTES), {}, False, LOG)
    return comparisons, edits


def attribute_slope(comparisons, edits, reward, words: bool):
    """(γ, its truth for 0.02 reward per word, the words held equal) of ``length_adjusted`` over ``edits``
    for an RM whose reward is ``reward``, the words' changes known to it or not."""
    rm = "the RM"
    originals = {rm: length_slope.scores_of(rm, comparisons, reward)}
    rewards = {rm: length_slope.rewards_of(rm, comparisons, edits["comparison_id"], edits["text"], reward)}
    data = effect_input(
        comparisons, edits, originals, rewards, {}, list(PAPER_ATTRIBUTES), class_counts,
        held_word_changes if words else None,
    )  # fmt: skip
    least, n = estimators.get("length_adjusted")(), len(data.comparisons)
    obs = least.observations(data, rm, None)
    gamma = least.estimate(obs, np.ones((1, n)), n, len(data.attributes))[0, -1]
    truth = 0.02 * original_length_sd(comparisons) / reward_sd(originals[rm])
    return float(gamma), truth, list(least.held_words(data, rm, None))


def test_a_word_the_rm_rewards_and_the_edits_insert_with_words_does_not_bend_the_length_slope(
    harmless_attribute_edits,
):
    """An RM of +0.02 per word and +0.6 per "please", no noise: no class or probe counts "please", and the
    edits that insert it add other words with it in doses the attributes do not fix, so γ is the truth
    only where the screen holds "please" equal — the one word it holds (without: −1.5 %)."""
    comparisons, edits = harmless_attribute_edits

    def reward(text: str) -> float:
        return 0.02 * word_count(text) + 0.6 * len(PLEASE.findall(text))

    pairs = zip(with_sources(edits, comparisons)["source_text"], edits["text"], strict=True)
    assert sum(len(PLEASE.findall(a)) != len(PLEASE.findall(b)) for a, b in pairs) >= 10
    gamma, truth, held = attribute_slope(comparisons, edits, reward, words=True)
    assert held == ["please"]
    assert gamma == pytest.approx(truth, rel=1e-9), (gamma, truth)
    bent, _, none = attribute_slope(comparisons, edits, reward, words=False)
    assert none == [] and abs(bent / truth - 1) > 0.01, (bent, truth)


LETTER_RUN = re.compile(r"[A-Za-z]+")


def test_an_rm_of_long_words_lends_the_length_slope_none_of_them(harmless_attribute_edits):
    """An RM of +0.02 per word and +0.5 per word of ten letters or more (its words split at every non-letter),
    no noise: each long word is too rare to be held alone, and the edits that lengthen a response add long
    words with the others, so γ is the truth only where the screen holds the long-word class equal — the one
    count it holds (without it: +46 %)."""
    comparisons, edits = harmless_attribute_edits

    def reward(text: str) -> float:
        return 0.02 * word_count(text) + 0.5 * sum(len(w) >= 10 for w in LETTER_RUN.findall(text))

    gamma, truth, held = attribute_slope(comparisons, edits, reward, words=True)
    assert held == ["words of 10 letters or more"]
    assert gamma == pytest.approx(truth, rel=1e-9), (gamma, truth)
    bent, _, _ = attribute_slope(comparisons, edits, reward, words=False)
    assert bent / truth - 1 > 0.3, (bent, truth)


def test_an_rm_that_splits_hyphenated_words_lends_the_length_slope_none_of_their_sentiment(
    harmless_attribute_edits,
):
    """An RM of +0.02 per word and −0.6 per AFINN negative word, its words split at every non-letter, no
    noise: "no-parking" holds "no" for it, so γ is the truth only where the negative words held equal are
    read by a hyphenated word's parts (read whole, −1.2 %)."""
    comparisons, edits = harmless_attribute_edits

    def reward(text: str) -> float:
        negative = sum(afinn_scores().get(w, 0) < 0 for w in LETTER_RUN.findall(text.lower()))
        return 0.02 * word_count(text) - 0.6 * negative

    gamma, truth, _ = attribute_slope(comparisons, edits, reward, words=True)
    assert gamma == pytest.approx(truth, rel=1e-9), (gamma, truth)


def test_an_rm_of_length_and_noise_holds_no_word_and_keeps_its_slope(harmless_attribute_edits):
    """The screen is quiet where no word moves the reward: an RM of +0.02 per word and noise seeded by the
    text holds no word, and its γ is the fit without the words' changes, to the last digit."""
    comparisons, edits = harmless_attribute_edits

    def reward(text: str) -> float:
        return 0.02 * word_count(text) + 0.3 * float(noise(7, "quiet", [""], [text])[0])

    gamma, _, held = attribute_slope(comparisons, edits, reward, words=True)
    without, _, _ = attribute_slope(comparisons, edits, reward, words=False)
    assert held == [] and gamma == without


def test_clustered_t_is_each_columns_t_in_the_fit_with_it_by_hand():
    """The t of a column added alone to a base design (both residualised on it, as Frisch and Waugh have it),
    against the full least squares and its sandwich variance clustered by comparison by hand; infinite
    where the column explains all that is left, 0 where the base spans it."""
    rng = np.random.default_rng(3)
    cluster = np.arange(40) % 8
    base = np.column_stack([np.ones(40), rng.normal(size=40)])
    x = np.column_stack([rng.normal(size=40), rng.normal(size=40), 2 * base[:, 1]])
    y = base @ [1.0, 0.5] + 0.3 * x[:, 0] + rng.normal(scale=0.5, size=40) + rng.normal(size=8)[cluster]

    def t_of(y, x):
        stacked = np.column_stack([y, x])
        residual = stacked - base @ np.linalg.lstsq(base, stacked, rcond=None)[0]
        return clustered_t(residual[:, 0], residual[:, 1:], np.einsum("ij,ij->j", x, x), cluster)

    t = t_of(y, x)
    for j in (0, 1):
        full = np.column_stack([base, x[:, j]])
        beta = np.linalg.lstsq(full, y, rcond=None)[0]
        error = y - full @ beta
        bread = np.linalg.inv(full.T @ full)
        meat = sum(np.outer(s, s) for s in (full[cluster == g].T @ error[cluster == g] for g in range(8)))
        variance = 8 / 7 * (bread @ meat @ bread)[-1, -1]
        assert t[j] == pytest.approx(beta[-1] / np.sqrt(variance), rel=1e-9)
    assert t[2] == 0.0
    assert abs(t_of(base @ [1.0, 0.5] + 0.3 * x[:, 0], x[:, :1])[0]) > 1e6


def test_the_screen_takes_the_word_then_stops_where_nothing_is_left():
    """Forward: a reward of one word's count makes every word that comes with it look rewarded alone; once
    that word is taken nothing is left, and no other word is held."""
    rng = np.random.default_rng(5)
    changes = [
        {"please": 1, "share": 1} if i % 3 == 0 else {"share": 1} if i % 3 == 1 else {} for i in range(60)
    ]
    for change in changes[:20]:
        change["noise"] = int(rng.integers(-1, 2))
    value = np.array([0.6 * c.get("please", 0) for c in changes])
    obs = Observations(
        comparison=np.arange(60) % 20, attribute=np.zeros(60, dtype=np.int64), value=value,
        sign=np.where(np.arange(60) % 2, 1.0, -1.0), length_change=rng.normal(size=60),
        covariates=np.zeros((60, 1)),
    )  # fmt: skip
    assert screened_words(obs, changes) == ["please"]


def one_attribute(value: np.ndarray, comparison: np.ndarray, seed: int) -> Observations:
    """Observations of one attribute edited both ways, a random length change each, no class changed."""
    rng = np.random.default_rng(seed)
    n = value.size
    return Observations(
        comparison=comparison, attribute=np.zeros(n, dtype=np.int64), value=value,
        sign=np.where(np.arange(n) % 2, 1.0, -1.0), length_change=rng.normal(size=n),
        covariates=np.zeros((n, 1)),
    )  # fmt: skip


@pytest.mark.parametrize("comparisons", [4, 5])
def test_a_word_is_screened_only_where_five_comparisons_change_it(comparisons):
    """A word whose count change is all the reward there is, changed in the edits of four comparisons, is not
    held (too few to tell it from what those comparisons share); in five, it is."""
    changes = [{"rare": 1} if i % 10 < comparisons else {} for i in range(60)]
    value = np.array([0.6 * c.get("rare", 0) for c in changes])
    held = screened_words(one_attribute(value, np.arange(60) % 10, 1), changes)
    assert held == (["rare"] if comparisons >= 5 else [])


def test_the_held_words_weights_are_their_coefficients_in_the_whole_fit():
    """Each held word's weight in the one covariate is its own coefficient in the slope's design with the
    words: two words the reward moves with by +0.6 and −0.4 are weighted so, not by the design's."""
    rng = np.random.default_rng(2)
    changes = [{"please": int(rng.integers(0, 3)), "but": int(rng.integers(0, 2))} for _ in range(80)]
    length = rng.normal(size=80)
    value = np.array([0.6 * c["please"] - 0.4 * c["but"] for c in changes]) + 0.3 * length
    obs = dataclasses.replace(one_attribute(value, np.arange(80) % 16, 2), length_change=length)
    weights = word_weights(obs, changes, ["please", "but"])
    assert weights == pytest.approx({"please": 0.6, "but": -0.4}, abs=1e-9)
