"""The explanation explorer: word-level edits, escaping, deterministic files, its inputs for the bundled
configs, a click-through in headless Chromium, and the rule on the tiny demo."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml
from conftest import REPO, tiny_demo_with_tokens_config

from rmexplain import schemas as S
from rmexplain.config import check
from rmexplain.design import Design
from rmexplain.explorer.build import (
    ExplorerError,
    ExplorerInputs,
    ExplorerSettings,
    build_explorer,
    js_literal,
    token_bucket,
)
from rmexplain.explorer.inputs import explorer_inputs, explorer_settings
from rmexplain.findings.attribution import Check
from rmexplain.textdiff import apply_edit, word_edit, words

# Texts that would run code if the page ever put them into the document as markup.
XSS_PROMPT = "Is <script>window.__pwned = 1</script> safe?"
XSS_CHOSEN = 'Yes. <img src=x onerror="window.__pwned = 2"> It is fine & calm.'
XSS_EDIT = "</script><script>window.__pwned = 3</script>"
XSS_TOKEN = "</script><script>window.__pwned = 4</script>"
RMS = ("rm-a", "rm-b")
ATTRIBUTES = ("clarity", "verbosity")


# ── word-level edits ──────────────────────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize(
    ("original", "perturbed"),
    [
        ("Hello world, how are you?", "Hello there world, how are they?"),
        ("same text", "same text"),
        ("", "something new"),
        ("all of it goes", ""),
        ("  leading space\tand\ttabs\n\nnew paragraph ", "leading space and tabs\nnew paragraph"),
        ("non\u00a0breaking\u2003spaces and émojis 🙂 stay", "non\u00a0breaking spaces and émojis 🙂🙂 stay"),
        ("a a a a b a a a", "a a b b a a a a a"),
    ],
)
def test_word_edit_gives_the_perturbed_text_back(original, perturbed):
    edit = word_edit(original, perturbed)
    assert apply_edit(original, edit) == perturbed
    assert "".join(words(original)) == original
    if original == perturbed:
        assert edit == []


def test_word_edit_stores_only_what_changed():
    original = " ".join(f"word{i}" for i in range(500))
    perturbed = original.replace("word250", "something else entirely")
    edit = word_edit(original, perturbed)
    assert edit == [[250, 1, "something else entirely "]]


def test_a_malformed_edit_is_an_error():
    with pytest.raises(ValueError, match="runs past"):
        apply_edit("two words", [[1, 5, "x"]])


# ── escaping ──────────────────────────────────────────────────────────────────────────────────────────────
def test_js_literal_cannot_end_a_script_element():
    value = {"t": "</script><!-- & \u2028 \u2029 <b>", "n": [1.5, None]}
    text = js_literal(value)
    assert not re.search(r"[<>&\u2028\u2029]", text)
    assert json.loads(text) == value
    with pytest.raises(ValueError):
        js_literal(float("nan"))


# ── a small set of tables, written through their contracts ────────────────────────────────────────────────
def _kind(side: str, r_plus: float, r_minus: float, r_new: float) -> tuple[str, str | None, float]:
    """CF/SF, sub-kind and delta as the categorise stage defines them."""
    if side == "plus":
        flipped, delta, beyond = r_new < r_minus, r_plus - r_new, r_new > r_plus
    else:
        flipped, delta, beyond = r_new > r_plus, r_new - r_minus, r_new < r_minus
    if flipped:
        return "counterfactual", None, delta
    return "semifactual", "beyond" if beyond else "between", delta


def toy_tables(root: Path) -> tuple[ExplorerInputs, dict[str, Any]]:
    """One dataset, one method, two RMs sharing one perturbation set; texts that try to run code; the
    expected counts a reader of the page should see."""
    root.mkdir(parents=True, exist_ok=True)
    ids = [f"toy-s0-{i}" for i in range(3)]
    comparisons = pl.DataFrame(
        {
            "comparison_id": ids,
            "dataset": ["toy"] * 3,
            "seed": [0] * 3,
            "source_index": [str(i) for i in range(3)],
            "prompt": [XSS_PROMPT, "How do I boil an egg?", "Name a colour."],
            "chosen": [XSS_CHOSEN, "Boil it for nine minutes, then cool it in cold water.", "Blue."],
            "rejected": ["No idea.", "Just cook it.", "I would rather not say."],
        }
    )
    # Original rewards (chosen, rejected) per RM: rm-b prefers the rejected response of the second comparison.
    originals = {"rm-a": [(2.0, 0.0), (3.0, 1.0), (1.0, 0.5)], "rm-b": [(1.0, -1.0), (0.0, 2.0), (4.0, 0.0)]}
    score_rows = [
        {
            "comparison_id": c,
            "rm": rm,
            "reward_chosen": rc,
            "reward_rejected": rr,
            "plus_target": "chosen" if rc > rr else "rejected",
            "agrees_with_human": rc > rr,
            "truncated_chosen": False,
            "truncated_rejected": False,
            "max_length": 512,
        }
        for rm, rewards in originals.items()
        for c, (rc, rr) in zip(ids, rewards, strict=True)
    ]
    perturbations, explanations = [], []
    new_reward = {  # r(y') per RM of each perturbation, by (comparison, target, attribute)
        "rm-a": {(0, "chosen", "clarity"): -1.0, (1, "rejected", "verbosity"): 5.0},
        "rm-b": {(0, "chosen", "clarity"): 0.5, (1, "chosen", "verbosity"): 3.0},
    }
    for i, c in enumerate(ids):
        for target in ("chosen", "rejected"):
            original = comparisons[target][i]
            for attribute in ATTRIBUTES:
                pid = f"p{i}{target[0]}{attribute[0]}"
                text = f"{original} ({attribute} changed)"
                if (i, target, attribute) == (0, "chosen", "clarity"):
                    text = original.replace("It is fine", f"It is {XSS_EDIT} fine")
                perturbations.append(
                    {
                        "perturbation_id": pid,
                        "comparison_id": c,
                        "target": target,
                        "direction": "worse" if target == "chosen" else "better",
                        "attribute": attribute,
                        "variant": 0,
                        "text": text,
                        "method": "rules",
                        "orienter": "shared",
                        "focus_words": ["It"],
                        "generator": f"rules:{attribute}:test",
                    }
                )
                for rm in RMS:
                    rc, rr = originals[rm][i]
                    plus_target = "chosen" if rc > rr else "rejected"
                    side = "plus" if target == plus_target else "minus"
                    r_plus, r_minus = max(rc, rr), min(rc, rr)
                    own = r_plus if side == "plus" else r_minus
                    default = own - 0.1 if side == "plus" else own + 0.1
                    r_new = new_reward[rm].get((i, target, attribute), default)
                    kind, sub, delta = _kind(side, r_plus, r_minus, r_new)
                    explanations.append(
                        {
                            "dataset": "toy",
                            "rm": rm,
                            "method": "rules",
                            "comparison_id": c,
                            "seed": 0,
                            "perturbation_id": pid,
                            "target": target,
                            "side": side,
                            "attribute": attribute,
                            "variant": 0,
                            "reward_plus": r_plus,
                            "reward_minus": r_minus,
                            "reward_perturbed": r_new,
                            "kind": kind,
                            "sf_subkind": sub,
                            "reward_delta": delta,
                            "agrees_with_human": plus_target == "chosen",
                        }
                    )
    explained = pl.DataFrame(explanations)
    pfr = [
        {
            "dataset": "toy",
            "method": "rules",
            "rm": rm,
            "side": side,
            "attribute": a,
            "pfr": 0.25 if a == "clarity" else 0.1,
            "pfr_low": 0.0,
            "pfr_high": 0.5,
            "mean_delta": 0.3,
            "delta_low": 0.1,
            "delta_high": 0.5,
            "n_comparisons": 3,
            "n_perturbations": 3,
        }
        for rm in RMS
        for side in ("plus", "minus")
        for a in ATTRIBUTES
    ]
    examples = [
        {
            "dataset": "toy",
            "method": "rules",
            "kind": "rm",
            "rm_a": "rm-a",
            "rm_b": None,
            "side": None,
            "comparison_id": ids[0],
            "score": 1.5,
            "tau_1": 0.7,
            "tau_2": 0.8,
            "n_eligible": 3,
        }
    ]
    judgements = [
        {
            "dataset": "toy",
            "method": "rules",
            "orienter": "shared",
            "perturbation_id": "p0cc",
            "comparison_id": ids[0],
            "attribute": "clarity",
            "intended": "worse",
            "verdict": "worse",
            "agrees": True,
            "answer": "worse <b>really</b>",
            "judge": "test-judge",
        }
    ]
    tokens = ["love", " Love", "hate", XSS_TOKEN, "ok"]
    scans = [
        {"rm": rm, "prompt_id": "best", "token_id": k, "piece": t, "text": t, "score": float(s)}
        for rm, scores in (("rm-a", [5, 4, 1, 3, 2]), ("rm-b", [1, 2, 5, 4, 3]))
        for k, (t, s) in enumerate(zip(tokens, scores, strict=True))
    ]
    human = [
        {"rm": rm, "item": item, "human_rank": rank, "score": score}
        for rm, scores in (("rm-a", [2.0, 1.0]), ("rm-b", [1.0, 2.0]))
        for (item, rank), score in zip((("love", 1), ("hate", 2)), scores, strict=True)
    ]
    files = {
        "comparisons": (comparisons, S.COMPARISONS),
        "originals": (pl.DataFrame(score_rows), S.ORIGINAL_SCORES),
        "perturbations": (pl.DataFrame(perturbations), S.PERTURBATIONS),
        "pfr": (pl.DataFrame(pfr), S.PFR),
        "examples": (pl.DataFrame(examples), S.EXAMPLES),
        "judgements": (pl.DataFrame(judgements), S.JUDGEMENTS),
        "token_scans": (pl.DataFrame(scans), S.TOKEN_SCORES),
        "token_human": (pl.DataFrame(human), S.TOKEN_HUMAN_SCORES),
    }
    paths: dict[str, list[str]] = {}
    for name, (frame, contract) in files.items():
        S.write_table(frame, root / f"{name}.parquet", contract, name)
        paths[name] = [str(root / f"{name}.parquet")]
    paths["explanations"] = []
    for rm in RMS:
        S.write_table(explained.filter(pl.col("rm") == rm), root / f"{rm}.parquet", S.EXPLANATIONS, rm)
        paths["explanations"].append(str(root / f"{rm}.parquet"))
    expected = {
        "texts": {p["perturbation_id"]: p["text"] for p in perturbations},
        "cf": {
            (rm, c): explained.filter(
                (pl.col("rm") == rm) & (pl.col("comparison_id") == c) & (pl.col("kind") == "counterfactual")
            ).height
            for rm in RMS
            for c in ids
        },
        "ids": ids,
    }
    return ExplorerInputs(**paths), expected


SETTINGS = ExplorerSettings(
    title="Toy <explorer>", comparisons_per_file=2, token_prompts={"best": "The best <thing>?"}, n_extremes=2
)


def data_payload(path: Path) -> tuple[str, Any]:
    """(key, payload) of one data file, ``RMX.put(key, payload);``."""
    text = path.read_text(encoding="utf-8")
    match = re.fullmatch(r"RMX\.put\((\"[^\"]*\"),(.*)\);\n", text, re.S)
    assert match, f"{path} is not one RMX.put call"
    return json.loads(match.group(1)), json.loads(match.group(2))


def manifest_of(index: Path) -> dict[str, Any]:
    page = index.read_text(encoding="utf-8")
    match = re.search(r'<script type="application/json" id="rmx-manifest">(.*?)</script>', page, re.S)
    assert match
    return json.loads(match.group(1))


# ── the builder ───────────────────────────────────────────────────────────────────────────────────────────
def test_build_writes_escaped_deterministic_files(tmp_path):
    inputs, expected = toy_tables(tmp_path / "tables")
    sizes = build_explorer(inputs, tmp_path / "one", SETTINGS)
    build_explorer(inputs, tmp_path / "two", SETTINGS)
    one = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*") if p.is_file())
    two = sorted(p.relative_to(tmp_path / "two") for p in (tmp_path / "two").rglob("*") if p.is_file())
    assert one == two and sorted(map(str, one)) == sorted(sizes)
    for rel in one:
        assert (tmp_path / "one" / rel).read_bytes() == (tmp_path / "two" / rel).read_bytes(), rel

    page = (tmp_path / "one/index.html").read_text(encoding="utf-8")
    assert page.count("</script>") == 2  # the manifest and the app: no text closes either early
    assert "<title>Toy &lt;explorer&gt;</title>" in page
    for path in (tmp_path / "one/data").rglob("*.js"):
        assert not re.search(r"[<>]", path.read_text(encoding="utf-8")), path

    manifest = manifest_of(tmp_path / "one/index.html")
    (toy,) = manifest["datasets"]
    (rules,) = toy["methods"]
    assert (toy["n_comparisons"], toy["n_files"], rules["rms"], rules["attributes"]) == (
        3,
        2,
        list(RMS),
        list(ATTRIBUTES),
    )
    assert rules["judged"] and len(rules["pfr"]) == 8 and rules["examples"][0]["comparison_id"] == "toy-s0-0"
    assert manifest["tokens"]["scans"]["rm-a"]["best"]["top"] == [["love", 5.0], [" Love", 4.0]]
    assert manifest["tokens"]["scans"]["rm-b"]["best"]["bottom"] == [["love", 1.0], [" Love", 2.0]]

    # Every perturbation's edit gives its text back; the judge's verdict rides along.
    texts: dict[str, str] = {}
    for k in range(2):
        _, comparison_texts = data_payload(tmp_path / f"one/data/datasets/toy/texts-{k}.js")
        key, edits = data_payload(tmp_path / f"one/data/datasets/toy/rules/edits-{k}.js")
        assert key == f"edits/toy/rules/{k}"
        for pid, c, target, edit, judge in zip(
            edits["pid"], edits["c"], edits["target"], edits["edit"], edits["judge"], strict=True
        ):
            t = c - comparison_texts["first"]
            original = comparison_texts["chosen" if target == 0 else "rejected"][t]
            texts[pid] = apply_edit(original, edit)
            assert (judge is not None) == (pid == "p0cc")
    assert texts == expected["texts"]

    _, rm_a = data_payload(tmp_path / "one/data/datasets/toy/rules/rm-rm-a.js")
    cfs = {
        c: sum(k for k, cc in zip(rm_a["kind"], rm_a["c"], strict=True) if cc == i)
        for i, c in enumerate(expected["ids"])
    }
    assert cfs == {c: expected["cf"]["rm-a", c] for c in expected["ids"]}
    _, human = data_payload(tmp_path / "one/data/tokens/human.js")
    assert human["rms"]["rm-b"] == {
        "item": ["love", "hate"],
        "human_rank": [1, 2],
        "score": [1.0, 2.0],
        "rank": [2, 1],
    }
    _, scan = data_payload(tmp_path / f"one/data/tokens/rm-a/best/{token_bucket('love')}.js")
    assert scan == {"text": ["love", " Love"], "score": [5.0, 4.0], "rank": [1, 2]}


def test_build_names_what_does_not_fit(tmp_path):
    inputs, _ = toy_tables(tmp_path / "tables")
    with pytest.raises(ExplorerError, match="comparisons_per_file"):
        build_explorer(inputs, tmp_path / "out", ExplorerSettings(comparisons_per_file=0))
    lonely = ExplorerInputs(
        comparisons=inputs.comparisons,
        originals=inputs.originals,
        perturbations=[],
        explanations=inputs.explanations,
    )
    with pytest.raises(ExplorerError, match="toy/rules: perturbation 'p0c"):
        build_explorer(lonely, tmp_path / "out", SETTINGS)
    frame = pl.read_parquet(inputs.comparisons[0]).with_columns(pl.lit("bad name").alias("dataset"))
    frame.write_parquet(tmp_path / "bad.parquet")
    with pytest.raises(ExplorerError, match="dataset 'bad name'"):
        build_explorer(
            ExplorerInputs([str(tmp_path / "bad.parquet")], [], [], []), tmp_path / "out", SETTINGS
        )


# ── inputs for the bundled configs ────────────────────────────────────────────────────────────────────────
def design_of(name: str) -> Design:
    config = yaml.safe_load((REPO / "config" / name).read_text())
    check(config)
    return Design.from_config(config)


def test_inputs_of_the_demo_and_the_paper():
    demo = explorer_inputs(design_of("config.yaml"))
    counts = {name: len(files) for name, files in demo.items()}
    assert counts == {
        "comparisons": 2,
        "originals": 4,
        "perturbations": 8,  # 2 datasets x 2 methods x 2 RMs orienting their own sets
        "explanations": 8,
        "pfr": 2,  # rules only: rules_random is not attribute-conditioned
        "examples": 2,
        "judgements": 0,
        "token_scans": 6,
        "token_human": 2,
        "findings": 1,
        "effect_edits": 2,  # rules: its editor calls no LLM
        "effect_changes": 2,
        "discovery_edits": 2,  # bias discovery on both datasets (the offline engine)
    }
    assert "results/perturbations/helpful/rules_random/demo-harmless.parquet" in demo["perturbations"]
    paper_design = design_of("paper.yaml")
    paper = explorer_inputs(paper_design)
    assert "results/perturbations/harmless_global/two_step/shared.parquet" in paper["perturbations"]
    assert "results/explanations/harmless_global/two_step/skywork-8b.parquet" in paper["explanations"]
    assert len(paper["pfr"]) == 3 and paper["token_scans"] == []
    # the offline rules edits on the three analysis datasets (two_step's cost LLM requests: only when named)
    assert paper["effect_edits"] == [
        f"results/effects/{d}_global/rules/edits.parquet" for d in ("hs2", "helpful", "harmless")
    ]
    assert paper["findings"] == ["results/findings/findings.parquet"]
    settings = explorer_settings(paper_design)
    assert settings["level"] == 0.95 and settings["token_prompts"] == {}
    ExplorerSettings(**settings)  # the rule's params are the builder's settings


# ── the page in a real browser ────────────────────────────────────────────────────────────────────────────
def find_chromium() -> tuple[str, str] | None:
    """(browser, chromedriver) executables, or None."""
    browser = next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
    )
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@pytest.fixture
def browser() -> Iterator[Any]:
    found = find_chromium()
    if found is None:
        pytest.skip("no chromium and chromedriver on PATH (Debian: apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = found[0]
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(found[1]), options=options)
    driver.set_script_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def wait_ready(driver: Any, timeout: float = 30) -> None:
    """Until the page has drawn the view its address names."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(
        lambda d: d.execute_script("return document.body.getAttribute('data-ready') === location.hash")
    )


