"""This run's value of every published cell of a paper, beside the published one (``reproduce`` config).

For Jiang et al. (ICLR 2025) the cells come from ``rmexplain.analysis.reference`` (Tables 1-7). A
``Mapping`` says which of this run's datasets, methods and RMs stand for the paper's names. How each table's
value is computed:

- Tables 1, 2, 4, 5 (§3, App. D, E): the evaluation metrics of the paper's three RMs (v1, v2, pythia),
  averaged over the RMs per seed, then mean and sd over the seeds where every one of them has a value (a
  seed with only some is another average: left out, and named in ``source``), as the evaluation tables do;
  Table 5 on the ``correct`` / ``wrong`` subsets of OURS.
- Tables 3 and 6 (§4.1, App. F): Kendall τ between two RMs' flip-rate rankings (``tau_rms``) and between one
  RM's Y+ and Y− rankings (``tau_sides``) on the analysis datasets, with their bootstrap intervals.
- Table 7 (App. G): the probe win rate on the harmless analysis dataset; the interval is Wilson's.

The difference run − paper is tested against its standard error from three parts, added in quadrature: the
paper's (sd / √5 over its five seeds, df 4; for Table 7 the binomial se over its 110 items; unknown for τ,
where the paper prints no sd and not how many comparisons its τ rests on), this run's (sd / √seeds, df
seeds − 1, or an interval's half-width / 1.96), and the paper's rounding to two decimals (0.005). The
critical value is Student's t at the Welch–Satterthwaite degrees of freedom of those parts, at the level of
|z| ≤ ``within_sd`` for a normal (2: 95.4 %). A cell *agrees* when |t| is at most that value and *differs*
otherwise. It is *inconclusive* when a mean ± sd cell has fewer than ``min_seeds`` seeds with a value, when
a τ / win-rate cell rests on fewer than ``min_items`` items (or on an unknown number), or when this run's
standard error exceeds ``max_se``. Where the paper's sign may be lost (flattened PDF) both readings are
tested (``t``, ``t_flipped``); a cell whose verdict depends on the sign is ``sign-dependent``, never counted
as agreement. Every cell with a run value has exactly one of these four verdicts.

"Agrees" means "not shown to differ", which a noisy run satisfies easily. Beside it, two one-sided tests
(TOST) against ``margin`` (``tau_margin`` for τ) say whether the difference is shown to lie within
± margin (``equivalent``); ``reading`` combines both: *close to the paper*, *too noisy to tell*, *differs*.

A cell this run has no value for (a method, RM or dataset not mapped or not run) keeps its row with nulls.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import polars as pl
from scipy import stats

from rmexplain.explanations.stages import mean_over_rms
from rmexplain.settings import schema_defaults

PAPER_SEEDS = 5  # "mean and standard deviation across the five random seeds"
PAPER_PROBE_ITEMS = 110  # App. G: the Table 7 win rates are over 110 comparisons
ROUNDING = 0.005  # the paper prints two decimals: its largest rounding error, added in quadrature
Z_95 = 1.959963984540054
PAPER_RMS = ("v1", "v2", "pythia")  # the RMs Tables 1, 2, 4 and 5 average over
SEED_TABLES = {"1", "2", "4", "5"}  # mean ± sd over seeds; the other tables carry an interval
TAU_TABLES = {"3", "6"}
SIDE_OF_COLUMN = {"Y+": "plus", "Y-": "minus"}
OUTCOMES = ("agrees", "differs", "inconclusive", "sign-dependent")  # every verdict starts with one
SETTINGS = ("within_sd", "min_items", "max_se", "min_seeds", "margin", "tau_margin")
DEFAULTS: dict[str, Any] = {key: schema_defaults("reproduce", key) for key in SETTINGS}
PAPER_SE_UNKNOWN = (
    "unknown: the paper prints no sd, and not how many comparisons its τ rests on (500 drawn, then those "
    "the three RMs agree on)"
)

COLUMNS: dict[str, Any] = {
    "table": pl.String,
    "section": pl.String,
    "block": pl.String,
    "row": pl.String,
    "column": pl.String,
    "paper_mean": pl.Float64,
    "paper_sd": pl.Float64,
    "paper_se": pl.Float64,
    "paper_se_basis": pl.String,
    "sign_uncertain": pl.Boolean,
    "run_mean": pl.Float64,
    "run_sd": pl.Float64,
    "run_low": pl.Float64,
    "run_high": pl.Float64,
    "run_n": pl.Int64,
    "run_se": pl.Float64,
    "difference": pl.Float64,
    "se": pl.Float64,
    "df": pl.Float64,
    "critical": pl.Float64,
    "t": pl.Float64,
    "t_flipped": pl.Float64,
    "p_value": pl.Float64,
    "q_value": pl.Float64,
    "differs_bh": pl.Boolean,
    "check": pl.String,
    "verdict": pl.String,
    "agrees": pl.Boolean,
    "margin": pl.Float64,
    "tost_p": pl.Float64,
    "equivalent": pl.Boolean,
    "reading": pl.String,
    "source": pl.String,
}


@dataclass(frozen=True)
class Mapping:
    """The paper's names -> this config's, and the verdict's settings (the ``reproduce`` section)."""

    reward_models: dict[str, str]
    datasets: dict[str, dict[str, str]]
    methods: dict[str, str]
    probe: str | None = None
    within_sd: float = DEFAULTS["within_sd"]
    min_items: int = DEFAULTS["min_items"]
    max_se: float = DEFAULTS["max_se"]
    min_seeds: int = DEFAULTS["min_seeds"]
    margin: float = DEFAULTS["margin"]
    tau_margin: float = DEFAULTS["tau_margin"]

    @classmethod
    def from_config(cls, section: dict[str, Any]) -> Mapping:
        """From the checked ``reproduce`` section."""
        return cls(
            reward_models=dict(section["reward_models"]),
            datasets={k: dict(v) for k, v in section["datasets"].items()},
            methods=dict(section["methods"]),
            probe=section.get("probe"),
            **{key: section.get(key, DEFAULTS[key]) for key in SETTINGS},
        )

    def dataset(self, block: str | None, stage: str) -> str | None:
        """This run's dataset standing for the paper's ``block`` in ``stage``."""
        return (self.datasets.get(block or "") or {}).get(stage)

    @property
    def alpha(self) -> float:
        """The two-sided level of the difference test: that of |z| ≤ ``within_sd`` for a normal."""
        return 2 * float(stats.norm.sf(self.within_sd))


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
    partial = row["partial_seeds"]
    left_out = f" ({partial} with only some RMs' values left out)" if partial else ""
    source = f"{dataset}/{method}/{subset}, {row['seeds']} seeds with a value{left_out}"
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
class Part:
    """One part of the difference's standard error: ``se`` and its degrees of freedom (inf: known or
    normal)."""

    se: float
    df: float = math.inf


