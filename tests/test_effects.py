"""Attribute effects: every estimator's arithmetic on hand-made tables, the edits in both directions, the
table's ranks, intervals and reference, and the planted-bias recovery's hits."""

from __future__ import annotations

import logging

import numpy as np
import polars as pl
import pytest

from rmexplain.analysis.bootstrap import BootstrapSettings
from rmexplain.attributes import PAPER_ATTRIBUTES
from rmexplain.effects.analysis import EffectSettings, effect_input, effects_table, with_sources
from rmexplain.effects.base import EffectInput, RewardChanges, estimators
from rmexplain.effects.edits import make_effect_edits, round_one_tasks
from rmexplain.effects.recovery import recall_table, recovery_rows, visible_shares, with_verdicts
from rmexplain.effects.stages import run_attribute_effects, run_embed_effect_texts
from rmexplain.ids import text_id
from rmexplain.schemas import ATTRIBUTE_EFFECTS, EFFECT_EDITS, conform, polars_schema

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
    assert (a, b, length) == pytest.approx((0.8, 0.2, -0.5))


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


def _effects(rows: list[tuple[str, str, str, float, bool]]) -> pl.DataFrame:
    """ATTRIBUTE_EFFECTS-like rows (rm, estimator, attribute, effect, significant), ranked as the table is."""
    frame = pl.DataFrame(rows, schema=["rm", "estimator", "attribute", "effect", "significant"], orient="row")
    frame = frame.with_columns(
        dataset=pl.lit("d"),
        method=pl.lit("rules"),
        low=pl.col("effect") - 0.1,
        high=pl.col("effect") + 0.1,
        effect_reward=pl.when(pl.col("estimator") == "flip_rate").then(None).otherwise(pl.col("effect")),
    )
    ranked = frame.sort(pl.col("effect").abs(), "attribute", descending=[True, False])
    return ranked.with_columns(rank=pl.int_range(1, pl.len() + 1).over("rm", "estimator"))


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
    invisible = with_verdicts(recovery.with_columns(visible_share=pl.lit(0.0)))
    assert set(invisible.filter(pl.col("rm") == "hedge")["verdict"]) == {
        "invisible: no edit changes the planted feature"
    }
    recall = recall_table(recovery, "two_way").filter(pl.col("dataset") == "all")
    by = {r["estimator"]: r for r in recall.iter_rows(named=True)}
    assert (by["two_way"]["hits_at_1"], by["two_way"]["biases"], by["two_way"]["quiet_controls"]) == (1, 1, 1)
    assert by["paper_delta"]["wrong_sign"] == 1 and by["paper_delta"]["quiet_controls"] == 0
    assert by["flip_rate"]["recall_at_3"] == 1.0 and by["flip_rate"]["recall_at_1"] == 0.0


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
    assert f"{len(texts)} distinct edited texts: 1 held by the dataset's embedding table" in caplog.text


def test_length_adjusted_leaves_a_one_direction_attribute_undefined_when_told_to():
    # b has only a worse edit: with one_direction (the default) its beta is the length-adjusted mean change
    # in that direction, signed; without, NaN. a, with both directions, is the same either way.
    class Strict(estimators.get("length_adjusted")):
        one_direction = False

    data = hand_input({"rm": RM})
    lenient = estimate("length_adjusted", data)
    strict_estimator = Strict()
    strict = strict_estimator.estimate(strict_estimator.observations(data, "rm", None), ONE, 2, 2)[0]
    assert lenient[1] == pytest.approx(-0.25)  # y = 0.5 / 2 = 0.25 on a worse edit, no length change
    assert np.isnan(strict[1]) and strict[0] == pytest.approx(lenient[0])


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


def test_discovery_edits_are_scored_in_a_call_after_the_effect_edits(tmp_path):
    """A text of the effect edits scores as it would alone: the discovery's texts go to the RM in a call of
    their own (here an RM whose reward is the number of texts in the call it was scored in)."""
    from rmexplain.score.stages import score_effect_edits

    rm = tmp_path / "rm.py"
    rm.write_text("def score(prompts, responses):\n    return [float(len(responses))] * len(responses)\n")
    _comparisons().write_parquet(tmp_path / "comparisons.parquet")
    effect = pl.DataFrame({"edit_id": ["e0", "e1"], "comparison_id": ["c0", "c0"], "target": ["chosen"] * 2,
                           "attribute": ["x"] * 2, "chain": ["better"] * 2, "round": [1, 1],
                           "direction": ["better"] * 2, "text": ["a1", "a2"], "method": ["rules"] * 2,
                           "generator": ["g"] * 2})  # fmt: skip
    effect.write_parquet(tmp_path / "effect.parquet")
    discovery = pl.DataFrame({"feature": ["f"] * 4, "direction": [1] * 4, "source_text": ["a"] * 4,
                              "edited_text": ["a1", "d1", "d2", "d3"], "comparison_id": ["c0"] * 4,
                              "target": ["chosen"] * 4, "engine": ["offline"] * 4,
                              "round": [1] * 4})  # fmt: skip
    discovery.write_parquet(tmp_path / "discovery.parquet")
    rewards = score_effect_edits(
        str(tmp_path / "comparisons.parquet"), [str(tmp_path / "effect.parquet")], "rm",
        {"backend": "python", "callable": f"{rm}:score"}, {}, LOG,
        discovery=[str(tmp_path / "discovery.parquet")],
    )  # fmt: skip
    prompt = _comparisons()["prompt"][0]
    by_text = dict(zip(rewards["text_id"], rewards["reward"], strict=True))
    assert rewards.height == 5  # a1 once, though both tables hold it
    assert [by_text[text_id(prompt, t)] for t in ("a1", "a2", "d1", "d2", "d3")] == [2.0, 2.0, 3.0, 3.0, 3.0]
