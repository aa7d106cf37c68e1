"""The ``analysis`` config section: schema defaults, checks naming the key, and the target lists."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from rmexplain import targets
from rmexplain.config import ConfigError, check, validate_schema
from rmexplain.config.checks import check_analysis
from rmexplain.design import Design

REPO = Path(__file__).resolve().parents[1]


def demo() -> dict:
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    return check(config)


def test_schema_fills_defaults_and_rejects_bad_values():
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    del config["analysis"]
    validate_schema(config)
    assert config["analysis"]["bootstrap"] == {
        "n_resamples": 2000,
        "confidence_level": 0.95,
        "seed": 0,
        "method": "bca",
        "expand": True,
    }
    assert config["analysis"]["judge"]["enabled"] is False and config["analysis"]["variants"] == "mean"
    for bad in ({"variants": "median"}, {"bootstrap": {"n_resamples": 10}}, {"unknown": 1},
                {"probes": {"p": {"regex": True}}}):  # fmt: skip
        broken = copy.deepcopy(config)
        broken["analysis"] = bad
        with pytest.raises(ConfigError, match="analysis"):
            validate_schema(broken)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"examples": {"rms": ["nope"]}}, r"analysis\.examples\.rms: 'nope'"),
        ({"examples": {"pairs": [["demo-helpful", "nope"]]}}, r"analysis\.examples\.pairs\[0\]: 'nope'"),
        ({"examples": {"pairs": [["demo-helpful", "demo-helpful"]]}}, r"two different RMs"),
        ({"methods": ["two_step"]}, r"analysis\.methods: 'two_step'"),
        (
            {"methods": ["rules_random"]},
            r"analysis\.methods: 'rules_random' does not perturb along attributes",
        ),
        ({"probes": {"x": {"pattern": "(", "regex": True}}}, r"analysis\.probes\.x\.pattern"),
        (
            {"probes": {"x": {"pattern": "a", "attributes": ["tone"]}}},
            r"analysis\.probes\.x\.attributes: 'tone'",
        ),
    ],
)
def test_checks_name_the_key(edit, message):
    config = demo()
    config["analysis"] = {**config["analysis"], **edit}
    with pytest.raises(ConfigError, match=message):
        check_analysis(config)


def test_demo_config_passes_the_checks():
    check_analysis(demo())


def test_targets_of_the_demo():
    files = targets.analysis_targets(Design.from_config(demo()))
    assert "results/tables/pfr.html" in files and "results/tables/probe_win_rate.md" in files
    assert "results/figures/analysis/pfr/harmless/rules.png" in files
    assert "results/analysis/examples/harmless/rules/demo-harmless.html" in files
    assert "results/analysis/examples/helpful/rules/demo-helpful_vs_demo-harmless_Yminus.png" in files
    assert not any("judge" in f for f in files)
    assert len(files) == len(set(files))


def test_judge_and_unconditioned_methods_change_the_targets():
    config = demo()
    config["analysis"]["judge"]["enabled"] = True
    files = targets.analysis_targets(Design.from_config(config))
    assert (
        "results/figures/analysis/attribute_judge.png" in files
        and "results/tables/attribute_judge.csv" in files
    )
    assert targets.analysis_table_inputs(Design.from_config(config), "attribute_judge") == [
        f"results/analysis/{d}/rules/judge/{o}.parquet" for d in ("helpful", "harmless")
        for o in ("demo-helpful", "demo-harmless")
    ]  # fmt: skip
    config["perturb"]["methods"] = ["random", "polyjuice"]
    correctness = ["results/figures/analysis/correctness.png"]
    assert targets.analysis_targets(Design.from_config(config)) == correctness


def test_table_inputs_and_example_slots():
    config = demo()
    assert targets.analysis_table_inputs(Design.from_config(config), "tau_rms") == [
        "results/analysis/helpful/rules/tau_rms.parquet",
        "results/analysis/harmless/rules/tau_rms.parquet",
    ]
    with pytest.raises(KeyError, match="unknown analysis table"):
        targets.analysis_table_inputs(Design.from_config(config), "nope")
    outputs = targets.example_outputs(Design.from_config(config), "harmless", "rules")
    assert outputs["html"][0] == "results/analysis/examples/harmless/rules/demo-helpful.html"
    assert len(outputs["figure"]) == 2 + 2  # two one-RM examples, one pair on two sides
    stems = [p.removesuffix(".html").rsplit("/", 1)[1] for p in outputs["html"]]
    design = Design.from_config(config)
    slots = [design.example_slot("harmless", stem) for stem in stems]  # one job per file stem
    assert slots[0] == {"rms": ["demo-helpful"], "pairs": [], "sides": []}
    assert slots[3] == {"rms": [], "pairs": [["demo-helpful", "demo-harmless"]], "sides": ["minus"]}
    with pytest.raises(KeyError, match="no example"):
        Design.from_config(config).example_slot("harmless", "nobody")
