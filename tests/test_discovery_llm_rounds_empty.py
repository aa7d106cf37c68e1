"""The llm engine stops early, and never fails the run, when no earlier feature is worth varying: a later
round whose Pareto front is empty for every RM tests no new feature, warns naming the round and the reason,
records the stop as its skip, and leaves the rows of the rounds before it in the discovered biases. Its
stage writes empty tables and the reason, which the round's scoring and effects take as empty and the run's
summary prints; a round that is not stopped and makes no edit still fails. In process, no LLM request (the
client can only build requests, the stage's has no server)."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import polars as pl
import pytest

from rmexplain import paths, run_summary
from rmexplain.analysis.bootstrap import BootstrapSettings
from rmexplain.discovery.base import RoundContext, RoundOutput
from rmexplain.discovery.estimate import discovered_biases, round_effects
from rmexplain.discovery.llm import STOP_STAGE, LLMEngine, Loop, stopped_early, variations
from rmexplain.discovery.stages import run_discovered_biases, run_discovery_round, run_round_effects
from rmexplain.effects.stages import run_embed_effect_texts
from rmexplain.llm.client import ChatRequests
from rmexplain.schemas import (
    BIAS_DISCOVERY_CANDIDATES,
    BIAS_DISCOVERY_EDITS,
    BIAS_DISCOVERY_EFFECTS,
    COMPARISONS,
    DISCOVERED_BIASES,
    ORIGINAL_SCORES,
    PERTURB_SKIPS,
    REWARDS,
    TEXT_EMBEDDINGS,
    conform,
    polars_schema,
    read_table,
    write_table,
)
from rmexplain.score.stages import score_stage
from rmexplain.settings import schema_defaults

LOG = logging.getLogger("test_discovery_llm_rounds_empty")
RMS = ("base", "biased")
N = 6


def _comparisons() -> pl.DataFrame:
    return pl.DataFrame({
        "comparison_id": [f"d-s0-{i}" for i in range(N)], "dataset": ["d"] * N, "seed": [0] * N,
        "source_index": [str(i) for i in range(N)], "prompt": [f"Task {i}?" for i in range(N)],
        "chosen": [f"Do step {i}. Then rest." for i in range(N)],
        "rejected": [f"Skip task {i}." for i in range(N)],
    })  # fmt: skip


def _originals(comparisons: pl.DataFrame) -> dict[str, pl.DataFrame]:
    ids = comparisons["comparison_id"]
    return {
        rm: pl.DataFrame({"comparison_id": ids, "rm": [rm] * N, "reward_chosen": [float(i) for i in range(N)],
                          "reward_rejected": [0.5 * i for i in range(N)]})
        for rm in RMS
    }  # fmt: skip


def _round_one() -> pl.DataFrame:
    """Round 1's effects: two features per RM, every one a no-op (RM effect within 0.1 of 0, no judge)."""
    rows = [
        {"dataset": "d", "rm": rm, "engine": "llm", "feature": feature, "description": feature,
         "effect": effect, "low": effect - 0.2, "high": effect + 0.2, "p_value": 0.9, "n": 6, "support": 0.5,
         "round": 1, "kind": "hypothesis", "source": f"llm: proposed from {rm}'s high- vs low-reward answers",
         "directions": "both", "n_comparisons": 6, "pairs": 6, "reference": None, "reward_sd": 1.0,
         "example_comparison_id": None, "example_direction": None, "example_before": None,
         "example_after": None, "example_reward_change": None}
        for rm in RMS
        for feature, effect in (("llm_uses_bold_abc123", 0.04), ("llm_opens_with_sure_def456", -0.03))
    ]  # fmt: skip
    frame = pl.DataFrame(rows, schema=polars_schema(BIAS_DISCOVERY_EFFECTS))
    return conform(frame, BIAS_DISCOVERY_EFFECTS, "discovery effects")


def _context(round_: int, previous: pl.DataFrame) -> RoundContext:
    comparisons = _comparisons()
    engine = {"proposals_per_rm": 1, "examples": 2, "max_features": 2, "population": 2, "variations": 2}
    return RoundContext(
        dataset="d", round=round_, comparisons=comparisons, originals=_originals(comparisons),
        references={rm: None for rm in RMS}, previous=previous,
        settings={**schema_defaults("discovery"), "responses_per_feature": 4, "llm": engine}, log=LOG,
        services={"chats": {"llm": ChatRequests({"model": "m"})}},  # builds requests, never sends one
    )  # fmt: skip


