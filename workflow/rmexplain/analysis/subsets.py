"""RMs whose flip rates, τ and examples rest on a subset of their dataset's comparisons, marked where shown.

On a shared perturbation set (paper §4) an RM outside ``shared_rms`` (App. G's RMs) is explained only on the
comparisons where its own y+ is the agreed one (``foreign_rm_orientation: agreed``), or on those it does not
tie (``own``): fewer comparisons than the shared RMs. Tables and figures built from the explanations mark such
an RM with ``MARK`` and say why in a note. ``foreign`` is what the rules pass
(``targets.foreign_orientation_settings``): per dataset with such RMs, its ``shared_rms``, ``foreign_rms``
and ``orientation``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

MARK = "†"
RM_COLUMNS = ("rm", "rm_a", "rm_b")
Foreign = Mapping[str, Mapping[str, Any]]
ON_WHICH = {
    "agreed": (
        "only on the comparisons where its own y+ is the agreed one (foreign_rm_orientation: agreed; this "
        "project's reading of App. G, which does not say)"
    ),
    "own": "on the comparisons it does not tie, by its own y+ (foreign_rm_orientation: own)",
}


def subset_pairs(foreign: Foreign | None) -> set[tuple[str, str]]:
    """(dataset, RM) of every RM measured on a subset."""
    return {(dataset, rm) for dataset, d in (foreign or {}).items() for rm in d["foreign_rms"]}


def mark_subset_rms(frame: pl.DataFrame, foreign: Foreign | None) -> pl.DataFrame:
    """``frame`` (with a ``dataset`` column) with ``MARK`` after the name of every RM measured on a subset, in
    each of its RM columns."""
    pairs = subset_pairs(foreign)
    if not pairs or "dataset" not in frame.columns:
        return frame
    return frame.with_columns(
        pl.when(_is_subset(column, pairs)).then(pl.col(column) + f" {MARK}").otherwise(pl.col(column))
        for column in RM_COLUMNS
        if column in frame.columns
    )


def _is_subset(column: str, pairs: set[tuple[str, str]]) -> pl.Expr:
    return pl.any_horizontal(
        (pl.col("dataset") == dataset) & (pl.col(column) == rm) for dataset, rm in sorted(pairs)
    )


def subset_note(foreign: Foreign | None, datasets: Iterable[str] | None = None) -> str:
    """What ``MARK`` means, per dataset (of ``datasets``, default all) with such RMs; empty when none."""
    shown = set(datasets) if datasets is not None else None
    parts = [
        f"{', '.join(d['foreign_rms'])} on {dataset} (outside shared_rms {', '.join(d['shared_rms'])}): "
        f"explained {ON_WHICH[d['orientation']]}"
        for dataset, d in (foreign or {}).items()
        if shown is None or dataset in shown
    ]
    if not parts:
        return ""
    return (
        f"{MARK} outside shared_rms, measured on part of the shared comparisons: {'; '.join(parts)}. Counts: "
        "the foreign_rm_orientation table (Diagnostics)."
    )
