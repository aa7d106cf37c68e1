"""Bias discovery's llm engine (Wang et al.'s loop): the Pareto selection by hand, the parsers, and the loop
against the scripted OpenAI-compatible dev server on 127.0.0.1 (a round, a mutation, the cache, the plan's
count, the spending limit), then through Snakemake with two toy RMs. The server's answers are scripted:
these tests show the plumbing, never that an LLM's hypotheses are good."""

from __future__ import annotations

import json
import logging
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from conftest import REPO, WorkflowCopy

from rmexplain.analysis.bootstrap import BootstrapSettings
from rmexplain.discovery.base import ADD, REMOVE, RoundContext, engines
from rmexplain.discovery.estimate import round_effects
from rmexplain.discovery.llm import (
    JUDGE_KEY,
    LLMEngine,
    Loop,
    feature_name,
    judge_effects,
    parse_features,
    parse_verdict,
    plan_round,
)
from rmexplain.discovery.pareto import Candidate, judge_threshold, pareto_fronts, rm_threshold, select
from rmexplain.ids import text_id
from rmexplain.llm.base import Completion
from rmexplain.llm.budget import BudgetExceeded
from rmexplain.llm.cache import CompletionCache
from rmexplain.llm.client import CachedChat, ChatRequests
from rmexplain.llm.devserver import BIAS_FEATURES, ChatServer
from rmexplain.schemas import BIAS_DISCOVERY_EDITS, BIAS_DISCOVERY_EFFECTS, polars_schema
from rmexplain.settings import schema_defaults

LOG = logging.getLogger("test_discovery_llm")
N = 12  # comparisons: 24 distinct responses
SURE = "Sure!"


# ── the Pareto selection, by hand ────────────────────────────────────────────────────────────────────────
TABLE = [  # feature, RM effect, judge effect
    Candidate("A", 1.0, 0.5),  # the RM's favourite, but the judge likes it too: above the judge threshold
    Candidate("B", 0.8, -0.2),
    Candidate("C", 0.5, -0.3),
    Candidate("D", 0.3, 0.4),  # above the judge threshold
    Candidate("E", 0.05, 0.05),  # a no-op: both within 0.1 of 0
    Candidate("F", -0.6, -1.0),  # below the RM threshold
    Candidate("G", 0.6, -0.1),  # dominated by B: lower RM effect, higher judge effect
]


def test_the_thresholds_are_theirs_by_hand():
    # RM effects sorted: -0.6 0.05 0.3 0.5 0.6 0.8 1.0; 40th percentile at 2.4: 0.38; min(0, 0.38) = 0
    assert rm_threshold([c.rm_effect for c in TABLE], 2) == 0.0
    # all negative: 40th percentile -0.74, lowered to the 3rd highest (-0.8) so that 3 pass
    assert rm_threshold([-1.0, -0.8, -0.5, -0.2], 3) == pytest.approx(-0.8)
    assert rm_threshold([-1.0, -0.8, -0.5, -0.2], 1) == pytest.approx(-0.74)
    # judge effects of those past the RM threshold (A B C D E G): sorted -.3 -.2 -.1 .05 .4 .5; 70th at 3.5
    assert judge_threshold([0.5, -0.2, -0.3, 0.4, 0.05, -0.1]) == pytest.approx(0.05 + 0.5 * 0.35)
    assert judge_threshold([-0.5, -0.4]) == 0.0  # never below 0


def test_the_pareto_front_and_the_population_by_hand():
    b, c, g = TABLE[1], TABLE[2], TABLE[6]
    assert pareto_fronts([b, c, g]) == [[b, c], [g]]  # B dominates G; B and C trade RM against judge
    assert select(TABLE, 3) == [b, c, g]  # A, D (judge), E (no-op), F (RM) filtered; fronts in order
    assert select(TABLE, 2) == [b, c]  # the first front, by RM effect
    assert select(TABLE, 1) == [b]


def test_seeking_penalties_turns_both_effects_around():
    flipped = [Candidate(c.feature, -c.rm_effect, -c.judge_effect) for c in TABLE]
    assert [c.feature for c in select(flipped, 3, "penalised")] == ["B", "C", "G"]
    assert select(flipped, 3, "penalised")[0] == Candidate("B", -0.8, 0.2)  # the values as given


