"""``llm.backend: openai`` — OpenAI or any OpenAI-compatible server (vLLM serve, llama.cpp, Ollama).

Requests run concurrently on one ``AsyncOpenAI`` client (over its aiohttp transport unless
``http_client: httpx``), at most ``concurrency`` at a time. Request timeouts and conflicts (408, 409), rate
limits (429), server errors (5xx), timeouts and dropped connections are retried here, not by the openai
client (``max_retries``, exponential backoff with jitter, or the server's ``retry-after``), so that each
attempt waits for the rate limit (``llm.rate_limit``) and each retry is first asked of the spending guard
(``retry_guard``: a provider bills attempts too); each attempt has the ``timeout`` in seconds. A 200 answer
whose body is not a usable chat completion (invalid JSON, no choices, no text) is retried up to
``malformed_retries`` times. A refused connection or an unknown host is tried ``CONNECT_RETRIES`` more
times, then ends the batch with an error naming ``llm.base_url``: no other request could be sent either.
The API key is read from the environment variable named by ``api_key_env`` and is never logged or stored.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rmexplain.llm.base import ChatRequest, Completion, LLMBackend, LLMError, OnResult, llm_backends
from rmexplain.llm.ratelimit import ClientLimiter, SharedLimit, request_tokens, retry_after, shared_limits_dir
from rmexplain.settings import schema_defaults

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

# The `llm` keys of this backend, with the schema's defaults.
OPENAI_KEYS = (
    "base_url", "api_key_env", "concurrency", "max_retries", "timeout", "malformed_retries",
    "extra_body", "http_client", "token_limit_param", "omit_params",
)  # fmt: skip
OPENAI_DEFAULTS: dict[str, Any] = {key: schema_defaults("llm", key) for key in OPENAI_KEYS}
# OpenAI's reasoning models take max_completion_tokens and only the default temperature and top_p.
REASONING_MODEL_PREFIXES = ("o1", "o3", "o4", "gpt-5")
# Which config key fixes a request parameter a server rejects.
PARAM_KEYS = {
    "max_tokens": "llm.token_limit_param",
    "max_completion_tokens": "llm.token_limit_param",
    "temperature": "llm.omit_params",
    "top_p": "llm.omit_params",
    "seed": "llm.omit_params",
}
DEFAULT_ENDPOINT = "https://api.openai.com/v1"  # where the openai client sends without a base_url
NO_KEY = "not-needed"  # sent when api_key_env is null (local servers without authentication)


RETRY_STATUS = frozenset({408, 409, 429})  # and every 5xx
INITIAL_BACKOFF_S, MAX_BACKOFF_S = 0.5, 8.0  # the openai client's exponential backoff
MAX_RETRY_AFTER_S = 60.0  # a longer retry-after is not followed: the backoff applies
CONNECT_RETRIES = 2  # a refused connection is tried this often more (a server restarting), then the job stops


class MalformedCompletion(ValueError):
    """A 200 response that is not a usable chat completion."""


class ServerUnreachable(LLMError):
    """No connection to ``llm.base_url`` (refused, or the host unknown): no request could be sent."""


class _Stop(Exception):
    """End the batch: every other request would fail alike. ``completion``: the failed one, if it was sent."""

    def __init__(self, message: str, completion: Completion | None) -> None:
        super().__init__(message)
        self.message, self.completion = message, completion


@dataclass
class _Tally:
    """One request's attempts so far (``unmetered``: billed perhaps, with no usage known)."""

    attempts: int = 0
    unmetered: int = 0
    retries: int = 0
    malformed: int = 0
    refused: int = 0  # connections refused (nothing sent)
    refused_by_limit: bool = False  # the last attempt was answered 429 (the server counted nothing)
    last_error: str = ""

    def sent(self, *, metered: bool) -> None:
        self.attempts += 1
        self.unmetered += not metered

    def done(self, completion: Completion) -> Completion:
        completion.attempts, completion.unmetered_attempts = self.attempts, self.unmetered
        return completion

    def failed(self, error: str) -> Completion:
        return self.done(Completion(text=None, error=f"{error} ({self.attempts} attempts)"))


def retryable(status: int) -> bool:
    """Statuses the openai client retries: request timeout, conflict, rate limit, server errors."""
    return status in RETRY_STATUS or status >= 500


