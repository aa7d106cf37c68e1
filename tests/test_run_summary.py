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
from rmexplain.schemas import ORIGINAL_SCORES, write_table

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
}


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
    config = tiny_demo_config()
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
                          "broken": {"source": "file", "path": "broken.jsonl"}}  # fmt: skip
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
