"""Shared parts of the benchmarks: random RMs of real architectures' shapes, FLOP counting, the measured
matmul peak, the profiler hook and the JSON result files (``benchmarks/results/``, one per run).

Models are built from ``transformers`` configs with random weights (no hub): throughput does not depend
on the weights' values. Chat architectures use the tiny byte-level BPE tokenizer of
``rmexplain.score.tiny`` (a chat template that writes BOS, a post-processor that adds one: the double-BOS
trap), DeBERTa the bundled MiniLM WordPiece tokenizer (pair encoding, like the OpenAssistant RMs); the
model's embedding table has the real architecture's vocabulary size (or the tokenizer's, if larger).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
sys.path.insert(0, str(REPO / "workflow"))


@dataclass(frozen=True)
class Arch:
    """One architecture: its transformers config class and keyword arguments, and how RMs of it read."""

    name: str
    config_class: str
    model_class: str
    config: dict[str, Any]
    causal: bool = True
    input_format: str = "chat"
    max_length: int = 8192
    paper_rms: tuple[str, ...] = field(default=())


_DEBERTA_COMMON = {
    "relative_attention": True,
    "position_buckets": 256,
    "pos_att_type": ["p2c", "c2p"],
    "position_biased_input": False,
    "type_vocab_size": 0,
    "norm_rel_ebd": "layer_norm",
    "share_att_key": True,
    "max_position_embeddings": 512,
}
_NEOX_COMMON = {"rotary_pct": 0.25, "use_parallel_residual": True, "max_position_embeddings": 2048}
_GEMMA2_COMMON = {
    "sliding_window": 4096,
    "attn_logit_softcapping": 50.0,
    "final_logit_softcapping": 30.0,
    "max_position_embeddings": 8192,
}

ARCHS: dict[str, Arch] = {
    # Llama-3-8B: the App. G RMs (OffsetBias, Skywork) and six of the token paper's ten.
    "llama3-8b": Arch(
        "llama3-8b",
        "LlamaConfig",
        "LlamaForSequenceClassification",
        {
            "hidden_size": 4096,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "intermediate_size": 14336,
            "vocab_size": 128256,
            "rope_theta": 500000.0,
            "max_position_embeddings": 8192,
        },
        paper_rms=("offsetbias-8b", "skywork-8b"),
    ),
    # DeBERTa-v3-large: the OpenAssistant v1/v2 RMs, 512 positions, (question, answer) pairs.
    "deberta-v3-large": Arch(
        "deberta-v3-large",
        "DebertaV2Config",
        "DebertaV2ForSequenceClassification",
        {
            **_DEBERTA_COMMON,
            "hidden_size": 1024,
            "num_hidden_layers": 24,
            "num_attention_heads": 16,
            "intermediate_size": 4096,
            "vocab_size": 128100,
        },
        causal=False,
        input_format="pair",
        max_length=512,
        paper_rms=("deberta-v1", "deberta-v2"),
    ),
    # Pythia-1.4B (GPTNeoX): the OpenAssistant oasst-rm-2.1 RM.
    "pythia-1.4b": Arch(
        "pythia-1.4b",
        "GPTNeoXConfig",
        "GPTNeoXForSequenceClassification",
        {
            **_NEOX_COMMON,
            "hidden_size": 2048,
            "num_hidden_layers": 24,
            "num_attention_heads": 16,
            "intermediate_size": 8192,
            "vocab_size": 50304,
        },
        max_length=2048,
        paper_rms=("pythia-1.4b",),
    ),
    # Gemma-2-27B: the token paper's three 27B RMs (bf16: ~54 GB of weights).
    "gemma2-27b": Arch(
        "gemma2-27b",
        "Gemma2Config",
        "Gemma2ForSequenceClassification",
        {
            **_GEMMA2_COMMON,
            "hidden_size": 4608,
            "num_hidden_layers": 46,
            "num_attention_heads": 32,
            "num_key_value_heads": 16,
            "head_dim": 128,
            "intermediate_size": 36864,
            "query_pre_attn_scalar": 144,
            "vocab_size": 256000,
        },
    ),
}

# Tiny shapes of each architecture for the CPU presets (same classes, same attention kinds).
TINY: dict[str, dict[str, Any]] = {
    "llama3-8b": {
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 224,
        "vocab_size": 0,
    },
    "deberta-v3-large": {
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 256,
        "vocab_size": 0,
    },
    "pythia-1.4b": {
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 256,
        "vocab_size": 0,
    },
    "gemma2-27b": {
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "intermediate_size": 256,
        "query_pre_attn_scalar": 16,
        "vocab_size": 0,
    },
}


def build_tokenizer(arch: Arch) -> Any:
    """The tokenizer the benchmark uses for ``arch`` (see the module docstring)."""
    if arch.input_format == "pair":
        from transformers import AutoTokenizer

        from rmexplain.score.tiny import minilm_tokenizer_dir

        return AutoTokenizer.from_pretrained(minilm_tokenizer_dir())
    from rmexplain.score.tiny import build_llama_tokenizer

    return build_llama_tokenizer()


def build_model(
    arch: Arch, tokenizer: Any, device: str, dtype: str, tiny: bool = False, vocab_size: int | None = None
) -> torch.nn.Module:
    """A random ``arch`` sequence-classification RM (num_labels 1), built directly on ``device`` in
    ``dtype``. The embedding table has max(architecture vocabulary, tokenizer size) rows, or
    ``vocab_size`` when given."""
    import transformers

    kwargs = {**arch.config, **(TINY[arch.name] if tiny else {})}
    wanted = vocab_size or kwargs["vocab_size"]
    kwargs["vocab_size"] = max(wanted, len(tokenizer))
    config = getattr(transformers, arch.config_class)(
        **kwargs,
        num_labels=1,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    previous = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, dtype))
    try:
        with torch.device(device):
            torch.manual_seed(0)
            model = getattr(transformers, arch.model_class)(config)
    finally:
        torch.set_default_dtype(previous)
    return model.eval()


# ---- FLOPs ----------------------------------------------------------------------------------------------

_BLOCK = re.compile(r"\.layers?\.\d+\.")


def block_linear_parameters(model: torch.nn.Module) -> int:
    """Weights of the Linear layers inside the transformer blocks (the per-token matmuls; embeddings,
    the pooler and the score head are left out)."""
    return sum(
        m.weight.numel()
        for name, m in model.named_modules()
        if isinstance(m, torch.nn.Linear) and _BLOCK.search(f".{name}.")
    )


def attention_width(model: torch.nn.Module) -> tuple[int, int]:
    """(layers, heads x head_dim) of the model's config."""
    config = model.config
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return config.num_hidden_layers, heads * head_dim


