"""This run's value of every published cell of a paper, beside the published one (``reproduce`` config).

For Jiang et al. (ICLR 2025) the cells come from ``rmexplain.analysis.reference`` (Tables 1-7). A
``Mapping`` says which of this run's datasets, methods and RMs stand for the paper's names. How each table's
value is computed:

- Tables 1, 2, 4, 5 (§3, App. D, E): the evaluation metrics of the paper's three RMs (v1, v2, pythia),
  averaged over the RMs per seed, then mean and sd over seeds, as the evaluation tables do; Table 5 on the
  ``correct`` / ``wrong`` subsets of OURS. A cell *agrees* when the paper's mean lies within this run's
  mean ± ``within_sd`` sd.
- Tables 3 and 6 (§4.1, App. F): Kendall τ between two RMs' flip-rate rankings (``tau_rms``) and between one
  RM's Y+ and Y− rankings (``tau_sides``) on the analysis datasets; a cell agrees when the paper's value lies
  in the run's bootstrap interval. Where the paper's sign is uncertain (flattened PDF), either sign counts.
- Table 7 (App. G): the probe win rate on the harmless analysis dataset; the interval is Wilson's.

A cell this run has no value for (a method, RM or dataset not mapped or not run) keeps its row with nulls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from rmexplain.explanations.stages import mean_over_rms

SD_RULE = "mean ± {k} sd over seeds"
INTERVAL_RULE = "run's interval"
PAPER_RMS = ("v1", "v2", "pythia")  # the RMs Tables 1, 2, 4 and 5 average over
SIDE_OF_COLUMN = {"Y+": "plus", "Y-": "minus"}

COLUMNS: dict[str, Any] = {
    "table": pl.String,
    "section": pl.String,
    "block": pl.String,
    "row": pl.String,
    "column": pl.String,
    "paper_mean": pl.Float64,
    "paper_sd": pl.Float64,
    "sign_uncertain": pl.Boolean,
    "run_mean": pl.Float64,
    "run_sd": pl.Float64,
    "run_low": pl.Float64,
    "run_high": pl.Float64,
    "difference": pl.Float64,
    "check": pl.String,
    "agrees": pl.Boolean,
    "source": pl.String,
}


@dataclass(frozen=True)
class Mapping:
    """The paper's names -> this config's (the ``reproduce`` section)."""

    reward_models: dict[str, str]
    datasets: dict[str, dict[str, str]]
    methods: dict[str, str]
    probe: str | None = None
    within_sd: float = 2.0

    @classmethod
    def from_config(cls, section: dict[str, Any]) -> Mapping:
        """From the checked ``reproduce`` section."""
        return cls(
            reward_models=dict(section["reward_models"]),
            datasets={k: dict(v) for k, v in section["datasets"].items()},
            methods=dict(section["methods"]),
            probe=section.get("probe"),
            within_sd=float(section.get("within_sd", 2.0)),
        )

    def dataset(self, block: str | None, stage: str) -> str | None:
        """This run's dataset standing for the paper's ``block`` in ``stage``."""
        return (self.datasets.get(block or "") or {}).get(stage)


@dataclass(frozen=True)
class RunValue:
    """One cell of this run: a mean, and an sd over seeds or an interval."""

    mean: float | None
    sd: float | None = None
    low: float | None = None
    high: float | None = None
    source: str = ""


def _finite(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if value != value else value


def _evaluation_value(cell: dict, summary: pl.DataFrame, mapping: Mapping) -> RunValue:
    dataset = mapping.dataset(cell["block"], "evaluation")
    if cell["table"] == "5":
        method, subset = mapping.methods.get("OURS"), cell["row"]
    else:
        method, subset = mapping.methods.get(cell["row"]), "all"
    if dataset is None or method is None:
        return RunValue(None)
    hit = summary.filter(
        (pl.col("dataset") == dataset)
        & (pl.col("method") == method)
        & (pl.col("subset") == subset)
        & (pl.col("metric") == cell["metric"])
    )
    if hit.height == 0:
        return RunValue(None)
    row = hit.row(0, named=True)
    source = f"{dataset}/{method}/{subset}, {row['seeds']} seeds"
    return RunValue(_finite(row["mean"]), _finite(row["sd"]), source=source)


def _interval_value(hit: pl.DataFrame, column: str, source: str) -> RunValue:
    if hit.height == 0:
        return RunValue(None)
    row = hit.row(0, named=True)
    return RunValue(_finite(row[column]), None, _finite(row["ci_low"]), _finite(row["ci_high"]), source)


def _tau_pair_value(cell: dict, tau_rms: pl.DataFrame, mapping: Mapping) -> RunValue:
    block, side = cell["column"].split("/")
    dataset, method = mapping.dataset(block, "analysis"), mapping.methods.get("OURS")
    a, b = (mapping.reward_models.get(name.strip()) for name in cell["row"].split(","))
    if None in (dataset, method, a, b):
        return RunValue(None)
    pair = ((pl.col("rm_a") == a) & (pl.col("rm_b") == b)) | ((pl.col("rm_a") == b) & (pl.col("rm_b") == a))
    hit = tau_rms.filter(
        (pl.col("dataset") == dataset)
        & (pl.col("method") == method)
        & (pl.col("side") == SIDE_OF_COLUMN[side])
        & pair
    )
    return _interval_value(hit, "tau", f"{dataset}/{method} {a} vs {b}")


def _tau_sides_value(cell: dict, tau_sides: pl.DataFrame, mapping: Mapping) -> RunValue:
    dataset, method = mapping.dataset(cell["column"], "analysis"), mapping.methods.get("OURS")
    rm = mapping.reward_models.get(cell["row"])
    if None in (dataset, method, rm):
        return RunValue(None)
    hit = tau_sides.filter(
        (pl.col("dataset") == dataset) & (pl.col("method") == method) & (pl.col("rm") == rm)
    )
    return _interval_value(hit, "tau", f"{dataset}/{method} {rm}")


def _probe_value(cell: dict, probes: pl.DataFrame, mapping: Mapping) -> RunValue:
    dataset, method = mapping.dataset("harmless", "analysis"), mapping.methods.get("OURS")
    rm = mapping.reward_models.get(cell["column"])
    if None in (dataset, method, rm):
        return RunValue(None)
    hit = probes.filter(
        (pl.col("dataset") == dataset)
        & (pl.col("method") == method)
        & (pl.col("rm") == rm)
        & (pl.col("probe") == mapping.probe)
    )
    value = _interval_value(hit, "win_rate", f"{dataset}/{method} {rm}, probe {mapping.probe}")
    if hit.height:
        return RunValue(
            value.mean, None, value.low, value.high, f"{value.source}, n={hit['n_perturbations'][0]}"
        )
    return value


def _agrees(paper: float, uncertain: bool, run: RunValue, k: float) -> tuple[str, bool | None]:
    candidates = [paper, -paper] if uncertain else [paper]
    if run.sd is not None:
        return SD_RULE.format(k=f"{k:g}"), any(abs(p - run.mean) <= k * run.sd for p in candidates)
    if run.low is not None and run.high is not None:
        return INTERVAL_RULE, any(run.low <= p <= run.high for p in candidates)
    return "", None


def reproduction_table(
    reference: pl.DataFrame,
    mapping: Mapping,
    metrics: pl.DataFrame | None = None,
    tau_rms: pl.DataFrame | None = None,
    tau_sides: pl.DataFrame | None = None,
    probes: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """One row per published cell (``reference`` order): the paper's value, this run's, and whether they
    agree. Missing inputs (e.g. no analysis datasets) leave their cells' run values null."""
    paper_rms = [mapping.reward_models[n] for n in PAPER_RMS if n in mapping.reward_models]
    summary = None
    if metrics is not None:
        summary = mean_over_rms(
            metrics.filter(pl.col("rm").is_in(paper_rms)), ["dataset", "method", "subset"]
        )
    rows = []
    for cell in reference.iter_rows(named=True):
        table = cell["table"]
        if table in {"1", "2", "4", "5"} and summary is not None:
            run = _evaluation_value(cell, summary, mapping)
        elif table == "3" and tau_rms is not None:
            run = _tau_pair_value(cell, tau_rms, mapping)
        elif table == "6" and tau_sides is not None:
            run = _tau_sides_value(cell, tau_sides, mapping)
        elif table == "7" and probes is not None and mapping.probe:
            run = _probe_value(cell, probes, mapping)
        else:
            run = RunValue(None)
        check, agrees = ("", None)
        if run.mean is not None:
            check, agrees = _agrees(cell["mean"], bool(cell["sign_uncertain"]), run, mapping.within_sd)
        rows.append(
            {
                "table": table,
                "section": cell["section"],
                "block": cell["block"],
                "row": cell["row"],
                "column": cell["column"],
                "paper_mean": cell["mean"],
                "paper_sd": cell["sd"],
                "sign_uncertain": cell["sign_uncertain"],
                "run_mean": run.mean,
                "run_sd": run.sd,
                "run_low": run.low,
                "run_high": run.high,
                "difference": None if run.mean is None else run.mean - cell["mean"],
                "check": check,
                "agrees": agrees,
                "source": run.source,
            }
        )
    return pl.DataFrame(rows, schema=COLUMNS)


def agreement_summary(table: pl.DataFrame) -> pl.DataFrame:
    """Per table: published cells, cells with a run value, and how many of those agree."""
    return (
        table.group_by("table", maintain_order=True)
        .agg(
            cells=pl.len(),
            with_run_value=pl.col("run_mean").is_not_null().sum(),
            agree=pl.col("agrees").fill_null(False).sum(),
            mean_abs_difference=pl.col("difference").abs().mean(),
        )
        .sort("table")
    )
