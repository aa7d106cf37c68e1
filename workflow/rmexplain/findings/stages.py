"""File-level entry points of the findings rules (``workflow/rules/findings.smk``): each script calls one."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from rmexplain.findings.carriers import place_attributes_under_classes
from rmexplain.findings.changes import effect_changes
from rmexplain.findings.landing import findings_rst, landing_text, signed
from rmexplain.findings.summary import (
    DISCOVERY_EDIT_COLUMNS,
    FindingSettings,
    attribute_findings,
    discovered_findings,
    edit_texts,
    findings_frame,
    place_under_carriers,
)
from rmexplain.markup import write_table_pages
from rmexplain.schemas import (
    ATTRIBUTE_EFFECTS,
    COMPARISONS,
    DISCOVERED_BIASES,
    EFFECT_CHANGES,
    EFFECT_EDITS,
    FINDINGS,
    ORIGINAL_SCORES,
    REWARDS,
    read_table,
    write_table,
)

TITLE = "Findings: what each RM rewards and penalises"
NOTE = (
    "Per dataset and RM, in its own order (largest |effect| first): the primary estimator's attribute effects"
    " and length row (reward sd; length per sd of length), each with its interval, the side it rewards in"
    " words, an example edit of the rewarded direction (its median reward change at equal length; for length,"
    " the edit that changed the length most in the way the effect says), the stretches those edits inserted"
    " and deleted most often, and a phrase that carries most of the effect where one does (docs/findings.md);"
    " then discovered features. `order`: every finding of the RM on the dataset, of every kind and method,"
    " in one ranking by |effect|, the order of the first screen. `leading`: shown on the report's first page"
    " and the explorer's."
    " `replication`: whether a significant finding holds in both halves of the pairs (each half's effect"
    " with its sign, each half's interval excluding 0; docs/findings.md). `carried_by`: 1 or 2 where leaving"
    " out the one or two most influential pairs makes a significant finding's effect 0, of the other sign"
    " or (discovered) within the minimum effect; `without_it`: its effect without the most influential pair."
    " `nature`, `natural_effect`: a discovered feature's association with the reward among the original"
    " responses at equal length, and whether it agrees with the edits (docs/discovery.md)."
)
SHOWN = ["dataset", "method", "rm", "order", "rank", "leading", "phrase", "name", "effect", "low", "high",
         "significant", "replication", "carried_by", "without_it", "nature", "natural_effect", "reference",
         "carrier", "carrier_edits",
         "n_direction", "carrier_share_change", "example_before", "example_after", "example_effect_change",
         "example_words_change", "inserted_most", "deleted_most"]  # fmt: skip


def run_effect_changes(
    inputs: Mapping[str, Any],
    rms: Sequence[str],
    references: Mapping[str, str | None],
    attributes: Sequence[str],
    dataset: str,
    method: str,
    output: str,
    log: logging.Logger,
) -> None:
    """EFFECT_CHANGES of one (dataset, method); ``inputs``: ``comparisons``, ``edits`` and per RM (``rms``
    order) ``originals`` and ``rewards``."""
    frame = effect_changes(
        read_table(inputs["comparisons"], COMPARISONS, "comparisons"),
        read_table(inputs["edits"], EFFECT_EDITS, "effect edits"),
        {
            rm: read_table(p, ORIGINAL_SCORES, "original scores")
            for rm, p in zip(rms, inputs["originals"], strict=True)
        },
        {rm: read_table(p, REWARDS, "effect rewards") for rm, p in zip(rms, inputs["rewards"], strict=True)},
        references,
        attributes,
        dataset,
        method,
    )
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    write_table(frame, output, EFFECT_CHANGES, "effect changes")
    log.info("%s/%s: %d round-1 edits x %d RMs", dataset, method, frame.height // max(1, len(rms)), len(rms))


def read_findings_inputs(inputs: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """The findings' tables: per (dataset, method) pair its effects, edits, changes and comparisons (one file
    each, in pair order), and the discovery's table and edits where they are given."""
    pairs = list(
        zip(
            [read_table(p, ATTRIBUTE_EFFECTS, "attribute effects") for p in inputs["effects"]],
            [read_table(p, EFFECT_EDITS, "effect edits") for p in inputs["edits"]],
            [read_table(p, EFFECT_CHANGES, "effect changes") for p in inputs["changes"]],
            [read_table(p, COMPARISONS, "comparisons") for p in inputs["comparisons"]],
            strict=True,
        )
    )
    discovered = [_discovered_table(p) for p in inputs.get("discovered", [])]
    discovery_edits = {}
    for path in inputs.get("discovery_edits", []):
        frame = pl.read_parquet(path)
        missing = [c for c in DISCOVERY_EDIT_COLUMNS if c not in frame.columns]
        if missing:
            raise ValueError(f"{path}: missing column(s) {missing}; have {frame.columns}")
        discovery_edits[Path(path).parent.name] = frame  # results/discovery/<dataset>/edits.parquet
    return {"pairs": pairs, "discovered": discovered, "discovery_edits": discovery_edits}