def welch_df(parts: list[Part]) -> float:
    """The Welch–Satterthwaite degrees of freedom of a sum of variances (inf when every part has inf)."""
    denominator = sum(p.se**4 / p.df for p in parts if math.isfinite(p.df))
    return sum(p.se**2 for p in parts) ** 2 / denominator if denominator else math.inf


def paper_part(table: str, mean: float, sd: float | None) -> tuple[Part | None, str]:
    """The paper's side of the standard error, and what it rests on (None where it is unknown)."""
    if sd is not None:
        return Part(sd / PAPER_SEEDS**0.5, PAPER_SEEDS - 1), f"sd / √{PAPER_SEEDS} (five seeds)"
    if table == "7":
        se = (mean * (1 - mean) / PAPER_PROBE_ITEMS) ** 0.5
        return Part(se), f"binomial, n = {PAPER_PROBE_ITEMS} items"
    return None, PAPER_SE_UNKNOWN


def run_part(table: str, run: RunValue) -> Part | None:
    """This run's side: sd / √seeds (df seeds − 1), or an interval's half-width / 1.96."""
    if table in SEED_TABLES:
        return Part(run.sd / run.n**0.5, run.n - 1) if run.sd is not None and (run.n or 0) >= 2 else None
    if run.low is not None and run.high is not None:
        return Part((run.high - run.low) / (2 * Z_95))
    return None


