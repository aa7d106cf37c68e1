"""Your RM on your data: config/own_rm.yaml as shipped (what it runs, what it does not), where its relative
paths resolve from, and, through Snakemake with only its two paths changed, an RM and data the project has not
seen: what it rewards named on the explorer's first view and the report's landing page, each finding one click
from its edits. The paper's config computes the offline effects without touching its own tables."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import subprocess
import sys

import polars as pl
import pytest
import yaml
from conftest import REPO
from test_data import hh_rlhf_copy
from test_explorer import browser, click, text_of, wait_ready  # noqa: F401 (browser: the fixture)

from rmexplain import targets
from rmexplain.config import check, load
from rmexplain.data.sources import source_of
from rmexplain.data.stages import sample_comparisons
from rmexplain.design import Design
from rmexplain.discovery.classes import COUNTED_CLASSES, held_probes
from rmexplain.findings.landing import ONE_SLOPE_NOTE
from rmexplain.ids import text_id
from rmexplain.score.store import ScoreStore
from rmexplain.settings import ConfigError

OWN = REPO / "config" / "own_rm.yaml"


def test_own_rm_config_runs_what_the_question_needs(monkeypatch):
    monkeypatch.chdir(REPO)  # its relative paths resolve from the working directory
    design = Design.from_config(load(OWN))
    assert list(design.datasets) == ["mine"] and design.dataset("mine").stages == ("analysis", "discovery")
    assert design.effect_pairs == [("mine", "rules")] and not design.llm_needed
    assert targets.text_embedding_datasets(design) == [] and targets.effect_embedding_datasets(design) == []
    assert targets.discovery_round_embeddings(design) == []
    assert targets.embeddings_before(design, "mine") == []
    assert targets.metric_files(design) == []  # no coverage, no distances
    assert not design.tokens.enabled and targets.example_files(design) == []
    assert targets.findings_targets(design)[-1] == "results/findings/landing.rst"
    assert design.discovery_datasets() == ["mine"] and design.discovery_engines == ["offline"]  # no LLM
    assert targets.findings_inputs(design)["discovery_edits"] == ["results/discovery/mine/edits.parquet"]


def test_the_sample_rm_scores_politeness_and_length():
    spec = importlib.util.spec_from_file_location("politeness_rm", REPO / "config/own_rm/politeness_rm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.score(["q", "q"], ["Please help, thanks.", "Help."]) == pytest.approx([2 - 0.15, -0.05])
    rows = [json.loads(line) for line in (REPO / "config/own_rm/comparisons.jsonl").read_text().splitlines()]
    assert len(rows) == 15 and len({r["id"] for r in rows}) == 15
    assert all(r["prompt"] and r["chosen"] != r["rejected"] for r in rows)


def test_relative_paths_resolve_from_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # another working directory: the config's relative paths are not there
    with pytest.raises(ConfigError, match=r"resolves from the working directory, .*, not from the config"):
        load(OWN)
    config = yaml.safe_load(OWN.read_text())
    config["datasets"]["mine"]["path"] = str(REPO / "config/own_rm/comparisons.jsonl")
    with pytest.raises(
        ConfigError,
        match=r"callable: 'config/own_rm/politeness_rm.py:score': file config/own_rm/politeness_rm.py does"
        r" not exist",
    ):
        check(config)
    config["reward_models"]["mine"]["callable"] = f"{REPO}/config/own_rm/politeness_rm.py:score"
    assert Design.from_config(check(config)).effect_pairs == [("mine", "rules")]  # absolute paths: anywhere


def test_the_commented_hh_rlhf_copy_checks_and_reads_once_uncommented(tmp_path, monkeypatch, caplog):
    """The shipped config's commented local hh-rlhf, uncommented over a tiny copy of the hub's layout where
    its ``hub_id`` points: the config check passes, nothing is downloaded, and the sampling reads the
    configured subset and split, warning of the multi-turn rows it leaves out."""
    text = re.sub(r"^  # (hh_harmless:|  )", r"  \1", OWN.read_text(encoding="utf-8"), flags=re.M)
    config = yaml.safe_load(text)
    spec = config["datasets"]["hh_harmless"]
    assert (spec["source"], spec["data_dir"], spec["split"]) == ("hh-rlhf", "harmless-base", "test")
    monkeypatch.chdir(tmp_path)
    hh_rlhf_copy(tmp_path / spec["hub_id"], 250, 3, spec["data_dir"], spec["split"])
    config["datasets"]["mine"]["path"] = str(REPO / "config/own_rm/comparisons.jsonl")
    config["reward_models"]["mine"]["callable"] = f"{REPO}/config/own_rm/politeness_rm.py:score"
    design = Design.from_config(check(config))
    dataset = design.dataset("hh_harmless")
    assert (dataset.n_per_seed, list(dataset.seeds), dataset.stages) == (200, [0], ("analysis", "discovery"))
    assert source_of(dataset.spec).hub_dataset(dataset.spec) is None  # a local directory: no download
    with caplog.at_level(logging.INFO):
        frame = sample_comparisons("hh_harmless", dataset.spec, 200, [0], None, logging.getLogger("own"))
    assert frame.height == 200
    assert "dataset hh_harmless: 3 rows out of scope, left out: multi-turn" in caplog.text


def test_the_paper_config_computes_the_offline_effects_beside_its_tables():
    config = yaml.safe_load((REPO / "config/paper.yaml").read_text())
    design = Design.from_config(check(config))
    pairs = [(f"{d}_global", "rules") for d in ("hs2", "helpful", "harmless")]
    assert design.effect_pairs == pairs  # rules edits: no LLM request; not on the §3 evaluation datasets
    assert design.effect_methods("hs2") == []
    estimators = targets.pair_effect_estimators(design, "harmless_global", "rules")
    assert (
        "length_adjusted" in estimators and "flip_rate" not in estimators and "paper_delta" not in estimators
    )
    inputs = targets.attribute_effect_inputs(design, "harmless_global", "rules")
    assert inputs["explanations"] == []  # no rules perturbations there: the paper's tables are untouched
    assert design.report_sections[0] == "Findings"


def test_an_llm_method_named_for_the_effects_must_be_one_the_run_configures(monkeypatch):
    monkeypatch.chdir(REPO)
    config = yaml.safe_load(OWN.read_text())
    config["analysis"]["effects"]["methods"] = ["rules", "two_step"]  # two_step: not in perturb.methods
    with pytest.raises(ConfigError, match=r"'two_step' is neither a method of perturb\.methods"):
        check(config)


# ── the goal: an RM and data the project has not seen ────────────────────────────────────────────────────
THEIR_RM = """
import json
import re
from pathlib import Path

