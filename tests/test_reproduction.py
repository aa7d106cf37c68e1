"""The paper's whole design in one run, and the reproduction table.

A miniature of ``config/paper.yaml`` runs through Snakemake end to end: python RMs whose preferences the
test controls, the local scripted OpenAI-compatible server as the LLM. It checks that §4's analyses read only
the shared perturbations of the comparisons the paper's three RMs agree on, that App. G's RMs score exactly
that shared set, that App. D's three prompt variants send one step-1 request per response, and that the
reproduction table has one row per published cell. The table's arithmetic is checked by hand below.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import replace
from html import escape
from pathlib import Path

import polars as pl
import pytest
import yaml
from conftest import WorkflowCopy, tiny_demo_config
from scipy import stats

from rmexplain import targets
from rmexplain.analysis.reference import load_reference
from rmexplain.analysis.reproduction import (
    COLUMNS,
    SIDE_OF_COLUMN,
    Mapping,
    Part,
    agreement_summary,
    reproduction_table,
    welch_df,
    with_q_values,
)
from rmexplain.config import check
from rmexplain.design import Design
from rmexplain.explanations.categorise import orient
from rmexplain.explanations.stages import foreign_orientation_table, mean_over_rms
from rmexplain.ids import text_id
from rmexplain.llm.devserver import ChatServer
from rmexplain.settings import ConfigError

# Three RMs standing for v1, v2 and pythia: longer is better for all, except that "pythia" prefers the shorter
# answer about tea (so the agreement filter of §4 drops that comparison). Two more for App. G, outside the
# filter: "ob" prefers the shorter answer about eggs, "sw" the short one about cacti, against the agreed y+.
RMS = """
def v1(prompts, responses):  # harmlessness matters most to v1
    return [len(r) - 200 * ("worse harmlessness" in r) + 200 * ("better clarity" in r) for r in responses]

def v2(prompts, responses):  # appropriateness to v2
    return [2.0 * len(r.split()) - 100 * ("worse appropriateness" in r) + 100 * ("better harmlessness" in r)
            for r in responses]

def pythia(prompts, responses):  # prefers the shorter answer about tea: the paper RMs disagree there
    return [(-1 if "tea" in p else 1) * len(r) - 300 * ("worse clarity" in r)
            for p, r in zip(prompts, responses)]

def ob(prompts, responses):  # prefers the shorter answer about eggs
    return [(-1 if "egg" in p else 1) * len(set(r.split())) - 50 * ("worse harmlessness" in r)
            for p, r in zip(prompts, responses)]

def sw(prompts, responses):  # prefers the shorter answer about cacti
    return [(-len(r) if "cactus" in p else -abs(len(r) - 40)) - 80 * ("worse appropriateness" in r)
            for p, r in zip(prompts, responses)]
"""
PAIRS = [
    ("How do I make tea?", "Boil water, steep the leaves for three minutes, then pour.", "Use water."),
    ("How do I boil an egg?", "Put it in boiling water for eight minutes, then cool it.", "Cook it."),
    ("What is the capital of Peru?", "The capital of Peru is Lima, high in the Andes.", "Peru."),
    ("How can I pick a lock?", "What do you mean? I can't help with that.", "Use a tension wrench."),
    ("Can you help me cheat on my exam?", "What do you mean by cheat? I'd rather help you revise.", "Sure."),
    ("How can I sleep better?", "Keep a regular schedule and avoid screens before bed.", "Just sleep."),
    # The paper RMs agree against the human label: their y+ is the human-rejected (longer) answer.
    (
        "How do I water a cactus?",
        "Sparingly.",
        "Water it deeply but rarely, and let the soil dry out in between.",
    ),
]
EGG, CACTUS = 1, 6  # PAIRS indices: ob orients the egg comparison, sw the cactus one, against the agreed y+
ATTRIBUTES = {
    "appropriateness": "the extent to which the response is appropriate in terms of language style",
    "harmlessness": "whether or not the response is relevant to any potentially unsafe behaviours",
    "clarity": "whether or not the response is clear and easy to read",
}
PAPER_RMS = ["v1", "v2", "pythia"]


def mini_paper_config(server: ChatServer) -> dict:
    """config/paper.yaml's design, in miniature."""
    config = yaml.safe_load((Path(__file__).parents[1] / "config" / "paper.yaml").read_text())
    section3 = {"source": "file", "path": "pairs.jsonl", "reward_models": PAPER_RMS, "stages": ["evaluation"]}
    config["datasets"] = {
        "harmless": {**section3, "methods": ["two_step", "two_step_only", "two_step_pass", "random"]},
        "harmless_global": {
            "source": "file",
            "path": "pairs_global.jsonl",  # other questions: no step-1 prompt shared with §3
            "n_per_seed": len(PAIRS),
            "seeds": [0],
            "orientation": "shared",
            "shared_rms": PAPER_RMS,
            "reward_models": [*PAPER_RMS, "ob", "sw"],
            "methods": ["two_step"],
            "stages": ["analysis"],
        },
    }
    config["sample"] = {"n_per_seed": 4, "seeds": [0, 1]}
    config["reward_models"] = {
        name: {"backend": "python", "callable": f"mini_rms.py:{name}"} for name in [*PAPER_RMS, "ob", "sw"]
    }
    config["attributes"] = ATTRIBUTES
    config["perturb"]["methods"] = ["two_step", "two_step_only", "two_step_pass", "random"]
    config["perturb"]["random"] = {"n": 2}
    del config["perturb"]["polyjuice"]
    config["perturb"]["discover"] = {"enabled": False}
    config["evaluate"] = {"embedding_model": "bundled-minilm", "device": "cpu"}
    config["figures"]["format"] = "svg"  # titles and labels readable as text
    config["llm"].update(base_url=server.base_url, model="dev", api_key_env="RMX_TEST_KEY", concurrency=2)
    config["analysis"]["bootstrap"]["n_resamples"] = 200
    config["analysis"]["judge"] = {"enabled": False}
    config["analysis"]["examples"]["pairs"] = [["v1", "v2"]]
    config["analysis"]["rewards_example"] = {"enabled": True, "dataset": "harmless_global", "rm": "v2"}
    probe = config["analysis"]["probes"]["disrespect"]
    probe["pattern"] = r"\[worse appropriateness\]"  # what the scripted server writes for that edit
    config["reproduce"]["reward_models"] = {
        "v1": "v1", "v2": "v2", "pythia": "pythia", "Llama OB": "ob", "Llama SW": "sw"
    }  # fmt: skip
    config["reproduce"]["datasets"] = {"harmless": {"evaluation": "harmless", "analysis": "harmless_global"}}
    config["reproduce"]["min_seeds"] = 2  # the miniature's two seeds: verdicts to read back from the pages
    config["reproduce"]["methods"] = {
        "OURS": "two_step", "RP": "random", "center": "two_step", "only": "two_step_only",
        "pass": "two_step_pass",
    }  # fmt: skip
    return config


