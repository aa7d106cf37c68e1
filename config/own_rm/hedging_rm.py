"""A sample RM that penalises a class no fixed list names: −0.5 per hedging word, +0.01 per word.

config/own_rm/hedging.yaml explains it with the offline engine's two rounds: the second merges the hedging
words round 1 finds one by one into one class (docs/discovery.md, "Merged word classes").
"""

from __future__ import annotations

import re

HEDGE = re.compile(r"\b(?:maybe|probably|might|could|may|perhaps|possibly)\b", re.IGNORECASE)


def score(prompts: list[str], responses: list[str]) -> list[float]:
    """−0.5 per hedging word, +0.01 per word (whitespace-separated)."""
    return [-0.5 * len(HEDGE.findall(r)) + 0.01 * len(r.split()) for r in responses]
