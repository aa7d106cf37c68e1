"""Mutation testing of one library module with mutmut, against the test file that covers it.

    python tests/mutation/run.py score/lengths.py            # a module of MODULES
    python tests/mutation/run.py registry.py --max-children 1 --tests tests/test_registry.py
    python tests/mutation/run.py provenance.py --marker "not slow" --timeout 10 2
    python tests/mutation/run.py plan.py --mutants 'rmexplain.plan.x__requests_budget__*'   # some functions

mutmut names a mutant by the module path it mutates, relative to the folder it runs in, so it runs in a
staging folder, ``.mutation/<module>/`` (rebuilt on every run, git-ignored), where the package sits at the top
as ``rmexplain/`` (the module names then match ``rmexplain.<module>`` as the library imports them);
``config/``, ``workflow/``, ``envs/``, ``docs/``, ``benchmarks/`` and ``tests/`` are copied beside it, so the
tests' paths from the repository root (``tests/conftest.py``'s ``REPO``) and the tiers plugin work unchanged.
mutmut puts its mutated copy first on ``sys.path``, ahead of the editable install. Every test of the file runs
once to record which tests reach which function; each mutant then runs only those tests, in a child forked
from a fork server (a child forked straight from a process whose polars thread pool has started can deadlock).
Tests that reach the library only through a Snakemake subprocess never see a mutant.

The script prints each mutant's status (``killed``, ``survived``, ``timeout``, ``no tests``, ...), the
counts, and the diff of every survivor; ``docs/testing.md`` ("Mutation testing") keeps the counts and why
each survivor left there cannot matter.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "workflow" / "rmexplain"

# Each module kept under mutation testing, with the test files that cover it.
MODULES: dict[str, tuple[str, ...]] = {
    "score/lengths.py": ("tests/test_score_lengths.py",),
    "score/store.py": ("tests/test_score_store.py",),
    "provenance.py": ("tests/test_provenance.py",),
    "llm/budget.py": ("tests/test_llm_budget.py",),
    "llm/ratelimit.py": ("tests/test_llm_ratelimit.py",),
    "analysis/reproduction.py": ("tests/test_reproduction.py",),
    "registry.py": ("tests/test_registry.py",),
    "embeddings.py": ("tests/test_embeddings.py",),
    "run_summary.py": ("tests/test_run_summary.py",),
    "llm/cache.py": ("tests/test_llm_client.py", "tests/test_llm_budget.py"),
    "effects/estimators.py": (
        "tests/test_effects.py",
        "tests/test_effects_robust.py",
        "tests/test_effects_blocks.py",
        "tests/test_discovery_length_slope.py",
    ),
    "effects/recovery.py": ("tests/test_effects.py", "tests/test_planted.py"),
    "effects/analysis.py": ("tests/test_effects.py", "tests/test_every_language.py"),
    "score/planted.py": ("tests/test_planted.py",),
    "discovery/edit_words.py": ("tests/test_discovery_edit_words.py",),
    "effects/base.py": ("tests/test_effects.py", "tests/test_discovery.py", "tests/test_planted.py"),
    "effects/edits.py": (
        "tests/test_effects.py",
        "tests/test_every_language.py",
        "tests/test_own_attributes.py",
    ),
    "effects/stages.py": ("tests/test_effects.py", "tests/test_effects_llm.py"),
    "effects/single.py": (
        "tests/test_effects.py",
        "tests/test_analysis_cli.py",
        "tests/test_every_language.py",
    ),
    "effects/plots.py": ("tests/test_effects.py",),
    "llm/client.py": (
        "tests/test_llm_client.py",
        "tests/test_llm_budget.py",
        "tests/test_llm_ratelimit.py",
        "tests/test_llm_defaults.py",
    ),
    "llm/openai_backend.py": ("tests/test_llm_client.py", "tests/test_llm_defaults.py"),
    "plan.py": ("tests/test_plan.py", "tests/test_designs.py", "tests/test_effects_llm.py"),
    "explanations/categorise.py": (  # CF/SF labels, orientation and coverage's denominators are used widely
        "tests/test_explain.py",
        "tests/test_metrics.py",
        "tests/test_score_lengths.py",
        "tests/test_analysis_outputs.py",
        "tests/test_analysis_representative.py",
        "tests/test_wrong_inputs.py",
    ),
    "discovery/estimate.py": ("tests/test_discovery.py", "tests/test_discovery_llm.py"),
    "discovery/edits.py": ("tests/test_discovery.py", "tests/test_discovery_llm.py"),
    "discovery/mining.py": ("tests/test_discovery.py",),
    "discovery/merging.py": ("tests/test_discovery_merging.py",),
    "findings/phrases.py": ("tests/test_findings.py",),
    "findings/summary.py": ("tests/test_findings.py", "tests/test_findings_robust.py"),
    "findings/landing.py": ("tests/test_findings.py", "tests/test_findings_robust.py"),
    "findings/carriers.py": ("tests/test_findings_carriers.py",),
    "findings/attribution.py": ("tests/test_findings_attribution.py",),
}
SKIPPED_FILES = shutil.ignore_patterns("__pycache__", ".pytest_cache", "build", "*.egg-info")
# A child's wall-clock limit is (its tests' recorded time + constant s) x multiplier: module fixtures (tiny
# models built on first use) are not in the recorded time, and the 2 cores are shared. A module whose
# mutants can make its code walk or hash far more than the tests' trees (provenance.py) runs with a lower
# limit, or such mutants spend minutes each before they count as timeouts.
DEFAULT_TIMEOUT = (30.0, 4.0)


def mutmut_settings(
    module: str,
    tests: tuple[str, ...],
    marker: str | None = None,
    timeout: tuple[float, float] = DEFAULT_TIMEOUT,
) -> str:
    """The ``[tool.mutmut]`` table of the staging folder's pyproject.toml (``marker``: pytest's ``-m``;
    ``timeout``: a child's (constant, multiplier), see ``DEFAULT_TIMEOUT``)."""
    pytest_args = ["-p", "no:cacheprovider", *(["-m", marker] if marker else [])]
    return "\n".join(
        [
            "",
            "[tool.mutmut]",
            'source_paths = ["rmexplain"]',
            'also_copy = ["config", "workflow", "envs", "docs", "benchmarks", "Snakefile"]',
            f'only_mutate = ["rmexplain/{module}"]',
            f"pytest_add_cli_args_test_selection = {list(tests)!r}".replace("'", '"'),
            f"pytest_add_cli_args = {pytest_args!r}".replace("'", '"'),
            'process_isolation = "forkserver"',
            f"timeout_constant = {timeout[0]:g}",
            f"timeout_multiplier = {timeout[1]:g}",
            "use_git_change_detection = false",
            "",
        ]
    )


