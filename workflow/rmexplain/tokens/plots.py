"""Figures of the token part (paper Figs. 1–5), one function per figure; ``options`` is config["figures"]."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import polars as pl

from rmexplain.figures import FigureOptions
from rmexplain.tokens.stats import tau_square


def _figure(options: dict[str, Any], n_panels: int, height_ratio: float = 0.4) -> tuple[Any, np.ndarray]:
    width = FigureOptions.from_config(options).width
    fig, axes = plt.subplots(
        1, n_panels, figsize=(width, max(3.2, width * height_ratio)), squeeze=False, constrained_layout=True
    )
    return fig, axes[0]


def _save(fig: Any, output: str, options: dict[str, Any]) -> None:
    fig.savefig(output, dpi=FigureOptions.from_config(options).dpi)
    plt.close(fig)


def _colours(names: Sequence[str]) -> dict[str, Any]:
    palette = plt.get_cmap("tab10").colors
    return {n: palette[i % len(palette)] for i, n in enumerate(names)}


def violins(
    scans: pl.DataFrame,
    prompts: dict[str, str],
    options: dict[str, Any],
    output: str,
    title: str | None = None,
) -> None:
    """Score distributions of every RM, one panel per prompt (paper Fig. 1)."""
    rms = list(dict.fromkeys(scans["rm"].to_list()))
    fig, axes = _figure(options, len(prompts), 0.45)
    for ax, (prompt_id, text) in zip(axes, prompts.items(), strict=True):
        data = [
            scans.filter((pl.col("rm") == rm) & (pl.col("prompt_id") == prompt_id))["score"].to_numpy()
            for rm in rms
        ]
        parts = ax.violinplot(data, showmedians=True, showextrema=True)
        for body, colour in zip(parts["bodies"], _colours(rms).values(), strict=True):
            body.set_facecolor(colour)
            body.set_alpha(0.6)
        ax.set_xticks(range(1, len(rms) + 1), rms, rotation=45, ha="right", fontsize=7)
        ax.set_title(_wrap(text), fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("reward of the single-token response")
    n_tokens = scans["token_id"].n_unique()
    fig.suptitle(
        title or f"Exhaustive single-token score distributions ({n_tokens} tokens max per RM)", fontsize=10
    )
    _save(fig, output, options)


def tau_heatmap(tau: pl.DataFrame, options: dict[str, Any], output: str) -> None:
    """Pairwise Kendall τ between RMs over the shared decoded vocabulary, one panel per prompt (Fig. 2A)."""
    prompt_ids = list(dict.fromkeys(tau["prompt_id"].to_list()))
    n = len(prompt_ids)  # one panel: a narrower, taller figure, so the matrix fills it
    width = FigureOptions.from_config(options).width * min(1.0, 0.35 + 0.35 * n)
    fig, axes = _figure({**options, "width": width}, n, 0.38 if n > 1 else 0.75)
    image = None
    for ax, prompt_id in zip(axes, prompt_ids, strict=True):
        rms, square = tau_square(tau, prompt_id)
        image = ax.imshow(square, vmin=-1, vmax=1, cmap="RdBu_r")
        ax.set_xticks(range(len(rms)), rms, rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(len(rms)), rms, fontsize=7)
        for i in range(len(rms)):
            for j in range(len(rms)):
                ax.text(j, i, f"{square[i, j]:.2f}", ha="center", va="center", fontsize=6)
        n = tau.filter(pl.col("prompt_id") == prompt_id)["n_shared"][0]
        ax.set_title(f"{prompt_id} (n = {n} shared texts)", fontsize=8)
    if image is not None:
        fig.colorbar(image, ax=list(axes), shrink=0.8, label="Kendall τ")
    _save(fig, output, options)


def mds_map(mds: pl.DataFrame, rsa: pl.DataFrame, options: dict[str, Any], output: str) -> None:
    """2-D MDS of 1 − τ per prompt (Fig. 2B); the RSA correlations are printed under each panel."""
    prompt_ids = list(dict.fromkeys(mds["prompt_id"].to_list()))
    colours = _colours(list(dict.fromkeys(mds["rm"].to_list())))
    fig, axes = _figure(options, len(prompt_ids), 0.38)
    for ax, prompt_id in zip(axes, prompt_ids, strict=True):
        one = mds.filter(pl.col("prompt_id") == prompt_id)
        for rm, x, y in one.select("rm", "x", "y").iter_rows():
            ax.scatter(x, y, color=colours[rm], s=40)
            ax.annotate(rm, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        ax.set_title(prompt_id, fontsize=9)
        ax.set_aspect("equal", adjustable="datalim")
        ax.margins(0.25)
        ax.grid(alpha=0.3)
        lines = [
            f"RSA {p}: r = {r:.2f}" + (f", p = {pv:.3f}" if np.isfinite(pv) else "")
            for p, r, pv in rsa.filter(pl.col("prompt_id") == prompt_id)
            .select("property", "spearman_r", "p_value")
            .iter_rows()
            if r is not None and np.isfinite(r)
        ]
        ax.set_xlabel(
            "\n".join(lines) if lines else "RSA undefined (needs ≥ 3 RMs with varying properties)", fontsize=7
        )
    fig.suptitle("Reward models by MDS of 1 − Kendall τ", fontsize=10)
    _save(fig, output, options)


def _slope_panel(
    ax: Any, table: pl.DataFrame, groups: list[tuple[str, ...]], keys: list[str], rms: list[str]
) -> None:
    colours = _colours(rms)
    for g, group in enumerate(groups):
        cond = pl.lit(True)
        for key, value in zip(keys, group, strict=True):
            cond = cond & (pl.col(key) == value)
        rows = table.filter(cond)
        jitter = np.linspace(-0.15, 0.15, max(len(rms), 1))
        for k, rm in enumerate(rms):
            one = rows.filter(pl.col("rm") == rm)
            if one.height:
                ax.scatter(
                    g + jitter[k], one["slope"][0], color=colours[rm], s=18, label=rm if g == 0 else None
                )
        if rows.height:
            mean = rows["slope"].mean()
            se = rows["slope"].std() / np.sqrt(rows.height) if rows.height > 1 else 0.0
            ax.errorbar(g + 0.3, mean, yerr=se, fmt="D", color="black", ms=5, capsize=3)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(range(len(groups)), ["\n".join(g) for g in groups], fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def sentiment_slopes_figure(slopes: pl.DataFrame, options: dict[str, Any], output: str) -> None:
    """Slope of standardised score on AFINN value per RM, prompt and valence; mean ± SE (Fig. 3C)."""
    fig, axes = _figure(options, 1, 0.45)
    groups = [
        (p, v) for p, v in slopes.select("prompt_id", "valence").unique(maintain_order=True).iter_rows()
    ]
    rms = list(dict.fromkeys(slopes["rm"].to_list()))
    _slope_panel(axes[0], slopes, groups, ["prompt_id", "valence"], rms)
    axes[0].set_ylabel("slope: score (z) per AFINN point")
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes[0].set_title(
        "Token sentiment vs reward, by prompt and valence (diamond: mean ± SE over RMs)", fontsize=9
    )
    _save(fig, output, options)


def frequency_slopes_figure(slopes: pl.DataFrame, options: dict[str, Any], output: str) -> None:
    """Slope of standardised score on standardised Zipf frequency, controlling for sentiment (Fig. 3D)."""
    fig, axes = _figure(options, 1, 0.45)
    groups = [(p,) for p in dict.fromkeys(slopes["prompt_id"].to_list())]
    rms = list(dict.fromkeys(slopes["rm"].to_list()))
    _slope_panel(axes[0], slopes, groups, ["prompt_id"], rms)
    axes[0].set_ylabel("slope: score (z) per SD of Zipf frequency")
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes[0].set_title(
        "Word frequency vs reward, controlling for AFINN sentiment (mean ± SE over RMs)", fontsize=9
    )
    _save(fig, output, options)


def framing_figure(framing: pl.DataFrame, options: dict[str, Any], output: str, n_labels: int = 4) -> None:
    """Standardised scores under two framings, one panel per RM, extremes labelled (Fig. 4)."""
    rms = list(dict.fromkeys(framing["rm"].to_list()))
    a, b = framing["prompt_a"][0], framing["prompt_b"][0]
    fig, axes = _figure(options, len(rms), 0.42)
    for ax, rm in zip(axes, rms, strict=True):
        one = framing.filter(pl.col("rm") == rm)
        ax.scatter(
            one["z_a"].to_numpy(), one["z_b"].to_numpy(), s=3, alpha=0.3, color="tab:blue", rasterized=True
        )
        label_rows = pl.concat(
            [
                one.sort("both", descending=True).head(n_labels),
                one.sort("both").head(n_labels),
                one.sort("z_a", descending=True).head(n_labels),
                one.sort("z_b", descending=True).head(n_labels),
            ]
        ).unique("token_id")
        for k, (text, x, y) in enumerate(label_rows.sort("z_a").select("text", "z_a", "z_b").iter_rows()):
            ax.annotate(
                text.strip(),
                (x, y),
                fontsize=6,
                xytext=(4, 9 * (k % 3) - 9),
                textcoords="offset points",
                arrowprops={"arrowstyle": "-", "lw": 0.3, "color": "grey"},
            )
        ax.set_xlabel(f"score (z) · {a}", fontsize=8)
        ax.set_ylabel(f"score (z) · {b}", fontsize=8)
        ax.set_title(rm, fontsize=9)
        ax.grid(alpha=0.3)
    fig.suptitle(f"Framing: '{a}' against '{b}' per token", fontsize=10)
    _save(fig, output, options)


def human_disagreements_figure(disagreements: pl.DataFrame, options: dict[str, Any], output: str) -> None:
    """Mean model rank minus human rank for the largest disagreements (Fig. 5B)."""
    ordered = disagreements.sort("difference")
    fig, axes = _figure(options, 1, 0.5)
    colours = ["tab:purple" if d < 0 else "tab:green" for d in ordered["difference"].to_list()]
    axes[0].barh(range(ordered.height), ordered["difference"].to_numpy(), color=colours)
    axes[0].set_yticks(range(ordered.height), ordered["item"].to_list(), fontsize=7)
    axes[0].axvline(0, color="grey", lw=0.8)
    axes[0].set_xlabel("mean RM rank − human rank (green: humans rank it higher; purple: RMs do)")
    axes[0].set_title("Largest disagreements between the human ranking and the RMs", fontsize=9)
    _save(fig, output, options)


def _wrap(text: str, width: int = 40) -> str:

    return "\n".join(textwrap.wrap(text, width))


def raw_framing_figure(
    framing: pl.DataFrame, prompt_a: str, prompt_b: str, options: dict[str, Any], output: str
) -> None:
    """Paper Fig. 4 as its code draws it: raw scores of every shared text under two prompts, one panel per
    RM, with the y = x line (``paper.framing_scores``)."""
    rms = list(dict.fromkeys(framing["rm"].to_list()))
    fig, axes = _figure(options, max(1, len(rms)), 0.3)
    for ax, rm in zip(axes, rms, strict=False):
        one = framing.filter(pl.col("rm") == rm)
        x, y = one["score_a"].to_numpy(), one["score_b"].to_numpy()
        ax.scatter(x, y, s=3, alpha=0.3, color="tab:blue", rasterized=True)
        low, high = float(min(x.min(), y.min())), float(max(x.max(), y.max()))
        ax.plot([low, high], [low, high], color="black", linestyle="--", linewidth=0.8)
        ax.set_xlabel(f"score · {prompt_a}", fontsize=8)
        ax.set_ylabel(f"score · {prompt_b}", fontsize=8)
        ax.set_title(rm, fontsize=9)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    fig.suptitle(
        f"Raw scores of the shared vocabulary: '{prompt_a}' against '{prompt_b}' (y = x dashed)", fontsize=10
    )
    _save(fig, output, options)


def scan_modes_figure(comparison: pl.DataFrame, options: dict[str, Any], output: str) -> None:
    """Exact-id against official scans per RM × prompt: Kendall τ-b over the vocabulary, the shares of the
    top and bottom n tokens both scans agree on, and the shares of ids whose scored sequence differs (at all,
    and beyond the official route's second BOS)."""
    labels = [f"{rm} · {p}" for rm, p in comparison.select("rm", "prompt_id").iter_rows()]
    n = comparison["n_extreme"].cast(pl.Float64)
    series = {
        "Kendall τ-b": comparison["kendall_tau_b"],
        "top-n overlap": comparison["top_overlap"] / n,
        "bottom-n overlap": comparison["bottom_overlap"] / n,
        "sequence differs": comparison["share_sequence_differs"],
        "differs beyond BOS": comparison["share_differs_beyond_bos"],
    }
    fig, axes = _figure(options, 1, 0.1 + 0.05 * len(labels))
    ax = axes[0]
    y = np.arange(len(labels))
    height = 0.8 / len(series)
    for k, (name, values) in enumerate(series.items()):
        ax.barh(y + (k - 1.5) * height, values.to_numpy(), height=height, label=name)
    ax.set_yticks(y, labels, fontsize=7)
    ax.set_xlim(-1, 1)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.invert_yaxis()
    ax.legend(fontsize=7, loc="lower left")
    ax.set_title(
        "How much the official code's tokenisation moves each scan (exact ids vs decode-and-retokenise)",
        fontsize=9,
    )
    _save(fig, output, options)
