"""Figures and pages of the selected representative examples (paper Fig. 4 for one RM, Fig. 5 for two)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from rmexplain.analysis.pages import ExamplePage, kind_label, perturbation_rows, render_markdown, render_page
from rmexplain.analysis.plots import FigureOptions, example_pair_figure, example_rm_figure, message_figure
from rmexplain.analysis.tables import num

_HUMAN = {"chosen": "human-chosen", "rejected": "human-rejected"}


def _slot(examples: pl.DataFrame, **keys: str | None) -> dict:
    cond = pl.lit(True)
    for column, value in keys.items():
        cond = cond & (pl.col(column).is_null() if value is None else pl.col(column) == value)
    hits = examples.filter(cond)
    if hits.height != 1:
        raise ValueError(f"examples table has {hits.height} rows for {keys}; expected exactly one")
    return hits.row(0, named=True)


def _with_kind(rows: pl.DataFrame, suffix: str = "") -> pl.DataFrame:
    return rows.with_columns(
        pl.struct("kind", "sf_subkind")
        .map_elements(lambda s: kind_label(s["kind"], s["sf_subkind"]), return_dtype=pl.String)
        .alias(f"kind{suffix}")
    )


def _other(target: str) -> str:
    return "rejected" if target == "chosen" else "chosen"


def write_page(page: ExamplePage, path: str | Path) -> None:
    """Write the page as HTML and, beside it, as Markdown."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(render_page(page), encoding="utf-8")
    Path(path).with_suffix(".md").write_text(render_markdown(page), encoding="utf-8")


def _nothing(
    title: str, reason: str, figure: str | Path, page_path: str | Path, options: FigureOptions
) -> None:
    message_figure(figure, options, f"{title}: {reason}")
    write_page(ExamplePage(title, {}, "", {}, pl.DataFrame(), {}, figure, [reason]), page_path)


def rm_page(
    rows: pl.DataFrame,
    comparison: dict,
    extra: dict[str, str],
    rm: str,
    figure: str | Path | None,
    title: str,
) -> ExamplePage:
    """The page of one RM's explanation of one comparison (``extra``: more facts to show).

    Used for the one-RM representative examples and by ``rmexplain explain``."""
    first = rows.row(0, named=True)
    plus_target = first["target"] if first["side"] == "plus" else _other(first["target"])
    reward_plus, reward_minus = rows["reward_plus"][0], rows["reward_minus"][0]
    facts = {
        "dataset": comparison.get("dataset", ""),
        "comparison": comparison["comparison_id"],
        "reward model": rm,
        "RM agrees with the human label": str(plus_target == "chosen"),
        "counterfactuals (Y+ / Y−)": "{} / {}".format(
            *[
                rows.filter((pl.col("side") == s) & (pl.col("kind") == "counterfactual")).height
                for s in ("plus", "minus")
            ]
        ),
    }
    facts |= extra
    minus_target = _other(plus_target)
    originals = {
        f"y+ ({_HUMAN[plus_target]}) — r = {num(reward_plus, 3)}": comparison[plus_target],
        f"y− ({_HUMAN[minus_target]}) — r = {num(reward_minus, 3)}": comparison[minus_target],
    }
    shown = _with_kind(rows).sort("side", "reward_delta", descending=[True, True])
    return ExamplePage(
        title=title,
        facts=facts,
        prompt=comparison["prompt"],
        originals=originals,
        rewards=shown,
        columns={"reward": "reward_perturbed", "Δ against preference": "reward_delta", "kind": "kind"},
        figure=figure,
    )


def example_rm(
    examples: pl.DataFrame,
    explanations: pl.DataFrame,
    perturbations: pl.DataFrame,
    comparisons: pl.DataFrame,
    rm: str,
    options: FigureOptions,
    figure: str | Path,
    page: str | Path,
) -> None:
    """Figure and page of the most representative comparison for one RM."""
    slot = _slot(examples, kind="rm", rm_a=rm)
    title = f"Most representative comparison for {rm} ({slot['dataset']} · {slot['method']})"
    if slot["comparison_id"] is None:
        _nothing(title, "no comparison has a defined local τ on both sides", figure, page, options)
        return
    comparison = comparisons.filter(pl.col("comparison_id") == slot["comparison_id"]).row(0, named=True)
    originals = {"chosen": comparison["chosen"], "rejected": comparison["rejected"]}
    mine = explanations.filter((pl.col("rm") == rm) & (pl.col("comparison_id") == slot["comparison_id"]))
    rows = perturbation_rows(mine, perturbations, originals)
    example_rm_figure(
        rows, f"{title}\n{slot['comparison_id']}: Σ local τ = {num(slot['score'])}", figure, options
    )
    extra = {
        "local τ (Y+, Y−)": f"{num(slot['tau_1'])}, {num(slot['tau_2'])}",
        "Σ τ": f"{num(slot['score'])} (the highest of {slot['n_eligible']} eligible comparisons)",
    }
    write_page(rm_page(rows, comparison, extra, rm, figure, title), page)