def find(driver: Any, css: str, timeout: float = 30) -> Any:
    """The element once it is there (a <details> fills itself on its toggle event, after the click)."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: d.find_element("css selector", css))


def click(driver: Any, css: str) -> None:
    element = driver.find_element("css selector", css)
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


def text_of(driver: Any, css: str) -> str:
    return driver.find_element("css selector", css).text


def no_code_ran(driver: Any) -> None:
    assert driver.execute_script("return window.__pwned === undefined")
    assert driver.execute_script("return document.querySelectorAll('img, b').length") == 0


def rows_of(driver: Any, css: str) -> list[str]:
    """The text of each row of a table's body, cells joined by spaces."""
    return [row.text for row in driver.find_elements("css selector", f"{css} tbody tr")]


def test_click_through_in_headless_chromium(tmp_path, browser):
    inputs, expected = toy_tables(tmp_path / "tables")
    build_explorer(inputs, tmp_path / "explorer", SETTINGS)
    browser.get((tmp_path / "explorer/index.html").as_uri())
    wait_ready(browser)
    assert "Preference flip rates · toy · rules" in text_of(browser, "h2")
    # The toy PFR table: every RM and side has 0.25 for clarity, 0.10 for verbosity, intervals [0, 0.5].
    assert rows_of(browser, "#flip-table") == [
        "clarity\n0.25\n0.25\n0.25\n0.25",
        "verbosity\n0.10\n0.10\n0.10\n0.10",
    ]
    bars = browser.find_elements("css selector", "#flip-table a.bar")
    fills = [bar.find_element("css selector", ".fill") for bar in bars]  # widths scaled to the top CI, 0.5
    widths = [browser.execute_script("return arguments[0].style.width", fill) for fill in fills]
    assert widths == ["50%"] * 4 + ["20%"] * 4
    assert bars[0].get_attribute("title") == (
        "rm-a, Y+, clarity: PFR 0.250 [0.000, 0.500], mean reward delta 0.300; 3 comparisons, 3 perturbations"
    )

    # A flip-rate bar leads to the comparisons and perturbations behind it.
    click(browser, 'a.bar[data-rm="rm-a"][data-side="plus"][data-attribute="clarity"]')
    wait_ready(browser)
    assert "PFR 0.250 [0.000, 0.500]" in text_of(browser, "#bar-summary")
    # rm-a prefers every chosen response: (2, 0), (3, 1), (1, 0.5). Its clarity edits of them score -1.0
    # (below r(y-) = 0: a CF, delta 2 - (-1) = 3) and r(y+) - 0.1 (SFs between, delta 0.1).
    assert rows_of(browser, "#bar-comparisons") == [
        f"★ toy-s0-0 {XSS_PROMPT} 1 1 1.00 3.000",
        "toy-s0-1 How do I boil an egg? 1 0 0.00 0.100",
        "toy-s0-2 Name a colour. 1 0 0.00 0.100",
    ]
    assert rows_of(browser, "#bar-perturbations") == [
        "p0cc toy-s0-0 chosen 0 CF -1.000 3.000",
        "p1cc toy-s0-1 chosen 0 SF · between 2.900 0.100",
        "p2cc toy-s0-2 chosen 0 SF · between 0.900 0.100",
    ]
    click(browser, "#bar-comparisons a.cmp-link")
    wait_ready(browser)

    # One comparison: the texts shown as text, the attribute filter carried over.
    assert text_of(browser, "#prompt") == XSS_PROMPT
    assert XSS_CHOSEN in text_of(browser, "#response-chosen")
    assert rows_of(browser, "#original-rewards") == [
        "rm-a 2.000 0.000 chosen 2.000",
        "rm-b 1.000 -1.000 chosen 2.000",
    ]
    assert browser.find_element("css selector", "#filter-attr").get_attribute("value") == "clarity"
    assert text_of(browser, "#pert-count") == "2 of 4 perturbations shown"
    browser.execute_script(
        "var s = document.getElementById('filter-attr'); s.value = ''; s.dispatchEvent(new Event('change'))"
    )
    click(browser, "#filter-cf")
    assert text_of(browser, "#pert-count") == f"{expected['cf']['rm-a', 'toy-s0-0']} of 4 perturbations shown"
    click(browser, "#filter-cf")
    click(browser, "#filter-disagree")  # p0cc: a CF for rm-a, an SF for rm-b
    assert text_of(browser, "#pert-count") == "1 of 4 perturbations shown"

    # Open its diff: deleted and inserted words, and the perturbed text (without the deletions) is its text.
    click(browser, 'details[data-pid="p0cc"] > summary')
    diff = find(browser, 'details[data-pid="p0cc"] .diff')
    assert diff.find_elements("css selector", "ins")
    assert XSS_EDIT in diff.find_element("css selector", "ins").text
    shown = browser.execute_script(
        "var d = arguments[0].cloneNode(true); d.querySelectorAll('del').forEach(e => e.remove());"
        " return d.textContent",
        diff,
    )
    assert shown == expected["texts"]["p0cc"]
    assert "judge: worse ✓" in text_of(browser, 'details[data-pid="p0cc"] > summary')
    no_code_ran(browser)

    # The comparison list: sort, and the RMs' split preference.
    click(browser, "#tab-list")
    wait_ready(browser)
    assert text_of(browser, "#list-count") == "3 of 3 comparisons"
    # Per comparison for rm-a: y+, margin, perturbations, CFs on y+ (p0cc) and on y- (p1rv: 5.0 > r(y+) = 3).
    assert rows_of(browser, "#comparison-table") == [
        f"★ toy-s0-0 {XSS_PROMPT} chosen 2.000 4 1 0 1",
        "toy-s0-1 How do I boil an egg? chosen 2.000 4 0 1 1",
        "toy-s0-2 Name a colour. chosen 0.500 4 0 0 0",
    ]
    click(browser, "#list-split")
    assert text_of(browser, "#list-count") == "1 of 3 comparisons"
    assert rows_of(browser, "#comparison-table") == ["toy-s0-1 How do I boil an egg? chosen 2.000 4 0 1 1"]

    # Tokens: search a word, its rank under each RM and its human rank.
    click(browser, "#tab-tokens")
    wait_ready(browser)
    box = browser.find_element("css selector", "#token-search")
    box.send_keys("LOVE")
    click(browser, "#token-go")
    wait_ready(browser)
    rows = [r.text for r in browser.find_elements("css selector", "#token-table tbody tr")]
    assert rows == [
        'rm-a best "love" 5.000 1 / 5 100.0 exact',
        'rm-a best " Love" 4.000 2 / 5 75.0 exact',
        'rm-b best " Love" 2.000 4 / 5 25.0 exact',
        'rm-b best "love" 1.000 5 / 5 0.0 exact',
    ]
    assert "rm-a ranks it 1" in text_of(browser, "#token-human") and "rm-b ranks it 2" in text_of(
        browser, "#token-human"
    )
    browser.execute_script("location.hash = '#tokens?q=' + encodeURIComponent(arguments[0])", XSS_TOKEN)
    wait_ready(browser)
    assert XSS_TOKEN in text_of(browser, "#token-table")
    no_code_ran(browser)

    # The page finds a word's search file where the builder put it.
    samples = ["love", " Love\n", "", "   ", "Ñandú", "🙂x", "ÉCOLE", "\u00a0x", "İstanbul", "\u2003em"]
    assert browser.execute_script("return arguments[0].map(RMX.tokenBucket)", samples) == [
        token_bucket(s) for s in samples
    ]

    # A representative example from the flip-rate view.
    click(browser, "#tab-flips")
    wait_ready(browser)
    click(browser, "#examples a.example-link")
    wait_ready(browser)
    assert "★ rm-a" in text_of(browser, "#comparison-title")
    no_code_ran(browser)


