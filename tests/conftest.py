"""Shared fixtures (a throwaway copy of the workflow to run Snakemake in) and the test tiers (tests/tiers.py):
every test is marked ``unit`` or ``workflow``/``slow`` at collection, and guarded while it runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.register_assert_rewrite("tiers")
pytest_plugins = ["tiers", "pytester"]  # the tiers' markers and guards; pytester for test_tiers

import tiers  # noqa: E402
import yaml  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


class WorkflowCopy:
    """A working directory holding the Snakefile, a link to workflow/ and a copy of config/."""

    def __init__(self, root: Path) -> None:
        self.root = root
        shutil.copy(REPO / "Snakefile", root / "Snakefile")
        (root / "workflow").symlink_to(REPO / "workflow")
        shutil.copytree(REPO / "config", root / "config")

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
