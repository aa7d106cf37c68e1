"""EloEverything: the paper's human ranking beside the ten RMs' scores, and Fig. 5 as the paper computed it.

The bundled data (``data/elo_*.parquet``; ``data/NOTICE.md``) holds, for three prompts, every EloEverything
item with its human Elo score and the reward each RM gave the item's name. :func:`figure5_ranks` follows the
paper's ``generate_figure_5.py``: every rater's scores (Human = Elo score) are z-scored (sample SD) and ranked
from the top (1 = best; ties share their average rank); ``Model (Avg)`` is the median over all rank columns,
the Human one included. Every list here breaks ties by a stated rule: after the ranked value, by ``row``
(the file's row order, i.e. ascending ``elo_rank``: what pandas' ``nlargest``/``nsmallest`` keep), except
:func:`top_items` (item name, then ``row``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from rmexplain.tokens.paper_models import DATA_DIR, hub_to_short, paper_reward_models

HUMAN = "Human"
MODEL_AVG = "Model (Avg)"
ELO_COLUMNS = ("elo_rank", "elo_score", "name", "elo_matches")


@dataclass(frozen=True)
class EloPrompt:
    """One prompt of the bundled EloEverything scores."""

    text: str
    file: str


ELO_PROMPTS: dict[str, EloPrompt] = {
    "one_word_greatest": EloPrompt(
        "What, in one word, is the greatest thing ever?", "elo_one_word_greatest.parquet"
    ),
    "greatest_ever": EloPrompt(
        "What one single thing, person, or concept is the greatest ever?", "elo_greatest_ever.parquet"
    ),
    "humans_most_prefer": EloPrompt(
        "What is the single thing, person, or concept that humans most prefer?",
        "elo_humans_most_prefer.parquet",
    ),
}
FIGURE5_PROMPT = "greatest_ever"  # the prompt of the paper's Fig. 5


class EloError(ValueError):
    """Unknown prompt or malformed rater table; the message names it."""


def read_elo(prompt_id: str) -> pl.DataFrame:
    """The bundled table of one prompt: ``elo_rank, elo_score, name, elo_matches`` and one score column per
    RM (hub id), 7,530 rows in ``elo_rank`` order."""
    if prompt_id not in ELO_PROMPTS:
        raise EloError(f"unknown EloEverything prompt {prompt_id!r}; choose one of {list(ELO_PROMPTS)}")
    return pl.read_parquet(Path(DATA_DIR) / ELO_PROMPTS[prompt_id].file)


def elo_raters(wide: pl.DataFrame) -> pl.DataFrame:
    """``row, item, Human, <RM short names…>`` from a bundled table: Human is the Elo score (higher = better);
    RM columns are renamed to short names and keep the file's order (RewardBench order)."""
    names = hub_to_short()
    rms = [c for c in wide.columns if c not in ELO_COLUMNS]
    unknown = [c for c in rms if c not in names]
    if unknown:
        raise EloError(f"EloEverything table: unknown RM column(s) {unknown}")
    return wide.with_row_index("row").select(
        pl.col("row").cast(pl.Int64),
        pl.col("name").alias("item"),
        pl.col("elo_score").cast(pl.Float64).alias(HUMAN),
        *[pl.col(c).alias(names[c]) for c in rms],
    )


def elo_human_scores(prompt_id: str) -> pl.DataFrame:
    """The bundled scores in the TOKEN_HUMAN_SCORES layout: ``rm`` (short name), ``item``, ``human_rank``
    (``elo_rank``), ``score``; RMs in RewardBench order, items in ``elo_rank`` order."""
    wide = read_elo(prompt_id)
    names = hub_to_short()
    rms = [c for c in wide.columns if c not in ELO_COLUMNS]
    return pl.concat(
        wide.select(
            pl.lit(names[c]).alias("rm"),
            pl.col("name").alias("item"),
            pl.col("elo_rank").cast(pl.Int64).alias("human_rank"),
            pl.col(c).cast(pl.Float64).alias("score"),
        )
        for c in rms
    )


