"""An engine of several rounds, from another package, through Snakemake: its later rounds read the earlier
rounds' effects, are encoded and scored by their own jobs, and join the same table
(tests/plugins/refine_engine)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import polars as pl
import yaml
from conftest import REPO

PACKAGE = REPO / "tests" / "plugins" / "refine_engine"


def test_a_plugin_engine_runs_two_rounds_the_second_chosen_from_the_first(
    planted_base, tmp_path, monkeypatch
):
    workflow_copy = planted_base.copy(tmp_path / "run")  # the base RM trained once per session
    target = tmp_path / "site"
    copy = shutil.copytree(PACKAGE, tmp_path / PACKAGE.name)  # pip builds in the copy, not in tests/
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--target",
         str(target), str(copy)],
        check=True, capture_output=True, cwd=tmp_path,
    )  # fmt: skip
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")]))
    config = yaml.safe_load((REPO / "config" / "discovery.yaml").read_text())
    config["datasets"] = {"helpful": config["datasets"]["helpful"]}
    config["sample"] = {"n_per_seed": 8, "seeds": [0]}
    config["reward_models"] = {rm: config["reward_models"][rm] for rm in ("base", "exclamation-penalty")}
    config["analysis"]["bootstrap"] = {"n_resamples": 300}
    config["discovery"] = {"engines": ["refine"], "responses_per_feature": 12, "min_per_direction": 3}
    workflow_copy.write_config(config)
    workflow_copy.snakemake("--cores", "2", "discovered_biases", "--configfile", "config/test.yaml")

    results = workflow_copy.root / "results"
    rounds = results / "discovery" / "helpful" / "engines" / "refine"
    assert pl.read_parquet(rounds / "round1" / "edits.parquet")["feature"].unique().sort().to_list() == [
        "bold", "exclamation",
    ]  # fmt: skip
    # the penalty makes exclamation round 1's largest effect: round 2 follows it up with emoji
    assert pl.read_parquet(rounds / "round2" / "edits.parquet")["feature"].unique().to_list() == ["emoji"]
    assert (rounds / "round2" / "embeddings.parquet").is_file()  # its own encoder pass
    for rm in ("base", "exclamation-penalty"):  # and its own scoring jobs
        assert (
            results / "scores" / "helpful" / "discovery" / "refine" / "round2" / f"{rm}.parquet"
        ).is_file()
    table = pl.read_csv(results / "tables" / "discovered_biases.csv")
    penalty = table.filter(pl.col("rm") == "exclamation-penalty")
    assert sorted(penalty["feature"]) == ["bold", "emoji", "exclamation"]
    assert sorted(penalty["round"]) == [1, 1, 2]
    found = penalty.filter(pl.col("feature") == "exclamation").row(0, named=True)
    assert found["significant"] and found["effect"] < 0 and found["rank"] == 1
    edits = pl.read_parquet(results / "discovery" / "helpful" / "edits.parquet")
    assert sorted(edits["round"].unique()) == [1, 2] and set(edits["engine"]) == {"refine"}
