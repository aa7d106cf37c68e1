"""File-level entry points of the analysis rules: read the inputs, call the analysis, write the outputs.

Each function is what one ``workflow/scripts/analyse_*.py`` / ``figure_*.py`` script calls with
``snakemake.input`` / ``params`` / ``output`` translated into plain arguments.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from rmexplain.analysis import judge as J
from rmexplain.analysis.bootstrap import BootstrapSettings
from rmexplain.analysis.catalog import ANALYSIS_TABLES
from rmexplain.analysis.examples import example_pair, example_rm
from rmexplain.analysis.plots import (
    FigureOptions,
    correctness_figure,
    judge_figure,
    local_tau_figure,
    message_figure,
    pfr_figure,
    probe_figure,
    rank_similarity_figure,
    reproduction_figure,
    rewards_example_figure,
)
from rmexplain.analysis.probes import probe_rows, probes_from_config, win_rates
from rmexplain.analysis.reference import load_reference
from rmexplain.analysis.representative import local_tau, select_examples
from rmexplain.analysis.sensitivity import AnalysisError, check_keys, global_sensitivity, with_keys
from rmexplain.analysis.subsets import Foreign, mark_subset_rms, subset_note
from rmexplain.analysis.tables import to_html, to_markdown, write_table
from rmexplain.explanations.categorise import OWN, categorise
from rmexplain.explanations.metrics import SIDES
from rmexplain.llm.client import write_llm_use
from rmexplain.schemas import (
    COMPARISONS,
    EXAMPLES,
    EXPLANATIONS,
    JUDGEMENTS,
    LOCAL_TAU,
    METRICS,
    ORIGINAL_SCORES,
    PERTURBATIONS,
    PFR,
    PROBE_WIN_RATE,
    REWARDS,
    TAU_RMS,
    TAU_SIDES,
    read_table,
)
from rmexplain.schemas import write_table as write_parquet

Settings = dict[str, Any]


def read_explanations(paths: Sequence[str]) -> pl.DataFrame:
    """All RMs' explanation tables of one (dataset, method), checked against the contract."""
    frames = [read_table(p, EXPLANATIONS, "explanations") for p in paths]
    return pl.concat(frames) if frames else pl.DataFrame(schema={k: c.dtype for k, c in EXPLANATIONS.items()})


def read_perturbations(paths: Sequence[str]) -> pl.DataFrame:
    """The perturbation tables (one per orienter), checked against the contract."""
    return pl.concat([read_table(p, PERTURBATIONS, "perturbations") for p in paths])


def run_global_sensitivity(
    explanations: Sequence[str],
    dataset: str,
    method: str,
    settings: Settings,
    attributes: Sequence[str],
    rms: Sequence[str],
    outputs: dict[str, str],
    log: logging.Logger,
) -> None:
    """PFR, τ between RMs and τ between sides -> ``outputs["pfr"|"tau_rms"|"tau_sides"]``.

    ``attributes`` and ``rms`` (config order) order the rows and the RM pairs.
    """
    result = global_sensitivity(
        read_explanations(explanations),
        dataset,
        method,
        BootstrapSettings.from_config(settings.get("bootstrap")),
        variants=settings.get("variants", "mean"),
        attribute_order=list(attributes),
        rm_order=list(rms),
        log=log,
    )
    write_parquet(result.pfr, outputs["pfr"], PFR, "pfr")
    write_parquet(result.tau_rms, outputs["tau_rms"], TAU_RMS, "tau_rms")
    write_parquet(result.tau_sides, outputs["tau_sides"], TAU_SIDES, "tau_sides")


