"""Attribute effects: every estimator's arithmetic on hand-made tables, the edits in both directions, the
table's ranks, intervals and reference, and the planted-bias recovery's hits."""

from __future__ import annotations

import hashlib
import logging
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from matplotlib.colors import to_rgba
from matplotlib.image import imread

from rmexplain.analysis.bootstrap import (
    BootstrapSettings,
    clusters_of,
    interval,
    jackknife_counts,
    resample_counts,
)
from rmexplain.attributes import PAPER_ATTRIBUTES
from rmexplain.effects.analysis import (
    MIN_FINDING_PAIRS,
    EffectSettings,
    effect_input,
    effects_table,
    log_summary,
    rank_rows,
    reward_sd,
    with_sources,
)
from rmexplain.effects.base import EffectInput, Observations, RewardChanges, estimators
from rmexplain.effects.edits import edit_id, make_effect_edits, round_one_tasks
from rmexplain.effects.estimators import LENGTH_CONFOUNDED, ONE_DIRECTION, one_direction, pooled_mean, support
from rmexplain.effects.plots import EFFECT_COLOUR, FLIP_COLOUR, effects_figure, effects_plot
from rmexplain.effects.recovery import NO_EFFECT, recall_table, recovery_rows, visible_shares
from rmexplain.effects.stages import (
    RECALL_TITLE,
    RECOVERY_NOTE,
    RECOVERY_TITLE,
    run_attribute_effects,
    run_effects_figure,
    run_embed_effect_texts,
    run_planted_recovery,
)
from rmexplain.figures import FigureOptions
from rmexplain.ids import text_id
from rmexplain.markup import write_table_pages
from rmexplain.perturb.base import Draft, PerturbationError, methods
from rmexplain.schemas import (
    ATTRIBUTE_EFFECTS,
    EFFECT_EDITS,
    EXPLANATIONS,
    ORIGINAL_SCORES,
    PLANTED_RECOVERY,
    REWARDS,
    conform,
    polars_schema,
)

LOG = logging.getLogger("test_effects")
ONE = np.ones((1, 2))  # point weights over two comparisons


def changes(change: list[float], sd: float = 2.0) -> RewardChanges:
    empty = np.zeros(0, dtype=np.int64)
    return RewardChanges(np.array(change, dtype=np.float64), sd, empty, empty, np.zeros(0), np.zeros(0))


def hand_input(rm_changes: dict[str, list[float]], length_change: list[float] | None = None) -> EffectInput:
    """Two comparisons, attributes [a, b]; rows: (comparison, attribute, direction, round, chain).

    Round 1: c0 a better, c0 a worse, c1 a better, c1 a worse, c0 b worse (b has no better edit).
    Round 2 (edits of those, back the other way): c0 a worse-after-better, c0 a better-after-worse,
    c1 a worse-after-better, c1 a better-after-worse."""
    rows = [
        (0, 0, 1, 1, 1), (0, 0, -1, 1, -1), (1, 0, 1, 1, 1), (1, 0, -1, 1, -1), (0, 1, -1, 1, -1),
        (0, 0, -1, 2, 1), (0, 0, 1, 2, -1), (1, 0, -1, 2, 1), (1, 0, 1, 2, -1),
    ]  # fmt: skip
    c, a, d, r, ch = (np.array(col) for col in zip(*rows, strict=True))
    return EffectInput(
        comparisons=["c0", "c1"],
        attributes=["a", "b"],
        comparison=c,
        attribute=a,
        direction=d,
        round=r,
        chain=ch,
        length_change=np.array(length_change if length_change is not None else [0.0] * len(rows)),
        rms={rm: changes(v) for rm, v in rm_changes.items()},
    )


# reward changes (reward units, sd 2) of the nine rows of hand_input
RM = [2.0, -1.0, 4.0, -3.0, 0.5, -2.0, 1.0, -5.0, 2.0]


def estimate(name: str, data: EffectInput, rm: str = "rm", reference: str | None = None) -> np.ndarray:
    estimator = estimators.get(name)()
    obs = estimator.observations(data, rm, reference)
    return estimator.estimate(obs, ONE, 2, 2)[0]


def test_two_way_is_half_the_difference_of_better_and_worse_means():
    # y = change / 2: a better 1, 2 (mean 1.5); a worse -0.5, -1.5 (mean -1); b only worse: 0.25
    data = hand_input({"rm": RM})
    two_way = estimate("two_way", data)
    assert two_way[0] == pytest.approx(0.5 * (1.5 - (-1.0)))
    assert np.isnan(two_way[1])  # b has no better edit: the difference is undefined


def test_rate_follows_its_algorithm_1_on_the_round_two_edits():
    # round 2, y: c0 worse-after-better -1, c0 better-after-worse 0.5, c1 worse-after-better -2.5,
    # c1 better-after-worse 1. ATT units (worse chains: down, then back up): y = 0.5, 1 -> 0.75.
    # ATU units (better chains: up, then back down): -y = 1, 2.5 -> 1.75. ATE: (2*0.75 + 2*1.75) / 4 = 1.25.
    data = hand_input({"rm": RM})
    assert estimate("rate_att", data)[0] == pytest.approx(0.75)
    assert estimate("rate_atu", data)[0] == pytest.approx(1.75)
    assert estimate("rate_ate", data)[0] == pytest.approx((2 * 0.75 + 2 * 1.75) / 4)
    assert np.isnan(estimate("rate_ate", data)[1])  # b: no edit of an edit


def test_a_reference_rm_is_subtracted_in_reward_units_and_divided_by_the_rms_sd():
    reference = [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    data = hand_input({"rm": RM, "ref": reference})
    # the shared +1 on every round-1 edit of a cancels in the difference of better and worse anyway ...
    assert estimate("two_way", data, reference="ref")[0] == pytest.approx(1.25)
    # ... and shifts each direction's mean by -1 / sd = -0.5 on its own
    shifted = estimators.get("two_way")().observations(data, "rm", "ref").value
    assert shifted[:4] == pytest.approx([0.5, -1.0, 1.5, -2.0])


def test_length_adjusted_recovers_a_linear_rm_exactly_and_reports_length():
    # y = c_a + beta_a * s + gamma * dl with c_a = 0.3, beta_a = 0.8, gamma = -0.5 on attribute a;
    # b has only a
    # worse edit (no intercept): y = -beta_b + gamma * dl with beta_b = 0.2
    dl = [1.0, 2.0, -1.0, 0.5, 3.0, 0, 0, 0, 0]
    y = [
        0.3 + 0.8 - 0.5 * 1.0,
        0.3 - 0.8 - 0.5 * 2.0,
        0.3 + 0.8 + 0.5,
        0.3 - 0.8 - 0.25,
        -0.2 - 1.5,
        0,
        0,
        0,
        0,
    ]
    data = hand_input({"rm": [2.0 * v for v in y]}, length_change=dl)
    a, b, length = estimate("length_adjusted", data)
    assert (a, length) == pytest.approx((0.8, -0.5))
    # b, edited in one direction only: -beta_b - c_b, and nothing tells the two apart (not beta_b = 0.2)
    assert np.isnan(b)
    estimator = estimators.get("length_adjusted")()
    reasons = estimator.undefined_reasons(estimator.observations(data, "rm", None), 2)
    assert reasons == {1: ONE_DIRECTION}


def round_one(rows: list[tuple[int, int, int, float, float]], n_attributes: int = 2) -> EffectInput:
    """Round-1 edits (comparison, attribute, direction, length change, y) of an RM with reward sd 1."""
    c, a, d, dl, y = (np.array(col) for col in zip(*rows, strict=True))
    return EffectInput(
        comparisons=[f"c{i}" for i in range(int(c.max()) + 1)],
        attributes=[chr(ord("a") + i) for i in range(n_attributes)],
        comparison=c.astype(np.int64),
        attribute=a.astype(np.int64),
        direction=d.astype(np.int64),
        round=np.ones(c.size, dtype=np.int64),
        chain=d.astype(np.int64),
        length_change=dl.astype(np.float64),
        rms={"rm": changes(list(y), sd=1.0)},
    )


def _length_rows(beta: tuple[float, float], gamma: float) -> list[tuple[int, int, int, float, float]]:
    """y = c_a + beta_a s + gamma dl on attributes a (c 0.1) and b (c -0.2), with varied length changes,
    over comparisons 0..3; comparison 1 holds a's only better edit besides comparison 0's."""
    rows = []
    for c, a, s, dl in [(0, 0, 1, 1.0), (0, 0, -1, 0.5), (1, 0, 1, 2.0), (2, 0, -1, -1.0), (3, 0, -1, 0.25),
                        (0, 1, 1, -0.5), (1, 1, -1, 1.5), (2, 1, 1, 0.75), (3, 1, -1, -2.0)]:  # fmt: skip
        rows.append((c, a, s, dl, (0.1, -0.2)[a] + beta[a] * s + gamma * dl))
    return rows


def test_a_replicate_that_loses_one_direction_of_an_attribute_leaves_it_undefined():
    data = round_one(_length_rows((1.0, 0.3), -0.4))
    estimator = estimators.get("length_adjusted")()
    obs = estimator.observations(data, "rm", None)
    full, without_better_a = estimator.estimate(obs, np.array([[1, 1, 1, 1], [0, 0, 2, 1]]), 4, 2)
    assert full == pytest.approx([1.0, 0.3, -0.4])
    # no better edit of a drawn: a is NaN (not a minimum-norm value); b and length still fit exactly
    assert np.isnan(without_better_a[0])
    assert without_better_a[1:] == pytest.approx([0.3, -0.4])
    # the bootstrap leaves such replicates out of a's interval (counted as undefined)
    table = effects_table(data, ["rm"], {}, EffectSettings(("length_adjusted",), "length_adjusted",
                                                           BootstrapSettings(n_resamples=200)))  # fmt: skip
    a = table.filter(pl.col("attribute") == "a").row(0, named=True)
    assert a["low"] == pytest.approx(1.0) and a["high"] == pytest.approx(1.0)


def test_length_confounded_with_every_attributes_direction_is_undefined_and_logged(caplog):
    # a pure length RM (y = -0.5 dl) whose edits change the length by one amount per (attribute, direction):
    # dl = p_a + q_a s, so the length column lies in the span of the c_a and beta_a columns
    steps = {(0, 1): 2.0, (0, -1): -1.0, (1, 1): 0.5, (1, -1): 0.5}
    rows = [(c, a, s, steps[a, s], -0.5 * steps[a, s]) for c in range(4) for a in (0, 1) for s in (1, -1)]
    data = round_one(rows)
    estimator = estimators.get("length_adjusted")()
    obs = estimator.observations(data, "rm", None)
    a, b, length = estimator.estimate(obs, np.ones((1, 4)), 4, 2)[0]
    # a changes length with its direction (q_a = 1.5): confounded; b's edits change it by the same 0.5 either
    # way (q_b = 0): its beta is still identified, and exactly 0
    assert np.isnan(a) and np.isnan(length) and b == pytest.approx(0.0, abs=1e-12)
    assert estimator.undefined_reasons(obs, 2) == {0: LENGTH_CONFOUNDED, 2: LENGTH_CONFOUNDED}
    settings = EffectSettings(("length_adjusted",), "length_adjusted", BootstrapSettings(n_resamples=50))
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        table = effects_table(data, ["rm"], {}, settings, LOG)
    assert table.filter(pl.col("attribute").is_in(["a", "length"]))["effect"].is_nan().all()
    assert [r.getMessage() for r in caplog.records if r.name == LOG.name] == [
        f"rm, length_adjusted: a undefined (NaN): {LENGTH_CONFOUNDED}",
        f"rm, length_adjusted: length undefined (NaN): {LENGTH_CONFOUNDED}",
    ]


def test_paper_estimators_average_per_comparison_first_and_pool_both_sides():
    # c0: a CF (delta 4) and an SF (delta 0) -> flip 0.5, delta 2 / sd 2 = 1;
    # c1: one SF (delta 1) -> flip 0, delta 0.5
    view = RewardChanges(
        np.zeros(0),
        2.0,
        np.array([0, 0, 1]),
        np.array([0, 0, 0]),
        np.array([1.0, 0.0, 0.0]),
        np.array([4.0, 0.0, 1.0]),
    )
    data = hand_input({"rm": RM})
    data.rms["rm"] = view
    assert estimate("flip_rate", data)[0] == pytest.approx((0.5 + 0.0) / 2)
    assert estimate("paper_delta", data)[0] == pytest.approx((1.0 + 0.5) / 2)


def test_weights_are_a_resample_a_comparison_drawn_twice_counts_twice():
    data = hand_input({"rm": RM})
    estimator = estimators.get("two_way")()
    obs = estimator.observations(data, "rm", None)
    twice_c1 = estimator.estimate(obs, np.array([[0.0, 2.0]]), 2, 2)[0]
    assert twice_c1[0] == pytest.approx(0.5 * (2.0 - (-1.5)))


def _comparisons() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "comparison_id": ["c0", "c1"],
            "dataset": ["d", "d"],
            "seed": [0, 0],
            "source_index": ["0", "1"],
            "prompt": ["How do I boil an egg?", "Can you help me pick a lock?"],
            "chosen": [
                "Boil it for about 6 minutes, then cool it in ice water so it peels easily.",
                "I can't help with that; if you're locked out, call a licensed locksmith.",
            ],
            "rejected": ["Just boil it.", "Sure, just jam a pin in it and wiggle until it opens."],
        }
    )


