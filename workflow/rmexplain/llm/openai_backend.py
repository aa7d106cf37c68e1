"""``llm.backend: openai`` — OpenAI or any OpenAI-compatible server (vLLM serve, llama.cpp, Ollama).

Requests run concurrently on one ``AsyncOpenAI`` client (over its aiohttp transport unless
``http_client: httpx``), at most ``concurrency`` at a time. Rate
limits (429), server errors (5xx), connection errors and timeouts are retried by the client itself
(``max_retries``, exponential backoff with jitter, honouring ``Retry-After``); each attempt has the
``timeout`` in seconds. A 200 answer whose body is not a usable chat completion (invalid JSON, no
choices, no text) is retried up to ``malformed_retries`` times. The API key is read from the
environment variable named by ``api_key_env`` and is never logged or stored.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from collections.abc import Sequence
from typing import Any

import openai

from rmexplain.llm.base import ChatRequest, Completion, LLMBackend, LLMError, OnResult, llm_backends
from rmexplain.llm.ratelimit import ClientLimiter, request_tokens
from rmexplain.settings import schema_defaults

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
NO_KEY = "not-needed"  # sent when api_key_env is null (local servers without authentication)


class MalformedCompletion(ValueError):
    """A 200 response that is not a usable chat completion."""


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
        limits = {**schema_defaults("llm", "rate_limit"), **(config.get("rate_limit") or {})}
        self.limiter = ClientLimiter(limits.get("tokens_per_minute"), limits.get("requests_per_minute"))
        self.token_limit_param, self.omitted = request_params(
            self.model, settings["token_limit_param"], settings["omit_params"]
        )
        if self.http_client not in ("aiohttp", "httpx"):
            raise LLMError(f"llm.http_client: {self.http_client!r} is not aiohttp or httpx")
        api_key(self.api_key_env)  # fail early, naming the variable
        # One line per HTTP request at INFO would flood the job log; retries are still logged.
        logging.getLogger("httpx").setLevel(logging.WARNING)
        logging.getLogger("httpx2").setLevel(logging.WARNING)

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
            max_retries=self.max_retries,
            timeout=self.timeout,
            http_client=http_client,
        )

    async def _observe(self, response: Any) -> None:
        """Every HTTP answer's status and rate-limit headers, for the client's buckets (retries included)."""
        self.limiter.observe(response.status_code, response.headers)

    async def _complete_all(self, requests: Sequence[ChatRequest], on_result: OnResult) -> None:
        semaphore = asyncio.Semaphore(self.concurrency)
        rejections: list[str] = []  # a rejected request parameter: every other request would fail alike
        async with self._client() as client:

            async def one(index: int, request: ChatRequest) -> None:
                async with semaphore:
                    if rejections:
                        return  # not sent: the job stops, and a rerun sends it with fixed parameters
                    contents = [content for _, content in request.messages]
                    await self.limiter.acquire(request_tokens(contents, request.sampling.max_tokens))
                    try:
                        completion = await self._complete_one(client, request)
                    except LLMError as err:
                        rejections.append(str(err))
                        return
                on_result(index, completion)

            await asyncio.gather(*(one(i, r) for i, r in enumerate(requests)))
        if rejections:
            raise LLMError(rejections[0])

    async def _complete_one(self, client: openai.AsyncOpenAI, request: ChatRequest) -> Completion:
        sampling = {
            "temperature": request.sampling.temperature,
            "top_p": request.sampling.top_p,
            **({"seed": request.seed} if request.seed is not None else {}),
        }
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": request.message_dicts(),
            **{k: v for k, v in sampling.items() if k not in self.omitted},
            self.token_limit_param: request.sampling.max_tokens,
            **self.extra_body,
        }
        last_error = ""
        for attempt in range(self.malformed_retries + 1):
            try:
                # The client's documented low-level call: same retries and timeouts as
                # chat.completions.create, without its per-request parameter transformation (half the CPU).
                return _parse(await client.post("/chat/completions", cast_to=object, body=payload))
            except (MalformedCompletion, json.JSONDecodeError, openai.APIResponseValidationError) as err:
                last_error = f"malformed response: {type(err).__name__}: {err}"
                log.warning("%s (attempt %d of %d)", last_error, attempt + 1, self.malformed_retries + 1)
            except openai.APIStatusError as err:
                if rejected_parameter(err):
                    raise LLMError(self._redact(self._rejection(err))) from None
                return Completion(text=None, error=self._redact(f"{type(err).__name__}: {err}"))
            except openai.APIError as err:  # the client already retried what is retryable
                return Completion(text=None, error=self._redact(f"{type(err).__name__}: {err}"))
        return Completion(text=None, error=last_error)

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
