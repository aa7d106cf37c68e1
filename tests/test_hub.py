"""Hub models as localrules : which models a config downloads, the download against a Hub on
127.0.0.1 (tests/hub_server.py; the real huggingface_hub client code), and a workflow run whose scoring job
loads the downloaded RM by hub id with the hub gone."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml
from conftest import REPO, tiny_demo_config
from hub_server import HubServer, Repo

from rmexplain import downloads
from rmexplain.config import ConfigError
from rmexplain.design import Design
from rmexplain.hub import NOT_LOADED, TOKENIZER_FILES, use_local_copies


def hub_models(config: dict) -> dict:
    return downloads.hub_models(Design.from_config(config))


def hub_spec(config: dict, name: str) -> dict:
    return downloads.hub_spec(Design.from_config(config), name)


def models_for_rm(config: dict, rm: str) -> list[str]:
    return downloads.models_for_rm(Design.from_config(config), rm)


def models_for_perturb(config: dict, method: str) -> list[str]:
    return downloads.models_for_perturb(Design.from_config(config), method)


def models_for_judge(config: dict) -> list[str]:
    return downloads.models_for_judge(Design.from_config(config))


def models_for_distances(config: dict) -> list[str]:
    return downloads.models_for_distances(Design.from_config(config))


def models_for_tokens_vocabulary(config: dict, rm: str) -> list[str]:
    return downloads.models_for_tokens_vocabulary(Design.from_config(config), rm)


TINY_REPO = "rmexplain-test/tiny-deberta"
TINY_MARKER = "results/hub/rmexplain-test--tiny-deberta@main.json"
DEAD_ENDPOINT = "http://127.0.0.1:9"  # discard port: connection refused, like an offline compute node


def load(name: str) -> dict:
    return yaml.safe_load((REPO / "config" / name).read_text())


def summary(models: dict) -> dict:
    return {
        name: (m["repo_id"], m["revision"], m["allow_patterns"], m["used_by"]) for name, m in models.items()
    }


def test_paper_config_downloads_its_rms_polyjuice_and_embedding_model():
    config = load("paper.yaml")
    models = hub_models(config)
    assert summary(models) == {
        "OpenAssistant--reward-model-deberta-v3-large@main": (
            "OpenAssistant/reward-model-deberta-v3-large",
            "main",
            None,
            ["reward_models.deberta-v1.model"],
        ),
        "OpenAssistant--reward-model-deberta-v3-large-v2@main": (
            "OpenAssistant/reward-model-deberta-v3-large-v2",
            "main",
            None,
            ["reward_models.deberta-v2.model"],
        ),
        "OpenAssistant--oasst-rm-2.1-pythia-1.4b-epoch-2.5@main": (
            "OpenAssistant/oasst-rm-2.1-pythia-1.4b-epoch-2.5",
            "main",
            None,
            ["reward_models.pythia-1.4b.model"],
        ),
        "NCSOFT--Llama-3-OffsetBias-RM-8B@main": (  # App. G
            "NCSOFT/Llama-3-OffsetBias-RM-8B",
            "main",
            None,
            ["reward_models.offsetbias-8b.model"],
        ),
        "Skywork--Skywork-Reward-Llama-3.1-8B-v0.2@main": (
            "Skywork/Skywork-Reward-Llama-3.1-8B-v0.2",
            "main",
            None,
            ["reward_models.skywork-8b.model"],
        ),
        "uw-hai--polyjuice": ("uw-hai/polyjuice", None, None, ["perturb.polyjuice.model"]),
        "sentence-transformers--all-MiniLM-L6-v2": (
            "sentence-transformers/all-MiniLM-L6-v2",
            None,
            None,
            ["evaluate.embedding_model"],
        ),
    }  # the LLM is GPT-4o through the OpenAI API: nothing to download
    assert all(m["ignore_patterns"] == list(NOT_LOADED) for m in models.values())
    assert models_for_rm(config, "deberta-v1") == [
        "results/hub/OpenAssistant--reward-model-deberta-v3-large@main.json"
    ]
    assert models_for_perturb(config, "polyjuice") == ["results/hub/uw-hai--polyjuice.json"]
    assert models_for_perturb(config, "two_step") == [] and models_for_judge(config) == []
    assert models_for_distances(config) == ["results/hub/sentence-transformers--all-MiniLM-L6-v2.json"]


def test_demo_configs_download_nothing():
    assert hub_models(load("config.yaml")) == {}
    assert models_for_distances(load("config.yaml")) == []


def test_sources_patterns_and_sharing(tmp_path):
    local = tmp_path / "my-rm"
    local.mkdir()
    config = {
        "reward_models": {
            "local": {"backend": "transformers", "model": str(local)},
            "gguf": {"backend": "transformers", "model": "org/rm-GGUF", "gguf_file": "rm-q4.gguf"},
            "gguf8": {"backend": "transformers", "model": "org/rm-GGUF", "gguf_file": "rm-q8.gguf"},
            "split": {"backend": "vllm", "model": "org/rm", "revision": "abc", "tokenizer": "org/tok"},
            "served": {"backend": "remote", "url": "http://x", "model": "org/rm", "revision": "abc"},
            "chat": {"backend": "remote", "url": "http://x", "send": "messages", "model": "org/other"},
            "text": {"backend": "python", "callable": "json:loads"},
        },
        "perturb": {"methods": ["two_step"], "discover": {"enabled": False}},
        "llm": {"backend": "transformers", "model": "org/llm", "transformers": {"revision": "v1"}},
        "analysis": {"judge": {"enabled": True, "llm": {"model": "org/judge"}}},
        "evaluate": {"embedding_model": "bundled-minilm"},
        "tokens": {
            "enabled": True,
            "reward_models": ["text"],
            "vocabulary": {"text_tokenizer": "org/wordpiece"},
        },
    }
    models = hub_models(config)
    tokenizer_files = list(TOKENIZER_FILES)
    assert summary(models) == {
        # two GGUF files of one repo: one download with both files (and the tokenizer/config files)
        "org--rm-GGUF": (
            "org/rm-GGUF",
            None,
            ["rm-q4.gguf", *tokenizer_files, "rm-q8.gguf"],
            ["reward_models.gguf.model", "reward_models.gguf8.model"],
        ),
        # the remote RM only needs the tokenizer of the repo the vLLM RM loads whole: the whole repo wins
        "org--rm@abc": ("org/rm", "abc", None, ["reward_models.split.model", "reward_models.served.model"]),
        "org--tok@abc": ("org/tok", "abc", tokenizer_files, ["reward_models.split.tokenizer"]),
        "org--llm@v1": ("org/llm", "v1", None, ["llm.model"]),
        "org--judge@v1": ("org/judge", "v1", None, ["analysis.judge.llm.model"]),
        "org--wordpiece": ("org/wordpiece", None, tokenizer_files, ["tokens.vocabulary.text_tokenizer"]),
    }
    assert models["org--rm-GGUF"]["required"] == ["rm-q4.gguf", "rm-q8.gguf"]
    assert models_for_rm(config, "local") == [] and models_for_rm(config, "chat") == []
    assert models_for_rm(config, "split") == ["results/hub/org--rm@abc.json", "results/hub/org--tok@abc.json"]
    assert models_for_perturb(config, "two_step") == ["results/hub/org--llm@v1.json"]
    assert models_for_perturb(config, "rules") == []
    assert models_for_judge(config) == ["results/hub/org--judge@v1.json"]
    assert models_for_tokens_vocabulary(config, "text") == ["results/hub/org--wordpiece.json"]
    assert hub_spec(config, "org--tok@abc")["repo_id"] == "org/tok"
    with pytest.raises(ConfigError, match=r"no hub model of this config is called 'org--nope'"):
        hub_spec(config, "org--nope")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"model": "./models/missing-rm"}, r"reward_models\.a\.model: './models/missing-rm' is neither"),
        (
            {"model": "org/rm", "revision": "refs/pr/1"},
            r"reward_models\.b\.model: 'org/rm' at revision 'refs/pr/1'",
        ),
    ],
)
def test_bad_sources_name_the_key(edit, message):
    rms = {"a": {"backend": "transformers", **edit}}
    if "revision" in edit:  # two revisions that sanitise to the same marker name
        rms = {
            "a": {"backend": "transformers", "model": "org/rm", "revision": "refs_pr_1"},
            "b": {"backend": "transformers", **edit},
        }
    with pytest.raises(ConfigError, match=message):
        hub_models({"reward_models": rms, "perturb": {"methods": ["rules"]}})


DOWNLOAD = """
import json, logging, sys
from rmexplain.hub import download_model
out = []
for spec, marker in json.loads(sys.argv[1]):
    try:
        out.append(download_model(spec, marker, logging.getLogger("test")))
    except Exception as err:
        out.append({"error": type(err).__name__ + ": " + str(err)})
