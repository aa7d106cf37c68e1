"""Checks of the ``analysis`` config section that JSON schema cannot express (messages name the key)."""

from __future__ import annotations

from typing import Any

from rmexplain.analysis.probes import probes_from_config
from rmexplain.analysis.sensitivity import AnalysisError
from rmexplain.config import ConfigError


def _known(values: list[str], allowed: set[str], key: str, what: str) -> None:
    for value in values:
        if value not in allowed:
            raise ConfigError(f"{key}: {value!r} is not {what} {sorted(allowed)}")


def check_analysis_config(config: dict[str, Any]) -> None:
    """Raise ConfigError naming the first wrong ``analysis.*`` key."""
    section = config.get("analysis") or {}
    rms = set(config["reward_models"])
    methods = section.get("methods") or []
    _known(methods, set(config["perturb"]["methods"]), "analysis.methods", "one of perturb.methods")
    examples = section.get("examples") or {}
    _known(examples.get("rms") or [], rms, "analysis.examples.rms", "a key of reward_models")
    for i, pair in enumerate(examples.get("pairs") or []):
        _known(list(pair), rms, f"analysis.examples.pairs[{i}]", "a key of reward_models")
        if pair[0] == pair[1]:
            raise ConfigError(f"analysis.examples.pairs[{i}]: a pair needs two different RMs, got {pair}")
    attributes = set(config.get("attributes") or {})
    for name, spec in (section.get("probes") or {}).items():
        if attributes:
            _known(
                spec.get("attributes") or [], attributes, f"analysis.probes.{name}.attributes", "an attribute"
            )
    try:
        for probe in probes_from_config(section.get("probes")):
            probe.compile()
    except AnalysisError as err:
        raise ConfigError(str(err)) from None
