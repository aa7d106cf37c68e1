"""Rate limits: the dev server meters tokens and requests per minute as OpenAI does (429, retry-after and
the x-ratelimit-* headers), and the client (llm.rate_limit) sends at the limit without being rejected."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from rmexplain.llm.cache import process_owner
from rmexplain.llm.client import CachedChat
from rmexplain.llm.devserver import ChatServer, ServerStats
from rmexplain.llm.ratelimit import (
    Bucket,
    ClientLimiter,
    ServerLimiter,
    SharedLimit,
    duration_seconds,
    request_tokens,
    retry_after,
    text_tokens,
)

LOG = logging.getLogger("test_llm_ratelimit")


def post(server: ChatServer, content: str, max_tokens: int) -> tuple[int, dict[str, str]]:
    body = {"model": "dev", "messages": [{"role": "user", "content": content}], "max_tokens": max_tokens}
    request = urllib.request.Request(
        server.base_url + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers)


def test_the_token_estimate_rounds_up():
    """characters / 4, rounded up, plus max_tokens (as the server meters it)."""
    assert request_tokens(["abcde"], 0) == 2
    assert request_tokens(["abc", "de"], 7) == 2 + 7
    assert request_tokens(["a" * 8], 1) == 3
    assert request_tokens(["abcde"], 0, chars_per_token=2.5) == 2
    assert request_tokens(["abcdef"], 0, chars_per_token=2.5) == 3
    assert (text_tokens(""), text_tokens("abcd"), text_tokens("abcde")) == (0, 1, 2)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("1.5", 1.5),
        ("1.5s", 1.5),
        ("20ms", 0.02),
        ("6m0s", 360.0),
        ("2m", 120.0),
        ("1h2m3.5s", 3723.5),
        (" 2s ", 2.0),
        ("soon", None),
        ("2s later", None),
        ("", None),
        ("inf", None),
        ("nan", None),
        (None, None),
    ],
)
def test_reset_headers_are_read_in_openais_duration_format(header, seconds):
    assert duration_seconds(header) == seconds


def test_retry_after_prefers_milliseconds():
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after({"retry-after-ms": "soon", "retry-after": "3"}) == 3.0
    assert retry_after({"retry-after": "inf"}) is None and retry_after({}) is None


class FakeClock:
    """Seconds that pass only when told, or when ``asyncio.sleep`` is awaited (the ``clock`` fixture)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    fake = FakeClock()

    async def sleep(seconds: float) -> None:
        fake.now = max(fake.now + seconds, math.nextafter(fake.now, math.inf))  # as a real sleep, it moves

    monkeypatch.setattr(asyncio, "sleep", sleep)
    return fake


def acquire(limiter: ClientLimiter, *tokens: int) -> list[float]:
    """When each request of ``tokens`` may be sent, one after the other."""

    async def run() -> list[float]:
        return [await limiter.acquire(n) for n in tokens]

    return asyncio.run(run())


def test_a_bucket_refills_at_its_rate_up_to_its_capacity(clock):
    bucket = Bucket(120, clock=clock)  # 2 a second, full at 120
    assert (bucket.capacity, bucket.level, bucket.rate) == (120.0, 120.0, 2.0)
    bucket.take(100)
    clock.now = 5.0  # 20 + 5 s x 2
    assert (bucket.wait_for(50), bucket.wait_for(500), bucket.wait_for(10)) == (10.0, 45.0, 0.0)
    assert bucket.reset_seconds() == 45.0
    assert not bucket.try_take(40) and bucket.level == 30.0
    assert bucket.try_take(30) and bucket.level == 0.0
    clock.now = 500.0
    assert bucket.reset_seconds() == 0.0 and bucket.level == 120.0
    assert bucket.try_take(500) and bucket.level == 0.0  # more than it holds: admitted when full, emptying it
    bucket.take(50)  # the client's side: a debt the next requests wait out
    assert bucket.level == -50.0 and bucket.reset_seconds() == 85.0
    small = Bucket(60, capacity=5, start_full=False, clock=clock)
    assert (small.capacity, small.level) == (5.0, 0.0)


