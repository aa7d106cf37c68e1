"""Replication built in: every significant finding estimated again on two halves of the pairs
(docs/findings.md, "holds in both halves").

The split, the halves' effects and the verdict are checked by hand on tables of 3, 6, 10 and 20 pairs.
Dataset ``d``'s pairs ``d\\0<i>`` sort by their sha256 (first hex digits, computed once and written here):

- 3 pairs: 1 (74bd…), 2 (79c8…), 0 (7eee…): A = {1, 0}, B = {2};
- 6 pairs: 3 (3ac9…), 1, 4 (762e…), 2, 0, 5 (dd1e…): A = {3, 4, 0}, B = {1, 2, 5};
- 10 pairs: 9, 3, 7, 1, 4, 2, 6, 0, 8, 5: A = {9, 7, 4, 6, 8}, B = {3, 1, 2, 0, 5}.
"""

from __future__ import annotations

import hashlib
import logging

import numpy as np
import polars as pl
import pytest

from rmexplain.analysis.bootstrap import BootstrapSettings, interval, pair_id, resample_counts
from rmexplain.discovery.estimate import discovered_biases, round_effects
from rmexplain.effects.analysis import (
    EffectSettings,
    effects_table,
    half_weights,
    split_halves,
)
from rmexplain.effects.base import EffectInput, RewardChanges
from rmexplain.findings.landing import finding_line, findings_rst
from rmexplain.findings.summary import (
    FindingSettings,
    attribute_findings,
    discovered_findings,
    findings_frame,
)
from rmexplain.ids import text_id
from rmexplain.schemas import ATTRIBUTE_EFFECTS, DISCOVERED_BIASES, EFFECT_CHANGES, conform, polars_schema

LOG = logging.getLogger("test_replication")
HALVES = ["half_a_effect", "half_b_effect", "replicates"]
A10, B10 = [9, 7, 4, 6, 8], [3, 1, 2, 0, 5]


# ── the split ─────────────────────────────────────────────────────────────────────────────────────────────
def test_the_split_sorts_the_pairs_by_the_sha256_of_their_id_and_deals_them_alternately():
    digests = {"0": "7eeee9a233d8", "1": "74bd9049d14e", "2": "79c8e8cb636a", "3": "3ac9b21a32c9",
               "4": "762e1157191b", "5": "dd1ee3ffb18c"}  # fmt: skip
    for source, digest in digests.items():
        assert hashlib.sha256(f"d\0{source}".encode()).hexdigest().startswith(digest)
    # sorted: 3, 1, 4, 2, 0, 5 -> A 3, 4, 0; B 1, 2, 5; a pair's copies (d-s1-3, d-s7-1) go with it
    ids = ["d-s0-0", "d-s0-1", "d-s0-2", "d-s0-3", "d-s0-4", "d-s0-5", "d-s1-3", "d-s7-1"]
    assert split_halves(ids, "d").tolist() == [0, 1, 1, 0, 0, 1, 0, 1]
    assert split_halves(ids[::-1], "d").tolist() == [1, 0, 1, 0, 0, 1, 1, 0]  # the ids' order: no matter
    assert pair_id("d-s0-3", "d") == "d\x003" == pair_id("d-s1-3", "d")
    assert pair_id("x-1", "d") == "\x01x-1"  # an id of another form is its own pair
    # 3 pairs: 1 (74bd…), 2 (79c8…), 0 (7eee…)
    assert split_halves(["d-s0-0", "d-s0-1", "d-s0-2"], "d").tolist() == [0, 0, 1]


def test_a_halfs_weights_are_its_own_bootstrap_and_jackknife_zero_outside():
    clusters = np.array([0, 1, 2, 3, 4, 5, 3])  # comparison 6 copies pair 3
    within = split_halves(["d-s0-0", "d-s0-1", "d-s0-2", "d-s0-3", "d-s0-4", "d-s0-5", "d-s1-3"], "d") == 0
    settings = BootstrapSettings(n_resamples=40, seed=7)
    point, counts, jack = half_weights(clusters, within, settings)
    assert point.tolist() == [[1, 0, 0, 1, 1, 0, 1]]
    inside = [0, 3, 4, 6]
    assert (counts[:, [1, 2, 5]] == 0).all()
    assert np.array_equal(counts[:, inside], resample_counts(np.array([0, 3, 4, 3]), settings))  # its seed
    assert (counts[:, 3] == counts[:, 6]).all()  # a pair's copies are drawn together
    assert counts[:, [0, 3, 4]].sum(axis=1).tolist() == [3] * 40  # three pairs drawn per resample
    assert jack.tolist() == [[0, 0, 0, 1, 1, 0, 1], [1, 0, 0, 0, 1, 0, 0], [1, 0, 0, 1, 0, 0, 1]]


