"""Measurement (not a test): the planted-effects and discovery suites at full size, through Snakemake.

    python benchmarks/suites.py planted               # config/planted.yaml: docs/effects.md, "Results"
    python benchmarks/suites.py discovery             # config/discovery.yaml: docs/discovery.md's suite
    python benchmarks/suites.py planted --size test   # the size tests/test_planted_suite.py runs
    python benchmarks/suites.py weak --alone          # each planted RM explained alone (no reference)

Each run makes a fresh working folder under ``--workdir`` (the Snakefile, links to this checkout's
``workflow/`` and ``benchmarks/data/``, a copy of ``config/``) and runs
``snakemake --cores N --configfile config/<suite>.yaml`` there
(at the tests' size, that config shrunk as the suite's test shrinks it, written beside it; with ``--alone``,
every planted RM's ``reference: null``, so that it is explained by itself rather than beyond its base, the
config written beside it too). It prints the recall table and writes
``benchmarks/results/suites/<suite>-<size>[-alone]_<UTC time>.json``: the recall rows, the rows the docs
quote per planted RM (the primary estimator's recovery rows; discovery's first feature per RM and dataset),
the wall time, job-seconds per rule (``benchmarks/demo_profile.py``), the machine and the versions. The
docs' numbers for the full suites are these files'; the tests hold the suites at their small size to what
the docs state for that size.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import polars as pl
import yaml

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "suites"
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))

from conftest import WorkflowCopy  # noqa: E402
from demo_profile import profile  # noqa: E402
from test_discovery_suite import small_suite as small_discovery_suite  # noqa: E402
from test_planted_suite import small_suite as small_planted_suite  # noqa: E402


def small_weak_suite() -> dict:
    """config/weak_biases.yaml on the helpful split, 12 comparisons, 20 edits per feature, 200 resamples (no
    test runs it through Snakemake: the suite is a benchmark; tests/test_discovery_suite.py checks its
    config)."""
    config = yaml.safe_load((REPO / "config" / "weak_biases.yaml").read_text())
    config["datasets"] = {"helpful": config["datasets"]["helpful"]}
    config["sample"] = {"n_per_seed": 12, "seeds": [0]}
    config["analysis"]["bootstrap"] = {"n_resamples": 200}
    config["discovery"]["responses_per_feature"] = 20
    config["discovery"]["offline"]["mined"] = {"max_candidates": 10, "per_rm": 4}
    return config


SUITES: dict[str, tuple[str, Callable[[], dict]]] = {
    "planted": ("config/planted.yaml", small_planted_suite),
    "discovery": ("config/discovery.yaml", small_discovery_suite),
    "weak": ("config/weak_biases.yaml", small_weak_suite),
}
VERSIONS = ("snakemake", "torch", "transformers", "sentence-transformers", "polars", "numpy", "scipy")


def workdir(root: Path) -> Path:
    """A fresh folder laid out as the tests' workflow copies are (``conftest.WorkflowCopy``: the Snakefile,
    links to this checkout's workflow/ and benchmarks/data/, a copy of config/)."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    WorkflowCopy(root)
    return root


def config_file(root: Path, suite: str, size: str, alone: bool = False) -> str:
    """The suite's config as the run reads it: the committed file in full, or the tests' shrunk copy; with
    ``alone``, a copy whose planted RMs have no reference (``alone_config``)."""
    committed, shrunk = SUITES[suite]
    if size == "full" and not alone:
        return committed
    config = yaml.safe_load((REPO / committed).read_text()) if size == "full" else shrunk()
    path = root / "config" / f"{suite}_{size}{'_alone' * alone}.yaml"
    path.write_text(yaml.safe_dump(alone_config(config) if alone else config, sort_keys=False))
    return str(path.relative_to(root))


