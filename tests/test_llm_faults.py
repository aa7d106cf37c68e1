"""two_step, random and attribute discovery through the openai backend against a real HTTP server that
injects 429s, 500s, answers slower than the timeout and malformed bodies on more than 30 % of requests."""

from __future__ import annotations

import logging

import polars as pl
from test_llm_methods import ATTRIBUTES, run_method, server_llm, write_inputs

from rmexplain.llm.devserver import FAULT_KINDS, ChatServer
from rmexplain.perturb.discover import discover_attributes

LOG = logging.getLogger("test_llm_faults")
FAULTY = {"fault_pattern": (0, 0, 1, 1, 2), "slow_seconds": 1.2}  # 4 faults per 9 requests


def test_all_llm_stages_complete_under_injected_faults(tmp_path):
    with ChatServer(**FAULTY) as server:
        llm = server_llm(server, tmp_path / "cache", timeout=0.4, concurrency=8)
        two_step = run_method(tmp_path / "two_step", "two_step", llm)
        random = run_method(tmp_path / "random", "random", llm, {"n": 3})
        comps, scores = write_inputs(tmp_path / "discover")
        counts = discover_attributes(
            comparisons=str(comps),
            scores=str(scores),
            orienter="rm-a",
            settings={},
            attributes=ATTRIBUTES,
            answers_out=str(tmp_path / "d" / "answers.parquet"),
            counts_csv=str(tmp_path / "d" / "attributes.csv"),
            counts_md=str(tmp_path / "d" / "attributes.md"),
            log=LOG,
            llm=llm,
        )
        stats = server.stats
        assert stats.fault_count / stats.requests >= 0.30, (stats.faults, stats.requests)
        assert set(stats.faults) == set(FAULT_KINDS)
    # Every perturbation is present: 5 oriented comparisons (one tie) x 2 sides x (3 attributes | 3 variants).
    assert two_step.height == 5 * 2 * len(ATTRIBUTES)
    assert two_step.select("comparison_id", "target", "attribute").is_unique().all()
    assert random.height == 5 * 2 * 3
    answers = pl.read_parquet(tmp_path / "d" / "answers.parquet")
    assert answers.height == 5 and answers["attributes"].list.len().min() >= 1
    assert counts["n_comparisons"].sum() == answers["attributes"].list.len().sum()
    assert (
        (tmp_path / "d" / "attributes.md")
        .read_text()
        .startswith("Attributes named by the LLM over 5 comparisons")
    )
