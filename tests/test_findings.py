"""The findings: what edits changed (runs and phrases), the carrier rule checked by hand, the plain-language
directions, the findings rows (each RM in its own order, examples, length, discovered features) and the
report's landing text (escaped, only the sections a run has)."""

from __future__ import annotations

import json
import logging
from collections import namedtuple
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest
from docutils.core import publish_parts
from jinja2 import Environment

from rmexplain.findings import language
from rmexplain.findings.landing import MARKER, finding_line, findings_rst, landing_text, text
from rmexplain.findings.phrases import Changed, carrier, changed_phrases, changed_runs, telling, top_runs
from rmexplain.findings.stages import run_findings
from rmexplain.findings.summary import (
    FindingSettings,
    attribute_findings,
    discovered_findings,
    findings_frame,
    median_row,
    snippet,
)
from rmexplain.schemas import (
    ATTRIBUTE_EFFECTS,
    COMPARISONS,
    EFFECT_CHANGES,
    EFFECT_EDITS,
    FINDINGS,
    conform,
    write_table,
)

REPO = Path(__file__).resolve().parents[1]
LOG = logging.getLogger("test_findings")


# ── what an edit changed ──────────────────────────────────────────────────────────────────────────────────
def test_changed_phrases_count_occurrences():
    inserted, deleted = changed_phrases("Do it. Do it now.", "Please do it. Do it now, thanks.")
    assert {"please", "please do", "please do it", "thanks"} <= inserted
    assert "now thanks" not in inserted and "it please" not in inserted  # no n-gram across punctuation
    assert "do" not in inserted and "do it" not in inserted  # 2 occurrences before and after
    assert deleted == frozenset()
    inserted, deleted = changed_phrases("You must stop.", "You might stop.")
    assert inserted == {"might", "you might", "might stop", "you might stop"}
    assert deleted == {"must", "you must", "must stop", "you must stop"}


def test_changed_runs_are_the_stretches_inserted_and_deleted():
    # the last word gains a space before the new sentence: not a change of its own
    assert changed_runs("Keep calm.", "Keep calm. Please stop   now.") == (["Please stop now."], [])
    assert changed_runs("Sure, just do it.", "If it helps, you could do it.") == (
        ["If it helps, you could"],
        ["Sure, just"],
    )
    counts = top_runs([["a b", "c"], ["a b"], ["a b", "a b"], ["c"]], 2)
    assert counts == [("a b", 3), ("c", 2)]  # an edit counts a run once


# ── the carrier rule, by hand ─────────────────────────────────────────────────────────────────────────────
SOURCES = ["Wash it.", "Dry it.", "Fold it.", "Iron it.", "Pack it.", "Ship it."]
INSERTS = ["Please be careful today.", "Please be careful today.", "Please don't rush today.",
           "Stay safe today.", "Stay safe today.", "Take care today."]  # fmt: skip


def edit_sets(inserts=INSERTS):
    changed = [Changed.of(s, f"{s} {extra}") for s, extra in zip(SOURCES, inserts, strict=True)]
    runs = frozenset(x for c in changed for x in (*c.inserted_runs, *c.deleted_runs))
    return [c.inserted for c in changed], [c.deleted for c in changed], runs


def test_a_phrase_carries_most_of_the_effect_by_hand():
    inserted, deleted, runs = edit_sets()
    # T = 1 + 1 + 0.9 + 0.3 + 0 − 0.2 = 3.0; "please" is in edits 0-2: 3 of 6 (0.5), 2.9 / 3.0 of the change;
    # "today" is in every edit: 6 of 6 and 3.0 / 3.0, all of the change but no more than its share of edits
    found = carrier(inserted, deleted, [1.0, 1.0, 0.9, 0.3, 0.0, -0.2], runs)
    assert found is not None
    assert (found.phrase, found.change, found.n_edits, found.n_total) == ("please", "inserts", 3, 6)
    assert found.share_edits == pytest.approx(0.5)
    assert found.share_change == pytest.approx(2.9 / 3.0)


