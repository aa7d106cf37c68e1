"""Each finding beside its robust fit: ``robust_effect`` and the verdict ``robust`` (docs/effects.md)."""

from __future__ import annotations

import logging

import numpy as np
import polars as pl
import pytest
from test_findings import DISCOVERED, hand_pair

from rmexplain.analysis.bootstrap import BootstrapSettings
from rmexplain.discovery.estimate import RobustAddedEffect, feature_effects
from rmexplain.effects.base import EffectInput, RewardChanges
from rmexplain.findings.landing import ROBUST_NOTE, findings_rst, robust_sentence
from rmexplain.findings.summary import (
    ROBUST_AGREES,
    ROBUST_DIFFERS,
    FindingSettings,
    attribute_findings,
    discovered_findings,
    findings_frame,
    robust_of,
)

LOG = logging.getLogger("test_findings_robust")


@pytest.mark.parametrize(
    ("effect", "robust", "significant", "verdict"),
    [
        (0.8, 0.4, True, ROBUST_AGREES),  # exactly half: agrees
        (0.8, 0.39, True, ROBUST_DIFFERS),  # under half
        (-0.8, -1.5, True, ROBUST_AGREES),  # larger is fine
        (0.8, -0.5, True, ROBUST_DIFFERS),  # the other sign
        (0.8, 0.0, True, ROBUST_DIFFERS),
        (0.8, 0.1, False, None),  # not significant: nothing said
        (0.8, float("nan"), True, None),  # no robust estimate
        (0.8, None, True, None),
        (float("nan"), 0.3, True, None),
    ],
)
def test_the_robust_fit_agrees_where_it_keeps_the_sign_and_half_the_size(
    effect, robust, significant, verdict
):
    out = robust_of(effect, robust, significant)
    assert out["robust"] == verdict
    assert out["robust_effect"] is robust or (np.isnan(out["robust_effect"]) and np.isnan(robust))


def _with_robust(effects: pl.DataFrame, robust: dict[tuple[str, str], float]) -> pl.DataFrame:
    rows = effects.filter(pl.col("attribute") != "length")
    robust_rows = rows.with_columns(
        estimator=pl.lit("robust_length_adjusted"),
        primary=pl.lit(False),
        effect=pl.Series([robust[(r, a)] for r, a in zip(rows["rm"], rows["attribute"], strict=True)]),
    )
    return pl.concat([effects, robust_rows])


def test_an_attribute_finding_reads_the_robust_estimators_row_of_its_rm_and_attribute():
    effects, changes, texts = hand_pair()
    robust = {
        ("a", "harmlessness"): 0.1,
        ("a", "clarity"): 0.3,
        ("b", "clarity"): 0.5,
        ("b", "harmlessness"): 0.2,
    }
    rows = findings_frame(
        attribute_findings(_with_robust(effects, robust), changes, texts, {}, FindingSettings())
    )
    got = {(r["rm"], r["name"]): (r["robust_effect"], r["robust"]) for r in rows.iter_rows(named=True)}
    assert got[("a", "harmlessness")] == (0.1, ROBUST_DIFFERS)  # 0.9 significant, robust 0.1
    assert got[("b", "clarity")] == (0.5, ROBUST_AGREES)
    assert got[("b", "harmlessness")] == (0.2, ROBUST_AGREES)  # 0.2 against 0.2
    assert got[("a", "clarity")] == (0.3, None)  # not significant
    assert got[("a", "length")] == (None, None)  # the robust rows here have no length row


def test_without_the_robust_estimator_or_under_another_primary_there_is_no_robust_column_value():
    effects, changes, texts = hand_pair()
    rows = findings_frame(attribute_findings(effects, changes, texts, {}, FindingSettings()))
    assert rows["robust_effect"].is_null().all() and rows["robust"].is_null().all()
    robust = dict.fromkeys(
        [("a", "harmlessness"), ("a", "clarity"), ("b", "clarity"), ("b", "harmlessness")], 0.0
    )
    two_way = _with_robust(effects, robust).with_columns(
        estimator=pl.when(pl.col("primary")).then(pl.lit("two_way")).otherwise(pl.col("estimator"))
    )
    rows = findings_frame(attribute_findings(two_way, changes, texts, {}, FindingSettings()))
    assert rows["robust_effect"].is_null().all()


