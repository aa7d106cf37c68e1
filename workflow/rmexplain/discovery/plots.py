"""The discovered-biases figure: per (dataset, RM) its significant features with intervals (a forest plot)
and, with several RMs, a features × RMs heatmap of their effects.

Built on ``matplotlib.figure.Figure`` (no pyplot state) with constrained layout; its height grows with the
rows it shows. Saved without the matplotlib version or a date, so the same table gives the same bytes.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import matplotlib
import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.gridspec import GridSpec, SubplotSpec
from matplotlib.patches import Rectangle

from rmexplain.figures import FigureOptions

REWARDED, PENALISED, ZERO_LINE = "#c03d3e", "#1b6ca8", "#444444"
COLOUR_MAP = "RdBu_r"  # red: rewarded, blue: penalised (the forest plot's dot colours)
UNIT = "effect (reward sd, at equal length)"
NONE_TEXT = "no significant finding"
PANELS_PER_ROW = 2
LABEL_CHARS, LABEL_LINES = 34, 2  # a finding's label, wrapped
ROW_INCHES, PANEL_INCHES = 0.3, 0.75  # per finding row; per panel (title, axis)
HEATMAP_ROW_INCHES = 0.25
ANNOTATE_CELLS = 300  # heatmaps up to this many cells show each significant effect's value
# Metadata that would differ between matplotlib versions or runs, removed (None) per format.
METADATA = {
    "png": {"Software": None},
    "svg": {"Creator": None, "Date": None},
    "pdf": {"Creator": None, "Producer": None, "CreationDate": None},
}


def biases_figure(
    table: pl.DataFrame, path: str | Path, options: FigureOptions, level: str, fdr: float
) -> Figure:
    """Write the discovered-biases figure of a DISCOVERED_BIASES table to ``path``; return it."""
    fig = biases_plot(table, options, level, fdr)
    save_figure(fig, path, options)
    return fig


def save_figure(fig: Figure, path: str | Path, options: FigureOptions) -> None:
    """Save with fixed metadata (and a fixed SVG id salt), so equal figures give equal files."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    suffix = Path(path).suffix.lstrip(".").lower()
    with matplotlib.rc_context({"svg.hashsalt": "rmexplain"}):
        fig.savefig(path, dpi=options.dpi, metadata=METADATA.get(suffix))


def biases_plot(table: pl.DataFrame, options: FigureOptions, level: str, fdr: float) -> Figure:
    """The figure ``biases_figure`` writes: a forest panel per (dataset, RM), two a row, then the heatmap
    when there are several; a figure with a sentence alone when nothing is significant."""
    if not table.height:
        return message_plot(options, "Discovered biases: no feature was tested, so there is no finding.")
    shown = table.filter(pl.col("significant") & pl.col("effect").is_not_nan())
    panels = table.select("dataset", "rm").unique(maintain_order=True).rows()
    if not shown.height:
        tested = _count(table["feature"].n_unique(), "feature")
        return message_plot(
            options,
            f"Discovered biases: {NONE_TEXT} — none of the {tested} tested on "
            f"{_count(len(panels), 'RM')} has q ≤ {fdr:g}.",
        )
    several_datasets = table["dataset"].n_unique() > 1
    names = [f"{d} · {r}" if several_datasets else r for d, r in panels]
    rows = [_panel_rows(shown, d, r) for d, r in panels]
    counts = [len(r) for r in rows]
    heatmap = _heatmap_rows(shown) if len(panels) > 1 else []
    fig, grid = _layout(options, counts, len(heatmap), max(map(len, names)))
    for k, ((dataset, rm), name) in enumerate(zip(panels, names, strict=True)):
        mine = table.filter((pl.col("dataset") == dataset) & (pl.col("rm") == rm))
        _forest_panel(fig.add_subplot(_panel_cell(grid, k, counts)), rows[k], _title(mine, name))
    if heatmap:
        _heatmap_panel(fig, fig.add_subplot(grid[-1, :]), table, panels, names, heatmap)
    fig.suptitle(
        f"Discovered biases: significant features (q ≤ {fdr:g}) with their {level} intervals, {UNIT}",
        fontsize=10,
    )
    return fig