def test_without_its_data_files_the_page_says_where_to_open_it(tmp_path, browser):
    """As the copy in the Snakemake report is: the manifest draws the flip rates, the rest says why not."""
    inputs, _ = toy_tables(tmp_path / "tables")
    build_explorer(inputs, tmp_path / "explorer", SETTINGS)
    shutil.rmtree(tmp_path / "explorer/data")
    browser.get((tmp_path / "explorer/index.html").as_uri())
    wait_ready(browser)
    assert len(browser.find_elements("css selector", "#flip-table a.bar")) == 8
    for route in ("#list/toy/rules/rm-a", "#cmp/toy/rules/rm-a/toy-s0-1", "#tokens?q=love"):
        browser.execute_script("location.hash = arguments[0]", route)
        wait_ready(browser)
        assert "open results/explorer/index.html" in text_of(browser, "#load-error"), route


# ── the findings and the edits behind them ────────────────────────────────────────────────────────────────
NO_INFLUENCE = {"influential_pair": None, "without_it": None, "carried_by": None}
NO_HALVES = {"half_a_effect": None, "half_b_effect": None, "replicates": None, **NO_INFLUENCE}
HALVES = {  # rm-a's harmlessness holds in both halves, rm-b's clarity does not (one half reverses) and one
    # pair carries it
    ("rm-a", "harmlessness"): {"half_a_effect": 0.45, "half_b_effect": 0.55, "replicates": True,
                               "influential_pair": "toy/1", "without_it": 0.4, "carried_by": None},
    ("rm-b", "clarity"): {"half_a_effect": 0.9, "half_b_effect": -0.1, "replicates": False,
                          "influential_pair": "toy/2", "without_it": -0.02, "carried_by": 1},
}  # fmt: skip


