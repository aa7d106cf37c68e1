"""One record per dataset source (``datasets.<name>.source``): what a spec needs, which local files it is
read from, which hub dataset it downloads, and how its pairs are read. The config check, the design, the
plan and the sample stage all ask these records; nothing else branches on a source's name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rmexplain import paths
from rmexplain.data.readers import (
    Pair,
    SkipCounter,
    read_embedded,
    read_helpsteer2,
    read_hh_rlhf,
    read_pairs_file,
)
from rmexplain.settings import ConfigError

Spec = dict[str, Any]
HH_RLHF = "Anthropic/hh-rlhf"
HELPSTEER2 = "nvidia/HelpSteer2"


def load_hub_records(spec: Spec, hub_id: str) -> Any:
    """A split of a hub dataset (or a local dataset directory with the same layout) via ``datasets``."""
    from datasets import load_dataset  # heavy: only for hub sources

    kwargs: dict[str, Any] = {"split": spec.get("split", "train")}
    if spec.get("data_dir"):
        kwargs["data_dir"] = spec["data_dir"]
    if spec.get("revision"):
        kwargs["revision"] = spec["revision"]
    return load_dataset(spec.get("hub_id", hub_id), **kwargs)


@dataclass(frozen=True)
class DataSource:
    """A kind of dataset: ``required`` spec keys (with a hint of their values); ``hub_id`` the default hub
    dataset (None: local data); ``read(spec, skips)`` every usable pair; ``files(spec)`` the local files it
    reads (rule inputs, so an edit reruns the sampling); ``check_files(key, spec)`` their config check."""

    name: str
    read: Callable[[Spec, SkipCounter], list[Pair]]
    required: dict[str, str] = field(default_factory=dict)
    hub_id: str | None = None
    files: Callable[[Spec], list[str]] = lambda spec: []
    check_files: Callable[[str, Spec], None] = lambda key, spec: None

    def hub_dataset(self, spec: Spec) -> str | None:
        """The hub dataset a spec downloads (None for local data or a local dataset directory)."""
        if self.hub_id is None:
            return None
        hub_id = spec.get("hub_id", self.hub_id)
        return None if Path(hub_id).exists() else hub_id

    def check(self, key: str, spec: Spec) -> None:
        """Raise ``ConfigError`` naming ``key`` for a missing key or local file."""
        for name, hint in self.required.items():
            if name not in spec:
                raise ConfigError(f"{key}.{name} is required for source {self.name!r} ({hint})")
        self.check_files(key, spec)


def _check_pairs_file(key: str, spec: Spec) -> None:
    path = spec["path"]
    if not Path(path).is_file():
        raise ConfigError(f"{key}.path: file {path!r} does not exist")
    if Path(path).suffix not in {".jsonl", ".parquet"}:
        raise ConfigError(f"{key}.path: {path!r} must end in .jsonl or .parquet")


def _hh_rlhf(spec: Spec, skips: SkipCounter) -> list[Pair]:
    return list(read_hh_rlhf(load_hub_records(spec, HH_RLHF), skips))


def _helpsteer2(spec: Spec, skips: SkipCounter) -> list[Pair]:
    records = load_hub_records(spec, HELPSTEER2)
    return list(read_helpsteer2(records, skips, spec.get("preference_filter", "greater_on_all")))


SOURCES: dict[str, DataSource] = {
    source.name: source
    for source in (
        DataSource(
            "embedded",
            read=lambda spec, skips: read_embedded(spec["part"], split="explain"),
            required={"part": "helpful or harmless"},
            files=lambda spec: [paths.embedded_data_file(spec["part"])],
        ),
        DataSource(
            "file",
            read=lambda spec, skips: list(read_pairs_file(spec["path"], skips)),
            required={"path": "a .jsonl or .parquet file of prompt, chosen, rejected"},
            files=lambda spec: [spec["path"]],
            check_files=_check_pairs_file,
        ),
        DataSource("hh-rlhf", read=_hh_rlhf, required={"data_dir": "e.g. harmless-base"}, hub_id=HH_RLHF),
        DataSource("helpsteer2", read=_helpsteer2, hub_id=HELPSTEER2),
    )
}


def source_of(spec: Spec) -> DataSource:
    """The record of a dataset spec's ``source``."""
    return SOURCES[spec["source"]]
