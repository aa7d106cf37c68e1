"""The paper's analyses (shared vocabulary, Table 3, top/bottom tables, RSA properties, Fig. 3C/3D, Fig. 4) on
hand-made scans and official-format CSVs, checked against hand computations."""

from __future__ import annotations

import math
import statistics

import numpy as np
import polars as pl
import pytest
from scipy import stats

from rmexplain.score.specs import parse_spec
from rmexplain.tokens import paper
from rmexplain.tokens.paper_models import (
    paper_model_properties,
    paper_reward_model_specs,
    paper_reward_models,
)


def test_reward_model_table_follows_the_paper_config():
    table = paper_reward_models()
    ranks = dict(table.select("short_name", "rewardbench_rank").iter_rows())
    assert ranks == {
        "N-Gem-27B": 2,
        "S-Gem-27B-v0.2": 3,
        "S-Gem-27B": 5,
        "S-Lla-8B-v0.2": 10,
        "N-Lla-8B": 11,
        "L-Lla-8B": 12,
        "R-Lla-8B": 17,
        "R-Lla-3B": 19,
        "F-Lla-8B-v0.1": 20,
        "R-Gem-2B": 31,
    }
    props = paper_model_properties()
    assert props["N-Gem-27B"] == {
        "base_model": "Gemma",
        "developer": "nicolinho",
        "params_b": 27,
        "leaderboard_rank": 2,
    }
    assert props["R-Lla-3B"] == {
        "base_model": "Llama",
        "developer": "Ray2333",
        "params_b": 3,
        "leaderboard_rank": 19,
    }
    assert {p["base_model"] for p in props.values()} == {"Gemma", "Llama"}
    specs = paper_reward_model_specs()
    pinned = {k: v["revision"] for k, v in specs.items() if "revision" in v}
    assert pinned == {
        "N-Gem-27B": "eef8d852e886240e308a57b61d69f0e58489f0ed",
        "N-Lla-8B": "74280eebb9580bfecff5d0b2edb81f7d6186a204",
        "F-Lla-8B-v0.1": "39aadadd6d1b66ab358f0b4ce8899624c35c7434",
    }
    assert all(specs[k].get("trust_remote_code") for k in pinned)
    assert specs["N-Gem-27B"]["attn_implementation"] == "flash_attention_2"
    for name, spec in specs.items():
        parsed = parse_spec(name, spec)
        assert parsed.model == table.filter(table["short_name"] == name)["hub_id"][0]


# ---- official-format CSVs, shared vocabulary and Table 3 --------------------------------------------------

NAN = float("nan")
# (token_id, token_name, token_decoded, greatest, best, worst) per RM; texts chosen to exercise every rule.
RM_A = [
    (0, "love", "love", 3.0, 2.0, -1.0),
    (1, "Ġlove", " love", 2.5, 1.5, -0.5),  # leading space: its own text under exact matching
    (2, "hate", "hate", -2.0, -1.0, 2.0),
    (3, "war", "war", -3.0, -2.5, 3.5),
    (4, "peace", "peace", 2.0, 2.5, -2.0),
    (5, "Ġpeace", "peace", 1.0, 1.0, 1.0),  # a second id decoding to "peace": dropped as duplicate
    (6, "null", "null", 0.5, 0.5, 0.5),  # pandas reads "null" as NaN: dropped
    (7, "None", "None", 0.1, 0.1, 0.1),
    (8, "tea", "tea", 1.0, NAN, 0.0),  # no "best" score: not in every prompt, so not shared
    (9, "a,b", "a,b", 0.25, 0.2, 0.3),  # quoted field
    (10, "table", "table", 0.0, 0.1, -0.1),
]
RM_B = [
    (100, "▁love", "love", 10.0, 9.0, -5.0),
    (7, "▁hate", "hate", -10.0, -8.0, 6.0),
    (3, "▁war", "war", -7.0, -9.0, 9.0),
    (42, "▁peace", "peace", 8.0, 7.0, -3.0),
    (5, "▁tea", "tea", 1.0, 1.0, 1.0),
    (6, "▁null", "null", 0.0, 0.0, 0.0),
    (8, "a,b", "a,b", 4.0, 1.0, 2.0),
    (9, "▁table", "table", 2.0, 2.0, 2.0),
    (11, "empty", "", 0.0, 0.0, 0.0),
]


