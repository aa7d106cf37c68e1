"""Tokens-per-minute and requests-per-minute limits, held by the client and enforced by the dev server.

OpenAI meters each request before answering it: its prompt's tokens plus the ``max_tokens`` it may write,
from a bucket that holds one minute's limit and refills continuously. ``request_tokens`` estimates that
count the same way on both sides (prompt characters / 4, plus ``max_tokens``). The client
(``llm.rate_limit``) waits before each request until its own buckets hold it, so it sends at the limit
without being rejected; the dev server (``ChatServer(tokens_per_minute=..., requests_per_minute=...)``)
answers 429 with ``retry-after`` and OpenAI's ``x-ratelimit-*`` headers when a request does not fit.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

CHARS_PER_TOKEN = 4


def request_tokens(contents: Iterable[str], max_tokens: int) -> int:
    """What a request counts against a tokens-per-minute limit: its prompt (characters / 4) + max_tokens."""
    return math.ceil(sum(len(c) for c in contents) / CHARS_PER_TOKEN) + int(max_tokens)


@dataclass
class Bucket:
    """A bucket refilled continuously at ``per_minute`` / 60 a second, holding at most ``capacity``
    (default a minute's worth, OpenAI's), full at the start unless ``start_full`` is False. On the client,
    ``level`` may go below zero: a reservation the caller waits out."""

    per_minute: float
    capacity: float | None = None
    start_full: bool = True
    clock: Callable[[], float] = time.monotonic
    level: float = field(init=False)
    stamp: float = field(init=False)

    def __post_init__(self) -> None:
        self.capacity = float(self.capacity or self.per_minute)
        self.level, self.stamp = (self.capacity if self.start_full else 0.0), self.clock()

    @property
    def rate(self) -> float:
        return self.per_minute / 60.0

    def refill(self) -> None:
        now = self.clock()
        self.level = min(float(self.capacity or 0.0), self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def reserve(self, units: float) -> float:
        """Take ``units`` now and return the seconds to wait until they are paid for."""
        self.refill()
        self.level -= units
        return max(0.0, -self.level / self.rate)

    def try_take(self, units: float) -> bool:
        """Take ``units`` if the bucket holds them (server side)."""
        self.refill()
        if self.level < min(units, self.capacity or 0.0):
            return False
        self.level -= min(units, self.capacity or 0.0)
        return True

    def reset_seconds(self) -> float:
        """Seconds until the bucket is full again."""
        self.refill()
        return max(0.0, ((self.capacity or 0.0) - self.level) / self.rate)

    def wait_for(self, units: float) -> float:
        """Seconds until the bucket holds ``units``."""
        self.refill()
        return max(0.0, (min(units, self.capacity or 0.0) - self.level) / self.rate)


class ClientLimiter:
    """The client's buckets: ``await acquire(tokens)`` before each request. They start empty and hold at
    most a second's worth, so the client paces at the limit from its first request and never bursts: the
    provider's bucket may have been emptied by the job before (its burst allowance is left unused)."""

    def __init__(self, tokens_per_minute: float | None, requests_per_minute: float | None) -> None:
        self.buckets = [
            (Bucket(limit, capacity=limit / 60.0, start_full=False), kind)
            for limit, kind in ((tokens_per_minute, "tokens"), (requests_per_minute, "requests"))
            if limit
        ]
        self.waited = 0.0
        self.rejected = 0  # 429 answers seen

    @property
    def active(self) -> bool:
        return bool(self.buckets)

    def observe(self, status: int, headers: Any) -> None:
        """Adapt to what the server says: a 429 pauses every bucket for its ``retry-after``; a
        ``x-ratelimit-remaining-*`` below a second's worth (another client shares the limit) holds the
        bucket back until the server's refills."""
        if status == 429:
            self.rejected += 1
            wait = _seconds(headers.get("retry-after-ms"), 1000.0) or _seconds(
                headers.get("retry-after"), 1.0
            )
            for bucket, _ in self.buckets:
                bucket.refill()
                bucket.level = min(bucket.level, -(wait or 1.0) * bucket.rate)
            return
        for bucket, kind in self.buckets:
            remaining = _seconds(headers.get(f"x-ratelimit-remaining-{kind}"), 1.0)
            if remaining is not None and remaining < (bucket.capacity or 0.0):
                bucket.refill()
                bucket.level = min(bucket.level, remaining - (bucket.capacity or 0.0))

    async def acquire(self, tokens: int) -> None:
        wait = max((b.reserve(tokens if kind == "tokens" else 1) for b, kind in self.buckets), default=0.0)
        if wait > 0:
            self.waited += wait
            await asyncio.sleep(wait)


def _seconds(value: str | None, per_second: float) -> float | None:
    """A header's number (``"1.5"``, ``"1.5s"``) divided by ``per_second``; None if absent or unreadable."""
    try:
        return float(str(value).rstrip("s")) / per_second if value is not None else None
    except ValueError:
        return None


class ServerLimiter:
    """The dev server's buckets and OpenAI's rate-limit headers."""

    def __init__(self, tokens_per_minute: float | None, requests_per_minute: float | None) -> None:
        self.tokens = Bucket(tokens_per_minute) if tokens_per_minute else None
        self.requests = Bucket(requests_per_minute) if requests_per_minute else None

    @property
    def active(self) -> bool:
        return self.tokens is not None or self.requests is not None

    def admit(self, tokens: int) -> float | None:
        """None if the request fits (its units are taken), else the seconds to wait before retrying."""
        waits = []
        if self.tokens is not None and self.tokens.wait_for(tokens) > 0:
            waits.append(self.tokens.wait_for(tokens))
        if self.requests is not None and self.requests.wait_for(1) > 0:
            waits.append(self.requests.wait_for(1))
        if waits:
            return max(waits)
        if self.tokens is not None:
            self.tokens.try_take(tokens)
        if self.requests is not None:
            self.requests.try_take(1)
        return None

    def headers(self) -> dict[str, str]:
        """OpenAI's ``x-ratelimit-*`` headers for the current state."""
        out: dict[str, str] = {}
        for kind, bucket in (("tokens", self.tokens), ("requests", self.requests)):
            if bucket is not None:
                out[f"x-ratelimit-limit-{kind}"] = str(int(bucket.per_minute))
                out[f"x-ratelimit-remaining-{kind}"] = str(max(0, int(bucket.level)))
                out[f"x-ratelimit-reset-{kind}"] = f"{bucket.reset_seconds():.3f}s"
        return out
