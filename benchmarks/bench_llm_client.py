"""Benchmark (not a test): throughput of the cached openai-backend client against a slow server.

200 chat requests to a local OpenAI-compatible server that answers each after 200 ms, with
``llm.concurrency`` 16. The ideal wall time is 200 x 0.2 s / 16 = 2.5 s; the ratio measured / ideal
should be at most 1.25. A second run over the same requests must make 0 requests (all cache hits).
The server (``rmexplain.llm.devserver``) runs in its own process so it does not share the client's GIL.

    python benchmarks/bench_llm_client.py [--requests 200] [--latency 0.2] [--concurrency 16]

With ``--tpm N`` (and/or ``--rpm N``) the server enforces that tokens-per-minute (requests-per-minute)
limit, answering 429 beyond it, and the client runs with the same ``llm.rate_limit``: the ideal is then the
limit itself, and the run passes when the throughput is at least 90 % of it with under 1 % of requests
rejected. A CI-sized run (~40 s): ``--requests 400 --tpm 600000``. ``--json FILE`` writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from rmexplain.llm.client import CachedChat
from rmexplain.llm.ratelimit import request_tokens


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


def bench_requests(chat: CachedChat, n: int) -> list:
    sampling = chat.sampling()
    return [chat.request(f"Benchmark request number {i}.", sampling, "bench@1") for i in range(n)]


def run(chat: CachedChat, n: int) -> tuple[float, float]:
    """Wall time of ``chat.complete`` over n distinct requests (the backend and its imports are built first:
    that is start-up, not request throughput; the client and its connections are made inside)."""
    chat.backend()
    requests = bench_requests(chat, n)
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
    parser.add_argument("--json", default=None, help="write the numbers to this JSON file")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    port = free_port()
    limits = [
        *(["--tpm", str(args.tpm)] if args.tpm else []),
        *(["--rpm", str(args.rpm)] if args.rpm else []),
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
            wall, cpu = run(chat, args.requests)
            tokens = sum(request_tokens([c for _, c in r.messages], r.sampling.max_tokens)
                         for r in bench_requests(chat, args.requests))  # fmt: skip
            stats = server_stats(port)
            made, rejected = int(stats["requests"]), int(stats.get("rate_limited", 0))
            rerun_wall, _ = run(CachedChat(llm, logging.getLogger("bench")), args.requests)
            rerun_made = server_requests(port) - made
    finally:
        server.terminate()
        server.wait()
    ideal = args.requests * args.latency / args.concurrency
    if args.tpm:
        ideal = max(ideal, tokens / args.tpm * 60)
    if args.rpm:
        ideal = max(ideal, args.requests / args.rpm * 60)
    ratio = wall / ideal
    accepted = made - rejected
    result = {
        "requests": args.requests, "latency_s": args.latency, "concurrency": args.concurrency,
        "tokens_per_minute": args.tpm, "requests_per_minute": args.rpm, "tokens": tokens,
        "wall_s": round(wall, 3), "ideal_s": round(ideal, 3), "ratio": round(ratio, 3),
        "share_of_limit": round(1 / ratio, 3), "server_requests": made, "rejected": rejected,
        "rejected_share": round(rejected / made, 4) if made else 0.0,
        "client_cpu_s": round(cpu, 3), "rerun_wall_s": round(rerun_wall, 3), "rerun_requests": rerun_made,
        "load": load(),
    }  # fmt: skip
    latency_ms = args.latency * 1000
    print(f"requests {args.requests}, server latency {latency_ms:.0f} ms, concurrency {args.concurrency}, "
          f"limits: tpm {args.tpm}, rpm {args.rpm}")  # fmt: skip
    print(f"first run: {wall:.3f} s wall, {made} requests ({rejected} rejected); ideal {ideal:.3f} s; "
          f"ratio {ratio:.3f} (max {1 / 0.9 if limits else 1.25:.3f})")  # fmt: skip
    print(f"client CPU: {cpu:.3f} s ({cpu / args.requests * 1000:.2f} ms per request); load average {load()}")
    print(f"rerun: {rerun_wall:.3f} s wall, {rerun_made} requests made (all from the cache)")
    print(json.dumps(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    bound = 1 / 0.9 if limits else 1.25
    if ratio > bound or rerun_made != 0 or accepted != args.requests or rejected > 0.01 * made:
        sys.exit(1)


if __name__ == "__main__":
    main()
