"""``backend: remote`` — a reward model behind an HTTP endpoint speaking vLLM's ``/classify`` or
``/pooling`` API (``vllm serve <rm> --runner pooling``), with retries and bounded concurrency.

Request and response shapes (vLLM 0.16 ``vllm.entrypoints.pooling``):

- ``POST {url}/classify`` ``{"model", "input": [[ids...], ...] | ["text", ...], "use_activation": false,
  "add_special_tokens": ...}`` -> ``{"data": [{"index", "label", "probs": [...], "num_classes"}], ...}``;
  with ``use_activation: false`` the ``probs`` are the raw logits;
- ``POST {url}/pooling`` ``{"model", "input", "task": "classify", "use_activation": false}`` ->
  ``{"data": [{"index", "object": "pooling", "data": [...]}], ...}``;
- ``send: messages``: one conversation per request, ``{"model", "messages": [...], ...}``, and the server
  applies its own chat template.

``send: token_ids`` (default) formats and tokenises locally with the RM's tokenizer exactly as the
transformers backend does (chat template, one BOS, ``max_length`` policy), so local and remote scores
agree token for token, and the same inputs are counted as cut; ``send: text`` sends the rendered template
text and ``send: messages`` the conversation, and the server's own tokenisation decides any cut (counted as
unknown). An API key, if any, comes from the
environment variable named by ``api_key_env`` and is never logged.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential, wait_random
from tqdm.auto import tqdm

from rmexplain.hub import hub_ref
from rmexplain.score.base import (
    LengthCheck,
    NonFiniteRewardError,
    RewardModelBackend,
    ScoringError,
    rm_backends,
)
from rmexplain.score.hf import (
    chat_messages,
    check_lengths,
    encode,
    load_tokenizer,
    max_length_of,
    read_reward,
    render_chat,
    unique_pairs,
)
from rmexplain.score.specs import RewardModelSpec, as_spec, check_model_spec

log = logging.getLogger(__name__)
TRANSIENT_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


class TransientHTTPError(RuntimeError):
    """A response worth retrying (overload, gateway error)."""


@dataclass
class Request:
    """One HTTP request: the unique-pair indices it covers and its JSON body."""

    rows: list[int]
    body: dict[str, Any]


def _is_transient(error: BaseException) -> bool:
    import aiohttp

    return isinstance(error, TransientHTTPError | aiohttp.ClientConnectionError | asyncio.TimeoutError)


def parse_vectors(spec: RewardModelSpec, payload: Any, expected: int) -> list[list[float]]:
    """The per-input output vectors of a ``/classify`` or ``/pooling`` response, in input order."""
    try:
        data = sorted(payload["data"], key=lambda item: item["index"])
        field = "probs" if spec.endpoint == "classify" else "data"
        vectors = [item[field] for item in data]
    except (KeyError, TypeError) as err:
        raise ScoringError(
            f"{spec.key}: unexpected /{spec.endpoint} response {str(payload)[:300]!r}"
        ) from err
    if len(vectors) != expected:
        raise ScoringError(
            f"{spec.key}: /{spec.endpoint} returned {len(vectors)} results for {expected} inputs"
        )
    # /pooling of a token-level task returns one vector per token: the reward is read at the last token.
    return [[float(x) for x in (v[-1] if v and isinstance(v[0], list) else v)] for v in vectors]


@rm_backends.register("remote")
class RemoteScorer(RewardModelBackend):
    """Scores (prompt, response) pairs through a vLLM-compatible HTTP endpoint."""

    own_tokenizer = True

    @staticmethod
    def hub_refs(name: str, spec: dict[str, Any]) -> list[Any]:
        """The tokenizer that formats inputs locally (none when sending chat messages)."""

        if spec.get("send", "token_ids") == "messages":
            return []
        key = f"reward_models.{name}"
        if spec.get("tokenizer"):
            return [hub_ref(spec["tokenizer"], None, f"{key}.tokenizer", tokenizer_only=True)]
        return [
            hub_ref(
                spec.get("model"),
                spec.get("revision"),
                f"{key}.model",
                gguf_file=spec.get("gguf_file"),
                tokenizer_only=True,
            )
        ]

    @staticmethod
    def check_spec(name: str, spec: dict[str, Any]) -> None:
        check_model_spec(name, spec)

    @staticmethod
    def check_model(spec: RewardModelSpec) -> None:
        """Its part of the model-spec check: the server's URL; a tokenizer where inputs are formatted here."""
        if not spec.url:
            raise ScoringError(f"{spec.key}.url (e.g. http://host:8000) is required for backend 'remote'")
        if spec.send != "token_ids" and spec.overlong != "truncate":
            raise ScoringError(
                f"{spec.key}.overlong: {spec.overlong} needs send: token_ids (with send: {spec.send} the "
                "server tokenises, so which inputs it cuts is unknown here)"
            )
        if spec.send != "messages" and not spec.tokenizer_source:
            raise ScoringError(
                f"{spec.key}: send: {spec.send} formats inputs locally and needs model or tokenizer (a local "
                "path or hub id of the RM's tokenizer); or use send: messages to let the server apply its "
                "chat template"
            )

    def __init__(self, name: str, spec: RewardModelSpec | dict[str, Any], **artifacts: Any) -> None:
        self.spec = as_spec(spec, name)
        if self.spec.backend != "remote":
            raise ScoringError(f"{self.spec.key}.backend is {self.spec.backend!r}, not 'remote'")
        if self.spec.read.attr != "logits":
            raise ScoringError(f"{self.spec.key}.read: a remote RM returns logits only; use 'logits[:, i]'")
        self.tokenizer = None if self.spec.send == "messages" else load_tokenizer(self.spec)
        self.limit = None if self.tokenizer is None else max_length_of(self.spec, self.tokenizer)
        self.url = f"{str(self.spec.url).rstrip('/')}/{self.spec.endpoint}"
        self._headers = {"Content-Type": "application/json", **self._auth_header()}

    def _auth_header(self) -> dict[str, str]:
        if not self.spec.api_key_env:
            return {}
        key = os.environ.get(self.spec.api_key_env)
        if not key:
            raise ScoringError(
                f"{self.spec.key}.api_key_env: environment variable {self.spec.api_key_env} is unset"
            )
        return {"Authorization": f"Bearer {key}"}

    def length_check(self, prompts: Sequence[str], responses: Sequence[str]) -> LengthCheck:
        """``send: token_ids``: which pairs are over ``max_length`` (cut here); otherwise unknown."""
        if self.spec.send != "token_ids":
            return LengthCheck.unknown()
        assert self.tokenizer is not None
        return check_lengths(self.tokenizer, self.spec, self.limit, prompts, responses)

    # ---- request bodies ----

    def _base_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"use_activation": False}
        if self.spec.model:
            body["model"] = self.spec.model
        if self.spec.endpoint == "pooling":
            body["task"] = "classify"
        return body

    def _text(self, prompt: str, response: str) -> tuple[str, bool]:
        """Rendered text and whether the server should add its special tokens (not when the text has BOS)."""
        assert self.tokenizer is not None
        text = render_chat(self.tokenizer, self.spec, prompt, response)
        bos = self.tokenizer.bos_token
        return text, not (bos and text.startswith(bos))

    def requests(self, pairs: Sequence[tuple[str, str]]) -> list[Request]:
        """Request bodies covering every pair: batches of ``batch_size`` inputs, or one conversation each."""
        if self.spec.send == "messages":
            return [
                Request([i], {**self._base_body(), "messages": chat_messages(self.spec, p, r)})
                for i, (p, r) in enumerate(pairs)
            ]
        if self.spec.send == "text":
            texts = [self._text(p, r) for p, r in pairs]
            groups: dict[bool, list[int]] = {}
            for i, (_, special) in enumerate(texts):
                groups.setdefault(special, []).append(i)
            items = [
                (rows, {"input": [texts[i][0] for i in rows], "add_special_tokens": special})
                for special, all_rows in groups.items()
                for rows in self._chunks(all_rows)
            ]
        else:
            assert self.tokenizer is not None
            ids = [
                encode(self.tokenizer, self.spec, p, r, self.limit, i).ids for i, (p, r) in enumerate(pairs)
            ]
            items = [
                (rows, {"input": [ids[i] for i in rows]}) for rows in self._chunks(list(range(len(pairs))))
            ]
        return [Request(rows, {**self._base_body(), **extra}) for rows, extra in items]

    def _chunks(self, rows: list[int]) -> list[list[int]]:
        size = self.spec.batch_size
        return [rows[i : i + size] for i in range(0, len(rows), size)]

    # ---- transport ----

    async def _post(self, session: Any, request: Request) -> list[list[float]]:
        async with session.post(self.url, json=request.body, headers=self._headers) as response:
            if response.status in TRANSIENT_STATUS:
                raise TransientHTTPError(f"HTTP {response.status}")
            if response.status != 200:
                detail = (await response.text())[:500]
                raise ScoringError(
                    f"{self.spec.key}: {self.url} answered HTTP {response.status} for unique inputs "
                    f"{request.rows[:5]}{'...' if len(request.rows) > 5 else ''}: {detail}"
                )
            return parse_vectors(self.spec, await response.json(), len(request.rows))

    async def _post_with_retries(
        self, session: Any, limiter: asyncio.Semaphore, request: Request
    ) -> list[list[float]]:
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.spec.max_retries + 1),
            wait=wait_exponential(multiplier=self.spec.retry_backoff_s, max=30)
            + wait_random(0, self.spec.retry_backoff_s),
            retry=retry_if_exception(_is_transient),
            before_sleep=lambda state: log.warning(
                "%s: %s on attempt %d; retrying",
                self.spec.key,
                state.outcome.exception(),
                state.attempt_number,
            ),
            reraise=True,
        )
        async with limiter:
            try:
                async for attempt in retrying:
                    with attempt:
                        return await self._post(session, request)
            except (TransientHTTPError, OSError, asyncio.TimeoutError) as err:
                raise ScoringError(
                    f"{self.spec.key}: {self.url} failed after {self.spec.max_retries + 1} attempts: {err!r}"
                ) from err
        raise AssertionError("unreachable")

    async def _post_all(self, requests: Sequence[Request]) -> list[list[list[float]]]:
        import aiohttp

        limiter = asyncio.Semaphore(self.spec.concurrency)
        timeout = aiohttp.ClientTimeout(total=self.spec.timeout_s)
        connector = aiohttp.TCPConnector(limit=self.spec.concurrency)
        async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
            tasks = [asyncio.ensure_future(self._post_with_retries(session, limiter, r)) for r in requests]
            try:
                with tqdm(
                    total=len(tasks), desc=f"scoring {self.spec.name} (remote)", mininterval=5
                ) as progress:
                    for task in asyncio.as_completed(tasks):
                        await task
                        progress.update(1)
            finally:
                for task in tasks:
                    task.cancel()
            return [t.result() for t in tasks]

    def score(self, prompts: Sequence[str], responses: Sequence[str]) -> list[float]:
        """Rewards r(x, y), one per pair, in input order (identical pairs are sent once)."""
        import torch

        pairs, rows = unique_pairs(prompts, responses)
        requests = self.requests(pairs)
        results = asyncio.run(self._post_all(requests))
        vectors: list[list[float]] = [[] for _ in pairs]
        for request, result in zip(requests, results, strict=True):
            for i, vector in zip(request.rows, result, strict=True):
                vectors[i] = vector
        rewards = read_reward(self.spec, {"logits": torch.tensor(vectors, dtype=torch.float32)}).tolist()
        bad = [row for row, i in enumerate(rows) if not math.isfinite(rewards[i])]
        if bad:
            raise NonFiniteRewardError(self.spec.key, bad)
        return [rewards[i] for i in rows]