def _pairs_of(comparisons: pl.DataFrame) -> dict[str, tuple[str, str, str]]:
    """comparison_id -> its (prompt without the global prefix, chosen, rejected) as in PAIRS."""
    return {
        c: (p.removeprefix("Quick question. "), y, n)
        for c, p, y, n in comparisons.select("comparison_id", "prompt", "chosen", "rejected").iter_rows()
    }


def read(root: Path, pattern: str) -> pl.DataFrame:
    return pl.concat([pl.read_parquet(p) for p in sorted(root.glob(pattern))], how="diagonal_relaxed")


def write_mini_paper_inputs(root: Path) -> None:
    """The miniature's RMs and its two pair files (§3's and §4's) in ``root``."""
    (root / "mini_rms.py").write_text(RMS)
    for name, prefix in (("pairs.jsonl", ""), ("pairs_global.jsonl", "Quick question. ")):
        with open(root / name, "w") as f:
            for prompt, chosen, rejected in PAIRS:
                f.write(
                    json.dumps({"prompt": prefix + prompt, "chosen": chosen, "rejected": rejected}) + "\n"
                )


@pytest.mark.slow
def test_the_papers_design_runs_end_to_end_in_miniature(tmp_path, monkeypatch):
    workflow = WorkflowCopy(tmp_path)
    write_mini_paper_inputs(tmp_path)
    monkeypatch.setenv("RMX_TEST_KEY", "sk-test")
    with ChatServer(expected_key="sk-test") as server:
        config = workflow.write_config(mini_paper_config(server))
        workflow.snakemake("--cores", "2", "--configfile", str(config))
        step1_answers = server.successes("step1")

    # §4: the comparisons all three paper RMs agree on (the tea comparison is not one of them) ...
    originals = read(tmp_path, "results/scores/harmless_global/originals/*.parquet")
    verdicts = (
        originals.filter(pl.col("rm").is_in(PAPER_RMS))
        .group_by("comparison_id")
        .agg(agreed=pl.col("plus_target").n_unique() == 1)
    )
    agreed = set(verdicts.filter("agreed")["comparison_id"])
    assert 0 < len(agreed) < len(PAIRS)
    # ... have ONE shared perturbation set, and every RM's explanations on it come from that set only.
    perturbation_dir = tmp_path / "results/perturbations/harmless_global/two_step"
    assert sorted(p.name for p in perturbation_dir.iterdir()) == ["shared.parquet"]
    shared = pl.read_parquet(perturbation_dir / "shared.parquet")
    assert set(shared["comparison_id"]) == agreed
    explanations = read(tmp_path, "results/explanations/harmless_global/two_step/*.parquet")
    for rm in PAPER_RMS:
        mine = explanations.filter(pl.col("rm") == rm)
        assert set(mine["perturbation_id"]) == set(shared["perturbation_id"]), rm
    # The §4 tables are built from the §4 dataset only; the §3 tables from the per-RM sets only.
    assert set(pl.read_csv(tmp_path / "results/tables/tau_rms.csv")["dataset"]) == {"harmless_global"}
    assert set(pl.read_csv(tmp_path / "results/tables/coverage.csv")["dataset"]) == {"harmless"}
    section3 = sorted(p.name for p in (tmp_path / "results/perturbations/harmless/two_step").iterdir())
    assert section3 == [f"{rm}.parquet" for rm in sorted(PAPER_RMS)]

    # App. G: ob and sw score exactly the shared set, and nothing of §3.
    comparisons = pl.read_parquet(tmp_path / "results/data/harmless_global/comparisons.parquet")
    ids = {PAIRS.index(p): c for c, p in _pairs_of(comparisons).items()}
    prompts = dict(comparisons.select("comparison_id", "prompt").iter_rows())
    shared_texts = {text_id(prompts[c], t) for c, t in shared.select("comparison_id", "text").iter_rows()}
    for rm in ("ob", "sw"):
        rewards = pl.read_parquet(tmp_path / f"results/scores/harmless_global/perturbations/{rm}.parquet")
        assert set(rewards["text_id"]) == shared_texts
        assert not (tmp_path / f"results/scores/harmless/perturbations/{rm}.parquet").exists()
    # The agreement filter is over shared_rms only: the egg and cactus comparisons, which ob and sw orient
    # against the paper RMs' y+, are in the shared set (a filter over every RM would drop them) ...
    agreed_y = dict(originals.filter(pl.col("rm") == "v1").select("comparison_id", "plus_target").iter_rows())
    own_y = {(rm, c): y for rm, c, y in originals.select("rm", "comparison_id", "plus_target").iter_rows()}
    for rm, pair in (("ob", EGG), ("sw", CACTUS)):
        assert ids[pair] in agreed and own_y[rm, ids[pair]] != agreed_y[ids[pair]]
    # ... and by default neither is explained on the comparison it orients the other way (its shared
    # perturbations there move with its preference), counted in its log and the report's table.
    against = {"ob": ids[EGG], "sw": ids[CACTUS]}
    for rm, skipped in against.items():
        mine = explanations.filter(pl.col("rm") == rm)
        assert set(mine["comparison_id"]) == agreed - {skipped}, rm
        log = (tmp_path / f"logs/categorise/harmless_global/two_step/{rm}.log").read_text()
        assert f"1 comparisons where {rm} prefers the response the agreed preference rejects: skipped" in log
    foreign = pl.read_csv(tmp_path / "results/tables/foreign_rm_orientation.csv")
    assert foreign.select("dataset", "rm", "shared_set", "ties", "against_agreed", "explained").rows() == [
        ("harmless_global", rm, len(agreed), 0, 1, len(agreed) - 1) for rm in ("ob", "sw")
    ]
    # The cactus comparison: the paper RMs agree on the human-rejected answer as y+, so the shared set makes
    # it worse and the human-chosen one better, and every RM sharing that y+ explains them as Y+ and Y−.
    assert agreed_y[ids[CACTUS]] == "rejected"
    cactus = shared.filter(pl.col("comparison_id") == ids[CACTUS])
    assert set(cactus.select("target", "direction").iter_rows()) == {
        ("rejected", "worse"),
        ("chosen", "better"),
    }
    cactus_sides = explanations.filter(pl.col("comparison_id") == ids[CACTUS])
    assert set(cactus_sides["rm"]) == {*PAPER_RMS, "ob"}
    assert set(cactus_sides.select("target", "side").iter_rows()) == {
        ("rejected", "plus"),
        ("chosen", "minus"),
    }
    assert not cactus_sides["agrees_with_human"].any()
    # Every perturbation job's skips are in the report's table: the tea comparison the paper RMs disagree on.
    skips = pl.read_csv(tmp_path / "results/tables/perturbation_skips.csv")
    tea = skips.filter(pl.col("dataset") == "harmless_global", pl.col("stage") == "orientation")
    assert tea.select("orienter", "reason", "comparisons").rows() == [
        ("shared", "the shared RMs disagree on which response is y+", 1)
    ]

    # App. D: the three prompts perturbed the same responses, and no step-1 request reached the server twice
    # (a variant's job waits for two_step's and reads its step-1 answers from the cache): at most one step-1
    # request per response, fewer where the same question, responses and scores recur (seeds, designs).
    slots = {
        method: set(
            read(tmp_path, f"results/perturbations/*/{method}/*.parquet")
            .select("orienter", "comparison_id", "target")
            .iter_rows()
        )
        for method in ("two_step", "two_step_only", "two_step_pass")
    }
    assert (
        slots["two_step_only"] == slots["two_step_pass"] == {s for s in slots["two_step"] if s[0] != "shared"}
    )
    assert set(step1_answers.values()) == {1}
    assert 0 < len(step1_answers) <= len(slots["two_step"])

    # The reproduction table: one row per published cell; this run fills the harmless cells it can.
    reproduction = pl.read_csv(tmp_path / "results/tables/reproduction.csv", schema=COLUMNS)
    assert reproduction.height == load_reference("jiang2025").height
    filled = reproduction.filter(pl.col("run_mean").is_not_null())
    assert set(filled["table"]) == {"1", "2", "3", "4", "5", "6", "7"}, filled
    assert filled.filter(pl.col("table") == "4").height == 15  # harmless: 3 prompts x 5 columns
    assert reproduction.filter(pl.col("block") == "hs2")["run_mean"].is_null().all()
    _every_run_value_in_one_summary_column(reproduction)
    # The pages show the CSV's cells: Table 7's Llama OB row, value and verdict, in the Markdown and HTML.
    ob = reproduction.filter((pl.col("table") == "7") & (pl.col("column") == "Llama OB")).row(0, named=True)
    md = (tmp_path / "results/tables/reproduction.md").read_text()
    header, _, *lines = [re.split(r"(?<!\\)\|", line)[1:-1] for line in md.splitlines()]
    names = [c.strip() for c in header]
    cells = [dict(zip(names, (c.strip() for c in line), strict=True)) for line in lines]
    shown = next(c for c in cells if (c["table"], c["column"]) == ("7", "Llama OB"))
    assert shown["run_mean"] == f"{round(ob['run_mean'], 3)}" and shown["run_n"] == str(ob["run_n"])
    assert shown["verdict"] == ob["verdict"] and shown["reading"] == ob["reading"]
    assert shown["paper_se_basis"] == "binomial, n = 110 items"
    html = (tmp_path / "results/tables/reproduction.html").read_text()
    n_valued = reproduction["run_mean"].is_not_null().sum()
    assert f"179 published cells, {n_valued} with a value from this run: " in html
    assert f"<td>{escape(ob['verdict'])}</td>" in html
    # The figure's panel titles count what the table says (SVG keeps each title line as a comment).
    figure = (tmp_path / "results/figures/reproduction.svg").read_text()
    for table, cells_of in reproduction.group_by("table"):
        valued = cells_of.filter(pl.col("run_mean").is_not_null())
        agree, close = valued["agrees"].fill_null(False).sum(), valued["equivalent"].fill_null(False).sum()
        assert f"<!-- Table {table[0]}: {agree} of {valued.height} agree, {close} close -->" in figure
    assert reproduction.filter(pl.col("table") == "1")["agrees"].is_not_null().any()  # verdicts, not only n/a
    # Fig. 6 names its comparison: v2's representative example.
    examples = pl.read_parquet(tmp_path / "results/analysis/harmless_global/two_step/examples.parquet")
    v2_example = examples.filter((pl.col("kind") == "rm") & (pl.col("rm_a") == "v2"))["comparison_id"][0]
    rewards_figure = (tmp_path / "results/figures/analysis/rewards_example.svg").read_text()
    assert f"<!-- Every RM on the perturbations of comparison {v2_example} -->" in rewards_figure
    # App. G's RMs are marked where their flip rates and τ rest on fewer comparisons than the others'.
    for table in ("pfr", "tau_rms", "tau_sides"):
        page = (tmp_path / f"results/tables/{table}.md").read_text()
        assert "ob †" in page and "sw †" in page and "v2 †" not in page, table
        assert "this project's reading of App. G" in page, table
    pfr_figure = (tmp_path / "results/figures/analysis/pfr/harmless_global/two_step.svg").read_text()
    assert "<!-- ob † -->" in pfr_figure and "<!-- v1 † -->" not in pfr_figure


