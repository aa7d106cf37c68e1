"""``file`` — perturbations supplied by the user (bring your own perturbation generator).

The file (Parquet or JSONL) has the columns ``comparison_id, target, attribute, variant, text`` and
optionally ``focus_words`` (list of strings) and ``generator``. Rows are matched to the comparisons
being explained; rows for other comparisons are counted, logged and recorded among the job's skips
(stage ``file``), and rows that are malformed raise an error naming the row.

``comparison_id`` is the pipeline's id ``{dataset}-s{seed}-{source id}`` (``harmless-s0-3``), or the
user's own id of the comparison in its source (``3``; a ``file`` dataset's ``id`` column): such an id is
mapped to every explained comparison with that source id (the same item drawn by several seeds), when
those comparisons are the same texts; otherwise, or when no row names an explained comparison, the job
fails naming the format.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

from rmexplain.data.readers import read_table_file
from rmexplain.perturb.base import Draft, MethodContext, PerturbationError, PerturbTask, methods
from rmexplain.settings import ConfigError

FILE_COLUMNS = ("comparison_id", "target", "attribute", "variant", "text")
PIPELINE_ID = re.compile(r"^(?P<dataset>.+)-s(?P<seed>\d+)-(?P<source>.+)$")
ID_FORMAT = "{dataset}-s{seed}-{source id} (e.g. 'harmless-s0-3') or the comparison's own source id"


def _check_row(index: int, row: dict, attributes: dict[str, str], path: str) -> None:
    where = f"perturb.file.path {path}: row {index}"
    if row["target"] not in ("chosen", "rejected"):
        raise PerturbationError(f"{where}: target must be 'chosen' or 'rejected', got {row['target']!r}")
    if row["attribute"] is not None and row["attribute"] not in attributes:
        raise PerturbationError(
            f"{where}: unknown attribute {row['attribute']!r}; configured attributes: {sorted(attributes)}"
        )
    if not isinstance(row["text"], str) or not row["text"].strip():
        raise PerturbationError(f"{where}: empty perturbation text")
    if _variant(row["variant"]) is None:
        raise PerturbationError(f"{where}: variant must be an integer, got {row['variant']!r}")


def _variant(value: object) -> int | None:
    """An integer variant (also 2.0 or "2", as a JSONL column of mixed types reads); None otherwise."""
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return int(value) if value == int(value) else None
    return None


def _slots(tasks: Sequence[PerturbTask], path: str) -> dict[tuple[str, str], list[PerturbTask]]:
    """(id, target) -> tasks, for the pipeline's ids and for the source ids inside them."""
    slots: dict[tuple[str, str], list[PerturbTask]] = {}
    for task in tasks:
        slots[(task.comparison_id, task.target)] = [task]
    by_source: dict[tuple[str, str], list[PerturbTask]] = {}
    for task in tasks:
        match = PIPELINE_ID.match(task.comparison_id)
        if match:
            by_source.setdefault((match["source"], task.target), []).append(task)
    for key, same in by_source.items():
        if key in slots:
            continue
        texts = {(t.prompt, t.response) for t in same}
        slots[key] = same if len(texts) == 1 else []  # [] = ambiguous: different comparisons
    return slots


def check_file_settings(key: str, settings: dict) -> None:
    """``path`` names an existing file (the config check of ``perturb.file``)."""
    path = settings.get("path")
    if not path:
        raise ConfigError(f"{key}.path is required when perturb.methods includes 'file'")
    if not Path(path).is_file():
        raise ConfigError(f"{key}.path: file {path!r} does not exist")


@methods.register(
    "file", check_settings=check_file_settings, effect_editor=False
)  # its texts come from a file
def file_method(tasks: Sequence[PerturbTask], context: MethodContext) -> list[Draft]:
    """Perturbations read from ``settings['path']`` for the given tasks."""
    path = context.settings["path"]
    frame = read_table_file(path, required=FILE_COLUMNS)
    slots = _slots(tasks, path)
    drafts, unmatched = [], 0
    for index, row in enumerate(frame.iter_rows(named=True)):
        _check_row(index, row, context.attributes, path)
        matched = slots.get((str(row["comparison_id"]), row["target"]))
        if matched == []:
            raise PerturbationError(
                f"perturb.file.path {path}: row {index}: comparison_id {row['comparison_id']!r} is the "
                f"source id of several different comparisons here; use the pipeline's id {ID_FORMAT}"
            )
        if matched is None:
            unmatched += 1
            _record_unmatched(context, row)
            continue
        drafts.extend(_draft(task, row, path) for task in matched)
    if tasks and frame.height and not drafts:
        raise PerturbationError(
            f"perturb.file.path {path}: none of its {frame.height} rows names a comparison explained here "
            f"(e.g. {tasks[0].comparison_id!r}); comparison_id must be {ID_FORMAT}"
        )
    if unmatched:
        context.log.warning(
            "%d rows of %s name comparisons not being explained here; skipped", unmatched, path
        )
    context.log.info("file %s: %d perturbations for %d tasks", path, len(drafts), len(tasks))
    return drafts


UNMATCHED = "row names a comparison not explained here (not sampled, tied, or oriented otherwise)"


def _record_unmatched(context: MethodContext, row: dict) -> None:
    """Count a row for a comparison this job does not explain among the job's skips (when it keeps them)."""
    skips = context.services.get("skips")
    if skips is not None:
        skips.add(
            str(row["comparison_id"]),
            "file",
            UNMATCHED,
            target=row["target"],
            attribute=row["attribute"],
            variant=_variant(row["variant"]),
        )


def _draft(task: PerturbTask, row: dict, path: str) -> Draft:
    return Draft(
        comparison_id=task.comparison_id,
        target=task.target,
        direction=task.direction,
        attribute=row["attribute"],
        variant=_variant(row["variant"]),
        text=row["text"],
        focus_words=list(row.get("focus_words") or []),
        generator=str(row.get("generator") or f"file:{path}"),
    )
