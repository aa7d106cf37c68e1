"""``rmexplain plan``: the LLM requests it announces are the requests the run then makes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import yaml
from conftest import SNAKEMAKE, WorkflowCopy
from test_discovery_llm import discovery_project
from test_llm_workflow import write_project
from test_reproduction import mini_paper_config, write_mini_paper_inputs

from rmexplain import paths, targets
from rmexplain import schemas as S
from rmexplain.config import check, load
from rmexplain.design import Design
from rmexplain.llm.base import Completion
from rmexplain.llm.budget import request_cost
from rmexplain.llm.cache import CompletionCache
from rmexplain.llm.client import PlannedRequest
from rmexplain.llm.devserver import ChatServer
from rmexplain.perturb.base import methods
from rmexplain.plan import (
    NEXT_STEP,
    UNJUDGED,
    UNPLANNED,
    UNSAMPLED,
    UNSCORED,
    LLMJob,
    Plan,
    Spending,
    make_plan,
    plan_markdown,
    write_plan,
)


def plan(root, config) -> str:
    run = subprocess.run(
        [sys.executable, "-m", "rmexplain.cli", "plan", "--config", str(config)],
        cwd=root, capture_output=True, text=True, check=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(root) / "workflow")},  # this checkout's code
    )  # fmt: skip
    return run.stdout


def stage_jobs(config: dict, root: Path, stage: str) -> list[LLMJob]:
    """The LLM jobs of ``stage`` in the plan of ``config`` for the files under ``root``."""
    return [job for job in make_plan(config, root).llm_jobs if job.stage == stage]


def test_plan_announces_the_requests_the_run_makes_and_where_a_limit_stops_it(tmp_path):
    """Before the run, an upper bound; a run that llm.max_requests stops after 17 requests; the plan then
    counts only the 13 the cache does not answer (exact: every step-1 answer is cached, so step 2 is
    known) and says the run stops where it stands; with the limit raised, the rerun sends exactly those."""
    with ChatServer() as server:
        config_path = write_project(tmp_path, server)
        config = yaml.safe_load(config_path.read_text())
        config["perturb"] = {"methods": ["two_step"]}
        config["analysis"]["judge"] = {"enabled": False}
        config["llm"] = {**config["llm"], "api_key_env": None, "max_requests": 17}
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))

        before = plan(tmp_path, config_path)  # no API key, no network: only PATH in the environment
        cells = [
            "perturb",
            "toy",
            "two_step",
            "toy-rm",
            "5",
            r"≤ (\d+)",
            "–",
            "unknown until sampled",
            "to run",
        ]
        row = re.search(r"\| " + r" \| ".join(cells) + r" \|", before)
        assert row, before
        announced = int(row.group(1))
        assert announced == 2 * 5 * (
            1 + 2
        )  # 5 comparisons x 2 responses x (step 1 + one step 2 per attribute)
        assert "Completions already cached: 0." in before and "## GPU jobs\n\nNone." in before
        assert "- llm.max_requests 17: 0 requests sent so far" in before and "may stop after 17" in before

        target = "results/perturbations/toy/two_step/toy-rm.parquet"
        run = [*SNAKEMAKE, "--cores", "1", target, "--configfile", str(config_path)]
        stopped = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True)
        assert stopped.returncode != 0 and server.stats.requests == 17
        log = (tmp_path / "logs" / "perturb" / "toy" / "two_step" / "toy-rm.log").read_text()
        assert "stopped before request 8 of 20: llm.max_requests (17) reached" in log

        after_stop = plan(tmp_path, config_path)
        assert "| perturb | toy | two_step | toy-rm | 5 | 13 | 17 | ~" in after_stop, after_stop
        assert "Requests still to make: 13." in after_stop and "Completions already cached: 17." in after_stop
        assert (
            "- llm.max_requests 17: 17 requests sent so far (ledger " in after_stop
            and "0 left; the run needs 13: it stops after 0 more requests, with 13 unsent. Raise "
            "llm.max_requests to at least 30 to finish."
            in after_stop
        ), after_stop

        config["llm"]["max_requests"] = 30
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        assert "13 left; the run needs 13: it fits" in plan(tmp_path, config_path)
        subprocess.run(run, cwd=tmp_path, check=True, capture_output=True)
        log = (tmp_path / "logs" / "perturb" / "toy" / "two_step" / "toy-rm.log").read_text()
        use = (
            r"two_step LLM use \[openai:dev\]: (\d+) requests \((\d+) unique\), (\d+) cache hits, (\d+) calls"
        )
        made = re.search(use, log)
        assert made, log
        assert made.groups() == ("30", "30", "17", "13") and server.stats.requests == announced

        after = plan(tmp_path, config_path)
        assert re.search(
            r"\| perturb \| toy \| two_step \| toy-rm \| 5 \| 0 \| 30 \| ~0 / ~0 \| done \|", after
        ), after
        assert f"Completions already cached: {announced}." in after and "Requests still to make: 0." in after


def test_paper_plan_needs_no_network_and_no_key(workflow_copy):
    out = plan(workflow_copy.root, "config/paper.yaml")
    assert (
        "| perturb | hs2 | two_step | deberta-v1 | 150 | ≤ 4800 | – | unknown until sampled | to run |" in out
    )
    assert "Estimated cost: unknown (discover, judge, perturb until the comparisons are sampled" in out
    assert "- `score_perturbations` (dataset=harmless, rm=pythia-1.4b): gpu=1" in out
    assert "- model OpenAssistant/reward-model-deberta-v3-large-v2@" in out and "to download" in out
    assert "- dataset nvidia/HelpSteer2 (datasets.hs2)" in out


def announced(plan_text: str) -> int:
    """The plan's ``Requests still to make`` (exact or an upper bound)."""
    found = re.search(r"Requests still to make: (?:at most )?(\d+)\.", plan_text)
    assert found, plan_text
    return int(found.group(1))