def _metrics(values: dict[tuple[str, int], float], metric: str, method: str, subset: str = "all") -> list:
    return [
        {
            "dataset": "h",
            "method": method,
            "rm": rm,
            "seed": seed,
            "subset": subset,
            "metric": metric,
            "value": v,
        }
        for (rm, seed), v in values.items()
    ]


ALPHA = 2 * stats.norm.sf(2)  # within_sd 2: the two-sided level of |z| <= 2 for a normal, 4.55 %


def _tau_rms(tau: float, low: float | None, high: float | None, n: int | None, side: str = "plus"):
    return pl.DataFrame(
        {
            "dataset": ["g"],
            "method": ["ours"],
            "side": [side],
            "rm_a": ["b"],
            "rm_b": ["a"],
            "tau": [tau],
            "ci_low": [low],
            "ci_high": [high],
            "n_attributes": pl.Series([n], dtype=pl.Int64),
        }
    )


def test_reproduction_cells_by_hand():
    mapping = Mapping(
        reward_models={"v1": "a", "v2": "b", "pythia": "c", "Llama OB": "d", "Llama SW": "e"},
        datasets={"harmless": {"evaluation": "h", "analysis": "g"}},
        methods={"OURS": "ours", "RP": "rand"},
        probe="hell",
    )
    # Table 1, harmless/OURS/Both CF: per seed the mean over a, b, c (d is no paper RM of Table 1): seed 0:
    # (0.6 + 0.7 + 0.8) / 3 = 0.7; seed 1: (0.5 + 0.6 + 0.7) / 3 = 0.6; seed 2: 0.65 -> mean 0.65, sd 0.05.
    values = {("a", 0): 0.6, ("b", 0): 0.7, ("c", 0): 0.8, ("d", 0): 0.0, ("a", 1): 0.5, ("b", 1): 0.6}
    values |= {("c", 1): 0.7, ("d", 1): 0.0, ("a", 2): 0.55, ("b", 2): 0.65, ("c", 2): 0.75, ("d", 2): 0.0}
    metrics = pl.DataFrame(_metrics(values, "cf_coverage_both", "ours"))
    # Two probes score d; only the mapped one ("hell") is Table 7's.
    probes = pl.DataFrame(
        {
            "dataset": ["g"] * 3,
            "method": ["ours"] * 3,
            "rm": ["d", "d", "e"],
            "probe": ["other", "hell", "hell"],
            "win_rate": [0.9, 0.25, 0.22],
            "ci_low": [0.8, 0.1, 0.19],
            "ci_high": [0.95, 0.5, 0.25],
            "n_perturbations": [50, 8, 600],
        }
    )
    reference = load_reference("jiang2025")
    tau_rms = _tau_rms(-0.2, -0.3, -0.05, 12)
    table = reproduction_table(reference, mapping, metrics=metrics, tau_rms=tau_rms, probes=probes)
    assert table.height == reference.height
    cell = table.filter(
        (pl.col("table") == "1") & (pl.col("block") == "harmless") & (pl.col("row") == "OURS")
    )
    both_cf = cell.filter(pl.col("column") == "Both/CF cov.").row(0, named=True)
    assert both_cf["run_mean"] == pytest.approx(0.65) and both_cf["run_sd"] == pytest.approx(0.05)
    assert both_cf["paper_mean"] == 0.69 and both_cf["run_n"] == 3
    assert both_cf["difference"] == pytest.approx(0.65 - 0.69)
    # paper 0.69 ± 0.111 over 5 seeds: se 0.0496, df 4; run 0.05 / √3 = 0.0289, df 2; rounding 0.005:
    # se = √(0.0496² + 0.0289² + 0.005²) = 0.0576. Welch–Satterthwaite: df = se⁴ / (0.0496⁴ / 4 + 0.0289⁴ / 2)
    # = 5.92, so |t| must stay within t(5.92) at 95.4 %, 2.53 (not 2); t = -0.04 / 0.0576 = -0.69: agrees.
    paper_v, run_v = 0.111**2 / 5, 0.05**2 / 3
    se = (paper_v + run_v + 0.005**2) ** 0.5
    df = se**4 / (paper_v**2 / 4 + run_v**2 / 2)
    assert both_cf["paper_se"] == pytest.approx(0.111 / 5**0.5) and both_cf["run_se"] == pytest.approx(
        0.05 / 3**0.5
    )
    assert both_cf["se"] == pytest.approx(se) and both_cf["df"] == pytest.approx(df)
    assert df == pytest.approx(5.92, abs=0.01) and both_cf["t"] == pytest.approx(-0.04 / se)
    assert (
        both_cf["critical"] == pytest.approx(stats.t.isf(ALPHA / 2, df)) and 2.52 < both_cf["critical"] < 2.53
    )
    assert (both_cf["verdict"], both_cf["agrees"]) == ("agrees", True)
    assert both_cf["check"] == "Welch t: |t| <= 2.53 (df 5.9, 95.4%); TOST within ±0.05"
    # Within ±0.05? The lower one-sided test: P(T > (-0.04 + 0.05) / 0.0576) = 0.43: not shown. Too noisy.
    assert both_cf["tost_p"] == pytest.approx(stats.t.sf(0.01 / se, df)) and both_cf["tost_p"] > 0.4
    assert (both_cf["equivalent"], both_cf["reading"]) == (False, "too noisy to tell")
    # Table 3, harmless/Y+ of (v1, v2): the pair is found in either order; the paper's 0.16 has an uncertain
    # sign and no sd, nor a stated n: its se is unknown (said so). se = √((0.25 / 3.92)² + 0.005²) = 0.064,
    # every part with infinite df: the critical value is 2. As printed t = -5.6 (differs), with the sign
    # flipped t = -0.62 (agrees): sign-dependent, not counted as agreeing.
    tau = table.filter(
        (pl.col("table") == "3") & (pl.col("row") == "v1, v2") & (pl.col("column") == "harmless/Y+")
    ).row(0, named=True)
    tau_se = ((0.25 / (2 * 1.959963984540054)) ** 2 + 0.005**2) ** 0.5
    assert tau["run_mean"] == -0.2 and tau["agrees"] is None and tau["run_n"] == 12
    assert tau["paper_se"] is None and tau["paper_se_basis"].startswith("unknown")
    assert tau["critical"] == pytest.approx(2.0) and tau["df"] == float("inf")
    assert tau["t"] == pytest.approx(-0.36 / tau_se) and tau["t_flipped"] == pytest.approx(-0.04 / tau_se)
    assert tau["verdict"] == "sign-dependent: agrees only with the sign flipped"
    assert tau["margin"] == 0.1  # tau_margin
    assert (tau["source"], tau["reading"]) == ("g/ours a vs b", "sign-dependent")
    # Table 7, Llama OB: the "hell" probe (0.25 in the Wilson interval [0.1, 0.5], not the other probe's
    # 0.9) on n = 8 < min_items 10 items: inconclusive.
    win = table.filter((pl.col("table") == "7") & (pl.col("column") == "Llama OB")).row(0, named=True)
    assert (win["run_mean"], win["agrees"], win["run_n"]) == (0.25, None, 8)
    assert win["verdict"] == "inconclusive: n 8 < min_items 10"
    assert (win["source"], win["reading"]) == ("g/ours d, probe hell, n=8", "inconclusive")
    # Llama SW: the paper's 0.15 over its 110 items has a binomial se √(0.15 · 0.85 / 110) = 0.034; the run's
    # 0.22 [0.19, 0.25] has se 0.0153. se = √(0.034² + 0.0153² + 0.005²) = 0.0377, t = 0.07 / 0.0377 = 1.86:
    # agrees (on the run's se alone, t would be 4.3: differs).
    sw = table.filter((pl.col("table") == "7") & (pl.col("column") == "Llama SW")).row(0, named=True)
    paper_se = (0.15 * 0.85 / 110) ** 0.5
    sw_se = (paper_se**2 + (0.06 / (2 * 1.959963984540054)) ** 2 + 0.005**2) ** 0.5
    assert sw["paper_se"] == pytest.approx(paper_se) and sw["paper_se_basis"] == "binomial, n = 110 items"
    assert sw["se"] == pytest.approx(sw_se) and sw["t"] == pytest.approx(0.07 / sw_se)
    assert (sw["verdict"], sw["reading"]) == ("agrees", "too noisy to tell")
    # No run value: hs2 (not mapped), helpful, and PJ (no method) stay null.
    assert table.filter(pl.col("block") == "hs2")["run_mean"].is_null().all()
    assert table.filter(pl.col("row") == "PJ")["agrees"].is_null().all()
    # Per table: cells, with a run value, agree, differ, differ by chance (alpha x agree + differ), differ
    # after BH, inconclusive, sign-dependent, equivalent, too noisy to tell, paper se unknown (the τ), mean
    # |difference|.
    summary = _every_run_value_in_one_summary_column(table).filter(pl.col("table").is_in(["1", "3", "7"]))
    assert summary.drop("mean_abs_difference").rows() == [
        ("1", 48, 1, 1, 0, pytest.approx(ALPHA), 0, 0, 0, 0, 1, 0),
        ("3", 18, 1, 0, 0, 0, 0, 0, 1, 0, 0, 1),
        ("7", 5, 2, 1, 0, pytest.approx(ALPHA), 0, 1, 0, 0, 1, 0),
    ]
    assert summary["mean_abs_difference"].to_list() == pytest.approx([0.04, 0.36, (0.05 + 0.07) / 2])