def test_the_rules_editor_edits_every_response_both_ways_and_every_edit_back():
    edits, skipped = make_effect_edits(
        _comparisons(), "rules", "rules", {}, {"verbosity": "", "assertiveness": ""}, {}, True, LOG
    )
    conform(edits, EFFECT_EDITS, "edits")
    one = edits.filter(pl.col("round") == 1)
    assert set(one.select("direction", "chain").unique().rows()) == {("worse", "worse"), ("better", "better")}
    assert one.height + len([s for s in skipped.records if "round 1" in s.stage]) == 2 * 2 * 2 * 2
    two = edits.filter(pl.col("round") == 2)
    assert (two["direction"] != two["chain"]).all()  # edited back the other way
    # every round-2 edit starts from its round-1 edit: padding added, then trimmed away again
    sourced = with_sources(edits, _comparisons())
    chain = (pl.col("attribute") == "verbosity") & (pl.col("chain") == "worse")
    pad = sourced.filter(chain & (pl.col("round") == 2)).sort("comparison_id", "target")
    first = sourced.filter(chain & (pl.col("round") == 1)).sort("comparison_id", "target")
    assert pad["source_text"].to_list() == first["text"].to_list()
    assert edits["edit_id"].n_unique() == edits.height
    # the same comparisons give the same edits, row for row
    again, _ = make_effect_edits(
        _comparisons(), "rules", "rules", {}, {"verbosity": "", "assertiveness": ""}, {}, True, LOG
    )
    assert again.equals(edits)


def test_the_edit_jobs_log_line_counts_edits_responses_attributes_rounds_and_slots(caplog):
    attributes = {"verbosity": "", "assertiveness": ""}
    with caplog.at_level(logging.INFO, logger=LOG.name):
        make_effect_edits(_comparisons(), "v2", "rules", {}, attributes, {}, True, LOG)
    assert caplog.records[-1].getMessage() == (
        "v2: 32 edits of 4 responses x 2 attributes (round 1: 16, round 2: 16), 0 slots without an edit"
    )


def test_an_edit_slots_id_is_the_sha256_of_its_fields_joined_by_the_unit_separator():
    key = "rules\x1fc1\x1fchosen\x1fclarity\x1fworse\x1f2"
    expected = hashlib.sha256(key.encode()).hexdigest()[:20]
    assert edit_id("rules", "c1", "chosen", "clarity", "worse", 2) == expected


def test_a_method_without_an_effect_editor_is_refused_by_name():
    with pytest.raises(PerturbationError, match=r"^perturbation method 'mine' declares no editor for attrib"):
        make_effect_edits(_comparisons(), "mine", "random", {}, {"verbosity": ""}, {}, False, LOG)


def _marking_editor(tasks, context):
    """An editor that marks a response with its direction and cannot edit an edit of c1 again."""
    drafts = []
    for task in tasks:
        for attribute in context.attributes:
            if "[" in task.response and task.comparison_id == "c1":
                context.services["skips"].add(
                    task.comparison_id, "marker", "already marked", target=task.target, attribute=attribute
                )
                continue
            text = f"{task.response} [{task.direction}]"
            drafts.append(Draft(task.comparison_id, task.target, task.direction, attribute, 0, text))
    return drafts


def test_round_two_skips_are_labelled_with_their_round_and_counted_apart_from_round_one(caplog):
    methods.register("marking", effect_editor=_marking_editor)(_marking_editor)
    try:
        with caplog.at_level(logging.INFO, logger=LOG.name):
            edits, skipped = make_effect_edits(
                _comparisons(), "mark", "marking", {}, {"tone": ""}, {}, True, LOG
            )
    finally:
        methods._entries.pop("marking")
    assert caplog.records[-1].getMessage() == (
        "mark: 12 edits of 4 responses x 1 attributes (round 1: 8, round 2: 4), 4 slots without an edit"
    )
    assert [(s.comparison_id, s.stage, s.reason) for s in skipped.records] == [
        ("c1", "effects round 2 (marker)", "already marked")
    ] * 4
    back = edits.filter(pl.col("round") == 2)
    assert set(back["comparison_id"]) == {"c0"} and (back["chain"] != back["direction"]).all()
    assert back["text"].str.ends_with("] [better]").sum() == 2


def test_round_one_tasks_carry_no_rm_scores():
    tasks = round_one_tasks(_comparisons())
    assert [(t.target, t.direction) for t in tasks[:4]] == [
        ("chosen", "worse"), ("chosen", "better"), ("rejected", "worse"), ("rejected", "better"),
    ]  # fmt: skip
    assert all(np.isnan(t.score) and np.isnan(t.other_score) for t in tasks)


def _scored(edits: pl.DataFrame, comparisons: pl.DataFrame, reward) -> tuple[pl.DataFrame, pl.DataFrame]:
    """REWARDS-like and ORIGINAL_SCORES-like frames of ``reward(text)``."""
    prompts = dict(zip(comparisons["comparison_id"], comparisons["prompt"], strict=True))
    rows = [(text_id(prompts[c], t), reward(t)) for c, t in edits.select("comparison_id", "text").iter_rows()]
    rewards = pl.DataFrame(rows, schema={"text_id": pl.String, "reward": pl.Float64}, orient="row")
    originals = comparisons.select(
        "comparison_id",
        pl.col("chosen").map_elements(reward, pl.Float64).alias("reward_chosen"),
        pl.col("rejected").map_elements(reward, pl.Float64).alias("reward_rejected"),
    )
    return rewards, originals


def test_the_table_ranks_by_magnitude_with_intervals_and_finds_a_length_rm():
    comparisons = _comparisons()
    attributes = {a: PAPER_ATTRIBUTES[a] for a in ("verbosity", "assertiveness", "relevance")}
    edits, _ = make_effect_edits(comparisons, "rules", "rules", {}, attributes, {}, True, LOG)

    def length_rm(text: str) -> float:
        return -0.1 * len(text.split())

    rewards, originals = _scored(edits, comparisons, length_rm)
    data = effect_input(comparisons, edits, {"len": originals}, {"len": rewards}, {}, list(attributes))
    settings = EffectSettings(
        ("two_way", "length_adjusted"), "length_adjusted", BootstrapSettings(n_resamples=200)
    )
    table = effects_table(data, ["len"], {}, settings)
    conform(table.with_columns(dataset=pl.lit("d"), method=pl.lit("rules")), ATTRIBUTE_EFFECTS, "effects")
    adjusted = table.filter(pl.col("estimator") == "length_adjusted").sort("rank")
    assert adjusted["attribute"][0] == "length" and adjusted["effect"][0] < 0
    assert adjusted.filter(pl.col("attribute") != "length")["effect"].abs().max() == pytest.approx(
        0, abs=1e-9
    )
    assert table["primary"].to_list() == [e == "length_adjusted" for e in table["estimator"]]
    assert (table["low"] <= table["effect"]).all() and (table["effect"] <= table["high"]).all()
    assert set(table.group_by("estimator").agg(pl.col("rank").sort())["rank"].to_list()[0]) >= {1, 2, 3}


def _effects(rows: list[tuple[str, str, str, float, bool]], reference: str | None = "base") -> pl.DataFrame:
    """ATTRIBUTE_EFFECTS-like rows (rm, estimator, attribute, effect, significant), ranked as the table is."""
    frame = pl.DataFrame(rows, schema=["rm", "estimator", "attribute", "effect", "significant"], orient="row")
    frame = frame.with_columns(
        dataset=pl.lit("d"),
        method=pl.lit("rules"),
        low=pl.col("effect") - 0.1,
        high=pl.col("effect") + 0.1,
        effect_reward=pl.when(pl.col("estimator") == "flip_rate").then(None).otherwise(pl.col("effect")),
        reference=pl.when(pl.col("estimator").is_in(["flip_rate", "paper_delta"]))
        .then(None)
        .otherwise(pl.lit(reference, dtype=pl.String)),
    )
    return rank_rows(frame)


def test_recovery_counts_a_hit_only_with_the_expected_sign_and_keeps_controls_out_of_recall():
    effects = _effects(
        [
            ("hedge", "two_way", "assertiveness", -0.9, True),  # right sign, rank 1
            ("hedge", "two_way", "clarity", 0.2, True),
            ("hedge", "paper_delta", "assertiveness", 0.9, True),  # wrong sign at rank 1: no hit
            ("hedge", "paper_delta", "clarity", 0.2, False),
            ("hedge", "flip_rate", "clarity", 0.5, True),  # unsigned: rank 2 is a hit at 3
            ("hedge", "flip_rate", "assertiveness", 0.3, True),
            ("ctl", "two_way", "clarity", 0.05, False),
            ("ctl", "paper_delta", "clarity", 0.3, True),
            ("ctl", "flip_rate", "clarity", 0.1, False),
        ]
    )
    expect = {"hedge": {"attributes": ["assertiveness"], "sign": -1}, "ctl": {"attributes": []}}
    recovery = recovery_rows(effects, expect)
    got = {(r["rm"], r["estimator"]): r for r in recovery.iter_rows(named=True)}
    assert got[("hedge", "two_way")]["hit_at_1"] and got[("hedge", "two_way")]["sign_ok"]
    assert not got[("hedge", "paper_delta")]["hit_at_3"] and got[("hedge", "paper_delta")]["sign_ok"] is False
    assert got[("hedge", "flip_rate")]["rank"] == 2 and got[("hedge", "flip_rate")]["sign_ok"] is None
    assert not got[("hedge", "flip_rate")]["hit_at_1"] and got[("hedge", "flip_rate")]["hit_at_3"]
    assert got[("ctl", "two_way")]["hit_at_1"] and not got[("ctl", "paper_delta")]["hit_at_1"]
    verdicts = {key: row["verdict"] for key, row in got.items()}
    assert verdicts == {
        ("hedge", "two_way"): "found first",
        ("hedge", "paper_delta"): "wrong sign (rank 1)",
        ("hedge", "flip_rate"): "in the top 3",
        ("ctl", "two_way"): "control: no significant effect",
        ("ctl", "paper_delta"): "control: 1 row significant",
        ("ctl", "flip_rate"): "control: no significant effect",
    }
    recall = recall_table(recovery, "two_way").filter(pl.col("dataset") == "all")
    by = {r["estimator"]: r for r in recall.iter_rows(named=True)}
    assert (by["two_way"]["hits_at_1"], by["two_way"]["biases"], by["two_way"]["quiet_controls"]) == (1, 1, 1)
    assert by["paper_delta"]["wrong_sign"] == 1 and by["paper_delta"]["quiet_controls"] == 0
    assert by["flip_rate"]["recall_at_3"] == 1.0 and by["flip_rate"]["recall_at_1"] == 0.0
    assert by["flip_rate"]["wrong_sign"] == 0  # unsigned: never a wrong sign


