"""The conda environments of the rules, built the way Snakemake builds them.

Snakemake (``deployment/conda.py``) copies an env file to ``.snakemake/conda/<hash>.yaml`` and runs
``conda env create --file`` on the copy; conda writes the pip section to a requirements file beside the copy
and runs pip from that directory. So a relative path in an env file resolves against ``.snakemake/conda/``,
not against the workflow. No conda channel is reachable here: pip is the part that breaks, and these tests
run it exactly as conda would.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
import yaml
from conftest import REPO
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version
from xdist_groups import shared_run

ENV_FILES = sorted((REPO / "envs").glob("*.yaml"))
# pyproject.toml's [project] dependencies (tomllib is Python 3.11+; the project supports 3.10).
DEPENDENCIES = re.findall(
    r'^\s+"([^"]+)",',
    re.search(r"^dependencies = \[(.*?)^\]", (REPO / "pyproject.toml").read_text(), re.M | re.S)[1],
    re.M,
)
RUNTIME = [d for d in DEPENDENCIES if not d.startswith(("snakemake", "torch"))]


def pip_section(env_file: Path) -> list[str]:
    """The pip requirements of a conda env file."""
    for entry in yaml.safe_load(env_file.read_text())["dependencies"]:
        if isinstance(entry, dict) and "pip" in entry:
            return [str(r) for r in entry["pip"]]
    return []


def snakemake_copy(env_file: Path, workdir: Path) -> Path:
    """Copy the env file as Snakemake does and write conda's pip requirements file beside the copy."""
    content = env_file.read_bytes()
    target = workdir / ".snakemake" / "conda" / f"{hashlib.sha256(content).hexdigest()}.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content)
    requirements = target.parent / "condaenv.requirements.txt"
    requirements.write_text("\n".join(pip_section(env_file)) + "\n")
    return requirements


def test_env_files_name_third_party_packages_only():
    assert [f.stem for f in ENV_FILES] == ["core", "scoring", "vllm"]
    for env_file in ENV_FILES:
        for requirement in pip_section(env_file):
            assert not requirement.startswith(("-", ".", "/", "file:", "git+")), (env_file.name, requirement)
            assert "../" not in requirement and "rmexplain" not in requirement, (env_file.name, requirement)


def test_env_files_carry_the_declared_dependencies():
    for env_file in ENV_FILES:
        missing = [d for d in RUNTIME if d not in pip_section(env_file)]
        assert not missing, f"{env_file.name} lacks {missing} (pyproject.toml's dependencies)"


CORE_ENV = "core-env"  # pip_runs' key of the core env's install into a fresh venv


@shared_run
def pip_runs(tmp_path_factory) -> dict[str, tuple[subprocess.Popen, Path]]:
    """This module's pip runs, all started at once (each mostly waits on the index or unpacks wheels, and
    the suite's one process leaves a core idle), each test waiting for its own: by env name, the resolution
    of the env file's pip section from Snakemake's copy (and the copy's folder); ``CORE_ENV``, the core env's
    packages (and snakemake, for the main process) installed into a fresh venv (and the venv)."""
    runs = {}
    for env_file in ENV_FILES:
        requirements = snakemake_copy(env_file, tmp_path_factory.mktemp(env_file.stem))
        runs[env_file.stem] = (
            subprocess.Popen(
                [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                 "-r", requirements.name],
                cwd=requirements.parent, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            ),
            requirements.parent,
        )  # fmt: skip
    env_dir = tmp_path_factory.mktemp("core-venv") / "env"
    venv.create(env_dir, with_pip=True)
    requirements = snakemake_copy(REPO / "envs" / "core.yaml", tmp_path_factory.mktemp("core-build"))
    snakemake = next(d for d in DEPENDENCIES if d.startswith("snakemake"))
    # --no-compile: byte-compiling every installed module (torch's thousands) takes longer than the install;
    # Python compiles what the run imports, when it imports it.
    runs[CORE_ENV] = (
        subprocess.Popen(
            [env_dir / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-compile", "-r",
             requirements.name, snakemake],
            cwd=requirements.parent, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        ),
        env_dir,
    )  # fmt: skip
    yield runs
    for run, _ in runs.values():
        run.kill()
        run.wait()
    shutil.rmtree(env_dir)


