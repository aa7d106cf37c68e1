"""Bundled EloEverything data and Fig. 5 as the paper computed it (generate_figure_5.py), checked by hand."""

from __future__ import annotations

import math
import statistics

import polars as pl
import pytest

from rmexplain.tokens import elo
from rmexplain.tokens.paper_models import paper_reward_models


def _average_ranks_descending(values: list[float]) -> list[float]:
    """1 = largest; tied values share the mean of the positions they span."""
    return [sum(w > v for w in values) + (sum(w == v for w in values) + 1) / 2 for v in values]


def _pearson(x: list[float], y: list[float]) -> float:
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy)


def test_constructed_ranks_median_and_differences():
    raters = pl.DataFrame(
        {
            "row": [0, 1, 2, 3],
            "item": ["a", "b", "c", "d"],
            "Human": [40.0, 30.0, 30.0, 10.0],
            "r1": [1.0, 4.0, 3.0, 2.0],
            "r2": [0.5, 0.7, 0.9, 0.6],
        }
    )
    ranks = elo.figure5_ranks(raters)
    assert ranks["Human"].to_list() == [1.0, 2.5, 2.5, 4.0]
    assert ranks["r1"].to_list() == [4.0, 1.0, 2.0, 3.0]
    assert ranks["r2"].to_list() == [4.0, 2.0, 1.0, 3.0]
    # Median over Human, r1 and r2 (Human included).
    assert ranks[elo.MODEL_AVG].to_list() == [4.0, 2.0, 2.0, 3.0]
    diff = elo.rank_differences(ranks, n=2)
    higher = diff.filter(pl.col("direction") == "humans_higher")
    assert higher["item"].to_list() == ["a", "b"]  # +3, then b and c tie at -0.5: row order keeps b
    assert higher["difference"].to_list() == [3.0, -0.5]
    lower = diff.filter(pl.col("direction") == "models_higher")
    assert lower["item"].to_list() == ["d", "b"]  # -1, then the tie at -0.5 again
    assert lower["position"].to_list() == [1, 2]


def test_hand_computation_on_a_slice_of_the_bundled_data():
    wide = elo.read_elo(elo.FIGURE5_PROMPT).slice(300, 30)
    human = wide["elo_score"].cast(pl.Float64).to_list()
    assert len(set(human)) < len(human)  # the slice holds tied Elo scores: average ranks are exercised
    table = paper_reward_models()
    rm_names = table["short_name"].to_list()
    raters = elo.elo_raters(wide)
    assert raters.columns == ["row", "item", "Human", *rm_names]
    ranks = elo.figure5_ranks(raters)

    columns = {
        "Human": human,
        **{s: wide[h].to_list() for h, s in zip(table["hub_id"], rm_names, strict=True)},
    }
    hand = {name: _average_ranks_descending(values) for name, values in columns.items()}
    for name, expected in hand.items():
        assert ranks[name].to_list() == pytest.approx(expected), name
    median = [statistics.median(hand[name][i] for name in hand) for i in range(wide.height)]
    assert ranks[elo.MODEL_AVG].to_list() == pytest.approx(median)

    rho = elo.human_spearman(ranks)
    for rm, value in rho.select("rm", "spearman_rho").iter_rows():
        assert value == pytest.approx(_pearson(hand["Human"], hand[rm]), abs=1e-12), rm

    diffs = [(median[i] - hand["Human"][i], i) for i in range(wide.height)]
    items = wide["name"].to_list()
    by_hand_up = [items[i] for _, i in sorted(diffs, key=lambda d: (-d[0], d[1]))[:10]]
    by_hand_down = [items[i] for _, i in sorted(diffs, key=lambda d: (d[0], d[1]))[:10]]
    got = elo.rank_differences(ranks, n=10)
    assert got.filter(pl.col("direction") == "humans_higher")["item"].to_list() == by_hand_up
    assert got.filter(pl.col("direction") == "models_higher")["item"].to_list() == by_hand_down