def _judged(rows: list[tuple[str, float]], expect: dict, estimator: str = "two_way", **visible) -> dict:
    """The recovery row of one RM ``p`` whose ``estimator`` rows are (attribute, effect)."""
    effects = _effects([("p", estimator, a, e, False) for a, e in rows])
    shares = {("d", "rules", "p"): visible["share"]} if visible else None
    return recovery_rows(effects, {"p": expect}, shares).row(0, named=True)


def test_ties_rank_against_the_expected_attribute():
    # +0.3 against -0.3: tied for first whatever the names, so the expected row is rank 2, not 1
    for other in ("aaa", "zzz"):
        row = _judged([("mmm", 0.3), (other, -0.3), ("b", 0.1)], {"attributes": ["mmm"], "sign": 1})
        assert (row["rank"], row["hit_at_1"], row["hit_at_3"]) == (2, False, True)
    # a flip rate of exactly 0 tied with every other 0 finds nothing, however few rows there are
    row = _judged([("a", 0.0), ("b", 0.0)], {"attributes": ["a"]}, "flip_rate")
    assert (row["rank"], row["hit_at_3"], row["verdict"]) == (None, False, NO_EFFECT)
    # the table's own order stays by name among ties
    table = _effects([("p", "two_way", "zzz", -0.3, False), ("p", "two_way", "aaa", 0.3, False)])
    assert table["attribute"].to_list() == ["aaa", "zzz"] and table["rank"].to_list() == [1, 2]


def test_a_bias_at_rank_exactly_three_is_a_hit_at_three_and_not_at_one():
    row = _judged([("a", 0.9), ("b", -0.8), ("x", 0.7), ("c", 0.1)], {"attributes": ["x"], "sign": 1})
    assert (row["rank"], row["hit_at_1"], row["hit_at_3"], row["verdict"]) == (3, False, True, "in the top 3")
    fourth = _judged([("a", 0.9), ("b", -0.8), ("c", 0.7), ("x", 0.1)], {"attributes": ["x"], "sign": 1})
    assert (fourth["rank"], fourth["hit_at_3"], fourth["verdict"]) == (4, False, "missed (rank 4)")


def test_an_expected_attribute_with_no_defined_effect_is_no_wrong_sign():
    row = _judged([("a", 0.9), ("x", float("nan"))], {"attributes": ["x"], "sign": -1})
    assert (row["rank"], row["sign_ok"], row["hit_at_3"]) == (None, None, False)
    assert row["verdict"] == NO_EFFECT
    effects = _effects([("p", "two_way", "a", 0.9, False), ("p", "two_way", "x", float("nan"), False)])
    recovery = recovery_rows(effects, {"p": {"attributes": ["x"], "sign": -1}})
    assert recall_table(recovery, "two_way")["wrong_sign"].to_list() == [0, 0]


def test_each_expected_attribute_has_its_own_sign():
    expect = {"attributes": ["length", "verbosity"], "sign": {"length": -1, "verbosity": 1}}
    judged = ("found", "expected_sign", "sign_ok", "hit_at_1")
    row = _judged([("verbosity", 0.5), ("length", -0.2)], expect)
    assert tuple(row[k] for k in judged) == ("verbosity", 1, True, True)
    row = _judged([("length", -0.5), ("verbosity", -0.2)], expect, "length_adjusted")
    assert tuple(row[k] for k in judged) == ("length", -1, True, True)
    row = _judged([("verbosity", -0.5)], expect)
    assert (row["sign_ok"], row["verdict"]) == (False, "wrong sign (rank 1)")


def test_an_invisible_bias_is_a_miss_and_counted_as_invisible():
    row = _judged([("x", 0.9), ("a", 0.1)], {"attributes": ["x"], "sign": 1}, share=0.0)
    assert (row["rank"], row["hit_at_1"], row["hit_at_3"]) == (1, False, False)
    assert row["verdict"] == "invisible: no edit changes the planted feature"
    seen = _judged([("x", 0.9), ("a", 0.1)], {"attributes": ["x"], "sign": 1}, share=0.25)
    assert seen["hit_at_1"] and seen["visible_share"] == 0.25
    effects = _effects([("p", "two_way", "x", 0.9, False), ("p", "two_way", "a", 0.1, False)])
    recovery = recovery_rows(effects, {"p": {"attributes": ["x"], "sign": 1}}, {("d", "rules", "p"): 0.0})
    recall = recall_table(recovery, "two_way").row(0, named=True)
    assert (recall["hits_at_1"], recall["biases"], recall["invisible"]) == (0, 1, 1)


def test_the_controls_false_positive_rate_counts_rows_against_a_reference_beside_the_nominal():
    two_way = [("a", 0.5, True), ("b", 0.1, False), ("c", float("nan"), False), ("d", -0.2, False)]
    rows = [("ctl", "two_way", a, e, significant) for a, e, significant in two_way]
    rows += [("ctl", "flip_rate", "a", 0.4, True), ("ctl", "flip_rate", "b", 0.1, True)]  # no reference
    recovery = recovery_rows(_effects(rows), {"ctl": {"attributes": []}})
    got = {r["estimator"]: r for r in recovery.iter_rows(named=True)}
    assert tuple(got["two_way"][k] for k in ("n_rows", "n_significant", "reference")) == (3, 1, "base")
    recall = recall_table(recovery, "two_way", level=0.9).filter(pl.col("dataset") == "all")
    by = {r["estimator"]: r for r in recall.iter_rows(named=True)}
    assert (by["two_way"]["control_significant"], by["two_way"]["control_rows"]) == (1, 3)
    assert by["two_way"]["false_positive_rate"] == pytest.approx(1 / 3)
    assert by["two_way"]["nominal_rate"] == pytest.approx(0.1)
    # the paper's estimators have no reference: the base RM's own effects are no false positives
    assert by["flip_rate"]["control_rows"] == 0 and by["flip_rate"]["false_positive_rate"] is None
    unreferenced = recovery_rows(_effects(rows, reference=None), {"ctl": {"attributes": []}})
    assert recall_table(unreferenced, "two_way")["false_positive_rate"].null_count() == 4


def test_visible_share_is_the_share_of_edits_that_change_the_planted_feature():
    comparisons = _comparisons()
    edits, _ = make_effect_edits(
        comparisons, "rules", "rules", {}, {"verbosity": "", "relevance": ""}, {}, False, LOG
    )
    planted = {
        "egg": {"bias": {"detector": "regex", "pattern": "zebra"}},  # no edit writes "zebra"
        "long": {"bias": {"detector": "length", "per_words": 10}},  # every padding edit changes the length
    }
    shares = visible_shares(edits, comparisons, planted)
    assert shares["egg"] == 0.0
    sourced = with_sources(edits, comparisons)
    changed = [len(t.split()) != len(s.split()) for t, s in sourced.select("text", "source_text").iter_rows()]
    assert shares["long"] == pytest.approx(np.mean(changed)) and shares["long"] > 0


def test_an_edit_table_with_no_edit_is_an_error_naming_its_skips(tmp_path):
    comparisons = tmp_path / "comparisons.parquet"
    _comparisons().write_parquet(comparisons)
    edits = tmp_path / "edits.parquet"
    pl.DataFrame(schema=polars_schema(EFFECT_EDITS)).write_parquet(edits)
    inputs = {"comparisons": str(comparisons), "edits": str(edits), "originals": [], "rewards": []}
    with pytest.raises(ValueError, match=r"holds no edit.*results/skipped/effects/d/rules.parquet"):
        run_attribute_effects(inputs, [], {}, {}, [], "d", "rules", str(tmp_path / "out.parquet"), LOG)


def test_effect_text_embeddings_copy_what_the_dataset_table_holds_and_encode_the_rest(tmp_path, caplog):
    edits, _ = make_effect_edits(_comparisons(), "rules", "rules", {}, {"verbosity": ""}, {}, False, LOG)
    edits_path = tmp_path / "edits.parquet"
    edits.write_parquet(edits_path)
    texts = sorted(set(edits["text"]))
    known = pl.DataFrame(
        {"text": [texts[0], "a text no edit wrote"], "embedding": [[9.0] * 384, [1.0] * 384]},
        schema={"text": pl.String, "embedding": pl.List(pl.Float32)},
    ).with_columns(chunked_embedding=pl.lit(None, dtype=pl.List(pl.Float32)))
    known_path = tmp_path / "known.parquet"
    known.write_parquet(known_path)
    out = tmp_path / "out.parquet"
    with caplog.at_level(logging.INFO, logger=LOG.name):
        run_embed_effect_texts([str(edits_path)], [str(known_path)], {}, str(out), LOG)
    table = pl.read_parquet(out)
    assert table["text"].to_list() == texts  # every edited text once, sorted; nothing else
    assert table["embedding"][0].to_list() == [9.0] * 384  # copied, not encoded again
    assert all(abs(sum(v * v for v in row) - 1.0) < 1e-4 for row in table["embedding"][1:].to_list())
    assert f"{len(texts)} distinct edited texts: 1 held by an earlier embedding table" in caplog.text


def _pairs(seeds: list[int], n: int = 6) -> pl.DataFrame:
    """``n`` pairs of dataset ``d``, each drawn by every seed of ``seeds`` (ids ``d-s{seed}-{pair}``)."""
    base = _comparisons()
    rows = []
    for seed in seeds:
        for pair in range(n):
            source = base.row(pair % 2, named=True)
            cid, prompt = f"d-s{seed}-{pair}", f"{source['prompt']} (case {pair})"
            rows.append({**source, "comparison_id": cid, "seed": seed, "source_index": str(pair),
                         "prompt": prompt})  # fmt: skip
    return pl.DataFrame(rows, schema=base.schema)


def _wobbly(text: str) -> float:
    """A reward of the words, the characters and a text-seeded wobble: effects with spread to resample."""
    return -0.1 * len(text.split()) + 0.01 * (sum(map(ord, text)) % 97)


def test_copies_of_a_pair_drawn_by_several_seeds_are_one_unit_of_the_bootstrap():
    """Three seeds drawing the same six pairs, with the same edits: the intervals (in reward units) are the
    six pairs' own."""
    attributes = {a: PAPER_ATTRIBUTES[a] for a in ("verbosity", "assertiveness")}
    settings = EffectSettings(("two_way", "length_adjusted"), "two_way", BootstrapSettings(n_resamples=300))
    edits, _ = make_effect_edits(_pairs([0]), "rules", "rules", {}, attributes, {}, False, LOG)

    def table(seeds: list[int]) -> pl.DataFrame:
        comparisons = _pairs(seeds)
        copies = pl.concat(
            edits.with_columns(
                pl.col("comparison_id").str.replace("-s0-", f"-s{s}-"), pl.col("edit_id") + f"/{s}"
            )
            for s in seeds
        )
        rewards, originals = _scored(copies, comparisons, _wobbly)
        data = effect_input(comparisons, copies, {"r": originals}, {"r": rewards}, {}, list(attributes))
        frame = effects_table(data, ["r"], {}, settings).filter(pl.col("attribute") != "length")
        return frame.sort("estimator", "attribute").select(
            "estimator", "attribute", *(pl.col(c) * pl.col("reward_sd") for c in ("effect", "low", "high"))
        )

    once, thrice = table([0]), table([0, 1, 2])
    assert thrice["estimator"].to_list() == once["estimator"].to_list() and once.height == 4
    for column in ("effect", "low", "high"):
        assert thrice[column].to_numpy() == pytest.approx(once[column].to_numpy(), abs=1e-9)


