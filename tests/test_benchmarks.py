"""The benchmarks' arithmetic, result files and page generator, on tiny CPU runs (no GPU needed)."""

from __future__ import annotations

import json
import logging
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_rule  # noqa: E402
import bench_scoring  # noqa: E402
import bench_token_scan  # noqa: E402
import benchlib  # noqa: E402
import demo_profile  # noqa: E402
import performance_page  # noqa: E402


def test_sequence_flops_by_hand():
    # 10 Linear weights, 2 layers, attention width 4.
    assert benchlib.sequence_flops(10, 2, 4, 3) == 2 * 10 * 3 + 4 * 2 * 4 * (1 + 2 + 3)
    assert benchlib.sequence_flops(10, 2, 4, 3, causal=False) == 2 * 10 * 3 + 4 * 2 * 4 * 9
    # two new tokens after five cached ones attend to 6 and 7 keys
    assert benchlib.sequence_flops(10, 2, 4, 2, context=5) == 2 * 10 * 2 + 4 * 2 * 4 * (6 + 7)


@pytest.mark.skipif(
    int(version("transformers").split(".")[0]) < 5,
    reason="transformers 4.x runs its rotary embedding as an extra matmul the count leaves out",
)
@pytest.mark.parametrize("arch", ["llama3-8b", "gemma2-27b"])
def test_useful_flops_match_torch_flop_counter(arch):
    """With eager attention every score is computed, masked or not: torch's FLOP counter must see exactly
    the bidirectional count plus the score head (hidden -> 1 at every position)."""
    from torch.utils.flop_counter import FlopCounterMode

    spec = benchlib.ARCHS[arch]
    tokenizer = benchlib.build_tokenizer(spec)
    model = benchlib.build_model(spec, tokenizer, "cpu", "float32", tiny=True)
    model.config._attn_implementation = "eager"
    s = 29
    ids = torch.randint(10, 300, (1, s))
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(input_ids=ids, attention_mask=torch.ones_like(ids))
    head = 2 * model.config.hidden_size * s
    assert counter.get_total_flops() == benchlib.useful_flops(model, [s], causal=False) + head
    causal = benchlib.useful_flops(model, [s], causal=True)
    layers, width = benchlib.attention_width(model)
    assert benchlib.useful_flops(model, [s], causal=False) - causal == 4 * layers * width * (
        s * s - s * (s + 1) / 2
    )


def test_block_linear_parameters_leave_out_the_head_and_embeddings():
    spec = benchlib.ARCHS["llama3-8b"]
    model = benchlib.build_model(spec, benchlib.build_tokenizer(spec), "cpu", "float32", tiny=True)
    c = model.config
    kv = c.num_key_value_heads * c.hidden_size // c.num_attention_heads
    per_layer = 2 * c.hidden_size**2 + 2 * c.hidden_size * kv + 3 * c.hidden_size * c.intermediate_size
    assert benchlib.block_linear_parameters(model) == c.num_hidden_layers * per_layer


@pytest.fixture(scope="module")
def scoring_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    argv = [
        "--preset",
        "cpu-llama",
        "--workloads",
        "hh",
        "--texts",
        "6",
        "--pipeline-texts",
        "3",
        "--loop-texts",
        "6",
        "--loop-batch",
        "3",
        "--threads",
        "1",
        "--results",
        str(out),
    ]
    assert bench_scoring.main(argv) == 0
    (path,) = out.glob("scoring_cpu-llama_cpu_*.json")
    return out, json.loads(path.read_text())


def test_scoring_run_writes_mfu_speedups_and_agreement(scoring_report):
    _, report = scoring_report
    assert report["device"] == "cpu" and report["benchmark"] == "scoring"
    assert {"python", "torch", "transformers"} <= set(report["versions"])
    assert report["parameters"]["arch"] == "llama3-8b" and report["date"].endswith("Z")
    (w,) = report["workloads"]
    assert w["workload"] == "hh" and w["n_texts"] == 6
    assert 60 <= w["mean_tokens"] <= 450  # HH-length texts (the template's tokens included)
    assert w["mfu"] > 0  # (not <= 1: on a loaded CPU the peak is measured under other jobs' load too)
    assert w["mfu"] == pytest.approx(w["tflops"] / report["matmul_peak_tflops"])
    assert w["tflops"] == pytest.approx(w["useful_tflop"] / w["seconds"])
    assert set(w["speedup"]) == {"pipeline", "padded_loop"}
    for peer, stats in w["peers"].items():
        assert w["speedup"][peer] == pytest.approx(w["texts_per_s"] / stats["texts_per_s"])
        assert stats["agrees"] and stats["max_abs_diff"] < 1e-4
    assert w["peers"]["pipeline"]["n_texts"] == 3 and w["peers"]["padded_loop"]["n_texts"] == 6


