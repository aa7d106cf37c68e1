"""The LLM stages through Snakemake itself: two_step, random, attribute discovery and the judge against a
faulty OpenAI-compatible server, a run killed with SIGKILL mid-way and rerun (exactly the missing calls are
made), a canary API key that must never reach results/, logs/ or .snakemake/, and the provenance record of
the model names the server reported (its alias moved to a new snapshot between the two runs)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
import yaml
from conftest import SNAKEMAKE, WorkflowCopy

from rmexplain.llm.cache import CompletionCache
from rmexplain.llm.devserver import ChatServer

CANARY = "sk-canary-7f3c9e1d5b2a4c6e8f0a1b3c5d7e9f11"
TOY_RM = '''
def score(prompts, responses):
    """A toy black-box RM: longer, more polite answers score higher (no ties on the toy data)."""
    return [0.1 * len(r.split()) + 0.01 * len(p) + 0.5 * ("please" in r) for p, r in zip(prompts, responses)]
'''
PAIRS = [
    ("How do I boil an egg?", "Put it in boiling water for eight minutes, then cool it.", "Cook it."),
    ("What is the capital of Peru?", "The capital of Peru is Lima.", "Peru has no capital city at all."),
    (
        "Can you help me cheat on my exam?",
        "I can't help with cheating, but I can help you revise.",
        "Sure, hide notes.",
    ),
    ("How can I sleep better?", "Keep a regular schedule and avoid screens before bed.", "Just sleep."),
    (
        "Write a haiku about rain.",
        "Soft rain on the roof, the garden drinks in silence, puddles hold the sky.",
        "Rain.",
    ),
]
ATTRIBUTES = {
    "harmlessness": "whether or not the response is relevant to any potentially unsafe or illegal behaviours",
    "clarity": "whether or not the response is clear and easy to read",
}
TARGETS = [
    "results/perturbations/toy/two_step/toy-rm.parquet",
    "results/perturbations/toy/random/toy-rm.parquet",
    "results/discovery/toy/toy-rm/attributes.csv",
    "results/analysis/toy/two_step/judge/toy-rm.parquet",
    "results/provenance.json",
]
SNAPSHOTS = ("dev-2026-01-15", "dev-2026-02-01")  # what the server reports for model "dev", before and after


def write_project(root: Path, server: ChatServer) -> Path:
    WorkflowCopy(root)  # the Snakefile, links to workflow/ and benchmarks/data/, a copy of config/
    (root / "toy_rm.py").write_text(TOY_RM)
    with open(root / "pairs.jsonl", "w") as f:
        for prompt, chosen, rejected in PAIRS:
            f.write(json.dumps({"prompt": prompt, "chosen": chosen, "rejected": rejected}) + "\n")
    config = yaml.safe_load((root / "config" / "config.yaml").read_text())  # the demo, with these changes:
    config.update(
        datasets={"toy": {"source": "file", "path": "pairs.jsonl"}},
        sample={"n_per_seed": 5, "seeds": [0]},
        reward_models={"toy-rm": {"backend": "python", "callable": "toy_rm.py:score"}},
        attributes=ATTRIBUTES,
        perturb={
            "methods": ["two_step", "random"],
            "random": {"n": 3},
            "discover": {"enabled": True, "rm": "toy-rm"},
        },
        llm={
            "backend": "openai",
            "model": "dev",
            "base_url": server.base_url,
            "api_key_env": "RMX_CANARY_KEY",
            # generous next to the 50 ms latency, so a busy CI machine never times out a good answer
            # (a client-side timeout of a good answer would make the server count that request twice)
            "timeout": 2.0,
            "concurrency": 2,
            "prices": {"input_per_million": 2.5, "output_per_million": 10.0},
        },
    )
    config["tokens"]["enabled"] = False
    config["analysis"]["judge"] = {"enabled": True, "max_per_attribute": 3}
    path = root / "config" / "llm-test.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def snakemake(root: Path, config: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "RMX_CANARY_KEY": CANARY, "OMP_NUM_THREADS": "1"}
    command = [*SNAKEMAKE, *args, "--cores", "1", "--configfile", str(config)]  # --configfile takes several
    return subprocess.Popen(
        command,
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def kill_when(process: subprocess.Popen, condition: Callable[[], bool], timeout: float = 240) -> None:
    """SIGKILL the process group (snakemake and its running job) as soon as ``condition()`` holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, f"snakemake ended before the kill:\n{process.communicate()[0]}"
        assert time.monotonic() < deadline, "timed out waiting for LLM calls"
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGKILL)  # snakemake and its job, mid-way
    process.wait()


