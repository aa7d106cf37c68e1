"""Attributes of your own (docs/extending.md): the paper's 15 in a data file, ``extra_attributes`` adding to
them, rule editors of your own for the ``rules`` method and its attribute-effect edits, and the config check
refusing what no editor can edit. ``tests/plugins/emoji_attribute`` is the page's example, file for file."""

from __future__ import annotations

import copy
import logging
import re
import shutil
from pathlib import Path

import polars as pl
import pytest
import yaml
from conftest import REPO, tiny_demo_config

from rmexplain.attributes import PAPER_ATTRIBUTES
from rmexplain.config import ConfigError, check
from rmexplain.design import Design
from rmexplain.effects.edits import make_effect_edits
from rmexplain.perturb.base import MethodContext, PerturbationError, PerturbTask, methods
from rmexplain.perturb.skips import SkipRecorder
from rmexplain.schemas import COMPARISONS, conform

LOG = logging.getLogger("test_own_attributes")
EXAMPLE = REPO / "tests" / "plugins" / "emoji_attribute"


def test_the_page_shows_the_example_file_for_file():
    page = (REPO / "docs" / "extending.md").read_text(encoding="utf-8")
    section = page.split("## Attributes of your own", 1)[1].split("\n## ", 1)[0]
    blocks = dict(re.findall(r"```\w+\n# (\S+)\n(.*?)```", section, re.S))
    assert sorted(blocks) == ["emoji.yaml", "my_edits.py"]
    for name, text in blocks.items():
        assert text == (EXAMPLE / name).read_text(encoding="utf-8"), name


def test_the_paper_attributes_are_the_data_file():
    listed = yaml.safe_load((REPO / "workflow" / "rmexplain" / "attributes.yaml").read_text(encoding="utf-8"))
    assert listed == PAPER_ATTRIBUTES and len(listed) == 15
    assert PAPER_ATTRIBUTES["verbosity"] == (
        "how many relevant details are included in the response, and whether or not the response is too long"
    )