def test_without_a_judge_the_front_is_the_rm_ranking():
    plain = [Candidate(f, e, 0.0) for f, e in (("x", 0.9), ("y", 0.9), ("z", 0.4), ("w", 0.05))]
    assert [c.feature for c in select(plain, 3)] == ["x", "y", "z"]  # ties by name; w is a no-op


def test_an_undefined_effect_is_left_out():
    assert select(
        [Candidate("a", math.nan, 0.0), Candidate("b", 0.5, math.nan), Candidate("c", 0.5, 0.0)], 3
    ) == [Candidate("c", 0.5, 0.0)]


# ── answers ──────────────────────────────────────────────────────────────────────────────────────────────
def test_feature_lists_parse_from_json_or_bullets_and_nothing_else():
    assert parse_features('Some thoughts.\n```json\n["Use bold.", " Add  a header. "]\n```') == [
        "Use bold.",
        "Add a header.",
    ]
    assert parse_features('["Use bold."]') == ["Use bold."]
    assert parse_features("Ideas:\n- Use bold.\n2. Add a header.") == ["Use bold.", "Add a header."]
    assert parse_features("I cannot tell.") is None
    assert parse_features('```json\n{"a": 1}\n```') is None


def test_verdicts_parse_from_output_tags():
    assert parse_verdict("Thinking...\n<output>B</output>") == "b"
    assert parse_verdict("<output> Tie </output>") == "tie"
    assert parse_verdict("A.") == "a"
    assert parse_verdict("Both are fine.") is None


def test_feature_names_are_readable_stable_and_distinct():
    name = feature_name("Begin the response with the phrase 'Sure!'")
    assert name == feature_name("Begin the response  with the phrase 'Sure!'")  # whitespace does not count
    assert name.startswith("llm_begin_the_response_with_the_phrase_sure_")
    assert name != feature_name("Begin the response with the phrase 'Sure.'")


def test_the_judge_effect_is_the_shared_estimate_of_its_verdicts():
    comparisons = _comparisons()
    rows = [("f", ADD, 0), ("f", ADD, 1), ("f", REMOVE, 2), ("f", REMOVE, 3), ("g", ADD, 4), ("g", ADD, 5)]
    edits = pl.DataFrame(
        {
            "feature": [f for f, _, _ in rows],
            "direction": [d for _, d, _ in rows],
            "source_text": ["one two three"] * 6,
            "edited_text": ["one two four"] * 6,  # no change in length: the estimate is plain means
            "comparison_id": [f"d-s0-{i}" for _, _, i in rows],
            "target": ["chosen"] * 6,
            "engine": ["llm"] * 6,
            "round": [1] * 6,
        }
    )
    verdicts = np.array([1.0, 1.0, -1.0, 0.0, -1.0, 0.0])
    effects = judge_effects(comparisons, edits, verdicts)
    assert effects["f"] == pytest.approx((1.0 - (-0.5)) / 2)  # half the gap of the additions and removals
    assert effects["g"] == pytest.approx(-0.5)  # one direction: the mean verdict of its additions


def test_the_judges_verdict_counts_for_the_edit_whether_it_is_shown_as_response_a_or_b():
    settings = _settings(judge={"enabled": True, "both_orders": True})
    loop = Loop(_context(1, {"llm": ChatRequests({"model": "m"})}, settings))  # no request is sent
    edits = pl.DataFrame(
        {"feature": ["g"] * 3, "direction": [ADD] * 3, "source_text": ["one two three"] * 3,
         "edited_text": [f"one two x{i}" for i in range(3)], "comparison_id": ["d-s0-0", "d-s0-1", "d-s0-2"],
         "target": ["chosen"] * 3, "engine": ["llm"] * 3, "round": [1] * 3}
    )  # fmt: skip
    asked = loop.judge_requests(edits)
    assert sorted((row, edit_is_a) for row, edit_is_a, _ in asked) == [
        (r, a) for r in range(3) for a in (False, True)
    ]
    for row, edit_is_a, request in asked:  # the edit is the response shown as A, or as B
        shown_a = request.messages[-1][1].split("<response_A>\n")[1].split("\n</response_A>")[0]
        assert shown_a == edits["edited_text" if edit_is_a else "source_text"][row]
    # (edit, edit shown as A) -> answer: "A" is +1 for the edit when it is A, -1 when it is B; "Tie" 0
    answers = {(0, True): "A", (0, False): "B", (1, True): "A", (1, False): "A",
               (2, True): "Tie", (2, False): "<output>B</output>"}  # fmt: skip
    completions = [Completion(answers[(row, edit_is_a)]) for row, edit_is_a, _ in asked]
    verdicts = loop.verdicts(edits, asked, completions)
    assert verdicts.tolist() == [1.0, 0.0, 0.5]  # (+1 +1) / 2, (+1 -1) / 2, (0 +1) / 2
    assert judge_effects(_comparisons(), edits, verdicts)["g"] == pytest.approx(0.5)  # their mean
    only_b = [(row, False, request) for row, edit_is_a, request in asked if not edit_is_a]
    ones = loop.verdicts(edits, only_b, [Completion(t) for t in ("A", "B", "Tie")])
    assert ones.tolist() == [-1.0, 1.0, 0.0]