def test_the_papers_evaluation_datasets_get_no_effect_edits(tmp_path):
    """config/paper.yaml with the effects on for two_step: only the §4 datasets (stages: [analysis]) are
    edited, scored for the effects and planned; §3's keep their originals and perturbations in the
    truncation table."""
    config = yaml.safe_load((Path(__file__).parents[1] / "config" / "paper.yaml").read_text())
    config["analysis"]["effects"] = {"enabled": True, "methods": ["two_step"]}
    design = Design.from_config(check(config))
    analysed = ["hs2_global", "helpful_global", "harmless_global"]
    assert design.effect_datasets() == analysed and design.effect_methods("harmless") == []
    parts = {(dataset, stage) for dataset, _, stage, _ in targets.truncation_parts(design)}
    assert {dataset for dataset, stage in parts if stage == "effects"} == set(analysed)
    assert {("harmless", "originals"), ("harmless", "perturbations")} <= parts
    plan = make_plan(config, tmp_path)
    assert [job.dataset for job in plan.llm_jobs if job.stage == "effects"] == analysed
    text = plan_markdown(plan)
    # 150 comparisons: two_step a step 1 and 15 step 2s per response; its variants reuse the step 1; random
    # 15 per response; the effects' edits (500 comparisons) 2 rounds x 1,000 responses x 15 attributes x 2
    # directions; all bounds, nothing sampled
    for method, bound in (("two_step", 4800), ("two_step_only", 4500), ("random", 4500)):
        row = f"| perturb | harmless | {method} | pythia-1.4b | 150 | ≤ {bound} | – | unknown until sampled |"
        assert row in text, row
    assert (
        "| effects | harmless_global | two_step | (no RM) | 500 | ≤ 60000 | – | unknown until sampled |"
        in text
    )
    assert "- `score_effect_edits` (dataset=harmless_global, rm=skywork-8b): gpu=1\n" in text
    assert "- `score_effect_edits` (dataset=harmless," not in text  # §3's are not scored for the effects
    assert "- `perturb` (dataset=harmless, method=polyjuice, orienter=pythia-1.4b): gpu=1\n" in text
    assert "- `embed_texts` (dataset=hs2): gpu=1\n" in text
    assert (
        "## Hub downloads\n\n- model OpenAssistant/reward-model-deberta-v3-large@main (to download; used by "
        "reward_models.deberta-v1.model)\n" in text
    )
    assert "- model uw-hai/polyjuice@default branch (to download; used by perturb.polyjuice.model)\n" in text
    assert text.endswith("- dataset Anthropic/hh-rlhf (datasets.harmless_global)\n")
    assert (
        "### Answers near their max_tokens\n\n- WARNING hs2 / two_step: answer length unknown until the "
        "comparisons are sampled (max_tokens 4096)\n" in text
    )


def test_the_effects_edit_only_what_is_analysed_at_the_papers_design(tmp_path, monkeypatch):
    """The paper's design in miniature with the attribute effects on for two_step: §3's evaluation-only
    dataset gets no effect edits (nothing reads them), so the server receives what the plan says, before
    sampling (at most) and once the originals are scored (the dev server parses every step-1 line, so the
    bound is met); the truncation table has its §3 rows without an effects part."""
    workflow = WorkflowCopy(tmp_path)
    write_mini_paper_inputs(tmp_path)
    monkeypatch.setenv("RMX_TEST_KEY", "sk-test")
    monkeypatch.chdir(tmp_path)  # the config's pair files are relative to it
    with ChatServer(expected_key="sk-test") as server:
        config = mini_paper_config(server)
        config["analysis"]["effects"] = {"enabled": True, "methods": ["two_step"]}
        config_path = workflow.write_config(config)
        design = Design.from_config(load(config_path))
        assert design.effect_pairs == [("harmless_global", "two_step")]
        bound = announced(plan(tmp_path, config_path))
        options = ("--cores", "2", "--configfile", str(config_path))
        originals = [part[3] for part in targets.truncation_parts(design) if part[2] == "originals"]
        workflow.snakemake(*originals, *options)
        scored = plan(tmp_path, config_path)
        assert "| effects | harmless_global | two_step | (no RM) | 7 |" in scored, scored
        assert "| effects | harmless |" not in scored
        workflow.snakemake(paths.table_file(paths.TRUNCATION, "csv"), *options)
        received = server.stats.requests
    assert received == announced(scored) <= bound
    assert not (tmp_path / paths.fmt(paths.EFFECT_EDITS, dataset="harmless", method="two_step")).exists()
    truncation = pl.read_csv(tmp_path / paths.table_file(paths.TRUNCATION, "csv"))
    stages = truncation.group_by("dataset").agg(pl.col("stage").unique().sort())
    assert dict(stages.iter_rows()) == {
        "harmless": ["originals", "perturbations"],
        "harmless_global": ["effects", "originals", "perturbations"],
    }


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


def write_comparisons(root: Path, dataset: str, rows: list[tuple[str, str, str]]) -> None:
    """A sampled comparisons table of ``rows`` (prompt, chosen, rejected)."""
    comparisons = root / paths.fmt(paths.COMPARISONS, dataset=dataset)
    comparisons.parent.mkdir(parents=True)
    pl.DataFrame(
        {
            "comparison_id": [f"{dataset}-s0-{i}" for i in range(len(rows))],
            "dataset": [dataset] * len(rows),
            "seed": [0] * len(rows), "source_index": [str(i) for i in range(len(rows))],
            "prompt": [r[0] for r in rows], "chosen": [r[1] for r in rows], "rejected": [r[2] for r in rows],
        }
    ).write_parquet(comparisons)  # fmt: skip


