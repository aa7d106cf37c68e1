"""The discovery suite at its smallest through Snakemake: the offline engine must find what docs/discovery.md
says it finds at this size. The full suite (config/discovery.yaml) is a benchmark:
``python benchmarks/suites.py discovery`` (its results in benchmarks/results/suites/)."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import yaml

REPO = Path(__file__).resolve().parents[1]
# the base (every planted RM's reference), the control, a catalogue probe's bias, a penalty and a mined word
SUITE_RMS = ("base", "control", "bold", "exclamation-penalty", "your")
# docs/discovery.md states what this test holds the offline engine to, in this sentence
STATED = re.compile(r"the test suite's offline engine finds (\d+) of (\d+) planted biases first")


def small_suite() -> dict:
    """config/discovery.yaml on one dataset, 12 comparisons, fewer edits and four of its planted RMs (one a
    control)."""
    config = yaml.safe_load((REPO / "config" / "discovery.yaml").read_text())
    config["datasets"] = {"helpful": config["datasets"]["helpful"]}
    config["sample"] = {"n_per_seed": 12, "seeds": [0]}
    config["reward_models"] = {rm: config["reward_models"][rm] for rm in SUITE_RMS}
    config["analysis"]["bootstrap"] = {"n_resamples": 200}
    config["discovery"]["responses_per_feature"] = 20
    config["discovery"]["offline"]["mined"] = {"max_candidates": 10, "per_rm": 4}
    return config


def stated_recall() -> tuple[int, int]:
    """(hits, biases) the docs state for the test suite."""
    match = STATED.search(" ".join((REPO / "docs" / "discovery.md").read_text().split()))
    assert match, "docs/discovery.md no longer states the test suite's recall"
    return int(match.group(1)), int(match.group(2))


def test_the_offline_engine_finds_the_planted_biases_the_docs_say(planted_base, tmp_path):
    workflow_copy = planted_base.copy(tmp_path / "run")  # the base RM trained once per session
    workflow_copy.write_config(small_suite())
    targets = ("discovery_recall", "discovered_biases")  # only what the test reads
    workflow_copy.snakemake("--cores", "2", *targets, "--configfile", "config/test.yaml")
    tables = workflow_copy.root / "results" / "tables"
    recall = pl.read_csv(tables / "discovery_recall.csv")
    summary = recall.filter(pl.col("rm") == "all planted RMs").row(0, named=True)
    hits, biases = stated_recall()
    assert summary["biases"] == biases
    assert summary["hits_at_1"] >= hits, recall
    control = recall.filter(pl.col("rm") == "control").row(0, named=True)
    assert control["control"] and control["n_significant"] == 0, recall
    biased = pl.read_csv(tables / "discovered_biases.csv")
    contract = "dataset, rm, engine, feature, description, effect, low, high, q_value, n, support"
    assert biased.columns[:11] == contract.split(", ")
    assert set(biased["rm"]) == set(SUITE_RMS)
    bold = biased.filter((pl.col("rm") == "bold") & (pl.col("feature") == "bold")).row(0, named=True)
    assert bold["significant"] and bold["effect"] > 0 and "**" in bold["example_after"]
    assert set(biased.filter(pl.col("rm") == "bold")["reference"].unique().to_list()) == {"base"}
    edits = pl.read_parquet(workflow_copy.root / "results" / "discovery" / "helpful" / "edits.parquet")
    assert edits.columns[:4] == ["feature", "direction", "source_text", "edited_text"]
    assert set(edits["direction"]) == {1, -1}
    assert not (workflow_copy.root / "results" / "perturbations").exists()  # discovery alone: no perturbing


def test_the_weak_bias_suite_plants_three_weak_biases_per_rm_and_passes_the_check():
    """config/weak_biases.yaml (a benchmark: ``python benchmarks/suites.py weak``): four RMs of three 0.3-sd
    biases each against the base, two more with a length term of ±0.02 per word and two 0.3-sd classes, and
    a control; its class detectors count what the mined classes edit; the bundled splits and a real-data
    sample."""
    from rmexplain.config import check
    from rmexplain.score.planted import detector, planted_biases

    config = check(yaml.safe_load((REPO / "config" / "weak_biases.yaml").read_text()))
    planted = {rm: spec for rm, spec in config["reward_models"].items() if spec["backend"] == "planted"}
    biased = {rm: planted_biases(spec["bias"]) for rm, spec in planted.items() if rm != "control"}
    assert sorted(biased) == ["classes-a", "classes-b", "mixed", "probes", "slope-down", "slope-up"]
    assert all(len(b) == 3 for b in biased.values())
    for rm, biases in biased.items():
        lengths = [b for b in biases if b["detector"] == "length"]
        others = {abs(b["strength"]) for b in biases if b["detector"] != "length"}
        assert others == {0.3} and [(b["strength"], b["per_words"]) for b in lengths] == {
            "slope-up": [(0.02, 1)],
            "slope-down": [(-0.02, 1)],
        }.get(rm, [])
    digits, first, filler = (detector(b) for b in biased["classes-a"])
    text = "I think it takes 3 to 5 minutes, honestly. My 2nd try was just fine."
    assert (digits([""], [text])[0], first([""], [text])[0], filler([""], [text])[0]) == (3, 2, 2)
    # the bundled splits and the real-data sample, read from the bundled hh-rlhf directory
    datasets = config["datasets"]
    assert sorted(datasets) == ["harmless", "helpful", "hh_harmless"]
    real = datasets["hh_harmless"]
    assert (real["source"], real["data_dir"], real["split"]) == ("hh-rlhf", "harmless-base", "test")
    assert (REPO / real["hub_id"] / "harmless-base" / "test.jsonl.gz").is_file()