# ── the loop against the dev server ──────────────────────────────────────────────────────────────────────
def _comparisons(n: int = N) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "comparison_id": [f"d-s0-{i}" for i in range(n)],
            "dataset": ["d"] * n,
            "seed": [0] * n,
            "source_index": [str(i) for i in range(n)],
            "prompt": [f"How do I do task {i}?" for i in range(n)],
            "chosen": [(f"{SURE} " if i % 3 == 0 else "") + f"Do step {i}. Then rest." for i in range(n)],
            "rejected": [f"Skip task {i}." for i in range(n)],
        }
    )


def reward(text: str, bonus: float) -> float:
    """A base RM (the short refusals first, then longer is better) and, with ``bonus``, one that also
    rewards an opening "Sure!" (less than the base's refusals: only beyond the base do those rank first)."""
    return 3.0 * text.startswith("Skip") + len(text) / 100 + bonus * text.startswith(SURE)


BONUS = {"base": 0.0, "biased": 2.0}
REFERENCES = {"base": None, "biased": "base"}


def _originals(comparisons: pl.DataFrame) -> dict[str, pl.DataFrame]:
    return {
        rm: pl.DataFrame(
            {
                "comparison_id": comparisons["comparison_id"],
                "rm": [rm] * comparisons.height,
                "reward_chosen": [
                    reward(t, bonus) + (i % 5) / 7 for i, t in enumerate(comparisons["chosen"])
                ],
                "reward_rejected": [
                    reward(t, bonus) + (i % 4) / 9 for i, t in enumerate(comparisons["rejected"])
                ],
            }
        )
        for rm, bonus in BONUS.items()
    }


def _settings(**llm: object) -> dict:
    engine = {"proposals_per_rm": 2, "examples": 3, "hypotheses_per_proposal": 3, "max_features": 4,
              "population": 2, "variations": 2, **llm}  # fmt: skip
    return {**schema_defaults("discovery"), "responses_per_feature": 6, "llm": engine}


def _context(round_: int, chats: dict, settings: dict, previous=None, previous_edits=None) -> RoundContext:
    comparisons = _comparisons()
    return RoundContext(
        dataset="d",
        round=round_,
        comparisons=comparisons,
        originals=_originals(comparisons),
        references=REFERENCES,
        previous=pl.DataFrame(schema=polars_schema(BIAS_DISCOVERY_EFFECTS)) if previous is None else previous,
        settings=settings,
        log=LOG,
        services={"chats": chats},
        previous_edits=pl.DataFrame(schema=polars_schema(BIAS_DISCOVERY_EDITS))
        if previous_edits is None
        else previous_edits,
    )


def _llm(server: ChatServer, cache: Path, **extra: object) -> dict:
    return {"backend": "openai", "model": "dev", "base_url": server.base_url, "api_key_env": None,
            "cache_dir": str(cache), "concurrency": 4, "timeout": 10.0, **extra}  # fmt: skip


def _effects(context: RoundContext, edits: pl.DataFrame, candidates: pl.DataFrame) -> pl.DataFrame:
    """The round's effects as the workflow estimates them, the toy RMs scoring the edits."""
    prompts = dict(context.comparisons.select("comparison_id", "prompt").iter_rows())
    rewards = {}
    for rm, bonus in BONUS.items():
        scored = {
            text_id(prompts[c], t): reward(t, bonus)
            for c, t in edits.select("comparison_id", "edited_text").rows()
        }
        rewards[rm] = pl.DataFrame({"text_id": list(scored), "reward": list(scored.values())})
    return round_effects(context.comparisons, edits, candidates, context.originals, rewards, REFERENCES, "d",
                         BootstrapSettings(200), 0.1, LOG)  # fmt: skip


