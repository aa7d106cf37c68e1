"""Benchmark (not a test): the ``transformers`` scoring backend against the naive approach, and its FLOP/s.

One run, one randomly initialised Llama sequence-classification RM, one set of (prompt, response) pairs:

1. the backend (``TransformersScorer.score``: deduplication, length-sorted batches, right padding,
   ``torch.inference_mode``) over all pairs, end to end (formatting and tokenisation included);
2. the naive approach: ``transformers.pipeline("text-classification")`` called on one text at a time;
3. achieved FLOP/s of (1) — useful FLOPs only, padding excluded: 2 x (parameters of every Linear) per
   token plus causal attention 2 x s^2 x d per layer per sequence — over this machine's measured dense
   matmul FLOP/s in the model's dtype (torch.matmul, median of timed repeats after warm-up).

Presets: ``cpu-small`` (a 4-layer, 512-wide Llama in fp32; runs here) and ``gpu-8b`` (Llama-3-8B shapes,
bf16, on one CUDA GPU). ``--oom-check`` (GPU) also caps this process's CUDA memory so that the first batch
runs out of memory, and checks that the backend halves its batches and still returns the same scores.

    python benchmarks/bench_scoring.py --preset cpu-small --out results/bench_scoring_cpu.json
    python benchmarks/bench_scoring.py --preset gpu-8b --oom-check --out bench_gpu.json
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))

from rmexplain.score.hf import TransformersScorer, render_chat
from rmexplain.score.tiny import _CORPUS, build_llama_tokenizer

_SMALL = {"hidden": 256, "layers": 4, "heads": 4, "kv_heads": 2, "intermediate": 704, "vocab": None}
_LLAMA3_8B = {
    "hidden": 4096,
    "layers": 32,
    "heads": 32,
    "kv_heads": 8,
    "intermediate": 14336,
    "vocab": 128256,
}
PRESETS: dict[str, dict[str, Any]] = {
    "cpu-small": {
        **_SMALL,
        "device": "cpu",
        "dtype": "float32",
        "n_texts": 64,
        "words": (20, 150),
        "batch_size": 16,
        "max_batch_tokens": 4096,
        "naive_texts": 64,
    },
    "gpu-8b": {
        **_LLAMA3_8B,
        "device": "cuda",
        "dtype": "bfloat16",
        "n_texts": 1024,
        "words": (20, 250),
        "batch_size": 128,
        "max_batch_tokens": 65536,
        "naive_texts": 256,
    },
}


@dataclass
class Result:
    """What one benchmark run measured."""

    preset: str
    device: str
    dtype: str
    parameters: int
    n_texts: int
    tokens: int
    backend_s: float
    backend_texts_per_s: float
    naive_texts: int
    naive_s: float
    naive_texts_per_s: float
    speedup: float
    useful_flops: float
    achieved_tflops: float
    matmul_peak_tflops: float
    mfu: float
    max_abs_diff_vs_naive: float


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def matmul_peak(device: str, dtype: torch.dtype) -> float:
    """Measured dense matmul FLOP/s (median of repeats after warm-up; random operands)."""
    n = 8192 if device.startswith("cuda") else 1024
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    for _ in range(3):
        a @ b
    times = []
    for _ in range(10):
        synchronize(device)
        start = time.perf_counter()
        a @ b
        synchronize(device)
        times.append(time.perf_counter() - start)
    return 2 * n**3 / statistics.median(times)


def build_model(preset: dict[str, Any], tokenizer: Any) -> torch.nn.Module:
    """A random Llama RM of the preset's shapes, built directly on the device in the preset's dtype."""
    from transformers import LlamaConfig, LlamaForSequenceClassification

    config = LlamaConfig(
        vocab_size=preset["vocab"] or len(tokenizer),
        hidden_size=preset["hidden"],
        num_hidden_layers=preset["layers"],
        num_attention_heads=preset["heads"],
        num_key_value_heads=preset["kv_heads"],
        intermediate_size=preset["intermediate"],
        max_position_embeddings=8192,
        num_labels=1,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    dtype = getattr(torch, preset["dtype"])
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(preset["device"]):
            torch.manual_seed(0)
            model = LlamaForSequenceClassification(config)
    finally:
        torch.set_default_dtype(previous)
    return model.eval()


def make_pairs(n: int, words: tuple[int, int], seed: int = 0) -> list[tuple[str, str]]:
    """Distinct (prompt, response) pairs of varied length from the tokenizer's training words."""
    vocabulary = " ".join(_CORPUS).split()
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        prompt = f"Question {i}: " + " ".join(rng.choices(vocabulary, k=rng.randint(8, 30)))
        response = " ".join(rng.choices(vocabulary, k=rng.randint(*words)))
        pairs.append((prompt, response))
    return pairs


def useful_flops(model: torch.nn.Module, lengths: list[int], hidden: int, layers: int) -> float:
    """2 x Linear parameters per token + causal attention (QK^T and AV: 2 s^2 d per layer)."""
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    return sum(2.0 * linear * s + 2.0 * layers * s * s * hidden for s in lengths)


def run_backend(
    scorer: TransformersScorer, pairs: list[tuple[str, str]], device: str
) -> tuple[list[float], float]:
    prompts, responses = zip(*pairs, strict=True)
    scorer.score(prompts[:32], responses[:32])  # warm-up: kernels, allocator, handles
    synchronize(device)
    start = time.perf_counter()
    scores = scorer.score(prompts, responses)
    synchronize(device)
    return scores, time.perf_counter() - start