def finished(run: subprocess.Popen, timeout: int) -> None:
    """Wait for ``run``; fail with its stderr's last 3,000 characters unless it succeeded."""
    _, errors = run.communicate(timeout=timeout)
    assert run.returncode == 0, errors[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("env_file", ENV_FILES, ids=lambda f: f.stem)
def test_pip_section_resolves_from_snakemakes_copy(env_file, pip_runs):
    finished(pip_runs[env_file.stem][0], timeout=900)


@pytest.mark.slow
def test_a_rule_runs_in_the_core_env_without_rmexplain_installed(tmp_path, workflow_copy, pip_runs):
    """The core env's packages (and snakemake, for the main process) in a fresh venv, rmexplain not
    installed: the main process and the rule's script import the library from the workflow's source."""
    install, env_dir = pip_runs[CORE_ENV]
    finished(install, timeout=1500)
    python = env_dir / "bin" / "python"
    probe = subprocess.run([python, "-c", "import rmexplain"], cwd=tmp_path, capture_output=True, text=True)
    assert probe.returncode != 0, "rmexplain must not be installed in this environment"
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    environment["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{environment['PATH']}"
    target = "results/data/helpful/comparisons.parquet"
    run = subprocess.run(
        [python, "-m", "snakemake", "--cores", "1", target],
        cwd=workflow_copy.root, capture_output=True, text=True, env=environment, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert (workflow_copy.root / target).stat().st_size > 0


CONDA_STANDIN = """#!/usr/bin/env bash
# A stand-in for the conda binary (no conda channel is reachable here): it answers only the queries Snakemake
# makes before a dry run, so `--sdm conda -n` resolves every job's environment without creating any.
case "$*" in
  "--version") echo "conda 24.11.3" ;;
  "info --json") printf '{"conda_prefix": "%s", "platform": "linux-64", "envs_dirs": []}\\n' "$HOME/conda" ;;
  "config --get channel_priority --json") echo '{"get": {"channel_priority": "strict"}}' ;;
  *) echo "stand-in conda: '$*' is not supported" >&2; exit 2 ;;
esac
"""


@pytest.mark.parametrize(
    ("config", "envs"),
    [
        ("config/config.yaml", {"core", "scoring"}),
        ("config/paper.yaml", {"core", "scoring", "vllm"}),  # App. G: OffsetBias on vLLM
        ("config/tokens_paper.yaml", {"core", "scoring"}),
    ],
)
def test_sdm_conda_dry_run_resolves_every_rules_env(workflow_copy, tmp_path, config, envs):
    run = sdm_conda_dry_run(workflow_copy.root, tmp_path, "--configfile", config)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert envs_to_create(run.stdout + run.stderr) == envs


def sdm_conda_dry_run(root: Path, scratch: Path, *args: str) -> subprocess.CompletedProcess:
    """``snakemake --sdm conda -n ARGS`` in ``root``, with the stand-in conda first on the PATH."""
    bin_dir = scratch / "standin-bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "conda").write_text(CONDA_STANDIN)
    (bin_dir / "conda").chmod(0o755)
    environment = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "OPENAI_API_KEY": "x"}
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--sdm", "conda", "-n", *args],
        cwd=root, capture_output=True, text=True, env=environment, timeout=600,
    )  # fmt: skip


def envs_to_create(output: str) -> set[str]:
    """The env files a ``--sdm conda`` dry run says it will create."""
    return set(re.findall(r"Conda environment envs/(\w+)\.yaml will be created", output))


def test_env_files_are_valid_conda_env_files():
    """Each env file is valid YAML with ``channels``, a sane ``python=3.x`` pin, ``pip`` and a pip section.

    No conda solver runs here: this checks the file's shape, not that conda-forge can build the env."""
    supported = range(10, 15)  # requires-python >= 3.10; 3.14 is the newest CPython with wheels for the deps
    for env_file in ENV_FILES:
        env = yaml.safe_load(env_file.read_text())  # invalid YAML raises here
        assert isinstance(env, dict), env_file.name
        channels = env.get("channels")
        assert isinstance(channels, list) and channels, f"{env_file.name}: no channels"
        assert all(isinstance(c, str) and c for c in channels), env_file.name
        dependencies = env.get("dependencies")
        assert isinstance(dependencies, list), f"{env_file.name}: dependencies is not a list"
        pythons = [d for d in dependencies if isinstance(d, str) and re.match(r"python\b", d)]
        assert len(pythons) == 1, f"{env_file.name}: one python pin expected, got {pythons}"
        pin = re.fullmatch(r"python=3\.(\d+)", pythons[0])
        assert pin and int(pin[1]) in supported, f"{env_file.name}: bogus python pin {pythons[0]!r}"
        assert "pip" in dependencies, f"{env_file.name}: conda's pip is not in dependencies"
        assert pip_section(env_file), f"{env_file.name}: empty pip section"
        extra = [d for d in dependencies if not isinstance(d, str | dict)]
        assert not extra, (env_file.name, extra)


def test_ci_floors_pin_pyprojects_declared_floors():
    """``.ci/floors.txt`` pins exactly pyproject.toml's floors (torch excepted: the floors job installs its
    own CPU build)."""
    floors = {}
    for line in (REPO / ".ci" / "floors.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            requirement = Requirement(line)
            (pin,) = requirement.specifier
            assert pin.operator == "==", line
            floors[canonicalize_name(requirement.name)] = Version(pin.version)
    declared = {}
    for dependency in DEPENDENCIES:
        requirement = Requirement(dependency)
        lower = [s.version for s in requirement.specifier if s.operator == ">="]
        assert len(lower) == 1, f"pyproject.toml: {dependency!r} has no single >= floor"
        declared[canonicalize_name(requirement.name)] = Version(lower[0])
    del declared["torch"]
    assert floors == declared
