"""The per-RM score store: every reward an RM gave, kept outside ``results/`` so that no rerun asks again.

One store per RM identity under ``scoring.cache_dir`` (``<identity>/``, a ``diskcache.Cache``), one row per
text: ``text_id`` (``rmexplain.ids.text_id`` of the prompt and response) → the reward, whether the text was
over the RM's token limit, and the limit. The identity (``rm_identity``) is what decides the RM's scores: its
spec without the keys that only say where and how fast it runs (``EXECUTION_KEYS``: device, batch sizes, a
server's concurrency and retries, the reference and expectations), with the digests of its files — a demo or
planted RM's trained head and scale, a python RM's callable file, a hub model's repository and commit, a
local model directory's file names, sizes and modification times. A change to any of these is another RM
and another store; a python RM's callable is identified by its own file only, not by the modules it imports,
and a remote server by its URL and model, not by what it serves (delete the store, or set
``scoring.cache_dir: null``, when either changes underneath). Jobs read and write one store at once; a row is
written once (the first job to score a text keeps its reward).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import diskcache

from rmexplain.ids import canonical_json, file_sha256
from rmexplain.score.base import backend_of

# Spec keys that say where and how fast an RM runs, not what it computes: left out of its identity.
EXECUTION_KEYS = frozenset(
    {
        "device",
        "device_map",
        "num_gpus",
        "batch_size",
        "max_batch_tokens",
        "tensor_parallel_size",
        "gpu_memory_utilization",
        "max_num_seqs",
        "concurrency",
        "max_retries",
        "retry_backoff_s",
        "timeout_s",
        "api_key_env",
        "reference",
        "expect",
    }
)
# Artifacts that are not the RM: texts' embeddings the demo RMs look up (made from the texts themselves).
LOOKUP_ARTIFACTS = frozenset({"embeddings"})
Row = tuple[float | None, bool | None, int | None]  # reward, truncated, max_length


def rm_identity(spec: Mapping[str, Any], artifacts: Mapping[str, Any], hub_markers: Sequence[str]) -> str:
    """sha256 of what decides an RM's scores: ``spec`` less ``EXECUTION_KEYS`` (a planted RM's
    ``base_spec`` likewise), the sha256 of its artifact files (not the lookup embeddings) and its backend's
    code files, the repository and commit of each hub marker, and a local model directory's files."""
    record = {
        "spec": _identifying(spec),
        "artifacts": {
            name: [file_sha256(f) for f in _files(value)]
            for name, value in sorted(artifacts.items())
            if name not in LOOKUP_ARTIFACTS
        },
        "code": [file_sha256(f) for f in backend_of(dict(spec)).code_files(dict(spec))],
        "hub": sorted(_hub_commit(marker) for marker in hub_markers),
        "local_model": _local_model(spec),
    }
    return hashlib.sha256(canonical_json(record).encode()).hexdigest()[:32]


def _identifying(spec: Mapping[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in spec.items() if k not in EXECUTION_KEYS}
    if isinstance(kept.get("base_spec"), Mapping):
        kept["base_spec"] = _identifying(kept["base_spec"])
    return kept


def _files(value: Any) -> list[str]:
    return [str(value)] if isinstance(value, str | Path) else [str(v) for v in value]


def _hub_commit(marker: str) -> list[str]:
    record = json.loads(Path(marker).read_text())
    return [str(record.get("repo_id")), str(record.get("commit"))]


def _local_model(spec: Mapping[str, Any]) -> list[list[Any]]:
    """(relative path, size, modification time) of every file of a ``model`` that is a local directory."""
    directory = Path(str(spec.get("model", ""))).expanduser()
    if not spec.get("model") or not directory.is_dir():
        return []
    files = sorted(p for p in directory.rglob("*") if p.is_file())
    return [[str(p.relative_to(directory)), p.stat().st_size, p.stat().st_mtime_ns] for p in files]


class ScoreStore:
    """The rewards one RM identity gave: a ``diskcache.Cache`` (SQLite in WAL mode, safe for jobs reading
    and writing at once, as the LLM cache is) in ``<directory>/<identity>/``, text_id → (reward, truncated,
    max_length)."""

    def __init__(self, directory: str | Path, identity: str) -> None:
        self.path = Path(directory) / identity
        self._cache = diskcache.Cache(
            str(self.path), eviction_policy="none", sqlite_journal_mode="wal", timeout=600
        )

    def get(self, text_ids: Sequence[str]) -> dict[str, Row]:
        """The stored rows of ``text_ids`` (those never scored are absent)."""
        found = {text: self._cache.get(text) for text in dict.fromkeys(text_ids)}
        return {text: tuple(row) for text, row in found.items() if row is not None}

    def put(self, rows: Iterable[tuple[str, float | None, bool | None, int | None]]) -> None:
        """Keep ``(text_id, reward, truncated, max_length)`` rows; a text stored already keeps its row."""
        with self._cache.transact():
            for text, *row in rows:
                self._cache.add(text, tuple(row))

    def __len__(self) -> int:
        return len(self._cache)


def open_store(
    directory: str | None, spec: Mapping[str, Any], artifacts: Mapping[str, Any], hub_markers: Sequence[str]
) -> ScoreStore | None:
    """The store of the RM ``spec`` in ``directory`` (``scoring.cache_dir``); None when that is null."""
    return None if directory is None else ScoreStore(directory, rm_identity(spec, artifacts, hub_markers))
