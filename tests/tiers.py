"""The two test tiers, applied automatically: a pytest plugin, loaded by tests/conftest.py.

``workflow`` (also ``slow``): a test that runs Snakemake or starts a server — the ``workflow_copy`` fixture,
``python -m snakemake`` in a subprocess, the dev OpenAI-compatible server (``ChatServer``),
``tests/hub_server.py``, any ``socketserver``/``http.server`` or aiohttp server, the SLURM cluster.
``unit``: every test not ``slow``.

Two checks, so that a new test cannot land in the wrong tier silently:

- at collection, ``classify`` reads the test, the fixtures it requests and the helpers they call (functions
  and classes defined under tests/, followed transitively) and marks the test ``workflow`` and ``slow`` when
  one of them requests ``workflow_copy``, starts a server or builds a Snakemake command line;
- while the test runs, ``install_guards`` watches every subprocess and server start: a test that runs
  Snakemake or starts a server without the ``workflow`` marker fails, naming what it started. Mark such a
  test ``@pytest.mark.workflow`` by hand (the reader missed how it gets there), or use the fixtures.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import itertools
import os
import socketserver
import subprocess
import sys
import textwrap
from collections.abc import Generator, Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent
WORKFLOW_FIXTURES = frozenset({"workflow_copy", "slurm_cluster"})
WORKFLOW_MARKERS = ("workflow", "slurm")
SERVER_MODULES = (
    "http.server",
    "socketserver",
    "aiohttp",
    "snakemake.api",
    "rmexplain.llm.devserver",
    "hub_server",
)
WRAPPERS = frozenset({"timeout", "env", "nice", "nohup", "time"})

_current: pytest.Item | None = None
_violations: list[str] = []
_installed = False
_test_dirs: set[Path] = {TESTS}


# -- what counts as Snakemake or a server ------------------------------------------------------------------


def runs_snakemake(argv: Sequence[object]) -> bool:
    """Whether a command line starts Snakemake: ``snakemake …``, ``python -m snakemake …``,
    ``timeout N snakemake …``. Elements that are not strings (unknown at collection) match nothing."""
    parts = [os.path.basename(str(p)) if isinstance(p, (str, os.PathLike)) else "" for p in argv]
    for i, part in enumerate(parts):
        if part != "snakemake":
            continue
        before = parts[i - 1] if i else ""
        if i == 0 or before == "-m" or before in WRAPPERS or before.replace(".", "").isdigit():
            return True
    return False


def _argv(args: object) -> list[object]:
    if isinstance(args, (str, bytes)):
        return (args.decode() if isinstance(args, bytes) else args).split()
    if isinstance(args, os.PathLike):
        return [args]
    return list(args)  # type: ignore[call-overload]


@functools.cache
def _server_classes() -> tuple[type, ...]:
    from rmexplain.llm.devserver import ChatServer

    return (socketserver.BaseServer, ChatServer)


def _trigger(obj: object) -> str | None:
    """Why ``obj``, referenced by a test or its helpers, puts the test in the workflow tier (else None)."""
    if inspect.isclass(obj) and issubclass(obj, _server_classes()):
        return f"starts a server ({obj.__name__})"
    module = obj.__name__ if isinstance(obj, ModuleType) else getattr(obj, "__module__", None)
    if isinstance(module, str) and module.startswith(("aiohttp.web", "snakemake.api", "uvicorn")):
        return f"uses {module}"
    if isinstance(obj, (list, tuple)) and all(isinstance(p, str) for p in obj) and runs_snakemake(obj):
        return "runs Snakemake"
    return None


# -- reading a test and its helpers --------------------------------------------------------------------------


def _local(obj: object) -> bool:
    """A function or class whose source lies under tests/ or beside a collected test (so it is followed);
    this plugin's own functions name every trigger and are not."""
    if not (inspect.isfunction(obj) or inspect.isclass(obj)):
        return False
    try:
        source = inspect.getsourcefile(obj)  # type: ignore[arg-type]
    except TypeError:
        return False
    return source is not None and _followed(source, frozenset(_test_dirs))


@functools.cache
def _followed(source: str, test_dirs: frozenset[Path]) -> bool:
    path = Path(source).resolve()
    return path != Path(__file__).resolve() and any(path.is_relative_to(d) for d in test_dirs)


def _namespace(obj: Any) -> dict[str, Any]:
    if inspect.isfunction(obj):
        try:
            closure = inspect.getclosurevars(obj).nonlocals
        except (TypeError, ValueError):
            closure = {}
        return {**obj.__globals__, **closure}
    return vars(sys.modules[obj.__module__])