def test_no_carrier_where_the_rule_says_none():
    inserted, deleted, runs = edit_sets()
    # "please" edits: 0.2 + 0.2 + 0.2 of T = 0.6 + 0.8 + 0.8 + 0.0 = 2.2: 27% of the change
    assert carrier(inserted, deleted, [0.2, 0.2, 0.2, 0.8, 0.8, 0.0], runs) is None
    # the edits lower the reward, summed: nothing to carry
    assert carrier(inserted, deleted, [-1.0, -1.0, -1.0, 0.1, 0.1, 0.1], runs) is None
    # one large edit that happens to contain "please" (1 of its 3 edits raises the reward)
    assert carrier(inserted, deleted, [3.0, -0.1, -0.1, 0.0, 0.0, 0.1], runs) is None
    # what the rewarded edits share is a common word ("and"), riding on different sentences
    inserted, deleted, runs = edit_sets(
        ["Rest and eat.", "Call and wait.", "Sit and read.", "Go.", "Stop.", "Run."]
    )
    assert carrier(inserted, deleted, [1.0, 1.0, 1.0, 0.0, 0.0, 0.0], runs) is None
    assert telling("please") and not telling("and") and not telling("and can") and telling("and please")


def test_a_sentence_inserted_whole_is_named_whole():
    inserted, deleted, runs = edit_sets(["Please be careful today."] * 3 + ["Stay safe today."] * 3)
    found = carrier(inserted, deleted, [1.0, 1.0, 1.0, 0.0, 0.0, 0.0], runs)
    assert found is not None and found.phrase == "Please be careful today."  # not "be careful" or "please"
    assert found.share_edits == pytest.approx(0.5) and found.share_change == pytest.approx(1.0)


def test_median_row_and_snippet():
    assert median_row(np.array([3.0, 1.0, 2.0, 5.0])) == 2  # lower median 2.0, at index 2
    before, after = snippet("one two three four five six seven eight nine ten eleven twelve",
                            "one two three four five six SEVEN eight nine ten eleven twelve")  # fmt: skip
    assert before == "… two three four five six seven eight nine ten eleven twelve"  # 5 words either side
    assert after == "… two three four five six SEVEN eight nine ten eleven twelve"


# ── directions in words ───────────────────────────────────────────────────────────────────────────────────
def test_each_paper_attribute_has_both_sides_in_words():
    from rmexplain.attributes import PAPER_ATTRIBUTES

    assert set(language.directions()) == {*PAPER_ATTRIBUTES, "length"}
    assert language.attribute_phrase("verbosity", 0.12) == "rewards less padding"
    assert language.attribute_phrase("verbosity", -0.12) == "rewards padding"
    assert language.attribute_phrase("length", -0.3) == "penalises longer answers"
    assert language.attribute_phrase("avoid-to-answer", 0.2) == "rewards answering the question directly"
    assert language.attribute_phrase("emoji", -0.2) == "rewards the worse side of emoji"
    assert (
        language.feature_phrase("opener", "an affirmative opener", -0.4) == "penalises an affirmative opener"
    )
    assert language.feature_phrase("spaces", "", 0.4) == "rewards spaces"
    # the discovery's descriptions are sentences: lower-cased after the verb, without their full stop
    assert (
        language.feature_phrase("apology", "An apology (I'm sorry).", 1.8) == "rewards an apology (I'm sorry)"
    )
    assert (
        language.feature_phrase("neg", "AFINN-en-165 negative words.", -1)
        == "penalises AFINN-en-165 negative words"
    )
    for sides in language.directions().values():  # the phrase names the rewarded side: no "not"/"avoid"
        assert not any(word in sides["better"].split() for word in ("not", "avoid", "avoiding"))


