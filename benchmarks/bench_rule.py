"""Benchmark (not a test): one rule through Snakemake — ``score_perturbations`` on a paper-sized table.

Generates, in a work directory, a comparisons table and a perturbation table of the paper's size (§3: 30
comparisons x 5 seeds = 150 comparisons, 45 perturbations per response: 15 two-step, 15 random, 15
Polyjuice = 13,500 texts), HH- or HelpSteer2-length texts (``bench_scoring.make_pairs``), writes a config
with one dataset and one RM, and runs the workflow's own ``score_perturbations`` rule on it
(``snakemake --allowed-rules score_perturbations``: the generated tables are its inputs). Reported: the
Snakemake command's wall time against what the job's log says (the transformers backend logs, per
``score`` call, its encoding and model seconds and, on CUDA, the peak memory), the model's load time, and
the rest (Snakemake start-up, imports, Parquet, deduplication).

The RM: ``--rm-spec FILE`` (YAML, one RM spec as in config ``reward_models``), else the preset's random
model saved with ``save_pretrained`` into the work directory (``cpu-tiny``: a tiny Llama; ``gpu-llama3-8b``:
Llama-3-8B shapes in bf16, ~16 GB on disk).

    python benchmarks/bench_rule.py --preset cpu-tiny                    # a tiny version, under a minute
    python benchmarks/bench_rule.py --preset gpu-llama3-8b --workload hh
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import bench_scoring
import benchlib
import polars as pl
import torch
import yaml
from benchlib import ARCHS, REPO

from rmexplain import paths, targets
from rmexplain.design import Design
from rmexplain.schemas import COMPARISONS, PERTURBATIONS, write_table

DATASET, RM = "bench", "bench-rm"
PRESETS: dict[str, dict[str, Any]] = {
    "cpu-tiny": {
        "arch": "llama3-8b",
        "tiny": True,
        "device": "cpu",
        "dtype": "float32",
        "comparisons": 6,
        "per_response": 4,
        "batch_size": 16,
        "max_batch_tokens": 8192,
    },
    "gpu-llama3-8b": {
        "arch": "llama3-8b",
        "tiny": False,
        "device": "cuda",
        "dtype": "bfloat16",
        "comparisons": 150,
        "per_response": 45,
        "batch_size": 128,
        "max_batch_tokens": 65536,
    },
}
_LINE = re.compile(
    r"^(?P<time>\S+ \S+) INFO \S+: (?P<key>\S+): scored (?P<n>\d+) distinct inputs "
    r"\((?P<tokens>\d+) tokens\): "
    r"encoding (?P<enc>[\d.]+) s, model (?P<model>[\d.]+) s(?:, peak CUDA memory (?P<mem>[\d.]+) GiB)?"
)


def save_model(preset: dict[str, Any], directory: Path) -> dict[str, Any]:
    """Save the preset's random RM and return its spec."""
    arch = ARCHS[preset["arch"]]
    tokenizer = benchlib.build_tokenizer(arch)
    if not (directory / "config.json").is_file():
        model = benchlib.build_model(arch, tokenizer, preset["device"], preset["dtype"], tiny=preset["tiny"])
        model.save_pretrained(directory)
        tokenizer.save_pretrained(directory)
        del model
        if torch.cuda.is_available():
            torch.cuda.empty_cache()  # the job, another process, needs the memory
    spec = bench_scoring.scorer_spec(preset)
    return {**spec, "model": str(directory)}


