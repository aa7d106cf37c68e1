"""The cached chat client that perturbation methods and discovery use: ``chat.complete(requests) -> texts``.

It answers what it can from the persistent cache, sends only the rest to the backend (built lazily,
so a fully cached rerun never loads a model or opens a connection), stores every completion as it
arrives, and keeps the counts each rule logs: calls made, cache hits, tokens in/out, estimated cost, and
the model names the server reported for the answers it returned (``served_models``; cache hits carry the
name stored with them), which ``write_llm_use`` records beside a job's outputs for the provenance record.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from rmexplain.llm.base import ChatBackend, ChatRequest, Completion, LLMError, Sampling, build_backend
from rmexplain.llm.budget import Budget, BudgetExceeded, request_cost
from rmexplain.llm.cache import CompletionCache, request_key
from rmexplain.settings import schema_defaults

# The `llm` keys the client itself reads, with the schema's defaults (the backends fill their own).
CLIENT_KEYS = ("backend", "cache_dir", "system_prompt", "sampling", "prices")
LLM_DEFAULTS: dict[str, Any] = {key: schema_defaults("llm", key) for key in CLIENT_KEYS}
NOT_REPORTED = "(not reported)"  # an answer without a model name (local engines; entries cached before)


@dataclass
class ChatStats:
    """Counts for one rule's log line."""

    requests: int = 0
    unique: int = 0
    cache_hits: int = 0
    calls: int = 0
    failures: int = 0
    truncated: int = 0
    tokens_in: int = 0
    tokens_out: int = 0

    def cost(self, prices: dict[str, float]) -> float:
        """Estimated cost of the calls made (cache hits are free), in the currency of ``prices``."""
        return request_cost(self.tokens_in, self.tokens_out, prices)


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def model_id(llm_config: dict[str, Any]) -> str:
    """The model's identity in cache keys: backend, model and (for GGUF) the weights file."""
    parts = [str(llm_config.get("backend")), str(llm_config.get("model"))]
    gguf = (llm_config.get("transformers") or {}).get("gguf_file")
    if gguf:
        parts.append(str(gguf))
    return ":".join(parts)


