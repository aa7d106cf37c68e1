"""Benchmark (not a test): throughput of the cached openai-backend client against a slow server.

200 chat requests to a local OpenAI-compatible server that answers each after 200 ms, with
``llm.concurrency`` 16. The ideal wall time is 200 x 0.2 s / 16 = 2.5 s; the ratio measured / ideal
should be at most 1.25. A second run over the same requests must make 0 requests (all cache hits).
The server (``rmexplain.llm.devserver``) runs in its own process so it does not share the client's GIL.

    python benchmarks/bench_llm_client.py [--requests 200] [--latency 0.2] [--concurrency 16]

With ``--tpm N`` (and/or ``--rpm N``) the server enforces that tokens-per-minute (requests-per-minute)
limit, answering 429 beyond it, and the client runs with the same ``llm.rate_limit``: the ideal is then the
limit itself, as the server counts it, and the run passes when the throughput is at least 90 % of it with no
request failing after its retries. A CI-sized run (~40 s): ``--requests 400 --tpm 600000``.

The client estimates a prompt's tokens as characters / 4; ``--server-chars-per-token 2.5`` makes the server
count 1.6 times as many, so the client must follow the server's ``x-ratelimit-*`` headers (with
``--start-empty``, as if an earlier job had used up the limit; ``--prompt-chars 4000 --max-tokens 4``, so the
prompt dominates each request's count):

    python benchmarks/bench_llm_client.py --requests 600 --tpm 600000 --server-chars-per-token 2.5 \
        --start-empty --prompt-chars 4000 --max-tokens 4

Each run prints its numbers and writes them to ``benchmarks/results/llm_client/`` (``--results DIR``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import logging
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from rmexplain.llm.base import LLMError
from rmexplain.llm.client import CachedChat
from rmexplain.llm.ratelimit import CHARS_PER_TOKEN, request_tokens

RESULTS = Path(__file__).resolve().parent / "results" / "llm_client"


def versions() -> dict[str, str]:
    """Versions of what the numbers depend on."""
    versions = {name: importlib.metadata.version(name) for name in ("openai", "aiohttp")}
    return versions | {"python": platform.python_version()}


def write_result(result: dict, directory: Path) -> Path:
    """One run's numbers as ``<scenario>_<date>.json``."""
    scenario = "latency" if not (result["tokens_per_minute"] or result["requests_per_minute"]) else "limit"
    if result["server_to_client_tokens"] != 1:
        scenario += f"-server-counts-{result['server_to_client_tokens']}x"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{scenario}_{result['date'].replace(':', '').replace('-', '')}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {path}")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load() -> str:
    """The 1-minute load average and the CPU count (the ratio suffers on an oversubscribed machine)."""
    return f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"


