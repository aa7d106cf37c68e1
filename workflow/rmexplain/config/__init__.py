"""The one entry point for configuration: ``check(config)`` validates a config and fills its defaults.

``check`` applies the JSON schema shipped in this package (``schema.yaml``, which also fills defaults) and
then every section's cross-key checks (``rmexplain.config.checks``). ``workflow/rules/common.smk`` and the
``rmexplain`` command both call it; any wrong key or value raises :class:`ConfigError` naming the key,
before a job starts.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

Config = dict[str, Any]


class ConfigError(ValueError):
    """A configuration value is wrong; the message names the key."""


def section(config: Config, name: str) -> Config:
    """A top-level config section (empty when absent; the schema fills its defaults)."""
    return config.get(name) or {}


def load_schema() -> Config:
    """The JSON schema as a mapping (e.g. to validate a sub-section such as a method variant's settings)."""
    import yaml

    return yaml.safe_load((resources.files(__name__) / "schema.yaml").read_text(encoding="utf-8"))


def validate_schema(config: Config) -> None:
    """Validate against the JSON schema and fill its defaults in place."""
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    with resources.as_file(resources.files(__name__) / "schema.yaml") as schema:
        try:
            validate(config, str(schema), set_default=True)
        except WorkflowError as err:
            raise ConfigError(f"the config does not match its schema: {err}") from None


def check(config: Config) -> Config:
    """Validate ``config`` in place (schema, defaults, cross-key checks) and return it."""
    from rmexplain.config.checks import check_sections

    if not isinstance(config, dict):
        raise ConfigError(f"the config must be a mapping of sections, got {type(config).__name__}")
    validate_schema(config)
    check_sections(config)
    return config


def load(path: str | Path) -> Config:
    """Read a YAML config file and :func:`check` it."""
    import yaml

    try:
        config = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise ConfigError(f"{path}: cannot read the config: {err}") from None
    return check(config)
