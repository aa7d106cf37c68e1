"""File-level entry points of the bias-discovery rules: each ``workflow/scripts/discovery_*.py`` calls one."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from rmexplain.analysis.bootstrap import BootstrapSettings
from rmexplain.discovery.base import RoundContext, RoundOutput, engines
from rmexplain.discovery.classes import class_counts
from rmexplain.discovery.edit_words import EDIT_COLUMNS, EDIT_SCHEMA, held_word_changes
from rmexplain.discovery.edits import EditSettings, make_edits, original_units
from rmexplain.discovery.estimate import discovered_biases, largest_fit_slope, round_effects
from rmexplain.discovery.recall import SUMMARY, recall_table, rm_slopes
from rmexplain.effects.analysis import with_sources
from rmexplain.effects.stages import slope_edits
from rmexplain.figures import FigureOptions
from rmexplain.llm.client import CachedChat, build_chat, write_llm_use
from rmexplain.markup import to_html, to_markdown
from rmexplain.perturb.skips import SkipRecorder
from rmexplain.schemas import (
    BIAS_DISCOVERY_CANDIDATES,
    BIAS_DISCOVERY_EDITS,
    BIAS_DISCOVERY_EFFECTS,
    COMPARISONS,
    DISCOVERED_BIASES,
    EFFECT_CHANGES,
    EFFECT_EDITS,
    ORIGINAL_SCORES,
    PERTURB_SKIPS,
    REWARDS,
    polars_schema,
    read_table,
    write_table,
)
from rmexplain.score.planted import read_reward_scale


def _by_rm(rms: Sequence[str], files: Sequence[str], contract: Any, name: str) -> dict[str, pl.DataFrame]:
    return {rm: read_table(path, contract, name) for rm, path in zip(rms, files, strict=True)}


def _frames(files: Sequence[str], contract: Any, name: str) -> pl.DataFrame:
    frames = [read_table(p, contract, name) for p in files]
    return pl.concat(frames) if frames else pl.DataFrame(schema=polars_schema(contract))


def run_discovery_round(
    inputs: Mapping[str, Any],
    rms: Sequence[str],
    references: Mapping[str, str | None],
    settings: Mapping[str, Any],
    dataset: str,
    engine: str,
    round_: int,
    outputs: Mapping[str, str],
    log: logging.Logger,
    llm: Mapping[str, Any] | None = None,
) -> None:
    """One round of one engine on one dataset: its candidates and their edits (BIAS_DISCOVERY_CANDIDATES,
    BIAS_DISCOVERY_EDITS), the edits it could not make (PERTURB_SKIPS) and, where ``outputs`` name them, its
    LLM use (``llm_use``: the ``llm`` section's client; ``judge_llm_use``: another section's, such as the llm
    engine's judge; ``"llm": null`` where none). ``inputs``: ``comparisons``, ``originals`` (per RM, in
    ``rms`` order), ``previous`` and ``previous_edits`` (the engine's effects and edits of earlier rounds).
    ``settings``: ``discovery.<engine>``, ``responses_per_feature`` and ``min_per_direction``; ``llm``: the
    ``llm`` section, for an engine that ``uses_llm``. A round the engine stopped early
    (``RoundOutput.stopped``) writes empty tables and its skips, the reason among them; any other round
    without an edit fails."""
    comparisons = read_table(inputs["comparisons"], COMPARISONS, "comparisons")
    entry = engines.get(engine)
    sections = entry.llm_sections(settings.get(engine) or {}, llm or {})
    chats = {key: build_chat(section, log) for key, section in sections.items()}
    skips = SkipRecorder()
    context = RoundContext(
        dataset=dataset,
        round=round_,
        comparisons=comparisons,
        originals=_by_rm(rms, inputs["originals"], ORIGINAL_SCORES, "original scores"),
        references=dict(references),
        previous=_frames(inputs.get("previous", []), BIAS_DISCOVERY_EFFECTS, "discovery effects"),
        previous_edits=_frames(inputs.get("previous_edits", []), BIAS_DISCOVERY_EDITS, "discovery edits"),
        attribute_edits=attribute_edits(
            inputs.get("attribute_edits", []), inputs.get("attribute_changes", []), comparisons
        ),
        settings=settings,
        log=log,
        services={"skips": skips, "chats": chats},
    )  # fmt: skip
    try:
        output = entry().run_round(context)
    finally:
        for key, chat in chats.items():
            chat.log_summary(f"discovery {engine} round {round_} ({key})")
    _write_llm_use(chats, outputs, f"bias discovery ({engine})")
    edits, candidates = _round_tables(output, comparisons, settings, engine, round_, skips)
    log.info(
        "%s/%s round %d: %d features, %d edits", dataset, engine, round_, candidates.height, edits.height
    )
    if output.stopped is not None:
        log.info("%s/%s round %d stopped early (empty tables): %s", dataset, engine, round_, output.stopped)
    elif not edits.height:
        skips.log_counts(log)
        raise ValueError(
            f"discovery engine {engine!r} made no edit on dataset {dataset!r} in round {round_} "
            f"({candidates.height} features; the reasons are counted in the job's log)"
        )
    write_table(edits, outputs["edits"], BIAS_DISCOVERY_EDITS, "discovery edits")
    write_table(candidates, outputs["candidates"], BIAS_DISCOVERY_CANDIDATES, "discovery candidates")
    write_table(skips.frame(), outputs["skipped"], PERTURB_SKIPS, "discovery edit skips")
    skips.log_counts(log)


def attribute_edits(edits: Sequence[str], changes: Sequence[str], comparisons: pl.DataFrame) -> pl.DataFrame:
    """The attribute effects' round-1 edits (EFFECT_EDITS files, one per method) with each RM's change
    (EFFECT_CHANGES files, the same methods): ``rmexplain.discovery.edit_words.EDIT_COLUMNS``."""
    if not edits:
        return pl.DataFrame(schema=EDIT_SCHEMA)
    first = [read_table(p, EFFECT_EDITS, "effect edits").filter(pl.col("round") == 1) for p in edits]
    texts = pl.concat([with_sources(frame, comparisons) for frame in first]).select(
        "edit_id", "source_text", pl.col("text").alias("edited_text")
    )
    scored = pl.concat([read_table(p, EFFECT_CHANGES, "effect changes") for p in changes])
    joined = scored.join(texts, on="edit_id", how="inner").select(EDIT_COLUMNS)
    return joined.sort("rm", "edit_id")


def _round_tables(
    output: RoundOutput,
    comparisons: pl.DataFrame,
    settings: Mapping[str, Any],
    engine: str,
    round_: int,
    skips: SkipRecorder,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A round's edits and candidates: the engine's own, or those the shared edit maker makes of its
    features."""
    if output.edits is not None and output.candidates is not None:
        candidates = output.candidates
        if "present_in" not in candidates.columns:  # its own edits: no detector says which responses have it
            candidates = candidates.with_columns(present_in=pl.lit(None, dtype=pl.List(pl.String)))
        edits = output.edits
        if "dose" not in edits.columns:  # nor how many instances an edit adds: one
            edits = edits.with_columns(dose=pl.col("direction"))
        return edits, candidates
    options = EditSettings(int(settings["responses_per_feature"]), int(settings["min_per_direction"]))
    units = original_units(comparisons)
    return make_edits(output.features, units, options, engine, round_, output.screened, skips)


def _write_llm_use(chats: Mapping[str, CachedChat], outputs: Mapping[str, str], step: str) -> None:
    """The LLM use of the ``llm`` section's client and of one other section's (the judge's), then closed."""
    others = [key for key in chats if key != "llm"]
    if len(others) > 1:
        raise ValueError(f"{step}: at most one LLM section besides `llm` has a use record, not {others}")
    if "llm_use" in outputs:
        write_llm_use(outputs["llm_use"], chats.get("llm"), step)
    if "judge_llm_use" in outputs:
        write_llm_use(outputs["judge_llm_use"], chats[others[0]] if others else None, f"{step} judge")
    for chat in chats.values():
        chat.close()


def run_round_effects(
    inputs: Mapping[str, Any],
    rms: Sequence[str],
    references: Mapping[str, str | None],
    bootstrap: Mapping[str, Any] | None,
    min_effect: float,
    fdr: float,
    dataset: str,
    output: str,
    log: logging.Logger,
) -> None:
    """BIAS_DISCOVERY_EFFECTS of one round of one engine: every RM × feature, p-values of the null
    |effect| ≤ ``min_effect``, the halves of those ``fdr`` can make significant. ``inputs``:
    ``comparisons``, ``edits``, ``candidates``, and per RM (``rms`` order) ``originals`` and ``rewards`` of
    the edits."""
    comparisons = read_table(inputs["comparisons"], COMPARISONS, "comparisons")
    originals = _by_rm(rms, inputs["originals"], ORIGINAL_SCORES, "original scores")
    effects = round_effects(
        comparisons,
        read_table(inputs["edits"], BIAS_DISCOVERY_EDITS, "discovery edits"),
        read_table(inputs["candidates"], BIAS_DISCOVERY_CANDIDATES, "discovery candidates"),
        originals,
        _by_rm(rms, inputs["rewards"], REWARDS, "discovery rewards"),
        references,
        dataset,
        BootstrapSettings.from_config(bootstrap),
        float(min_effect),
        log,
        fdr=float(fdr),
        slope_edits=slope_edits(inputs, comparisons, originals, rms, None, class_counts, held_word_changes),
    )
    write_table(effects, output, BIAS_DISCOVERY_EFFECTS, "discovery effects")


TITLE = "Discovered biases: what each RM rewards or penalises beyond the attributes"
NOTE = (
    "Per dataset, RM and feature tested: the standardised reward change when one instance of the feature"
    " is added (RM reward sd on the originals, less the reference RM's change, at equal length), its 95 %"
    " bootstrap interval, the Benjamini-Hochberg q-value across the RM's features, the edits behind it and"
    " the share of the original responses that have the feature. Significant features first, by |effect|."
    " The CSV adds an example edit per feature (before, after, reward change)."
)
SHOWN = ("dataset", "rm", "rank", "feature", "effect", "low", "high", "q_value", "significant", "n",
         "support", "directions", "engine", "description")  # fmt: skip


def run_discovered_biases(
    effects: Sequence[str],
    edits: Mapping[str, Sequence[str]],
    fdr: float,
    outputs: Mapping[str, Any],
    log: logging.Logger,
) -> None:
    """The discovered-biases table (Parquet, CSV, Markdown, HTML) from every round's effects, and each
    dataset's edits in one file (``edits``: dataset -> its rounds' edit files; ``outputs["edits"]``: dataset
    -> the file to write)."""
    frames = [read_table(p, BIAS_DISCOVERY_EFFECTS, "discovery effects") for p in effects]
    table = discovered_biases(pl.concat(frames) if frames else pl.DataFrame(), fdr)
    for dataset, files in edits.items():
        merged = pl.concat([read_table(p, BIAS_DISCOVERY_EDITS, "discovery edits") for p in files])
        write_table(merged, outputs["edits"][dataset], BIAS_DISCOVERY_EDITS, "discovery edits")
    write_table(table, outputs["parquet"], DISCOVERED_BIASES, "discovered biases")
    table.write_csv(outputs["csv"])
    shown = table.select(SHOWN).with_columns(
        pl.col("effect", "low", "high", "support").round(3),
        pl.col("q_value").map_elements(_two_digits, pl.String),
    )
    Path(outputs["md"]).write_text(f"### {TITLE}\n\n{NOTE}\n\n{to_markdown(shown)}", encoding="utf-8")
    Path(outputs["html"]).write_text(to_html(shown, TITLE, NOTE), encoding="utf-8")
    for (dataset, rm), group in table.group_by("dataset", "rm", maintain_order=True):
        top = group.filter(pl.col("significant")).sort("rank").head(3)
        shown_top = ", ".join(f"{f} {e:+.2f}" for f, e in top.select("feature", "effect").iter_rows())
        gamma, low, high = largest_fit_slope(group)
        log.info("%s/%s: %d of %d features significant%s; length slope γ %+.3f [%+.3f, %+.3f] reward sd per "
                 "sd of words", dataset, rm, int(group["significant"].sum()), group.height,
                 f"; first: {shown_top}" if shown_top else "", gamma, low, high)  # fmt: skip


def run_biases_figure(
    biases: str, options: Mapping[str, Any], level: float, fdr: float, output: str, log: logging.Logger
) -> None:
    """The discovered-biases figure (``rmexplain.discovery.plots``) of the discovered-biases table."""
    from rmexplain.discovery.plots import biases_figure  # heavy (matplotlib): only this rule draws

    table = read_table(biases, DISCOVERED_BIASES, "discovered biases")
    biases_figure(table, output, FigureOptions.from_config(options), f"{level:.0%}", fdr)
    log.info("wrote %s (%d significant of %d rows)", output, int(table["significant"].sum()), table.height)


def _two_digits(value: float) -> str:
    return f"{value:.2g}"


def run_discovery_recall(
    biases: str,
    edits: Mapping[str, str],
    comparisons: Mapping[str, str],
    planted: Mapping[str, Mapping[str, Any]],
    moved_share: float,
    outputs: Mapping[str, str],
    log: logging.Logger,
    scales: Mapping[str, str],
) -> None:
    """The discovery-recall table of the planted RMs (``planted``: RM -> its scoring spec) from the
    discovered biases and each dataset's edits and comparisons (dataset -> file); ``scales``: each planted
    RM's base's ``reward_scale`` file, the unit of its planted strengths."""
    table_of_biases = read_table(biases, DISCOVERED_BIASES, "discovered biases")
    frames = {d: read_table(p, COMPARISONS, "comparisons") for d, p in comparisons.items()}
    base_sds = {rm: read_reward_scale(path) for rm, path in scales.items()}
    table = recall_table(
        table_of_biases,
        {d: read_table(p, BIAS_DISCOVERY_EDITS, "discovery edits") for d, p in edits.items()},
        frames,
        planted,
        moved_share,
        rm_slopes(table_of_biases, frames, planted, base_sds),
    )
    for row in table.filter(pl.col("rm") == SUMMARY).iter_rows(named=True):
        log.info(
            "%s: recall@1 %d/%d, recall@5 %d/%d, controls' significant features %s, length slopes whose "
            "interval holds the truth %d/%d", row["dataset"], row["hits_at_1"], row["biases"],
            row["hits_at_5"], row["biases"], row["n_significant"], row["slopes_held"], row["slopes"],
        )  # fmt: skip
    table.write_csv(outputs["csv"])
    shown = table.with_columns(
        pl.col("effect", "recall_at_1", "recall_at_5", *SLOPE_SHOWN).round(3),
        pl.col("q_value").map_elements(_two_digits, pl.String),
    )
    Path(outputs["md"]).write_text(
        f"### {RECALL_TITLE}\n\n{RECALL_NOTE}\n\n{to_markdown(shown)}", encoding="utf-8"
    )
    Path(outputs["html"]).write_text(to_html(shown, RECALL_TITLE, RECALL_NOTE), encoding="utf-8")


RECALL_TITLE = "Discovery recall: where the planted biases rank among the significant discoveries"
RECALL_NOTE = (
    "Per planted RM: the rank (among its significant features, by |effect|) of the first feature whose edits"
    " move the planted detector (it changes on at least discovery.recall.moved_share of the feature's edits),"
    " hit at 1 and at 5; a control (noise only) hits when nothing is significant. A planted length bias has"
    " no hit: every RM's row carries its length slope γ as discovery estimated it (slope, its interval)"
    " beside the truth its planted terms give (0 without a length bias; NaN where the RM is not explained"
    " against its base). Summary rows per dataset and over all: hits, recall@1 and recall@5 of the biases a"
    " feature can name, the controls' significant features, and the slopes whose interval holds the truth."
)
SLOPE_SHOWN = ("slope", "slope_low", "slope_high", "slope_truth", "slope_error")
