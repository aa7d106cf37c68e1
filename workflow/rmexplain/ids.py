"""Stable identifiers shared by all stages."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def text_id(prompt: str, response: str) -> str:
    """Content id of a (prompt, response) pair: identical texts are scored once and joined by it."""
    return hashlib.sha256(f"{prompt}\x00{response}".encode()).hexdigest()[:24]


def perturbation_id(
    method: str, orienter: str, comparison_id: str, target: str, attribute: str | None, variant: int
) -> str:
    """Stable id of one perturbation slot (independent of the generated text)."""
    key = "\x1f".join([method, orienter, comparison_id, target, attribute or "", str(variant)])
    return hashlib.sha256(key.encode()).hexdigest()[:20]


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 text; values JSON cannot hold (dates from YAML) as strings."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def file_sha256(path: str | Path) -> str:
    """sha256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
