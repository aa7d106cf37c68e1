"""Inputs over an RM's token limit: which are cut, the ``overlong`` policy (truncate / skip / error) in the
scoring stage, what categorisation makes of skipped texts, and the truncation table."""

from __future__ import annotations

import logging
from pathlib import Path

import polars as pl
import pytest

from rmexplain.config import ConfigError, check
from rmexplain.explanations.categorise import categorise
from rmexplain.perturb.base import Draft, drafts_to_frame
from rmexplain.perturb.skips import SkipRecorder
from rmexplain.perturb.stages import orientation
from rmexplain.schemas import COMPARISONS, ORIGINAL_SCORES, PERTURBATIONS, REWARDS, write_table
from rmexplain.score.base import LengthCheck, RewardModelBackend, ScoringError, build_scorer
from rmexplain.score.lengths import OverlongError, length_counts, score_within_limit, truncation_table
from rmexplain.score.specs import parse_spec
from rmexplain.score.stages import run_truncation_table, score_originals, score_stage

LOG = logging.getLogger("test")
LONG = "a very long answer that goes on " * 12
LIMIT = 40


pytestmark = pytest.mark.usefixtures("one_thread")  # the tiny RMs' fixtures: tests/conftest.py


def llama_spec(llama_dir: str, **keys: object) -> dict:
    return {"backend": "transformers", "model": llama_dir, "device": "cpu", "max_length": LIMIT, **keys}


def test_deberta_cut_flags_follow_the_pair_length_at_the_limit(deberta_dir):
    """A pair is cut iff its ``tokenizer(prompt, response)`` ids are more than max_length: the boundary by
    hand (exactly at the limit is kept, one token over is cut)."""
    spec = {"backend": "transformers", "model": deberta_dir, "device": "cpu", "input_format": "pair"}
    tokenizer = build_scorer("tiny-deberta", spec).tokenizer
    prompts = ["How do I bake bread?", "Tell me a joke.", "Why?"]
    responses = ["Knead and bake.", "word " * 30, "Because."]
    lengths = [len(tokenizer(p, r)["input_ids"]) for p, r in zip(prompts, responses, strict=True)]
    limit = lengths[0]
    assert lengths[1] > limit > lengths[2]  # the crafted input: one over, one at, one under
    check = build_scorer("tiny-deberta", {**spec, "max_length": limit}).length_check(prompts, responses)
    assert (check.cut, check.limit, check.policy) == ([False, True, False], limit, "truncate")
    tighter = build_scorer("tiny-deberta", {**spec, "max_length": limit - 1})
    assert tighter.length_check(prompts, responses).cut == [True, True, False]


def _comparisons(
    tmp_path, chosen=("short one", LONG, "fine"), rejected=("short two", "brief", "also fine")
) -> str:
    n = len(chosen)
    frame = pl.DataFrame(
        {
            "comparison_id": [f"c{i + 1}" for i in range(n)],
            "dataset": ["d"] * n,
            "seed": [0] * n,
            "source_index": [str(i + 1) for i in range(n)],
            "prompt": ["hi", "hello", "hey", "yo"][:n],
            "chosen": list(chosen),
            "rejected": list(rejected),
        }
    )
    path = tmp_path / "comparisons.parquet"
    write_table(frame, path, COMPARISONS, "comparisons")
    return str(path)


