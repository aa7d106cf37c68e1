"""The test tiers (tests/tiers.py): what the collection-time reader classifies, and the run-time guard that
fails a unit-tier test which runs Snakemake or starts a server anyway."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
import tiers

TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["snakemake", "-n"], True),
        ([sys.executable, "-m", "snakemake", "--cores", "1"], True),
        (["timeout", "-k", "10", "600", "/usr/bin/snakemake"], True),
        ([None, "-m", "snakemake"], True),
        ([sys.executable, "-m", "pip", "install", "snakemake==9.0"], False),
        (["git", "ls-files"], False),
        (["echo", "make it with", "snakemake"], False),
    ],
)
def test_snakemake_command_lines(argv, expected):
    assert tiers.runs_snakemake(argv) is expected


def test_this_suite_is_classified(request):
    """Spot checks on the real suite: Snakemake and server tests in the workflow tier, the rest unit."""
    items = {item.nodeid: item for item in request.session.items}
    marked = {nodeid: {m.name for m in item.iter_markers()} for nodeid, item in items.items()}
    assert "unit" in marked[request.node.nodeid] and "workflow" not in marked[request.node.nodeid]
    for nodeid, markers in marked.items():
        assert ("unit" in markers) != ("slow" in markers), nodeid
        if "workflow" in markers:
            assert "slow" in markers, nodeid


INNER = """
import importlib
import subprocess
import sys

import pytest

COMMAND = "-m snakemake --version"


def run(*argv):
    return subprocess.run([sys.executable, *argv], capture_output=True, check=False)


def test_plain():
    assert 1 + 1 == 2


def test_hidden_snakemake():
    run(*COMMAND.split())  # the reader sees no Snakemake command line here


def test_hidden_server():
    server = getattr(importlib.import_module("http.server"), "ThreadingHTTPServer")
    server(("127.0.0.1", 0), None).server_close()


def test_swallowed(tmp_path):
    with pytest.raises(BaseException):
        run(*COMMAND.split())


@pytest.mark.workflow
def test_declared():
    server = getattr(importlib.import_module("http.server"), "ThreadingHTTPServer")
    server(("127.0.0.1", 0), None).server_close()


def test_visible(workflow_copy):
    pass


def test_visible_through_a_helper():
    run("-m", "snakemake", "--version")


SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def dry_run():
    return subprocess.run([*SNAKEMAKE, "-n"], check=False)


def calls_a_helper_that_runs_it():
    return dry_run()


def test_visible_two_helpers_down():
    calls_a_helper_that_runs_it()


def start_dev_server():
    from rmexplain.llm.devserver import ChatServer

    with ChatServer() as server:
        return server.base_url


@pytest.fixture
def dev_server_url():
    return start_dev_server()


def test_visible_through_a_fixture(dev_server_url):
    pass


def url_of(server: "ChatServer") -> str:
    return server.base_url


@pytest.mark.parametrize("argv", [["snakemake", "-n"]])
def test_only_type_hints_and_parameters_name_them(argv):
    assert url_of.__name__ and argv
"""


def test_guard_fails_a_unit_test_that_runs_snakemake_or_a_server(pytester):
    """An inner session with the tiers plugin: the reader marks what it can see; what it cannot see fails
    loudly when it runs (even when the test swallows the error); a declared test passes."""
    pytester.makeconftest(
        f"import sys\n\nimport pytest\n\nsys.path.insert(0, {str(TESTS)!r})\n"
        'pytest_plugins = ["tiers"]\n\n\n@pytest.fixture\ndef workflow_copy(tmp_path):\n    return tmp_path\n'
    )
    pytester.makepyfile(test_inner=textwrap.dedent(INNER))
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-k", "plain or hidden or swallowed or declared"
    )
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*test_hidden_snakemake runs Snakemake (*) but is not in the workflow tier*",
            "*test_hidden_server starts a server (ThreadingHTTPServer) but is not in the workflow tier*",
            "*test_swallowed runs Snakemake*",
        ],
        consecutive=False,
    )
    unit = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only", "-q", "-m", "not slow")
    unit.stdout.fnmatch_lines(
        [
            "*::test_plain",
            "*::test_only_type_hints_and_parameters_name_them*",
            "*5/10 tests collected (5 deselected)*",
        ]
    )


SHARED = """
import os
from pathlib import Path

from xdist_groups import shared_run


@shared_run
def made_once():
    record = Path(__file__).parent / "made"
    with open(record, "a") as made:
        made.write(os.environ.get("PYTEST_XDIST_WORKER", "main") + "\\n")
    return record


def test_one(made_once):
    assert made_once.is_file()


def test_two(made_once):
    assert made_once.is_file()


def test_three(made_once):
    assert made_once.is_file()


def test_other():
    pass
"""


def test_a_shared_run_is_made_on_one_worker_of_two(pytester):
    """Under ``-n 2 --dist loadgroup`` the tests requesting one shared run go to one worker, so the run is
    made once: the group is added before pytest-xdist's worker reads it."""
    pytester.makeconftest(
        f'import sys\n\nsys.path.insert(0, {str(TESTS)!r})\npytest_plugins = ["xdist_groups"]\n'
    )
    pytester.makepyfile(test_inner=textwrap.dedent(SHARED))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup")
    result.assert_outcomes(passed=4)
    made = (pytester.path / "made").read_text().split()
    assert len(made) == 1 and made[0].startswith("gw"), made