# ── attribute effects ─────────────────────────────────────────────────────────────────────────────────────
def effect_input(d: dict[str, list[float]], n: int) -> EffectInput:
    """Comparisons d-s0-0 … d-s0-<n-1>; per attribute and comparison one better edit with y = +d and one
    worse with y = −d, so that two_way's effect over any set of pairs is the mean of their d (None: no edit
    in that comparison)."""
    comparison, attribute, direction, y = [], [], [], []
    for a, values in enumerate(d.values()):
        for c, value in enumerate(values):
            if value is None:
                continue
            comparison += [c, c]
            attribute += [a, a]
            direction += [1, -1]
            y += [value, -value]
    empty = np.zeros(0, dtype=np.int64)
    size = len(y)
    return EffectInput(
        comparisons=[f"d-s0-{c}" for c in range(n)],
        attributes=list(d),
        comparison=np.array(comparison),
        attribute=np.array(attribute),
        direction=np.array(direction),
        round=np.ones(size, dtype=np.int64),
        chain=np.array(direction),
        length_change=np.zeros(size),
        rms={"rm": RewardChanges(np.array(y), 1.0, empty, empty, np.zeros(0), np.zeros(0))},
        dataset="d",
    )


SETTINGS = EffectSettings(("two_way",), "two_way", BootstrapSettings(n_resamples=400))


def table_of(d: dict[str, list[float]], n: int) -> dict[str, dict]:
    table = effects_table(effect_input(d, n), ["rm"], {}, SETTINGS, LOG)
    return {row["attribute"]: row for row in table.iter_rows(named=True)}


def test_each_half_is_the_estimator_on_its_own_pairs_by_hand():
    tone = [0.6, 0.5, 0.7, 0.4, 0.55, 0.65]  # pair c: d_c
    clarity = [0.3, -0.3, 0.2, -0.2, 0.1, -0.1]  # mean 0: not significant
    rows = table_of({"tone": tone, "clarity": clarity}, 6)
    assert rows["tone"]["effect"] == pytest.approx(np.mean(tone)) and rows["tone"]["significant"]
    # A = {3, 4, 0}: (0.4 + 0.55 + 0.6) / 3; B = {1, 2, 5}: (0.5 + 0.7 + 0.65) / 3
    assert rows["tone"]["half_a_effect"] == pytest.approx((0.4 + 0.55 + 0.6) / 3)
    assert rows["tone"]["half_b_effect"] == pytest.approx((0.5 + 0.7 + 0.65) / 3)
    assert rows["tone"]["replicates"] is True  # every pair above 0: each half's interval excludes it
    assert not rows["clarity"]["significant"]
    assert [rows["clarity"][c] for c in HALVES] == [None, None, None]  # not significant: not computed


def test_a_finding_that_reverses_in_one_half_or_is_unsure_there_does_not_hold():
    small = [0.01, -0.02, 0.02, 0.0, -0.01, 0.015, -0.015, 0.005, 0.01, -0.005]
    tone = [0.5 + s for s in small]
    clarity = [(2.0 if c in A10 else -0.3) + s for c, s in enumerate(small)]  # B's pairs: the other way
    verbosity = [1.0 + s for s in small]
    for c, value in zip(B10, [0.9, 0.8, -0.6, 0.7, -0.5], strict=True):  # B: mean +0.26, unsure
        verbosity[c] = value
    rows = table_of({"tone": tone, "clarity": clarity, "verbosity": verbosity}, 10)
    for name, d in (("tone", tone), ("clarity", clarity), ("verbosity", verbosity)):
        assert rows[name]["significant"] and rows[name]["effect"] > 0
        assert rows[name]["half_a_effect"] == pytest.approx(np.mean([d[c] for c in A10]))
        assert rows[name]["half_b_effect"] == pytest.approx(np.mean([d[c] for c in B10]))
    assert rows["tone"]["replicates"] is True
    assert rows["clarity"]["half_b_effect"] < 0 and rows["clarity"]["replicates"] is False  # the sign
    # verbosity's B has the sign, but its interval (BCa over B's 5 pairs, at the level expanded for 5 pairs)
    # holds 0: by hand, B's resampled means and leave-one-pair-out means
    b = np.array([verbosity[c] for c in B10])
    counts = resample_counts(np.arange(5), SETTINGS.bootstrap)
    boot = counts @ b / counts.sum(axis=1)
    jack = np.array([np.delete(b, j).mean() for j in range(5)])
    low, high, _ = interval(b.mean(), boot, jack, SETTINGS.bootstrap)
    assert b.mean() > 0 and low < 0 < high
    assert rows["verbosity"]["replicates"] is False


