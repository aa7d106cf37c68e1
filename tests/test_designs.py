"""Per-dataset designs and method variants: what each dataset runs; the config checks name the key."""

from __future__ import annotations

import pytest
import yaml
from conftest import REPO, tiny_demo_config

from rmexplain import targets
from rmexplain.config import ConfigError, check
from rmexplain.design import Design
from rmexplain.perturb.base import method_settings, registered_method


def two_designs() -> dict:
    """The demo's harmless data twice: §3 per RM (evaluation) and §4 shared (analysis), two RMs each."""
    config = tiny_demo_config()
    config["reward_models"] = {
        "a": {"backend": "demo", "train_part": "harmless"},
        "b": {"backend": "demo", "train_part": "helpful"},
        "c": {"backend": "demo", "train_part": "helpful"},
    }
    config["datasets"] = {
        "h": {
            "source": "embedded",
            "part": "harmless",
            "reward_models": ["a", "b"],
            "stages": ["evaluation"],
        },
        "h_global": {
            "source": "embedded",
            "part": "harmless",
            "orientation": "shared",
            "seeds": [7],
            "n_per_seed": 9,
            "stages": ["analysis"],
        },
    }
    config["perturb"]["methods"] = ["rules", "rules_random"]
    return check(config)


def test_each_dataset_runs_its_own_design():
    design = Design.from_config(two_designs())
    assert design.dataset("h").orienters == ("a", "b")
    assert design.dataset("h_global").orienters == ("shared",)
    assert design.dataset("h_global").orienting_rms("shared") == ("a", "b", "c")
    assert (design.dataset("h_global").seeds, design.dataset("h_global").n_per_seed) == ((7,), 9)
    assert design.dataset("h").seeds == (0, 1)
    metrics = targets.metric_files(design)
    assert metrics and all("/h/" in f for f in metrics) and not any("/c.parquet" in f for f in metrics)
    assert {d for d, _ in design.analysed_pairs} == {"h_global"}
    assert design.example_pairs("h_global") == [("a", "b"), ("a", "c"), ("b", "c")]
    assert design.example_pairs("h") == [("a", "b")]


def test_rms_outside_shared_rms_are_foreign_and_explained_by_the_agreed_preference_by_default():
    config = two_designs()
    config["datasets"]["h_global"]["shared_rms"] = ["a", "b"]
    design = Design.from_config(config)
    assert design.dataset("h_global").foreign_rms == ("c",)
    assert design.dataset("h").foreign_rms == ()  # per RM: every RM orients its own set
    assert design.foreign_rm_datasets == ["h_global"]
    assert [design.dataset("h_global").explanation_orientation(rm) for rm in "abc"] == ["agreed"] * 3
    assert targets.foreign_orientation_parts(design) == [("h_global", rm) for rm in "abc"]
    assert "results/tables/foreign_rm_orientation.html" in targets.diagnostic_targets(design)
    config["datasets"]["h_global"]["foreign_rm_orientation"] = "own"
    design = Design.from_config(check(config))
    assert [design.dataset("h_global").explanation_orientation(rm) for rm in "abc"] == [
        "agreed",
        "agreed",
        "own",
    ]
    # Without foreign RMs (every RM in shared_rms, as in two_designs) there is no such table.
    plain = Design.from_config(two_designs())
    assert targets.diagnostic_targets(plain) == [
        f"results/tables/{t}.{e}" for t in ("perturbation_skips", "truncation") for e in ("csv", "md", "html")
    ]


