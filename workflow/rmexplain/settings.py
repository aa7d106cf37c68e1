"""The plain types every layer shares about configuration: a config mapping and the error naming its key.

A leaf: it imports nothing of the project, so backends, methods and the design object can raise
``ConfigError`` without importing the config check (``rmexplain.config``), which imports them.
"""

from __future__ import annotations

from typing import Any

Config = dict[str, Any]


class ConfigError(ValueError):
    """A configuration value is wrong; the message names the key."""


def section(config: Config, name: str) -> Config:
    """A top-level config section (empty when absent; the schema fills its defaults)."""
    return config.get(name) or {}
