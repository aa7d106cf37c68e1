"""``rmexplain plan``: the LLM requests it announces are the requests the run then makes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import yaml
from conftest import SNAKEMAKE
from test_llm_workflow import write_project

from rmexplain import paths
from rmexplain.config import load
from rmexplain.llm.devserver import ChatServer
from rmexplain.plan import LLMJob, Plan, make_plan, plan_markdown


def plan(root, config) -> str:
    run = subprocess.run(
        [sys.executable, "-m", "rmexplain.cli", "plan", "--config", str(config)],
        cwd=root, capture_output=True, text=True, check=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(root) / "workflow")},  # this checkout's code
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


TOY_RMS = '''
def _base(p, r):
    return 0.1 * len(r.split()) + 0.01 * len(p) + 0.5 * ("please" in r)


def score_a(prompts, responses):
    """Ties on the Peru comparison: rm-a perturbs the other four."""
    return [0.0 if "Peru" in p else _base(p, r) for p, r in zip(prompts, responses)]


def score_b(prompts, responses):
    return [_base(p, r) for p, r in zip(prompts, responses)]


def score_c(prompts, responses):
    return [-_base(p, r) for p, r in zip(prompts, responses)]
'''


def test_plan_counts_what_the_server_receives_with_the_cache_and_the_judge(tmp_path):
    """random over three RMs (per_rm): its prompts depend only on the response, so the second and third RM
    reuse the first's answers (rm-b adds the comparison rm-a tied on); the judge is on and judges the rule
    edits (the random baseline carries no attribute, so it is not analysed), once per distinct prompt."""
    with ChatServer() as server:
        config_path = write_project(tmp_path, server)
        (tmp_path / "toy_rms.py").write_text(TOY_RMS)
        config = yaml.safe_load(config_path.read_text())
        rms = {f"rm-{x}": {"backend": "python", "callable": f"toy_rms.py:score_{x}"} for x in "abc"}
        config["reward_models"] = rms
        config["perturb"] = {"methods": ["rules", "random"], "random": {"n": 2}}
        config["analysis"]["judge"] = {"enabled": True}
        config["llm"]["api_key_env"] = None
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        scores = [paths.fmt(paths.ORIGINAL_SCORES, dataset="toy", rm=rm) for rm in rms]
        scores += [paths.fmt(paths.PERTURBATIONS, dataset="toy", method="rules", orienter=rm) for rm in rms]
        options = ["--cores", "1", "--configfile", str(config_path)]  # --configfile takes several: last
        subprocess.run([*SNAKEMAKE, *scores, *options], cwd=tmp_path, check=True, capture_output=True)
        assert server.stats.requests == 0

        before = plan(tmp_path, config_path)
        rows = {
            m.group(1): int(m.group(2))
            for m in re.finditer(r"\| perturb \| toy \| random \| (rm-\w) \| \d+ \| (\d+) \|", before)
        }
        assert rows == {"rm-a": 4 * 2 * 2, "rm-b": 1 * 2 * 2, "rm-c": 0}, before
        judged = [int(n) for n in re.findall(r"\| judge \| toy \| rules \| rm-\w \| \d+ \| (\d+) \|", before)]
        assert len(judged) == 3 and judged[0] > 0, before
        assert "| judge | toy | random |" not in before
        announced = re.search(r"Requests still to make: (\d+) \(", before)
        assert announced and int(announced.group(1)) == 20 + sum(judged), before

        judgements = [paths.fmt(paths.JUDGEMENTS, dataset="toy", method="rules", orienter=rm) for rm in rms]
        perturbations = [
            paths.fmt(paths.PERTURBATIONS, dataset="toy", method="random", orienter=rm) for rm in rms
        ]
        targets = [*perturbations, *judgements]
        subprocess.run([*SNAKEMAKE, *targets, *options], cwd=tmp_path, check=True, capture_output=True)
        assert server.stats.requests == int(announced.group(1))


def test_plan_states_the_duration_at_the_rate_limit():
    jobs = [
        LLMJob("perturb", "d", "random", "rm", 5, 100, True, 20_000, 5_000, False, 200),
        LLMJob("judge", "d", "rules", "rm", 5, 50, True, 10_000, 200, False, 8),
        LLMJob("perturb", "d", "random", "rm2", 5, 999, True, 1, 1, True, 200),  # done: not counted
    ]
    plan = Plan(llm_jobs=jobs, rate_limit={"tokens_per_minute": 10_000, "requests_per_minute": 30})
    metered = 20_000 + 100 * 200 + 10_000 + 50 * 8  # prompts + max_tokens per request
    assert plan.duration_line() == (
        f"Duration at llm.rate_limit: 5.0 min at 30 requests/min; {metered / 10_000:.1f} min at 10000 "
        f"tokens/min (~{metered} metered tokens) (the longer one holds)."
    )
    assert "Duration at llm.rate_limit" in plan_markdown(plan)
    assert Plan(llm_jobs=jobs).duration_line() is None
    unknown = Plan(llm_jobs=[LLMJob("discover", "d", "discover", "rm", None, 9, False, None, None, False)],
                   rate_limit={"tokens_per_minute": 10_000})  # fmt: skip
    assert "unknown at 10000 tokens/min until the comparisons are sampled" in unknown.duration_line()