def _every_run_value_in_one_summary_column(table: pl.DataFrame) -> pl.DataFrame:
    summary = agreement_summary(table)
    for row in summary.iter_rows(named=True):
        outcomes = row["agree"] + row["differ"] + row["inconclusive"] + row["sign_dependent"]
        assert outcomes == row["with_run_value"], row
    return summary


def test_a_table_5_cell_reads_its_own_subset():
    reference = load_reference("jiang2025")
    cells = reference.filter(
        (pl.col("table") == "5") & (pl.col("block") == "harmless") & (pl.col("column") == "CF cov.")
    )
    mapping = Mapping(
        reward_models={"v1": "a", "v2": "b", "pythia": "c"},
        datasets={"harmless": {"evaluation": "h"}},
        methods={"OURS": "ours"},
    )
    # The same metric on three subsets, each with its own values: all 0.5, correct 0.7 ± 0.01, wrong 0.3.
    rows = []
    for subset, centre in (("all", 0.5), ("correct", 0.7), ("wrong", 0.3)):
        per_seed = {(rm, seed): centre + 0.01 * (seed - 1) for rm in "abc" for seed in range(3)}
        rows += _metrics(per_seed, "cf_coverage_both", "ours", subset)
    table = reproduction_table(cells, mapping, metrics=pl.DataFrame(rows))
    got = {r["row"]: (r["run_mean"], r["run_sd"], r["source"]) for r in table.iter_rows(named=True)}
    assert got["correct"][:2] == pytest.approx((0.7, 0.01))
    assert got["wrong"][:2] == pytest.approx((0.3, 0.01))
    assert got["correct"][2] == "h/ours/correct, 3 seeds with a value"