def _write_official(path, rows):
    import csv

    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["token_id", "token_name", "token_decoded", "greatest", "best", "worst"])
        for row in rows:
            writer.writerow(["" if isinstance(v, float) and math.isnan(v) else v for v in row])


@pytest.fixture
def official_dir(tmp_path):
    _write_official(tmp_path / "org--rm-a.csv", RM_A)
    _write_official(tmp_path / "Ray2333--GRM-gemma2-2B-rewardmodel-ft.csv", RM_B)
    return tmp_path


def _moments(values):
    n = len(values)
    mean = sum(values) / n
    m2 = sum((v - mean) ** 2 for v in values) / n
    m3 = sum((v - mean) ** 3 for v in values) / n
    return mean, m2, m3 / m2**1.5


def test_official_csvs_read_into_scan_rows(official_dir):
    scans = paper.read_official_scores(official_dir)
    assert set(scans.columns) == {"rm", "prompt_id", "token_id", "piece", "text", "score"}
    # Files in name order; a hub id of the paper's ten gets its short name, another keeps the hub id.
    assert list(dict.fromkeys(scans["rm"].to_list())) == ["R-Gem-2B", "org/rm-a"]
    assert set(scans["prompt_id"].to_list()) == {"greatest", "best", "worst"}
    a_best = scans.filter((pl.col("rm") == "org/rm-a") & (pl.col("prompt_id") == "best"))
    assert 8 not in a_best["token_id"].to_list()  # the missing score is dropped
    b = scans.filter(pl.col("rm") == "R-Gem-2B")
    assert "" in b["text"].to_list() and "a,b" in b["text"].to_list()  # read literally
    assert {"null", "None"} <= set(scans.filter(pl.col("rm") == "org/rm-a")["text"].to_list())
    assert b.filter(pl.col("token_id") == 100)["piece"][0] == "▁love"


def test_shared_vocabulary_and_table3_moments_by_hand(official_dir):
    scans = paper.read_official_scores(official_dir)
    shared = paper.shared_scores(scans)
    # love, hate, war, a,b and table are in every RM under every prompt; peace is duplicated in rm-a, null is
    # read as missing by pandas, tea has no "best" score in rm-a, " love" and "" are not shared.
    assert sorted(set(shared["key"].to_list())) == ["a,b", "hate", "love", "table", "war"]
    table3 = paper.distribution_moments(shared, "greatest")
    assert table3["rm"].to_list() == ["R-Gem-2B", "org/rm-a"]
    hand = {
        "org/rm-a": [3.0, -2.0, -3.0, 0.25, 0.0],  # love, hate, war, a,b, table
        "R-Gem-2B": [10.0, -10.0, -7.0, 4.0, 2.0],
    }
    for row in table3.iter_rows(named=True):
        mean, var, skew = _moments(hand[row["rm"]])
        assert row["n"] == 5
        assert row["mean"] == pytest.approx(mean, abs=1e-12)
        assert row["variance"] == pytest.approx(var, abs=1e-12)  # np.var: ddof 0
        assert row["skewness"] == pytest.approx(skew, abs=1e-12)  # scipy.stats.skew: biased
    sample = paper.distribution_moments(shared, "greatest", ddof=1, bias=False)
    values = hand["org/rm-a"]
    n = len(values)
    _, var, g1 = _moments(values)
    row = sample.filter(pl.col("rm") == "org/rm-a").row(0, named=True)
    assert row["variance"] == pytest.approx(var * n / (n - 1))
    assert row["skewness"] == pytest.approx(g1 * math.sqrt(n * (n - 1)) / (n - 2))


def test_shared_vocabulary_variants():
    rows = [
        ("a", 0, " love", 1.0),
        ("a", 1, "love", 3.0),
        ("a", 2, "war", -1.0),
        ("a", 3, "null", 0.0),
        ("b", 0, "love", 2.0),
        ("b", 1, " war", -2.0),
        ("b", 2, "null", 0.5),
    ]
    scans = pl.DataFrame(
        [{"rm": r, "prompt_id": "p", "token_id": i, "piece": t, "text": t, "score": s} for r, i, t, s in rows]
    )
    assert paper.shared_scores(scans)["key"].unique().sort().to_list() == ["love"]
    # Stripped keys with the project's averaging: " love" and "love" of rm a are averaged; war is shared.
    mean = paper.shared_scores(scans, match="strip", duplicates="mean")
    a_love = mean.filter((pl.col("rm") == "a") & (pl.col("key") == "love"))
    assert a_love["score"][0] == pytest.approx(2.0) and a_love["token_id"][0] == 0
    assert mean["key"].unique().sort().to_list() == ["love", "war"]
    # ... while dropping duplicates removes "love"; keeping pandas-missing texts lets "null" in.
    assert paper.shared_scores(scans, match="strip")["key"].unique().to_list() == ["war"]
    kept = paper.shared_scores(scans, drop_na_like=False)["key"].unique().sort().to_list()
    assert kept == ["love", "null"]
    with pytest.raises(paper.PaperAnalysisError, match="duplicates"):
        paper.shared_scores(scans, duplicates="first")