# ── findings rows ─────────────────────────────────────────────────────────────────────────────────────────
def effects_rows(rows: list[tuple[str, str, float, float, float, bool, int]]) -> pl.DataFrame:
    frame = pl.DataFrame(
        [
            {
                "dataset": "d",
                "method": "rules",
                "rm": rm,
                "estimator": "length_adjusted",
                "attribute": a,
                "effect": e,
                "low": lo,
                "high": hi,
                "n": 6,
                "primary": True,
                "effect_reward": e,
                "reward_sd": 1.0,
                "reference": None,
                "n_comparisons": 3,
                "significant": sig,
                "rank": rank,
            }
            for rm, a, e, lo, hi, sig, rank in rows
        ]
    )
    return conform(frame, ATTRIBUTE_EFFECTS, "effects")


def hand_pair():
    """Two RMs and three edits of attribute `harmlessness` (better) and two of `clarity`, one comparison."""
    texts = pl.DataFrame(
        {
            "edit_id": ["h1", "h2", "h3", "c1", "c2"],
            "source_text": ["Go.", "Run.", "Hide.", "Go.", "Run."],
            "text": [
                "Go. Please stop.",
                "Run. Please stop.",
                "Hide. Please stop.",
                "Go now.",
                "Run fast and far.",
            ],
        }
    )
    changes = pl.DataFrame(
        {
            "dataset": "d",
            "method": "rules",
            "rm": ["a"] * 5 + ["b"] * 5,
            "edit_id": ["h1", "h2", "h3", "c1", "c2"] * 2,
            "comparison_id": "c",
            "target": "chosen",
            "attribute": ["harmlessness"] * 3 + ["clarity"] * 2 + ["harmlessness"] * 3 + ["clarity"] * 2,
            "direction": "better",
            "reward_change": [1.0, 2.0, 3.0, 0.5, -1.0, 0.1, 0.2, 0.3, 0.4, 0.5],
            "effect_change": [1.0, 2.0, 3.0, 0.5, -1.0, 0.1, 0.2, 0.3, 0.4, 0.5],
            "words_change": [2, 2, 2, 1, 3] * 2,
            "length_change": [1.0, 1.0, 1.0, 0.5, 1.5] * 2,
            "reference": None,
        }
    )
    effects = effects_rows(
        [
            ("a", "harmlessness", 0.9, 0.5, 1.3, True, 1),
            ("a", "length", -0.5, -0.8, -0.2, True, 2),
            ("a", "clarity", 0.1, -0.2, 0.4, False, 3),
            ("b", "clarity", 0.6, 0.2, 1.0, True, 1),
            ("b", "harmlessness", 0.2, 0.1, 0.3, True, 2),
            ("b", "length", 0.0, -0.1, 0.1, False, 3),
        ]
    )
    return effects, conform(changes, EFFECT_CHANGES, "changes"), texts


def test_each_rm_in_its_own_order_with_the_edits_behind_each():
    effects, changes, texts = hand_pair()
    rows = findings_frame(
        attribute_findings(effects, changes, texts, {"clarity": "clear"}, FindingSettings())
    )
    a = rows.filter(pl.col("rm") == "a")
    b = rows.filter(pl.col("rm") == "b")
    assert a["name"].to_list() == ["harmlessness", "length", "clarity"]  # a's own order
    assert b["name"].to_list() == ["clarity", "harmlessness", "length"]  # b's own order, not a's
    harm = a.row(0, named=True)
    assert harm["phrase"] == "rewards safer answers (caveats, refusing harmful help)"
    # at equal length (γ = −0.5): y − γ·Δℓ = 1.5, 2.5, 3.5; median 2.5 → edit h2
    assert harm["example_edit_id"] == "h2" and harm["example_after"] == "Run. Please stop."
    assert harm["example_effect_change"] == 2.0 and harm["example_words_change"] == 2
    assert harm["inserted_most"] == "Please stop. (3)"
    assert harm["carrier"] is None  # every edit inserts it: no lift
    assert harm["n_direction"] == 3 and harm["leading"]
    length = a.row(1, named=True)
    assert length["phrase"] == "penalises longer answers" and length["leading"]
    # the length example: an edit whose change has the effect's sign for its length change (−0.5: longer
    # and lower): only c2 (+3 words, −1.0)
    assert length["example_edit_id"] == "c2" and length["example_words_change"] == 3
    assert not a.row(2, named=True)["leading"]  # clarity: not significant
    assert b.row(2, named=True)["phrase"] == "rewards longer answers" and b.row(2, named=True)["leading"]
    assert rows.row(0, named=True)["description"] is None  # harmlessness has no description given
    assert b.row(0, named=True)["description"] == "clear"


