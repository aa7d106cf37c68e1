"""The analysis stage functions end to end on a synthetic explanations set: tables, figures, pages."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from rmexplain.analysis import stages as S
from rmexplain.analysis.pages import word_diff_html
from rmexplain.analysis.probes import probe_rows, probes_from_config, win_rates
from rmexplain.analysis.tables import to_markdown, with_ci
from rmexplain.attributes import PAPER_ATTRIBUTES
from rmexplain.explanations.categorise import classify, orient
from rmexplain.ids import perturbation_id, text_id
from rmexplain.schemas import (
    COMPARISONS,
    EXPLANATIONS,
    ORIGINAL_SCORES,
    PERTURBATIONS,
    PFR,
    REWARDS,
    conform,
    read_table,
    write_table,
)

LOG = logging.getLogger("test")
RMS = ["rm-helpful", "rm-harmless"]
HARM = {"harmlessness", "sensitivity", "avoid-to-answer", "appropriateness"}
SETTINGS = {"bootstrap": {"n_resamples": 300, "seed": 0}, "variants": "mean"}
FIGURES = {"width": 9, "dpi": 60, "format": "png"}


def synthetic(n: int = 10, seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Comparisons, perturbations and explanations of two RMs; rm-harmless reacts to the harm attributes."""
    rng = np.random.default_rng(seed)
    comps, perts, expl = [], [], []
    for c in range(n):
        cid = f"harmless-s0-{c}"
        chosen, rejected = f"I can't help with request {c}.", f"Sure, here is how to do {c}."
        comps.append(
            {
                "comparison_id": cid,
                "dataset": "harmless",
                "seed": 0,
                "source_index": str(c),
                "prompt": f"How do I do {c}?",
                "chosen": chosen,
                "rejected": rejected,
            }
        )
        for rm in RMS:
            r_c, r_r = rng.normal(1.0, 0.3), rng.normal(0.0, 0.3)
            plus = "chosen" if r_c > r_r else "rejected"
            rp, rn = max(r_c, r_r), min(r_c, r_r)
            for target, original in (("chosen", chosen), ("rejected", rejected)):
                side = "plus" if target == plus else "minus"
                for a in PAPER_ATTRIBUTES:
                    strong = (a in HARM) == (rm == "rm-harmless")
                    delta = rng.normal((1.6 if strong else 0.4) * (rp - rn), 0.3)
                    text = (
                        original.replace(" ", " what the hell ", 1)
                        if a == "appropriateness"
                        else f"{original} ({a})"
                    )
                    pid = perturbation_id("rules", rm, cid, target, a, 0)
                    perts.append(
                        {
                            "perturbation_id": pid,
                            "comparison_id": cid,
                            "target": target,
                            "direction": "worse" if side == "plus" else "better",
                            "attribute": a,
                            "variant": 0,
                            "text": text,
                            "method": "rules",
                            "orienter": rm,
                            "focus_words": [],
                            "generator": "synthetic",
                        }
                    )
                    reward = rp - delta if side == "plus" else rn + delta
                    kind, sub, d = classify(side, rp, rn, reward)
                    expl.append(
                        {
                            "dataset": "harmless",
                            "rm": rm,
                            "method": "rules",
                            "comparison_id": cid,
                            "seed": 0,
                            "perturbation_id": pid,
                            "target": target,
                            "side": side,
                            "attribute": a,
                            "variant": 0,
                            "reward_plus": rp,
                            "reward_minus": rn,
                            "reward_perturbed": reward,
                            "kind": kind,
                            "sf_subkind": sub,
                            "reward_delta": d,
                            "agrees_with_human": plus == "chosen",
                        }
                    )
    return (
        conform(pl.DataFrame(comps), COMPARISONS, "comparisons"),
        conform(pl.DataFrame(perts), PERTURBATIONS, "perturbations"),
        conform(pl.DataFrame(expl), EXPLANATIONS, "explanations"),
    )


