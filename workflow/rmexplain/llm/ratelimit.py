"""Tokens-per-minute and requests-per-minute limits, held by the client and enforced by the dev server.

OpenAI meters each request before answering it: its prompt's tokens plus the ``max_tokens`` it may write,
from a bucket that holds one minute's limit and refills continuously. ``request_tokens`` estimates that
count (prompt characters / 4, rounded up, plus ``max_tokens``). The client (``llm.rate_limit``) waits before
each attempt until its own buckets hold it, so it sends at the limit without being rejected, and follows what
the server says where its count differs from the estimate (``ClientLimiter``); every process sending with the
same key to the same endpoint and model holds one set of buckets (``SharedLimit``); the dev server
(``ChatServer(tokens_per_minute=..., requests_per_minute=..., chars_per_token=...)``) answers 429 with
``retry-after`` and OpenAI's ``x-ratelimit-*`` headers when a request does not fit.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import math
import os
import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rmexplain.llm.cache import may_be_running, process_owner

CHARS_PER_TOKEN = 4
NEAR_FULL = 0.9  # the server's bucket at this share of its limit may have been full: no scale learnt
SCALE_WINDOW_S = 10.0  # the scale is learnt over the server's answers of the last seconds ...
MIN_SCALE_WINDOW_S = 0.5  # ... once they span at least this long
IN_FLIGHT_FACTOR = 2.0  # ... and their tokens are this many times those in flight at either end
MIN_SCALE, MAX_SCALE = 0.25, 8.0
IDLE_OWNER_S = 600.0  # a process silent this long has nothing in flight any more (past any llm.timeout)
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def text_tokens(text: str) -> int:
    """A text's tokens as providers estimate them for rate limits: characters / 4, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def request_tokens(contents: Iterable[str], max_tokens: int, chars_per_token: float = CHARS_PER_TOKEN) -> int:
    """What a request counts against a tokens-per-minute limit: its prompt (characters / 4, rounded up) +
    max_tokens."""
    return math.ceil(sum(len(c) for c in contents) / chars_per_token) + int(max_tokens)


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

    def take(self, units: float) -> None:
        """Take ``units`` now (client side: the level may go below zero, which later requests wait out)."""
        self.refill()
        self.level -= units

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


def shared_limits_dir(cache_dir: str | Path) -> Path:
    """The shared limits of the cache in ``cache_dir``: a folder beside it (as its claims and ledger)."""
    directory = Path(cache_dir)
    return directory.parent / f"{directory.name}.ratelimit"


class SharedLimit:
    """One provider limit's state, shared by every process that sends with the same key to the same
    endpoint and model: a JSON file in ``directory`` named by a hash of the three (the key itself is
    never written), read and rewritten in place under an exclusive ``flock`` of the file. It holds the
    buckets, the pause a 429 asked for, the learnt scale, the tokens sent and answered in all, and each
    live process's tokens in flight (a process gone from this host, or silent for ``IDLE_OWNER_S``, has
    its in-flight tokens dropped).

    Hand-rolled on ``fcntl.flock`` over a descriptor kept open, rather than ``filelock`` (as the spending
    ledger): a limited run takes this lock a few times per request, and ``filelock`` opens and closes its
    lock file each time (0.8 ms here), and an atomic rewrite creates a file each time (2.3 ms), against
    0.01 ms for a lock and a rewrite in place. A process that dies holding the lock lets go of it with its
    descriptor."""

    def __init__(self, directory: str | Path, endpoint: str, api_key: str, model: str) -> None:
        scope = hashlib.sha256("\n".join((endpoint, api_key, model)).encode()).hexdigest()[:32]
        self.path = Path(directory) / f"{scope}.json"
        self.description = {"endpoint": endpoint, "model": model}
        self._file: Any = None
        self._pid = 0

    def _descriptor(self) -> int:
        """The state file, open in this process (a forked child opens its own: ``flock`` is per open file)."""
        if self._file is None or self._pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = os.fdopen(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600), "r+b", buffering=0)
            self._pid = os.getpid()
        return self._file.fileno()

    @contextmanager
    def state(self) -> Iterator[dict[str, Any]]:
        """The state, locked for the ``with`` block and written back at its end (not after an error)."""
        fd = self._descriptor()
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            raw = os.pread(fd, os.fstat(fd).st_size, 0)
            try:
                state = json.loads(raw) if raw else {}
            except ValueError:
                state = {}  # a state no process can read is started afresh (a second's pacing lost)
            state.update(self.description)
            yield state
            data = json.dumps(state, sort_keys=True).encode()
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)