def test_the_server_admits_what_fits_and_says_how_long_the_rest_waits():
    """600 tokens a minute (10 a second) and 2 requests a minute (one per 30 s), on the real clock."""
    limiter = ServerLimiter(tokens_per_minute=600, requests_per_minute=2)
    assert limiter.active and ServerLimiter(600, None).active and not ServerLimiter(None, None).active
    assert limiter.admit(500) is None  # 100 tokens and 1 request left
    assert limiter.admit(200) == pytest.approx(10.0, abs=0.01)  # (200 - 100) / 10: refused, nothing taken
    assert limiter.admit(50) is None
    assert limiter.admit(10) == pytest.approx(30.0, abs=0.01)  # the requests' bucket is empty
    assert limiter.admit(1000) == pytest.approx(55.0, abs=0.01)  # (600 - 50) / 10, the longer wait
    headers = limiter.headers()
    assert {k: v for k, v in headers.items() if not k.startswith("x-ratelimit-reset")} == {
        "x-ratelimit-limit-tokens": "600",
        "x-ratelimit-remaining-tokens": "50",
        "x-ratelimit-limit-requests": "2",
        "x-ratelimit-remaining-requests": "0",
    }
    assert duration_seconds(headers["x-ratelimit-reset-tokens"]) == pytest.approx(55.0, abs=0.01)
    assert duration_seconds(headers["x-ratelimit-reset-requests"]) == pytest.approx(60.0, abs=0.01)
    tokens_only = ServerLimiter(tokens_per_minute=600, requests_per_minute=None)
    tokens_only.empty()
    assert tokens_only.admit(5) == pytest.approx(0.5, abs=0.01)
    assert set(tokens_only.headers()) == {f"x-ratelimit-{h}-tokens" for h in ("limit", "remaining", "reset")}
    tokens_only.tokens.level = -30.0  # owed to another client
    assert tokens_only.headers()["x-ratelimit-remaining-tokens"] == "0"


def test_the_server_counts_the_tokens_a_minute_it_admitted_on_its_own_clock():
    """1,100 tokens admitted from 10 s to 70 s, 100 of them the first request's (already in the bucket):
    1,000 a minute; a single admitted request spans no time."""
    assert ServerStats(
        metered_tokens=1100, admitted=[10.0, 70.0, 100.0]
    ).admitted_per_minute == pytest.approx(1000)
    assert math.isnan(ServerStats(metered_tokens=100, admitted=[10.0, 10.0, 100.0]).admitted_per_minute)


def test_the_server_refuses_a_request_due_in_under_a_second():
    """120 requests a minute, emptied: the next request is due in 0.5 s and refused until then."""
    limiter = ServerLimiter(tokens_per_minute=None, requests_per_minute=120)
    limiter.empty()
    assert limiter.admit(1) == pytest.approx(0.5, abs=0.01)


def test_the_client_paces_from_an_empty_bucket_that_holds_a_seconds_worth(clock):
    """600 tokens a minute: 10 a second, at most 10 held. However long the client took to start, its first
    request waits for its tokens; a request larger than the bucket waits for a full bucket and leaves a debt
    the next one waits out."""
    tokens = ClientLimiter(tokens_per_minute=600, requests_per_minute=None, clock=clock)
    clock.now = 100.0
    assert acquire(tokens, 5, 20, 5) == [100.5, 101.5, 103.0]
    assert tokens.sent == 30 and tokens.waited == 3.0
    clock.now = 0.0
    requests = ClientLimiter(tokens_per_minute=None, requests_per_minute=120, clock=clock)  # 2 a second
    assert acquire(requests, 999, 999, 999) == [0.5, 1.0, 1.5]
    clock.now = 0.0
    both = ClientLimiter(tokens_per_minute=600, requests_per_minute=120, clock=clock)
    assert acquire(both, 1, 1, 1) == [0.5, 1.0, 1.5]  # the slower of the two buckets
    assert not ClientLimiter(None, None, clock=clock).active