def _discovered_table(path: str) -> pl.DataFrame:
    """Bias discovery's table: its Parquet file (checked against its contract), or its CSV page."""
    if path.endswith(".parquet"):
        return read_table(path, DISCOVERED_BIASES, "discovered biases")
    return pl.read_csv(path)


def findings_table(
    tables: Mapping[str, Any], descriptions: Mapping[str, str], settings: FindingSettings
) -> pl.DataFrame:
    """FINDINGS of every pair and discovered feature."""
    attributes, discoveries, attribute_edits = [], [], {}
    for effects, edits, changes, comparisons in tables["pairs"]:
        texts = edit_texts(edits, comparisons)
        attributes += attribute_findings(effects, changes, texts, descriptions, settings)
        for dataset, method in effects.select("dataset", "method").unique().iter_rows():
            attribute_edits[(dataset, method)] = texts
    for discovered in tables["discovered"]:
        discoveries += discovered_findings(discovered, tables["discovery_edits"], settings)
    attributes = place_attributes_under_classes(attributes, discoveries, attribute_edits)
    placed = place_under_carriers(attributes, discoveries, settings.leading_attributes)
    return findings_frame(placed + discoveries)


def run_findings(
    inputs: Mapping[str, Sequence[str]],
    descriptions: Mapping[str, str],
    order: Mapping[str, Sequence[str]],
    level: float,
    links: Mapping[str, str | None],
    outputs: Mapping[str, str],
    log: logging.Logger,
    settings: Mapping[str, Any] | None = None,
) -> pl.DataFrame:
    """The findings table (Parquet, CSV, Markdown, HTML) and the report's landing text.

    ``order``: ``datasets`` and ``rms`` in config order; ``links``: the report categories of the findings
    table (``table``) and of the flip rates (``flip_rates``, None where the run has none)."""
    frame = findings_table(read_findings_inputs(inputs), descriptions, FindingSettings(**(settings or {})))
    Path(outputs["parquet"]).parent.mkdir(parents=True, exist_ok=True)
    write_table(frame, outputs["parquet"], FINDINGS, "findings")
    write_table_pages(frame.select(SHOWN), TITLE, NOTE, outputs["csv"], outputs["md"], outputs["html"])
    frame.write_csv(outputs["csv"])  # every column for machines; the pages show the readable ones
    block = findings_rst(
        frame, order["datasets"], order["rms"], level, links["table"], links.get("flip_rates")
    )
    template = Path(str(inputs["template"])).read_text(encoding="utf-8")
    Path(outputs["landing"]).write_text(landing_text(template, block), encoding="utf-8")
    for row in frame.filter(pl.col("leading")).iter_rows(named=True):
        log.info(
            "%s/%s: %s (%s %s)", row["dataset"], row["rm"], row["phrase"], row["name"], signed(row["effect"])
        )
    return frame
