"""Rule editors of your own: ``perturb.rules.editors.<attribute>.{worse,better}`` names the strategies of an
attribute the built-in table lacks (or replaces its strategies), as ``"file.py:function"`` or
``"package.module:function"`` references, each a ``Strategy`` (``Doc -> RuleEdit | None``) tried in order.

They load with the loader of a python RM's callable (``rmexplain.score.base.load_callable``), at the config
check and in the jobs; their files are the rules jobs' inputs, so editing one reruns them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rmexplain.perturb.base import PerturbationError
from rmexplain.perturb.rules.text import Strategy
from rmexplain.score.base import ScoringError, callable_file, load_callable
from rmexplain.settings import ConfigError

Editors = dict[str, dict[str, tuple[Strategy, ...]]]
DIRECTIONS = ("worse", "better")


def editor_references(settings: Mapping[str, Any]) -> dict[str, dict[str, list[str]]]:
    """``perturb.rules.editors``: attribute -> direction -> the references of its strategies."""
    return {
        attribute: {d: list(refs[d]) for d in DIRECTIONS}
        for attribute, refs in (settings.get("editors") or {}).items()
    }


def load_editors(settings: Mapping[str, Any], key: str = "perturb.rules") -> Editors:
    """The strategies ``perturb.rules.editors`` names, loaded; one that cannot be loaded raises
    ``PerturbationError`` naming its key."""
    editors: Editors = {}
    for attribute, directions in editor_references(settings).items():
        editors[attribute] = {}
        for direction, references in directions.items():
            strategies = []
            for i, reference in enumerate(references):
                try:
                    strategies.append(load_callable(reference))
                except ScoringError as err:
                    raise PerturbationError(f"{key}.editors.{attribute}.{direction}[{i}]: {err}") from None
            editors[attribute][direction] = tuple(strategies)
    return editors


def check_editors(key: str, settings: dict[str, Any]) -> None:
    """The config check of ``perturb.rules.editors``: every strategy is imported (``ConfigError`` naming its
    key), before any job."""
    try:
        load_editors(settings, key)
    except PerturbationError as err:
        raise ConfigError(str(err)) from None


def editor_files(settings: Mapping[str, Any]) -> dict[str, str]:
    """The files of the strategies, by rule-input name (editing one reruns the rules jobs)."""
    files = []
    for directions in editor_references(settings).values():
        for references in directions.values():
            files += [str(found) for ref in references if (found := callable_file(ref)) is not None]
    return {f"rules_editor_{i}": path for i, path in enumerate(dict.fromkeys(files))}
