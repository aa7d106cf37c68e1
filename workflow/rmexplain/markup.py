"""Tables as text: GitHub-flavoured Markdown and a standalone HTML page (what the Snakemake report shows).

A Markdown cell holds data (a prompt, an attribute's name, a phrase an RM rewards), shown as the text it is:
``md_cell`` escapes whatever Markdown or HTML would read as markup and leaves ordinary text byte for byte.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import polars as pl

_LINE_BREAK = re.compile(r"\r\n?|\n")
_MARKUP = re.compile(
    r"(?P<run>\*+|_+|~+)"  # emphasis and strikethrough delimiters
    r"|(?P<char>[\\|`$])"  # escapes, cell borders, code spans, GitHub's maths
    r"|(?P<tag><(?=[A-Za-z/!?]))"  # an HTML tag, comment or autolink
    r"|(?P<entity>&(?=#?\w+;))"  # an HTML entity
    r"|(?P<link>\](?=\())"  # a link or image: [text](url)
)


def _escaped(match: re.Match[str]) -> str:
    """One markup match as literal text."""
    found, text = match.group(), match.string
    if match["tag"]:
        return "&lt;"
    if match["entity"]:
        return "&amp;"
    if match["run"]:
        before = text[match.start() - 1] if match.start() else " "
        after = text[match.end()] if match.end() < len(text) else " "
        if before.isspace() and after.isspace():  # a lone "*" (a significance mark) marks nothing up
            return found
        if found[0] == "_" and before.isalnum() and after.isalnum():  # snake_case: no emphasis
            return found
    return "".join("\\" + c for c in found)


def md_cell(value: object) -> str:
    """A value as the text of one Markdown table cell: on one line, every piece of Markdown or HTML markup
    escaped (``<script>``, ``a|b``, ``**x**``, `` `x` ``, ``[a](b)``, ``&lt;``), ordinary text unchanged."""
    return _MARKUP.sub(_escaped, _LINE_BREAK.sub(" ", str(value)))


def to_markdown(frame: pl.DataFrame) -> str:
    """A GitHub-flavoured Markdown table of a frame of strings/numbers, every cell text (``md_cell``)."""
    lines = ["| " + " | ".join(md_cell(c) for c in frame.columns) + " |", "|" + "---|" * frame.width]
    lines += ["| " + " | ".join(md_cell(v) for v in row) + " |" for row in frame.iter_rows()]
    return "\n".join(lines) + "\n"


_CSS = (
    "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}"
    "table{border-collapse:collapse;font-size:0.9em}"
    "th,td{border:1px solid #ccc;padding:4px 8px;text-align:left}"
    "th{background:#f0f0f0;position:sticky;top:0}tr:nth-child(even){background:#fafafa}"
)


def to_html(frame: pl.DataFrame, title: str, note: str = "") -> str:
    """A standalone HTML page with one table (what the Snakemake report shows)."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
        for row in frame.iter_rows()
    )
    note_html = f"<p>{html.escape(note)}</p>" if note else ""
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_CSS}</style></head><body><h2>{html.escape(title)}</h2>{note_html}"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></body></html>\n"
    )


def write_table_pages(
    frame: pl.DataFrame, title: str, note: str, csv: str | Path, md: str | Path, html_path: str | Path
) -> None:
    """``frame`` as CSV (machines) and as Markdown and a standalone HTML page with ``title`` and ``note``
    (people, the report); an empty frame keeps its CSV header and shows ``note`` alone."""
    frame.write_csv(csv)
    body = to_markdown(frame) if frame.height else ""
    Path(md).write_text(f"### {title}\n\n{note}\n\n{body}", encoding="utf-8")
    Path(html_path).write_text(to_html(frame, title, note), encoding="utf-8")


def signed(x: float | None, digits: int = 2) -> str:
    """A number with its sign ("+0.42", "−0.30"), "–" when missing."""
    if x is None or x != x:
        return "–"
    return f"{x:+.{digits}f}".replace("-", "−")