def test_a_429_pauses_the_client_and_owes_the_pause(clock):
    limiter = ClientLimiter(tokens_per_minute=600, requests_per_minute=None, clock=clock)
    assert acquire(limiter, 10) == [1.0]
    limiter.observe(429, {"retry-after": "2"})
    limiter.pause(0.5)  # a shorter pause does not shorten it
    assert limiter.rejected == 1 and limiter.paused_until == 3.0
    # the bucket owes the pause's 20 tokens too: 10 more take 3 s, past the 2 s pause
    assert acquire(limiter, 10) == [4.0]
    limiter.observe(429, {})  # no retry-after: a second
    assert limiter.rejected == 2 and limiter.paused_until == 5.0
    assert acquire(limiter, 0) == [5.0]


def test_the_servers_remaining_counts_cap_the_clients_buckets(clock):
    limiter = ClientLimiter(tokens_per_minute=6000, requests_per_minute=60, clock=clock)  # 100/s, 1/s
    assert acquire(limiter, 100) == [1.0]
    clock.now = 2.0  # 100 tokens and a request refilled, but the server has 30 tokens left
    limiter.observe(200, {"x-ratelimit-remaining-tokens": "30", "x-ratelimit-remaining-requests": "5"})
    assert acquire(limiter, 50) == [pytest.approx(2.2)]
    clock.now = 3.0  # the server has no request left
    limiter.observe(200, {"x-ratelimit-remaining-tokens": "500", "x-ratelimit-remaining-requests": "0"})
    assert acquire(limiter, 1) == [pytest.approx(4.0)]


def test_the_servers_requests_count_caps_the_client_without_a_tokens_count(clock):
    limiter = ClientLimiter(tokens_per_minute=6000, requests_per_minute=60, clock=clock)  # 100/s, 1/s
    assert acquire(limiter, 100) == [1.0]
    clock.now = 3.0  # a request refilled, but the server has none left (and says nothing of tokens)
    limiter.observe(200, {"x-ratelimit-remaining-requests": "0"})
    assert acquire(limiter, 1) == [4.0]


def rate_headers(remaining: float, limit: int = 6000, per_second: float | None = 100.0) -> dict[str, str]:
    """The server's token headers: ``remaining`` of ``limit``, full again at ``per_second``."""
    headers = {"x-ratelimit-limit-tokens": str(limit), "x-ratelimit-remaining-tokens": f"{remaining:g}"}
    if per_second is not None:
        headers["x-ratelimit-reset-tokens"] = f"{(limit - remaining) / per_second:g}s"
    return headers


def answered(limiter: ClientLimiter, tokens: int, remaining: float, **headers: object) -> float:
    """One request sent as soon as the client's bucket allows (a second for 100 tokens), answered at once
    with ``remaining`` tokens left on the server; returns the client's scale after it."""
    (sent_at,) = acquire(limiter, tokens)
    limiter.done(tokens, sent_at, counted=True)
    limiter.observe(200, rate_headers(remaining, **headers))  # type: ignore[arg-type]
    return limiter.scale


@pytest.mark.parametrize(
    ("charged", "headers", "scale"),
    [
        (160, {}, 1.6),
        (160, {"per_second": None}, 1.6),  # no reset header: the client's own rate, 100 a second
        (160, {"limit": 12000, "per_second": 200.0}, 1.6),  # the server refills 200 a second
        (2000, {}, 8.0),  # at most 8
        (20, {}, 0.25),  # at least 0.25
    ],
)
def test_the_client_learns_the_servers_tokens_per_estimated_token(clock, charged, headers, scale):
    """The client sends 100 estimated tokens a second; the server charges each request ``charged`` and
    refills meanwhile: the fall of its remaining count plus its refill, over the tokens sent, is the scale."""
    limiter = ClientLimiter(tokens_per_minute=6000, requests_per_minute=None, clock=clock)
    refill = headers.get("per_second") or 100.0
    assert answered(limiter, 100, 3000, **headers) == 1.0  # one answer: no span yet
    assert answered(limiter, 100, 3000 - charged + refill, **headers) == pytest.approx(scale)
    assert acquire(limiter, 50)[0] == pytest.approx(2.0 + min(50 * scale, 100) / 100)