class ClientLimiter:
    """The client's buckets: ``await acquire(tokens)`` before each attempt. They start empty and hold at
    most a second's worth, so the client paces at the limit from its first request and never bursts: the
    provider's bucket may have been emptied by the job before (its burst allowance is left unused).

    With ``shared`` (a ``SharedLimit``), every process sending with the same key holds one set of buckets
    and one view of the server: the limit is the provider's, however many jobs run at once. In each process
    one request at a time waits for the buckets (the others queue behind it), so a send costs a few
    lock-and-read rounds of the shared file, not one per waiting request.

    The client's token count is an estimate; the server's may differ (another tokenizer, another rule).
    ``observe`` follows what the server says: a 429 pauses every bucket for its ``retry-after``; each
    ``x-ratelimit-remaining-*`` caps the bucket at what the server has left; and the fall of
    ``x-ratelimit-remaining-tokens`` over the last seconds, plus what the server refilled meanwhile (at the
    rate its ``x-ratelimit-reset-tokens`` implies), against the tokens the clients estimate they sent,
    gives ``scale``: the server's tokens per estimated token, by which every later request is counted."""

    def __init__(
        self,
        tokens_per_minute: float | None,
        requests_per_minute: float | None,
        clock: Callable[[], float] | None = None,
        shared: SharedLimit | None = None,
    ) -> None:
        self.clock = clock or (time.time if shared is not None else time.monotonic)  # one clock for all
        self.shared = shared
        self.buckets = {
            kind: Bucket(limit, capacity=limit / 60.0, start_full=False, clock=self.clock)
            for limit, kind in ((tokens_per_minute, "tokens"), (requests_per_minute, "requests"))
            if limit
        }
        self.scale = 1.0
        self.paused_until = 0.0  # nothing is sent before (a 429's retry-after), reservations made earlier too
        self.sent = 0.0  # tokens of the attempts sent and not refused, as the client estimates them
        self.answered = 0.0  # of those, the tokens of the attempts answered
        self._seen: deque[tuple[float, float, float, float]] = deque()  # (time, remaining, sent, answered)
        self.started = False
        self.waited = 0.0
        self.rejected = 0  # 429 answers seen
        self.released = 0.0  # tokens this process sent (its own, even where the limit is shared)
        self.started_at: float | None = None  # when this process first asked for the buckets
        self.first_sent_at: float | None = None  # when this process sent its first and last attempt
        self.last_sent_at: float | None = None
        self._depth = 0  # nesting of ``_synced``: the shared state is read and written at the outermost
        self._state: dict[str, Any] | None = None  # the shared state while ``_synced`` holds it
        self._gates: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}

    @property
    def active(self) -> bool:
        return bool(self.buckets)

    @contextmanager
    def _synced(self) -> Iterator[None]:
        """Hold the shared state (if any) for the block: read into this limiter, written back after."""
        if self.shared is None or self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        with self.shared.state() as state:
            self._load(state)
            self._state, self._depth = state, 1
            try:
                yield
            finally:
                self._state, self._depth = None, 0
                self._store(state)

    def _load(self, state: dict[str, Any]) -> None:
        now = self.clock()
        for kind, bucket in self.buckets.items():
            bucket.level, bucket.stamp = state.get("buckets", {}).get(kind, (0.0, now))  # new: empty now
        self.started = True
        self.paused_until = float(state.get("paused_until", 0.0))
        self.scale = float(state.get("scale", 1.0))
        self.sent, self.answered = float(state.get("sent", 0.0)), float(state.get("answered", 0.0))
        flying = state.get("in_flight", {})
        for owner, (tokens, at) in list(flying.items()):
            if owner != process_owner() and (not may_be_running(owner) or now - at > IDLE_OWNER_S):
                self.answered += tokens  # a process gone with requests in flight: they are over
                del flying[owner]
        state["in_flight"] = flying

    def _store(self, state: dict[str, Any]) -> None:
        state["buckets"] = {kind: (b.level, b.stamp) for kind, b in self.buckets.items()}
        state["limits"] = {kind: b.per_minute for kind, b in self.buckets.items()}
        state.update(paused_until=self.paused_until, scale=self.scale, sent=self.sent, answered=self.answered)

    def _flying(self, tokens: float) -> None:
        """Add ``tokens`` (negative: take them away) to this process's tokens in flight (within ``_synced``,
        in the shared state)."""
        if self._state is None:
            return
        flying = self._state.setdefault("in_flight", {})
        held = flying.get(process_owner(), (0.0, 0.0))[0] + tokens
        flying[process_owner()] = (max(0.0, held), self.clock())

    def _gate(self) -> asyncio.Lock:
        """This event loop's queue for the buckets: one waiting request at a time looks at them."""
        loop = asyncio.get_running_loop()
        gate = self._gates.get(loop)
        if gate is None:
            self._gates = {loop: (gate := asyncio.Lock())}
        return gate

    async def acquire(self, tokens: int) -> float:
        """Wait until the buckets hold one more request of ``tokens`` (estimated) tokens and take them;
        returns the time it may be sent (for ``done``). A waiting request looks again after each sleep,
        so what the server said meanwhile (a pause, a lower remaining count, a new scale) holds it too."""
        self.started_at = self.clock() if self.started_at is None else self.started_at
        async with self._gate():
            while True:
                with self._synced():
                    if not self.started:  # empty at the first request, however long the client took to start
                        for bucket in self.buckets.values():
                            bucket.level, bucket.stamp = 0.0, self.clock()
                        self.started = True
                    units = {"tokens": tokens * self.scale, "requests": 1}
                    now = self.clock()
                    waits = [b.wait_for(units[kind]) for kind, b in self.buckets.items()]
                    wait = max([self.paused_until - now, *waits])
                    if wait <= 0:
                        for kind, bucket in self.buckets.items():
                            bucket.take(units[kind])
                        self.sent += tokens
                        self._released(tokens, now)
                        return now
                self.waited += wait
                await asyncio.sleep(wait)

    def _released(self, tokens: int, now: float) -> None:
        self._flying(tokens)
        self.released += tokens
        self.first_sent_at = now if self.first_sent_at is None else self.first_sent_at
        self.last_sent_at = now

    def done(self, tokens: int, sent_at: float, *, counted: bool) -> None:
        """The attempt of ``tokens`` sent at ``sent_at`` is over: answered (``counted``), or refused (a 429,
        no connection), when the server counted nothing."""
        with self._synced():
            self._flying(-tokens)
            if counted:
                self.answered += tokens
                return
            self.sent -= tokens
            self._seen = deque((t, r, s - tokens if t >= sent_at else s, a) for t, r, s, a in self._seen)

    def observe(self, status: int, headers: Any) -> None:
        """Adapt to one HTTP answer's status and rate-limit headers (see the class)."""
        if status != 429 and not any(h.startswith("x-ratelimit-remaining-") for h in map(str.lower, headers)):
            return  # nothing to follow (a server without rate-limit headers)
        with self._synced():
            self._observe(status, headers)

    def _observe(self, status: int, headers: Any) -> None:
        if status == 429:
            self.rejected += 1
            self.pause(retry_after(headers) or 1.0)
            return
        for kind, bucket in self.buckets.items():
            remaining = _number(headers.get(f"x-ratelimit-remaining-{kind}"))
            if remaining is None:
                continue
            limit = _number(headers.get(f"x-ratelimit-limit-{kind}"))
            reset = duration_seconds(headers.get(f"x-ratelimit-reset-{kind}"))
            refill = bucket.rate
            if limit and reset and limit > remaining:
                refill = (limit - remaining) / reset
            if kind == "tokens":
                self._learn_scale(remaining, limit, refill)
            bucket.refill()
            bucket.level = min(bucket.level, remaining)

    def pause(self, seconds: float) -> None:
        """Send nothing for ``seconds`` (a 429's ``retry-after``)."""
        with self._synced():
            self.paused_until = max(self.paused_until, self.clock() + seconds)
            for bucket in self.buckets.values():
                bucket.refill()
                bucket.level = min(bucket.level, -seconds * bucket.rate)

    def _learn_scale(self, remaining: float, limit: float | None, refill: float) -> None:
        now = self.clock()
        if limit and remaining >= NEAR_FULL * limit:
            self._seen.clear()  # the server's bucket may have filled up meanwhile: refills it did not count
            return
        self._seen.append((now, remaining, self.sent, self.answered))
        while now - self._seen[0][0] > SCALE_WINDOW_S:
            self._seen.popleft()
        # The server counted a request between its sending and its answer: take the midpoint, over the
        # longest window whose tokens outweigh those in flight at either end (where that guess may be off).
        for then, remaining_then, sent_then, answered_then in self._seen:
            if now - then < MIN_SCALE_WINDOW_S:
                return
            sent = (self.sent + self.answered - sent_then - answered_then) / 2
            in_flight = max(self.sent - self.answered, sent_then - answered_then)
            if sent > IN_FLIGHT_FACTOR * in_flight and sent > 0:
                charged = remaining_then - remaining + refill * (now - then)
                self.scale = min(MAX_SCALE, max(MIN_SCALE, charged / sent))
                return


