"""Figures of the analyses: flip rates, rank similarity, local τ, examples, probes, judge, Table 5.

Every function takes plain frames and a ``FigureOptions`` and writes one file. Figures are built on
``matplotlib.figure.Figure`` objects (no pyplot state) with constrained layout, and their heights grow
with the number of rows they show so labels never overlap.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from rmexplain.figures import FigureOptions

SIDE_TITLE = {"plus": "Y+ (perturbations of y+)", "minus": "Y− (perturbations of y−)"}
PALETTE = ("#1b6ca8", "#e07b24", "#3a923a", "#c03d3e", "#8c62aa", "#7f7f7f", "#bcbd22", "#17becf")
CF_COLOUR, SF_COLOUR, BEYOND_COLOUR = "#c03d3e", "#1b6ca8", "#7f7f7f"


def _save(fig: Figure, path: str | Path, options: FigureOptions) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=options.dpi)


def _colours(names: list[str]) -> dict[str, str]:
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


def message_figure(path: str | Path, options: FigureOptions, message: str) -> None:
    """A small figure that says why there is nothing to show (so every target exists)."""
    fig = Figure(figsize=(options.width, 1.6), layout="constrained")
    ax = fig.add_subplot()
    ax.axis("off")
    ax.text(0.5, 0.5, "\n".join(textwrap.wrap(message, 110)), ha="center", va="center", fontsize=10)
    _save(fig, path, options)


def _nan(values: list[float | None]) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def _error(values: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Asymmetric error-bar lengths (0 where the interval is undefined)."""
    return np.nan_to_num(np.vstack([values - low, high - values]).clip(min=0), nan=0.0)


def _grouped_barh(
    ax: Axes,
    labels: list[str],
    groups: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
    colours: dict[str, str],
    annotate: bool = False,
) -> None:
    """Horizontal grouped bars: one row per label, one bar per group, with interval whiskers.

    With ``annotate``, each bar's value is written past its whisker (so zero-length bars stay visible).
    """
    y = np.arange(len(labels))
    height = 0.8 / max(len(groups), 1)
    for i, (name, (value, low, high)) in enumerate(groups.items()):
        offset = (i - (len(groups) - 1) / 2) * height
        if annotate:
            ends = np.fmax(np.nan_to_num(value), np.nan_to_num(high))
            for y_i, v, end in zip(y + offset, value, ends, strict=True):
                text = "n/a" if np.isnan(v) else f"{v:.2f}"
                ax.text(end + 0.01, y_i, text, va="center", fontsize=7, color=colours[name])
        ax.barh(
            y + offset,
            np.nan_to_num(value),
            height,
            color=colours[name],
            label=name,
            xerr=_error(value, low, high),
            error_kw={"elinewidth": 0.8, "capsize": 1.5, "alpha": 0.8},
        )
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_ylim(len(labels) - 0.5, -0.5)  # first label on top (explicit: invert_yaxis toggles shared axes)
    ax.grid(axis="x", alpha=0.3)
    ax.tick_params(axis="x", labelsize=8)


def pfr_figure(
    pfr: pl.DataFrame,
    title: str,
    path: str | Path,
    options: FigureOptions,
    level: str = "95%",
    note: str = "",
) -> None:
    """Paper Fig. 3: PFR per attribute (a bar per RM, with intervals) and the mean reward delta, Y+ and Y−;
    ``note`` under the title (what a marked RM name means)."""
    if pfr.height == 0:
        message_figure(
            path, options, f"{title}: no attribute-conditioned perturbations to compute flip rates from."
        )
        return
    attributes = pfr["attribute"].unique(maintain_order=True).to_list()
    rms = pfr["rm"].unique(maintain_order=True).to_list()
    colours = _colours(rms)
    height = 1.6 + 2 * (0.28 * len(attributes) * max(1.0, len(rms) / 2) + 0.6) + _note_height(note)
    fig = Figure(figsize=(options.width, height), layout="constrained")
    axes = fig.subplots(2, 2, sharey=True, gridspec_kw={"width_ratios": [3, 2]})
    for row, side in enumerate(("plus", "minus")):
        for col, (value, low, high, label) in enumerate(
            (
                ("pfr", "pfr_low", "pfr_high", "preference flip rate"),
                ("mean_delta", "delta_low", "delta_high", "mean reward delta"),
            )
        ):
            groups = {}
            for rm in rms:
                mine = pfr.filter((pl.col("rm") == rm) & (pl.col("side") == side))
                by_attr = {r["attribute"]: r for r in mine.iter_rows(named=True)}
                get = [by_attr.get(a, {}) for a in attributes]
                groups[rm] = tuple(_nan([g.get(k) for g in get]) for k in (value, low, high))
            ax = axes[row, col]
            _grouped_barh(ax, attributes, groups, colours)
            ax.set_title(f"{SIDE_TITLE[side]}: {label}", fontsize=9)
            if col == 0:
                ax.set_xlim(0, 1)
            else:
                ax.axvline(0, color="black", linewidth=0.6)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="outside lower center",
        ncols=min(len(rms), 6),
        title="reward model",
        fontsize=8,
        title_fontsize=8,
    )
    fig.suptitle(
        _with_note(
            f"{title}: preference flip rate and mean reward delta per attribute\n"
            f"(whiskers: {level} bootstrap CI over comparisons)",
            note,
        ),
        fontsize=10,
    )
    _save(fig, path, options)


