"""A persistent, content-addressed store of LLM completions, shared by all jobs of a project.

Keys are sha256 hashes of (model, messages, sampling settings, template version, variant); values are
the completion text, its token counts and the model name the server reported (``served_model``: the
snapshot behind an alias such as ``gpt-4o``; null for entries stored before it was recorded). The store
is a ``diskcache.Cache`` — SQLite in WAL mode, safe for concurrent readers and writers across processes —
kept outside ``results/`` (in ``llm.cache_dir``) so that deleting results, editing config or a crash never
costs a paid call
twice. Each completion is written as soon as it arrives.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import diskcache

from rmexplain.llm.base import ChatRequest, Completion

KEY_VERSION = 1  # bump when the key layout changes


def request_key(model_id: str, request: ChatRequest) -> str:
    """Content address of a request: every field that can change the answer, canonically encoded."""
    payload = {
        "v": KEY_VERSION,
        "model": model_id,
        "messages": [list(m) for m in request.messages],
        "sampling": request.sampling.as_dict(),
        "template": request.template,
        "variant": request.variant,
    }
    encoded = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(encoded.encode()).hexdigest()


class CompletionCache:
    """Completion text and usage by request key (see ``request_key``)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        # eviction_policy "none": never drop an entry (the default policy culls at 1 GB).
        self._cache = diskcache.Cache(
            str(self.directory), eviction_policy="none", sqlite_journal_mode="wal", timeout=120
        )

    def get(self, key: str) -> Completion | None:
        """The stored completion for ``key``, or None."""
        value = self._cache.get(key)
        if value is None:
            return None
        record = json.loads(value)
        return Completion(
            text=record["text"],
            prompt_tokens=record["prompt_tokens"],
            completion_tokens=record["completion_tokens"],
            finish_reason=record.get("finish_reason"),
            served_model=record.get("served_model"),
        )

    def put(self, key: str, model_id: str, completion: Completion) -> None:
        """Store a successful completion (failed ones are never cached)."""
        if not completion.ok:
            raise ValueError("only successful completions are cached")
        record: dict[str, Any] = {
            "model": model_id,
            "text": completion.text,
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
            "finish_reason": completion.finish_reason,
            "served_model": completion.served_model,
            "stored_at": time.time(),
        }
        self._cache.set(key, json.dumps(record, ensure_ascii=False))

    def __contains__(self, key: str) -> bool:
        return key in self._cache

    def __len__(self) -> int:
        return len(self._cache)

    def close(self) -> None:
        self._cache.close()
