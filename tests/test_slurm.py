"""The workflow on a real one-node SLURM cluster (munged, slurmctld, slurmd on 127.0.0.1), through
``workflow/profiles/slurm`` and Snakemake's SLURM executor plugin, against a local run of the same config.

Needs root (it installs Debian's slurm-wlm and munge when missing and writes /etc/slurm); skipped otherwise.
tests/slurm/start_cluster.sh and stop_cluster.sh do the cluster bring-up and tear-down.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
import yaml
from polars.testing import assert_frame_equal

REPO = Path(__file__).resolve().parents[1]
SLURM_SCRIPTS = REPO / "tests" / "slurm"
# The categorised explanations of both methods and the truncation table: every stage up to the paper's CF/SF
# categories (sampling as a localrule, scoring on the gpu partition, perturbing, categorising and a CSV table
# on the cpu one) and no further, so the cluster run is a few waves of jobs.
METHODS = ("rules", "rules_random")
TARGETS = [
    *(f"results/explanations/helpful/{method}/wordy.parquet" for method in METHODS),
    "results/tables/truncation.csv",
]
LOCAL_RULES = {"sample_comparisons"}  # hub downloads: they run where Snakemake runs (the login node)
GPU_RULES = {"score_originals": 1, "score_perturbations": 2}  # GPUs the test profile gives them
RUN_TIMEOUT_S = 600
# Black-box RMs (backend: python) keep the test's jobs light: no demo-RM training, no encoder in scoring.
TEST_RMS = """def wordy(prompts, responses):
    return [len(set(r.lower().split())) + 0.01 * len(r) for r in responses]


def broken(prompts, responses):
    raise RuntimeError("broken RM on purpose: the SLURM test expects this line in the failure report")
"""

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


def tiny_config() -> dict:
    """The demo shrunk to one dataset (its evaluation stage), one seed of three comparisons, two attributes
    and a python RM."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    # evaluation only: no attribute effects or bias discovery, whose edits' scoring jobs would chain two more
    # waves of cluster jobs behind the perturbations' (the truncation table counts every scored stage)
    config["datasets"] = {"helpful": {"source": "embedded", "part": "helpful", "stages": ["evaluation"]}}
    config["sample"].update(n_per_seed=3, seeds=[0])
    config["reward_models"] = {"wordy": {"backend": "python", "callable": "test_rms.py:wordy"}}
    config["perturb"]["methods"] = list(METHODS)
    config["attributes"] = {
        "clarity": "whether or not the response is clear and easy to read",
        "verbosity": "how many relevant details are included in the response, and whether it is too long",
    }
    if "tokens" in config:
        config["tokens"]["enabled"] = False
    return config


