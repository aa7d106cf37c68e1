"""Summary tables of the analyses: the raw long table as CSV, a readable layout as Markdown and HTML.

The CSV keeps every column (point estimates, interval bounds, counts) for further work; the Markdown and
HTML copies show one cell per estimate as ``0.42 [0.30, 0.55]`` in the layout of the paper's tables.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import polars as pl

from rmexplain.analysis.subsets import Foreign, mark_subset_rms, subset_note
from rmexplain.markup import to_html, to_markdown

DIGITS = 2


def num(value: float | None, digits: int = DIGITS) -> str:
    """A number for display; missing/undefined values show as an en dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{digits}f}"


def with_ci(value: float | None, low: float | None, high: float | None) -> str:
    """``value [low, high]``, or just the value when the interval is undefined."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return num(value)
    return f"{num(value)} [{num(low)}, {num(high)}]"


SIDE_LABEL = {"plus": "Y+", "minus": "Y−"}


def present_pfr(frame: pl.DataFrame, ci: str = "95% CI") -> pl.DataFrame:
    """Rows (dataset, method, side, attribute); per RM a PFR [CI] column and a mean Δreward column."""
    cells = frame.with_columns(
        side=pl.col("side").replace_strict(SIDE_LABEL),
        pfr_cell=pl.struct("pfr", "pfr_low", "pfr_high").map_elements(
            lambda s: with_ci(s["pfr"], s["pfr_low"], s["pfr_high"]), return_dtype=pl.String
        ),
        delta_cell=pl.col("mean_delta").map_elements(num, return_dtype=pl.String),
    )
    keys = ["dataset", "method", "side", "attribute"]
    out = cells.select(keys).unique(maintain_order=True)
    for rm in cells["rm"].unique(maintain_order=True).to_list():
        mine = cells.filter(pl.col("rm") == rm).select(
            *keys, pl.col("pfr_cell").alias(f"{rm} PFR [{ci}]"), pl.col("delta_cell").alias(f"{rm} mean Δr")
        )
        out = out.join(mine, on=keys, how="left", maintain_order="left")
    return out.fill_null("–")


def present_tau_rms(frame: pl.DataFrame, ci: str = "95% CI") -> pl.DataFrame:
    """Table 3 layout: rows (dataset, method, RM pair), columns τ [CI] for Y+ and Y−."""
    cells = frame.with_columns(
        pair=pl.col("rm_a") + pl.lit(" vs ") + pl.col("rm_b"),
        cell=pl.struct("tau", "ci_low", "ci_high").map_elements(
            lambda s: with_ci(s["tau"], s["ci_low"], s["ci_high"]), return_dtype=pl.String
        ),
    )
    keys = ["dataset", "method", "pair"]
    out = cells.select(keys).unique(maintain_order=True)
    for side, label in SIDE_LABEL.items():
        mine = cells.filter(pl.col("side") == side).select(*keys, pl.col("cell").alias(f"τ {label} [{ci}]"))
        out = out.join(mine, on=keys, how="left", maintain_order="left")
    attrs = cells.group_by(keys, maintain_order=True).agg(pl.col("n_attributes").max().alias("attributes"))
    return out.join(attrs, on=keys, how="left", maintain_order="left").fill_null("–")


def present_tau_sides(frame: pl.DataFrame, ci: str = "95% CI") -> pl.DataFrame:
    """Table 6 layout: rows RM, one τ(Y+, Y−) [CI] column per (dataset, method)."""
    cells = frame.with_columns(
        col=pl.col("dataset") + pl.lit(" / ") + pl.col("method"),
        cell=pl.struct("tau", "ci_low", "ci_high").map_elements(
            lambda s: with_ci(s["tau"], s["ci_low"], s["ci_high"]), return_dtype=pl.String
        ),
    )
    out = cells.select("rm").unique(maintain_order=True)
    for col in cells["col"].unique(maintain_order=True).to_list():
        mine = cells.filter(pl.col("col") == col).select("rm", pl.col("cell").alias(col))
        out = out.join(mine, on="rm", how="left", maintain_order="left")
    return out.fill_null("–")


def present_examples(frame: pl.DataFrame, ci: str = "95% CI") -> pl.DataFrame:
    """One row per example slot: which RMs and side, the comparison found, its τ sum and parts."""
    return frame.select(
        "dataset",
        "method",
        pl.when(pl.col("kind") == "rm").then(pl.lit("one RM")).otherwise(pl.lit("two RMs")).alias("example"),
        pl.when(pl.col("rm_b").is_null())
        .then(pl.col("rm_a"))
        .otherwise(pl.col("rm_a") + pl.lit(", ") + pl.col("rm_b"))
        .alias("RMs"),
        pl.col("side").replace_strict(SIDE_LABEL, default="Y+ and Y−").alias("side"),
        pl.col("comparison_id").fill_null("none eligible").alias("comparison"),
        *[
            pl.col(c).map_elements(num, return_dtype=pl.String).fill_null("–").alias(c)
            for c in ("score", "tau_1", "tau_2")
        ],
        pl.col("n_eligible").alias("eligible comparisons"),
    ).rename({"score": "Σ τ", "tau_1": "τ₁", "tau_2": "τ₂"})


def present_probes(frame: pl.DataFrame, ci: str = "95% CI") -> pl.DataFrame:
    """Table 7 layout: rows (dataset, method, probe), one win rate [CI] (n) column per RM."""
    cells = frame.with_columns(
        cell=pl.struct("win_rate", "ci_low", "ci_high", "n_perturbations").map_elements(
            lambda s: f"{with_ci(s['win_rate'], s['ci_low'], s['ci_high'])} (n={s['n_perturbations']})",
            return_dtype=pl.String,
        )
    )
    keys = ["dataset", "method", "probe"]
    out = cells.select(*keys, "pattern").unique(maintain_order=True)
    for rm in cells["rm"].unique(maintain_order=True).to_list():
        mine = cells.filter(pl.col("rm") == rm).select(*keys, pl.col("cell").alias(rm))
        out = out.join(mine, on=keys, how="left", maintain_order="left")
    return out.fill_null("–")


def present_judge(frame: pl.DataFrame, ci: str = "95% CI") -> pl.DataFrame:
    """Agreement of the LLM judge with the intended change, per (dataset, method, attribute)."""
    return frame.select(
        "dataset",
        "method",
        "attribute",
        pl.struct("agreement", "ci_low", "ci_high")
        .map_elements(lambda s: with_ci(s["agreement"], s["ci_low"], s["ci_high"]), return_dtype=pl.String)
        .alias(f"agreement [{ci}]"),
        *[
            pl.col(c).map_elements(num, return_dtype=pl.String).alias(c.replace("_", " "))
            for c in ("share_unchanged", "share_opposite")
        ],
        pl.col("n_judged").alias("judged"),
        pl.col("n_unparsed").alias("unparsed"),
    )


def effect_cell(effect: float | None, low: float | None, high: float | None, significant: bool) -> str:
    """``+0.42 [+0.30, +0.55]`` with a ``*`` where the interval excludes 0."""
    if effect is None or math.isnan(effect):
        return "–"
    cell = f"{effect:+.2f}" if low is None or math.isnan(low) else f"{effect:+.2f} [{low:+.2f}, {high:+.2f}]"
    return cell + (" *" if significant else "")


def present_effects(frame: pl.DataFrame, ci: str = "95% CI") -> pl.DataFrame:
    """Rows (dataset, method, attribute) in the primary estimator's rank order of the first RM; per RM the
    primary estimator's effect [CI] (``*``: the interval excludes 0) and the paper's flip rate beside it.
    Every estimator's rows are in the CSV."""
    primary = frame.filter(pl.col("primary"))
    name = primary["estimator"][0] if primary.height else "flip_rate"
    cells = frame.with_columns(
        cell=pl.struct("estimator", "effect", "low", "high", "significant").map_elements(
            lambda s: (
                with_ci(s["effect"], s["low"], s["high"])
                if s["estimator"] == "flip_rate"  # a share, unsigned: as the pfr table shows it
                else effect_cell(s["effect"], s["low"], s["high"], s["significant"])
            ),
            return_dtype=pl.String,
        )
    )
    keys = ["dataset", "method", "attribute"]
    first_rm = cells["rm"][0]
    leading = (pl.col("estimator") == name) & (pl.col("rm") == first_rm)
    order = cells.filter(leading).sort("dataset", "method", "rank")
    out = order.select(keys)
    for rm in cells["rm"].unique(maintain_order=True).to_list():
        for estimator, label in ((name, f"{rm} {name} [{ci}]"), ("flip_rate", f"{rm} flip rate")):
            mine = cells.filter((pl.col("rm") == rm) & (pl.col("estimator") == estimator))
            cell = mine.select(*keys, pl.col("cell").alias(label))
            out = out.join(cell, on=keys, how="left", maintain_order="left")
    return out.fill_null("–")


def write_table(
    frame: pl.DataFrame,
    title: str,
    present: Callable[[pl.DataFrame, str], pl.DataFrame],
    csv: str | Path,
    md: str | Path,
    html_path: str | Path,
    level: float = 0.95,
    foreign: Foreign | None = None,
) -> None:
    """Write the raw table as CSV and its readable layout as Markdown and HTML (intervals at ``level``); the
    readable copies mark the RMs ``foreign`` names as measured on a subset (``subsets``), with a note."""
    frame.write_csv(csv)
    marked = mark_subset_rms(frame, foreign)
    shown = present(marked, f"{level:.0%} CI") if frame.height else pl.DataFrame({"note": ["no rows"]})
    datasets = frame["dataset"].unique().to_list() if "dataset" in frame.columns else None
    note = subset_note(foreign, datasets)
    Path(md).write_text(
        f"### {title}\n\n" + to_markdown(shown) + (f"\n{note}\n" if note else ""), encoding="utf-8"
    )
    raw = f"Raw values with interval bounds and counts: {csv}"
    Path(html_path).write_text(to_html(shown, title, f"{note} {raw}" if note else raw), encoding="utf-8")
