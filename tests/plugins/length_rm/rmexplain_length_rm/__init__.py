"""A reward-model backend that lives outside rmexplain: it registers through an entry point.

Installed, its package metadata declares (``pyproject.toml`` beside this folder)::

    [project.entry-points."rmexplain.reward_models"]
    length = "rmexplain_length_rm:LengthRM"

and a config uses it as ``backend: length``, with its own spec key ``per_word``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from rmexplain.score.base import RewardModelBackend


class LengthRM(RewardModelBackend):
    """Rewards a response by its length in words (times ``per_word``): a stand-in for a real RM."""

    conda_env = "core"
    spec_schema: ClassVar[dict[str, Any]] = {"per_word": {"type": "number"}}

    def __init__(self, name: str, spec: dict[str, Any], **artifacts: Any) -> None:
        self.per_word = float(spec.get("per_word", 1.0))

    def score(self, prompts: Sequence[str], responses: Sequence[str]) -> list[float]:
        return [self.per_word * len(response.split()) for response in responses]