def test_truncate_scores_every_original_and_records_the_cut(llama_dir, tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        frame = score_originals(_comparisons(tmp_path), "tiny", llama_spec(llama_dir), {}, LOG)
    assert (
        "tiny: 1 of 6 inputs are over its 40-token limit: scored cut (overlong: truncate)" in caplog.messages
    )
    assert frame["truncated_chosen"].to_list() == [False, True, False]
    assert frame["truncated_rejected"].to_list() == [False, False, False]
    assert frame["max_length"].to_list() == [LIMIT] * 3
    assert frame["reward_chosen"].null_count() == 0 and frame["plus_target"].null_count() == 0


def test_skip_leaves_cut_originals_unscored_and_counts_them_apart_from_ties(llama_dir, tmp_path, caplog):
    comparisons = _comparisons(tmp_path)
    with caplog.at_level(logging.INFO):
        frame = score_originals(comparisons, "tiny", llama_spec(llama_dir, overlong="skip"), {}, LOG)
    assert frame["reward_chosen"].is_null().to_list() == [False, True, False]
    assert frame["reward_rejected"].null_count() == 0
    assert frame["plus_target"].is_null().to_list() == [False, True, False]
    assert "3 comparisons, 0 ties, 1 skipped for length" in caplog.text
    assert (
        "tiny: 1 of 6 inputs are over its 40-token limit: left unscored (overlong: skip)" in caplog.messages
    )
    write_table(frame, tmp_path / "tiny.parquet", ORIGINAL_SCORES, "original scores")
    skips = SkipRecorder()
    kept = orientation(str(tmp_path / "tiny.parquet"), ["c1", "c2", "c3"], skips, LOG)
    assert kept["comparison_id"].to_list() == ["c1", "c3"]
    assert [(s.comparison_id, s.reason) for s in skips.records] == [
        ("c2", "an original over the token limit of tiny (skipped)")
    ]


def test_all_originals_skipped_is_not_called_a_tie(llama_dir, tmp_path):
    frame = pl.DataFrame(
        {
            "comparison_id": ["c1"],
            "dataset": ["d"],
            "seed": [0],
            "source_index": ["1"],
            "prompt": ["hi"],
            "chosen": [LONG],
            "rejected": ["short"],
        }
    )
    write_table(frame, tmp_path / "one.parquet", COMPARISONS, "comparisons")
    with pytest.raises(
        ValueError, match=r"1 have an original over its 40-token limit.*overlong: skip"
    ) as err:
        score_originals(
            str(tmp_path / "one.parquet"), "tiny", llama_spec(llama_dir, overlong="skip"), {}, LOG
        )
    assert "exactly equal" not in str(err.value)


def test_error_names_the_rm_the_file_the_ids_and_the_setting(llama_dir, tmp_path):
    comparisons = _comparisons(tmp_path)
    with pytest.raises(OverlongError) as err:
        score_originals(comparisons, "tiny", llama_spec(llama_dir, overlong="error"), {}, LOG)
    message = str(err.value)
    assert "reward_models.tiny: 1 of 6 inputs from " + comparisons in message
    assert "40-token limit (first: c2 (chosen))" in message
    assert "reward_models.tiny.overlong: truncate" in message


def test_error_names_the_first_five_of_more_cut_inputs(llama_dir, tmp_path):
    comparisons = _comparisons(tmp_path, chosen=(LONG, LONG, LONG, "fine"), rejected=(LONG, LONG, LONG, "ok"))
    with pytest.raises(OverlongError) as err:
        score_originals(comparisons, "tiny", llama_spec(llama_dir, overlong="error"), {}, LOG)
    assert str(err.value) == (
        f"reward_models.tiny: 6 of 8 inputs from {comparisons} are over the RM's 40-token limit (first: "
        "c1 (chosen), c2 (chosen), c3 (chosen), c1 (rejected), c2 (rejected)); set "
        "reward_models.tiny.overlong: truncate to score them cut, or skip to leave them unscored (counted)"
    )


class OneRewardShort(RewardModelBackend):
    """A backend that sees its token limit but returns one reward too few (a broken plugin backend)."""

    def __init__(self, name: str, spec: dict, **artifacts: object) -> None:
        self.policy = spec["overlong"]

    def length_check(self, prompts, responses) -> LengthCheck:
        return LengthCheck([len(r) > 10 for r in responses], 10, self.policy)

    def score(self, prompts, responses) -> list[float]:
        return [float(len(r)) for r in responses][:-1]


@pytest.mark.parametrize("policy", ["truncate", "skip"])
def test_too_few_rewards_from_a_backend_are_an_error_not_skips(policy):
    scorer = OneRewardShort("short", {"overlong": policy})
    kept = 3 if policy == "truncate" else 2
    message = rf"^reward_models.short: its backend returned {kept - 1} rewards for {kept} inputs from f$"
    with pytest.raises(ScoringError, match=message):
        score_within_limit(scorer, ["p"] * 3, ["a", "a long answer", "b"], ["x", "y", "z"], "short", "f", LOG)


def test_too_few_rewards_from_a_backend_that_cannot_see_its_tokens_are_an_error():
    class Blind(OneRewardShort):
        def length_check(self, prompts, responses) -> LengthCheck:
            return LengthCheck.unknown()

    blind = Blind("blind", {"overlong": None})
    message = r"^reward_models.blind: its backend returned 1 rewards for 2 inputs from f$"
    with pytest.raises(ScoringError, match=message):
        score_within_limit(blind, ["p"] * 2, ["a", "b"], ["x", "y"], "blind", "f", LOG)


def test_skipped_perturbations_get_no_reward_and_are_left_out_of_categorisation(llama_dir, tmp_path, caplog):
    comparisons_path = _comparisons(tmp_path)
    comparisons = pl.read_parquet(comparisons_path)
    drafts = [
        Draft("c1", "chosen", "worse", "clarity", 0, "short edit"),
        Draft("c1", "rejected", "better", "clarity", 0, LONG),
        Draft("c3", "chosen", "worse", "clarity", 0, "fine edit"),
    ]
    perturbations = drafts_to_frame(drafts, "rules", "tiny")
    write_table(perturbations, tmp_path / "p.parquet", PERTURBATIONS, "perturbations")
    spec = llama_spec(llama_dir, overlong="skip")
    table = [str(tmp_path / "p.parquet")]
    rewards = score_stage("perturbations", comparisons_path, table, "tiny", spec, {}, LOG)
    assert rewards["reward"].is_null().to_list() == [False, True, False]
    assert rewards["truncated"].to_list() == [False, True, False]
    originals = score_originals(comparisons_path, "tiny", spec, {}, LOG)
    with caplog.at_level(logging.WARNING):
        out = categorise(
            comparisons, originals, perturbations, rewards, "d", "tiny", "rules", LOG,
            orienting=[originals], orientation="agreed",
        )  # fmt: skip
    assert out["perturbation_id"].to_list() == [perturbations["perturbation_id"][i] for i in (0, 2)]
    cut = "1 perturbations skipped: their text is over the RM's token limit (overlong: skip)"
    assert cut in caplog.messages
    # A text with no row at all is still a stale rewards table, not a skip.
    with pytest.raises(ValueError, match="rerun score_perturbations"):
        categorise(
            comparisons, originals, perturbations, rewards.head(2), "d", "tiny", "rules", LOG,
            orienting=[originals], orientation="agreed",
        )  # fmt: skip


def test_a_python_rm_reports_its_cuts_as_unknown(tmp_path, caplog):
    comparisons = _comparisons(tmp_path)
    (tmp_path / "rms.py").write_text(
        "def length(prompts, responses):\n    return [len(r) for r in responses]\n"
    )
    spec = {"backend": "python", "callable": f"{tmp_path / 'rms.py'}:length"}
    with caplog.at_level(logging.INFO):
        frame = score_originals(comparisons, "py", spec, {}, LOG)
    assert (
        "py: its backend cannot tell which inputs it cuts; truncation counts are unknown" in caplog.messages
    )
    assert frame["truncated_chosen"].null_count() == 3 and frame["max_length"].null_count() == 3
    write_table(frame, tmp_path / "py.parquet", ORIGINAL_SCORES, "original scores")
    outputs = {ext: str(tmp_path / f"truncation.{ext}") for ext in ("csv", "md", "html")}
    run_truncation_table(
        [["d", "py", "originals", str(tmp_path / "py.parquet")]], {"py": "truncate"}, outputs, LOG
    )
    table = pl.read_csv(outputs["csv"])
    assert table.select("texts", "truncated", "skipped", "policy").rows() == [(6, None, 0, None)]
    assert "| d | py | originals | – | none known | 6 | unknown | 0 |" in Path(outputs["md"]).read_text()


def test_truncation_table_counts_by_hand(tmp_path):
    originals = pl.DataFrame(
        {
            "comparison_id": ["c1", "c2"],
            "rm": ["a", "a"],
            "reward_chosen": [1.0, None],
            "reward_rejected": [0.0, 0.5],
            "plus_target": ["chosen", None],
            "agrees_with_human": [True, None],
            "truncated_chosen": [False, True],
            "truncated_rejected": [True, False],
            "max_length": [512, 512],
        }
    )
    rewards = pl.DataFrame(
        {
            "text_id": ["t1", "t2", "t3"],
            "rm": ["a"] * 3,
            "reward": [None, 1.0, None],
            "truncated": [True, False, True],
            "max_length": [512] * 3,
        }
    )
    write_table(originals, tmp_path / "o.parquet", ORIGINAL_SCORES, "original scores")
    write_table(rewards, tmp_path / "r.parquet", REWARDS, "rewards")
    parts = [
        ["hs2", "a", "originals", str(tmp_path / "o.parquet")],
        ["hs2", "a", "perturbations", str(tmp_path / "r.parquet")],
    ]
    outputs = {ext: str(tmp_path / f"truncation.{ext}") for ext in ("csv", "md", "html")}
    run_truncation_table(parts, {"a": "skip"}, outputs, LOG)
    table = pl.read_csv(outputs["csv"])
    assert table.columns == [
        "dataset",
        "rm",
        "stage",
        "policy",
        "max_length",
        "texts",
        "truncated",
        "skipped",
    ]
    assert table.rows() == [
        ("hs2", "a", "originals", "skip", 512, 4, 2, 1),
        ("hs2", "a", "perturbations", "skip", 512, 3, 2, 2),
    ]
    assert "<td>perturbations</td><td>skip</td><td>512</td><td>3</td>" in Path(outputs["html"]).read_text()
    assert Path(outputs["md"]).read_text().splitlines()[2:5] == [
        "| dataset | RM | stage | policy | token limit | texts | over the limit | skipped |",
        "|---|---|---|---|---|---|---|---|",
        "| hs2 | a | originals | skip | 512 | 4 | 2 | 1 |",
    ]


def test_length_counts_of_a_table_with_one_row():
    originals = pl.DataFrame(
        {
            "reward_chosen": [None],
            "reward_rejected": [0.5],
            "truncated_chosen": [True],
            "truncated_rejected": [False],
            "max_length": [512],
        },
        schema_overrides={"reward_chosen": pl.Float64},
    )
    counts = {"max_length": 512, "texts": 2, "truncated": 1, "skipped": 1}
    assert length_counts(originals, "originals") == counts
    rewards = pl.DataFrame(
        {"reward": [None], "truncated": [True], "max_length": [512]}, schema_overrides={"reward": pl.Float64}
    )
    assert length_counts(rewards, "perturbations") == {**counts, "texts": 1}


def test_a_known_limit_after_a_hundred_unknown_rows_is_kept():
    """polars infers a column's type from the first 100 rows: the table's columns are declared instead."""
    unknown = {"policy": "truncate", "max_length": None, "texts": 6, "truncated": None, "skipped": 0}
    rows = [{"dataset": "d", "rm": f"py{i:03d}", "stage": "originals", **unknown} for i in range(100)]
    known = {"policy": "skip", "max_length": 512, "texts": 4, "truncated": 2, "skipped": 1}
    rows.append({"dataset": "d", "rm": "hf", "stage": "originals", **known})
    table = truncation_table(rows)
    assert table.height == 101 and table.row(0)[3:] == (None, None, 6, None, 0)
    assert table.row(100) == ("d", "hf", "originals", "skip", 512, 4, 2, 1)


def test_the_demo_key_max_length_policy_is_refused_with_its_new_name():
    from conftest import tiny_demo_config

    config = tiny_demo_config()
    config["reward_models"]["demo-harmless"]["max_length_policy"] = "error"
    with pytest.raises(ConfigError, match=r"demo-harmless.max_length_policy was renamed overlong"):
        check(config)
    config["reward_models"]["demo-harmless"] = {
        "backend": "demo",
        "train_part": "harmless",
        "overlong": "skip",
    }
    check(config)


def test_a_remote_rm_that_does_not_send_token_ids_cannot_tell_and_refuses_skip():
    spec = {"backend": "remote", "url": "http://127.0.0.1:9", "send": "messages"}
    assert build_scorer("served", spec).length_check(["hi"], [LONG]) == LengthCheck.unknown()
    with pytest.raises(ScoringError, match=r"overlong: skip needs send: token_ids"):
        parse_spec("served", {**spec, "overlong": "skip"})


NAN_RM = (
    "def score(prompts, responses):\n    return [float('nan') if 'NaN' in r else len(r) for r in responses]\n"
)


def test_a_nan_reward_names_the_comparisons_not_batch_positions(tmp_path):
    (tmp_path / "nan_rm.py").write_text(NAN_RM)
    spec = {"backend": "python", "callable": f"{tmp_path / 'nan_rm.py'}:score", "batch_size": 2}
    comparisons = _comparisons(tmp_path, chosen=("fine", "NaN here", "ok"), rejected=("a", "b", "NaN too"))
    with pytest.raises(ScoringError) as err:
        score_originals(comparisons, "nan", spec, {}, LOG)
    assert str(err.value) == (
        f"reward_models.nan: NaN or infinite reward for 2 of 6 inputs from {comparisons}: c2 (chosen), "
        "c3 (rejected)"
    )
    drafts = [Draft("c1", "chosen", "worse", "clarity", 0, "fine edit"),
              Draft("c3", "chosen", "worse", "clarity", 0, "a NaN edit")]  # fmt: skip
    perturbations = drafts_to_frame(drafts, "rules", "nan")
    write_table(perturbations, tmp_path / "p.parquet", PERTURBATIONS, "perturbations")
    with pytest.raises(ScoringError, match=r"NaN or infinite reward for 1 of 2 inputs from .*: c3 \(text "):
        score_stage("perturbations", comparisons, [str(tmp_path / "p.parquet")], "nan", spec, {}, LOG)


def test_a_nan_from_a_backend_that_does_not_check_is_named_too():
    class Careless(OneRewardShort):
        def score(self, prompts, responses) -> list[float]:
            return [float("nan") if r == "b" else 1.0 for r in responses]

    scorer = Careless("careless", {"overlong": "skip"})
    message = r"^reward_models.careless: NaN or infinite reward for 1 of 2 inputs from f: z$"
    with pytest.raises(ScoringError, match=message):  # "a long answer" (y) is skipped for length
        score_within_limit(
            scorer, ["p"] * 3, ["a", "a long answer", "b"], ["x", "y", "z"], "careless", "f", LOG
        )
