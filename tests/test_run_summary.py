"""What a run prints when it ends: each failed job's error line (Snakemake's ``onerror``), and after every run
what results/ skipped or dropped, by reason, with the log that names them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import yaml
from conftest import tiny_demo_config

from rmexplain import paths
from rmexplain.config import check
from rmexplain.design import Design
from rmexplain.explanations.categorise import orient
from rmexplain.run_summary import error_line, failed_jobs, failure_lines, run_summary
from rmexplain.schemas import CARRIER_EDITS, ORIGINAL_SCORES, REWARDS, write_table
from rmexplain.targets import truncation_parts

SNAKEMAKE_LOG = """\
Select jobs to execute...
[Wed Nov 25 23:44:23 2026]
Error in rule sample_comparisons:
    message: None
    jobid: 0
    input: broken.jsonl
    output: results/data/broken/comparisons.parquet, results/data/broken/origin.json
    log: logs/sample/broken.log (check log file(s) for error details)
[Wed Nov 25 23:44:24 2026]
Error in rule score_originals:
    message: None
    jobid: 3
    log: logs/score_originals/mine/rm.log (check log file(s) for error details)
Exiting because a job execution failed. Look above for error messages
"""
JOB_LOG = """\
2026-11-25 23:44:22,101 INFO rmexplain: reading broken.jsonl
Traceback (most recent call last):
  File "/tmp/x/.snakemake/scripts/tmpj7a1my3j.sample_comparisons.py", line 12, in <module>
    sample_to_files(
rmexplain.data.readers.DataError: broken.jsonl: missing column(s) ['rejected']; found ['id', 'prompt']
"""
LOGS = {
    "sample_comparisons": "logs/sample/{dataset}.log",
    "perturb": "logs/perturb/{dataset}/{method}/{orienter}.log",
    "score_originals": "logs/score_originals/{dataset}/{rm}.log",
    "score_perturbations": "logs/score_perturbations/{dataset}/{rm}.log",
    "discovery_round": "logs/discovery/round/{dataset}/{engine}/round{round}.log",
    "score_discovery_edits": "logs/discovery/score/{dataset}/{engine}/round{round}/{rm}.log",
}


def summary_config() -> dict:
    """The tiny demo with its RM as a python callable (never called): the summary reads names and files
    only, and the check then loads no model library (seconds per test, and per mutant of a mutation run)."""
    config = tiny_demo_config()
    config["reward_models"] = {"demo-harmless": {"backend": "python", "callable": "json:loads"}}
    return config


def test_failed_jobs_and_their_error_lines(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("run.log").write_text(SNAKEMAKE_LOG)
    Path("logs/sample").mkdir(parents=True)
    Path("logs/sample/broken.log").write_text(JOB_LOG)
    assert [(j.rule, j.logs) for j in failed_jobs("run.log")] == [
        ("sample_comparisons", ("logs/sample/broken.log",)),
        ("score_originals", ("logs/score_originals/mine/rm.log",)),
    ]
    assert error_line("logs/sample/broken.log") == JOB_LOG.splitlines()[-1]
    assert failure_lines(["run.log"]) == [
        "sample_comparisons (logs/sample/broken.log): rmexplain.data.readers.DataError: broken.jsonl: "
        "missing column(s) ['rejected']; found ['id', 'prompt']",
        "score_originals: no Python error in its log; see logs/score_originals/mine/rm.log",
    ]


def test_the_summary_counts_what_results_skipped_by_reason_with_its_log(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = summary_config()
    config["perturb"]["methods"] = ["rules", "rules_random"]
    design = Design.from_config(check(config))
    assert run_summary(design, LOGS) == ["rmexplain: nothing in results/ was skipped or dropped."]

    origin = Path(paths.fmt(paths.DATA_ORIGIN, dataset="harmless"))
    origin.parent.mkdir(parents=True)
    origin.write_text(json.dumps({"skipped": {"no rejected": {"rows": 2, "examples": ["a", "b"]}}}))
    for method in ("rules", "rules_random"):
        skips = pl.DataFrame(
            {
                "comparison_id": ["c1", "c2"],
                "target": ["chosen"] * 2,
                "attribute": [None] * 2,
                "variant": [0, 1],
                "stage": ["generate"] * 2,
                "reason": ["LLM answer cut off at max_tokens=8"] * 2,
                "raw": ["cut"] * 2,
            }
        )
        path = Path(
            paths.fmt(paths.PERTURB_SKIPS, dataset="harmless", method=method, orienter="demo-harmless")
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        skips.write_parquet(path)
    discovery = pl.DataFrame(
        {
            "comparison_id": ["c1", "c2"],
            "target": ["chosen"] * 2,
            "attribute": ["bullet_list"] * 2,
            "variant": [None, None],
            "stage": ["discovery"] * 2,
            "reason": ["add: the response has fewer than 2 sentences"] * 2,
            "raw": [None, None],
        },
        schema_overrides={"variant": pl.Int64, "raw": pl.String},
    )
    path = Path(paths.fmt(paths.BIASES_SKIPS, dataset="harmless", engine="offline", round="1"))
    path.parent.mkdir(parents=True)
    discovery.write_parquet(path)
    comparisons = pl.DataFrame({"comparison_id": ["c1", "c2", "c3"]})
    scores = orient(
        comparisons,
        "demo-harmless",
        [1.0, None, 2.0],
        [0.0, 1.0, 1.5],
        ([True, True, False], [False] * 3),
        512,
    )
    scores_path = Path(paths.fmt(paths.ORIGINAL_SCORES, dataset="harmless", rm="demo-harmless"))
    scores_path.parent.mkdir(parents=True)
    write_table(scores, scores_path, ORIGINAL_SCORES, "scores")

    assert run_summary(design, LOGS) == [
        "rmexplain: skipped or dropped in results/ (each log names them):",
        "      2 rows: sampling harmless: no rejected (logs/sample/harmless.log)",
        "      4 perturbation slots: [generate] LLM answer cut off at max_tokens=8 "
        "(2 jobs, e.g. logs/perturb/harmless/rules/demo-harmless.log)",
        "      2 discovery edits: add: the response has fewer than 2 sentences "
        "(logs/discovery/round/harmless/offline/round1.log)",
        "      1 text: originals of harmless over demo-harmless's 512-token limit, left unscored "
        "(logs/score_originals/harmless/demo-harmless.log)",
        "      1 text: originals of harmless over demo-harmless's 512-token limit, scored cut "
        "(logs/score_originals/harmless/demo-harmless.log)",
    ]


def test_every_shape_of_snakemakes_error_blocks(tmp_path, monkeypatch):
    """Several logs of a job, a job without a log, an unreadable and a missing log file, a stray log line
    outside an error block, and bytes that are not UTF-8, in Snakemake's log and in a job's."""
    monkeypatch.chdir(tmp_path)
    Path("first.log").write_bytes(
        b"Error in rule perturb:\n    jobid: 4\n"
        b"    log: logs/a.log, logs/b.log (check log file(s) for error details)\n"
        b"Error in rule figure_x:\n    jobid: 5\nbad byte \xff here\n"
    )
    Path("second.log").write_text(
        "    log: logs/stray.log (check log file(s) for error details)\n"
        "Error in rule score_originals:\n    log: logs/c.log (check log file(s) for error details)\n"
        "    log: logs/late.log (check log file(s) for error details)\n"  # outside a block: not its log
    )
    Path("logs").mkdir()
    Path("logs/a.log").write_bytes(
        b"Traceback (most recent call last):\n  File x\nValueError: caf\xe9 \xff\n"
    )
    Path("logs/c.log").write_text("Traceback (most recent call last):\n  File y\nKeyError: 'c'\n")
    jobs = failed_jobs(["missing.log", "first.log", "second.log"])
    assert [(j.rule, j.logs) for j in jobs] == [
        ("perturb", ("logs/a.log", "logs/b.log")),
        ("figure_x", ()),
        ("score_originals", ("logs/c.log",)),
    ]
    assert error_line("logs/a.log") == "ValueError: caf\ufffd \ufffd"
    assert error_line("logs/b.log") is None and error_line("logs/c.log") == "KeyError: 'c'"
    assert failure_lines(["missing.log", "first.log", "second.log"]) == [
        "perturb (logs/a.log): ValueError: caf\ufffd \ufffd",
        "figure_x: no Python error in its log; see Snakemake's output above",
        "score_originals (logs/c.log): KeyError: 'c'",
    ]
    Path("logs/a.log").write_text("no traceback here\n")
    assert (
        failure_lines(["first.log"])[0] == "perturb: no Python error in its log; see logs/a.log, logs/b.log"
    )
    assert failure_lines(["missing.log"]) == [
        "no failed job is named in Snakemake's log; see the errors above"
    ]


CHAINED_LOG = """\
Traceback (most recent call last):
  File "/x/rules/style.py", line 108, in _nth_word_end
    return found[n - 1].end() + 1
IndexError: list index out of range

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/x/.snakemake/scripts/tmp1.perturb.py", line 9, in <module>
    perturb_to_parquet(
rmexplain.perturb.base.PerturbationError: rules: comparison mine-s0-3 (chosen), clarity edit filler_clause
"""


def test_a_chained_traceback_gives_the_exception_that_failed_the_job(tmp_path):
    log = tmp_path / "perturb.log"
    log.write_text(CHAINED_LOG)
    assert error_line(log) == CHAINED_LOG.splitlines()[-1]
    log.write_text(
        CHAINED_LOG.replace("direct cause of", "during handling of").replace("was the", "occurred")
    )
    assert error_line(log) == CHAINED_LOG.splitlines()[-1]


def _skips(path: str, targets: list, stage: str, reason: str) -> None:
    n = len(targets)
    frame = pl.DataFrame(
        {"comparison_id": [f"c{i}" for i in range(n)], "target": targets, "attribute": [None] * n,
         "variant": [None] * n, "stage": [stage] * n, "reason": [reason] * n, "raw": [None] * n},
        schema={"comparison_id": pl.String, "target": pl.String, "attribute": pl.String, "variant": pl.Int64,
                "stage": pl.String, "reason": pl.String, "raw": pl.String},
    )  # fmt: skip
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(path)


def test_whole_comparisons_slots_and_effect_edit_slots_are_named_apart(tmp_path, monkeypatch):
    """An orientation skip is a whole comparison, a perturbation skip a slot, an effect-edit skip an effect
    edit slot; a score table without a cut text adds no line ("0 texts … scored cut" is not a drop)."""
    monkeypatch.chdir(tmp_path)
    design = Design.from_config(check(summary_config()))
    comparisons = pl.DataFrame({"comparison_id": ["c1", "c2"]})
    scores_path = Path(paths.fmt(paths.ORIGINAL_SCORES, dataset="harmless", rm="demo-harmless"))
    scores_path.parent.mkdir(parents=True)
    for cut, limit in (([False] * 2, 512), ([None] * 2, None)):  # none cut; the backend cannot tell
        scores = orient(comparisons, "demo-harmless", [1.0, 0.0], [0.0, 1.0], (cut, cut), limit)
        write_table(scores, scores_path, ORIGINAL_SCORES, "scores")
        assert run_summary(design, LOGS) == ["rmexplain: nothing in results/ was skipped or dropped."]

    perturb = paths.fmt(paths.PERTURB_SKIPS, dataset="harmless", method="rules", orienter="demo-harmless")
    _skips(perturb, [None] * 58, "orientation", "the shared RMs disagree on which response is y+")
    _skips(paths.fmt(paths.EFFECT_SKIPS, dataset="harmless", method="rules"), ["chosen"] * 3,
           "effects round 1 (rules)", "no clarity edit applies to this response")  # fmt: skip
    logs = {**LOGS, "effect_edits": "logs/effect_edits/{dataset}/{method}.log"}
    assert run_summary(design, logs)[1:] == [
        "     58 comparisons: [orientation] the shared RMs disagree on which response is y+ "
        "(logs/perturb/harmless/rules/demo-harmless.log)",
        "      3 effect edit slots: [effects round 1 (rules)] no clarity edit applies to this response "
        "(logs/effect_edits/harmless/rules.log)",
    ]


def test_each_jobs_skips_in_order_and_a_table_it_cannot_read_is_said(tmp_path, monkeypatch):
    """Within a job: by stage, then reason, whatever order the file holds; a job without a skips file yet is
    passed over, not the end; a skips table that breaks its contract is named, not counted."""
    monkeypatch.chdir(tmp_path)
    config = summary_config()
    config["perturb"]["methods"] = ["rules", "rules_random"]
    design = Design.from_config(check(config))
    job = paths.fmt(paths.PERTURB_SKIPS, dataset="harmless", method="rules_random", orienter="demo-harmless")
    _skips(job, ["chosen"] * 2, "rules_random", "no verbosity edit (better) applies")
    rows = pl.read_parquet(job)
    generate = [("generate", reason) for reason in "abcdef"]  # one order of 720 by chance: not by luck
    more = [("rules_random", "no clarity edit (worse) applies"), ("orientation", "tie in original rewards"),
            *generate]  # fmt: skip
    for stage, reason in more:  # each put first: the file holds them in the reverse order
        rows = pl.concat([rows.head(1).with_columns(stage=pl.lit(stage), reason=pl.lit(reason)), rows])
    rows.write_parquet(job)
    log = "(logs/perturb/harmless/rules_random/demo-harmless.log)"
    assert run_summary(design, LOGS)[1:] == [
        *(f"      1 perturbation slot: [generate] {reason} {log}" for reason in "abcdef"),
        f"      1 perturbation slot: [orientation] tie in original rewards {log}",
        f"      1 perturbation slot: [rules_random] no clarity edit (worse) applies {log}",
        f"      2 perturbation slots: [rules_random] no verbosity edit (better) applies {log}",
    ]  # the rules job, first, has no skips file yet
    rows.drop("reason").write_parquet(job)
    said = run_summary(design, LOGS)
    assert said[0] == "rmexplain: skipped or dropped in results/ (each log names them):"
    assert (
        said[1].startswith("        (not counted: perturbation_drops: perturb skips (")
        and "reason" in said[1]
    )


def test_effect_edit_skips_of_every_job_in_order_and_unreadable_ones_said(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = summary_config()
    config["datasets"]["helpful"] = {"source": "embedded", "part": "helpful"}
    design = Design.from_config(check(config))
    assert design.effect_pairs == [("harmless", "rules"), ("helpful", "rules")]
    logs = {**LOGS, "effect_edits": "logs/effect_edits/{dataset}/{method}.log"}
    helpful = paths.fmt(paths.EFFECT_SKIPS, dataset="helpful", method="rules")
    _skips(helpful, ["chosen"], "effects round 2 (rules)", "b")
    rows = pl.read_parquet(helpful)
    for reason in "abcdef":  # each put first: the file holds them in the reverse order
        first = rows.head(1).with_columns(stage=pl.lit("effects round 1 (rules)"), reason=pl.lit(reason))
        rows = pl.concat([first, rows])
    rows.write_parquet(helpful)
    where = "(logs/effect_edits/helpful/rules.log)"
    expected = [
        *(f"      1 effect edit slot: [effects round 1 (rules)] {reason} {where}" for reason in "abcdef"),
        f"      1 effect edit slot: [effects round 2 (rules)] b {where}",
    ]
    assert run_summary(design, logs)[1:] == expected  # harmless, first, has none yet
    _skips(
        paths.fmt(paths.EFFECT_SKIPS, dataset="harmless", method="rules"),
        ["rejected"],
        "effects round 1 (rules)",
        "a",
    )
    assert run_summary(design, logs)[1:] == [
        "      2 effect edit slots: [effects round 1 (rules)] a (2 jobs, e.g. "
        "logs/effect_edits/harmless/rules.log)",
        *expected[1:],
    ]
    rows.drop("stage").write_parquet(helpful)
    assert run_summary(design, logs)[-1].startswith(
        "        (not counted: effect_edit_drops: effect edit skips ("
    )


def design_with_rewards(stage: str, rewards: pl.DataFrame) -> tuple[Design, str]:
    """The summary config's design, with ``rewards`` written as its truncation part ``stage``'s score table
    (in the working directory); the design and that table's path."""
    design = Design.from_config(check(summary_config()))
    path = {part_stage: path for _, _, part_stage, path in truncation_parts(design)}[stage]
    Path(path).parent.mkdir(parents=True)
    write_table(rewards, path, REWARDS, "rewards")
    return design, path


def test_texts_over_a_limit_in_every_score_table(tmp_path, monkeypatch):
    """The perturbations' rewards are read with their own contract, and a table not written yet (the
    originals', first) is passed over."""
    monkeypatch.chdir(tmp_path)
    rewards = pl.DataFrame(
        {"text_id": ["a", "b", "c"], "rm": "demo-harmless", "reward": [1.0, None, 2.0],
         "truncated": [True, True, False], "max_length": 512},
    )  # fmt: skip
    design, path = design_with_rewards("perturbations", rewards)
    over = "perturbations of harmless over demo-harmless's 512-token limit"
    log = "(logs/score_perturbations/harmless/demo-harmless.log)"
    assert run_summary(design, LOGS)[1:] == [
        f"      1 text: {over}, left unscored {log}",
        f"      1 text: {over}, scored cut {log}",
    ]
    rewards.drop("truncated").write_parquet(path)
    said = run_summary(design, LOGS)[-1]
    assert said.startswith("        (not counted: length_drops: perturbations scores (")
    assert "truncated" in said


def test_texts_over_a_limit_in_a_discovery_round_name_that_rounds_scoring_log(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rewards = pl.DataFrame(
        {"text_id": ["a", "b"], "rm": "demo-harmless", "reward": [None, 2.0], "truncated": [True, True],
         "max_length": 512},
    )  # fmt: skip
    design, _ = design_with_rewards("discovery offline round 1", rewards)
    over = "discovery offline round 1 of harmless over demo-harmless's 512-token limit"
    log = "(logs/discovery/score/harmless/offline/round1/demo-harmless.log)"
    assert run_summary(design, LOGS)[1:] == [
        f"      1 text: {over}, left unscored {log}",
        f"      1 text: {over}, scored cut {log}",
    ]


def test_a_dataset_short_of_n_per_seed_is_counted(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    design = Design.from_config(check(summary_config()))
    origin = Path(paths.fmt(paths.DATA_ORIGIN, dataset="harmless"))
    origin.parent.mkdir(parents=True)
    origin.write_text(json.dumps({"skipped": {}, "usable": 60, "n_per_seed": 60}))
    assert run_summary(design, LOGS) == ["rmexplain: nothing in results/ was skipped or dropped."]
    origin.write_text(json.dumps({"skipped": {}, "usable": 15, "n_per_seed": 20}))
    assert run_summary(design, LOGS)[1:] == [
        "      5 comparisons: sampling harmless: short of sample.n_per_seed=20 per seed (only 15 usable "
        "rows; each seed took all of them) (logs/sample/harmless.log)"
    ]


def test_every_dataset_is_counted_whichever_has_an_origin(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = summary_config()
    config["datasets"]["helpful"] = {"source": "embedded", "part": "helpful"}
    design = Design.from_config(check(config))
    helpful = Path(paths.fmt(paths.DATA_ORIGIN, dataset="helpful"))
    helpful.parent.mkdir(parents=True)
    helpful.write_text(json.dumps({"skipped": {"empty response": {"rows": 3, "examples": []}}}))
    assert run_summary(design, LOGS)[1:] == [
        "      3 rows: sampling helpful: empty response (logs/sample/helpful.log)"
    ]  # harmless, first, has no origin yet
    harmless = Path(paths.fmt(paths.DATA_ORIGIN, dataset="harmless"))
    harmless.parent.mkdir(parents=True)
    harmless.write_text(json.dumps({"skipped": {"no rejected": {"rows": 1, "examples": []}}}))
    assert run_summary(design, LOGS)[1:] == [
        "      1 row: sampling harmless: no rejected (logs/sample/harmless.log)",
        "      3 rows: sampling helpful: empty response (logs/sample/helpful.log)",
    ]


def test_the_rows_out_of_scope_are_named_first_and_why(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = summary_config()
    config["datasets"]["helpful"] = {"source": "embedded", "part": "helpful"}
    design = Design.from_config(check(config))
    skipped = {
        "harmless": {"empty response": {"rows": 2, "examples": []}},
        "helpful": {
            "identical responses": {"rows": 1, "examples": []},
            "multi-turn": {"rows": 7, "examples": []},
        },
    }
    for dataset, skips in skipped.items():
        origin = Path(paths.fmt(paths.DATA_ORIGIN, dataset=dataset))
        origin.parent.mkdir(parents=True)
        origin.write_text(json.dumps({"skipped": skips}))
    assert run_summary(design, LOGS)[1:] == [
        "      7 rows: sampling helpful: out of scope, multi-turn (a dialogue of several turns; rmexplain "
        "explains single-turn comparisons) (logs/sample/helpful.log)",
        "      2 rows: sampling harmless: empty response (logs/sample/harmless.log)",
        "      1 row: sampling helpful: identical responses (logs/sample/helpful.log)",
    ]


RMS_PY = "def length(prompts, responses):\n    return [float(len(r)) for r in responses]\n"


def test_a_run_prints_the_failed_jobs_errors_and_what_it_skipped(workflow_copy):
    root = workflow_copy.root
    rows = [
        {"id": f"r{i}", "prompt": f"Question {i}?", "chosen": f"A good answer {i}.", "rejected": f"Bad {i}."}
        for i in range(6)
    ]
    rows += [
        {"id": "no-rejected", "prompt": "q", "chosen": "x"},
        {"id": "blank", "prompt": "q", "chosen": " ", "rejected": "y"},
    ]
    (root / "mine.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "broken.jsonl").write_text(json.dumps({"id": "a", "prompt": "q", "chosen": "x"}) + "\n")
    edits = [
        {"comparison_id": c, "target": "chosen", "attribute": "clarity", "variant": 0, "text": f"Edited {c}."}
        for c in ("r0", "r1", "r2", "r3", "r4", "r5", "never-sampled")
    ]
    (root / "edits.jsonl").write_text("".join(json.dumps(r) + "\n" for r in edits))
    (root / "rms.py").write_text(RMS_PY)
    config = tiny_demo_config()
    config["datasets"] = {"mine": {"source": "file", "path": "mine.jsonl"},
                          "broken": {"source": "file", "path": "broken.jsonl", "seeds": [0]}}  # fmt: skip
    config["reward_models"] = {"len": {"backend": "python", "callable": "rms.py:length"}}
    config["perturb"]["methods"] = ["file"]
    config["perturb"]["file"] = {"path": "edits.jsonl"}
    (root / "config" / "run.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    sampled = ["results/data/mine/comparisons.parquet", "results/data/broken/comparisons.parquet"]

    failed = workflow_copy.snakemake(
        "--cores", "1", "-k", *sampled, "--configfile", "config/run.yaml", check=False
    )
    assert failed.returncode != 0
    said = failed.stdout + failed.stderr
    assert (
        "rmexplain: failed jobs and their errors:\n    sample_comparisons (logs/sample/broken.log): "
        "rmexplain.data.readers.DataError: broken.jsonl: missing column(s) ['rejected']" in said
    )
    assert "      1 row: sampling mine: no rejected (logs/sample/mine.log)" in said
    assert "      1 row: sampling mine: empty response (logs/sample/mine.log)" in said

    target = "results/perturbations/mine/file/len.parquet"
    done = workflow_copy.snakemake("--cores", "1", target, "--configfile", "config/run.yaml")
    said = done.stdout + done.stderr
    assert "failed jobs" not in said
    assert "      1 row: sampling mine: no rejected (logs/sample/mine.log)" in said
    unmatched = re.search(
        r"^ +(\d+) perturbation slots?: \[file\] row names a comparison not explained here .*"
        r"\(logs/perturb/mine/file/len\.log\)$",
        said,
        re.M,
    )
    assert unmatched and int(unmatched[1]) >= 1, said  # "never-sampled" at least


def test_carrier_edits_whose_class_could_not_be_undone_are_counted_by_reason(tmp_path, monkeypatch):
    """Each reason once, the instance it quotes left out ("“3.5” has no …" and "“2024” has no …" are one
    reason), most first; the carrier edits' log named."""
    monkeypatch.chdir(tmp_path)
    design = Design.from_config(check(summary_config()))
    skips = ["“3.5” has no one-word spelling", "“2024” has no one-word spelling", None, "a stand-in moves"]
    edits = pl.DataFrame(
        {"dataset": "harmless", "kind": "discovered", "method": "offline", "finding": "numbered_list",
         "carrier": "numbers as digits", "comparison_id": "c1", "target": "chosen", "direction": 1,
         "dose": 1, "class_change": 1, "source_text": "S", "edited_text": "E",
         "source_undone": [None, None, "S", None], "edited_undone": [None, None, "U", None], "skip": skips}
    )  # fmt: skip
    path = Path(paths.fmt(paths.CARRIER_EDITS, dataset="harmless"))
    path.parent.mkdir(parents=True)
    write_table(edits, path, CARRIER_EDITS, "carrier edits")
    logs = {**LOGS, "carrier_edits": "logs/findings/carriers/{dataset}.log"}
    assert run_summary(design, logs)[1:] == [
        "      2 carrier edits: “…” has no one-word spelling (logs/findings/carriers/harmless.log)",
        "      1 carrier edit: a stand-in moves (logs/findings/carriers/harmless.log)",
    ]
