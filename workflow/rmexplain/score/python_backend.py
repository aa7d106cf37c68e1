"""``backend: python`` — any callable ``score(prompts, responses) -> list[float]``."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rmexplain.score.base import (
    NoneRewardError,
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
        rewards: list[float | None] = []
        for start in range(0, len(prompts), self._batch_size):
            end = start + self._batch_size
            rewards.extend(self._batch(list(prompts[start:end]), list(responses[start:end]), start))
        missing = [i for i, r in enumerate(rewards) if r is None]
        if missing:
            raise NoneRewardError(f"reward model {self.name!r}", f"its callable {self.reference!r}", missing)
        found = [r for r in rewards if r is not None]  # every reward: none is None
        bad = [i for i, r in enumerate(found) if not math.isfinite(r)]
        if bad:
            raise NonFiniteRewardError(f"reward model {self.name!r}", bad)
        return found

    def _batch(self, prompts: list[str], responses: list[str], start: int) -> list[float | None]:
        """One batch's rewards from the callable: None where it returned None (every input, where it
        returned None itself); its error, or a return that is no list of rewards, named with the rows."""
        rows = f"input rows {start}-{start + len(prompts) - 1}"
        key = f"reward_models.{self.name}.callable {self.reference!r}"
        try:
            out = self._function(prompts, responses)
        except Exception as err:  # the user's code: any error, reported with the RM and the rows
            raise ScoringError(f"{key} raised {type(err).__name__}: {err} ({rows})") from err
        if out is None:
            return [None] * len(prompts)
        if isinstance(out, (str, bytes)) or not isinstance(out, Iterable):
            raise ScoringError(f"{key} returned a {type(out).__name__}, not one reward per input ({rows})")
        out = list(out)
        text = next((i for i, r in enumerate(out) if isinstance(r, (str, bytes))), None)
        if text is not None:  # float("0.5") would pass: a reward is a number, not its spelling
            raise ScoringError(
                f"{key} returned text ({out[text]!r}) for input row {start + text}, not a number: return"
                " floats"
            )
        try:
            rewards = [None if r is None else float(r) for r in out]
        except Exception as err:  # not an iterable of numbers: what it returned, named
            raise ScoringError(
                f"{key} returned a {type(out).__name__} that is not one reward per input: "
                f"{type(err).__name__}: {err} ({rows})"
            ) from err
        if len(rewards) != len(prompts):
            raise ScoringError(
                f"reward model {self.name!r}: its callable returned {len(rewards)} rewards for "
                f"{len(prompts)} inputs"
            )
        return rewards