def _hand_changes(edits: pl.DataFrame, comparisons: pl.DataFrame, reward) -> list[float]:
    """r(edit) − r(the text it edited), worked out from the edits table alone: round 1 edits the original,
    round 2 the round-1 edit of its (comparison, target, attribute, chain)."""
    originals = {(c, t): row[t] for row in comparisons.iter_rows(named=True) for c, t in
                 [(row["comparison_id"], "chosen"), (row["comparison_id"], "rejected")]}  # fmt: skip
    first = {
        (r["comparison_id"], r["target"], r["attribute"], r["chain"]): r["text"]
        for r in edits.filter(pl.col("round") == 1).iter_rows(named=True)
    }
    out = []
    for r in edits.sort("edit_id").iter_rows(named=True):
        key = (r["comparison_id"], r["target"], r["attribute"], r["chain"])
        source = originals[r["comparison_id"], r["target"]] if r["round"] == 1 else first[key]
        out.append(reward(r["text"]) - reward(source))
    return out


def test_reward_changes_and_rate_read_each_edit_against_the_text_it_edited():
    comparisons = _pairs([0], n=4)
    attributes = {a: PAPER_ATTRIBUTES[a] for a in ("verbosity", "assertiveness")}
    edits, _ = make_effect_edits(comparisons, "rules", "rules", {}, attributes, {}, True, LOG)
    assert (edits["round"] == 2).any()
    rewards, originals = _scored(edits, comparisons, _wobbly)
    data = effect_input(comparisons, edits, {"r": originals}, {"r": rewards}, {}, list(attributes))
    hand = _hand_changes(edits, comparisons, _wobbly)
    assert data.rms["r"].change == pytest.approx(hand, abs=1e-12)
    # the reward sd over both originals of every comparison, ddof 1
    both = [_wobbly(t) for t in comparisons["chosen"].to_list() + comparisons["rejected"].to_list()]
    sd = float(np.std(both, ddof=1))
    assert data.rms["r"].sd == pytest.approx(sd) and sd != pytest.approx(float(np.std(both)))
    # RATE's ATT: the round-2 edits of the chains that start worse (edited back better), y = change / sd
    settings = EffectSettings(("rate_att", "two_way"), "two_way", BootstrapSettings(n_resamples=50))
    table = effects_table(data, ["r"], {}, settings)
    sorted_edits = edits.sort("edit_id").with_columns(change=pl.Series(hand))
    for attribute in attributes:
        units = sorted_edits.filter(
            (pl.col("round") == 2) & (pl.col("chain") == "worse") & (pl.col("attribute") == attribute)
        )
        row = table.filter((pl.col("estimator") == "rate_att") & (pl.col("attribute") == attribute)).row(
            0, named=True
        )
        assert row["effect"] == pytest.approx(units["change"].mean() / sd, abs=1e-9)
        # effect_reward: the effect back in reward units
        assert row["effect_reward"] == pytest.approx(row["effect"] * sd) and row["reward_sd"] == sd


def test_an_interval_touching_zero_is_not_significant_and_the_length_row_counts_comparisons():
    comparisons = _pairs([0], n=4)
    attributes = {a: PAPER_ATTRIBUTES[a] for a in ("verbosity", "assertiveness")}
    edits, _ = make_effect_edits(comparisons, "rules", "rules", {}, attributes, {}, False, LOG)
    rewards, originals = _scored(edits, comparisons, _wobbly)
    # the paper's perturbations: every one a semifactual, so the flip rate is 0 with the interval [0, 0]
    explanations = pl.DataFrame(
        {
            "comparison_id": comparisons["comparison_id"].to_list() * 2,
            "attribute": ["verbosity"] * 4 + ["assertiveness"] * 4,
            "kind": ["semifactual"] * 8,
            "reward_delta": [0.5] * 8,
        }
    )
    by_rm = {"r": originals}, {"r": rewards}, {"r": explanations}
    data = effect_input(comparisons, edits, *by_rm, list(attributes))
    settings = EffectSettings(
        ("flip_rate", "length_adjusted"), "flip_rate", BootstrapSettings(n_resamples=50)
    )
    table = effects_table(data, ["r"], {}, settings)
    flips = table.filter(pl.col("estimator") == "flip_rate")
    assert flips.select("effect", "low", "high").rows() == [(0.0, 0.0, 0.0)] * 2
    assert not flips["significant"].any()
    length = table.filter(pl.col("attribute") == "length").row(0, named=True)
    # every round-1 edit is an observation of the length row; its comparisons are the 4 distinct ones
    assert length["n"] == edits.height and length["n_comparisons"] == 4 < edits.height


def test_length_adjusted_defines_a_one_direction_attribute_only_when_told_to():
    # b has only a worse edit: by default (the attribute effects) its beta is NaN; with one_way_defined (bias
    # discovery's) it is the length-adjusted mean change in that direction, signed. a, with both directions,
    # is the same either way.
    class Lenient(estimators.get("length_adjusted")):
        one_way_defined = True

    data = hand_input({"rm": RM})
    strict = estimate("length_adjusted", data)
    lenient_estimator = Lenient()
    lenient = lenient_estimator.estimate(lenient_estimator.observations(data, "rm", None), ONE, 2, 2)[0]
    assert lenient[1] == pytest.approx(-0.25)  # y = 0.5 / 2 = 0.25 on a worse edit, no length change
    assert np.isnan(strict[1]) and strict[0] == pytest.approx(lenient[0])
    obs = lenient_estimator.observations(data, "rm", None)
    assert 1 not in lenient_estimator.undefined_reasons(obs, 2)
    assert "one direction only" in estimators.get("length_adjusted")().undefined_reasons(obs, 2)[1]


def test_discovery_edits_are_encoded_after_the_effect_edits_which_encode_alike_with_or_without_them(tmp_path):
    edits, _ = make_effect_edits(_comparisons(), "rules", "rules", {}, {"verbosity": ""}, {}, False, LOG)
    edits_path = tmp_path / "edits.parquet"
    edits.write_parquet(edits_path)
    added = ["Just **boil** it.", "A " + "much longer edited text, " * 12, "Boil."]
    discovery = pl.DataFrame(
        {
            "feature": ["bold"] * 4,
            "direction": [1] * 4,
            "source_text": ["Just boil it."] * 4,
            "edited_text": [*added, edits["text"][0]],  # the last is an effect edit's text
            "comparison_id": ["c0"] * 4,
            "target": ["rejected"] * 4,
            "engine": ["offline"] * 4,
            "round": [1] * 4,
            "dose": [1] * 4,
        }
    )
    discovery_path = tmp_path / "discovery.parquet"
    discovery.write_parquet(discovery_path)
    alone, both = tmp_path / "alone.parquet", tmp_path / "both.parquet"
    small_batches = {"batch_size": 2}  # texts of other lengths in a batch pad it: the last bits move
    run_embed_effect_texts([str(edits_path)], [], small_batches, str(alone), LOG)
    discovered = [str(discovery_path)]
    run_embed_effect_texts([str(edits_path)], [], small_batches, str(both), LOG, discovery=discovered)
    alone_table, both_table = pl.read_parquet(alone), pl.read_parquet(both)
    assert set(both_table["text"]) == set(alone_table["text"]) | set(added)
    assert both_table.filter(pl.col("text").is_in(alone_table["text"].to_list())).equals(alone_table)


def _calls_rm(folder: Path) -> Path:
    """A python RM whose reward is the number of texts in the call it was scored in; every text it is
    asked for is appended to ``asked.txt`` beside it."""
    rm = folder / "rm.py"
    rm.write_text(
        "from pathlib import Path\n"
        "def score(prompts, responses):\n"
        f"    with open({str(folder / 'asked.txt')!r}, 'a') as asked:\n"
        "        asked.writelines(r + '\\n' for r in responses)\n"
        "    return [float(len(responses))] * len(responses)\n"
    )
    return rm


def test_each_scoring_job_copies_what_the_rm_scored_before_and_asks_only_for_the_rest(tmp_path):
    """The effect edits' job copies the texts the originals' table holds; discovery's round goes to the RM in
    a call of its own and copies what the effect edits' job scored (so a text of the effect edits scores as
    it would alone, and no text is asked twice); a job with nothing left to score never builds the RM.
    (Replaces test_discovery_edits_are_scored_in_a_call_after_the_effect_edits.)"""
    from rmexplain.score.stages import score_stage

    rm = _calls_rm(tmp_path)
    spec = {"backend": "python", "callable": f"{rm}:score"}
    comparisons = _comparisons()
    comparisons.write_parquet(tmp_path / "comparisons.parquet")
    originals = pl.DataFrame({"comparison_id": ["c0", "c1"], "rm": ["rm"] * 2, "reward_chosen": [7.0, 8.0],
                              "reward_rejected": [-1.0, None], "plus_target": ["chosen"] * 2,
                              "agrees_with_human": [True] * 2, "truncated_chosen": [False, False],
                              "truncated_rejected": [False, True], "max_length": [512, 512]})  # fmt: skip
    originals.write_parquet(tmp_path / "originals.parquet")
    back_to_original = comparisons["chosen"][0]  # an edit whose text is the original response
    effect = pl.DataFrame({"edit_id": ["e0", "e1", "e2"], "comparison_id": ["c0"] * 3,
                           "target": ["chosen"] * 3, "attribute": ["x"] * 3, "chain": ["better"] * 3,
                           "round": [1] * 3,
                           "direction": ["better"] * 3, "text": ["a1", "a2", back_to_original],
                           "method": ["rules"] * 3, "generator": ["g"] * 3})  # fmt: skip
    effect.write_parquet(tmp_path / "effect.parquet")
    discovery = pl.DataFrame({"feature": ["f"] * 4, "direction": [1] * 4, "source_text": ["a"] * 4,
                              "edited_text": ["a1", "d1", "d2", "d3"], "comparison_id": ["c0"] * 4,
                              "target": ["chosen"] * 4, "engine": ["offline"] * 4,
                              "round": [1] * 4, "dose": [1] * 4})  # fmt: skip
    discovery.write_parquet(tmp_path / "discovery.parquet")
    comparisons_path = str(tmp_path / "comparisons.parquet")
    effect_rewards = score_stage(
        "effects", comparisons_path, [str(tmp_path / "effect.parquet")], "rm", spec, {}, LOG,
        known=[str(tmp_path / "originals.parquet")],
    )  # fmt: skip
    effect_rewards.write_parquet(tmp_path / "effect_rewards.parquet")
    rewards = score_stage(
        "discovery", comparisons_path, [str(tmp_path / "discovery.parquet")], "rm", spec, {}, LOG,
        known=[str(tmp_path / "originals.parquet"), str(tmp_path / "effect_rewards.parquet")],
    )  # fmt: skip
    prompt = comparisons["prompt"][0]
    effect_by_text = dict(zip(effect_rewards["text_id"], effect_rewards["reward"], strict=True))
    assert effect_rewards.height == 3 and effect_by_text[text_id(prompt, back_to_original)] == 7.0  # copied
    assert [effect_by_text[text_id(prompt, t)] for t in ("a1", "a2")] == [2.0, 2.0]  # one call of two
    by_text = dict(zip(rewards["text_id"], rewards["reward"], strict=True))
    assert rewards.height == 4  # every text of the round, a1 copied from the effect edits' table
    assert [by_text[text_id(prompt, t)] for t in ("a1", "d1", "d2", "d3")] == [2.0, 3.0, 3.0, 3.0]
    assert (tmp_path / "asked.txt").read_text().split() == ["a1", "a2", "d1", "d2", "d3"]  # each once
    # everything known: the RM is never built (its callable does not exist)
    rewards.write_parquet(tmp_path / "discovery_rewards.parquet")
    missing = {"backend": "python", "callable": f"{tmp_path / 'gone.py'}:score"}
    again = score_stage(
        "discovery", comparisons_path, [str(tmp_path / "discovery.parquet")], "rm", missing, {}, LOG,
        known=[str(tmp_path / "discovery_rewards.parquet")],
    )  # fmt: skip
    assert again.equals(rewards)