def _inconclusive(table: str, run: RunValue, part: Part | None, m: Mapping) -> str | None:
    """Why a cell gets no verdict, or None."""
    per_seed = table in SEED_TABLES
    if per_seed and (run.n or 0) < m.min_seeds:
        return f"inconclusive: {run.n} seeds with a value < min_seeds {m.min_seeds}"
    if part is None:
        return f"inconclusive: no {'sd over seeds' if per_seed else 'interval'}"
    if not per_seed and run.n is None:
        return f"inconclusive: n unknown (min_items {m.min_items})"
    if not per_seed and run.n < m.min_items:
        return f"inconclusive: n {run.n} < min_items {m.min_items}"
    if part.se > m.max_se:
        return f"inconclusive: run se {part.se:.3f} > max_se {m.max_se:g}"
    return None


@dataclass(frozen=True)
class Verdict:
    """How one cell compares: the standard error of the difference, both readings' t, the verdict, and the
    equivalence reading."""

    paper_se: float | None = None
    paper_se_basis: str = ""
    run_se: float | None = None
    se: float | None = None
    df: float | None = None
    critical: float | None = None
    t: float | None = None
    t_flipped: float | None = None
    p_value: float | None = None
    check: str = ""
    verdict: str = ""
    agrees: bool | None = None
    margin: float | None = None
    tost_p: float | None = None
    equivalent: bool | None = None
    reading: str = ""


def tost_p(difference: float, se: float, df: float, margin: float) -> float:
    """The p-value of two one-sided t tests that ``difference`` lies within ± ``margin`` (the larger one)."""
    above_lower = float(stats.t.sf((difference + margin) / se, df))
    below_upper = float(stats.t.cdf((difference - margin) / se, df))
    return max(above_lower, below_upper)


def _reading(agrees: bool, equivalent: bool) -> str:
    if equivalent:
        return "close to the paper" + ("" if agrees else ", though the difference is significant")
    return "too noisy to tell" if agrees else "differs"


def _verdict(cell: dict, run: RunValue, m: Mapping) -> Verdict:
    """The Welch t test of run − paper and the TOST reading; both sign readings where the sign may be lost."""
    table, paper, uncertain = cell["table"], cell["mean"], bool(cell["sign_uncertain"])
    paper_side, basis = paper_part(table, paper, _finite(cell["sd"]))
    run_side = run_part(table, run)
    margin = m.tau_margin if table in TAU_TABLES else m.margin
    verdict = Verdict(
        paper_se=None if paper_side is None else paper_side.se,
        paper_se_basis=basis,
        run_se=None if run_side is None else run_side.se,
        margin=margin,
    )
    why_not = _inconclusive(table, run, run_side, m)
    if run_side is None:
        return replace(verdict, verdict=why_not, reading="inconclusive")
    parts = [p for p in (paper_side, run_side, Part(ROUNDING)) if p is not None]
    se = sum(p.se**2 for p in parts) ** 0.5
    df = welch_df(parts)
    critical = float(stats.t.isf(m.alpha / 2, df))
    readings = [run.mean - paper, run.mean + paper] if uncertain else [run.mean - paper]
    t = [d / se for d in readings]
    p = [tost_p(d, se, df, margin) for d in readings]
    verdict = replace(
        verdict,
        se=se,
        df=df,
        critical=critical,
        t=t[0],
        t_flipped=t[1] if uncertain else None,
        p_value=max(2 * float(stats.t.sf(abs(x), df)) for x in t),
        tost_p=max(p),
        check=f"Welch t: |t| <= {critical:.2f} (df {df:.1f}, {1 - m.alpha:.1%}); TOST within ±{margin:g}",
    )
    if why_not is not None:
        return replace(verdict, p_value=None, verdict=why_not, reading="inconclusive")
    agrees = {abs(x) <= critical for x in t}
    if len(agrees) > 1:
        which = "as printed" if abs(t[0]) <= critical else "with the sign flipped"
        return replace(verdict, verdict=f"sign-dependent: agrees only {which}", reading="sign-dependent")
    agreed = agrees.pop()
    equivalent = {x < m.alpha for x in p}
    if len(equivalent) > 1:
        reading = f"{'agrees' if agreed else 'differs'}; within ±{margin:g} in one sign reading only"
        return replace(verdict, verdict="agrees" if agreed else "differs", agrees=agreed, reading=reading)
    shown = equivalent.pop()
    return replace(
        verdict,
        verdict="agrees" if agreed else "differs",
        agrees=agreed,
        equivalent=shown,
        reading=_reading(agreed, shown),
    )