def test_a_variant_runs_its_method_with_its_own_settings_after_the_method():
    perturb = {"methods": ["two_step", "short"], "two_step": {"focus": "center", "on_unparsed": "pass"}}
    perturb["variants"] = {"short": {"method": "two_step", "focus": "only"}}
    assert (
        registered_method(perturb, "short") == "two_step"
        and registered_method(perturb, "two_step") == "two_step"
    )
    assert method_settings(perturb, "short") == {"focus": "only", "on_unparsed": "pass"}
    config = tiny_demo_config()
    config["perturb"] = perturb
    config["llm"] = {"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1"}
    check(config)
    after = targets.shared_request_input(Design.from_config(config), "harmless", "short", "demo-harmless")
    assert after == ["results/perturbations/harmless/two_step/demo-harmless.parquet"]
    design = Design.from_config(config)
    assert targets.shared_request_input(design, "harmless", "two_step", "demo-harmless") == []
    assert Design.from_config(config).llm_methods == ["two_step", "short"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: c["perturb"].update(methods=["rules", "ghost"]), r"perturb.methods\[1\]: 'ghost'"),
        (
            lambda c: c["perturb"].update(variants={"rules": {"method": "rules"}}),
            "perturb.variants.rules: a variant cannot take the name",
        ),
        (
            lambda c: c["perturb"].update(
                methods=["rules", "edits"], variants={"edits": {"method": "rules", "max_focus_words": 0}}
            ),
            "perturb.variants.edits.max_focus_words",
        ),
        (
            lambda c: c["datasets"]["harmless"].update(reward_models=["ghost"]),
            "datasets.harmless.reward_models",
        ),
        (lambda c: c["datasets"]["harmless"].update(methods=["two_step"]), "datasets.harmless.methods"),
        (
            lambda c: c["datasets"]["harmless"].update(reward_models=["demo-harmless"], shared_rms=["other"]),
            "datasets.harmless.shared_rms: 'other'",
        ),
        (
            lambda c: c["datasets"]["harmless"].update(foreign_rm_orientation="own"),
            "datasets.harmless.foreign_rm_orientation: only in shared orientation",
        ),
        (
            lambda c: c.update(
                reproduce={"paper": "jiang2025", "reward_models": {"v1": "x"}, "datasets": {}, "methods": {}}
            ),
            "reproduce.reward_models: 'x'",
        ),
        (
            lambda c: c["analysis"].update(rewards_example={"enabled": True, "rm": "ghost"}),
            "analysis.rewards_example.rm",
        ),
        (
            lambda c: c["analysis"]["probes"]["disrespect"].update(original_pattern="(unclosed"),
            "analysis.probes.disrespect.original_pattern",
        ),
    ],
)
def test_design_keys_are_checked_naming_the_key(edit, message):
    config = tiny_demo_config()
    config["reward_models"]["other"] = {"backend": "demo", "train_part": "helpful"}
    edit(config)
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")):
        check(config)


def test_the_plan_counts_a_variants_shared_step1_once(tmp_path):
    """App. D's prompts in config/paper.yaml: a variant's step-1 requests come from its method's cache."""
    import yaml

    from rmexplain.plan import make_plan

    config = check(yaml.safe_load((REPO / "config" / "paper.yaml").read_text()))
    jobs = {(j.dataset, j.method, j.orienter): j.requests for j in make_plan(config, tmp_path).llm_jobs}
    n_tasks, n_attributes = 2 * 150, len(config["attributes"])
    assert jobs["hs2", "two_step", "deberta-v1"] == n_tasks * (1 + n_attributes)  # step 1 + one step 2 each
    assert jobs["hs2", "two_step_only", "deberta-v1"] == n_tasks * n_attributes  # step 2 only
    assert jobs["hs2", "two_step_pass", "pythia-1.4b"] == n_tasks * n_attributes


def test_report_sections_are_numbered_in_reading_order():
    config = two_designs()
    sections = ["Findings", "Evaluation", "Analyses", "Representative examples", "Diagnostics"]
    assert Design.from_config(config).report_sections == sections
    assert Design.from_config(config).report_category("Analyses") == "3. Analyses"
    config["reproduce"] = {"paper": "jiang2025", "reward_models": {}, "datasets": {}, "methods": {}}
    design = Design.from_config(config)
    assert design.report_category("Findings") == "1. Findings"  # first in the sorted menu
    assert design.report_category("Reproduction") == "2. Reproduction"
    assert Design.from_config(config).report_category("Evaluation") == "3. Evaluation"
    # a section the run does not have is not listed (and takes no number)
    config["analysis"]["effects"] = {"enabled": False}
    config["analysis"]["examples"] = {"rms": [], "pairs": []}
    design = Design.from_config(config)
    assert design.report_sections == ["Reproduction", "Evaluation", "Analyses", "Diagnostics"]


def test_a_run_that_only_discovers_has_findings_first():
    config = yaml.safe_load((REPO / "config" / "discovery.yaml").read_text())
    design = Design.from_config(check(config))
    assert not design.effect_pairs and design.discovery_datasets()
    assert design.report_category("Findings") == "1. Findings"  # the discovered-biases figure's section
