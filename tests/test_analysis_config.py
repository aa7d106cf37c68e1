"""The ``analysis`` config section: schema defaults, checks naming the key, and the target lists."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from snakemake.utils import validate

from rmexplain.analysis import paths as A
from rmexplain.analysis.config import check_analysis_config
from rmexplain.analysis.targets import analysis_files
from rmexplain.config import ConfigError, check_config

REPO = Path(__file__).resolve().parents[1]
SCHEMA = str(REPO / "workflow" / "schemas" / "config.schema.yaml")


def demo() -> dict:
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    validate(config, SCHEMA)
    check_config(config)
    return config


def test_schema_fills_defaults_and_rejects_bad_values():
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    del config["analysis"]
    validate(config, SCHEMA)
    assert config["analysis"]["bootstrap"] == {
        "n_resamples": 2000,
        "confidence_level": 0.95,
        "seed": 0,
        "method": "bca",
    }
    assert config["analysis"]["judge"]["enabled"] is False and config["analysis"]["variants"] == "mean"
    for bad in ({"variants": "median"}, {"bootstrap": {"n_resamples": 10}}, {"unknown": 1},
                {"probes": {"p": {"regex": True}}}):  # fmt: skip
        broken = copy.deepcopy(config)
        broken["analysis"] = bad
        with pytest.raises(Exception, match="analysis"):
            validate(broken, SCHEMA)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"examples": {"rms": ["nope"]}}, r"analysis\.examples\.rms: 'nope'"),
        ({"examples": {"pairs": [["demo-helpful", "nope"]]}}, r"analysis\.examples\.pairs\[0\]: 'nope'"),
        ({"examples": {"pairs": [["demo-helpful", "demo-helpful"]]}}, r"two different RMs"),
        ({"methods": ["two_step"]}, r"analysis\.methods: 'two_step'"),
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
        check_analysis_config(config)


def test_demo_config_passes_the_checks():
    check_analysis_config(demo())


def test_targets_of_the_demo():
    files = analysis_files(demo())
    assert "results/tables/pfr.html" in files and "results/tables/probe_win_rate.md" in files
    assert "results/figures/analysis/pfr/harmless/rules.png" in files
    assert "results/analysis/examples/harmless/rules/demo-harmless.html" in files
    assert "results/analysis/examples/helpful/rules/demo-helpful_vs_demo-harmless_Yminus.png" in files
    assert not any("judge" in f for f in files)
    assert len(files) == len(set(files))


def test_judge_and_unconditioned_methods_change_the_targets():
    config = demo()
    config["analysis"]["judge"]["enabled"] = True
    files = analysis_files(config)
    assert (
        "results/figures/analysis/attribute_judge.png" in files
        and "results/tables/attribute_judge.csv" in files
    )
    assert A.judgement_files(config) == [
        f"results/analysis/{d}/rules/judge/{o}.parquet" for d in ("helpful", "harmless")
        for o in ("demo-helpful", "demo-harmless")
    ]  # fmt: skip
    config["perturb"]["methods"] = ["random", "polyjuice"]
    assert analysis_files(config) == ["results/figures/analysis/correctness.png"]


def test_table_inputs_and_example_slots():
    config = demo()
    assert A.table_inputs(config, "tau_rms") == [
        "results/analysis/helpful/rules/tau_rms.parquet",
        "results/analysis/harmless/rules/tau_rms.parquet",
    ]
    with pytest.raises(KeyError, match="unknown analysis table"):
        A.table_inputs(config, "nope")
    outputs = A.example_outputs(config, "{dataset}", "{method}")
    assert outputs["html"][0] == "results/analysis/examples/{dataset}/{method}/demo-helpful.html"
    assert len(outputs["figure"]) == 2 + 2  # two one-RM examples, one pair on two sides
