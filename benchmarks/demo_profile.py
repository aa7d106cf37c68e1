"""Where a finished Snakemake run spent its time: job-seconds per rule, from its ``.snakemake/metadata``.

    python benchmarks/demo_profile.py DIR [--before DIR|JSON] [--json OUT]

``DIR`` is the directory Snakemake ran in (its ``.snakemake/metadata`` holds each output's job start and
end times). With ``--before`` a second run's profile is printed beside it, with the ratio per rule: a run
directory, or a JSON file this script wrote (its ``after`` run, the run that file measured). The numbers
are the runs' own measurements; nothing is rerun. ``--json`` writes them (per rule: jobs, seconds, longest
job). The last line gives bias discovery's and the findings' share of the job-seconds (the rules in
``DISCOVERY_AND_FINDINGS``, their encoding and scoring included).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

# Bias discovery's rules and the findings' (the carriers' edits, encoding and scoring among them).
DISCOVERY_AND_FINDINGS = (
    "discovery_round",
    "embed_discovery_texts",
    "score_discovery_edits",
    "discovery_effects",
    "discovered_biases",
    "figure_discovered_biases",
    "carrier_edits",
    "embed_carrier_texts",
    "score_carrier_edits",
    "findings",
)


def job_times(run_dir: Path) -> dict[tuple[str, str], tuple[float, float]]:
    """(rule, job hash) -> (start, end) of every job of the run: the earliest start and the latest end of
    its outputs' records (a job with several outputs counts once)."""
    jobs: dict[tuple[str, str], tuple[float, float]] = {}
    for record_file in (run_dir / ".snakemake" / "metadata").iterdir():
        record = json.loads(record_file.read_text())
        start, end = record.get("starttime"), record.get("endtime")
        if start is None or end is None:
            continue
        key = (record["rule"], str(record.get("job_hash")))
        jobs[key] = (min(start, jobs[key][0]), max(end, jobs[key][1])) if key in jobs else (start, end)
    return jobs


def profile(run_dir: Path) -> dict[str, Any]:
    """Per rule: ``jobs``, ``seconds`` (summed), ``longest``; the run's ``job_seconds`` and ``span``."""
    jobs = job_times(run_dir)
    if not jobs:
        raise SystemExit(f"{run_dir}: no finished job in .snakemake/metadata")
    rules: dict[str, list[float]] = defaultdict(list)
    for (rule, _), (start, end) in jobs.items():
        rules[rule].append(end - start)
    per_rule = {
        rule: {"jobs": len(times), "seconds": round(sum(times), 1), "longest": round(max(times), 1)}
        for rule, times in sorted(rules.items(), key=lambda kv: (-sum(kv[1]), kv[0]))
    }
    starts, ends = [s for s, _ in jobs.values()], [e for _, e in jobs.values()]
    return {
        "rules": per_rule,
        "jobs": len(jobs),
        "job_seconds": round(sum(r["seconds"] for r in per_rule.values()), 1),
        "span": round(max(ends) - min(starts), 1),
    }


def earlier(path: Path) -> dict[str, Any]:
    """The profile of an earlier run: measured from its directory, or the ``after`` run of a JSON file
    that ``--json`` wrote."""
    if path.is_dir():
        return profile(path)
    return json.loads(path.read_text())["after"]


def discovery_share(run: dict[str, Any]) -> str:
    """``DISCOVERY_AND_FINDINGS``' job-seconds and their share of the run's, in words."""
    seconds = sum(r["seconds"] for rule, r in run["rules"].items() if rule in DISCOVERY_AND_FINDINGS)
    return f"{seconds:.1f} of {run['job_seconds']} job-seconds ({100 * seconds / run['job_seconds']:.1f} %)"


def table(after: dict[str, Any], before: dict[str, Any] | None) -> str:
    """The profile as a Markdown table (with the earlier run's columns and the ratio when given)."""
    if before is None:
        lines = ["| rule | jobs | job-seconds | longest job (s) |", "|---|---|---|---|"]
        for rule, r in after["rules"].items():
            lines.append(f"| {rule} | {r['jobs']} | {r['seconds']} | {r['longest']} |")
        lines.append(f"| **all** | {after['jobs']} | {after['job_seconds']} | span {after['span']} |")
        return "\n".join([*lines, "", f"Bias discovery and the findings: {discovery_share(after)}"])
    lines = ["| rule | jobs before | s before | jobs after | s after | after / before |", "|---" * 6 + "|"]
    for rule in dict.fromkeys([*before["rules"], *after["rules"]]):
        b, a = before["rules"].get(rule), after["rules"].get(rule)
        ratio = f"{a['seconds'] / b['seconds']:.2f}" if a and b and b["seconds"] else "–"
        cells = [f"{r['jobs']} | {r['seconds']}" if r else "– | –" for r in (b, a)]
        lines.append(f"| {rule} | {cells[0]} | {cells[1]} | {ratio} |")
    ratio = after["job_seconds"] / before["job_seconds"]
    lines.append(
        f"| **all** | {before['jobs']} | {before['job_seconds']} | {after['jobs']} | {after['job_seconds']} "
        f"| {ratio:.2f} |"
    )
    shares = (
        f"Bias discovery and the findings: {discovery_share(before)} before, {discovery_share(after)} after"
    )
    return "\n".join([*lines, "", shares])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument(
        "--before", type=Path, help="an earlier run: its directory or a JSON file --json wrote"
    )
    parser.add_argument("--json", type=Path, help="write the profile(s) here")
    args = parser.parse_args()
    after = profile(args.run_dir)
    before = earlier(args.before) if args.before else None
    print(table(after, before))
    if args.json:
        args.json.write_text(json.dumps({"after": after, "before": before}, indent=2) + "\n")


if __name__ == "__main__":
    main()
