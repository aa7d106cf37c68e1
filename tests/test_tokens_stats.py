"""Token analyses on constructed scans with known answers: τ, MDS, RSA, lexical slopes, framing, humans."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from rmexplain.tokens import stats

WORDS = ["love", "hate", "good", "bad", "war", "peace", "happy", "sad", "table", "chair", "the", "of"]


def scan(rm: str, prompt: str, scores: dict[str, float], prefix: str = "") -> pl.DataFrame:
    return pl.DataFrame(
        {
            "rm": rm,
            "prompt_id": prompt,
            "token_id": list(range(len(scores))),
            "piece": [prefix + w for w in scores],
            "text": [prefix + w for w in scores],
            "score": list(scores.values()),
        }
    )


def test_tau_over_the_shared_decoded_vocabulary():
    base = {w: float(i) for i, w in enumerate(WORDS)}
    # RM b has a different tokenizer: leading-space pieces, one extra word, and two ids for "love".
    b = scan("b", "p", {**base, "zebra": 100.0}, prefix=" ")
    b = pl.concat([b, scan("b", "p", {"love": 0.0}, prefix="")])
    reversed_c = scan("c", "p", {w: -v for w, v in base.items()})
    scans = pl.concat([scan("a", "p", base), b, reversed_c])
    wide = stats.shared_vocabulary_scores(scans, "p", match="strip")
    assert wide.height == len(WORDS)  # "zebra" is not shared; the two "love" ids of b are averaged
    table = stats.tau_table(scans, ["p"], match="strip")
    rms, tau = stats.tau_square(table, "p")
    assert rms == ["a", "b", "c"]
    assert tau[0, 1] == pytest.approx(1.0) and tau[0, 2] == pytest.approx(-1.0)
    assert stats.shared_vocabulary_scores(scans, "p", match="exact").height == 1  # only b's unspaced "love"


def test_mds_recovers_a_planar_configuration():
    points = np.array([[0, 0], [1, 0], [0, 1], [1, 1], [0.5, 2]])
    dist = np.linalg.norm(points[:, None] - points[None], axis=-1)
    coords = stats.mds_coordinates(dist, seed=0)
    recovered = np.linalg.norm(coords[:, None] - coords[None], axis=-1)
    assert np.abs(recovered - dist).max() < 1e-3
    two = stats.mds_coordinates(np.array([[0.0, 0.4], [0.4, 0.0]]))
    assert np.linalg.norm(two[0] - two[1]) == pytest.approx(0.4)


def _tau_frame(rms, tau):
    return pl.DataFrame(
        [
            {"prompt_id": "p", "rm_a": a, "rm_b": b, "tau": float(tau[i, j]), "n_shared": 10}
            for i, a in enumerate(rms)
            for j, b in enumerate(rms)
        ]
    )


def test_rsa_correlates_model_and_property_dissimilarities_with_exact_permutations():
    rms = ["r1", "r2", "r3", "r4", "r5"]
    params = [1.0, 2.0, 4.0, 8.0, 30.0]
    theory = stats.property_dissimilarity(params, "numeric")
    # Paper Fig. 2C: similarity (1 + |Δ|)^-1, dissimilarity 1 - that.
    assert theory[0, 1] == pytest.approx(1 - 1 / 2) and theory[2, 4] == pytest.approx(1 - 1 / 27)
    tau = 1.0 - theory  # RMs whose agreement is exactly the property's similarity
    properties = {
        rm: {"params_b": p, "developer": d, "base_model": "llama"}
        for rm, p, d in zip(rms, params, ["x", "x", "y", "y", "z"], strict=True)
    }
    table = stats.rsa_table(_tau_frame(rms, tau), ["p"], properties, n_permutations=1000)
    row = table.filter(pl.col("property") == "params_b").row(0, named=True)
    assert row["spearman_r"] == pytest.approx(1.0)
    assert row["p_value"] == pytest.approx(
        1 / 120
    )  # exact over all 5! orders: only the identity reaches r = 1
    assert row["n_pairs"] == 10
    assert math.isnan(table.filter(pl.col("property") == "base_model")["spearman_r"][0])  # constant property
    assert "leaderboard_rank" not in table["property"].to_list()  # no RM sets it: skipped


@pytest.mark.parametrize("n", [4, 6])
def test_the_mantel_null_is_scipys_spearman_r_under_every_relabelling(n):
    """The vectorised null distribution equals ``scipy.stats.spearmanr`` on each relabelled upper triangle,
    ties in the theory (a categorical property) included; the p-value counts the orders as the loop did."""
    import itertools

    from scipy.stats import spearmanr

    rng = np.random.default_rng(n)
    model = rng.random((n, n))
    model = model + model.T
    theory = stats.property_dissimilarity(list("aabbcc"[:n]), "categorical")
    orders = np.array(list(itertools.permutations(range(n))))
    expected = [spearmanr(stats._upper(model), stats._upper(theory[np.ix_(p, p)])).statistic for p in orders]
    np.testing.assert_allclose(stats._permuted_spearman(model, theory, orders), expected, atol=1e-12)
    r, p_value = stats.mantel(model, theory, n_permutations=10000)
    assert r == pytest.approx(expected[0])
    assert p_value == np.mean(np.array(expected) >= r - 1e-12)


def test_rsa_names_a_missing_property():
    rms = ["r1", "r2", "r3"]
    tau = np.eye(3)
    with pytest.raises(stats.AnalysisError, match=r"tokens.model_properties.r3.developer"):
        stats.rsa_table(_tau_frame(rms, tau), ["p"], {"r1": {"developer": "a"}, "r2": {"developer": "b"}})


def test_categorical_property_dissimilarity():
    d = stats.property_dissimilarity(["gemma", "llama", "gemma"], "categorical")
    assert d.tolist() == [[0, 1, 0], [1, 0, 1], [0, 1, 0]]


def test_sentiment_and_frequency_slopes_have_the_constructed_signs():
    from wordfreq import zipf_frequency

    lexicon = stats.afinn_lexicon("AFINN-111")
    words = [
        w
        for w in [
            "love",
            "good",
            "happy",
            "great",
            "nice",
            "wonderful",
            "best",
            "awesome",
            "hate",
            "bad",
            "sad",
            "terrible",
            "awful",
            "worst",
            "horrible",
            "ugly",
        ]
        if w in lexicon
    ]
    neutral = [
        "table",
        "chair",
        "house",
        "river",
        "window",
        "paper",
        "garden",
        "bottle",
        "carpet",
        "pencil",
        "the",
        "of",
        "and",
        "with",
        "from",
        "about",
    ]
    rng = np.random.default_rng(0)
    rows = []
    for rm, sign in (("pos", 1.0), ("neg", -1.0)):
        for i, w in enumerate(words + neutral):
            value = sign * lexicon.get(w, 0) + 0.5 * zipf_frequency(w, "en") + 0.01 * rng.standard_normal()
            rows.append(
                {"rm": rm, "prompt_id": "p", "token_id": i, "piece": w, "text": " " + w, "score": value}
            )
    features = stats.with_lexical_features(pl.DataFrame(rows), lexicon)
    assert features.filter(pl.col("word") == "table")["afinn"].is_null().all()
    slopes = stats.sentiment_slopes(features)
    for valence in ("positive", "negative"):
        one = slopes.filter(pl.col("valence") == valence)
        assert (
            one.filter(pl.col("rm") == "pos")["slope"][0] > 0 > one.filter(pl.col("rm") == "neg")["slope"][0]
        )
    frequency = stats.frequency_slopes(features)
    assert (frequency["slope"] > 0).all() and (frequency["p_value"] < 0.01).all()


def test_extremes_and_framing():
    best = scan("a", "best", {w: float(i) for i, w in enumerate(WORDS)})
    worst = scan(
        "a", "worst", {w: -float(i) + (5.0 if w in ("war", "the") else 0.0) for i, w in enumerate(WORDS)}
    )
    scans = pl.concat([best, worst])
    extremes = stats.extreme_tokens(scans, k=2)
    top = extremes.filter((pl.col("prompt_id") == "best") & (pl.col("kind") == "optimal"))["text"].to_list()
    assert top == ["of", "the"]
    framing = stats.framing_table(scans, "best", "worst")
    summary = stats.framing_summary(framing)
    assert summary["spearman_rho"][0] < 0
    assert summary["good_for_both"][0].split(", ")[0] in {"war", "the"}
    with pytest.raises(stats.AnalysisError, match="framing_pairs"):
        stats.framing_table(scans, "best", "greatest")


def test_human_ranking_comparison_and_file_errors(tmp_path):
    path = tmp_path / "ranking.csv"
    path.write_text("# comment line\nitem,rank\nlove,1\npeace,2\nwar,3\ncancer,4\n")
    ranking = stats.read_human_ranking(path)
    scored = pl.concat(
        [
            ranking.with_columns(pl.lit("agrees").alias("rm"), (10.0 - pl.col("human_rank")).alias("score")),
            ranking.with_columns(
                pl.lit("reverses").alias("rm"), pl.col("human_rank").cast(pl.Float64).alias("score")
            ),
        ]
    )
    rho = dict(stats.human_comparison(scored).select("rm", "spearman_rho").iter_rows())
    assert rho == {"agrees": pytest.approx(1.0), "reverses": pytest.approx(-1.0)}
    disagreements = stats.human_disagreements(scored, n=1)
    assert disagreements.height == 2
    for text, message in [
        ("item,rank\nlove,1\nlove,2\n", "duplicated"),
        ("item,rank\nlove,0\n", "line 2"),
        ("item,score\nlove,1\n", "lacks column"),
    ]:
        path.write_text(text)
        with pytest.raises(stats.AnalysisError, match=message):
            stats.read_human_ranking(path)
