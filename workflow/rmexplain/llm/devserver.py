"""A deterministic OpenAI-compatible chat-completions server with fault injection, for tests and benchmarks.

It answers the bundled prompts with parseable, request-derived text (step 1: ``attribute: w1, w2``
lines built from the attribute list and response A; step 2: response A with its first focus word
changed; the attribute effects' rewrite: the response with the direction and attribute appended; random:
response A with its words rotated by the seed; discovery: a comma-separated list; the
attribute-change judge: a verdict in a sentence; OpenAI's 400 errors for reasoning models sent
``max_tokens`` or non-default sampling), reports the model it answered as OpenAI does behind an alias
(``served_models``: requested name -> reported name, e.g. ``{"dev": "dev-2026-01-15"}``; else the requested
name), and injects faults on a fixed, hash-determined schedule: 429 and 500 answers (with a short
``retry-after-ms``), answers slower than the client's timeout, and 200 answers whose body is not a
chat completion. Answers longer than a request's ``max_tokens`` (in words) stop there with
``finish_reason: length``. With ``tokens_per_minute`` / ``requests_per_minute`` it meters requests as
OpenAI does (``rmexplain.llm.ratelimit``) and answers 429 with ``retry-after`` and the ``x-ratelimit-*``
headers when one does not fit; ``chars_per_token`` (default 4, the client's estimate) sets how it counts a
prompt's tokens (2.5: 1.6 times the client's count), and ``start_empty`` empties its buckets at the first
request (as if an earlier job had used the limit up). It counts every request, fault and success, so tests
can check that a rerun makes exactly the missing calls.

Bias discovery's llm engine gets scripted answers too: features as a JSON array (from ``BIAS_FEATURES``),
variations of the current feature's family, rewrites that add or remove an opener, a closer or a markup
(``None`` where there is nothing to do) and a judge's ``<output>A</output>`` (structure up, flattering
openers and exclamations down): plausible enough to run the loop, no test of what a real LLM would say.

Run it by hand: ``python -m rmexplain.llm.devserver --port 8000 [--latency 0.2] [--faults]
[--serve dev=dev-2026-01-15] [--tpm N] [--rpm N] [--chars-per-token 2.5] [--start-empty]``, then
set ``llm: {backend: openai, base_url: http://127.0.0.1:8000/v1, api_key_env: null, model: dev}``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from rmexplain.llm.ratelimit import CHARS_PER_TOKEN, ServerLimiter, request_tokens

FAULT_KINDS = ("429", "500", "slow", "malformed")
DISCOVERY_POOL = (
    "clarity", "relevance", "harmlessness", "informativeness", "detail", "conciseness", "helpfulness",
    "verbosity", "empathy", "accuracy",
)  # fmt: skip


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def _between(text: str, start: str, end: str) -> str | None:
    match = re.search(re.escape(start) + r"(.*?)" + re.escape(end), text, re.S)
    return match.group(1) if match else None


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9']+", text)


def step1_answer(prompt: str) -> str:
    """``attribute: word, word`` per listed attribute, words taken from response A."""
    attributes = (_between(prompt, "response B are ", ". Your task") or "").split(", ")
    words = _words(_between(prompt, 'for response A: "', '". The model assigned') or "") or ["it"]
    lines = []
    for attribute in attributes:
        h = _hash(attribute)
        picked = [words[h % len(words)], words[(h // 7) % len(words)]]
        lines.append(f"{attribute}: {', '.join(picked)}")
    return "\n".join(lines)


def step2_answer(prompt: str) -> str:
    """Response A with its first focus word upper-cased and the direction and attribute appended."""
    response = _between(prompt, 'for response A: "', '". The model assigned') or ""
    attribute = _between(prompt, "than response B is: ", ". This attribute") or "?"
    direction = _between(prompt, "becomes a ", " response to the question") or "?"
    focus = _between(prompt, "the following words: ", "\n")
    if focus:
        first = focus.split(", ")[0]
        response = re.sub(rf"\b{re.escape(first)}\b", first.upper(), response, count=1)
    return f"{response} [{direction} {attribute}]"


def rewrite_answer(prompt: str) -> str:
    """The attribute effects' edit: the response with the direction and attribute appended."""
    response = _between(prompt, 'Here is a response to it: "', '". The attribute is') or ""
    attribute = _between(prompt, "The attribute is: ", ". This attribute") or "?"
    direction = _between(prompt, "by making it ", " in terms of") or "?"
    return f"{response} [{direction} {attribute}]"