# ---- τ, top/bottom and framing ----------------------------------------------------------------------------


def _scan(rm, prompt, scores, ids=None):
    ids = ids if ids is not None else list(range(len(scores)))
    return pl.DataFrame(
        {
            "rm": rm,
            "prompt_id": prompt,
            "token_id": ids,
            "piece": list(scores),
            "text": list(scores),
            "score": [float(v) for v in scores.values()],
        }
    )


def test_kendall_tau_over_shared_keys():
    words = ["w", "x", "y", "z"]
    scans = pl.concat(
        [
            _scan("a", "p", dict(zip(words, [1, 2, 3, 4], strict=True))),
            _scan("b", "p", dict(zip(words, [1, 3, 2, 4], strict=True))),
            _scan("c", "p", dict(zip(words, [4, 3, 2, 1], strict=True))),
        ]
    )
    tau = paper.kendall_tau_table(paper.shared_scores(scans), ["p"])
    value = {(a, b): t for a, b, t in tau.select("rm_a", "rm_b", "tau").iter_rows()}
    assert value[("a", "a")] == pytest.approx(1.0)
    assert value[("a", "b")] == pytest.approx((5 - 1) / 6)  # one discordant pair of six
    assert value[("a", "c")] == pytest.approx(-1.0)
    assert tau["n_shared"].unique().to_list() == [4]


def test_top_bottom_breaks_ties_by_token_id():
    scans = _scan("a", "p", {"w": 3, "x": 3, "y": 1, "z": 2}, ids=[5, 2, 9, 1])
    table = paper.top_bottom_tokens(scans, "p", n=2)
    assert table.filter(pl.col("part") == "top")["token_id"].to_list() == [2, 5]
    bottom = table.filter(pl.col("part") == "bottom")
    assert bottom["token_id"].to_list() == [1, 9] and bottom["rank"].to_list() == [3, 4]


def test_combined_and_framing_scores():
    scans = pl.concat(
        [
            _scan("a", "best", {"w": 1, "x": 2, "y": 3}),
            _scan("a", "worst", {"w": -1, "x": 5, "y": 0}),
        ]
    )
    shared = paper.shared_scores(scans)
    summed = paper.combined_scores(shared, "best", "worst", "sum")
    assert dict(summed.select("key", "score").iter_rows()) == {"w": 0.0, "x": 7.0, "y": 3.0}
    diff = paper.combined_scores(shared, "best", "worst", "difference")
    assert dict(diff.select("key", "score").iter_rows()) == {"w": 2.0, "x": -3.0, "y": 3.0}
    assert paper.top_bottom(diff, 1).filter(pl.col("part") == "top")["text"].to_list() == ["y"]
    framing = paper.framing_scores(shared, "best", "worst")
    corr = paper.framing_correlations(framing)
    assert corr["spearman_rho"][0] == pytest.approx(stats.spearmanr([1, 2, 3], [-1, 5, 0]).statistic)


# ---- Fig. 3C/3D -------------------------------------------------------------------------------------------


def _slope(x, y):
    mx, my = sum(x) / len(x), sum(y) / len(y)
    return sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True)) / sum((a - mx) ** 2 for a in x)