def test_too_few_pairs_in_a_half_leave_it_null():
    # tone's edits in A's five pairs and one of B's (3): significant over 6 pairs, B's half holds 1 of them
    tone = [0.5 + 0.01 * c if c in A10 or c == 3 else None for c in range(10)]
    rows = table_of({"tone": tone}, 10)
    assert rows["tone"]["significant"] and rows["tone"]["pairs"] == 6
    assert rows["tone"]["half_a_effect"] == pytest.approx(np.mean([tone[c] for c in A10]))
    assert rows["tone"]["half_b_effect"] is None and rows["tone"]["replicates"] is None
    # over 3 pairs (A = {1, 0}, B = {2}) nothing is significant: too few pairs to say; no halves computed
    rows = table_of({"tone": [0.5, 0.6, 0.55]}, 3)
    assert not rows["tone"]["significant"] and rows["tone"]["low"] > 0 and rows["tone"]["pairs"] == 3
    assert [rows["tone"][c] for c in HALVES] == [None, None, None]
    said = finding_line(finding_of(rows["tone"])).replace("\\", "")
    assert "(too few pairs to say)." in said and "not significant" not in said


def test_the_halves_are_the_same_every_time_and_leave_the_whole_sample_alone(monkeypatch):
    tone, clarity = [0.6, 0.5, 0.7, 0.4, 0.55, 0.65], [0.3, -0.3, 0.2, -0.2, 0.1, 0.0]
    data = effect_input({"tone": tone, "clarity": clarity}, 6)
    first = effects_table(data, ["rm"], {}, SETTINGS, LOG)
    assert first.equals(effects_table(data, ["rm"], {}, SETTINGS, LOG))
    keyed = first.with_columns(dataset=pl.lit("d"), method=pl.lit("rules"))
    assert conform(keyed, ATTRIBUTE_EFFECTS, "e")["replicates"].to_list() == [True, None]
    one_pair = effects_table(effect_input({"tone": [0.5]}, 1), ["rm"], {}, SETTINGS, LOG)
    assert one_pair.select(HALVES).rows() == [(None, None, None)]  # no interval, nothing significant
    tables, _ = discovery_tables({"bang": [1.0, 0.5, 0.7, 1.0, 1.2, 0.6]}, 6)
    found = round_effects(*tables, {"rm": None}, "d", BootstrapSettings(300), 0.0, LOG)
    # without the halves, every other column is what it was
    monkeypatch.setattr("rmexplain.effects.analysis._replicate", lambda *args: None)
    monkeypatch.setattr("rmexplain.discovery.estimate.replicate_features", lambda *args: None)
    assert effects_table(data, ["rm"], {}, SETTINGS, LOG).drop(HALVES).equals(first.drop(HALVES))
    alone = round_effects(*tables, {"rm": None}, "d", BootstrapSettings(300), 0.0, LOG)
    assert alone.drop(HALVES).equals(found.drop(HALVES)) and found["replicates"].to_list() == [True]