def test_the_scale_is_learnt_only_over_a_clear_window(clock):
    """No scale from answers less than 0.5 s apart, more than 10 s apart, while the server's bucket may
    have been full (at 90 % of its limit or more), or while more tokens are in flight than half the
    window's."""
    limiter = ClientLimiter(tokens_per_minute=6000, requests_per_minute=None, clock=clock)
    assert answered(limiter, 40, 3000) == 1.0  # at 0.4 s
    assert answered(limiter, 40, 3000 - 64 + 40) == 1.0  # 0.4 s later
    clock.now = 20.0
    assert answered(limiter, 100, 3000) == 1.0  # alone in the window: the others are older than 10 s
    clock.now = 30.0
    assert answered(limiter, 100, 5400) == 1.0  # the server's bucket may have been full: start again
    assert answered(limiter, 100, 5400 - 160 + 100) == 1.0
    clock.now = 42.0
    assert answered(limiter, 100, 3000) == 1.0
    clock.now = 52.0  # 10 s later: still in the window
    assert answered(limiter, 100, 3000 - 160 + 1000) == pytest.approx(1.6)
    in_flight = ClientLimiter(tokens_per_minute=6000, requests_per_minute=None, clock=clock)
    clock.now = 0.0
    assert answered(in_flight, 100, 3000) == 1.0
    acquire(in_flight, 100)  # sent, not answered
    assert answered(in_flight, 100, 3000 - 160 + 200) == 1.0  # 150 sent in the window, 100 in flight


def test_the_scale_is_learnt_from_answers_half_a_second_apart(clock):
    limiter = ClientLimiter(tokens_per_minute=6000, requests_per_minute=None, clock=clock)
    assert answered(limiter, 50, 3000) == 1.0  # at 0.5 s
    assert answered(limiter, 50, 3000 - 80 + 50) == pytest.approx(1.6)  # at 1 s: 80 charged for 50 sent


def test_the_scale_is_learnt_from_a_window_of_a_single_token(clock):
    """Any tokens sent in the window give a scale; only a window with none is skipped."""
    limiter = ClientLimiter(tokens_per_minute=6000, requests_per_minute=None, clock=clock)
    assert answered(limiter, 1, 3000) == 1.0  # at 0.01 s
    clock.now = 1.01
    assert answered(limiter, 1, 3000 - 2 + 100) == pytest.approx(2.0)  # 1 s later: 2 charged for 1 sent


def test_no_scale_while_the_windows_tokens_are_just_twice_those_in_flight(clock):
    """The window's tokens must be more than twice those in flight: 80 sent against 40 in flight is not."""
    limiter = ClientLimiter(tokens_per_minute=6000, requests_per_minute=None, clock=clock)
    assert answered(limiter, 100, 3000) == 1.0  # at 1 s
    acquire(limiter, 40)  # sent at 1.4 s, not answered
    assert answered(limiter, 60, 3000 - 160 + 100) == 1.0  # at 2 s: (40 + 2 x 60) / 2 sent in the window


def test_a_refused_attempt_is_not_counted_as_sent(clock):
    """An attempt the server refused (a 429) counted nothing there: the client takes its tokens out of what
    it sent, also out of the answers it saw since, so the scale learnt after it is right."""
    limiter = ClientLimiter(tokens_per_minute=6000, requests_per_minute=None, clock=clock)
    (refused_at,) = acquire(limiter, 100)  # at 1 s
    (counted_at,) = acquire(limiter, 100)  # at 2 s
    limiter.done(100, counted_at, counted=True)
    limiter.observe(200, rate_headers(5400))  # the server's bucket was full: nothing learnt from before
    limiter.observe(200, rate_headers(3000))  # an answer seen while the refused attempt was in flight
    limiter.done(100, refused_at, counted=False)
    assert limiter.sent == 100
    assert answered(limiter, 100, 3000 - 160 + 100) == pytest.approx(1.6)  # at 3 s


def test_a_refused_attempt_leaves_the_answers_seen_before_it_alone(clock):
    limiter = ClientLimiter(tokens_per_minute=6000, requests_per_minute=None, clock=clock)
    assert answered(limiter, 100, 3000) == 1.0  # at 1 s
    (refused_at,) = acquire(limiter, 50)  # at 1.5 s
    limiter.done(50, refused_at, counted=False)
    assert limiter.sent == 100
    assert answered(limiter, 100, 3000 - 160 + 150) == pytest.approx(1.6)  # at 2.5 s