def toy_findings(root: Path, checks: dict | None = None, unmasked: dict | None = None) -> ExplorerInputs:
    """The toy tables with attribute effects: rm-a rewards the harmlessness edits that insert "Please be
    careful." (4 of its 6 better edits; the other 2 insert "Stay safe." and move nothing), rm-b rewards
    clarity; each RM's own order differs. A discovered feature with two edits; ``checks``: the carriers
    re-scored; ``unmasked``: features with a class that works against them undone."""
    from rmexplain.findings.changes import round_one
    from rmexplain.findings.summary import (
        FindingSettings,
        attribute_findings,
        discovered_findings,
        edit_texts,
        findings_frame,
    )

    inputs, _ = toy_tables(root)
    comparisons = pl.read_parquet(inputs.comparisons[0])
    edits, changes = [], []
    for i, row in enumerate(comparisons.iter_rows(named=True)):
        for target in ("chosen", "rejected"):
            original = row[target]
            for attribute, direction, text in (
                ("harmlessness", "better", original + (" Please be careful." if i < 2 else " Stay safe.")),
                ("harmlessness", "worse", original + " Whatever."),
                ("clarity", "better", "Simply put: " + original),
                ("clarity", "worse", original + " um, like"),
            ):
                edit_id = f"e{i}{target[0]}{attribute[0]}{direction[0]}"
                edits.append({"edit_id": edit_id, "comparison_id": row["comparison_id"], "target": target,
                              "attribute": attribute, "chain": direction, "round": 1, "direction": direction,
                              "text": text, "method": "rules", "generator": "toy"})  # fmt: skip
                sign = 1.0 if direction == "better" else -1.0
                y = {
                    "rm-a": 1.0
                    if text.endswith("Please be careful.")
                    else (0.1 * sign if attribute == "clarity" else 0.0),
                    "rm-b": 0.8 * sign if attribute == "clarity" else 0.0,
                }
                words_change = len(text.split()) - len(original.split())
                for rm in RMS:
                    changes.append(
                        {"dataset": "toy", "method": "rules", "rm": rm, "edit_id": edit_id,
                         "comparison_id": row["comparison_id"], "target": target, "attribute": attribute,
                         "direction": direction, "reward_change": 2 * y[rm], "effect_change": y[rm],
                         "words_change": words_change, "length_change": words_change / 4.0, "reference": None}
                    )  # fmt: skip
    edits_frame = S.conform(pl.DataFrame(edits), S.EFFECT_EDITS, "edits")
    changes_frame = S.conform(pl.DataFrame(changes), S.EFFECT_CHANGES, "changes")
    effects = S.conform(
        pl.DataFrame(
            [
                {"dataset": "toy", "method": "rules", "rm": rm, "estimator": "length_adjusted",
                 "attribute": a, "effect": e, "low": e - 0.2, "high": e + 0.2, "n": 24, "primary": True,
                 "effect_reward": 2 * e, "reward_sd": 2.0, "reference": None, "n_comparisons": 3,
                 "pairs": 3 if rm == "rm-a" else 8, "significant": abs(e) > 0.2, "rank": k,
                 **HALVES.get((rm, a), NO_HALVES)}
                for rm, rows in (
                    ("rm-a", (("harmlessness", 0.5), ("length", -0.3), ("clarity", 0.1))),
                    ("rm-b", (("clarity", 0.8), ("length", 0.15), ("harmlessness", 0.0))),
                )
                for k, (a, e) in enumerate(rows, start=1)
            ]
        ),
        S.ATTRIBUTE_EFFECTS,
        "effects",
    )  # fmt: skip
    texts = edit_texts(round_one(edits_frame, ["harmlessness", "clarity"]), comparisons)
    discovered = pl.DataFrame(
        {
            "dataset": ["toy"] * 3,
            "rm": ["rm-a"] * 3,
            "engine": ["offline"] * 3,
            "feature": ["opener:thanks", "numbers as digits", "numbered_list"],
            "description": ["a thankful opener", "numbers as digits", "the sentences as a numbered list"],
            "effect": [0.6, 0.7, 0.9],
            "low": [0.3, 0.4, 0.5],
            "high": [0.9, 1.0, 1.3],
            "q_value": [0.01] * 3,
            "n": [12] * 3,
            "support": [0.0] * 3,
            "robust_effect": [0.05, 0.7, 0.85],
            "members": [None, "“one” +0.70 [+0.40, +1.00] (6 pairs)", None],
        }
    )  # the thankful opener's robust fit keeps less than half of it: a few edits make it
    discovery_edits = pl.DataFrame(
        {
            "feature": ["opener:thanks"] * 2 + ["numbered_list"] * 2,
            "direction": [1, -1, 1, 1],
            "source_text": ["Blue.", "Thanks! Blue.", "Blue.", "Red."],
            "edited_text": ["Thanks! Blue.", "Blue.", "1. Blue.", "1. Red."],
        }
    )  # fmt: skip  (the list's items each add one number token: +0.7 of its +0.9, under the class)
    rows = attribute_findings(effects, changes_frame, texts, {}, FindingSettings())
    rows += discovered_findings(discovered, {"toy": discovery_edits}, FindingSettings(), checks, unmasked)
    files = {}
    for name, frame, contract in (
        ("findings", findings_frame(rows), S.FINDINGS),
        ("effect_edits", edits_frame, S.EFFECT_EDITS),
        ("effect_changes", changes_frame, S.EFFECT_CHANGES),
    ):
        S.write_table(frame, root / f"{name}.parquet", contract, name)
        files[name] = [str(root / f"{name}.parquet")]
    (root / "discovery" / "toy").mkdir(parents=True)
    discovery_edits.write_parquet(root / "discovery" / "toy" / "edits.parquet")
    files["discovery_edits"] = [str(root / "discovery" / "toy" / "edits.parquet")]
    return ExplorerInputs(**{**inputs.__dict__, **files})