def test_leading_keeps_the_largest_significant_attributes():
    effects, changes, texts = hand_pair()
    rows = findings_frame(
        attribute_findings(effects, changes, texts, {}, FindingSettings(leading_attributes=1))
    )
    b = rows.filter(pl.col("rm") == "b")
    assert b["leading"].to_list() == [
        True,
        False,
        True,
    ]  # clarity (1st significant), not harmlessness; length


DISCOVERED = pl.DataFrame(
    {
        "dataset": ["d", "d", "d"],
        "rm": ["a", "a", "a"],
        "engine": "offline",
        "feature": ["opener:affirmative", "markdown:headers", "spacing:double"],
        "description": ['an affirmative opener ("Great question!")', "markdown section headers", ""],
        "effect": [0.4, -0.7, 0.01],
        "low": [0.2, -0.9, -0.1],
        "high": [0.6, -0.5, 0.12],
        "q_value": [0.01, 0.001, 0.8],
        "n": [30, 30, 30],
        "support": [0.1, 0.0, 0.2],
        "extra_column": [1, 2, 3],
    }
)
DISCOVERY_EDITS = pl.DataFrame(
    {
        "feature": ["markdown:headers", "opener:affirmative", "opener:affirmative"],
        "direction": [1, -1, 1],
        "source_text": ["Boil the egg.", "Great question! Boil it.", "Boil it."],
        "edited_text": ["## Steps\nBoil the egg.", "Boil it.", "Great question! Boil it."],
    }
)


def test_a_discovered_feature_shows_the_discoverys_own_example_and_verdict():
    """The discovery's table chose the example (and its reward change) and the verdict (fdr and min_effect):
    the findings show those, not the first edit of the file nor q < 0.05."""
    table = DISCOVERED.with_columns(
        significant=pl.Series([False, True, False]),  # the opener: q 0.01 but within discovery.min_effect
        reference=pl.lit("base"),
        example_comparison_id=pl.Series(["c7", "c3", None]),
        example_before=pl.Series(["Boil the water first.", "Boil the egg.", None]),
        example_after=pl.Series(["Sure! Boil the water first.", "## Steps\nBoil the egg.", None]),
        example_reward_change=pl.Series([0.31, -1.25, None]),
    )
    rows = findings_frame(discovered_findings(table, {"d": DISCOVERY_EDITS}, FindingSettings()))
    headers, opener, spacing = rows.iter_rows(named=True)
    assert not opener["significant"] and not opener["leading"] and headers["significant"]
    assert (opener["example_before"], opener["example_after"]) == (
        "Boil the water first.",
        "Sure! Boil the water first.",
    )
    assert opener["example_reward_change"] == 0.31 and opener["example_words_change"] == 1
    assert opener["example_comparison_id"] == "c7" and opener["reference"] == "base"
    assert spacing["example_before"] is None  # the table has no example and the edits none that add it
    line = finding_line(headers)
    assert "vs base" in line and "(−1.25 reward, +2 words)" in line.replace("\\", "")