def test_plan_marks_bounds_and_says_what_a_sampled_dataset_still_needs(tmp_path, monkeypatch):
    """Before sampling, every count is an upper bound: the random baseline's prompts for the second RM are
    the first's (it later sends none), so its row reads "≤ 30", not 30. Once sampled but not scored, the jobs
    that need the orienting RMs' scores say so, and the cost line names the step that scores them; the
    effects' edits need no RM and are counted exactly."""
    monkeypatch.chdir(tmp_path)
    config_path = write_project(tmp_path, ChatServer())  # never started: the plan sends nothing
    config = yaml.safe_load(config_path.read_text())
    config["reward_models"]["toy-rm2"] = config["reward_models"]["toy-rm"]
    config["analysis"]["effects"] = {"enabled": True, "methods": ["two_step"], "rewrite_of_rewrite": False}
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    unsampled = plan_markdown(make_plan(load(config_path), tmp_path))
    for rm in ("toy-rm", "toy-rm2"):
        row = f"| perturb | toy | random | {rm} | 5 | ≤ 30 | – | unknown until sampled | to run |"
        assert row in unsampled
    assert "| discover | toy | discover | toy-rm | 5 | ≤ 5 |" in unsampled, unsampled
    # 5 comparisons: 10 responses × 2 attributes × 2 directions, one round (no edits of edits)
    assert "| effects | toy | two_step | (no RM) | 5 | ≤ 40 | – | unknown until sampled |" in unsampled
    steps = "`snakemake --until sample_comparisons` samples them locally, then `snakemake --until "
    assert steps in unsampled

    write_comparisons(tmp_path, "toy", [("q", "a long answer", "no"), ("r", "yes", "nope")])
    sampled = plan_markdown(make_plan(load(config_path), tmp_path))
    for rm in ("toy-rm", "toy-rm2"):
        row = f"| perturb | toy | random | {rm} | 5 | ≤ 30 | – | unknown until scored | to run |"
        assert row in sampled
    assert "| judge | toy | two_step | toy-rm | 5 | ≤ 6 | – | unknown until scored |" in sampled, sampled
    assert "| effects | toy | two_step | (no RM) | 2 | 16 | 0 | ~" in sampled  # 4 responses × 2 × 2 ways
    assert "until the comparisons are sampled" not in sampled and "sample_comparisons" not in sampled
    assert (
        f"+ the requests unknown yet (discover, judge, perturb {UNSCORED}: `snakemake --until "
        "score_originals` scores the originals (the RMs run, on GPUs where they need them))" in sampled
    )


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
        announced = re.search(r"Requests still to make: (\d+)\.", before)
        assert announced and int(announced.group(1)) == 20 + sum(judged), before

        judgements = [paths.fmt(paths.JUDGEMENTS, dataset="toy", method="rules", orienter=rm) for rm in rms]
        perturbations = [
            paths.fmt(paths.PERTURBATIONS, dataset="toy", method="random", orienter=rm) for rm in rms
        ]
        targets = [*perturbations, *judgements]
        subprocess.run([*SNAKEMAKE, *targets, *options], cwd=tmp_path, check=True, capture_output=True)
        assert server.stats.requests == int(announced.group(1))


def test_plan_equals_what_the_server_receives_when_seeds_redraw_pairs(tmp_path):
    """Three seeds draw 9 comparisons from 5 pairs, so several are drawn twice or more: two_step, a variant of
    it and discovery ask the same prompts for the same pair, and random for the same response, so the
    server receives one request per distinct prompt; the plan counts those, not 9 per job (the variant
    reuses two_step's step 1). The judge's requests are unknown until the perturbations exist; its cost is
    the only part said to be unknown, and for that reason."""
    with ChatServer() as server:
        config_path = write_project(tmp_path, server)
        config = yaml.safe_load(config_path.read_text())
        config["sample"] = {"n_per_seed": 3, "seeds": [0, 1, 2]}
        config["perturb"] = {
            "methods": ["two_step", "two_step_only", "random"], "random": {"n": 2},
            "variants": {"two_step_only": {"method": "two_step", "focus": "only"}},
            "discover": {"enabled": True, "rm": "toy-rm"},
        }  # fmt: skip
        config["llm"]["api_key_env"] = None
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        scores = paths.fmt(paths.ORIGINAL_SCORES, dataset="toy", rm="toy-rm")
        options = ["--cores", "1", "--configfile", str(config_path)]
        subprocess.run([*SNAKEMAKE, scores, *options], cwd=tmp_path, check=True, capture_output=True)
        comparisons = pl.read_parquet(tmp_path / paths.fmt(paths.COMPARISONS, dataset="toy"))
        distinct = comparisons.select("prompt", "chosen", "rejected").unique().height
        assert comparisons.height == 9 and distinct < 9

        before = plan(tmp_path, config_path)
        counted = {}
        for stage, method, n in re.findall(
            r"\| (perturb|discover) \| toy \| (\w+) \| toy-rm \| 9 \| ≤? ?(\d+) \|", before
        ):
            counted[stage, method] = int(n)
        assert counted == {
            ("perturb", "two_step"): distinct * 2 * (1 + 2),  # step 1 per response, step 2 per attribute
            ("perturb", "two_step_only"): distinct * 2 * 2,  # step 1 from two_step's answers
            ("perturb", "random"): distinct * 2 * 2,
            ("discover", "discover"): distinct,
        }, before
        assert "Estimated cost: 0.0" in before and (
            "+ the requests unknown yet (judge until the perturbations it judges exist)" in before
        )
        assert "until the comparisons are sampled" not in before

        outputs = [paths.fmt(paths.PERTURBATIONS, dataset="toy", method=m, orienter="toy-rm")
                   for m in ("two_step", "two_step_only", "random")]  # fmt: skip
        outputs.append(paths.fmt(paths.DISCOVERY_ANSWERS, dataset="toy", orienter="toy-rm"))
        subprocess.run([*SNAKEMAKE, *outputs, *options], cwd=tmp_path, check=True, capture_output=True)
        assert server.stats.requests == sum(counted.values())
        assert max(server.successes().values()) == 1