def server_requests(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats") as response:
        return int(json.load(response)["requests"])


def server_stats(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats") as response:
        return json.load(response)


def start_server(port: int, latency: float, limits: list[str]) -> subprocess.Popen:
    command = [
        sys.executable,
        "-m",
        "rmexplain.llm.devserver",
        "--port",
        str(port),
        "--latency",
        str(latency),
    ]
    server = subprocess.Popen([*command, *limits], stdout=subprocess.PIPE, text=True)
    server.stdout.readline()  # "serving ..." once it listens
    return server


def bench_requests(chat: CachedChat, n: int, prompt_chars: int = 0, max_tokens: int | None = None) -> list:
    """n distinct requests, each padded to ``prompt_chars`` characters (0: no padding)."""
    sampling = chat.sampling({"max_tokens": max_tokens} if max_tokens else None)
    texts = [f"Benchmark request number {i}." for i in range(n)]
    texts = [t + " pad" * max(0, (prompt_chars - len(t)) // 4) for t in texts]
    return [chat.request(t, sampling, "bench@1") for t in texts]


def run(chat: CachedChat, requests: list) -> tuple[float, float]:
    """Wall time of ``chat.complete`` over the requests (the backend and its imports are built first:
    that is start-up, not request throughput; the client and its connections are made inside)."""
    chat.backend()
    start, cpu = time.perf_counter(), time.process_time()
    chat.complete(requests, desc="bench")
    return time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--tpm", type=float, default=None, help="tokens-per-minute limit (server and client)")
    parser.add_argument(
        "--rpm", type=float, default=None, help="requests-per-minute limit (server and client)"
    )
    parser.add_argument(
        "--server-chars-per-token", type=float, default=CHARS_PER_TOKEN,
        help="the server's rate limit counts prompt characters / this (the client estimates / 4)",
    )  # fmt: skip
    parser.add_argument("--start-empty", action="store_true", help="the server's buckets start empty")
    parser.add_argument("--prompt-chars", type=int, default=0, help="pad each prompt to this many characters")
    parser.add_argument("--max-tokens", type=int, default=None, help="each request's max_tokens")
    parser.add_argument("--results", type=Path, default=RESULTS, help="directory of the JSON result files")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    port = free_port()
    limits = [
        *(["--tpm", str(args.tpm)] if args.tpm else []),
        *(["--rpm", str(args.rpm)] if args.rpm else []),
        *(["--start-empty"] if args.start_empty else []),
        *("--chars-per-token", str(args.server_chars_per_token)),
    ]
    server = start_server(port, args.latency, limits)
    try:
        with tempfile.TemporaryDirectory() as cache:
            llm = {
                "backend": "openai", "model": "bench", "base_url": f"http://127.0.0.1:{port}/v1",
                "api_key_env": None, "concurrency": args.concurrency, "cache_dir": cache,
                "rate_limit": {"tokens_per_minute": args.tpm, "requests_per_minute": args.rpm},
            }  # fmt: skip
            chat = CachedChat(llm, logging.getLogger("bench"))
            requests = bench_requests(chat, args.requests, args.prompt_chars, args.max_tokens)
            try:
                wall, cpu = run(chat, requests)
            except LLMError as err:
                print(f"LLMError: {err}")
                wall, cpu = float("nan"), float("nan")
            failed = chat.stats.failures
            tokens = sum(request_tokens([c for _, c in r.messages], r.sampling.max_tokens) for r in requests)
            stats = server_stats(port)
            made, rejected = int(stats["requests"]), int(stats.get("rate_limited", 0))
            metered = int(stats.get("metered_tokens", 0)) or tokens
            rerun_wall, _ = run(CachedChat(llm, logging.getLogger("bench")), requests)
            rerun_made = server_requests(port) - made
    finally:
        server.terminate()
        server.wait()
    ideal = args.requests * args.latency / args.concurrency
    if args.tpm:
        ideal = max(ideal, metered / args.tpm * 60)
    if args.rpm:
        ideal = max(ideal, args.requests / args.rpm * 60)
    ratio = wall / ideal
    result = {
        "benchmark": "llm_client", "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "versions": versions(), "requests": args.requests, "latency_s": args.latency,
        "concurrency": args.concurrency,
        "tokens_per_minute": args.tpm, "requests_per_minute": args.rpm, "start_empty": args.start_empty,
        "server_chars_per_token": args.server_chars_per_token, "client_tokens": tokens,
        "server_tokens": metered, "server_to_client_tokens": round(metered / tokens, 3),
        "wall_s": round(wall, 3), "ideal_s": round(ideal, 3), "ratio": round(ratio, 3),
        "share_of_limit": round(1 / ratio, 3), "server_requests": made, "rejected": rejected,
        "rejected_share": round(rejected / made, 4) if made else 0.0, "failed": failed,
        "client_cpu_s": round(cpu, 3), "rerun_wall_s": round(rerun_wall, 3), "rerun_requests": rerun_made,
        "load": load(),
    }  # fmt: skip
    latency_ms = args.latency * 1000
    print(f"requests {args.requests}, server latency {latency_ms:.0f} ms, concurrency {args.concurrency}, "
          f"limits: tpm {args.tpm}, rpm {args.rpm}; the server counts {metered} tokens where the client "
          f"estimates {tokens} ({metered / tokens:.2f}x)")  # fmt: skip
    bound = 1 / 0.9 if args.tpm or args.rpm else 1.25
    print(f"first run: {wall:.3f} s wall, {made} requests ({rejected} rejected, {failed} failed after all "
          f"retries); ideal {ideal:.3f} s; ratio {ratio:.3f} (max {bound:.3f})")  # fmt: skip
    print(f"client CPU: {cpu:.3f} s ({cpu / args.requests * 1000:.2f} ms per request); load average {load()}")
    print(f"rerun: {rerun_wall:.3f} s wall, {rerun_made} requests made (all from the cache)")
    print(json.dumps(result))
    write_result(result, args.results)
    if not ratio <= bound or rerun_made != 0 or failed or made - rejected != args.requests:
        sys.exit(1)


if __name__ == "__main__":
    main()
