"""Benchmark (not a test): the ``transformers`` scoring backend against two peers, per workload, in one run.

For one random RM of a real architecture's shapes (``benchlib.ARCHS``: Llama-3-8B, DeBERTa-v3-large,
Pythia-1.4B, Gemma-2-27B; tiny shapes of the same classes on the CPU presets) and each workload:

- ``hh``: HH-RLHF-length texts, prompt + response about 100-400 tokens;
- ``hs2``: HelpSteer2-length texts, about 1,000-1,400 tokens (DeBERTa truncates them to its 512 positions,
  as the OpenAssistant RMs' ``overlong: truncate`` does);

it times, end to end (formatting, tokenisation, deduplication, batching, forward, read-out):

1. the backend, ``TransformersScorer.score`` over all texts;
2. peer ``pipeline``: ``transformers.pipeline("text-classification")`` called on one text at a time;
3. peer ``padded_loop``: the loop a user would write: fixed-size batches in input order, each padded to
   its longest text (``tokenizer(..., padding=True)``), ``model(**batch).logits[:, 0]``;

and reports texts/s, tokens/s, useful TFLOP/s (``benchlib.useful_flops``: padding excluded), ``mfu`` =
useful FLOP/s over the bf16 matmul peak measured in the same run (on CPU: the model dtype's), ``speedup``
of the backend against each peer (texts/s on the same workload; the peers run on its first texts) and
whether the scores agree within ``benchlib.tolerance`` (the run exits 1 when they do not).

    python benchmarks/bench_scoring.py --preset cpu-llama            # seconds; writes benchmarks/results/
    python benchmarks/bench_scoring.py --preset gpu-llama3-8b --workloads hh
    python benchmarks/bench_scoring.py --preset gpu-llama3-8b --workloads hs2 --oom-check
    python benchmarks/bench_scoring.py --preset gpu-gemma2-27b --workloads hs2 --profile prof/27b

``--profile DIR`` profiles one more backend call (``--profile-texts`` texts per workload) with
``torch.profiler`` after the timed runs and writes ``DIR/<workload>/trace.json`` and ``top_ops.txt``.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
from pathlib import Path
from typing import Any

import benchlib
import torch
from benchlib import ARCHS, Arch

from rmexplain.score.hf import TransformersScorer, length_batches, render_chat
from rmexplain.score.tiny import _CORPUS

WORKLOADS: dict[str, tuple[int, int]] = {"hh": (100, 400), "hs2": (1000, 1400)}


def _preset(arch: str, device: str, dtype: str, texts: dict[str, int], **kw: Any) -> dict[str, Any]:
    tiny = device == "cpu"
    base = {
        "arch": arch,
        "tiny": tiny,
        "device": device,
        "dtype": dtype,
        "texts": texts,
        "pipeline_texts": 8 if tiny else 256,
        "loop_texts": 16 if tiny else 1024,
        "loop_batch": 8 if tiny else 16,
        "batch_size": 16 if tiny else 128,
        "max_batch_tokens": 8192 if tiny else 65536,
    }
    return {**base, **kw}


_CPU_TEXTS = {"hh": 32, "hs2": 8}
PRESETS: dict[str, dict[str, Any]] = {
    "cpu-llama": _preset("llama3-8b", "cpu", "float32", _CPU_TEXTS),
    "cpu-deberta": _preset("deberta-v3-large", "cpu", "float32", _CPU_TEXTS),
    "cpu-pythia": _preset("pythia-1.4b", "cpu", "float32", _CPU_TEXTS),
    "cpu-gemma2": _preset("gemma2-27b", "cpu", "float32", _CPU_TEXTS),
    # GPU presets: sized so that one workload should finish within about ten minutes on an H100 at the
    # goals' utilisation (estimated from the FLOP count, not measured; one workload per command with
    # --workloads); --texts changes it.
    "gpu-llama3-8b": _preset("llama3-8b", "cuda", "bfloat16", {"hh": 20000, "hs2": 8000}),
    "gpu-deberta-v3-large": _preset(
        "deberta-v3-large", "cuda", "float32", {"hh": 20000, "hs2": 20000}, max_batch_tokens=32768
    ),
    "gpu-pythia-1.4b": _preset("pythia-1.4b", "cuda", "bfloat16", {"hh": 20000, "hs2": 20000}),
    "gpu-gemma2-27b": _preset(
        "gemma2-27b",
        "cuda",
        "bfloat16",
        {"hh": 6000, "hs2": 2000},
        pipeline_texts=128,
        loop_texts=512,
        max_batch_tokens=32768,
    ),
}
PRESETS["gpu-8b"] = PRESETS["gpu-llama3-8b"]  # the name earlier docs use


# ---- workloads ------------------------------------------------------------------------------------------


def word_costs(tokenizer: Any, arch: Arch) -> dict[str, int]:
    """Tokens each corpus word costs in running text (with its leading space)."""
    words = sorted(set(" ".join(_CORPUS).split()))
    prefix = "" if arch.input_format == "pair" else " "
    return {w: max(1, len(tokenizer(prefix + w, add_special_tokens=False)["input_ids"])) for w in words}


def _words(rng: random.Random, costs: dict[str, int], budget: int) -> str:
    vocabulary, out, used = list(costs), [], 0
    while used < budget:
        word = rng.choice(vocabulary)
        out.append(word)
        used += costs[word]
    return " ".join(out)


def make_pairs(
    n: int, tokens: tuple[int, int], costs: dict[str, int], overhead: int, seed: int = 0
) -> list[tuple[str, str]]:
    """``n`` distinct (prompt, response) pairs whose formatted length is drawn uniformly from ``tokens``
    (the prompt takes 10-30 % of it); lengths are approximate, the benchmark reports the measured ones."""
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        total = rng.randint(*tokens) - overhead
        prompt_budget = int(total * rng.uniform(0.1, 0.3))
        prompt = f"Question {i}: " + _words(rng, costs, prompt_budget - 4)
        pairs.append((prompt, _words(rng, costs, total - prompt_budget)))
    return pairs


def template_overhead(scorer: TransformersScorer) -> int:
    """Tokens the format adds around an empty prompt and response."""
    return len(scorer.encode_all([("", "")])[0].ids)


# ---- the three routes -----------------------------------------------------------------------------------


def peer_texts(scorer: TransformersScorer, pairs: list[tuple[str, str]]) -> list[Any]:
    """The peers' inputs: the rendered chat text with the template's BOS removed (as model cards do, so the
    tokenizer adds the one BOS), or the (question, answer) pair for pair encoders."""
    if scorer.spec.input_format == "pair":
        return [{"text": p, "text_pair": r} for p, r in pairs]
    bos = scorer.tokenizer.bos_token or ""
    return [render_chat(scorer.tokenizer, scorer.spec, p, r).replace(bos, "", 1) for p, r in pairs]


def run_pipeline(scorer: TransformersScorer, inputs: list[Any], device: str) -> tuple[float, list[float]]:
    """``pipeline("text-classification")`` on one text at a time."""
    from transformers import pipeline

    pipe = pipeline(
        "text-classification", model=scorer.model, tokenizer=scorer.tokenizer, device=torch.device(device)
    )
    kwargs = {"function_to_apply": "none", "truncation": True, "max_length": scorer.limit}

    def one(x: Any) -> float:
        out = pipe(x, **kwargs)  # a list for a text, a dict for a {"text", "text_pair"} input
        return float((out[0] if isinstance(out, list) else out)["score"])

    one(inputs[0])
    return benchlib.timed(device, lambda: [one(x) for x in inputs])


def run_padded_loop(
    scorer: TransformersScorer, inputs: list[Any], batch: int, device: str
) -> tuple[float, list[float]]:
    """Fixed-size batches in input order, each padded to its longest text."""
    tokenizer, model = scorer.tokenizer, scorer.model

    def encode(chunk: list[Any]) -> Any:
        if isinstance(chunk[0], dict):
            texts, pairs = [x["text"] for x in chunk], [x["text_pair"] for x in chunk]
            return tokenizer(
                texts, pairs, padding=True, truncation=True, max_length=scorer.limit, return_tensors="pt"
            )
        return tokenizer(chunk, padding=True, truncation=True, max_length=scorer.limit, return_tensors="pt")

    def loop() -> list[float]:
        scores: list[float] = []
        for start in range(0, len(inputs), batch):
            enc = encode(inputs[start : start + batch]).to(device)
            with torch.inference_mode():
                scores += model(**enc).logits[:, 0].float().cpu().tolist()
        return scores

    with torch.inference_mode():
        model(**encode(inputs[:batch]).to(device))
    return benchlib.timed(device, loop)


def run_backend(scorer: TransformersScorer, pairs: list[tuple[str, str]], device: str) -> tuple[float, list]:
    prompts, responses = (list(x) for x in zip(*pairs, strict=True))
    scorer.score(prompts[:32], responses[:32])  # warm-up: kernels, allocator, handles
    return benchlib.timed(device, scorer.score, prompts, responses)


# ---- one workload ---------------------------------------------------------------------------------------


def rates(n: int, lengths: list[int], seconds: float, flops: float, peak: float) -> dict[str, float]:
    return {
        "n_texts": n,
        "seconds": seconds,
        "texts_per_s": n / seconds,
        "tokens_per_s": sum(lengths) / seconds,
        "tflops": flops / seconds / 1e12,
        "mfu": flops / seconds / peak,
    }


def batch_tokens(lengths: list[int], batches: list[list[int]]) -> dict[str, float]:
    """Mean real tokens per forward batch and the share of padded positions."""
    real = sum(lengths)
    padded = sum(max(lengths[i] for i in b) * len(b) for b in batches)
    return {"mean_batch_tokens": real / len(batches), "padding_share": 1 - real / padded}


def agreement(ours: list[float], theirs: list[float], dtype: str) -> dict[str, Any]:
    ref = ours[: len(theirs)]
    diff = max(abs(a - b) for a, b in zip(ref, theirs, strict=True))
    allowed = benchlib.tolerance(dtype, max(ref) - min(ref))
    return {"max_abs_diff": diff, "tolerance": allowed, "agrees": diff <= allowed}


def run_workload(
    scorer: TransformersScorer, arch: Arch, preset: dict[str, Any], name: str, n: int, peak: float
) -> dict[str, Any]:
    device, dtype = preset["device"], preset["dtype"]
    overhead = template_overhead(scorer)
    pairs = make_pairs(n, WORKLOADS[name], word_costs(scorer.tokenizer, arch), overhead, seed=n)
    lengths = [len(e.ids) for e in scorer.encode_all(pairs)]
    linear = benchlib.block_linear_parameters(scorer.model)
    layers, width = benchlib.attention_width(scorer.model)
    per_text = [benchlib.sequence_flops(linear, layers, width, s, causal=arch.causal) for s in lengths]
    seconds, scores = run_backend(scorer, pairs, device)
    batches = length_batches(lengths, scorer.spec.batch_size, scorer.spec.max_batch_tokens)
    result: dict[str, Any] = {
        "workload": name,
        "token_range": list(WORKLOADS[name]),
        "mean_tokens": sum(lengths) / n,
        "min_tokens": min(lengths),
        "max_tokens": max(lengths),
        "tokens": sum(lengths),
        "useful_tflop": sum(per_text) / 1e12,
        **rates(n, lengths, seconds, sum(per_text), peak),
        **batch_tokens(lengths, batches),
        "peers": {},
        "speedup": {},
    }
    inputs = peer_texts(scorer, pairs)
    for peer, count in (("pipeline", preset["pipeline_texts"]), ("padded_loop", preset["loop_texts"])):
        count = min(count, n)
        if peer == "pipeline":
            t, theirs = run_pipeline(scorer, inputs[:count], device)
            shape = batch_tokens(lengths[:count], [[i] for i in range(count)])
        else:
            t, theirs = run_padded_loop(scorer, inputs[:count], preset["loop_batch"], device)
            step = preset["loop_batch"]
            shape = batch_tokens(
                lengths[:count], [list(range(s, min(s + step, count))) for s in range(0, count, step)]
            )
        stats = rates(count, lengths[:count], t, sum(per_text[:count]), peak)
        result["peers"][peer] = {**stats, **shape, **agreement(scores, theirs, dtype)}
        result["speedup"][peer] = result["texts_per_s"] / stats["texts_per_s"]
    return result


# ---- out-of-memory back-off -----------------------------------------------------------------------------


def oom_check(scorer: TransformersScorer, preset: dict[str, Any]) -> dict[str, Any]:
    """Cap CUDA memory so a full batch of long texts cannot fit; the backend must halve and finish with
    the same scores."""
    arch = ARCHS[preset["arch"]]
    pairs = make_pairs(64, (1500, 1600), word_costs(scorer.tokenizer, arch), 0, seed=1)
    prompts, responses = (list(x) for x in zip(*pairs, strict=True))
    reference = scorer.score(prompts, responses)
    weights = sum(p.numel() * p.element_size() for p in scorer.model.parameters())
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.empty_cache()
    torch.cuda.set_per_process_memory_fraction(min(1.0, (weights + 6 * 2**30) / total))
    spec = {**scorer_spec(preset), "batch_size": 64, "max_batch_tokens": None}
    capped = TransformersScorer("bench-oom", spec, loaded=(scorer.model, scorer.tokenizer))
    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("rmexplain.score.hf").addHandler(handler)
    try:
        scores = capped.score(prompts, responses)
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
        logging.getLogger("rmexplain.score.hf").removeHandler(handler)
    diff = max(abs(a - b) for a, b in zip(scores, reference, strict=True))
    return {"halvings": [r for r in records if "halving" in r], "max_abs_diff_vs_uncapped": diff}


# ---- main -----------------------------------------------------------------------------------------------


def scorer_spec(preset: dict[str, Any]) -> dict[str, Any]:
    """The RM spec (as in config ``reward_models``) the backend runs with."""
    arch = ARCHS[preset["arch"]]
    spec = {
        "backend": "transformers",
        "model": f"random-{arch.name}{'-tiny' if preset['tiny'] else ''}",
        "device": preset["device"],
        "dtype": preset["dtype"],
        "batch_size": preset["batch_size"],
        "max_batch_tokens": preset["max_batch_tokens"],
        "max_length": arch.max_length,
        "input_format": arch.input_format,
        "overlong": "truncate",
    }
    return {k: v for k, v in spec.items() if v is not None}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu-llama")
    parser.add_argument("--workloads", nargs="+", choices=sorted(WORKLOADS), help="default: both")
    parser.add_argument("--texts", type=int, help="texts per workload (default: the preset's)")
    parser.add_argument("--pipeline-texts", type=int, help="texts the one-at-a-time pipeline scores")
    parser.add_argument("--loop-texts", type=int, help="texts the padded input-order loop scores")
    parser.add_argument("--loop-batch", type=int, help="the padded loop's batch size")
    parser.add_argument("--batch-size", type=int, help="the backend's batch_size")
    parser.add_argument("--max-batch-tokens", type=int, help="the backend's max_batch_tokens")
    parser.add_argument("--dtype", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--oom-check", action="store_true", help="GPU: exercise batch halving on OOM")
    parser.add_argument("--profile", type=Path, metavar="DIR", help="write a torch.profiler trace here")
    parser.add_argument("--profile-texts", type=int, default=64)
    parser.add_argument("--results", type=Path, default=benchlib.RESULTS, help="directory for the JSON")
    return parser.parse_args(argv)


def configure(args: argparse.Namespace) -> dict[str, Any]:
    preset = dict(PRESETS[args.preset])
    for key in ("pipeline_texts", "loop_texts", "loop_batch", "batch_size", "max_batch_tokens", "dtype"):
        if getattr(args, key) is not None:
            preset[key] = getattr(args, key)
    names = args.workloads or list(WORKLOADS)
    preset["texts"] = {w: args.texts or preset["texts"][w] for w in names}
    return preset


def run(args: argparse.Namespace) -> dict[str, Any]:
    """One benchmark run; returns the report it writes."""
    preset = configure(args)
    torch.set_num_threads(args.threads)
    arch, device = ARCHS[preset["arch"]], preset["device"]
    tokenizer = benchlib.build_tokenizer(arch)
    model = benchlib.build_model(arch, tokenizer, device, preset["dtype"], tiny=preset["tiny"])
    scorer = TransformersScorer("bench", scorer_spec(preset), loaded=(model, tokenizer))
    reference = benchlib.peak_dtype(device, preset["dtype"])
    peak = benchlib.matmul_peak(device, reference)
    report = benchlib.header("scoring", args.preset, device, {**preset, "spec": scorer_spec(preset)})
    report["model"] = {
        "architecture": arch.name,
        "class": type(model).__name__,
        "parameters": sum(p.numel() for p in model.parameters()),
        "block_linear_parameters": benchlib.block_linear_parameters(model),
        "dtype": preset["dtype"],
        "attn_implementation": getattr(model.config, "_attn_implementation", None),
        "causal": arch.causal,
    }
    report["peak_dtype"] = reference
    report["matmul_peak_tflops"] = peak / 1e12
    report["workloads"] = [
        run_workload(scorer, arch, preset, name, n, peak) for name, n in preset["texts"].items()
    ]
    if args.profile:
        for name, n in preset["texts"].items():
            pairs = make_pairs(
                min(n, args.profile_texts),
                WORKLOADS[name],
                word_costs(tokenizer, arch),
                template_overhead(scorer),
                seed=n,
            )
            prompts, responses = (list(x) for x in zip(*pairs, strict=True))
            with benchlib.profiled(args.profile / name, device):
                scorer.score(prompts, responses)
    if args.oom_check and device.startswith("cuda"):
        report["oom_check"] = oom_check(scorer, preset)
    report["agrees"] = all(p["agrees"] for w in report["workloads"] for p in w["peers"].values())
    return report


def summary(report: dict[str, Any]) -> str:
    model = report["model"]
    lines = [
        f"{report['preset']} on {report['device']}: {model['class']} ({model['parameters'] / 1e6:.1f}M "
        f"parameters, {model['dtype']}); measured {report['peak_dtype']} matmul peak "
        f"{report['matmul_peak_tflops']:.2f} TFLOP/s"
    ]
    for w in report["workloads"]:
        lines.append(
            f"  {w['workload']}: {w['n_texts']} texts, mean {w['mean_tokens']:.0f} tokens: "
            f"{w['texts_per_s']:.1f} texts/s, {w['tokens_per_s']:.0f} tokens/s, {w['tflops']:.3f} TFLOP/s "
            f"= {100 * w['mfu']:.1f}% of peak"
        )
        for peer, p in w["peers"].items():
            lines.append(
                f"    vs {peer:<11}: {p['texts_per_s']:.1f} texts/s -> speedup {w['speedup'][peer]:.2f}x; "
                f"max |diff| {p['max_abs_diff']:.2e} (allowed {p['tolerance']:.2e})"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stdout)
    report = run(args)
    print(summary(report))
    benchlib.write_result(report, args.results)
    if not report["agrees"]:
        print("scores disagree with a peer beyond the tolerance", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