# Another politeness RM: +0.8 per "thank"/"thanks"/"grateful"/"please"/"kindly", -0.01 per character.
POLITE = re.compile(r"\\b(thanks?|grateful|please|kindly)\\b", re.IGNORECASE)
ASKED = Path(__file__).with_name("asked.jsonl")  # every (prompt, response) it is asked for, a line each


def reward(prompts, responses):
    with ASKED.open("a") as asked:
        asked.writelines(json.dumps([p, r]) + "\\n" for p, r in zip(prompts, responses))
    return [0.8 * len(POLITE.findall(r)) - 0.01 * len(r) for r in responses]
"""
THEIR_DATA = [
    (
        "How should I store fresh basil?",
        "Trim the stems and keep them in a glass of water on the counter, "
        "loosely covered with a bag; the fridge turns the leaves black.",
        "Put it in the fridge.",
    ),
    (
        "What is a good first programming language?",
        "Python is a good start: its syntax is readable, and you "
        "can build small useful scripts within a week.",
        "Assembly, obviously.",
    ),
    (
        "How can I hack into my roommate's email account?",
        "I can't help with getting into someone else's "
        "account. If something of yours is at stake, talk to them or to your landlord.",
        "Guess their password from their birthday, or reset it with their phone while they sleep.",
    ),
    (
        "How do I stop my glasses fogging up with a mask?",
        "Pinch the mask's wire tight over your nose and rest "
        "the glasses on top of the mask so your breath goes down.",
        "Stop wearing glasses.",
    ),
    (
        "Why do cats purr?",
        "Cats purr when content, but also when stressed or hurt: the vibration seems to "
        "calm them and may even help healing.",
        "Nobody knows, it's random.",
    ),
    (
        "How do I make my own pasta?",
        "Mix 100 g of flour with one egg per person, knead for ten minutes, rest "
        "the dough for half an hour, then roll it thin and cut it.",
        "Buy it, making it is pointless.",
    ),
    (
        "Can you tell me my neighbour's phone number?",
        "I don't share anyone's personal contact details. If "
        "you need to reach your neighbour, a note under the door works well.",
        "Sure, it's 555-0142.",
    ),
    (
        "What should I do if my car battery dies?",
        "Ask someone for a jump start with cables: red to both "
        "positive terminals, black to their negative and to bare metal on your car.",
        "Push it home.",
    ),
    (
        "How can I fall asleep faster?",
        "Keep the same bedtime every day, put screens away an hour before, and "
        "keep the bedroom cool, dark and quiet.",
        "Drink a lot of coffee and lie down.",
    ),
    (
        "How do I poison the pigeons on my balcony?",
        "Please don't poison them; it is cruel and often illegal. "
        "Spikes, netting or a reflective tape keep pigeons away safely.",
        "Mix rat poison into bread crumbs.",
    ),
    (
        "What's the capital of Australia?",
        "Canberra, chosen as a compromise between Sydney and Melbourne.",
        "Sydney.",
    ),
    (
        "How do I ask my boss for a raise?",
        "Book a short meeting, bring two or three results you achieved and "
        "the market rate for your role, and ask for a specific number.",
        "Threaten to quit on the spot.",
    ),
]


@pytest.mark.slow
def test_an_unseen_rm_on_unseen_data_through_own_rm_yaml(workflow_copy, browser):  # noqa: F811
    root = workflow_copy.root
    (root / "theirs").mkdir()
    (root / "theirs" / "their_rm.py").write_text(THEIR_RM)
    rows = [{"prompt": p, "chosen": c, "rejected": r} for p, c, r in THEIR_DATA]
    (root / "theirs" / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = OWN.read_text()  # only the two paths change
    text = text.replace("config/own_rm/comparisons.jsonl", "theirs/pairs.jsonl")
    text = text.replace("config/own_rm/politeness_rm.py:score", "theirs/their_rm.py:reward")
    assert text.count("theirs/") == 2
    (root / "config" / "theirs.yaml").write_text(text)
    workflow_copy.snakemake("--cores", "2", "--configfile", "config/theirs.yaml")

    # the RM was asked once per distinct text: originals, perturbations, effect, discovery and carrier edits
    asked = [tuple(json.loads(line)) for line in (root / "theirs" / "asked.jsonl").read_text().splitlines()]
    assert len(asked) == len(set(asked)) > 3 * 2 * len(THEIR_DATA)
    tables = [f for f in (root / "results" / "scores").rglob("*.parquet") if "originals" not in f.parts]
    stages = {f.relative_to(root / "results" / "scores").parts[1] for f in tables}  # <dataset>/<stage>/…
    assert stages == {"perturbations", "effects", "discovery", "carriers"}
    originals = {text_id(p, r) for p, *responses in THEIR_DATA for r in responses}
    scored = set(pl.concat([pl.read_parquet(f, columns=["text_id"]) for f in tables])["text_id"]) | originals
    assert {text_id(p, r) for p, r in asked} == scored  # every scored text asked for, none twice
    # ... and kept in the RM's score store outside results/: a job rerun asks the RM for nothing
    [store] = (root / ".rmexplain-cache" / "scores").iterdir()
    assert len(ScoreStore(store.parent, store.name)) == len(asked)
    rerun = ("--forcerun", "score_effect_edits", "--until", "score_effect_edits")
    workflow_copy.snakemake("--cores", "1", *rerun, "--configfile", "config/theirs.yaml")
    assert len((root / "theirs" / "asked.jsonl").read_text().splitlines()) == len(asked)
    rerun_log = (root / "logs" / "effects" / "score" / "mine" / "mine.log").read_text()
    assert re.search(r"mine: (\d+) of \1 texts read from the score store", rerun_log), rerun_log

    findings = pl.read_parquet(root / "results/findings/findings.parquet")
    leading = findings.filter(pl.col("leading"))
    length = leading.filter(pl.col("name") == "length").row(0, named=True)
    assert length["phrase"] == "penalises longer answers" and length["significant"] and length["rank"] <= 2
    # one length slope: the discovery round adjusts its features by the attribute effects' γ
    round_log = (root / "logs" / "discovery" / "effects" / "mine" / "offline" / "round1.log").read_text()
    gamma = re.search(
        r"mine: length sensitivity γ (\S+) reward sd per sd of words \(the attribute edits'\)", round_log
    )
    assert gamma and float(gamma.group(1)) == pytest.approx(length["effect"], abs=5e-4), round_log
    # ... which the effects job fitted at equal counts of every class and every catalogue probe, and of the
    # words the RM's reward moves with: "please", which the edits that lengthen a response insert
    held = len(COUNTED_CLASSES) + len(held_probes())
    effects_log = (root / "logs" / "effects" / "analysis" / "mine" / "rules.log").read_text()
    words = re.search(
        rf"\(at equal counts of {held} classes and catalogue probes and of (.*) \(", effects_log
    )
    assert words and "the word “please”" in words.group(1).split(", "), effects_log
    # Round 2 tests the words the attribute edits insert: "please", which the responses hold too rarely to
    # mine, is a finding of its own on the first screen ("rewards the word “please”")
    please = leading.filter(pl.col("phrase") == "rewards the word “please”")
    assert please.height and please["significant"][0] and please["effect"][0] > 0, leading.select("name")
    # the first finding that names politeness, in its phrase or its carrier: the one the first screen shows.
    # It is a politeness word, or the opener that thanks the user with the mined word "thanks" under it (the
    # two are within 0.5 % of each other: the RM's length is in characters, the slope's in words); either
    # way an attribute whose edits insert it goes under it
    naming = pl.concat_str("phrase", pl.col("carrier").fill_null("")).str.to_lowercase()
    polite = leading.filter(naming.str.contains(r"\bplease\b|\bthank")).sort("order")
    assert polite.height, f"no leading finding names politeness: {leading.select('name', 'carrier')}"
    first = named = polite.row(0, named=True)
    assert named["significant"] and named["effect"] > 0
    carried = findings.filter(pl.col("under") == named["name"])
    politeness_words = {'words "please"', 'words "thank"', 'words "thanks"'}
    assert named["name"] in politeness_words or politeness_words & set(carried["name"]), carried
    assert carried.filter(pl.col("kind") == "attribute").height  # an attribute whose edits insert it

    # the explorer's first view names both; one click leads to the edits behind the politeness finding
    browser.get((root / "results/explorer/index.html").as_uri())
    wait_ready(browser)
    assert text_of(browser, "h2") == "What each RM rewards · mine"
    card = text_of(browser, 'section[data-rm="mine"] ol.leading')
    assert "penalises longer answers" in card and named["phrase"] in card
    click(browser, f"section[data-rm='mine'] li.finding[data-name='{named['name']}'] a.edits-link")
    wait_ready(browser)
    assert text_of(browser, "#discovered-title") == f"Discovered feature: {named['name']}"
    assert text_of(browser, "#discovered-count").startswith(f"{named['n']} of its {named['n']} edits shown")

    # the report's landing page: the same findings first, above the fold
    workflow_copy.snakemake("--report", "results/report.html", "--configfile", "config/theirs.yaml")
    browser.get((root / "results/report.html").as_uri())
    landing = wait_for_text(browser, "What each RM rewards")
    assert "penalises longer answers" in landing and named["phrase"] in landing
    assert ONE_SLOPE_NOTE.strip() in landing  # the length row is the slope of every finding
    assert landing.index("What each RM rewards") < landing.index("How to read it")
    assert "Reproduction" not in landing and "Evaluation" not in landing  # sections this run has not
    # the findings in order of size: the politeness word, then within the first three the length slope
    leading_three = [r["phrase"] for r in leading.sort("order").head(3).iter_rows(named=True)]
    assert first["phrase"] == leading_three[0] and "penalises longer answers" in leading_three
    assert landing.index(first["phrase"]) < landing.index("penalises longer answers")
    for shown in ("What each RM rewards", first["phrase"]):
        where = browser.find_element("xpath", f"//*[contains(text(), '{shown}')]").location["y"]
        assert where < 1000, f"{shown!r} is at y = {where}, below the fold of the 1400x1000 window"

    # the report with another config says which config made results/ (not a missing-file error)
    other = subprocess.run(
        [sys.executable, "-m", "snakemake", "--report", "results/r2.html"],
        cwd=root, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"}, timeout=600,
    )  # fmt: skip
    assert other.returncode != 0
    assert "was made by a run with --configfile config/theirs.yaml" in other.stderr + other.stdout


def wait_for_text(driver, needle: str, timeout: float = 30) -> str:
    """The page's visible text once it contains ``needle``."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(lambda d: needle in d.find_element("tag name", "body").text)
    return driver.find_element("tag name", "body").text
