"""HTML pages of single comparisons: the figure, the prompt, both originals and every perturbation's text.

Used for the representative examples in the report and by ``rmexplain explain``. Edits are shown as a
word-level diff against the perturbed original (``rapidfuzz`` Levenshtein opcodes on word lists):
inserted or replacing words are highlighted, deleted words struck through.
"""

from __future__ import annotations

import base64
import html
import mimetypes
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
from rapidfuzz.distance import Levenshtein

from rmexplain.analysis.tables import SIDE_LABEL, num

_CSS = (
    "body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1200px;color:#222}"
    "table{border-collapse:collapse;font-size:0.88em;width:100%}th,td{border:1px solid #ccc;padding:4px 6px;"
    "vertical-align:top;text-align:left}th{background:#f0f0f0}.txt{white-space:pre-wrap}"
    "ins{background:#d4f7d4;text-decoration:none}del{background:#fbd5d5}"
    ".cf{color:#c03d3e;font-weight:600}.sf{color:#1b6ca8}img{max-width:100%}"
    ".box{border:1px solid #ddd;border-radius:6px;padding:8px 12px;margin:6px 0;background:#fafafa}"
)


def word_diff_html(original: str, perturbed: str) -> str:
    """``perturbed`` as HTML with its word-level edits against ``original`` marked (<del> old, <ins> new).

    Adjacent edits are merged into one deleted and one inserted span, so a rewritten clause reads whole.
    """
    a, b = original.split(), perturbed.split()
    parts: list[str] = []
    old: list[str] = []
    new: list[str] = []

    def flush() -> None:
        if old:
            parts.append(f"<del>{html.escape(' '.join(old))}</del>")
        if new:
            parts.append(f"<ins>{html.escape(' '.join(new))}</ins>")
        old.clear()
        new.clear()

    for op in Levenshtein.opcodes(a, b):
        if op.tag == "equal":
            flush()
            parts.append(html.escape(" ".join(b[op.dest_start : op.dest_end])))
        else:
            old.extend(a[op.src_start : op.src_end])
            new.extend(b[op.dest_start : op.dest_end])
    flush()
    return " ".join(parts)


def image_data_uri(path: str | Path) -> str:
    """A file as a data URI, so the page stays self-contained inside the report."""
    mime = mimetypes.guess_type(str(path))[0] or "application/octet-stream"
    return f"data:{mime};base64,{base64.b64encode(Path(path).read_bytes()).decode()}"


def _figure_html(figure: str | Path | None) -> str:
    if figure is None or not Path(figure).is_file():
        return ""
    if Path(figure).suffix.lower() in {".png", ".svg", ".jpg", ".jpeg"}:
        return f"<img src='{image_data_uri(figure)}' alt='rewards of the originals and perturbations'>"
    return f"<p>Figure: {html.escape(str(figure))}</p>"


@dataclass
class ExamplePage:
    """Everything one example page shows."""

    title: str
    facts: dict[str, str]
    prompt: str
    originals: dict[str, str]  # label -> text, e.g. {"y+ (chosen)": ..., "y− (rejected)": ...}
    rewards: pl.DataFrame  # one row per perturbation: side, attribute, variant, original, text + ``columns``
    columns: dict[str, str]  # header -> column; float columns show as numbers, `kind*` columns as CF/SF
    figure: str | Path | None = None
    notes: list[str] = field(default_factory=list)


def perturbation_rows(
    explanations: pl.DataFrame, perturbations: pl.DataFrame, originals: dict[str, str]
) -> pl.DataFrame:
    """Explanation rows with text and focus words; ``original`` is the text of the perturbed original."""
    texts = perturbations.select("perturbation_id", "text", "focus_words")
    rows = explanations.join(texts, on="perturbation_id", how="left")
    return rows.with_columns(original=pl.col("target").replace_strict(originals, default=None))


def kind_label(kind: str | None, subkind: str | None) -> str:
    """``CF``, ``SF (between)``, ``SF (beyond)`` or ``–``."""
    if kind is None:
        return "–"
    return "CF" if kind == "counterfactual" else f"SF ({subkind})"


def _cell(column: str, value: object) -> str:
    if isinstance(value, float) or value is None:
        return f"<td>{num(value, 3)}</td>"
    text = html.escape(str(value))
    if column.startswith("kind"):
        return f"<td class='{'cf' if text == 'CF' else 'sf'}'>{text}</td>"
    return f"<td>{text}</td>"


def render_page(page: ExamplePage) -> str:
    """The page as standalone HTML."""
    esc = html.escape
    facts = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in page.facts.items())
    originals = "".join(
        f"<div class='box'><b>{esc(label)}</b><div class='txt'>{esc(text)}</div></div>"
        for label, text in page.originals.items()
    )
    figure = _figure_html(page.figure)
    head = "".join(f"<th>{esc(c)}</th>" for c in ["side", "attribute", "#", *page.columns, "text"])
    body = []
    for row in page.rewards.iter_rows(named=True):
        values = "".join(_cell(c, row.get(c)) for c in page.columns.values())
        text = (
            word_diff_html(row["original"], row["text"]) if row.get("original") and row.get("text") else "–"
        )
        body.append(
            f"<tr><td>{SIDE_LABEL.get(row['side'], row['side'])}</td><td>{esc(str(row['attribute']))}</td>"
            f"<td>{row['variant']}</td>{values}<td class='txt'>{text}</td></tr>"
        )
    notes = "".join(f"<p>{esc(n)}</p>" for n in page.notes)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{esc(page.title)}</title>"
        f"<style>{_CSS}</style></head><body><h2>{esc(page.title)}</h2>{notes}"
        f"<table style='width:auto'>{facts}</table>"
        f"<h3>Prompt</h3><div class='box txt'>{esc(page.prompt)}</div><h3>Original responses</h3>{originals}"
        f"<h3>Rewards</h3>{figure}<h3>Perturbations</h3><p>Edits against the perturbed original: "
        f"<ins>inserted</ins>, <del>deleted</del>.</p><table><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></body></html>\n"
    )


def render_markdown(page: ExamplePage) -> str:
    """The page as Markdown (facts, texts and a perturbation table, without the diff marks)."""
    lines = [f"## {page.title}", "", *page.notes, ""]
    lines += [f"- **{k}**: {v}" for k, v in page.facts.items()]
    lines += ["", "### Prompt", "", _quote(page.prompt), "", "### Original responses", ""]
    for label, text in page.originals.items():
        lines += [f"**{label}**", "", _quote(text), ""]
    header = ["side", "attribute", "#", *page.columns, "text"]
    lines += ["### Perturbations", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in page.rewards.iter_rows(named=True):
        values = [
            num(v, 3) if isinstance(v, float) or v is None else str(v)
            for v in (row.get(c) for c in page.columns.values())
        ]
        cells = [
            SIDE_LABEL.get(row["side"], row["side"]),
            str(row["attribute"]),
            str(row["variant"]),
            *values,
            (row.get("text") or "–"),
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" for line in text.splitlines() or [""])
