"""What a finding says in words: the phrase of the side an RM rewards (``directions.yaml``, package data).

An attribute effect is the reward change when a response moves to the attribute's *better* side; a positive
effect says the RM rewards that side, a negative one the worse side. Each phrase names the rewarded side
directly ("rewards less padding", "rewards hedging"), so no sentence negates an attribute's name. A
discovered feature's effect is the change when the feature is *added*: "rewards <description>" or
"penalises <description>".
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

from rmexplain.effects.base import LENGTH

DIRECTIONS_FILE = "directions.yaml"


@cache
def directions() -> dict[str, dict[str, str]]:
    """Attribute (and ``length``) -> ``{"better": phrase, "worse": phrase}``, from ``directions.yaml``."""
    text = (resources.files("rmexplain.findings") / DIRECTIONS_FILE).read_text(encoding="utf-8")
    data: Any = yaml.safe_load(text)
    for name, sides in data.items():
        if set(sides) != {"better", "worse"}:
            raise ValueError(f"{DIRECTIONS_FILE}: {name!r} needs exactly the keys better and worse")
    return data


def side(effect: float) -> str:
    """The side an effect says the RM rewards: ``better`` (effect ≥ 0) or ``worse`` (effect < 0)."""
    return "worse" if effect < 0 else "better"


def attribute_phrase(attribute: str, effect: float) -> str:
    """The plain-language direction of an attribute (or ``length``) effect."""
    rewarded = side(effect)
    known = directions().get(attribute)
    if known is not None:
        return known[rewarded]
    return f"rewards the {rewarded} side of {attribute}"


def feature_phrase(feature: str, description: str | None, effect: float) -> str:
    """The plain-language direction of a discovered feature (effect: the change when it is added)."""
    what = (description or "").strip().rstrip(".") or feature
    if what[:1].isupper() and not what[1:2].isupper():  # "An apology" -> "an apology"; "AFINN ..." stays
        what = what[0].lower() + what[1:]
    return f"{'penalises' if effect < 0 else 'rewards'} {what}"


def unit(name: str) -> str:
    """What one unit of an effect is, in words."""
    return "reward sd per sd of length" if name == LENGTH else "reward sd"
