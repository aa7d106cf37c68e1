"""``file`` — perturbations supplied by the user (bring your own perturbation generator).

The file (Parquet or JSONL) has the columns ``comparison_id, target, attribute, variant, text`` and
optionally ``focus_words`` (list of strings) and ``generator``. Rows are matched to the comparisons
being explained; rows for other comparisons are counted and logged, and rows that are malformed raise
an error naming the row.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rmexplain.data.readers import read_table_file
from rmexplain.perturb.base import Draft, MethodContext, PerturbationError, PerturbTask, methods
from rmexplain.settings import ConfigError

FILE_COLUMNS = ("comparison_id", "target", "attribute", "variant", "text")


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


def check_file_settings(key: str, settings: dict) -> None:
    """``path`` names an existing file (the config check of ``perturb.file``)."""
    path = settings.get("path")
    if not path:
        raise ConfigError(f"{key}.path is required when perturb.methods includes 'file'")
    if not Path(path).is_file():
        raise ConfigError(f"{key}.path: file {path!r} does not exist")


@methods.register("file", check_settings=check_file_settings)
def file_method(tasks: Sequence[PerturbTask], context: MethodContext) -> list[Draft]:
    """Perturbations read from ``settings['path']`` for the given tasks."""
    path = context.settings["path"]
    frame = read_table_file(path, required=FILE_COLUMNS)
    by_slot = {(t.comparison_id, t.target): t for t in tasks}
    drafts, unmatched = [], 0
    for index, row in enumerate(frame.iter_rows(named=True)):
        _check_row(index, row, context.attributes, path)
        task = by_slot.get((row["comparison_id"], row["target"]))
        if task is None:
            unmatched += 1
            continue
        drafts.append(
            Draft(
                comparison_id=task.comparison_id,
                target=task.target,
                direction=task.direction,
                attribute=row["attribute"],
                variant=int(row["variant"]),
                text=row["text"],
                focus_words=list(row.get("focus_words") or []),
                generator=str(row.get("generator") or f"file:{path}"),
            )
        )
    if unmatched:
        context.log.warning(
            "%d rows of %s name comparisons not being explained here; skipped", unmatched, path
        )
    context.log.info("file %s: %d perturbations for %d tasks", path, len(drafts), len(tasks))
    return drafts
