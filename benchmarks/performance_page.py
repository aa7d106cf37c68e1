"""Build docs/performance.md (tables, one figure, extrapolations) from the benchmarks' JSON files.

    python benchmarks/performance_page.py            # reads benchmarks/results/*.json

Every number on the page comes from a result file; the extrapolations of the paper's configs use only
files measured on a GPU (``device`` other than ``cpu``) and say so when there are none.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow"))
RESULTS = REPO / "benchmarks" / "results"
PAGE = REPO / "docs" / "performance.md"
FIGURE = "figures/performance_tflops.png"

# Per-response perturbations of the paper's methods (Jiang et al.: 15 attributes x one two-step edit,
# 15 random, 15 Polyjuice); each two-step variant is one more edit per attribute.
PAPER_ATTRIBUTES = 15
PAPER_PROMPTS = 3
# The scoring benchmark's architecture for each RM of config/paper.yaml.
PAPER_SCORING_ARCH = {
    "deberta-v1": "deberta-v3-large",
    "deberta-v2": "deberta-v3-large",
    "pythia-1.4b": "pythia-1.4b",
    "offsetbias-8b": "llama3-8b",
    "skywork-8b": "llama3-8b",
}
# The scan benchmark's architecture, its parameters (billions) and vocabulary, per family of the ten RMs.
SCAN_FAMILY = {"Gemma": ("gemma2-27b", 27, 256000), "Llama": ("llama3-8b", 8, 128256)}

GPU_COMMANDS = """\
# once, on a machine with the bundled tokenizer package (the directory travels to the GPU machine):
python benchmarks/bench_token_scan.py --save-tokenizer benchmarks/out/gemma3-tok
# on the H100, with the project installed (pip install -e .; bench_rule.py also runs snakemake); each
# command is sized to take at most about ten minutes at the goals' utilisation (an estimate, not a
# measurement; --texts / --tokens scale them); then commit benchmarks/results/*.json:
python benchmarks/bench_scoring.py --preset gpu-llama3-8b --workloads hh
python benchmarks/bench_scoring.py --preset gpu-llama3-8b --workloads hs2 --oom-check
python benchmarks/bench_scoring.py --preset gpu-gemma2-27b --workloads hh
python benchmarks/bench_scoring.py --preset gpu-gemma2-27b --workloads hs2
python benchmarks/bench_scoring.py --preset gpu-deberta-v3-large
python benchmarks/bench_scoring.py --preset gpu-pythia-1.4b
TOK="--tokenizer-dir benchmarks/out/gemma3-tok"
python benchmarks/bench_token_scan.py --preset gpu-llama3-8b $TOK
python benchmarks/bench_token_scan.py --preset gpu-gemma2-27b $TOK --routes exact
python benchmarks/bench_token_scan.py --preset gpu-gemma2-27b $TOK --routes official --tokens 65536
python benchmarks/bench_rule.py --preset gpu-llama3-8b --workload hh
# any of them with --profile DIR writes a torch.profiler trace and a table of the top ops
python benchmarks/performance_page.py"""


def load(directory: Path) -> list[dict[str, Any]]:
    """Every result file, oldest first."""
    reports = []
    for path in sorted(directory.glob("*.json")):
        report = json.loads(path.read_text())
        report["_file"] = path.name
        reports.append(report)
    return sorted(reports, key=lambda r: (r.get("date", ""), r["_file"]))


def on_gpu(report: dict[str, Any]) -> bool:
    return report.get("device", "cpu") != "cpu"


def _f(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "—"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def _pct(value: float) -> str:
    return f"{100 * value:.1f} %"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def scoring_rows(reports: list[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for r in (r for r in reports if r["benchmark"] == "scoring"):
        m = r["model"]
        for w in r["workloads"]:
            agree = all(p["agrees"] for p in w["peers"].values())
            worst = max(p["max_abs_diff"] / p["tolerance"] for p in w["peers"].values())
            rows.append(
                [
                    r["device"],
                    f"`{r['preset']}`",
                    f"{m['architecture']} ({m['parameters'] / 1e6:,.1f}M, {m['dtype']})",
                    w["workload"],
                    f"{w['n_texts']:,}",
                    _f(w["mean_tokens"], 0),
                    _f(w["texts_per_s"], 1),
                    _f(w["tokens_per_s"], 0),
                    _f(w["tflops"], 4),
                    _pct(w["mfu"]),
                    _f(w["speedup"]["pipeline"]) + "×",
                    _f(w["speedup"]["padded_loop"]) + "×",
                    ("yes" if agree else "**no**") + f" ({worst:.2g} of tol.)",
                ]
            )
    return rows


def scan_rows(reports: list[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for r in (r for r in reports if r["benchmark"] == "token_scan"):
        agree = r["agreement"].get("official_vs_official_code")
        tau = r["agreement"].get("exact_vs_official", {}).get("kendall_tau_b")
        for s in r["scans"]:
            note = ""
            if s["route"] == "official" and agree:
                note = (
                    f"max Δ vs peer {agree['max_abs_diff']:.1e} ({'agrees' if agree['agrees'] else '**no**'})"
                )
            if s["route"] == "exact" and tau is not None:
                note = f"τ-b vs official {tau:.2f}"
            if s["route"] == "exact" and s.get("prefix_cache_used") is False:
                note += " (**ran without the prefix cache**: its check failed)"
            rows.append(
                [
                    r["device"],
                    f"`{r['preset']}`",
                    f"{r['model']['architecture']} ({r['model']['dtype']})",
                    s["route"],
                    f"{s['vocab_size']:,} / {s['full_vocab_size']:,}",
                    _f(s["seconds"]),
                    _f(s["tokens_per_s"], 0),
                    _f(s["seconds_full_vocab_estimate"], 1),
                    _pct(s["flop_bound_share"]),
                    "—" if s["speedup"] is None else _f(s["speedup"]) + "×",
                    note,
                ]
            )
    return rows


def rule_rows(reports: list[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for r in (r for r in reports if r["benchmark"] == "rule"):
        x = r["rule"]
        memory = "—" if x["peak_gpu_memory_gib"] is None else f"{x['peak_gpu_memory_gib']:.1f} GiB"
        rows.append(
            [
                r["device"],
                f"`{r['preset']}`",
                f"{x['texts_scored']:,}",
                _f(x["snakemake_wall_seconds"], 1),
                _f(x["load_seconds"], 1),
                _f(x["encoding_seconds"], 1),
                _f(x["model_seconds"], 1),
                _f(x["overhead_seconds"], 1),
                _pct(x["model_share_of_wall"]),
                memory,
            ]
        )
    return rows


# ---- extrapolations -------------------------------------------------------------------------------------


def paper_scoring_texts(config: dict[str, Any]) -> dict[tuple[str, str], int]:
    """Texts each (RM, dataset) of a paper config scores: originals plus perturbations, before
    deduplication and skips (an upper bound)."""
    sample, perturb = config.get("sample", {}), config.get("perturb", {})
    per_method = {
        "random": perturb.get("random", {}).get("n", 15),
        "polyjuice": perturb.get("polyjuice", {}).get("n", 15),
    }
    out = {}
    for name, d in config["datasets"].items():
        comparisons = d.get("n_per_seed", sample.get("n_per_seed", 0)) * len(
            d.get("seeds", sample.get("seeds", [0]))
        )
        edits = sum(per_method.get(m, PAPER_ATTRIBUTES) for m in d.get("methods", perturb.get("methods", [])))
        for rm in d.get("reward_models", []):
            out[(rm, name)] = comparisons * 2 * (1 + edits)
    return out


def workload_of(dataset: dict[str, Any]) -> str:
    return "hs2" if dataset.get("source") == "helpsteer2" else "hh"


def best_rates(reports: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """Backend texts/s per (architecture, workload) on a GPU (the newest file wins)."""
    rates = {}
    for r in (r for r in reports if r["benchmark"] == "scoring" and on_gpu(r)):
        for w in r["workloads"]:
            rates[(r["model"]["architecture"], w["workload"])] = w["texts_per_s"]
    return rates


def scoring_extrapolation(reports: list[dict[str, Any]], config: dict[str, Any]) -> list[list[str]]:
    rates = best_rates(reports)
    rows, total = [], 0.0
    for (rm, dataset), n in paper_scoring_texts(config).items():
        arch = PAPER_SCORING_ARCH.get(rm, "?")
        workload = workload_of(config["datasets"][dataset])
        rate = rates.get((arch, workload))
        seconds = None if rate is None else n / rate
        total += seconds or 0.0
        rows.append(
            [
                rm,
                dataset,
                f"{n:,}",
                f"{arch} / {workload}",
                "needs a GPU run" if seconds is None else f"{seconds / 60:.1f} min",
            ]
        )
    if rows and all(r[-1] != "needs a GPU run" for r in rows):
        rows.append(["**all**", "", "", "", f"**{total / 3600:.2f} h**"])
    return rows


def scan_rates(reports: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """Seconds per token per (architecture, route) on a GPU (the newest file wins)."""
    out = {}
    for r in (r for r in reports if r["benchmark"] == "token_scan" and on_gpu(r)):
        for s in r["scans"]:
            out[(r["model"]["architecture"], s["route"])] = s["seconds"] / s["vocab_size"]
    return out


def scan_extrapolation(reports: list[dict[str, Any]], config: dict[str, Any]) -> list[list[str]]:
    """The paper's whole scan (config/tokens_paper.yaml): every RM x prompt x full vocabulary, the
    official route and (``scan.compare``) the exact one; per-token seconds of the measured architecture
    of the RM's family, scaled by parameters (FLOPs per token) and to the family's vocabulary."""
    from rmexplain.tokens.paper_models import paper_reward_models

    rates = scan_rates(reports)
    scan = config["tokens"]["scan"]
    routes = [scan.get("mode", "official")] + (["exact"] if scan.get("compare") else [])
    prompts = len(config["tokens"]["prompts"])
    rows, total = [], 0.0
    for m in paper_reward_models().iter_rows(named=True):
        arch, params, vocab = SCAN_FAMILY[m["family"]]
        per_token = [rates.get((arch, route)) for route in routes]
        if any(p is None for p in per_token):
            cell = "needs a GPU run"
        else:
            seconds = sum(per_token) * vocab * prompts * m["params_b"] / params  # type: ignore[misc]
            total += seconds
            cell = f"{seconds / 60:.1f} min"
        rows.append(
            [m["short_name"], f"{m['params_b']}B", f"{vocab:,}", f"{arch}, {' + '.join(routes)}", cell]
        )
    if all(r[-1] != "needs a GPU run" for r in rows):
        rows.append(["**all ten**", "", "", "", f"**{total / 60:.1f} min**"])
    return rows


# ---- figure ---------------------------------------------------------------------------------------------


def figure(reports: list[dict[str, Any]], path: Path) -> bool:
    """Achieved TFLOP/s against mean text length and mean real tokens per batch, per architecture and
    route (backend, pipeline, padded loop); False when there is nothing to plot."""
    points = []
    for r in (r for r in reports if r["benchmark"] == "scoring"):
        for w in r["workloads"]:
            routes = {"backend": w, **w["peers"]}
            for route, x in routes.items():
                points.append(
                    (
                        r["model"]["architecture"],
                        r["device"],
                        route,
                        w["mean_tokens"],
                        x["mean_batch_tokens"],
                        x["tflops"],
                    )
                )
    if not points:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    markers = {"backend": "o", "pipeline": "x", "padded_loop": "s"}
    keys = sorted({(p[0], p[1]) for p in points})
    colours = {k: f"C{i}" for i, k in enumerate(keys)}
    for arch, device, route, length, batch, tflops in points:
        for ax, x in zip(axes, (length, batch), strict=True):
            ax.scatter(x, tflops, marker=markers[route], color=colours[(arch, device)], s=40)
    for ax, label in zip(
        axes, ("mean text length (tokens)", "mean real tokens per forward batch"), strict=True
    ):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("achieved useful TFLOP/s")
    handles = [
        plt.Line2D([], [], color=colours[k], marker="o", ls="", label=f"{k[0]} ({k[1]})") for k in keys
    ]
    handles += [plt.Line2D([], [], color="grey", marker=m, ls="", label=r) for r, m in markers.items()]
    axes[1].legend(handles=handles, fontsize=7, loc="best")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


# ---- page -----------------------------------------------------------------------------------------------

INTRO = """\
# Performance