def test_scoring_useful_flops_equal_the_models_count(scoring_report):
    """The reported useful TFLOP are the FLOP count of the encoded lengths, recomputed here."""
    _, report = scoring_report
    preset = bench_scoring.configure(bench_scoring.parse_args(["--preset", "cpu-llama", "--texts", "6"]))
    arch = benchlib.ARCHS["llama3-8b"]
    tokenizer = benchlib.build_tokenizer(arch)
    model = benchlib.build_model(arch, tokenizer, "cpu", "float32", tiny=True)
    from rmexplain.score.hf import TransformersScorer

    scorer = TransformersScorer("bench", bench_scoring.scorer_spec(preset), loaded=(model, tokenizer))
    costs = bench_scoring.word_costs(tokenizer, arch)
    pairs = bench_scoring.make_pairs(6, (100, 400), costs, bench_scoring.template_overhead(scorer), seed=6)
    lengths = [len(e.ids) for e in scorer.encode_all(pairs)]
    (w,) = report["workloads"]
    assert w["tokens"] == sum(lengths)
    assert w["useful_tflop"] == pytest.approx(benchlib.useful_flops(model, lengths, True) / 1e12)


def test_disagreeing_scores_are_reported():
    out = bench_scoring.agreement([1.0, 2.0, 3.0], [1.0, 2.5], "float32")
    assert not out["agrees"] and out["max_abs_diff"] == 0.5
    assert bench_scoring.agreement([1.0, 2.0], [1.0, 2.0 + 1e-6], "float32")["agrees"]


def test_token_scan_run_writes_scans(tmp_path):
    argv = [
        "--preset",
        "cpu-tiny",
        "--tokens",
        "48",
        "--peer-tokens",
        "24",
        "--repeats",
        "1",
        "--batch-size",
        "16",
        "--threads",
        "1",
        "--results",
        str(tmp_path),
    ]
    assert bench_token_scan.main(argv) == 0
    (path,) = tmp_path.glob("token_scan_cpu-tiny_cpu_*.json")
    report = json.loads(path.read_text())
    assert report["device"] == "cpu" and report["tokenizer"].startswith("tiny")
    scans = {s["route"]: s for s in report["scans"]}
    assert set(scans) == {"official_code", "exact", "official"}
    assert scans["official_code"]["vocab_size"] == 24 and scans["exact"]["vocab_size"] == 48
    assert scans["exact"]["full_vocab_size"] == 384
    assert scans["exact"]["prefix_cache_used"] and "prefix-cache check" in scans["exact"]["cache_check"]
    peer_rate = scans["official_code"]["tokens_per_s"]
    for route in ("exact", "official"):
        assert scans[route]["speedup"] == pytest.approx(scans[route]["tokens_per_s"] / peer_rate)
        assert scans[route]["flop_bound_share"] > 0
    check = report["agreement"]["official_vs_official_code"]
    assert check["agrees"] and check["n_tokens"] == 24
    assert report["agreement"]["exact_vs_official"]["n_tokens"] == 48


def test_page_builds_tables_from_result_files(scoring_report, tmp_path):
    out, report = scoring_report
    page = performance_page.build_page(out, tmp_path / "fig.png")
    assert "No GPU numbers exist yet" in page and "vLLM cannot be installed" in page
    w = report["workloads"][0]
    assert "| cpu | `cpu-llama` | llama3-8b (" in page
    assert f"| {100 * w['mfu']:.1f} % | {w['speedup']['pipeline']:.2f}× |" in page
    assert (tmp_path / "fig.png").stat().st_size > 0
    assert "needs a GPU run" in page  # CPU files never feed the extrapolations


def test_page_extrapolates_from_gpu_files_only(scoring_report, tmp_path):
    _, report = scoring_report
    gpu = {**report, "device": "Test GPU", "model": {**report["model"], "architecture": "llama3-8b"}}
    (tmp_path / "scoring_gpu.json").write_text(json.dumps(gpu))
    page = performance_page.build_page(tmp_path)
    rate = report["workloads"][0]["texts_per_s"]
    assert (
        f"| offsetbias-8b | harmless_global | 16,000 | llama3-8b / hh | {16000 / rate / 60:.1f} min |" in page
    )
    assert "No GPU numbers exist yet" not in page


