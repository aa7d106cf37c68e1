"""The spending guard: llm.max_requests and llm.max_cost_usd hold across jobs (a ledger beside the cache),
a job stops before the request that could cross a limit, and what was paid for stays cached."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys

import pytest
import yaml
from test_llm_workflow import write_project

from rmexplain.config import load
from rmexplain.llm.base import ChatRequest, Completion, LLMError, Sampling
from rmexplain.llm.budget import Budget, BudgetExceeded, ledger_path, request_cost, worst_case_cost
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
    config["llm"]["prices"] = {"input_per_million": 2.5}
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    assert load(config_path)["llm"]["max_cost_usd"] == 5.0