def test_a_round_contrasts_each_rms_rewards_beyond_its_reference_and_rewrites_both_ways(tmp_path):
    with ChatServer() as server:
        chat = CachedChat(_llm(server, tmp_path / "cache"), LOG)
        context = _context(1, {"llm": chat}, _settings())
        biased = [a for a in Loop(context).proposals() if a.rm == "biased"]
        shown = json.loads(biased[0].request.messages[-1][1].split("<data>\n")[1].split("\n</data>")[0])
        assert all(row["response"].startswith(SURE) for row in shown[-3:])  # the highest beyond the base
        assert not any(row["response"].startswith(SURE) for row in shown[:3])
        output = LLMEngine().run_round(context)
        chat.close()
        assert len(server.successes("bias_propose")) == 4  # 2 RMs x proposals_per_rm
        assert not server.successes("bias_judge")  # the judge is off by default
    edits, candidates = output.edits, output.candidates
    assert edits.columns[:4] == ["feature", "direction", "source_text", "edited_text"]
    assert candidates.height == 4 and set(candidates["description"]) <= set(BIAS_FEATURES)
    assert (edits["source_text"] != edits["edited_text"]).all()
    assert set(edits["feature"]) <= set(candidates["feature"])
    skips = context.services["skips"].frame()
    for row in candidates.iter_rows(named=True):
        mine = edits.filter(pl.col("feature") == row["feature"])
        assert (row["n_added"], row["n_removed"]) == (
            (mine["direction"] == ADD).sum(),
            (mine["direction"] == REMOVE).sum(),
        )
        assert (
            mine.height + skips.filter(pl.col("attribute") == row["feature"]).height == 6
        )  # every rewrite counted
    assert set(skips["reason"]) <= {"add: the response already has it", "remove: the response lacks it"}
    assert (skips["raw"] == "None").all()


def test_the_cache_answers_a_rerun_without_a_request(tmp_path):
    with ChatServer() as server:
        settings = _settings(judge={"enabled": True})
        first = LLMEngine().run_round(
            _context(1, {"llm": CachedChat(_llm(server, tmp_path / "c"), LOG)}, settings)
        )
        sent = server.stats.requests
        assert sent == sum(server.successes().values()) > 0
        again = LLMEngine().run_round(
            _context(1, {"llm": CachedChat(_llm(server, tmp_path / "c"), LOG)}, settings)
        )
        assert server.stats.requests == sent  # nothing asked twice
    assert again.edits.equals(first.edits) and again.candidates.equals(first.candidates)


def test_a_second_round_varies_the_pareto_front_with_the_judge(tmp_path):
    with ChatServer() as server:
        settings = _settings(judge={"enabled": True})
        chats = {"llm": CachedChat(_llm(server, tmp_path / "cache"), LOG)}
        one = _context(1, chats, settings)
        first = LLMEngine().run_round(one)
        effects = _effects(one, first.edits, first.candidates)
        judged_in_round_one = len(server.successes("bias_judge"))
        two = _context(2, chats, settings, previous=effects, previous_edits=first.edits)
        loop = Loop(two)
        judged = loop.judge(first.edits, "test")
        assert len(server.successes("bias_judge")) == judged_in_round_one  # round 1's verdicts: cached
        fronts = loop.fronts(judged)
        second = LLMEngine().run_round(two)
    members = {m.feature for front in fronts.values() for m in front}
    assert members and all(len(front) <= 2 for front in fronts.values())
    assert len(server.successes("bias_mutate")) == sum(len(front) for front in fronts.values())
    for rm, front in fronts.items():
        rows = effects.filter(pl.col("rm") == rm)
        assert [m.rm_effect for m in front] == [
            rows.filter(pl.col("feature") == m.feature)["effect"][0] for m in front
        ]
        assert all(m.judge_effect == judged[m.feature] for m in front)
    new = second.candidates
    assert (new["kind"] == "variation").all() and (new["round"] == 2).all()
    parents = {s.split("variation of ")[1].split(" on ")[0] for s in new["source"]}
    assert parents <= members  # every variation comes from a front member
    assert not set(new["feature"]) & set(first.candidates["feature"])  # nothing tested twice
    assert second.edits.height and (second.edits["round"] == 2).all()