def test_a_discovered_feature_carries_its_tables_robust_effect():
    table = DISCOVERED.with_columns(robust_effect=pl.Series([-0.05, -0.6, 0.01]))
    rows = findings_frame(discovered_findings(table, {}, FindingSettings()))
    got = {r["name"]: (r["robust_effect"], r["robust"]) for r in rows.iter_rows(named=True)}
    assert got["opener:affirmative"] == (-0.05, ROBUST_DIFFERS)  # +0.4 significant, robust the other sign
    assert got["markdown:headers"] == (-0.6, ROBUST_AGREES)
    assert got["spacing:double"] == (0.01, None)  # q 0.8


def test_the_landing_says_so_only_where_a_few_edits_make_a_finding():
    effects, changes, texts = hand_pair()
    robust = {
        ("a", "harmlessness"): -0.02,
        ("a", "clarity"): 0.3,
        ("b", "clarity"): 0.5,
        ("b", "harmlessness"): 0.2,
    }
    rows = findings_frame(
        attribute_findings(_with_robust(effects, robust), changes, texts, {}, FindingSettings())
    )
    block = findings_rst(rows, ["d"], ["a", "b"], 0.95, "1. Findings", None).replace("\\", "")
    sentence = (
        "A few edits far from the rest make it: Huber's robust fit, which weighs them less, gives −0.02."
    )
    assert f"**{sentence}**" in block and block.count("Huber's robust fit, which") == 1
    assert ROBUST_NOTE.strip() in block
    agreeing = rows.with_columns(robust=pl.lit(ROBUST_AGREES), robust_effect=pl.lit(0.9))
    block = findings_rst(agreeing, ["d"], ["a", "b"], 0.95, "1. Findings", None)
    assert "Huber" not in block  # neither the sentence nor the note
    assert robust_sentence({"robust": None, "robust_effect": 0.1}) is None


def test_a_feature_that_one_comparisons_edits_make_has_a_robust_effect_near_the_rest():
    # 12 comparisons, a feature added and removed on each; the RM: +0.1 per instance, noise, no length;
    # comparison 0 (a one-word response) moves 6 sd each way
    rng = np.random.default_rng(3)
    n = 12
    comparison = np.repeat(np.arange(n), 2)
    direction = np.tile([1, -1], n)
    y = 0.1 * direction + 0.02 * rng.standard_normal(2 * n)
    y[comparison == 0] += 6.0 * direction[comparison == 0]
    data = EffectInput(
        comparisons=[f"c{i:02d}" for i in range(n)],
        attributes=["feature"],
        comparison=comparison,
        attribute=np.zeros(2 * n, dtype=np.int64),
        direction=direction,
        round=np.ones(2 * n, dtype=np.int64),
        chain=direction,
        length_change=rng.standard_normal(2 * n),
        rms={"rm": RewardChanges(y, 1.0, *(np.zeros(0),) * 4)},
    )
    (row,) = feature_effects(data, "rm", None, BootstrapSettings(n_resamples=50), 0.1, LOG)
    estimator = RobustAddedEffect()
    by_itself = estimator.estimate(estimator.observations(data, "rm", None), np.ones((1, n)), n, 1)[0, 0]
    assert row["robust_effect"] == pytest.approx(by_itself, abs=1e-12)
    assert row["effect"] > 0.5  # least squares: (11 × 0.1 + 6.1) / 12
    assert row["robust_effect"] == pytest.approx(0.1, abs=0.03)
    assert robust_of(row["effect"], row["robust_effect"], True)["robust"] == ROBUST_DIFFERS
