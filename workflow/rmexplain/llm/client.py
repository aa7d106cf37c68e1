"""The cached chat client that perturbation methods and discovery use: ``chat.complete(requests) -> texts``.

It answers what it can from the persistent cache, sends only the rest to the backend (built lazily,
so a fully cached rerun never loads a model or opens a connection) — except requests another job is
sending at the same moment (``Claims``), whose answers it waits for — stores every completion as it
arrives, and keeps the counts each rule logs: calls made, cache hits, tokens in/out, estimated cost, and
the model names the server reported for the answers it returned (``served_models``; cache hits carry the
name stored with them), which ``write_llm_use`` records beside a job's outputs for the provenance record.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from rmexplain.llm.base import (
    ChatBackend,
    ChatRequest,
    Completion,
    LLMBackend,
    LLMError,
    Sampling,
    build_backend,
)
from rmexplain.llm.budget import WORST_CHARS_PER_MESSAGE, Budget, BudgetExceeded, request_cost
from rmexplain.llm.cache import Claims, CompletionCache, request_key
from rmexplain.llm.ratelimit import CHARS_PER_TOKEN
from rmexplain.settings import schema_defaults

# The `llm` keys the client itself reads, with the schema's defaults (the backends fill their own).
CLIENT_KEYS = ("backend", "cache_dir", "system_prompt", "sampling", "prices")
LLM_DEFAULTS: dict[str, Any] = {key: schema_defaults("llm", key) for key in CLIENT_KEYS}
NOT_REPORTED = "(not reported)"  # an answer without a model name (local engines; entries cached before)
CLAIM_POLL_S = 0.2  # how often a job waiting for another job's answers looks at the cache


@dataclass
class ChatStats:
    """Counts for one rule's log line."""

    requests: int = 0
    unique: int = 0
    cache_hits: int = 0
    from_other_jobs: int = 0  # of the cache hits, answers another job was fetching at the same time
    calls: int = 0
    attempts: int = 0  # HTTP attempts of those calls, retries included
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


@dataclass(frozen=True)
class PlannedRequest:
    """A request a job will ask, as the plan counts it: its cache key (or, for a request whose prompt
    depends on an answer not cached yet, a stand-in key: ``exact`` False, it may not be made), the
    characters of its messages, the tokens its answer is expected to take and may take (``max_tokens``)."""

    key: str
    prompt_chars: int
    messages: int
    answer_tokens: int
    max_tokens: int
    exact: bool = True

    @property
    def prompt_tokens(self) -> int:
        """Tokens of the prompt at characters / 4, as a provider's rate limit estimates them."""
        return math.ceil(self.prompt_chars / CHARS_PER_TOKEN)

    @property
    def worst_tokens_in(self) -> int:
        """The spending guard's bound of the prompt's tokens (``budget.worst_case_cost``)."""
        return self.prompt_chars + WORST_CHARS_PER_MESSAGE * self.messages


class ChatRequests:
    """How requests to a configured LLM are made and named, and which are answered in a cache: what a job
    asks and what the plan counts, without a backend."""

    def __init__(self, llm_config: dict[str, Any], cache: CompletionCache | None = None) -> None:
        self.config = {**LLM_DEFAULTS, **llm_config}
        self.config["prices"] = {**LLM_DEFAULTS["prices"], **(llm_config.get("prices") or {})}
        self.model_id = model_id(self.config)
        self.cache = cache

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

    def cached(self, request: ChatRequest) -> Completion | None:
        """The cached answer of ``request`` (None: not asked yet, or no cache)."""
        if self.cache is None:
            return None
        answer = self.cache.get(request_key(self.model_id, request))
        return answer if answer is not None and answer.text is not None else None

    def answered(self, key: str) -> bool:
        """Whether the cache holds an answer under request key ``key``."""
        return self.cache is not None and key in self.cache

    def planned(self, request: ChatRequest, answer_tokens: int) -> PlannedRequest:
        """``request`` as the plan counts it, with its answer's expected length."""
        return PlannedRequest(
            request_key(self.model_id, request),
            sum(len(content) for _, content in request.messages),
            len(request.messages),
            answer_tokens,
            request.sampling.max_tokens,
        )

    def stand_in(self, after: ChatRequest, what: Any, like: PlannedRequest) -> PlannedRequest:
        """A request that depends on the answer to ``after``, not cached yet: ``what`` tells it apart from
        the others after the same answer (e.g. the attribute and prompt version); sized ``like`` one."""
        payload = canonical([request_key(self.model_id, after), what])
        key = "after:" + hashlib.sha256(payload.encode()).hexdigest()
        return replace(like, key=key, exact=False)


