"""File-level entry points of the attribute-effects rules: each ``workflow/scripts/effect_*.py`` calls one."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from rmexplain import paths
from rmexplain.analysis.bootstrap import BootstrapSettings
from rmexplain.analysis.sensitivity import with_keys
from rmexplain.effects.analysis import (
    ClassCounts,
    EffectSettings,
    WordChanges,
    effect_input,
    effects_table,
    log_summary,
    slope_input,
)
from rmexplain.effects.base import LENGTH, EffectInput, estimators
from rmexplain.effects.edits import make_effect_edits
from rmexplain.effects.estimators import LengthAdjusted
from rmexplain.effects.recovery import recall_table, recovery_rows, visible_shares
from rmexplain.explanations.stages import encode_table
from rmexplain.figures import FigureOptions
from rmexplain.llm.client import write_llm_use
from rmexplain.markup import write_table_pages
from rmexplain.perturb.stages import method_services
from rmexplain.schemas import (
    ATTRIBUTE_EFFECTS,
    BIAS_DISCOVERY_EDITS,
    CARRIER_EDITS,
    COMPARISONS,
    EFFECT_EDITS,
    EXPLANATIONS,
    ORIGINAL_SCORES,
    PERTURB_SKIPS,
    REWARDS,
    TEXT_EMBEDDINGS,
    polars_schema,
    read_table,
    write_table,
)


def run_effect_edits(
    comparisons: str,
    method: str,
    registered: str,
    settings: Mapping[str, Any],
    attributes: Mapping[str, str],
    rewrite_of_rewrite: bool,
    llm: Mapping[str, Any] | None,
    outputs: Mapping[str, str],
    log: logging.Logger,
) -> None:
    """EFFECT_EDITS of one (dataset, method) -> ``outputs["edits"]``, its skips -> ``outputs["skipped"]`` and,
    for an LLM method, the job's LLM use -> ``outputs["llm_use"]``."""
    services = method_services(registered, dict(llm) if llm else None, log)
    try:
        frame, skipped = make_effect_edits(
            read_table(comparisons, COMPARISONS, "comparisons"),
            method,
            registered,
            settings,
            attributes,
            services,
            rewrite_of_rewrite,
            log,
        )
    finally:
        chat = services.get("chat")
        if chat is not None:
            chat.log_summary(f"{method} attribute-effect edits: LLM use")
    write_table(frame, outputs["edits"], EFFECT_EDITS, f"effect edits[{method}]")
    write_table(skipped.frame(), outputs["skipped"], PERTURB_SKIPS, f"effect edit skips[{method}]")
    if "llm_use" in outputs:
        write_llm_use(outputs["llm_use"], services.get("chat"), method)
    skipped.log_counts(log)


def run_embed_effect_texts(
    edits: Sequence[str],
    known: Sequence[str],
    settings: dict[str, Any],
    output: str,
    log: logging.Logger,
    discovery: Sequence[str] = (),
    carriers: Sequence[str] = (),
) -> None:
    """TEXT_EMBEDDINGS of the edited texts of one stage of a dataset (the effect edits ``edits``, a bias
    discovery round's ``discovery`` or the carrier edits' undone texts ``carriers``), each once, for the RMs
    that look texts up instead of encoding them (the demo RMs and the planted RMs built on them). Texts the
    embedding tables ``known`` hold (the dataset's and the earlier stages'; same encoder) are copied; only
    the others are encoded, the effect edits' in one pass and then the others (so the effect edits are
    encoded alike with or without them)."""
    effect_texts = set().union(
        *(read_table(p, EFFECT_EDITS, "effect edits")["text"].to_list() for p in edits)
    )
    discovery_texts = set().union(
        *(read_table(p, BIAS_DISCOVERY_EDITS, "discovery edits")["edited_text"].to_list() for p in discovery),
        *(_undone_texts(p) for p in carriers),
    )
    texts = effect_texts | discovery_texts
    held = [
        read_table(p, TEXT_EMBEDDINGS, "text embeddings").filter(pl.col("text").is_in(list(texts)))
        for p in known
    ]
    reused = (
        pl.concat(held).unique("text", maintain_order=True)
        if held
        else pl.DataFrame(schema=polars_schema(TEXT_EMBEDDINGS))
    )
    missing = sorted(effect_texts - set(reused["text"].to_list()))
    later = sorted(discovery_texts - effect_texts - set(reused["text"].to_list()))
    log.info("%d distinct edited texts: %d held by an earlier embedding table, %d to encode",
             len(texts), reused.height, len(missing) + len(later))  # fmt: skip
    encoded = [encode_table(group, settings) for group in (missing, later) if group]
    frame = pl.concat([reused, *encoded]).sort("text")
    write_table(frame, output, TEXT_EMBEDDINGS, "effect text embeddings")