def duration_seconds(value: str | None) -> float | None:
    """A rate-limit header's duration in seconds: a number of seconds or OpenAI's ``6m0s``, ``1.5s``,
    ``20ms``; None if absent or unreadable."""
    number = _number(value)
    if number is not None or value is None:
        return number
    text = str(value).strip()
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)


def retry_after(headers: Any) -> float | None:
    """Seconds a 429 asks the client to wait (``retry-after-ms``, else ``retry-after``); None if neither."""
    ms = _number(headers.get("retry-after-ms"))
    return ms / 1000.0 if ms is not None else _number(headers.get("retry-after"))


def _number(value: str | None) -> float | None:
    try:
        number = float(value) if value is not None else None
    except ValueError:
        return None
    return number if number is not None and math.isfinite(number) else None


class ServerLimiter:
    """The dev server's buckets and OpenAI's rate-limit headers."""

    def __init__(self, tokens_per_minute: float | None, requests_per_minute: float | None) -> None:
        self.tokens = Bucket(tokens_per_minute) if tokens_per_minute else None
        self.requests = Bucket(requests_per_minute) if requests_per_minute else None

    @property
    def active(self) -> bool:
        return self.tokens is not None or self.requests is not None

    def empty(self) -> None:
        """Empty the buckets now, as another client using up the limit would."""
        for bucket in (self.tokens, self.requests):
            if bucket is not None:
                bucket.refill()
                bucket.level = 0.0

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