def test_full_bundled_data_figure5_sanity():
    for prompt_id in elo.ELO_PROMPTS:
        wide = elo.read_elo(prompt_id)
        assert wide.height == 7530 and wide["name"].n_unique() == 7530
        assert wide["elo_rank"].to_list() == list(range(1, 7531))
        assert wide.null_count().sum_horizontal()[0] == 0
    ranks = elo.figure5_ranks(elo.elo_raters(elo.read_elo(elo.FIGURE5_PROMPT)))
    # Every rank column is a permutation of 1..n up to averaged ties.
    for column in ["Human", *elo.rm_columns(ranks)]:
        assert ranks[column].sum() == pytest.approx(7530 * 7531 / 2)
    rho = elo.human_spearman(ranks)
    assert rho["rm"].to_list() == paper_reward_models()["short_name"].to_list()
    assert rho["rewardbench_rank"].to_list() == [2, 3, 5, 10, 11, 12, 17, 19, 20, 31]
    assert all(0.2 < r < 0.6 for r in rho["spearman_rho"].to_list())
    # Values as the paper's generate_figure_5.py gives them on this data (checked against it with pandas).
    assert dict(rho.select("rm", "spearman_rho").iter_rows())["R-Lla-3B"] == pytest.approx(0.54106, abs=1e-5)
    assert dict(rho.select("rm", "spearman_rho").iter_rows())["N-Gem-27B"] == pytest.approx(0.29320, abs=1e-5)

    diff = elo.rank_differences(ranks, n=10)
    up = diff.filter(pl.col("direction") == "humans_higher")
    down = diff.filter(pl.col("direction") == "models_higher")
    assert up.height == down.height == 10
    assert up["difference"].is_sorted(descending=True) and down["difference"].is_sorted()
    assert up["difference"].min() > 5000 and down["difference"].max() < -5000
    assert up["item"].to_list()[:3] == ["Fingering (sexual act)", "Erection", "Black people"]
    # No larger difference is left out.
    all_diff = (ranks[elo.MODEL_AVG] - ranks["Human"]).sort()
    assert up["difference"].min() >= all_diff[-10] and down["difference"].max() <= all_diff[9]

    # The paper's Fig. 5C caption: the items these RMs rank first.
    firsts = dict(elo.top_items(ranks).select("rater", "item").iter_rows())
    assert firsts["Human"] == "Universe"
    assert firsts["N-Gem-27B"] == "Compassion"
    assert firsts["S-Gem-27B"] == "Imagination"
    assert firsts["R-Lla-8B"] == "Sports bra"
    assert firsts["F-Lla-8B-v0.1"] == "Gödel, Escher, Bach"  # tied first with "Self-referential humor"
    assert "Unconditional love" in firsts.values()


def test_rank_trajectories_groups():
    ranks = elo.figure5_ranks(elo.elo_raters(elo.read_elo(elo.FIGURE5_PROMPT)))
    traj = elo.rank_trajectories(ranks, n_background=100, n_highlight=5)
    human = traj.filter(pl.col("rater") == "Human")
    sizes = dict(human.group_by("group").len().iter_rows())
    assert sizes["human_top"] == 5 and sizes["human_bottom"] == 5
    assert sizes["background_top"] == 100 and sizes["background_bottom"] == 100
    top = human.filter(pl.col("group") == "human_top").sort("order")
    assert top["item"][0] == "Universe" and top["rank"].is_sorted()
    bottom = human.filter(pl.col("group") == "human_bottom").sort("order")
    assert bottom["rank"].is_sorted(descending=True) and bottom["rank"][0] >= 7520
    model_top = set(traj.filter(pl.col("group") == "model_top")["item"].to_list())
    assert {"Compassion", "Imagination", "Sports bra", "Gödel, Escher, Bach"} <= model_top
    assert not model_top & set(top["item"].to_list())
    assert traj.filter(pl.col("item") == "Universe")["rater"].n_unique() == 11


def test_layouts_for_the_project_human_ranking():
    scored = elo.elo_human_scores(elo.FIGURE5_PROMPT)
    assert scored.columns == ["rm", "item", "human_rank", "score"]
    assert scored.height == 10 * 7530
    ranking = elo.elo_human_ranking(elo.FIGURE5_PROMPT)
    assert ranking.columns == ["item", "rank"] and ranking["rank"][0] == 1
    # From TOKEN_HUMAN_SCORES rows: Human = -human_rank, so the human ranks are the integer elo ranks.
    raters = elo.raters_from_human_scores(scored.filter(pl.col("human_rank") <= 50))
    ranks = elo.figure5_ranks(raters)
    assert ranks["Human"].to_list() == [float(i) for i in range(1, 51)]
    with pytest.raises(elo.EloError, match="unknown EloEverything prompt"):
        elo.read_elo("nope")
