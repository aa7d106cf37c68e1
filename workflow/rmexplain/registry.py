"""One generic registry for everything the config names by a string: RM backends, LLM backends, methods.

Modelled on lm-evaluation-harness: a registered object is one class or function, registered under one or
more names by a decorator in its own module; a lazy name -> module map imports that module on first use,
so heavy libraries load only for the backends a run uses. What the workflow must know about an entry
(GPUs for a spec, conda environment, hub references, whether it calls an LLM, ...) is declared on the
entry itself, as class attributes or as keyword arguments of ``register``, never by branching on its name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Names -> registered objects, with declared properties and lazy imports.

    ``key`` is the config key that names an entry (for error messages); ``modules`` maps each built-in
    name to the module that registers it; ``defaults`` are the declared properties an entry has unless it
    sets them itself (as a class attribute or a ``register`` keyword); ``error`` is raised for unknown names.
    """

    def __init__(
        self,
        key: str,
        modules: Mapping[str, str],
        *,
        defaults: Mapping[str, Any] | None = None,
        error: type[Exception] = KeyError,
    ) -> None:
        self.key = key
        self._modules = dict(modules)
        self._defaults = dict(defaults or {})
        self._error = error
        self._entries: dict[str, T] = {}

    def register(self, *names: str, **declared: Any) -> Callable[[T], T]:
        """Decorator: register the object under ``names``, setting the ``declared`` properties on it."""

        def decorator(obj: T) -> T:
            for attr, value in self._defaults.items():
                if attr not in declared and not hasattr(obj, attr):
                    setattr(obj, attr, value)
            for attr, value in declared.items():
                setattr(obj, attr, value)
            for name in names:
                self._entries[name] = obj
            return obj

        return decorator

    def names(self) -> list[str]:
        """Every name a config may use: registered ones and the built-ins of the lazy map."""
        return sorted(set(self._entries) | set(self._modules))

    def builtins(self) -> list[str]:
        """The names of the lazy map: what the project ships (the config schema's enum lists these)."""
        return sorted(self._modules)

    def get(self, name: str) -> T:
        """The entry registered as ``name``, importing its module on first use."""
        if name not in self._entries and name in self._modules:
            importlib.import_module(self._modules[name])
        if name not in self._entries:
            raise self._error(f"{self.key}: unknown name {name!r}; choose one of {self.names()}")
        return self._entries[name]
