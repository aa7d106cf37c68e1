"""Perturbation tasks, the method registry and the driver that turns method output into rows.

A method receives one ``PerturbTask`` per (comparison, target) — the response to perturb, the other
response, both RM scores and the direction opposing the RM — and returns ``Draft`` objects. The
driver adds ids, method and orienter and checks the rows against ``schemas.PERTURBATIONS``.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from rmexplain.ids import perturbation_id
from rmexplain.registry import Registry
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


class PerturbationError(ValueError):
    """Bad perturbation input or settings."""


def _no_gpus(settings: dict[str, Any]) -> int:
    return 0


def _no_hub_refs(settings: dict[str, Any]) -> list[Any]:
    return []


def _no_llm_requests(n_tasks: int, n_attributes: int, settings: dict[str, Any]) -> int:
    return 0


def _no_prompt_inputs(settings: dict[str, Any]) -> dict[str, str]:
    return {}


def _no_settings_check(key: str, settings: dict[str, Any]) -> None:
    return None


# A method declares, as keywords of ``register``: ``uses_llm`` (it calls the configured LLM: it receives the
# ``llm`` section, and its jobs take the LLM backend's GPUs and hub downloads), ``attribute_conditioned``
# (each perturbation targets one attribute, so the attribute analyses apply), and, for methods with a model
# of their own, ``gpus(settings)`` and ``hub_refs(settings)`` of its ``perturb.<method>`` settings; an LLM
# method, ``llm_requests(n_tasks, n_attributes, settings)``: at most how many requests a job sends (the
# plan, before the comparisons are sampled and scored);
# ``plan_requests(tasks, context)``: the requests themselves (``rmexplain.llm.client.PlannedRequest``, built
# by the client in ``context.services["chat"]``, which sends nothing), so the plan can leave out what the
# cache or another job answers; ``prompt_inputs(settings)``: the prompt
# files its jobs read, by rule-input name (so editing one reruns them); ``shared_requests_per_task``: how
# many of them every variant of the method sends identically (two_step's step 1), so a variant running
# after its method finds them in the cache; ``conda_env``: the env of its jobs when it calls no LLM;
# ``check_settings(key, settings)``: its part of the config check (raise ``ConfigError`` naming the key);
# ``settings_schema``: JSON-schema rules of its ``perturb.<method>`` keys, for a method from another package
# (the built-ins' keys are in config/schema.yaml); any other key there is refused;
# ``editable_attributes(settings)``: the attributes it (and its editor) can edit, where that is a fixed
# list (the rules method's table; None: any, as an LLM method's), so a config naming another is refused at the
# check;
# ``effect_editor``: a method-like function that edits each task's response along each attribute in the task's
# direction without RM scores (the attribute effects' edits, ``rmexplain.effects.edits``; ``False``: it cannot
# make new edits by design, as ``file``, whose texts come from elsewhere), and, for an LLM
# method, ``effect_requests(n_tasks, n_attributes, settings)``: the requests one editor call sends,
# ``effect_plan_requests(tasks, context, rewrite_of_rewrite)``: those requests for the plan (as
# ``plan_requests``), and ``effect_prompt_inputs(settings)``: the prompt files of its edits, by input name.
methods: Registry[Method] = Registry(
    "perturb.methods",
    {
        "rules": "rmexplain.perturb.rules",
        "rules_random": "rmexplain.perturb.rules.undirected",
        "file": "rmexplain.perturb.from_file",
        "two_step": "rmexplain.perturb.llm_methods",
        "random": "rmexplain.perturb.llm_methods",
        "polyjuice": "rmexplain.perturb.polyjuice",
    },
    group="rmexplain.perturb_methods",
    defaults={
        "uses_llm": False,
        "attribute_conditioned": True,
        "gpus": _no_gpus,
        "hub_refs": _no_hub_refs,
        "llm_requests": _no_llm_requests,
        "conda_env": "core",
        "prompt_inputs": _no_prompt_inputs,
        "check_settings": _no_settings_check,
        "settings_schema": {},
        "shared_requests_per_task": 0,
        "plan_requests": None,
        "effect_editor": None,
        "editable_attributes": None,
        "effect_requests": _no_llm_requests,
        "effect_prompt_inputs": _no_prompt_inputs,
        "effect_plan_requests": None,
    },
    error=PerturbationError,
)


def registered_method(perturb: dict[str, Any], name: str) -> str:
    """The registered method behind configured perturbation ``name``: ``name`` itself, or the ``method`` of
    the variant ``perturb.variants.<name>`` (e.g. App. D's ``two_step`` prompts ``only`` and ``pass``)."""
    variant = (perturb.get("variants") or {}).get(name)
    return variant["method"] if variant else name


def method_entry(perturb: dict[str, Any], name: str) -> Any:
    """The registry entry (with its declarations) of configured perturbation ``name``."""
    return methods.get(registered_method(perturb, name))


def method_settings(perturb: dict[str, Any], name: str) -> dict[str, Any]:
    """Settings of perturbation ``name``: the defaults its ``settings_schema`` declares (a plugin's; the
    schema fills the built-ins'), ``perturb.<method>`` over them, and the variant's own keys over those."""
    base = registered_method(perturb, name)
    declared = {
        key: copy.deepcopy(rule["default"])
        for key, rule in methods.get(base).settings_schema.items()
        if "default" in rule
    }
    variant = {k: v for k, v in ((perturb.get("variants") or {}).get(name) or {}).items() if k != "method"}
    return {**declared, **(perturb.get(base) or {}), **variant}


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
