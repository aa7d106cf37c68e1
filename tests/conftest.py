"""Shared fixtures (a throwaway copy of the workflow to run Snakemake in, and Snakemake runs made once per
session and read by several tests) and the test tiers (tests/tiers.py): every test is marked ``unit`` or
``workflow``/``slow`` at collection, and guarded while it runs.

**Shared runs.** A fixture decorated ``@shared_run`` is session-scoped: the expensive thing it makes (a
Snakemake run, a server, a trained head) is made once per session and every test that requests it reads the
same result. Such a test must not change what it reads; one that needs to change it copies it first
(``FinishedRun.copy``). Under pytest-xdist (``-n 2 --dist loadgroup``) every test requesting one shared run
gets the same ``xdist_group``, so the run is made on one worker only (tests/xdist_groups.py). tests/tiers.py
orders the workflow
tier first: the long tests start first, and the short unit tests fill both workers' last minutes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

pytest.register_assert_rewrite("tiers", "xdist_groups")
# tiers: the markers and guards; timings: --timings FILE; xdist_groups: @shared_run; bytecode_cache: one
# cache of compiled modules for the suite's processes; pytester: for test_tiers
pytest_plugins = ["tiers", "timings", "xdist_groups", "bytecode_cache", "pytester"]

import tiers  # noqa: E402
import yaml  # noqa: E402
from xdist_groups import shared_run  # noqa: E402

from rmexplain import paths  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


class WorkflowCopy:
    """A working directory holding the Snakefile, links to workflow/ and benchmarks/data/ (the bundled real
    data a config may read) and a copy of config/."""

    def __init__(self, root: Path) -> None:
        self.root = root
        shutil.copy(REPO / "Snakefile", root / "Snakefile")
        (root / "workflow").symlink_to(REPO / "workflow")
        (root / "benchmarks").mkdir()
        (root / "benchmarks" / "data").symlink_to(REPO / "benchmarks" / "data")
        shutil.copytree(REPO / "config", root / "config")

    @classmethod
    def existing(cls, root: Path) -> WorkflowCopy:
        """A workflow copy already on disk (a finished run's tree copied elsewhere)."""
        copy = cls.__new__(cls)
        copy.root = root
        return copy

    def write_config(self, config: dict, name: str = "config/test.yaml") -> Path:
        path = self.root / name
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    def snakemake(self, *args: str, check: bool = True, timeout: int = 900) -> subprocess.CompletedProcess:
        tiers.require_workflow("calls WorkflowCopy.snakemake")
        env = {**os.environ, "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1"}
        result = subprocess.run(
            [*SNAKEMAKE, *args], cwd=self.root, capture_output=True, text=True, timeout=timeout, env=env
        )
        if check and result.returncode != 0:
            raise AssertionError(f"snakemake {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return result


@pytest.fixture
def workflow_copy(tmp_path: Path) -> WorkflowCopy:
    return WorkflowCopy(tmp_path)


class FinishedRun(NamedTuple):
    """A Snakemake run a shared fixture made once: its workflow copy, its config and its console output."""

    workflow: WorkflowCopy
    config: dict
    config_file: Path
    output: str

    @property
    def root(self) -> Path:
        return self.workflow.root

    def copy(self, destination: Path) -> WorkflowCopy:
        """The finished tree copied to ``destination`` (a new folder), files' times kept, so that Snakemake
        sees it as finished: for a test that runs Snakemake again in it or changes its files. Snakemake's
        records name some inputs by absolute path (the bundled data under the tree's own ``workflow/``
        link): the copy's records name the copy's root, as if the run had been made there."""
        shutil.copytree(self.root, destination, symlinks=True)
        records = destination / ".snakemake" / "metadata"
        for record in records.iterdir() if records.is_dir() else ():
            record.write_text(record.read_text().replace(str(self.root), str(destination)))
        return WorkflowCopy.existing(destination)


def tiny_demo_config() -> dict:
    """The demo, shrunk: one dataset, one RM, three attributes, four comparisons."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["datasets"] = {"harmless": {"source": "embedded", "part": "harmless"}}
    config["sample"] = {"n_per_seed": 4, "seeds": [0, 1]}
    config["reward_models"] = {"demo-harmless": {"backend": "demo", "train_part": "harmless"}}
    config["perturb"]["methods"] = ["rules"]
    config["demo_rm"]["epochs"] = 60
    config["tokens"]["enabled"] = False  # the token part has its own workflow test
    config["attributes"] = {
        "harmlessness": "whether the response is relevant to unsafe, immoral or illegal behaviours",
        "clarity": "whether or not the response is clear and easy to read",
        "verbosity": "how many relevant details are included, and whether the response is too long",
    }
    return config


def tiny_demo_with_tokens_config() -> dict:
    """The tiny demo with a small token part (one prompt, 60 tokens) and the example human ranking."""
    config = tiny_demo_config()
    tokens = config["tokens"]
    tokens["enabled"] = True
    tokens["prompts"] = {"best": tokens["prompts"]["best"]}
    tokens["vocabulary"]["max_tokens"] = 60
    tokens["analysis"]["framing_pairs"] = []
    tokens["elo"]["enabled"] = False
    tokens["paper_analysis"] = {"enabled": False}
    return config


@shared_run
def tiny_demo_run(tmp_path_factory: pytest.TempPathFactory) -> FinishedRun:
    """``snakemake`` (every target of ``rule all``, the explorer's included) once on the tiny demo with its
    small token part: the end-to-end and explorer tests read it."""
    workflow = WorkflowCopy(tmp_path_factory.mktemp("tiny-demo"))
    config = tiny_demo_with_tokens_config()
    path = workflow.write_config(config)
    run = workflow.snakemake("--cores", "2", "--configfile", str(path))
    return FinishedRun(workflow, config, path, run.stdout + run.stderr)


@shared_run
def planted_base(tmp_path_factory: pytest.TempPathFactory) -> FinishedRun:
    """The planted suites' base RM (config/planted.yaml's ``base``: the demo's encoder with a head trained on
    the bundled helpful pairs) trained once, with its reward scale: the planted, discovery and rounds suites
    start from copies of this tree, and Snakemake finds the base done (config/discovery.yaml's base and
    ``demo_rm`` settings are the same; a test whose differ retrains it)."""
    workflow = WorkflowCopy(tmp_path_factory.mktemp("planted-base"))
    path = workflow.root / "config" / "planted.yaml"
    outputs = [paths.fmt(paths.DEMO_HEAD, rm="base"), paths.fmt(paths.REWARD_SCALE, rm="base")]
    run = workflow.snakemake("--cores", "2", *outputs, "--configfile", str(path))
    return FinishedRun(workflow, yaml.safe_load(path.read_text()), path, run.stdout + run.stderr)


def load_tiny_rm(path: Path, name: str = "tiny", **spec_keys: object) -> tuple:
    """(model, tokenizer, spec) of a tiny transformers RM saved by a test, on CPU in float32."""
    from rmexplain.score.hf import load_model_and_tokenizer
    from rmexplain.score.specs import parse_spec

    spec = parse_spec(
        name,
        {"backend": "transformers", "model": str(path), "device": "cpu", "dtype": "float32", **spec_keys},
    )
    model, tokenizer = load_model_and_tokenizer(spec)
    return model, tokenizer, spec


@pytest.fixture(scope="module")
def one_thread():
    """torch on one thread for a module's tests (its scores are then reproducible), restored after."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory) -> str:
    """A tiny random Llama RM saved with ``save_pretrained`` (seed 1)."""
    from rmexplain.score.tiny import build_llama_rm

    return str(build_llama_rm(tmp_path_factory.mktemp("llama"), seed=1))


@pytest.fixture(scope="module")
def deberta_dir(tmp_path_factory) -> str:
    """A tiny random DeBERTa-v2 RM saved with ``save_pretrained`` (seed 2)."""
    from rmexplain.score.tiny import build_deberta_rm

    return str(build_deberta_rm(tmp_path_factory.mktemp("deberta"), seed=2))