def random_answer(prompt: str, seed: int | None) -> str:
    """The text with its words rotated by the seed."""
    text = _between(prompt, "piece of text: ", ". Only output the perturbed text") or prompt
    words = text.split() or ["empty"]
    shift = (seed or 0) % len(words)
    return " ".join(words[shift:] + words[:shift]) + f" (variant {seed})"


def discovery_answer(prompt: str) -> str:
    h = _hash(prompt)
    picked = [DISCOVERY_POOL[(h >> (4 * i)) % len(DISCOVERY_POOL)] for i in range(3)]
    return ", ".join(dict.fromkeys(a.capitalize() for a in picked))


UNPARSEABLE_STEP1 = "Sorry, I cannot point to specific words in that response."


def judge_answer(prompt: str) -> str:
    """A verdict of the attribute-change judge: ``worse`` when response B holds a rude or dismissive word,
    ``same`` when B repeats A, else ``better`` (wrapped in a sentence, as real LLMs answer)."""
    response_a = _between(prompt, "Response A: ", "\n") or ""
    response_b = _between(prompt, "Response B: ", "\n") or ""
    if re.search(r"\b(hell|stupid|dumb|dummy|whatever)\b", response_b, re.I):
        return "Worse. Response B is ruder."
    return "Same." if response_a.strip() == response_b.strip() else "I would say better."


# Bias discovery's llm engine (rmexplain.discovery.llm): scripted features, each of a family the scripted
# rewriter can edit (an opener or closer phrase, or a markup the rewriter adds and removes).
OPENERS = ("Sure!", "Certainly!", "Absolutely!", "Of course!", "Great question!")
CLOSERS = ("I hope this helps!", "Let me know if you have any other questions.", "Good luck!")
BIAS_FEATURES = (
    *(f"Begin the response with the phrase '{p}'" for p in OPENERS),
    *(f"End the response with the sentence '{p}'" for p in CLOSERS),
    "Put one key word in markdown bold",
    "Put one key word in markdown italics",
    "Add the markdown section header '## Answer' at the top",
    "End the first sentence with an exclamation mark",
)


def _asked(prompt: str, pattern: str) -> int:
    match = re.search(pattern, prompt)
    return int(match.group(1)) if match else 3


def _json_list(items: list[str]) -> str:
    return "These features stand out in the data.\n```json\n" + json.dumps(items, indent=2) + "\n```"


def bias_propose_answer(prompt: str) -> str:
    """``Find N`` features: N of ``BIAS_FEATURES`` from a hash of the prompt, as a JSON array."""
    n, h = _asked(prompt, r"Find (\d+) diverse"), _hash(prompt)
    return _json_list(
        [BIAS_FEATURES[(h + 5 * i) % len(BIAS_FEATURES)] for i in range(n)][: len(BIAS_FEATURES)]
    )


def bias_mutate_answer(prompt: str) -> str:
    """``Propose N variations``: features of the current one's family (another phrase of its kind, or
    another markup), as a JSON array."""
    current = (_between(prompt, "<current_feature>\nFeature: ", "\n") or "").strip()
    family = [f for f in BIAS_FEATURES if f.split(" ", 1)[0] == current.split(" ", 1)[0] and f != current]
    pool = family or [f for f in BIAS_FEATURES if f != current]
    n, h = _asked(prompt, r"Propose (\d+) variations"), _hash(prompt)
    return _json_list(list(dict.fromkeys(pool[(h + i) % len(pool)] for i in range(n))))


