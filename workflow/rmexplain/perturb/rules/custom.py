"""Rule editors of your own: ``perturb.rules.editors.<attribute>.{worse,better}`` names the strategies of an
attribute the built-in table lacks (or replaces its strategies), as ``"file.py:function"`` or
``"package.module:function"`` references, each a ``Strategy`` (``Doc -> RuleEdit | None``) tried in order.

They load with the loader of a python RM's callable (``rmexplain.score.base.load_callable``), at the config
check and in the jobs; their files are the rules jobs' inputs, so editing one reruns them. Each keeps its key
and reference (``OwnStrategy``), so that a return that is no ``RuleEdit`` (``checked_edit``) names them.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from rmexplain.perturb.base import PerturbationError, PerturbTask
from rmexplain.perturb.rules.text import Doc, RuleEdit, Strategy
from rmexplain.score.base import ScoringError, callable_file, load_callable
from rmexplain.settings import ConfigError

Editors = dict[str, dict[str, tuple[Strategy, ...]]]
DIRECTIONS = ("worse", "better")
_SHORT = reprlib.Repr()
_SHORT.maxstring, _SHORT.maxother = 60, 80
MUST_RETURN = (
    "a strategy must return a RuleEdit (text: str, focus: a tuple of words, name: str; "
    "finish(doc, new_text, focus_words, name) makes one) or None where it cannot edit the response"
)


@dataclass(frozen=True)
class OwnStrategy:
    """A strategy of ``perturb.rules.editors``: the function, its key and the reference it was loaded from."""

    function: Strategy
    key: str
    reference: str

    def __call__(self, doc: Doc) -> RuleEdit | None:
        return self.function(doc)

    @property
    def __name__(self) -> str:  # how errors name a strategy
        return f"{self.key} ({self.reference!r})"


def _is_rule_edit(edit: object) -> TypeGuard[RuleEdit]:
    """Whether ``edit`` is a ``RuleEdit`` whose text, focus words and name are strings."""
    return (
        isinstance(edit, RuleEdit)
        and isinstance(edit.text, str)
        and isinstance(edit.name, str)
        and isinstance(edit.focus, (tuple, list))
        and all(isinstance(word, str) for word in edit.focus)
    )


def checked_edit(edit: object, strategy: Strategy, attribute: str, task: PerturbTask) -> RuleEdit | None:
    """``edit``, the return of ``strategy`` on ``task``, when it is a ``RuleEdit`` or None; else
    ``PerturbationError`` naming the strategy, attribute, direction and what it returned."""
    if edit is None or _is_rule_edit(edit):
        return edit
    raise PerturbationError(
        f"{strategy.__name__}, the {attribute} editor ({task.direction}), returned a {type(edit).__name__} "
        f"({_SHORT.repr(edit)}) on comparison {task.comparison_id} ({task.target}): {MUST_RETURN}"
    )


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
                where = f"{key}.editors.{attribute}.{direction}[{i}]"
                try:
                    strategies.append(OwnStrategy(load_callable(reference), where, reference))
                except ScoringError as err:
                    raise PerturbationError(f"{where}: {err}") from None
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