def run_representative(
    explanations: Sequence[str],
    pfr: str,
    dataset: str,
    method: str,
    settings: Settings,
    rms: Sequence[str],
    pairs: Sequence[Sequence[str]],
    outputs: dict[str, str],
    log: logging.Logger,
) -> None:
    """Local τ of every comparison and the selected examples -> ``outputs["local_tau"|"examples"]``."""
    frame = read_explanations(explanations)
    check_keys(frame, dataset, method)
    local = local_tau(frame, read_table(pfr, PFR, "pfr"), settings.get("variants", "mean"))
    examples = select_examples(local, list(rms), [(a, b) for a, b in pairs])
    for row in examples.iter_rows(named=True):
        log.info(
            "example %s %s/%s side %s: %s (Στ=%s, %d eligible)",
            row["kind"],
            row["rm_a"],
            row["rm_b"],
            row["side"],
            row["comparison_id"],
            row["score"],
            row["n_eligible"],
        )
    write_parquet(with_keys(local, dataset, method), outputs["local_tau"], LOCAL_TAU, "local_tau")
    write_parquet(with_keys(examples, dataset, method), outputs["examples"], EXAMPLES, "examples")


PROBE_ITEMS_AGAINST_AGREED = (
    "kept as probe items (a win rate compares a perturbation with its own original: no orientation, and so "
    "no foreign_rm_orientation, enters it)"
)


def run_probes(
    inputs: Mapping[str, Any],
    rms: Sequence[str],
    orienters: Mapping[str, Sequence[str]],
    dataset: str,
    method: str,
    probes: Settings,
    level: float,
    output: str,
    log: logging.Logger,
) -> None:
    """Probe win rates of every RM -> ``output``.

    A win rate compares a perturbation with its own original (paper Table 7), whatever the RM's preference
    between the two originals: every RM is scored on every perturbation of the set it is explained with, on
    each comparison it does not tie, so an RM outside ``shared_rms`` has the items the others have even where
    its explanations skip a comparison it orients against the agreed y+. ``inputs``: ``comparisons``,
    ``perturbations`` (the dataset's sets), ``originals`` and ``rewards`` (one per RM, in ``rms`` order);
    ``orienters`` maps an RM to the orienter of its set and that set's orienting RMs."""
    comparisons = read_table(inputs["comparisons"], COMPARISONS, "comparisons")
    perturbations = read_perturbations(inputs["perturbations"])
    originals = {
        rm: read_table(p, ORIGINAL_SCORES, f"original_scores[{rm}]")
        for rm, p in zip(rms, inputs["originals"], strict=True)
    }
    scored = []
    for rm, path in zip(rms, inputs["rewards"], strict=True):
        orienter, *orienting = orienters[rm]
        scored.append(
            categorise(
                comparisons,
                originals[rm],
                perturbations.filter(pl.col("orienter") == orienter),
                read_table(path, REWARDS, f"rewards[{rm}]"),
                dataset,
                rm,
                method,
                log,
                orienting=[originals[o] for o in orienting],
                orientation=OWN,
                against_agreed=PROBE_ITEMS_AGAINST_AGREED,
            )
        )
    rows = probe_rows(pl.concat(scored), perturbations, comparisons)
    table = win_rates(rows, probes_from_config(probes), level, log)
    write_parquet(with_keys(table, dataset, method), output, PROBE_WIN_RATE, "probe_win_rate")


def run_judge(
    perturbations: str,
    comparisons: str,
    keys: tuple[str, str, str],
    settings: Settings,
    llm: Settings,
    attributes: dict[str, str],
    output: str,
    log: logging.Logger,
    llm_use: str | None = None,
) -> None:
    """Judge one perturbation set with the configured LLM backend -> ``output`` (and the job's LLM use ->
    ``llm_use``)."""
    from rmexplain.analysis.llm_judge import build_complete

    complete, chat = build_complete(llm, settings, log)
    frame = J.run_judge(
        read_table(perturbations, PERTURBATIONS, "perturbations"),
        read_table(comparisons, COMPARISONS, "comparisons"),
        attributes,
        complete,
        keys,
        chat.model_id,
        settings.get("max_per_attribute"),
        log,
    )
    write_parquet(frame, output, JUDGEMENTS, "judgements")
    if llm_use is not None:
        write_llm_use(llm_use, chat, "attribute judge")