def _undone_texts(path: str) -> set[str]:
    frame = read_table(path, CARRIER_EDITS, "carrier edits").filter(pl.col("skip").is_null())
    return set(frame["source_undone"].to_list()) | set(frame["edited_undone"].to_list())


def run_attribute_effects(
    inputs: Mapping[str, Any],
    rms: Sequence[str],
    references: Mapping[str, str | None],
    settings: Mapping[str, Any],
    attributes: Sequence[str],
    dataset: str,
    method: str,
    output: str,
    log: logging.Logger,
    class_counts: ClassCounts | None = None,
    word_changes: WordChanges | None = None,
) -> None:
    """ATTRIBUTE_EFFECTS of one (dataset, method): every RM × estimator × attribute (and length).

    ``inputs``: ``comparisons``, ``edits``, and per RM (in ``rms`` order, references included) ``originals``,
    ``rewards`` (of the edits) and ``explanations`` (the paper's, for the flip-rate estimators; none where the
    method made no perturbations of the dataset, whose estimators are then not asked for). ``class_counts``:
    the classes the length slope holds equal, as discovery's does (the workflow passes
    ``rmexplain.discovery.classes.class_counts``, a layer above this one); ``word_changes``: an edit's
    words, those the RM's reward moves with held equal too (``discovery.edit_words.word_changes``)."""
    edits = read_table(inputs["edits"], EFFECT_EDITS, "effect edits")
    if not edits.height:
        raise ValueError(
            f"{inputs['edits']} holds no edit: the editor of {method!r} filled no slot on {dataset} "
            f"(the reasons: {paths.fmt(paths.EFFECT_SKIPS, dataset=dataset, method=method)})"
        )
    comparisons = read_table(inputs["comparisons"], COMPARISONS, "comparisons")
    originals = _by_rm(rms, inputs["originals"], ORIGINAL_SCORES, "original scores")
    data = effect_input(
        comparisons,
        edits,
        originals,
        _by_rm(rms, inputs["rewards"], REWARDS, "effect rewards"),
        _by_rm(rms, inputs["explanations"], EXPLANATIONS, "explanations") if inputs["explanations"] else {},
        list(attributes),
        class_counts,
        word_changes,
    )
    data.slope_edits = slope_edits(
        inputs, comparisons, originals, rms, attributes, class_counts, word_changes
    )
    options = EffectSettings(
        estimators=tuple(settings["estimators"]),
        primary=str(settings["primary"]),
        bootstrap=BootstrapSettings.from_config(settings.get("bootstrap")),
    )
    table = effects_table(data, list(rms), references, options, log)
    log.info(
        "%s/%s: %d edits, %d comparisons, %d RMs x %d estimators",
        dataset, method, data.comparison.size, len(data.comparisons), len(rms), len(options.estimators),
    )  # fmt: skip
    log_summary(table, options.primary, log)
    log_length_slopes(table, options.primary, data, references, log)
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    write_table(with_keys(table, dataset, method), output, ATTRIBUTE_EFFECTS, "attribute effects")


def slope_edits(
    inputs: Mapping[str, Any],
    comparisons: pl.DataFrame,
    originals: Mapping[str, pl.DataFrame],
    rms: Sequence[str],
    attributes: Sequence[str] | None,
    class_counts: ClassCounts | None,
    word_changes: WordChanges | None = None,
) -> EffectInput | None:
    """The dataset's attribute edits that inform an estimate's length slope (``slope_edits``: EFFECT_EDITS
    files, of ``attributes`` only where given; ``slope_rewards``: their rewards per RM in ``rms`` order), as
    one input; None where there are none (the attribute effects of one method, a dataset without them)."""
    if not inputs.get("slope_edits"):
        return None
    return slope_input(
        comparisons,
        [read_table(p, EFFECT_EDITS, "effect edits") for p in inputs["slope_edits"]],
        originals,
        _by_rm(rms, inputs["slope_rewards"], REWARDS, "effect rewards"),
        None if attributes is None else list(attributes),
        class_counts,
        word_changes,
    )


def log_length_slopes(
    table: pl.DataFrame,
    primary: str,
    data: EffectInput,
    references: Mapping[str, str | None],
    log: logging.Logger,
) -> None:
    """Each RM's length slope under the primary estimator, and what it held equal."""
    rows = table.filter((pl.col("estimator") == primary) & (pl.col("attribute") == LENGTH))
    for rm, gamma in rows.select("rm", "effect").iter_rows():
        log.info("%s, %s: length sensitivity γ %+.3f reward sd per sd of words (%s)", rm, primary, gamma,
                 held_equal(data, rm, references.get(rm), primary))  # fmt: skip