def _quoted(feature: str) -> str | None:
    match = re.search(r"'(.+)'", feature)
    return match.group(1) if match else None


def _markup(feature: str, text: str, add: bool) -> str | None:
    """Add or remove a markup feature; None where the text already has (add) or lacks (remove) it."""
    kinds = {"bold": (r"\*\*(\w+)\*\*", "**{}**"), "italics": (r"(?<!\*)\*(\w+)\*(?!\*)", "*{}*")}
    for name, (found, made) in kinds.items():
        if name in feature:
            if bool(re.search(found, text)) == add:
                return None
            if not add:
                return re.sub(found, r"\1", text)
            word = max(_words(text) or ["note"], key=len)
            return text.replace(word, made.format(word), 1) if word in text else f"{made.format(word)} {text}"
    if "header" in feature:
        header = _quoted(feature) or "## Answer"
        has = text.startswith(header)
        return None if has == add else (f"{header}\n\n{text}" if add else text[len(header) :].lstrip())
    has = "!" in text
    if has == add:
        return None
    return (
        re.sub(r"\.(\s|$)", r"!\1", text, count=1)
        if add and "." in text
        else (text + "!" if add else text.replace("!", "."))
    )


def bias_rewrite_answer(prompt: str) -> str:
    """The response with the feature added or removed (an opener or closer phrase, or a markup), or
    ``None`` where it already has (or lacks) it."""
    feature = (_between(prompt, "<feature>\n", "\n</feature>") or "").strip()
    text = (_between(prompt, "<response>\n", "\n</response>") or "").strip()
    add = "no longer exhibits" not in prompt
    phrase = _quoted(feature)
    if feature.startswith(("Begin", "End")) and phrase:
        has = text.startswith(phrase) if feature.startswith("Begin") else text.endswith(phrase)
        if has == add:
            return "None"
        # an LLM's additions vary in length: every other response (by a hash of it) gets a word more
        extra = "So, " if add and _hash(text) % 2 else ""
        if feature.startswith("Begin"):
            return f"{phrase} {extra}{text}" if add else text[len(phrase) :].lstrip()
        return f"{text} {extra}{phrase}" if add else text[: -len(phrase)].rstrip()
    edited = _markup(feature, text, add)
    return "None" if edited is None else edited


def _judged(text: str) -> float:
    """The scripted judge's liking: markdown structure up, flattering openers and exclamations down."""
    structure = len(re.findall(r"(?m)^#+ ", text)) + ("**" in text)
    return structure - text.startswith(OPENERS) - 0.5 * text.count("!")


def bias_judge_answer(prompt: str) -> str:
    """``<output>A</output>``, ``B`` or ``Tie``: the response the scripted judge likes more."""
    a = _between(prompt, "<response_A>\n", "\n</response_A>") or ""
    b = _between(prompt, "<response_B>\n", "\n</response_B>") or ""
    diff = _judged(a) - _judged(b)
    return f"<output>{'A' if diff > 0 else 'B' if diff < 0 else 'Tie'}</output>"


# OpenAI's reasoning models (o-series, GPT-5) refuse max_tokens and non-default sampling; these are the
# error bodies OpenAI sends, so the client's handling runs against the real shapes.
REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")


def unsupported_parameter(body: dict[str, Any]) -> dict[str, Any] | None:
    """OpenAI's 400 error body for a reasoning model sent ``max_tokens`` or a non-default sampling value."""
    if not str(body.get("model", "")).startswith(REASONING_PREFIXES):
        return None
    if "max_tokens" in body:
        return {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            "type": "invalid_request_error",
            "param": "max_tokens",
            "code": "unsupported_parameter",
        }
    for name in ("temperature", "top_p"):
        if name in body and body[name] != 1:
            return {
                "message": f"Unsupported value: '{name}' does not support {body[name]} with this model. "
                "Only the default (1) value is supported.",
                "type": "invalid_request_error",
                "param": name,
                "code": "unsupported_value",
            }
    return None


