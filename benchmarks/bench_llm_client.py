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

With ``--jobs N`` (and a limit), N processes send ``--requests`` requests each at once, every one with the
limit as the provider states it and one cache folder: they share the limit (``SharedLimit``), so together
they should hold it (at least 90 %) with no request failing, where each holding it alone would send N times
too fast. The share is the server's own count: the tokens its rate limit admitted a minute, on its clock,
from the first admitted request to the last (``ServerStats.admitted_per_minute``); the wall time from the
start signal, printed too, also holds each job's first connection and lazy imports. A CI-sized run (~100 s):

    python benchmarks/bench_llm_client.py --jobs 4 --requests 150 --tpm 600000 --server-chars-per-token 2.5 \
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
    if result["jobs"] > 1:
        scenario += f"-{result['jobs']}-jobs"
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


def bench_requests(
    chat: CachedChat, n: int, prompt_chars: int = 0, max_tokens: int | None = None, tag: str = ""
) -> list:
    """n distinct requests (``tag``: of which job), each padded to ``prompt_chars`` characters (0: none)."""
    sampling = chat.sampling({"max_tokens": max_tokens} if max_tokens else None)
    texts = [f"Benchmark request number {i}{f' of job {tag}' if tag else ''}." for i in range(n)]
    texts = [t + " pad" * max(0, (prompt_chars - len(t)) // 4) for t in texts]
    return [chat.request(t, sampling, "bench@1") for t in texts]


def run(chat: CachedChat, requests: list) -> tuple[float, float]:
    """Wall time of ``chat.complete`` over the requests (the backend and its imports are built first:
    that is start-up, not request throughput; the client and its connections are made inside)."""
    chat.backend()
    start, cpu = time.perf_counter(), time.process_time()
    chat.complete(requests, desc="bench")
    return time.perf_counter() - start, time.process_time() - cpu


def job(llm: dict, args: argparse.Namespace, name: str, go: Path) -> None:
    """One of ``--jobs`` processes: build the client, say so, wait for ``go``, send, print its counts."""
    chat = CachedChat(llm, logging.getLogger(f"bench-{name}"))
    requests = bench_requests(chat, args.requests, args.prompt_chars, args.max_tokens, tag=name)
    chat.backend()
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.005)
    cpu = time.process_time()
    try:
        chat.complete(requests, desc="bench")
    except LLMError as err:
        print(f"LLMError: {err}", file=sys.stderr)
    tokens = sum(request_tokens([c for _, c in r.messages], r.sampling.max_tokens) for r in requests)
    counts = {"failed": chat.stats.failures, "tokens": tokens, "cpu_s": time.process_time() - cpu}
    print(json.dumps(counts), flush=True)


def run_jobs(llm: dict, args: argparse.Namespace) -> tuple[float, float, int, int]:
    """Wall time from the start signal to the last job's end, their CPU seconds, failures and estimated
    tokens, over ``args.jobs`` processes of this script (``--job``)."""
    with tempfile.TemporaryDirectory() as scratch:
        go = Path(scratch) / "go"
        command = [sys.executable, __file__, *sys.argv[1:], "--job-config", json.dumps(llm), "--go", str(go)]
        jobs = [
            subprocess.Popen([*command, "--job", str(i)], stdout=subprocess.PIPE, text=True)
            for i in range(args.jobs)
        ]
        for process in jobs:  # each has built its client
            if process.stdout.readline().strip() != "ready":
                raise RuntimeError("a benchmark job did not start")
        start = time.perf_counter()
        go.touch()
        outputs = [process.communicate()[0] for process in jobs]
        wall = time.perf_counter() - start
    counts = [json.loads(output.strip().splitlines()[-1]) for output in outputs]
    return (
        wall,
        sum(c["cpu_s"] for c in counts),
        sum(c["failed"] for c in counts),
        sum(c["tokens"] for c in counts),
    )


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
    parser.add_argument("--jobs", type=int, default=1, help="processes sharing the limit, --requests each")
    parser.add_argument("--job", default=None, help=argparse.SUPPRESS)  # one of --jobs (internal)
    parser.add_argument("--job-config", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--go", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.job is not None:
        job(json.loads(args.job_config), args, args.job, args.go)
        return
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
            tags = [str(i) for i in range(args.jobs)] if args.jobs > 1 else [""]
            sizes = (args.prompt_chars, args.max_tokens)
            requests = [r for tag in tags for r in bench_requests(chat, args.requests, *sizes, tag=tag)]
            if args.jobs > 1:
                wall, cpu, failed, tokens = run_jobs(llm, args)
            else:
                try:
                    wall, cpu = run(chat, requests)
                except LLMError as err:
                    print(f"LLMError: {err}")
                    wall, cpu = float("nan"), float("nan")
                failed = chat.stats.failures
                tokens = sum(
                    request_tokens([c for _, c in r.messages], r.sampling.max_tokens) for r in requests
                )
            stats = server_stats(port)
            made, rejected = int(stats["requests"]), int(stats.get("rate_limited", 0))
            metered = int(stats.get("metered_tokens", 0)) or tokens
            admitted_per_minute = float(stats.get("admitted_per_minute", float("nan")))
            rerun_wall, _ = run(CachedChat(llm, logging.getLogger("bench")), requests)
            rerun_made = server_requests(port) - made
    finally:
        server.terminate()
        server.wait()
    total = args.requests * args.jobs
    ideal = total * args.latency / args.concurrency / args.jobs
    if args.tpm:
        ideal = max(ideal, metered / args.tpm * 60)
    if args.rpm:
        ideal = max(ideal, total / args.rpm * 60)
    ratio = wall / ideal
    result = {
        "benchmark": "llm_client", "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "versions": versions(), "requests": total, "jobs": args.jobs, "latency_s": args.latency,
        "concurrency": args.concurrency,
        "tokens_per_minute": args.tpm, "requests_per_minute": args.rpm, "start_empty": args.start_empty,
        "server_chars_per_token": args.server_chars_per_token, "client_tokens": tokens,
        "server_tokens": metered, "server_to_client_tokens": round(metered / tokens, 3),
        "wall_s": round(wall, 3), "ideal_s": round(ideal, 3), "ratio": round(ratio, 3),
        "share_of_limit": round(1 / ratio, 3),
        "server_share_of_limit": round(admitted_per_minute / args.tpm, 3) if args.tpm else None,
        "server_requests": made, "rejected": rejected,
        "rejected_share": round(rejected / made, 4) if made else 0.0, "failed": failed,
        "client_cpu_s": round(cpu, 3), "rerun_wall_s": round(rerun_wall, 3), "rerun_requests": rerun_made,
        "load": load(),
    }  # fmt: skip
    latency_ms = args.latency * 1000
    print(f"requests {total} ({args.jobs} jobs), server latency {latency_ms:.0f} ms, concurrency "
          f"{args.concurrency} per job, "
          f"limits: tpm {args.tpm}, rpm {args.rpm}; the server counts {metered} tokens where the client "
          f"estimates {tokens} ({metered / tokens:.2f}x)")  # fmt: skip
    bound = 1 / 0.9 if args.tpm or args.rpm else 1.25
    print(f"first run: {wall:.3f} s wall, {made} requests ({rejected} rejected, {failed} failed after all "
          f"retries); ideal {ideal:.3f} s; ratio {ratio:.3f} (max {bound:.3f})")  # fmt: skip
    if args.tpm:
        print(f"the server admitted {admitted_per_minute:.0f} tokens a minute on its own clock: "
              f"{admitted_per_minute / args.tpm:.1%} of its limit")  # fmt: skip
    print(f"client CPU: {cpu:.3f} s ({cpu / total * 1000:.2f} ms per request); load average {load()}")
    print(f"rerun: {rerun_wall:.3f} s wall, {rerun_made} requests made (all from the cache)")
    print(json.dumps(result))
    write_result(result, args.results)
    # N jobs: the share of the limit the server counts (their wall time also holds N processes' start-up)
    held = admitted_per_minute / args.tpm >= 0.9 if args.jobs > 1 and args.tpm else ratio <= bound
    if not held or rerun_made != 0 or failed or made - rejected != total:
        sys.exit(1)


if __name__ == "__main__":
    main()
