"""One GPU on a workstation: the default workflow profile declares it, so GPU jobs never run side by side."""

from __future__ import annotations

import re

import yaml
from conftest import REPO, WorkflowCopy, tiny_demo_config

from rmexplain.score.tiny import build_llama_rm

PROFILE = "workflow/profiles/default"
RMS = ("a", "b")  # two scoring jobs that could run side by side


def test_the_default_profile_declares_one_gpu_and_the_docs_use_it():
    profile = yaml.safe_load((REPO / PROFILE / "config.yaml").read_text())
    assert profile["resources"]["gpu"] == 1
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    for page in pages:
        for command in re.findall(
            r"snakemake [^`\n]*--configfile config/paper\.yaml[^`\n]*", page.read_text()
        ):
            if (
                " -n" in command
                or "--conda-create-envs-only" in command
                or ("--report" in command and "--cores" not in command)
            ):
                continue  # dry runs, env creation and report-only commands start no jobs
            assert "--workflow-profile" in command, f"{page.name}: {command}"


def _gpu_job_order(output: str) -> list[tuple[str, str]]:
    """("start" | "end", jobid) of the score_originals jobs, in the order Snakemake's log prints them."""
    events = []
    starts = re.finditer(r"^(?:local)?rule (\w+):\n(?:    .*\n)*?    jobid: (\d+)", output, re.M)
    gpu_jobs = {jobid for rule, jobid in (m.groups() for m in starts) if rule == "score_originals"}
    pattern = r"^(?:(?:local)?rule (\w+):\n(?:    .*\n)*?    jobid: (\d+)|Finished jobid: (\d+))"
    for match in re.finditer(pattern, output, re.M):
        if match[2] in gpu_jobs:
            events.append(("start", match[2]))
        elif match[3] in gpu_jobs:
            events.append(("end", match[3]))
    return events


def _most_at_once(events: list[tuple[str, str]]) -> int:
    running, most = 0, 0
    for kind, _ in events:
        running += 1 if kind == "start" else -1
        most = max(most, running)
    return most


def _run(workflow_copy: WorkflowCopy, *args: str) -> list[tuple[str, str]]:
    targets = [f"results/scores/harmless/originals/{rm}.parquet" for rm in RMS]
    result = workflow_copy.snakemake(
        *targets,
        "--cores",
        "3",
        "--configfile",
        "config/test.yaml",
        *args,
        "--set-threads",
        "score_originals=1",
    )  # targets first: --resources and --set-threads take every word after them
    events = _gpu_job_order(result.stdout + result.stderr)
    assert len(events) == 2 * len(RMS), result.stderr[-3000:]
    return events


def test_gpu_jobs_never_overlap_under_the_default_profile(workflow_copy, tmp_path):
    config = tiny_demo_config()
    config["sample"] = {"n_per_seed": 2, "seeds": [0]}
    model = str(build_llama_rm(tmp_path / "rm"))
    spec = {"backend": "transformers", "model": model, "device": "cpu", "dtype": "float32", "num_gpus": 1}
    config["reward_models"] = {rm: dict(spec) for rm in RMS}
    workflow_copy.write_config(config)
    # the control: with 2 GPUs declared, the two scoring jobs (gpu=1 each) do run side by side
    assert _most_at_once(_run(workflow_copy, "--resources", "gpu=2")) > 1
    for path in (workflow_copy.root / "results" / "scores").rglob("*.parquet"):
        path.unlink()
    events = _run(workflow_copy, "--workflow-profile", PROFILE)
    assert _most_at_once(events) == 1, events