def test_the_edits_behind_each_effect_are_written_with_their_carrier(tmp_path):
    build_explorer(toy_findings(tmp_path / "tables"), tmp_path / "out", SETTINGS)
    manifest = manifest_of(tmp_path / "out/index.html")
    (toy,) = manifest["datasets"]
    assert toy["effects"] == [{"method": "rules", "attributes": ["clarity", "harmlessness"], "length": True}]
    assert toy["discovered"] == [{"feature": "opener:thanks", "n": 2}, {"feature": "numbered_list", "n": 2}]
    key, harm = data_payload(tmp_path / "out/data/datasets/toy/rules/effects/1.js")
    assert key == "effects/toy/rules/1" and harm["attribute"] == "harmlessness" and len(harm["id"]) == 12
    assert harm["runs"]["better"]["inserted"] == [["Please be careful.", 4], ["Stay safe.", 2]]
    carrier = harm["carrier"]["rm-a"]
    assert carrier["phrase"] == "Please be careful." and carrier["change"] == "inserts"
    assert sorted(harm["id"][j] for j in carrier["edits"]) == ["e0chb", "e0rhb", "e1chb", "e1rhb"]
    assert "rm-b" not in harm["carrier"]  # rm-b's harmlessness effect has no carrier
    texts = pl.read_parquet(tmp_path / "tables/comparisons.parquet")
    for j, edit_id in enumerate(harm["id"]):  # every edit gives its text back from its original
        c, target = harm["c"][j], ("chosen", "rejected")[harm["target"][j]]
        edited = pl.read_parquet(tmp_path / "tables/effect_edits.parquet").filter(
            pl.col("edit_id") == edit_id
        )
        assert apply_edit(texts[target][c], harm["edit"][j]) == edited["text"][0]
    _, length = data_payload(tmp_path / "out/data/datasets/toy/rules/effects/length.js")
    assert length["words"][0] == max(abs(w) for w in length["words"])  # the longest change first
    finding = next(f for f in manifest["findings"] if f["rm"] == "rm-a" and f["name"] == "harmlessness")
    assert apply_edit(finding["example"]["before"], finding["example"]["edit"]).endswith("Please be careful.")
    # what each finding's line says after its interval: nothing where significant, else why not
    notes = {(f["rm"], f["name"]): f["significance_note"] for f in manifest["findings"]}
    assert notes["rm-a", "harmlessness"] == "" and notes["rm-a", "numbered_list"] == ""
    assert notes["rm-a", "clarity"] == " (too few pairs to say)"  # 3 pairs
    assert notes["rm-b", "harmlessness"] == " (not significant)"  # 8 pairs


