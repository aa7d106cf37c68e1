"""The explanation stage's entry points, one per rule: categorise, distances, metrics, tables, figure.

Each ``workflow/scripts`` script of the stage calls one of these with ``snakemake.input`` / ``params`` /
``output`` translated into plain arguments.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from rmexplain.embeddings import TextEmbeddings, configured_encoder, embedding_table, read_text_embeddings
from rmexplain.explanations.categorise import (
    AGREED,
    OWN,
    categorise,
    explained_comparisons,
    foreign_orientation_counts,
    unscored_sides,
)
from rmexplain.explanations.metrics import (
    evaluate,
    semantic_distances,
    syntactic_distance,
)
from rmexplain.markup import to_html, write_table_pages
from rmexplain.schemas import (
    COMPARISONS,
    DISTANCES,
    EXPLANATIONS,
    METRICS,
    ORIGINAL_SCORES,
    PERTURBATIONS,
    REWARDS,
    TEXT_EMBEDDINGS,
    conform,
    polars_schema,
    read_table,
    write_table,
)
from rmexplain.settings import schema_defaults

COVERAGE_COLUMNS = {
    "cf_coverage_plus": "chosen CF cov.",
    "sf_coverage_plus": "chosen SF cov.",
    "cf_coverage_minus": "rejected CF cov.",
    "sf_coverage_minus": "rejected SF cov.",
    "cf_coverage_both": "both CF cov.",
    "sf_coverage_both": "both SF cov.",
}
DISTANCE_COLUMNS = {
    "syntactic_distance": "syn. dist.",
    "semantic_distance": "sem. dist.",
    "semantic_diversity": "sem. div.",
}
CORRECTNESS_COVERAGE = {"cf_coverage_both": "both CF cov.", "sf_coverage_both": "both SF cov."}
TABLE_TITLES = {
    "coverage": "CF and SF coverage (paper Table 1)",
    "distances": "Distances and diversity (paper Table 2)",
    "coverage_by_correctness": "Coverage by correct vs wrong RM preference (paper Table 5)",
    "distances_by_correctness": "Distances by correct vs wrong RM preference (paper Table 5)",
}
TABLE_NOTE = "Mean ± sd over seeds; chosen/rejected are the RM's y+ and y−."
FOREIGN_TITLE = "Comparisons an RM outside shared_rms orients against the agreed preference"
FOREIGN_TREATMENT = {AGREED: "skipped", OWN: "explained by the RM's own y+"}
FOREIGN_NOTE = (
    "Shared orientation: the perturbations are built against the y+ the shared_rms agree on. For each RM "
    "explained with them but not among shared_rms: the comparisons of the shared set, those it ties "
    "(skipped), those it orients against the agreed y+ (against_agreed: skipped under "
    "foreign_rm_orientation: agreed, the default and this project's reading of the paper's App. G, which "
    "does not say; explained by its own y+ under own), and the comparisons its flip rates, τ and examples "
    "are computed on (explained). Its probe win rates are not: their items are every perturbation of the "
    "shared set on a comparison it does not tie."
)


def run_categorise(
    inputs: Mapping[str, Any],
    orientation: str,
    dataset: str,
    rm: str,
    method: str,
    output: str,
    log: logging.Logger,
) -> None:
    """EXPLANATIONS of one (dataset, method, RM) from comparisons, originals, perturbations and rewards, on
    the comparisons its perturbation set's orienting RMs (``inputs["orienting"]``) agree on (``orientation``:
    ``agreed`` or ``own``, see ``explained_comparisons``)."""
    frame = categorise(
        read_table(inputs["comparisons"], COMPARISONS, "comparisons"),
        read_table(inputs["originals"], ORIGINAL_SCORES, "original_scores"),
        read_table(inputs["perturbations"], PERTURBATIONS, "perturbations"),
        read_table(inputs["rewards"], REWARDS, "rewards"),
        dataset,
        rm,
        method,
        log,
        orienting=[read_table(p, ORIGINAL_SCORES, "original_scores") for p in inputs["orienting"]],
        orientation=orientation,
    )
    write_table(frame, output, EXPLANATIONS, "explanations")


def run_embed_texts(
    comparisons: str, perturbations: Sequence[str], settings: dict[str, Any], output: str, log: logging.Logger
) -> None:
    """TEXT_EMBEDDINGS of one dataset: its originals and every perturbation of every method, each once."""
    frame = embed_dataset_texts(
        read_table(comparisons, COMPARISONS, "comparisons"),
        [read_table(p, PERTURBATIONS, "perturbations") for p in perturbations],
        settings,
        log,
    )
    write_table(frame, output, TEXT_EMBEDDINGS, "text_embeddings")


def run_distances(
    inputs: Mapping[str, str], settings: dict[str, Any], output: str, log: logging.Logger
) -> None:
    """DISTANCES of one perturbation table, from its dataset's text embeddings."""
    frame = compute_distances(
        read_table(inputs["comparisons"], COMPARISONS, "comparisons"),
        read_table(inputs["perturbations"], PERTURBATIONS, "perturbations"),
        read_text_embeddings(inputs["embeddings"]),
        settings,
        log,
    )
    write_table(frame, output, DISTANCES, "distances")


