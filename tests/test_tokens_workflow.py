"""The token part through its config, its library entry points and Snakemake (tiny random Llama RMs)."""

from __future__ import annotations

import copy
import re

import numpy as np
import polars as pl
import pytest
import torch
import yaml
from conftest import REPO, tiny_demo_config
from scipy import stats as scipy_stats

from rmexplain import paths, targets
from rmexplain import schemas as S
from rmexplain.config import ConfigError, check, validate_schema
from rmexplain.design import Design
from rmexplain.score.tiny import build_llama_rm
from rmexplain.tokens.stages import run_scan, run_vocabulary


def validated(config: dict) -> dict:
    config = copy.deepcopy(config)
    validate_schema(config)
    return config


def test_demo_config_targets_and_schema_defaults(monkeypatch):
    monkeypatch.chdir(REPO)
    config = validated(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    files = targets.token_targets(Design.from_config(config))
    assert "results/tokens/scans/demo-helpful/worst.parquet" in files
    assert "results/tokens/figures/framing_best_worst.png" in files
    assert {
        "results/tokens/figures/violins.png",
        "results/tokens/figures/tau_heatmap.png",
        "results/tokens/figures/mds.png",
        "results/tokens/figures/sentiment_slopes.png",
        "results/tokens/figures/frequency_slopes.png",
    } <= set(files)
    assert not [f for f in files if "/gcg/" in f]  # demo RMs take text: no GCG
    assert config["tokens"]["scan"]["verify_tokens"] == 8  # filled by the schema
    off = validated(
        {
            k: v
            for k, v in yaml.safe_load((REPO / "config" / "config.yaml").read_text()).items()
            if k != "tokens"
        }
    )
    assert targets.token_targets(Design.from_config(off)) == []


def test_paper_config_has_the_ten_rms_and_gcg(monkeypatch):
    monkeypatch.chdir(REPO)
    config = validated(yaml.safe_load((REPO / "config" / "tokens_paper.yaml").read_text()))
    from rmexplain.score.specs import parse_spec

    models = [parse_spec(name, spec).model for name, spec in config["reward_models"].items()]
    assert len(models) == 10 and "RLHFlow/ArmoRM-Llama3-8B-v0.1" in models
    assert len(targets.gcg_files(Design.from_config(config))) == 10 * 2 * 2
    assert set(config["tokens"]["model_properties"]) == set(config["reward_models"])
    # the paper's RSA properties, and both scan modes with the analyses on the paper's route
    from rmexplain.tokens.paper_models import paper_model_properties

    assert config["tokens"]["model_properties"] == paper_model_properties()
    design = Design.from_config(config)
    assert len(targets.scan_comparisons(design)) == 10 * 3
    first_scan = targets.token_scan_files(design)[0]
    assert first_scan == "results/tokens/scans_official/N-Gem-27B/greatest.parquet"
    assert len(targets.paper_token_tables(design)) == len(paths.PAPER_TOKEN_TABLES)
    # the paper's decoded text and the date its runs saw; its frequency list is not shipped, so the fit on
    # wordfreq is named for it
    assert config["tokens"]["vocabulary"]["clean_up"] == "paper"
    assert config["tokens"]["scan"]["template_date"] == "2024-07-26"
    tables = targets.paper_token_tables(design)
    assert tables["frequency_slopes"] == "results/tokens/tables/paper_frequency_slopes_wordfreq.csv"
    assert tables["mds"] == "results/tokens/tables/paper_mds.csv"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.update(reward_models=["nope"]), "tokens.reward_models"),
        (lambda t: t["analysis"].update(framing_pairs=[["best", "nope"]]), "framing_pairs"),
        (lambda t: t["gcg"].update(prompts=["nope"]), "tokens.gcg.prompts"),
        (lambda t: t.update(human_ranking={"path": "missing.csv"}), "human_ranking.path"),
        (lambda t: t["vocabulary"].update(mode="list", list_path="missing.txt"), "list_path"),
        (
            lambda t: t["scan"].update(mode="official"),
            "tokens.scan.mode: official scans need backend transformers",
        ),
        (lambda t: t["scan"].update(compare=True), "tokens.scan.compare: no scanned RM"),
        (lambda t: t.update(official_scores={"path": "missing-dir"}), "tokens.official_scores.path"),
        (
            lambda t: t["paper_analysis"].update(frequency_list="missing.txt"),
            "tokens.paper_analysis.frequency_list",
        ),
        (lambda t: t["scan"].update(template_date="2024-02-30"), "tokens.scan.template_date"),
    ],
)
def test_config_errors_name_the_key(edit, message, monkeypatch):
    monkeypatch.chdir(REPO)
    config = validated(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    edit(config["tokens"])
    with pytest.raises(ConfigError, match=message):
        check(config)


def test_vocabulary_and_scan_entry_points_write_their_contracts(tmp_path):
    torch.set_num_threads(1)
    spec = {
        "backend": "transformers",
        "model": str(build_llama_rm(tmp_path / "rm")),
        "device": "cpu",
        "dtype": "float32",
    }
    vocabulary = {
        "mode": "word",
        "include_special": False,
        "min_zipf": 3.0,
        "max_tokens": 40,
        "list_path": None,
        "list_kind": "text",
        "text_tokenizer": "bundled-minilm",
    }
    run_vocabulary("tiny", spec, vocabulary, str(tmp_path / "vocab.parquet"))
    scan = {
        "batch_size": 16,
        "prefix_cache": "always",
        "verify_tokens": 4,
        "verify_atol": 1e-4,
        "verify_rtol": 0.0,
    }
    run_scan(
        "tiny",
        spec,
        {},
        "best",
        "What is best?",
        str(tmp_path / "vocab.parquet"),
        scan,
        str(tmp_path / "scan.parquet"),
    )
    table = S.read_table(tmp_path / "scan.parquet", S.TOKEN_SCORES, "scan")
    assert table.height == 40 and set(table["rm"]) == {"tiny"} and set(table["prompt_id"]) == {"best"}
    assert table["text"].str.strip_chars().str.contains(r"^[^\W\d_]+$").all()


def test_text_backend_scans_decoded_text(tmp_path):
    """backend: python (text in, reward out) scans the text tokenizer's vocabulary by decoded text."""
    module = tmp_path / "length_rm.py"
    module.write_text("def score(prompts, responses):\n    return [float(len(r)) for r in responses]\n")
    spec = {"backend": "python", "callable": f"{module}:score"}
    vocabulary = {
        "mode": "english",
        "include_special": False,
        "min_zipf": 5.0,
        "max_tokens": 30,
        "list_path": None,
        "list_kind": "text",
        "text_tokenizer": "bundled-minilm",
    }
    run_vocabulary("len", spec, vocabulary, str(tmp_path / "vocab.parquet"))
    scan = {
        "batch_size": 8,
        "prefix_cache": "auto",
        "verify_tokens": 8,
        "verify_atol": 1e-3,
        "verify_rtol": 0.02,
    }
    run_scan(
        "len",
        spec,
        {},
        "best",
        "What is best?",
        str(tmp_path / "vocab.parquet"),
        scan,
        str(tmp_path / "scan.parquet"),
    )
    table = pl.read_parquet(tmp_path / "scan.parquet")
    assert table["score"].to_list() == [float(len(t)) for t in table["text"].to_list()]


@pytest.mark.slow
def test_snakemake_token_part_with_transformers_rms_and_gcg(workflow_copy, tmp_path):
    """tokens_all on a tiny Llama RM: every rule of the token part runs (scans, analyses, figures, human
    ranking, GCG); the analyses' numbers are tested in test_tokens_stats.py."""
    config = tiny_demo_config()
    config["reward_models"] = {
        name: {
            "backend": "transformers",
            "model": str(build_llama_rm(tmp_path / name, seed=seed)),
            "device": "cpu",
            "dtype": "float32",
        }
        for name, seed in (("llama-a", 0),)
    }
    config["tokens"] = {
        "enabled": True,
        "prompts": {
            "best": "What, in one word, is the best thing ever?",
            "worst": "What, in one word, is the worst thing ever?",
        },
        "vocabulary": {"mode": "all"},
        "scan": {"batch_size": 64, "prefix_cache": "always", "compare": True, "compare_n": 5},
        "analysis": {"rsa_permutations": 50, "framing_pairs": [["best", "worst"]]},
        "paper_analysis": {"enabled": True, "rsa_permutations": 50},
        "human_ranking": {"path": "config/tokens_human_ranking_example.csv", "n_disagreements": 3},
        "gcg": {
            "enabled": True,
            "variant": "paper",
            "objectives": ["pessimal"],
            "prompts": ["worst"],
            "steps": 3,
            "paper": {"search_width": 16, "init": "x x x"},
        },
    }
    path = workflow_copy.write_config(config)
    workflow_copy.snakemake("tokens_all", "--cores", "2", "--configfile", str(path))
    root = workflow_copy.root
    tau = pl.read_csv(root / "results/tokens/tables/kendall_tau.csv")
    assert tau["tau"].to_list() == [1.0, 1.0]  # one RM, two prompts
    gcg = pl.read_csv(root / "results/tokens/tables/gcg.csv")
    history = pl.read_parquet(root / "results/tokens/gcg/llama-a/worst/pessimal.parquet")
    # the paper's GCG: the summary's best is the fork's, the lowest-loss step from step 1 on
    steps = history.filter(pl.col("step") >= 1)
    best = steps.row(int(steps["loss"].arg_min()), named=True)
    assert (
        gcg.height == 1
        and gcg["best_step"][0] == best["step"]
        and gcg["best_score"][0] == pytest.approx(best["score"], abs=1e-5)
    )
    assert gcg["initial_score"][0] == pytest.approx(history["score"][0], abs=1e-5)
    # Both scan modes, and how far apart they are: the tiny Llama template writes {{ bos_token }}, so every
    # official sequence starts with two BOS and differs from the exact one.
    modes = pl.read_csv(root / "results/tokens/tables/scan_modes.csv")
    assert modes.select("rm", "prompt_id").rows() == [("llama-a", "best"), ("llama-a", "worst")]
    assert modes["share_sequence_differs"].to_list() == [1.0, 1.0]
    # beyond that BOS, the template's trim and re-tokenisation change some tokens, not all
    assert all(0 < share < 1 for share in modes["share_differs_beyond_bos"].to_list())
    assert (root / "results/tokens/scans_official/llama-a/best.parquet").is_file()
    for name, table in targets.paper_token_tables(Design.from_config(validated(config))).items():
        assert (root / table).is_file(), name
    assert (root / "results/tokens/tables/paper_frequency_slopes_wordfreq.csv").is_file()
    for figure in (
        "violins",
        "tau_heatmap",
        "mds",
        "sentiment_slopes",
        "frequency_slopes",
        "framing_best_worst",
        "human_disagreements",
        "scan_modes",
        "paper_violins",
        "paper_framing_best_worst",
    ):
        assert (root / f"results/tokens/figures/{figure}.png").stat().st_size > 5_000, figure
    assert pl.read_csv(root / "results/tokens/tables/human_ranking.csv").height == 1
    scans = pl.read_parquet(root / "results/tokens/scans/llama-a/best.parquet")
    assert scans.height == pl.read_parquet(root / "results/tokens/vocabulary/llama-a.parquet").height


def test_elo_figure5_tables_through_the_rule(workflow_copy):
    """The demo's tokens.elo: the paper's Fig. 5 on the bundled EloEverything scores of the ten real RMs."""
    config = validated(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    elo = [f for f in targets.token_targets(Design.from_config(config)) if "/elo_" in f]
    parts = (*paths.ELO_TABLES, *paths.ELO_AGREEMENT_TABLES)
    figures = [f"results/tokens/figures/elo_greatest_ever_{p}.png" for p in paths.ELO_AGREEMENT_FIGURES]
    assert elo == [f"results/tokens/tables/elo_greatest_ever_{part}.csv" for part in parts] + figures
    workflow_copy.snakemake("--cores", "1", *elo[:2], "results/tokens/tables/elo_greatest_ever_rsa.csv")
    rsa = pl.read_csv(workflow_copy.root / "results/tokens/tables/elo_greatest_ever_rsa.csv")
    assert rsa["property"].to_list() == ["base_model", "developer", "params_b", "leaderboard_rank"]
    assert rsa["n_models"].to_list() == [10] * 4  # the ten real RMs, with the paper's four properties
    # README "The demo, in brief": RSA rank r = 0.48 (p = 0.004), family r = 0.40 (p = 0.015), τ 0.27–0.60,
    # ρ from 0.29 (N-Gem-27B) to 0.54 (R-Lla-3B)
    by_property = {r["property"]: r for r in rsa.iter_rows(named=True)}
    rank, family = by_property["leaderboard_rank"], by_property["base_model"]
    assert (round(rank["spearman_r"], 2), round(rank["p_value"], 3)) == (0.48, 0.004)
    assert (round(family["spearman_r"], 2), round(family["p_value"], 3)) == (0.40, 0.015)
    tau = pl.read_csv(workflow_copy.root / "results/tokens/tables/elo_greatest_ever_kendall_tau.csv")
    between = tau.filter(pl.col("rm_a") != pl.col("rm_b"))["tau"]
    assert tau.height == 100 and (round(between.min(), 2), round(between.max(), 2)) == (0.27, 0.60)
    spearman = pl.read_csv(workflow_copy.root / elo[0]).sort("spearman_rho")
    assert spearman.height == 10
    assert (spearman["rm"][0], round(spearman["spearman_rho"][0], 2)) == ("N-Gem-27B", 0.29)
    assert (spearman["rm"][-1], round(spearman["spearman_rho"][-1], 2)) == ("R-Lla-3B", 0.54)
    differences = pl.read_csv(workflow_copy.root / elo[1])
    assert differences["direction"].value_counts().sort("direction")["count"].to_list() == [10, 10]


def _official_csv(path, rows: list[tuple[int, str, float, float]]) -> None:
    """One RM's scan in the paper's format: token_id, token_name, token_decoded, then a column per prompt."""
    lines = ["token_id,token_name,token_decoded,best,worst"]
    lines += [f"{i},{text.strip()},{text},{best},{worst}" for i, text, best, worst in rows]
    path.write_text("\n".join(lines) + "\n")


def test_official_scans_imported_and_analysed_the_papers_way(workflow_copy):
    """Two RMs whose scans are the paper's published CSVs: no model is loaded; Table 3 (paper_moments) is the
    population variance and biased skewness of the shared vocabulary, by hand."""
    folder = workflow_copy.root / "official"
    folder.mkdir()
    words = ["love", "hate", "war", "peace", "good", "bad"]
    x = [(i, w, float(i * i) - 3.0, -float(i)) for i, w in enumerate(words)]
    y = [(i, w, float(i) + 1.0, 2.0 * i) for i, w in enumerate(words)]
    x += [(6, " dup", 9.0, 9.0), (7, " dup", 8.0, 8.0), (8, "null", 5.0, 5.0), (9, "only-x", 4.0, 4.0)]
    y += [(6, " dup", 1.0, 1.0), (8, "null", 2.0, 2.0)]
    _official_csv(folder / "org--x.csv", x)
    _official_csv(folder / "org--y.csv", y)
    config = tiny_demo_config()
    config["reward_models"] = {
        rm: {"backend": "transformers", "model": f"org/{rm}", "device": "cpu"} for rm in ("x", "y")
    }
    config["tokens"] = {
        "enabled": True,
        "prompts": {
            "best": "What, in one word, is the best thing ever?",
            "worst": "... the worst thing ever?",
        },
        "official_scores": {"path": str(folder)},
        "analysis": {"rsa_permutations": 20, "framing_pairs": [["best", "worst"]]},
        "paper_analysis": {"enabled": True, "rsa_permutations": 20},
    }
    path = workflow_copy.write_config(config)
    targets = ["results/tokens/tables/paper_moments.csv", "results/tokens/tables/paper_top_bottom.csv"]
    result = workflow_copy.snakemake(*targets, "--cores", "1", "--configfile", str(path))
    assert "tokens_scan" not in result.stdout + result.stderr  # imported, not scanned
    moments = pl.read_csv(workflow_copy.root / targets[0]).sort("rm", "prompt_id")
    # Shared: the six words (" dup" is duplicated within x, "null" reads as missing, "only-x" is x's alone).
    shared_x_best = np.array([i * i - 3.0 for i in range(6)])
    row = moments.filter((pl.col("rm") == "x") & (pl.col("prompt_id") == "best")).row(0, named=True)
    assert row["n"] == 6
    assert row["mean"] == pytest.approx(shared_x_best.mean())
    assert row["variance"] == pytest.approx(np.var(shared_x_best), abs=1e-3)
    assert row["skewness"] == pytest.approx(scipy_stats.skew(shared_x_best, bias=True), abs=1e-3)
    assert set(
        pl.read_parquet(workflow_copy.root / "results/tokens/scans_imported/y/worst.parquet")["text"]
    ) == {*words, " dup", "null"}


def test_tokens_paper_config_dry_run_lists_the_papers_setup(workflow_copy):
    """config/tokens_paper.yaml: both scan modes of the ten RMs on GPUs, their comparison, the paper's tables
    and figures, its GCG and the Elo tables."""
    result = workflow_copy.snakemake("-n", "tokens_all", "--configfile", "config/tokens_paper.yaml")
    out = result.stdout + result.stderr
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", out, re.M))
    assert counts["tokens_scan"] == "60"  # 10 RMs x 3 prompts x 2 modes
    assert counts["tokens_gcg"] == "40" and counts["tokens_elo"] == "3"
    for rule in ("tokens_scan_modes", "tokens_paper_analysis", "figure_tokens_paper"):
        assert counts[rule] == "1", rule
    scans = re.findall(r"^rule tokens_scan:\n(?:    .*\n)*?    resources: ([^\n]*)", out, re.M)
    assert len(scans) == 60 and all("gpu=1" in r for r in scans)
    assert "results/tokens/scans_official/R-Gem-2B/worst.parquet" in out