def test_the_findings_build_is_byte_identical(tmp_path):
    inputs = toy_findings(tmp_path / "tables")
    sizes = [build_explorer(inputs, tmp_path / name, SETTINGS) for name in ("one", "two")]
    assert sizes[0] == sizes[1] and any("/effects/" in path for path in sizes[0])
    for path in sizes[0]:
        assert (tmp_path / "one" / path).read_bytes() == (tmp_path / "two" / path).read_bytes(), path


def test_findings_first_and_one_click_from_their_edits_in_headless_chromium(tmp_path, browser):
    build_explorer(toy_findings(tmp_path / "tables"), tmp_path / "explorer", SETTINGS)
    root = (tmp_path / "explorer/index.html").as_uri()
    browser.get(root)
    wait_ready(browser)
    assert text_of(browser, "h2") == "What each RM rewards · toy"  # the first view
    assert "active" in browser.find_element("css selector", "#tab-findings").get_attribute("class")

    def leading(rm: str) -> list[str]:
        items = browser.find_elements("css selector", f'section[data-rm="{rm}"] ol.leading li.finding')
        return [li.get_attribute("data-name") for li in items]

    # each RM in its own order, every kind in one ranking (the discovered opener's +0.6 before harmlessness'
    # +0.5), length always shown; the numbered list (+0.9) under the class that carries it
    assert leading("rm-a") == ["numbers as digits", "opener:thanks", "harmlessness", "length"]
    assert leading("rm-b") == ["clarity", "length"]
    assert text_of(browser, 'li.finding[data-name="numbers as digits"] .under') == (
        "It is what rewards the sentences as a numbered list reads (numbered_list +0.90 reward sd per "
        "instance added): each instance adds 1 of this class, whose own effect accounts for 78% of it "
        "(inferred: its edits could not be re-scored without the class)."
    )

    def every(rm: str) -> list[str]:
        rows = browser.find_elements("css selector", f'section[data-rm="{rm}"] table.findings-table tr')
        return [tr.get_attribute("data-name") for tr in rows]

    assert every("rm-a") == [
        "numbered_list", "numbers as digits", "opener:thanks", "harmlessness", "length", "clarity"
    ]  # fmt: skip
    assert every("rm-b") == ["clarity", "length", "harmlessness"]  # not in rm-a's order
    harm = 'section[data-rm="rm-a"] li.finding[data-name="harmlessness"]'
    assert text_of(browser, f"{harm} .phrase") == "rewards safer answers (caveats, refusing harmful help)"
    assert "harmlessness +0.50 [+0.30, +0.70] reward sd" in text_of(browser, f"{harm} .numbers")
    # at equal length (γ = −0.3, Δℓ = words / 4): 4 × (1 + 0.3 · 3/4) of 4 × 1.225 + 2 × (0 + 0.3 · 2/4)
    assert text_of(browser, f"{harm} .carrier") == (
        "4 of 6 edits insert “Please be careful.”; they account for 94% of the reward change at equal length."
    )
    assert "Please be careful." in text_of(browser, f"{harm} .example ins")
    assert text_of(browser, f"{harm} .replication") == "Replication: holds in both halves (A +0.45, B +0.55)"
    assert text_of(browser, 'section[data-rm="rm-b"] li.finding[data-name="clarity"] .replication') == (
        "Replication: does not hold in both halves (A +0.90, B −0.10)"
    )
    assert text_of(browser, 'section[data-rm="rm-b"] li.finding[data-name="clarity"] .influence') == (
        "Carried by one pair: without toy/2 its effect is −0.02."
    )
    assert not browser.find_elements("css selector", f"{harm} .influence")  # not carried: no line
    assert text_of(browser, 'section[data-rm="rm-a"] li.finding[data-name="opener:thanks"] .robust') == (
        "A few edits far from the rest make it: Huber's robust fit, which weighs them less, gives +0.05."
    )
    agreeing = 'li.finding[data-name="numbers as digits"] .robust'
    assert not browser.find_elements("css selector", agreeing)  # its robust fit agrees: no line
    length = 'section[data-rm="rm-a"] li.finding[data-name="length"]'
    assert text_of(browser, f"{length} .phrase") == "penalises longer answers"
    assert "rewards longer answers" in text_of(
        browser, 'section[data-rm="rm-b"] li.finding[data-name="length"]'
    )
    assert "FLIP" not in text_of(browser, "#flips-note") and "another question" in text_of(
        browser, "#flips-note"
    )

    # one click from a finding to the edits behind it
    click(browser, f"{harm} a.edits-link")
    wait_ready(browser)
    assert (
        text_of(browser, "#effect-title") == "rewards safer answers (caveats, refusing harmful help) · rm-a"
    )
    assert text_of(browser, "#effect-count") == "12 of 12 edits shown"
    assert rows_of(browser, "#runs-better")[:2] == ["Please be careful. 4", "Stay safe. 2"]
    first = browser.find_elements("css selector", "details.effect-edit")[0]
    assert first.find_element("css selector", ".delta").text == "+1.00 sd"  # sorted by rm-a's change
    click(browser, "#effect-carrier-only")
    assert text_of(browser, "#effect-count") == "4 of 12 edits shown"
    assert "carrier=1" in browser.execute_script("return location.hash")
    click(browser, "details.effect-edit summary")
    diff = find(browser, "details.effect-edit[open] .diff")
    assert diff.find_element("css selector", "ins").text.strip() == "Please be careful."
    assert not diff.find_elements("css selector", "del")  # the last word gaining a space is no deletion
    no_code_ran(browser)

    # the flip rates one click from the findings, saying how they differ
    browser.get(root + "#findings/toy")
    wait_ready(browser)
    click(browser, "#to-flips")
    wait_ready(browser)
    assert "Preference flip rates" in text_of(browser, "h2")
    assert "another question" in text_of(browser, "#flips-differ")

    # the same list re-scored with the digits undone: the measured share, and how many edits say it
    rescored = {
        ("toy", "rm-a", "discovered", "offline", "numbered_list", "numbers as digits"): Check(0.95, 12, 0)
    }
    build_explorer(toy_findings(tmp_path / "rescored", rescored), tmp_path / "explorer-rescored", SETTINGS)
    browser.get((tmp_path / "explorer-rescored/index.html").as_uri())
    wait_ready(browser)
    assert text_of(browser, 'li.finding[data-name="numbers as digits"] .under') == (
        "It is what rewards the sentences as a numbered list reads (numbered_list +0.90 reward sd per "
        "instance added): each instance adds 1 of this class; scored again with the class undone in the 12 "
        "edits that change it, 95% of its effect goes."
    )

    # the thankful opener with its "!" undone: what it does without the mark, first on the screen
    unmasked = {
        ("toy", "rm-a", "discovered", "offline", "opener:thanks"): {
            "effect": 1.2, "low": 1.0, "high": 1.4, "pairs": 6, "significant": True, "by": "exclamation"}
    }  # fmt: skip
    build_explorer(
        toy_findings(tmp_path / "unmasked", None, unmasked), tmp_path / "explorer-unmasked", SETTINGS
    )
    browser.get((tmp_path / "explorer-unmasked/index.html").as_uri())
    wait_ready(browser)
    assert text_of(browser, 'li.finding[data-name="opener:thanks"] .unmasked') == (
        "Scored again with its exclamation mark undone, its edits give +1.20 [+1.00, +1.40] reward sd per "
        "instance added (6 pairs); as edited, +0.60: the RM moves the other way with the exclamation mark."
    )
    leading = browser.find_elements("css selector", 'section[data-rm="rm-a"] ol.leading li.finding')
    assert leading[0].get_attribute("data-name") == "opener:thanks"
    assert text_of(browser, 'li.finding[data-name="numbers as digits"] .members') == (
        "Its members measured alone, per instance: “one” +0.70 [+0.40, +1.00] (6 pairs)."
    )

    # a discovered feature leads to its edits
    browser.get(root + "#findings/toy")
    wait_ready(browser)
    click(browser, 'li.finding[data-name="opener:thanks"] a.edits-link')
    wait_ready(browser)
    assert text_of(browser, "#discovered-title") == "Discovered feature: opener:thanks"
    assert text_of(browser, "#discovered-count").startswith("2 of its 2 edits shown")

    # the length row leads to the edits that changed the length most
    browser.get(root + "#findings/toy")
    wait_ready(browser)
    click(browser, f"{length} a.edits-link")
    wait_ready(browser)
    assert text_of(browser, "#effect-count").startswith("24 of 24 edits shown")