NOTE_WIDTH = 130  # characters per line of a note under a figure's title
NOTE_LINE = 0.2  # inches a note's line adds to a figure's height


def _with_note(title: str, note: str) -> str:
    """A figure title with ``note`` (what a marked RM name means) wrapped beneath it."""
    return "\n".join([title, *textwrap.wrap(note, NOTE_WIDTH)])


def _note_height(note: str) -> float:
    return NOTE_LINE * len(textwrap.wrap(note, NOTE_WIDTH))


def rank_similarity_figure(
    tau_rms: pl.DataFrame,
    tau_sides: pl.DataFrame,
    path: str | Path,
    options: FigureOptions,
    level: str = "95%",
    note: str = "",
) -> None:
    """Tables 3 and 6 as point-and-interval plots: τ between RMs per side, and between Y+ and Y− per RM;
    ``note`` under the title (what a marked RM name means)."""
    if tau_rms.height == 0 and tau_sides.height == 0:
        message_figure(
            path, options, "No PFR rankings to compare (no attribute-conditioned method was analysed)."
        )
        return
    pair_rows = tau_rms.select("dataset", "method", "rm_a", "rm_b").unique(maintain_order=True).rows()
    side_rows = tau_sides.select("dataset", "method", "rm").unique(maintain_order=True).rows()
    n_rows = max(len(pair_rows), len(side_rows), 1)
    fig = Figure(figsize=(options.width, 1.6 + 0.38 * n_rows + _note_height(note)), layout="constrained")
    left, right = fig.subplots(1, 2)
    side_colours = {"plus": PALETTE[0], "minus": PALETTE[1]}
    for i, (dataset, method, a, b) in enumerate(pair_rows):
        for j, side in enumerate(("plus", "minus")):
            hit = tau_rms.filter(
                (pl.col("dataset") == dataset)
                & (pl.col("method") == method)
                & (pl.col("rm_a") == a)
                & (pl.col("rm_b") == b)
                & (pl.col("side") == side)
            )
            if hit.height:
                _point(left, i + (j - 0.5) * 0.3, hit.row(0, named=True), side_colours[side])
    left.set_yticks(range(len(pair_rows)), [f"{d} · {m}\n{a} vs {b}" for d, m, a, b in pair_rows], fontsize=8)
    side_handles = [
        Line2D([], [], marker="o", color=c, linestyle="", label="Y+" if s == "plus" else "Y−")
        for s, c in side_colours.items()
    ]
    fig.legend(
        handles=side_handles,
        loc="outside lower center",
        ncols=2,
        fontsize=8,
        title="side (left panel)",
        title_fontsize=8,
    )
    left.set_title("Between RMs, per side (paper Table 3)", fontsize=9)
    for i, (dataset, method, rm) in enumerate(side_rows):
        hit = tau_sides.filter(
            (pl.col("dataset") == dataset) & (pl.col("method") == method) & (pl.col("rm") == rm)
        )
        _point(right, i, hit.row(0, named=True), PALETTE[2])
    right.set_yticks(range(len(side_rows)), [f"{d} · {m}\n{rm}" for d, m, rm in side_rows], fontsize=8)
    right.set_title("Between Y+ and Y−, per RM (paper Table 6)", fontsize=9)
    for ax, n in ((left, len(pair_rows)), (right, len(side_rows))):
        ax.set_xlim(-1.05, 1.05)
        ax.axvline(0, color="black", linewidth=0.6)
        ax.set_ylim(max(n, 1) - 0.5, -0.5)
        ax.grid(axis="x", alpha=0.3)
        ax.set_xlabel(f"Kendall τ-b of PFR rankings ({level} bootstrap CI)", fontsize=8)
        ax.tick_params(axis="x", labelsize=8)
    fig.suptitle(_with_note("Rank similarity of global attribute sensitivity", note), fontsize=10)
    _save(fig, path, options)


