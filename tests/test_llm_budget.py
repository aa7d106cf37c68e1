"""The spending guard: llm.max_requests and llm.max_cost_usd hold across jobs (a ledger beside the cache),
a job stops before the request that could cross a limit, and what was paid for stays cached."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml
from test_llm_workflow import write_project

from rmexplain.config import load
from rmexplain.llm.base import ChatRequest, Completion, LLMError, Sampling
from rmexplain.llm.budget import (
    Budget,
    BudgetExceeded,
    ledger_path,
    request_cost,
    unpriced_cost_cap,
    worst_case_cost,
)
from rmexplain.llm.cache import process_owner
from rmexplain.llm.client import CachedChat
from rmexplain.llm.devserver import ChatServer
from rmexplain.settings import ConfigError

LOG = logging.getLogger("test_llm_budget")


def chat(server: ChatServer, cache, **limits: object) -> CachedChat:
    llm = {"backend": "openai", "model": "dev", "base_url": server.base_url, "api_key_env": None,
           "cache_dir": str(cache), "concurrency": 4, **limits}  # fmt: skip
    return CachedChat(llm, LOG)


def requests(client: CachedChat, n: int, first: int = 0) -> list:
    sampling = client.sampling({"max_tokens": 20})
    return [
        client.request(f"Say something about item {i}.", sampling, "t@1") for i in range(first, first + n)
    ]


def test_max_requests_stops_before_the_request_that_crosses_it_across_jobs(tmp_path):
    cache = tmp_path / "llm"
    with ChatServer() as server:
        first = chat(server, cache, max_requests=5)
        with pytest.raises(BudgetExceeded, match=r"stopped before request 6 of 8: llm.max_requests \(5\)"):
            first.complete(requests(first, 8))
        assert server.stats.requests == 5 and len(first.cache) == 5
        first.close()
        # another job: the five paid answers come from the cache, nothing more is sent
        second = chat(server, cache, max_requests=5)
        assert second.complete(requests(second, 5))
        with pytest.raises(BudgetExceeded, match=r"stopped before request 1 of 3"):
            second.complete(requests(second, 8))
        assert server.stats.requests == 5
        second.close()
        raised = chat(server, cache, max_requests=8)
        assert len(raised.complete(requests(raised, 8))) == 8
        assert server.stats.requests == 8 and raised.stats.calls == 3
        raised.close()
    ledger = json.loads(ledger_path(cache).read_text())
    assert ledger["requests"] == 8 and ledger["reserved"] == {}


def test_max_cost_usd_holds_with_costs_from_the_returned_usage(tmp_path):
    cache = tmp_path / "llm"
    prices = {"input_per_million": 3000.0, "output_per_million": 6000.0}  # 0.003 / 0.006 USD a token
    with ChatServer() as server:
        client = chat(server, cache, max_cost_usd=1.0, prices=prices)
        with pytest.raises(BudgetExceeded, match=r"llm.max_cost_usd \(1.0\) reached"):
            client.complete(requests(client, 40))
        sent = server.stats.requests
        assert 0 < sent < 40 and len(client.cache) == sent
        ledger = json.loads(ledger_path(cache).read_text())
        assert ledger["requests"] == sent
        # the ledger's cost is the returned usage at the prices, and stays under the limit
        usage = (client.stats.tokens_in, client.stats.tokens_out)
        assert ledger["cost_usd"] == pytest.approx(request_cost(*usage, prices)) and ledger["cost_usd"] <= 1.0
        # it stopped because the next request's worst case could cross the limit, not earlier
        worst = worst_case_cost(requests(client, 40)[sent], prices)
        assert ledger["cost_usd"] + worst > 1.0


def test_every_attempt_counts_against_max_requests(tmp_path):
    """Answers slower than the timeout: the provider may answer and bill an attempt the client gave up on.
    With 2 retries and a cap of 3, the server gets 3 attempts, not 9, and the ledger counts each one, at
    its worst-case cost (its usage is unknown)."""
    cache = tmp_path / "llm"
    prices = {"input_per_million": 1.0, "output_per_million": 2.0}
    with ChatServer(latency=1.5) as server:
        client = chat(server, cache, max_requests=3, timeout=0.3, max_retries=2, prices=prices)
        batch = requests(client, 3)
        with pytest.raises(BudgetExceeded, match=r"stopped retrying: llm.max_requests \(3\) reached"):
            client.complete(batch)
        client.close()
        ledger = json.loads(ledger_path(cache).read_text())
        assert server.stats.requests == ledger["requests"] == 3
    assert ledger["cost_usd"] == pytest.approx(sum(worst_case_cost(r, prices) for r in batch))


def test_a_retried_request_counts_each_attempt(tmp_path):
    """Each request body fails once (a 429, 500, slow or malformed answer) and succeeds on its retry: two
    requests are four attempts, all within a cap of 4 and all in the ledger; a cap of 3 stops a retry."""
    with ChatServer(fault_pattern=(1,), slow_seconds=1.0) as server:
        client = chat(server, tmp_path / "ok", max_requests=4, timeout=0.5)
        assert len(client.complete(requests(client, 2))) == 2
        assert json.loads(ledger_path(tmp_path / "ok").read_text())["requests"] == 4 == server.stats.requests
        assert client.stats.calls == 2 and client.stats.attempts == 4
        capped = chat(server, tmp_path / "capped", max_requests=3, timeout=0.5)
        with pytest.raises(BudgetExceeded, match=r"stopped retrying"):
            capped.complete(requests(capped, 2, first=2))  # new bodies: each fails once again
        assert json.loads(ledger_path(tmp_path / "capped").read_text())["requests"] == 3
        assert server.stats.requests == 4 + 3


def request(n: int) -> ChatRequest:
    return ChatRequest.user(f"request {n}", sampling=Sampling(max_tokens=10), template="t@1")


def write_ledger(path, reserved: dict) -> None:
    path.write_text(json.dumps({"requests": 0, "cost_usd": 0.0, "reserved": reserved}))


def test_reservations_of_a_dead_process_are_dropped(tmp_path):
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    budget = Budget(tmp_path / "ledger.json", max_requests=5, max_cost_usd=None, prices={})
    write_ledger(budget.path, {f"{socket.gethostname()}:{finished.pid}": {"requests": 5, "cost_usd": 0.0}})
    assert budget.reserve([request(i) for i in range(3)]) == (3, None)
    held = json.loads(budget.path.read_text())["reserved"]
    assert list(held) == [f"{socket.gethostname()}:{os.getpid()}"]


def test_reservations_of_other_running_jobs_count_as_used(tmp_path):
    """Another job on this host (alive) holds 3 requests in flight, a job on another host 1: of a cap of 5,
    one is left; the reason names what is reserved."""
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        budget = Budget(tmp_path / "ledger.json", max_requests=5, max_cost_usd=None, prices={})
        write_ledger(
            budget.path,
            {f"{socket.gethostname()}:{running.pid}": {"requests": 3, "cost_usd": 0.0},
             "another-node:12345": {"requests": 1, "cost_usd": 0.0}},
        )  # fmt: skip
        n, why = budget.reserve([request(i) for i in range(3)])
        assert n == 1 and "0 requests sent so far and 5 reserved for requests in flight" in str(why)
    finally:
        running.kill()
        running.wait()
    # the other job on this host is gone: its 3 are dropped; ours (1) and the other node's (1) remain
    assert budget.reserve([request(i) for i in range(3)])[0] == 3


def test_spending_without_limits_is_recorded_for_a_later_capped_run(tmp_path):
    prices = {"input_per_million": 1.0, "output_per_million": 1.0}
    free = Budget(tmp_path / "ledger.json", max_requests=None, max_cost_usd=None, prices=prices)
    for i in range(3):
        free.settle(request(i), Completion(text="a", prompt_tokens=10, completion_tokens=5))
    free.release()
    assert free.spent() == (3, pytest.approx(3 * request_cost(10, 5, prices)))
    capped = Budget(tmp_path / "ledger.json", max_requests=4, max_cost_usd=None, prices=prices)
    n, why = capped.reserve([request(i) for i in range(3)])
    assert n == 1 and "3 requests sent so far" in str(why)


def test_a_cost_cap_without_prices_is_refused(tmp_path, monkeypatch):
    """llm.max_cost_usd with no price for the model would count every request at 0 USD: the config check
    and the client refuse it, naming llm.prices."""
    monkeypatch.chdir(tmp_path)
    config_path = write_project(tmp_path, ChatServer())  # never started
    config = yaml.safe_load(config_path.read_text())
    config["llm"]["max_cost_usd"] = 5.0
    del config["llm"]["prices"]
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    with pytest.raises(ConfigError, match=r"llm.max_cost_usd \(5.0\) is set but llm.prices gives model"):
        load(config_path)
    with pytest.raises(LLMError, match=r"set llm.prices"):
        CachedChat({**config["llm"], "cache_dir": str(tmp_path / "c")}, LOG)
    config["llm"]["prices"] = {"input_per_million": 2.5}  # half a price: answers would count 0 USD
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    with pytest.raises(
        ConfigError, match=r"llm.max_cost_usd \(5.0\) is set but llm.prices.output_per_million"
    ):
        load(config_path)
    config["llm"]["prices"] = {"input_per_million": 2.5, "output_per_million": 10.0}
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    assert load(config_path)["llm"]["max_cost_usd"] == 5.0


def test_costs_by_hand():
    """USD per million tokens on each side, a side without a price counting 0; the worst case counts every
    character of every message, 8 more per message (its role and separators), and max_tokens out."""
    prices = {"input_per_million": 3.0, "output_per_million": 15.0}
    assert request_cost(1_000_000, 0, prices) == 3.0
    assert request_cost(0, 2_000_000, prices) == 30.0
    assert request_cost(500_000, 500_000, {"output_per_million": 15.0}) == 7.5
    assert request_cost(500_000, 500_000, {"input_per_million": 3.0}) == 1.5
    asked = ChatRequest.user("x" * 92, system="y" * 42, sampling=Sampling(max_tokens=50), template="t@1")
    # at 1 USD a token in and 2 out: (92 + 8) + (42 + 8) = 150 tokens in, 50 out
    assert worst_case_cost(asked, {"input_per_million": 1e6, "output_per_million": 2e6}) == 150 + 2 * 50


def test_an_unpriced_cost_cap_is_refused_naming_the_model_and_the_way_out():
    llm = {"model": "gpt-x", "max_cost_usd": 5.0, "prices": {"input_per_million": 0.0}}
    assert unpriced_cost_cap(llm) == (
        "max_cost_usd (5.0) is set but llm.prices gives model 'gpt-x' no price (input_per_million and "
        "output_per_million are 0), so every request would count 0 USD and the cap would guard nothing: set "
        "llm.prices (USD per 1M tokens) or cap llm.max_requests instead"
    )
    assert unpriced_cost_cap({**llm, "prices": {"output_per_million": 0.5}}) == (
        "max_cost_usd (5.0) is set but llm.prices.input_per_million is 0 for model 'gpt-x', so every prompt "
        "token would count 0 USD and the cap would let them through: set llm.prices.input_per_million (USD "
        "per 1M tokens) or cap llm.max_requests instead"
    )
    assert "llm.prices.output_per_million is 0" in unpriced_cost_cap(
        {**llm, "prices": {"input_per_million": 1}}
    )
    assert unpriced_cost_cap({**llm, "prices": {"input_per_million": 0.1, "output_per_million": 0.5}}) is None
    assert unpriced_cost_cap({**llm, "max_cost_usd": None}) is None


def test_reservations_become_the_returned_cost_as_answers_arrive(tmp_path):
    """At 1 USD a token each way, a request(n) costs at most (9 + 8) + 10 = 27 USD: a cap of 94 holds three
    worst cases (81), not four. The ledger (in folders that do not exist yet) holds this process's
    reservations; each answer turns its reservations into its returned cost at once; a retry that reaches
    the cap exactly still fits."""
    prices = {"input_per_million": 1e6, "output_per_million": 1e6}
    budget = Budget(tmp_path / "new" / "folder" / "ledger.json", None, max_cost_usd=94.0, prices=prices)
    assert worst_case_cost(request(0), prices) == 27.0

    def mine() -> dict:
        return json.loads(budget.path.read_text())["reserved"][process_owner()]

    n, why = budget.reserve([request(i) for i in range(4)])
    assert n == 3 and why == (
        "llm.max_cost_usd (94.0) reached: 0.0000 USD spent so far and 81.0000 reserved for requests in "
        f"flight; the next request could cost up to 27.0000 (ledger {budget.path})"
    )
    assert mine() == {"requests": 3, "cost_usd": 81.0}
    budget.settle(request(0), Completion(text="a", prompt_tokens=10, completion_tokens=3))
    assert budget.spent() == (1, 13.0) and mine() == {"requests": 2, "cost_usd": 54.0}
    assert budget.reserve_retry(request(1)) is None  # 13 spent + 54 reserved + 27 = 94, the cap
    assert mine() == {"requests": 3, "cost_usd": 81.0}
    assert "13.0000 USD spent so far and 81.0000 reserved" in str(budget.reserve_retry(request(1)))
    # two attempts, one of them without usage (a timeout): 3 + 1 returned, and 27 at worst for the other
    timed_out_once = Completion("b", prompt_tokens=3, completion_tokens=1, attempts=2, unmetered_attempts=1)
    budget.settle(request(1), timed_out_once)
    assert budget.spent() == (3, 44.0) and mine() == {"requests": 1, "cost_usd": 27.0}
    budget.settle(request(2), Completion(text="c", prompt_tokens=1, completion_tokens=1))
    assert budget.spent() == (4, 46.0) and mine() == {"requests": 0, "cost_usd": 0.0}
    budget.release()
    assert json.loads(budget.path.read_text())["reserved"] == {}


def test_requests_without_limits_or_prices_are_counted_once_released(tmp_path):
    """No limits and no prices: nothing is written per answer, and release records the requests (at 0 USD)."""
    free = Budget(tmp_path / "ledger.json", max_requests=None, max_cost_usd=None, prices={})
    for i in range(2):
        free.settle(request(i), Completion(text="a", prompt_tokens=10, completion_tokens=5))
    assert not free.path.exists()
    free.release()
    assert free.spent() == (2, 0.0)


def test_a_job_waits_for_the_ledger_lock_another_job_holds(tmp_path):
    """Another process holds the ledger's lock (``<ledger>.lock``): a reservation waits for it, and goes on
    as soon as that process dies (a crashed job frees the lock)."""
    budget = Budget(tmp_path / "ledger.json", max_requests=5, max_cost_usd=None, prices={})
    hold = (
        "import sys, time; from filelock import FileLock; lock = FileLock(sys.argv[1]); lock.acquire(); "
        "print('held', flush=True); time.sleep(60)"
    )
    command = [sys.executable, "-c", hold, f"{budget.path}.lock"]
    holder = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with ThreadPoolExecutor(1) as pool:
            reserved = pool.submit(budget.reserve, [request(0)])
            time.sleep(0.5)
            assert not reserved.done() and not budget.path.exists()
            holder.kill()
            assert reserved.result(timeout=30) == (1, None)
    finally:
        holder.kill()
        holder.wait()