def _drop_hints(tree: ast.AST) -> None:
    """Type hints name classes a helper never starts (``server: ChatServer``), decorators hold parameters
    (``@pytest.mark.parametrize``), not what the test does: neither counts."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            node.decorator_list = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.returns = None
        elif isinstance(node, ast.arg):
            node.annotation = None
        elif isinstance(node, ast.AnnAssign):
            node.annotation = ast.Constant(None)


def _resolve(node: ast.expr, namespace: dict[str, Any]) -> object:
    """The object a ``name`` or ``name.attr.attr`` expression refers to, or None."""
    if isinstance(node, ast.Name):
        return namespace.get(node.id)
    if isinstance(node, ast.Attribute):
        return _attribute(_resolve(node.value, namespace), node.attr)
    return None


def _attribute(base: object, name: str) -> object:
    """``base.name`` for a module or class, without running a lazy module's ``__getattr__`` (transformers
    would import a model family just to be read)."""
    if isinstance(base, ModuleType):
        return vars(base).get(name)
    if inspect.isclass(base):
        return inspect.getattr_static(base, name, None)
    return None


def _constants(nodes: list[ast.expr]) -> list[object]:
    return [n.value if isinstance(n, ast.Constant) else None for n in nodes]


def _module_snakemake(args: list[object]) -> bool:
    """``helper(..., "-m", "snakemake", ...)``: a command line passed as separate arguments."""
    return any(a == "-m" and b == "snakemake" for a, b in itertools.pairwise(args))


def _snakemake_literal(node: ast.AST) -> bool:
    """A list literal ``[..., "-m", "snakemake", ...]`` or a call ``helper("-m", "snakemake", ...)``."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return runs_snakemake(_constants(node.elts))
    return isinstance(node, ast.Call) and _module_snakemake(_constants(node.args))


def _module(name: str) -> ModuleType | None:
    """A module a helper imports: one already loaded, or one of the server modules (cheap to load);
    others (torch, vllm, …) are not loaded just to read a test."""
    if name not in sys.modules and name.startswith(SERVER_MODULES):
        try:
            importlib.import_module(name)
        except ImportError:
            return None
    return sys.modules.get(name)


def _local_imports(tree: ast.AST) -> dict[str, object]:
    """Names bound by imports inside a function (``from rmexplain.llm.devserver import ChatServer``)."""
    bound: dict[str, object] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            module = _module(node.module)
            bound.update({a.asname or a.name: _attribute(module, a.name) for a in node.names})
        elif isinstance(node, ast.Import):
            for a in node.names:  # ``import a.b`` binds ``a``; ``import a.b as c`` binds ``a.b``
                name = a.name if a.asname else a.name.split(".")[0]
                bound[a.asname or name] = _module(name)
    return bound