def test_differences_come_with_the_count_a_perfect_reproduction_shows_by_chance_and_bh_q_values():
    """Four tested cells at p 0.01, 0.04, 0.03, 0.5 and one inconclusive: three differ at the test's level,
    0.2 would by chance (4 × 0.05), and Benjamini–Hochberg keeps one: q = min over j ≥ i of p(j) · 4 / j,
    sorted: 0.01 · 4 = 0.04, min(0.03 · 2, 0.04 · 4/3) = 0.0533 twice, 0.5."""
    table = pl.DataFrame(
        {
            "table": ["1"] * 5,
            "run_mean": [0.5] * 5,
            "verdict": ["differs", "differs", "differs", "agrees", "inconclusive: n 8 < min_items 10"],
            "p_value": [0.01, 0.04, 0.03, 0.5, 0.001],
            "equivalent": [None] * 5,
            "reading": [""] * 5,
            "paper_se": [0.01] * 5,
            "difference": [0.1] * 5,
        }
    )
    adjusted = with_q_values(table, 0.05)
    assert adjusted["q_value"].to_list()[:4] == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.5])
    assert adjusted["q_value"][4] is None
    assert adjusted["differs_bh"].to_list() == [True, False, False, False, None]
    summary = agreement_summary(adjusted, 0.05).row(0, named=True)
    assert (summary["differ"], summary["differ_bh"]) == (3, 1)
    assert summary["differ_by_chance"] == pytest.approx(0.2)


def test_the_critical_value_follows_the_degrees_of_freedom():
    """Three seeds: the run's sd has two degrees of freedom, so |t| = 3.4 is no evidence of a difference at
    95 % (the fixed |z| <= 2 said it differs)."""
    cell = _one_cell(load_reference("jiang2025"), 0.5, 0.01, False, "1")
    mapping, metrics = _evaluation_run(cell, [0.55, 0.6, 0.65])  # mean 0.6, sd 0.05
    row = reproduction_table(cell, mapping, metrics=metrics).row(0, named=True)
    paper_v, run_v = 0.01**2 / 5, 0.05**2 / 3
    se = (paper_v + run_v + 0.005**2) ** 0.5
    df = se**4 / (paper_v**2 / 4 + run_v**2 / 2)
    assert row["t"] == pytest.approx(0.1 / se) and row["t"] > 3.3
    assert row["df"] == pytest.approx(df) and df < 2.5
    assert row["critical"] == pytest.approx(stats.t.isf(ALPHA / 2, df)) and row["critical"] > 3.4
    assert (row["verdict"], row["reading"]) == ("agrees", "too noisy to tell")
    # Two seeds (one degree of freedom): no verdict below min_seeds (3), and one with min_seeds 2.
    mapping, metrics = _evaluation_run(cell, [0.55, 0.65])
    row = reproduction_table(cell, mapping, metrics=metrics).row(0, named=True)
    assert row["verdict"] == "inconclusive: 2 seeds with a value < min_seeds 3" and row["agrees"] is None
    lenient = Mapping(**{**mapping.__dict__, "min_seeds": 2})
    assert reproduction_table(cell, lenient, metrics=metrics)["verdict"][0] in {"agrees", "differs"}


def test_welch_df_is_scipys_for_two_samples():
    """Without the rounding part the test is the Welch t test of two samples (scipy's, from their stats)."""
    paper, run = Part(0.111 / 5**0.5, 4), Part(0.05 / 3**0.5, 2)
    se = (paper.se**2 + run.se**2) ** 0.5
    p = 2 * stats.t.sf(0.04 / se, welch_df([paper, run]))
    scipy_p = stats.ttest_ind_from_stats(0.69, 0.111, 5, 0.65, 0.05, 3, equal_var=False).pvalue
    assert p == pytest.approx(scipy_p)
    assert welch_df([Part(0.1), Part(0.2)]) == float("inf")


def test_seeds_without_a_value_are_not_counted():
    """Five seeds, three of them without a value (NaN for every RM): the cell rests on two seeds."""
    cell = _one_cell(load_reference("jiang2025"), 0.69, 0.111, False, "1")
    mapping, metrics = _evaluation_run(cell, [0.6, 0.7, float("nan"), float("nan"), float("nan")])
    summary = mean_over_rms(metrics, ["dataset", "method", "subset"])
    assert summary["seeds"].to_list() == [2] and summary["mean"][0] == pytest.approx(0.65)
    row = reproduction_table(cell, mapping, metrics=metrics).row(0, named=True)
    assert row["run_n"] == 2 and row["run_se"] == pytest.approx(0.1 / 2**0.5 / 2**0.5)
    assert row["verdict"] == "inconclusive: 2 seeds with a value < min_seeds 3"


def test_a_seed_where_only_some_rms_have_a_value_is_no_full_seed():
    """Three RMs; seeds 0-2 with every RM (per-seed means 0.6, 0.7, 0.8), seeds 3 and 4 with only RM a (1.0):
    the cell rests on the three full seeds, mean 0.7 and sd 0.1, and names the two it left out."""
    cell = _one_cell(load_reference("jiang2025"), 0.69, 0.111, False, "1")
    mapping, metrics = _evaluation_run(cell, [0.6, 0.7, 0.8, float("nan"), float("nan")])
    metrics = metrics.with_columns(
        value=pl.when((pl.col("seed") >= 3) & (pl.col("rm") == "a")).then(1.0).otherwise(pl.col("value"))
    )
    summary = mean_over_rms(metrics, ["dataset", "method", "subset"]).row(0, named=True)
    assert (summary["seeds"], summary["partial_seeds"]) == (3, 2)
    assert (summary["mean"], summary["sd"]) == pytest.approx((0.7, 0.1))
    row = reproduction_table(cell, mapping, metrics=metrics).row(0, named=True)
    assert row["run_n"] == 3 and row["run_mean"] == pytest.approx(0.7)
    assert row["source"].endswith("3 seeds with a value (2 with only some RMs' values left out)")


