"""The sample stage: read a configured dataset, filter it, and draw ``n`` comparisons per seed."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import polars as pl

from rmexplain.data.readers import (
    DataError,
    Pair,
    SkipCounter,
    check_pair,
    read_embedded,
    read_helpsteer2,
    read_hh_rlhf,
    read_pairs_file,
)
from rmexplain.schemas import COMPARISONS, conform


def load_hub_records(spec: dict[str, Any]) -> Any:
    """A split of a hub dataset (or a local dataset directory with the same layout) via ``datasets``."""
    from datasets import load_dataset

    default_ids = {"hh-rlhf": "Anthropic/hh-rlhf", "helpsteer2": "nvidia/HelpSteer2"}
    kwargs: dict[str, Any] = {"split": spec.get("split", "train")}
    if spec.get("data_dir"):
        kwargs["data_dir"] = spec["data_dir"]
    if spec.get("revision"):
        kwargs["revision"] = spec["revision"]
    return load_dataset(spec.get("hub_id", default_ids[spec["source"]]), **kwargs)


def read_pool(spec: dict[str, Any], skips: SkipCounter) -> list[Pair]:
    """Every usable pair of a dataset spec, before sampling."""
    source = spec["source"]
    if source == "embedded":
        return read_embedded(spec["part"], split="explain")
    if source == "file":
        return list(read_pairs_file(spec["path"], skips))
    records = load_hub_records(spec)
    if source == "hh-rlhf":
        return list(read_hh_rlhf(records, skips))
    return list(read_helpsteer2(records, skips, spec.get("preference_filter", "greater_on_all")))


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