def elo_human_ranking(prompt_id: str) -> pl.DataFrame:
    """``item, rank`` (``elo_rank``): the file format of ``tokens.human_ranking.path``."""
    return read_elo(prompt_id).select(pl.col("name").alias("item"), pl.col("elo_rank").alias("rank"))


def raters_from_human_scores(scored: pl.DataFrame) -> pl.DataFrame:
    """``row, item, Human, <rm…>`` from TOKEN_HUMAN_SCORES rows (one RM per ``rm``). Human is −human_rank (so
    higher = better, as the Elo score); ``row`` orders items by human rank, then item."""
    items = (
        scored.select("item", "human_rank")
        .unique()
        .sort(["human_rank", "item"])
        .with_row_index("row")
        .with_columns(pl.col("row").cast(pl.Int64))
    )
    if items["item"].is_duplicated().any():
        raise EloError("human-ranking scores: an item has two human ranks")
    rms = list(dict.fromkeys(scored["rm"].to_list()))
    wide = scored.pivot(on="rm", index="item", values="score")
    return (
        items.join(wide, on="item", how="left")
        .sort("row")
        .select("row", "item", (-pl.col("human_rank").cast(pl.Float64)).alias(HUMAN), *rms)
    )


def figure5_ranks(raters: pl.DataFrame) -> pl.DataFrame:
    """Ranks as the paper's Fig. 5: per rater column (every column but ``row`` and ``item``), z-score with the
    sample SD, rank from the top with average ties; ``Model (Avg)`` = median over all rank columns
    (Human included). Returns ``row, item, <raters…>, Model (Avg)``."""
    columns = [c for c in raters.columns if c not in ("row", "item")]
    if HUMAN not in columns:
        raise EloError(f"rater table has no {HUMAN!r} column")
    if any(raters[c].null_count() for c in columns):
        raise EloError("rater table: missing scores (each rater must score every item)")
    z = raters.with_columns(
        ((pl.col(c) - pl.col(c).mean()) / pl.col(c).std(ddof=1)).alias(c) for c in columns
    )
    ranks = z.with_columns(
        pl.col(c).rank("average", descending=True).cast(pl.Float64).alias(c) for c in columns
    )
    median = np.median(ranks.select(columns).to_numpy(), axis=1)
    return ranks.with_columns(pl.Series(MODEL_AVG, median, dtype=pl.Float64))


def rank_differences(ranks: pl.DataFrame, n: int = 10) -> pl.DataFrame:
    """The ``n`` largest differences ``Model (Avg) − Human`` each way (Fig. 5B).

    ``humans_higher``: largest positive differences (humans rank the item better than the RMs), largest
    first; ``models_higher``: most negative first. Ties: then ``row`` ascending.
    """
    diff = ranks.select(
        "row",
        "item",
        pl.col(HUMAN).alias("human_rank"),
        pl.col(MODEL_AVG).alias("model_avg_rank"),
        (pl.col(MODEL_AVG) - pl.col(HUMAN)).alias("difference"),
    )
    parts = []
    for direction, descending in (("humans_higher", True), ("models_higher", False)):
        part = diff.sort(["difference", "row"], descending=[descending, False]).head(n)
        parts.append(
            part.with_columns(
                pl.lit(direction).alias("direction"), pl.int_range(1, part.height + 1).alias("position")
            )
        )
    return pl.concat(parts).select(
        "direction", "position", "item", "human_rank", "model_avg_rank", "difference", "row"
    )


def rm_columns(ranks: pl.DataFrame) -> list[str]:
    """The RM rank columns of a :func:`figure5_ranks` table, in order."""
    return [c for c in ranks.columns if c not in ("row", "item", HUMAN, MODEL_AVG)]


