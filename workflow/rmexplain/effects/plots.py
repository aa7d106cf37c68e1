"""The attribute-effects figure: per RM, the primary estimator's effects with intervals, flip rates beside."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from rmexplain.analysis.plots import message_figure
from rmexplain.figures import FigureOptions

EFFECT_COLOUR, FLIP_COLOUR = "#1b6ca8", "#b5b5b5"
RMS_PER_ROW = 3


def effects_figure(
    effects: pl.DataFrame, title: str, path: str | Path, options: FigureOptions, level: str
) -> None:
    """Per RM a pair of panels: the paper's flip rate (grey bars, a share) and the primary estimator's effect
    of each attribute (dot, filled where the interval excludes 0, with its interval; reward sd)."""
    if not effects.filter(pl.col("primary")).height:
        message_figure(path, options, f"{title}: no attribute effects to show.")
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    effects_plot(effects, title, options, level).savefig(path, dpi=options.dpi)


def effects_plot(effects: pl.DataFrame, title: str, options: FigureOptions, level: str) -> Figure:
    """The figure ``effects_figure`` writes (the attributes in the first RM's rank order, three RMs a row)."""
    primary = effects.filter(pl.col("primary"))
    estimator = primary["estimator"][0]
    rms = primary["rm"].unique(maintain_order=True).to_list()
    rows = primary.filter(pl.col("rm") == rms[0]).sort("rank")["attribute"].to_list()
    n_rows, per_row = math.ceil(len(rms) / RMS_PER_ROW), min(len(rms), RMS_PER_ROW)
    fig = Figure(figsize=(options.width, 1.0 + n_rows * (0.8 + 0.2 * len(rows))), layout="constrained")
    grid = fig.add_gridspec(n_rows, 2 * per_row, width_ratios=[1, 2.2] * per_row)
    for k, rm in enumerate(rms):
        row, col = divmod(k, RMS_PER_ROW)
        flips = fig.add_subplot(grid[row, 2 * col])
        shown = fig.add_subplot(grid[row, 2 * col + 1], sharey=flips)
        mine = effects.filter(pl.col("rm") == rm)
        _flip_panel(flips, mine, rows, first=col == 0)
        _effect_panel(shown, mine, rows, estimator, rm)
    filled, hollow = f"{estimator} ({level} interval excludes 0)", "interval includes 0"
    handles = [
        Line2D([], [], marker="o", color=EFFECT_COLOUR, linestyle="", label=filled),
        Line2D([], [], marker="o", color=EFFECT_COLOUR, markerfacecolor="white", linestyle="", label=hollow),
        Line2D([], [], color=FLIP_COLOUR, linewidth=6, label="the paper's flip rate"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8, frameon=False)
    fig.suptitle(f"{title}: attribute effects (reward sd, better direction) beside flip rates", fontsize=10)
    return fig


def _flip_panel(ax: Axes, frame: pl.DataFrame, rows: list[str], first: bool) -> None:
    """The paper's flip rate per attribute (both sides pooled), as grey bars from 0."""
    flips = {
        r["attribute"]: r["effect"]
        for r in frame.filter(pl.col("estimator") == "flip_rate").iter_rows(named=True)
    }
    y = np.arange(len(rows))
    ax.barh(y, [flips.get(a, np.nan) for a in rows], 0.6, color=FLIP_COLOUR)
    ax.set_xlim(0, 1)
    ax.set_yticks(y, rows, fontsize=8)
    ax.tick_params(axis="y", labelleft=first)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_xlabel("flip rate", fontsize=7)
    ax.grid(axis="x", alpha=0.3)


def _effect_panel(ax: Axes, frame: pl.DataFrame, rows: list[str], estimator: str, rm: str) -> None:
    """The estimator's effect per attribute with its interval; filled where the interval excludes 0."""
    mine = {r["attribute"]: r for r in frame.filter(pl.col("estimator") == estimator).iter_rows(named=True)}
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
    ax.tick_params(axis="y", labelleft=False)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_xlabel("effect (reward sd)", fontsize=7)
    ax.grid(axis="x", alpha=0.3)
    reference = next((r["reference"] for r in mine.values() if r["reference"]), None)
    ax.set_title(rm + (f" (vs {reference})" if reference else ""), fontsize=9, loc="left")
