"""Orientation of comparisons by an RM, and CF/SF categorisation of perturbations (paper §2.2).

For a comparison with RM preference y+ ≻ y− (r(x,y+) > r(x,y−)):
- a perturbation y'+ of y+ is a counterfactual iff r(x,y'+) < r(x,y−), else a semifactual;
- a perturbation y'− of y− is a counterfactual iff r(x,y'−) > r(x,y+), else a semifactual.
Ties are semifactuals (the preference did not flip). Semifactuals are split further: ``between`` when
the reward stayed between the two originals, ``beyond`` when it moved past the perturbed response's
own original, away from the other one (r(x,y'+) > r(x,y+), or r(x,y'−) < r(x,y−)).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import polars as pl

from rmexplain.ids import text_id
from rmexplain.schemas import EXPLANATIONS, ORIGINAL_SCORES, conform

COUNTERFACTUAL = "counterfactual"
SEMIFACTUAL = "semifactual"


def orient(
    comparisons: pl.DataFrame,
    rm: str,
    chosen: Sequence[float | None],
    rejected: Sequence[float | None],
    truncated: tuple[Sequence[bool | None], Sequence[bool | None]] | None = None,
    max_length: int | None = None,
) -> pl.DataFrame:
    """ORIGINAL_SCORES rows: each comparison's rewards, the RM's y+ and agreement with the human label.

    A null reward (an original skipped for length) leaves the comparison unoriented, like a tie;
    ``truncated`` = (chosen, rejected) flags of the length check (default: unknown)."""
    unknown = [None] * comparisons.height
    cut_chosen, cut_rejected = truncated or (unknown, unknown)
    frame = pl.DataFrame(
        {
            "comparison_id": comparisons["comparison_id"],
            "rm": [rm] * comparisons.height,
            "reward_chosen": pl.Series(chosen, dtype=pl.Float64),
            "reward_rejected": pl.Series(rejected, dtype=pl.Float64),
            "truncated_chosen": pl.Series(cut_chosen, dtype=pl.Boolean),
            "truncated_rejected": pl.Series(cut_rejected, dtype=pl.Boolean),
            "max_length": pl.Series([max_length] * comparisons.height, dtype=pl.Int64),
        }
    ).with_columns(
        plus_target=pl.when(pl.col("reward_chosen") > pl.col("reward_rejected"))
        .then(pl.lit("chosen"))
        .when(pl.col("reward_chosen") < pl.col("reward_rejected"))
        .then(pl.lit("rejected"))
        .otherwise(pl.lit(None, dtype=pl.String))
    )
    frame = frame.with_columns(agrees_with_human=pl.col("plus_target") == "chosen")
    return conform(frame, ORIGINAL_SCORES, f"original_scores[{rm}]")


def skipped_for_length(originals: pl.DataFrame) -> pl.DataFrame:
    """ORIGINAL_SCORES rows with an original left unscored (``overlong: skip``): not oriented, not tied."""
    return originals.filter(pl.any_horizontal(pl.col("reward_chosen", "reward_rejected").is_null()))


def classify(
    side: str, reward_plus: float, reward_minus: float, reward_perturbed: float
) -> tuple[str, str | None, float]:
    """(kind, semifactual sub-kind, reward delta opposing the preference) of one perturbation."""
    if side == "plus":
        delta = reward_plus - reward_perturbed
        if reward_perturbed < reward_minus:
            return COUNTERFACTUAL, None, delta
        return SEMIFACTUAL, ("beyond" if reward_perturbed > reward_plus else "between"), delta
    if side == "minus":
        delta = reward_perturbed - reward_minus
        if reward_perturbed > reward_plus:
            return COUNTERFACTUAL, None, delta
        return SEMIFACTUAL, ("beyond" if reward_perturbed < reward_minus else "between"), delta
    raise ValueError(f"side must be 'plus' or 'minus', got {side!r}")


def categorise(
    comparisons: pl.DataFrame,
    originals: pl.DataFrame,
    perturbations: pl.DataFrame,
    rewards: pl.DataFrame,
    dataset: str,
    rm: str,
    method: str,
    log: logging.Logger,
) -> pl.DataFrame:
    """EXPLANATIONS rows for one (dataset, RM, method): every perturbation as a CF or an SF."""
    oriented = originals.filter(pl.col("plus_target").is_not_null())
    too_long = skipped_for_length(originals).height
    ties = originals.height - oriented.height - too_long
    if ties:
        log.warning("%d comparisons skipped: the RM scores chosen and rejected exactly equal", ties)
    if too_long:
        log.warning("%d comparisons skipped: an original is over the RM's token limit (skipped)", too_long)
    table = (
        perturbations.join(
            comparisons.select("comparison_id", "seed", "prompt"), on="comparison_id", how="inner"
        )
        .join(oriented, on="comparison_id", how="inner")
        .with_columns(
            text_id=pl.struct("prompt", "text").map_elements(
                lambda r: text_id(r["prompt"], r["text"]), return_dtype=pl.String
            )
        )
        .join(rewards.select("text_id", "reward", scored=pl.lit(True)), on="text_id", how="left")
    )
    unscored = table.filter(pl.col("scored").is_null())
    if unscored.height:
        raise ValueError(
            f"{unscored.height} perturbations have no reward from {rm} "
            f"(first: {unscored['perturbation_id'][0]});"
            " the rewards table is stale: rerun score_perturbations"
        )
    skipped = perturbations.height - table.height
    if skipped:
        log.warning("%d perturbations skipped: their comparison is tied or not oriented for %s", skipped, rm)
    cut = table.filter(pl.col("reward").is_null()).height
    if cut:
        log.warning("%d perturbations skipped: their text is over the RM's token limit (overlong: skip)", cut)
    table = table.filter(pl.col("reward").is_not_null())
    rows = []
    for row in table.iter_rows(named=True):
        side = "plus" if row["target"] == row["plus_target"] else "minus"
        plus_reward = row[f"reward_{row['plus_target']}"]
        minus_reward = row["reward_rejected" if row["plus_target"] == "chosen" else "reward_chosen"]
        kind, subkind, delta = classify(side, plus_reward, minus_reward, row["reward"])
        rows.append(
            {
                "dataset": dataset,
                "rm": rm,
                "method": method,
                "comparison_id": row["comparison_id"],
                "seed": row["seed"],
                "perturbation_id": row["perturbation_id"],
                "target": row["target"],
                "side": side,
                "attribute": row["attribute"],
                "variant": row["variant"],
                "reward_plus": plus_reward,
                "reward_minus": minus_reward,
                "reward_perturbed": row["reward"],
                "kind": kind,
                "sf_subkind": subkind,
                "reward_delta": delta,
                "agrees_with_human": row["agrees_with_human"],
            }
        )
    frame = pl.DataFrame(rows, schema={k: c.dtype for k, c in EXPLANATIONS.items()})
    counts = frame.group_by("side", "kind").len().sort("side", "kind").rows()
    log.info("%s on %s/%s: %d perturbations categorised %s", rm, dataset, method, frame.height, counts)
    return conform(frame, EXPLANATIONS, f"explanations[{dataset}/{method}/{rm}]")
