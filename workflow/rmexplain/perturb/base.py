"""Perturbation tasks, the method registry and the driver that turns method output into rows.

A method receives one ``PerturbTask`` per (comparison, target) — the response to perturb, the other
response, both RM scores and the direction opposing the RM — and returns ``Draft`` objects. The
driver adds ids, method and orienter and checks the rows against ``schemas.PERTURBATIONS``.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from rmexplain.ids import perturbation_id
from rmexplain.schemas import PERTURBATIONS, conform


@dataclass(frozen=True)
class PerturbTask:
    """Perturb ``response`` (the ``target`` original) in ``direction`` for one comparison."""

    comparison_id: str
    target: str  # "chosen" | "rejected": the human label of the response being perturbed
    direction: str  # "worse" (it is y+ for the orienting RM) | "better" (it is y−)
    prompt: str
    response: str  # response A in the paper's prompts
    other: str  # response B
    score: float  # r(x, A) under the orienting RM
    other_score: float  # r(x, B)


@dataclass
class Draft:
    """One perturbation produced by a method (before ids are attached)."""

    comparison_id: str
    target: str
    direction: str
    attribute: str | None
    variant: int
    text: str
    focus_words: list[str] = field(default_factory=list)
    generator: str = ""


@dataclass
class MethodContext:
    """What a method may use besides its tasks: attributes, its own settings, a logger, shared services."""

    attributes: dict[str, str]
    settings: dict[str, Any]
    log: logging.Logger
    services: dict[str, Any] = field(default_factory=dict)


Method = Callable[[Sequence[PerturbTask], MethodContext], list[Draft]]
_METHODS: dict[str, Method] = {}
# Methods that call an LLM (they receive the `llm` config section as params).
LLM_METHODS = frozenset({"two_step", "random"})
_METHOD_MODULES: dict[str, str] = {
    "rules": "rmexplain.perturb.rules",
    "file": "rmexplain.perturb.from_file",
    "two_step": "rmexplain.perturb.llm_methods",
    "random": "rmexplain.perturb.llm_methods",
    "polyjuice": "rmexplain.perturb.polyjuice",
}


class PerturbationError(ValueError):
    """Bad perturbation input or settings."""


def register_method(name: str) -> Callable[[Method], Method]:
    """Function decorator: make a perturbation method available as ``perturb.methods: [<name>]``."""

    def decorator(method: Method) -> Method:
        _METHODS[name] = method
        return method

    return decorator


def method_names() -> list[str]:
    """Names accepted in ``perturb.methods``."""
    return sorted(set(_METHODS) | set(_METHOD_MODULES))


def get_method(name: str) -> Method:
    """The registered method ``name`` (imported on first use)."""
    if name not in _METHODS and name in _METHOD_MODULES:
        importlib.import_module(_METHOD_MODULES[name])
    if name not in _METHODS:
        raise PerturbationError(f"perturb.methods: unknown method {name!r}; choose from {method_names()}")
    return _METHODS[name]


def tasks_from_orientation(comparisons: pl.DataFrame, orientation: pl.DataFrame) -> list[PerturbTask]:
    """Two tasks per oriented comparison: make y+ worse and make y− better.

    ``orientation`` has ``comparison_id, reward_chosen, reward_rejected, plus_target`` (rows with a
    null ``plus_target`` — exact ties — must already be removed by the caller).
    """
    joined = comparisons.join(orientation, on="comparison_id", how="inner")
    tasks: list[PerturbTask] = []
    for row in joined.iter_rows(named=True):
        plus = row["plus_target"]
        for target in ("chosen", "rejected"):
            other = "rejected" if target == "chosen" else "chosen"
            tasks.append(
                PerturbTask(
                    comparison_id=row["comparison_id"],
                    target=target,
                    direction="worse" if target == plus else "better",
                    prompt=row["prompt"],
                    response=row[target],
                    other=row[other],
                    score=float(row[f"reward_{target}"]),
                    other_score=float(row[f"reward_{other}"]),
                )
            )
    return tasks


def drafts_to_frame(drafts: Sequence[Draft], method: str, orienter: str) -> pl.DataFrame:
    """Rows in the PERTURBATIONS contract, with stable ids; duplicate slots are an error."""
    rows = [
        {
            "perturbation_id": perturbation_id(
                method, orienter, d.comparison_id, d.target, d.attribute, d.variant
            ),
            "comparison_id": d.comparison_id,
            "target": d.target,
            "direction": d.direction,
            "attribute": d.attribute,
            "variant": d.variant,
            "text": d.text,
            "method": method,
            "orienter": orienter,
            "focus_words": list(d.focus_words),
            "generator": d.generator,
        }
        for d in drafts
    ]
    frame = pl.DataFrame(rows, schema={k: c.dtype for k, c in PERTURBATIONS.items()})
    duplicated = frame.filter(pl.col("perturbation_id").is_duplicated())
    if duplicated.height:
        first = duplicated.row(0, named=True)
        raise PerturbationError(
            f"method {method!r} produced two perturbations for the same slot: comparison "
            f"{first['comparison_id']}, target {first['target']}, attribute {first['attribute']}, "
            f"variant {first['variant']}"
        )
    return conform(frame, PERTURBATIONS, f"perturbations[{method}]")
