"""This run's value of every published cell of a paper, beside the published one (``reproduce`` config).

For Jiang et al. (ICLR 2025) the cells come from ``rmexplain.analysis.reference`` (Tables 1-7). A
``Mapping`` says which of this run's datasets, methods and RMs stand for the paper's names. How each table's
value is computed:

- Tables 1, 2, 4, 5 (§3, App. D, E): the evaluation metrics of the paper's three RMs (v1, v2, pythia),
  averaged over the RMs per seed, then mean and sd over seeds, as the evaluation tables do; Table 5 on the
  ``correct`` / ``wrong`` subsets of OURS.
- Tables 3 and 6 (§4.1, App. F): Kendall τ between two RMs' flip-rate rankings (``tau_rms``) and between one
  RM's Y+ and Y− rankings (``tau_sides``) on the analysis datasets, with their bootstrap intervals.
- Table 7 (App. G): the probe win rate on the harmless analysis dataset; the interval is Wilson's.

The verdict of a cell is a two-sided z test of the difference run − paper against its standard error from
both sides: the paper's sd over its n = 5 seeds (sd / √5), this run's sd over its seeds (sd / √seeds) or,
for interval cells, the interval's half-width / 1.96, and the paper's rounding to two decimals (its largest
error, 0.005, added in quadrature). A cell agrees when |z| ≤ ``within_sd``; it is *inconclusive* when
this run's standard error exceeds ``max_se`` (a large run sd makes nothing agree), or when a τ / win-rate
cell rests on fewer than ``min_items`` items (attributes / perturbations; ``run_n`` shows the count).
Where the paper's sign may be lost (flattened PDF) both readings are reported (``z``, ``z_flipped``); a
cell whose verdict depends on the sign is ``sign-dependent`` with ``agrees`` null, never counted as agreement.

A cell this run has no value for (a method, RM or dataset not mapped or not run) keeps its row with nulls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from rmexplain.explanations.stages import mean_over_rms

SD_RULE = "|z| <= {k}, se from the paper's sd (n=5), the run's sd over seeds, rounding"
INTERVAL_RULE = "|z| <= {k}, se from the paper's sd (n=5), the run's interval, rounding"
PAPER_SEEDS = 5  # "mean and standard deviation across the five random seeds"
ROUNDING = 0.005  # the paper prints two decimals: its largest rounding error, added in quadrature
Z_95 = 1.959963984540054
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
    "run_n": pl.Int64,
    "difference": pl.Float64,
    "se": pl.Float64,
    "z": pl.Float64,
    "z_flipped": pl.Float64,
    "check": pl.String,
    "verdict": pl.String,
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
    min_items: int = 10
    max_se: float = 0.1

    @classmethod
    def from_config(cls, section: dict[str, Any]) -> Mapping:
        """From the checked ``reproduce`` section."""
        return cls(
            reward_models=dict(section["reward_models"]),
            datasets={k: dict(v) for k, v in section["datasets"].items()},
            methods=dict(section["methods"]),
            probe=section.get("probe"),
            within_sd=float(section.get("within_sd", 2.0)),
            min_items=int(section.get("min_items", 10)),
            max_se=float(section.get("max_se", 0.1)),
        )

    def dataset(self, block: str | None, stage: str) -> str | None:
        """This run's dataset standing for the paper's ``block`` in ``stage``."""
        return (self.datasets.get(block or "") or {}).get(stage)


@dataclass(frozen=True)
class RunValue:
    """One cell of this run: a mean, and an sd over ``n`` seeds or an interval over ``n`` items."""

    mean: float | None
    sd: float | None = None
    low: float | None = None
    high: float | None = None
    source: str = ""
    n: int | None = None


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
    return RunValue(_finite(row["mean"]), _finite(row["sd"]), source=source, n=int(row["seeds"]))


def _interval_value(hit: pl.DataFrame, column: str, source: str, n_column: str) -> RunValue:
    if hit.height == 0:
        return RunValue(None)
    row = hit.row(0, named=True)
    n = row.get(n_column)
    low, high = _finite(row["ci_low"]), _finite(row["ci_high"])
    return RunValue(_finite(row[column]), None, low, high, source, None if n is None else int(n))


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
    return _interval_value(hit, "tau", f"{dataset}/{method} {a} vs {b}", "n_attributes")


def _tau_sides_value(cell: dict, tau_sides: pl.DataFrame, mapping: Mapping) -> RunValue:
    dataset, method = mapping.dataset(cell["column"], "analysis"), mapping.methods.get("OURS")
    rm = mapping.reward_models.get(cell["row"])
    if None in (dataset, method, rm):
        return RunValue(None)
    hit = tau_sides.filter(
        (pl.col("dataset") == dataset) & (pl.col("method") == method) & (pl.col("rm") == rm)
    )
    return _interval_value(hit, "tau", f"{dataset}/{method} {rm}", "n_attributes")


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
    value = _interval_value(
        hit, "win_rate", f"{dataset}/{method} {rm}, probe {mapping.probe}", "n_perturbations"
    )
    if hit.height:
        return RunValue(value.mean, None, value.low, value.high, f"{value.source}, n={value.n}", value.n)
    return value


@dataclass(frozen=True)
class Verdict:
    """How one cell compares: the standard error of the difference, both readings' z, the verdict."""

    check: str = ""
    se: float | None = None
    z: float | None = None
    z_flipped: float | None = None
    verdict: str = ""
    agrees: bool | None = None


