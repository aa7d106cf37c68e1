"""``rules_random``: the offline, undirected baseline built from the rules method's edit library.

The analogue of the paper's random baseline (RP, App. C) for the offline demo: ``n`` perturbations per
response, each the rules edit of an attribute drawn at random, in a direction drawn at random — not the
direction opposing the RM. Comparing it with the attribute-directed ``rules`` method on the same edits shows
what directing the edits buys (the paper's central claim: more counterfactuals of both responses). Draws
are seeded by (``seed``, comparison, target), so a rerun gives the same perturbations.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
from collections.abc import Sequence
from typing import Any

from rmexplain.perturb.base import Draft, MethodContext, PerturbationError, PerturbTask, methods
from rmexplain.perturb.rules.method import EDITORS, perturb
from rmexplain.settings import schema_defaults

RULES_RANDOM_DEFAULTS: dict[str, Any] = schema_defaults("perturb", "rules_random")
DIRECTIONS = ("worse", "better")


def _settings(given: dict[str, Any]) -> dict[str, Any]:
    unknown = set(given) - set(RULES_RANDOM_DEFAULTS)
    if unknown:
        raise PerturbationError(f"perturb.rules_random: unknown key(s) {sorted(unknown)}")
    settings = {**RULES_RANDOM_DEFAULTS, **given}
    if not isinstance(settings["n"], int) or settings["n"] < 1:
        raise PerturbationError(f"perturb.rules_random.n must be a positive integer, got {settings['n']!r}")
    return settings


def _rng(seed: int, task: PerturbTask) -> random.Random:
    key = "\x1f".join([str(seed), task.comparison_id, task.target]).encode()
    return random.Random(int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big"))


@methods.register("rules_random", attribute_conditioned=False)
def rules_random(tasks: Sequence[PerturbTask], context: MethodContext) -> list[Draft]:
    """``n`` undirected rules edits per response: a random attribute's edit in a random direction."""
    settings = _settings(context.settings)
    attributes = sorted(a for a in context.attributes if a in EDITORS)
    if not attributes:
        raise PerturbationError(
            f"perturb.rules_random: none of the attributes has a rule editor {sorted(EDITORS)}"
        )
    skips = context.services.get("skips")
    drafts: list[Draft] = []
    for task in tasks:
        rng = _rng(settings["seed"], task)
        for variant in range(settings["n"]):
            attribute, direction = rng.choice(attributes), rng.choice(DIRECTIONS)
            edit = perturb(dataclasses.replace(task, direction=direction), attribute)
            if edit is None:
                if skips is not None:
                    reason = f"no {attribute} edit ({direction}) applies to this response"
                    skips.add(task.comparison_id, "rules_random", reason, target=task.target, variant=variant)
                continue
            generator = f"rules_random:{attribute}:{direction}:{edit.name}"
            drafts.append(
                Draft(task.comparison_id, task.target, task.direction, None, variant, edit.text,
                      list(edit.focus), generator)
            )  # fmt: skip
    context.log.info("rules_random: %d perturbations from %d tasks", len(drafts), len(tasks))
    return drafts
