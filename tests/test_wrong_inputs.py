"""Wrong inputs a new user gives fail at config-check time, naming the key, file or row."""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import re
from pathlib import Path

import polars as pl
import pytest
import yaml
from conftest import REPO, tiny_demo_config

from rmexplain.config import ConfigError, check, load, load_schema
from rmexplain.data.readers import DataError, read_table_file
from rmexplain.design import Design
from rmexplain.explanations.categorise import orient
from rmexplain.perturb.base import MethodContext, PerturbationError, PerturbTask
from rmexplain.perturb.from_file import file_method
from rmexplain.score.stages import AllTiedError, check_not_all_tied
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


def _tasks() -> list[PerturbTask]:
    """Two seeds drawing source item 3 (the same texts) and one drawing item 4."""
    make = lambda cid, prompt: PerturbTask(cid, "chosen", "worse", prompt, "yes", "no", 1.0, 0.0)  # noqa: E731
    return [make("mine-s0-3", "q3"), make("mine-s1-3", "q3"), make("mine-s0-4", "q4")]


def _context(path: Path) -> MethodContext:
    return MethodContext({"tone": "how it sounds"}, {"path": str(path)}, logging.getLogger("test"))


def _write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _row(comparison_id: str, variant: object = 0) -> dict:
    return {"comparison_id": comparison_id, "target": "chosen", "attribute": "tone", "variant": variant,
            "text": "yes!"}  # fmt: skip


def test_file_perturbations_accept_the_users_own_ids(tmp_path):
    path = _write_jsonl(tmp_path / "p.jsonl", [_row("3"), _row("mine-s0-4", 1)])
    drafts = file_method(_tasks(), _context(path))
    assert sorted((d.comparison_id, d.variant) for d in drafts) == [
        ("mine-s0-3", 0), ("mine-s0-4", 1), ("mine-s1-3", 0)
    ]  # fmt: skip


def test_file_perturbations_naming_no_explained_comparison_fail_naming_the_format(tmp_path):
    path = _write_jsonl(tmp_path / "p.jsonl", [_row("item-3"), _row("item-4")])
    with pytest.raises(PerturbationError, match=r"none of its 2 rows .*\{dataset\}-s\{seed\}-\{source id\}"):
        file_method(_tasks(), _context(path))
    tasks = _tasks()
    tasks[1] = dataclasses.replace(tasks[1], prompt="another")  # seed 1's item 3 differs: ambiguous
    path = _write_jsonl(tmp_path / "q.jsonl", [_row("3")])
    with pytest.raises(PerturbationError, match=r"row 0: comparison_id '3' is the source id of several"):
        file_method(tasks, _context(path))


def test_a_non_integer_variant_names_the_file_and_row(tmp_path):
    for bad in (1.5, "first"):
        path = _write_jsonl(tmp_path / "p.jsonl", [_row("mine-s0-3"), _row("mine-s0-4", bad)])
        with pytest.raises(
            PerturbationError, match=rf"p\.jsonl: row 1: variant must be an integer, got {bad!r}"
        ):
            file_method(_tasks(), _context(path))


def test_a_jsonl_line_that_is_an_array_names_the_file_and_line(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text('{"prompt": "q", "chosen": "a", "rejected": "b"}\n\n["q", "a", "b"]\n')
    with pytest.raises(DataError, match=r"pairs\.jsonl: line 3 is a JSON list, not an object"):
        read_table_file(path)


def test_an_rm_that_ties_every_comparison_is_an_error(tmp_path):
    comparisons = pl.DataFrame(
        {"comparison_id": ["d-s0-0", "d-s0-1"], "prompt": ["q", "r"], "chosen": ["a", "b"],
         "rejected": ["c", "d"]}
    )  # fmt: skip
    tied = orient(comparisons, "flat", [0.5, 0.5], [0.5, 0.5])
    with pytest.raises(
        AllTiedError, match=r"flat scores chosen and rejected exactly equal on all 2 .*0 kept"
    ):
        check_not_all_tied(tied, "flat", "comparisons.parquet")
    check_not_all_tied(orient(comparisons, "ok", [0.5, 0.7], [0.5, 0.1]), "ok", "comparisons.parquet")


def test_a_variant_named_with_a_digit_builds_the_dag(workflow_copy):
    config = tiny_demo_config()
    config["perturb"]["variants"] = {"rules2": {"method": "rules"}}
    config["perturb"]["methods"] = ["rules", "rules2"]
    workflow_copy.write_config(config)
    result = workflow_copy.snakemake("-n", "--configfile", "config/test.yaml")
    assert re.search(r"method=rules2\b", result.stdout + result.stderr)


def test_a_misspelt_key_names_the_closest_key_and_its_line_in_one_line(tmp_path):
    text = (REPO / "config" / "config.yaml").read_text()
    lines = text.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("perturb:"))
    path = tmp_path / "typo.yaml"
    path.write_text("\n".join([*lines[:top], lines[top].replace("perturb:", "perturbs:"), *lines[top + 1 :]]))
    with pytest.raises(ConfigError) as caught:
        load(path)
    message = str(caught.value)
    assert re.fullmatch(
        rf"perturbs: unknown key \({re.escape(str(path))}, line {top + 1}\); did you mean 'perturb'\?",
        message,
    )
    config = tiny_demo_config()
    config["sample"]["n_per_seeds"] = 3
    with pytest.raises(ConfigError, match=r"^sample\.n_per_seeds: unknown key; did you mean 'n_per_seed'\?$"):
        check(config)


