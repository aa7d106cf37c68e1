"""Benchmark (not a test): throughput of the cached openai-backend client against a slow server.

200 chat requests to a local OpenAI-compatible server that answers each after 200 ms, with
``llm.concurrency`` 16. The ideal wall time is 200 x 0.2 s / 16 = 2.5 s; the ratio measured / ideal
should be at most 1.25. A second run over the same requests must make 0 requests (all cache hits).
The server (``rmexplain.llm.devserver``) runs in its own process so it does not share the client's GIL.

    python benchmarks/bench_llm_client.py [--requests 200] [--latency 0.2] [--concurrency 16]
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


def start_server(port: int, latency: float) -> subprocess.Popen:
    server = subprocess.Popen(
        [sys.executable, "-m", "rmexplain.llm.devserver", "--port", str(port), "--latency", str(latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    server.stdout.readline()  # "serving ..." once it listens
    return server


def run(chat: CachedChat, n: int) -> tuple[float, float]:
    """Wall time of ``chat.complete`` over n distinct requests (the backend and its imports are built first:
    that is start-up, not request throughput; the client and its connections are made inside)."""
    chat.backend()
    sampling = chat.sampling()
    requests = [chat.request(f"Benchmark request number {i}.", sampling, "bench@1") for i in range(n)]
    start, cpu = time.perf_counter(), time.process_time()
    chat.complete(requests, desc="bench")
    return time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    port = free_port()
    server = start_server(port, args.latency)
    try:
        with tempfile.TemporaryDirectory() as cache:
            llm = {
                "backend": "openai", "model": "bench", "base_url": f"http://127.0.0.1:{port}/v1",
                "api_key_env": None, "concurrency": args.concurrency, "cache_dir": cache,
            }  # fmt: skip
            wall, cpu = run(CachedChat(llm, logging.getLogger("bench")), args.requests)
            made = server_requests(port)
            rerun_wall, _ = run(CachedChat(llm, logging.getLogger("bench")), args.requests)
            rerun_made = server_requests(port) - made
    finally:
        server.terminate()
        server.wait()
    ideal = args.requests * args.latency / args.concurrency
    ratio = wall / ideal
    latency_ms = args.latency * 1000
    print(f"requests {args.requests}, server latency {latency_ms:.0f} ms, concurrency {args.concurrency}")
    print(f"first run: {wall:.3f} s wall, {made} requests; ideal {ideal:.3f} s; ratio {ratio:.3f} (max 1.25)")
    print(f"client CPU: {cpu:.3f} s ({cpu / args.requests * 1000:.2f} ms per request); load average {load()}")
    print(f"rerun: {rerun_wall:.3f} s wall, {rerun_made} requests made (all from the cache)")
    if ratio > 1.25 or rerun_made != 0 or made != args.requests:
        sys.exit(1)


if __name__ == "__main__":
    main()
