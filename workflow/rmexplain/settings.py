"""The plain types every layer shares about configuration: a config mapping and the error naming its key.

A leaf: it imports nothing of the project, so backends, methods and the design object can raise
``ConfigError`` without importing the config check (``rmexplain.config``), which imports them.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import yaml

Config = dict[str, Any]
SCHEMA_FILE = Path(__file__).parent / "config" / "schema.yaml"  # read as a file: no import of the check
# PyYAML's safe loader, on libyaml's C parser where PyYAML was built with it: the same documents, faster
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ConfigError(ValueError):
    """A configuration value is wrong; the message names the key."""


def section(config: Config, name: str) -> Config:
    """A top-level config section (empty when absent; the schema fills its defaults)."""
    return config.get(name) or {}


@functools.cache
def schema() -> Config:
    """The config's JSON schema as shipped (``rmexplain.config.load_schema`` adds the registered names)."""
    return yaml.load(SCHEMA_FILE.read_text(encoding="utf-8"), Loader=SAFE_LOADER)


def _filled(node: Config) -> Any:
    """The value the schema's defaults give a key: its ``default``, with the defaults of its properties
    filled in where it is an object (as the validator fills them)."""
    value = copy.deepcopy(node.get("default"))
    if isinstance(value, dict):
        for key, child in (node.get("properties") or {}).items():
            if key not in value and "default" in child:
                value[key] = _filled(child)
    return value


def schema_defaults(*keys: str) -> Any:
    """The defaults of one config key, by its path of property names (``"perturb", "random"``): what a
    checked config holds there when the key is not given. The one source of the library's defaults."""
    node = schema()
    for key in keys:
        node = node["properties"][key]
    return _filled(node)


def relative_note(path: str | Path) -> str:
    """For a relative path: where it was looked for (a config's paths resolve from the working directory,
    where snakemake or rmexplain runs, not from the config file's directory)."""
    if Path(path).is_absolute():
        return ""
    return f" (a relative path resolves from the working directory, {Path.cwd()}, not from the config file's)"