def run_table(
    table: str,
    inputs: Sequence[str],
    outputs: Sequence[str],
    level: float = 0.95,
    foreign: Foreign | None = None,
) -> None:
    """Concatenate the per-(dataset, method) tables into one summary table (CSV, Markdown, HTML); a table
    built from the explanations marks the RMs ``foreign`` names as measured on a subset."""
    if table not in ANALYSIS_TABLES:
        raise AnalysisError(f"unknown analysis table {table!r}; known: {list(ANALYSIS_TABLES)}")
    record = ANALYSIS_TABLES[table]
    frames = [read_table(p, record.contract, table) for p in inputs]
    schema = {k: c.dtype for k, c in record.contract.items()}
    frame = pl.concat(frames) if frames else pl.DataFrame(schema=schema)
    if record.summarise is not None:
        frame = record.summarise(frame, level)
    csv, md, html = _by_suffix(outputs, (".csv", ".md", ".html"))
    marks = foreign if record.from_explanations else None
    write_table(frame, record.title, record.present, csv, md, html, level, marks)


def _by_suffix(paths: Sequence[str], suffixes: Sequence[str]) -> list[str]:
    found = {Path(p).suffix: p for p in paths}
    missing = [s for s in suffixes if s not in found]
    if missing:
        raise AnalysisError(f"outputs {list(paths)} lack files ending in {missing}")
    return [found[s] for s in suffixes]


def run_pfr_figure(
    pfr: str,
    dataset: str,
    method: str,
    options: Settings,
    output: str,
    level: float = 0.95,
    foreign: Foreign | None = None,
) -> None:
    """Fig. 3 of one (dataset, method), marking the RMs ``foreign`` names as measured on a subset."""
    frame = mark_subset_rms(read_table(pfr, PFR, "pfr"), foreign)
    figure = FigureOptions.from_config(options)
    pfr_figure(
        frame, f"{dataset} · {method}", output, figure, f"{level:.0%}", subset_note(foreign, [dataset])
    )


def run_local_tau_figure(local: str, dataset: str, method: str, options: Settings, output: str) -> None:
    """Distribution of local τ of one (dataset, method)."""
    frame = read_table(local, LOCAL_TAU, "local_tau")
    local_tau_figure(frame, f"{dataset} · {method}", output, FigureOptions.from_config(options))


def run_rank_similarity_figure(
    tau_rms: Sequence[str],
    tau_sides: Sequence[str],
    options: Settings,
    output: str,
    level: float = 0.95,
    foreign: Foreign | None = None,
) -> None:
    """Tables 3 and 6 as one figure, marking the RMs ``foreign`` names as measured on a subset."""
    rms = [read_table(p, TAU_RMS, "tau_rms") for p in tau_rms]
    sides = [read_table(p, TAU_SIDES, "tau_sides") for p in tau_sides]
    empty_rms = pl.DataFrame(schema={k: c.dtype for k, c in TAU_RMS.items()})
    empty_sides = pl.DataFrame(schema={k: c.dtype for k, c in TAU_SIDES.items()})
    rank_similarity_figure(
        mark_subset_rms(pl.concat(rms) if rms else empty_rms, foreign),
        mark_subset_rms(pl.concat(sides) if sides else empty_sides, foreign),
        output,
        FigureOptions.from_config(options),
        f"{level:.0%}",
        subset_note(foreign),
    )


def run_probe_figure(probes: Sequence[str], options: Settings, output: str) -> None:
    """Probe win rates of every dataset and method."""
    frames = [read_table(p, PROBE_WIN_RATE, "probe_win_rate") for p in probes]
    frame = (
        pl.concat(frames) if frames else pl.DataFrame(schema={k: c.dtype for k, c in PROBE_WIN_RATE.items()})
    )
    probe_figure(frame, output, FigureOptions.from_config(options))