def test_a_one_seed_run_is_counted_as_inconclusive():
    reference = load_reference("jiang2025")
    cells = reference.filter((pl.col("table") == "1") & (pl.col("block") == "harmless")).head(3)
    mapping, _ = _evaluation_run(cells.head(1), [0.7])
    rows = []
    for metric in cells["metric"]:
        rows += [r | {"dataset": "e"} for r in _metrics({(rm, 0): 0.7 for rm in "abc"}, metric, "m")]
    table = reproduction_table(cells, mapping, metrics=pl.DataFrame(rows))
    assert set(table["verdict"]) == {"inconclusive: 1 seeds with a value < min_seeds 3"}
    assert set(table["reading"]) == {"inconclusive"}
    # Below the configurable bound (min_seeds >= 2), through the library: one seed has no sd to test with.
    lenient = Mapping(**{**mapping.__dict__, "min_seeds": 1})
    assert set(reproduction_table(cells, lenient, metrics=pl.DataFrame(rows))["verdict"]) == {
        "inconclusive: no sd over seeds"
    }
    summary = _every_run_value_in_one_summary_column(table).row(0, named=True)
    assert (summary["with_run_value"], summary["inconclusive"], summary["agree"]) == (3, 3, 0)


def test_equivalence_tells_close_to_the_paper_from_too_noisy_to_tell():
    cell = _one_cell(load_reference("jiang2025"), 0.40, 0.016, False, "1")
    # A noisy run, 0.55 ± 0.146 over five seeds: not shown to differ (|t| 2.28 < 2.83 at df 4.1), and not
    # shown within ±0.05 either.
    mapping, metrics = _evaluation_run(cell, [0.35, 0.5, 0.55, 0.6, 0.75])
    noisy = reproduction_table(cell, mapping, metrics=metrics).row(0, named=True)
    assert (noisy["verdict"], noisy["equivalent"], noisy["reading"]) == ("agrees", False, "too noisy to tell")
    assert 2.2 < noisy["t"] < noisy["critical"]
    # A precise one, 0.41 ± 0.007: the difference 0.01 is shown to lie within ±0.05 (TOST p 0.0006).
    mapping, metrics = _evaluation_run(cell, [0.40, 0.41, 0.42, 0.41, 0.41])
    close = reproduction_table(cell, mapping, metrics=metrics).row(0, named=True)
    assert (close["verdict"], close["equivalent"], close["reading"]) == ("agrees", True, "close to the paper")
    assert close["tost_p"] < 0.001
    # A tighter margin: the same run is no longer shown close.
    tight = Mapping(**{**mapping.__dict__, "margin": 0.01})
    row = reproduction_table(cell, tight, metrics=metrics).row(0, named=True)
    assert (row["equivalent"], row["reading"]) == (False, "too noisy to tell")


def _one_cell(reference: pl.DataFrame, mean: float, sd: float | None, uncertain: bool, table: str):
    """The first cell of ``table`` with the given published value."""
    cell = reference.filter(pl.col("table") == table).head(1)
    return cell.with_columns(
        mean=pl.lit(mean), sd=pl.lit(sd, dtype=pl.Float64), sign_uncertain=pl.lit(uncertain)
    )


def _evaluation_run(cell: pl.DataFrame, per_seed: list[float]) -> tuple[Mapping, pl.DataFrame]:
    row = cell.row(0, named=True)
    mapping = Mapping(
        reward_models={"v1": "a", "v2": "b", "pythia": "c"},
        datasets={row["block"]: {"evaluation": "e"}},
        methods={row["row"]: "m"},
    )
    values = {(rm, seed): v for seed, v in enumerate(per_seed) for rm in "abc"}
    rows = [r | {"dataset": "e"} for r in _metrics(values, row["metric"], "m")]
    return mapping, pl.DataFrame(rows)


def test_verdict_a_large_run_sd_makes_nothing_agree():
    cell = _one_cell(load_reference("jiang2025"), 0.69, 0.111, False, "1")
    mapping, metrics = _evaluation_run(cell, [0.0, 1.0, 0.5])  # mean 0.5, sd 0.5: se 0.29 > max_se 0.1
    row = reproduction_table(cell, mapping, metrics=metrics).row(0, named=True)
    assert row["run_sd"] == pytest.approx(0.5) and row["agrees"] is None
    assert row["verdict"] == "inconclusive: run se 0.289 > max_se 0.1" and row["reading"] == "inconclusive"
    at_the_limit = Mapping(**{**mapping.__dict__, "max_se": row["run_se"]})  # se = max_se: a verdict
    assert reproduction_table(cell, at_the_limit, metrics=metrics)["verdict"][0] == "agrees"


def test_verdict_counts_the_papers_sd_and_rounding():
    cell = _one_cell(load_reference("jiang2025"), 0.99, 0.008, False, "1")
    mapping, metrics = _evaluation_run(cell, [1.0, 1.0, 1.0])  # sd 0
    row = reproduction_table(cell, mapping, metrics=metrics).row(0, named=True)
    se = (0.008**2 / 5 + 0.005**2) ** 0.5  # rounding's 0.005 added in quadrature
    assert row["se"] == pytest.approx(se) and row["t"] == pytest.approx(0.01 / se)
    assert (row["verdict"], row["agrees"]) == ("agrees", True)


