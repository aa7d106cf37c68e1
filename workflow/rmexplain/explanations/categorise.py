"""Orientation of comparisons by an RM, and CF/SF categorisation of perturbations (paper §2.2).

For a comparison with RM preference y+ ≻ y− (r(x,y+) > r(x,y−)):
- a perturbation y'+ of y+ is a counterfactual iff r(x,y'+) < r(x,y−), else a semifactual;
- a perturbation y'− of y− is a counterfactual iff r(x,y'−) > r(x,y+), else a semifactual.

The tie rule, as the paper's sets imply (YC+ needs r(x,y'+) < r(x,y−), YS+ is r(x,y'+) ≥ r(x,y−), and
likewise for y−): a preference is strict, so an original comparison the RM ties has no y+ and is not
explained, and a perturbation whose reward equals the other original's exactly is a semifactual (the new
comparison is tied: the preference did not flip). Semifactuals are split further: ``tie`` for exactly that
case, ``beyond`` when the reward moved past the perturbed response's own original, away from the other one
(r(x,y'+) > r(x,y+), or r(x,y'−) < r(x,y−)), and ``between`` otherwise (strictly past the other original's
reward, at most back to its own: an unchanged reward is ``between``).

A perturbation set is built against the y+ of its orienting RMs (the RM itself in per-RM orientation, the
``shared_rms`` that agree in shared orientation). An RM explained with a shared set it did not help orient
(a *foreign* RM: App. G's RMs on §4's harmless set) may prefer the other response; there the edits built to
make the agreed y+ worse make *its* y− worse, so they are no contrastive explanation of its preference.
``agreed`` (the default, and this project's reading of App. G, which does not say how its RMs are oriented)
skips such comparisons, counted; ``own`` orients them by the RM's own preference.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import polars as pl

from rmexplain.ids import text_id
from rmexplain.schemas import EXPLANATIONS, ORIGINAL_SCORES, conform

COUNTERFACTUAL = "counterfactual"
SEMIFACTUAL = "semifactual"
TIE, BETWEEN, BEYOND = "tie", "between", "beyond"  # a semifactual's sub-kind (see the tie rule above)
AGREED, OWN = "agreed", "own"  # whose y+ explains a foreign RM (``datasets.<name>.foreign_rm_orientation``)
ORIENTATIONS = (AGREED, OWN)


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


def agreed_preference(orienting: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """``comparison_id, agreed_plus_target`` of the comparisons every orienting RM orients, and the same way:
    the y+ their perturbation set was built against."""
    if not orienting:
        raise ValueError("no orienting RM: a perturbation set is oriented by at least one RM's scores")
    frames = [o.filter(pl.col("plus_target").is_not_null()) for o in orienting]
    agreed = frames[0].select("comparison_id", pl.col("plus_target").alias("agreed_plus_target"))
    for other in frames[1:]:
        agreed = (
            agreed.join(other.select("comparison_id", "plus_target"), on="comparison_id", how="inner")
            .filter(pl.col("plus_target") == pl.col("agreed_plus_target"))
            .drop("plus_target")
        )
    return agreed


def explained_comparisons(
    originals: pl.DataFrame, orienting: Sequence[pl.DataFrame], orientation: str = AGREED
) -> pl.DataFrame:
    """ORIGINAL_SCORES rows of the comparisons an RM explains with the perturbations its orienting RMs built:
    those it does not tie, that every orienting RM orients the same way, and, under ``agreed``, that the RM
    orients that way too (under ``own`` it keeps the ones it orients the other way, by its own preference)."""
    if orientation not in ORIENTATIONS:
        raise ValueError(f"orientation must be one of {ORIENTATIONS}, got {orientation!r}")
    explained = originals.filter(pl.col("plus_target").is_not_null()).join(
        agreed_preference(orienting), on="comparison_id", how="inner"
    )
    if orientation == AGREED:
        explained = explained.filter(pl.col("plus_target") == pl.col("agreed_plus_target"))
    return explained.drop("agreed_plus_target")


def disagreements(originals: pl.DataFrame, orienting: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """ORIGINAL_SCORES rows of the comparisons the orienting RMs agree on and the RM orients the other way."""
    return (
        originals.filter(pl.col("plus_target").is_not_null())
        .join(agreed_preference(orienting), on="comparison_id", how="inner")
        .filter(pl.col("plus_target") != pl.col("agreed_plus_target"))
        .drop("agreed_plus_target")
    )


def foreign_orientation_counts(
    originals: pl.DataFrame, orienting: Sequence[pl.DataFrame], orientation: str
) -> dict[str, int]:
    """For an RM explained with a perturbation set others oriented: the comparisons of that set
    (``shared_set``: every orienting RM orients them the same way), those the RM ``ties``, those it orients
    ``against_agreed``, and those it ``explained`` under ``orientation``."""
    agreed = agreed_preference(orienting)
    in_set = originals.join(agreed, on="comparison_id", how="inner")
    return {
        "shared_set": agreed.height,
        "ties": in_set.filter(pl.col("plus_target").is_null()).height,
        "against_agreed": disagreements(originals, orienting).height,
        "explained": explained_comparisons(originals, orienting, orientation).height,
    }


def classify(
    side: str, reward_plus: float, reward_minus: float, reward_perturbed: float
) -> tuple[str, str | None, float]:
    """(kind, semifactual sub-kind, reward delta opposing the preference) of one perturbation."""
    if side == "plus":
        delta = reward_plus - reward_perturbed
        if reward_perturbed < reward_minus:
            return COUNTERFACTUAL, None, delta
        return SEMIFACTUAL, _subkind(reward_perturbed == reward_minus, reward_perturbed > reward_plus), delta
    if side == "minus":
        delta = reward_perturbed - reward_minus
        if reward_perturbed > reward_plus:
            return COUNTERFACTUAL, None, delta
        return SEMIFACTUAL, _subkind(reward_perturbed == reward_plus, reward_perturbed < reward_minus), delta
    raise ValueError(f"side must be 'plus' or 'minus', got {side!r}")


def _subkind(ties_other: bool, past_own: bool) -> str:
    """A semifactual's sub-kind: ``tie`` (equal to the other original), ``beyond`` or ``between``."""
    if ties_other:
        return TIE
    return BEYOND if past_own else BETWEEN