def test_the_findings_draw_without_the_data_files(tmp_path, browser):
    """As in the Snakemake report's copy of the page: the findings come from the manifest."""
    build_explorer(toy_findings(tmp_path / "tables"), tmp_path / "explorer", SETTINGS)
    shutil.rmtree(tmp_path / "explorer/data")
    browser.get((tmp_path / "explorer/index.html").as_uri())
    wait_ready(browser)
    assert len(browser.find_elements("css selector", "li.finding")) == 6
    click(browser, 'section[data-rm="rm-a"] li.finding[data-name="harmlessness"] a.edits-link')
    wait_ready(browser)
    assert "open results/explorer/index.html" in text_of(browser, "#load-error")


def discovery_alone(root: Path) -> ExplorerInputs:
    """The toy findings as a run of bias discovery alone writes them: no explanations, no attribute effects,
    the discovered features' findings and edits, rm-a's length row from discovery's fit."""
    from rmexplain.findings.summary import findings_frame

    inputs = toy_findings(root)
    findings = pl.read_parquet(inputs.findings[0]).filter(pl.col("kind") == "discovered").to_dicts()
    length = {"dataset": "toy", "method": "offline", "rm": "rm-a", "kind": "length", "name": "length",
              "phrase": "penalises longer answers", "effect": -0.2, "low": -0.3, "high": -0.1,
              "significant": True, "n": 24, "rank": 1, "leading": True}  # fmt: skip
    S.write_table(findings_frame([*findings, length]), root / "findings.parquet", S.FINDINGS, "findings")
    alone = {"perturbations": [], "explanations": [], "pfr": [], "examples": [], "judgements": [],
             "effect_edits": [], "effect_changes": []}  # fmt: skip
    return ExplorerInputs(**{**inputs.__dict__, **alone})


def test_a_dataset_of_discovery_alone_has_its_findings_and_no_explanation_views(tmp_path):
    build_explorer(discovery_alone(tmp_path / "tables"), tmp_path / "out", SETTINGS)
    (toy,) = manifest_of(tmp_path / "out/index.html")["datasets"]
    assert toy["methods"] == [] and toy["effects"] == []
    assert toy["discovered"] == [{"feature": "opener:thanks", "n": 2}, {"feature": "numbered_list", "n": 2}]
    # without findings either, the dataset has nothing to show and no entry
    inputs = discovery_alone(tmp_path / "again")
    build_explorer(ExplorerInputs(**{**inputs.__dict__, "findings": []}), tmp_path / "none", SETTINGS)
    assert manifest_of(tmp_path / "none/index.html")["datasets"] == []


def test_discovery_alone_in_headless_chromium(tmp_path, browser):
    """The first view lists the discovered features with no attribute wording and no tab that needs an
    explanation; a feature's edits open."""
    build_explorer(discovery_alone(tmp_path / "tables"), tmp_path / "explorer", SETTINGS)
    browser.get((tmp_path / "explorer/index.html").as_uri())
    wait_ready(browser)
    no_code_ran(browser)
    assert "the slope bias discovery held its features at" in text_of(browser, "#view p.note")
    tabs = [t.text for t in browser.find_elements("css selector", "#tabs a")]
    assert tabs[0] == "Findings" and "Flip rates" not in tabs and "Comparisons" not in tabs
    length = 'section[data-rm="rm-a"] li.finding[data-name="length"]'
    assert text_of(browser, length + " .phrase") == "penalises longer answers"
    assert not browser.find_elements("css selector", length + " a.edits-link")  # no effect edits behind it
    assert text_of(browser, 'section[data-rm="rm-a"] .meta') == "discovered features"
    click(browser, 'section[data-rm="rm-a"] li.finding[data-name="opener:thanks"] a.edits-link')
    wait_ready(browser)
    assert text_of(browser, "#discovered-title") == "Discovered feature: opener:thanks"
    assert "2 of its 2 edits shown" in text_of(browser, "#discovered-count")


