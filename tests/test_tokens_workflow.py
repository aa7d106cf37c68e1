"""The token part through its config, its library entry points and Snakemake (tiny random Llama RMs)."""

from __future__ import annotations

import copy

import polars as pl
import pytest
import torch
import yaml
from conftest import REPO, tiny_demo_config

from rmexplain import paths
from rmexplain import schemas as S
from rmexplain.config import ConfigError, check, validate_schema
from rmexplain.score.tiny import build_llama_rm
from rmexplain.tokens.stages import run_scan, run_vocabulary


def validated(config: dict) -> dict:
    config = copy.deepcopy(config)
    validate_schema(config)
    return config


def test_demo_config_targets_and_schema_defaults(monkeypatch):
    monkeypatch.chdir(REPO)
    config = validated(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    files = paths.token_targets(config)
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
    assert paths.token_targets(off) == []


def test_paper_config_has_the_ten_rms_and_gcg(monkeypatch):
    monkeypatch.chdir(REPO)
    config = validated(yaml.safe_load((REPO / "config" / "tokens_paper.yaml").read_text()))
    from rmexplain.score.specs import parse_spec

    models = [parse_spec(name, spec).model for name, spec in config["reward_models"].items()]
    assert len(models) == 10 and "RLHFlow/ArmoRM-Llama3-8B-v0.1" in models
    assert len(paths.gcg_files(config)) == 10 * 2 * 2
    assert set(config["tokens"]["model_properties"]) == set(config["reward_models"])


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.update(reward_models=["nope"]), "tokens.reward_models"),
        (lambda t: t["analysis"].update(framing_pairs=[["best", "nope"]]), "framing_pairs"),
        (lambda t: t["gcg"].update(prompts=["nope"]), "tokens.gcg.prompts"),
        (lambda t: t.update(human_ranking={"path": "missing.csv"}), "human_ranking.path"),
        (lambda t: t["vocabulary"].update(mode="list", list_path="missing.txt"), "list_path"),
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
        "scan": {"batch_size": 64, "prefix_cache": "always"},
        "analysis": {"rsa_permutations": 50, "framing_pairs": [["best", "worst"]]},
        "human_ranking": {"path": "config/tokens_human_ranking_example.csv", "n_disagreements": 3},
        "gcg": {
            "enabled": True,
            "objectives": ["pessimal"],
            "prompts": ["worst"],
            "n_tokens": 3,
            "steps": 2,
            "top_k": 8,
            "candidates": 16,
        },
    }
    path = workflow_copy.write_config(config)
    workflow_copy.snakemake("tokens_all", "--cores", "2", "--configfile", str(path))
    root = workflow_copy.root
    tau = pl.read_csv(root / "results/tokens/tables/kendall_tau.csv")
    assert tau["tau"].to_list() == [1.0, 1.0]  # one RM, two prompts
    gcg = pl.read_csv(root / "results/tokens/tables/gcg.csv")
    assert gcg.height == 1 and gcg["best_score"][0] < gcg["initial_score"][0]  # pessimal: lower
    for figure in (
        "violins",
        "tau_heatmap",
        "mds",
        "sentiment_slopes",
        "frequency_slopes",
        "framing_best_worst",
        "human_disagreements",
    ):
        assert (root / f"results/tokens/figures/{figure}.png").stat().st_size > 5_000, figure
    assert pl.read_csv(root / "results/tokens/tables/human_ranking.csv").height == 1
    scans = pl.read_parquet(root / "results/tokens/scans/llama-a/best.parquet")
    assert scans.height == pl.read_parquet(root / "results/tokens/vocabulary/llama-a.parquet").height


def test_elo_figure5_tables_through_the_rule(workflow_copy):
    """The demo's tokens.elo: the paper's Fig. 5 on the bundled EloEverything scores of the ten real RMs."""
    config = validated(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    targets = [f for f in paths.token_targets(config) if "/elo_" in f]
    assert targets == [f"results/tokens/tables/elo_greatest_ever_{part}.csv" for part in paths.ELO_TABLES]
    workflow_copy.snakemake("--cores", "1", *targets[:2])
    spearman = pl.read_csv(workflow_copy.root / targets[0])
    assert spearman.height == 10 and spearman["spearman_rho"].is_between(0.2, 0.6).all()
    differences = pl.read_csv(workflow_copy.root / targets[1])
    assert differences["direction"].value_counts().sort("direction")["count"].to_list() == [10, 10]