TOY_PAIRS = [("How do I boil an egg?", "Put it in boiling water for eight minutes.", "Cook it."),
             ("Is tea hot?", "Yes.", "No.")]  # fmt: skip


def toy_config(root: Path) -> dict:
    """The demo's config on a two-pair file scored by a python RM, every LLM stage on, against an address
    nothing listens at (the plan sends nothing): checked, in ``root`` (the working directory)."""
    (root / "toy_rm.py").write_text(
        "def score(prompts, responses):\n    return [len(r) for r in responses]\n"
    )
    (root / "pairs.jsonl").write_text(
        "".join(json.dumps({"prompt": p, "chosen": c, "rejected": r}) + "\n" for p, c, r in TOY_PAIRS)
    )
    config = yaml.safe_load((Path(__file__).parents[1] / "config" / "config.yaml").read_text())
    config.update(
        datasets={"toy": {"source": "file", "path": "pairs.jsonl"}},
        sample={"n_per_seed": 2, "seeds": [0]},
        reward_models={"toy-rm": {"backend": "python", "callable": "toy_rm.py:score"}},
        attributes={"clarity": "whether it is clear", "verbosity": "how long it is"},
        perturb={"methods": ["two_step", "random"], "random": {"n": 2}, "discover": {"enabled": True}},
        llm={"backend": "openai", "model": "dev", "base_url": "http://127.0.0.1:9/v1", "api_key_env": None,
             "prices": {"input_per_million": 2.0, "output_per_million": 8.0}, "max_requests": 20,
             "rate_limit": {"tokens_per_minute": 6000}},
    )  # fmt: skip
    config["tokens"]["enabled"] = False
    config["analysis"]["judge"] = {"enabled": True, "max_per_attribute": 3}
    config["analysis"]["effects"] = {"enabled": True, "methods": ["two_step"], "rewrite_of_rewrite": False}
    return check(config)


def score_toy_originals(root: Path) -> None:
    """The toy's comparisons as sampled, and toy-rm's scores of them: it prefers the chosen answer of the
    first and ties on the second (which the orientation skips)."""
    write_comparisons(root, "toy", TOY_PAIRS)
    scores = root / paths.fmt(paths.ORIGINAL_SCORES, dataset="toy", rm="toy-rm")
    scores.parent.mkdir(parents=True)
    pl.DataFrame(
        {"comparison_id": ["toy-s0-0", "toy-s0-1"], "rm": ["toy-rm"] * 2, "reward_chosen": [42.0, 3.0],
         "reward_rejected": [8.0, 3.0], "plus_target": ["chosen", None], "agrees_with_human": [True, None],
         "truncated_chosen": [False] * 2, "truncated_rejected": [False] * 2, "max_length": [None, None]},
        schema_overrides={"max_length": pl.Int64},
    ).write_parquet(scores)  # fmt: skip


