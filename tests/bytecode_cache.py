"""One bytecode cache for every Python process the suite starts (a plugin that tests/conftest.py loads).

Each Snakemake run, each of its jobs and each server is a new Python process that imports Snakemake, polars,
torch, transformers or sentence-transformers. Where ``PYTHONDONTWRITEBYTECODE`` is set (container images
often set it) and the packages were installed without byte-compiling (``pip --no-compile``, as ``.ci/run``
does), every one of those processes compiles every module it imports from source again: importing
sentence-transformers took 1.6–2.5 times as long as from a cache. The suite's subprocesses therefore write and
read compiled modules under pytest's cache directory (``.pytest_cache/d/bytecode``; ``--cache-clear`` empties
it), never in the installed packages; a cache the user named in ``PYTHONPYCACHEPREFIX`` is kept. Python
checks each cached module against its source's modification time and size, so an edited module is compiled
again.
"""

from __future__ import annotations

import os
import tempfile

import pytest

PREFIX = "PYTHONPYCACHEPREFIX"


def bytecode_directory(config: pytest.Config) -> str:
    """Where the suite's processes cache compiled modules: the user's prefix, else pytest's cache."""
    if os.environ.get(PREFIX):
        return os.environ[PREFIX]
    cache = getattr(config, "cache", None)  # None under -p no:cacheprovider
    if cache is None:
        return tempfile.mkdtemp(prefix="rmexplain-bytecode-")
    return str(cache.mkdir("bytecode"))


def pytest_configure(config: pytest.Config) -> None:
    """Let every process the suite starts (pytest-xdist's workers too) share one bytecode cache."""
    os.environ[PREFIX] = bytecode_directory(config)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
