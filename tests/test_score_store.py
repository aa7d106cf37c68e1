"""The per-RM score store (rmexplain.score.store): what identifies an RM, what is kept, and that a scoring job
asks the RM only for the texts the store lacks."""

from __future__ import annotations

import json
import logging
import multiprocessing
from pathlib import Path

import polars as pl
import pytest

from rmexplain.ids import text_id
from rmexplain.score.stages import score_originals, score_stage
from rmexplain.score.store import ScoreStore, open_store, rm_identity

LOG = logging.getLogger("test_score_store")


def counting_rm(folder: Path, per_word: float = 1.0) -> dict:
    """A python RM (reward: words × ``per_word``) that appends every response it is asked for to
    ``asked.txt`` beside it; its spec."""
    rm = folder / "rm.py"
    rm.write_text(
        "def score(prompts, responses):\n"
        f"    with open({str(folder / 'asked.txt')!r}, 'a') as asked:\n"
        "        asked.writelines(r + '\\n' for r in responses)\n"
        f"    return [{per_word} * len(r.split()) for r in responses]\n"
    )
    return {"backend": "python", "callable": f"{rm}:score"}


def asked(folder: Path) -> list[str]:
    path = folder / "asked.txt"
    return path.read_text().splitlines() if path.is_file() else []


def comparisons(folder: Path) -> str:
    frame = pl.DataFrame({"comparison_id": ["c0", "c1"], "dataset": ["d"] * 2, "seed": [0] * 2,
                          "source_index": ["0", "1"], "prompt": ["Why?", "How?"],
                          "chosen": ["Because it rains a lot", "Slowly"],
                          "rejected": ["No idea", "Like this, with care"]})  # fmt: skip
    path = folder / "comparisons.parquet"
    frame.write_parquet(path)
    return str(path)


def edits(folder: Path, texts: list[str]) -> str:
    """An attribute effects' edit table of ``texts``, every one an edit of comparison c0's chosen response."""
    n = len(texts)
    frame = pl.DataFrame({"edit_id": [f"e{i}" for i in range(n)], "comparison_id": ["c0"] * n,
                          "target": ["chosen"] * n, "attribute": ["x"] * n, "chain": ["better"] * n,
                          "round": [1] * n, "direction": ["better"] * n, "text": texts,
                          "method": ["rules"] * n, "generator": ["g"] * n})  # fmt: skip
    path = folder / "edits.parquet"
    frame.write_parquet(path)
    return str(path)


# ── identity ───────────────────────────────────────────────────────────────────────────────────────────────
def test_the_identity_follows_what_the_rm_computes_not_where_it_runs(tmp_path):
    head = tmp_path / "head.pt"
    head.write_bytes(b"weights 1")
    embeddings = tmp_path / "embeddings.parquet"
    embeddings.write_bytes(b"lookup 1")
    spec = {"backend": "demo", "train_part": "helpful", "dtype": "float32", "device": "cpu", "batch_size": 8}
    same = rm_identity(spec, {"head": str(head), "embeddings": [str(embeddings)]}, [])
    moved = {**spec, "device": "cuda", "batch_size": 64, "reference": "other", "expect": {"x": 1}}
    embeddings.write_bytes(b"lookup 2")  # the texts' embeddings are looked up, not the RM
    assert rm_identity(moved, {"head": str(head), "embeddings": [str(embeddings)]}, []) == same
    assert rm_identity({**spec, "dtype": "bfloat16"}, {"head": str(head)}, []) != same
    head.write_bytes(b"weights 2")
    assert rm_identity(spec, {"head": str(head)}, []) != same


def test_a_python_rm_is_its_callable_file_and_a_planted_rm_its_base_too(tmp_path):
    spec = counting_rm(tmp_path)
    before = rm_identity(spec, {}, [])
    (tmp_path / "rm.py").write_text((tmp_path / "rm.py").read_text() + "# changed\n")
    assert rm_identity(spec, {}, []) != before
    base = {"backend": "demo", "train_part": "helpful", "device": "cpu"}
    planted = {
        "backend": "planted",
        "base": "b",
        "bias": {"detector": "none", "noise": 0.1},
        "base_spec": base,
    }
    assert rm_identity(planted, {}, []) == rm_identity(
        {**planted, "base_spec": {**base, "device": "cuda"}}, {}, []
    )
    other_base = {**planted, "base_spec": {**base, "train_part": "harmless"}}
    assert rm_identity(other_base, {}, []) != rm_identity(planted, {}, [])


