"""The spending guard: llm.max_requests and llm.max_cost_usd hold across jobs (a ledger beside the cache),
a job stops before the request that could cross a limit, and what was paid for stays cached."""

from __future__ import annotations

import json
import logging

import pytest

from rmexplain.llm.budget import BudgetExceeded, ledger_path, request_cost, worst_case_cost
from rmexplain.llm.client import CachedChat
from rmexplain.llm.devserver import ChatServer

LOG = logging.getLogger("test_llm_budget")


def chat(server: ChatServer, cache, **limits: object) -> CachedChat:
    llm = {"backend": "openai", "model": "dev", "base_url": server.base_url, "api_key_env": None,
           "cache_dir": str(cache), "concurrency": 4, **limits}  # fmt: skip
    return CachedChat(llm, LOG)


def requests(client: CachedChat, n: int) -> list:
    sampling = client.sampling({"max_tokens": 20})
    return [client.request(f"Say something about item {i}.", sampling, "t@1") for i in range(n)]


def test_max_requests_stops_before_the_request_that_crosses_it_across_jobs(tmp_path):
    cache = tmp_path / "llm"
    with ChatServer() as server:
        first = chat(server, cache, max_requests=5)
        with pytest.raises(BudgetExceeded, match=r"stopped before request 6 of 8 .*llm.max_requests \(5\)"):
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
