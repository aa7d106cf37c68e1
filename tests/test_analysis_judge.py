"""The attribute-change judge: parsing, agreement table, and the path through the cached LLM client."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import polars as pl
import pytest

from rmexplain.analysis.judge import agreement_table, judge_prompts, judgements, parse_verdict, run_judge
from rmexplain.analysis.llm_judge import build_complete, judge_llm_config
from rmexplain.llm.base import ChatRequest, Completion, LLMBackend, OnResult, llm_backends
from rmexplain.llm.devserver import ChatServer
from rmexplain.schemas import COMPARISONS, JUDGEMENTS, PERTURBATIONS, conform

LOG = logging.getLogger("test")
ATTRIBUTES = {"appropriateness": "politeness and language style", "clarity": "whether it is clear"}

COMPS = conform(
    pl.DataFrame(
        {
            "comparison_id": ["c1"], "dataset": ["d"], "seed": [0], "source_index": ["0"], "prompt": ["Why?"],
            "chosen": ["Because it is safer."], "rejected": ["No idea."],
        }
    ),
    COMPARISONS,
    "comparisons",
)  # fmt: skip


def perturbation(pid: str, target: str, direction: str, attribute: str | None, text: str) -> dict:
    return {
        "perturbation_id": pid, "comparison_id": "c1", "target": target, "direction": direction,
        "attribute": attribute, "variant": 0, "text": text, "method": "rules", "orienter": "r",
        "focus_words": [], "generator": "test",
    }  # fmt: skip


PERTURBATIONS_FRAME = conform(
    pl.DataFrame(
        [
            perturbation("p1", "chosen", "worse", "appropriateness", "Because it is safer, dummy."),
            perturbation("p2", "rejected", "better", "appropriateness", "Sorry, I have no idea."),
            perturbation("p3", "chosen", "worse", "clarity", "Because, like, it is safer or whatever."),
            perturbation("p4", "rejected", "better", "clarity", "No idea, unfortunately."),
            perturbation("p5", "rejected", "better", None, "random edit"),  # unconditioned: not judged
        ]
    ),
    PERTURBATIONS,
    "perturbations",
)


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ("Worse", "worse"),
        ("better.", "better"),
        ("  SAME ", "same"),
        ("Response B is worse than A; not better.", "worse"),  # the first verdict word counts
        ("sameness", None),  # whole words only
        ("I cannot tell", None),
        ("", None),
    ],
)
def test_parse_verdict(answer, verdict):
    assert parse_verdict(answer) == verdict


def test_prompts_carry_attribute_description_and_both_texts():
    from rmexplain.analysis.judge import judge_inputs

    rows = judge_inputs(PERTURBATIONS_FRAME, COMPS, ATTRIBUTES, None)
    assert sorted(rows["perturbation_id"].to_list()) == ["p1", "p2", "p3", "p4"]
    prompt = judge_prompts(rows.filter(pl.col("perturbation_id") == "p1"), ATTRIBUTES)[0]
    assert (
        "Response A: Because it is safer." in prompt and "Response B: Because it is safer, dummy." in prompt
    )
    assert "politeness and language style" in prompt and "in terms of appropriateness" in prompt
    capped = judge_inputs(PERTURBATIONS_FRAME, COMPS, ATTRIBUTES, 1)
    assert capped.group_by("attribute").len().sort("attribute")["len"].to_list() == [1, 1]


def test_agreement_table_hand_computed():
    rows = PERTURBATIONS_FRAME.filter(pl.col("attribute").is_not_null()).sort("perturbation_id")
    answers = ["worse", "same", "better", "??"]  # p1 agrees, p2 unchanged, p3 opposite, p4 unparsed
    judged = judgements(rows, answers, "d", "rules", "r", "test")
    conform(judged, JUDGEMENTS, "judgements")
    assert judged["agrees"].to_list() == [True, False, False, None]
    table = {r["attribute"]: r for r in agreement_table(judged).iter_rows(named=True)}
    app, cla = table["appropriateness"], table["clarity"]
    assert (app["n_total"], app["n_judged"], app["agreement"], app["share_unchanged"]) == (2, 2, 0.5, 0.5)
    assert (cla["n_judged"], cla["n_unparsed"], cla["agreement"], cla["share_opposite"]) == (1, 1, 0.0, 0.5)
    assert cla["share_unparsed"] == 0.5
    with pytest.raises(ValueError, match="2 answers for 4 prompts"):
        judgements(rows, answers[:2], "d", "rules", "r", "test")


@llm_backends.register("judge-test")
class KeywordJudge(LLMBackend):
    """A deterministic chat backend for this test: 'worse' when response B is rude, else 'better'."""

    def __init__(self, config: dict) -> None:
        self.model_id = f"judge-test:{config['model']}"
        self.calls = 0

    def complete(self, requests: Sequence[ChatRequest], on_result: OnResult) -> None:
        for i, request in enumerate(requests):
            prompt = request.messages[-1][1]
            b = prompt.split("Response B: ", 1)[1].split("\n", 1)[0]
            rude = any(word in b for word in ("dummy", "whatever"))
            on_result(
                i, Completion(text="Worse." if rude else "Better.", prompt_tokens=10, completion_tokens=1)
            )


def test_judge_through_the_cached_client(tmp_path):
    llm = {"backend": "judge-test", "model": "kw", "cache_dir": str(tmp_path / "cache")}
    complete, chat = build_complete(llm, {}, LOG)
    model = chat.model_id
    judged = run_judge(PERTURBATIONS_FRAME, COMPS, ATTRIBUTES, complete, ("d", "rules", "r"), model)
    assert model == "judge-test:kw"
    assert dict(zip(judged["perturbation_id"], judged["verdict"], strict=True)) == {
        "p1": "worse", "p2": "better", "p3": "worse", "p4": "better",
    }  # fmt: skip
    assert judged["agrees"].all()


def test_judge_over_http_with_an_openai_compatible_server(tmp_path):
    """The real openai client against the project's dev server, which answers verdicts in sentences
    ("Worse. Response B is ruder.", "I would say better."): parsing runs on what the client returns."""
    with ChatServer() as server:
        llm = {"backend": "openai", "model": "dev", "base_url": server.base_url, "api_key_env": None,
               "cache_dir": str(tmp_path / "cache")}  # fmt: skip
        complete, _ = build_complete(llm, {"sampling": {"max_tokens": 8}}, LOG)
        first = run_judge(PERTURBATIONS_FRAME, COMPS, ATTRIBUTES, complete, ("d", "rules", "r"), "dev")
        calls = server.stats.requests
        again = run_judge(PERTURBATIONS_FRAME, COMPS, ATTRIBUTES, complete, ("d", "rules", "r"), "dev")
        assert server.stats.requests == calls == 4  # the rerun is answered from the cache
    assert first.equals(again)
    assert dict(zip(first["perturbation_id"], first["verdict"], strict=True)) == {
        "p1": "worse", "p2": "better", "p3": "worse", "p4": "better",
    }  # fmt: skip
    assert first.filter(pl.col("perturbation_id") == "p1")["answer"].item() == "Worse. Response B is ruder."
    table = agreement_table(first)
    assert table["n_unparsed"].to_list() == [0, 0] and table["agreement"].to_list() == [1.0, 1.0]


def test_judge_llm_overrides_the_llm_section():
    merged = judge_llm_config({"backend": "openai", "model": "gpt-4o"}, {"llm": {"model": "gpt-4o-mini"}})
    assert merged == {"backend": "openai", "model": "gpt-4o-mini"}


def test_judge_needs_an_llm_section():
    from rmexplain.llm.base import LLMError

    with pytest.raises(LLMError, match="needs an LLM"):
        build_complete(None, {}, LOG)


def test_judge_table_and_figure_files(tmp_path):
    from rmexplain.analysis.stages import run_judge_figure, run_table
    from rmexplain.schemas import write_table

    rows = PERTURBATIONS_FRAME.filter(pl.col("attribute").is_not_null()).sort("perturbation_id")
    judged = judgements(rows, ["worse", "same", "better", "??"], "d", "rules", "r", "test")
    write_table(judged, tmp_path / "j.parquet", JUDGEMENTS, "judgements")
    outputs = [str(tmp_path / f"attribute_judge.{ext}") for ext in ("csv", "md", "html")]
    run_table("attribute_judge", [str(tmp_path / "j.parquet")], outputs, level=0.9)
    md = (tmp_path / "attribute_judge.md").read_text()
    assert "agreement [90% CI]" in md and "| d | rules | appropriateness | 0.50 [" in md
    run_judge_figure([str(tmp_path / "j.parquet")], 0.9, {"dpi": 60}, str(tmp_path / "judge.png"))
    assert (tmp_path / "judge.png").stat().st_size > 5_000
