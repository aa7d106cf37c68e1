"""The sample stage: read a configured dataset, filter it, and draw ``n`` comparisons per seed; record what
was read (``dataset_origin``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from rmexplain.data.readers import OUT_OF_SCOPE, DataError, Pair, SkipCounter, check_pair
from rmexplain.data.sources import Origin, file_hashes, source_of
from rmexplain.schemas import COMPARISONS, conform, write_table


def read_pool(spec: dict[str, Any], skips: SkipCounter, origin: Origin | None = None) -> list[Pair]:
    """Every usable pair of a dataset spec, before sampling; what was read goes into ``origin``."""
    source = source_of(spec)
    found: Origin = {"source": source.name, "files": file_hashes(source.files(spec))}
    pairs = source.read(spec, skips, found)
    if origin is not None:
        origin.update(found)
    return pairs


def identical_seeds(dataset: str, rows: int, n_per_seed: int, seeds: Sequence[int], what: str) -> str | None:
    """Why the seeds of ``dataset`` would all draw the same comparisons (``n_per_seed`` takes all its
    ``rows``, with two seeds or more), naming the dataset and the counts; None when they differ."""
    if len(seeds) < 2 or rows > n_per_seed:
        return None
    return (
        f"datasets.{dataset}: {rows} {what}, and sample.n_per_seed={n_per_seed} draws all of them for every "
        f"one of seeds {list(seeds)}: the seeds would be identical copies, not repetitions. Set "
        f"n_per_seed below {rows} (datasets.{dataset}.n_per_seed or sample.n_per_seed), or one seed"
    )


def warn_out_of_scope(dataset: str, skips: SkipCounter, log: logging.Logger) -> None:
    """A warning per reason that left rows out of the project's scope (``OUT_OF_SCOPE``), with their count."""
    for reason, rows in skips.out_of_scope().items():
        log.warning(
            "dataset %s: %d rows out of scope, left out: %s (%s; e.g. rows %s)",
            dataset, rows, reason, OUT_OF_SCOPE[reason], skips.examples[reason],
        )  # fmt: skip


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
    origin: Origin | None = None,
) -> pl.DataFrame:
    """The comparisons table of one dataset (contract COMPARISONS); what was read goes into ``origin``, with
    the rows skipped by reason (``skipped``)."""
    skips = SkipCounter()
    pool = [p for p in read_pool(spec, skips, origin) if check_pair(p, skips, max_words)]
    if origin is not None:
        origin["skipped"] = skips.record()
    warn_out_of_scope(dataset, skips, log)
    log.info("dataset %s: %d usable pairs; skipped: %s", dataset, len(pool), skips.summary())
    if not pool:
        raise DataError(f"datasets.{dataset}: no usable comparisons ({skips.summary()})")
    identical = identical_seeds(dataset, len(pool), n_per_seed, seeds, "usable comparisons")
    if identical:
        raise DataError(f"{identical} ({skips.summary()})")
    if origin is not None:
        origin["usable"] = len(pool)
        origin["n_per_seed"] = n_per_seed
    if len(pool) < n_per_seed:
        log.warning(
            "dataset %s: only %d pairs, fewer than n_per_seed=%d; taking all", dataset, len(pool), n_per_seed
        )
    frame = sample_pairs(pool, n_per_seed, seeds, dataset)
    log.info("sampled %d comparisons over seeds %s", frame.height, seeds)
    return conform(frame, COMPARISONS, f"comparisons[{dataset}]")


def sample_to_files(
    dataset: str,
    spec: dict[str, Any],
    n_per_seed: int,
    seeds: list[int],
    max_words: int | None,
    output: str,
    origin_output: str,
    log: logging.Logger,
) -> pl.DataFrame:
    """Sample one dataset into ``output`` (COMPARISONS) and write what was read to ``origin_output``."""
    origin: Origin = {}
    frame = sample_comparisons(dataset, spec, n_per_seed, seeds, max_words, log, origin)
    write_table(frame, output, COMPARISONS, "comparisons")
    record = {"dataset": dataset, **origin}
    Path(origin_output).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    log.info("dataset %s read from %s", dataset, _origin_summary(origin))
    return frame


def _origin_summary(origin: Origin) -> str:
    if origin.get("hub_id"):
        return f"hub dataset {origin['hub_id']} at commit {origin.get('commit')}"
    return ", ".join(f"{path} (sha256 {digest[:12]})" for path, digest in origin.get("files", {}).items())