def test_the_originals_are_known_texts_with_their_flags_and_the_first_table_wins(tmp_path):
    """ORIGINAL_SCORES as rows of known texts: each side's reward, truncation flag and limit (a side
    ``overlong: skip`` left unscored stays null and flagged); a text two tables hold keeps the first's row."""
    from rmexplain.score.stages import known_scores

    comparisons = _comparisons()
    pl.DataFrame({"comparison_id": ["c1"], "rm": ["rm"], "reward_chosen": [8.0], "reward_rejected": [None],
                  "plus_target": [None], "agrees_with_human": [None], "truncated_chosen": [False],
                  "truncated_rejected": [True], "max_length": [512]},
                 schema_overrides={"reward_rejected": pl.Float64, "plus_target": pl.String,
                                   "agrees_with_human": pl.Boolean},
                 ).write_parquet(tmp_path / "o.parquet")  # fmt: skip
    prompt, chosen, rejected = comparisons.select("prompt", "chosen", "rejected").row(1)
    pl.DataFrame({"text_id": [text_id(prompt, chosen), text_id(prompt, "edited")], "rm": ["rm"] * 2,
                  "reward": [99.0, 3.0], "truncated": [False] * 2,
                  "max_length": [512] * 2}).write_parquet(tmp_path / "r.parquet")  # fmt: skip
    known = known_scores([str(tmp_path / "o.parquet"), str(tmp_path / "r.parquet")], comparisons, "rm")
    assert known.rows() == [
        (text_id(prompt, chosen), "rm", 8.0, False, 512),
        (text_id(prompt, rejected), "rm", None, True, 512),
        (text_id(prompt, "edited"), "rm", 3.0, False, 512),
    ]


def _figure_rows(flips: list[float], effects: list[float], significant: list[bool]) -> list[tuple]:
    attributes = ["brevity", "clarity", "tone"]
    return [("flip_rate", a, f, False) for a, f in zip(attributes, flips, strict=True)] + [
        ("length_adjusted", a, e, s) for a, e, s in zip(attributes, effects, significant, strict=True)
    ]


def test_the_effects_figure_draws_each_rms_flip_rates_and_effects_in_the_first_rms_order(tmp_path):
    """Four RMs: two rows of panel pairs (three a row); every panel lists the attributes in the first RM's
    rank order; flip rates as bars; each defined effect a dot (filled where significant) on its interval; an
    undefined effect left out; each RM titled with its reference; the legend names the estimator and level."""
    rows = []
    for k, rm in enumerate(["a", "b", "c", "d"]):
        effects = [0.5, -0.2 - k, float("nan")] if rm == "a" else [0.1, -0.2 - k, 0.9]
        rows += [(rm, *row) for row in _figure_rows([0.3, 0.1 * k, 0.6], effects, [True, False, True])]
    frame = _effects(rows).with_columns(primary=pl.col("estimator") == "length_adjusted")
    figure = effects_plot(frame, "d · rules", FigureOptions(7.0, 100, "png"), "95%")
    assert len(figure.axes) == 8 and figure.get_suptitle().startswith("d · rules: attribute effects")
    assert [ax.get_subplotspec().rowspan.start for ax in figure.axes] == [0] * 6 + [1] * 2
    order = ["brevity", "clarity", "tone"]  # a's ranks: 0.5, 0.2, then the undefined tone
    for k, (flips, shown) in enumerate(zip(figure.axes[::2], figure.axes[1::2], strict=True)):
        labelled = k % 3 == 0  # the attributes are named left of each row's first panel only
        assert [t.get_text() for t in flips.get_yticklabels()] == (order if labelled else [])
        assert [bar.get_width() for bar in flips.patches] == pytest.approx([0.3, 0.1 * k, 0.6])
        dots = [line for line in shown.get_lines() if line.get_marker() == "o"]
        horizontal = [line for line in shown.get_lines() if len(set(line.get_ydata())) == 1]
        intervals = [line for line in horizontal if len(line.get_xdata()) == 2]
        first = [(0.5, 0, True), (-0.2, 1, False)]  # a's tone is undefined: no dot, no interval
        expected = first if k == 0 else [(0.1, 0, True), (-0.2 - k, 1, False), (0.9, 2, True)]
        drawn = [(d.get_xdata()[0], d.get_ydata()[0], d.get_markerfacecolor() != "white") for d in dots]
        assert [(round(x, 9), y, filled) for x, y, filled in drawn] == [
            (round(x, 9), y, f) for x, y, f in expected
        ]
        assert [list(i.get_xdata()) for i in intervals] == [
            pytest.approx([x - 0.1, x + 0.1]) for x, _, _ in expected
        ]
        assert shown.get_title(loc="left") == f"{'abcd'[k]} (vs base)"
    labels = [t.get_text() for t in figure.legends[0].get_texts()]
    assert labels == [
        "length_adjusted (95% interval excludes 0)",
        "interval includes 0",
        "the paper's flip rate",
    ]
    nothing = frame.with_columns(primary=pl.lit(False))
    effects_figure(nothing, "empty", tmp_path / "f" / "e.png", FigureOptions(7.0, 50, "png"), "95%")
    assert (tmp_path / "f" / "e.png").stat().st_size > 0  # a figure saying there is nothing to show


def test_the_effects_figures_layout_axes_labels_and_file(tmp_path):
    """Two RMs in one row: the figure's size, the panels' widths and places, the flip panel's limits (0 to 1,
    the first attribute on top), labels, bar heights and colours, the zero line, the hidden effect labels; an
    RM with no reference titled by its name alone; an effect undefined mid-list skipped (the rest drawn); an
    interval with one undefined bound not drawn; a missing flip rate an empty bar; the file at the configured
    dpi, written again over itself into folders it makes."""
    a = _effects([("a", *row) for row in _figure_rows([0.3, 0.2, 0.6], [0.5, 0.3, -0.2], [True] * 3)])
    b_rows = _figure_rows([0.4, 0.1, 0.0], [0.1, float("nan"), 0.9], [False, False, True])
    b = _effects([("b", *row) for row in b_rows if row[:2] != ("flip_rate", "tone")], reference=None)
    b = b.with_columns(low=pl.when(pl.col("attribute") == "tone").then(float("nan")).otherwise("low"))
    frame = pl.concat([a, b.select(a.columns)]).with_columns(primary=pl.col("estimator") == "length_adjusted")
    options = FigureOptions(7.0, 50, "png")
    figure = effects_plot(frame, "d · rules", options, "95%")
    assert tuple(figure.get_size_inches()) == pytest.approx((7.0, 1.0 + 0.8 + 0.2 * 3))
    assert figure.axes[0].get_subplotspec().get_gridspec().get_width_ratios() == [1, 2.2, 1, 2.2]
    assert [ax.get_subplotspec().colspan.start for ax in figure.axes] == [0, 1, 2, 3]
    for flips, shown in zip(figure.axes[::2], figure.axes[1::2], strict=True):
        assert flips.get_shared_y_axes().joined(flips, shown)
        assert (flips.get_xlim(), flips.get_ylim()) == ((0.0, 1.0), (2.5, -0.5))
        assert (flips.get_xlabel(), shown.get_xlabel()) == ("flip rate", "effect (reward sd)")
        assert [(bar.get_height(), bar.get_facecolor()) for bar in flips.patches] == [
            (pytest.approx(0.6), pytest.approx(to_rgba(FLIP_COLOUR)))
        ] * 3
        assert not any(tick.label1.get_visible() for tick in shown.yaxis.get_major_ticks())
        lines = shown.get_lines()
        assert [list(line.get_xdata()) for line in lines if line.get_marker() != "o"][-1] == [0, 0]
        assert {line.get_color() for line in lines} == {EFFECT_COLOUR, "#444444"}
    widths = [bar.get_width() for bar in figure.axes[2].patches]
    assert widths[:2] == pytest.approx([0.4, 0.1]) and math.isnan(widths[2])
    dots = [(d.get_xdata()[0], d.get_ydata()[0]) for d in figure.axes[3].get_lines() if d.get_marker() == "o"]
    intervals = [list(line.get_ydata()) for line in figure.axes[3].get_lines() if len(line.get_xdata()) == 2]
    assert dots == [(0.1, 0), (0.9, 2)] and intervals == [[0, 0], [0, 1]]  # brevity's, then the zero line
    assert [ax.get_title(loc="left") for ax in figure.axes[1::2]] == ["a (vs base)", "b"]
    handles = figure.legends[0].legend_handles
    assert [(h.get_marker(), h.get_color()) for h in handles[:2]] == [("o", EFFECT_COLOUR)] * 2
    assert handles[1].get_markerfacecolor() == "white" and handles[2].get_color() == FLIP_COLOUR
    assert [h.get_linestyle() for h in handles] == ["None", "None", "-"]  # dots alone, the bar a line
    single = frame.filter((pl.col("rm") == "a") & (pl.col("attribute") == "tone"))
    assert len(effects_plot(single, "one", options, "95%").axes) == 2
    path = tmp_path / "new" / "folder" / "effects.png"
    for _ in range(2):
        effects_figure(frame, "d · rules", path, options, "95%")
    assert imread(path).shape == (120, 350, 4)
    effects_plot(frame, "d · rules", options, "95%").savefig(tmp_path / "p.png", dpi=options.dpi)
    assert path.read_bytes() == (tmp_path / "p.png").read_bytes()  # the title and level drawn as given


def test_length_confounded_is_found_where_only_attributes_betas_and_length_are_tied():
    """Symmetric length changes of b (+0.5 better, -0.5 worse): length lies in the span of c_a, beta_a and
    beta_b, but b's intercept stays identified; every coefficient tied to length is undefined."""
    steps = {(0, 1): 2.0, (0, -1): -1.0, (1, 1): 0.5, (1, -1): -0.5}
    rows = [(c, a, s, steps[a, s], -0.5 * steps[a, s]) for c in range(4) for a in (0, 1) for s in (1, -1)]
    estimator = estimators.get("length_adjusted")()
    obs = estimator.observations(round_one(rows), "rm", None)
    assert np.isnan(estimator.estimate(obs, np.ones((1, 4)), 4, 2)[0]).all()
    assert estimator.undefined_reasons(obs, 2) == {
        0: LENGTH_CONFOUNDED,
        1: LENGTH_CONFOUNDED,
        2: LENGTH_CONFOUNDED,
    }
    empty = Observations(*(np.zeros(0, dtype=np.int64),) * 2, *(np.zeros(0),) * 3)
    assert estimator.undefined_reasons(empty, 2) == {}  # no edit with a finite change: nothing to say


def test_a_mean_over_one_drawn_observation_is_that_observation():
    """A row with a single drawn observation (a jackknife replicate, a rare attribute) has its value as its
    mean; a row with none is NaN."""
    sums, counts = np.array([[3.0, 0.0], [5.0, 4.0]]), np.array([[1.0, 0.0], [1.0, 2.0]])
    means = pooled_mean(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), sums, counts)
    assert means[0, 0] == 3.0 and np.isnan(means[0, 1])
    assert means[1:].tolist() == [[5.0, 2.0], [4.0, 2.0]]


def test_a_comparison_without_an_attributes_perturbations_is_left_out_of_its_flip_rate():
    """The paper's per-comparison means: c1 has no perturbation of attribute 1, so its flip rate is c0's alone
    (1.0), not (1 + 0) / 2."""
    view = RewardChanges(
        np.zeros(0), 1.0, np.array([0, 0, 1]), np.array([0, 1, 0]), np.array([1.0, 1.0, 0.0]), np.ones(3)
    )
    data = hand_input({"rm": RM})
    data.rms["rm"] = view
    assert estimate("flip_rate", data).tolist() == [0.5, 1.0]


