"""Every file path of the explanation workflow, and the target lists, as plain functions of config.

The rule files and the input functions in ``workflow/rules/common.smk`` call these, so the
layout of ``results/`` is defined once and can be tested without Snakemake.
"""

from __future__ import annotations

from typing import Any

Config = dict[str, Any]

COMPARISONS = "results/data/{dataset}/comparisons.parquet"
DEMO_HEAD = "results/models/{rm}/head.pt"
ORIGINAL_SCORES = "results/scores/{dataset}/originals/{rm}.parquet"
PERTURBATIONS = "results/perturbations/{dataset}/{method}/{orienter}.parquet"
PERTURBATION_REWARDS = "results/scores/{dataset}/perturbations/{rm}.parquet"
EXPLANATIONS = "results/explanations/{dataset}/{method}/{rm}.parquet"
DISTANCES = "results/distances/{dataset}/{method}/{orienter}.parquet"
METRICS = "results/metrics/{dataset}/{method}/{rm}.parquet"
TABLE = "results/tables/{table}.{ext}"
EVALUATION_TABLES = ("coverage", "distances", "coverage_by_correctness", "distances_by_correctness")
FIGURE = "results/figures/{figure}.{ext}"

SHARED_ORIENTER = "shared"


def embedded_data_file(part: str) -> str:
    """Path of a bundled JSONL part (an input of the rules that read it, so edits to it rerun them)."""
    from importlib import resources

    return str(resources.files("rmexplain.data") / "embedded" / f"{part}.jsonl")


def dataset_source_files(config: Config, dataset: str) -> list[str]:
    """Local files a dataset is read from (bundled part or user file); hub datasets have none."""
    spec = config["datasets"][dataset]
    if spec["source"] == "embedded":
        return [embedded_data_file(spec["part"])]
    if spec["source"] == "file":
        return [spec["path"]]
    return []


def datasets(config: Config) -> list[str]:
    """Dataset names, in config order."""
    return list(config["datasets"])


def reward_models(config: Config) -> list[str]:
    """RM names, in config order."""
    return list(config["reward_models"])


def methods(config: Config) -> list[str]:
    """Perturbation methods to run."""
    return list(config["perturb"]["methods"])


def orientation_mode(config: Config) -> str:
    """``per_rm`` (paper §3: each RM's own preference orients its perturbations) or ``shared`` (§4)."""
    return config["perturb"].get("orientation", "per_rm")


def shared_rms(config: Config) -> list[str]:
    """RMs whose agreement defines the shared comparisons (default: all RMs)."""
    return list(config["perturb"].get("shared_rms") or reward_models(config))


def orienter_for(config: Config, rm: str) -> str:
    """Which perturbation set RM ``rm`` is explained with."""
    return SHARED_ORIENTER if orientation_mode(config) == "shared" else rm


def orienters(config: Config) -> list[str]:
    """Distinct perturbation sets to generate per (dataset, method)."""
    if orientation_mode(config) == "shared":
        return [SHARED_ORIENTER]
    return reward_models(config)


def orienting_rms(config: Config, orienter: str) -> list[str]:
    """RMs whose original scores orient the perturbation set ``orienter``."""
    return shared_rms(config) if orienter == SHARED_ORIENTER else [orienter]


def fmt(pattern: str, **wildcards: str) -> str:
    """Fill a path pattern."""
    return pattern.format(**wildcards)


def perturbation_files_for_rm(config: Config, dataset: str, rm: str) -> list[str]:
    """All perturbation tables that RM ``rm`` scores on ``dataset`` (every method)."""
    orienter = orienter_for(config, rm)
    return [fmt(PERTURBATIONS, dataset=dataset, method=m, orienter=orienter) for m in methods(config)]


def explanation_files(config: Config) -> list[str]:
    """All explanation tables."""
    return [
        fmt(EXPLANATIONS, dataset=d, method=m, rm=r)
        for d in datasets(config)
        for m in methods(config)
        for r in reward_models(config)
    ]


def metric_files(config: Config) -> list[str]:
    """All per-(dataset, method, RM) metric tables."""
    return [
        fmt(METRICS, dataset=d, method=m, rm=r)
        for d in datasets(config)
        for m in methods(config)
        for r in reward_models(config)
    ]


def evaluation_tables(config: Config) -> list[str]:
    """The paper's Tables 1, 2 and 5 as CSV and Markdown."""
    return [fmt(TABLE, table=t, ext=e) for t in EVALUATION_TABLES for e in ("csv", "md", "html")]


def evaluation_figures(config: Config) -> list[str]:
    """Figures of the evaluation stage."""
    ext = config.get("figures", {}).get("format", "png")
    return [fmt(FIGURE, figure="methods", ext=ext)]
