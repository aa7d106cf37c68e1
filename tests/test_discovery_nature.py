"""Edit versus nature (rmexplain.discovery.nature): a discovered feature's association with the reward among
the original responses at equal length, by hand, its verdict beside the causal effect, the presence the
edit maker records, and the sentence the first screen shows."""

from __future__ import annotations

import logging

import numpy as np
import polars as pl
import pytest

from rmexplain.analysis.bootstrap import BootstrapSettings
from rmexplain.discovery.base import ADD, probe
from rmexplain.discovery.edits import EditSettings, make_edits, original_units
from rmexplain.discovery.estimate import round_effects
from rmexplain.discovery.nature import (
    AGREES,
    DIFFERS,
    MIN_NATURAL_PAIRS,
    NEVER,
    NO_DETECTOR,
    TOO_FEW,
    UNCLEAR,
    NaturalPairs,
    natural_fit,
    nature_columns,
    nature_verdict,
)
from rmexplain.findings.landing import finding_line, nature_sentence
from rmexplain.ids import text_id
from rmexplain.perturb.skips import SkipRecorder

LOG = logging.getLogger("test")


def test_the_natural_fit_is_least_squares_without_an_intercept_by_hand():
    presence = np.array([1.0, -1.0, 0.0, 1.0])
    length = np.array([0.5, 0.5, 1.0, -0.5])
    y = np.array([1.0, -0.2, 0.3, 0.4])
    # S_pp 3, S_pl −0.5, S_ll 1.75, S_py 1.6, S_ly 0.5: β = (1.75·1.6 + 0.5·0.5) / (3·1.75 − 0.25) = 0.61
    assert natural_fit(y, presence, length, np.ones((1, 4)))[0] == pytest.approx(0.61)
    # weights count comparisons: the second drawn twice, the third left out, by hand the same way
    weights = np.array([[1.0, 2.0, 0.0, 1.0]])
    s_pp, s_pl, s_ll, s_py, s_ly = 4.0, 0.5 - 1.0 - 0.5, 0.25 + 0.5 + 0.25, 1.0 + 0.4 + 0.4, 0.5 - 0.2 - 0.2
    by_hand = (s_ll * s_py - s_pl * s_ly) / (s_pp * s_ll - s_pl * s_pl)
    assert natural_fit(y, presence, length, weights)[0] == pytest.approx(by_hand)
    # an unscored comparison (NaN) is left out; no length difference anywhere: β = S_py / S_pp
    y_missing = np.array([1.0, np.nan, 0.3, 0.4])
    assert natural_fit(y_missing, presence, np.zeros(4), np.ones((1, 4)))[0] == pytest.approx(1.4 / 2)
    # undefined: no comparison differs in the feature, or its difference is the length difference
    assert np.isnan(natural_fit(y, np.zeros(4), length, np.ones((1, 4)))[0])
    assert np.isnan(natural_fit(y, presence, 2 * presence, np.ones((1, 4)))[0])


def _comparisons(chosen: list[str], rejected: list[str]) -> pl.DataFrame:
    n = len(chosen)
    return pl.DataFrame(
        {
            "comparison_id": [f"d-s0-{i}" for i in range(n)],
            "dataset": ["d"] * n,
            "seed": [0] * n,
            "source_index": [str(i) for i in range(n)],
            "prompt": [f"q{i}" for i in range(n)],
            "chosen": chosen,
            "rejected": rejected,
        }
    )


def test_pairs_give_each_comparisons_differences_against_the_reference():
    comparisons = _comparisons(["Yes! Sure.", "Fine.", "Ok then."], ["No.", "No way!", "Nope."])
    pairs = NaturalPairs.of(comparisons, "d", BootstrapSettings(50))
    has = [text_id("q0", "Yes! Sure."), text_id("q1", "No way!")]
    assert pairs.presence(has).tolist() == [1.0, -1.0, 0.0]
    sd_words = float(np.std([2, 1, 2, 1, 2, 1], ddof=1))
    assert pairs.length == pytest.approx(np.array([1.0, -1.0, 1.0]) / sd_words)
    rm = pl.DataFrame({"comparison_id": comparisons["comparison_id"], "rm": "rm",
                       "reward_chosen": [3.0, 1.0, 2.0], "reward_rejected": [0.0, 2.0, None]})  # fmt: skip
    reference = rm.with_columns(rm=pl.lit("ref"), reward_chosen=pl.lit(1.0), reward_rejected=pl.lit(0.0))
    sd, sd_ref = float(np.std([3, 1, 2, 0, 2], ddof=1)), float(np.std([1, 1, 1, 0, 0], ddof=1))
    expected = np.array([3.0 / sd - 1 / sd_ref, -1.0 / sd - 1 / sd_ref, np.nan])
    assert pairs.rewards(rm, reference) == pytest.approx(expected, nan_ok=True)
    assert pairs.resamples.shape == (50, 3) and pairs.jackknife.shape == (3, 3)