def test_an_unknown_key_under_perturb_is_refused(tmp_path):
    config = tiny_demo_config()
    config["perturb"]["rule"] = {"max_focus_words": 2}  # meant: rules
    path = tmp_path / "rule.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    line = path.read_text().splitlines().index("  rule:") + 1
    with pytest.raises(
        ConfigError,
        match=rf"^perturb\.rule: unknown key \(.*rule\.yaml, line {line}\); did you mean 'rules'\?$",
    ):
        load(path)


@pytest.mark.parametrize(
    ("prompts", "pairs"),
    [
        ({"kind": "What is the kindest thing?", "cruel": "What is the cruellest thing?"}, []),
        (
            {"best": "What is the best thing?", "worst": "What is the worst thing?", "x": "Why?"},
            [("best", "worst")],
        ),
    ],
)
def test_framing_pairs_default_to_the_prompts_given(prompts, pairs):
    config = tiny_demo_config()
    config["tokens"]["enabled"] = True
    config["tokens"]["prompts"] = prompts
    config["tokens"]["analysis"].pop("framing_pairs")
    design = Design.from_config(check(config))
    assert design.tokens.framing_pairs == pairs
    assert design.tokens.framing_names == [f"framing_{a}_{b}" for a, b in pairs]


@pytest.mark.parametrize(
    ("code", "reference", "message"),
    [
        (None, "absent.py:score", r"file absent\.py does not exist"),
        ("def other(p, r): return r\n", "rms.py:score", r"'rms\.py' has no attribute 'score'"),
        ("import not_a_module\n", "rms.py:score", r"importing rms\.py raised ModuleNotFoundError: No module"),
        ("score = 3\n", "rms.py:score", r"'score' is a int, not a function"),
        (None, "not_a_package.rms:score", r"importing not_a_package\.rms raised ModuleNotFoundError"),
    ],
)
def test_a_python_rms_callable_is_imported_at_the_check(tmp_path, monkeypatch, code, reference, message):
    monkeypatch.chdir(tmp_path)
    if code is not None:
        (tmp_path / "rms.py").write_text(code)
    config = tiny_demo_config()
    config["reward_models"] = {"mine": {"backend": "python", "callable": reference}}
    with pytest.raises(
        ConfigError, match=rf"^reward_models\.mine\.callable: '{re.escape(reference)}': {message}"
    ):
        check(config)
    config = tiny_demo_config()
    bias = {"detector": "callable", "callable": reference}
    config["reward_models"]["planted"] = {"backend": "planted", "base": "demo-harmless", "bias": bias}
    with pytest.raises(
        ConfigError, match=rf"^reward_models\.planted\.bias\.callable: '{re.escape(reference)}'"
    ):
        check(config)


def test_a_misspelt_method_names_the_file_the_line_and_the_closest_method(tmp_path):
    path = tmp_path / "mine.yaml"
    text = (
        (REPO / "config" / "config.yaml")
        .read_text()
        .replace("methods: [rules, rules_random]", "methods: [rule]")
    )
    path.write_text(text)
    line = next(i for i, row in enumerate(text.splitlines(), start=1) if row.startswith("  methods: [rule]"))
    with pytest.raises(ConfigError) as caught:
        load(path)
    assert str(caught.value) == (
        f"perturb.methods[0]: 'rule' is not a method or variant ({path}, line {line}); did you mean 'rules'?"
    )
    config = tiny_demo_config()
    config["perturb"]["methods"] = ["rules", "nothing_like_it"]
    unknown = r"^perturb\.methods\[1\]: 'nothing_like_it' is not a method or variant; known: \['file', "
    with pytest.raises(ConfigError, match=unknown):
        check(config)