def alone_config(config: dict) -> dict:
    """``config`` with every planted RM explained alone: ``reference: null`` (a planted RM's reference is
    its base unless set), so that its features are what it rewards, its base's own biases included."""
    for spec in config["reward_models"].values():
        if spec.get("backend") == "planted":
            spec["reference"] = None
    return config


def run_snakemake(root: Path, config: str, cores: int) -> float:
    """Wall seconds of ``snakemake --cores N --configfile CONFIG`` in ``root`` (its console in run.log)."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1"}
    started = time.perf_counter()
    with open(root / "run.log", "w") as console:
        code = subprocess.run(
            [sys.executable, "-m", "snakemake", "--cores", str(cores), "--configfile", config],
            cwd=root, stdout=console, stderr=subprocess.STDOUT, env=env, check=False,
        ).returncode  # fmt: skip
    if code != 0:
        raise SystemExit(f"snakemake failed (exit {code}): see {root / 'run.log'}")
    return time.perf_counter() - started


def rows(path: Path) -> list[dict[str, Any]]:
    return pl.read_csv(path).to_dicts()


def planted_results(tables: Path) -> dict[str, Any]:
    """The recall table and the primary estimator's recovery rows."""
    recall = pl.read_csv(tables / "planted_recall.csv")
    primary = recall.filter(pl.col("primary"))["estimator"][0]
    recovery = pl.read_csv(tables / "planted_recovery.csv").filter(pl.col("estimator") == primary)
    columns = ["dataset", "rm", "expected", "found", "rank", "effect", "low", "high", "verdict"]
    recovery = recovery.select(*columns, "visible_share")
    return {"recall": recall.to_dicts(), "primary": primary, "recovery": recovery.to_dicts()}


def discovery_results(tables: Path) -> dict[str, Any]:
    """The recall table and, per dataset and RM, its first-ranked feature."""
    biases = pl.read_csv(tables / "discovered_biases.csv")
    first = biases.filter(pl.col("rank") == 1).sort("dataset", "rm")
    columns = ["dataset", "rm", "engine", "feature", "effect", "low", "high", "q_value", "significant"]
    return {"recall": rows(tables / "discovery_recall.csv"), "first": first.select(columns).to_dicts()}


def screen_recall(root: Path, config: str) -> list[dict[str, Any]]:
    """The recall table as the first screen lists the features: the run's findings
    (``results/findings/findings.parquet``), their discovered features in the screen's one ranking
    (``order``), each shown where it is significant or significant with a class that works against it undone,
    and not listed under a class that carries it. A class measured by re-scoring (engine ``re-scored``) is
    also judged by the edits it was measured on (``rescored_edits``)."""
    from rmexplain import paths
    from rmexplain.discovery.recall import recall_table, rm_slopes
    from rmexplain.score.planted import read_reward_scale

    settings = yaml.safe_load((root / config).read_text())
    results = root / "results"
    datasets = [d for d in settings["datasets"] if (results / "discovery" / d / "edits.parquet").is_file()]
    findings = pl.read_parquet(root / paths.FINDINGS).filter(pl.col("kind") == "discovered")
    edits = {d: rescored_edits(root, d, findings) for d in datasets}
    comparisons = {d: pl.read_parquet(results / "data" / d / "comparisons.parquet") for d in datasets}
    biases = pl.read_parquet(results / "discovery" / "discovered_biases.parquet")
    shown = findings.select(
        "dataset",
        "rm",
        feature="name",
        effect=pl.coalesce("unmasked_effect", "effect"),
        q_value="q_value",
        significant=(pl.col("significant") | pl.col("unmasked_by").is_not_null()) & pl.col("under").is_null(),
        rank=pl.col("order"),
    )
    planted = {rm: spec for rm, spec in settings["reward_models"].items() if spec.get("backend") == "planted"}
    moved_share = (settings.get("discovery", {}).get("recall") or {}).get("moved_share", 0.5)
    base_sds = {rm: read_reward_scale(root / paths.fmt(paths.REWARD_SCALE, rm=spec["base"]))
                for rm, spec in planted.items()}  # fmt: skip
    slopes = rm_slopes(biases, comparisons, planted, base_sds)
    return recall_table(shown, edits, comparisons, planted, moved_share, slopes).to_dicts()


