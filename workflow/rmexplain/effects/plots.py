"""The attribute-effects figure: per RM, the primary estimator's effects with intervals, flip rates beside."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from rmexplain.analysis.plots import message_figure
from rmexplain.figures import FigureOptions

EFFECT_COLOUR, FLIP_COLOUR = "#1b6ca8", "#c9c9c9"
PANELS_PER_ROW = 4


def effects_figure(
    effects: pl.DataFrame, title: str, path: str | Path, options: FigureOptions, level: str
) -> None:
    """One panel per RM: the primary estimator's effect of each attribute (dot, filled where the interval
    excludes 0, with its interval) on the bottom axis, and the paper's flip rate (grey bar) on the top
    axis."""
    primary = effects.filter(pl.col("primary"))
    if not primary.height:
        message_figure(path, options, f"{title}: no attribute effects to show.")
        return
    estimator = primary["estimator"][0]
    rms = primary["rm"].unique(maintain_order=True).to_list()
    rows = primary.filter(pl.col("rm") == rms[0]).sort("rank")["attribute"].to_list()
    n_rows, n_cols = math.ceil(len(rms) / PANELS_PER_ROW), min(len(rms), PANELS_PER_ROW)
    fig = Figure(figsize=(options.width, 0.9 + n_rows * (0.6 + 0.2 * len(rows))), layout="constrained")
    axes = np.atleast_2d(fig.subplots(n_rows, n_cols, sharey=True, squeeze=False))
    for ax in axes.flat[len(rms) :]:
        ax.axis("off")
    for ax, rm in zip(axes.flat, rms, strict=False):
        _panel(ax, effects.filter(pl.col("rm") == rm), rows, estimator, rm)
    handles = [
        Line2D(
            [],
            [],
            marker="o",
            color=EFFECT_COLOUR,
            linestyle="",
            label=f"{estimator} ({level} interval excludes 0)",
        ),
        Line2D(
            [],
            [],
            marker="o",
            color=EFFECT_COLOUR,
            markerfacecolor="white",
            linestyle="",
            label="interval includes 0",
        ),
        Line2D([], [], color=FLIP_COLOUR, linewidth=6, label="paper's flip rate (top axis)"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8, frameon=False)
    fig.suptitle(f"{title}: attribute effects (reward sd, better direction) beside flip rates", fontsize=10)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=options.dpi)


def _panel(ax, frame: pl.DataFrame, rows: list[str], estimator: str, rm: str) -> None:
    y = np.arange(len(rows))
    mine = {r["attribute"]: r for r in frame.filter(pl.col("estimator") == estimator).iter_rows(named=True)}
    flips = {
        r["attribute"]: r["effect"]
        for r in frame.filter(pl.col("estimator") == "flip_rate").iter_rows(named=True)
    }
    top = ax.twiny()
    top.barh(y, [flips.get(a, np.nan) for a in rows], 0.6, color=FLIP_COLOUR, zorder=0)
    top.set_xlim(0, 1)
    top.tick_params(axis="x", labelsize=7, colors="#777777")
    ax.set_zorder(top.get_zorder() + 1)
    ax.patch.set_visible(False)
    for k, attribute in enumerate(rows):
        row = mine.get(attribute)
        if row is None or math.isnan(row["effect"]):
            continue
        low, high = row["low"], row["high"]
        if not (math.isnan(low) or math.isnan(high)):
            ax.plot([low, high], [k, k], color=EFFECT_COLOUR, linewidth=1.2)
        face = EFFECT_COLOUR if row["significant"] else "white"
        ax.plot(row["effect"], k, marker="o", color=EFFECT_COLOUR, markerfacecolor=face, markersize=4.5)
    ax.axvline(0, color="#444444", linewidth=0.7)
    ax.set_yticks(y, rows, fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.grid(axis="x", alpha=0.3)
    ax.tick_params(axis="x", labelsize=7)
    reference = next((r["reference"] for r in mine.values() if r["reference"]), None)
    ax.set_title(rm + (f" (vs {reference})" if reference else ""), fontsize=9)