def _point(ax: Axes, y: float, row: dict, colour: str) -> None:
    tau = row["tau"]
    if tau is None or np.isnan(tau):
        ax.text(0, y, "τ undefined", ha="center", va="center", fontsize=7, color="grey")
        return
    low, high = row["ci_low"], row["ci_high"]
    err = _error(np.array([tau]), _nan([low]), _nan([high]))
    ax.errorbar([tau], [y], xerr=err, fmt="o", color=colour, capsize=3, markersize=5)


def local_tau_figure(local: pl.DataFrame, title: str, path: str | Path, options: FigureOptions) -> None:
    """Distribution of each comparison's local-vs-global τ per RM and side (box plot with the points)."""
    defined = local.filter(pl.col("tau").is_not_nan())
    if defined.height == 0:
        message_figure(path, options, f"{title}: no comparison has a defined local τ.")
        return
    keys = (
        defined.select("rm", "side")
        .unique(maintain_order=True)
        .sort("rm", "side", descending=[False, True])
        .rows()
    )
    fig = Figure(figsize=(options.width, 1.4 + 0.45 * len(keys)), layout="constrained")
    ax = fig.add_subplot()
    data = [
        defined.filter((pl.col("rm") == rm) & (pl.col("side") == side))["tau"].to_numpy() for rm, side in keys
    ]
    ax.boxplot(data, orientation="horizontal", widths=0.6, showfliers=False)
    rng = np.random.default_rng(0)
    for i, values in enumerate(data, start=1):
        ax.scatter(values, i + rng.uniform(-0.18, 0.18, len(values)), s=8, alpha=0.5, color=PALETTE[0])
    undefined = local.filter(pl.col("tau").is_nan()).group_by("rm", "side").len()
    counts = {(r, s): n for r, s, n in undefined.rows()}
    labels = [
        f"{rm} · {'Y+' if side == 'plus' else 'Y−'}  (n={len(d)}, undefined {counts.get((rm, side), 0)})"
        for (rm, side), d in zip(keys, data, strict=True)
    ]
    ax.set_yticks(range(1, len(keys) + 1), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(-1.05, 1.05)
    ax.axvline(0, color="black", linewidth=0.6)
    ax.grid(axis="x", alpha=0.3)
    ax.set_xlabel(
        "Kendall τ-b between a comparison's reward-delta ranking and the global PFR ranking", fontsize=8
    )
    ax.set_title(f"{title}: how representative each comparison is (paper §4.2)", fontsize=10)
    _save(fig, path, options)


def probe_figure(probes: pl.DataFrame, path: str | Path, options: FigureOptions) -> None:
    """Probe win rate per RM (Wilson interval), one row group per (dataset, method, probe)."""
    if probes.height == 0:
        message_figure(path, options, "No probe configured (analysis.probes).")
        return
    rows = probes.select("dataset", "method", "probe").unique(maintain_order=True).rows()
    rms = probes["rm"].unique(maintain_order=True).to_list()
    colours = _colours(rms)
    fig = Figure(figsize=(options.width, 1.5 + 0.3 * len(rows) * max(1, len(rms))), layout="constrained")
    ax = fig.add_subplot()
    groups = {}
    for rm in rms:
        cells = []
        for d, m, p in rows:
            hit = probes.filter(
                (pl.col("rm") == rm)
                & (pl.col("dataset") == d)
                & (pl.col("method") == m)
                & (pl.col("probe") == p)
            )
            cells.append(hit.row(0, named=True) if hit.height else {})
        groups[rm] = tuple(_nan([c.get(k) for c in cells]) for k in ("win_rate", "ci_low", "ci_high"))
    labels = []
    for d, m, p in rows:
        pattern = probes.filter(pl.col("probe") == p)["pattern"][0]
        sizes = probes.filter((pl.col("dataset") == d) & (pl.col("method") == m) & (pl.col("probe") == p))
        n = "/".join(str(v) for v in sizes["n_perturbations"].to_list())
        labels.append(f"{d} · {m}\n{p}: “{textwrap.shorten(pattern, 28)}” (n={n})")
    _grouped_barh(ax, labels, groups, colours, annotate=True)
    ax.set_xlim(0, 1.08)
    ax.axvline(0.5, color="black", linewidth=0.6, linestyle=":")
    ax.set_xlabel(
        "share of probe perturbations the RM prefers over their original (lower is better)", fontsize=8
    )
    ax.legend(title="reward model", fontsize=8, title_fontsize=8, loc="lower right")
    ax.set_title("Probe win rate (paper Table 7, generalised); n = probe perturbations per RM", fontsize=10)
    _save(fig, path, options)


def judge_figure(agreement: pl.DataFrame, path: str | Path, options: FigureOptions) -> None:
    """Stacked shares per attribute: judged as intended, unchanged, opposite, unparsed."""
    if agreement.height == 0:
        message_figure(path, options, "The attribute-change judge produced no judgements.")
        return
    panels = agreement.select("dataset", "method").unique(maintain_order=True).rows()
    n_attr = agreement["attribute"].n_unique()
    fig = Figure(figsize=(options.width, 1.4 + 0.3 * n_attr * len(panels)), layout="constrained")
    axes = np.atleast_1d(fig.subplots(len(panels), 1, squeeze=False)[:, 0])
    parts = (
        ("share_agree", "as intended", PALETTE[2]),
        ("share_unchanged", "unchanged", PALETTE[5]),
        ("share_opposite", "opposite direction", PALETTE[3]),
        ("share_unparsed", "unparsed", "#dddddd"),
    )
    for ax, (dataset, method) in zip(axes, panels, strict=True):
        mine = agreement.filter((pl.col("dataset") == dataset) & (pl.col("method") == method))
        labels = [f"{a} (n={n})" for a, n in zip(mine["attribute"], mine["n_total"], strict=True)]
        left = np.zeros(mine.height)
        for column, label, colour in parts:
            values = mine[column].fill_null(0).to_numpy()
            ax.barh(np.arange(mine.height), values, left=left, color=colour, label=label)
            left += values
        ax.set_yticks(np.arange(mine.height), labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_title(f"{dataset} · {method}", fontsize=9)
        ax.tick_params(axis="x", labelsize=8)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, ncols=4, fontsize=8, loc="outside lower center")
    axes[-1].set_xlabel("share of perturbations, as judged by the LLM", fontsize=8)
    fig.suptitle("Did each perturbation change its attribute in the intended direction?", fontsize=10)
    _save(fig, path, options)


def _cell(summary: pl.DataFrame, keys: tuple[str, str, str], subset: str, metric: str) -> tuple[float, float]:
    d, m, r = keys
    hit = summary.filter(
        (pl.col("dataset") == d)
        & (pl.col("method") == m)
        & (pl.col("rm") == r)
        & (pl.col("subset") == subset)
        & (pl.col("metric") == metric)
    )
    if hit.height == 0 or hit["mean"][0] is None:
        return float("nan"), 0.0
    return float(hit["mean"][0]), float(hit["sd"][0] or 0.0)


def correctness_figure(
    summary: pl.DataFrame, labels: dict[str, str], path: str | Path, options: FigureOptions
) -> None:
    """Paper Table 5 as bars: each metric for correct vs wrong RM preferences (mean ± sd over seeds).

    One panel per metric, one row per (dataset, method, RM); "none" marks a subset without comparisons
    (e.g. an RM that agrees with every human label)."""
    summary = summary.filter(
        pl.col("subset").is_in(["correct", "wrong"]) & pl.col("metric").is_in(list(labels))
    )
    if summary.height == 0:
        message_figure(path, options, "No metrics split by correctness yet.")
        return
    metrics = [m for m in labels if m in set(summary["metric"].to_list())]
    groups = summary.select("dataset", "method", "rm").unique(maintain_order=True).rows()
    several_methods = len({g[1] for g in groups}) > 1
    names = [f"{d} · {r}" + (f" · {m}" if several_methods else "") for d, m, r in groups]
    n_cols = min(3, len(metrics))
    n_rows = -(-len(metrics) // n_cols)
    fig = Figure(figsize=(options.width, 0.9 + (0.6 + 0.36 * len(groups)) * n_rows), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False, sharey=True)
    colours = {"correct": PALETTE[2], "wrong": PALETTE[3]}
    y = np.arange(len(groups))
    for i, metric in enumerate(metrics):
        ax = axes.ravel()[i]
        top = max(1e-9, float(summary.filter(pl.col("metric") == metric)["mean"].max() or 0.0))
        for j, subset in enumerate(("correct", "wrong")):
            cells = [_cell(summary, g, subset, metric) for g in groups]
            mean = np.array([c[0] for c in cells])
            offset = (j - 0.5) * 0.4
            ax.barh(
                y + offset,
                np.nan_to_num(mean),
                0.4,
                xerr=[c[1] for c in cells],
                capsize=2,
                color=colours[subset],
                label=subset,
                error_kw={"elinewidth": 0.8},
            )
            for k in np.flatnonzero(np.isnan(mean)):
                ax.text(0.02 * top, y[k] + offset, "none", va="center", fontsize=6, color="grey")
        ax.set_yticks(y, names, fontsize=7)
        ax.set_ylim(len(groups) - 0.5, -0.5)
        ax.set_title(labels[metric], fontsize=9)
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(axis="x", labelsize=7)
    for ax in axes.ravel()[len(metrics) :]:
        ax.axis("off")
    handles, names_ = axes.ravel()[0].get_legend_handles_labels()
    fig.legend(
        handles,
        names_,
        loc="outside lower center",
        ncols=2,
        title="RM preference vs human label",
        fontsize=8,
        title_fontsize=8,
    )
    fig.suptitle(
        "Explanation quality for correct vs wrong RM preferences (paper Table 5; mean ± sd over seeds)",
        fontsize=10,
    )
    _save(fig, path, options)


def _variant_label(attribute: str | None, variant: int, n_variants: int) -> str:
    name = attribute or "(no attribute)"
    return f"{name} #{variant}" if n_variants > 1 else name


def _lollipops(ax: Axes, rows: pl.DataFrame, original: float, labels: list[str]) -> None:
    """One row per perturbation: a line from the original's reward to the perturbation's, marked by kind."""
    y = np.arange(rows.height)
    for i, row in enumerate(rows.iter_rows(named=True)):
        cf = row["kind"] == "counterfactual"
        colour = CF_COLOUR if cf else (BEYOND_COLOUR if row["sf_subkind"] == "beyond" else SF_COLOUR)
        ax.plot([original, row["reward_perturbed"]], [i, i], color=colour, linewidth=1.2, alpha=0.6)
        ax.plot(
            row["reward_perturbed"],
            i,
            marker="o" if cf else "s",
            markersize=6,
            color=colour,
            markerfacecolor=colour if cf else "white",
        )
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_ylim(rows.height - 0.5, -0.5)
    ax.grid(axis="x", alpha=0.3)
    ax.tick_params(axis="x", labelsize=8)


def _kind_legend() -> list[Line2D]:
    return [
        Line2D(
            [], [], marker="o", color=CF_COLOUR, linestyle="", label="counterfactual (flips the preference)"
        ),
        Line2D(
            [],
            [],
            marker="s",
            color=SF_COLOUR,
            markerfacecolor="white",
            linestyle="",
            label="semifactual, between the originals",
        ),
        Line2D(
            [],
            [],
            marker="s",
            color=BEYOND_COLOUR,
            markerfacecolor="white",
            linestyle="",
            label="semifactual, beyond its own original",
        ),
    ]


def _originals(ax: Axes, reward_plus: float, reward_minus: float) -> None:
    ax.axvline(reward_plus, color="#2a7d2a", linewidth=1.4, linestyle="-")
    ax.axvline(reward_minus, color="#b35c00", linewidth=1.4, linestyle="--")


def _ordered(rows: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    rows = rows.sort("reward_delta", "attribute", "variant", descending=[True, False, False], nulls_last=True)
    counts = rows.group_by("attribute").len()
    n_of = {a: n for a, n in counts.rows()}
    return rows, [
        _variant_label(r["attribute"], r["variant"], n_of[r["attribute"]]) for r in rows.iter_rows(named=True)
    ]


def example_rm_figure(rows: pl.DataFrame, title: str, path: str | Path, options: FigureOptions) -> None:
    """Paper Fig. 4: the rewards one RM gives both originals and every perturbation of each (CF/SF marked)."""
    if rows.height == 0:
        message_figure(
            path, options, f"{title}: no comparison is eligible (no defined local τ on both sides)."
        )
        return
    reward_plus, reward_minus = rows["reward_plus"][0], rows["reward_minus"][0]
    sides = [s for s in ("plus", "minus") if rows.filter(pl.col("side") == s).height]
    n_max = max(rows.filter(pl.col("side") == s).height for s in sides)
    fig = Figure(figsize=(options.width, 2.0 + 0.26 * n_max), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(sides), sharex=True, squeeze=False)[0])
    values = [reward_plus, reward_minus, *rows["reward_perturbed"].to_list()]
    pad = 0.06 * (max(values) - min(values) or 1.0)
    for ax, side in zip(axes, sides, strict=True):
        mine, labels = _ordered(rows.filter(pl.col("side") == side))
        _lollipops(ax, mine, reward_plus if side == "plus" else reward_minus, labels)
        _originals(ax, reward_plus, reward_minus)
        ax.set_xlim(min(values) - pad, max(values) + pad)
        ax.set_title(SIDE_TITLE[side], fontsize=9)
        ax.set_xlabel("reward", fontsize=8)
    handles = [
        Line2D([], [], color="#2a7d2a", label=f"r(y+) = {reward_plus:.3g}"),
        Line2D([], [], color="#b35c00", linestyle="--", label=f"r(y−) = {reward_minus:.3g}"),
        *_kind_legend(),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8)
    fig.suptitle(title, fontsize=10)
    _save(fig, path, options)


def example_pair_figure(
    rows_a: pl.DataFrame,
    rows_b: pl.DataFrame,
    names: tuple[str, str],
    side: str,
    title: str,
    path: str | Path,
    options: FigureOptions,
) -> None:
    """Paper Fig. 5: two RMs' rewards for the same perturbations of one side, attributes in RM a's order."""
    if rows_a.height == 0 or rows_b.height == 0:
        message_figure(path, options, f"{title}: no comparison is eligible for both RMs on this side.")
        return
    ordered_a, labels = _ordered(rows_a)
    key = ["attribute", "variant"]
    order = ordered_a.select(key).with_row_index("_pos")
    ordered_b = order.join(rows_b, on=key, how="left").sort("_pos").drop("_pos")
    fig = Figure(figsize=(options.width, 2.0 + 0.26 * ordered_a.height), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, rows, name in zip(axes, (ordered_a, ordered_b), names, strict=True):
        present = rows.filter(pl.col("reward_perturbed").is_not_null())
        reward_plus, reward_minus = present["reward_plus"][0], present["reward_minus"][0]
        _lollipops(
            ax,
            rows.with_columns(pl.col("reward_perturbed").fill_null(float("nan"))),
            reward_plus if side == "plus" else reward_minus,
            labels,
        )
        _originals(ax, reward_plus, reward_minus)
        ax.set_title(f"{name}: r(y+) = {reward_plus:.3g}, r(y−) = {reward_minus:.3g}", fontsize=9)
        ax.set_xlabel("reward", fontsize=8)
    handles = [
        Line2D([], [], color="#2a7d2a", label="r(y+)"),
        Line2D([], [], color="#b35c00", linestyle="--", label="r(y−)"),
        *_kind_legend(),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8)
    fig.suptitle(f"{title}\n{SIDE_TITLE[side]}", fontsize=10)
    _save(fig, path, options)


TARGET_TITLE = {
    "rejected": "(a) perturbations of the rejected response (human label)",
    "chosen": "(b) perturbations of the chosen response (human label)",
}


def relative_margin(rows: pl.DataFrame) -> pl.DataFrame:
    """``margin``: r(y') minus the reward of the other original, over |r(y+) − r(y−)| of the same RM.

    Positive: the RM prefers the perturbed response to the other original; crossing zero flips a preference.
    Scaling by each RM's own margin puts RMs with different reward scales on one axis."""
    other = pl.when(pl.col("side") == "plus").then(pl.col("reward_minus")).otherwise(pl.col("reward_plus"))
    scale = (pl.col("reward_plus") - pl.col("reward_minus")).abs()
    return rows.with_columns(margin=(pl.col("reward_perturbed") - other) / scale)


def rewards_example_figure(
    rows: pl.DataFrame, rms: list[str], title: str, path: str | Path, options: FigureOptions
) -> None:
    """Paper App. G, Fig. 6: every RM's reward on each perturbation of one comparison, as the relative
    margin (:func:`relative_margin`), one panel per perturbed response, attributes as rows."""
    rows = relative_margin(rows)
    labels = rows.select("attribute", "variant").unique().sort("attribute", "variant", nulls_last=True)
    n_variants = dict(labels.group_by("attribute").len().rows())
    ticks = [_variant_label(a, v, n_variants[a]) for a, v in labels.rows()]
    positions = {key: i for i, key in enumerate(labels.rows())}
    fig = Figure(figsize=(options.width, 2.2 + 0.3 * len(ticks)), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    colours = _colours(rms)
    offsets = np.linspace(-0.3, 0.3, len(rms)) if len(rms) > 1 else np.zeros(1)
    for ax, target in zip(axes, ("rejected", "chosen"), strict=True):
        mine = rows.filter(pl.col("target") == target)
        for rm, offset in zip(rms, offsets, strict=True):
            points = mine.filter(pl.col("rm") == rm)
            y = [positions[(a, v)] + offset for a, v in points.select("attribute", "variant").rows()]
            ax.scatter(points["margin"].to_list(), y, s=22, color=colours[rm], label=rm, zorder=3)
        ax.axvline(0.0, color="black", linewidth=1.0)
        ax.set_yticks(np.arange(len(ticks)), ticks, fontsize=8)
        ax.set_ylim(len(ticks) - 0.5, -0.5)
        ax.grid(axis="x", alpha=0.3)
        ax.set_title(TARGET_TITLE[target], fontsize=9)
        ax.set_xlabel("(r(y′) − r(other original)) / |r(y+) − r(y−)|", fontsize=8)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=len(rms), fontsize=8)
    fig.suptitle(title, fontsize=10)
    _save(fig, path, options)


def reproduction_figure(table: pl.DataFrame, path: str | Path, options: FigureOptions) -> Figure:
    """This run's value of every published cell against the paper's, one panel per table, y = x dashed;
    error bars are the run's ± 2 sd over seeds or its interval; filled markers agree, open ones do not, and a
    black edge marks a cell shown close to the paper (``equivalent``). Returns the saved figure."""
    tables = table["table"].unique(maintain_order=True).to_list()
    fig = Figure(
        figsize=(options.width, 0.3 * options.width * ((len(tables) + 3) // 4)), layout="constrained"
    )
    axes = np.atleast_1d(fig.subplots((len(tables) + 3) // 4, 4, squeeze=False).ravel())
    for ax, name in zip(axes, tables, strict=False):
        cells = table.filter((pl.col("table") == name) & pl.col("run_mean").is_not_null())
        low = cells["run_low"].fill_null(cells["run_mean"] - cells["run_sd"].fill_null(0.0) * 2)
        high = cells["run_high"].fill_null(cells["run_mean"] + cells["run_sd"].fill_null(0.0) * 2)
        x, y = cells["paper_mean"].to_numpy(), cells["run_mean"].to_numpy()
        agree = cells["agrees"].fill_null(False).to_numpy()
        close = cells["equivalent"].fill_null(False).to_numpy()
        if cells.height:
            ax.errorbar(
                x, y, yerr=[y - low.to_numpy(), high.to_numpy() - y], fmt="none", ecolor="#999", lw=0.8
            )
            ax.scatter(x[agree], y[agree], s=16, color=PALETTE[0], zorder=3)
            ax.scatter(x[~agree], y[~agree], s=16, facecolors="white", edgecolors=PALETTE[3], zorder=3)
            ax.scatter(x[close], y[close], s=40, facecolors="none", edgecolors="black", lw=0.8, zorder=4)
        bounds = [-1.0, 1.0] if name in {"3", "6"} else [0.0, 1.0]
        ax.plot(bounds, bounds, color="black", linestyle="--", linewidth=0.8)
        n_total = table.filter(pl.col("table") == name).height
        ax.set_title(
            f"Table {name}: {int(agree.sum())} of {cells.height} agree, {int(close.sum())} close\n"
            f"({n_total} cells)",
            fontsize=9,
        )
        ax.set_xlabel("paper", fontsize=8)
        ax.set_ylabel("this run", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes[len(tables) :]:
        ax.axis("off")
    _save(fig, path, options)
    return fig