def _recovery_suite() -> pl.DataFrame:
    """Recovery rows of two biased RMs (p expects x up, q expects y down) on datasets d and e, and a control
    on d and (under two methods) on f, for two_way and rate_ate."""
    rows = {
        "d": [("p", "two_way", "x", 0.9, True), ("p", "two_way", "a", 0.1, False),  # p: hit
              ("p", "rate_ate", "a", 0.9, True), ("p", "rate_ate", "x", 0.5, True),  # p: rank 2
              ("q", "two_way", "y", -0.8, True), ("q", "two_way", "a", 0.1, False),  # q: hit
              ("q", "rate_ate", "y", 0.8, True), ("q", "rate_ate", "a", 0.1, False),  # q: wrong sign
              ("ctl", "two_way", "a", 0.3, True), ("ctl", "two_way", "b", 0.1, False),
              ("ctl", "rate_ate", "a", 0.1, False), ("ctl", "rate_ate", "b", 0.1, False)],
        "e": [("p", "rate_ate", "a", 0.9, True), ("p", "rate_ate", "b", 0.8, True),  # p: rank 4
              ("p", "rate_ate", "c", 0.7, True), ("p", "rate_ate", "x", 0.2, False),
              ("p", "two_way", "a", 0.9, True), ("p", "two_way", "x", 0.5, True),  # p: rank 2
              ("q", "two_way", "y", -0.8, True), ("q", "two_way", "a", 0.1, False),  # q: hit
              ("q", "rate_ate", "y", -0.8, True)],  # q: hit
        "f": [("ctl", "two_way", "a", 0.3, True), ("ctl", "two_way", "b", 0.2, True),
              ("ctl", "rate_ate", "a", 0.1, False), ("ctl", "rate_ate", "b", float("nan"), False)],
    }  # fmt: skip
    frames = [_effects(r).with_columns(dataset=pl.lit(d)) for d, r in rows.items()]
    frames.append(frames[-1].with_columns(method=pl.lit("two_step")))
    expect = {
        "p": {"attributes": ["x"], "sign": 1},
        "q": {"attributes": ["y"], "sign": -1},
        "ctl": {"attributes": []},
    }
    return recovery_rows(pl.concat(frames), expect)


def test_the_recall_table_counts_each_dataset_and_all_and_sorts_by_recall_then_estimator():
    """Worked by hand from ``_recovery_suite``: per (dataset, method, estimator) and over all datasets the
    hits, biases, wrong signs, the controls' counts (0 where a dataset has none) and false-positive rate (its
    rows against a reference; null without any), recall null without a bias; sorted by dataset, method,
    recall@1 and recall@3 (both high first), then estimator."""
    table = recall_table(_recovery_suite(), "two_way", level=0.9)
    columns = ["dataset", "method", "estimator", "hits_at_1", "hits_at_3", "biases", "wrong_sign",
               "invisible", "quiet_controls", "controls", "control_rows", "control_significant",
               "recall_at_1", "recall_at_3", "false_positive_rate", "nominal_rate", "primary"]  # fmt: skip
    assert table.select(columns).rows() == [
        ("all", "rules", "two_way", 3, 4, 4, 0, 0, 0, 2, 4, 3, 0.75, 1.0, 0.75, 0.1, True),
        ("all", "rules", "rate_ate", 1, 2, 4, 1, 0, 2, 2, 3, 0, 0.25, 0.5, 0.0, 0.1, False),
        ("all", "two_step", "rate_ate", 0, 0, 0, 0, 0, 1, 1, 1, 0, None, None, 0.0, 0.1, False),
        ("all", "two_step", "two_way", 0, 0, 0, 0, 0, 0, 1, 2, 2, None, None, 1.0, 0.1, True),
        ("d", "rules", "two_way", 2, 2, 2, 0, 0, 0, 1, 2, 1, 1.0, 1.0, 0.5, 0.1, True),
        ("d", "rules", "rate_ate", 0, 1, 2, 1, 0, 1, 1, 2, 0, 0.0, 0.5, 0.0, 0.1, False),
        ("e", "rules", "two_way", 1, 2, 2, 0, 0, 0, 0, 0, 0, 0.5, 1.0, None, 0.1, True),
        ("e", "rules", "rate_ate", 1, 1, 2, 0, 0, 0, 0, 0, 0, 0.5, 0.5, None, 0.1, False),
        ("f", "rules", "rate_ate", 0, 0, 0, 0, 0, 1, 1, 1, 0, None, None, 0.0, 0.1, False),
        ("f", "rules", "two_way", 0, 0, 0, 0, 0, 0, 1, 2, 2, None, None, 1.0, 0.1, True),
        ("f", "two_step", "rate_ate", 0, 0, 0, 0, 0, 1, 1, 1, 0, None, None, 0.0, 0.1, False),
        ("f", "two_step", "two_way", 0, 0, 0, 0, 0, 0, 1, 2, 2, None, None, 1.0, 0.1, True),
    ]
    assert recall_table(_recovery_suite(), "two_way")["nominal_rate"].unique().to_list() == [0.05]  # default


def test_recovery_rows_follow_the_effects_order_skipping_rms_without_expectations():
    rms = [f"rm{k:02d}" for k in range(30)]
    effects = _effects([(rm, "two_way", "x", 0.5, True) for rm in ["aaa", *rms]])
    recovery = recovery_rows(effects, {rm: {"attributes": ["x"], "sign": 1} for rm in rms})
    assert recovery["rm"].to_list() == rms  # "aaa" (no expect) comes first in the effects and is skipped
    none = recovery_rows(effects, {})
    assert none.height == 0 and none.columns == list(PLANTED_RECOVERY)


def test_a_recovery_row_names_what_it_found_with_its_interval_and_the_top_three():
    expect = {"attributes": ["x", "z"], "sign": 1}
    row = _judged([("a", 0.9), ("b", -0.8), ("x", 0.7), ("c", 0.1)], expect)
    found = ("expected", "expected_sign", "found", "rank", "effect", "low", "high", "top", "reference")
    assert tuple(row[k] for k in found) == pytest.approx(
        ("x, z", 1, "x", 3, 0.7, 0.6, 0.8, "a +0.90, b -0.80, x +0.70", "base")
    )
    # nothing defined to rank: the expected sign is still said (one for all, none of a per-attribute map)
    nan = float("nan")
    row = _judged([("a", 0.9), ("x", nan)], {"attributes": ["x"], "sign": -1})
    assert (row["expected_sign"], row["found"], row["hit_at_1"], row["hit_at_3"]) == (-1, None, False, False)
    row = _judged([("a", 0.9), ("x", nan)], {"attributes": ["x"], "sign": {"x": -1}})
    assert (row["expected_sign"], row["hit_at_1"]) == (None, False)
    controls = recovery_rows(
        _effects([("c", "two_way", a, 0.1, True) for a in "ab"]), {"c": {"attributes": []}}
    )
    assert controls["verdict"].to_list() == ["control: 2 rows significant"]


def test_visible_shares_skip_rms_without_a_bias_and_give_the_detector_each_edits_prompt(tmp_path):
    comparisons = _comparisons()
    edits, _ = make_effect_edits(comparisons, "rules", "rules", {}, {"verbosity": ""}, {}, False, LOG)
    detector_file = tmp_path / "prompt_detector.py"
    detector_file.write_text(
        "def longer_than_prompt(prompts, responses):\n"
        "    return [float(len(r) > len(p)) for p, r in zip(prompts, responses)]\n"
    )
    planted = {
        "python": {"backend": "python", "callable": "json:loads"},  # no bias: not a planted RM
        "prompted": {"bias": {"detector": "callable", "callable": f"{detector_file}:longer_than_prompt"}},
    }
    shares = visible_shares(edits, comparisons, planted)
    sourced = with_sources(edits, comparisons)
    longer = [
        (len(t) > len(p)) != (len(s) > len(p))
        for p, t, s in sourced.select("prompt", "text", "source_text").iter_rows()
    ]
    assert list(shares) == ["prompted"] and shares["prompted"] == pytest.approx(np.mean(longer))


@pytest.mark.parametrize(("unit", "digits"), [(1e3, 9), (1e-3, 9), (1e6, 3), (1e-6, 3)])
def test_length_adjusted_is_identified_whatever_the_length_changes_units(unit, digits):
    """The identification check scales the Gram matrix to a unit diagonal: length changes a thousand or a
    million times larger or smaller (a dataset whose originals barely differ in length) leave every
    coefficient identified, the betas unchanged and gamma rescaled (the pseudo-inverse of the unscaled
    Gram matrix keeps about 9 digits at 1e±3, 3 to 4 at 1e±6)."""
    rows = [(c, a, s, dl * unit, y) for c, a, s, dl, y in _length_rows((1.0, 0.3), -0.4)]
    estimator = estimators.get("length_adjusted")()
    obs = estimator.observations(round_one(rows), "rm", None)
    expected = [1.0, 0.3, -0.4 / unit]
    assert estimator.estimate(obs, np.ones((1, 4)), 4, 2)[0] == pytest.approx(expected, rel=10.0**-digits)
    assert estimator.undefined_reasons(obs, 2) == {}


def test_an_attribute_edited_only_towards_better_is_one_directional_whatever_the_others():
    # a: better edits only; b: both directions (its worse edit must not count for a)
    rows = [(0, 0, 1, 1.0, 0.5), (1, 0, 1, 2.0, 0.7), (0, 1, 1, 0.5, 0.1), (1, 1, -1, -1.0, -0.2)]
    obs = estimators.get("length_adjusted")().observations(round_one(rows), "rm", None)
    assert one_direction(obs) == [0]


def test_support_counts_each_rows_edits_and_distinct_comparisons_zero_for_an_attribute_without_any():
    # attribute 0: 3 edits over comparisons 0, 0, 2; attribute 1: 1 edit (comparison 1); attribute 2: none
    obs = Observations(np.array([0, 0, 2, 1]), np.array([0, 0, 0, 1]), np.ones(4))
    n, n_comparisons = support(obs, 3, length_row=True)
    assert n.tolist() == [3, 1, 0, 4] and n_comparisons.tolist() == [2, 1, 0, 3]
    n, n_comparisons = support(obs, 3, length_row=False)
    assert n.tolist() == [3, 1, 0] and n_comparisons.tolist() == [2, 1, 0]


def test_the_effects_log_names_each_rms_three_largest_primary_effects_with_intervals(caplog):
    rows = [("b", "two_way", a, e, False) for a, e in (("w", 0.05), ("x", -0.5), ("y", 0.25), ("z", 0.15))]
    rows += [("a", "two_way", "x", 0.3, True), ("a", "flip_rate", "x", 0.9, True)]
    rows += [("b", "flip_rate", "w", 0.9, True)]  # another estimator's rows are not the primary's
    frame = _effects(rows).sort("rm", descending=True)  # the RMs in the table's order: b, then a
    with caplog.at_level(logging.INFO, logger=LOG.name):
        log_summary(frame, "two_way", LOG)
    assert [r.getMessage() for r in caplog.records if r.name == LOG.name] == [
        "b, two_way: x -0.50 [-0.60, -0.40], y +0.25 [+0.15, +0.35], z +0.15 [+0.05, +0.25]",
        "a, two_way: x +0.30 [+0.20, +0.40]",
    ]