def reproduction_table(
    reference: pl.DataFrame,
    mapping: Mapping,
    metrics: pl.DataFrame | None = None,
    tau_rms: pl.DataFrame | None = None,
    tau_sides: pl.DataFrame | None = None,
    probes: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """One row per published cell (``reference`` order): the paper's value, this run's, and how they
    compare. Missing inputs (e.g. no analysis datasets) leave their cells' run values null."""
    paper_rms = [mapping.reward_models[n] for n in PAPER_RMS if n in mapping.reward_models]
    summary = None
    if metrics is not None:
        summary = mean_over_rms(
            metrics.filter(pl.col("rm").is_in(paper_rms)), ["dataset", "method", "subset"]
        )
    rows = []
    for cell in reference.iter_rows(named=True):
        table = cell["table"]
        if table in SEED_TABLES and summary is not None:
            run = _evaluation_value(cell, summary, mapping)
        elif table == "3" and tau_rms is not None:
            run = _tau_pair_value(cell, tau_rms, mapping)
        elif table == "6" and tau_sides is not None:
            run = _tau_sides_value(cell, tau_sides, mapping)
        elif table == "7" and probes is not None and mapping.probe:
            run = _probe_value(cell, probes, mapping)
        else:
            run = RunValue(None)
        verdict = Verdict() if run.mean is None else _verdict(cell, run, mapping)
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
                **asdict(verdict),
                "source": run.source,
            }
        )
    schema = {k: v for k, v in COLUMNS.items() if k not in BH}
    return with_q_values(pl.DataFrame(rows, schema=schema), mapping.alpha).select(list(COLUMNS))


BH = ("q_value", "differs_bh")


def with_q_values(table: pl.DataFrame, alpha: float) -> pl.DataFrame:
    """``q_value``: the p-value of each tested cell (one that agrees or differs) adjusted for every tested
    cell of the table (Benjamini–Hochberg, ``scipy.stats.false_discovery_control``); ``differs_bh``: q below
    the test's level (null where untested).

    A perfect reproduction would still "differ" on about ``alpha`` of the tested cells by chance; the
    q-values keep the expected share of such false differences among the cells called different at ``alpha``.
    """
    tested = table["verdict"].is_in(["agrees", "differs"]).to_numpy()
    q = np.full(table.height, np.nan)
    if tested.any():
        q[tested] = stats.false_discovery_control(table["p_value"].to_numpy()[tested], method="bh")
    q_value = pl.Series("q_value", q).fill_nan(None)
    return table.with_columns(q_value, differs_bh=q_value < alpha)


def agreement_summary(table: pl.DataFrame, alpha: float | None = None) -> pl.DataFrame:
    """Per table: published cells, cells with a run value, and how many of those agree, differ, are
    inconclusive or depend on a lost sign (each such cell in exactly one of the four); beside the differing
    ones, how many a perfect reproduction would show by chance (``alpha`` × the cells tested: agree + differ)
    and how many still differ after Benjamini–Hochberg over every tested cell (``differs_bh``); then how many
    are shown close to the paper (``equivalent``) or too noisy to tell, and on how many the paper's standard
    error is unknown. ``alpha``: the test's level (default: that of the default ``within_sd``)."""
    alpha = Mapping({}, {}, {}).alpha if alpha is None else alpha
    outcome = pl.col("verdict").str.extract(r"^([a-z-]+)")
    return (
        table.group_by("table", maintain_order=True)
        .agg(
            cells=pl.len(),
            with_run_value=pl.col("run_mean").is_not_null().sum(),
            agree=(outcome == "agrees").sum(),
            differ=(outcome == "differs").sum(),
            differ_by_chance=outcome.is_in(["agrees", "differs"]).sum() * alpha,
            differ_bh=pl.col("differs_bh").fill_null(False).sum(),
            inconclusive=(outcome == "inconclusive").sum(),
            sign_dependent=(outcome == "sign-dependent").sum(),
            equivalent=pl.col("equivalent").fill_null(False).sum(),
            too_noisy_to_tell=(pl.col("reading") == "too noisy to tell").sum(),
            paper_se_unknown=(pl.col("run_mean").is_not_null() & pl.col("paper_se").is_null()).sum(),
            mean_abs_difference=pl.col("difference").abs().mean(),
        )
        .sort("table")
    )
