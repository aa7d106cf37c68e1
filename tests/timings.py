"""Where a pytest run spends its time, per test phase and per fixture: a pytest plugin, loaded by
tests/conftest.py, active only with ``--timings FILE``.

    python -m pytest -q --timings timings.json      # then: python benchmarks/suite_times.py timings.json

It writes one JSON file: every test's setup, call and teardown seconds with its file, tier markers and
outcome (the call's), and every fixture's setup seconds with its scope and the test that made it (a session
fixture is made by the first test that requests it, and its time is part of that test's setup). Under
pytest-xdist each worker writes ``FILE`` with its id (``timings.gw0.json``, …) and the time it started and
ended, the controller ``FILE`` itself; ``benchmarks/suite_times.py`` reads them together. Loaded by path, the
plugin times a checkout that does not have it: ``PYTHONPATH=<a folder with this file> python -m pytest -p
timings --timings FILE``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

_tests: dict[str, dict[str, Any]] = {}
_fixtures: list[dict[str, Any]] = []
_started = time.time()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--timings",
        metavar="FILE",
        default=None,
        help="write each test phase's and each fixture's seconds to FILE (JSON; tests/timings.py)",
    )


def _enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("--timings", default=None))


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest) -> Generator:
    started = time.perf_counter()
    try:
        return (yield)
    finally:
        if _enabled(request.config):
            _fixtures.append(
                {
                    "fixture": fixturedef.argname,
                    "scope": fixturedef.scope,
                    "seconds": round(time.perf_counter() - started, 3),
                    "test": request.node.nodeid,
                }
            )


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    entry = _tests.setdefault(report.nodeid, {"file": report.location[0]})
    entry[report.when] = round(report.duration, 3)
    if report.when == "call" or (report.when == "setup" and not report.passed):
        entry["outcome"] = report.outcome


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        marks = sorted({m.name for m in item.iter_markers()} & {"unit", "workflow", "slow", "slurm"})
        _tests.setdefault(item.nodeid, {"file": item.location[0]})["markers"] = marks


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = session.config.getoption("--timings", default=None)
    if not target:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    path = Path(target)
    if worker:
        path = path.with_name(f"{path.stem}.{worker}{path.suffix}")
    ran = {nodeid: entry for nodeid, entry in _tests.items() if "setup" in entry}
    record = {
        "worker": worker,
        "started": _started,
        "ended": time.time(),
        "tests": ran,
        "fixtures": _fixtures,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