def example_pair(
    examples: pl.DataFrame,
    explanations: pl.DataFrame,
    perturbations: pl.DataFrame,
    comparisons: pl.DataFrame,
    pair: tuple[str, str],
    side: str,
    options: FigureOptions,
    figure: str | Path,
    page: str | Path,
) -> None:
    """Figure and page of the most representative comparison for two RMs on one side."""
    a, b = pair
    slot = _slot(examples, kind="pair", rm_a=a, rm_b=b, side=side)
    title = (
        f"Most representative comparison for {a} and {b}, {'Y+' if side == 'plus' else 'Y−'} "
        f"({slot['dataset']} · {slot['method']})"
    )
    if slot["comparison_id"] is None:
        _nothing(
            title,
            "no comparison has a defined local τ for both RMs with the same preference",
            figure,
            page,
            options,
        )
        return
    comparison = comparisons.filter(pl.col("comparison_id") == slot["comparison_id"]).row(0, named=True)
    originals = {"chosen": comparison["chosen"], "rejected": comparison["rejected"]}
    chosen = explanations.filter(
        (pl.col("comparison_id") == slot["comparison_id"]) & (pl.col("side") == side)
    )
    rows_a = perturbation_rows(chosen.filter(pl.col("rm") == a), perturbations, originals)
    rows_b = perturbation_rows(chosen.filter(pl.col("rm") == b), perturbations, originals)
    example_pair_figure(
        rows_a,
        rows_b,
        pair,
        side,
        f"{title}\n{slot['comparison_id']}: Σ local τ = {num(slot['score'])}",
        figure,
        options,
    )
    plus_target = rows_a["target"][0] if side == "plus" else _other(rows_a["target"][0])
    key = ["attribute", "variant"]
    joined = (
        _with_kind(rows_a, f" ({a})")
        .join(
            _with_kind(rows_b, f" ({b})").select(
                *key,
                pl.col("reward_perturbed").alias("reward_b"),
                f"kind ({b})",
                pl.col("text").alias("text_b"),
            ),
            on=key,
            how="full",
            coalesce=True,
        )
        .sort("reward_delta", descending=True, nulls_last=True)
    )
    r = {rm: (rows["reward_plus"][0], rows["reward_minus"][0]) for rm, rows in ((a, rows_a), (b, rows_b))}
    facts = {
        "dataset": slot["dataset"],
        "comparison": slot["comparison_id"],
        "reward models": f"{a}, {b}",
        "side": "Y+ (perturbations of y+)" if side == "plus" else "Y− (perturbations of y−)",
        f"local τ ({a}, {b})": f"{num(slot['tau_1'])}, {num(slot['tau_2'])}",
        "Σ τ": f"{num(slot['score'])} (the highest of {slot['n_eligible']} eligible comparisons)",
    }
    rewards_of = {
        s: ", ".join(f"r_{rm} = {num(v[i], 3)}" for rm, v in r.items())
        for i, s in enumerate(("plus", "minus"))
    }
    differing = joined.filter(pl.col("text_b").is_not_null() & (pl.col("text_b") != pl.col("text"))).height
    notes = (
        [
            f"{differing} perturbations differ between {a} and {b} (each RM's own perturbation set, "
            f"perturb.orientation: per_rm); texts shown are {a}'s. Use perturb.orientation: shared to "
            "compare the RMs on identical perturbations (as the paper's §4 does)."
        ]
        if differing
        else []
    )
    minus_target = _other(plus_target)
    originals_shown = {
        f"y+ ({_HUMAN[plus_target]}) — {rewards_of['plus']}": comparison[plus_target],
        f"y− ({_HUMAN[minus_target]}) — {rewards_of['minus']}": comparison[minus_target],
    }
    write_page(
        ExamplePage(
            title=title,
            facts=facts,
            prompt=comparison["prompt"],
            originals=originals_shown,
            rewards=joined,
            columns={
                f"reward ({a})": "reward_perturbed",
                f"kind ({a})": f"kind ({a})",
                f"reward ({b})": "reward_b",
                f"kind ({b})": f"kind ({b})",
            },
            figure=figure,
            notes=notes,
        ),
        page,
    )