def run_naive(
    model: Any, tokenizer: Any, scorer: TransformersScorer, pairs: list[tuple[str, str]], device: str
) -> tuple[list[float], float]:
    """pipeline("text-classification") on one text at a time, on the same formatted texts (the template's
    BOS removed, as model cards do, so the pipeline's tokenizer adds the one BOS)."""
    from transformers import pipeline

    pipe = pipeline("text-classification", model=model, tokenizer=tokenizer, device=torch.device(device))
    bos = tokenizer.bos_token or ""
    texts = [render_chat(tokenizer, scorer.spec, p, r).replace(bos, "", 1) for p, r in pairs]
    pipe(texts[0], function_to_apply="none")
    synchronize(device)
    start = time.perf_counter()
    scores = [pipe(text, function_to_apply="none")[0]["score"] for text in texts]
    synchronize(device)
    return scores, time.perf_counter() - start


def oom_check(scorer: TransformersScorer, preset: dict[str, Any]) -> dict[str, Any]:
    """Cap CUDA memory so a full batch of long texts cannot fit; the backend must halve and finish."""
    pairs = make_pairs(64, (1500, 1600), seed=1)
    prompts, responses = zip(*pairs, strict=True)
    reference = scorer.score(prompts, responses)
    weights = sum(p.numel() * p.element_size() for p in scorer.model.parameters())
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.empty_cache()
    torch.cuda.set_per_process_memory_fraction(min(1.0, (weights + 6 * 2**30) / total))
    spec = {**_raw_spec(preset), "batch_size": 64}
    spec.pop("max_batch_tokens")
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
    halvings = [r for r in records if "halving" in r]
    diff = max(abs(a - b) for a, b in zip(scores, reference, strict=True))
    return {"halvings": halvings, "max_abs_diff_vs_uncapped": diff}


def _raw_spec(preset: dict[str, Any]) -> dict[str, Any]:
    return {
        "backend": "transformers",
        "model": f"random-llama-{preset['layers']}x{preset['hidden']}",
        "device": preset["device"],
        "dtype": preset["dtype"],
        "batch_size": preset["batch_size"],
        "max_batch_tokens": preset["max_batch_tokens"],
        "max_length": 8192,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu-small")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads (cpu preset)")
    parser.add_argument("--oom-check", action="store_true", help="GPU: exercise batch halving on OOM")
    parser.add_argument("--out", type=Path, help="write the numbers as JSON here")
    parser.add_argument("--n-texts", type=int, help="override the preset's number of pairs")
    parser.add_argument("--naive-texts", type=int, help="override how many pairs the naive pipeline scores")
    parser.add_argument("--words", type=int, nargs=2, metavar=("MIN", "MAX"), help="response length in words")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stdout)
    preset = dict(PRESETS[args.preset])
    for key in ("n_texts", "naive_texts", "words"):
        if getattr(args, key) is not None:
            preset[key] = tuple(args.words) if key == "words" else getattr(args, key)
    device, dtype = preset["device"], getattr(torch, preset["dtype"])
    torch.set_num_threads(args.threads)
    tokenizer = build_llama_tokenizer()
    model = build_model(preset, tokenizer)
    scorer = TransformersScorer("bench", _raw_spec(preset), loaded=(model, tokenizer))
    pairs = make_pairs(preset["n_texts"], preset["words"])
    lengths = [len(e.ids) for e in scorer.encode_all(pairs)]
    peak = matmul_peak(device, dtype)
    scores, backend_s = run_backend(scorer, pairs, device)
    naive_pairs = pairs[: preset["naive_texts"]]
    naive_scores, naive_s = run_naive(model, tokenizer, scorer, naive_pairs, device)
    flops = useful_flops(model, lengths, preset["hidden"], preset["layers"])
    backend_rate = len(pairs) / backend_s
    naive_rate = len(naive_pairs) / naive_s
    result = Result(
        preset=args.preset,
        device=torch.cuda.get_device_name(0) if device == "cuda" else f"cpu x{args.threads}",
        dtype=preset["dtype"],
        parameters=sum(p.numel() for p in model.parameters()),
        n_texts=len(pairs),
        tokens=sum(lengths),
        backend_s=backend_s,
        backend_texts_per_s=backend_rate,
        naive_texts=len(naive_pairs),
        naive_s=naive_s,
        naive_texts_per_s=naive_rate,
        speedup=backend_rate / naive_rate,
        useful_flops=flops,
        achieved_tflops=flops / backend_s / 1e12,
        matmul_peak_tflops=peak / 1e12,
        mfu=flops / backend_s / peak,
        max_abs_diff_vs_naive=max(abs(a - b) for a, b in zip(scores, naive_scores, strict=False)),
    )
    report: dict[str, Any] = {**asdict(result), "response_words": list(preset["words"])}
    if args.oom_check and device == "cuda":
        report["oom_check"] = oom_check(scorer, preset)
    print(json.dumps(report, indent=2))
    print(
        f"\n{args.preset} on {result.device} ({result.dtype}, {result.parameters / 1e9:.2f}B parameters, "
        f"{result.n_texts} texts, {result.tokens} tokens)\n"
        f"  backend : {result.backend_texts_per_s:9.1f} texts/s\n"
        f"  naive   : {result.naive_texts_per_s:9.1f} texts/s "
        f"(pipeline, one text at a time, {result.naive_texts} texts)\n"
        f"  speedup : {result.speedup:9.1f}x\n"
        f"  FLOP/s  : {result.achieved_tflops:9.2f} TFLOP/s achieved / "
        f"{result.matmul_peak_tflops:.2f} TFLOP/s measured matmul = {100 * result.mfu:.1f}%"
    )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
