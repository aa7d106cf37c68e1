"""Ordinary hostile input is refused at the config check, naming the key (or the file) and what is wrong."""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
from pathlib import Path

import polars as pl
import pytest
import yaml
from conftest import REPO, tiny_demo_config

from rmexplain.config import ConfigError, check, load
from rmexplain.discovery.base import RoundContext
from rmexplain.discovery.classes import CLASS_KINDS, EndsOnQuestion, FillerWords, class_features
from rmexplain.discovery.offline import OfflineEngine
from rmexplain.schemas import BIAS_DISCOVERY_EFFECTS, polars_schema

PAPER = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())


def _set(config: dict, keys: tuple, value: object) -> dict:
    *parents, last = keys
    node = config
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
    return config


# ── numbers: NaN and infinity ───────────────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize(
    ("keys", "value"),
    [
        (("discovery", "min_effect"), math.nan),  # the schema's minimum: 0 compares false with NaN
        (("discovery", "fdr"), math.nan),  # and so do exclusiveMinimum: 0 and maximum: 1
        (("figures", "width"), math.inf),
        (("perturb", "two_step", "step1_sampling", "temperature"), -math.inf),
    ],
)
def test_a_number_that_is_nan_or_infinite_is_refused_naming_its_key(keys, value):
    config = _set(tiny_demo_config(), keys, value)
    key = r"\.".join(keys)
    with pytest.raises(ConfigError, match=rf"^{key}: {value!r} is not a finite number"):
        check(config)


def test_a_nan_in_a_list_names_its_index_file_and_line(tmp_path):
    config = tiny_demo_config()
    config["sample"]["seeds"] = [0, math.nan]
    text = yaml.safe_dump(config, sort_keys=False)
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    line = text.splitlines().index("  - .nan") + 1
    where = rf"\({path}, line {line}\)"
    with pytest.raises(ConfigError, match=rf"^sample\.seeds\[1\]: nan is not a finite number {where}"):
        load(path)


# ── attribute names: case variants ──────────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize(
    ("section", "attributes", "message"),
    [
        ("extra_attributes", {"Harmlessness": "harm"}, "the built-in attribute 'harmlessness'"),  # beside it
        ("attributes", {"Harmlessness": "harm", "clarity": "clear"}, "the built-in attribute 'harmlessness'"),
        ("attributes", {"emoji": "uses emoji", "Emoji": "uses emoji"}, "the attribute 'emoji'"),
    ],
)
def test_an_attribute_differing_only_by_case_is_refused_naming_both_spellings(section, attributes, message):
    config = tiny_demo_config()
    if section == "extra_attributes":
        del config["attributes"]  # the paper's 15, harmlessness among them
    config[section] = attributes
    name = next(a for a in attributes if a != a.lower())
    with pytest.raises(
        ConfigError, match=rf"^{section}\.{name}: '{name}' differs from {message} only by case"
    ):
        check(config)


# ── prompt templates: unknown fields ────────────────────────────────────────────────────────────────────────
def _template(tmp_path: Path, text: str) -> str:
    path = tmp_path / "mine.txt"
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("keys", "where", "template", "known"),
    [
        (("perturb", "random", "prompt"), r"perturb\.random: prompt template 'prompt_random'", "random",
         "'response'"),
        (("perturb", "two_step", "prompts", "step1"), r"perturb\.two_step: prompt template 'prompt_step1'",
         "two_step_step1", "'attribute_list'"),
        (("perturb", "variants", "two_step_only", "prompts"), r"perturb\.two_step_only: prompt template "
         "'prompt_focus_only'", "two_step_focus_only", "'words'"),
        (("perturb", "discover", "prompt"), r"perturb\.discover: prompt template 'prompt'", "discover",
         "'chosen_response'"),
    ],
)  # fmt: skip
def test_an_unknown_template_field_is_refused_naming_the_file_the_field_and_the_known_ones(
    tmp_path, keys, where, template, known
):
    path = _template(tmp_path, "Rewrite {respnse}.")
    value = {"focus_only": path} if keys[-1] == "prompts" else path
    config = _set(copy.deepcopy(PAPER), keys, value)
    with pytest.raises(ConfigError) as caught:
        check(config)
    message = str(caught.value)
    assert message.startswith(where.replace("\\", "")), message
    assert f"{path}: unknown field(s) ['respnse']; '{template}' may use [" in message
    assert known in message