def run_evaluate(
    inputs: Mapping[str, Any],
    orientation: str,
    settings: dict[str, Any],
    dataset: str,
    rm: str,
    method: str,
    output: str,
    log: logging.Logger,
) -> None:
    """METRICS of one (dataset, method, RM); the perturbations' embeddings (for diversity) are looked up
    in the dataset's text embedding table by their texts, under ``settings["long_texts"]``."""
    distances = read_table(inputs["distances"], DISTANCES, "distances")
    perturbations = read_table(inputs["perturbations"], PERTURBATIONS, "perturbations")
    long_texts = {**schema_defaults("evaluate"), **settings}["long_texts"]
    frame = evaluate_explanations(
        read_table(inputs["explanations"], EXPLANATIONS, "explanations"),
        with_embeddings(distances, perturbations, inputs["embeddings"], long_texts),
        read_table(inputs["originals"], ORIGINAL_SCORES, "original_scores"),
        [read_table(p, ORIGINAL_SCORES, "original_scores") for p in inputs["orienting"]],
        read_table(inputs["comparisons"], COMPARISONS, "comparisons"),
        dataset,
        rm,
        method,
        orientation,
        perturbations,
        read_table(inputs["rewards"], REWARDS, "rewards"),
        log,
    )
    log.info("%d metric rows", frame.height)
    write_table(frame, output, METRICS, "metrics")


def embed_dataset_texts(
    comparisons: pl.DataFrame,
    perturbations: Sequence[pl.DataFrame],
    settings: dict[str, Any],
    log: logging.Logger,
) -> pl.DataFrame:
    """TEXT_EMBEDDINGS rows for the originals that were perturbed and every perturbed text (for a dataset
    that is not perturbed, bias discovery alone: every original), then, in a pass of their own so that those
    are encoded alike with or without them, the prompts (the demo RMs' scoring jobs after this one look
    every text up)."""
    if not perturbations:
        texts = comparisons["chosen"].to_list() + comparisons["rejected"].to_list()
    else:
        perturbed = with_originals(
            comparisons, pl.concat([p.select("comparison_id", "target", "text") for p in perturbations])
        )
        texts = perturbed["text"].to_list() + perturbed["original"].to_list()
    prompts = sorted(set(comparisons["prompt"].to_list()) - set(texts))
    frame = pl.concat([encode_table(texts, settings), encode_table(prompts, settings)]).sort("text")
    log.info("embedded %d distinct texts of %d perturbation tables and %d prompts",
             frame.height - len(prompts), len(perturbations), len(prompts))  # fmt: skip
    return frame


def encode_table(texts: Sequence[str], settings: dict[str, Any]) -> pl.DataFrame:
    """TEXT_EMBEDDINGS rows of ``texts`` (each once, sorted) with the evaluation's encoder (``evaluate``)."""
    if not texts:
        return pl.DataFrame(schema=polars_schema(TEXT_EMBEDDINGS))
    model, batch_size = configured_encoder(settings)
    return embedding_table(texts, model, batch_size)


