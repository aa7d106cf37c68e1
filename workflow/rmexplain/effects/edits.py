"""The edits the attribute effects are estimated from: every response, every attribute, both directions.

The paper's perturbations move y+ only worse and y− only better, each against one RM's preference. Here every
original response of a comparison (chosen and rejected alike) is edited along every attribute once in each
direction (round 1), by the method's *editor* (``effect_editor``, declared on the registered method: the
``rules`` edits, or the LLM's attribute-rewrite prompt for ``two_step``), and each edit is edited back in the
other direction (round 2: RATE's rewrite of the rewrite). No RM takes part, so one set per (dataset, method)
serves every RM, and two RMs are compared on identical texts.

A chain is named by its first direction: ``worse`` (down, then back up) or ``better`` (up, then back down).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from rmexplain.perturb.base import Draft, MethodContext, PerturbationError, PerturbTask, methods
from rmexplain.perturb.skips import SkipRecorder
from rmexplain.schemas import EFFECT_EDITS, conform, polars_schema

DIRECTIONS = ("worse", "better")
OTHER_SIDE = {"chosen": "rejected", "rejected": "chosen"}


def opposite(direction: str) -> str:
    """The other edit direction."""
    return DIRECTIONS[1 - DIRECTIONS.index(direction)]


def edit_id(method: str, comparison_id: str, target: str, attribute: str, chain: str, round_: int) -> str:
    """Stable id of one edit slot (independent of the edited text)."""
    key = "\x1f".join([method, comparison_id, target, attribute, chain, str(round_)])
    return hashlib.sha256(key.encode()).hexdigest()[:20]


def effect_editor(method: str) -> Any:
    """The editor registered method ``method`` declares, or None when it cannot make attribute edits."""
    return methods.get(method).effect_editor or None


def round_one_tasks(comparisons: pl.DataFrame) -> list[PerturbTask]:
    """Four tasks per comparison: each original response made worse and made better.

    No RM orients them, so the tasks carry no scores (NaN): an editor must not need them."""
    tasks = []
    for row in comparisons.sort("comparison_id").iter_rows(named=True):
        for target in ("chosen", "rejected"):
            for direction in DIRECTIONS:
                tasks.append(
                    PerturbTask(row["comparison_id"], target, direction, row["prompt"], row[target],
                                row[OTHER_SIDE[target]], float("nan"), float("nan"))
                )  # fmt: skip
    return tasks


def _rows(drafts: Sequence[Draft], method: str, round_: int) -> list[dict[str, Any]]:
    rows = []
    for d in drafts:
        chain = d.direction if round_ == 1 else opposite(d.direction)
        rows.append(
            {
                "edit_id": edit_id(method, d.comparison_id, d.target, d.attribute or "", chain, round_),
                "comparison_id": d.comparison_id,
                "target": d.target,
                "attribute": d.attribute,
                "chain": chain,
                "round": round_,
                "direction": d.direction,
                "text": d.text,
                "method": method,
                "generator": d.generator,
            }
        )
    return rows


def _round_two_tasks(
    first: Sequence[Draft], originals: Mapping[tuple[str, str], PerturbTask]
) -> list[PerturbTask]:
    """Each round-1 edit, to be edited back in the other direction (the other response stays the original)."""
    return [
        dataclasses.replace(
            originals[(d.comparison_id, d.target)], direction=opposite(d.direction), response=d.text
        )
        for d in first
    ]


def _relabel(recorder: SkipRecorder, into: SkipRecorder, round_: int) -> None:
    for skip in recorder.records:
        into.records.append(dataclasses.replace(skip, stage=f"effects round {round_} ({skip.stage})"))


def make_effect_edits(
    comparisons: pl.DataFrame,
    method: str,
    registered: str,
    settings: Mapping[str, Any],
    attributes: Mapping[str, str],
    services: dict[str, Any],
    rewrite_of_rewrite: bool,
    log: logging.Logger,
) -> tuple[pl.DataFrame, SkipRecorder]:
    """EFFECT_EDITS rows of one (dataset, method) and the slots no edit filled.

    ``method`` is the configured name (a variant's, say), ``registered`` the method behind it, whose
    ``effect_editor`` runs with ``settings``; ``services`` are the method's (an LLM client for LLM methods).
    """
    editor = effect_editor(registered)
    if editor is None:
        raise PerturbationError(f"perturbation method {method!r} declares no editor for attribute effects")
    skipped = SkipRecorder()
    tasks = round_one_tasks(comparisons)
    first = _edit(editor, tasks, attributes, settings, services, skipped, 1, log)
    rows = _rows(first, method, 1)
    if rewrite_of_rewrite:
        by_response = {(t.comparison_id, t.target): t for t in tasks}
        for attribute, description in attributes.items():
            mine = [d for d in first if d.attribute == attribute]
            back = _edit(editor, _round_two_tasks(mine, by_response), {attribute: description}, settings,
                         services, skipped, 2, log)  # fmt: skip
            rows.extend(_rows(back, method, 2))
    frame = pl.DataFrame(rows, schema=polars_schema(EFFECT_EDITS)).sort("edit_id")
    log.info(
        "%s: %d edits of %d responses x %d attributes (round 1: %d, round 2: %d), %d slots without an edit",
        method, frame.height, len(tasks) // 2, len(attributes), frame.filter(pl.col("round") == 1).height,
        frame.filter(pl.col("round") == 2).height, len(skipped.records),
    )  # fmt: skip
    return conform(frame, EFFECT_EDITS, f"effect edits[{method}]"), skipped


def _edit(
    editor: Any,
    tasks: Sequence[PerturbTask],
    attributes: Mapping[str, str],
    settings: Mapping[str, Any],
    services: dict[str, Any],
    skipped: SkipRecorder,
    round_: int,
    log: logging.Logger,
) -> list[Draft]:
    """One call of the editor, its skips recorded under ``effects round <n>``."""
    recorder = SkipRecorder()
    context = MethodContext(dict(attributes), dict(settings), log, {**services, "skips": recorder})
    drafts = editor(tasks, context)
    _relabel(recorder, skipped, round_)
    return drafts