def test_the_plan_of_a_scored_dataset_counts_each_job_by_hand(tmp_path, monkeypatch):
    """One oriented comparison (the other a tie) and two in all: two_step asks a step 1 per response and at
    most a step 2 per attribute (≤ 6), random 2 per response (4), discovery one (1), the effects' edits 2
    responses x 2 comparisons x 2 attributes x 2 directions (16, no RM), the judge at most 2 responses x 2
    attributes (≤ 4, until the perturbations exist). The cost counts every known request at llm.prices; the
    limit of 20 stops the 31; the duration meters prompt plus max_tokens; an answer in the cache is not
    sent again; nothing needs a GPU or a download."""
    monkeypatch.chdir(tmp_path)
    config = toy_config(tmp_path)
    (tmp_path / "more.jsonl").write_text((tmp_path / "pairs.jsonl").read_text() * 2)  # seeds that differ
    more = {**config["datasets"]["toy"], "path": "more.jsonl"}
    two_seeds = check({**config, "datasets": {"toy": more}, "sample": {"n_per_seed": 2, "seeds": [0, 1]}})
    unsampled = plan_markdown(make_plan(two_seeds, tmp_path))  # 2 x 2 comparisons, 2 responses, n 2
    assert "| perturb | toy | random | toy-rm | 4 | ≤ 16 | – | unknown until sampled | to run |" in unsampled
    score_toy_originals(tmp_path)
    scores = tmp_path / paths.fmt(paths.ORIGINAL_SCORES, dataset="toy", rm="toy-rm")
    scores.rename(tmp_path / "scores.parquet")  # sampled, not scored yet
    unscored = plan_markdown(make_plan(config, tmp_path))
    assert "| perturb | toy | random | toy-rm | 2 | ≤ 8 | – | unknown until scored | to run |" in unscored
    (tmp_path / "scores.parquet").rename(scores)
    plan = make_plan(config, tmp_path)
    text = write_plan(config, tmp_path / "results" / "plans" / "plan.md", tmp_path)
    assert (tmp_path / "results" / "plans" / "plan.md").read_text() == text == plan_markdown(plan)
    counts = {(job.stage, job.method): (job.comparisons, job.requests, job.exact) for job in plan.llm_jobs}
    assert counts == {
        ("perturb", "two_step"): (1, 6, False),
        ("perturb", "random"): (1, 4, True),
        ("discover", "discover"): (1, 1, True),
        ("effects", "two_step"): (2, 16, True),
        ("judge", "two_step"): (1, 4, False),
    }
    assert text.startswith(
        "# Plan\n\n## LLM requests\n\n| stage | dataset | method | orienter | comparisons | requests to send "
        "| answered already | tokens in / out | status |\n|---|---|---|---|---|---|---|---|---|\n"
    )
    assert (
        "\n\nRequests to send: those the cache does not answer yet, each counted once (a job asking one an "
        "earlier job asks waits for its answer); ≤ marks an upper bound. Answered already: by the cache or "
        "an earlier job (all of a job that is done).\n\n" in text
    )
    assert "### Spending limits\n\n- llm.max_requests" in text and "### Answers near" not in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and "toy" in line]
    tokens = {job.stage + job.method: job.tokens for job in plan.llm_jobs}
    assert rows == [
        f"| perturb | toy | two_step | toy-rm | 1 | ≤ 6 | 0 | ~{tokens['perturbtwo_step'][0]} / "
        f"~{tokens['perturbtwo_step'][1]} | to run |",
        f"| perturb | toy | random | toy-rm | 1 | 4 | 0 | ~{tokens['perturbrandom'][0]} / "
        f"~{tokens['perturbrandom'][1]} | to run |",
        f"| discover | toy | discover | toy-rm | 1 | 1 | 0 | ~{tokens['discoverdiscover'][0]} / ~40 "
        "| to run |",
        f"| effects | toy | two_step | (no RM) | 2 | 16 | 0 | ~{tokens['effectstwo_step'][0]} / "
        f"~{tokens['effectstwo_step'][1]} | to run |",
        "| judge | toy | two_step | toy-rm | 1 | ≤ 4 | – | unknown until perturbed | to run |",
    ]
    known = [job.tokens for job in plan.llm_jobs if job.tokens is not None]
    cost = request_cost(sum(t[0] for t in known), sum(t[1] for t in known), {"input_per_million": 2.0,
                        "output_per_million": 8.0})  # fmt: skip
    assert (
        f"Requests still to make: at most 31. Estimated cost: {cost:.2f} + the requests unknown yet (judge "
        f"{UNJUDGED}), at {{'input_per_million': 2.0, 'output_per_million': 8.0}} per 1M tokens." in text
    )
    assert "- llm.max_requests 20: 0 requests sent so far (ledger " in text
    assert (
        "20 left; the run needs at most 31: it may stop after 20 more requests, with 11 unsent. Raise "
        "llm.max_requests to at least 31 to finish." in text
    )
    metered = sum(p.prompt_tokens + p.max_tokens for job in plan.llm_jobs for p in job.planned or ())
    assert f"Duration at llm.rate_limit: unknown at 6000 tokens/min (judge {UNJUDGED})" in text
    assert plan.pending[0].metered is not None and metered > 0
    assert (
        "Completions already cached: 0.\n\n## GPU jobs\n\nNone.\n\n## Carriers re-scored\n\n- toy: each RM "
        "scores the proposed carriers' edits with the class undone: how many is known once bias discovery's "
        "effects are estimated (`snakemake --until carrier_edits`)\n\n## Hub downloads\n\nNone: everything"
        in text
    )
    # once the carrier edits exist: their distinct undone texts (per comparison), the skip left out
    undone = pl.DataFrame(
        {
            "dataset": "toy",
            "kind": "discovered",
            "method": "offline",
            "finding": "f",
            "carrier": "filler words",
            "comparison_id": ["c0", "c0", "c1", "c1"],
            "target": "chosen",
            "direction": 1,
            "dose": 1,
            "class_change": 1,
            "source_text": "S",
            "edited_text": "E",
            "source_undone": ["S", "S", "S", None],
            "edited_undone": ["U", "V", "U", None],
            "skip": [None, None, None, "why"],
        }
    )  # c0: S, U, V; c1: S, U
    edits_file = tmp_path / paths.fmt(paths.CARRIER_EDITS, dataset="toy")
    edits_file.parent.mkdir(parents=True)
    S.write_table(undone, str(edits_file), S.CARRIER_EDITS, "carrier edits")
    assert "- toy: each RM scores 5 texts (the proposed carriers' edits" in plan_markdown(
        make_plan(config, tmp_path)
    )
    edits_file.unlink()

    first = next(job for job in plan.llm_jobs if job.method == "random").planned[0]
    cache = CompletionCache(tmp_path / config["llm"].get("cache_dir", ".rmexplain-cache/llm"))
    cache.put(first.key, "openai:dev", Completion(text="an answer"))
    cache.close()
    again = plan_markdown(make_plan(config, tmp_path))
    assert "| perturb | toy | random | toy-rm | 1 | 3 | 1 | ~" in again
    assert "Requests still to make: at most 30." in again and "Completions already cached: 1." in again

    done = tmp_path / paths.fmt(paths.PERTURBATIONS, dataset="toy", method="random", orienter="toy-rm")
    done.parent.mkdir(parents=True, exist_ok=True)
    done.touch()  # the job's output exists: nothing of it is sent
    assert "| perturb | toy | random | toy-rm | 1 | 0 | 4 | ~0 / ~0 | done |" in plan_markdown(
        make_plan(config, tmp_path)
    )


def _three_per_response(n_tasks: int, n_attributes: int, settings: dict) -> int:
    return 3 * n_tasks


def test_a_method_without_a_request_planner_counts_its_declared_bound_from_its_inputs(tmp_path, monkeypatch):
    """An LLM method that declares ``llm_requests`` (3 a response) but no ``plan_requests``: before scoring,
    the bound over the sampled comparisons (2 comparisons, 4 responses: 12), waiting for the scores; once
    scored, over the comparisons the orientation keeps (1 of 2, the other a tie: 6), unplanned for want of
    a planner; once its perturbations are written, 0 to send and done."""
    monkeypatch.chdir(tmp_path)
    methods.register("counted", uses_llm=True, llm_requests=_three_per_response)(lambda tasks, context: [])
    try:
        config = toy_config(tmp_path)
        perturb = {**config["perturb"], "methods": ["two_step", "counted"]}
        no_judge = {**config["analysis"], "judge": {"enabled": False}}  # it would read the perturbations
        config = check({**config, "perturb": perturb, "analysis": no_judge})

        def counted() -> tuple:
            job = next(j for j in make_plan(config, tmp_path).llm_jobs if j.method == "counted")
            return job.comparisons, job.requests, job.exact, job.done, job.unknown

        score_toy_originals(tmp_path)
        scores = tmp_path / paths.fmt(paths.ORIGINAL_SCORES, dataset="toy", rm="toy-rm")
        scores.rename(tmp_path / "scores.parquet")  # sampled, not scored yet
        assert counted() == (2, 12, False, False, UNSCORED)
        (tmp_path / "scores.parquet").rename(scores)
        assert counted() == (1, 6, False, False, UNPLANNED)
        done = tmp_path / paths.fmt(paths.PERTURBATIONS, dataset="toy", method="counted", orienter="toy-rm")
        done.parent.mkdir(parents=True, exist_ok=True)
        done.touch()
        assert counted() == (1, 0, True, True, UNPLANNED)
    finally:
        methods._entries.pop("counted")


