"""``rmexplain plan``: the LLM requests it announces are the requests the run then makes."""

from __future__ import annotations

import re
import subprocess
import sys

import polars as pl
import yaml
from conftest import SNAKEMAKE
from test_llm_workflow import write_project

from rmexplain import paths
from rmexplain.config import load
from rmexplain.llm.devserver import ChatServer
from rmexplain.plan import make_plan, plan_markdown


def plan(root, config) -> str:
    run = subprocess.run(
        [sys.executable, "-m", "rmexplain.cli", "plan", "--config", str(config)],
        cwd=root, capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    return run.stdout


def test_plan_announces_the_requests_the_run_makes(tmp_path):
    with ChatServer() as server:
        config_path = write_project(tmp_path, server)
        config = yaml.safe_load(config_path.read_text())
        config["perturb"] = {"methods": ["two_step"]}
        config["llm"]["api_key_env"] = None
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))

        before = plan(tmp_path, config_path)  # no API key, no network: only PATH in the environment
        row = re.search(
            r"\| perturb \| toy \| two_step \| toy-rm \| 5 \| ≤ (\d+) \| unknown until sampled \| to run \|",
            before,
        )
        assert row, before
        announced = int(row.group(1))
        assert announced == 2 * 5 * (
            1 + 2
        )  # 5 comparisons x 2 responses x (step 1 + one step 2 per attribute)
        assert "Completions already cached: 0." in before and "## GPU jobs\n\nNone." in before

        target = "results/perturbations/toy/two_step/toy-rm.parquet"
        subprocess.run([*SNAKEMAKE, "--cores", "1", target, "--configfile", str(config_path)], cwd=tmp_path,
                       check=True, capture_output=True)  # fmt: skip
        log = (tmp_path / "logs" / "perturb" / "toy" / "two_step" / "toy-rm.log").read_text()
        made = re.search(
            r"two_step LLM use \[openai:dev\]: (\d+) requests \((\d+) unique\), 0 cache hits, (\d+) calls",
            log,
        )
        assert made, log
        assert int(made.group(1)) == announced and server.stats.requests == int(made.group(3)) == announced

        after = plan(tmp_path, config_path)
        assert re.search(
            r"\| perturb \| toy \| two_step \| toy-rm \| 5 \| ≤ 30 \| ~\d+ / ~\d+ \| done \|", after
        ), after
        assert f"Completions already cached: {announced}." in after


def test_paper_plan_needs_no_network_and_no_key(workflow_copy):
    out = plan(workflow_copy.root, "config/paper.yaml")
    assert "| perturb | hs2 | two_step | deberta-v1 | 150 | ≤ 4800 | unknown until sampled | to run |" in out
    assert "- `score_perturbations` (dataset=harmless, rm=pythia-1.4b): gpu=1" in out
    assert "- model OpenAssistant/reward-model-deberta-v3-large-v2@" in out and "to download" in out
    assert "- dataset nvidia/HelpSteer2 (datasets.hs2)" in out


def test_plan_warns_where_answers_come_near_their_max_tokens(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config_path = write_project(tmp_path, ChatServer())  # never started: the plan sends nothing
    config = yaml.safe_load(config_path.read_text())
    config["perturb"]["random"] = {"n": 3, "sampling": {"max_tokens": 20}}  # two_step: llm's 1024
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    unsampled = plan_markdown(make_plan(load(config_path), tmp_path))
    unknown = "WARNING toy / random: answer length unknown until the comparisons are sampled (max_tokens 20)"
    assert unknown in unsampled
    comparisons = tmp_path / paths.fmt(paths.COMPARISONS, dataset="toy")
    comparisons.parent.mkdir(parents=True)
    long = "word " * 20  # 100 characters: ~25 tokens, over 80 % of 20, far under 1024
    pl.DataFrame(
        {
            "comparison_id": ["toy-s0-0", "toy-s0-1"], "dataset": ["toy"] * 2, "seed": [0, 0],
            "source_index": ["0", "1"], "prompt": ["q", "q"], "chosen": [long, "short"],
            "rejected": ["no", "no"],
        }
    ).write_parquet(comparisons)  # fmt: skip
    sampled = plan_markdown(make_plan(load(config_path), tmp_path))
    assert (
        "WARNING toy / random: 1 of 4 responses are ≥ 80% of max_tokens 20 (longest ~25 tokens); rewrites of "
        "them may stop at the limit and be skipped" in sampled
    ), sampled
    assert "toy / two_step" not in sampled
