"""A sample RM with two class biases and a length slope: +1 per token holding a digit, −0.8 per first-person
word (I, me, my, mine, myself, I'm, I've, I'd, I'll; either apostrophe) and +0.02 per word.

config/own_rm/real_pairs.yaml explains it on real hh-rlhf pairs (docs/own_rm.md, "On real pairs").
"""

from __future__ import annotations

import re

FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|i['’](?:m|ve|d|ll))\b", re.IGNORECASE)


def score(prompts: list[str], responses: list[str]) -> list[float]:
    """+1 per whitespace-separated token holding a digit, −0.8 per first-person word, +0.02 per token."""
    return [reward(response) for response in responses]


def reward(response: str) -> float:
    """One response's reward."""
    tokens = response.split()
    digit_tokens = sum(any(c.isdigit() for c in token) for token in tokens)
    return 1.0 * digit_tokens - 0.8 * len(FIRST_PERSON.findall(response)) + 0.02 * len(tokens)