def test_the_effect_edits_of_each_analysed_llm_method_and_their_edits_back(tmp_path, monkeypatch):
    """Effects for ``rules`` (no LLM: no job) and then ``two_step``, with edits back: before sampling the
    bound of two rounds (2 comparisons x 2 responses x 2 attributes x 2 directions x 2 rounds: 32), needing
    no RM's scores; sampled, the 16 round-1 rewrites and a stand-in for each rewrite back (an upper bound,
    32); once the edits are written, 0 to send, done, sampled or not."""
    monkeypatch.chdir(tmp_path)
    config = toy_config(tmp_path)
    analysed = {"enabled": True, "methods": ["rules", "two_step"], "rewrite_of_rewrite": True}
    config = check({**config, "analysis": {**config["analysis"], "effects": analysed}})

    def effects() -> list[LLMJob]:
        return stage_jobs(config, tmp_path, "effects")

    def counts(jobs: list[LLMJob]) -> list[tuple]:
        return [(j.method, j.comparisons, j.requests, j.exact, j.done) for j in jobs]

    unsampled = effects()
    assert counts(unsampled) == [("two_step", 2, 32, False, False)]
    assert [(j.planned, j.unknown, j.needs_scores) for j in unsampled] == [(None, UNSAMPLED, False)]
    written = tmp_path / paths.fmt(paths.EFFECT_EDITS, dataset="toy", method="two_step")
    written.parent.mkdir(parents=True)
    written.touch()
    assert counts(effects()) == [("two_step", 2, 0, True, True)]
    written.unlink()
    write_comparisons(tmp_path, "toy", TOY_PAIRS)
    sampled = effects()
    assert counts(sampled) == [("two_step", 2, 32, False, False)]
    assert sampled[0].asked == 32 and [p.exact for p in sampled[0].planned] == [True] * 16 + [False] * 16
    written.touch()
    assert counts(effects()) == [("two_step", 2, 0, True, True)]


def test_the_judges_own_llm_section_is_planned_against_its_own_limit(tmp_path, monkeypatch):
    """Once the perturbations it judges exist, the judge's requests are built (one per perturbation, at most
    max_per_attribute per attribute) and counted against analysis.judge.llm's max_requests, apart from
    llm's."""
    monkeypatch.chdir(tmp_path)
    config = toy_config(tmp_path)
    config["analysis"]["judge"]["llm"] = {"model": "judge-model", "max_requests": 1}
    config = check(config)
    score_toy_originals(tmp_path)
    perturbations = tmp_path / paths.fmt(
        paths.PERTURBATIONS, dataset="toy", method="two_step", orienter="toy-rm"
    )
    perturbations.parent.mkdir(parents=True)
    rows = [("chosen", "worse", "clarity", "Boil it."), ("rejected", "better", "verbosity", "Cook it well.")]
    pl.DataFrame(
        {
            "perturbation_id": [f"p{i}" for i in range(2)], "comparison_id": ["toy-s0-0"] * 2,
            "target": [r[0] for r in rows], "direction": [r[1] for r in rows],
            "attribute": [r[2] for r in rows],
            "variant": [0, 0], "text": [r[3] for r in rows], "method": ["two_step"] * 2,
            "orienter": ["toy-rm"] * 2, "focus_words": [["it"], ["it"]], "generator": ["dev"] * 2,
        }
    ).write_parquet(perturbations)  # fmt: skip
    plan = make_plan(config, tmp_path)
    (judge,) = [job for job in plan.llm_jobs if job.stage == "judge"]
    assert (judge.llm_key, judge.requests, judge.exact, judge.comparisons) == (
        "analysis.judge.llm",
        2,
        True,
        1,
    )
    lines = plan.budget_lines()
    assert (
        lines[0].startswith("- llm.max_requests 20: ") and "the run needs 21: it stops" in lines[0]
    )  # two_step done
    assert lines[1].startswith("- analysis.judge.llm.max_requests 1: ") and (
        "1 left; the run needs 2: it stops after 1 more requests, with 1 unsent. Raise "
        "analysis.judge.llm.max_requests to at least 2 to finish." in lines[1]
    )


def planned(n: int, prompt_chars: int, answer_tokens: int, max_tokens: int) -> tuple[PlannedRequest, ...]:
    return tuple(PlannedRequest(f"k{i}", prompt_chars, 1, answer_tokens, max_tokens) for i in range(n))