class CachedChat(ChatRequests):
    """Cache-first chat completion over any ``ChatBackend``."""

    cache: CompletionCache

    def __init__(
        self,
        llm_config: dict[str, Any],
        log: logging.Logger,
        backend: ChatBackend | None = None,
        cache: CompletionCache | None = None,
    ) -> None:
        super().__init__(llm_config)
        self.log = log
        self.cache = cache or CompletionCache(self.config["cache_dir"])
        self.claims = Claims(self.cache.directory)
        self.budget = Budget.from_config(self.config, self.cache.directory)
        self._budget_stop: str | None = None  # why the budget refused a retry
        self.stats = ChatStats()
        self.served_models: Counter[str] = Counter()  # reported model name -> distinct answers returned
        self.requested: set[tuple[str, str]] = set()  # (template, sampling as canonical JSON) asked for
        self._backend = backend

    def backend(self) -> ChatBackend:
        if self._backend is None:
            self._backend = build_backend(self.config)
        if isinstance(self._backend, LLMBackend):
            self._backend.retry_guard = self._admit_retry
        return self._backend

    def _admit_retry(self, request: ChatRequest) -> str | None:
        """The backend's ``retry_guard``: a retry is one more request for the budget."""
        why = self.budget.reserve_retry(request)
        if why is not None:
            self._budget_stop = f"stopped retrying: {why}"
        return why

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
            self._fetch(missing, answers, desc)
        self.stats.truncated += sum(1 for c in answers.values() if c.finish_reason == "length")
        self.served_models.update(c.served_model or NOT_REPORTED for c in answers.values())
        return [answers[k] for k in keys]

    def _fetch(self, missing: dict[str, ChatRequest], answers: dict[str, Completion], desc: str) -> None:
        """Send the missing requests no other job is sending, then wait for the answers of those another job
        is; a request its holder lets go without an answer is claimed and sent here."""
        pending = dict(missing)
        while pending:
            mine, elsewhere = self.claims.claim(list(pending))
            # answered by a job that let go of them since we looked: taken from the cache, not sent
            self.claims.release(self._take_landed(mine, pending, answers))
            mine = [key for key in mine if key in pending]
            if mine:
                try:
                    self._call({key: pending[key] for key in mine}, answers, desc)
                finally:
                    self.claims.release(mine)
                for key in mine:
                    del pending[key]
            if elsewhere:
                self.log.info(
                    "%s: %d requests are in flight in another job; waiting for them", desc, len(elsewhere)
                )
                self._await_others(elsewhere, pending, answers)

    def _await_others(
        self, keys: list[str], pending: dict[str, ChatRequest], answers: dict[str, Completion]
    ) -> None:
        """Wait until each key's answer is in the cache (it leaves ``pending``) or nobody live holds it (it
        stays in ``pending``, to be claimed)."""
        waiting = set(keys)
        while waiting:
            start = time.perf_counter()
            waiting -= set(self._take_landed(sorted(waiting), pending, answers))
            waiting = {key for key in waiting if self.claims.held_by_another(key)}
            if waiting:  # at most a fifth of the time spent looking
                time.sleep(max(CLAIM_POLL_S, 4 * (time.perf_counter() - start)))

    def _take_landed(
        self, keys: Sequence[str], pending: dict[str, ChatRequest], answers: dict[str, Completion]
    ) -> list[str]:
        """The keys whose answers another job has stored meanwhile: taken from the cache (and from
        ``pending``), counted as cache hits."""
        landed = []
        for key in keys:
            cached = self.cache.get(key)
            if cached is not None and cached.text is not None:
                answers[key] = cached
                del pending[key]
                landed.append(key)
        self.stats.cache_hits += len(landed)
        self.stats.from_other_jobs += len(landed)
        return landed

    def _call(self, missing: dict[str, ChatRequest], answers: dict[str, Completion], desc: str) -> None:
        """Send the missing requests in the largest batches the budget allows (see ``Budget``)."""
        order = list(missing)
        errors: list[str] = []
        progress = tqdm(total=len(order), desc=desc, mininterval=5.0, file=None)
        sent = 0
        self._budget_stop = None
        try:
            while sent < len(order) and self._budget_stop is None:
                batch = order[sent:]
                n, why = self.budget.reserve([missing[k] for k in batch])
                if n == 0:
                    self._budget_stop = f"stopped before request {sent + 1} of {len(order)}: {why}"
                    break
                try:
                    self._send(batch[:n], missing, answers, errors, progress)
                finally:
                    self.budget.release()
                sent += n
        finally:
            progress.close()
        if self._budget_stop is not None:
            unanswered = sum(1 for key in order if key not in answers)
            raise BudgetExceeded(
                f"{desc} ({self.model_id}): {self._budget_stop}; {unanswered} of {len(order)} requests "
                f"unanswered, the {len(answers)} answers so far are cached. Raise the setting to go on."
            )
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
            self.stats.attempts += completion.attempts
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
            "%s [%s]: %d requests (%d unique), %d cache hits, %d calls made (%d attempts with retries), %d "
            "failed, %d truncated at max_tokens; %d answers came from another job sending them meanwhile; "
            "tokens in %d / out %d; estimated cost %.4f (prices per 1M tokens: in %s, out %s)",
            what, self.model_id, s.requests, s.unique, s.cache_hits, s.calls, s.attempts, s.failures,
            s.truncated, s.from_other_jobs,
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
        self.claims.close()


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