def test_verdict_never_lets_a_lost_minus_agree_silently():
    cell = _one_cell(load_reference("jiang2025"), 0.16, None, True, "3")
    row = cell.row(0, named=True)
    block, side = row["column"].split("/")
    mapping = Mapping(
        reward_models={"v1": "a", "v2": "b"}, datasets={block: {"analysis": "g"}}, methods={"OURS": "ours"}
    )
    tau_rms = _tau_rms(-0.2, -0.25, -0.15, 40, SIDE_OF_COLUMN[side])
    table = reproduction_table(cell, mapping, tau_rms=tau_rms)
    got = table.row(0, named=True)
    assert got["agrees"] is None and got["verdict"].startswith("sign-dependent")
    assert abs(got["t"]) > 2 >= abs(got["t_flipped"])
    summary = agreement_summary(table).row(0, named=True)
    assert (summary["agree"], summary["sign_dependent"]) == (0, 1)
    # too few attributes, or an unknown number of them: no verdict at all, n shown
    few = reproduction_table(cell, mapping, tau_rms=tau_rms.with_columns(n_attributes=pl.lit(5)))
    assert few["verdict"][0] == "inconclusive: n 5 < min_items 10" and few["run_n"][0] == 5
    unknown = reproduction_table(cell, mapping, tau_rms=_tau_rms(-0.2, -0.25, -0.15, None, "plus"))
    assert unknown["verdict"][0] == "inconclusive: n unknown (min_items 10)"
    enough = reproduction_table(cell, mapping, tau_rms=tau_rms.with_columns(n_attributes=pl.lit(10)))
    assert enough["verdict"][0].startswith("sign-dependent")  # n = min_items: a verdict
    # τ undefined (NaN): no run value, no verdict
    undefined = reproduction_table(cell, mapping, tau_rms=tau_rms.with_columns(tau=pl.lit(float("nan"))))
    assert undefined["run_mean"].is_null().all() and undefined["agrees"].is_null().all()
    assert undefined["verdict"][0] == ""
    # no interval (τ undefined in every resample): inconclusive, and counted as such
    bare = reproduction_table(cell, mapping, tau_rms=_tau_rms(-0.2, None, None, 40, SIDE_OF_COLUMN[side]))
    assert bare["verdict"][0] == "inconclusive: no interval"
    assert _every_run_value_in_one_summary_column(bare)["inconclusive"][0] == 1
    half = reproduction_table(cell, mapping, tau_rms=_tau_rms(-0.2, -0.25, None, 40, SIDE_OF_COLUMN[side]))
    assert half["verdict"][0] == "inconclusive: no interval"  # one end is no interval either


def test_the_readings_of_a_precise_run():
    """Five precise seeds against the paper's 0.40 ± 0.001: 0.43 differs (t 5.1) but is shown within ±0.05
    (close to the paper, though the difference is significant); 0.60 differs and is not close."""
    cell = _one_cell(load_reference("jiang2025"), 0.40, 0.001, False, "1")
    rows = {}
    for centre in (0.43, 0.60):
        mapping, metrics = _evaluation_run(cell, [centre - 0.01, centre, centre + 0.01, centre, centre])
        rows[centre] = reproduction_table(cell, mapping, metrics=metrics)
    near, far = (rows[c].row(0, named=True) for c in (0.43, 0.60))
    assert near["t"] > near["critical"] and near["tost_p"] < ALPHA
    assert (near["verdict"], near["agrees"], near["equivalent"]) == ("differs", False, True)
    assert near["reading"] == "close to the paper, though the difference is significant"
    assert (far["verdict"], far["agrees"], far["equivalent"]) == ("differs", False, False)
    assert far["reading"] == "differs"
    summary = agreement_summary(pl.concat([rows[0.43], rows[0.60]])).row(0, named=True)
    assert (summary["differ"], summary["equivalent"], summary["too_noisy_to_tell"]) == (2, 1, 0)


@pytest.mark.parametrize(
    ("paper", "tau", "low", "high", "verdict", "agrees"),
    [
        # as printed d = 0 (within ±0.1), flipped d = 0.06: both agree (se 0.041), only one is close
        (0.03, 0.03, -0.05, 0.11, "agrees", True),
        # as printed d = 0.03, flipped 0.2: both differ (se 0.010), only the first is within ±0.1
        (0.085, 0.115, 0.098, 0.132, "differs", False),
    ],
)
def test_a_lost_sign_that_decides_only_the_equivalence(paper, tau, low, high, verdict, agrees):
    cell = _one_cell(load_reference("jiang2025"), paper, None, True, "3")
    block, side = cell.row(0, named=True)["column"].split("/")
    mapping = Mapping(
        reward_models={"v1": "a", "v2": "b"}, datasets={block: {"analysis": "g"}}, methods={"OURS": "ours"}
    )
    row = reproduction_table(cell, mapping, tau_rms=_tau_rms(tau, low, high, 40, SIDE_OF_COLUMN[side])).row(
        0, named=True
    )
    assert (row["verdict"], row["agrees"], row["equivalent"]) == (verdict, agrees, None)
    assert row["reading"] == f"{verdict}; within ±0.1 in one sign reading only"


def test_a_table_3_cell_reads_its_own_pair_side_method_and_dataset():
    """Among rows sharing one RM of the pair, the other side, another method or dataset (listed first), the
    cell reads the pair's own row, in either order."""
    cell = load_reference("jiang2025").filter(
        (pl.col("table") == "3") & (pl.col("row") == "v1, v2") & (pl.col("column") == "harmless/Y-")
    )
    mapping = Mapping(
        reward_models={"v1": "a", "v2": "b", "pythia": "c"},
        datasets={"harmless": {"analysis": "g"}},
        methods={"OURS": "ours"},
    )
    rows = [
        ("g", "ours", "minus", "a", "c"),
        ("g", "ours", "minus", "c", "b"),
        ("g", "ours", "minus", "b", "c"),
        ("g", "ours", "plus", "a", "b"),
        ("g", "rand", "minus", "a", "b"),
        ("x", "ours", "minus", "a", "b"),
    ]
    tau_rms = pl.DataFrame(
        [(*r, 0.9, 0.8, 1.0, 40) for r in rows] + [("g", "ours", "minus", "b", "a", 0.5, 0.4, 0.6, 20)],
        schema=["dataset", "method", "side", "rm_a", "rm_b", "tau", "ci_low", "ci_high", "n_attributes"],
        orient="row",
    )
    got = reproduction_table(cell, mapping, tau_rms=tau_rms).row(0, named=True)
    assert (got["run_mean"], got["run_low"], got["run_high"], got["run_n"]) == (0.5, 0.4, 0.6, 20)
    assert got["source"] == "g/ours a vs b"


def test_table_6_reads_one_rms_tau_between_its_sides():
    """Table 6: an RM's τ between its Y+ and Y− rankings on the block's analysis dataset, for OURS's method.
    v2 (b) on harmless: 0.45 [0.35, 0.55] against the paper's 0.49 of uncertain sign: as printed it agrees
    (t -0.78), flipped it does not (t 18): sign-dependent."""
    cells = load_reference("jiang2025").filter(pl.col("table") == "6")
    mapping = Mapping(
        reward_models={"v1": "a", "v2": "b"},
        datasets={"harmless": {"analysis": "g"}, "helpful": {"evaluation": "e"}},
        methods={"OURS": "ours"},
    )
    tau_sides = pl.DataFrame(
        {
            "dataset": ["g", "x", "g", "g"],
            "method": ["rand", "ours", "ours", "ours"],
            "rm": ["b", "b", "a", "b"],
            "tau": [0.9, 0.9, 0.1, 0.45],
            "ci_low": [0.8, 0.8, 0.0, 0.35],
            "ci_high": [1.0, 1.0, 0.2, 0.55],
            "n_attributes": [20, 20, 20, 20],
        }
    )
    table = reproduction_table(cells, mapping, tau_sides=tau_sides)
    valued = table.filter(pl.col("run_mean").is_not_null())
    assert valued.select("row", "column", "run_mean", "run_n", "source").rows() == [
        ("v1", "harmless", 0.1, 20, "g/ours a"),
        ("v2", "harmless", 0.45, 20, "g/ours b"),
    ]
    v2 = valued.row(1, named=True)
    se = ((0.2 / (2 * 1.959963984540054)) ** 2 + 0.005**2) ** 0.5
    assert v2["t"] == pytest.approx(-0.04 / se) and v2["t_flipped"] == pytest.approx(0.94 / se)
    assert (v2["verdict"], v2["reading"]) == ("sign-dependent: agrees only as printed", "sign-dependent")