def message_plot(options: FigureOptions, message: str) -> Figure:
    """A small figure that says why there is nothing to plot (so the target exists and says so)."""
    fig = Figure(figsize=(options.width, 1.6), layout="constrained")
    ax = fig.add_subplot()
    ax.axis("off")
    ax.text(0.5, 0.5, "\n".join(textwrap.wrap(message, 100)), ha="center", va="center", fontsize=10)
    return fig


def finding_label(row: dict) -> str:
    """A finding's label: its phrase where the table has one, else the feature's name; wrapped."""
    text = row.get("phrase") or row["feature"]
    lines = textwrap.wrap(text, LABEL_CHARS, max_lines=LABEL_LINES, placeholder=" …")
    return "\n".join(lines) or text


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _panel_rows(shown: pl.DataFrame, dataset: str, rm: str) -> list[dict]:
    """The significant findings of one (dataset, RM), largest |effect| first (ties by name)."""
    mine = shown.filter((pl.col("dataset") == dataset) & (pl.col("rm") == rm))
    ordered = mine.with_columns(_size=pl.col("effect").abs()).sort(
        ["_size", "feature"], descending=[True, False]
    )
    return ordered.drop("_size").to_dicts()


def _heatmap_rows(shown: pl.DataFrame) -> list[str]:
    """Features significant for some RM, by their largest significant |effect| (ties by name)."""
    sizes = shown.group_by("feature").agg(pl.col("effect").abs().max().alias("_size"))
    return sizes.sort(["_size", "feature"], descending=[True, False])["feature"].to_list()


def _layout(
    options: FigureOptions, panel_rows: list[int], heatmap_rows: int, name_chars: int
) -> tuple[Figure, GridSpec]:
    """A figure and grid sized to the findings: each row of panels as tall as its longest panel."""
    n_grid = math.ceil(len(panel_rows) / PANELS_PER_ROW)
    heights = [
        PANEL_INCHES + ROW_INCHES * max([1, *panel_rows[r * PANELS_PER_ROW : (r + 1) * PANELS_PER_ROW]])
        for r in range(n_grid)
    ]
    if heatmap_rows:
        heights.append(0.4 + HEATMAP_ROW_INCHES * heatmap_rows + 0.05 * min(name_chars, 40))
    fig = Figure(figsize=(options.width, 0.5 + sum(heights)), layout="constrained")
    columns = min(len(panel_rows), PANELS_PER_ROW)
    return fig, fig.add_gridspec(len(heights), columns, height_ratios=heights)


def _panel_cell(grid: GridSpec, k: int, panel_rows: list[int]) -> SubplotSpec:
    """Panel ``k``'s cell: the top of its grid cell, as tall as its findings beside a longer panel."""
    row, col = divmod(k, PANELS_PER_ROW)
    longest = max(1, *panel_rows[row * PANELS_PER_ROW : (row + 1) * PANELS_PER_ROW])
    own = max(1, panel_rows[k])
    if own == longest:
        return grid[row, col]
    ratios = [PANEL_INCHES + ROW_INCHES * own, ROW_INCHES * (longest - own)]
    return grid[row, col].subgridspec(2, 1, height_ratios=ratios)[0]


def _title(mine: pl.DataFrame, name: str) -> str:
    """A panel's title: the RM (vs its reference), with how many of its features are significant."""
    references = mine["reference"].drop_nulls().unique().sort().to_list()
    versus = f" (vs {references[0]})" if references else ""
    return f"{name}{versus}: {int(mine['significant'].sum())} of {mine.height} significant"