def sequence_flops(
    linear: int, layers: int, width: int, new: int, context: int = 0, causal: bool = True
) -> float:
    """Useful FLOPs of running ``new`` tokens after ``context`` cached ones: 2 x block Linear weights per
    token, plus attention scores and weighted sum (2 x 2 x width per query-key pair per layer): causal, the
    token at position p attends to p + 1 keys; bidirectional, every token to all ``new`` (no cache)."""
    pairs = sum(context + p + 1 for p in range(new)) if causal else new * (context + new)
    return 2.0 * linear * new + 4.0 * layers * width * pairs


def useful_flops(model: torch.nn.Module, lengths: Sequence[int], causal: bool) -> float:
    """Useful FLOPs of whole sequences of the given lengths (padding excluded)."""
    linear = block_linear_parameters(model)
    layers, width = attention_width(model)
    return sum(sequence_flops(linear, layers, width, s, 0, causal) for s in lengths)


# ---- timing ---------------------------------------------------------------------------------------------


def synchronize(device: str | torch.device) -> None:
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def peak_dtype(device: str, model_dtype: str) -> str:
    """The dtype the peak is measured in: bf16 on CUDA (the goals' reference), the model's on CPU."""
    return "bfloat16" if device.startswith("cuda") else model_dtype


def matmul_peak(device: str, dtype: str, n: int | None = None, repeats: int = 10) -> float:
    """Measured dense matmul FLOP/s: the fastest of timed ``n x n`` products after warm-up (random operands;
    the fastest, because a peak is what the hardware reaches, not what a shared machine left over)."""
    n = n or (8192 if device.startswith("cuda") else 512)
    a, b = (torch.randn(n, n, device=device, dtype=getattr(torch, dtype)) for _ in range(2))
    for _ in range(3):
        a @ b
    times = []
    for _ in range(repeats):
        synchronize(device)
        start = time.perf_counter()
        a @ b
        synchronize(device)
        times.append(time.perf_counter() - start)
    return 2 * n**3 / min(times)