class CachedChat:
    """Cache-first chat completion over any ``ChatBackend``."""

    def __init__(
        self,
        llm_config: dict[str, Any],
        log: logging.Logger,
        backend: ChatBackend | None = None,
        cache: CompletionCache | None = None,
    ) -> None:
        self.config = {**LLM_DEFAULTS, **llm_config}
        self.config["prices"] = {**LLM_DEFAULTS["prices"], **(llm_config.get("prices") or {})}
        self.model_id = model_id(self.config)
        self.log = log
        self.cache = cache or CompletionCache(self.config["cache_dir"])
        self.budget = Budget.from_config(self.config, self.cache.directory)
        self.stats = ChatStats()
        self.served_models: Counter[str] = Counter()  # reported model name -> distinct answers returned
        self.requested: set[tuple[str, str]] = set()  # (template, sampling as canonical JSON) asked for
        self._backend = backend

    @property
    def system_prompt(self) -> str | None:
        return self.config.get("system_prompt")

    def sampling(self, *overrides: dict[str, Any] | None) -> Sampling:
        """``llm.sampling`` with method-level overrides applied."""
        return Sampling.from_config(self.config.get("sampling"), *overrides)

    def request(self, content: str, sampling: Sampling, template: str, variant: int = 0) -> ChatRequest:
        """A one-user-message request (with the configured system prompt, if any)."""
        return ChatRequest.user(
            content, system=self.system_prompt, sampling=sampling, template=template, variant=variant
        )

    def backend(self) -> ChatBackend:
        if self._backend is None:
            self._backend = build_backend(self.config)
        return self._backend

    def complete(self, requests: Sequence[ChatRequest], desc: str = "llm") -> list[str]:
        """Texts of all requests, in order (see ``completions``)."""
        return [c.text or "" for c in self.completions(requests, desc)]

    def completions(self, requests: Sequence[ChatRequest], desc: str = "llm") -> list[Completion]:
        """Completions (text, usage, finish reason) of all requests, in order. Raises LLMError if some
        failed after all retries (the others are cached, so a rerun only repeats the failed ones)."""
        keys = [request_key(self.model_id, r) for r in requests]
        answers: dict[str, Completion] = {}
        missing: dict[str, ChatRequest] = {}
        for key, request in zip(keys, requests, strict=True):
            if key in answers or key in missing:
                continue
            cached = self.cache.get(key)
            if cached is not None and cached.text is not None:
                answers[key] = cached
            else:
                missing[key] = request
        self.stats.requests += len(requests)
        self.requested.update((r.template, canonical(r.sampling.as_dict())) for r in requests)
        self.stats.unique += len(answers) + len(missing)
        self.stats.cache_hits += len(answers)
        if missing:
            self._call(missing, answers, desc)
        self.stats.truncated += sum(1 for c in answers.values() if c.finish_reason == "length")
        self.served_models.update(c.served_model or NOT_REPORTED for c in answers.values())
        return [answers[k] for k in keys]

    def _call(self, missing: dict[str, ChatRequest], answers: dict[str, Completion], desc: str) -> None:
        """Send the missing requests in the largest batches the budget allows (see ``Budget``)."""
        order = list(missing)
        errors: list[str] = []
        progress = tqdm(total=len(order), desc=desc, mininterval=5.0, file=None)
        sent = 0
        try:
            while sent < len(order):
                batch = order[sent:]
                n, why = self.budget.reserve([missing[k] for k in batch])
                if n == 0:
                    raise BudgetExceeded(
                        f"{desc}: stopped before request {sent + 1} of {len(order)} to {self.model_id}: "
                        f"{why}; "
                        f"the {len(answers)} answers so far are cached. Raise the setting to go on."
                    )
                try:
                    self._send(batch[:n], missing, answers, errors, progress)
                finally:
                    self.budget.release()
                sent += n
        finally:
            progress.close()
        if errors:
            raise LLMError(
                f"{len(errors)} of {len(order)} LLM requests to {self.model_id} failed after all retries "
                f"(first error: {errors[0]}); the {len(order) - len(errors)} that succeeded are cached, "
                "so rerunning the rule repeats only the failed ones"
            )

    def _send(
        self,
        order: list[str],
        missing: dict[str, ChatRequest],
        answers: dict[str, Completion],
        errors: list[str],
        progress: tqdm,
    ) -> None:
        def on_result(index: int, completion: Completion) -> None:
            key = order[index]
            progress.update(1)
            self.stats.calls += 1
            self.stats.tokens_in += completion.prompt_tokens
            self.stats.tokens_out += completion.completion_tokens
            self.budget.settle(missing[key], completion)
            if not completion.ok:
                self.stats.failures += 1
                errors.append(str(completion.error))
                return
            self.cache.put(key, self.model_id, completion)
            answers[key] = completion

        self.backend().complete([missing[k] for k in order], on_result)

    def log_summary(self, what: str = "llm") -> None:
        """One log line: requests, cache hits, calls, tokens, estimated cost."""
        s = self.stats
        prices = self.config["prices"]
        self.log.info(
            "%s [%s]: %d requests (%d unique), %d cache hits, %d calls made, %d failed, %d truncated at "
            "max_tokens; tokens in %d / out %d; estimated cost %.4f (prices per 1M tokens: in %s, out %s)",
            what, self.model_id, s.requests, s.unique, s.cache_hits, s.calls, s.failures, s.truncated,
            s.tokens_in, s.tokens_out, s.cost(prices),
            prices["input_per_million"], prices["output_per_million"],
        )  # fmt: skip
        if s.truncated:
            self.log.warning(
                "%s: %d answers stopped at max_tokens; raise llm.sampling.max_tokens (or the method's "
                "sampling override, e.g. perturb.two_step.step2_sampling.max_tokens)", what, s.truncated,
            )  # fmt: skip

    def use_record(self) -> dict[str, Any]:
        """What produced this client's answers: configured backend and model, each (prompt template,
        sampling settings) requested, the model names the server reported (with the number of distinct
        answers each) and the request counts. No secrets: not even the API key's variable name."""
        return {
            "backend": self.config.get("backend"),
            "model": self.config.get("model"),
            "model_id": self.model_id,
            "requests_by_template": [
                {"template": template, "sampling": json.loads(sampling)}
                for template, sampling in sorted(self.requested)
            ],
            "served_models": dict(sorted(self.served_models.items())),
            "requests": self.stats.unique,
            "calls": self.stats.calls,
            "cache_hits": self.stats.cache_hits,
        }

    def close(self) -> None:
        self.cache.close()


def write_llm_use(path: str | Path, chat: CachedChat | None, step: str) -> None:
    """Write a job's LLM use: its ``step`` (a perturbation method, ``attribute discovery``, ``attribute
    judge``) and ``CachedChat.use_record`` (``"llm": null`` for a job without an LLM)."""
    record = {"step": step, "llm": None if chat is None else chat.use_record()}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")


def build_chat(llm_config: dict[str, Any] | None, log: logging.Logger) -> CachedChat:
    """The cached client for the ``llm`` config section (the backend is built on the first miss)."""
    if not llm_config:
        raise LLMError("this step needs an LLM: set the `llm` section of the config (backend, model, ...)")
    return CachedChat(llm_config, log)