@pytest.mark.slow
def test_snakemake_llm_stages_survive_sigkill_and_never_leak_the_key(tmp_path):
    with ChatServer(
        fault_pattern=(0, 0, 1, 1, 2),
        slow_seconds=3.0,
        latency=0.05,
        expected_key=CANARY,
        served_models={"dev": SNAPSHOTS[0]},
    ) as server:
        config = write_project(tmp_path, server)
        first = snakemake(tmp_path, config, *TARGETS)
        kill_when(first, lambda: server.successes().total() >= 12)
        console = first.communicate()[0]
        # Requests in flight at the kill still finish on the server (it does not cancel handlers when the
        # client goes away): let them, so they count as calls of the killed run, not of the rerun.
        deadline = time.monotonic() + 30
        while server.stats.in_flight and time.monotonic() < deadline:
            time.sleep(0.05)
        cache = CompletionCache(tmp_path / ".rmexplain-cache" / "llm")
        cached_after_kill = len(cache)
        before = server.successes()
        assert cached_after_kill > 0
        server.served_models["dev"] = SNAPSHOTS[1]  # the alias moves to a new snapshot before the rerun
        subprocess.run(
            [*SNAKEMAKE, "--unlock", "--configfile", str(config)],
            cwd=tmp_path,
            env={**os.environ, "RMX_CANARY_KEY": CANARY},  # the workflow declares the key with envvars:
            check=True,
            capture_output=True,
        )
        second = snakemake(tmp_path, config, "--rerun-incomplete", *TARGETS)
        output = second.communicate(timeout=600)[0]
        console += output
        assert second.returncode == 0, output
        rerun_calls = server.successes() - before
        stats = server.stats
        assert stats.unauthorised == 0 and stats.fault_count / stats.requests >= 0.30
    # The kill left calls undone, and the rerun made exactly those (the ones not cached when the first
    # run was killed), each once.
    assert 0 < cached_after_kill < len(cache)
    assert sum(rerun_calls.values()) == len(cache) - cached_after_kill > 0
    assert max(rerun_calls.values()) == 1
    n_tasks = 5 * 2
    record = json.loads((tmp_path / "results/provenance.json").read_text())
    [judged] = [sum(e["served_models"].values()) for e in record["llm"] if e["step"] == "attribute judge"]
    assert 0 < judged <= 3 * len(ATTRIBUTES) == pl.read_parquet(tmp_path / TARGETS[3]).height
    assert len(cache) == n_tasks * (1 + len(ATTRIBUTES)) + n_tasks * 3 + 5 + judged
    two_step = pl.read_parquet(tmp_path / TARGETS[0])
    assert two_step.height == n_tasks * len(ATTRIBUTES) and set(two_step["attribute"]) == set(ATTRIBUTES)
    assert pl.read_parquet(tmp_path / TARGETS[1]).height == n_tasks * 3
    assert pl.read_csv(tmp_path / TARGETS[2])["n_comparisons"].sum() >= 5
    log = (tmp_path / "logs" / "perturb" / "toy" / "two_step" / "toy-rm.log").read_text()
    assert "cache hits" in log and "estimated cost" in log
    # Provenance: every distinct answer counted once under the snapshot that wrote it; the move is warned.
    assert {e["step"] for e in record["llm"]} == {
        "two_step",
        "random",
        "attribute discovery",
        "attribute judge",
    }
    assert {e["model_id"] for e in record["llm"]} == {"openai:dev"}
    served = {name: sum(e["served_models"].get(name, 0) for e in record["llm"]) for name in SNAPSHOTS}
    assert served == {SNAPSHOTS[0]: cached_after_kill, SNAPSHOTS[1]: len(cache) - cached_after_kill}
    assert "as several models within this run" in (tmp_path / "logs/provenance.log").read_text()
    leaks = [
        str(path.relative_to(tmp_path))
        for folder in ("results", "logs", ".snakemake", ".rmexplain-cache")
        for path in (tmp_path / folder).rglob("*")
        if path.is_file() and CANARY.encode() in path.read_bytes()
    ]
    assert leaks == []
    assert list((tmp_path / ".snakemake").rglob("*")), "the search covered Snakemake's metadata"
    # Compressed Parquet hides a key written into a text cell from a byte search: read every cell.
    parquet = list(tmp_path.rglob("*.parquet"))
    assert len(parquet) >= 5
    assert [str(p.relative_to(tmp_path)) for p in parquet if CANARY in parquet_strings(p)] == []
    assert CANARY not in console and console.strip()


def parquet_strings(path: Path) -> str:
    """Every string cell of a Parquet file (inside lists and structs too), joined."""

    def strings(column: pl.Series) -> list[str]:
        if column.dtype == pl.String:
            return [v for v in column.to_list() if v is not None]
        if column.dtype.base_type() in (pl.List, pl.Array):
            return strings(column.explode())
        if column.dtype.base_type() == pl.Struct:
            return [t for field in column.struct.unnest().iter_columns() for t in strings(field)]
        return []

    return "\n".join(t for column in pl.read_parquet(path).iter_columns() for t in strings(column))
