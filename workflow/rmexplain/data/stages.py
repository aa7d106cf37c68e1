"""The sample stage: read a configured dataset, filter it, and draw ``n`` comparisons per seed."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import polars as pl

from rmexplain.data.readers import DataError, Pair, SkipCounter, check_pair
from rmexplain.data.sources import source_of
from rmexplain.schemas import COMPARISONS, conform


def read_pool(spec: dict[str, Any], skips: SkipCounter) -> list[Pair]:
    """Every usable pair of a dataset spec, before sampling."""
    return source_of(spec).read(spec, skips)


def sample_pairs(pool: list[Pair], n_per_seed: int, seeds: list[int], dataset: str) -> pl.DataFrame:
    """``n_per_seed`` pairs per seed, drawn without replacement with ``numpy.random.default_rng(seed)``."""
    rows = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        picks = rng.choice(len(pool), size=min(n_per_seed, len(pool)), replace=False)
        for i in sorted(picks.tolist()):
            pair = pool[i]
            rows.append(
                {
                    "comparison_id": f"{dataset}-s{seed}-{pair.source_index}",
                    "dataset": dataset,
                    "seed": seed,
                    "source_index": pair.source_index,
                    "prompt": pair.prompt,
                    "chosen": pair.chosen,
                    "rejected": pair.rejected,
                }
            )
    return pl.DataFrame(rows, schema={k: c.dtype for k, c in COMPARISONS.items()})


def sample_comparisons(
    dataset: str,
    spec: dict[str, Any],
    n_per_seed: int,
    seeds: list[int],
    max_words: int | None,
    log: logging.Logger,
) -> pl.DataFrame:
    """The comparisons table of one dataset (contract COMPARISONS)."""
    skips = SkipCounter()
    pool = [p for p in read_pool(spec, skips) if check_pair(p, skips, max_words)]
    log.info("dataset %s: %d usable pairs; skipped: %s", dataset, len(pool), skips.summary())
    if not pool:
        raise DataError(f"datasets.{dataset}: no usable comparisons ({skips.summary()})")
    if len(pool) < n_per_seed:
        log.warning(
            "dataset %s: only %d pairs, fewer than n_per_seed=%d; taking all", dataset, len(pool), n_per_seed
        )
    frame = sample_pairs(pool, n_per_seed, seeds, dataset)
    log.info("sampled %d comparisons over seeds %s", frame.height, seeds)
    return conform(frame, COMPARISONS, f"comparisons[{dataset}]")
