"""The cluster bootstrap (``rmexplain.analysis.bootstrap``): a pair drawn by several seeds is one cluster,
resampled and left out as one; with every comparison its own cluster it is the plain bootstrap."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from rmexplain.analysis.bootstrap import (
    BootstrapSettings,
    bca_interval,
    clusters_of,
    expanded_level,
    interval,
    jackknife_counts,
    resample_counts,
    resampled_means,
)
from rmexplain.analysis.sensitivity import global_sensitivity
from rmexplain.schemas import EXPLANATIONS, conform

SETTINGS = BootstrapSettings(n_resamples=300, confidence_level=0.9, seed=7)


def test_comparisons_of_one_pair_share_a_cluster_across_seeds():
    ids = ["d-s0-5", "d-s1-5", "d-s0-7", "d-s2-7", "d-s-1-5", "odd", "d-s1-9", "e-s0-5"]
    assert clusters_of(ids).tolist() == [0, 0, 1, 1, 0, 2, 3, 4]
    # with the dataset named, an id of another dataset or of no seed is its own cluster
    assert clusters_of(ids, "d").tolist() == [0, 0, 1, 1, 0, 2, 3, 4]
    assert clusters_of([]).size == 0


def test_odd_ids_split_exactly_when_the_dataset_is_named():
    # a source index holding "-s<digits>-" (a file's own ids): only the dataset's prefix is the seed's
    ids = ["d-s0-a-s3-b", "d-s1-a-s3-b", "d-s0-a-s4-b"]
    assert clusters_of(ids, "d").tolist() == [0, 0, 1]
    # without it the last "-s<digits>-" is taken for the seed: these copies are not told apart
    assert clusters_of(ids).tolist() == [0, 1, 0]
    # a dataset name holding "-s<digits>-" splits right either way
    assert clusters_of(["hh-s2-s0-1", "hh-s2-s1-1", "hh-s2-s1-2"], "hh-s2").tolist() == [0, 0, 1]
    assert clusters_of(["hh-s2-s0-1", "hh-s2-s1-1", "hh-s2-s1-2"]).tolist() == [0, 0, 1]
    # the dataset's prefix without a seed after it: its own cluster
    assert clusters_of(["d-sx-1", "d-s0-1"], "d").tolist() == [0, 1]


def test_copies_are_drawn_together_and_the_draws_add_up_to_the_clusters():
    counts = resample_counts(np.array([0, 0, 1, 2, 2, 2]), SETTINGS)
    assert counts.shape == (300, 6)
    assert (counts[:, 0] == counts[:, 1]).all()
    assert (counts[:, 3] == counts[:, 4]).all() and (counts[:, 4] == counts[:, 5]).all()
    assert (counts[:, [0, 2, 3]].sum(axis=1) == 3).all()  # three clusters drawn three times in all
    assert not (counts[:, 0] == counts[:, 2]).all()  # different clusters are drawn apart


def test_with_distinct_clusters_it_is_the_plain_bootstrap_resample_for_resample():
    n = 9
    plain = np.random.default_rng(SETTINGS.seed).multinomial(n, np.full(n, 1.0 / n), size=300)
    assert np.array_equal(resample_counts(np.arange(n), SETTINGS), plain)
    # any labels, numbered in order of first appearance
    assert np.array_equal(resample_counts(np.array([40, 3, 17, 5, 6, 7, 8, 9, 1]), SETTINGS), plain)
    assert np.array_equal(jackknife_counts(np.arange(4)), np.ones((4, 4), dtype=np.int64) - np.eye(4))
    assert resample_counts(np.zeros(0), SETTINGS).shape == (300, 0)


def test_the_jackknife_leaves_out_one_cluster_per_row_in_order_of_first_appearance():
    assert jackknife_counts(np.array(["b", "b", "a", "c"])).tolist() == [
        [0, 0, 1, 1],  # b (first seen) left out
        [1, 1, 0, 1],
        [1, 1, 1, 0],
    ]


def test_copies_of_every_pair_give_the_intervals_of_the_pairs_alone():
    """Three seeds drawing the same pairs hold no more information than one: the cluster bootstrap's
    resampled means, jackknife and intervals are those of the distinct pairs, exactly."""
    # integers: every mean is then the same float with or without the copies (ties with the estimate, which
    # BCa counts half, stay ties)
    values = np.random.default_rng(0).integers(-5, 6, size=(8, 2)).astype(np.float64)
    ids = [f"d-s0-{i}" for i in range(8)]
    copied_ids = [f"d-s{s}-{i}" for s in range(3) for i in range(8)]
    copied = np.tile(values, (3, 1))
    once = _interval(values, ids)
    thrice = _interval(copied, copied_ids)
    assert thrice == once
    # as independent draws (each copy its own cluster) the same data would look three times as sure
    naive = _interval(copied, [f"{c}-{i}" for i, c in enumerate(copied_ids)])
    width = (once[1] - once[0], naive[1] - naive[0])
    assert width[1] < 0.75 * width[0]


def _interval(values: np.ndarray, ids: list[str]) -> tuple[float, float]:
    clusters = clusters_of(ids)
    boot = resampled_means(resample_counts(clusters, SETTINGS), values)[:, 0]
    jack = resampled_means(jackknife_counts(clusters), values)[:, 0]
    return interval(float(values[:, 0].mean()), boot, jack, SETTINGS)[:2]


PAIRS = [(1, 2.0), (0, 0.5), (1, 1.5), (0, -0.25), (0, 0.25), (1, 0.75)]  # (a flip?, its reward delta)


def _explanations(seeds: list[int]) -> pl.DataFrame:
    """Flip and delta rows of one RM on six pairs, every pair drawn by each of ``seeds`` (deltas in quarters,
    so that means with and without copies are the same float)."""
    rows = []
    for seed in seeds:
        for pair, (flip, delta) in enumerate(PAIRS):
            cid = f"d-s{seed}-{pair}"
            rows.append(
                {"dataset": "d", "rm": "r", "method": "rules", "comparison_id": cid, "seed": seed,
                 "perturbation_id": f"{cid}/a", "target": "chosen", "side": "plus", "attribute": "a",
                 "variant": 0, "reward_plus": 1.0, "reward_minus": 0.0, "reward_perturbed": 0.0,
                 "kind": "counterfactual" if flip else "semifactual",
                 "sf_subkind": None if flip else "between",
                 "reward_delta": delta, "agrees_with_human": True}
            )  # fmt: skip
    return conform(pl.DataFrame(rows), EXPLANATIONS, "explanations")


def test_flip_rate_intervals_resample_pairs_not_their_copies():
    one = global_sensitivity(_explanations([0]), "d", "rules", SETTINGS).pfr
    three = global_sensitivity(_explanations([0, 1, 2]), "d", "rules", SETTINGS).pfr
    columns = ["pfr", "pfr_low", "pfr_high", "mean_delta", "delta_low", "delta_high"]
    assert three.select(columns).rows() == one.select(columns).rows()
    assert three["n_comparisons"][0] == 18 and one["n_comparisons"][0] == 6


def test_a_resample_equal_to_the_estimate_up_to_rounding_ties_with_it():
    """BCa counts ties with the estimate half below; a resample summed in another order is a tie too."""
    spread = [0.1 + 0.0063 * i for i in range(30)] + [0.31 + 0.0063 * i for i in range(30)]
    jackknife = np.linspace(0.2, 0.4, 12)
    exact = bca_interval(0.3, np.array(spread + [0.3] * 40), jackknife, 0.9)
    rounded = bca_interval(0.3, np.array(spread + [0.3 + 4e-16] * 40), jackknife, 0.9)
    assert rounded == exact
    apart = bca_interval(0.3, np.array(spread + [0.3 + 1e-9] * 40), jackknife, 0.9)
    assert apart != exact  # a real difference is no tie


def test_the_expanded_level_widens_for_few_clusters_as_hesterberg_does():
    # 42 pairs: the normal quantile sqrt(42/41) * t(41, 0.975) = 1.01212 * 2.01954 = 2.04402, level 95.9 %
    assert expanded_level(0.95, 42) == pytest.approx(1 - 2 * stats.norm.sf(2.04402), abs=1e-5)
    assert 0.958 < expanded_level(0.95, 42) < 0.960
    assert expanded_level(0.95, 10_000) == pytest.approx(0.95, abs=1e-4)  # many pairs: as asked
    assert expanded_level(0.95, 2) < 1.0 and expanded_level(0.95, 1) == 0.95
    # the interval is drawn at it, unless expand is off
    samples, jackknife = np.linspace(-1.0, 1.0, 401), np.linspace(-0.1, 0.1, 42)
    plain = interval(0.0, samples, jackknife, BootstrapSettings(confidence_level=0.95, expand=False))
    assert plain == bca_interval(0.0, samples, jackknife, 0.95)
    expanded = interval(0.0, samples, jackknife, BootstrapSettings(confidence_level=0.95))
    assert expanded == bca_interval(0.0, samples, jackknife, expanded_level(0.95, 42))
    assert expanded[0] < plain[0] and expanded[1] > plain[1]