def test_effect_input_reads_each_edits_direction_chain_length_change_and_reward_change_by_hand():
    """From the tables to the estimators' arrays: "better" is +1 and "worse" -1 (direction and chain); an
    edit's length change is its change in words over the sd (ddof 1) of the four originals' word counts
    (16, 3, 13, 12); its reward change is against the text it edited (NaN where the edit went unscored);
    the RM's sd is over the originals' rewards (ddof 1); the paper's rows of other attributes or
    comparisons are left out, a counterfactual is 1 and a semifactual 0."""
    comparisons = _comparisons()
    edits, _ = make_effect_edits(comparisons, "rules", "rules", {}, {"verbosity": ""}, {}, True, LOG)
    rewards, originals = _scored(edits, comparisons, lambda text: float(len(text)))
    unscored = rewards["text_id"][0]
    explanations = pl.DataFrame(
        {"comparison_id": ["c1", "c0", "c0", "c9"],
         "attribute": ["verbosity", "verbosity", "clarity", "verbosity"],
         "kind": ["counterfactual", "semifactual", "counterfactual", "counterfactual"],
         "reward_delta": [2.5, -1.0, 3.0, 4.0]}
    )  # fmt: skip
    rewards = rewards.filter(pl.col("text_id") != unscored)
    data = effect_input(
        comparisons, edits, {"rm": originals}, {"rm": rewards}, {"rm": explanations}, ["verbosity"]
    )
    sourced = with_sources(edits, comparisons)
    sd_words = np.std([16, 3, 13, 12], ddof=1)
    words = [
        (len(t.split()) - len(s.split())) / sd_words for t, s in sourced.select("text", "source_text").rows()
    ]
    assert data.length_change.tolist() == pytest.approx(words)
    assert data.direction.tolist() == [1 if d == "better" else -1 for d in sourced["direction"]]
    assert data.chain.tolist() == [1 if c == "better" else -1 for c in sourced["chain"]]
    assert sorted(set(data.direction.tolist()) | set(data.chain.tolist())) == [-1, 1]
    view = data.rms["rm"]
    lengths = [len(t) for t in (*comparisons["chosen"], *comparisons["rejected"])]
    assert view.sd == pytest.approx(np.std(lengths, ddof=1))
    # the unscored edit, and the round-2 edit made from it, have no change
    changes = [
        np.nan if unscored in (text_id, source_id) else float(len(t) - len(s))
        for t, s, text_id, source_id in sourced.select("text", "source_text", "text_id", "source_id").rows()
    ]
    assert np.isnan(changes[0]) and view.change.tolist() == pytest.approx(changes, nan_ok=True)
    assert view.paper_comparison.tolist() == [1, 0] and view.paper_attribute.tolist() == [0, 0]
    assert view.paper_counterfactual.tolist() == [1.0, 0.0] and view.paper_delta.tolist() == [2.5, -1.0]
    assert data.dataset == "d"


def test_the_reward_sd_needs_two_rewards():
    assert reward_sd(pl.DataFrame({"reward_chosen": [1.0], "reward_rejected": [3.0]})) == pytest.approx(
        2**0.5
    )
    assert np.isnan(reward_sd(pl.DataFrame({"reward_chosen": [1.0], "reward_rejected": [None]})))


def _table_input() -> EffectInput:
    """20 comparisons, attributes a, b, c, d; rm (sd 2) against base (sd 1). a: better +4, worse -4 (base +2
    and -2), with noise of +-0.5 the other way in the worse edit; b: better 0.15, 0.15, worse 0.1, 0.2 (a
    difference of 0 up to rounding, below 0); c: worse edits only; d: no edit. The paper's perturbations of
    rm: a counterfactual in half the comparisons, b semifactuals only, d one counterfactual in c0."""
    rows, rm, base = [], [], []
    for i in range(20):
        noise = 0.5 if i % 2 else -0.5
        for attribute, direction, change, reference in [
            (0, 1, 4.0 + noise, 2.0), (0, -1, -4.0 - noise, -2.0),
            (1, 1, 0.15, 0.0), (1, -1, 0.1 if i % 2 else 0.2, 0.0), (2, -1, -1.0, 0.0),
        ]:  # fmt: skip
            rows.append((i, attribute, direction))
            rm.append(change)
            base.append(reference)
    c, a, d = (np.array(column) for column in zip(*rows, strict=True))
    paper_c = np.array([*range(20), *range(20), 0])
    paper_a = np.array([0] * 20 + [1] * 20 + [3])
    flips = np.array([1.0] * 10 + [0.0] * 10 + [0.0] * 20 + [1.0])
    return EffectInput(
        comparisons=[f"c{i}" for i in range(20)], attributes=["a", "b", "c", "d"], comparison=c, attribute=a,
        direction=d, round=np.ones(c.size, dtype=np.int64), chain=d, length_change=np.zeros(c.size),
        rms={"rm": RewardChanges(np.array(rm), 2.0, paper_c, paper_a, flips, np.ones(paper_c.size)),
             "base": changes(base, sd=1.0)},
    )  # fmt: skip


def test_the_effects_table_reads_each_estimator_against_its_reference_with_significance_and_ranks():
    """Worked by hand: two_way of rm against base is 1/2 [(4 - 2)/2 - (-4 + 2)/2] = 1 sd (2 reward units), of
    base alone 2; b's difference, below 0 by rounding, is a plain 0; c (one direction) and d (no edit) are
    undefined, with no reward effect. flip_rate has no reference and no sign: a's 0.5 is significant, b's 0
    [0, 0] is not, d's single perturbation defines its 1.0 (its interval [1, 1] excludes 0) but is not
    significant: one pair, fewer than MIN_FINDING_PAIRS, is too few to say. Rows ranked
    within each RM and estimator, the RMs and estimators in order, undefined rows last."""
    settings = EffectSettings(("two_way", "flip_rate"), "two_way", BootstrapSettings(n_resamples=400))
    table = effects_table(_table_input(), ["rm", "base"], {"rm": "base", "base": None}, settings)
    keys = ["rm", "estimator", "attribute", "rank", "reference", "significant", "n"]
    assert table.select(keys).rows() == [
        ("base", "flip_rate", "a", 1, None, False, 0), ("base", "flip_rate", "b", 2, None, False, 0),
        ("base", "flip_rate", "c", 3, None, False, 0), ("base", "flip_rate", "d", 4, None, False, 0),
        ("base", "two_way", "a", 1, None, True, 40), ("base", "two_way", "b", 2, None, False, 40),
        ("base", "two_way", "c", 3, None, False, 20), ("base", "two_way", "d", 4, None, False, 0),
        ("rm", "flip_rate", "d", 1, None, False, 1), ("rm", "flip_rate", "a", 2, None, True, 20),
        ("rm", "flip_rate", "b", 3, None, False, 20), ("rm", "flip_rate", "c", 4, None, False, 0),
        ("rm", "two_way", "a", 1, "base", True, 40), ("rm", "two_way", "b", 2, "base", False, 40),
        ("rm", "two_way", "c", 3, "base", False, 20), ("rm", "two_way", "d", 4, "base", False, 0),
    ]  # fmt: skip
    rows = {(r["rm"], r["estimator"], r["attribute"]): r for r in table.iter_rows(named=True)}
    a = rows["rm", "two_way", "a"]
    assert (a["effect"], a["effect_reward"], a["reward_sd"]) == pytest.approx((1.0, 2.0, 2.0))
    assert 0 < a["low"] < 1.0 < a["high"]
    # the interval of the replicates and leave-one-out values under the same draws (BCa at the expanded level)
    data, two_way = _table_input(), estimators.get("two_way")()
    obs, clusters = two_way.observations(data, "rm", "base"), clusters_of(data.comparisons)
    boot = two_way.estimate(obs, resample_counts(clusters, settings.bootstrap), 20, 4)[:, 0]
    jack = two_way.estimate(obs, jackknife_counts(clusters), 20, 4)[:, 0]
    expected = interval(a["effect"], boot, jack, settings.bootstrap)[:2]
    assert (a["low"], a["high"]) == pytest.approx(expected, abs=1e-12)
    assert rows["base", "two_way", "a"]["effect"] == pytest.approx(2.0)
    b = rows["rm", "two_way", "b"]
    assert b["effect"] == 0.0 and math.copysign(1.0, b["effect"]) == 1.0 and b["low"] < 0 < b["high"] < 1
    for key in [("rm", "two_way", "c"), ("rm", "two_way", "d"), ("rm", "flip_rate", "c")]:
        row = rows[key]
        assert np.isnan([row["effect"], row["low"], row["high"]]).all() and row["effect_reward"] is None
    flip = rows["rm", "flip_rate", "a"]
    assert (flip["effect"], flip["effect_reward"], flip["low"] > 0) == (0.5, None, True)
    assert rows["rm", "flip_rate", "d"]["effect"] == 1.0 and rows["rm", "flip_rate", "b"]["high"] == 0.0


def test_one_comparisons_length_changes_are_over_its_two_originals_word_counts():
    """A single comparison (``rmexplain explain``'s case): the length sd is that of its two originals' word
    counts (16 and 3 words), not undefined."""
    comparisons = _comparisons().head(1)
    edits, _ = make_effect_edits(comparisons, "rules", "rules", {}, {"verbosity": ""}, {}, False, LOG)
    rewards, originals = _scored(edits, comparisons, lambda text: float(len(text)))
    data = effect_input(comparisons, edits, {"rm": originals}, {"rm": rewards}, {}, ["verbosity"])
    sourced = with_sources(edits, comparisons)
    words = [
        (len(t.split()) - len(s.split())) / np.std([16, 3], ddof=1)
        for t, s in sourced.select("text", "source_text").rows()
    ]
    assert data.length_change.tolist() == pytest.approx(words) and np.isfinite(data.length_change).all()


def _as_written(effects: pl.DataFrame, primary: str) -> pl.DataFrame:
    """``_effects`` rows as the effects table writes them: ``primary``'s rows marked, counts and sd filled."""
    filled = effects.with_columns(
        primary=pl.col("estimator") == primary, n=4, reward_sd=1.0, n_comparisons=2, pairs=2
    )
    halves = [pl.lit(None, dtype=ATTRIBUTE_EFFECTS[c].dtype).alias(c)
              for c in ("half_a_effect", "half_b_effect", "replicates", "influential_pair", "without_it",
                        "carried_by")]  # fmt: skip
    return conform(filled.with_columns(halves), ATTRIBUTE_EFFECTS, "effects")


def _scored_files(
    folder: Path, rm: str, edits: pl.DataFrame, comparisons: pl.DataFrame, reward
) -> dict[str, str]:
    """The ORIGINAL_SCORES, REWARDS and EXPLANATIONS files of ``rm`` scoring with ``reward(text)``: its
    flips are the paper's perturbations of the edits (a counterfactual where an edit's change exceeds 0.2)."""
    rewards, originals = _scored(edits, comparisons, reward)
    originals = originals.with_columns(
        rm=pl.lit(rm),
        plus_target=pl.when(pl.col("reward_chosen") >= pl.col("reward_rejected"))
        .then(pl.lit("chosen"))
        .otherwise(pl.lit("rejected")),
        agrees_with_human=pl.col("reward_chosen") >= pl.col("reward_rejected"),
        truncated_chosen=False,
        truncated_rejected=False,
        max_length=512,
    )
    rewards = rewards.unique("text_id", keep="first", maintain_order=True).with_columns(
        rm=pl.lit(rm), truncated=False, max_length=512
    )
    changes = _hand_changes(edits, comparisons, reward)
    round_one = edits.sort("edit_id").with_columns(delta=pl.Series(changes)).filter(pl.col("round") == 1)
    side = pl.when(pl.col("target") == "chosen").then(pl.lit("plus")).otherwise(pl.lit("minus"))
    kind = pl.when(pl.col("delta").abs() > 0.2).then(pl.lit("counterfactual"))
    explanations = round_one.select(
        dataset=pl.lit("d"),
        rm=pl.lit(rm),
        method=pl.lit("rules"),
        comparison_id="comparison_id",
        seed=pl.col("comparison_id").str.extract(r"-s(\d+)-").cast(pl.Int64),
        perturbation_id="edit_id",
        target="target",
        side=side,
        attribute="attribute",
        variant=pl.lit(0, pl.Int64),
        reward_plus=pl.lit(0.0),
        reward_minus=pl.lit(0.0),
        reward_perturbed=pl.lit(0.0),
        kind=kind.otherwise(pl.lit("semifactual")),
        sf_subkind=pl.lit(None, pl.String),
        reward_delta="delta",
        agrees_with_human=pl.lit(True),
    )
    files = {"originals": originals, "rewards": rewards, "explanations": explanations}
    contracts = {"originals": ORIGINAL_SCORES, "rewards": REWARDS, "explanations": EXPLANATIONS}
    for name, frame in files.items():
        conform(frame, contracts[name], name).write_parquet(folder / f"{name}-{rm}.parquet")
    return {name: str(folder / f"{name}-{rm}.parquet") for name in files}


