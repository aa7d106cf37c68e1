"""Data that would change what the project writes: markup in a Markdown table's cells, a row without an id
numbered as another row's id, and a results tree the end-of-run summary cannot read or a run Snakemake stops
outside any job."""

from __future__ import annotations

import errno
import json
import pathlib
from pathlib import Path

import polars as pl
import pytest
from conftest import tiny_demo_config

from rmexplain import paths, run_summary
from rmexplain.config import check
from rmexplain.data.readers import DataError, SkipCounter, read_pairs_file
from rmexplain.design import Design
from rmexplain.markup import md_cell, to_markdown, write_table_pages

HOSTILE = ["<script>alert(1)</script>", "a|b", "**x**", "`code`", "[click](javascript:alert(1))", "&lt;b&gt;"]
# Cells of the demo's tables, and ordinary text: written byte for byte.
ORDINARY = ["0.42 [0.30, 0.55]", "+0.42 [+0.30, +0.55] *", "rules_random", "Y−", "x < 3", "R&D", "a * b", "–"]


def rendered(markdown: str) -> str:
    """Markdown as HTML, raw HTML allowed (as CommonMark and GitHub's renderer before sanitising)."""
    markdown_it = pytest.importorskip("markdown_it")
    return markdown_it.MarkdownIt("commonmark").enable("table").render(markdown)


def test_markdown_table_cells_show_markup_as_text(tmp_path):
    frame = pl.DataFrame({"phrase": HOSTILE, "effect": [0.5] * len(HOSTILE)})
    write_table_pages(frame, "Findings", "A note.", *(tmp_path / f"t.{ext}" for ext in ("csv", "md", "html")))
    markdown = (tmp_path / "t.md").read_text()
    assert markdown.startswith("### Findings\n\nA note.\n\n| phrase | effect |\n|---|---|\n")
    page = rendered(markdown)
    for tag in ("<script", "<strong", "<em", "<code", "<a ", "<b>"):
        assert tag not in page
    assert page.count("<tr>") == len(HOSTILE) + 1 and page.count("<td>") == 2 * len(HOSTILE)
    for text in ("&lt;script&gt;alert(1)&lt;/script&gt;", "a|b", "**x**", "`code`", "[click](javascript:"):
        assert text in page
    assert "&amp;lt;b&amp;gt;" in page  # an entity in the data shows as written, not as "<b>"
    assert [md_cell(text) for text in ORDINARY] == ORDINARY
    assert to_markdown(pl.DataFrame({"a_b": ["x\ny"]})) == "| a_b |\n|---|\n| x y |\n"


def pairs_file(tmp_path: Path, ids: list[str | None]) -> Path:
    """A pairs file with one row per id (None: the row has no id)."""
    rows = [{"prompt": f"q{i}", "chosen": "x", "rejected": "y", "id": name} for i, name in enumerate(ids)]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n" for r in rows))
    return path


def test_rows_without_an_id_are_numbered_and_a_number_another_row_holds_is_refused(tmp_path):
    read = pairs_file(tmp_path, ["a", None, None])
    assert [p.source_index for p in read_pairs_file(read, SkipCounter())] == ["a", "1", "2"]
    clash = pairs_file(tmp_path, ["3", "a", "b", None])
    message = (
        r"pairs.jsonl: row 3 has no id, so it is named by its row number '3' \(counting from 0\), which "
        r"row 0 has as its id: the two would be one comparison \(1 such row\(s\) in all\)\. Give row 3 an "
        r"id of its own, or give every row one\."
    )
    with pytest.raises(DataError, match=message):
        list(read_pairs_file(clash, SkipCounter()))
    listed = tmp_path / "pairs.parquet"
    pl.DataFrame(
        {"id": [[1], [2]], "prompt": ["q", "r"], "chosen": ["x"] * 2, "rejected": ["y"] * 2}
    ).write_parquet(listed)
    with pytest.raises(DataError, match=r"pairs.parquet: column id holds List\(Int64\), not text or numbers"):
        list(read_pairs_file(listed, SkipCounter()))


LOGS = {"sample_comparisons": "logs/sample/{dataset}.log"}


def two_datasets() -> Design:
    """The tiny demo on harmless then helpful, its RM a python callable (never called)."""
    config = tiny_demo_config()
    config["datasets"]["helpful"] = {"source": "embedded", "part": "helpful"}
    config["reward_models"] = {"demo-harmless": {"backend": "python", "callable": "json:loads"}}
    return Design.from_config(check(config))


def origin(dataset: str, rows: int) -> None:
    """A dataset's origin record with ``rows`` rows skipped for an empty response."""
    path = Path(paths.fmt(paths.DATA_ORIGIN, dataset=dataset))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"skipped": {"empty response": {"rows": rows, "examples": []}}}))


def test_the_summary_names_a_folder_it_cannot_read_and_counts_the_others(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    design = two_datasets()
    origin("harmless", 2)
    origin("helpful", 3)
    hidden = Path("results/data/harmless")
    stat = pathlib.Path.stat

    def unreadable(self: Path, **kwargs: object):  # what a folder without read permission does (even as root)
        if self.parent == hidden:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return stat(self, **kwargs)

    monkeypatch.setattr(pathlib.Path, "stat", unreadable)
    assert run_summary.run_summary(design, LOGS) == [
        "rmexplain: skipped or dropped in results/ (each log names them):",
        "      3 rows: sampling helpful: empty response (logs/sample/helpful.log)",
        "        (not counted: data_drops: [Errno 13] Permission denied: "
        "'results/data/harmless/origin.json')",
    ]


SNAKEMAKE_STOPPED = """\
Select jobs to execute...
Execute 1 jobs...
Traceback (most recent call last):
  File "snakemake/jobs.py", line 806, in remove_existing_output
    await f.remove(remove_non_empty_dir=False)
PermissionError: [Errno 13] Permission denied: 'results/findings/landing.rst'
"""


def test_a_run_snakemake_stops_outside_any_job_still_ends_with_its_summary(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("snakemake.log").write_text(SNAKEMAKE_STOPPED)
    origin("helpful", 3)
    at_exit = []
    monkeypatch.setattr(run_summary.atexit, "register", lambda *call: at_exit.append(call))
    end = run_summary.EndOfRun(two_datasets())
    end.start(LOGS, ["snakemake.log"])
    ((call, *args),) = at_exit
    call(*args)  # Snakemake raised before its onerror: only the exit prints
    assert capsys.readouterr().err.splitlines() == [
        "rmexplain: Snakemake stopped the run outside any job (no job failed): PermissionError: [Errno 13] "
        "Permission denied: 'results/findings/landing.rst'",
        "rmexplain: skipped or dropped in results/ (each log names them):",
        "      3 rows: sampling helpful: empty response (logs/sample/helpful.log)",
    ]
    ended = run_summary.EndOfRun(two_datasets())
    ended.succeeded(LOGS)
    capsys.readouterr()
    ended.stopped(LOGS, ["snakemake.log"])
    assert capsys.readouterr().err == ""  # printed once, by onsuccess
