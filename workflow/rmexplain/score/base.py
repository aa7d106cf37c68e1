"""The scoring interface and the backend registry.

A backend is a class with ``score(prompts, responses) -> list[float]`` built from one reward-model
spec (a dict from ``config["reward_models"][name]``). Backends register by name, so a new RM family
is one new class and one ``@register_backend("name")`` line.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Scorer(Protocol):
    """Anything that maps (prompt, response) pairs to scalar rewards."""

    def score(self, prompts: Sequence[str], responses: Sequence[str]) -> list[float]:
        """Rewards r(x, y), one per pair, in input order."""
        ...


BackendFactory = Callable[..., Scorer]
_BACKENDS: dict[str, BackendFactory] = {}
# Backends live in modules that import heavy libraries; they are imported on first use.
_BACKEND_MODULES: dict[str, str] = {
    "python": "rmexplain.score.python_backend",
    "demo": "rmexplain.score.demo",
    "transformers": "rmexplain.score.hf",
    "vllm": "rmexplain.score.vllm_backend",
    "remote": "rmexplain.score.remote",
}


class ScoringError(RuntimeError):
    """A reward model could not be built or could not score its inputs."""


def register_backend(name: str) -> Callable[[BackendFactory], BackendFactory]:
    """Class decorator: make a scorer class available as ``backend: <name>`` in config."""

    def decorator(factory: BackendFactory) -> BackendFactory:
        _BACKENDS[name] = factory
        return factory

    return decorator


def backend_names() -> list[str]:
    """Names accepted as ``backend`` in a reward-model spec."""
    return sorted(set(_BACKENDS) | set(_BACKEND_MODULES))


def build_scorer(name: str, spec: dict[str, Any], **artifacts: Any) -> Scorer:
    """Build the scorer for RM ``name`` from its config spec.

    ``artifacts`` carries files produced by earlier rules (e.g. ``head=`` for the demo RMs).
    """
    backend = spec.get("backend")
    if backend not in _BACKENDS and backend in _BACKEND_MODULES:
        importlib.import_module(_BACKEND_MODULES[backend])
    if backend not in _BACKENDS:
        raise ScoringError(
            f"reward_models.{name}.backend: unknown backend {backend!r}; choose one of {backend_names()}"
        )
    return _BACKENDS[backend](name=name, spec=spec, **artifacts)


def gpus_needed(spec: dict[str, Any]) -> int:
    """GPUs one scoring job of this RM asks the scheduler for (``resources: gpu``).

    ``num_gpus`` wins when set (e.g. a ``device_map: auto`` model sharded over several GPUs). Otherwise:
    ``vllm`` always runs on GPUs, ``tensor_parallel_size`` of them; ``transformers`` asks for one unless
    ``device`` is ``cpu`` (``auto``, the default, prefers a GPU); ``remote``, ``python`` and ``demo`` ask
    for none (a remote server holds its own GPUs).
    """
    backend = spec.get("backend")
    if backend not in {"transformers", "vllm"}:
        return 0
    if spec.get("num_gpus") is not None:
        return int(spec["num_gpus"])
    if backend == "vllm":
        return int(spec.get("tensor_parallel_size", 1))
    return 0 if str(spec.get("device", "auto")).startswith("cpu") else 1


def load_callable(reference: str) -> Callable[..., Any]:
    """Resolve ``"package.module:function"`` or ``"path/to/file.py:function"`` to the callable."""
    module_name, sep, attr = reference.partition(":")
    if not sep or not attr:
        raise ScoringError(f"{reference!r} is not of the form 'module:function' or 'file.py:function'")
    if module_name.endswith(".py"):
        from pathlib import Path

        path = Path(module_name)
        if not path.is_file():
            raise ScoringError(f"{reference!r}: file {path} does not exist")
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(module_name)
        except ImportError as err:
            raise ScoringError(f"{reference!r}: cannot import {module_name!r}: {err}") from err
    try:
        return getattr(module, attr)
    except AttributeError as err:
        raise ScoringError(f"{reference!r}: {module_name!r} has no attribute {attr!r}") from err
