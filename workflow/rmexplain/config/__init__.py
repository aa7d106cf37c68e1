"""The one entry point for configuration: ``check(config)`` validates a config and fills its defaults.

``check`` applies the JSON schema shipped in this package (``schema.yaml``, which also fills defaults; the
names of RM backends, LLM backends and perturbation methods are filled in from their registries, plugins
included) and then every section's cross-key checks (``rmexplain.config.checks``).
``workflow/rules/common.smk`` and the ``rmexplain`` command both call it; any wrong key or value
raises :class:`ConfigError` naming the key, before a job starts. ``rmexplain.design.Design`` is what
a checked config means.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rmexplain.config.checks import check_sections
from rmexplain.config.schema import load_schema, validate_schema
from rmexplain.settings import Config, ConfigError, schema_defaults, section
from rmexplain.yaml_unique import load_yaml

__all__ = [
    "Config",
    "ConfigError",
    "check",
    "load",
    "load_schema",
    "schema_defaults",
    "section",
    "validate_schema",
]


def check(config: Config, files: Sequence[str | Path] = ()) -> Config:
    """Validate ``config`` in place (schema, defaults, cross-key checks) and return it; ``files``, the YAML
    files it was read from, let a schema error name the file and line of the key."""
    if not isinstance(config, dict):
        raise ConfigError(f"the config must be a mapping of sections, got {type(config).__name__}")
    validate_schema(config, files)
    check_sections(config, files)
    return config


def load(path: str | Path) -> Config:
    """Read a YAML config file (a key given twice is an error naming it and the file) and :func:`check` it."""
    return check(load_yaml(path), [path])