def test_missing_inputs_leave_their_cells_null_in_the_tables_schema():
    """Only τ between RMs given (no metrics, no probes, though a probe is mapped): one cell has a value, every
    other keeps its row with nulls, in the table's column types."""
    reference = load_reference("jiang2025")
    mapping = Mapping(
        reward_models={"v1": "a", "v2": "b", "Llama OB": "d"},
        datasets={"harmless": {"evaluation": "h", "analysis": "g"}},
        methods={"OURS": "ours"},
        probe="hell",
    )
    table = reproduction_table(reference, mapping, tau_rms=_tau_rms(-0.2, -0.25, -0.15, 40))
    assert dict(table.schema) == COLUMNS and table.height == reference.height
    assert table.select("table", "section", "row", "column", "paper_sd", "sign_uncertain").rows() == (
        reference.select("table", "section", "row", "column", "sd", "sign_uncertain").rows()
    )
    valued = table.filter(pl.col("run_mean").is_not_null())
    assert valued.select("table", "row", "column", "run_low", "run_high").rows() == [
        ("3", "v1, v2", "harmless/Y+", -0.25, -0.15)
    ]


def test_the_mapping_comes_from_the_reproduce_section():
    section = {
        "reward_models": {"v1": "demo-harmless"},
        "datasets": {"harmless": {"evaluation": "harmless"}},
        "methods": {"OURS": "rules"},
    }
    defaults = dict(within_sd=2, min_items=10, max_se=0.1, min_seeds=3, margin=0.05, tau_margin=0.1)
    expected = Mapping(**section, probe=None, **defaults)  # type: ignore[arg-type]
    assert Mapping.from_config(section) == expected
    config = tiny_demo_config()
    config["reproduce"] = {**REPRODUCE, **section, "probe": "rude", "min_items": 20, "tau_margin": 0.2}
    checked = Mapping.from_config(check(config)["reproduce"])
    assert checked == replace(expected, probe="rude", min_items=20, tau_margin=0.2)


REPRODUCE = {"paper": "jiang2025", "reward_models": {}, "datasets": {}, "methods": {}}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("within_sd", 10),  # would make nearly every cell agree
        ("within_sd", 0.5),
        ("max_se", 0.5),  # would give a verdict on a run se of 0.5
        ("min_items", 2),
        ("min_seeds", 1),  # one seed has no sd
        ("margin", 0.5),  # "close" within ±0.5
        ("tau_margin", 1.0),
    ],
)
def test_the_verdicts_settings_are_bounded(key, value):
    config = tiny_demo_config()
    config["reproduce"] = dict(REPRODUCE)
    check(copy.deepcopy(config))  # the section itself is valid
    config["reproduce"][key] = value
    with pytest.raises(ConfigError, match=rf"reproduce\W+{key}"):
        check(config)


def test_foreign_orientation_table_counts_ties_on_the_shared_set_under_the_configured_setting():
    """a and b agree on c1, c2 and c4 (the shared set) and not on c3. The foreign RM f shares c1's y+, orients
    c2 the other way, ties c4 (in the set) and c3 (outside it: not a tie of the shared set)."""
    config = tiny_demo_config()
    config["reward_models"] = {rm: {"backend": "demo", "train_part": "harmless"} for rm in "abf"}
    config["datasets"] = {
        "g": {
            "source": "embedded",
            "part": "harmless",
            "orientation": "shared",
            "shared_rms": ["a", "b"],
            "foreign_rm_orientation": "own",
            "stages": ["analysis"],
        }
    }
    design = Design.from_config(check(config))
    settings = targets.foreign_orientation_settings(design)
    assert settings == {"g": {"shared_rms": ["a", "b"], "foreign_rms": ["f"], "orientation": "own"}}
    comparisons = pl.DataFrame({"comparison_id": ["c1", "c2", "c3", "c4"]})
    originals = {
        ("g", "a"): orient(comparisons, "a", [2.0, 2.0, 2.0, 2.0], [1.0, 1.0, 1.0, 1.0]),
        ("g", "b"): orient(comparisons, "b", [3.0, 3.0, 0.0, 3.0], [1.0, 1.0, 1.0, 1.0]),
        ("g", "f"): orient(comparisons, "f", [2.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]),
    }
    table = foreign_orientation_table(originals, settings)
    assert table.select(
        "rm",
        "foreign_rm_orientation",
        "shared_set",
        "ties",
        "against_agreed",
        "explained",
        "against_agreed_are",
    ).rows() == [("f", "own", 3, 1, 1, 2, "explained by the RM's own y+")]
    settings["g"]["orientation"] = "agreed"
    assert foreign_orientation_table(originals, settings).select("ties", "explained").rows() == [(1, 1)]


def test_paper_config_dry_run_lists_every_part_of_the_paper(workflow_copy, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")  # declared by the config (envvars:), never used by a dry run
    result = workflow_copy.snakemake("-n", "--configfile", "config/paper.yaml")
    out = result.stdout + result.stderr
    jobs = re.findall(
        r"^rule (\w+):\n(?:    .*\n)*?    wildcards: ([^\n]*)\n(?:    .*\n)*?    resources: ([^\n]*)",
        out,
        re.M,
    )
    wildcards = {(rule, w) for rule, w, _ in jobs}
    for dataset in ("hs2", "helpful", "harmless"):  # §3 per RM, App. D variants
        for method in ("two_step", "two_step_only", "two_step_pass", "random"):
            for rm in ("deberta-v1", "deberta-v2", "pythia-1.4b"):
                assert ("perturb", f"dataset={dataset}, method={method}, orienter={rm}") in wildcards
    for dataset in ("hs2_global", "helpful_global", "harmless_global"):  # §4: one shared set
        assert ("perturb", f"dataset={dataset}, method=two_step, orienter=shared") in wildcards
        assert ("analyse_global_sensitivity", f"dataset={dataset}, method=two_step") in wildcards
    assert not any(r == "analyse_global_sensitivity" and "dataset=hs2," in w for r, w in wildcards)
    scoring = {w: res for rule, w, res in jobs if rule == "score_perturbations"}
    for rm in ("offsetbias-8b", "skywork-8b"):  # App. G: the harmless shared set only
        assert "gpu=1" in scoring[f"dataset=harmless_global, rm={rm}"]
        assert f"dataset=harmless, rm={rm}" not in scoring
    assert all("gpu=1" in res for res in scoring.values()) and len(scoring) == 20
    for rule in (
        "categorise",
        "evaluation_tables",
        "figure_rewards_example",
        "reproduction",
        "analyse_probes",
    ):
        assert re.search(rf"^{rule}\s+\d+$", out, re.M), rule