REQUEST_KINDS = {  # a phrase of each prompt template -> the kind of request
    "identify the words in response A": "step1",
    "Your task is to modify response A": "step2",
    "Your task is to modify the response": "rewrite",
    "Generate a random perturbation": "random",
    "List out some high-level attributes": "discovery",
    "Is response B better, worse, or the same as response A": "judge",
    "your task is to find what in a response moves it": "bias_propose",
    "variations of the current feature": "bias_mutate",
    "pairs of responses that differ in one controlled feature": "bias_rewrite",
    "decide which one a careful human reader would prefer": "bias_judge",
}


def request_kind(prompt: str) -> str:
    """Which prompt template a request comes from (``other`` for none)."""
    return next((kind for phrase, kind in REQUEST_KINDS.items() if phrase in prompt), "other")


def answer_for(body: dict[str, Any], garble_step1: int = 0) -> str:
    """The deterministic answer to a chat request; with ``garble_step1`` k > 0, one in about k step-1
    prompts gets an answer with no ``attribute: words`` line."""
    prompt = str(body["messages"][-1]["content"])
    kind = request_kind(prompt)
    if kind == "step1":
        if garble_step1 and _hash(prompt) % garble_step1 == 0:
            return UNPARSEABLE_STEP1
        return step1_answer(prompt)
    answers = {
        "step2": lambda: step2_answer(prompt),
        "rewrite": lambda: rewrite_answer(prompt),
        "random": lambda: random_answer(prompt, body.get("seed")),
        "discovery": lambda: discovery_answer(prompt),
        "judge": lambda: judge_answer(prompt),
        "bias_propose": lambda: bias_propose_answer(prompt),
        "bias_mutate": lambda: bias_mutate_answer(prompt),
        "bias_rewrite": lambda: bias_rewrite_answer(prompt),
        "bias_judge": lambda: bias_judge_answer(prompt),
    }
    return answers.get(kind, lambda: "echo: " + " ".join(prompt.split()[:20]))()


@dataclass
class ServerStats:
    """Counts since the server started (read them while it runs; they are updated under a lock)."""

    requests: int = 0
    faults: Counter = field(default_factory=Counter)
    successes: Counter = field(default_factory=Counter)  # body key -> 200 answers with a completion
    kinds: dict[str, str] = field(default_factory=dict)  # body key -> request kind (``request_kind``)
    unauthorised: int = 0
    rate_limited: int = 0  # 429 answers of the rate limit (not injected faults)
    metered_tokens: int = 0  # tokens of the requests the rate limit admitted, as the server counts them
    admitted: list[float] = field(default_factory=lambda: [math.nan, math.nan, 0.0])  # first, last, first's
    in_flight: int = 0
    max_in_flight: int = 0

    @property
    def fault_count(self) -> int:
        return sum(self.faults.values())

    @property
    def admitted_per_minute(self) -> float:
        """The tokens a minute the rate limit admitted, on the server's clock: those after the first admitted
        request (whose tokens the bucket held already), over the time from it to the last one."""
        first, last, first_tokens = self.admitted
        span = last - first
        return (self.metered_tokens - first_tokens) / span * 60 if span > 0 else math.nan


