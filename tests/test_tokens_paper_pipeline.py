"""Entry points of the paper's computations: official CSV import, paper tables, Fig. 5, official scans and
their comparison, the paper's GCG."""

from __future__ import annotations

import csv

import numpy as np
import polars as pl
import pytest
import torch
from scipy import stats

from rmexplain import schemas as S
from rmexplain.score.tiny import build_llama_rm
from rmexplain.tokens import elo, paper, stages
from rmexplain.tokens.vocab import select_vocabulary

WORDS = ["love", "hate", "war", "peace", "good", "bad", "table", "chair", "happy", "sad", "null"]
HUB = {
    "N-Gem-27B": "nicolinho--QRM-Gemma-2-27B",
    "S-Lla-8B-v0.2": "Skywork--Skywork-Reward-Llama-3.1-8B-v0.2",
    "R-Gem-2B": "Ray2333--GRM-gemma2-2B-rewardmodel-ft",
}


def _official_dir(tmp_path):
    folder = tmp_path / "official"
    folder.mkdir()
    for k, hub in enumerate(HUB.values()):
        with open(folder / f"{hub}.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["token_id", "token_name", "token_decoded", "greatest", "best", "worst"])
            for i, word in enumerate(WORDS):
                base = (i * (k + 2)) % 7 - 3.0
                writer.writerow([i, word, word, base, base + 0.5 * k, -base + 0.1 * i])
                writer.writerow([100 + i, "Ġ" + word, " " + word, base - 1, base, -base])
    return folder


def test_import_and_paper_analyses(tmp_path):
    folder = _official_dir(tmp_path)
    prompts = ["greatest", "best", "worst"]
    targets = {(rm, p): str(tmp_path / "scans" / rm / f"{p}.parquet") for rm in HUB for p in prompts}
    for (rm, prompt), target in targets.items():
        stages.import_official_scan(str(folder / f"{HUB[rm]}.csv"), rm, prompt, target)
    one = S.read_table(targets[("R-Gem-2B", "best")], S.TOKEN_SCORES, "scan")
    assert one.height == 2 * len(WORDS) and set(one["rm"].to_list()) == {"R-Gem-2B"}
    with pytest.raises(paper.PaperAnalysisError, match="no column 'nope'"):
        stages.import_official_scan(
            str(folder / f"{HUB['R-Gem-2B']}.csv"), "R-Gem-2B", "nope", str(tmp_path / "x")
        )

    names = ["moments", "kendall_tau", "mds", "rsa", "table2", "top_bottom", "framing"]
    names += ["sentiment_slopes", "frequency_slopes", "slope_summary", "afinn_joins"]
    outputs = {n: str(tmp_path / "tables" / f"{n}.csv") for n in names}
    stages.run_paper_analyses(list(targets.values()), prompts, {}, [["best", "worst"]], None, outputs)
    moments = pl.read_csv(outputs["moments"])
    # Exact texts: " love" and "love" are both shared; "null" (read as missing by pandas) is dropped.
    assert moments.height == 3 * 3 and set(moments["n"].to_list()) == {2 * len(WORDS) - 1}
    # By hand from the files' rule: RM k scores word i base_i = (i(k + 2) mod 7) − 3 and " word" base_i − 1
    # under "greatest"; the shared texts are every word and " word" but "null" (np.var, ddof 0).
    for k, rm in enumerate(HUB):
        base = [(i * (k + 2)) % 7 - 3.0 for i in range(len(WORDS))]
        scores = [b for b, w in zip(base, WORDS, strict=True) if w != "null"] + [b - 1 for b in base]
        row = moments.filter((pl.col("prompt_id") == "greatest") & (pl.col("rm") == rm)).row(0, named=True)
        assert (row["n"], row["variance"]) == (21, pytest.approx(float(np.var(scores)), abs=1e-6))
    rsa = pl.read_csv(outputs["rsa"])
    assert sorted(set(rsa["property"].to_list())) == [
        "base_model",
        "developer",
        "leaderboard_rank",
        "params_b",
    ]
    rankings = set(pl.read_csv(outputs["top_bottom"])["ranking"].to_list())
    assert rankings == {"greatest", "best", "worst", "best+worst", "best-worst"}
    table2 = pl.read_csv(outputs["table2"])
    assert table2.filter(pl.col("part") == "top")["rank"].max() == 2 * len(WORDS)  # n=22 over 22 tokens
    sentiment = pl.read_csv(outputs["sentiment_slopes"])
    assert set(sentiment["affect"].to_list()) == {"positive", "negative"}
    # no frequency list given: the fit on wordfreq is named for it
    assert set(pl.read_csv(outputs["slope_summary"])["fit"].to_list()) == {"sentiment", "frequency_wordfreq"}
    # Both AFINN joins reported: the paper's never matches " love" (leading space), the stripped one does.
    joins = (
        pl.read_csv(outputs["afinn_joins"]).group_by("join").agg(pl.col("matched_rows").sum()).sort("join")
    )
    paper_rows, stripped_rows = joins["matched_rows"].to_list()
    assert stripped_rows > paper_rows > 0


def test_elo_figure5_tables(tmp_path):
    outputs = {
        n: str(tmp_path / f"{n}.csv") for n in ("spearman", "differences", "top_items", "trajectories")
    }
    stages.run_elo_figure5(elo.FIGURE5_PROMPT, outputs)
    spearman = pl.read_csv(outputs["spearman"])
    # Spearman ρ(human, RM) of the bundled greatest_ever items (Fig. 5C's labels, 0.29 to 0.54 in the README)
    expected = {
        "N-Gem-27B": 0.2932,
        "S-Gem-27B-v0.2": 0.332311,
        "L-Lla-8B": 0.345208,
        "R-Gem-2B": 0.358635,
        "N-Lla-8B": 0.373805,
        "R-Lla-8B": 0.374089,
        "F-Lla-8B-v0.1": 0.37648,
        "S-Lla-8B-v0.2": 0.391544,
        "S-Gem-27B": 0.404707,
        "R-Lla-3B": 0.54106,
    }
    assert dict(spearman.select("rm", "spearman_rho").iter_rows()) == pytest.approx(expected, abs=1e-5)
    assert pl.read_csv(outputs["differences"]).height == 20


def test_official_scan_comparison_and_paper_gcg(tmp_path):
    torch.set_num_threads(1)
    path = build_llama_rm(tmp_path / "llama", layers=1, seed=2)
    spec = {"backend": "transformers", "model": str(path), "device": "cpu", "dtype": "float32"}
    from transformers import AutoTokenizer

    vocabulary = select_vocabulary(AutoTokenizer.from_pretrained(path), "all")[::6].head(
        60
    )  # bytes and merges
    vocab_path = str(tmp_path / "vocab.parquet")
    S.write_table(vocabulary, vocab_path, S.TOKEN_VOCABULARY, "vocabulary")
    prompt = "What, in one word, is the best thing ever?"
    scan = {"batch_size": 16, "prefix_cache": "never"}
    exact_path, official_path = str(tmp_path / "exact.parquet"), str(tmp_path / "official.parquet")
    stages.run_scan("tiny", spec, {}, "best", prompt, vocab_path, scan, exact_path, threads=1)
    stages.run_scan(
        "tiny", spec, {}, "best", prompt, vocab_path, scan, official_path, threads=1, mode="official"
    )
    official = S.read_table(official_path, S.TOKEN_SCORES, "official")
    assert official["token_id"].to_list() == vocabulary["token_id"].to_list()
    out = str(tmp_path / "comparison.csv")
    stages.run_scan_comparison(
        [("tiny", "best", exact_path, official_path)], {"tiny": spec}, {"best": prompt}, 10, out
    )
    row = pl.read_csv(out).row(0, named=True)
    exact = S.read_table(exact_path, S.TOKEN_SCORES, "exact")
    tau = stats.kendalltau(exact["score"].to_numpy(), official["score"].to_numpy()).statistic  # same id order
    assert row["n_tokens"] == 60 and row["kendall_tau_b"] == pytest.approx(tau, abs=1e-6)
    # Every official sequence has a second BOS; beyond it, the template's trim changes some tokens only.
    assert row["share_sequence_differs"] == 1.0 and 0 < row["share_differs_beyond_bos"] < 1

    gcg_path = str(tmp_path / "gcg.parquet")
    gcg = {"steps": 2, "n_tokens": 8, "paper": {"search_width": 16, "init": "x x x"}}  # as the rule passes it
    stages.run_gcg_variant(
        "paper", name="tiny", spec=spec, prompt_id="best", prompt=prompt, objective="optimal", gcg=gcg,
        scan=scan, output=gcg_path, threads=1,
    )  # fmt: skip
    history = S.read_table(gcg_path, S.TOKEN_GCG, "gcg")
    assert history["step"].to_list() == [0, 1, 2] and "loss" in history.columns
    # the fork's best: the lowest-loss step from step 1 on (the start is not one)
    best_step = 1 + int(np.argmin(history["loss"].to_list()[1:]))
    assert history["best_score"][-1] == pytest.approx(history["score"][best_step])


def test_an_everything_export_as_human_ranking_gives_named_rms_their_own_scores(tmp_path):
    """An EloEverything export (elo_rank, elo_score, name, elo_matches, one column per RM hub id): an RM named
    in it takes its scores from it (its model is never loaded: "org/absent" does not exist), another is
    scored; Fig. 5's tables then follow the paper's computation."""
    ranking = tmp_path / "everything.csv"
    items = ["love", "war", "peace", "music", "taxes"]
    rows = ["elo_rank,elo_score,name,elo_matches,org/absent"]
    rows += [
        f"{i + 1},{1500 - 50 * i},{item},{10 + i},{float(len(item) - i)}" for i, item in enumerate(items)
    ]
    ranking.write_text("\n".join(rows) + "\n")
    (tmp_path / "rm.py").write_text(
        "def score(prompts, responses):\n    return [float(len(r)) for r in responses]\n"
    )
    prompt = "What one single thing, person, or concept is the greatest ever?"
    named = {"backend": "transformers", "model": "org/absent"}
    scored = {"backend": "python", "callable": f"{tmp_path / 'rm.py'}:score"}
    outputs = {}
    for rm, spec in (("named", named), ("scored", scored)):
        outputs[rm] = str(tmp_path / f"{rm}.parquet")
        stages.run_human_scores(rm, spec, {}, str(ranking), prompt, outputs[rm], threads=1)
    named_scores = S.read_table(outputs["named"], S.TOKEN_HUMAN_SCORES, "scores").sort("human_rank")
    assert named_scores["item"].to_list() == items and named_scores["human_rank"].to_list() == [1, 2, 3, 4, 5]
    assert named_scores["score"].to_list() == [4.0, 2.0, 3.0, 2.0, 1.0]
    tables = {n: str(tmp_path / f"{n}.csv") for n in ("spearman", "differences", "top_items", "trajectories")}
    stages.run_elo_figure5("custom", tables, n_differences=2, human_scores=list(outputs.values()))
    assert set(pl.read_csv(tables["spearman"])["rm"].to_list()) == {"named", "scored"}
