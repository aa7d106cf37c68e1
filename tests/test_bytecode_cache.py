"""The suite's processes share one bytecode cache (tests/bytecode_cache.py), whatever the environment says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import bytecode_cache


def test_a_process_the_suite_starts_compiles_a_module_once_into_the_shared_cache(tmp_path: Path) -> None:
    module = tmp_path / "freshly_written_module.py"
    module.write_text("ANSWER = 42\n")
    code = "import sys, freshly_written_module; print(sys.flags.dont_write_bytecode)"
    command = [sys.executable, "-c", code]
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    flags = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout.strip()
    prefix = Path(os.environ[bytecode_cache.PREFIX])
    cached = list((prefix / tmp_path.relative_to(tmp_path.anchor)).glob("freshly_written_module.*.pyc"))
    assert flags == "0" and "PYTHONDONTWRITEBYTECODE" not in os.environ
    assert len(cached) == 1 and not (tmp_path / "__pycache__").exists()  # never beside the source


def test_the_users_own_prefix_is_kept_and_pytests_cache_is_the_default(monkeypatch, tmp_path: Path) -> None:
    config = SimpleNamespace(cache=SimpleNamespace(mkdir=lambda name: tmp_path / "cache" / name))
    monkeypatch.setenv(bytecode_cache.PREFIX, "/somewhere/of/the/users")
    assert bytecode_cache.bytecode_directory(config) == "/somewhere/of/the/users"
    monkeypatch.delenv(bytecode_cache.PREFIX)
    assert bytecode_cache.bytecode_directory(config) == str(tmp_path / "cache" / "bytecode")
    without_cache = bytecode_cache.bytecode_directory(SimpleNamespace(cache=None))
    assert Path(without_cache).is_dir() and "rmexplain-bytecode-" in without_cache
    os.rmdir(without_cache)