def test_a_refused_attempt_is_taken_out_of_an_answer_seen_the_instant_it_was_sent(clock):
    limiter = ClientLimiter(tokens_per_minute=6000, requests_per_minute=None, clock=clock)
    (counted_at,) = acquire(limiter, 100)  # at 1 s
    (refused_at,) = acquire(limiter, 100)  # at 2 s
    limiter.done(100, counted_at, counted=True)
    limiter.observe(200, rate_headers(3000))  # at 2 s too, after the refused attempt went out
    limiter.done(100, refused_at, counted=False)
    assert answered(limiter, 100, 3000 - 160 + 100) == pytest.approx(1.6)  # at 3 s


def test_a_429_holds_every_request_for_its_retry_after():
    """After a 429 with retry-after, nothing is sent before it has passed: neither a request that was
    already waiting for its turn (due at 0.2 s) nor those that ask later (the limit alone would let them go
    at once)."""

    async def run(headers: dict[str, str]) -> list[float]:
        limiter = ClientLimiter(6_000_000, None)  # 100,000 tokens a second
        await limiter.acquire(10)
        start = time.perf_counter()
        waiting = asyncio.ensure_future(limiter.acquire(20_000))  # its turn comes at 0.2 s
        await asyncio.sleep(0.05)
        limiter.observe(429, headers)
        later = await asyncio.gather(*(limiter.acquire(10) for _ in range(2)))
        return [t - start for t in (await waiting, *later)]

    for headers, seconds in (({"retry-after-ms": "400"}, 0.4), ({"retry-after": "1"}, 1.0)):
        delays = asyncio.run(run(headers))
        assert all(0.05 + seconds - 0.01 <= d <= 0.05 + seconds + 0.5 for d in delays), (headers, delays)


@pytest.mark.parametrize(
    ("limits", "kind", "fits"),
    [({"tokens_per_minute": 300}, "tokens", 3), ({"requests_per_minute": 4}, "requests", 4)],
)
def test_server_answers_429_with_openais_headers_beyond_the_limit(limits, kind, fits):
    content = "x" * 396  # 99 tokens + max_tokens 1 = 100 per request
    assert request_tokens([content], 1) == 100
    with ChatServer(**limits) as server:
        answers = [post(server, content, 1) for _ in range(fits + 1)]
        assert [status for status, _ in answers] == [200] * fits + [429]
        ok, rejected = answers[0][1], answers[-1][1]
        limit = next(iter(limits.values()))
        assert ok[f"x-ratelimit-limit-{kind}"] == str(limit)
        assert int(ok[f"x-ratelimit-remaining-{kind}"]) == limit - (100 if kind == "tokens" else 1)
        assert ok[f"x-ratelimit-reset-{kind}"].endswith("s")
        assert int(rejected["retry-after"]) >= 1 and int(rejected["retry-after-ms"]) > 0
        assert int(rejected[f"x-ratelimit-remaining-{kind}"]) < (100 if kind == "tokens" else 1)
        assert server.stats.rate_limited == 1


def test_waiting_requests_are_sent_as_the_bucket_fills(clock):
    """120 requests of 25 tokens wait at once at 60,000 tokens a minute (1,000 a second), on the limiter's
    own clock: the k-th goes out the moment the bucket, empty at the first request, holds it: at k x 25 ms,
    never earlier (over the limit) nor later (under it)."""
    limiter = ClientLimiter(tokens_per_minute=60_000, requests_per_minute=None, clock=clock)

    async def run() -> list[float]:
        return await asyncio.gather(*(limiter.acquire(25) for _ in range(120)))

    assert asyncio.run(run()) == [pytest.approx(k * 0.025) for k in range(1, 121)]
    assert limiter.started_at == 0.0
    assert (limiter.first_sent_at, limiter.last_sent_at) == (pytest.approx(0.025), pytest.approx(3.0))
    assert limiter.released == 120 * 25


