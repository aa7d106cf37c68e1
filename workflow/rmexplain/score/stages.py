"""The scoring stage: originals (which orient each comparison) and perturbations (each text once)."""

from __future__ import annotations

import logging
from typing import Any

import polars as pl

from rmexplain.explanations.categorise import orient
from rmexplain.ids import text_id
from rmexplain.schemas import COMPARISONS, PERTURBATIONS, REWARDS, conform, read_table
from rmexplain.score.base import build_scorer


def score_originals(
    comparisons_path: str, rm: str, spec: dict[str, Any], artifacts: dict[str, str], log: logging.Logger
) -> pl.DataFrame:
    """ORIGINAL_SCORES for one (dataset, RM)."""
    comparisons = read_table(comparisons_path, COMPARISONS, "comparisons")
    scorer = build_scorer(rm, spec, **artifacts)
    n = comparisons.height
    prompts = comparisons["prompt"].to_list() * 2
    rewards = scorer.score(prompts, comparisons["chosen"].to_list() + comparisons["rejected"].to_list())
    frame = orient(comparisons, rm, rewards[:n], rewards[n:])
    check_not_all_tied(frame, rm, comparisons_path)
    agree = frame["agrees_with_human"].drop_nulls()
    log.info(
        "%s: %d comparisons, %d ties, agreement with human labels %.3f",
        rm,
        n,
        frame["plus_target"].null_count(),
        agree.mean() if agree.len() else float("nan"),
    )
    return frame


class AllTiedError(ValueError):
    """An RM scored chosen and rejected exactly equal on every comparison: nothing to explain."""


def check_not_all_tied(frame: pl.DataFrame, rm: str, comparisons_path: str) -> None:
    """Raise when ``rm`` ties every comparison (0 kept): every table downstream would be empty."""
    if frame.height and frame["plus_target"].null_count() == frame.height:
        raise AllTiedError(
            f"{rm} scores chosen and rejected exactly equal on all {frame.height} comparisons of "
            f"{comparisons_path} (0 kept): nothing can be explained. Check the RM (a constant or untrained "
            "head, the wrong model, texts cut to the same prefix) or drop it from the dataset"
        )


def score_perturbations(
    comparisons_path: str,
    perturbation_paths: list[str],
    rm: str,
    spec: dict[str, Any],
    artifacts: dict[str, str],
    log: logging.Logger,
) -> pl.DataFrame:
    """REWARDS for every distinct (prompt, perturbed text) of the given perturbation tables."""
    prompts = read_table(comparisons_path, COMPARISONS, "comparisons").select("comparison_id", "prompt")
    texts = pl.concat(
        [
            read_table(p, PERTURBATIONS, "perturbations").select("comparison_id", "text")
            for p in perturbation_paths
        ]
    ).join(prompts, on="comparison_id", how="inner")
    unique = texts.select("prompt", "text").unique(maintain_order=True)
    log.info("%s: %d perturbations, %d distinct texts to score", rm, texts.height, unique.height)
    rewards = build_scorer(rm, spec, **artifacts).score(unique["prompt"].to_list(), unique["text"].to_list())
    frame = pl.DataFrame(
        {
            "text_id": [text_id(p, t) for p, t in unique.iter_rows()],
            "rm": [rm] * unique.height,
            "reward": pl.Series(rewards, dtype=pl.Float64),
        }
    )
    return conform(frame, REWARDS, f"rewards[{rm}]")


def train_demo_rm(part: str, training: dict, output: str, log: logging.Logger) -> None:
    """The ``train_demo_rm`` rule: fit a demo RM's scalar head on one bundled part."""
    from rmexplain.score.demo import train_demo_head

    train_demo_head(part, training, output, log)