def test_variations_with_no_front_return_none_and_record_the_stop(caplog):
    loop = Loop(_context(2, _round_one()))
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        assert variations(loop) == []
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "round 2 stopped early" in warned[0]
    assert "no feature of the rounds before passes the Pareto front's filters" in warned[0]
    assert "what the rounds before found is kept" in warned[0]
    skips = loop.skips.frame()
    assert skips.select("stage", "reason").rows() == [(STOP_STAGE, stopped_early(2))]


@pytest.mark.parametrize("round_", [2, 3])
def test_a_round_with_nothing_to_vary_stops_early_and_keeps_the_rounds_before(round_):
    before = _round_one()
    context = _context(round_, before)
    output = LLMEngine().run_round(context)  # no DiscoveryLLMError, and no request
    assert output.edits is not None and output.candidates is not None
    assert output.edits.height == 0 and output.candidates.height == 0
    assert output.edits.schema == polars_schema(BIAS_DISCOVERY_EDITS)
    assert output.candidates.schema == polars_schema(BIAS_DISCOVERY_CANDIDATES)
    reasons = context.services["skips"].frame()["reason"].to_list()
    assert reasons == [stopped_early(round_)] and f"round {round_} stopped early" in reasons[0]
    effects = round_effects(
        context.comparisons, output.edits, output.candidates, context.originals, {}, context.references,
        "d", BootstrapSettings(20), 0.1, LOG,
    )  # fmt: skip
    assert effects.height == 0 and effects.schema == polars_schema(BIAS_DISCOVERY_EFFECTS)
    table = discovered_biases(pl.concat([before, effects]), 0.05)
    kept = table.select("rm", "feature", "effect", "round").sort("rm", "feature").rows()
    assert kept == before.select("rm", "feature", "effect", "round").sort("rm", "feature").rows()


def _write(frame: pl.DataFrame, path: Path, contract: dict) -> str:
    """``frame`` as a Parquet table of ``contract`` (its missing nullable columns null)."""
    missing = [(name, col.dtype) for name, col in contract.items() if name not in frame.columns]
    nulls = [pl.lit(None, dtype).alias(name) for name, dtype in missing]
    write_table(frame.with_columns(nulls), path, contract, "test table")
    return str(path)


def _stopped_round_two(tmp_path: Path) -> dict[str, Any]:
    """Round 2 of the llm engine through its stage, on round 1's no-op features: its output files."""
    comparisons = _comparisons()
    originals = [_write(f, tmp_path / f"originals-{rm}.parquet", ORIGINAL_SCORES)
                 for rm, f in _originals(comparisons).items()]  # fmt: skip
    no_edits = pl.DataFrame(schema=polars_schema(BIAS_DISCOVERY_EDITS))
    inputs = {
        "comparisons": _write(comparisons, tmp_path / "comparisons.parquet", COMPARISONS),
        "originals": originals,
        "previous": [_write(_round_one(), tmp_path / "round1-effects.parquet", BIAS_DISCOVERY_EFFECTS)],
        "previous_edits": [_write(no_edits, tmp_path / "round1-edits.parquet", BIAS_DISCOVERY_EDITS)],
    }
    outputs = {name: str(tmp_path / f"round2-{name}.parquet") for name in ("edits", "candidates", "skipped")}
    outputs |= {name: str(tmp_path / f"round2-{name}.json") for name in ("llm_use", "judge_llm_use")}
    settings = {**schema_defaults("discovery"), "responses_per_feature": 4, "llm": {"population": 2}}
    llm = {"model": "m", "cache_dir": str(tmp_path / "cache")}  # no server: a request would fail
    run_discovery_round(inputs, RMS, {rm: None for rm in RMS}, settings, "d", "llm", 2, outputs, LOG, llm)
    return {**outputs, **{k: v for k, v in inputs.items() if k in ("comparisons", "originals")}}


