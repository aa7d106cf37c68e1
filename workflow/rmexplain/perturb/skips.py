"""Counted, logged records of perturbations that could not be made (``schemas.PERTURB_SKIPS``).

Methods receive a ``SkipRecorder`` as ``context.services["skips"]`` and add one record per missing
slot with a reason (and the raw LLM answer, when that is what failed); ``perturb_to_parquet``
writes them next to the perturbations and logs the counts by stage and reason; ``skip_counts`` sums
every job's skips for the report's table.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import polars as pl

from rmexplain.schemas import PERTURB_SKIPS, conform, polars_schema


@dataclass(frozen=True)
class Skip:
    """One missing perturbation slot (or a whole comparison, when target is None)."""

    comparison_id: str
    target: str | None
    attribute: str | None
    variant: int | None
    stage: str
    reason: str
    raw: str | None = None


class SkipRecorder:
    """Collects skips during one perturbation job."""

    def __init__(self) -> None:
        self.records: list[Skip] = []

    def add(
        self,
        comparison_id: str,
        stage: str,
        reason: str,
        *,
        target: str | None = None,
        attribute: str | None = None,
        variant: int | None = None,
        raw: str | None = None,
    ) -> None:
        self.records.append(Skip(comparison_id, target, attribute, variant, stage, reason, raw))

    def frame(self) -> pl.DataFrame:
        rows = [asdict(r) for r in self.records]
        return conform(
            pl.DataFrame(rows, schema=polars_schema(PERTURB_SKIPS)), PERTURB_SKIPS, "perturb skips"
        )

    def log_counts(self, log: logging.Logger) -> None:
        """One line per (stage, reason) with its count; nothing is skipped silently."""
        if not self.records:
            log.info("nothing skipped")
            return
        counts = Counter((r.stage, r.reason) for r in self.records)
        log.warning(
            "%d skipped (perturbation slots or whole comparisons), by stage and reason:", len(self.records)
        )
        for (stage, reason), n in sorted(counts.items()):
            log.warning("  %5d  [%s] %s", n, stage, reason)


SKIP_TABLE_KEYS = ["dataset", "method", "orienter", "stage", "reason"]


def skip_counts(parts: Sequence[Sequence[str]], frames: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """One row per (dataset, method, orienter, stage, reason) of the perturbation jobs' skips: ``skipped``
    records (slots, or whole comparisons) and the distinct ``comparisons`` they touch. ``parts`` names each
    frame's job as (dataset, method, orienter); rows sorted by those keys."""
    tagged = [
        frame.select("comparison_id", "stage", "reason").with_columns(
            dataset=pl.lit(dataset), method=pl.lit(method), orienter=pl.lit(orienter)
        )
        for (dataset, method, orienter), frame in zip(parts, frames, strict=True)
    ]
    schema = {key: pl.String for key in SKIP_TABLE_KEYS}
    if not tagged:
        return pl.DataFrame(schema={**schema, "skipped": pl.UInt32, "comparisons": pl.UInt32})
    return (
        pl.concat(tagged)
        .group_by(SKIP_TABLE_KEYS)
        .agg(skipped=pl.len(), comparisons=pl.col("comparison_id").n_unique())
        .sort(SKIP_TABLE_KEYS)
    )