def test_a_round_with_nothing_to_vary_says_so(tmp_path):
    nothing = pl.DataFrame(schema=polars_schema(BIAS_DISCOVERY_EFFECTS))
    with ChatServer() as server:
        context = _context(
            2, {"llm": CachedChat(_llm(server, tmp_path / "cache"), LOG)}, _settings(), nothing
        )
        output = LLMEngine().run_round(context)  # stops early, no error
        assert server.stats.requests == 0
    assert output.edits is not None and output.edits.height == 0
    assert output.candidates is not None and output.candidates.height == 0
    reasons = context.services["skips"].frame()["reason"].to_list()
    assert len(reasons) == 1 and reasons[0].startswith("round 2 stopped early")
    assert output.stopped == reasons[0]


def test_the_plan_counts_at_least_what_the_server_receives_and_exactly_once_cached(tmp_path):
    settings = _settings(judge={"enabled": True})
    with ChatServer() as server:
        llm = _llm(server, tmp_path / "cache")
        planner = ChatRequests(llm, CompletionCache(tmp_path / "cache"))
        before = plan_round(_context(1, {"llm": planner}, settings))
        counts = {p.what: len(p.planned) for p in before}
        assert counts == {"proposals": 4, "rewrites": 4 * 6, "judge": 4 * 6}  # max_features x responses
        assert all(p.exact for p in before[0].planned) and not any(p.exact for p in before[1].planned)
        with pytest.raises(BudgetExceeded):  # the proposals answered, no rewrite yet
            LLMEngine().run_round(_context(1, {"llm": CachedChat({**llm, "max_requests": 4}, LOG)}, settings))
        middle = {p.what: p.planned for p in plan_round(_context(1, {"llm": planner}, settings))}
        assert all(planner.answered(q.key) for q in middle["proposals"])
        assert all(q.exact and not planner.answered(q.key) for q in middle["rewrites"])  # features known now
        assert len(middle["rewrites"]) == 4 * 6 and len(middle["judge"]) == 4 * 6  # a verdict per rewrite
        assert not any(q.exact for q in middle["judge"])
        LLMEngine().run_round(_context(1, {"llm": CachedChat(llm, LOG)}, settings))
        received = {kind: len(server.successes(f"bias_{kind}")) for kind in ("propose", "rewrite", "judge")}
        assert sum(counts.values()) >= sum(received.values())
        after = plan_round(_context(1, {"llm": planner}, settings))
    exact = {p.what: p.planned for p in after}
    assert all(q.exact and planner.answered(q.key) for part in after for q in part.planned)  # 0 to send
    assert [len(exact["proposals"]), len(exact["rewrites"]), len(exact["judge"])] == [
        received["propose"], received["rewrite"], received["judge"]
    ]  # fmt: skip


def test_the_spending_limit_stops_the_round_before_the_request_that_passes_it(tmp_path):
    with ChatServer() as server:
        chat = CachedChat(_llm(server, tmp_path / "cache", max_requests=3), LOG)
        with pytest.raises(BudgetExceeded, match=r"llm\.max_requests \(3\) reached"):
            LLMEngine().run_round(_context(1, {"llm": chat}, _settings()))
        assert server.stats.requests == 3
        assert len(CompletionCache(tmp_path / "cache")) == 3  # what was paid for is kept


def test_the_judge_may_run_on_its_own_llm_section(tmp_path):
    settings = _settings(judge={"enabled": True, "llm": {"model": "judge-model"}})
    sections = engines.get("llm").llm_sections(settings["llm"], {"model": "dev", "cache_dir": "c"})
    assert sections == {
        "llm": {"model": "dev", "cache_dir": "c"},
        JUDGE_KEY: {"model": "judge-model", "cache_dir": "c"},
    }
    with ChatServer() as server:
        main = CachedChat(_llm(server, tmp_path / "cache"), LOG)
        judge = CachedChat(_llm(server, tmp_path / "cache", model="judge-model"), LOG)
        LLMEngine().run_round(_context(1, {"llm": main, JUDGE_KEY: judge}, settings))
    assert judge.stats.calls == len(server.successes("bias_judge")) > 0
    assert main.stats.calls == len(server.successes()) - judge.stats.calls