def run_judge_figure(judgement_files: Sequence[str], level: float, options: Settings, output: str) -> None:
    """Judge agreement per attribute."""
    frames = [read_table(p, JUDGEMENTS, "judgements") for p in judgement_files]
    frame = pl.concat(frames) if frames else pl.DataFrame(schema={k: c.dtype for k, c in JUDGEMENTS.items()})
    judge_figure(J.agreement_table(frame, level), output, FigureOptions.from_config(options))


def correctness_summary(metric_files: Sequence[str]) -> pl.DataFrame:
    """Mean and sd over seeds of every metric per (dataset, method, rm, subset)."""
    metrics = pl.concat([read_table(p, METRICS, "metrics") for p in metric_files])
    return metrics.group_by("dataset", "method", "rm", "subset", "metric", maintain_order=True).agg(
        mean=pl.col("value").fill_nan(None).mean(), sd=pl.col("value").fill_nan(None).std()
    )


def run_correctness_figure(metric_files: Sequence[str], options: Settings, output: str) -> None:
    """Table 5 (correct vs wrong preferences) as bars."""
    from rmexplain.explanations.stages import COVERAGE_COLUMNS, DISTANCE_COLUMNS

    labels = {**COVERAGE_COLUMNS, **DISTANCE_COLUMNS}
    labels = {
        k: v.replace(" cov.", " coverage").replace("dist.", "distance").replace("div.", "diversity")
        for k, v in labels.items()
    }
    correctness_figure(correctness_summary(metric_files), labels, output, FigureOptions.from_config(options))


def run_examples(
    examples: str,
    explanations: Sequence[str],
    perturbations: Sequence[str],
    comparisons: str,
    rms: Sequence[str],
    pairs: Sequence[Sequence[str]],
    options: Settings,
    figures: Sequence[str],
    pages: Sequence[str],
    sides: Sequence[str] = SIDES,
) -> None:
    """Figures and pages of example slots of one (dataset, method).

    ``figures`` and ``pages`` list the one-RM examples first (``rms`` order), then each pair's ``sides``.
    """
    slots = [("rm", rm, None) for rm in rms] + [("pair", tuple(p), side) for p in pairs for side in sides]
    if len(figures) != len(slots) or len(pages) != len(slots):
        raise AnalysisError(f"{len(slots)} example slots but {len(figures)} figures and {len(pages)} pages")
    table = read_table(examples, EXAMPLES, "examples")
    frame = read_explanations(explanations)
    texts = read_perturbations(perturbations)
    originals = read_table(comparisons, COMPARISONS, "comparisons")
    fig_options = FigureOptions.from_config(options)
    for (kind, who, side), figure, page in zip(slots, figures, pages, strict=True):
        if kind == "rm":
            mine = frame.filter(pl.col("rm") == who)
            example_rm(table, mine, texts, originals, who, fig_options, figure, page)
        else:
            example_pair(table, frame, texts, originals, who, side, fig_options, figure, page)


def run_rewards_example(
    explanations: Sequence[str],
    examples: str,
    comparison_id: str | None,
    rm: str,
    rms: Sequence[str],
    options: Settings,
    output: str,
) -> None:
    """Paper Fig. 6: every RM's rewards on the perturbations of one comparison: ``comparison_id``, or else
    ``rm``'s representative example (§4.2.1: the largest sum of local τ over Y+ and Y−)."""
    figure_options = FigureOptions.from_config(options)
    if comparison_id is None:
        table = read_table(examples, EXAMPLES, "examples")
        chosen = table.filter((pl.col("kind") == "rm") & (pl.col("rm_a") == rm))["comparison_id"]
        if chosen.len() == 0 or chosen[0] is None:
            why = (
                f"{rm} has no representative example (no comparison has a defined local τ on both sides); "
                "set analysis.rewards_example.comparison_id to choose one."
            )
            message_figure(output, figure_options, why)
            return
        comparison_id = chosen[0]
    rows = read_explanations(explanations).filter(pl.col("comparison_id") == comparison_id)
    if rows.height == 0:
        raise AnalysisError(
            f"analysis.rewards_example.comparison_id: {comparison_id!r} is in none of the explanations"
        )
    title = f"Every RM on the perturbations of comparison {comparison_id}"
    absent = [r for r in rms if r not in set(rows["rm"])]
    if absent:  # a tie, or (an RM outside shared_rms) a y+ against the agreed one: no explanation to draw
        title += f"\n(not explained here: {', '.join(absent)}; see foreign_rm_orientation and the logs)"
    rewards_example_figure(rows, list(rms), title, output, figure_options)