def _forest_panel(ax: Axes, rows: list[dict], title: str) -> None:
    """One RM's findings: a dot per effect (red rewarded, blue penalised), its interval as a whisker."""
    ax.set_title(title, fontsize=9, loc="left")
    if not rows:
        ax.set_axis_off()
        ax.text(0.5, 0.5, NONE_TEXT, ha="center", va="center", fontsize=9, transform=ax.transAxes)
        return
    y = np.arange(len(rows), dtype=float)
    effect = np.array([r["effect"] for r in rows], dtype=float)
    low = np.array([r["low"] for r in rows], dtype=float)
    high = np.array([r["high"] for r in rows], dtype=float)
    defined = np.isfinite(low) & np.isfinite(high)
    if defined.any():
        ax.hlines(y[defined], low[defined], high[defined], color="#555555", linewidth=1.2)
    colours = [REWARDED if e > 0 else PENALISED for e in effect]
    ax.scatter(effect, y, c=colours, s=22, zorder=3)
    ax.axvline(0, color=ZERO_LINE, linewidth=0.7)
    ax.set_yticks(y, [finding_label(r) for r in rows], fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # the largest on top
    ax.tick_params(axis="x", labelsize=7)
    ax.set_xlabel(UNIT, fontsize=7)
    ax.grid(axis="x", alpha=0.3)


def _heatmap_panel(
    fig: Figure,
    ax: Axes,
    table: pl.DataFrame,
    panels: list[tuple[str, str]],
    names: list[str],
    features: list[str],
) -> None:
    """Findings × RMs: each significant effect coloured (0 white), non-significant cells hatched, untested
    cells blank."""
    values, significant = _cells(table, panels, features)
    shown = np.where(significant, values, np.nan)
    bound = float(np.nanmax(np.abs(shown))) or 1.0  # every effect 0: any symmetric range
    norm = TwoSlopeNorm(vcenter=0.0, vmin=-bound, vmax=bound)
    image = ax.imshow(shown, cmap=COLOUR_MAP, norm=norm, aspect="auto", interpolation="nearest")
    for i, j in zip(*np.nonzero(np.isfinite(values) & ~significant), strict=True):
        box = Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", edgecolor="#cccccc", linewidth=0)
        ax.add_patch(box)
    if shown.size <= ANNOTATE_CELLS:
        _annotate(ax, shown, bound)
    ax.set_xticks(np.arange(len(names)), names, rotation=35, ha="right", fontsize=7)
    ax.set_yticks(np.arange(len(features)), [finding_label({"feature": f}) for f in features], fontsize=8)
    ax.set_title("Significant effects across RMs (hatched: tested, not significant; blank: not tested)",
                 fontsize=9, loc="left")  # fmt: skip
    bar = fig.colorbar(image, ax=ax, shrink=0.9, pad=0.01)
    bar.set_label(UNIT, fontsize=7)
    bar.ax.tick_params(labelsize=7)


def _cells(
    table: pl.DataFrame, panels: list[tuple[str, str]], features: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """The effect (NaN where untested) and significance of every (feature, panel) cell."""
    values = np.full((len(features), len(panels)), np.nan)
    significant = np.zeros(values.shape, dtype=bool)
    row_of, col_of = {f: i for i, f in enumerate(features)}, {p: j for j, p in enumerate(panels)}
    for r in table.filter(pl.col("feature").is_in(features)).iter_rows(named=True):
        i, j = row_of[r["feature"]], col_of[(r["dataset"], r["rm"])]
        values[i, j], significant[i, j] = r["effect"], bool(r["significant"]) and not math.isnan(r["effect"])
    return values, significant


def _annotate(ax: Axes, shown: np.ndarray, bound: float) -> None:
    """Each significant cell's effect, in white on the darker colours."""
    for i, j in zip(*np.nonzero(np.isfinite(shown)), strict=True):
        value = shown[i, j]
        colour = "white" if abs(value) > 0.6 * bound else "black"
        ax.text(j, i, f"{value:+.2f}", ha="center", va="center", fontsize=7, color=colour)
