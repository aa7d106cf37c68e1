"""File-level entry points of the findings rules (``workflow/rules/findings.smk``): each script calls one."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from rmexplain.analysis.bootstrap import BootstrapSettings
from rmexplain.effects.analysis import original_length_sd, reward_sd
from rmexplain.effects.base import LENGTH
from rmexplain.findings.attribution import (
    Candidate,
    Check,
    CheckKey,
    carrier_checks,
    carrier_edits,
    masks,
    rescored_classes,
    skip_reasons,
    unmasked_effect,
)
from rmexplain.findings.carriers import class_named, place_attributes_under_classes, proposals
from rmexplain.findings.changes import effect_changes
from rmexplain.findings.landing import findings_rst, landing_text
from rmexplain.findings.summary import (
    DISCOVERY_EDIT_COLUMNS,
    EXAMPLE_WORDS,
    FindingSettings,
    attribute_findings,
    discovered_findings,
    discovered_significant,
    discovery_length_findings,
    edit_texts,
    findings_frame,
    place_under_carriers,
)
from rmexplain.markup import signed, write_table_pages
from rmexplain.schemas import (
    ATTRIBUTE_EFFECTS,
    CARRIER_EDITS,
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
    f" the edit that changed the length most within {EXAMPLE_WORDS} words in the way the effect says), the"
    " stretches those edits inserted and deleted most often, and a phrase that carries most of the effect"
    " where one does (docs/findings.md); then discovered features. `order`: every finding of the RM on the"
    " dataset, of every kind and method, in one ranking by |effect|, the order of the first screen."
    " `leading`: shown on the report's first page and the explorer's."
    " `replication`: whether a significant finding holds in both halves of the pairs (each half's effect"
    " with its sign, each half's interval excluding 0; docs/findings.md). `carried_by`: 1 or 2 where leaving"
    " out the one or two most influential pairs makes a significant finding's effect 0, of the other sign"
    " or (discovered) within the minimum effect; `without_it`: its effect without the most influential pair."
    " `nature`, `natural_effect`: a discovered feature's association with the reward among the original"
    " responses at equal length, and whether it agrees with the edits (docs/discovery.md). `robust`,"
    " `robust_effect`: whether Huber's robust fit of the same edits agrees (docs/effects.md)."
)
SHOWN = ["dataset", "method", "rm", "order", "rank", "leading", "phrase", "name", "effect", "low", "high",
         "significant", "replication", "carried_by", "without_it", "nature", "natural_effect", "robust",
         "robust_effect", "reference",
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
    tables: Mapping[str, Any],
    descriptions: Mapping[str, str],
    settings: FindingSettings,
    checks: Mapping[CheckKey, Check] | None = None,
    unmasked: Mapping[tuple[str, str, str, str, str], Mapping[str, Any]] | None = None,
) -> pl.DataFrame:
    """FINDINGS of every pair and discovered feature; ``checks``: the carriers re-scored; ``unmasked``:
    ``unmasked_findings``."""
    attributes, discoveries = [], []
    texts = pair_texts(tables)
    for (effects, _, changes, _), pair in zip(tables["pairs"], texts, strict=True):
        attributes += attribute_findings(effects, changes, pair, descriptions, settings)
    measured = {r["dataset"] for r in attributes}
    for discovered in tables["discovered"]:
        discoveries += discovered_findings(discovered, tables["discovery_edits"], settings, checks, unmasked)
        attributes += discovery_length_findings(discovered, measured)
    edits = attribute_edits(tables, texts)
    attributes = place_attributes_under_classes(attributes, discoveries, edits, checks)
    placed = place_under_carriers(attributes, discoveries, settings.leading_attributes)
    return findings_frame(placed + discoveries)


def pair_texts(tables: Mapping[str, Any]) -> list[pl.DataFrame]:
    """Each pair's round-1 edits with their sources (``edit_texts``), in pair order."""
    return [edit_texts(edits, comparisons) for _, edits, _, comparisons in tables["pairs"]]


def attribute_edits(
    tables: Mapping[str, Any], texts: Sequence[pl.DataFrame]
) -> dict[tuple[str, str], pl.DataFrame]:
    """(dataset, method) -> its round-1 edits with their sources; ``texts``: ``pair_texts(tables)``."""
    out = {}
    for (effects, *_), pair in zip(tables["pairs"], texts, strict=True):
        for dataset, method in effects.select("dataset", "method").unique().iter_rows():
            out[(dataset, method)] = pair
    return out