def held_equal(data: EffectInput, rm: str, reference: str | None, primary: str) -> str:
    """What ``primary``'s length slope of ``rm`` holds equal, in words."""
    if data.covariates is None:
        return "no class held equal"
    held = f"at equal counts of {data.covariates.shape[1]} classes and catalogue probes"
    estimator = estimators.get(primary)()
    words = estimator.held_words(data, rm, reference) if isinstance(estimator, LengthAdjusted) else []
    if words:
        named = [w if " " in w else f"the word “{w}”" for w in words]  # a class of form by its name
        held += " and of " + ", ".join(named) + " (its reward moves with them)"
    return held


def _by_rm(rms: Sequence[str], files: Sequence[str], contract: Any, name: str) -> dict[str, pl.DataFrame]:
    return {rm: read_table(path, contract, name) for rm, path in zip(rms, files, strict=True)}


RECOVERY_TITLE = "Planted biases: where each estimator ranks what the RM is known to reward"
RECALL_TITLE = "Planted biases: recall@1 and recall@3 per estimator"
RECOVERY_NOTE = (
    "Per RM with a declared expectation and estimator: the best rank of an expected attribute by"
    " |effect| (rows tied with it count as ahead; an effect of exactly 0 finds nothing), its effect"
    " [interval], whether its sign is the expected one, the three top rows, and the share of the edits"
    " that change the planted feature (0: no edit touches it, the bias cannot be seen and counts as a"
    " miss). A control expects no effect: a hit means none of its rows is significant; its rows against a"
    " reference give the observed false-positive rate, beside the nominal one."
)


def run_planted_recovery(
    inputs: Mapping[str, Sequence[str]],
    pairs: Sequence[Sequence[str]],
    expectations: Mapping[str, Mapping[str, Any]],
    planted: Mapping[str, Mapping[str, Any]],
    primary: str,
    level: float,
    outputs: Mapping[str, str],
    log: logging.Logger,
) -> None:
    """The planted-recovery and recall tables (CSV, Markdown, HTML) from every (dataset, method)'s effects;
    ``inputs``: ``effects``, ``edits`` and ``comparisons``, one per pair of ``pairs`` (in that order);
    ``level``: the intervals' confidence level (the controls' nominal false-positive rate is 1 − it)."""
    effects = pl.concat([read_table(p, ATTRIBUTE_EFFECTS, "attribute effects") for p in inputs["effects"]])
    visible = {}
    for (dataset, method), edits, comparisons in zip(
        pairs, inputs["edits"], inputs["comparisons"], strict=True
    ):
        shares = visible_shares(
            read_table(edits, EFFECT_EDITS, "effect edits"),
            read_table(comparisons, COMPARISONS, "comparisons"),
            planted,
        )
        visible.update({(dataset, method, rm): share for rm, share in shares.items()})
    recovery = recovery_rows(effects, expectations, visible)
    recall = recall_table(recovery, primary, level)
    for row in recall.filter(pl.col("dataset") == "all").iter_rows(named=True):
        rate, nominal = row["false_positive_rate"], row["nominal_rate"]
        control = "" if rate is None else f"; control rows significant {rate:.1%} (nominal {nominal:.0%})"
        log.info("%s/%s: recall@1 %d/%d, recall@3 %d/%d%s", row["method"], row["estimator"], row["hits_at_1"],
                 row["biases"], row["hits_at_3"], row["biases"], control)  # fmt: skip
    write_table_pages(recovery, RECOVERY_TITLE, RECOVERY_NOTE, outputs["csv"], outputs["md"], outputs["html"])
    write_table_pages(recall, RECALL_TITLE, RECOVERY_NOTE, outputs["recall_csv"], outputs["recall_md"],
                      outputs["recall_html"])  # fmt: skip


def run_effects_figure(
    effects: str, options: Mapping[str, Any], level: float, output: str, log: logging.Logger
) -> None:
    """The attribute-effects figure of one (dataset, method)."""
    from rmexplain.effects.plots import effects_figure  # matplotlib: only the figure's job imports it

    frame = read_table(effects, ATTRIBUTE_EFFECTS, "attribute effects")
    title = f"{frame['dataset'][0]} · {frame['method'][0]}" if frame.height else "attribute effects"
    effects_figure(frame, title, output, FigureOptions.from_config(options), f"{level:.0%}")
    log.info("wrote %s", output)