Generated by `python benchmarks/performance_page.py` from the JSON files under `benchmarks/results/` (one
per benchmark run; do not edit this page by hand). What is measured: [testing](testing.md#benchmarks) and
each script's docstring (`benchmarks/bench_scoring.py`, `bench_token_scan.py`, `bench_rule.py`).
"""

NO_GPU = """\
**No GPU numbers exist yet.** Every number below was measured on a CPU (device `cpu`: two cores shared with
other jobs, see each file's `load_average_1min`; float32) with *tiny* shapes of each architecture (at most a
few million parameters): they show that the benchmarks run end to end and what they report, and say nothing
about how fast the project is on the GPU it is meant for; the extrapolations to the paper's configs are
left open until GPU files exist. These commands produce the GPU numbers on an H100 (80 GB; models are
built from the real architectures' configs with random weights, so no hub is needed) and regenerate this
page:
"""

SIZES = """\
Sizes: 20,000 texts per workload for DeBERTa-v3-large and Pythia-1.4B shapes and for Llama-3-8B on HH-length
texts; 8,000 HelpSteer2-length texts for Llama-3-8B; 6,000 and 2,000 for Gemma-2-27B (so that each command
stays within about ten minutes; `--texts N` sets any of them). The peers score the first 256 (pipeline) and
1,024 (padded loop) texts, for Gemma-2-27B 128 and 512. Scans cover the whole vocabulary except the
official route of the 256,000-id scan (its first 65,536 ids, timed per id like the rest), and the official
code's approach, which scans the first 16,384 (8B) or 8,192 (27B) ids.
"""

VLLM = """\
vLLM cannot be installed on the GPU machine used for these measurements (its wheel is larger than what can
be carried there), so the `vllm` backend is not timed; its request-building tests
(`tests/test_score_vllm.py`: the `LLM` arguments and the token prompts it sends, equal to the transformers
backend's token ids) stand in for it.
"""

DEFINITIONS = """\
Definitions. *Useful FLOPs* count 2 × the weights of the transformer blocks' Linear layers per real token plus
attention (2 × 2 × heads × head_dim per query–key pair and layer; causal models attend to earlier positions
only; DeBERTa's disentangled position terms are left out), never padding. *mfu* is useful FLOP/s over the
dense matmul FLOP/s measured in the same run (bf16 on a GPU, the model's dtype on a CPU). *speedup* is the
backend's texts/s over the peer's on the same workload (the peers score its first texts): `pipeline` =
`transformers.pipeline("text-classification")` one text at a time; `padded_loop` = fixed-size batches in
input order, padded to the longest. Scores agree when the largest difference is within `atol + rtol ×
spread` (fp32: 1e-4 + 1e-3 × spread; bf16: 2e-2 + 5e-2 × spread). Token scans: `exact` (prefix-cached exact
ids), `official` (the paper's re-tokenised route, unpadded) and `official_code` (the peer: every sequence
re-encoded in full, padded batches in vocabulary order); *FLOP bound* = the needed work (only the tokens
after the cached prefix, plus the prefix once) at the measured peak, over the measured time.
"""


def build_page(directory: Path, figure_path: Path | None = None) -> str:
    """The page's Markdown; writes the figure to ``figure_path`` when given."""
    reports = load(directory)
    gpu = any(on_gpu(r) for r in reports)
    lines = [INTRO]
    if not gpu:
        lines += [NO_GPU, "```bash", GPU_COMMANDS, "```", "", SIZES]
    else:
        devices = sorted({r["device"] for r in reports})
        lines += [
            f"Devices: {', '.join(devices)}. Commands that produce the GPU numbers:",
            "",
            "```bash",
            GPU_COMMANDS,
            "```",
            "",
        ]
    lines += [VLLM, DEFINITIONS]
    versions = sorted(
        {
            (r["device"], r["versions"]["torch"], r["versions"]["transformers"], r["date"][:10])
            for r in reports
        }
    )
    lines += [
        "Runs: "
        + "; ".join(f"{d} (torch {t}, transformers {tr}, {day})" for d, t, tr, day in versions)
        + load_note(reports)
        + ".",
        "",
    ]
    lines += ["## Scoring", ""]
    lines += _table(
        [
            "device",
            "preset",
            "model",
            "workload",
            "texts",
            "mean tokens",
            "texts/s",
            "tokens/s",
            "TFLOP/s",
            "mfu",
            "vs pipeline",
            "vs padded loop",
            "scores agree",
        ],
        scoring_rows(reports),
    )
    for r in (r for r in reports if "oom_check" in r):
        oom = r["oom_check"]
        lines += [
            "",
            f"Out-of-memory back-off (`--oom-check`, `{r['preset']}` on {r['device']}): "
            f"{len(oom['halvings'])} halving(s); largest score difference against the uncapped run "
            f"{oom['max_abs_diff_vs_uncapped']:.2e}.",
        ]
    if figure_path is not None and figure(reports, figure_path):
        lines += ["", f"![achieved TFLOP/s]({FIGURE})", ""]
    lines += ["", "## Token scans", ""]
    lines += _table(
        [
            "device",
            "preset",
            "model",
            "route",
            "ids scanned / vocabulary",
            "seconds",
            "ids/s",
            "full vocabulary (s, est.)",
            "of FLOP bound",
            "speedup vs official code",
            "agreement",
        ],
        scan_rows(reports),
    )
    lines += [
        "",
        "The GPU presets' tokenizer is the bundled Gemma-3 one (262,144 ids) standing in for the "
        "Llama-3 and Gemma-2 tokenizers, which are not available offline (each file's `tokenizer` field).",
        "",
        "## One rule through Snakemake (`score_perturbations`)",
        "",
    ]
    lines += _table(
        [
            "device",
            "preset",
            "texts",
            "Snakemake wall (s)",
            "model load (s)",
            "encoding (s)",
            "model (s)",
            "rest (s)",
            "model share",
            "peak GPU memory",
        ],
        rule_rows(reports),
    )
    lines += extrapolation_section(reports)
    return "\n".join(lines) + "\n"


def load_note(reports: list[dict[str, Any]]) -> str:
    """The CPU runs' 1-minute load averages (other jobs on the machine slow the CPU numbers down)."""
    loads = [r["load_average_1min"] for r in reports if not on_gpu(r) and "load_average_1min" in r]
    if not loads:
        return ""
    return f"; 1-minute load average during the CPU runs {min(loads):.1f}–{max(loads):.1f} on 2 cores"


def extrapolation_section(reports: list[dict[str, Any]]) -> list[str]:
    paper = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    tokens = yaml.safe_load((REPO / "config" / "tokens_paper.yaml").read_text())
    lines = [
        "",
        "## The paper's configs on one GPU (extrapolated from GPU files only)",
        "",
        "`config/paper.yaml`, scoring: texts per RM and dataset (originals + perturbations before "
        f"deduplication: {PAPER_ATTRIBUTES} per attribute-conditioned method, `random.n`, `polyjuice.n`) "
        "over "
        "the backend's texts/s for the RM's architecture and the dataset's text lengths.",
        "",
    ]
    lines += _table(["RM", "dataset", "texts", "measured as", "time"], scoring_extrapolation(reports, paper))
    lines += [
        "",
        "`config/tokens_paper.yaml`, the whole scan (ten RMs × "
        f"{PAPER_PROMPTS} prompts × full vocabularies, the official route and the exact one it is compared "
        "with): seconds per token of the measured architecture of the RM's family, scaled by parameters.",
        "",
    ]
    lines += _table(
        ["RM", "parameters", "vocabulary", "measured as", "time"], scan_extrapolation(reports, tokens)
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--out", type=Path, default=PAGE)
    args = parser.parse_args(argv)
    page = build_page(args.results, args.out.parent / FIGURE)
    args.out.write_text(page)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