def rescored_edits(root: Path, dataset: str, findings: pl.DataFrame) -> pl.DataFrame:
    """The dataset's discovery edits (``feature, comparison_id, source_text, edited_text``) and, for each
    class with a row measured by re-scoring, the carrier edits it was measured on (those that change it) as
    edits of the class: each with the class undone as the source, as edited as the text (they differ in the
    class's instances alone)."""
    from rmexplain import paths
    from rmexplain.findings.attribution import RESCORED

    columns = ["feature", "comparison_id", "source_text", "edited_text"]
    own = pl.read_parquet(root / "results" / "discovery" / dataset / "edits.parquet").select(columns)
    mine = findings.filter((pl.col("dataset") == dataset) & (pl.col("method") == RESCORED))
    carriers = root / paths.fmt(paths.CARRIER_EDITS, dataset=dataset)
    if mine.is_empty() or not carriers.is_file():
        return own
    undone = pl.read_parquet(carriers).filter(
        pl.col("carrier").is_in(mine["name"].unique().to_list())
        & pl.col("skip").is_null()
        & (pl.col("class_change") != 0)
    )
    undone = undone.select(
        pl.col("carrier").alias("feature"), "comparison_id", pl.col("edited_undone").alias("source_text"),
        "edited_text",
    )  # fmt: skip
    return pl.concat([own, undone])


def summary_line(suite: str, results: dict[str, Any]) -> str:
    if suite == "planted":
        row = next(r for r in results["recall"] if r["primary"] and r["dataset"] == "all")
        return f"primary estimator {row['estimator']}: {row['hits_at_1']} of {row['biases']} first"
    line = "offline engine"
    for key, said in (
        ("recall", "as the table ranks them"),
        ("screen_recall", "as the first screen lists them"),
    ):
        summaries = [r for r in results.get(key, []) if r["rm"] == "all planted RMs"]
        row = next((r for r in summaries if r["dataset"] == "all"), summaries[0] if summaries else None)
        if row is not None:
            line += (
                f"; {said}: {row['hits_at_1']} of {row['biases']} first, {row['hits_at_5']} in the first five"
            )
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("suite", choices=sorted(SUITES))
    parser.add_argument("--size", choices=["full", "test"], default="full")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--alone", action="store_true", help="each planted RM without its reference")
    parser.add_argument("--workdir", type=Path, default=REPO / "benchmarks" / "out" / "suites")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    run_name = f"{args.suite}-{args.size}{'-alone' * args.alone}"
    root = workdir(args.workdir / run_name)
    config = config_file(root, args.suite, args.size, args.alone)
    wall = run_snakemake(root, config, args.cores)
    tables = root / "results" / "tables"
    results = (planted_results if args.suite == "planted" else discovery_results)(tables)
    if args.suite != "planted":
        results["screen_recall"] = screen_recall(root, config)
    print(pl.read_csv(tables / ("planted_recall.csv" if args.suite == "planted" else "discovery_recall.csv")))
    print(f"{run_name}: {summary_line(args.suite, results)}; {wall / 60:.1f} min wall")

    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    record = {
        "suite": args.suite,
        "size": args.size,
        "alone": args.alone,
        "config": config,
        "config_text": (root / config).read_text(),
        "command": f"snakemake --cores {args.cores} --configfile {config}",
        "wall_seconds": round(wall, 1),
        "profile": profile(root),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "python": platform.python_version(),
        "versions": {name: metadata.version(name) for name in VERSIONS},
        "date": stamp,
        **results,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"{run_name}_{stamp}.json"
    out.write_text(json.dumps(record, indent=1, sort_keys=True, default=str) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