def timed(device: str, call: Any, *args: Any, **kwargs: Any) -> tuple[float, Any]:
    """Wall seconds of one call, device synchronised before and after."""
    synchronize(device)
    start = time.perf_counter()
    out = call(*args, **kwargs)
    synchronize(device)
    return time.perf_counter() - start, out


@contextlib.contextmanager
def profiled(directory: Path | None, device: str, rows: int = 40) -> Iterator[None]:
    """Run the body under ``torch.profiler`` and write ``trace.json`` (Chrome/Perfetto) and
    ``top_ops.txt`` (ops by total device time on CUDA, CPU time otherwise) to ``directory``; no-op if None."""
    if directory is None:
        yield
        return
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if device.startswith("cuda"):
        activities.append(ProfilerActivity.CUDA)
    directory.mkdir(parents=True, exist_ok=True)
    with profile(activities=activities, record_shapes=True) as prof:
        yield
        synchronize(device)
    prof.export_chrome_trace(str(directory / "trace.json"))
    sort = "cuda_time_total" if device.startswith("cuda") else "cpu_time_total"
    table = prof.key_averages().table(sort_by=sort, row_limit=rows)
    (directory / "top_ops.txt").write_text(table + "\n")
    print(f"profile written to {directory}/trace.json and top_ops.txt")


# ---- results --------------------------------------------------------------------------------------------


def device_name(device: str) -> str:
    """The GPU's name as torch reports it, or ``cpu``."""
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return "cpu"


def versions() -> dict[str, str]:
    """Versions of what the numbers depend on, and the repository's commit."""
    import transformers

    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "cuda": torch.version.cuda or "none",
        "rmexplain_commit": commit,
    }


def header(benchmark: str, preset: str, device: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """The fields every result file starts with."""
    return {
        "benchmark": benchmark,
        "preset": preset,
        "device": device_name(device),
        "torch_device": device,
        "cpu_threads": torch.get_num_threads(),
        "load_average_1min": os.getloadavg()[0],
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "versions": versions(),
        "parameters": parameters,
    }


def write_result(report: dict[str, Any], directory: Path | None = None) -> Path:
    """Write one run's JSON as ``<benchmark>_<preset>_<device>_<date>.json`` under ``directory``."""
    directory = directory or RESULTS
    directory.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", report["device"]).strip("-").lower()
    stamp = report["date"].replace(":", "").replace("-", "")
    path = directory / f"{report['benchmark']}_{report['preset']}_{slug}_{stamp}.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {path}")
    return path


def tolerance(dtype: str, spread: float) -> float:
    """Largest |difference| of scores between two routes over the same texts that counts as agreement:
    ``atol + rtol x spread`` (spread = max - min of the reference scores); fp32 1e-4 + 1e-3 x spread,
    bf16/fp16 2e-2 + 5e-2 x spread (reduced-precision kernels differ with batch shape and padding)."""
    atol, rtol = (1e-4, 1e-3) if dtype == "float32" else (2e-2, 5e-2)
    return atol + rtol * spread
