"""Shared runs under pytest-xdist: a pytest plugin, loaded by tests/conftest.py.

A fixture decorated ``@shared_run`` is session-scoped: the expensive thing it makes (a Snakemake run, a
trained head) is made once per session and read by every test that requests it. Under pytest-xdist
(``-n 2 --dist loadgroup``) every test requesting one shared run joins the same ``xdist_group``, so the run is
made on one worker only. The group is added before any other plugin's collection hook (pytest-xdist's worker
reads it there) and checked after them all: a worker whose tests of a group went ungrouped fails, since each
worker would make every shared run again. pytest 9.2 with pytest-xdist 3.8 cannot group
(pytest-dev/pytest-xdist#1386) and is refused at the start.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from importlib import metadata
from typing import Any, TypeVar

import pytest
from packaging.version import Version

SHARED_RUNS: set[str] = set()
Fixture = TypeVar("Fixture", bound=Callable)


def shared_run(function: Fixture) -> Fixture:
    """A session fixture made once and read by every test that requests it; its tests share an xdist
    group (see the module docstring)."""
    SHARED_RUNS.add(function.__name__)
    return pytest.fixture(scope="session")(function)


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> Generator[None, Any]:
    """Each test requesting a shared run joins the run's xdist group before any plugin's hook runs (so
    before pytest-xdist's worker plugin reads the groups); after them all, ``check_grouped``."""
    for item in items:
        shared = sorted(SHARED_RUNS.intersection(getattr(item, "fixturenames", ())))
        if shared:
            item.add_marker(pytest.mark.xdist_group("+".join(shared)))
    result = yield
    check_grouped(config, items)
    return result


def check_grouped(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a pytest-xdist worker under ``--dist loadgroup``, fail unless every test of a group carries it in
    its id (``…@group``: what the scheduler reads); otherwise each worker would make the shared runs again."""
    if not hasattr(config, "workerinput") or not config.getoption("loadgroup", False):
        return
    grouped = [item.nodeid for item in items if item.get_closest_marker("xdist_group")]
    ungrouped = [nodeid for nodeid in grouped if "@" not in nodeid]
    if ungrouped:
        raise pytest.UsageError(f"pytest-xdist left {len(ungrouped)} grouped tests ungrouped: {ungrouped[0]}")


def pytest_configure(config: pytest.Config) -> None:
    """Refuse ``--dist loadgroup`` where pytest-xdist cannot group: with pytest 9.2 and pytest-xdist 3.8 it
    silently leaves every test ungrouped (pytest-dev/pytest-xdist#1386), and every shared run would be made
    once per worker."""
    if config.getoption("dist", None) != "loadgroup":
        return
    installed = {name: Version(metadata.version(name)) for name in ("pytest", "pytest-xdist")}
    if installed["pytest"] >= Version("9.2") and installed["pytest-xdist"] <= Version("3.8.0"):
        raise pytest.UsageError(
            f"pytest {installed['pytest']} with pytest-xdist {installed['pytest-xdist']} does not group "
            "tests (pytest-dev/pytest-xdist#1386): install the test extra's pytest<9.2"
        )