@pytest.mark.parametrize(
    ("effect", "low", "high", "pairs", "n_present", "verdict"),
    [
        (0.5, 0.1, 0.4, 9, 9, AGREES),
        (-0.5, -0.4, -0.1, 9, 9, AGREES),
        (0.5, -0.4, -0.1, 9, 9, DIFFERS),
        (-0.5, 0.1, 0.4, 9, 9, DIFFERS),
        (0.5, -0.1, 0.4, 9, 9, UNCLEAR),
        (0.5, 0.0, 0.4, 9, 9, UNCLEAR),  # a bound at 0 holds 0
        (0.5, 0.1, 0.4, MIN_NATURAL_PAIRS - 1, 9, TOO_FEW),
        (0.5, 0.1, 0.4, MIN_NATURAL_PAIRS, 9, AGREES),
        (0.5, float("nan"), float("nan"), 9, 9, TOO_FEW),
        (0.5, float("nan"), float("nan"), 0, 0, NEVER),
        (float("nan"), 0.1, 0.4, 9, 9, None),
    ],
)
def test_the_verdict_of_each_case(effect, low, high, pairs, n_present, verdict):
    natural = {"natural_effect": 0.0, "natural_low": low, "natural_high": high, "natural_pairs": pairs}
    assert nature_verdict(effect, natural, n_present) == verdict


def test_a_feature_without_a_detector_is_not_compared():
    pairs = NaturalPairs.of(_comparisons(["A."], ["B."]), "d", BootstrapSettings(20))
    originals = pl.DataFrame({"comparison_id": ["d-s0-0"], "rm": "rm", "reward_chosen": [1.0],
                              "reward_rejected": [0.0]})  # fmt: skip
    y = pairs.rewards(originals, None)
    columns = nature_columns(0.3, None, pairs, y, BootstrapSettings(20))
    assert columns == {"natural_effect": None, "natural_low": None, "natural_high": None,
                       "natural_pairs": None, "nature": NO_DETECTOR}  # fmt: skip


def test_the_edit_maker_records_the_responses_that_have_each_feature():
    comparisons = _comparisons(["Sure! Do it.", "Fine.", "Sure! Do it."], ["No.", "Never!", "No."])
    units = original_units(comparisons)
    _, candidates = make_edits([probe("exclamation")], units, EditSettings(10, 1), "offline", 1, {},
                               SkipRecorder())  # fmt: skip
    present = candidates.row(0, named=True)["present_in"]
    # by prompt and response: comparison 2's response is comparison 0's under another prompt
    assert present == sorted(text_id(q, t) for q, t in [("q0", "Sure! Do it."), ("q1", "Never!"),
                                                        ("q2", "Sure! Do it.")])  # fmt: skip
    assert candidates.row(0, named=True)["n_present"] == len(present)