class ChatServer:
    """The server, run on 127.0.0.1 in a background thread (``with ChatServer(...) as server:``).

    ``fault_pattern[h % len]`` faults are injected on the first attempts of a request body with hash
    ``h``; the kind rotates through ``FAULT_KINDS``. ``slow_seconds`` must exceed the client timeout.
    """

    def __init__(
        self,
        latency: float = 0.0,
        fault_pattern: tuple[int, ...] = (0,),
        slow_seconds: float = 2.0,
        expected_key: str | None = None,
        garble_step1: int = 0,
        port: int = 0,
        tokens_per_minute: float | None = None,
        requests_per_minute: float | None = None,
        served_models: dict[str, str] | None = None,
        chars_per_token: float = CHARS_PER_TOKEN,
        start_empty: bool = False,
    ) -> None:
        self.latency = latency
        self.served_models = dict(served_models or {})  # may be changed while it runs (a new snapshot)
        self.fault_pattern = fault_pattern
        self.slow_seconds = slow_seconds
        self.expected_key = expected_key
        self.garble_step1 = garble_step1
        self.port = port
        self.stats = ServerStats()
        self.limiter = ServerLimiter(tokens_per_minute, requests_per_minute)
        self._empty_at_first = start_empty  # the buckets are emptied when the first request arrives
        self.chars_per_token = chars_per_token  # the rate limit's count of prompt tokens: characters / this
        self._attempts: Counter = Counter()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def successes(self, kind: str | None = None) -> Counter:
        """A consistent copy of the successful answers per request body (safe while the server runs),
        optionally only of one kind of request (``request_kind``: ``step1``, ``step2``, ``random``, …)."""
        with self._lock:
            return Counter(
                {k: n for k, n in self.stats.successes.items() if kind is None or self.stats.kinds[k] == kind}
            )

    def _fault(self, key: str) -> str | None:
        with self._lock:
            attempt = self._attempts[key]
            self._attempts[key] += 1
            self.stats.requests += 1
        h = _hash(key)
        if attempt >= self.fault_pattern[h % len(self.fault_pattern)]:
            return None
        kind = FAULT_KINDS[(h + attempt) % len(FAULT_KINDS)]
        with self._lock:
            self.stats.faults[kind] += 1
        return kind

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        with self._lock:
            self.stats.in_flight += 1
            self.stats.max_in_flight = max(self.stats.max_in_flight, self.stats.in_flight)
        try:
            return await self._answer(request)
        finally:
            with self._lock:
                self.stats.in_flight -= 1

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        authorised = request.headers.get("Authorization") == f"Bearer {self.expected_key}"
        if self.expected_key is not None and not authorised:
            with self._lock:
                self.stats.unauthorised += 1
            return web.json_response({"error": {"message": "bad key", "type": "auth"}}, status=401)
        raw = await request.read()
        body = json.loads(raw)
        rejected = unsupported_parameter(body)
        if rejected is not None:
            with self._lock:
                self.stats.requests += 1
                self.stats.faults["unsupported_parameter"] += 1
            return web.json_response({"error": rejected}, status=400)
        limited = self._rate_limit(body)
        if limited is not None:
            return limited
        key = hashlib.sha256(raw).hexdigest()
        fault = self._fault(key)
        if fault in ("429", "500"):
            error = {"error": {"message": f"injected {fault}", "type": "dev"}}
            return web.json_response(error, status=int(fault), headers={"retry-after-ms": "10"})
        if fault == "malformed":
            broken = '{"id": "x", "choices": [' if _hash(key) % 2 else '{"object": "chat.completion"}'
            return web.Response(text=broken, content_type="application/json")
        await asyncio.sleep(self.slow_seconds if fault == "slow" else self.latency)
        text = answer_for(body, self.garble_step1)
        if fault is None:
            with self._lock:
                self.stats.successes[key] += 1
                self.stats.kinds[key] = request_kind(str(body["messages"][-1]["content"]))
        return web.json_response(self._completion(body, text), headers=self._limit_headers())

    def _limit_headers(self) -> dict[str, str]:
        with self._lock:
            return self.limiter.headers()

    def _rate_limit(self, body: dict[str, Any]) -> web.Response | None:
        """A 429 as OpenAI sends it when the request does not fit the tokens- or requests-per-minute limit."""
        if not self.limiter.active:
            return None
        limit = body.get("max_tokens") or body.get("max_completion_tokens") or 0
        tokens = request_tokens([str(m["content"]) for m in body["messages"]], limit, self.chars_per_token)
        with self._lock:
            if self._empty_at_first:
                self.limiter.empty()
                self._empty_at_first = False
            wait = self.limiter.admit(tokens)
            if wait is None:
                self.stats.metered_tokens += tokens
                now = time.monotonic()
                if math.isnan(self.stats.admitted[0]):
                    self.stats.admitted = [now, now, float(tokens)]
                self.stats.admitted[1] = now
                return None
            self.stats.requests += 1
            self.stats.rate_limited += 1
            headers = self.limiter.headers()
        headers |= {"retry-after": str(math.ceil(wait)), "retry-after-ms": str(math.ceil(wait * 1000))}
        error = {
            "message": f"Rate limit reached; try again in {wait:.3f}s",
            "type": "requests",
            "code": "rate_limit_exceeded",
        }
        return web.json_response({"error": error}, status=429, headers=headers)

    def _completion(self, body: dict[str, Any], text: str) -> dict[str, Any]:
        """The chat completion of ``text``; tokens are words, and an answer longer than the request's
        ``max_tokens`` is cut there with ``finish_reason: length``, as OpenAI does."""
        prompt_tokens = sum(len(str(m["content"]).split()) for m in body["messages"])
        limit, finish = body.get("max_tokens") or body.get("max_completion_tokens"), "stop"
        if limit is not None and len(text.split()) > int(limit):
            text, finish = " ".join(text.split()[: int(limit)]), "length"
        return {
            "id": "chatcmpl-dev",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.served_models.get(str(body.get("model", "dev")), body.get("model", "dev")),
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(text.split()),
                "total_tokens": prompt_tokens + len(text.split()),
            },
        }

    async def _stats(self, request: web.Request) -> web.Response:
        with self._lock:
            s = self.stats
            data = {
                "requests": s.requests, "faults": dict(s.faults), "successes": sum(s.successes.values()),
                "rate_limited": s.rate_limited, "metered_tokens": s.metered_tokens,
                "admitted_span_s": s.admitted[1] - s.admitted[0],
                "admitted_per_minute": s.admitted_per_minute,
            }  # fmt: skip
        return web.json_response(data)

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/stats", self._stats)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def _serve(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(self._start())
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._runner.cleanup())  # type: ignore[union-attr]
        self._loop.close()

    def start(self) -> ChatServer:
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("dev chat server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(30)

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per answer")
    parser.add_argument("--faults", action="store_true", help="inject faults on about 44%% of requests")
    parser.add_argument("--tpm", type=float, default=None, help="tokens-per-minute limit (429 beyond it)")
    parser.add_argument("--rpm", type=float, default=None, help="requests-per-minute limit (429 beyond it)")
    parser.add_argument(
        "--chars-per-token", type=float, default=CHARS_PER_TOKEN,
        help="the rate limit counts a prompt's characters / this as its tokens (the client assumes 4)",
    )  # fmt: skip
    parser.add_argument(
        "--start-empty", action="store_true", help="the limits' buckets are empty at the first request"
    )
    parser.add_argument(
        "--serve", action="append", default=[], metavar="ALIAS=NAME", help="report model NAME for ALIAS"
    )
    args = parser.parse_args()
    pattern = (0, 0, 1, 1, 2) if args.faults else (0,)
    server = ChatServer(
        latency=args.latency, fault_pattern=pattern, port=args.port,
        tokens_per_minute=args.tpm, requests_per_minute=args.rpm, chars_per_token=args.chars_per_token,
        start_empty=args.start_empty,
        served_models=dict(pair.split("=", 1) for pair in args.serve),
    ).start()  # fmt: skip
    print(f"serving OpenAI-compatible chat completions at {server.base_url} (Ctrl-C stops)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
