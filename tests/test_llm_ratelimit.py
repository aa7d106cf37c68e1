"""Rate limits: the dev server meters tokens and requests per minute as OpenAI does (429, retry-after and
the x-ratelimit-* headers), and the client (llm.rate_limit) sends at the limit without being rejected."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import urllib.error
import urllib.request

import pytest

from rmexplain.llm.client import CachedChat
from rmexplain.llm.devserver import ChatServer
from rmexplain.llm.ratelimit import ClientLimiter, duration_seconds, request_tokens

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


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("1.5", 1.5), ("1.5s", 1.5), ("20ms", 0.02), ("6m0s", 360.0), ("1h2m3.5s", 3723.5), ("soon", None)],
)
def test_reset_headers_are_read_in_openais_duration_format(header, seconds):
    assert duration_seconds(header) == seconds


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


def test_client_holds_the_tokens_per_minute_limit(tmp_path):
    """Without llm.rate_limit the 3,000 tokens go out at once (the server's bucket holds a minute's worth);
    with it the client sends at the limit, and nothing is rejected."""
    tpm = 60_000  # 1,000 tokens a second; each request is ~25 tokens
    with ChatServer(tokens_per_minute=tpm) as server:
        llm = {"backend": "openai", "model": "dev", "base_url": server.base_url, "api_key_env": None,
               "concurrency": 8, "cache_dir": str(tmp_path)}  # fmt: skip
        llm["rate_limit"] = {"tokens_per_minute": tpm}
        chat = CachedChat(llm, LOG)
        sampling = chat.sampling({"max_tokens": 16})
        requests = [chat.request(f"Rate limited request {i}.", sampling, "t@1") for i in range(120)]
        chat.backend()
        start = time.perf_counter()
        chat.complete(requests)
        wall = time.perf_counter() - start
        chat.close()
    tokens = sum(request_tokens([c for _, c in r.messages], 16) for r in requests)
    throughput = tokens / wall * 60
    assert server.stats.rate_limited == 0 and server.stats.requests == 120
    assert 0.9 * tpm <= throughput <= 1.05 * tpm, (throughput, wall)


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
    counts it, with no request failing and few 429s (by its own estimate it would send 1.6x too fast)."""
    tpm = 1_200_000  # 20,000 server tokens a second; each request counts ~1,600
    with ChatServer(tokens_per_minute=tpm, chars_per_token=2.5, start_empty=True) as server:
        llm = {"backend": "openai", "model": "dev", "base_url": server.base_url, "api_key_env": None,
               "concurrency": 8, "cache_dir": str(tmp_path)}  # fmt: skip
        chat = CachedChat({**llm, "rate_limit": {"tokens_per_minute": tpm}}, LOG)
        sampling = chat.sampling({"max_tokens": 4})
        requests = [chat.request(f"{i:03d} " + "x" * 3996, sampling, "t@1") for i in range(80)]
        chat.backend()
        start = time.perf_counter()
        chat.complete(requests)
        wall = time.perf_counter() - start
        chat.close()
    estimated = sum(request_tokens([c for _, c in r.messages], 4) for r in requests)
    assert server.stats.metered_tokens / estimated == pytest.approx(1.6, abs=0.01)
    assert chat.stats.failures == 0 and server.stats.requests - server.stats.rate_limited == 80
    throughput = server.stats.metered_tokens / wall * 60
    assert server.stats.rate_limited <= 0.1 * 80, server.stats.rate_limited  # by its own estimate: ~30 %
    assert 0.9 * tpm <= throughput <= 1.05 * tpm, (throughput, wall)
    assert chat.backend().limiter.scale == pytest.approx(1.6, rel=0.15)