def test_the_effect_edits_and_the_llm_engines_templates_are_checked_too(tmp_path):
    path = _template(tmp_path, "Judge {verdikt}.")
    config = copy.deepcopy(PAPER)
    config["analysis"]["effects"]["methods"] = ["two_step"]
    config["perturb"]["two_step"]["prompts"] = {"rewrite": path}
    with pytest.raises(
        ConfigError, match=r"^perturb\.two_step: prompt template 'prompt_rewrite': .*'verdikt'"
    ):
        check(config)
    config = tiny_demo_config()  # its dataset has the discovery stage
    config["discovery"] = {"engines": ["llm"], "llm": {"prompts": {"judge": path}}}
    with pytest.raises(ConfigError, match=r"^discovery\.llm: prompt template 'prompt_judge': .*'verdikt'"):
        check(config)


def test_a_lone_brace_in_a_template_is_refused_at_the_check(tmp_path):
    config = _set(copy.deepcopy(PAPER), ("perturb", "random", "prompt"), _template(tmp_path, "Perturb { it"))
    with pytest.raises(ConfigError, match=r"^perturb\.random: .*write a literal brace as \{\{"):
        check(config)


# ── discovery mining: min_support no candidate can reach ────────────────────────────────────────────────────
def _context(min_support: int) -> RoundContext:
    n = 3  # comparisons: six responses
    comparisons = pl.DataFrame(
        {
            "comparison_id": [f"d-s0-{i}" for i in range(n)],
            "dataset": ["d"] * n,
            "seed": [0] * n,
            "source_index": [str(i) for i in range(n)],
            "prompt": [f"How do I do task {i}?" for i in range(n)],
            "chosen": [f"Sure! Do step {i}. Then rest." for i in range(n)],
            "rejected": [f"Skip task {i}." for i in range(n)],
        }
    )
    originals = {
        "rm": pl.DataFrame(
            {
                "comparison_id": comparisons["comparison_id"],
                "rm": ["rm"] * n,
                "reward_chosen": [1.0, 2.0, 3.0],
                "reward_rejected": [0.5, 0.0, 1.5],
            }
        )
    }
    settings = {"offline": {"probes": ["exclamation"], "mined": {"min_support": min_support}}}
    return RoundContext(
        dataset="d", round=1, comparisons=comparisons, originals=originals, references={"rm": None},
        previous=pl.DataFrame(schema=polars_schema(BIAS_DISCOVERY_EFFECTS)), settings=settings,
        log=logging.getLogger("rmexplain.test_config_hostile"),
    )  # fmt: skip


def test_a_min_support_no_candidate_can_reach_is_a_warning_naming_the_key(caplog):
    with caplog.at_level(logging.WARNING, logger="rmexplain.test_config_hostile"):
        unreachable = OfflineEngine().run_round(_context(6))
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == [
        "d: discovery.offline.mined.min_support is 6, not below the 6 responses: no screened mined candidate "
        "can be tested (one needs min_support responses and may not be in all of them; the class candidates "
        "are tested all the same)"
    ]
    classes = [f.name for f in class_features(CLASS_KINDS)]
    assert [f.name for f in unreachable.features] == ["exclamation", *classes]  # catalogue and classes
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="rmexplain.test_config_hostile"):
        reachable = OfflineEngine().run_round(_context(2))
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(reachable.features) > 1 + len(classes)  # mined candidates screened in


def test_the_class_candidates_are_tested_without_the_screen_even_where_no_response_has_them(caplog):
    """No response ends on a question, has a filler word or a first-person word: a screen on presence could
    not choose those classes, and a class's edits add it to any response, so each is tested all the same, in
    the miner's order, after the catalogue; only the other kinds go through the screen, and no class is
    screened in twice. Classes alone ask for no min_support warning."""
    context = _context(2)
    chosen = context.comparisons["chosen"]
    assert not any(FillerWords().present(t) or EndsOnQuestion().present(t) for t in chosen)
    output = OfflineEngine().run_round(context)
    names = [f.name for f in output.features]
    classes = [f.name for f in class_features(CLASS_KINDS)]
    assert names[: 1 + len(classes)] == ["exclamation", *classes]
    assert not set(classes) & set(output.screened) and set(output.screened) == set(names[1 + len(classes) :])
    only_classes = {"offline": {"probes": ["exclamation"], "mined": {"min_support": 6, "kinds": ["shape"]}}}
    with caplog.at_level(logging.WARNING, logger="rmexplain.test_config_hostile"):
        shapes = OfflineEngine().run_round(dataclasses.replace(_context(6), settings=only_classes))
    shape_names = ["shape ends on a question", "shape opens with I"]
    assert [f.name for f in shapes.features] == ["exclamation", *shape_names]
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]