def test_score_logs_its_timing(tmp_path, caplog):
    from rmexplain.score.hf import TransformersScorer

    arch = benchlib.ARCHS["llama3-8b"]
    tokenizer = benchlib.build_tokenizer(arch)
    model = benchlib.build_model(arch, tokenizer, "cpu", "float32", tiny=True)
    spec = {"backend": "transformers", "model": "m", "device": "cpu", "dtype": "float32"}
    scorer = TransformersScorer("t", spec, loaded=(model, tokenizer))
    with caplog.at_level(logging.INFO, logger="rmexplain.score.hf"):
        scorer.score(["a", "a", "b"], ["x", "x", "y"])
    line = next(r.getMessage() for r in caplog.records if "distinct inputs" in r.getMessage())
    log = tmp_path / "job.log"
    log.write_text(
        "2026-01-01 10:00:00,000 INFO rmexplain: t: 3 perturbations, 2 distinct texts to score\n"
        "2026-01-01 10:00:02,500 INFO rmexplain.score.hf: t: m on cpu (torch.float32), max_length 2048\n"
        f"2026-01-01 10:00:04,000 INFO rmexplain.score.hf: {line}\n"
    )
    parsed = bench_rule.read_log(log)
    assert parsed["distinct_inputs"] == 2 and parsed["load_seconds"] == 2.5
    assert parsed["job_log_seconds"] == 4.0 and parsed["peak_gpu_memory_gib"] is None
    assert parsed["model_seconds"] >= 0 and parsed["tokens"] > 0


@pytest.mark.parametrize(
    ("arch", "billions"),
    [("llama3-8b", 7.50), ("deberta-v3-large", 0.435), ("pythia-1.4b", 1.31), ("gemma2-27b", 27.2)],
)
def test_gpu_shapes_have_the_real_parameter_counts(arch, billions):
    """Built on the meta device (no memory): the sequence-classification models of the real checkpoints."""
    spec = benchlib.ARCHS[arch]
    model = benchlib.build_model(spec, benchlib.build_tokenizer(spec), "meta", "bfloat16")
    assert sum(p.numel() for p in model.parameters()) / 1e9 == pytest.approx(billions, rel=0.01)
    presets = [p for p in bench_scoring.PRESETS.values() if p["arch"] == arch and p["device"] == "cuda"]
    assert presets and all(not p["tiny"] for p in presets)


def test_the_pages_gpu_commands_name_existing_presets_and_options():
    import re

    modules = {
        "bench_scoring.py": bench_scoring,
        "bench_token_scan.py": bench_token_scan,
        "bench_rule.py": bench_rule,
    }
    commands = [line for line in performance_page.GPU_COMMANDS.splitlines() if line.startswith("python")]
    assert len(commands) >= 10
    for line in commands:
        script = line.split()[1].split("/")[-1]
        if script in modules and "--preset" in line:
            (preset,) = re.findall(r"--preset (\S+)", line)
            assert preset in modules[script].PRESETS and preset.startswith("gpu-"), line


def test_the_committed_page_is_generated_from_the_committed_results(tmp_path):
    page = performance_page.build_page(performance_page.RESULTS, tmp_path / "fig.png")
    assert page == performance_page.PAGE.read_text(), (
        "docs/performance.md is stale: run `python benchmarks/performance_page.py`"
    )


def _metadata(run: Path, jobs: list[tuple[str, str, float, float]]) -> Path:
    """A run directory whose .snakemake/metadata records ``(rule, job hash, start, end)`` per output."""
    folder = run / ".snakemake" / "metadata"
    folder.mkdir(parents=True)
    for i, (rule, job, start, end) in enumerate(jobs):
        record = {"rule": rule, "job_hash": job, "starttime": start, "endtime": end}
        (folder / f"output{i}").write_text(json.dumps(record))
    return run


def test_demo_profile_sums_jobs_per_rule_and_reads_an_earlier_run_from_its_json(tmp_path, capsys):
    """A job with two outputs counts once (its earliest start to its latest end); ``--before`` takes a run
    directory or the JSON an earlier call wrote (its ``after`` run)."""
    before = _metadata(tmp_path / "before", [("embed", "a", 0.0, 10.0), ("score", "b", 10.0, 14.0)])
    two_outputs = [("score", "b", 4.0, 6.0), ("score", "b", 4.0, 6.5)]
    after = _metadata(tmp_path / "after", [("embed", "a", 0.0, 4.0), *two_outputs, ("score", "c", 5.0, 8.0)])
    profile = demo_profile.profile(after)
    assert profile["rules"] == {
        "score": {"jobs": 2, "seconds": 5.5, "longest": 3.0},
        "embed": {"jobs": 1, "seconds": 4.0, "longest": 4.0},
    }
    assert (profile["jobs"], profile["job_seconds"], profile["span"]) == (3, 9.5, 8.0)
    saved = tmp_path / "before.json"
    sys.argv = ["demo_profile.py", str(before), "--json", str(saved)]
    demo_profile.main()
    assert demo_profile.earlier(saved) == demo_profile.profile(before) == demo_profile.earlier(before)
    capsys.readouterr()
    sys.argv = ["demo_profile.py", str(after), "--before", str(saved)]
    demo_profile.main()
    lines = capsys.readouterr().out.splitlines()
    assert "| embed | 1 | 10.0 | 1 | 4.0 | 0.40 |" in lines
    assert "| **all** | 2 | 14.0 | 3 | 9.5 | 0.68 |" in lines