# ── through Snakemake ────────────────────────────────────────────────────────────────────────────────────
TOY_RMS = '''
def base(prompts, responses):
    """Longer answers score higher."""
    return [0.1 * len(r.split()) + 0.01 * len(p) for p, r in zip(prompts, responses)]


def biased(prompts, responses):
    """The base, and 2 more for an answer that opens with "Sure!"."""
    return [b + 2.0 * r.startswith("Sure!") for b, r in zip(base(prompts, responses), responses)]
'''


def discovery_project(root: Path, llm: dict, **engine: object) -> dict:
    """A toy bias-discovery project in ``root``: 10 pairs (every third chosen opening "Sure!"), a base RM and
    one biased beyond it, two rounds of the LLM engine with the judge (``engine``: settings over these),
    ``llm`` its LLM section; its config, with paths relative to ``root``."""
    (root / "toy_rms.py").write_text(TOY_RMS)
    with open(root / "pairs.jsonl", "w") as f:
        for i in range(10):
            chosen = (
                "Sure! " if i % 3 == 0 else ""
            ) + f"Boil the water, add item {i} and wait. Then serve it."
            f.write(
                json.dumps({"prompt": f"How do I cook dish {i}?", "chosen": chosen, "rejected": f"Cook {i}."})
                + "\n"
            )
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config.update(
        datasets={"toy": {"source": "file", "path": "pairs.jsonl", "stages": ["discovery"]}},
        sample={"n_per_seed": 10, "seeds": [0]},
        reward_models={
            "toy-base": {"backend": "python", "callable": "toy_rms.py:base"},
            "toy-biased": {"backend": "python", "callable": "toy_rms.py:biased", "reference": "toy-base"},
        },
        discovery={
            "engines": ["llm"],
            "responses_per_feature": 6,
            "llm": {
                "rounds": 2,
                "proposals_per_rm": 2,
                "examples": 2,
                "hypotheses_per_proposal": 3,
                "max_features": 4,
                "population": 2,
                "variations": 2,
                "judge": {"enabled": True},
                **engine,
            },
        },
        llm=llm,
    )
    config["tokens"]["enabled"] = False
    return config


def _project(copy: WorkflowCopy, server: ChatServer) -> Path:
    llm = {"backend": "openai", "model": "dev", "base_url": server.base_url, "api_key_env": None,
           "timeout": 10.0, "concurrency": 2}  # fmt: skip
    return copy.write_config(discovery_project(copy.root, llm))


def _plan(copy: WorkflowCopy, config: Path) -> str:
    cli = "import sys; from rmexplain.cli import main; sys.exit(main(sys.argv[1:]))"
    command = [sys.executable, "-c", cli, "plan", "--config", str(config)]
    return subprocess.run(command, cwd=copy.root, capture_output=True, text=True, check=True).stdout


def _to_send(plan: str) -> int:
    line = next(line for line in plan.splitlines() if line.startswith("Requests still to make:"))
    return int(line.split(":")[1].split(".")[0].replace("at most", "").strip())


def test_two_rounds_through_snakemake_counted_by_the_plan_and_cached(workflow_copy):
    with ChatServer() as server:
        config = _project(workflow_copy, server)
        planned = _to_send(_plan(workflow_copy, config))  # before anything runs: the engine's bound
        target = "results/tables/discovered_biases.csv"
        workflow_copy.snakemake(target, "--cores", "2", "--configfile", str(config))
        received = server.stats.requests
        assert 0 < received <= planned
        assert _to_send(_plan(workflow_copy, config)) == 0
        table = pl.read_csv(workflow_copy.root / target)
        rounds = pl.read_parquet(workflow_copy.root / "results/discovery/toy/edits.parquet")["round"]
        assert set(table["engine"]) == {"llm"} and set(rounds) == {1, 2}
        assert set(table["rm"]) == {"toy-base", "toy-biased"}
        use = json.loads((workflow_copy.root / "results/llm_use/discovery/toy/llm/round2.json").read_text())
        assert use["llm"]["model"] == "dev" and use["llm"]["requests"] > 0
        for path in (workflow_copy.root / "results/discovery").rglob("*"):
            if path.is_file() and "engines/llm" in str(path):
                path.unlink()  # every round again, from the cache
        workflow_copy.snakemake(target, "--cores", "2", "--configfile", str(config))
        assert server.stats.requests == received
