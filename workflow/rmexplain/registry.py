"""One generic registry for everything the config names by a string: RM backends, LLM backends, methods.

Modelled on lm-evaluation-harness: a registered object is one class or function, registered under one or
more names by a decorator in its own module; a lazy name -> module map imports that module on first use,
so heavy libraries load only for the backends a run uses. What the workflow must know about an entry
(GPUs for a spec, conda environment, hub references, whether it calls an LLM, ...) is declared on the
entry itself, as class attributes or as keyword arguments of ``register``, never by branching on its name.

Other packages add entries without editing this project, the way pytest plugins do: a Python entry point in
the registry's ``group`` (``rmexplain.reward_models``, ``rmexplain.llm_backends``,
``rmexplain.perturb_methods``) whose name is the config name and whose value is the object
(``"my_pkg.module:MyBackend"``). Loading it imports its module; an object that did not register itself
there is registered under the entry point's name. A name registered twice is an error.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class RegistryError(ValueError):
    """Two entries claim one name, or a plugin cannot be loaded; the message names both."""


class Registry(Generic[T]):
    """Names -> registered objects, with declared properties, lazy imports and entry-point plugins.

    ``key`` is the config key that names an entry (for error messages); ``modules`` maps each built-in
    name to the module that registers it; ``group`` is the entry-point group of plugins; ``defaults`` are
    the declared properties an entry has unless it sets them itself (as a class attribute or a ``register``
    keyword); ``error`` is raised for unknown names.
    """

    def __init__(
        self,
        key: str,
        modules: Mapping[str, str],
        *,
        group: str,
        defaults: Mapping[str, Any] | None = None,
        error: type[Exception] = KeyError,
    ) -> None:
        self.key = key
        self.group = group
        self._modules = dict(modules)
        self._defaults = dict(defaults or {})
        self._error = error
        self._entries: dict[str, T] = {}
        self._plugins: dict[str, EntryPoint] | None = None

    def register(self, *names: str, **declared: Any) -> Callable[[T], T]:
        """Decorator: register the object under ``names``, setting the ``declared`` properties on it."""

        def decorator(obj: T) -> T:
            for name in names:
                self._claim(name, obj)
            for attr, value in self._defaults.items():
                if attr not in declared and not hasattr(obj, attr):
                    setattr(obj, attr, value)
            for attr, value in declared.items():
                setattr(obj, attr, value)
            for name in names:
                self._entries[name] = obj
            return obj

        return decorator

    def _claim(self, name: str, obj: T) -> None:
        """Refuse a name that another object holds (re-registering the same object is harmless)."""
        held = self._entries.get(name)
        if held is not None and held is not obj:
            raise RegistryError(
                f"{self.key}: {name!r} is registered twice, by {_where(held)} and by {_where(obj)}"
            )

    def plugins(self, *, refresh: bool = False) -> list[str]:
        """Names that installed packages register through the entry-point group (read once; ``refresh``
        reads the installed packages again)."""
        if self._plugins is None or refresh:
            found = {ep.name: ep for ep in entry_points(group=self.group)}
            clash = sorted(set(found) & set(self._modules))
            if clash:
                raise RegistryError(
                    f"{self.key}: plugin(s) {clash} of entry-point group {self.group!r} take built-in names"
                )
            self._plugins = found
        return sorted(self._plugins)

    def names(self) -> list[str]:
        """Every name a config may use: registered ones, the built-ins of the lazy map and the plugins."""
        return sorted(set(self._entries) | set(self._modules) | set(self.plugins()))

    def builtins(self) -> list[str]:
        """The names of the lazy map: what the project ships."""
        return sorted(self._modules)

    def get(self, name: str) -> T:
        """The entry registered as ``name``, importing its module or plugin on first use."""
        if name not in self._entries and name in self._modules:
            importlib.import_module(self._modules[name])
        if name not in self._entries and name in self.plugins():
            self._load_plugin(name)
        if name not in self._entries:
            raise self._error(f"{self.key}: unknown name {name!r}; choose one of {self.names()}")
        return self._entries[name]

    def _load_plugin(self, name: str) -> None:
        point = (self._plugins or {})[name]
        try:
            obj = point.load()
        except Exception as err:  # any import error of a third-party package: name the plugin
            raise RegistryError(
                f"{self.key}: plugin {name!r} ({point.value}) cannot be loaded: {err}"
            ) from err
        if name not in self._entries:
            self.register(name)(obj)


def _where(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"
