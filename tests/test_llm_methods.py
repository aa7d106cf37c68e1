"""LLM perturbation methods, prompts, parsing, orientation and config plumbing.

LLM calls go over real HTTP to the scripted OpenAI-compatible server ``rmexplain.llm.devserver``.
The data builders here are shared with the other ``test_llm_*`` modules.
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path

import polars as pl
import pytest
import yaml
from snakemake.utils import update_config

from rmexplain.config import ConfigError, check
from rmexplain.design import Design
from rmexplain.llm.devserver import UNPARSEABLE_STEP1, ChatServer
from rmexplain.llm.prompts import TemplateError, load_template
from rmexplain.markup import md_cell
from rmexplain.perturb.base import PerturbTask
from rmexplain.perturb.discover import count_attributes, parse_attribute_list
from rmexplain.perturb.llm_methods import (
    TwoStepPrompts,
    clean_answer,
    parse_step1,
    step1_prompt,
    step2_prompt,
)
from rmexplain.perturb.skips import SkipRecorder
from rmexplain.perturb.stages import orientation, perturb_to_parquet, run_skips_table
from rmexplain.resources import required_envvars
from rmexplain.targets import discovery_targets

REPO = Path(__file__).resolve().parents[1]
LOG = logging.getLogger("test_llm")
ATTRIBUTES = {
    "harmlessness": "whether or not the response is relevant to any potentially unsafe behaviours",
    "clarity": "whether or not the response is clear and easy to read",
    "avoid-to-answer": "whether or not the response is avoiding to give direct answers to the question",
}
PAIRS = [
    ("How do I bake bread?", "Mix flour, water and yeast, knead it, and bake it at 220C.", "Buy bread."),
    ("What is two plus two?", "Two plus two is four.", "It is five, obviously."),
    (
        "How can I pick my neighbour's lock?",
        "I can't help with entering someone else's home.",
        "Use a tension wrench.",
    ),
    ("Tell me a joke.", "Why did the chicken cross the road? To reach the other side.", "No jokes today."),
    (
        "How do I stay calm before an exam?",
        "Breathe slowly, sleep well and review your notes.",
        "Panic is normal.",
    ),
    (
        "Is it safe to mix bleach and ammonia?",
        "No. It releases toxic chloramine gas.",
        "Sure, it cleans better.",
    ),
]


def write_inputs(
    directory: Path, rewards: list[tuple[float, float]] | None = None, rm: str = "rm-a", name: str = "scores"
) -> tuple[Path, Path]:
    """COMPARISONS and ORIGINAL_SCORES tables for PAIRS; the third comparison is a tie by default."""
    directory.mkdir(parents=True, exist_ok=True)
    comps = pl.DataFrame(
        {
            "comparison_id": [f"toy-s0-{i}" for i in range(len(PAIRS))],
            "dataset": ["toy"] * len(PAIRS),
            "seed": [0] * len(PAIRS),
            "source_index": [str(i) for i in range(len(PAIRS))],
            "prompt": [p for p, _, _ in PAIRS],
            "chosen": [c for _, c, _ in PAIRS],
            "rejected": [r for _, _, r in PAIRS],
        }
    )
    rewards = rewards or [(1.5, -0.5), (2.0, 1.0), (0.7, 0.7), (0.2, 0.9), (1.1, 0.4), (3.0, -2.0)]
    plus = [None if c == r else ("chosen" if c > r else "rejected") for c, r in rewards]
    scores = pl.DataFrame(
        {
            "comparison_id": comps["comparison_id"],
            "rm": [rm] * len(PAIRS),
            "reward_chosen": [c for c, _ in rewards],
            "reward_rejected": [r for _, r in rewards],
            "plus_target": plus,
            "agrees_with_human": [None if p is None else p == "chosen" for p in plus],
            "truncated_chosen": [False] * len(PAIRS),
            "truncated_rejected": [False] * len(PAIRS),
            "max_length": [512] * len(PAIRS),
        }
    )
    comps_path, scores_path = directory / "comparisons.parquet", directory / f"{name}.parquet"
    comps.write_parquet(comps_path)
    scores.write_parquet(scores_path)
    return comps_path, scores_path


def server_llm(server: ChatServer, cache_dir: Path, **extra: object) -> dict:
    """An ``llm`` section for the dev server (no key, short timeout for its slow faults)."""
    return {
        "backend": "openai",
        "model": "dev",
        "base_url": server.base_url,
        "api_key_env": None,
        "timeout": 1.0,
        "concurrency": 8,
        "cache_dir": str(cache_dir),
        **extra,
    }


def run_method(
    tmp: Path, method: str, llm: dict, settings: dict | None = None, **kwargs: object
) -> pl.DataFrame:
    comps, scores = write_inputs(tmp / "in")
    return perturb_to_parquet(
        comparisons=str(comps),
        scores=str(scores),
        method=method,
        orienter="rm-a",
        settings=settings or {},
        attributes=ATTRIBUTES,
        output=str(tmp / "out" / f"{method}.parquet"),
        skipped=str(tmp / "out" / f"{method}.skips.parquet"),
        log=LOG,
        llm=llm,
        **kwargs,
    )


TASK = PerturbTask(
    comparison_id="c",
    target="chosen",
    direction="worse",
    prompt="How do I bake bread?",
    response="Mix flour and water.",
    other="Buy bread.",
    score=1.23456,
    other_score=-0.5,
)


def test_parse_step1_accepts_bullets_bold_and_case():
    answer = "Here you go:\n- **Harmlessness**: bake, 220C\n2. clarity: Mix, flour.\nAvoid to answer: `Mix`\n"
    result = parse_step1(answer, list(ATTRIBUTES))
    assert result.words == {
        "harmlessness": ["bake", "220C"],
        "clarity": ["Mix", "flour"],
        "avoid-to-answer": ["Mix"],
    }
    assert result.failures == {}


def test_parse_step1_records_every_failure_with_a_reason():
    none = parse_step1(UNPARSEABLE_STEP1, list(ATTRIBUTES))
    assert none.words == {} and set(none.failures) == set(ATTRIBUTES)
    assert all("no 'attribute: words' line" in r for r in none.failures.values())
    partial = parse_step1("clarity: Mix\nharmlessness:\nverbosity: long", list(ATTRIBUTES))
    assert partial.words == {"clarity": ["Mix"]}
    assert partial.failures == {
        "harmlessness": "attribute listed with no words in the step-1 answer",
        "avoid-to-answer": "attribute missing from the step-1 answer",
    }


def test_clean_answer_strips_labels_and_wrapping_quotes():
    assert clean_answer('  Modified response A: "Knead it well."  ') == "Knead it well."
    assert clean_answer("**Perturbed text:** fine") == "fine"
    assert clean_answer('He said "hi" twice') == 'He said "hi" twice'
    assert clean_answer("   ") == ""


def test_prompts_follow_the_paper_and_the_focus_ablation():
    prompts = {f: TwoStepPrompts.load(f, {}) for f in ("center", "only", "pass")}
    one = step1_prompt(TASK, list(ATTRIBUTES), prompts["center"].step1)
    assert 'The question is "How do I bake bread?".' in one
    assert 'The model assigned a score 1.235 for response A: "Mix flour and water.".' in one
    assert "score -0.5 for response B" in one
    assert (
        "assign a better score for response A than response B are harmlessness, clarity, avoid-to-answer."
        in one
    )
    texts = {
        f: step2_prompt(TASK, "clarity", ATTRIBUTES["clarity"], ["Mix", "flour"], p, p.focus)
        for f, p in prompts.items()
    }
    center = texts["center"]
    assert "- The modified response A becomes a worse response to the question than response B." in center
    assert (
        "- Negatively change the semantic meaning of response A by making it worse in terms of clarity."
        in center
    )
    assert "This attribute concerns whether or not the response is clear and easy to read." in center
    assert (
        "- The changes made to response A should be centered around the following words: Mix, flour\n"
        in center
    )
    assert center.endswith("- Only output the modified response A.")
    only = (
        "can only be modified by deleting, replacing, or inserting words, at the locations of all or a subset"
    )
    assert only in texts["only"]
    assert "centered around" not in texts["pass"] and "can only be modified" not in texts["pass"]
    better = PerturbTask(**{**TASK.__dict__, "direction": "better"})
    text = step2_prompt(better, "clarity", "d", ["Mix"], prompts["center"], prompts["center"].focus)
    assert (
        "- Positively change" in text
        and "becomes a better response" in text
        and "assign a worse score" in text
    )


def test_template_errors_name_the_file_and_field(tmp_path):
    bad = tmp_path / "random.txt"
    bad.write_text("Perturb {respons}.")
    with pytest.raises(TemplateError, match=r"random.txt: unknown field\(s\) \['respons'\]"):
        load_template("random", str(bad))
    with pytest.raises(TemplateError, match="does not exist"):
        load_template("random", str(tmp_path / "missing.txt"))
    braces = tmp_path / "braces.txt"
    braces.write_text("Keep {{literal}} braces around {response}.")
    assert load_template("random", str(braces)).render(response="x") == "Keep {literal} braces around x."


@pytest.mark.parametrize("on_unparsed", ["skip", "pass"])
def test_two_step_keeps_unparsed_step1_answers_as_recorded_skips(tmp_path, on_unparsed):
    with ChatServer(garble_step1=2) as server:
        frame = run_method(
            tmp_path, "two_step", server_llm(server, tmp_path / "cache"), {"on_unparsed": on_unparsed}
        )
    skips = pl.read_parquet(tmp_path / "out" / "two_step.skips.parquet")
    step1 = skips.filter(pl.col("stage") == "step1")
    garbled = step1.select("comparison_id", "target").unique().height
    assert 0 < garbled < 10, "the server garbles about half of the 10 step-1 answers"
    assert step1.height == garbled * len(ATTRIBUTES)
    assert set(step1["raw"]) == {UNPARSEABLE_STEP1}
    assert set(step1["reason"]) == {
        "no 'attribute: words' line for any configured attribute in the step-1 answer"
    }
    assert skips.filter(pl.col("stage") == "orientation").height == 1  # the tied comparison
    all_slots = 5 * 2 * len(ATTRIBUTES)
    if on_unparsed == "skip":
        assert frame.height == all_slots - step1.height
        assert frame["focus_words"].list.len().min() > 0
    else:
        assert frame.height == all_slots
        fallback = frame.filter(pl.col("focus_words").list.len() == 0)
        assert fallback.height == step1.height
        assert fallback["generator"].str.ends_with("focus=pass").all()
    # Step 2 centres on the step-1 words: the dev server upper-cases the first focus word.
    focused = frame.filter(pl.col("focus_words").list.len() > 0)
    assert all(row["focus_words"][0].upper() in row["text"] for row in focused.iter_rows(named=True))
    assert set(frame["direction"]) == {"worse", "better"}


def test_random_gives_n_distinct_variants_and_reruns_from_cache(tmp_path):
    with ChatServer() as server:
        llm = server_llm(server, tmp_path / "cache")
        frame = run_method(tmp_path, "random", llm, {"n": 4})
        first = server.stats.requests
        again = run_method(tmp_path, "random", llm, {"n": 4})
        assert server.stats.requests == first == 5 * 2 * 4
    assert frame.height == 5 * 2 * 4
    assert frame["attribute"].null_count() == frame.height
    per_response = frame.group_by("comparison_id", "target").agg(
        pl.col("text").n_unique(), pl.col("variant").n_unique()
    )
    assert (per_response["text"] == 4).all() and (per_response["variant"] == 4).all()
    assert again.equals(frame)


@pytest.mark.parametrize(
    ("method", "settings", "stage", "key"),
    [
        ("random", {"n": 3, "sampling": {"max_tokens": 8}}, "generate", "sampling"),
        ("two_step", {"step2_sampling": {"max_tokens": 8}}, "step2", "step2_sampling"),
    ],
)
def test_answers_cut_off_at_max_tokens_are_skipped_never_used(tmp_path, caplog, method, settings, stage, key):
    with ChatServer() as server, caplog.at_level(logging.INFO, logger=LOG.name):
        frame = run_method(tmp_path, method, server_llm(server, tmp_path / "cache"), settings)
    skips = pl.read_parquet(tmp_path / "out" / f"{method}.skips.parquet")
    cut = skips.filter(pl.col("reason").str.contains("finish_reason 'length'"))
    slots = 5 * 2 * (3 if method == "random" else len(ATTRIBUTES))
    assert 0 < cut.height < slots, "the longer responses' answers stop at 8 words, the short ones do not"
    assert cut.height + frame.height == slots
    assert set(cut["stage"]) == {stage}
    assert set(cut["reason"]) == {
        f"LLM answer cut off at max_tokens=8 (finish_reason 'length'); raise "
        f"perturb.<method or variant>.{key}.max_tokens or llm.sampling.max_tokens"
    }
    assert (cut["raw"].str.split(" ").list.len() == 8).all()  # the cut text is kept for inspection
    ending = r"\(variant \d+\)$" if method == "random" else r"\]$"
    assert frame["text"].str.contains(ending).all(), "only complete answers become perturbations"
    assert f"{key}.max_tokens or llm.sampling.max_tokens" in caplog.text
    assert f"{cut.height} answers stopped at max_tokens; raise llm.sampling.max_tokens" in caplog.text
    # The report's skips table counts them per job and reason, the setting to raise included.
    pages = {ext: str(tmp_path / f"perturbation_skips.{ext}") for ext in ("csv", "md", "html")}
    run_skips_table([str(tmp_path / "out" / f"{method}.skips.parquet")], [["d", method, "rm-a"]], pages, LOG)
    table = pl.read_csv(pages["csv"]).filter(pl.col("reason").str.contains("finish_reason 'length'"))
    assert table.select("dataset", "method", "orienter", "stage", "skipped", "comparisons").rows() == [
        ("d", method, "rm-a", stage, cut.height, cut["comparison_id"].n_unique())
    ]
    assert md_cell(table["reason"][0]) in Path(pages["md"]).read_text()  # its "<" escaped as Markdown
    assert "cut off at max_tokens=8 (finish_reason" in Path(pages["html"]).read_text()


def test_step1_answer_cut_off_gives_no_focus_words(tmp_path):
    with ChatServer() as server:
        llm = server_llm(server, tmp_path / "cache")
        frame = run_method(tmp_path, "two_step", llm, {"step1_sampling": {"max_tokens": 4}})
    skips = pl.read_parquet(tmp_path / "out" / "two_step.skips.parquet").filter(pl.col("stage") == "step1")
    assert skips.height == 5 * 2 * len(ATTRIBUTES) and frame.height == 0
    assert skips["reason"].str.starts_with("step-1 answer cut off at max_tokens=4").all()


def test_shared_orientation_keeps_agreed_comparisons_with_the_first_rms_scores(tmp_path):
    _, first = write_inputs(tmp_path, rm="rm-a", name="a")
    rewards_b = [(9.0, 0.0), (0.0, 9.0), (1.0, 0.0), (0.0, 1.0), (5.0, 5.0), (2.0, 1.0)]
    _, second = write_inputs(tmp_path, rewards_b, rm="rm-b", name="b")
    skips = SkipRecorder()
    ids = [f"toy-s0-{i}" for i in range(len(PAIRS))]
    oriented = orientation([str(first), str(second)], ids, skips, LOG)
    # 0: agree; 1: disagree; 2: tie under rm-a; 3: agree (both rejected); 4: tie under rm-b; 5: agree
    assert oriented["comparison_id"].to_list() == ["toy-s0-0", "toy-s0-3", "toy-s0-5"]
    assert oriented["reward_chosen"].to_list() == [1.5, 0.2, 3.0]  # rm-a's rewards
    reasons = {r.comparison_id: r.reason for r in skips.records}
    assert reasons == {
        "toy-s0-1": "the shared RMs disagree on which response is y+",
        "toy-s0-2": "tie in original rewards under rm-a",
        "toy-s0-4": "tie in original rewards under rm-b",
    }


def test_discovery_parsing_and_counts():
    assert parse_attribute_list("Clarity, relevance,  Factual accuracy.\n- Harmlessness; clarity") == [
        "clarity",
        "relevance",
        "factual-accuracy",
        "harmlessness",
    ]
    counts = count_attributes([["clarity", "detail"], ["clarity"], []], ["clarity", "verbosity"])
    assert counts.to_dicts() == [
        {"attribute": "clarity", "n_comparisons": 2, "share": 1.0, "configured": True},
        {"attribute": "detail", "n_comparisons": 1, "share": 0.5, "configured": False},
    ]


def _design(config: dict) -> Design:
    return Design.from_config(check(copy.deepcopy(config)))


def test_envvars_targets_and_config_checks():
    demo = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    paper = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    assert required_envvars(_design(demo)) == []  # the demo needs no key
    assert required_envvars(_design(paper)) == ["OPENAI_API_KEY"]
    merged = copy.deepcopy(demo)  # a --configfile is merged over config/config.yaml
    update_config(merged, paper)
    assert merged["llm"]["base_url"] is None  # OpenAI itself, not the demo's local server
    local = copy.deepcopy(paper)
    local["llm"]["api_key_env"] = None
    assert required_envvars(_design(local)) == []
    assert discovery_targets(_design(demo)) == []
    assert "results/discovery/hs2/deberta-v1/attributes.csv" in discovery_targets(_design(paper))
    prompts = _design(paper).method("two_step").prompt_files()
    assert set(prompts) == {"prompt_step1", "prompt_step2", "prompt_focus_center"}
    no_llm = copy.deepcopy(paper)
    del no_llm["llm"]
    with pytest.raises(ConfigError, match=r"llm\.model"):
        check(no_llm)
    wrong_rm = copy.deepcopy(paper)
    wrong_rm["perturb"]["discover"]["rm"] = "nobody"
    with pytest.raises(ConfigError, match=r"perturb\.discover\.rm: 'nobody'"):
        check(wrong_rm)
    missing = copy.deepcopy(paper)
    missing["perturb"]["random"]["prompt"] = "nowhere.txt"
    with pytest.raises(ConfigError, match=r"perturb\.random: prompt template 'prompt_random'"):
        check(missing)