def test_discovered_features_each_with_an_example_edit():
    rows = findings_frame(discovered_findings(DISCOVERED, {"d": DISCOVERY_EDITS}, FindingSettings()))
    assert rows["name"].to_list() == [
        "markdown:headers",
        "opener:affirmative",
        "spacing:double",
    ]  # by |effect|
    headers, opener, spacing = rows.iter_rows(named=True)
    assert headers["phrase"] == "penalises markdown section headers" and headers["leading"]
    assert opener["phrase"] == 'rewards an affirmative opener ("Great question!")'
    assert (opener["example_before"], opener["example_after"]) == ("Boil it.", "Great question! Boil it.")
    assert (
        spacing["phrase"] == "rewards spacing:double"
        and not spacing["significant"]
        and not spacing["leading"]
    )
    with pytest.raises(ValueError, match="missing column"):
        discovered_findings(DISCOVERED.drop("q_value"), {}, FindingSettings())


# ── the landing text ──────────────────────────────────────────────────────────────────────────────────────
def render(template: str, categories: dict) -> str:
    """As Snakemake renders the landing text: Jinja (its settings), then docutils."""
    env = Environment(trim_blocks=True, lstrip_blocks=True)
    config = {"reward_models": {"a": {}}, "datasets": {"d": {}}, "perturb": {"methods": ["rules"]}}
    rst = env.from_string(template).render(snakemake=SimpleNamespace(config=config), categories=categories)
    return publish_parts(rst, writer="html")["html_body"]


Category = namedtuple("Category", "name")  # Snakemake's report categories have a name


def category(name: str, subs: tuple[str, ...] = ()) -> dict:
    return {Category(name): {Category(s): [] for s in subs}}


def test_text_from_the_data_stays_text():
    nasty = "Use *this* `now` {{ config }} {% if x %} {# c #} <b>x</b> a_b_ |sub| \\ [1]_ :role:`x` — done."
    html = render(f"Title\n=====\n\n{text(nasty)}\n", {})
    assert "Use *this* `now` {{ config }} {% if x %} {# c #} &lt;b&gt;x&lt;/b&gt; a_b_ |sub| \\ [1]_" in html
    assert ":role:`x` — done." in html and "<em>" not in html and "<b>" not in html


def test_the_landing_names_the_findings_and_only_the_sections_the_run_has():
    template = (REPO / "workflow" / "report" / "workflow.rst").read_text(encoding="utf-8")
    assert MARKER in template
    effects, changes, texts = hand_pair()
    rows = findings_frame(attribute_findings(effects, changes, texts, {}, FindingSettings()))
    block = findings_rst(rows, ["d"], ["b", "a"], 0.95, "1. Findings", "2. Analyses")
    cats = {
        **category("1. Findings"),
        **category("2. Analyses", ("Attribute effects",)),
        **category("Explorer"),
    }
    html = render(landing_text(template, block), cats)
    assert html.index("rewards clearer, easier-to-read answers") < html.index(
        "rewards safer answers"
    )  # b first
    assert "penalises longer answers" in html and "−0.50 [−0.80, −0.20]" in html
    assert "“Run. Please stop.” (+2.00 sd, +2 words)" in html
    assert "Discovered features" not in html  # no discovery in this run: no sentence about it
    assert "Analyses → Attribute effects" in html and "Explorer" in html
    assert "Reproduction" not in html and "Global sensitivity" not in html and "Evaluation" not in html
    assert "flip rates answer another question" in html


def test_the_template_alone_renders_without_findings():
    template = (REPO / "workflow" / "report" / "workflow.rst").read_text(encoding="utf-8")
    html = render(template, category("1. Evaluation"))
    assert "What each RM rewards" not in html and "Evaluation" in html and "Explorer" not in html


