"""Checks of the configuration that JSON schema cannot express, with messages naming the key.

``workflow/rules/common.smk`` runs ``validate`` (the JSON schema, which also fills defaults) and then
``check_config``, so a wrong key or value stops the run before any job starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rmexplain.attributes import PAPER_ATTRIBUTES

Config = dict[str, Any]


class ConfigError(ValueError):
    """A configuration value is wrong; the message names the key."""


def attributes(config: Config) -> dict[str, str]:
    """Attribute name -> description; the paper's 15 unless ``attributes`` is set."""
    return dict(config.get("attributes") or PAPER_ATTRIBUTES)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


def _check_datasets(config: Config) -> None:
    for name, spec in config["datasets"].items():
        source = spec["source"]
        key = f"datasets.{name}"
        if source == "embedded":
            _require("part" in spec, f"{key}.part is required for source 'embedded' (helpful or harmless)")
        if source == "file":
            _require("path" in spec, f"{key}.path is required for source 'file'")
            _require(Path(spec["path"]).is_file(), f"{key}.path: file {spec['path']!r} does not exist")
            _require(
                Path(spec["path"]).suffix in {".jsonl", ".parquet"},
                f"{key}.path: {spec['path']!r} must end in .jsonl or .parquet",
            )
        if source == "hh-rlhf":
            _require("data_dir" in spec, f"{key}.data_dir is required for hh-rlhf (e.g. harmless-base)")


def _check_reward_models(config: Config) -> None:
    for name, spec in config["reward_models"].items():
        key = f"reward_models.{name}"
        backend = spec["backend"]
        if backend == "demo":
            _require(
                spec.get("train_part") in {"helpful", "harmless"},
                f"{key}.train_part must be helpful or harmless",
            )
        if backend == "python":
            _require(":" in str(spec.get("callable", "")), f"{key}.callable must be 'module:function'")
        if backend in {"transformers", "vllm", "remote"}:
            from rmexplain.score.base import ScoringError
            from rmexplain.score.specs import parse_spec

            try:
                parse_spec(name, spec)
            except ScoringError as err:
                raise ConfigError(str(err)) from None


def _check_perturb(config: Config) -> None:
    perturb = config["perturb"]
    rms = set(config["reward_models"])
    for rm in perturb.get("shared_rms") or []:
        _require(rm in rms, f"perturb.shared_rms: {rm!r} is not a key of reward_models {sorted(rms)}")
    if "file" in perturb["methods"]:
        path = (perturb.get("file") or {}).get("path")
        _require(bool(path), "perturb.file.path is required when perturb.methods includes 'file'")
        _require(Path(path).is_file(), f"perturb.file.path: file {path!r} does not exist")


def check_config(config: Config) -> None:
    """Raise ConfigError naming the first wrong key; fill ``attributes`` with the default list."""
    _check_datasets(config)
    _check_reward_models(config)
    _check_perturb(config)
    config.setdefault("attributes", dict(PAPER_ATTRIBUTES))
