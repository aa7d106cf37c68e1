"""Stable identifiers shared by all stages."""

from __future__ import annotations

import hashlib


def text_id(prompt: str, response: str) -> str:
    """Content id of a (prompt, response) pair: identical texts are scored once and joined by it."""
    return hashlib.sha256(f"{prompt}\x00{response}".encode()).hexdigest()[:24]


def perturbation_id(
    method: str, orienter: str, comparison_id: str, target: str, attribute: str | None, variant: int
) -> str:
    """Stable id of one perturbation slot (independent of the generated text)."""
    key = "\x1f".join([method, orienter, comparison_id, target, attribute or "", str(variant)])
    return hashlib.sha256(key.encode()).hexdigest()[:20]