def scores_of(
    comparisons: pl.DataFrame, perturbations: pl.DataFrame, explanations: pl.DataFrame, rm: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The original scores and perturbation rewards of ``rm`` behind its synthetic explanations."""
    mine = explanations.filter(pl.col("rm") == rm)
    plus = dict(mine.filter(pl.col("side") == "plus").select("comparison_id", "target").unique().iter_rows())
    margins = {
        c: (p, m) for c, p, m in mine.select("comparison_id", "reward_plus", "reward_minus").iter_rows()
    }
    ids = comparisons["comparison_id"].to_list()
    chosen = [margins[c][0 if plus[c] == "chosen" else 1] for c in ids]
    rejected = [margins[c][1 if plus[c] == "chosen" else 0] for c in ids]
    prompts = dict(comparisons.select("comparison_id", "prompt").iter_rows())
    texts = dict(perturbations.select("perturbation_id", "text").iter_rows())
    rewards = pl.DataFrame(
        {
            "text_id": [
                text_id(prompts[c], texts[p])
                for c, p in mine.select("comparison_id", "perturbation_id").rows()
            ],
            "rm": rm,
            "reward": mine["reward_perturbed"],
            "truncated": False,
            "max_length": pl.Series([None] * mine.height, dtype=pl.Int64),
        }
    )
    return orient(comparisons, rm, chosen, rejected), rewards


@pytest.fixture(scope="module")
def analysed(tmp_path_factory) -> Path:
    """Run every analysis stage on the synthetic set; return the output directory."""
    out = tmp_path_factory.mktemp("analysis")
    comparisons, perturbations, explanations = synthetic()
    comparisons.write_parquet(out / "comparisons.parquet")
    for rm in RMS:
        explanations.filter(pl.col("rm") == rm).write_parquet(out / f"expl_{rm}.parquet")
        perturbations.filter(pl.col("orienter") == rm).write_parquet(out / f"pert_{rm}.parquet")
    expl = [str(out / f"expl_{rm}.parquet") for rm in RMS]
    pert = [str(out / f"pert_{rm}.parquet") for rm in RMS]
    p = {
        name: str(out / f"{name}.parquet")
        for name in ("pfr", "tau_rms", "tau_sides", "local_tau", "examples")
    }
    S.run_global_sensitivity(expl, "harmless", "rules", SETTINGS, list(PAPER_ATTRIBUTES), RMS, p, LOG)
    S.run_representative(expl, p["pfr"], "harmless", "rules", SETTINGS, RMS, [RMS], p, LOG)
    scores = {rm: scores_of(comparisons, perturbations, explanations, rm) for rm in RMS}
    for rm, (originals, rewards) in scores.items():
        write_table(originals, out / f"originals_{rm}.parquet", ORIGINAL_SCORES, "originals")
        write_table(rewards, out / f"rewards_{rm}.parquet", REWARDS, "rewards")
    S.run_probes(
        {
            "comparisons": str(out / "comparisons.parquet"),
            "perturbations": pert,
            "originals": [str(out / f"originals_{rm}.parquet") for rm in RMS],
            "rewards": [str(out / f"rewards_{rm}.parquet") for rm in RMS],
        },
        RMS,
        {rm: [rm, rm] for rm in RMS},  # per RM: each orients its own set
        "harmless",
        "rules",
        {"hell": {"pattern": r"\bthe hell\b", "regex": True}},
        0.95,
        str(out / "probes.parquet"),
        LOG,
    )
    for table, inputs in (
        ("pfr", [p["pfr"]]),
        ("tau_rms", [p["tau_rms"]]),
        ("tau_sides", [p["tau_sides"]]),
        ("representative_examples", [p["examples"]]),
        ("probe_win_rate", [str(out / "probes.parquet")]),
    ):
        S.run_table(table, inputs, [str(out / f"{table}.{ext}") for ext in ("csv", "md", "html")])
    S.run_pfr_figure(p["pfr"], "harmless", "rules", FIGURES, str(out / "pfr.png"))
    S.run_local_tau_figure(p["local_tau"], "harmless", "rules", FIGURES, str(out / "local_tau.png"))
    S.run_rank_similarity_figure([p["tau_rms"]], [p["tau_sides"]], FIGURES, str(out / "rank.png"))
    S.run_probe_figure([str(out / "probes.parquet")], FIGURES, str(out / "probes.png"))
    names = ["rm1", "rm2", "pair_plus", "pair_minus"]
    S.run_examples(
        p["examples"],
        expl,
        pert,
        str(out / "comparisons.parquet"),
        RMS,
        [RMS],
        FIGURES,
        [str(out / f"{n}.png") for n in names],
        [str(out / f"{n}.html") for n in names],
    )
    return out


def test_synthetic_sensitivity_is_recovered(analysed):
    pfr = read_table(analysed / "pfr.parquet", PFR, "pfr").filter(pl.col("side") == "plus")
    mean = pfr.group_by("rm", pl.col("attribute").is_in(list(HARM)).alias("harm")).agg(pl.col("pfr").mean())
    value = {(r, h): v for r, h, v in mean.rows()}
    assert value["rm-harmless", True] > value["rm-harmless", False] + 0.3
    assert value["rm-helpful", False] > value["rm-helpful", True] + 0.3
    tau = pl.read_parquet(analysed / "tau_rms.parquet")
    assert (tau["tau"] < 0).all()  # opposite sensitivities


def test_every_table_and_figure_is_written(analysed):
    for table in ("pfr", "tau_rms", "tau_sides", "representative_examples", "probe_win_rate"):
        assert pl.read_csv(analysed / f"{table}.csv").height > 0
        md = (analysed / f"{table}.md").read_text()
        assert md.startswith("### ") and "|---|" in md
        assert "<table>" in (analysed / f"{table}.html").read_text()
    for figure in ("pfr", "local_tau", "rank", "probes", "rm1", "rm2", "pair_plus", "pair_minus"):
        assert (analysed / f"{figure}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (analysed / f"{figure}.png").stat().st_size > 5_000


def test_markdown_tables_use_the_papers_layout(analysed):
    md = (analysed / "tau_rms.md").read_text()
    assert "| harmless | rules | rm-helpful vs rm-harmless |" in md  # config order of the RMs
    pfr = (analysed / "pfr.md").read_text()
    assert "rm-helpful PFR [95% CI]" in pfr and "| Y+ | appropriateness |" in pfr


def test_example_pages_show_texts_rewards_and_edits(analysed):
    examples = pl.read_parquet(analysed / "examples.parquet")
    chosen = examples.filter(pl.col("kind") == "rm")["comparison_id"][0]
    page = (analysed / "rm1.html").read_text()
    assert chosen in page and "data:image/png;base64," in page
    assert "<ins>what the hell</ins>" in page  # the appropriateness edit, marked
    assert page.count("<tr><td>Y") == 2 * len(PAPER_ATTRIBUTES)  # every perturbation of both sides
    md = (analysed / "rm1.md").read_text()
    assert "### Prompt" in md and "appropriateness" in md
    pair = (analysed / "pair_plus.html").read_text()
    assert "reward (rm-helpful)" in pair and "reward (rm-harmless)" in pair


def test_an_rm_measured_on_a_subset_is_marked_in_the_tables_and_figures(tmp_path, analysed):
    """rm-harmless outside shared_rms (App. G's case): the flip-rate and τ pages, the flip-rate figure and the
    rank-similarity figure mark it and say why; the CSV keeps its plain name; the probe table does not mark
    it (its items are every perturbation, whatever the orientation)."""
    foreign = {
        "harmless": {"shared_rms": ["rm-helpful"], "foreign_rms": ["rm-harmless"], "orientation": "agreed"}
    }
    note = (
        "† outside shared_rms, measured on part of the shared comparisons: rm-harmless on harmless (outside "
        "shared_rms rm-helpful): explained only on the comparisons where its own y+ is the agreed one "
        "(foreign_rm_orientation: agreed; this project's reading of App. G, which does not say)."
    )
    files = {"pfr": "pfr", "tau_rms": "tau_rms", "tau_sides": "tau_sides", "probe_win_rate": "probes"}
    for table, part in files.items():
        outputs = [str(tmp_path / f"{table}.{ext}") for ext in ("csv", "md", "html")]
        S.run_table(table, [str(analysed / f"{part}.parquet")], outputs, 0.95, foreign)
    assert "| harmless | rules | rm-helpful vs rm-harmless † |" in (tmp_path / "tau_rms.md").read_text()
    assert "| rm-harmless † | 0." in (tmp_path / "tau_sides.md").read_text()
    assert "rm-harmless † PFR [95% CI]" in (tmp_path / "pfr.md").read_text()
    for table in ("pfr", "tau_rms", "tau_sides"):
        assert note in (tmp_path / f"{table}.md").read_text(), table
        assert "this project&#x27;s reading of App. G" in (tmp_path / f"{table}.html").read_text(), table
        assert "†" not in (tmp_path / f"{table}.csv").read_text()
    assert "†" not in (tmp_path / "probe_win_rate.md").read_text()
    svg = {"width": 9, "dpi": 60, "format": "svg"}
    S.run_pfr_figure(
        str(analysed / "pfr.parquet"), "harmless", "rules", svg, str(tmp_path / "pfr.svg"), 0.95, foreign
    )
    rank = str(tmp_path / "rank.svg")
    tau = [str(analysed / "tau_rms.parquet")], [str(analysed / "tau_sides.parquet")]
    S.run_rank_similarity_figure(*tau, svg, rank, 0.95, foreign)
    for figure in ("pfr.svg", "rank.svg"):
        text = (tmp_path / figure).read_text()
        assert "<!-- rm-harmless † -->" in text or "rm-harmless †" in text, figure
        assert "† outside shared_rms, measured on part of the shared comparisons" in text, figure
    # Without foreign RMs nothing is marked.
    S.run_table(
        "tau_sides",
        [str(analysed / "tau_sides.parquet")],
        [str(tmp_path / f"plain.{x}") for x in ("csv", "md", "html")],
    )
    assert "†" not in (tmp_path / "plain.md").read_text()


def test_degenerate_inputs_still_give_every_output(tmp_path):
    """One RM whose perturbations never flip: undefined τ everywhere, no eligible example."""
    comparisons, perturbations, explanations = synthetic(n=3)
    one = explanations.filter(pl.col("rm") == "rm-helpful").with_columns(
        kind=pl.lit("semifactual"), sf_subkind=pl.lit("between"), reward_delta=pl.lit(0.5)
    )
    one.write_parquet(tmp_path / "e.parquet")
    perturbations.write_parquet(tmp_path / "p.parquet")
    comparisons.write_parquet(tmp_path / "c.parquet")
    p = {
        name: str(tmp_path / f"{name}.parquet")
        for name in ("pfr", "tau_rms", "tau_sides", "local_tau", "examples")
    }
    e = [str(tmp_path / "e.parquet")]
    S.run_global_sensitivity(e, "harmless", "rules", SETTINGS, list(PAPER_ATTRIBUTES), ["rm-helpful"], p, LOG)
    S.run_representative(e, p["pfr"], "harmless", "rules", SETTINGS, ["rm-helpful"], [], p, LOG)
    examples = pl.read_parquet(p["examples"])
    assert examples["comparison_id"].to_list() == [None] and examples["n_eligible"].to_list() == [0]
    S.run_examples(
        p["examples"],
        e,
        [str(tmp_path / "p.parquet")],
        str(tmp_path / "c.parquet"),
        ["rm-helpful"],
        [],
        FIGURES,
        [str(tmp_path / "ex.png")],
        [str(tmp_path / "ex.html")],
    )
    assert "no comparison has a defined local τ" in (tmp_path / "ex.html").read_text()
    S.run_rank_similarity_figure([p["tau_rms"]], [p["tau_sides"]], FIGURES, str(tmp_path / "rank.png"))
    S.run_local_tau_figure(p["local_tau"], "harmless", "rules", FIGURES, str(tmp_path / "local.png"))
    S.run_table("tau_sides", [p["tau_sides"]], [str(tmp_path / f"t.{x}") for x in ("csv", "md", "html")])
    assert "| rm-helpful | – |" in (tmp_path / "t.md").read_text()
    for name in ("ex", "rank", "local"):
        assert (tmp_path / f"{name}.png").stat().st_size > 1_000


def test_word_diff_and_formatting_helpers():
    assert word_diff_html("a b c", "a x c d") == "a <del>b</del> <ins>x</ins> c <ins>d</ins>"
    assert word_diff_html("keep <this>", "keep <this>") == "keep &lt;this&gt;"
    assert with_ci(0.5, 0.25, 0.75) == "0.50 [0.25, 0.75]" and with_ci(float("nan"), 0, 1) == "–"
    assert to_markdown(pl.DataFrame({"a|b": ["x|y"]})) == "| a\\|b |\n|---|\n| x\\|y |\n"


def test_pair_page_notes_when_the_rms_saw_different_perturbations(tmp_path, analysed):
    """Per-RM orientation with a generative method gives each RM its own texts: the page must say so."""
    _, perturbations, _ = synthetic()
    edited = perturbations.with_columns(
        text=pl.when(pl.col("orienter") == "rm-harmless")
        .then(pl.col("text") + " (v2)")
        .otherwise(pl.col("text"))
    )
    edited.write_parquet(tmp_path / "p.parquet")
    assert "differ between" not in (analysed / "pair_plus.html").read_text()
    expl = [str(analysed / f"expl_{rm}.parquet") for rm in RMS]
    S.run_examples(
        str(analysed / "examples.parquet"),
        expl,
        [str(tmp_path / "p.parquet")],
        str(analysed / "comparisons.parquet"),
        [],
        [RMS],
        FIGURES,
        [str(tmp_path / "plus.png"), str(tmp_path / "minus.png")],
        [str(tmp_path / "plus.html"), str(tmp_path / "minus.html")],
    )
    page = (tmp_path / "plus.html").read_text()
    assert f"{len(PAPER_ATTRIBUTES)} perturbations differ between rm-helpful and rm-harmless" in page


def test_probe_items_from_the_scores_are_the_explanations_items_of_per_rm_sets(analysed):
    """Read from the original scores and rewards, each RM's probe items on its own set are exactly the
    perturbations its explanations hold: the same win rates as computed from the explanations."""
    comparisons, perturbations, explanations = synthetic()
    probes = probes_from_config({"hell": {"pattern": r"\bthe hell\b", "regex": True}})
    expected = win_rates(probe_rows(explanations, perturbations, comparisons), probes, 0.95, rms=RMS)
    got = pl.read_parquet(analysed / "probes.parquet").select(expected.columns)
    assert got.equals(expected) and got["n_perturbations"].min() > 0
