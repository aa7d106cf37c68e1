"""The planted-bias suite at its smallest through Snakemake: the primary estimator must find what
docs/effects.md says it finds at this size. The full suite (config/planted.yaml) is a benchmark:
``python benchmarks/suites.py planted`` (its results in benchmarks/results/suites/)."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import yaml

REPO = Path(__file__).resolve().parents[1]
# the base (every planted RM's reference), the control, a length bias (the length row, two expected attributes
# with a sign each) and a pattern bias: every path of the planted backend, the recovery and the recall
SUITE_RMS = ("base", "control", "length-penalty", "hedging")
# docs/effects.md states what this test holds the primary estimator to, in this sentence
STATED = re.compile(r"the test suite's primary estimator finds (\d+) of (\d+) planted biases first")


def small_suite() -> dict:
    """config/planted.yaml on one dataset, 8 comparisons and three of its planted RMs (one a control)."""
    config = yaml.safe_load((REPO / "config" / "planted.yaml").read_text())
    config["datasets"] = {"helpful": config["datasets"]["helpful"]}
    config["sample"] = {"n_per_seed": 8, "seeds": [0]}
    config["reward_models"] = {rm: config["reward_models"][rm] for rm in SUITE_RMS}
    config["analysis"]["bootstrap"] = {"n_resamples": 200}
    return config


def stated_recall() -> tuple[int, int]:
    """(hits, biases) the docs state for the test suite's primary estimator."""
    match = STATED.search(" ".join((REPO / "docs" / "effects.md").read_text().split()))
    assert match, "docs/effects.md no longer states the test suite's recall"
    return int(match.group(1)), int(match.group(2))


def test_the_primary_estimator_finds_the_planted_biases_the_docs_say(planted_base, tmp_path):
    workflow_copy = planted_base.copy(tmp_path / "run")  # the base RM trained once per session
    workflow_copy.write_config(small_suite())
    # only what the test reads: the recovery and recall tables, the effects table and its figure
    figure = "results/figures/analysis/effects/helpful/rules.png"
    targets = ("planted_recovery", "results/tables/attribute_effects.csv", figure)
    workflow_copy.snakemake("--cores", "2", *targets, "--configfile", "config/test.yaml")
    tables = workflow_copy.root / "results" / "tables"
    recall = pl.read_csv(tables / "planted_recall.csv").filter(pl.col("dataset") == "all")
    primary = recall.filter(pl.col("primary")).row(0, named=True)
    hits, biases = stated_recall()
    assert primary["biases"] == biases
    assert primary["hits_at_1"] >= hits, recall
    # every estimator is scored, the paper's flip rates among them, and the control is scored apart
    assert {"flip_rate", "paper_delta", "two_way", "rate_ate", "length_adjusted"} <= set(recall["estimator"])
    recovery = pl.read_csv(tables / "planted_recovery.csv")
    control = recovery.filter((pl.col("rm") == "control") & (pl.col("estimator") == primary["estimator"]))
    assert control["expected"].fill_null("").to_list() == [""]
    assert control["verdict"].to_list() == ["control: no significant effect"]
    assert recovery.filter(pl.col("rm") == "length-penalty")["visible_share"].min() > 0
    effects = pl.read_csv(tables / "attribute_effects.csv")
    assert set(effects.filter(pl.col("rm") == "hedging")["reference"].unique().to_list()) == {"base", None}
    assert (workflow_copy.root / figure).stat().st_size