# ── the carrier re-scored ─────────────────────────────────────────────────────────────────────────────────
def effect_rows(tables: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each attribute effect (primary estimator, no length row) and discovered feature with a defined
    effect: ``dataset, rm, kind, method, name, effect, low, high, significant``."""
    rows = [
        {"dataset": r["dataset"], "rm": r["rm"], "kind": "attribute", "method": r["method"],
         "name": r["attribute"], "effect": r["effect"], "low": r["low"], "high": r["high"],
         "significant": bool(r["significant"])}
        for effects, *_ in tables["pairs"]
        for r in effects.filter(pl.col("primary") & (pl.col("attribute") != LENGTH)).iter_rows(named=True)
    ]  # fmt: skip
    rows += [
        {"dataset": r["dataset"], "rm": r["rm"], "kind": "discovered", "method": r["engine"],
         "name": r["feature"], "effect": r["effect"], "low": r["low"], "high": r["high"],
         "significant": discovered_significant(r)}
        for discovered in tables["discovered"]
        for r in discovered.iter_rows(named=True)
    ]  # fmt: skip
    return [r for r in rows if r["effect"] is not None and np.isfinite(r["effect"])]


def run_carrier_edits(
    inputs: Mapping[str, Sequence[str]], dataset: str, output: str, log: logging.Logger
) -> None:
    """CARRIER_EDITS of one dataset: the edits of every (finding, class) the classes' measured effects
    propose, with the class's change undone; ``inputs`` as the findings' (``read_findings_inputs``), for this
    dataset's pairs."""
    tables = read_findings_inputs(inputs)
    rows = [r for r in effect_rows(tables) if r["dataset"] == dataset]
    pairs = attribute_edits(tables, pair_texts(tables))
    candidates = proposals(
        [r for r in rows if r["kind"] == "attribute"],
        [r for r in rows if r["kind"] == "discovered"],
        pairs,
        tables["discovery_edits"],
    )

    def edits_of(candidate: Candidate) -> pl.DataFrame:
        if candidate.kind == "discovered":
            edits = tables["discovery_edits"][candidate.dataset].filter(
                (pl.col("feature") == candidate.finding) & (pl.col("engine") == candidate.method)
            )
            return edits.select(EDIT_COLUMNS)
        edits = pairs[(candidate.dataset, candidate.method)].filter(pl.col("attribute") == candidate.finding)
        sign = pl.when(pl.col("direction") == "better").then(1).otherwise(-1)
        return edits.select(
            "comparison_id", "target", sign.alias("direction"), sign.alias("dose"), "source_text",
            pl.col("text").alias("edited_text"),
        )  # fmt: skip

    frame = carrier_edits(candidates, {c.carrier: class_named(c.carrier) for c in candidates}, edits_of)
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    write_table(frame, output, CARRIER_EDITS, "carrier edits")
    skips = frame.filter(pl.col("skip").is_not_null())
    log.info("%s: %d (finding, class) proposed, %d edits, %d with the class undone, %d skipped",
             dataset, len(candidates), frame.height, frame.height - skips.height, skips.height)  # fmt: skip
    for reason, count in skip_reasons(frame).iter_rows():
        log.info("  skipped %d: %s", count, reason)


EDIT_COLUMNS = ["comparison_id", "target", "direction", "dose", "source_text", "edited_text"]


def with_rescored_classes(
    tables: Mapping[str, Any],
    checks: Mapping[CheckKey, Check],
    carriers: Mapping[str, Mapping[str, str | None]],
    bootstrap: BootstrapSettings,
) -> dict[str, Any]:
    """``tables`` with a discovered row (engine ``re-scored``) for each class that carries a significant
    finding by re-scoring but has no significant row of its own (``rescored_classes``)."""
    held = {(r["dataset"], r["rm"], r["name"]) for r in effect_rows(tables) if r["significant"]}
    references = {(d, rm): ref for d, refs in carriers.items() for rm, ref in refs.items()}
    rows = rescored_classes(checks, held, references, bootstrap)
    if not rows.height:
        return dict(tables)
    discovered = [pl.concat([*tables["discovered"], rows], how="diagonal_relaxed")]
    return {**tables, "discovered": discovered}


def read_carrier_checks(
    inputs: Mapping[str, Sequence[str]],
    carriers: Mapping[str, Mapping[str, str | None]],
    tables: Mapping[str, Any],
) -> dict[CheckKey, Check]:
    """Every RM's re-scoring of every proposed carrier; ``carriers``: dataset -> its RMs (``inputs``'
    ``carrier_rewards`` and ``carrier_originals`` order) -> the RM each is read against; ``inputs``: per
    dataset (``carriers`` order) ``carrier_edits`` and ``carrier_comparisons``."""
    rows = effect_rows(tables)
    effects = {(r["dataset"], r["rm"], r["kind"], r["method"], r["name"]): r["effect"] for r in rows}
    significant = {key for key, row in zip(effects, rows, strict=True) if row["significant"]}
    rewards_files = iter(inputs.get("carrier_rewards", []))
    originals_files = iter(inputs.get("carrier_originals", []))
    checks: dict[CheckKey, Check] = {}
    for path, comparisons, references in zip(
        inputs.get("carrier_edits", []), inputs.get("carrier_comparisons", []), carriers.values(), strict=True
    ):
        rewards, sds = {}, {}
        for rm in references:
            scored = read_table(next(rewards_files), REWARDS, f"{rm}'s carrier rewards")
            rewards[rm] = dict(zip(scored["text_id"].to_list(), scored["reward"].to_list(), strict=True))
            sds[rm] = reward_sd(read_table(next(originals_files), ORIGINAL_SCORES, "original scores"))
        prompts = read_table(comparisons, COMPARISONS, "comparisons").select("comparison_id", "prompt")
        edits = read_table(path, CARRIER_EDITS, "carrier edits")
        checks.update(
            carrier_checks(edits, dict(prompts.iter_rows()), rewards, sds, references, effects, significant)
        )
    return checks


def unmasked_findings(
    checks: Mapping[CheckKey, Check],
    tables: Mapping[str, Any],
    comparisons: Mapping[str, str],
    bootstrap: BootstrapSettings,
) -> dict[tuple[str, str, str, str, str], dict[str, Any]]:
    """(dataset, RM, kind, method, finding) -> its effect with a class that works against it undone
    (``unmasked_effect``; ``by``: the class), for each discovered feature some class masks (``masks``): of
    several, the largest |effect| (ties by the class's name). ``comparisons``: dataset -> its comparisons'
    file, whose responses give the unit of length; each RM's slope is the one its discovery used."""
    slopes = {
        (r["dataset"], r["rm"]): r["length_slope"]
        for discovered in tables["discovered"]
        if "length_slope" in discovered.columns
        for r in discovered.select("dataset", "rm", "length_slope").drop_nulls().iter_rows(named=True)
    }
    length_sds = {
        dataset: original_length_sd(read_table(path, COMPARISONS, "comparisons"))
        for dataset, path in comparisons.items()
    }
    found: dict[tuple[str, str, str, str, str], dict[str, Any]] = {}
    for (dataset, rm, kind, method, finding, carrier), check in sorted(checks.items()):
        slope = slopes.get((dataset, rm))
        if kind != "discovered" or slope is None or dataset not in length_sds:
            continue
        estimate = unmasked_effect(check, dataset, slope, length_sds[dataset], bootstrap)
        key = (dataset, rm, kind, method, finding)
        if masks(check, estimate) and (
            key not in found or round(abs(estimate["effect"]), 9) > round(abs(found[key]["effect"]), 9)
        ):
            found[key] = {**estimate, "by": carrier}
    return found


def run_findings(
    inputs: Mapping[str, Sequence[str]],
    descriptions: Mapping[str, str],
    order: Mapping[str, Sequence[str]],
    level: float,
    links: Mapping[str, str | None],
    outputs: Mapping[str, str],
    log: logging.Logger,
    settings: Mapping[str, Any] | None = None,
    carriers: Mapping[str, Mapping[str, str | None]] | None = None,
    bootstrap: Mapping[str, Any] | None = None,
) -> pl.DataFrame:
    """The findings table (Parquet, CSV, Markdown, HTML) and the report's landing text; ``carriers``: as
    ``read_carrier_checks``'s, where the run re-scores carriers; ``bootstrap``: the analysis' settings, for
    the interval of a class measured by re-scoring.

    ``order``: ``datasets`` and ``rms`` in config order; ``links``: the report categories of the findings
    table (``table``) and of the flip rates (``flip_rates``, None where the run has none)."""
    tables = read_findings_inputs(inputs)
    checks = read_carrier_checks(inputs, carriers or {}, tables)
    for key, check in checks.items():
        log.info("carrier re-scored: %s: share %.3f over %d edits (%d skipped)", "/".join(key), check.share,
                 check.checked, check.skipped)  # fmt: skip
    bootstrap_settings = BootstrapSettings.from_config(bootstrap)
    comparisons = dict(zip(carriers or {}, inputs.get("carrier_comparisons", []), strict=True))
    unmasked = unmasked_findings(checks, tables, comparisons, bootstrap_settings)
    for (dataset, rm, _, method, finding), estimate in unmasked.items():
        log.info("%s/%s/%s: %s %+.3f with %s undone", dataset, rm, method, finding, estimate["effect"],
                 estimate["by"])  # fmt: skip
    tables = with_rescored_classes(tables, checks, carriers or {}, bootstrap_settings)
    frame = findings_table(tables, descriptions, FindingSettings(**(settings or {})), checks, unmasked)
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