# ── discovered features ───────────────────────────────────────────────────────────────────────────────────
def discovery_tables(changes: dict[str, list[float]], n: int):
    """n comparisons; each feature (four at most) adds a character to every chosen response (no word
    changes, so the effects are mean changes: γ cannot be measured and is left out, for the halves as for
    the whole)."""
    ids = [f"d-s0-{c}" for c in range(n)]
    comparisons = pl.DataFrame({"comparison_id": ids, "dataset": "d", "prompt": [f"q{c}" for c in range(n)],
                                "chosen": [f"Yes {c}." for c in range(n)], "rejected": "No."})  # fmt: skip
    marks = dict(zip(changes, "!~^*", strict=False))
    edits = pl.DataFrame(
        [{"feature": f, "direction": 1, "source_text": f"Yes {c}.", "edited_text": f"Yes {c}.{marks[f]}",
          "comparison_id": ids[c], "target": "chosen"} for f in changes for c in range(n)]
    )  # fmt: skip
    candidates = pl.DataFrame({"feature": list(changes), "engine": "offline", "description": list(changes),
                               "support": 0.0, "round": 1, "kind": "punctuation", "source": "test",
                               "n_added": 1, "n_removed": 0})  # fmt: skip
    chosen = [float(c + 1) for c in range(n)]
    originals = {"rm": pl.DataFrame({"comparison_id": ids, "rm": "rm", "reward_chosen": chosen,
                                     "reward_rejected": [0.0] * n})}  # fmt: skip
    scored = [(f, c) for f in changes for c in range(n) if changes[f][c] is not None]  # None: unscored
    rewards = {"rm": pl.DataFrame({
        "text_id": [text_id(f"q{c}", f"Yes {c}.{marks[f]}") for f, c in scored],
        "reward": [chosen[c] + changes[f][c] for f, c in scored],
    })}  # fmt: skip
    sd = float(np.std(chosen + [0.0] * n, ddof=1))
    return (comparisons, edits, candidates, originals, rewards), sd


def discovered(changes: dict[str, list[float]], n: int, **options) -> tuple[dict[str, dict], float]:
    tables, sd = discovery_tables(changes, n)
    effects = round_effects(*tables, {"rm": None}, "d", BootstrapSettings(400), 0.0, LOG, **options)
    table = discovered_biases(effects, 0.05)
    return {row["feature"]: row for row in table.iter_rows(named=True)}, sd


def test_a_discovered_features_halves_by_hand_and_a_feature_not_significant_left_null():
    bang = [1.0, 0.5, 0.7, 1.0, 1.2, 0.6]  # A = {3, 4, 0}, B = {1, 2, 5}
    tilde = [0.3, -0.3, 0.2, -0.2, 0.1, -0.1]
    rows, sd = discovered({"bang": bang, "tilde": tilde}, 6)
    assert rows["bang"]["effect"] == pytest.approx(np.mean(bang) / sd) and rows["bang"]["significant"]
    assert rows["bang"]["half_a_effect"] == pytest.approx((1.0 + 1.2 + 1.0) / 3 / sd)
    assert rows["bang"]["half_b_effect"] == pytest.approx((0.5 + 0.7 + 0.6) / 3 / sd)
    assert rows["bang"]["replicates"] is True
    assert not rows["tilde"]["significant"] and [rows["tilde"][c] for c in HALVES] == [None, None, None]
    # with the fdr, the round's own table computes no halves where p > fdr; the same rows come out
    tables, _ = discovery_tables({"bang": bang, "tilde": tilde}, 6)
    cut = round_effects(*tables, {"rm": None}, "d", BootstrapSettings(400), 0.0, LOG, fdr=0.05)
    every = round_effects(*tables, {"rm": None}, "d", BootstrapSettings(400), 0.0, LOG)
    assert cut.filter(pl.col("feature") == "tilde").select(HALVES).rows() == [(None, None, None)]
    assert every.filter(pl.col("feature") == "tilde")["half_a_effect"].is_not_null().all()  # then nulled
    assert discovered_biases(cut, 0.05).equals(discovered_biases(every, 0.05))
    assert every.equals(round_effects(*tables, {"rm": None}, "d", BootstrapSettings(400), 0.0, LOG))


def test_a_discovered_feature_that_reverses_in_a_half_does_not_hold():
    # 20 pairs sort 13, 9, 16, 15, 17, 3, 7, 1, 4, 2, 18, 6, 0, 12, 10, 8, 11, 19, 14, 5
    half = split_halves([f"d-s0-{c}" for c in range(20)], "d")
    a, b = [c for c in range(20) if half[c] == 0], [c for c in range(20) if half[c] == 1]
    assert a == [0, 4, 7, 10, 11, 13, 14, 16, 17, 18] and b == [1, 2, 3, 5, 6, 8, 9, 12, 15, 19]
    bang = [3.0 + 0.01 * c if half[c] == 0 else -0.4 - 0.01 * c for c in range(20)]
    rows, sd = discovered({"bang": bang}, 20)
    row = rows["bang"]
    assert row["significant"] and row["effect"] > 0
    assert row["half_a_effect"] == pytest.approx(np.mean([bang[c] for c in a]) / sd)
    assert row["half_b_effect"] == pytest.approx(np.mean([bang[c] for c in b]) / sd)
    assert row["half_a_effect"] > 0 > row["half_b_effect"]
    assert row["replicates"] is False


