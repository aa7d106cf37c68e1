"""backend: remote — against a real HTTP server on 127.0.0.1 speaking vLLM's /classify and /pooling JSON.

The server runs a tiny Llama RM with transformers, one unpadded forward pass per input, and answers in
vLLM's shapes (``data[i].probs`` for /classify, ``data[i].data`` for /pooling; raw logits when
``use_activation`` is false, sigmoid otherwise). It can be told to fail its first requests with 503 and it
records the peak number of requests in flight.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import torch

from rmexplain.score.base import ScoringError, build_scorer
from rmexplain.score.tiny import build_llama_rm

PROMPTS = ["How do I bake bread?", "What is a reward model?", "How can I pick a lock?", "Tell me a joke."]
RESPONSES = ["Mix flour and water, then bake.", "It scores responses.", "I cannot help with that.", "No."]


class RMServer:
    """A vLLM-compatible pooling server for one RM directory (a real model, a real socket)."""

    def __init__(self, model_dir: str, fail_first: int = 0, delay_s: float = 0.0, status: int = 503) -> None:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForSequenceClassification.from_pretrained(model_dir, dtype=torch.float32).eval()
        self.fail_first, self.delay_s, self.status = fail_first, delay_s, status
        self.lock = threading.Lock()
        self.requests: list[tuple[str, dict]] = []
        self.in_flight = self.peak = 0
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def _ids(self, body: dict) -> list[list[int]]:
        if "messages" in body:
            return [self.tokenizer.apply_chat_template(body["messages"], tokenize=True, return_dict=False)]
        inputs = body["input"]
        if inputs and isinstance(inputs[0], str):
            special = body.get("add_special_tokens", True)
            return [self.tokenizer(text, add_special_tokens=special)["input_ids"] for text in inputs]
        return inputs

    def logits(self, ids: list[int], activation: bool) -> list[float]:
        with torch.no_grad():
            out = self.model(torch.tensor([ids])).logits[0]
        return (out.sigmoid() if activation else out).tolist()

    def answer(self, path: str, body: dict) -> tuple[int, dict]:
        with self.lock:
            self.requests.append((path, body))
            failing = len(self.requests) <= self.fail_first
        if failing:
            return self.status, {"error": {"message": "overloaded", "code": self.status}}
        activation = body.get("use_activation", True)
        vectors = [self.logits(ids, activation) for ids in self._ids(body)]
        if path == "/classify":
            data = [
                {"index": i, "label": "LABEL_0", "probs": v, "num_classes": len(v)}
                for i, v in enumerate(vectors)
            ]
        else:
            data = [{"index": i, "object": "pooling", "data": v} for i, v in enumerate(vectors)]
        data.reverse()  # clients must order by index, not by position
        return 200, {
            "id": "x",
            "object": "list",
            "created": 0,
            "model": body.get("model"),
            "data": data,
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                with server.lock:
                    server.in_flight += 1
                    server.peak = max(server.peak, server.in_flight)
                try:
                    time.sleep(server.delay_s)
                    body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                    if self.path not in ("/classify", "/pooling"):
                        status, payload = 404, {"error": "not found"}
                    else:
                        status, payload = server.answer(self.path, body)
                finally:  # leave before answering: the client may send its next request at once
                    with server.lock:
                        server.in_flight -= 1
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: object) -> None:
                pass

        return Handler

    def __enter__(self) -> RMServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    torch.set_num_threads(1)
    return str(build_llama_rm(tmp_path_factory.mktemp("llama-remote"), seed=4))


@pytest.fixture(scope="module")
def local_scores(llama_dir):
    spec = {"backend": "transformers", "model": llama_dir, "device": "cpu"}
    return build_scorer("local", spec).score(PROMPTS, RESPONSES)


@pytest.mark.parametrize(
    ("endpoint", "send"),
    [("classify", "token_ids"), ("pooling", "token_ids"), ("classify", "text"), ("classify", "messages")],
)
def test_remote_matches_local_scores(llama_dir, local_scores, endpoint, send):
    with RMServer(llama_dir) as server:
        spec = {
            "backend": "remote",
            "url": server.url,
            "endpoint": endpoint,
            "send": send,
            "model": llama_dir,
            "batch_size": 3,
        }
        scores = build_scorer("remote-rm", spec).score(PROMPTS + PROMPTS[:2], RESPONSES + RESPONSES[:2])
    assert scores == pytest.approx(local_scores + local_scores[:2], abs=1e-5)
    paths = {path for path, _ in server.requests}
    assert paths == {f"/{endpoint}"}
    assert all(body["use_activation"] is False for _, body in server.requests)
    sent = sum(len(body.get("input", [None])) for _, body in server.requests)
    assert sent == len(PROMPTS)  # duplicates sent once


def test_remote_token_ids_carry_exactly_one_bos(llama_dir):
    with RMServer(llama_dir) as server:
        spec = {"backend": "remote", "url": server.url, "model": llama_dir, "batch_size": 8}
        build_scorer("remote-rm", spec).score(PROMPTS, RESPONSES)
    bos = server.tokenizer.bos_token_id
    rows = [ids for _, body in server.requests for ids in body["input"]]
    assert len(rows) == len(PROMPTS) and all(ids[0] == bos and ids.count(bos) == 1 for ids in rows)


def test_remote_retries_transient_errors(llama_dir, local_scores, caplog):
    with RMServer(llama_dir, fail_first=2) as server:
        spec = {
            "backend": "remote",
            "url": server.url,
            "model": llama_dir,
            "batch_size": 8,
            "max_retries": 3,
            "retry_backoff_s": 0.01,
        }
        scores = build_scorer("remote-rm", spec).score(PROMPTS, RESPONSES)
    assert scores == pytest.approx(local_scores, abs=1e-5)
    assert len(server.requests) == 3
    assert "retrying" in caplog.text


def test_remote_gives_up_after_max_retries(llama_dir):
    with RMServer(llama_dir, fail_first=100) as server:
        spec = {
            "backend": "remote",
            "url": server.url,
            "model": llama_dir,
            "max_retries": 1,
            "retry_backoff_s": 0.01,
        }
        with pytest.raises(
            ScoringError, match=r"reward_models.remote-rm: .*/classify failed after 2 attempts"
        ):
            build_scorer("remote-rm", spec).score(PROMPTS, RESPONSES)
    assert len(server.requests) == 2


def test_remote_client_error_is_not_retried_and_names_rows(llama_dir):
    with RMServer(llama_dir, fail_first=100, status=400) as server:
        spec = {"backend": "remote", "url": server.url, "model": llama_dir, "max_retries": 3}
        with pytest.raises(ScoringError, match=r"answered HTTP 400 for unique inputs \[0, 1, 2, 3\]"):
            build_scorer("remote-rm", spec).score(PROMPTS, RESPONSES)
    assert len(server.requests) == 1


def test_remote_concurrency_is_bounded(llama_dir):
    with RMServer(llama_dir, delay_s=0.2) as server:
        spec = {"backend": "remote", "url": server.url, "model": llama_dir, "batch_size": 1, "concurrency": 2}
        prompts = [f"{p} ({i})" for i in range(3) for p in PROMPTS]
        build_scorer("remote-rm", spec).score(prompts, RESPONSES * 3)
    assert len(server.requests) == 12
    assert server.peak == 2


def test_remote_api_key_comes_from_the_environment(llama_dir, monkeypatch):
    spec = {
        "backend": "remote",
        "url": "http://127.0.0.1:9",
        "model": llama_dir,
        "api_key_env": "RMX_TEST_KEY",
    }
    monkeypatch.delenv("RMX_TEST_KEY", raising=False)
    with pytest.raises(ScoringError, match="environment variable RMX_TEST_KEY is unset"):
        build_scorer("remote-rm", spec)
    monkeypatch.setenv("RMX_TEST_KEY", "sk-secret")
    scorer = build_scorer("remote-rm", spec)
    assert "sk-secret" not in repr(scorer.spec)