print(json.dumps(out))
"""


def download(specs: list[tuple[dict, str]], endpoint: str, hf_home: Path, **env: str) -> list[dict]:
    """download_model in a new process: huggingface_hub reads HF_ENDPOINT and HF_HOME at import."""
    environ = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    environ.update(HF_ENDPOINT=endpoint, HF_HOME=str(hf_home), **env)
    result = subprocess.run(
        [sys.executable, "-c", DOWNLOAD, json.dumps(specs)],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def gguf_repo(root: Path) -> Path:
    files = {
        "config.json": "{}",
        "tokenizer.json": "{}",
        "rm-q4.gguf": "q4",
        "rm-q8.gguf": "q8" * 50,
        "model.onnx": "onnx",
        "onnx/model_O4.onnx": "o4",
        "README.md": "card",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_download_fills_the_hf_cache_and_the_cache_serves_offline(tmp_path):
    repo = Repo(gguf_repo(tmp_path / "repo"))
    hf_home = tmp_path / "hf"
    spec = {
        **hub_models(
            {
                "reward_models": {
                    "q4": {
                        "backend": "transformers",
                        "model": "org/rm-GGUF",
                        "gguf_file": "rm-q4.gguf",
                        "revision": "main",
                    }
                }
            }
        )["org--rm-GGUF@main"],
    }
    missing = {**spec, "allow_patterns": ["rm-q2.gguf", *TOKENIZER_FILES], "required": ["rm-q2.gguf"]}
    with HubServer({"org/rm-GGUF": repo}) as hub:
        first, no_file, no_repo, no_rev = download(
            [
                (spec, str(tmp_path / "m.json")),
                (missing, str(tmp_path / "x.json")),
                (
                    {**spec, "repo_id": "org/absent", "used_by": ["perturb.polyjuice.model"]},
                    str(tmp_path / "x.json"),
                ),
                ({**spec, "revision": "v9"}, str(tmp_path / "x.json")),
            ],
            hub.url,
            hf_home,
        )
    snapshot = hf_home / "hub" / "models--org--rm-GGUF" / "snapshots" / repo.commit
    assert first == json.loads((tmp_path / "m.json").read_text())
    assert first["commit"] == repo.commit and first["path"] == str(snapshot)
    assert first["files"] == ["config.json", "rm-q4.gguf", "tokenizer.json"]  # not q8, README, ONNX
    assert (hf_home / "hub" / "models--org--rm-GGUF" / "refs" / "main").read_text() == repo.commit
    assert (snapshot / "rm-q4.gguf").read_text() == "q4"
    assert no_file["error"] == (
        "HubError: reward_models.q4.model: 'org/rm-GGUF' (revision main) has no file ['rm-q2.gguf']"
    )
    assert no_repo["error"].startswith("HubError: perturb.polyjuice.model: cannot download 'org/absent'")
    assert "RepositoryNotFoundError" in no_repo["error"]
    # a mistyped local path reads as a hub id: the message says where it would have been (the job's folder)
    local = Path.cwd().resolve() / "org" / "absent"
    assert no_repo["error"].endswith(f"; if 'org/absent' is a local path, nothing is at {local}")
    assert no_rev["error"].startswith(
        "HubError: reward_models.q4.model: cannot download 'org/rm-GGUF' (revision v9)"
    )
    assert "RevisionNotFoundError" in no_rev["error"]
    assert not (tmp_path / "x.json").exists()

    # Hub gone (an offline node), with and without HF_HUB_OFFLINE: the cached snapshot is found by revision.
    unreachable, offline = (
        download([(spec, str(tmp_path / "m2.json"))], DEAD_ENDPOINT, hf_home, **env)[0]
        for env in ({}, {"HF_HUB_OFFLINE": "1"})
    )
    assert unreachable["commit"] == offline["commit"] == repo.commit
    [not_cached] = download(
        [({**spec, "repo_id": "org/absent"}, str(tmp_path / "x.json"))], DEAD_ENDPOINT, hf_home
    )
    assert "cannot download 'org/absent'" in not_cached["error"], not_cached


def test_use_local_copies_sets_offline_mode_only_for_jobs_with_markers(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    log = logging.getLogger("test")
    assert use_local_copies([], log) is False and "HF_HUB_OFFLINE" not in os.environ
    assert use_local_copies([TINY_MARKER], log) is True
    assert os.environ["HF_HUB_OFFLINE"] == "1" and constants.HF_HUB_OFFLINE
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # an explicit choice is kept
    assert use_local_copies([TINY_MARKER], log) is False and not constants.HF_HUB_OFFLINE


@pytest.fixture(scope="module")
def tiny_rm(tmp_path_factory) -> Path:
    from rmexplain.score.tiny import build_deberta_rm

    return build_deberta_rm(tmp_path_factory.mktemp("tiny") / "rm", hidden=16, layers=1)


def test_paper_dry_run_schedules_downloads_before_the_jobs_that_load_models(workflow_copy, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")  # declared by the paper config (envvars:), never used here
    result = workflow_copy.snakemake("-n", "--configfile", "config/paper.yaml", check=False)
    assert result.returncode == 0, result.stderr + result.stdout
    out = result.stdout + result.stderr
    assert re.search(r"^download_model\s+7$", out, re.M), out[-3000:]  # 5 RMs, Polyjuice, MiniLM
    jobs = re.findall(r"^rule (\w+):\n    input: ([^\n]*)", out, re.M)
    for rule in ("score_originals", "score_perturbations", "embed_texts"):
        inputs = [i for r, i in jobs if r == rule]
        assert inputs and all("results/hub/" in i for i in inputs), (rule, inputs)
    polyjuice = [i for r, i in jobs if r == "perturb" and "prompts/" not in i]
    assert polyjuice and all("results/hub/uw-hai--polyjuice.json" in i for i in polyjuice)


def test_workflow_downloads_in_a_localrule_and_scoring_never_asks_the_hub(
    workflow_copy, tiny_rm, tmp_path, monkeypatch
):
    config = tiny_demo_config()
    config["reward_models"] = {
        "tiny": {
            "backend": "transformers",
            "model": TINY_REPO,
            "revision": "main",
            "input_format": "pair",
            "device": "cpu",
            "max_length": 64,
            "batch_size": 8,
        }
    }
    workflow_copy.write_config(config, "config/config.yaml")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    repo = Repo(tiny_rm)
    scores = "results/scores/harmless/originals/tiny.parquet"
    with HubServer({TINY_REPO: repo}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        run = workflow_copy.snakemake("--cores", "1", scores)
    out = run.stdout + run.stderr
    assert (
        "localrule download_model:" in out and "rule score_originals:" in out
    )  # download: where Snakemake runs
    marker = json.loads((workflow_copy.root / TINY_MARKER).read_text())
    assert marker["commit"] == repo.commit and "model.safetensors" in marker["files"]

    # Every request the hub saw came from the download (one HEAD per file, by commit): the scoring job loaded
    # the RM by hub id and revision from HF_HOME, offline (use_local_copies). Online, it sends its own HEADs;
    # on an offline node without HF_HUB_OFFLINE, it retries each file it looks for (minutes per model).
    resolved = [path for method, path in hub.requests if "/resolve/" in path]
    assert resolved and all(f"/resolve/{repo.commit}/" in path for path in resolved), hub.requests
    assert sum(method == "HEAD" for method, _ in hub.requests) == len(repo.files)
    log = (workflow_copy.root / "logs/score_originals/harmless/tiny.log").read_text()
    assert f"hub models ['{TINY_MARKER}']: HF_HUB_OFFLINE=1 (cache only)" in log, log
    frame = pl.read_parquet(workflow_copy.root / scores)
    assert frame.height == 8
    assert frame["reward_chosen"].is_finite().all() and frame["reward_rejected"].is_finite().all()