def test_a_hub_model_is_its_repository_and_commit_and_a_local_directory_its_files(tmp_path):
    marker = tmp_path / "marker.json"
    record = {
        "repo_id": "org/rm",
        "revision": "main",
        "commit": "a" * 40,
        "path": "/somewhere",
        "used_by": ["x"],
    }
    marker.write_text(json.dumps(record))
    spec = {"backend": "transformers", "model": "org/rm"}
    first = rm_identity(spec, {}, [str(marker)])
    marker.write_text(json.dumps({**record, "path": "/elsewhere", "used_by": ["x", "y"]}))  # same model
    assert rm_identity(spec, {}, [str(marker)]) == first
    marker.write_text(json.dumps({**record, "commit": "b" * 40}))
    assert rm_identity(spec, {}, [str(marker)]) != first
    marker.write_text(json.dumps({**record, "repo_id": "org/other"}))  # another repository at that commit
    assert rm_identity(spec, {}, [str(marker)]) != first
    local = tmp_path / "model"
    local.mkdir()
    (local / "model.safetensors").write_bytes(b"12345")
    local_spec = {"backend": "transformers", "model": str(local)}
    before = rm_identity(local_spec, {}, [])
    (local / "model.safetensors").write_bytes(b"123456")
    changed = rm_identity(local_spec, {}, [])
    assert changed != before
    (local / "model.safetensors").rename(local / "other.safetensors")  # the same bytes and time, renamed
    assert rm_identity(local_spec, {}, []) != changed


def test_an_artifact_given_as_a_list_is_every_file_of_it(tmp_path):
    first, second = tmp_path / "a.pt", tmp_path / "b.pt"
    first.write_bytes(b"1")
    second.write_bytes(b"2")
    spec = {"backend": "demo", "train_part": "helpful"}
    both = rm_identity(spec, {"head": [str(first), str(second)]}, [])
    assert both != rm_identity(spec, {"head": [str(first)]}, [])
    second.write_bytes(b"3")
    assert rm_identity(spec, {"head": [str(first), str(second)]}, []) != both


# ── the store ──────────────────────────────────────────────────────────────────────────────────────────────
def test_the_store_keeps_the_first_row_of_a_text_and_nulls(tmp_path):
    store = ScoreStore(tmp_path / "scores", "abc")
    store.put([("t1", 1.5, False, 512), ("t2", None, True, 512), ("t3", 2.0, None, None)])
    store.put([("t1", 9.0, True, 8)])  # scored again elsewhere: the first answer stays
    assert store.get(["t1", "t2", "t3", "t4"]) == {
        "t1": (1.5, False, 512), "t2": (None, True, 512), "t3": (2.0, None, None)
    }  # fmt: skip
    assert len(ScoreStore(tmp_path / "scores", "abc")) == 3 and (tmp_path / "scores" / "abc").is_dir()
    assert open_store(None, {"backend": "python", "callable": "x.py:f"}, {}, []) is None
    # it never drops a reward to stay under a size (diskcache's default evicts past 1 GB), and parallel
    # jobs read while one writes (write-ahead log)
    settings = store._cache
    assert (settings.eviction_policy, settings.sqlite_journal_mode) == ("none", "wal")


def _put_many(directory: str, start: int) -> None:
    store = ScoreStore(directory, "shared")
    for i in range(start, start + 200):
        store.put([(f"t{i}", float(i), False, None)])


def test_two_jobs_write_one_store_at_once(tmp_path):
    context = multiprocessing.get_context("spawn")
    jobs = [context.Process(target=_put_many, args=(str(tmp_path), start)) for start in (0, 100)]
    for job in jobs:
        job.start()
    for job in jobs:
        job.join(60)
    assert [job.exitcode for job in jobs] == [0, 0]
    assert len(ScoreStore(tmp_path, "shared")) == 300