# ── the rule's call, on files ─────────────────────────────────────────────────────────────────────────────
def test_run_findings_writes_the_table_pages_and_the_landing(tmp_path):
    effects, changes, texts = hand_pair()
    comparisons = conform(
        pl.DataFrame({"comparison_id": ["c"], "dataset": ["d"], "seed": [0], "source_index": ["0"],
                      "prompt": ["p"], "chosen": ["x"], "rejected": ["y"]}),
        COMPARISONS, "comparisons",
    )  # fmt: skip
    edits = pl.DataFrame(
        {"edit_id": texts["edit_id"], "comparison_id": "c", "target": "chosen",
         "attribute": ["harmlessness"] * 3 + ["clarity"] * 2, "chain": "better", "round": 1,
         "direction": "better", "text": texts["text"], "method": "rules", "generator": "g"}
    )  # fmt: skip
    files = {}
    for name, frame, contract in (
        ("effects", effects, ATTRIBUTE_EFFECTS),
        ("edits", edits, EFFECT_EDITS),
        ("changes", changes, EFFECT_CHANGES),
        ("comparisons", comparisons, COMPARISONS),
    ):
        files[name] = [str(tmp_path / f"{name}.parquet")]
        write_table(frame, files[name][0], contract, name)
    DISCOVERED.write_csv(tmp_path / "discovered_biases.csv")
    (tmp_path / "discovery" / "d").mkdir(parents=True)
    DISCOVERY_EDITS.write_parquet(tmp_path / "discovery" / "d" / "edits.parquet")
    files["discovered"] = [str(tmp_path / "discovered_biases.csv")]
    files["discovery_edits"] = [str(tmp_path / "discovery" / "d" / "edits.parquet")]
    files["template"] = str(REPO / "workflow" / "report" / "workflow.rst")
    outputs = {k: str(tmp_path / f"findings.{k}") for k in ("parquet", "csv", "md", "html")}
    outputs["landing"] = str(tmp_path / "landing.rst")
    frame = run_findings(files, {}, {"datasets": ["d"], "rms": ["a", "b"]}, 0.95,
                         {"table": "1. Findings", "flip_rates": None}, outputs, LOG)  # fmt: skip
    assert pl.read_parquet(outputs["parquet"]).columns == list(FINDINGS)
    assert frame.filter(pl.col("kind") == "discovered").height == 3
    landing = render(Path(outputs["landing"]).read_text(encoding="utf-8"), category("1. Findings"))
    assert "penalises markdown section headers" in landing and "discovered: markdown:headers" in landing
    assert "Discovered features (bias discovery" in landing
    assert landing.index("rewards safer answers") < landing.index("penalises markdown section headers")
    assert "flip rates" not in landing  # the run has none
    assert "penalises longer answers" in Path(outputs["md"]).read_text(encoding="utf-8")
    assert pl.read_csv(outputs["csv"]).columns == list(FINDINGS)  # every column for machines


def test_the_report_names_the_config_that_made_results(tmp_path, monkeypatch):
    from rmexplain.provenance import config_sha256, report_config_problem

    monkeypatch.chdir(tmp_path)
    record = tmp_path / "results" / "provenance.json"
    assert report_config_problem({"a": 1}, [], record) is None  # no run recorded: nothing to say
    record.parent.mkdir()
    made = {"config_sha256": config_sha256({"a": 1}), "config_files": [str(tmp_path / "config/mine.yaml")]}
    record.write_text(json.dumps(made))
    assert report_config_problem({"a": 1}, ["config/mine.yaml"], record) is None
    problem = report_config_problem({"a": 2}, [], record)
    assert problem.startswith(
        "results/ was made by a run with --configfile config/mine.yaml, not with the default"
    )
    assert problem.endswith("snakemake --report results/report.html --configfile config/mine.yaml")


def test_an_example_shows_the_changes_that_fit_and_cuts_nothing_in_their_middle():
    source = " ".join(f"w{i}" for i in range(80))
    edited = source.replace("w10", "X10").replace("w14", "X14").replace("w70", "X70")  # two near, one far
    before, after = snippet(source, edited)
    assert before == "… w5 w6 w7 w8 w9 w10 w11 w12 w13 w14 w15 w16 w17 w18 w19 …"
    assert after == "… w5 w6 w7 w8 w9 X10 w11 w12 w13 X14 w15 w16 w17 w18 w19 …"  # X70: beyond the stretch
    long = " ".join(f"n{i}" for i in range(40))
    before, after = snippet("a b. " + "c d.", "a b. " + long + " c d.")
    assert after == "a b. " + long + " c d." and before == "a b. c d."  # one long change, whole
