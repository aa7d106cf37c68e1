"""One record per dataset source (``datasets.<name>.source``): what a spec needs, which local files it is
read from, which hub dataset it downloads, and how its pairs are read. The config check, the design, the
plan and the sample stage all ask these records; nothing else branches on a source's name.

Reading also records the data's origin (``results/data/<name>/origin.json``, for the provenance record): a
hub dataset's resolved commit (``datasets`` names its cache by the commit it downloaded) and fingerprint; the
sha256 of every local file read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from rmexplain import paths
from rmexplain.data.readers import (
    Pair,
    SkipCounter,
    read_embedded,
    read_helpsteer2,
    read_hh_rlhf,
    read_pairs_file,
)
from rmexplain.ids import file_sha256
from rmexplain.settings import ConfigError, relative_note

Spec = dict[str, Any]
Origin = dict[str, Any]  # what a source read (see ``load_hub_records`` and ``file_hashes``)
HH_RLHF = "Anthropic/hh-rlhf"
HELPSTEER2 = "nvidia/HelpSteer2"


def shown_path(path: str | Path) -> str:
    """A file's name in records: ``rmexplain/...`` for the package's own data, relative to the working
    directory below it, else as given (so a record does not depend on where the workflow is installed)."""
    resolved = Path(path).resolve()
    roots = ((Path(__file__).resolve().parents[1], Path("rmexplain")), (Path.cwd().resolve(), Path()))
    for root, prefix in roots:
        if resolved.is_relative_to(root):
            return str(prefix / resolved.relative_to(root))
    return str(path)


def file_hashes(files: list[str]) -> dict[str, str]:
    """``{shown_path: sha256}`` of local files, in path order."""
    return dict(sorted((shown_path(path), file_sha256(path)) for path in files))


def load_hub_records(spec: Spec, hub_id: str, origin: Origin) -> Any:
    """A split of a hub dataset (or a local dataset directory with the same layout) via ``datasets``.

    Fills ``origin``: ``hub_id``, the requested ``revision``, the ``commit`` the download resolved to (the
    builder's hash, which ``datasets`` sets to the hub commit; null for a local directory, whose data files
    are hashed into ``files`` instead), the ``config`` and ``split`` read and the dataset's ``fingerprint``.
    """
    from datasets import load_dataset_builder  # heavy: only for hub sources

    name, split = spec.get("hub_id", hub_id), spec.get("split", "train")
    kwargs: dict[str, Any] = {}
    if spec.get("data_dir"):
        kwargs["data_dir"] = spec["data_dir"]
    if spec.get("revision"):
        kwargs["revision"] = spec["revision"]
    # What load_dataset does, keeping the builder: it knows the commit it downloaded.
    builder = load_dataset_builder(name, **kwargs)
    builder.download_and_prepare()
    records = builder.as_dataset(split=split)
    local = Path(name).exists()
    data_files = (builder.config.data_files or {}).get(split, []) if local else []
    origin.update(
        hub_id=None if local else name,
        path=name if local else None,
        revision=spec.get("revision"),
        commit=None if local else builder.hash,
        config=builder.config.name,
        split=split,
        fingerprint=records._fingerprint,
        files=file_hashes(data_files),
    )
    return records


@dataclass(frozen=True)
class DataSource:
    """A kind of dataset: ``required`` spec keys (with a hint of their values); ``hub_id`` the default hub
    dataset (None: local data); ``read(spec, skips, origin)`` every usable pair (a hub source records what
    it downloaded in ``origin``); ``files(spec)`` the local files it reads (rule inputs, so an edit reruns
    the sampling; hashed into the origin); ``check_files(key, spec)`` their config check; ``rows(spec)`` how
    many rows it holds before any is skipped, where that is cheap to count (None: not before downloading)."""

    name: str
    read: Callable[[Spec, SkipCounter, Origin], list[Pair]]
    required: dict[str, str] = field(default_factory=dict)
    hub_id: str | None = None
    files: Callable[[Spec], list[str]] = lambda spec: []
    check_files: Callable[[str, Spec], None] = lambda key, spec: None
    rows: Callable[[Spec], int | None] = lambda spec: None

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
    if Path(path).is_dir():
        raise ConfigError(f"{key}.path: {path!r} is a directory; name the JSONL or Parquet file in it")
    if not Path(path).is_file():
        raise ConfigError(f"{key}.path: file {path!r} does not exist{relative_note(path)}")
    if Path(path).suffix not in {".jsonl", ".parquet"}:
        raise ConfigError(f"{key}.path: {path!r} must end in .jsonl or .parquet")


def _file_rows(spec: Spec) -> int:
    """Rows of a pairs file: its non-blank lines (JSONL) or the row count its metadata holds (Parquet)."""
    path = Path(spec["path"])
    if path.suffix == ".parquet":
        return pl.scan_parquet(path).select(pl.len()).collect().item()
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())


def _hh_rlhf(spec: Spec, skips: SkipCounter, origin: Origin) -> list[Pair]:
    return list(read_hh_rlhf(load_hub_records(spec, HH_RLHF, origin), skips))


def _helpsteer2(spec: Spec, skips: SkipCounter, origin: Origin) -> list[Pair]:
    records = load_hub_records(spec, HELPSTEER2, origin)
    return list(read_helpsteer2(records, skips, spec.get("preference_filter", "greater_on_all")))


SOURCES: dict[str, DataSource] = {
    source.name: source
    for source in (
        DataSource(
            "embedded",
            read=lambda spec, skips, origin: read_embedded(spec["part"], split="explain"),
            required={"part": "helpful or harmless"},
            files=lambda spec: [paths.embedded_data_file(spec["part"])],
            rows=lambda spec: len(read_embedded(spec["part"], split="explain")),
        ),
        DataSource(
            "file",
            read=lambda spec, skips, origin: list(read_pairs_file(spec["path"], skips)),
            required={"path": "a .jsonl or .parquet file of prompt, chosen, rejected"},
            files=lambda spec: [spec["path"]],
            check_files=_check_pairs_file,
            rows=_file_rows,
        ),
        DataSource("hh-rlhf", read=_hh_rlhf, required={"data_dir": "e.g. harmless-base"}, hub_id=HH_RLHF),
        DataSource("helpsteer2", read=_helpsteer2, hub_id=HELPSTEER2),
    )
}


def source_of(spec: Spec) -> DataSource:
    """The record of a dataset spec's ``source``."""
    return SOURCES[spec["source"]]