def make_workdir(root: Path, config: dict) -> Path:
    """A working directory: the workflow, and ``config`` as config/config.yaml (--configfile would merge)."""
    root.mkdir()
    shutil.copy(REPO / "Snakefile", root / "Snakefile")
    for name in ("workflow", "envs"):
        (root / name).symlink_to(REPO / name)
    shutil.copytree(REPO / "config", root / "config")  # files other config keys point to
    (root / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (root / "test_rms.py").write_text(TEST_RMS)
    return root


def write_test_profile(root: Path) -> Path:
    """workflow/profiles/slurm plus what only this test needs: fast first poll, partition choice, GPU jobs."""
    profile = yaml.safe_load((REPO / "workflow/profiles/slurm/config.yaml").read_text())
    profile["slurm-init-seconds-before-status-checks"] = 1
    profile["slurm-partition-config"] = str(REPO / "workflow/profiles/slurm/partitions.yaml")
    profile["slurm-keep-successful-logs"] = True
    # The python RM needs no GPU; ask for some anyway, to exercise --gpus=N and the gpu partition.
    for rule, gpus in GPU_RULES.items():
        profile["set-resources"][rule]["gpu"] = gpus
    path = root / "test-profile" / "config.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(profile, sort_keys=False))
    return path.parent


def snakemake(*runs: tuple[Path, list[str]]) -> list[tuple[int, str]]:
    """Run Snakemake with each (working directory, arguments) at the same time; exit codes and console
    outputs. `timeout -k` because a hung Snakemake may ignore SIGTERM."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SRUN_"))}
    env.update(PYTHONHASHSEED="0", OMP_NUM_THREADS="1")
    started = []
    for root, args in runs:
        command = ["timeout", "-k", "10", str(RUN_TIMEOUT_S), sys.executable, "-m", "snakemake", *args]
        out = root / f"snakemake-{len(list(root.glob('snakemake-*.out')))}.out"
        with open(out, "w") as console:  # a file, not a pipe: two runs' output cannot block each other
            started.append(
                (subprocess.Popen(command, cwd=root, stdout=console, stderr=subprocess.STDOUT), out)
            )
    results = [(process.wait(), out.read_text()) for process, out in started]
    for code, output in results:
        assert code not in (124, 137), f"snakemake timed out after {RUN_TIMEOUT_S}s:\n{output}"
    return results


def job_stats(output: str) -> Counter:
    """Rule -> job count from the first 'Job stats' table Snakemake prints."""
    match = re.search(r"Job stats:\n(.*?)\ntotal", output, re.S)
    assert match, output
    rows = (line.split() for line in match.group(1).splitlines())
    return Counter({row[0]: int(row[1]) for row in rows if len(row) == 2 and row[1].isdigit()})


def slurm_jobs(run_id: str) -> list[dict[str, str]]:
    """SLURM's record (scontrol, one line per job) of every job of the Snakemake run ``run_id``."""
    out = subprocess.run(["scontrol", "show", "job", "-o"], capture_output=True, text=True, check=True).stdout
    jobs = [dict(re.findall(r"(\w+)=(\S*)", line)) for line in out.splitlines() if line.strip()]
    return [job for job in jobs if job.get("JobName") == run_id]


def run_id(output: str) -> str:
    match = re.search(r"SLURM run ID: (\S+)", output)
    assert match, output
    return match.group(1)


def rule_of(job: dict[str, str]) -> str:
    """The plugin's job comment is rule_<name> or rule_<name>_wildcards_<values>."""
    return job["Comment"].removeprefix("rule_").split("_wildcards_")[0]


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    """Start the one-node cluster; stop its daemons by PID afterwards and check that they are gone."""
    if os.geteuid() != 0:
        pytest.skip("needs root: starts munged/slurmctld/slurmd and writes /etc/slurm/slurm.conf")
    if not (shutil.which("slurmctld") or shutil.which("apt-get")):
        pytest.skip("slurmctld is not installed and there is no apt-get to install slurm-wlm")
    run_dir = tmp_path_factory.mktemp("slurm-run")
    env = {**os.environ, "SLURM_RUN_DIR": str(run_dir)}
    started = subprocess.run([SLURM_SCRIPTS / "start_cluster.sh"], capture_output=True, text=True, env=env)
    if started.returncode in (3, 4):  # cannot install slurm-wlm/munge, or a real cluster's config is there
        pytest.skip(f"no test cluster: {started.stderr.strip().splitlines()[-1]}")
    assert started.returncode == 0, started.stderr
    pids = {p.stem: int(p.read_text()) for p in run_dir.glob("*.pid")}
    assert {"slurmctld", "slurmd"} <= set(pids), pids
    try:
        yield run_dir
    finally:
        subprocess.run([SLURM_SCRIPTS / "stop_cluster.sh"], env=env, check=True)
        alive = [name for name, pid in pids.items() if Path(f"/proc/{pid}").exists()]
        assert not alive, f"daemons still running after stop_cluster.sh: {alive}"


def assert_same_results(local: Path, cluster: Path) -> None:
    """Every Parquet table and CSV table of the local run exists in the cluster run with equal contents."""
    tables = sorted(
        p.relative_to(local) for p in (local / "results").rglob("*") if p.suffix in {".parquet", ".csv"}
    )
    assert any(p.suffix == ".parquet" for p in tables) and any(p.suffix == ".csv" for p in tables), tables
    for rel in tables:
        read = pl.read_parquet if rel.suffix == ".parquet" else pl.read_csv
        assert (cluster / rel).is_file(), f"{rel} missing from the SLURM run"
        assert_frame_equal(read(local / rel), read(cluster / rel), check_exact=False, rel_tol=1e-6)


def test_demo_on_slurm_equals_local_run_and_failures_surface(slurm_cluster, tmp_path):
    config = tiny_config()
    local = make_workdir(tmp_path / "local", config)
    cluster = make_workdir(tmp_path / "cluster", config)
    profile = write_test_profile(cluster)

    # Both runs at once: the SLURM run mostly waits (job start-up, status polls), so this saves minutes.
    (local_code, local_out), (code, out) = snakemake(
        (local, [*TARGETS, "--workflow-profile", "workflow/profiles/default", "--cores", "2"]),
        (cluster, [*TARGETS, "--workflow-profile", str(profile)]),
    )
    assert local_code == 0, local_out
    assert code == 0, out

    # Every job but the localrules ran as a SLURM job of this run, and completed there.
    stats = job_stats(out)
    jobs = slurm_jobs(run_id(out))
    expected = Counter({rule: n for rule, n in stats.items() if rule not in LOCAL_RULES})
    assert Counter(rule_of(job) for job in jobs) == expected, (stats, jobs)
    assert set(stats) >= LOCAL_RULES
    assert all(job["JobState"] == "COMPLETED" and job["ExitCode"] == "0:0" for job in jobs), jobs
    for job in jobs:  # GPU jobs got their GPUs in the gpu partition; CPU jobs neither
        gpus = GPU_RULES.get(rule_of(job), 0)
        assert job["Partition"] == ("gpu" if gpus else "cpu"), job
        assert job.get("TresPerJob", "") == (f"gres:gpu:{gpus}" if gpus else ""), job
        assert (cluster / ".snakemake/slurm_logs" / f"rule_{rule_of(job)}").is_dir(), job
    assert_same_results(local, cluster)

    # A rule that fails on SLURM fails the run, and the console shows the job's log.
    config["reward_models"]["broken"] = {"backend": "python", "callable": "test_rms.py:broken"}
    (cluster / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    [(code, out)] = snakemake(
        (cluster, ["results/scores/helpful/originals/broken.parquet", "--workflow-profile", str(profile)])
    )
    assert code != 0
    assert "broken RM on purpose" in out, out
    [failed] = slurm_jobs(run_id(out))
    assert (rule_of(failed), failed["JobState"]) == ("score_originals", "FAILED"), failed

    # Deployed with --sdm conda (docs/cluster.md): a dry run with this cluster's profile resolves every
    # job's env (the stand-in conda answers Snakemake's version queries; no conda channel is reachable).
    from test_envs import envs_to_create, sdm_conda_dry_run

    dry = sdm_conda_dry_run(cluster, tmp_path, "--forceall", *TARGETS, "--workflow-profile", str(profile))
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    assert envs_to_create(dry.stdout + dry.stderr) == {"core", "scoring"}