def _emoji_config(tmp_path: Path) -> dict:
    """The tiny demo with the page's example (its editors' files copied into ``tmp_path``)."""
    for name in ("my_edits.py", "emoji.yaml"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    config = tiny_demo_config()
    del config["attributes"]  # the paper's 15, and emoji
    example = yaml.safe_load((EXAMPLE / "emoji.yaml").read_text())
    config["extra_attributes"] = example["extra_attributes"]
    config["perturb"].update(example["perturb"])
    return config


def test_extra_attributes_add_to_the_fifteen_and_a_clash_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = check(_emoji_config(tmp_path))
    assert config["attributes"] == {**PAPER_ATTRIBUTES, "emoji": "how much the response uses emoji"}
    assert check(config)["attributes"] == config["attributes"]  # checking again changes nothing
    clash = _emoji_config(tmp_path)
    clash["extra_attributes"]["clarity"] = "how clear it is"
    with pytest.raises(
        ConfigError, match=r"^extra_attributes\.clarity: already an attribute \('whether or not"
    ):
        check(clash)


def test_an_attribute_without_a_rule_editor_is_refused_at_the_check(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = _emoji_config(tmp_path)
    del config["perturb"]["rules"]["editors"]
    with pytest.raises(
        ConfigError,
        match=r"^attributes: perturbation method 'rules' has no editor for \['emoji'\]; add one under "
        r"perturb\.rules\.editors",
    ):
        check(copy.deepcopy(config))
    config["perturb"]["methods"] = ["two_step"]  # an LLM method edits any attribute
    config["analysis"] = {"effects": {"enabled": False}}
    check(config)


def test_an_editor_that_cannot_be_imported_is_refused_at_the_check(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = _emoji_config(tmp_path)
    config["perturb"]["rules"]["editors"]["emoji"]["better"] = ["my_edits.py:add_emoij"]
    with pytest.raises(
        ConfigError,
        match=r"^perturb\.rules\.editors\.emoji\.better\[0\]: 'my_edits\.py:add_emoij': 'my_edits\.py' has "
        r"no attribute 'add_emoij'$",
    ):
        check(config)


def test_an_analysed_method_without_an_effect_editor_is_named_at_the_check():
    def plain(tasks, context):
        return []

    methods.register("plain_method")(plain)
    try:
        config = tiny_demo_config()
        config["perturb"]["methods"] = ["rules", "plain_method"]
        with pytest.raises(
            ConfigError,
            match=r"^analysis\.effects: perturbation method\(s\) \['plain_method'\] declare no effect_editor",
        ):
            check(copy.deepcopy(config))
        config["analysis"] = {"effects": {"methods": ["rules"]}}  # the effects by the rules edits only
        assert Design.from_config(check(copy.deepcopy(config))).effect_pairs == [("harmless", "rules")]
        config["perturb"]["methods"] = ["rules", "file"]  # file cannot edit, by design: no effects, no error
        config["perturb"]["file"] = {"path": str(REPO / "config" / "config.yaml")}
        del config["analysis"]
        check(config)
    finally:
        methods._entries.pop("plain_method")


def test_your_editors_make_the_perturbations_and_the_effect_edits(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = check(_emoji_config(tmp_path))
    settings = Design.from_config(config).method("rules").settings
    prompt = "How do I say thanks?"
    with_emoji, plain = "Say thank you 🙏 and smile. Mean it.", "Just say thanks. Write a note."
    tasks = [PerturbTask("c1", "chosen", "worse", prompt, with_emoji, plain, 1.0, 0.0),
             PerturbTask("c1", "rejected", "better", prompt, plain, with_emoji, 1.0, 0.0)]  # fmt: skip
    context = MethodContext({"emoji": "e"}, settings, LOG, {"skips": SkipRecorder()})
    drafts = methods.get("rules")(tasks, context)
    assert [(d.text, d.generator, d.focus_words) for d in drafts] == [
        ("Say thank you and smile. Mean it.", "rules:emoji:drop-emoji", ["🙏"]),
        ("Just say thanks. 🙂 Write a note.", "rules:emoji:add-emoji", ["say", "thanks"]),
    ]
    comparisons = conform(
        pl.DataFrame({"comparison_id": ["c1"], "dataset": "d", "seed": 0, "source_index": "1",
                      "prompt": prompt, "chosen": with_emoji, "rejected": plain}),
        COMPARISONS, "comparisons",
    )  # fmt: skip
    edits, skipped = make_effect_edits(comparisons, "rules", "rules", settings, {"emoji": "e"}, {}, True, LOG)
    assert set(edits["generator"]) == {"rules:emoji:drop-emoji", "rules:emoji:add-emoji"}
    # the plain response has no emoji to drop: one counted skip; the smiley added to it is dropped back
    assert [(s.comparison_id, s.target, s.stage) for s in skipped.records] == [
        ("c1", "rejected", "effects round 1 (rules)")
    ]
    back = edits.filter((pl.col("round") == 2) & (pl.col("target") == "rejected"))
    assert back["text"].to_list() == [plain]


BAD_EDITORS = """\
from rmexplain.perturb.rules import RuleEdit


def as_text(doc):
    return doc.text + " 🙂"


def as_tuple(doc):
    return (doc.text + " 🙂", ("a",), "tuple")


def bad_focus(doc):
    return RuleEdit(doc.text + " 🙂", "a", "bad-focus")
"""


@pytest.mark.parametrize(
    ("function", "returned"),
    [
        ("as_text", r"a str \('Just say thanks\. 🙂'\)"),
        ("as_tuple", r"a tuple \(\('Just say thanks\. 🙂', \('a',\), 'tuple'\)\)"),
        ("bad_focus", r"a RuleEdit \(RuleEdit\(text='Just say thanks\. 🙂', focus='a', name='bad-focus'\)\)"),
    ],
)
def test_an_editor_returning_no_rule_edit_is_named_with_its_key(tmp_path, monkeypatch, function, returned):
    monkeypatch.chdir(tmp_path)
    config = check(_emoji_config(tmp_path))
    (tmp_path / "bad_edits.py").write_text(BAD_EDITORS, encoding="utf-8")
    settings = copy.deepcopy(Design.from_config(config).method("rules").settings)
    settings["editors"]["emoji"]["better"] = [f"bad_edits.py:{function}"]
    task = PerturbTask("c1", "rejected", "better", "Thanks?", "Just say thanks.", "Smile 🙏.", 1.0, 0.0)
    context = MethodContext({"emoji": "e"}, settings, LOG, {"skips": SkipRecorder()})
    with pytest.raises(PerturbationError) as raised:
        methods.get("rules")([task], context)
    assert re.fullmatch(
        rf"perturb\.rules\.editors\.emoji\.better\[0\] \('bad_edits\.py:{function}'\), the emoji editor "
        rf"\(better\), returned {returned} on comparison c1 \(rejected\): a strategy must return a RuleEdit "
        r"\(text: str, focus: a tuple of words, name: str; finish\(doc, new_text, focus_words, name\) makes "
        r"one\) or None where it cannot edit the response",
        str(raised.value),
    ), str(raised.value)


EMOJI_RM = """\
def score(prompts, responses):
    return [sum(ch in r for ch in "\U0001f642\U0001f64f") + len(r) / 1000 for r in responses]
"""


@pytest.mark.slow
def test_an_attribute_of_your_own_end_to_end(workflow_copy):
    """The page's command: the example's config over a config of one's own (an RM rewarding emoji, and a
    little length), the attribute effects of the rules edits. The bundled responses have no emoji, so emoji is
    edited one way only: the length-adjusted and two-way effects are NaN with the reason logged, and emoji
    leads the effects that one direction defines (the paper's reward change and flip rate)."""
    root = workflow_copy.root
    for name in ("my_edits.py", "emoji.yaml"):
        shutil.copy(EXAMPLE / name, root / name)
    (root / "emoji_rm.py").write_text(EMOJI_RM)
    config = tiny_demo_config()
    config["sample"] = {"n_per_seed": 8, "seeds": [0]}
    config["reward_models"] = {"emoji-rm": {"backend": "python", "callable": "emoji_rm.py:score"}}
    config["attributes"] = {name: PAPER_ATTRIBUTES[name] for name in ("clarity", "verbosity")}
    mine = workflow_copy.write_config(config, "my_config.yaml")
    target = "results/analysis/harmless/rules/attribute_effects.parquet"
    workflow_copy.snakemake("--cores", "2", target, "--configfile", str(mine), "emoji.yaml")
    effects = pl.read_parquet(root / target)
    assert set(effects["attribute"]) >= {"clarity", "verbosity", "emoji"}
    for estimator in ("paper_delta", "flip_rate"):
        rows = effects.filter(pl.col("estimator") == estimator).sort("effect", descending=True)
        assert rows["attribute"][0] == "emoji" and rows["effect"][0] > 0, rows
    emoji = effects.filter(
        (pl.col("attribute") == "emoji") & pl.col("estimator").is_in(["length_adjusted", "two_way"])
    )
    assert emoji.height == 2 and emoji["effect"].is_nan().all(), emoji
    log = (root / "logs" / "effects" / "analysis" / "harmless" / "rules.log").read_text(encoding="utf-8")
    assert "emoji undefined (NaN): edited in one direction only" in log