REPRODUCTION_TITLE = "Reproduction: every published cell beside this run"


def run_reproduction(
    reproduce: Settings,
    inputs: dict[str, Sequence[str]],
    options: Settings,
    outputs: dict[str, str],
    log: logging.Logger,
) -> None:
    """``results/tables/reproduction.{csv,md,html}`` and its figure; ``inputs`` holds the ``metrics``,
    ``tau_rms``, ``tau_sides`` and ``probes`` files of this run (each may be empty)."""
    from rmexplain.analysis.reproduction import Mapping, agreement_summary, reproduction_table

    contracts = {"metrics": METRICS, "tau_rms": TAU_RMS, "tau_sides": TAU_SIDES, "probes": PROBE_WIN_RATE}
    frames = {
        name: pl.concat([read_table(p, contracts[name], name) for p in files]) if files else None
        for name, files in inputs.items()
    }
    mapping = Mapping.from_config(reproduce)
    table = reproduction_table(load_reference(reproduce["paper"]), mapping, **frames)
    summary = agreement_summary(table, mapping.alpha)
    for row in summary.iter_rows(named=True):
        log.info(
            "Table %s: %d cells, %d with a value from this run: %d agree, %d differ (%.1f expected by "
            "chance of a perfect reproduction; %d after Benjamini-Hochberg), %d inconclusive, %d "
            "sign-dependent (not counted as agreeing); %d shown close to the paper, %d too noisy to tell; "
            "the paper's se unknown on %d",
            row["table"], row["cells"], row["with_run_value"], row["agree"], row["differ"],
            row["differ_by_chance"], row["differ_bh"], row["inconclusive"], row["sign_dependent"],
            row["equivalent"], row["too_noisy_to_tell"], row["paper_se_unknown"],
        )  # fmt: skip
    Path(outputs["csv"]).parent.mkdir(parents=True, exist_ok=True)
    table.write_csv(outputs["csv"], float_precision=4)
    shown = table.with_columns(pl.col(pl.Float64).round(3)).with_columns(
        pl.all().cast(pl.String).fill_null("–")
    )
    Path(outputs["md"]).write_text(to_markdown(shown))
    total = {name: int(summary[name].sum()) for name in summary.columns if summary[name].dtype.is_integer()}
    chance = float(summary["differ_by_chance"].sum())
    note = (
        f"{table.height} published cells, {total['with_run_value']} with a value from this run: "
        f"{total['agree']} agree, {total['differ']} differ (a perfect reproduction would differ on about "
        f"{chance:.1f} of the {total['agree'] + total['differ']} tested by chance, at the test's level of "
        f"{mapping.alpha:.1%}; {total['differ_bh']} differ after Benjamini-Hochberg), "
        f"{total['inconclusive']} inconclusive, "
        f"{total['sign_dependent']} sign-dependent; {total['equivalent']} shown close to the paper (within "
        f"the margin), {total['too_noisy_to_tell']} agree but are too noisy to tell. "
        "See docs/reproduction.md."
    )
    Path(outputs["html"]).write_text(to_html(shown, REPRODUCTION_TITLE, note))
    reproduction_figure(table, outputs["figure"], FigureOptions.from_config(options))
