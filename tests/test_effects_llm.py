"""two_step's editor for the attribute effects: the attribute-rewrite prompt over real HTTP to the scripted
OpenAI-compatible server, both directions, each edit edited back, and a rerun answered from the cache."""

from __future__ import annotations

import logging

import polars as pl
from test_plan import stage_jobs

from rmexplain.config import check
from rmexplain.effects.stages import run_effect_edits
from rmexplain.llm.devserver import ChatServer
from rmexplain.schemas import EFFECT_EDITS, PERTURB_SKIPS, read_table

LOG = logging.getLogger("test_effects_llm")
ATTRIBUTES = {"clarity": "whether or not the response is clear and easy to read", "verbosity": "length"}


def comparisons(path) -> str:
    frame = pl.DataFrame(
        {
            "comparison_id": ["c0", "c1"],
            "dataset": ["d", "d"],
            "seed": [0, 0],
            "source_index": ["0", "1"],
            "prompt": ["How do I boil an egg?", "What is a good name for a cat?"],
            "chosen": ["Boil it for six minutes.", "Miso is a good name."],
            "rejected": ["Just boil it.", "Cat."],
        }
    )
    frame.write_parquet(path)
    return str(path)


def edit(tmp_path, server: ChatServer, rewrite_of_rewrite: bool = True) -> pl.DataFrame:
    outputs = {
        "edits": str(tmp_path / "edits.parquet"),
        "skipped": str(tmp_path / "skipped.parquet"),
        "llm_use": str(tmp_path / "llm_use.json"),
    }
    llm = {"backend": "openai", "model": "dev", "base_url": server.base_url, "api_key_env": None,
           "cache_dir": str(tmp_path / "cache"), "timeout": 2.0}  # fmt: skip
    run_effect_edits(
        comparisons(tmp_path / "comparisons.parquet"), "two_step", "two_step", {}, ATTRIBUTES,
        rewrite_of_rewrite, llm, outputs, LOG,
    )  # fmt: skip
    assert read_table(outputs["skipped"], PERTURB_SKIPS, "skips").height == 0
    return read_table(outputs["edits"], EFFECT_EDITS, "edits")


def test_the_llm_edits_every_response_both_ways_and_back_and_reruns_from_the_cache(tmp_path):
    with ChatServer() as server:
        edits = edit(tmp_path, server)
        sent = server.stats.requests
        again = edit(tmp_path, server)
        assert server.stats.requests == sent  # nothing paid twice
    # 2 comparisons x 2 responses x 2 attributes x 2 directions, then each edited back
    assert sent == 2 * 2 * 2 * 2 * 2 == edits.height
    assert again.equals(edits)
    rows = {(r["comparison_id"], r["target"], r["attribute"], r["chain"], r["round"]): r["text"]
            for r in edits.iter_rows(named=True)}  # fmt: skip
    # the scripted server appends [direction attribute] to the response it was asked to edit
    assert rows[("c0", "chosen", "clarity", "worse", 1)] == "Boil it for six minutes. [worse clarity]"
    back = "Boil it for six minutes. [worse clarity] [better clarity]"
    assert rows[("c0", "chosen", "clarity", "worse", 2)] == back
    assert rows[("c1", "rejected", "verbosity", "better", 2)] == "Cat. [better verbosity] [worse verbosity]"
    assert edits["generator"].str.contains("attribute_rewrite@").all()


def test_without_rewrites_of_rewrites_only_round_one_is_asked(tmp_path):
    with ChatServer() as server:
        edits = edit(tmp_path, server, rewrite_of_rewrite=False)
        assert server.stats.requests == 2 * 2 * 2 * 2
    assert edits["round"].unique().to_list() == [1]


def test_the_plan_counts_the_effect_edits_the_job_sends_and_nothing_after_it(tmp_path, monkeypatch):
    with ChatServer() as server:
        config = {
            "datasets": {"d": {"source": "embedded", "part": "helpful", "stages": ["analysis"]}},
            "sample": {"n_per_seed": 2, "seeds": [0]},
            "reward_models": {"rm": {"backend": "python", "callable": "json:loads"}},
            "perturb": {"methods": ["two_step"]},
            "attributes": ATTRIBUTES,
            "analysis": {"effects": {"methods": ["two_step"]}},
            "llm": {"backend": "openai", "model": "dev", "base_url": server.base_url, "api_key_env": None,
                    "cache_dir": str(tmp_path / "cache"), "timeout": 2.0},
        }  # fmt: skip
        check(config)
        monkeypatch.chdir(tmp_path)
        before = stage_jobs(config, tmp_path, "effects")
        assert [(j.requests, j.exact) for j in before] == [(2 * 2 * 2 * 2 * 2, False)]  # not sampled yet
        (tmp_path / "results/data/d").mkdir(parents=True)
        comparisons(tmp_path / "results/data/d/comparisons.parquet")
        (planned,) = stage_jobs(config, tmp_path, "effects")
        assert planned.requests == 2 * 2 * 2 * 2 * 2 and not planned.exact  # round 2: stand-ins
        edit(tmp_path, server)
        sent = server.stats.requests
        (after,) = stage_jobs(config, tmp_path, "effects")
    assert sent == planned.requests
    assert after.requests == 0 and after.asked == sent  # every one answered by the cache