def test_afinn_join_paper_and_stripped_and_sentiment_slopes():
    lexicon = {"love": 3, "good": 3, "nice": 2, "happy": 3, "hate": -3, "bad": -3, "sad": -2, "awful": -3}
    scores = {"love": 5.0, "good": 4.0, "nice": 2.5, "happy": 4.5, "hate": 1.0, "bad": 0.0, "sad": 0.5}
    rows = []
    for k, (word, score) in enumerate(scores.items()):
        rows.append({"token_id": 2 * k, "text": word, "score": score})
        rows.append({"token_id": 2 * k + 1, "text": " " + word.upper(), "score": score + 1.0})
    scans = pl.DataFrame(rows).with_columns(
        pl.lit("a").alias("rm"), pl.lit("p").alias("prompt_id"), pl.col("text").alias("piece")
    )
    matched = paper.afinn_matches(scans, lexicon)
    assert sorted(matched["token"].to_list()) == sorted(scores)  # never a leading-space token
    stripped = paper.afinn_matches(scans, lexicon, join="stripped")
    assert stripped.height == 2 * len(scores)  # " LOVE" now matches "love" too
    slopes = paper.sentiment_slopes(matched)
    positive = [w for w in scores if lexicon[w] > 0]
    negative = [w for w in scores if lexicon[w] < 0]
    got = dict(slopes.select("affect", "slope").iter_rows())
    assert got["positive"] == pytest.approx(
        _slope([lexicon[w] for w in positive], [scores[w] for w in positive])
    )
    assert got["negative"] == pytest.approx(
        _slope([lexicon[w] for w in negative], [scores[w] for w in negative])
    )
    assert dict(slopes.select("affect", "n").iter_rows()) == {"positive": 4, "negative": 3}


def test_bnc_reader_and_frequency_slopes(tmp_path):
    lines = [
        "\tWord\tPoS\t\tFreq\tRa\tDisp",
        "\tlove\tNoC\t%\t150\t99\t0.92",
        "\t@\t@\tlove\t148\t99\t0.92",
        "\tlove\tVerb\t%\t150\t99\t0.91",  # a second line for "love": two rows in the regression
        "\tgood\tAdj\t%\t1276\t100\t0.97",
        "\tbad\tAdj\t%\t265\t100\t0.96",
        "\thate\tVerb\t%\t30\t98\t0.94",
        "\tsad\tAdj\t%\t17\t97\t0.94",
        "lie (/lay)\tVerb\t%\t187\t100\t0.94#",  # no leading tab: R shifts the columns
        "@\t@\tlie\t41#\t100#\t0.95#",
        "\tzero\tAdj\t%\t0\t10\t0.5",
    ]
    path = tmp_path / "1_1_all_alpha.txt"
    path.write_bytes(("\n".join(lines) + "\n").encode("latin-1") + b"\tna\xefve\tAdj\t%\t5\t50\t0.8\n")
    freq = paper.read_bnc_frequencies(path)
    assert freq.filter(pl.col("Word") == "love")["Freq"].to_list() == [150.0, 150.0]
    assert freq.filter(pl.col("Word") == "Verb")["Freq"].to_list() == [
        100.0
    ]  # the shifted line, as R reads it
    assert freq.filter(pl.col("Word") == "@")["Freq"].to_list() == [148.0, None]  # "100#" is no number
    assert "naïve" not in freq["Word"].to_list()  # Latin-1 bytes are not UTF-8

    lexicon = {"love": 3, "good": 3, "bad": -3, "hate": -3, "sad": -2, "zero": 1, "naïve": -2}
    scores = {"love": 4.0, "good": 5.0, "bad": -1.0, "hate": -2.0, "sad": 0.5, "zero": 9.0, "naïve": 1.0}
    scans = pl.DataFrame(
        {
            "rm": "a",
            "prompt_id": "p",
            "token_id": list(range(len(scores))),
            "piece": list(scores),
            "text": list(scores),
            "score": list(scores.values()),
        }
    )
    slopes = paper.frequency_slopes(paper.afinn_matches(scans, lexicon), freq)
    # By hand: rows love ×2, good, bad, hate, sad ("zero" has frequency 0, "naïve" no match).
    used = ["love", "love", "good", "bad", "hate", "sad"]
    bnc = {"love": 150.0, "good": 1276.0, "bad": 265.0, "hate": 30.0, "sad": 17.0}
    design = np.column_stack([np.ones(6), np.log([bnc[w] for w in used]), [lexicon[w] for w in used]])
    coef = np.linalg.lstsq(design, np.array([scores[w] for w in used]), rcond=None)[0]
    assert slopes["n"][0] == 6
    assert slopes["slope"][0] == pytest.approx(coef[1])
    summary = paper.slope_summary(
        pl.DataFrame({"prompt_id": ["p", "p", "p"], "slope": [1.0, 2.0, 6.0]}), ["prompt_id"]
    )
    assert summary["mean"][0] == pytest.approx(3.0)
    assert summary["se"][0] == pytest.approx(statistics.stdev([1.0, 2.0, 6.0]) / math.sqrt(3))
