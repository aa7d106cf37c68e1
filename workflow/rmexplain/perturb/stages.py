"""The entry points of the perturb and discovery rules: comparisons + orienting scores -> rows.

Every method (rules, file, two_step, random, polyjuice, ...) goes through ``perturb_to_parquet``:
it orients the comparisons with the RM(s) named by ``orienter``, builds the ``PerturbTask``s, calls
the registered method with a ``MethodContext`` (an LLM client for LLM methods and a skip recorder
for all), and writes the rows (``schemas.PERTURBATIONS``) and the skipped slots
(``schemas.PERTURB_SKIPS``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from rmexplain.explanations.categorise import skipped_for_length
from rmexplain.llm.client import build_chat, write_llm_use
from rmexplain.markup import write_table_pages
from rmexplain.perturb.base import (
    MethodContext,
    PerturbationError,
    drafts_to_frame,
    methods,
    tasks_from_orientation,
)
from rmexplain.perturb.skips import SkipRecorder, skip_counts
from rmexplain.schemas import (
    COMPARISONS,
    ORIGINAL_SCORES,
    PERTURB_SKIPS,
    PERTURBATIONS,
    read_table,
    write_table,
)

ORIENTATION_COLUMNS = ["comparison_id", "reward_chosen", "reward_rejected", "plus_target"]


def _as_list(paths: str | Sequence[str]) -> list[str]:
    return [paths] if isinstance(paths, (str, Path)) else [str(p) for p in paths]


def orientation(
    score_paths: str | Sequence[str], comparison_ids: Sequence[str], skips: SkipRecorder, log: logging.Logger
) -> pl.DataFrame:
    """``comparison_id, reward_chosen, reward_rejected, plus_target`` of the comparisons to perturb.

    One score table: that RM orients (paper §3). Several (``shared`` orientation, §4): keep the
    comparisons on which all RMs prefer the same response, with the first RM's rewards in prompts.
    Ties, disagreements, originals left unscored for length and comparisons without scores are recorded
    as skips and logged.
    """
    paths = _as_list(score_paths)
    tables = [read_table(p, ORIGINAL_SCORES, "original scores") for p in paths]
    if not tables:
        raise PerturbationError("perturb: no original-score table to orient the comparisons with")
    rms = [t["rm"][0] if t.height else Path(p).stem for t, p in zip(tables, paths, strict=True)]
    verdicts = [
        dict(zip(t["comparison_id"].to_list(), t["plus_target"].to_list(), strict=True)) for t in tables
    ]
    too_long = [set(skipped_for_length(t)["comparison_id"]) for t in tables]
    keep: list[str] = []
    for cid in comparison_ids:
        unscored = [rm for rm, v in zip(rms, verdicts, strict=True) if cid not in v]
        cut = [rm for rm, ids in zip(rms, too_long, strict=True) if cid in ids]
        tied = [rm for rm, v in zip(rms, verdicts, strict=True) if cid in v and v[cid] is None]
        if unscored:
            skips.add(cid, "orientation", f"no original score from {', '.join(unscored)}")
        elif cut:
            skips.add(cid, "orientation", f"an original over the token limit of {', '.join(cut)} (skipped)")
        elif tied:
            skips.add(cid, "orientation", f"tie in original rewards under {', '.join(tied)}")
        elif len({v[cid] for v in verdicts}) > 1:
            skips.add(cid, "orientation", "the shared RMs disagree on which response is y+")
        else:
            keep.append(cid)
    log.info(
        "orientation by %s: %d of %d comparisons kept, %d skipped (ties, length, disagreements, no score)",
        "+".join(rms), len(keep), len(comparison_ids), len(comparison_ids) - len(keep),
    )  # fmt: skip
    return tables[0].select(ORIENTATION_COLUMNS).filter(pl.col("comparison_id").is_in(keep))


def method_services(method: str, llm: dict[str, Any] | None, log: logging.Logger) -> dict[str, Any]:
    """Shared services for a method: the skip recorder, and the cached LLM client for LLM methods."""
    services: dict[str, Any] = {"skips": SkipRecorder()}
    if methods.get(method).uses_llm:
        services["chat"] = build_chat(llm, log)
    return services


def perturb_to_parquet(
    *,
    comparisons: str,
    scores: str | Sequence[str],
    method: str,
    orienter: str,
    settings: dict[str, Any] | None,
    registered_method: str | None = None,
    attributes: dict[str, str],
    output: str,
    skipped: str,
    log: logging.Logger,
    llm: dict[str, Any] | None = None,
    services: dict[str, Any] | None = None,
    llm_use: str | None = None,
) -> pl.DataFrame:
    """Run perturbation ``method`` for one (dataset, orienter) and write its rows and skips (and, to
    ``llm_use``, the job's LLM use: ``rmexplain.llm.client.write_llm_use``).

    ``registered_method`` is the registered method a variant named ``method`` runs (default ``method``).

    ``services`` may pre-set shared services (e.g. a ``chat`` client in tests); missing ones are built.
    """
    comps = read_table(comparisons, COMPARISONS, "comparisons")
    runs = registered_method or method
    services = {**method_services(runs, llm, log), **(services or {})}
    skips: SkipRecorder = services["skips"]
    oriented = orientation(scores, comps["comparison_id"].to_list(), skips, log)
    tasks = tasks_from_orientation(comps, oriented)
    log.info(
        "%s: %d tasks (%d comparisons x 2 sides) for orienter %s",
        method,
        len(tasks),
        oriented.height,
        orienter,
    )
    context = MethodContext(
        attributes=dict(attributes), settings=dict(settings or {}), log=log, services=services
    )
    try:
        drafts = methods.get(runs)(tasks, context)
    finally:
        chat = services.get("chat")
        if chat is not None:
            chat.log_summary(f"{method} LLM use")
    frame = drafts_to_frame(drafts, method, orienter)
    for path in (output, skipped):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_table(frame, output, PERTURBATIONS, f"perturbations[{method}]")
    write_table(skips.frame(), skipped, PERTURB_SKIPS, f"perturb skips[{method}]")
    if llm_use is not None:
        write_llm_use(llm_use, services.get("chat"), method)
    skips.log_counts(log)
    log.info("%s: wrote %d perturbations to %s", method, frame.height, output)
    return frame


SKIPS_TITLE = "Perturbations that could not be made"
SKIPS_NOTE = (
    "Per perturbation job (dataset, method, orienter), stage and reason: the skipped slots or whole "
    "comparisons and how many comparisons they touch. An LLM answer cut off at max_tokens names the setting "
    "to raise; an orientation skip is a comparison the orienting RMs tie or (shared) disagree on."
)


def run_skips_table(
    skip_files: Sequence[str], parts: Sequence[Sequence[str]], outputs: Mapping[str, str], log: logging.Logger
) -> None:
    """The report's table of every perturbation job's skips (``skip_counts``); ``parts[i]`` is the (dataset,
    method, orienter) of ``skip_files[i]``; ``outputs`` has ``csv``, ``md`` and ``html``."""
    frames = [read_table(p, PERTURB_SKIPS, "perturb skips") for p in skip_files]
    counts = skip_counts(parts, frames)
    note = SKIPS_NOTE if counts.height else "Nothing was skipped: every perturbation job filled every slot."
    write_table_pages(counts, SKIPS_TITLE, note, outputs["csv"], outputs["md"], outputs["html"])
    for row in counts.iter_rows(named=True):
        log.warning("%(skipped)5d skipped in %(dataset)s/%(method)s/%(orienter)s [%(stage)s] %(reason)s", row)
    log.info("%d skips in %d perturbation jobs", int(counts["skipped"].sum() or 0), len(skip_files))
