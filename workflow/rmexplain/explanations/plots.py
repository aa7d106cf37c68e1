"""The evaluation figure: explainers compared on coverage and distances (paper Tables 1–2 as bars)."""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import polars as pl

from rmexplain.figures import FigureOptions

PANELS = (
    ("Counterfactual coverage", ["chosen CF cov.", "rejected CF cov.", "both CF cov."], (0, 1.05)),
    ("Semifactual coverage", ["chosen SF cov.", "rejected SF cov.", "both SF cov."], (0, 1.05)),
    ("Distances and diversity", ["syn. dist.", "sem. dist.", "sem. div."], None),
)


def methods_figure(
    coverage: pl.DataFrame, distances: pl.DataFrame, options: dict[str, Any], output: str
) -> None:
    """Grouped bars (mean ± sd over seeds, averaged over RMs) per dataset × method for each metric."""
    table = coverage.join(distances, on=["dataset", "method", "rm"]).filter(pl.col("rm") == "mean over RMs")
    groups = [(d, m) for d, m in table.select("dataset", "method").unique(maintain_order=True).iter_rows()]
    width = FigureOptions.from_config(options).width
    fig, axes = plt.subplots(1, len(PANELS), figsize=(width, max(3.2, width * 0.36)), constrained_layout=True)
    bar_width = 0.8 / max(len(groups), 1)
    colours = plt.get_cmap("tab10").colors
    for ax, (title, columns, ylim) in zip(axes, PANELS, strict=True):
        x = np.arange(len(columns))
        for i, (dataset, method) in enumerate(groups):
            row = table.filter((pl.col("dataset") == dataset) & (pl.col("method") == method)).row(
                0, named=True
            )
            means = [row[f"{c} mean"] if row[f"{c} mean"] is not None else np.nan for c in columns]
            sds = [row[f"{c} sd"] if row[f"{c} sd"] is not None else 0.0 for c in columns]
            ax.bar(
                x + i * bar_width - 0.4 + bar_width / 2,
                means,
                bar_width,
                yerr=sds,
                capsize=2,
                color=colours[i % len(colours)],
                label=f"{dataset} · {method}",
            )
        ax.set_xticks(x, [c.replace(" cov.", "").replace(" ", "\n", 1) for c in columns], fontsize=8)
        ax.set_title(title, fontsize=10)
        if ylim:
            ax.set_ylim(*ylim)
        ax.grid(axis="y", alpha=0.3)
    axes[-1].legend(
        fontsize=7, title="dataset · method", title_fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0)
    )
    fig.suptitle("Explainers compared (mean ± sd over seeds, averaged over reward models)", fontsize=11)
    fig.savefig(output, dpi=FigureOptions.from_config(options).dpi)
    plt.close(fig)
