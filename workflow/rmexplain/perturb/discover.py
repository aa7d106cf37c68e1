"""Attribute discovery (paper App. A): ask the LLM, per comparison, which high-level attributes made the RM
prefer y+, and count how often each attribute is named — a table to help users customise ``attributes``.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from rmexplain.llm.client import CachedChat, ChatRequests, build_chat, write_llm_use
from rmexplain.llm.prompts import load_template
from rmexplain.perturb.llm_methods import format_score, normalise_name
from rmexplain.perturb.skips import SkipRecorder
from rmexplain.perturb.stages import orientation
from rmexplain.schemas import (
    COMPARISONS,
    DISCOVERY_ANSWERS,
    DISCOVERY_COUNTS,
    conform,
    read_table,
    write_table,
)
from rmexplain.settings import schema_defaults

DISCOVER_DEFAULTS: dict[str, Any] = schema_defaults("perturb", "discover")


def parse_attribute_list(answer: str) -> list[str]:
    """Attributes in a comma- or line-separated answer: lower case, spaces as hyphens, each once."""
    names: list[str] = []
    for item in re.split(r"[,\n;]", answer):
        item = re.sub(r"^\s*(?:[-*•]+|\d+[.)])\s*", "", item)
        item = item.strip().strip("\"'`*.").strip().lower()
        item = re.sub(r"\s+", "-", item)
        if item and len(item) <= 40 and item not in names:
            names.append(item)
    return names


def count_attributes(answers: Sequence[list[str]], configured: Sequence[str]) -> pl.DataFrame:
    """One row per attribute named: in how many answers, which share, and whether it is configured."""
    counts = Counter(a for names in answers for a in names)
    answered = sum(1 for names in answers if names)
    known = {normalise_name(a) for a in configured}
    rows = [
        {
            "attribute": name,
            "n_comparisons": n,
            "share": n / answered if answered else float("nan"),
            "configured": normalise_name(name) in known,
        }
        for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    return pl.DataFrame(rows, schema={k: c.dtype for k, c in DISCOVERY_COUNTS.items()})


def discovery_prompts(
    comparisons: pl.DataFrame, oriented: pl.DataFrame, chat: ChatRequests, settings: dict[str, Any]
) -> tuple[list[str], list[Any]]:
    """Comparison ids and App. A requests (response A = y+ of the orienting RM, with its reward);
    ``settings``: ``perturb.discover`` over its defaults."""
    template = load_template("discover", settings.get("prompt"))
    sampling = chat.sampling(settings.get("sampling"))
    ids, requests = [], []
    for row in comparisons.join(oriented, on="comparison_id", how="inner").iter_rows(named=True):
        plus = row["plus_target"]
        minus = "rejected" if plus == "chosen" else "chosen"
        prompt = template.render(
            question=row["prompt"],
            chosen_reward=format_score(row[f"reward_{plus}"]),
            chosen_response=row[plus],
            rejected_reward=format_score(row[f"reward_{minus}"]),
            rejected_response=row[minus],
        )
        ids.append(row["comparison_id"])
        requests.append(chat.request(prompt, sampling, template.version))
    return ids, requests


def discover_attributes(
    *,
    comparisons: str,
    scores: str | Sequence[str],
    orienter: str,
    settings: dict[str, Any] | None,
    attributes: dict[str, str],
    answers_out: str,
    counts_csv: str,
    counts_md: str,
    log: logging.Logger,
    llm: dict[str, Any] | None = None,
    chat: CachedChat | None = None,
    llm_use: str | None = None,
) -> pl.DataFrame:
    """Run discovery for one dataset and write the raw answers and the attribute counts (CSV + Markdown),
    and to ``llm_use`` the job's LLM use (``rmexplain.llm.client.write_llm_use``)."""
    settings = {**DISCOVER_DEFAULTS, **(settings or {})}
    chat = chat or build_chat(llm, log)
    comps = read_table(comparisons, COMPARISONS, "comparisons")
    skips = SkipRecorder()
    oriented = orientation(scores, comps["comparison_id"].to_list(), skips, log)
    skips.log_counts(log)
    ids, requests = discovery_prompts(comps, oriented, chat, settings)
    try:
        texts = chat.complete(requests, desc="attribute discovery")
    finally:
        chat.log_summary("attribute discovery LLM use")
    parsed = [parse_attribute_list(t) for t in texts]
    unparsed = sum(1 for names in parsed if not names)
    if unparsed:
        log.warning(
            "attribute discovery: %d of %d answers named no attribute (kept raw)", unparsed, len(texts)
        )
    answers = pl.DataFrame(
        {"comparison_id": ids, "orienter": [orienter] * len(ids), "answer": texts, "attributes": parsed},
        schema={k: c.dtype for k, c in DISCOVERY_ANSWERS.items()},
    )
    counts = count_attributes(parsed, list(attributes))
    for path in (answers_out, counts_csv, counts_md):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_table(answers, answers_out, DISCOVERY_ANSWERS, "discovery answers")
    conform(counts, DISCOVERY_COUNTS, "discovery counts").write_csv(counts_csv)
    Path(counts_md).write_text(counts_markdown(counts, len(texts)))
    if llm_use is not None:
        write_llm_use(llm_use, chat, "attribute discovery")
    log.info("attribute discovery: %d answers, %d distinct attributes named", len(texts), counts.height)
    return counts


def counts_markdown(counts: pl.DataFrame, n_answers: int) -> str:
    """The counts as a Markdown table."""
    lines = [
        f"Attributes named by the LLM over {n_answers} comparisons (App. A prompt).",
        "",
        "| attribute | comparisons | share | configured |",
        "|---|---:|---:|:---:|",
    ]
    for row in counts.iter_rows(named=True):
        mark = "yes" if row["configured"] else ""
        lines.append(f"| {row['attribute']} | {row['n_comparisons']} | {row['share']:.2f} | {mark} |")
    return "\n".join(lines) + "\n"
