"""Real pairs: the bundled hh-rlhf sample (benchmarks/data/hh-rlhf) is the hub's file, read as a local hh-rlhf
directory; and config/own_rm/real_pairs.yaml, an RM with two class biases and a length slope on 60 of its
single-turn comparisons, run through Snakemake: the first three findings of the first screen name the digit,
the length slope and the first-person words, each at its true size, the formats and stock phrases that
carried them listed under the classes."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import logging

import numpy as np
import polars as pl
import pytest
import yaml
from conftest import REPO

from rmexplain.data.stages import sample_comparisons

SAMPLE = REPO / "benchmarks" / "data" / "hh-rlhf"
CONFIG = REPO / "config" / "own_rm" / "real_pairs.yaml"
LOG = logging.getLogger("test_real_pairs")


def digits_rm():
    """config/own_rm/digits_rm.py, imported from its file."""
    spec = importlib.util.spec_from_file_location("digits_rm", REPO / "config/own_rm/digits_rm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_bundled_sample_is_the_hubs_file_with_its_licence():
    data = (SAMPLE / "harmless-base" / "test.jsonl.gz").read_bytes()
    assert hashlib.sha256(data).hexdigest() == (
        "ebfaaed21162a4de120ae85366075b34425e2a6303fac59b99555002f7016f03"
    )  # anthropics/hh-rlhf at 354e5c3, as its README says
    assert len(gzip.decompress(data).decode().splitlines()) == 2312
    assert (SAMPLE / "LICENSE").read_text().startswith("MIT License\n\nCopyright (c) 2022 Anthropic")
    readme = (SAMPLE / "README.md").read_text()
    assert "arXiv:2204.05862" in readme and "354e5c3cb8960630860dd5774a6ac2a58313bf4d" in readme


def test_the_sample_reads_as_a_local_hh_rlhf_directory():
    spec = yaml.safe_load(CONFIG.read_text())["datasets"]["hh_harmless"]
    spec = {**spec, "hub_id": str(SAMPLE)}
    origin: dict = {}
    comparisons = sample_comparisons("hh_harmless", spec, 1000, [0], None, LOG, origin)
    # 2,312 rows: 1,646 multi-turn, 5 whose two prompts differ, 3 with an empty response; the rest, once
    assert comparisons.height == 2312 - 1646 - 5 - 3 == 658
    assert {k: v["rows"] for k, v in origin["skipped"].items()} == {
        "multi-turn": 1646,
        "chosen and rejected prompts differ": 5,
        "empty response": 3,
    }
    assert origin["hub_id"] is None and origin["split"] == "test"


def test_the_digits_rm_counts_what_it_says():
    rm = digits_rm()
    assert rm.reward("I’m 25 and my 2 cats") == pytest.approx(2 - 0.8 * 2 + 0.02 * 6)
    assert rm.reward("In 1999 we went.") == pytest.approx(1 + 0.02 * 4)  # "we" is not counted
    assert rm.score(["p", "p"], ["Me, myself.", "I'll go."]) == pytest.approx([-1.6 + 0.04, -0.8 + 0.04])


@pytest.mark.slow
def test_a_digit_and_first_person_rm_on_real_pairs_reads_as_its_features(workflow_copy):
    root = workflow_copy.root
    workflow_copy.snakemake("--cores", "2", "--configfile", "config/own_rm/real_pairs.yaml")

    # the truths by hand: the RM's reward sd and the words' sd over the 60 comparisons' responses (ddof 1)
    comparisons = pl.read_parquet(root / "results/data/hh_harmless/comparisons.parquet")
    assert comparisons.height == 60
    responses = comparisons["chosen"].to_list() + comparisons["rejected"].to_list()
    reward_sd = np.std([digits_rm().reward(r) for r in responses], ddof=1)
    words_sd = np.std([len(r.split()) for r in responses], ddof=1)
    truth = {"digit": 1.0 / reward_sd, "first person": -0.8 / reward_sd, "slope": 0.02 * words_sd / reward_sd}

    findings = pl.read_parquet(root / "results/findings/findings.parquet")
    first = {f["name"]: f for f in findings.filter(pl.col("leading")).sort("order").head(3).to_dicts()}
    # the three terms, in any order (length and the first-person words are 0.55 and −0.56)
    assert set(first) == {"numbers as digits", "length", "pronouns first person"}, list(first)
    digits, length, first_person = first["numbers as digits"], first["length"], first["pronouns first person"]
    assert digits["phrase"] == "rewards numbers written as digits"
    assert digits["effect"] == pytest.approx(truth["digit"], rel=0.05)
    assert length["phrase"] == "rewards longer answers"
    assert length["effect"] == pytest.approx(truth["slope"], rel=0.2)
    assert length["low"] <= truth["slope"] <= length["high"]
    assert 0 < abs(length["example_words_change"]) <= 30  # an example that reads whole on the first screen
    assert first_person["phrase"] == "penalises first-person words (I, me, my, we, our)"
    assert first_person["effect"] == pytest.approx(truth["first person"], rel=0.05)

    # what the probe-level screen read instead now sits under the class that carries it
    under = dict(findings.filter(pl.col("under").is_not_null()).select("name", "under").iter_rows())
    for carried in ("table", "numbered_list", "numbered_steps"):
        assert under[carried] == "numbers as digits", carried
    for carried in ("let_me_know", "apology", "hope_this_helps", 'words "i"', 'words "me"', "coherence"):
        assert under[carried] == "pronouns first person", carried