def test_too_few_pairs_for_a_discovered_feature_and_the_first_screens_words():
    # bang scored in A's five pairs and one of B's (3): 6 pairs, B's half holds 1 of them; tilde in 4 pairs
    bang = [1.0 + 0.01 * c if c in A10 or c == 3 else None for c in range(10)]
    tilde = [1.0 + 0.01 * c if c in (9, 7, 3, 1) else None for c in range(10)]
    rows, sd = discovered({"bang": bang, "tilde": tilde}, 10)
    row = rows["bang"]
    assert row["significant"] and row["pairs"] == 6
    assert row["half_a_effect"] == pytest.approx(np.mean([bang[c] for c in A10]) / sd)
    assert row["half_b_effect"] is None and row["replicates"] is None
    table = conform(pl.DataFrame([row]), DISCOVERED_BIASES, "discovered")
    (finding,) = findings_frame(discovered_findings(table, {}, FindingSettings())).iter_rows(named=True)
    assert finding["replication"] == "too few pairs to split"
    line = finding_line(finding).replace("\\", "")
    assert "Replication: too few pairs to split." in line and "holds in both" not in line
    # four pairs, however sure: not tested (p NaN), too few pairs to say
    few = rows["tilde"]
    assert few["pairs"] == 4 and np.isnan(few["p_value"]) and not few["significant"] and few["low"] > 0
    table = conform(pl.DataFrame([few]), DISCOVERED_BIASES, "discovered")
    (finding,) = findings_frame(discovered_findings(table, {}, FindingSettings())).iter_rows(named=True)
    assert finding["pairs"] == 4 and "(too few pairs to say)." in finding_line(finding).replace("\\", "")


def finding_of(row: dict) -> dict:
    """The attribute finding of one ATTRIBUTE_EFFECTS row (no edits behind it)."""
    effects = conform(pl.DataFrame([{"dataset": "d", "method": "rules", **row}]), ATTRIBUTE_EFFECTS, "e")
    changes = pl.DataFrame(schema=polars_schema(EFFECT_CHANGES))
    texts = pl.DataFrame(schema={"edit_id": pl.String, "source_text": pl.String, "text": pl.String})
    rows = attribute_findings(effects, changes, texts, {}, FindingSettings())
    return findings_frame(rows).row(0, named=True)


def test_the_first_screen_says_whether_each_finding_holds_in_both_halves():
    small = [0.01, -0.02, 0.02, 0.0, -0.01, 0.015, -0.015, 0.005, 0.01, -0.005]
    clarity = [(2.0 if c in A10 else -0.3) + s for c, s in enumerate(small)]
    rows = table_of({"tone": [0.5 + s for s in small], "clarity": clarity, "verbosity": small}, 10)
    tone, clarity_row, verbosity = (finding_of(rows[a]) for a in ("tone", "clarity", "verbosity"))
    assert tone["replication"] == "holds in both halves"
    assert clarity_row["replication"] == "does not hold in both halves"
    assert not verbosity["significant"] and verbosity["replication"] is None
    said = finding_line(tone).replace("\\", "")
    a, b = (f"{x:+.2f}".replace("-", "−") for x in (tone["half_a_effect"], tone["half_b_effect"]))
    assert f"Replication: holds in both halves (A {a}, B {b})." in said
    assert "does not hold in both halves (A +2" in finding_line(clarity_row).replace("\\", "")
    assert "Replication" not in finding_line(verbosity)
    frame = findings_frame([tone, clarity_row, verbosity])
    block = findings_rst(frame.with_columns(leading=pl.lit(True)), ["d"], ["rm"], 0.95, "1. Findings", None)
    assert "it holds in both halves when each half's effect has its sign" in block.replace("\\", "")
