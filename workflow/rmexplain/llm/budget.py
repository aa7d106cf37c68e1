"""A spending guard shared by every job of a project: ``llm.max_requests`` and ``llm.max_cost_usd``.

The ledger is a JSON file next to the completion cache (``<llm.cache_dir>.ledger.json``), read and written
under a file lock, so the limits hold across parallel and successive jobs. It records what was spent
(requests sent, and their cost from the usage the server returned, at ``llm.prices``) and, per running
process, what is reserved for requests in flight. Before a batch is sent, the client reserves each
request's worst case (its prompt at one token per character, its answer at ``max_tokens``) and sends only
the requests that fit; as each answer arrives its reservation becomes its real cost. A run that would pass
a limit therefore stops before the first request that could cross it, naming the setting; everything paid
for is in the cache. Reservations of processes that are gone (a crash, SIGKILL) are dropped on the next
read. Delete the ledger file to start counting again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from rmexplain.llm.base import ChatRequest, Completion, LLMError
from rmexplain.settings import schema_defaults


class BudgetExceeded(LLMError):
    """The next request could pass ``llm.max_requests`` or ``llm.max_cost_usd``."""


def ledger_path(cache_dir: str | Path) -> Path:
    """The ledger of the cache in ``cache_dir``: a file beside it."""
    directory = Path(cache_dir)
    return directory.parent / f"{directory.name}.ledger.json"


def request_cost(tokens_in: int, tokens_out: int, prices: dict[str, Any]) -> float:
    """USD of one request at ``llm.prices`` (per 1M tokens)."""
    return (
        tokens_in * float(prices.get("input_per_million") or 0.0)
        + tokens_out * float(prices.get("output_per_million") or 0.0)
    ) / 1e6


def worst_case_cost(request: ChatRequest, prices: dict[str, Any]) -> float:
    """An upper bound of a request's cost: a token per character of its messages, ``max_tokens`` out."""
    chars = sum(len(content) + 8 for _, content in request.messages)
    return request_cost(chars, request.sampling.max_tokens, prices)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Budget:
    """The limits (None: none) and the ledger they are checked against."""

    path: Path
    max_requests: int | None
    max_cost_usd: float | None
    prices: dict[str, Any]
    _unsaved: tuple[int, float] = (0, 0.0)  # spent without limits, not yet in the ledger

    @classmethod
    def from_config(cls, llm: dict[str, Any], cache_dir: str | Path) -> Budget:
        limits = {key: llm.get(key, schema_defaults("llm", key)) for key in ("max_requests", "max_cost_usd")}
        return cls(ledger_path(cache_dir), **limits, prices=dict(llm.get("prices") or {}))

    @property
    def active(self) -> bool:
        return self.max_requests is not None or self.max_cost_usd is not None

    def _read(self) -> dict[str, Any]:
        data = json.loads(self.path.read_text()) if self.path.is_file() else {}
        data.setdefault("requests", 0)
        data.setdefault("cost_usd", 0.0)
        held = data.get("reserved") or {}
        data["reserved"] = {pid: r for pid, r in held.items() if _alive(int(pid))}
        return data

    def _write(self, data: dict[str, Any]) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(self.path)

    def _lock(self) -> FileLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.path) + ".lock", timeout=120)

    def spent(self) -> tuple[int, float]:
        """Requests sent and their cost, over all jobs so far."""
        with self._lock():
            data = self._read()
        return int(data["requests"]), float(data["cost_usd"])

    def reserve(self, requests: Sequence[ChatRequest]) -> tuple[int, str | None]:
        """Reserve the longest prefix of ``requests`` that fits both limits; returns its length and, when
        it is not all of them, why (naming the setting). Without limits, all of them and nothing written."""
        if not self.active:
            return len(requests), None
        with self._lock():
            data = self._read()
            held = list(data["reserved"].values())
            used_n = data["requests"] + sum(r["requests"] for r in held)
            used_usd = data["cost_usd"] + sum(r["cost_usd"] for r in held)
            n, cost, why = 0, 0.0, None
            for request in requests:
                if self.max_requests is not None and used_n + n + 1 > self.max_requests:
                    why = (
                        f"llm.max_requests ({self.max_requests}) reached: {data['requests']} requests sent "
                        f"so far (ledger {self.path})"
                    )
                    break
                worst = worst_case_cost(request, self.prices)
                if self.max_cost_usd is not None and used_usd + cost + worst > self.max_cost_usd:
                    why = (
                        f"llm.max_cost_usd ({self.max_cost_usd}) reached: {data['cost_usd']:.4f} USD "
                        f"spent so far; the next request could cost up to {worst:.4f} (ledger {self.path})"
                    )
                    break
                n, cost = n + 1, cost + worst
            mine = data["reserved"].setdefault(str(os.getpid()), {"requests": 0, "cost_usd": 0.0})
            mine["requests"] += n
            mine["cost_usd"] += cost
            self._write(data)
        return n, why

    def settle(self, request: ChatRequest, completion: Completion) -> None:
        """Record one request sent and what it really cost (from the usage the server returned), releasing
        its reservation; recorded with or without limits, so a limit set later counts earlier jobs
        (without limits, in memory until ``release``: no file lock per answer)."""
        tokens = (completion.prompt_tokens, completion.completion_tokens)
        if not self.active:
            self._unsaved = (self._unsaved[0] + 1, self._unsaved[1] + request_cost(*tokens, self.prices))
            return
        with self._lock():
            data = self._read()
            mine = data["reserved"].setdefault(str(os.getpid()), {"requests": 0, "cost_usd": 0.0})
            mine["requests"] = max(0, mine["requests"] - 1)
            mine["cost_usd"] = max(0.0, mine["cost_usd"] - worst_case_cost(request, self.prices))
            data["requests"] += 1
            data["cost_usd"] += request_cost(*tokens, self.prices)
            self._write(data)

    def release(self) -> None:
        """Drop this process's remaining reservations and write what was spent without limits (after a
        batch, whatever happened)."""
        if not self.active and not self._unsaved[0]:
            return
        with self._lock():
            data = self._read()
            data["reserved"].pop(str(os.getpid()), None)
            data["requests"] += self._unsaved[0]
            data["cost_usd"] += self._unsaved[1]
            self._unsaved = (0, 0.0)
            self._write(data)