def perturb(rng: random.Random, text: str, words: list[str], variant: int) -> str:
    """A distinct edit of ``text``: a few words replaced, the variant's index appended."""
    tokens = text.split()
    for _ in range(max(1, len(tokens) // 20)):
        tokens[rng.randrange(len(tokens))] = rng.choice(words)
    return " ".join(tokens) + f" ({variant})"


def tables(preset: dict[str, Any], workload: str, tokenizer: Any) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The comparisons and the perturbations (every response edited ``per_response`` times)."""
    arch = ARCHS[preset["arch"]]
    costs = bench_scoring.word_costs(tokenizer, arch)
    n = preset["comparisons"]
    span = bench_scoring.WORKLOADS[workload]
    chosen = bench_scoring.make_pairs(n, span, costs, 10, seed=1)
    rejected = bench_scoring.make_pairs(n, span, costs, 10, seed=2)
    ids = [f"{DATASET}-s0-{i}" for i in range(n)]
    comparisons = pl.DataFrame(
        {
            "comparison_id": ids,
            "dataset": [DATASET] * n,
            "seed": [0] * n,
            "source_index": [str(i) for i in range(n)],
            "prompt": [p for p, _ in chosen],
            "chosen": [r for _, r in chosen],
            "rejected": [r for _, r in rejected],
        }
    )
    rng, words, rows = random.Random(0), list(costs), []
    for cid, (_, good), (_, bad) in zip(ids, chosen, rejected, strict=True):
        for target, text in (("chosen", good), ("rejected", bad)):
            for v in range(preset["per_response"]):
                rows.append(
                    {
                        "perturbation_id": f"{cid}-{target}-{v}",
                        "comparison_id": cid,
                        "target": target,
                        "direction": "worse" if target == "chosen" else "better",
                        "attribute": None,
                        "variant": v,
                        "text": perturb(rng, text, words, v),
                        "method": "rules",
                        "orienter": RM,
                        "focus_words": [],
                        "generator": "bench_rule",
                    }
                )
    return comparisons, pl.DataFrame(rows, schema_overrides={"focus_words": pl.List(pl.String)})


def write_inputs(
    workdir: Path, spec: dict[str, Any], preset: dict[str, Any], workload: str
) -> tuple[Path, str]:
    """Config and input tables in ``workdir``; returns (config file, the rule's output path)."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["datasets"] = {DATASET: {"source": "embedded", "part": "helpful"}}
    config["reward_models"] = {RM: spec}
    config["perturb"]["methods"] = ["rules"]
    config.setdefault("tokens", {})["enabled"] = False
    design = Design.from_config(config)
    from transformers import AutoTokenizer

    comparisons, perturbations = tables(preset, workload, AutoTokenizer.from_pretrained(spec["model"]))
    files = targets.perturbation_files_for_rm(design, DATASET, RM)
    for path, frame, contract, name in (
        (paths.fmt(paths.COMPARISONS, dataset=DATASET), comparisons, COMPARISONS, "comparisons"),
        *((f, perturbations, PERTURBATIONS, "perturbations") for f in files),
    ):
        (workdir / path).parent.mkdir(parents=True, exist_ok=True)
        write_table(frame, workdir / path, contract, name)
    config_file = workdir / "config.yaml"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    return config_file, paths.fmt(paths.PERTURBATION_REWARDS, dataset=DATASET, rm=RM)


def read_log(path: Path) -> dict[str, Any]:
    """Load, encoding and model seconds, peak memory from the job's log (the backend's own timing)."""
    lines = path.read_text().splitlines()
    stamps = [_stamp(line) for line in lines]
    found = [m for m in map(_LINE.match, lines) if m]
    if not found:
        raise ValueError(f"{path}: no 'scored ... distinct inputs' line from the transformers backend")
    first = next(s for s in stamps if s is not None)
    init = next((s for line, s in zip(lines, stamps, strict=True) if " max_length " in line and s), first)
    m = found[-1]
    return {
        "job_log_seconds": (stamps[[i for i, s in enumerate(stamps) if s][-1]] - first).total_seconds(),
        "load_seconds": (init - first).total_seconds(),
        "distinct_inputs": int(m["n"]),
        "tokens": int(m["tokens"]),
        "encoding_seconds": float(m["enc"]),
        "model_seconds": float(m["model"]),
        "peak_gpu_memory_gib": float(m["mem"]) if m["mem"] else None,
    }


def _stamp(line: str) -> dt.datetime | None:
    try:
        return dt.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
    except ValueError:
        return None


def run(args: argparse.Namespace) -> dict[str, Any]:
    preset = dict(PRESETS[args.preset])
    for key in ("comparisons", "per_response"):
        if getattr(args, key) is not None:
            preset[key] = getattr(args, key)
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    spec = yaml.safe_load(args.rm_spec.read_text()) if args.rm_spec else save_model(preset, workdir / "model")
    config_file, output = write_inputs(workdir, spec, preset, args.workload)
    (workdir / output).unlink(missing_ok=True)
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(config_file),
        "--cores",
        str(args.cores),
        "--allowed-rules",
        "score_perturbations",
        "--quiet",
        "rules",
        "--",
        output,
    ]
    start = time.perf_counter()
    subprocess.run(command, check=True)
    wall = time.perf_counter() - start
    job = read_log(workdir / "logs" / "score_perturbations" / DATASET / f"{RM}.log")
    report = benchlib.header(
        "rule",
        args.preset,
        preset["device"],
        {**preset, "workload": args.workload, "spec": spec, "cores": args.cores},
    )
    n_texts = pl.read_parquet(workdir / output).height
    report["rule"] = {
        "rule": "score_perturbations",
        "perturbations": preset["comparisons"] * 2 * preset["per_response"],
        "texts_scored": n_texts,
        "snakemake_wall_seconds": wall,
        **job,
        "model_share_of_wall": job["model_seconds"] / wall,
        "overhead_seconds": wall - job["load_seconds"] - job["encoding_seconds"] - job["model_seconds"],
    }
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu-tiny")
    parser.add_argument("--rm-spec", type=Path, help="YAML file with one RM spec (instead of the preset's)")
    parser.add_argument("--workload", choices=sorted(bench_scoring.WORKLOADS), default="hh")
    parser.add_argument("--comparisons", type=int, help="comparisons (default: the preset's)")
    parser.add_argument("--per-response", type=int, help="perturbations per response")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=REPO / "benchmarks" / "out" / "rule")
    parser.add_argument("--results", type=Path, default=benchlib.RESULTS, help="directory for the JSON")
    args = parser.parse_args(argv)
    report = run(args)
    r = report["rule"]
    print(
        f"{report['preset']} on {report['device']}: {r['texts_scored']} texts through score_perturbations: "
        f"Snakemake {r['snakemake_wall_seconds']:.1f} s = load {r['load_seconds']:.1f} s + model "
        f"{r['model_seconds']:.1f} s + encoding {r['encoding_seconds']:.1f} s + rest "
        f"{r['overhead_seconds']:.1f} s;"
        f" peak GPU memory {r['peak_gpu_memory_gib']} GiB"
    )
    benchlib.write_result(report, args.results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
