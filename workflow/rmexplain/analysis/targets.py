"""Target files of the analysis stage (issue 5)."""

from __future__ import annotations

from typing import Any


def analysis_files(config: dict[str, Any]) -> list[str]:
    """Files ``rule all`` asks of the analysis stage."""
    return []