def test_plan_states_the_duration_at_the_rate_limit():
    jobs = [
        LLMJob("perturb", "d", "random", "rm", 5, 100, True, False, planned(100, 800, 50, 200)),
        LLMJob("judge", "d", "rules", "rm", 5, 50, True, False, planned(50, 800, 4, 8)),
        LLMJob("perturb", "d", "random", "rm2", 5, 0, True, True, ()),  # done: nothing to send
    ]
    plan = Plan(llm_jobs=jobs, rate_limit={"tokens_per_minute": 10_000, "requests_per_minute": 30})
    metered = 100 * (200 + 200) + 50 * (200 + 8)  # prompts (800 characters: 200 tokens) + max_tokens
    assert plan.duration_line() == (
        f"Duration at llm.rate_limit: 5.0 min at 30 requests/min; {metered / 10_000:.1f} min at 10000 "
        f"tokens/min (~{metered} metered tokens) (the longer one holds)."
    )
    assert "Duration at llm.rate_limit" in plan_markdown(plan)
    assert Plan(llm_jobs=jobs).duration_line() is None
    unknown = Plan(llm_jobs=[LLMJob("discover", "d", "discover", "rm", None, 9, True, False)],
                   rate_limit={"tokens_per_minute": 10_000})  # fmt: skip
    assert (
        "unknown at 10000 tokens/min (discover until the comparisons are sampled)" in unknown.duration_line()
    )


def test_plan_advises_the_requests_sent_plus_those_needed(tmp_path):
    """A cap raised after a stop: 12 sent of 20, 13 to send. The run stops after 8 more; finishing takes
    12 + 13 = 25 (the cap plus the need, 33, would overshoot)."""
    jobs = [LLMJob("perturb", "d", "random", "rm", 5, 13, True, False, planned(13, 400, 10, 20))]
    plan = Plan(llm_jobs=jobs, spending=[Spending("llm", 20, None, 12, 0.0, tmp_path / "ledger.json")])
    (line,) = plan.budget_lines()
    assert "12 requests sent so far" in line and "8 left; the run needs 13: it stops after 8 more" in line
    assert line.endswith("with 5 unsent. Raise llm.max_requests to at least 25 to finish."), line
    fits = Plan(llm_jobs=jobs, spending=[Spending("llm", 25, None, 12, 0.0, tmp_path / "ledger.json")])
    assert "13 left; the run needs 13: it fits" in fits.budget_lines()[0]


def test_the_request_limit_at_its_edges(tmp_path):
    """A cap of 0 lets nothing through; a ledger past its cap (a retry over it) leaves 0, never less."""
    jobs = [LLMJob("perturb", "d", "random", "rm", 5, 3, True, False, planned(3, 400, 10, 20))]
    ledger = tmp_path / "ledger.json"
    (zero,) = Plan(llm_jobs=jobs, spending=[Spending("llm", 0, None, 0, 0.0, ledger)]).budget_lines()
    assert zero == (
        f"- llm.max_requests 0: 0 requests sent so far (ledger {ledger}), 0 left; the run needs 3: it stops "
        "after 0 more requests, with 3 unsent. Raise llm.max_requests to at least 3 to finish."
    )
    (past,) = Plan(llm_jobs=jobs, spending=[Spending("llm", 10, None, 12, 0.0, ledger)]).budget_lines()
    assert "12 requests sent so far" in past and "0 left; the run needs 3: it stops after 0 more" in past
    assert past.endswith("with 3 unsent. Raise llm.max_requests to at least 15 to finish.")


def test_the_cost_limit_at_its_edges(tmp_path):
    """At a USD a token the guard's arithmetic is exact: each request is estimated at 5 (3 prompt tokens,
    2 answer tokens) and may cost 25 at worst (20 prompt characters with the message's 8, max_tokens 5).
    A cap of 35 sends the third request, whose worst case reaches it exactly, and stops before the fourth;
    finishing takes the 20 estimated plus one worst case, 45. A cap of 0 sends nothing. What is spent
    already counts apart from the estimate of what fits."""
    prices = {"input_per_million": 1_000_000.0, "output_per_million": 1_000_000.0}
    jobs = [LLMJob("perturb", "d", "random", "rm", 5, 4, True, False, planned(4, 12, 2, 5))]
    assert request_cost(jobs[0].planned[0].worst_tokens_in, 5, prices) == 25.0
    ledger = tmp_path / "ledger.json"

    def line(cap: float, spent: float, extra: tuple[LLMJob, ...] = ()) -> str:
        spending = Spending("llm", None, cap, 0, spent, ledger)
        (only,) = Plan(llm_jobs=[*jobs, *extra], prices=prices, spending=[spending]).budget_lines()
        return only

    assert line(35.0, 0.0) == (
        f"- llm.max_cost_usd 35.0: 0.00 USD spent so far (ledger {ledger}); it stops after about 3 of the 4 "
        "requests to send (the estimated spending plus the next request's worst case passes the cap). Raise "
        "llm.max_cost_usd to at least 45.00 to finish."
    )
    assert "llm.max_cost_usd 0.0: " in line(0.0, 0.0) and "stops after about 0 of the 4" in line(0.0, 0.0)
    unknown = LLMJob("judge", "d", "random", "rm", 5, 3, False, False, unknown=UNJUDGED)
    assert line(100.0, 10.0, (unknown,)) == (
        f"- llm.max_cost_usd 100.0: 10.00 USD spent so far (ledger {ledger}); the run's estimated 20.00 USD "
        "fits (the requests unknown yet not counted)."
    )


def test_plan_says_where_a_cost_limit_stops_the_run(tmp_path):
    """Each request is estimated at 0.001 USD (worst case 0.0048): with 0.05 of a 0.10 cap spent, the guard
    sends 46 of 100; the cost line counts the known part and names what is not known yet, and why."""
    prices = {"input_per_million": 1.0, "output_per_million": 1.0}
    jobs = [
        LLMJob("perturb", "d", "random", "rm", 5, 100, True, False, planned(100, 3600, 100, 1200)),
        LLMJob("judge", "d", "random", "rm", 5, 30, False, False, unknown=UNJUDGED),
    ]
    spending = Spending("llm", None, 0.10, 40, 0.05, tmp_path / "ledger.json")
    plan = Plan(llm_jobs=jobs, prices=prices, spending=[spending])
    assert (
        plan.cost_line() == "0.10 + the requests unknown yet (judge until the perturbations it judges exist)"
    )
    line = plan.budget_lines()[0]
    assert line.startswith("- llm.max_cost_usd 0.1: 0.05 USD spent so far (ledger ")
    assert (
        "it stops after about 46 of the 100 requests to send" in line and "(the requests unknown yet" in line
    )
    assert "Raise llm.max_cost_usd to at least 0.16 to finish." in line
    fits = Plan(llm_jobs=jobs[:1], prices=prices, spending=[Spending("llm", None, 1.0, 0, 0.0, tmp_path)])
    assert fits.budget_lines()[0].endswith("the run's estimated 0.10 USD fits.")


