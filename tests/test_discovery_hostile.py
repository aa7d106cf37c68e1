"""Discovery's estimate on hostile data: comparison ids that look like seeds, an undefined length slope, an RM
that scores every edit alike, and a reward sd a few responses dominate — each named, none silent."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable

import numpy as np
import polars as pl
import pytest

from rmexplain.analysis.bootstrap import BootstrapSettings
from rmexplain.discovery.base import ADD
from rmexplain.discovery.estimate import (
    AddedEffect,
    discovered_biases,
    discovery_input,
    dominating_responses,
    fitted,
    round_effects,
)
from rmexplain.effects.base import RewardChanges
from rmexplain.ids import text_id

LOG = logging.getLogger("test_discovery_hostile")
Reward = Callable[[str, str], float]
Edit = Callable[[str], str]


def _noise(text: str) -> float:
    """A fixed pseudo-random number in [0, 1) per text (``hash`` varies between processes)."""
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 2**32


def _comparisons(n: int, ids: list[str] | None = None, one_length: bool = False) -> pl.DataFrame:
    ids = ids or [f"hh-s0-{i}" for i in range(n)]
    chosen = [
        f"Answer {i}." if one_length else f"Answer number {i}" + " really" * (i % 3) + "." for i in range(n)
    ]
    rejected = [f"No {i}." if one_length else f"No {i}" + " more" * (i % 4) + "." for i in range(n)]
    return pl.DataFrame({"comparison_id": ids, "dataset": ["hh"] * n, "prompt": [f"q{i}" for i in range(n)],
                         "chosen": chosen, "rejected": rejected})  # fmt: skip


BANG: dict[str, Edit] = {"bang": lambda t: t.replace(".", "!")}
HEDGE: dict[str, Edit] = {**BANG, "hedge": lambda t: "I think " + t}  # +2 words every time
PAD: dict[str, Edit] = {**BANG, "pad": lambda t: t + " Indeed" * (1 + len(t) % 3)}  # +1 to +3 words


def _base(prompt: str, text: str) -> float:  # an RM that rewards "!" by 1 and length a little
    return _noise(prompt + text) + 1.0 * ("!" in text) + 0.1 * len(text.split())


def _effects(
    comparisons: pl.DataFrame,
    features: dict[str, Edit],
    rms: dict[str, tuple[Reward, Reward]],
    references: dict[str, str | None] | None = None,
) -> pl.DataFrame:
    """``discovered_biases`` of one round: every feature added to every chosen response, each RM's
    (originals, edits) reward functions."""
    rows = [
        {"feature": f, "direction": ADD, "source_text": text, "edited_text": edit(text), "comparison_id": c,
         "target": "chosen"}
        for c, text in comparisons.select("comparison_id", "chosen").iter_rows()
        for f, edit in features.items()
    ]  # fmt: skip
    edits = pl.DataFrame(rows)
    candidates = pl.DataFrame({"feature": list(features), "engine": "offline", "description": "x",
                               "support": 0.0, "round": 1, "kind": "k", "source": "test", "n_added": 1,
                               "n_removed": 0})  # fmt: skip
    prompts = dict(comparisons.select("comparison_id", "prompt").iter_rows())
    originals, rewards = {}, {}
    for rm, (original, edited) in rms.items():
        originals[rm] = pl.DataFrame({"comparison_id": comparisons["comparison_id"], "rm": rm, **{
            f"reward_{t}": [original(p, x) for p, x in comparisons.select("prompt", t).iter_rows()]
            for t in ("chosen", "rejected")}})  # fmt: skip
        texts = edits.select("comparison_id", "edited_text").rows()
        rewards[rm] = pl.DataFrame({"text_id": [text_id(prompts[c], t) for c, t in texts],
                                    "reward": [edited(prompts[c], t) for c, t in texts]})  # fmt: skip
    references = references or dict.fromkeys(rms)
    effects = round_effects(comparisons, edits, candidates, originals, rewards, references, "hh",
                            BootstrapSettings(200), 0.1, LOG)  # fmt: skip
    return discovered_biases(effects, 0.05)


def _originals(comparisons: pl.DataFrame, reward: Reward) -> list[float]:
    rows = comparisons.select("prompt", "chosen", "rejected").iter_rows()
    return [reward(p, x) for p, c, r in rows for x in (c, r)]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def _row(table: pl.DataFrame, rm: str, feature: str) -> dict:
    return table.filter((pl.col("rm") == rm) & (pl.col("feature") == feature)).row(0, named=True)


def test_ordinary_data_warns_of_nothing(caplog):
    with caplog.at_level(logging.INFO, logger=LOG.name):
        table = _effects(_comparisons(12), PAD, {"rm": (_base, _base)})
    assert _warnings(caplog) == []
    assert any("length sensitivity γ" in m for m in caplog.messages)
    assert table["effect"].is_finite().all() and _row(table, "rm", "bang")["significant"]


# ── clusters from the dataset ─────────────────────────────────────────────────────────────────────────────
def test_source_ids_that_look_like_seeds_stay_distinct_pairs():
    # a user's ids r-s0-x, r-s1-x, …: without the dataset the last "-s<digits>-" reads as the seed, so every
    # comparison of seed 0 is one "pair" and the intervals have no width
    ids = [f"hh-s0-r-s{i}-x" for i in range(11)] + ["hh-s1-r-s0-x"]  # the last: pair r-s0-x drawn again
    comparisons = _comparisons(12, ids)
    edits = pl.DataFrame({"feature": "bang", "direction": ADD, "source_text": "a b.", "edited_text": "a b!",
                          "comparison_id": ids, "target": "chosen"})  # fmt: skip
    data = discovery_input(comparisons, edits, {}, {}, "hh")
    assert data.dataset == "hh"
    data.rms["rm"] = _changes(np.arange(12.0))
    _, _, jack = fitted(AddedEffect(), data, "rm", None, BootstrapSettings(50))
    assert jack.shape[0] == 11  # one jackknife sample per pair: the two copies of r-s0-x are one cluster
    bang = _row(_effects(comparisons, BANG, {"rm": (_base, _base)}), "rm", "bang")
    assert bang["low"] < bang["effect"] < bang["high"] and np.isfinite(bang["p_value"])
    assert bang["n_comparisons"] == 12


def _changes(change: np.ndarray) -> RewardChanges:
    empty = np.zeros(0, dtype=np.int64)
    return RewardChanges(change, 1.0, empty, empty, np.zeros(0), np.zeros(0))


# ── an undefined length slope ─────────────────────────────────────────────────────────────────────────────
def test_length_confounded_with_the_features_falls_back_to_unadjusted_effects_with_a_warning(caplog):
    # "bang" changes no word and "hedge" adds two every time: γ cannot be told from hedge's β
    comparisons = _comparisons(12)
    with caplog.at_level(logging.INFO, logger=LOG.name):
        table = _effects(comparisons, HEDGE, {"rm": (_base, _base)})
    (warning,) = _warnings(caplog)
    assert warning.startswith("RM 'rm' on dataset 'hh': the length sensitivity γ is undefined")
    assert "NOT length-adjusted" in warning and "linear function of the features' directions" in warning
    hedge = _row(table, "rm", "hedge")
    sd = float(np.std(_originals(comparisons, _base), ddof=1))
    chosen = comparisons.select("prompt", "chosen").iter_rows()
    by_hand = np.mean([_base(p, "I think " + c) - _base(p, c) for p, c in chosen]) / sd
    assert hedge["effect"] == pytest.approx(by_hand)  # the plain mean change, γ = 0
    assert hedge["low"] < hedge["effect"] < hedge["high"]


def test_responses_all_of_one_length_fall_back_to_unadjusted_effects_with_a_warning(caplog):
    # every original has two words: no sd of lengths to measure a length change in
    with caplog.at_level(logging.INFO, logger=LOG.name):
        table = _effects(_comparisons(12, one_length=True), HEDGE, {"rm": (_base, _base)})
    (warning,) = _warnings(caplog)
    assert "RM 'rm' on dataset 'hh'" in warning and "NOT length-adjusted" in warning
    assert table["effect"].is_finite().all() and table["p_value"].is_finite().all()


# ── an RM that scores every edit alike ────────────────────────────────────────────────────────────────────
def test_an_rm_that_scores_every_edit_alike_is_named_and_tests_nothing(caplog):
    def constant(prompt: str, text: str) -> float:
        return 5.0

    rms = {"flat": (_base, constant), "base": (_base, _base), "over_flat": (_base, _base)}
    with caplog.at_level(logging.INFO, logger=LOG.name):
        table = _effects(_comparisons(12), PAD, rms, {"flat": None, "base": None, "over_flat": "flat"})
    flat = [m for m in _warnings(caplog) if "same reward" in m]
    said = (
        "gives every scored edit the same reward, so the reward changes measure the source responses, not "
        "the features; no feature is tested for this RM (effect, interval and p-value NaN)"
    )
    assert flat == [
        f"RM 'flat' on dataset 'hh': it {said}",
        f"RM 'over_flat' on dataset 'hh': its reference 'flat' {said}",
    ]
    for rm in ("flat", "over_flat"):
        rows = table.filter(pl.col("rm") == rm)
        assert not rows["significant"].any() and rows["q_value"].is_nan().all()
        assert rows["effect"].is_nan().all() and rows["low"].is_nan().all() and (rows["n"] == 12).all()
        assert rows["robust_effect"].is_nan().all()  # the robust fit is not read either
    assert _row(table, "base", "bang")["significant"]  # the other RMs of the round are tested as before


# ── an RM explained against a copy of itself ──────────────────────────────────────────────────────────────
def test_an_rm_whose_reference_scores_every_edit_alike_is_named_and_its_effects_are_zero(caplog):
    # two names for one model, each the other's reference: every change less the reference's is 0
    rms = {"mine": (_base, _base), "copy": (_base, _base), "base": (_base, _base)}
    with caplog.at_level(logging.INFO, logger=LOG.name):
        table = _effects(_comparisons(12), PAD, rms, {"mine": "copy", "copy": "mine", "base": None})
    said = (
        "every scored edit changes its reward exactly as it changes its reference {!r}'s, so every effect "
        "against that reference is 0; is the reference the same model under another name?"
    )
    assert _warnings(caplog) == [
        f"RM 'mine' on dataset 'hh': {said.format('copy')}",
        f"RM 'copy' on dataset 'hh': {said.format('mine')}",
    ]
    for rm in ("mine", "copy"):
        rows = table.filter(pl.col("rm") == rm)
        assert (rows["effect"].abs() < 1e-12).all() and not rows["significant"].any()
    assert _row(table, "base", "bang")["significant"]  # explained alone, as before


# ── a reward sd dominated by a few responses ──────────────────────────────────────────────────────────────
def test_a_reward_sd_dominated_by_a_few_responses_is_named_with_both_sds(caplog):
    comparisons = _comparisons(30)  # 60 responses: up to two may dominate
    huge = {("q3", comparisons["rejected"][3]), ("q17", comparisons["chosen"][17])}

    def long_loving(prompt: str, text: str) -> float:  # two 20,000-character responses, say
        return _base(prompt, text) + 400.0 * ((prompt, text) in huge)

    with caplog.at_level(logging.INFO, logger=LOG.name):
        table = _effects(comparisons, PAD, {"rm": (long_loving, long_loving)})
    (warning,) = _warnings(caplog)
    values = _originals(comparisons, long_loving)
    rest = [v for v in values if v < 100]
    sd, sd_rest = np.std(values, ddof=1), np.std(rest, ddof=1)
    assert warning.startswith(f"RM 'rm' on dataset 'hh': its reward sd {sd:.4g}, the unit of every effect,")
    assert "by 2 response(s)" in warning and f"without them it is {sd_rest:.4g}" in warning
    assert "hh-s0-17 (chosen)" in warning and "hh-s0-3 (rejected)" in warning
    assert _row(table, "rm", "bang")["reward_sd"] == pytest.approx(sd)  # the numbers themselves unchanged


def test_dominating_responses_the_fewest_and_only_from_twenty_responses():
    def originals(values: list[float]) -> pl.DataFrame:
        half = len(values) // 2
        return pl.DataFrame({"comparison_id": [f"c{i}" for i in range(half)], "reward_chosen": values[:half],
                             "reward_rejected": values[half:]})  # fmt: skip

    spread = [float(v) for v in np.linspace(-1.0, 1.0, 40)]
    assert dominating_responses(originals(spread)) is None
    one = dominating_responses(originals([*spread[:5], 50.0, *spread[6:]]))
    assert one is not None and one[0] == ["c5 (chosen)"]  # the fewest: one response, named alone
    assert one[1] == pytest.approx(np.std([*spread[:5], 50.0, *spread[6:]], ddof=1))
    assert one[2] == pytest.approx(np.std(spread[:5] + spread[6:], ddof=1))
    two = dominating_responses(originals([*spread[:5], 50.0, *spread[6:25], -50.0, *spread[26:]]))
    assert two is not None and sorted(two[0]) == ["c5 (chosen)", "c5 (rejected)"]  # one alone: not enough
    three = [*spread[:5], 50.0, 50.0, 50.0, *spread[8:]]  # three of 40: more than max(2, 1 %) may dominate
    assert dominating_responses(originals(three)) is None
    assert dominating_responses(originals([0.0] * 9 + [50.0] + [0.1] * 8)) is None  # 18 responses: no check


# ── a length slope one pair carries ───────────────────────────────────────────────────────────────────────
def test_a_length_slope_one_pair_carries_is_named_with_the_pair(caplog):
    def one_pair(prompt: str, text: str) -> float:  # length matters to one prompt only: the pair whose
        words = len(text.split())  # padding adds the most words (3)
        return _base(prompt, text) - 0.1 * words + (3.0 * words if prompt == "q1" else 0.0)

    with caplog.at_level(logging.INFO, logger=LOG.name):
        _effects(_comparisons(12), PAD, {"steady": (_base, _base), "one_pair": (one_pair, one_pair)})
    carried = [m for m in _warnings(caplog) if "length sensitivity" in m]
    assert len(carried) == 1, carried
    assert carried[0].startswith("RM 'one_pair' on dataset 'hh': its length sensitivity γ +")
    assert "is carried by one pair: without hh/1 it is " in carried[0]