def backoff(retry: int) -> float:
    """Seconds before retry number ``retry`` (1, 2, ...): exponential, capped, with up to 25 % jitter."""
    return min(INITIAL_BACKOFF_S * 2.0 ** (retry - 1), MAX_BACKOFF_S) * (1 - 0.25 * random.random())


def cannot_connect(err: BaseException) -> BaseException | None:
    """The refused connection or unknown host behind ``err``, if that is what it is."""
    seen: BaseException | None = err
    for _ in range(16):  # a cause chain, never a cycle
        if seen is None:
            return None
        if isinstance(seen, (ConnectionRefusedError, socket.gaierror)):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def api_key(api_key_env: str | None) -> str:
    """The key from the environment variable ``api_key_env`` (never from config)."""
    if not api_key_env:
        return NO_KEY
    value = os.environ.get(api_key_env)
    if not value:
        raise LLMError(
            f"llm.api_key_env: environment variable {api_key_env} is not set; export it before running "
            "(or set llm.api_key_env: null for a local server without authentication)"
        )
    return value


def _parse(data: Any) -> Completion:
    """A Completion from a chat-completions JSON body; MalformedCompletion if it is not one."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedCompletion("response has no choices")
    message = choices[0].get("message")
    text = message.get("content") if isinstance(message, dict) else None
    if not isinstance(text, str):
        raise MalformedCompletion("first choice has no text content")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    served = data.get("model")
    return Completion(
        text=text,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        finish_reason=choices[0].get("finish_reason"),
        served_model=served if isinstance(served, str) and served else None,
    )


@llm_backends.register("openai")
class OpenAIBackend(LLMBackend):
    """Bounded-concurrency chat completions over the openai client."""

    @staticmethod
    def envvars(llm: dict[str, Any]) -> list[str]:
        """The API key's variable (``api_key_env``; empty for a keyless local server)."""
        name = llm.get("api_key_env", OPENAI_DEFAULTS["api_key_env"])
        return [name] if name else []

    def __init__(self, config: dict[str, Any]) -> None:
        settings = {**OPENAI_DEFAULTS, **{k: v for k, v in config.items() if k in OPENAI_DEFAULTS}}
        self.model = str(config["model"])
        self.model_id = f"openai:{self.model}"
        self.base_url = settings["base_url"]
        self.api_key_env = settings["api_key_env"]
        self.concurrency = int(settings["concurrency"])
        self.max_retries = int(settings["max_retries"])
        self.timeout = float(settings["timeout"])
        self.malformed_retries = int(settings["malformed_retries"])
        self.extra_body = dict(settings["extra_body"] or {})
        self.http_client = str(settings["http_client"])
        self.limiter = self._limiter(config)
        self.token_limit_param, self.omitted = request_params(
            self.model, settings["token_limit_param"], settings["omit_params"]
        )
        if self.http_client not in ("aiohttp", "httpx"):
            raise LLMError(f"llm.http_client: {self.http_client!r} is not aiohttp or httpx")
        api_key(self.api_key_env)  # fail early, naming the variable
        # One line per HTTP request at INFO would flood the job log; retries are still logged.
        logging.getLogger("httpx").setLevel(logging.WARNING)
        logging.getLogger("httpx2").setLevel(logging.WARNING)

    def _limiter(self, config: dict[str, Any]) -> ClientLimiter:
        """``llm.rate_limit``, held with every process that sends with the same key to the same endpoint and
        model through the cache in ``cache_dir`` (without one, by this backend alone)."""
        limits = {**schema_defaults("llm", "rate_limit"), **(config.get("rate_limit") or {})}
        tpm, rpm = limits.get("tokens_per_minute"), limits.get("requests_per_minute")
        shared = None
        if (tpm or rpm) and config.get("cache_dir"):
            endpoint = self.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_ENDPOINT  # the client's
            shared = SharedLimit(
                shared_limits_dir(config["cache_dir"]), endpoint, api_key(self.api_key_env), self.model
            )
        return ClientLimiter(tpm, rpm, shared=shared)

    def complete(self, requests: Sequence[ChatRequest], on_result: OnResult) -> None:
        coroutine = self._complete_all(requests, on_result)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(coroutine)
            return
        # Called from inside an event loop (e.g. a notebook): run ours in a helper thread.
        thread = threading.Thread(target=asyncio.run, args=(coroutine,))
        thread.start()
        thread.join()

    def _client(self) -> openai.AsyncOpenAI:
        import openai  # half a second to import: only a job that calls the LLM pays it, not the config check

        hooks = {"response": [self._observe]} if self.limiter.active else {}
        http_client = openai.DefaultAsyncHttpxClient(event_hooks=hooks) if hooks else None
        if self.http_client == "aiohttp":  # the openai client's aiohttp transport: less CPU per request
            try:
                http_client = openai.DefaultAioHttpClient(event_hooks=hooks)
            except RuntimeError:
                log.warning("llm.http_client aiohttp: aiohttp is not installed; using httpx")
        return openai.AsyncOpenAI(
            api_key=api_key(self.api_key_env),
            base_url=self.base_url,
            max_retries=0,  # retried in _complete_one, where each attempt is metered and counted
            timeout=self.timeout,
            http_client=http_client,
        )

    async def _observe(self, response: Any) -> None:
        """Every HTTP answer's status and rate-limit headers, for the client's buckets (retries included)."""
        self.limiter.observe(response.status_code, response.headers)

    async def _complete_all(self, requests: Sequence[ChatRequest], on_result: OnResult) -> None:
        semaphore = asyncio.Semaphore(self.concurrency)
        stops: list[str] = []  # a rejected parameter or no connection: every other request would fail alike
        async with self._client() as client:

            async def one(index: int, request: ChatRequest) -> None:
                async with semaphore:
                    if stops:
                        return  # not sent: the job stops, and a rerun sends it once the cause is fixed
                    try:
                        completion = await self._complete_one(client, request)
                    except _Stop as stop:
                        stops.append(stop.message)
                        if stop.completion is None:
                            return
                        completion = stop.completion
                on_result(index, completion)

            await asyncio.gather(*(one(i, r) for i, r in enumerate(requests)))
        if stops:
            raise (ServerUnreachable if stops[0].startswith("llm.base_url") else LLMError)(stops[0])

    def _payload(self, request: ChatRequest) -> dict[str, Any]:
        sampling = {
            "temperature": request.sampling.temperature,
            "top_p": request.sampling.top_p,
            **({"seed": request.seed} if request.seed is not None else {}),
        }
        return {
            "model": self.model,
            "messages": request.message_dicts(),
            **{k: v for k, v in sampling.items() if k not in self.omitted},
            self.token_limit_param: request.sampling.max_tokens,
            **self.extra_body,
        }

    async def _complete_one(self, client: openai.AsyncOpenAI, request: ChatRequest) -> Completion:
        """One request, with its retries: each attempt waits for the rate limit, and each retry asks the
        ``retry_guard`` first. Raises ``_Stop`` when no other request could succeed either."""
        payload = self._payload(request)
        tokens = request_tokens([content for _, content in request.messages], request.sampling.max_tokens)
        tally = _Tally()
        while True:
            if tally.attempts and self.retry_guard is not None:
                why = self.retry_guard(request)
                if why is not None:
                    return tally.failed(f"{tally.last_error}; not retried: {why}")
            sent_at = await self.limiter.acquire(tokens)
            attempts = tally.attempts
            try:
                completion, wait = await self._attempt(client, payload, tally)
            finally:
                counted = tally.attempts > attempts and not tally.refused_by_limit
                self.limiter.done(tokens, sent_at, counted=counted)
            if completion is not None:
                return completion
            await asyncio.sleep(wait)

    async def _attempt(
        self, client: openai.AsyncOpenAI, payload: dict[str, Any], tally: _Tally
    ) -> tuple[Completion | None, float]:
        """Send one attempt: its completion (an answer, or a failure after the last retry), or None and the
        seconds to wait before the next attempt (the server's ``retry-after``, else the backoff's)."""
        import openai

        tally.refused_by_limit = False
        try:
            # The client's documented low-level call, without its per-request parameter transformation
            # (half the CPU of chat.completions.create); retries are ours (max_retries=0 there).
            completion = _parse(await client.post("/chat/completions", cast_to=object, body=payload))
            tally.sent(metered=True)
            return tally.done(completion), None
        except (MalformedCompletion, json.JSONDecodeError, openai.APIResponseValidationError) as err:
            tally.sent(metered=False)
            tally.malformed += 1
            tally.last_error = f"malformed response: {type(err).__name__}: {err}"
            if tally.malformed > self.malformed_retries:
                return tally.failed(tally.last_error), 0.0
            log.warning("%s (retry %d of %d)", tally.last_error, tally.malformed, self.malformed_retries)
            return None, 0.0
        except openai.APIStatusError as err:
            tally.sent(metered=True)  # an error answer: nothing generated, nothing billed
            tally.refused_by_limit = err.status_code == 429
            tally.last_error = self._redact(f"{type(err).__name__}: {err}")
            if rejected_parameter(err):
                raise _Stop(self._redact(self._rejection(err)), tally.failed(tally.last_error)) from None
            if not retryable(err.status_code) or tally.retries >= self.max_retries:
                return tally.failed(tally.last_error), 0.0
            return None, self._retry(tally, retry_after(err.response.headers))
        except openai.APIConnectionError as err:  # timeouts included
            unreachable = cannot_connect(err)
            if unreachable is None:
                tally.sent(metered=False)  # a timeout or a dropped connection: perhaps answered and billed
                tally.last_error = self._redact(f"{type(err).__name__}: {err}")
                if tally.retries >= self.max_retries:
                    return tally.failed(tally.last_error), 0.0
                return None, self._retry(tally, None)
            tally.refused += 1  # nothing sent: counted apart from the retries
            if tally.refused > CONNECT_RETRIES:
                raise _Stop(self._unreachable(client, unreachable, tally.refused), None) from None
            return None, backoff(tally.refused)

    def _retry(self, tally: _Tally, retry_after_s: float | None) -> float:
        """Count one more retry and return the seconds to wait before it: the server's ``retry-after``
        (up to ``MAX_RETRY_AFTER_S``), else the backoff."""
        tally.retries += 1
        wait = retry_after_s
        if wait is None or not 0 <= wait <= MAX_RETRY_AFTER_S:
            wait = backoff(tally.retries)
        log.info("%s; retry %d of %d in %.2f s", tally.last_error, tally.retries, self.max_retries, wait)
        return wait

    def _unreachable(self, client: openai.AsyncOpenAI, cause: BaseException, tries: int) -> str:
        return (
            f"llm.base_url {str(client.base_url).rstrip('/')}: cannot connect ({type(cause).__name__}: "
            f"{cause}), {tries} tries over a few seconds; is the server running and the URL right? "
            "Nothing was sent; the job stops here rather than retry every request."
        )

    def _rejection(self, err: openai.APIStatusError) -> str:
        key = PARAM_KEYS.get(str(err.param), "llm.extra_body")
        return (
            f"{key}: the server rejected the request parameter {err.param!r} for model {self.model!r} "
            f"(HTTP {err.status_code}: {err.message}); this request sent {self.token_limit_param} and "
            f"omitted {sorted(self.omitted) or 'nothing'}. Set {key} in the config (see config/README.md)."
        )

    def _redact(self, message: str) -> str:
        """Remove the API key from a server's error message (some echo it back)."""
        key = api_key(self.api_key_env)
        return message.replace(key, "***") if key != NO_KEY else message


def is_reasoning_model(model: str) -> bool:
    """Whether ``model`` is one of OpenAI's reasoning models (o-series, GPT-5), by its name."""
    return model.rsplit("/", 1)[-1].startswith(REASONING_MODEL_PREFIXES)


def request_params(
    model: str, token_limit_param: str, omit_params: list[str] | None
) -> tuple[str, frozenset]:
    """The token-limit field and the sampling fields not to send: ``auto`` / ``None`` follow the model's
    name (reasoning models: ``max_completion_tokens``, no temperature or top_p), else what config says."""
    reasoning = is_reasoning_model(model)
    if token_limit_param == "auto":
        token_limit_param = "max_completion_tokens" if reasoning else "max_tokens"
    if omit_params is None:
        omit_params = ["temperature", "top_p"] if reasoning else []
    return token_limit_param, frozenset(omit_params)


def rejected_parameter(err: openai.APIStatusError) -> bool:
    """A client error (4xx, not a rate limit or timeout) that names a request parameter."""
    return 400 <= err.status_code < 500 and err.status_code not in (408, 409, 429) and bool(err.param)