def human_spearman(ranks: pl.DataFrame) -> pl.DataFrame:
    """Spearman ρ of every RM's ranks with the human ranks (Fig. 5C labels), with its RewardBench rank where
    the RM is one of the paper's ten."""
    from scipy import stats  # SciPy takes a second to import

    table = paper_reward_models()
    rewardbench = dict(zip(table["short_name"].to_list(), table["rewardbench_rank"].to_list(), strict=True))
    human = ranks[HUMAN].to_numpy()
    rows = [
        {
            "rm": rm,
            "spearman_rho": float(stats.spearmanr(human, ranks[rm].to_numpy()).statistic),
            "rewardbench_rank": rewardbench.get(rm),
            "n_items": ranks.height,
        }
        for rm in rm_columns(ranks)
    ]
    return pl.DataFrame(
        rows,
        schema={
            "rm": pl.String,
            "spearman_rho": pl.Float64,
            "rewardbench_rank": pl.Int64,
            "n_items": pl.Int64,
        },
    )


def top_items(ranks: pl.DataFrame) -> pl.DataFrame:
    """Each rater's best item (Human and every RM): lowest rank, ties then ``item`` ascending (code points),
    then ``row``. (The paper's unstable sort picked "Gödel, Escher, Bach" over "Self-referential humor", tied
    first for F-Lla-8B-v0.1 under the Fig. 5 prompt; this rule gives the same.)"""
    rows = []
    for rater in [HUMAN, *rm_columns(ranks)]:
        best = ranks.sort([rater, "item", "row"]).row(0, named=True)
        rows.append({"rater": rater, "item": best["item"], "rank": best[rater], "row": best["row"]})
    return pl.DataFrame(rows)


def rank_trajectories(
    ranks: pl.DataFrame, n_background: int = 100, n_highlight: int = 5, raters: Sequence[str] | None = None
) -> pl.DataFrame:
    """Long data of the rank-trajectory plot (Fig. 5C): ``group, order, item, rater, rater_order, rank``.

    Groups: ``human_top`` / ``human_bottom`` (the ``n_highlight`` best / worst items by human rank),
    ``model_top`` (items some RM ranks first that are not in ``human_top``, ordered by ``row``),
    ``background_top`` / ``background_bottom`` (the ``n_background`` best / worst by human rank). Human
    order: rank, then ``row`` ascending for the top groups and descending rank, then ``row`` ascending for
    the bottom ones (pandas' ``nsmallest``/``nlargest``). Raters: Human, then the RMs in column order.
    """
    order = list(raters) if raters is not None else [HUMAN, *rm_columns(ranks)]
    best = ranks.sort([HUMAN, "row"])
    worst = ranks.sort([HUMAN, "row"], descending=[True, False])
    human_top = best.head(n_highlight)
    firsts = set(top_items(ranks).filter(pl.col("rater") != HUMAN)["item"].to_list())
    model_top = ranks.filter(
        pl.col("item").is_in(list(firsts)) & ~pl.col("item").is_in(human_top["item"].to_list())
    )
    groups = {
        "human_top": human_top,
        "human_bottom": worst.head(n_highlight),
        "model_top": model_top.sort("row"),
        "background_top": best.head(n_background),
        "background_bottom": worst.head(n_background),
    }
    parts = []
    for name, frame in groups.items():
        framed = frame.with_row_index("order", offset=1).with_columns(pl.col("order").cast(pl.Int64))
        long = framed.unpivot(index=["order", "item"], on=order, variable_name="rater", value_name="rank")
        parts.append(
            long.with_columns(
                pl.lit(name).alias("group"),
                pl.col("rater")
                .replace_strict({r: k for k, r in enumerate(order)}, return_dtype=pl.Int64)
                .alias("rater_order"),
            )
        )
    return (
        pl.concat(parts)
        .select("group", "order", "item", "rater", "rater_order", "rank")
        .sort(["group", "order", "rater_order"])
    )