@functools.cache
def _references(obj: Any) -> tuple[tuple[object, ...], tuple[str, ...]]:
    """(objects the source of ``obj`` names, reasons found in its literals)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
    except (OSError, TypeError, SyntaxError):
        return (), ()
    _drop_hints(tree)
    namespace = {**_namespace(obj), **_local_imports(tree)}
    named: list[object] = []
    reasons: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name, ast.Attribute)):
            target = _resolve(node, namespace)
            if target is not None:
                named.append(target)
        elif _snakemake_literal(node):
            reasons.append("runs Snakemake")
    return tuple(named), tuple(reasons)


def workflow_reason(roots: Iterable[object]) -> str | None:
    """Why code reachable from ``roots`` (tests, fixtures, their helpers) runs Snakemake or a server."""
    stack = [r for r in roots if _local(r)]
    seen: set[int] = set()
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        named, reasons = _references(obj)
        where = f"{obj.__module__}.{obj.__qualname__}"
        if reasons:
            return f"{where} {reasons[0]}"
        for target in named:
            found = _trigger(target)
            if found:
                return f"{where} {found}"
            if _local(target) and id(target) not in seen:
                stack.append(target)
    return None


def classify(item: pytest.Item) -> str | None:
    """Why ``item`` belongs to the workflow tier, or None for the unit tier."""
    for name in WORKFLOW_MARKERS:
        if item.get_closest_marker(name):
            return f"marked {name}"
    fixtures = set(getattr(item, "fixturenames", ())) & WORKFLOW_FIXTURES
    if fixtures:
        return f"requests {', '.join(sorted(fixtures))}"
    if not isinstance(item, pytest.Function):
        return None
    roots: list[object] = [item.function]
    for defs in item._fixtureinfo.name2fixturedefs.values():
        roots.extend(d.func for d in defs)
    return workflow_reason(roots)


def mark_tiers(items: list[pytest.Item]) -> None:
    """``workflow`` and ``slow`` on the tests ``classify`` picks; ``unit`` on every test left not ``slow``."""
    _test_dirs.update(Path(item.path).resolve().parent for item in items)
    for item in items:
        reason = classify(item)
        if reason:
            item.user_properties.append(("tier_reason", reason))
            item.add_marker(pytest.mark.workflow)
            item.add_marker(pytest.mark.slow)
        elif not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.unit)


# -- the run-time guard -------------------------------------------------------------------------------------


def _breach(what: str) -> str | None:
    """Record (and return) the message when the running test is not in the workflow tier."""
    item = _current
    if item is None or item.get_closest_marker("workflow"):
        return None
    message = (
        f"{item.nodeid} {what} but is not in the workflow tier: tests/tiers.py did not see it coming. "
        "Use the workflow_copy fixture or mark the test @pytest.mark.workflow."
    )
    _violations.append(message)
    return message


def require_workflow(what: str) -> None:
    """Fail the running test unless it is in the workflow tier."""
    message = _breach(what)
    if message:
        raise pytest.fail.Exception(message, pytrace=False)


def _guard_subprocess() -> None:
    execute = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    @functools.wraps(execute)
    def guarded(self: subprocess.Popen, args: object, *rest: Any, **kwargs: Any) -> Any:
        if runs_snakemake(_argv(args)):
            require_workflow(f"runs Snakemake ({' '.join(map(str, _argv(args)))[:120]})")
        return execute(self, args, *rest, **kwargs)

    subprocess.Popen._execute_child = guarded  # type: ignore[attr-defined]


def _guard_socketserver() -> None:
    init = socketserver.BaseServer.__init__

    @functools.wraps(init)
    def guarded(self: socketserver.BaseServer, *args: Any, **kwargs: Any) -> None:
        require_workflow(f"starts a server ({type(self).__name__})")
        init(self, *args, **kwargs)

    socketserver.BaseServer.__init__ = guarded  # type: ignore[method-assign]


def _guard_aiohttp() -> None:
    """aiohttp sites (the dev chat server) start in a thread of their own: record, fail after the phase."""
    from aiohttp import web_runner

    start = web_runner.BaseSite.start

    @functools.wraps(start)
    async def guarded(self: web_runner.BaseSite) -> None:
        _breach(f"starts an aiohttp server ({type(self).__name__})")  # raising would stall its thread
        await start(self)

    web_runner.BaseSite.start = guarded  # type: ignore[method-assign]


def install_guards() -> None:
    """Wrap subprocess and server starts once per process."""
    global _installed
    if _installed:
        return
    _installed = True
    _guard_subprocess()
    _guard_socketserver()
    _guard_aiohttp()


def watch(item: pytest.Item | None) -> None:
    """Called before each phase of ``item``: it is the test the guards hold responsible."""
    global _current
    _current = item
    _violations.clear()


def check_after_phase() -> None:
    """Fail the phase if a guard recorded a breach that the test (or a thread) swallowed."""
    if _violations:
        message = _violations[0]
        _violations.clear()
        raise pytest.fail.Exception(message, pytrace=False)


# -- the hooks ---------------------------------------------------------------------------------------------


MARKERS = {
    "unit": "the fast tier: no Snakemake, no servers (set on every test not marked slow)",
    "workflow": "runs Snakemake or starts a server (set by tests/tiers.py; implies slow)",
    "slow": "the workflow tier plus other long tests such as fresh-venv installs",
}


def pytest_configure(config: pytest.Config) -> None:
    known = {line.split(":")[0].strip() for line in config.getini("markers")}
    for name, text in MARKERS.items():
        if name not in known:
            config.addinivalue_line("markers", f"{name}: {text}")
    install_guards()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tiers, then run the workflow tier first (a stable sort: files and tests keep their order
    within a tier): on two processes the long tests start first and the short ones fill the end."""
    mark_tiers(items)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def guarded_phase(item: pytest.Item) -> Generator[None, Any, Any]:
    """One phase of ``item`` (setup, call or teardown) under the guards, which check what it started."""
    watch(item)
    result = yield
    check_after_phase()
    return result


pytest_runtest_setup = pytest.hookimpl(wrapper=True)(guarded_phase)
pytest_runtest_call = pytest.hookimpl(wrapper=True)(guarded_phase)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, Any, Any]:
    try:
        return (yield from guarded_phase(item))
    finally:
        watch(None)