def test_a_first_wait_that_oversleeps_sends_no_faster_than_the_limit_since_the_start(monkeypatch, clock):
    """The first wait of 25 ms sleeps 0.5 s (a loaded machine): the bucket fills meanwhile and the next
    requests go out at once, so from the first send on the pace reads 1.19x the limit; from the start
    (``started_at``, the bucket empty) no send is ever ahead of the limit, and the last goes at 3 s."""
    overslept = []

    async def sleep(seconds: float) -> None:
        slept = seconds if overslept else 0.5
        clock.now = max(clock.now + slept, math.nextafter(clock.now, math.inf))
        overslept.append(slept)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    limiter = ClientLimiter(tokens_per_minute=60_000, requests_per_minute=None, clock=clock)

    async def run() -> list[float]:
        return await asyncio.gather(*(limiter.acquire(25) for _ in range(120)))

    sent = asyncio.run(run())
    assert limiter.started_at == 0.0 and sent[0] == 0.5 and sent[20] == pytest.approx(0.525)
    assert all(25 * (k + 1) <= 1_000 * t + 1e-9 for k, t in enumerate(sent))  # never ahead of the limit
    assert sent[-1] == pytest.approx(3.0)
    from_first_send = (120 - 1) * 25 / (sent[-1] - sent[0]) * 60
    assert from_first_send == pytest.approx(1.19 * 60_000, rel=0.001)


def test_client_holds_the_tokens_per_minute_limit(tmp_path):
    """Without llm.rate_limit the 3,000 tokens go out at once (the server's bucket holds a minute's worth);
    with it the client sends at the limit, and nothing is rejected. Every request waits at the limiter from
    the start (concurrency 120), so its sends, timed on its own clock from its first request (when its
    bucket starts empty), show its pacing: a loaded machine may slow the round trips, not the pace of a
    bucket that keeps filling while the client waits. (Timed from the first send instead, a first wait that
    oversleeps on a loaded machine lets the bucket fill meanwhile, and the catch-up reads as a pace over
    the limit: 1.17x once.)"""
    tpm = 60_000  # 1,000 tokens a second; each request is ~25 tokens
    with ChatServer(tokens_per_minute=tpm) as server:
        llm = {"backend": "openai", "model": "dev", "base_url": server.base_url, "api_key_env": None,
               "concurrency": 120, "cache_dir": str(tmp_path)}  # fmt: skip
        llm["rate_limit"] = {"tokens_per_minute": tpm}
        chat = CachedChat(llm, LOG)
        sampling = chat.sampling({"max_tokens": 16})
        requests = [chat.request(f"Rate limited request {i}.", sampling, "t@1") for i in range(120)]
        limiter = chat.backend().limiter
        start = time.perf_counter()
        chat.complete(requests)
        wall = time.perf_counter() - start
        chat.close()
    tokens = [request_tokens([c for _, c in r.messages], 16) for r in requests]
    assert server.stats.rate_limited == 0 and server.stats.requests == 120
    assert limiter.released == sum(tokens)
    paced = sum(tokens) / (limiter.last_sent_at - limiter.started_at) * 60
    assert 0.9 * tpm <= paced <= 1.05 * tpm, paced
    assert sum(tokens) / wall * 60 <= 1.05 * tpm  # never over the limit, however fast the machine


KEY = "sk-proj-0123456789abcdef"


def shared_limit(root, key: str = KEY) -> SharedLimit:
    """The shared state of one key at one endpoint and model, in ``root`` (a job's view of it)."""
    return SharedLimit(root / "cache.ratelimit", "https://api.example.com/v1", key, "gpt-4o")