def test_an_edit_the_natural_feature_contradicts_is_named_beside_its_effect():
    """The RM rewards the "!" its edits add (+1 per edited text), while among the original responses a
    response with "!" scores lower than its pair's response without it (every response one length): the
    verdict says that the edit does something the natural feature does not."""
    n = 12
    chosen = [f"Plain answer number {i}." for i in range(n)]
    rejected = [f"Another reply number {i}!" if i % 2 else f"Another reply number {i}." for i in range(n)]
    comparisons = _comparisons(chosen, rejected)
    rewards_chosen = [2.0 + 0.01 * i for i in range(n)]
    gaps = [(1.0 + 0.1 * (i % 3)) if i % 2 else 0.2 for i in range(n)]  # chosen − rejected
    rewards_rejected = [r - g for r, g in zip(rewards_chosen, gaps, strict=True)]
    originals = {
        "rm": pl.DataFrame(
            {
                "comparison_id": comparisons["comparison_id"],
                "rm": "rm",
                "reward_chosen": rewards_chosen,
                "reward_rejected": rewards_rejected,
            }
        )
    }
    edits = pl.DataFrame({"feature": ["exclamation"] * n, "direction": [ADD] * n, "source_text": chosen,
                          "edited_text": [t.replace(".", "!") for t in chosen], "target": ["chosen"] * n,
                          "comparison_id": comparisons["comparison_id"]})  # fmt: skip
    edited = [text_id(f"q{i}", t.replace(".", "!")) for i, t in enumerate(chosen)]
    rewards = {"rm": pl.DataFrame({"text_id": edited, "reward": [r + 1.0 for r in rewards_chosen]})}
    present = sorted(text_id(f"q{i}", rejected[i]) for i in range(1, n, 2))
    candidates = pl.DataFrame({"feature": ["exclamation"], "engine": ["offline"], "description": ["'!'"],
                               "support": [0.25], "round": [1], "kind": ["punctuation"], "source": ["test"],
                               "n_added": [n], "n_removed": [0], "present_in": [present]})  # fmt: skip
    effects = round_effects(comparisons, edits, candidates, originals, rewards, {"rm": None}, "d",
                            BootstrapSettings(200), 0.0, LOG)  # fmt: skip
    row = effects.row(0, named=True)
    sd = float(np.std(rewards_chosen + rewards_rejected, ddof=1))
    assert row["effect"] == pytest.approx(1.0 / sd)
    # one length everywhere, so no γ: β = Σ d(present)·d(y) / Σ d(present)², d(present) −1 on the odd pairs
    odd = [g for i, g in enumerate(gaps) if i % 2]
    assert row["natural_effect"] == pytest.approx(-sum(odd) / len(odd) / sd)
    assert row["natural_pairs"] == n // 2 and row["natural_high"] < 0
    assert row["nature"] == DIFFERS


def test_the_first_screen_says_what_nature_shows_for_a_significant_discovered_feature():
    row = {"kind": "discovered", "name": "exclamation", "phrase": "rewards exclamation marks",
           "effect": 0.4, "low": 0.2, "high": 0.6, "significant": True, "reference": None, "nature": DIFFERS,
           "natural_effect": -0.31, "natural_low": -0.5, "natural_high": -0.1,
           "natural_pairs": 24}  # fmt: skip
    said = nature_sentence(row)
    assert said == (
        "In your data: the edit does something the natural feature does not — a response with it −0.31 "
        "[−0.50, −0.10] sd, 24 pairs differ in it."
    )
    assert "**In your data" in finding_line(row)  # a contradiction stands out
    never = {**row, "nature": NEVER, "natural_effect": float("nan")}
    assert nature_sentence(never) == "Never in your data: what the RM would do if it were."
    few = {**row, "nature": TOO_FEW, "natural_effect": float("nan")}
    assert nature_sentence(few) == "In your data: too few pairs differ in it to compare."
    assert nature_sentence({**row, "significant": False}) is None
    assert "In your data" not in finding_line({**row, "significant": False})


def test_an_engines_own_candidates_without_presence_are_features_without_a_detector():
    """A plugin engine that writes its own edits and candidates to the contract before ``present_in``
    existed still runs: its features get no presence (null), so nature says they are not compared."""
    from rmexplain.discovery.base import RoundOutput
    from rmexplain.discovery.stages import _round_tables
    from rmexplain.schemas import BIAS_DISCOVERY_CANDIDATES, BIAS_DISCOVERY_EDITS, conform, polars_schema

    older = {k: v for k, v in polars_schema(BIAS_DISCOVERY_CANDIDATES).items() if k != "present_in"}
    candidates = pl.DataFrame({"feature": ["f"], "description": ["d"], "kind": ["rewrite"], "source": ["s"],
                               "engine": ["mine"], "round": [1], "n_present": [0], "support": [0.0],
                               "n_added": [1], "n_removed": [0], "screen_rm": [None], "screen_t": [None]},
                              schema=older)  # fmt: skip
    edits = pl.DataFrame(schema=polars_schema(BIAS_DISCOVERY_EDITS))
    output = RoundOutput(edits=edits, candidates=candidates)
    _, made = _round_tables(output, _comparisons(["A."], ["B."]), {}, "mine", 1, SkipRecorder())
    made = conform(made, BIAS_DISCOVERY_CANDIDATES, "discovery candidates")
    assert made["present_in"].to_list() == [None]
