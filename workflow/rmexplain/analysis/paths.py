"""Result paths of the analysis stage (issue 5), as patterns and plain functions of config.

``workflow/rules/analyse.smk`` and ``analysis.targets`` use these, so the layout is defined once.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import rmexplain.paths as P

Config = dict[str, Any]

# Methods whose perturbations carry no attribute: attribute analyses do not apply to them.
UNCONDITIONED_METHODS = frozenset({"random", "polyjuice"})
SIDES = ("plus", "minus")

ANALYSIS_DIR = "results/analysis/{dataset}/{method}"
PFR = ANALYSIS_DIR + "/pfr.parquet"
TAU_RMS = ANALYSIS_DIR + "/tau_rms.parquet"
TAU_SIDES = ANALYSIS_DIR + "/tau_sides.parquet"
LOCAL_TAU = ANALYSIS_DIR + "/local_tau.parquet"
EXAMPLES = ANALYSIS_DIR + "/examples.parquet"
PROBES = ANALYSIS_DIR + "/probe_win_rate.parquet"
JUDGEMENTS = "results/analysis/{dataset}/{method}/judge/{orienter}.parquet"

# Representative examples: a figure, an HTML page (figure embedded, texts) and a Markdown copy of the page.
EXAMPLE_RM = "results/analysis/examples/{dataset}/{method}/{rm}"
EXAMPLE_PAIR = "results/analysis/examples/{dataset}/{method}/{rm_a}_vs_{rm_b}_{side_label}"
SIDE_LABELS = {"plus": "Yplus", "minus": "Yminus"}
EXAMPLE_PARTS = ("figure", "html", "md")

PFR_FIGURE = "results/figures/analysis/pfr/{dataset}/{method}.{ext}"
LOCAL_TAU_FIGURE = "results/figures/analysis/local_tau/{dataset}/{method}.{ext}"
SUMMARY_FIGURE = "results/figures/analysis/{figure}.{ext}"
SUMMARY_FIGURES = ("rank_similarity", "probe_win_rate", "correctness", "attribute_judge")

# Tables: results/tables/{table}.{csv,md,html}; the HTML copy is what the report shows.
TABLE_EXTS = ("csv", "md", "html")
ANALYSIS_TABLES = (
    "pfr",
    "tau_rms",
    "tau_sides",
    "representative_examples",
    "probe_win_rate",
    "attribute_judge",
)


def settings(config: Config) -> Config:
    """The ``analysis`` section (defaults are filled by the JSON schema)."""
    return config.get("analysis") or {}


def analysed_methods(config: Config) -> list[str]:
    """Perturbation methods the attribute analyses run on (default: every attribute-conditioned one)."""
    chosen = settings(config).get("methods")
    if chosen:
        return list(chosen)
    return [m for m in P.methods(config) if m not in UNCONDITIONED_METHODS]


def example_rms(config: Config) -> list[str]:
    """RMs that get a one-RM representative example (default: all)."""
    return list(settings(config).get("examples", {}).get("rms") or P.reward_models(config))


def example_pairs(config: Config) -> list[tuple[str, str]]:
    """RM pairs that get a two-RM representative example (default: every pair, in config order)."""
    pairs = settings(config).get("examples", {}).get("pairs")
    if pairs:
        return [(a, b) for a, b in pairs]
    return list(combinations(P.reward_models(config), 2))


def judge_enabled(config: Config) -> bool:
    """Whether the optional LLM attribute-change judge runs."""
    return bool(settings(config).get("judge", {}).get("enabled", False))


def probes_enabled(config: Config) -> bool:
    """Whether any probe phrase is configured."""
    return bool(settings(config).get("probes"))


def _per_dataset_method(config: Config, pattern: str, **extra: str) -> list[str]:
    return [
        P.fmt(pattern, dataset=d, method=m, **extra)
        for d in P.datasets(config)
        for m in analysed_methods(config)
    ]


def explanation_inputs(config: Config, dataset: str, method: str) -> list[str]:
    """The explanation tables of every RM for one (dataset, method)."""
    return [P.fmt(P.EXPLANATIONS, dataset=dataset, method=method, rm=r) for r in P.reward_models(config)]


def perturbation_inputs(config: Config, dataset: str, method: str) -> list[str]:
    """The perturbation tables the RMs of one (dataset, method) are explained with."""
    orienters = dict.fromkeys(P.orienter_for(config, r) for r in P.reward_models(config))
    return [P.fmt(P.PERTURBATIONS, dataset=dataset, method=method, orienter=o) for o in orienters]


def judgement_files(config: Config) -> list[str]:
    """Every judge output (one per perturbation set)."""
    return [
        P.fmt(JUDGEMENTS, dataset=d, method=m, orienter=o)
        for d in P.datasets(config)
        for m in analysed_methods(config)
        for o in P.orienters(config)
    ]


def table_inputs(config: Config, table: str) -> list[str]:
    """The per-(dataset, method) Parquet files one summary table is built from."""
    pattern = {
        "pfr": PFR,
        "tau_rms": TAU_RMS,
        "tau_sides": TAU_SIDES,
        "representative_examples": EXAMPLES,
        "probe_win_rate": PROBES,
    }.get(table)
    if pattern is not None:
        return _per_dataset_method(config, pattern)
    if table == "attribute_judge":
        return judgement_files(config)
    raise KeyError(f"unknown analysis table {table!r}; known: {ANALYSIS_TABLES}")


def tables(config: Config) -> list[str]:
    """Names of the summary tables this config produces."""
    names = ["pfr", "tau_rms", "tau_sides", "representative_examples"]
    if probes_enabled(config):
        names.append("probe_win_rate")
    if judge_enabled(config):
        names.append("attribute_judge")
    return names


def table_files(config: Config) -> list[str]:
    """Every analysis table as CSV, Markdown and HTML."""
    return [P.fmt(P.TABLE, table=t, ext=e) for t in tables(config) for e in TABLE_EXTS]


def summary_figures(config: Config) -> list[str]:
    """Names of the figures summarising all datasets and methods."""
    names = ["rank_similarity", "correctness"]
    if probes_enabled(config):
        names.append("probe_win_rate")
    if judge_enabled(config):
        names.append("attribute_judge")
    return names


def figure_ext(config: Config) -> str:
    """Figure file format."""
    return config.get("figures", {}).get("format", "png")


def example_stems(config: Config, dataset: str, method: str) -> dict[str, list[str]]:
    """Path stems (no suffix) of the examples of one (dataset, method): ``{"rm": [...], "pair": [...]}``."""
    rms = [P.fmt(EXAMPLE_RM, dataset=dataset, method=method, rm=rm) for rm in example_rms(config)]
    pairs = [
        P.fmt(EXAMPLE_PAIR, dataset=dataset, method=method, rm_a=a, rm_b=b, side_label=SIDE_LABELS[side])
        for a, b in example_pairs(config)
        for side in SIDES
    ]
    return {"rm": rms, "pair": pairs}


def example_outputs(config: Config, dataset: str, method: str) -> dict[str, list[str]]:
    """The example files of one (dataset, method) by part: figures, HTML pages, Markdown pages."""
    stems = [s for group in example_stems(config, dataset, method).values() for s in group]
    suffix = {"figure": "." + figure_ext(config), "html": ".html", "md": ".md"}
    return {part: [stem + suffix[part] for stem in stems] for part in EXAMPLE_PARTS}


def example_files(config: Config) -> list[str]:
    """Figures and pages of every representative example."""
    return [
        f
        for d in P.datasets(config)
        for m in analysed_methods(config)
        for files in example_outputs(config, d, m).values()
        for f in files
    ]


def figure_files(config: Config) -> list[str]:
    """Every analysis figure (per-dataset PFR and local-τ figures, summaries, examples)."""
    ext = figure_ext(config)
    files = _per_dataset_method(config, PFR_FIGURE, ext=ext) + _per_dataset_method(
        config, LOCAL_TAU_FIGURE, ext=ext
    )
    files += [P.fmt(SUMMARY_FIGURE, figure=f, ext=ext) for f in summary_figures(config)]
    return files + example_files(config)