def test_jobs_sharing_a_key_take_turns_at_one_limit(clock, tmp_path):
    """Two jobs (two limiters over one shared state, as two processes would hold it) with the provider's
    600 tokens a minute: their requests go out at 10 tokens a second between them, not each; a 429 one of
    them sees holds the other, and the scale one learns counts the other's requests. A job with another key
    keeps its own limit; the key itself is written nowhere."""
    a, b = (ClientLimiter(600, None, clock=clock, shared=shared_limit(tmp_path)) for _ in range(2))
    assert [acquire(job, 5)[0] for job in (a, b, a, b)] == [0.5, 1.0, 1.5, 2.0]
    assert (
        a.released == b.released == 10
    )  # each job's own, and the tokens sent by both as each last saw them:
    assert (a.sent, b.sent) == (15, 20)
    other = ClientLimiter(600, None, clock=clock, shared=shared_limit(tmp_path, key="sk-proj-another"))
    a.observe(429, {"retry-after": "3"})  # at 2 s
    assert acquire(b, 5) == [5.5]  # paused until 5 s, owing the pause's 30 tokens: 35 at 10 a second
    assert acquire(other, 5) == [6.0]  # its own bucket, empty at its first request (at 5.5 s)
    files = sorted((tmp_path / "cache.ratelimit").iterdir())
    assert len(files) == 2 and all(KEY not in f.read_text() and KEY not in f.name for f in files)
    state = json.loads(a.shared.path.read_text())
    assert (state["endpoint"], state["model"], state["limits"]) == (
        "https://api.example.com/v1",
        "gpt-4o",
        {"tokens": 600},
    )


def test_a_scale_one_job_learns_counts_every_jobs_requests(clock, tmp_path):
    """One job's answers show the server charging 80 for 50 estimated tokens: the other job counts its next
    request at that scale too (100 tokens a second: 50 estimated are 80, due 0.8 s after the last)."""
    a, b = (ClientLimiter(6000, None, clock=clock, shared=shared_limit(tmp_path)) for _ in range(2))
    assert answered(a, 50, 3000) == 1.0  # at 0.5 s
    assert answered(a, 50, 3000 - 80 + 50) == pytest.approx(1.6)  # at 1 s
    assert acquire(b, 50) == [pytest.approx(1.8)] and b.scale == pytest.approx(1.6)


def test_a_job_gone_with_requests_in_flight_leaves_the_others_a_clear_count(clock, tmp_path):
    """Tokens a job sent and never saw answered (it was killed) are no longer in flight once it is gone:
    the others' scale is learnt again without them."""
    job = ClientLimiter(600, None, clock=clock, shared=shared_limit(tmp_path))
    with job.shared.state() as state:  # a process that ran here and is gone sent 400 tokens, unanswered
        gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True).stdout.strip()  # fmt: skip
        state.update(sent=400.0, answered=0.0, in_flight={f"{socket.gethostname()}:{gone}": (400.0, 0.0)})
    acquire(job, 5)
    state = json.loads(job.shared.path.read_text())
    assert state["sent"] - state["answered"] == 5 and list(state["in_flight"]) == [process_owner()]


JOB = """
import json, logging, sys, time
from pathlib import Path
from rmexplain.llm.client import CachedChat
llm, name, n, go = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
chat = CachedChat(llm, logging.getLogger(name))
sampling = chat.sampling({"max_tokens": 16})
requests = [chat.request(f"Job {name} asks request {i}.", sampling, "t@1") for i in range(n)]
limiter = chat.backend().limiter
print("ready", flush=True)
while not go.exists():
    time.sleep(0.01)
chat.complete(requests)
print(json.dumps({"failures": chat.stats.failures, "released": limiter.released,
                  "started": limiter.started_at, "last": limiter.last_sent_at}))
"""


def test_four_jobs_hold_the_providers_limit_together(tmp_path):
    """Four jobs at once, each with the provider's limit as the provider states it, against a server whose
    bucket is empty at the first request: together they send at the limit, not four times it (each at
    the limit alone would see about three 429s in four): few 429s, none failing, and the pace of all their
    sends, timed on the clock they share, is the limit's."""
    tpm = 60_000  # 1,000 tokens a second; each request is ~25 tokens
    with ChatServer(tokens_per_minute=tpm, start_empty=True) as server:
        llm = {"backend": "openai", "model": "dev", "base_url": server.base_url, "api_key_env": None,
               "concurrency": 40, "cache_dir": str(tmp_path / "cache"), "max_retries": 8,
               "rate_limit": {"tokens_per_minute": tpm}}  # fmt: skip
        go = tmp_path / "go"
        command = [sys.executable, "-c", JOB, json.dumps(llm)]
        jobs = [
            subprocess.Popen([*command, str(i), "40", str(go)], stdout=subprocess.PIPE, text=True)
            for i in range(4)
        ]
        for job in jobs:  # each has built its client: they start together
            assert job.stdout is not None and job.stdout.readline().strip() == "ready"
        go.touch()
        results = [json.loads(job.communicate(timeout=120)[0]) for job in jobs]
        rejected = server.stats.rate_limited
        answered = server.stats.requests - rejected
    assert [r["failures"] for r in results] == [0] * 4 and answered == 160
    assert rejected <= 0.1 * 160, rejected
    span = max(r["last"] for r in results) - min(r["started"] for r in results)
    paced = sum(r["released"] for r in results) / span * 60
    assert 0.9 * tpm <= paced <= 1.05 * tpm, paced