def with_originals(comparisons: pl.DataFrame, perturbations: pl.DataFrame) -> pl.DataFrame:
    """Perturbations of existing comparisons, in row order, with their original response as ``original``."""
    return (
        perturbations.join(
            comparisons.select("comparison_id", "chosen", "rejected"), on="comparison_id", how="left"
        )
        .filter(pl.col("chosen").is_not_null())
        .with_columns(original=pl.when(pl.col("target") == "chosen").then("chosen").otherwise("rejected"))
    )


def compute_distances(
    comparisons: pl.DataFrame,
    perturbations: pl.DataFrame,
    embeddings: TextEmbeddings,
    settings: dict[str, Any],
    log: logging.Logger,
) -> pl.DataFrame:
    """DISTANCES rows: syntactic and semantic distance to its original. The embeddings stay in the text
    embedding table, where the evaluation looks them up for diversity."""
    joined = with_originals(comparisons, perturbations)
    originals, texts = joined["original"].to_list(), joined["text"].to_list()
    settings = {**schema_defaults("evaluate"), **settings}
    long_texts, punctuation = settings["long_texts"], bool(settings["punctuation_as_words"])
    e_original = embeddings.lookup(originals, long_texts)
    e_perturbed = embeddings.lookup(texts, long_texts)
    log.info("looked up %d perturbations and %d distinct originals", len(texts), len(set(originals)))
    frame = pl.DataFrame(
        {
            "perturbation_id": joined["perturbation_id"],
            "syntactic_distance": [
                syntactic_distance(o, t, punctuation) for o, t in zip(originals, texts, strict=True)
            ],
            "semantic_distance": semantic_distances(e_original, e_perturbed).astype(np.float64),
        }
    )
    return conform(frame, DISTANCES, "distances")


def with_embeddings(
    distances: pl.DataFrame, perturbations: pl.DataFrame, embeddings: str, long_texts: str
) -> pl.DataFrame:
    """DISTANCES rows with the ``embedding`` of each perturbed text, looked up (as the distances were) in
    the text embedding table at ``embeddings``, which is read for those texts only."""
    text_of = dict(zip(perturbations["perturbation_id"], perturbations["text"], strict=True))
    texts = [text_of[p] for p in distances["perturbation_id"]]
    vectors = read_text_embeddings(embeddings, texts).lookup(texts, long_texts)
    return distances.with_columns(embedding=pl.Series([row for row in vectors], dtype=pl.List(pl.Float32)))


def evaluate_explanations(
    explanations: pl.DataFrame,
    distances: pl.DataFrame,
    originals: pl.DataFrame,
    orienting: list[pl.DataFrame],
    comparisons: pl.DataFrame,
    dataset: str,
    rm: str,
    method: str,
    orientation: str,
    perturbations: pl.DataFrame,
    rewards: pl.DataFrame,
    log: logging.Logger,
) -> pl.DataFrame:
    """METRICS for one (dataset, method, RM), over the comparisons it explains (``explained_comparisons``);
    a side whose every perturbation the RM left unscored (``unscored_sides``) is out of its coverage, counted
    in the log and in the coverage rows' ``n``."""
    denominator = explained_comparisons(originals, orienting, orientation)
    unscored = unscored_sides(comparisons, denominator, perturbations, rewards)
    for side, n in unscored.group_by("side").len().sort("side").rows():
        log.warning(
            "%d comparisons with every perturbation of their %s side over the RM's token limit (overlong: "
            "skip): left out of that side's and both sides' coverage, as out of the flip rates",
            n,
            "y+" if side == "plus" else "y−",
        )
    return evaluate(explanations, distances, denominator, comparisons, dataset, rm, method, unscored.rows())


