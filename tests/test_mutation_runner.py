"""The mutation-testing runner (tests/mutation/run.py): its modules and test files exist, and the staging
folder holds what mutmut and the tests read. mutmut itself is not run here (minutes per module)."""

from __future__ import annotations

import importlib.util
import re

from conftest import REPO

spec = importlib.util.spec_from_file_location("mutation_run", REPO / "tests" / "mutation" / "run.py")
run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run)


def test_every_module_and_its_test_files_exist_and_its_run_is_in_the_table():
    page = (REPO / "docs" / "testing.md").read_text(encoding="utf-8")
    table = page.split("**Surviving mutants per module.**")[1]
    for module, tests in run.MODULES.items():
        assert f"\n| `{module}` |" in table, f"docs/testing.md's mutation table has no row of {module}"
        assert (REPO / "workflow" / "rmexplain" / module).is_file(), module
        assert tests and all((REPO / test).is_file() for test in tests), module


def test_the_staging_folder_puts_the_package_at_the_top(tmp_path):
    folder = run.stage("score/lengths.py", ("tests/test_score_lengths.py",), tmp_path)
    assert folder == tmp_path / "score.lengths"
    for path in (
        "rmexplain/score/lengths.py",
        "tests/conftest.py",
        "config/config.yaml",
        "workflow/rules/common.smk",
        "envs/core.yaml",  # a copied workflow's Snakemake records its rules' conda files
        "docs/extending.md",  # read by tests/test_extending.py
    ):
        assert (folder / path).is_file(), path
    assert not list(folder.rglob("__pycache__"))
    settings = (folder / "pyproject.toml").read_text().split("[tool.mutmut]\n", 1)[1]
    assert 'only_mutate = ["rmexplain/score/lengths.py"]' in settings.splitlines()
    assert 'pytest_add_cli_args_test_selection = ["tests/test_score_lengths.py"]' in settings.splitlines()
    assert re.search(r'^process_isolation = "forkserver"$', settings, re.M)
    assert "timeout_constant = 30\ntimeout_multiplier = 4\n" in settings
    lower = run.stage("provenance.py", ("tests/test_provenance.py",), tmp_path, "not slow", (10.0, 2.0))
    settings = (lower / "pyproject.toml").read_text().split("[tool.mutmut]\n", 1)[1]
    assert "timeout_constant = 10\ntimeout_multiplier = 2\n" in settings
    assert 'pytest_add_cli_args = ["-p", "no:cacheprovider", "-m", "not slow"]' in settings.splitlines()