def test_client_pauses_on_429s_when_another_client_shares_the_limit(tmp_path):
    """The server's bucket owes 3 s of tokens to someone else: the first requests get 429s, the client sees
    each one (with its retry-after), pauses, and every request is answered."""
    tpm = 60_000
    with ChatServer(tokens_per_minute=tpm) as server:
        server.limiter.tokens.level = -3_000.0  # another client's burst
        llm = {"backend": "openai", "model": "dev", "base_url": server.base_url, "api_key_env": None,
               "concurrency": 4, "cache_dir": str(tmp_path), "max_retries": 8}  # fmt: skip
        llm["rate_limit"] = {"tokens_per_minute": tpm}
        chat = CachedChat(llm, LOG)
        sampling = chat.sampling({"max_tokens": 16})
        answers = chat.complete([chat.request(f"Shared limit {i}.", sampling, "t@1") for i in range(60)])
        seen = chat.backend().limiter.rejected
    assert len(answers) == 60 and chat.stats.failures == 0
    assert 0 < server.stats.rate_limited == seen, "the client's hook sees every 429"
    assert server.stats.requests - server.stats.rate_limited == 60


def test_client_follows_the_servers_count_where_it_differs_from_its_estimate(tmp_path):
    """The server counts a prompt's characters / 2.5 as its tokens, 1.6x the client's estimate (/ 4), and
    its bucket is empty at the first request: the client learns the server's count from its
    x-ratelimit-remaining-tokens and x-ratelimit-reset-tokens headers and runs at the limit as the server
    counts it, with no request failing and few 429s (by its own estimate it would send 1.6x too fast). Its
    pace is timed on its own clock, every request waiting at the limiter from the start (as above)."""
    tpm = 1_200_000  # 20,000 server tokens a second; each request counts ~1,600
    with ChatServer(tokens_per_minute=tpm, chars_per_token=2.5, start_empty=True) as server:
        llm = {"backend": "openai", "model": "dev", "base_url": server.base_url, "api_key_env": None,
               "concurrency": 80, "cache_dir": str(tmp_path)}  # fmt: skip
        chat = CachedChat({**llm, "rate_limit": {"tokens_per_minute": tpm}}, LOG)
        sampling = chat.sampling({"max_tokens": 4})
        requests = [chat.request(f"{i:03d} " + "x" * 3996, sampling, "t@1") for i in range(80)]
        limiter = chat.backend().limiter
        start = time.perf_counter()
        chat.complete(requests)
        wall = time.perf_counter() - start
        chat.close()
    estimated = sum(request_tokens([c for _, c in r.messages], 4) for r in requests)
    assert server.stats.metered_tokens / estimated == pytest.approx(1.6, abs=0.01)
    assert chat.stats.failures == 0 and server.stats.requests - server.stats.rate_limited == 80
    assert server.stats.rate_limited <= 0.1 * 80, server.stats.rate_limited  # by its own estimate: ~30 %
    paced = server.stats.metered_tokens / (limiter.last_sent_at - limiter.started_at) * 60
    assert 0.9 * tpm <= paced <= 1.05 * tpm, paced
    assert server.stats.metered_tokens / wall * 60 <= 1.05 * tpm
    assert chat.backend().limiter.scale == pytest.approx(1.6, rel=0.15)