def toy_with_ties_and_an_unexplained_comparison(root: Path) -> ExplorerInputs:
    """The toy tables where rm-b explains nothing of its third comparison (as when the shared RMs disagree on
    it), one of rm-a's perturbations ties the other original (r(y'−) = r(y+)), and scores tie: " Love" and
    "love" under rm-a, both human-ranking items under rm-a."""
    inputs, _ = toy_tables(root)
    rm_a, rm_b = inputs.explanations
    explained_a = pl.read_parquet(rm_a).with_columns(
        reward_perturbed=pl.when(pl.col("perturbation_id") == "p0rv").then(2.0).otherwise("reward_perturbed"),
        sf_subkind=pl.when(pl.col("perturbation_id") == "p0rv").then(pl.lit("tie")).otherwise("sf_subkind"),
    )
    S.write_table(explained_a, rm_a, S.EXPLANATIONS, "rm-a")
    explained_b = pl.read_parquet(rm_b).filter(pl.col("comparison_id") != "toy-s0-2")
    S.write_table(explained_b, rm_b, S.EXPLANATIONS, "rm-b")
    tied = (pl.col("rm") == "rm-a") & (pl.col("text") == " Love")
    scans = pl.read_parquet(inputs.token_scans[0]).with_columns(
        score=pl.when(tied).then(5.0).otherwise("score")
    )
    S.write_table(scans, inputs.token_scans[0], S.TOKEN_SCORES, "token scans")
    human = pl.read_parquet(inputs.token_human[0]).with_columns(
        score=pl.when(pl.col("rm") == "rm-a").then(1.0).otherwise("score")
    )
    S.write_table(human, inputs.token_human[0], S.TOKEN_HUMAN_SCORES, "human scores")
    return inputs


def test_tied_scores_share_their_average_rank(tmp_path):
    inputs = toy_with_ties_and_an_unexplained_comparison(tmp_path / "tables")
    build_explorer(inputs, tmp_path / "out", SETTINGS)
    _, scan = data_payload(tmp_path / f"out/data/tokens/rm-a/best/{token_bucket('love')}.js")
    assert scan == {"text": ["love", " Love"], "score": [5.0, 5.0], "rank": [1.5, 1.5]}
    _, human = data_payload(tmp_path / "out/data/tokens/human.js")
    assert human["rms"]["rm-a"]["rank"] == [1.5, 1.5] and human["rms"]["rm-b"]["rank"] == [2, 1]


def test_ties_and_unexplained_comparisons_in_headless_chromium(tmp_path, browser):
    inputs = toy_with_ties_and_an_unexplained_comparison(tmp_path / "tables")
    build_explorer(inputs, tmp_path / "explorer", SETTINGS)
    root = (tmp_path / "explorer/index.html").as_uri()

    # The comparison rm-b explains nothing of is hidden from its list, and counted; it can be shown, greyed.
    browser.get(root + "#list/toy/rules/rm-b")
    wait_ready(browser)
    assert text_of(browser, "#list-count") == "2 of 3 comparisons (1 not explained for rm-b, hidden)"
    assert not browser.find_elements("css selector", 'tr[data-id="toy-s0-2"]')
    click(browser, "#list-unexplained")
    assert text_of(browser, "#list-count") == "3 of 3 comparisons (1 not explained for rm-b, greyed)"
    assert find(browser, 'tr[data-id="toy-s0-2"]').get_attribute("class") == "unexplained"
    browser.get(root + "#list/toy/rules/rm-a")
    wait_ready(browser)
    assert text_of(browser, "#list-count") == "3 of 3 comparisons"
    assert not browser.find_elements("css selector", "#list-unexplained")

    # A perturbation whose reward ties the other original is a semifactual, labelled as a tie.
    browser.get(root + "#cmp/toy/rules/rm-a/toy-s0-0")
    wait_ready(browser)
    assert "SF · tie" in text_of(browser, 'details[data-pid="p0rv"] > summary')

    # Tied token scores share their average rank.
    browser.get(root + "#tokens?q=love")
    wait_ready(browser)
    rows = [r.text for r in browser.find_elements("css selector", "#token-table tbody tr")]
    assert rows[:2] == [
        'rm-a best "love" 5.000 1.5 / 5 87.5 exact',
        'rm-a best " Love" 5.000 1.5 / 5 87.5 exact',
    ]
    assert "rm-a ranks it 1.5" in text_of(browser, "#token-human")


# ── the rule, on the tiny demo ────────────────────────────────────────────────────────────────────────────
def test_tiny_demo_explorer_through_snakemake(tiny_demo_run, browser, tmp_path):
    """The explorer of the tiny demo's shared run (its small token part included), then the report, made in
    a copy of the finished run."""
    config = tiny_demo_run.config
    root = tiny_demo_run.root / "results/explorer"
    manifest = manifest_of(root / "index.html")
    (harmless,) = manifest["datasets"]
    assert harmless["n_comparisons"] == 8 and [m["name"] for m in harmless["methods"]] == ["rules"]
    # The token part as the scan and human-ranking tables hold it (the page's scores have 4 digits).
    inputs = explorer_inputs(Design.from_config(check(tiny_demo_with_tokens_config())))
    (scan_file,) = [p for p in inputs["token_scans"] if "demo-harmless" in p]
    scan = pl.read_parquet(tiny_demo_run.root / scan_file).filter(pl.col("prompt_id") == "best")
    scan = scan.sort(["score", "token_id"], descending=[True, False])
    best = manifest["tokens"]["scans"]["demo-harmless"]["best"]
    n = config["tokens"]["analysis"]["n_extremes"]
    assert best["n"] == scan.height == config["tokens"]["vocabulary"]["max_tokens"]
    assert best["top"] == [
        [text, round(score, 4)] for text, score in scan.select("text", "score").head(n).rows()
    ]
    (human_file,) = inputs["token_human"]
    human_table = pl.read_parquet(tiny_demo_run.root / human_file).sort("human_rank", "item")
    _, human = data_payload(root / "data/tokens/human.js")
    assert manifest["human"] and human["rms"]["demo-harmless"]["item"] == human_table["item"].to_list()
    assert human["rms"]["demo-harmless"]["score"] == [round(s, 4) for s in human_table["score"]]
    assert (root / "data/datasets/harmless/rules/rm-demo-harmless.js").is_file()

    browser.get((root / "index.html").as_uri() + "#list/harmless/rules/demo-harmless")
    wait_ready(browser)
    assert text_of(browser, "#list-count") == "8 of 8 comparisons"
    click(browser, "#comparison-table a.cmp-link")
    wait_ready(browser)
    assert text_of(browser, "#pert-count") == "6 of 6 perturbations shown"  # 3 attributes x 2 sides

    # In the report: the page, with a link to the one on disk beside the report.
    copied = tiny_demo_run.copy(tmp_path / "run")
    config_file = str(tiny_demo_run.config_file.relative_to(tiny_demo_run.root))
    copied.snakemake("explorer", "--configfile", config_file, "--report", "results/report.html")
    report = (copied.root / "results/report.html").read_text(encoding="utf-8")
    assert "explorer/index.html" in report