def stage(
    module: str,
    tests: tuple[str, ...],
    root: Path,
    marker: str | None = None,
    timeout: tuple[float, float] = DEFAULT_TIMEOUT,
) -> Path:
    """A fresh staging folder for ``module`` under ``root``: the package at the top, the tests and the files
    they read beside it, and the project's pyproject.toml with the mutmut settings."""
    folder = root / module.removesuffix(".py").replace("/", ".")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copytree(PACKAGE, folder / "rmexplain", ignore=SKIPPED_FILES)
    # envs: the rules' conda files Snakemake records; docs: the pages some tests read (docs/extending.md);
    # benchmarks: the measurements some tests share (benchmarks/length_slope.py)
    for name in ("config", "workflow", "tests", "envs", "docs", "benchmarks"):
        shutil.copytree(REPO / name, folder / name, ignore=SKIPPED_FILES)
    shutil.copy(REPO / "Snakefile", folder / "Snakefile")  # the tests that copy the workflow read it
    project = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    settings = mutmut_settings(module, tests, marker, timeout)
    (folder / "pyproject.toml").write_text(project + settings, encoding="utf-8")
    return folder


def mutmut(folder: Path, *args: str, capture: bool = False) -> str:
    """Run the mutmut next to this Python in ``folder`` (the library from the staged copy only)."""
    command = Path(sys.executable).with_name("mutmut")
    executable = str(command) if command.exists() else shutil.which("mutmut")
    if executable is None:
        raise SystemExit("mutmut is not installed: pip install -e '.[mutation]'")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    result = subprocess.run(
        [executable, *args], cwd=folder, env=env, text=True, check=True, capture_output=capture
    )
    return result.stdout if capture else ""


def statuses(folder: Path) -> dict[str, str]:
    """Each mutant's status, by name, from ``mutmut results --all true``."""
    listing = mutmut(folder, "results", "--all", "true", capture=True)
    return dict(re.findall(r"^\s*(\S+__mutmut_\d+): (.+?)\s*$", listing, re.M))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module", help=f"a module of rmexplain: {', '.join(MODULES)}")
    parser.add_argument("--tests", nargs="+", help="test files to run instead of the module's own")
    parser.add_argument("--max-children", type=int, default=1, help="mutants run at once (default 1)")
    parser.add_argument("--root", type=Path, default=REPO / ".mutation", help="where staging folders go")
    parser.add_argument(
        "--marker", help="only the tests pytest's -m selects, e.g. 'not slow' (servers started for real)"
    )
    parser.add_argument(
        "--timeout",
        nargs=2,
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar=("CONSTANT", "MULTIPLIER"),
        help="a mutant's limit: (its tests' recorded seconds + CONSTANT) x MULTIPLIER (default "
        + " ".join(f"{value:g}" for value in DEFAULT_TIMEOUT)
        + ")",
    )
    parser.add_argument(
        "--mutants",
        nargs="+",
        default=[],
        metavar="PATTERN",
        help="run only the mutants these names or fnmatch patterns match (e.g. 'rmexplain.plan.xǁPlanǁ*'); "
        "the others are listed as not checked",
    )
    args = parser.parse_args(argv)
    if not (PACKAGE / args.module).is_file():
        parser.error(f"no module workflow/rmexplain/{args.module}")
    tests = tuple(args.tests or MODULES.get(args.module, ()))
    if not tests:
        parser.error(f"{args.module} has no test file in MODULES: name them with --tests")
    folder = stage(args.module, tests, args.root, args.marker, tuple(args.timeout))
    mutmut(folder, "run", "--max-children", str(args.max_children), *args.mutants)
    found = statuses(folder)
    for name, status in sorted(found.items(), key=lambda item: _natural(item[0])):
        print(f"{status:>10}  {name}")
    counts = Counter(found.values())
    print(
        f"\n{args.module}: {len(found)} mutants; " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    )
    for name in sorted((n for n, s in found.items() if s == "survived"), key=_natural):
        print(mutmut(folder, "show", name, capture=True))
    return 0


def _natural(name: str) -> tuple[str, int]:
    """Sort key: function, then mutant number."""
    stem, number = name.rsplit("__mutmut_", 1)
    return stem, int(number)


if __name__ == "__main__":
    sys.exit(main())
