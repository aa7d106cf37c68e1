"""A spending guard shared by every job of a project: ``llm.max_requests`` and ``llm.max_cost_usd``.

The ledger is a JSON file next to the completion cache (``<llm.cache_dir>.ledger.json``), read and written
under a file lock, so the limits hold across parallel and successive jobs. It records what was spent
(requests sent, every retry counted as one, and their cost from the usage the server returned, at
``llm.prices``) and, per running process (``host:pid``), what is reserved for requests in flight. Before a
batch is sent, the client reserves each request's worst case (its prompt at one token per character, its
answer at ``max_tokens``) and sends only the requests that fit; before each retry it reserves one more
attempt; as each answer arrives its reservations become its real cost (an attempt without usage, such as a
timeout the provider may still have answered and billed, at its worst case). A run that would pass a limit
therefore stops before the first attempt that could cross it, naming the setting; everything paid for is
in the cache. Reservations of processes that are gone from this host (a crash, SIGKILL) are dropped on the
next read; those of another host (a cluster job) are kept until it releases them. Delete the ledger file to
start counting again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from rmexplain.llm.base import ChatRequest, Completion, LLMError
from rmexplain.llm.cache import may_be_running, process_owner
from rmexplain.settings import schema_defaults

WORST_CHARS_PER_MESSAGE = 8  # a message's role and separators, in the worst case a token per character


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
    """An upper bound of a request's cost: a token per character of its messages (and a few per message),
    ``max_tokens`` out."""
    chars = sum(len(content) + WORST_CHARS_PER_MESSAGE for _, content in request.messages)
    return request_cost(chars, request.sampling.max_tokens, prices)


PRICE_KEYS = ("input_per_million", "output_per_million")


def unpriced_cost_cap(llm: dict[str, Any]) -> str | None:
    """Why ``max_cost_usd`` in the ``llm`` section would not guard what it says (its model has no price for
    prompt tokens, or none for answer tokens: those would count 0 USD and the cap would let them through);
    None if it is unset or both prices are given."""
    cap, prices = llm.get("max_cost_usd"), llm.get("prices") or {}
    unpriced = [key for key in PRICE_KEYS if not float(prices.get(key) or 0.0) > 0]
    if cap is None or not unpriced:
        return None
    if len(unpriced) == len(PRICE_KEYS):
        return (
            f"max_cost_usd ({cap}) is set but llm.prices gives model {llm.get('model')!r} no price "
            "(input_per_million and output_per_million are 0), so every request would count 0 USD and the "
            "cap would guard nothing: set llm.prices (USD per 1M tokens) or cap llm.max_requests instead"
        )
    return (
        f"max_cost_usd ({cap}) is set but llm.prices.{unpriced[0]} is 0 for model {llm.get('model')!r}, so "
        f"every {'prompt' if unpriced[0] == PRICE_KEYS[0] else 'answer'} token would count 0 USD and the "
        f"cap would let them through: set llm.prices.{unpriced[0]} (USD per 1M tokens) or cap "
        "llm.max_requests instead"
    )


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
        """The limits of an ``llm`` section; ``LLMError`` where ``max_cost_usd`` has no prices to count."""
        unpriced = unpriced_cost_cap(llm)
        if unpriced is not None:
            raise LLMError(f"llm.{unpriced}")
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
        data["reserved"] = {holder: r for holder, r in held.items() if may_be_running(holder)}
        return data

    def _write(self, data: dict[str, Any]) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(self.path)

    def _lock(self) -> FileLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.path) + ".lock", timeout=120)

    def spent(self) -> tuple[int, float]:
        """Requests sent (retries included) and their cost, over all jobs so far (read without the lock:
        the ledger is replaced whole, never written in place)."""
        data = self._read()
        return int(data["requests"]), float(data["cost_usd"])

    def _over(self, data: dict[str, Any], requests: int, cost: float, worst: float) -> str | None:
        """Why one more request of worst-case cost ``worst``, after ``requests`` and ``cost`` reserved now,
        could pass a limit (counting what is spent and every live job's reservations); None if it cannot."""
        held = list(data["reserved"].values())
        reserved_n = sum(r["requests"] for r in held) + requests
        reserved_usd = sum(r["cost_usd"] for r in held) + cost
        if self.max_requests is not None and data["requests"] + reserved_n + 1 > self.max_requests:
            return (
                f"llm.max_requests ({self.max_requests}) reached: {data['requests']} requests sent so far "
                f"and {reserved_n} reserved for requests in flight (ledger {self.path})"
            )
        if self.max_cost_usd is not None and data["cost_usd"] + reserved_usd + worst > self.max_cost_usd:
            return (
                f"llm.max_cost_usd ({self.max_cost_usd}) reached: {data['cost_usd']:.4f} USD spent so far "
                f"and {reserved_usd:.4f} reserved for requests in flight; the next request could cost up to "
                f"{worst:.4f} (ledger {self.path})"
            )
        return None

    def _hold(self, data: dict[str, Any], requests: int, cost: float) -> None:
        mine = data["reserved"].setdefault(process_owner(), {"requests": 0, "cost_usd": 0.0})
        mine["requests"] = max(0, mine["requests"] + requests)
        mine["cost_usd"] = max(0.0, mine["cost_usd"] + cost)

    def reserve(self, requests: Sequence[ChatRequest]) -> tuple[int, str | None]:
        """Reserve the longest prefix of ``requests`` that fits both limits; returns its length and, when
        it is not all of them, why (naming the setting). Without limits, all of them and nothing written."""
        if not self.active:
            return len(requests), None
        with self._lock():
            data = self._read()
            n, cost, why = 0, 0.0, None
            for request in requests:
                worst = worst_case_cost(request, self.prices)
                why = self._over(data, n, cost, worst)
                if why is not None:
                    break
                n, cost = n + 1, cost + worst
            self._hold(data, n, cost)
            self._write(data)
        return n, why

    def reserve_retry(self, request: ChatRequest) -> str | None:
        """Reserve one more attempt of ``request`` (a retry: the provider may bill it as well); None if it
        fits, else why not. Without limits, always None and nothing written."""
        if not self.active:
            return None
        worst = worst_case_cost(request, self.prices)
        with self._lock():
            data = self._read()
            why = self._over(data, 0, 0.0, worst)
            if why is None:
                self._hold(data, 1, worst)
                self._write(data)
        return why

    def settle(self, request: ChatRequest, completion: Completion) -> None:
        """Record what one request cost, releasing its reservations: every attempt it took counts as a
        request; its cost is the usage the server returned at ``llm.prices``, plus the worst case of each
        attempt whose usage is unknown (a timeout the provider may have answered and billed). Recorded with
        or without limits, so a limit set later counts earlier jobs (without limits, in memory until
        ``release``: no file lock per answer)."""
        worst = worst_case_cost(request, self.prices)
        requests = completion.attempts
        cost = (
            request_cost(completion.prompt_tokens, completion.completion_tokens, self.prices)
            + completion.unmetered_attempts * worst
        )
        if not self.active:
            self._unsaved = (self._unsaved[0] + requests, self._unsaved[1] + cost)
            return
        with self._lock():
            data = self._read()
            self._hold(data, -requests, -requests * worst)
            data["requests"] += requests
            data["cost_usd"] += cost
            self._write(data)

    def release(self) -> None:
        """Drop this process's remaining reservations and write what was spent without limits (after a
        batch, whatever happened)."""
        if not self.active and not self._unsaved[0]:
            return
        with self._lock():
            data = self._read()
            data["reserved"].pop(process_owner(), None)
            data["requests"] += self._unsaved[0]
            data["cost_usd"] += self._unsaved[1]
            self._unsaved = (0, 0.0)
            self._write(data)