def _summarise(metrics: pl.DataFrame, keys: list[str], names: dict[str, str]) -> pl.DataFrame:
    """Mean and sd over seeds of each metric, one row per ``keys`` group, plus a mean-over-RMs row."""
    selected = metrics.filter(pl.col("metric").is_in(list(names)))
    per_rm = selected.group_by([*keys, "metric"]).agg(
        mean=pl.col("value").fill_nan(None).mean(),
        sd=pl.col("value").fill_nan(None).std(),
        seeds=pl.col("value").fill_nan(None).count(),
    )
    over_rms = mean_over_rms(selected, [k for k in keys if k != "rm"]).with_columns(
        rm=pl.lit("mean over RMs")
    )
    table = pl.concat([per_rm, over_rms.select(per_rm.columns)])
    return table.sort(keys)


def mean_over_rms(metrics: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Per ``keys`` group and metric: each seed's mean over the RMs of ``metrics``, then the mean and sd of
    those over seeds (``mean, sd``; ``seeds``: the seeds they are over): the paper's tables average the RMs,
    then report the seeds.

    A seed counts only where every RM of the group (every RM with a value in some seed) has a value: where
    some have none its mean is over other RMs, another quantity. Such seeds are left out of the mean and sd
    and counted in ``partial_seeds``; a seed where no RM has a value is in neither."""
    valued = metrics.with_columns(pl.col("value").fill_nan(None))
    has_value = pl.col("value").is_not_null()
    rms = valued.filter(has_value).group_by([*keys, "metric"]).agg(n_rms=pl.col("rm").n_unique())
    per_seed = (
        valued.group_by([*keys, "seed", "metric"])
        .agg(value=pl.col("value").mean(), with_value=pl.col("rm").filter(has_value).n_unique())
        .join(rms, on=[*keys, "metric"], how="left")
    )
    full = pl.col("with_value") == pl.col("n_rms")
    return per_seed.group_by([*keys, "metric"]).agg(
        mean=pl.col("value").filter(full).mean(),
        sd=pl.col("value").filter(full).std(),
        seeds=pl.col("value").filter(full).count(),
        partial_seeds=((pl.col("with_value") > 0) & ~full).sum().cast(pl.Int64),
    )


def wide_table(long: pl.DataFrame, keys: list[str], names: dict[str, str]) -> pl.DataFrame:
    """One row per group, columns ``<name> mean`` / ``<name> sd`` in ``names`` order."""
    out = None
    for metric, label in names.items():
        part = long.filter(pl.col("metric") == metric).select(
            *keys, pl.col("mean").alias(f"{label} mean"), pl.col("sd").alias(f"{label} sd")
        )
        out = part if out is None else out.join(part, on=keys, how="full", coalesce=True)
    assert out is not None
    return out.sort(keys)


def formatted_table(wide: pl.DataFrame, keys: list[str], names: dict[str, str]) -> pl.DataFrame:
    """The paper's "mean ± sd" layout: one text cell per metric."""
    rows = []
    for row in wide.iter_rows(named=True):
        cells = {k: str(row[k]) for k in keys}
        for label in names.values():
            mean, sd = row[f"{label} mean"], row[f"{label} sd"]
            cells[label] = (
                "–" if mean is None else f"{mean:.2f} ± {sd:.3f}" if sd is not None else f"{mean:.2f}"
            )
        rows.append(cells)
    return pl.DataFrame(rows, schema=[*keys, *names.values()])


def markdown_table(formatted: pl.DataFrame) -> str:
    """A formatted table as Markdown."""
    lines = ["| " + " | ".join(formatted.columns) + " |", "|" + "---|" * formatted.width]
    lines.extend("| " + " | ".join(row) + " |" for row in formatted.iter_rows())
    return "\n".join(lines) + "\n"


def evaluation_tables(metrics: pl.DataFrame) -> dict[str, tuple[pl.DataFrame, pl.DataFrame]]:
    """Tables 1 (coverage), 2 (distances) and 5 (by correctness): {name: (CSV frame, "mean ± sd" frame)}."""
    tables = {}
    everything = metrics.filter(pl.col("subset") == "all")
    split = metrics.filter(pl.col("subset") != "all")
    for name, frame, keys, names in (
        ("coverage", everything, ["dataset", "method", "rm"], COVERAGE_COLUMNS),
        ("distances", everything, ["dataset", "method", "rm"], DISTANCE_COLUMNS),
        ("coverage_by_correctness", split, ["dataset", "method", "rm", "subset"], CORRECTNESS_COVERAGE),
        ("distances_by_correctness", split, ["dataset", "method", "rm", "subset"], DISTANCE_COLUMNS),
    ):
        wide = wide_table(_summarise(frame, keys, names), keys, names)
        tables[name] = (wide, formatted_table(wide, keys, names))
    return tables


def run_evaluation_tables(metric_files: Sequence[str], outputs: Sequence[str], log: logging.Logger) -> None:
    """Write Tables 1, 2 and 5 as CSV (machines), Markdown and HTML (the report) beside each other."""

    metrics = pl.concat([read_table(p, METRICS, "metrics") for p in metric_files])
    for name, (frame, formatted) in evaluation_tables(metrics).items():
        csv = next(p for p in outputs if Path(p).name == f"{name}.csv")
        frame.write_csv(csv, float_precision=4)
        Path(csv).with_suffix(".md").write_text(markdown_table(formatted))
        Path(csv).with_suffix(".html").write_text(to_html(formatted, TABLE_TITLES[name], TABLE_NOTE))
        log.info("wrote %s (%d rows)", name, frame.height)


def run_methods_figure(coverage_csv: str, distances_csv: str, figures: dict[str, Any], output: str) -> None:
    """The methods figure from the coverage and distance tables."""
    from rmexplain.explanations.plots import methods_figure

    methods_figure(pl.read_csv(coverage_csv), pl.read_csv(distances_csv), figures, output)


def foreign_orientation_table(
    originals: Mapping[tuple[str, str], pl.DataFrame], datasets: Mapping[str, Mapping[str, Any]]
) -> pl.DataFrame:
    """One row per (dataset, foreign RM) of ``foreign_orientation_counts``. ``originals`` maps (dataset, RM)
    to ORIGINAL_SCORES; ``datasets`` maps a dataset to its ``shared_rms``, ``foreign_rms`` and ``orientation``
    (``foreign_rm_orientation``)."""
    rows = []
    for dataset, design in datasets.items():
        orienting = [originals[dataset, rm] for rm in design["shared_rms"]]
        for rm in design["foreign_rms"]:
            counts = foreign_orientation_counts(originals[dataset, rm], orienting, design["orientation"])
            rows.append(
                {
                    "dataset": dataset,
                    "rm": rm,
                    "shared_rms": ", ".join(design["shared_rms"]),
                    "foreign_rm_orientation": design["orientation"],
                    **counts,
                    "against_agreed_are": FOREIGN_TREATMENT[design["orientation"]],
                }
            )
    return pl.DataFrame(rows)


def run_foreign_orientation_table(
    score_files: Sequence[str],
    parts: Sequence[Sequence[str]],
    datasets: Mapping[str, Mapping[str, Any]],
    outputs: Mapping[str, str],
    log: logging.Logger,
) -> None:
    """The report's table of comparisons that RMs outside ``shared_rms`` orient against the agreed y+
    (``foreign_orientation_table``); ``parts[i]`` is the (dataset, RM) of ``score_files[i]``."""
    originals = {
        (dataset, rm): read_table(path, ORIGINAL_SCORES, f"original_scores[{dataset}/{rm}]")
        for (dataset, rm), path in zip(parts, score_files, strict=True)
    }
    table = foreign_orientation_table(originals, datasets)
    write_table_pages(table, FOREIGN_TITLE, FOREIGN_NOTE, outputs["csv"], outputs["md"], outputs["html"])
    for row in table.iter_rows(named=True):
        log.info(
            "%(dataset)s/%(rm)s: %(against_agreed)d of %(shared_set)d shared comparisons oriented against "
            "the agreed y+ (%(against_agreed_are)s); %(ties)d ties; %(explained)d explained",
            row,
        )
