"""``backend: python`` — any callable ``score(prompts, responses) -> list[float]``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rmexplain.score.base import (
    NonFiniteRewardError,
    RewardModelBackend,
    ScoringError,
    callable_file,
    load_callable,
    rm_backends,
)
from rmexplain.settings import ConfigError, relative_note


@rm_backends.register("python")
class PythonScorer(RewardModelBackend):
    """Wraps a user function named by ``callable: "module:function"`` (bring your own black-box RM)."""

    @staticmethod
    def check_spec(name: str, spec: dict[str, Any]) -> None:
        """The callable is imported here, at the config check: a wrong path or name, or a module that fails
        on import, is named before any job starts."""
        reference = str(spec.get("callable", ""))
        if ":" not in reference:
            raise ConfigError(
                f"reward_models.{name}.callable must be 'module:function' or 'path/file.py:function'"
            )
        file = reference.partition(":")[0]
        if file.endswith(".py") and not Path(file).is_file():
            missing = f"file {file} does not exist{relative_note(file)}"
            raise ConfigError(f"reward_models.{name}.callable: {reference!r}: {missing}")
        try:
            load_callable(reference)
        except ScoringError as err:
            raise ConfigError(f"reward_models.{name}.callable: {err}") from None

    @staticmethod
    def code_files(spec: dict[str, Any]) -> list[Path]:
        found = callable_file(str(spec["callable"]))
        return [] if found is None else [found]

    def __init__(self, name: str, spec: dict[str, Any]) -> None:
        if "callable" not in spec:
            raise ScoringError(f"reward_models.{name}.callable is required for backend 'python'")
        self.name = name
        self.reference = str(spec["callable"])
        self._function = load_callable(self.reference)
        self._batch_size = int(spec.get("batch_size", 256))

    def score(self, prompts: Sequence[str], responses: Sequence[str]) -> list[float]:
        rewards: list[float] = []
        for start in range(0, len(prompts), self._batch_size):
            batch_prompts = list(prompts[start : start + self._batch_size])
            batch_responses = list(responses[start : start + self._batch_size])
            try:
                out = [float(r) for r in self._function(batch_prompts, batch_responses)]
            except Exception as err:  # the user's code: any error, reported with the RM and the rows
                raise ScoringError(
                    f"reward_models.{self.name}.callable {self.reference!r} raised "
                    f"{type(err).__name__}: {err} (input rows {start}-{start + len(batch_prompts) - 1})"
                ) from err
            if len(out) != len(batch_prompts):
                raise ScoringError(
                    f"reward model {self.name!r}: its callable returned {len(out)} rewards for "
                    f"{len(batch_prompts)} inputs"
                )
            rewards.extend(out)
        bad = [i for i, r in enumerate(rewards) if not math.isfinite(r)]
        if bad:
            raise NonFiniteRewardError(f"reward model {self.name!r}", bad)
        return rewards