def categorise(
    comparisons: pl.DataFrame,
    originals: pl.DataFrame,
    perturbations: pl.DataFrame,
    rewards: pl.DataFrame,
    dataset: str,
    rm: str,
    method: str,
    log: logging.Logger,
    *,
    orienting: Sequence[pl.DataFrame],
    orientation: str,
    against_agreed: str | None = None,
) -> pl.DataFrame:
    """EXPLANATIONS rows for one (dataset, RM, method): every perturbation of a comparison the RM explains
    (``explained_comparisons`` of its ``orienting`` RMs' scores, under ``orientation``) as a CF or an SF.
    ``against_agreed`` says in the log what became of the comparisons the RM orients against the agreed y+
    (default: what ``orientation`` does with them)."""
    too_long = skipped_for_length(originals).height
    ties = originals.filter(pl.col("plus_target").is_null()).height - too_long
    if ties:
        log.warning("%d comparisons skipped: the RM scores chosen and rejected exactly equal", ties)
    if too_long:
        log.warning("%d comparisons skipped: an original is over the RM's token limit (skipped)", too_long)
    _log_disagreements(disagreements(originals, orienting).height, rm, against_agreed or orientation, log)
    oriented = explained_comparisons(originals, orienting, orientation)
    table = _with_rewards(perturbations, comparisons, oriented, rewards)
    unscored = table.filter(pl.col("scored").is_null())
    if unscored.height:
        raise ValueError(
            f"{unscored.height} perturbations have no reward from {rm} "
            f"(first: {unscored['perturbation_id'][0]});"
            " the rewards table is stale: rerun score_perturbations"
        )
    skipped = perturbations.height - table.height
    if skipped:
        log.warning(
            "%d perturbations skipped: their comparison is tied, unoriented or oriented the other way for %s",
            skipped,
            rm,
        )
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


def _with_rewards(
    perturbations: pl.DataFrame, comparisons: pl.DataFrame, oriented: pl.DataFrame, rewards: pl.DataFrame
) -> pl.DataFrame:
    """The perturbations of the ``oriented`` comparisons with their seed, ``text_id`` and the RM's ``reward``
    (null: unscored for length), ``scored`` null where the rewards table has no row for the text."""
    return (
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


def unscored_sides(
    comparisons: pl.DataFrame, oriented: pl.DataFrame, perturbations: pl.DataFrame, rewards: pl.DataFrame
) -> pl.DataFrame:
    """``comparison_id, side`` of each side of an ``oriented`` comparison (ORIGINAL_SCORES rows) whose every
    perturbation the RM left unscored (over its token limit, ``overlong: skip``)."""
    table = _with_rewards(perturbations, comparisons, oriented, rewards)
    return (
        table.with_columns(
            side=pl.when(pl.col("target") == pl.col("plus_target"))
            .then(pl.lit("plus"))
            .otherwise(pl.lit("minus"))
        )
        .group_by("comparison_id", "side")
        .agg(every_one_cut=pl.col("reward").is_null().all())
        .filter("every_one_cut")
        .select("comparison_id", "side")
        .sort("comparison_id", "side")
    )


def _log_disagreements(n: int, rm: str, treatment: str, log: logging.Logger) -> None:
    """Log how many comparisons ``rm`` orients against its perturbation set's y+, and what became of them
    (``treatment``: an orientation, or the words to say)."""
    if not n:
        return
    what = {
        AGREED: "skipped (orientation agreed: the perturbations there move with the RM's preference)",
        OWN: "kept, oriented by the RM's own preference (orientation own)",
    }.get(treatment, treatment)
    log.warning("%d comparisons where %s prefers the response the agreed preference rejects: %s", n, rm, what)