# ── scoring jobs with a store ──────────────────────────────────────────────────────────────────────────────
def test_a_rerun_asks_the_rm_for_nothing_it_scored_and_gets_the_same_table(tmp_path):
    spec = counting_rm(tmp_path)
    path = comparisons(tmp_path)
    texts = edits(tmp_path, ["Yes it does", "It might, sometimes", "Yes it does"])
    fresh = score_stage("effects", path, [texts], "rm", spec, {}, LOG)  # no store: as before
    assert asked(tmp_path) == ["Yes it does", "It might, sometimes"]
    store = open_store(str(tmp_path / "cache"), spec, {}, [])
    first = score_stage("effects", path, [texts], "rm", spec, {}, LOG, store=store)
    assert first.equals(fresh) and len(asked(tmp_path)) == 4  # a cold store: the RM scores them alike
    again = score_stage("effects", path, [texts], "rm", spec, {}, LOG, store=store)
    assert again.equals(first) and len(asked(tmp_path)) == 4  # a rerun: nothing asked
    originals = score_originals(path, "rm", spec, {}, LOG, store=store)
    assert asked(tmp_path)[4:] == ["Because it rains a lot", "Slowly", "No idea", "Like this, with care"]
    assert originals["reward_chosen"].to_list() == [5.0, 1.0]
    assert score_originals(path, "rm", spec, {}, LOG, store=store).equals(originals)
    assert len(asked(tmp_path)) == 8


def test_only_what_the_store_lacks_goes_to_the_rm_and_nothing_when_it_lacks_nothing(tmp_path):
    spec = counting_rm(tmp_path, per_word=2.0)
    path = comparisons(tmp_path)
    store = open_store(str(tmp_path / "cache"), spec, {}, [])
    prompt = "Why?"
    store.put([(text_id(prompt, "Yes it does"), 100.0, False, None)])  # scored by an earlier run
    rewards = score_stage("effects", path, [edits(tmp_path, ["Yes it does", "No"])], "rm", spec, {}, LOG,
                                  store=store)  # fmt: skip
    assert asked(tmp_path) == ["No"]
    by_text = dict(zip(rewards["text_id"], rewards["reward"], strict=True))
    assert by_text == {text_id(prompt, "Yes it does"): 100.0, text_id(prompt, "No"): 2.0}
    gone = {"backend": "python", "callable": f"{tmp_path / 'gone.py'}:score"}  # would fail to build
    stored = ScoreStore(store.path.parent, store.path.name)
    again = score_stage("effects", path, [edits(tmp_path, ["No"])], "rm", gone, {}, LOG, store=stored)
    assert again["reward"].to_list() == [2.0] and asked(tmp_path) == ["No"]


def test_a_store_is_per_rm(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    one, two = counting_rm(tmp_path / "one"), counting_rm(tmp_path / "two", per_word=3.0)
    cache = str(tmp_path / "cache")
    path = comparisons(tmp_path)
    texts = edits(tmp_path, ["Yes it does"])
    score_stage("effects", path, [texts], "one", one, {}, LOG, store=open_store(cache, one, {}, []))
    rewards = score_stage("effects", path, [texts], "two", two, {}, LOG, store=open_store(cache, two, {}, []))
    assert rewards["reward"].to_list() == [9.0] and asked(tmp_path / "two") == ["Yes it does"]
    assert len(list(Path(cache).iterdir())) == 2


@pytest.mark.parametrize("directory", [None, "cache"])
def test_the_schema_default_is_a_store_beside_the_llm_cache_and_null_turns_it_off(directory, tmp_path):
    from rmexplain.config import check

    config = {"datasets": {"d": {"source": "embedded", "part": "helpful"}},
              "reward_models": {"r": {"backend": "demo", "train_part": "helpful"}},
              "perturb": {"methods": ["rules"]}}  # fmt: skip
    assert check(config)["scoring"] == {"cache_dir": ".rmexplain-cache/scores"}
    config["scoring"] = {"cache_dir": directory}
    assert check(config)["scoring"]["cache_dir"] == directory