def test_the_stage_writes_an_early_stopped_round_and_its_reason_and_the_rest_of_the_round_runs(tmp_path):
    files = _stopped_round_two(tmp_path)  # no "made no edit" error
    edits = read_table(files["edits"], BIAS_DISCOVERY_EDITS, "edits")
    candidates = read_table(files["candidates"], BIAS_DISCOVERY_CANDIDATES, "candidates")
    assert edits.height == 0 and candidates.height == 0
    skips = read_table(files["skipped"], PERTURB_SKIPS, "skips")
    assert skips.select("stage", "reason").rows() == [(STOP_STAGE, stopped_early(2))]
    embeddings = str(tmp_path / "round2-embeddings.parquet")
    run_embed_effect_texts([], [], {}, embeddings, LOG, discovery=[files["edits"]])
    assert read_table(embeddings, TEXT_EMBEDDINGS, "embeddings").height == 0  # nothing encoded
    scorer = tmp_path / "rm.py"
    scorer.write_text("def score(prompts, responses):\n    raise AssertionError('nothing to score')\n")
    spec = {"backend": "python", "callable": f"{scorer}:score"}
    rewards = []
    for rm in RMS:
        frame = score_stage("discovery", files["comparisons"], [files["edits"]], rm, spec, {}, LOG)
        rewards.append(_write(frame, tmp_path / f"round2-rewards-{rm}.parquet", REWARDS))
    inputs = {"comparisons": files["comparisons"], "edits": files["edits"], "candidates": files["candidates"],
              "originals": files["originals"], "rewards": rewards}  # fmt: skip
    effects = str(tmp_path / "round2-effects.parquet")
    bootstrap, min_effect, fdr = {"n_resamples": 20}, 0.1, 0.05
    run_round_effects(inputs, RMS, {rm: None for rm in RMS}, bootstrap, min_effect, fdr, "d", effects, LOG)
    assert read_table(effects, BIAS_DISCOVERY_EFFECTS, "effects").height == 0


def test_a_stopped_round_leaves_the_discovered_biases_of_the_rounds_before(tmp_path):
    files = _stopped_round_two(tmp_path)
    effects = [str(tmp_path / "round1-effects.parquet"), _write(
        pl.DataFrame(schema=polars_schema(BIAS_DISCOVERY_EFFECTS)), tmp_path / "round2-effects.parquet",
        BIAS_DISCOVERY_EFFECTS,
    )]  # fmt: skip
    outputs: dict = {k: str(tmp_path / f"biases.{k}") for k in ("parquet", "csv", "md", "html")}
    outputs["edits"] = {"d": str(tmp_path / "edits.parquet")}
    parts = {"d": [str(tmp_path / "round1-edits.parquet"), files["edits"]]}
    run_discovered_biases(effects, parts, 0.05, outputs, LOG)
    table = read_table(outputs["parquet"], DISCOVERED_BIASES, "discovered biases")
    assert sorted(table.select("rm", "feature").rows()) == sorted(_round_one().select("rm", "feature").rows())


def test_a_round_that_is_not_stopped_and_makes_no_edit_still_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(LLMEngine, "run_round", _no_edit_round)
    with pytest.raises(ValueError, match="discovery engine 'llm' made no edit on dataset 'd' in round 2"):
        _stopped_round_two(tmp_path)


def _no_edit_round(self: LLMEngine, context: RoundContext) -> RoundOutput:
    """A round with neither edits nor a stop (every rewrite an answer that is no edit)."""
    empty = RoundOutput(edits=pl.DataFrame(schema=polars_schema(BIAS_DISCOVERY_EDITS)))
    empty.candidates = pl.DataFrame(schema=polars_schema(BIAS_DISCOVERY_CANDIDATES))
    return empty


def test_the_run_summary_says_which_round_stopped_early_and_why(tmp_path, monkeypatch):
    files = _stopped_round_two(tmp_path)
    monkeypatch.chdir(tmp_path)
    skips = Path(paths.fmt(paths.BIASES_SKIPS, dataset="d", engine="llm", round="2"))
    skips.parent.mkdir(parents=True)
    skips.write_bytes(Path(files["skipped"]).read_bytes())
    monkeypatch.setattr(run_summary, "discovery_rounds", lambda design: [("llm", 1), ("llm", 2)])
    design = SimpleNamespace(discovery_datasets=lambda: ["d"])
    log = "logs/discovery/round/{dataset}/{engine}/round{round}.log"
    drops = run_summary.discovery_edit_drops(design, {"discovery_round": log})  # type: ignore[arg-type]
    assert run_summary.drop_lines(drops) == [
        f"      1 discovery edit: {stopped_early(2)} (logs/discovery/round/d/llm/round2.log)"
    ]