def _run_se(run: RunValue) -> float | None:
    """This run's standard error: sd / √seeds, or an interval's half-width / 1.96."""
    if run.sd is not None and run.n:
        return run.sd / run.n**0.5
    if run.low is not None and run.high is not None:
        return (run.high - run.low) / (2 * Z_95)
    return None


def _verdict(paper: float, paper_sd: float | None, uncertain: bool, run: RunValue, m: Mapping) -> Verdict:
    """The z test of run − paper; both sign readings where the paper's sign may be lost."""
    run_se = _run_se(run)
    if run_se is None:
        return Verdict(verdict="no run sd (one seed)")
    interval = run.sd is None
    rule = (INTERVAL_RULE if interval else SD_RULE).format(k=f"{m.within_sd:g}")
    paper_se = (paper_sd or 0.0) / PAPER_SEEDS**0.5
    se = (paper_se**2 + run_se**2 + ROUNDING**2) ** 0.5
    z = (run.mean - paper) / se
    z_flipped = (run.mean + paper) / se if uncertain else None
    if run_se > m.max_se:
        return Verdict(rule, se, z, z_flipped, f"inconclusive: run se {run_se:.3f} > max_se {m.max_se:g}")
    if interval and (run.n is None or run.n < m.min_items):
        return Verdict(rule, se, z, z_flipped, f"inconclusive: n {run.n} < min_items {m.min_items}")
    agrees = abs(z) <= m.within_sd
    if z_flipped is not None and (abs(z_flipped) <= m.within_sd) != agrees:
        which = "as printed" if agrees else "with the sign flipped"
        return Verdict(rule, se, z, z_flipped, f"sign-dependent: agrees only {which}")
    return Verdict(rule, se, z, z_flipped, "agrees" if agrees else "differs", agrees)


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
        verdict = Verdict()
        if run.mean is not None:
            verdict = _verdict(cell["mean"], _finite(cell["sd"]), bool(cell["sign_uncertain"]), run, mapping)
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
                "run_n": run.n,
                "difference": None if run.mean is None else run.mean - cell["mean"],
                "se": verdict.se,
                "z": verdict.z,
                "z_flipped": verdict.z_flipped,
                "check": verdict.check,
                "verdict": verdict.verdict,
                "agrees": verdict.agrees,
                "source": run.source,
            }
        )
    return pl.DataFrame(rows, schema=COLUMNS)


def agreement_summary(table: pl.DataFrame) -> pl.DataFrame:
    """Per table: published cells, cells with a run value, how many agree, differ, are inconclusive, and
    whose verdict depends on a lost sign (never counted as agreeing)."""
    return (
        table.group_by("table", maintain_order=True)
        .agg(
            cells=pl.len(),
            with_run_value=pl.col("run_mean").is_not_null().sum(),
            agree=pl.col("agrees").fill_null(False).sum(),
            differ=(pl.col("verdict") == "differs").sum(),
            inconclusive=pl.col("verdict").str.starts_with("inconclusive").sum(),
            sign_dependent=pl.col("verdict").str.starts_with("sign-dependent").sum(),
            mean_abs_difference=pl.col("difference").abs().mean(),
        )
        .sort("table")
    )