def _job(stage: str, planned=None, unknown: str = UNSAMPLED, needs_scores: bool = True) -> LLMJob:
    return LLMJob(stage, "d", "two_step", "rm", None, 5, True, False, planned, unknown=unknown,
                  needs_scores=needs_scores)  # fmt: skip


def test_the_cost_and_duration_lines_name_what_is_unknown_and_the_steps_that_make_it_known():
    """A hand-built plan: one job's requests known (a 40-character prompt, 10 tokens, answers 10 of at most
    20), two unknown until sampling (one needing the originals' scores) and one until scoring; prices 1 per
    token. Its lines, word for word."""
    known = _job("judge", (PlannedRequest("k", 40, 1, 10, 20),))
    nothing = _job("edits", ())  # nothing to send: 0 metered tokens
    waiting = [_job("perturb"), _job("effect edits", needs_scores=False), _job("discovery", unknown=UNSCORED)]
    prices = {"input_per_million": 1e6, "output_per_million": 1e6}
    plan = Plan(llm_jobs=[known, nothing, *waiting], prices=prices, rate_limit={"tokens_per_minute": 100})
    sampled = "effect edits, perturb until the comparisons are sampled"
    scored = "discovery until the orienting RMs have scored the originals"
    assert plan.unknown() == [sampled, scored]
    assert plan.next_steps() == [NEXT_STEP[UNSAMPLED], NEXT_STEP[UNSCORED]]
    steps = f"{NEXT_STEP[UNSAMPLED]}, then {NEXT_STEP[UNSCORED]}"
    assert plan.cost_line() == f"20.00 + the requests unknown yet ({sampled}; {scored}: {steps})"
    assert plan.duration_line() == (
        f"Duration at llm.rate_limit: unknown at 100 tokens/min ({sampled}; {scored}) (the longer one holds)."
    )
    only_sampling = Plan(llm_jobs=[_job("effect edits", needs_scores=False)], prices=prices)
    assert only_sampling.next_steps() == [NEXT_STEP[UNSAMPLED]]
    assert only_sampling.cost_line() == (
        "unknown (effect edits until the comparisons are sampled: " + NEXT_STEP[UNSAMPLED] + ")"
    )
    known_only = Plan(llm_jobs=[known, nothing], prices=prices, rate_limit={"tokens_per_minute": 100})
    assert (known_only.cost_line(), known_only.next_steps()) == ("20.00", [])
    assert known_only.duration_line() == (
        "Duration at llm.rate_limit: 0.3 min at 100 tokens/min (~30 metered tokens) (the longer one holds)."
    )


def test_bias_discovery_rounds_before_their_inputs_are_the_engines_bounds(tmp_path, monkeypatch):
    """Two LLM rounds of bias discovery on 10 sampled pairs (not sampled yet), two RMs, the judge in both
    orders on its own LLM section: round 1 asks 2 proposals per RM, round 2 one variation per population
    member per RM; each round rewrites 4 features x min(6 responses a feature, 20 responses) and judges each
    rewrite twice. A round whose edits are written counts 0 to send. With 30 responses a feature, the 20
    responses bound the rewrites."""
    monkeypatch.chdir(tmp_path)
    llm = {"backend": "openai", "model": "dev", "base_url": "http://127.0.0.1:9/v1", "api_key_env": None}
    judge = {"enabled": True, "both_orders": True, "llm": {"model": "judge"}}
    config = discovery_project(tmp_path, llm, population=3, judge=judge)

    def discovery_jobs(config: dict) -> list[tuple]:
        return [(j.dataset, j.method, j.orienter, j.comparisons, j.requests, j.exact, j.done, j.unknown,
                 j.llm_key) for j in stage_jobs(check(config), tmp_path, "discovery")]  # fmt: skip

    rounds = "until the rounds before it are scored"
    on_judge = "discovery.llm.judge.llm"
    expected = [
        ("toy", "llm round 1: proposals", "(every RM)", 10, 4, False, False, UNSAMPLED, "llm"),
        ("toy", "llm round 1: rewrites", "(every RM)", 10, 24, False, False, UNSAMPLED, "llm"),
        ("toy", "llm round 1: judge", "(every RM)", 10, 48, False, False, UNSAMPLED, on_judge),
        ("toy", "llm round 2: variations", "(every RM)", 10, 6, False, False, rounds, "llm"),
        ("toy", "llm round 2: rewrites", "(every RM)", 10, 24, False, False, rounds, "llm"),
        ("toy", "llm round 2: judge", "(every RM)", 10, 48, False, False, rounds, on_judge),
    ]
    assert discovery_jobs(config) == expected
    wide = {**config, "discovery": {**config["discovery"], "responses_per_feature": 30}}
    assert [job[4] for job in discovery_jobs(wide)] == [4, 80, 160, 6, 80, 160]
    written = tmp_path / targets.discovery_round_file(paths.BIASES_ROUND_EDITS, "toy", "llm", 1)
    written.parent.mkdir(parents=True)
    written.touch()
    done = [(d, m, o, c, 0, True, True, u, k) for d, m, o, c, _, _, _, u, k in expected[:3]]
    assert discovery_jobs(config) == done + expected[3:]
