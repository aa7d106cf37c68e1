"""Wrong inputs a new user gives fail at config-check time, naming the key, file or row."""

from __future__ import annotations

import copy
import re

import pytest
import yaml
from conftest import REPO, tiny_demo_config

from rmexplain.config import ConfigError, check, load, load_schema
from rmexplain.yaml_unique import load_yaml


def test_duplicate_seeds_are_refused():
    config = tiny_demo_config()
    config["sample"]["seeds"] = [0, 0]
    with pytest.raises(ConfigError, match=r"sample.*seeds"):
        check(config)
    config = tiny_demo_config()
    config["datasets"]["harmless"]["seeds"] = [3, 3]
    with pytest.raises(ConfigError, match="seeds"):
        check(config)


def test_misspelled_paper_names_in_reproduce_are_refused():
    paper = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    check(copy.deepcopy(paper))
    for key, wrong, right in (
        ("reward_models", "V1", "v1"),
        ("datasets", "harmles", "harmless"),
        ("methods", "ours", "OURS"),
    ):
        broken = copy.deepcopy(paper)
        broken["reproduce"][key][wrong] = broken["reproduce"][key].pop(right)
        with pytest.raises(ConfigError, match=rf"reproduce\.{key}: '{wrong}' .*'{right}'"):
            check(broken)


def test_method_wildcard_accepts_every_name_the_schema_accepts():
    schema = load_schema()
    pattern = schema["properties"]["perturb"]["properties"]["variants"]["propertyNames"]["pattern"]
    common = (REPO / "workflow" / "rules" / "common.smk").read_text()
    constraint = re.search(r'^\s+method="([^"]+)",', common, re.M).group(1)
    assert f"^{constraint}$" == pattern
    assert re.fullmatch(constraint, "rules2") and not re.fullmatch(constraint, "2rules")


def test_a_key_given_twice_names_the_key_and_file(tmp_path):
    path = tmp_path / "twice.yaml"
    text = (REPO / "config" / "config.yaml").read_text()
    path.write_text(text + "\nsample:\n  n_per_seed: 3\n")
    with pytest.raises(ConfigError, match=r"twice\.yaml.*'sample' is given twice"):
        load(path)
    nested = tmp_path / "nested.yaml"
    nested.write_text("a:\n  b: 1\n  b: 2\n")
    with pytest.raises(ConfigError, match=r"nested\.yaml.*'b' is given twice.*line 2"):
        load_yaml(nested)
    assert load_yaml(REPO / "config" / "config.yaml") == yaml.safe_load(text)


def test_snakemake_refuses_a_config_file_with_a_key_given_twice(workflow_copy):
    twice = workflow_copy.root / "twice.yaml"
    twice.write_text("sample:\n  n_per_seed: 3\nsample:\n  n_per_seed: 4\n")
    result = workflow_copy.snakemake("-n", "--configfile", "config/config.yaml", str(twice), check=False)
    assert result.returncode != 0
    assert "'sample' is given twice" in result.stdout + result.stderr


def test_a_human_ranking_file_without_its_columns_fails_the_config_check(tmp_path):
    ranking = tmp_path / "ranking.csv"
    ranking.write_text("thing,place\ndogs,1\ncats,2\n")
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["tokens"]["enabled"] = True
    config["tokens"]["human_ranking"] = {"path": str(ranking)}
    with pytest.raises(ConfigError, match=r"tokens\.human_ranking\.path: .*ranking\.csv lacks column"):
        check(config)
