"""The scoring interface and the backend registry.

A backend is a class with ``score(prompts, responses) -> list[float]`` built from one reward-model
spec (a dict from ``config["reward_models"][name]``). Backends subclass ``RewardModelBackend`` and
register by name, so a new RM family is one new class and one ``@rm_backends.register("name")`` line.
A backend that tokenises with a limit also says which pairs it cuts (``length_check``), so the scoring
stage can apply ``overlong`` (``rmexplain.score.lengths``).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rmexplain.registry import Registry


class ScoringError(RuntimeError):
    """A reward model could not be built or could not score its inputs."""


class NonFiniteRewardError(ScoringError):
    """A backend computed NaN or infinite rewards; ``rows`` are their positions in its input (the scoring
    stage names them by comparison)."""

    def __init__(self, key: str, rows: Sequence[int]) -> None:
        self.rows = list(rows)
        super().__init__(f"{key}: non-finite reward for input rows {self.rows[:10]}")


class NoneRewardError(ScoringError):
    """A backend returned None for rewards (a ``python`` RM's callable: None for a batch, or in its list);
    ``rows`` are their positions in its input and ``returned_by`` what returned them (the scoring stage
    names the rows by comparison)."""

    def __init__(self, key: str, returned_by: str, rows: Sequence[int]) -> None:
        self.returned_by, self.rows = returned_by, list(rows)
        super().__init__(f"{key}: {returned_by} returned None for input rows {self.rows[:10]}")


# What the scoring stage does with an input longer than the RM reads (``reward_models.<rm>.overlong``):
# score it cut, leave it unscored (a counted skip), or fail.
OVERLONG = ("truncate", "skip", "error")


def overlong_policy(spec: Mapping[str, Any]) -> str:
    """An RM spec's ``overlong`` setting (default ``truncate``)."""
    return str(spec.get("overlong", OVERLONG[0]))


@dataclass(frozen=True)
class LengthCheck:
    """Which inputs an RM cuts at its token limit, before scoring.

    ``cut`` has one flag per (prompt, response), or is None when the backend cannot tell (a black-box
    ``python`` RM, a server that tokenises for itself): unknown, not "nothing cut". ``limit`` is the
    token limit checked against (None: none known); ``policy`` the RM's ``overlong`` setting (None: the
    backend has none).
    """

    cut: list[bool] | None
    limit: int | None
    policy: str | None

    @classmethod
    def unknown(cls) -> LengthCheck:
        """A backend that cannot see the RM's tokens."""
        return cls(cut=None, limit=None, policy=None)


class RewardModelBackend:
    """Base of the RM backends: what the workflow must know about a backend, with the defaults.

    A backend subclasses this, implements ``__init__(name, spec, **artifacts)`` and ``score``, overrides
    what differs below, and registers with ``@rm_backends.register("<name>")``.
    """

    conda_env = "scoring"  # envs/<conda_env>.yaml runs its scoring jobs
    exact_token_ids = False  # scores exact token ids (token scans use the RM's own vocabulary)
    own_tokenizer = False  # its spec may name the RM's tokenizer (model or tokenizer): the token vocabulary
    artifacts: tuple[str, ...] = ()  # files from earlier rules it needs (keys of paths.RM_ARTIFACTS)
    # The sentence encoder it embeds texts with, if any: where it is the distances' encoder, a scoring job
    # gets the dataset's text embeddings (``embeddings=``) and looks texts up instead of encoding them.
    sentence_encoder: str | None = None
    # JSON-schema rules of its own spec keys (a plugin's; the built-ins' keys are in config/schema.yaml)
    spec_schema: ClassVar[dict[str, Any]] = {}

    @staticmethod
    def gpus(spec: dict[str, Any]) -> int:
        """GPUs one scoring job of this RM asks the scheduler for (``resources: gpu``)."""
        return 0

    @staticmethod
    def hub_refs(name: str, spec: dict[str, Any]) -> list[Any]:
        """The hub downloads this RM needs (``rmexplain.hub.HubRef``; None entries are skipped)."""
        return []

    @staticmethod
    def check_spec(name: str, spec: dict[str, Any]) -> None:
        """Raise ``ConfigError`` naming ``reward_models.<name>.<key>`` for a wrong spec (config check)."""

    @staticmethod
    def code_files(spec: dict[str, Any]) -> list[Path]:
        """The files of the RM's own code (the provenance record keeps their sha256); none for a model
        whose identity is a hub commit, a bundled package or a server."""
        return []

    def score(self, prompts: Sequence[str], responses: Sequence[str]) -> list[float]:
        """Rewards r(x, y), one per pair, in input order."""
        raise NotImplementedError

    def length_check(self, prompts: Sequence[str], responses: Sequence[str]) -> LengthCheck:
        """Which pairs this RM would cut at its token limit; the default: it cannot tell."""
        return LengthCheck.unknown()


rm_backends: Registry[type[RewardModelBackend]] = Registry(
    "reward_models.<rm>.backend",
    {
        "python": "rmexplain.score.python_backend",
        "demo": "rmexplain.score.demo",
        "transformers": "rmexplain.score.hf",
        "vllm": "rmexplain.score.vllm_backend",
        "remote": "rmexplain.score.remote",
        "planted": "rmexplain.score.planted",
    },
    group="rmexplain.reward_models",
    error=ScoringError,
)


def backend_of(spec: dict[str, Any]) -> type[RewardModelBackend]:
    """The registered backend class of an RM spec."""
    return rm_backends.get(spec.get("backend"))


def build_scorer(name: str, spec: dict[str, Any], **artifacts: Any) -> RewardModelBackend:
    """Build the scorer for RM ``name`` from its config spec.

    ``artifacts`` carries files produced by earlier rules (e.g. ``head=`` for the demo RMs).
    """
    return backend_of(spec)(name=name, spec=spec, **artifacts)


def gpus_needed(spec: dict[str, Any]) -> int:
    """GPUs one scoring job of this RM asks the scheduler for (``resources: gpu``)."""
    return backend_of(spec).gpus(spec)


def callable_file(reference: str) -> Path | None:
    """The file defining ``"package.module:function"`` or ``"path/to/file.py:function"`` (None for a
    module without a file), found without running it."""
    module_name = reference.partition(":")[0]
    if module_name.endswith(".py"):
        return Path(module_name).resolve()
    found = importlib.util.find_spec(module_name)
    return Path(found.origin) if found is not None and found.has_location and found.origin else None


def load_callable(reference: str) -> Callable[..., Any]:
    """Resolve ``"package.module:function"`` or ``"path/to/file.py:function"`` (relative to the working
    directory) to the callable; ``ScoringError`` naming the reference when it cannot (no file, an import
    or the module's own code failing, no such name, not callable)."""
    module_name, sep, attr = reference.partition(":")
    if not sep or not attr:
        raise ScoringError(f"{reference!r} is not of the form 'module:function' or 'file.py:function'")
    if module_name.endswith(".py") and not Path(module_name).is_file():
        raise ScoringError(f"{reference!r}: file {Path(module_name)} does not exist (in {Path.cwd()})")
    try:
        module = _import(module_name)
    except Exception as err:  # the user's module: its own error, named with the reference
        raise ScoringError(
            f"{reference!r}: importing {module_name} raised {type(err).__name__}: {err}"
        ) from err
    found = getattr(module, attr, None)
    if found is None:
        raise ScoringError(f"{reference!r}: {module_name!r} has no attribute {attr!r}")
    if not callable(found):
        raise ScoringError(f"{reference!r}: {attr!r} is a {type(found).__name__}, not a function")
    return found


def _import(module_name: str) -> Any:
    """A module by name, or a ``.py`` file run as a module."""
    if not module_name.endswith(".py"):
        return importlib.import_module(module_name)
    path = Path(module_name)
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module
