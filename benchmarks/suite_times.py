"""Where a pytest run spent its time: per test file, per fixture and per tier, from the files that
``pytest --timings FILE`` wrote (tests/timings.py; under pytest-xdist one file per worker and the
controller's, read together).

    python benchmarks/suite_times.py timings.json [--before before.json] [--markdown] [--json OUT]

Seconds are the tests' own phases (setup + call + teardown) summed, so under pytest-xdist they add up to
more than the run's wall time; ``wall`` is from the first worker's start to the last one's end. A fixture's
seconds are its setups' (a module fixture once per module, a session fixture once per worker); each is also
inside the setup phase of the test that made it. With ``--before`` (an earlier run's file, e.g. the suite
before a change) each row shows both and their ratio.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

PHASES = ("setup", "call", "teardown")


def load(path: Path) -> dict[str, Any]:
    """One run: its tests (merged over the controller's and workers' files), fixtures and wall time."""
    files = [path, *sorted(path.parent.glob(f"{path.stem}.gw*{path.suffix}"))]
    tests: dict[str, dict[str, Any]] = {}
    fixtures: list[dict[str, Any]] = []
    starts, ends = [], []
    for file in files:
        if not file.is_file():
            continue
        record = json.loads(file.read_text())
        for nodeid, entry in record["tests"].items():
            tests.setdefault(nodeid.split("@")[0], {}).update(entry)
        fixtures += record["fixtures"]
        starts.append(record["started"])
        ends.append(record["ended"])
    if not tests:
        raise SystemExit(f"{path}: no timings (run pytest with --timings {path})")
    return {"tests": tests, "fixtures": fixtures, "wall": max(ends) - min(starts), "workers": len(files) - 1}


def seconds(entry: dict[str, Any]) -> float:
    return sum(entry.get(phase, 0.0) for phase in PHASES)


def per_file(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per test file: tests, summed seconds, the slowest test and its seconds."""
    files: dict[str, dict[str, Any]] = defaultdict(lambda: {"tests": 0, "seconds": 0.0, "slowest": ("", 0.0)})
    for nodeid, entry in run["tests"].items():
        row = files[entry.get("file") or nodeid.split("::")[0]]
        row["tests"] += 1
        row["seconds"] += seconds(entry)
        if seconds(entry) > row["slowest"][1]:
            row["slowest"] = (nodeid.split("::", 1)[1], seconds(entry))
    return dict(files)


def per_fixture(run: dict[str, Any], at_least: float) -> dict[str, dict[str, Any]]:
    """Per fixture (by name and scope) whose setups took ``at_least`` seconds in all: setups, seconds."""
    fixtures: dict[str, dict[str, Any]] = defaultdict(lambda: {"setups": 0, "seconds": 0.0, "scope": ""})
    for entry in run["fixtures"]:
        row = fixtures[entry["fixture"]]
        row["setups"] += 1
        row["seconds"] += entry["seconds"]
        row["scope"] = entry["scope"]
    return {name: row for name, row in fixtures.items() if row["seconds"] >= at_least}


def per_tier(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    tiers: dict[str, dict[str, Any]] = defaultdict(lambda: {"tests": 0, "seconds": 0.0})
    for entry in run["tests"].values():
        tier = "workflow" if "workflow" in entry.get("markers", ()) else "slow, not workflow"
        tier = "unit" if "unit" in entry.get("markers", ()) else tier
        tiers[tier]["tests"] += 1
        tiers[tier]["seconds"] += seconds(entry)
    return dict(tiers)


def minutes(value: float) -> str:
    return f"{int(value // 60)} min {value % 60:04.1f} s" if value >= 60 else f"{value:.1f} s"


def ratio(before: float | None, after: float) -> str:
    return f"{before / after:.2f}×" if before and after else "–"


def table(title: str, rows: dict[str, dict[str, Any]], before: dict[str, dict[str, Any]] | None,
          columns: tuple[str, ...], markdown: bool) -> str:  # fmt: skip
    """Rows by their seconds (most first), with the earlier run's seconds and the ratio when given."""
    head = [title, *columns, "seconds"] + (["before", "before ÷ after"] if before is not None else [])
    names = sorted(set(rows) | set(before or {}), key=lambda n: -(rows.get(n) or {"seconds": 0})["seconds"])
    lines = []
    for name in names:
        row = rows.get(name, {})
        cells = [name, *(_cell(row.get(c, "")) for c in columns), minutes(row.get("seconds", 0.0))]
        if before is not None:
            then = (before.get(name) or {}).get("seconds")
            cells += [minutes(then) if then is not None else "–", ratio(then, row.get("seconds", 0.0))]
        lines.append(cells)
    if markdown:
        return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                         + ["| " + " | ".join(c) + " |" for c in lines])  # fmt: skip
    widths = [max(len(str(c)) for c in column) for column in zip(head, *lines, strict=True)]
    return "\n".join(
        "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in [head, *lines]
    )


def _cell(value: object) -> str:
    if isinstance(value, tuple):
        return f"{value[0]} ({value[1]:.1f} s)"
    return str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("timings", type=Path)
    parser.add_argument("--before", type=Path, help="an earlier run's --timings file, shown beside")
    parser.add_argument(
        "--fixtures-over", type=float, default=5.0, help="list fixtures of this many s or more"
    )
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--json", type=Path, help="write the summaries here")
    args = parser.parse_args()
    run = load(args.timings)
    earlier = load(args.before) if args.before else None
    summary = {
        "wall": run["wall"],
        "workers": run["workers"],
        "tests": len(run["tests"]),
        "files": per_file(run),
        "fixtures": per_fixture(run, args.fixtures_over),
        "tiers": per_tier(run),
    }
    before = {}
    if earlier:
        fixtures = per_fixture(earlier, args.fixtures_over)
        before = {"files": per_file(earlier), "fixtures": fixtures, "tiers": per_tier(earlier)}
    print(f"wall {minutes(run['wall'])} on {max(run['workers'], 1)} process(es), {len(run['tests'])} tests"
          + (f"; before: wall {minutes(earlier['wall'])}, {len(earlier['tests'])} tests, "
             f"{ratio(earlier['wall'], run['wall'])} faster" if earlier else ""))  # fmt: skip
    for title, key, columns in (
        ("tier", "tiers", ("tests",)),
        ("file", "files", ("tests", "slowest")),
        ("fixture", "fixtures", ("scope", "setups")),
    ):
        print()
        print(table(title, summary[key], before.get(key) if earlier else None, columns, args.markdown))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1, sort_keys=True, default=list) + "\n")


if __name__ == "__main__":
    main()