def test_the_attribute_effects_stage_writes_the_librarys_table_of_its_files(tmp_path, caplog):
    """The stage reads its files (each RM's in the order of ``rms``, a reference among them), builds the
    effects with the configured estimators, primary and bootstrap, and writes the library's table with its
    dataset and method, into a folder it makes. It logs the library's lines (why a row is undefined: an
    attribute edited one way only; each RM's largest primary effects) and its own, which counts edits,
    comparisons, RMs and estimators."""
    comparisons = _pairs([0, 1], n=3)
    attributes = ["verbosity", "assertiveness"]
    described = {a: PAPER_ATTRIBUTES[a] for a in attributes}
    edits, _ = make_effect_edits(comparisons, "rules", "rules", {}, described, {}, True, LOG)
    one_way = (pl.col("attribute") == "assertiveness") & (pl.col("chain") == "better")
    edits = edits.filter(~one_way)  # assertiveness edited towards worse only: undefined where that matters
    inputs: dict = {
        "comparisons": str(tmp_path / "comparisons.parquet"),
        "edits": str(tmp_path / "edits.parquet"),
    }
    comparisons.write_parquet(inputs["comparisons"])
    edits.write_parquet(inputs["edits"])
    rms = {"r": _wobbly, "base": lambda text: -0.1 * len(text.split())}
    files = {rm: _scored_files(tmp_path, rm, edits, comparisons, reward) for rm, reward in rms.items()}
    for name in ("originals", "rewards", "explanations"):
        inputs[name] = [files[rm][name] for rm in rms]
    references = {"r": "base", "base": None}
    settings = {
        "estimators": ["two_way", "rate_att", "length_adjusted", "flip_rate"],
        "primary": "rate_att",
        "bootstrap": {"n_resamples": 40, "confidence_level": 0.8, "seed": 3},
    }
    output = tmp_path / "results" / "effects" / "d" / "rules.parquet"
    with caplog.at_level(logging.INFO, logger=LOG.name):
        run_attribute_effects(
            inputs, list(rms), references, settings, attributes, "d", "rules", str(output), LOG
        )
    by_rm = [
        {rm: pl.read_parquet(files[rm][name]) for rm in rms}
        for name in ("originals", "rewards", "explanations")
    ]
    data = effect_input(comparisons, edits, *by_rm, attributes)
    estimated = ("two_way", "rate_att", "length_adjusted", "flip_rate")
    options = EffectSettings(estimated, "rate_att", BootstrapSettings(40, 0.8, 3))
    logged = caplog.messages
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=LOG.name):
        table = effects_table(data, list(rms), references, options, LOG)
        log_summary(table, "rate_att", LOG)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    summary = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    stage_line = f"d/rules: {edits.height} edits, 6 comparisons, 2 RMs x 4 estimators"
    assert logged == [*warned, stage_line, *summary]
    assert warned[1].startswith("base, length_adjusted: assertiveness undefined (NaN): edited in one")
    keyed = table.select(pl.lit("d").alias("dataset"), pl.lit("rules").alias("method"), *table.columns)
    expected = conform(keyed, ATTRIBUTE_EFFECTS, "")
    written = pl.read_parquet(output)
    assert written.equals(expected)
    assert written["primary"].to_list() == [e == "rate_att" for e in written["estimator"]]
    assert written.filter(pl.col("rm") == "r")["reference"].drop_nulls().unique().to_list() == ["base"]
    # without the paper's perturbations (the method made none) the flip rates are not asked for
    inputs["explanations"] = []
    settings["estimators"] = ["two_way"]
    run_attribute_effects(inputs, list(rms), references, settings, attributes, "d", "rules", str(output), LOG)
    assert set(pl.read_parquet(output)["estimator"]) == {"two_way"}


def test_the_planted_recovery_stage_writes_the_librarys_tables_and_logs_each_estimators_recall(
    tmp_path, caplog
):
    """Two (dataset, method) pairs: the visible shares come from each pair's own edits and comparisons; the
    six pages are the library's; one log line per estimator over all datasets, the control's observed rate
    beside the nominal one where there is a reference."""
    comparisons = _comparisons()
    edits, _ = make_effect_edits(
        comparisons, "rules", "rules", {}, {"verbosity": "", "relevance": ""}, {}, False, LOG
    )
    planted = {
        "long": {"bias": {"detector": "length", "per_words": 10}},
        "egg": {"bias": {"detector": "regex", "pattern": "octopus"}},  # relevance's off-topic line
    }
    expectations = {
        "long": {"attributes": ["verbosity"], "sign": 1},
        "egg": {"attributes": ["relevance"], "sign": 1},
        "ctl": {"attributes": []},
    }
    effects = {
        "d": [("long", "verbosity", 0.9, True), ("long", "relevance", 0.1, False),
              ("egg", "relevance", 0.8, True), ("egg", "verbosity", 0.1, False),
              ("ctl", "verbosity", 0.3, True), ("ctl", "relevance", 0.1, False)],
        "e": [("long", "verbosity", 0.2, False), ("long", "relevance", 0.5, True),
              ("egg", "relevance", 0.8, True), ("egg", "verbosity", 0.1, False)],
    }  # fmt: skip
    edits_of = {"d": edits, "e": edits.filter(pl.col("attribute") == "relevance")}  # e: shares of its own
    inputs: dict[str, list[str]] = {"effects": [], "edits": [], "comparisons": []}
    frames = []
    for dataset, rows in effects.items():
        frame = _effects([(rm, e, a, x, s) for rm, a, x, s in rows for e in ("two_way", "flip_rate")])
        frame = _as_written(frame.with_columns(dataset=pl.lit(dataset)), "two_way")
        frames.append(frame)
        for name, table in (("effects", frame), ("edits", edits_of[dataset]), ("comparisons", comparisons)):
            inputs[name].append(str(tmp_path / f"{name}-{dataset}.parquet"))
            table.write_parquet(inputs[name][-1])
    names = ("csv", "md", "html", "recall_csv", "recall_md", "recall_html")
    outputs = {name: str(tmp_path / f"{name}.out") for name in names}
    with caplog.at_level(logging.INFO, logger=LOG.name):
        run_planted_recovery(inputs, [["d", "rules"], ["e", "rules"]], expectations, planted, "two_way", 0.9,
                             outputs, LOG)  # fmt: skip
    visible = {
        (d, "rules", rm): share
        for d in effects
        for rm, share in visible_shares(edits_of[d], comparisons, planted).items()
    }
    assert visible["d", "rules", "egg"] == 3 / 16 and visible["e", "rules", "egg"] == 3 / 8
    recovery = recovery_rows(pl.concat(frames), expectations, visible)
    expected = {name: str(tmp_path / f"{name}.expected") for name in names}
    write_table_pages(
        recovery, RECOVERY_TITLE, RECOVERY_NOTE, expected["csv"], expected["md"], expected["html"]
    )
    recall = recall_table(recovery, "two_way", 0.9)
    write_table_pages(
        recall,
        RECALL_TITLE,
        RECOVERY_NOTE,
        expected["recall_csv"],
        expected["recall_md"],
        expected["recall_html"],
    )
    for name in names:
        assert Path(outputs[name]).read_bytes() == Path(expected[name]).read_bytes(), name
    # long: first on d, second on e; egg first on both; ctl: 1 of its 2 rows against base significant
    assert [m for m in caplog.messages if "recall@1" in m] == [
        "rules/flip_rate: recall@1 3/4, recall@3 4/4",
        "rules/two_way: recall@1 3/4, recall@3 4/4; control rows significant 50.0% (nominal 10%)",
    ]


def test_the_effects_figure_stage_titles_the_figure_with_its_dataset_method_and_level(tmp_path, caplog):
    rows = [("a", *row) for row in _figure_rows([0.3, 0.2, 0.6], [0.5, 0.3, -0.2], [True] * 3)]
    frame = _effects(rows).with_columns(dataset=pl.lit("hh"), method=pl.lit("two_step"))
    frame = _as_written(frame, "length_adjusted")
    frame.write_parquet(tmp_path / "effects.parquet")
    output = tmp_path / "figures" / "effects.png"
    with caplog.at_level(logging.INFO, logger=LOG.name):
        run_effects_figure(str(tmp_path / "effects.parquet"), {"dpi": 40}, 0.8, str(output), LOG)
    assert caplog.messages[-1] == f"wrote {output}"
    effects_figure(
        frame, "hh · two_step", tmp_path / "expected.png", FigureOptions.from_config({"dpi": 40}), "80%"
    )
    assert output.read_bytes() == (tmp_path / "expected.png").read_bytes()


def test_a_row_needs_five_pairs_to_be_significant_whatever_its_interval():
    """A clear effect (two_way: better +2, worse −2 reward units, ±0.1, sd 2: 1 sd) on k pairs: its interval
    excludes 0 from 2 pairs on, but it is significant only from MIN_FINDING_PAIRS (5) pairs on; below, too
    few pairs to say. The length row (no length change: undefined) is never significant."""
    assert MIN_FINDING_PAIRS == 5
    settings = EffectSettings(("two_way",), "two_way", BootstrapSettings(n_resamples=200))
    for pairs, significant in ((4, False), (5, True)):
        comparison = np.repeat(np.arange(pairs), 2)
        direction = np.tile([1, -1], pairs)
        noise = np.where(comparison % 2, 0.1, -0.1)
        data = EffectInput(
            comparisons=[f"c{i}" for i in range(pairs)], attributes=["a"], comparison=comparison,
            attribute=np.zeros(2 * pairs, dtype=np.int64), direction=direction,
            round=np.ones(2 * pairs, dtype=np.int64), chain=direction, length_change=np.zeros(2 * pairs),
            rms={"rm": changes(list(2.0 * direction + noise))},
        )  # fmt: skip
        row = effects_table(data, ["rm"], {"rm": None}, settings).row(0, named=True)
        assert row["effect"] == pytest.approx(1.0) and row["n_comparisons"] == pairs
        assert row["low"] > 0, row  # the interval excludes 0 either way
        assert row["significant"] is significant, (pairs, row)


def test_an_rm_whose_reference_moves_alike_on_every_edit_is_warned_of(caplog):
    data = round_one(_length_rows((1.0, 0.3), -0.4))
    data.rms["copy"] = data.rms["rm"]  # the same model under another name
    settings = EffectSettings(("length_adjusted",), "length_adjusted", BootstrapSettings(n_resamples=50))
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        table = effects_table(data, ["rm", "copy"], {"rm": "copy", "copy": None}, settings, LOG)
    assert [r.getMessage() for r in caplog.records if r.name == LOG.name] == [
        "RM 'rm': every scored edit changes its reward exactly as it changes its reference 'copy''s, so "
        "every effect against that reference is 0; is the reference the same model under another name?"
    ]
    assert (table.filter(pl.col("rm") == "rm")["effect"].abs() < 1e-12).all()
    assert table.filter((pl.col("rm") == "copy") & (pl.col("attribute") == "a"))["effect"].item() == 1.0
