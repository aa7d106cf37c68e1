"""The chat interface every LLM backend implements, its request/result types and the backend registry.

A backend turns ``ChatRequest``s into ``Completion``s; it never caches (``rmexplain.llm.client.CachedChat``
does). Backends subclass ``LLMBackend``, register by name (``@llm_backends.register("openai")``) and are
chosen by ``llm.backend`` in config, so a new LLM server or engine is one new class.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from rmexplain.registry import Registry
from rmexplain.settings import schema_defaults

SAMPLING_DEFAULTS: dict[str, Any] = schema_defaults("llm", "sampling")


class LLMError(RuntimeError):
    """An LLM backend could not be built, or requests failed after all retries."""


@dataclass(frozen=True)
class Sampling:
    """Sampling settings of one request; all of them are part of the cache key. A field left out has
    the schema's default (``llm.sampling``)."""

    temperature: float = SAMPLING_DEFAULTS["temperature"]
    top_p: float = SAMPLING_DEFAULTS["top_p"]
    max_tokens: int = SAMPLING_DEFAULTS["max_tokens"]
    seed: int | None = SAMPLING_DEFAULTS["seed"]

    @classmethod
    def from_config(cls, *layers: dict[str, Any] | None) -> Sampling:
        """Merge config layers (later ones win) over the schema's defaults; unknown keys are an error."""
        merged: dict[str, Any] = {}
        for layer in layers:
            merged.update(layer or {})
        unknown = set(merged) - set(cls.__dataclass_fields__)
        if unknown:
            raise LLMError(
                f"sampling: unknown key(s) {sorted(unknown)}; allowed {sorted(cls.__dataclass_fields__)}"
            )
        return cls(**merged)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion to make.

    ``template`` names the prompt template and its version (it enters the cache key and the
    ``generator`` column); ``variant`` distinguishes repeated samples of the same prompt (e.g. the
    15 random perturbations of one response): it enters the cache key and offsets the seed.
    """

    messages: tuple[tuple[str, str], ...]  # (role, content) pairs
    sampling: Sampling = field(default_factory=Sampling)
    template: str = ""
    variant: int = 0

    @classmethod
    def user(cls, content: str, *, system: str | None = None, **kwargs: Any) -> ChatRequest:
        """A request of one user message (optionally after a system message)."""
        messages = ((("system", system),) if system else ()) + (("user", content),)
        return cls(messages=messages, **kwargs)

    def message_dicts(self) -> list[dict[str, str]]:
        """Messages in the OpenAI / HF chat-template format."""
        return [{"role": role, "content": content} for role, content in self.messages]

    @property
    def seed(self) -> int | None:
        """The seed sent to the backend: the configured seed offset by the variant."""
        return None if self.sampling.seed is None else self.sampling.seed + self.variant


@dataclass
class Completion:
    """What a backend returns for one request: text and token counts, or an error after all retries."""

    text: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    error: str | None = None
    served_model: str | None = None  # the model name the server reported (e.g. a dated snapshot)
    attempts: int = 1  # times the request reached the server, retries included (each counts as a request)
    unmetered_attempts: int = 0  # of those, attempts billed perhaps but with no usage known (timeouts, ...)

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None


OnResult = Callable[[int, Completion], None]
# Asked before each retry of a request: None sends it, a reason (a spending limit reached) does not.
RetryGuard = Callable[[ChatRequest], str | None]


@runtime_checkable
class ChatBackend(Protocol):
    """Anything that answers chat requests. ``model_id`` identifies the model in the cache key."""

    model_id: str

    def complete(self, requests: Sequence[ChatRequest], on_result: OnResult) -> None:
        """Answer every request, calling ``on_result(index, completion)`` as each one finishes.

        Results must be reported as they arrive (not at the end) so the caller can persist them:
        a crash then loses at most the requests in flight.
        """
        ...


class LLMBackend:
    """Base of the LLM backends: what the workflow must know about a backend, with the defaults.

    A backend subclasses this, implements ``__init__(llm_config)`` and ``complete`` (see ``ChatBackend``),
    overrides what differs below, and registers with ``@llm_backends.register("<name>")``.
    """

    model_id: str
    conda_env = "core"  # envs/<conda_env>.yaml runs the jobs that call it
    # Set by the client; a backend that retries asks it before each retry (the budget counts every attempt).
    retry_guard: RetryGuard | None = None

    @staticmethod
    def gpus(llm: dict[str, Any]) -> int:
        """GPUs one job using this backend asks the scheduler for (``resources: gpu``)."""
        return 0

    @staticmethod
    def hub_refs(key: str, llm: dict[str, Any]) -> list[Any]:
        """Hub downloads of the ``llm`` section found at config ``key`` (``rmexplain.hub.HubRef``)."""
        return []

    @staticmethod
    def envvars(llm: dict[str, Any]) -> list[str]:
        """Environment variables the workflow must declare (API keys; never read into params)."""
        return []


llm_backends: Registry[type[LLMBackend]] = Registry(
    "llm.backend",
    {
        "openai": "rmexplain.llm.openai_backend",
        "vllm": "rmexplain.llm.vllm_backend",
        "transformers": "rmexplain.llm.hf_backend",
    },
    group="rmexplain.llm_backends",
    error=LLMError,
)


def backend_of(llm_config: dict[str, Any]) -> type[LLMBackend]:
    """The registered backend class of an ``llm`` section (default: the schema's ``llm.backend``)."""
    return llm_backends.get(llm_config.get("backend", schema_defaults("llm", "backend")))


def build_backend(llm_config: dict[str, Any]) -> ChatBackend:
    """Build the backend named by ``llm_config['backend']`` from the ``llm`` config section."""
    backend = llm_backends.get(llm_config.get("backend"))
    if not llm_config.get("model"):
        raise LLMError("llm.model is required (a model name, hub id or local path)")
    return backend(llm_config)
