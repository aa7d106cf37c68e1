"""A persistent, content-addressed store of LLM completions, shared by all jobs of a project.

Keys are sha256 hashes of (model, messages, sampling settings, template version, variant); values are
the completion text, its token counts and the model name the server reported (``served_model``: the
snapshot behind an alias such as ``gpt-4o``; null for entries stored before it was recorded). The store
is a ``diskcache.Cache`` — SQLite in WAL mode, safe for concurrent readers and writers across processes —
kept outside ``results/`` (in ``llm.cache_dir``) so that deleting results, editing config or a crash never
costs a paid call
twice. Each completion is written as soon as it arrives.

``Claims`` keeps a paid call from being made twice by jobs running at once: before sending, a job claims the
keys of the requests it will send, in a second store beside the cache (``<llm.cache_dir>.claims``), and
releases each claim once its answer is stored (or failed). A job that finds a key claimed by another live
process does not send it: it waits and reads the answer from the cache when it lands, or claims and sends it
itself if the holder lets go without an answer or is gone (a process no longer running on this host; a
claim of another host's process is trusted for ``FOREIGN_CLAIM_S``).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import diskcache

from rmexplain.llm.base import ChatRequest, Completion

KEY_VERSION = 1  # bump when the key layout changes
FOREIGN_CLAIM_S = 3600.0  # how long a claim of another host's process is trusted (it cannot be asked)


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


def process_owner() -> str:
    """This process, as it holds claims and reservations: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def may_be_running(process: str) -> bool:
    """Whether the process ``host:pid`` may still be running: on this host, whether its pid is; on another
    host (a cluster job), always (it cannot be asked)."""
    host, _, pid = process.rpartition(":")
    if host and host != socket.gethostname():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def claims_dir(cache_dir: str | Path) -> Path:
    """The claims of the cache in ``cache_dir``: a store beside it."""
    directory = Path(cache_dir)
    return directory.parent / f"{directory.name}.claims"


class Claims:
    """Which process is sending which request right now, by request key (see the module)."""

    def __init__(self, cache_dir: str | Path) -> None:
        self._store = diskcache.Cache(
            str(claims_dir(cache_dir)), eviction_policy="none", sqlite_journal_mode="wal", timeout=120
        )
        self.owner = process_owner()

    def _holder(self, key: str) -> str | None:
        """The live process holding ``key`` (None: nobody, or a holder that is gone)."""
        claim = self._store.get(key)
        if claim is None:
            return None
        owner, at = claim
        if owner == self.owner:
            return owner
        host = owner.rpartition(":")[0]
        stale = not may_be_running(owner) or (
            host != socket.gethostname() and time.time() - at > FOREIGN_CLAIM_S
        )
        return None if stale else owner

    def claim(self, keys: Sequence[str]) -> tuple[list[str], list[str]]:
        """Claim every key nobody else holds; returns (claimed now, held by another live process)."""
        mine, others = [], []
        with self._store.transact():
            for key in keys:
                holder = self._holder(key)
                if holder is None or holder == self.owner:
                    self._store.set(key, (self.owner, time.time()))
                    mine.append(key)
                else:
                    others.append(key)
        return mine, others

    def held_by_another(self, key: str) -> bool:
        """Whether another live process holds ``key``."""
        holder = self._holder(key)
        return holder is not None and holder != self.owner

    def release(self, keys: Sequence[str]) -> None:
        """Let go of the keys this process holds (answered, failed or not sent)."""
        with self._store.transact():
            for key in keys:
                claim = self._store.get(key)
                if claim is not None and claim[0] == self.owner:
                    self._store.delete(key)

    def close(self) -> None:
        self._store.close()
