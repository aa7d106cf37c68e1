"""A sample reward model of your own: +1 for each politeness word or phrase, −0.05 for each word.

Any python RM is a function ``score(prompts, responses) -> list[float]`` (one reward per response); this one
ignores the prompt. config/own_rm.yaml points to it with ``callable: config/own_rm/politeness_rm.py:score``.
"""

from __future__ import annotations

import re

POLITE = re.compile(
    r"\b(?:please|thank you|thanks|sorry|i apologi[sz]e|kindly|appreciate|glad to help|happy to help)\b",
    re.IGNORECASE,
)
PER_WORD = 0.05


def score(prompts: list[str], responses: list[str]) -> list[float]:
    """+1 per politeness word or phrase, −0.05 per word (whitespace-separated)."""
    return [len(POLITE.findall(r)) - PER_WORD * len(r.split()) for r in responses]
