"""Local τ and the selection of representative examples (paper §4.2) on hand-computed cases."""

from __future__ import annotations

import math

import polars as pl
import pytest

from rmexplain.analysis.representative import (
    local_tau,
    plus_targets,
    select_examples,
    select_for_pair,
    select_for_rm,
)
from rmexplain.schemas import EXPLANATIONS, conform

LOCAL_SCHEMA = {
    "rm": pl.String,
    "comparison_id": pl.String,
    "side": pl.String,
    "plus_target": pl.String,
    "tau": pl.Float64,
    "n_attributes": pl.Int64,
}


def local(rows: list[tuple]) -> pl.DataFrame:
    """Local-τ rows (rm, comparison, side, plus_target, tau); NaN marks an undefined τ."""
    return pl.DataFrame([(*r, 3) for r in rows], schema=LOCAL_SCHEMA, orient="row")


def explanation(
    rm: str, cid: str, side: str, attribute: str, delta: float, target: str | None = None
) -> dict:
    target = target or ("chosen" if side == "plus" else "rejected")
    return {
        "dataset": "d", "rm": rm, "method": "rules", "comparison_id": cid, "seed": 0,
        "perturbation_id": f"{rm}/{cid}/{side}/{attribute}", "target": target, "side": side,
        "attribute": attribute, "variant": 0, "reward_plus": 1.0, "reward_minus": 0.0,
        "reward_perturbed": 0.0,
        "kind": "semifactual", "sf_subkind": "between", "reward_delta": delta, "agrees_with_human": True,
    }  # fmt: skip


PFR = pl.DataFrame(
    {
        "rm": ["r"] * 3,
        "side": ["plus"] * 3,
        "attribute": ["a", "b", "c"],
        "pfr": [0.9, 0.5, 0.1],
    }
)


@pytest.mark.parametrize(
    ("deltas", "tau"),
    [
        ((3.0, 2.0, 1.0), 1.0),  # same order as the PFRs
        ((1.0, 2.0, 3.0), -1.0),
        ((2.0, 2.0, 1.0), 2 / math.sqrt(6)),  # a tie in the local ranking: τ-b
        ((2.0, 2.0, 2.0), math.nan),  # constant local ranking: undefined
    ],
)
def test_local_tau_hand_computed(deltas, tau):
    rows = [explanation("r", "c1", "plus", a, d) for a, d in zip("abc", deltas, strict=True)]
    out = local_tau(conform(pl.DataFrame(rows), EXPLANATIONS, "e"), PFR)
    assert out.height == 1
    got = out.row(0, named=True)
    assert got["n_attributes"] == 3 and got["plus_target"] == "chosen"
    assert (math.isnan(got["tau"]) and math.isnan(tau)) or got["tau"] == pytest.approx(tau)


def test_local_tau_uses_only_attributes_with_a_global_pfr():
    rows = [explanation("r", "c1", "plus", a, d) for a, d in (("a", 1.0), ("b", 2.0), ("zz", 9.0))]
    out = local_tau(conform(pl.DataFrame(rows), EXPLANATIONS, "e"), PFR).row(0, named=True)
    assert out["n_attributes"] == 2 and out["tau"] == pytest.approx(-1.0)


def test_plus_target_is_read_from_either_side():
    rows = [explanation("r", "c1", "minus", "a", 1.0, target="chosen")]
    targets = plus_targets(conform(pl.DataFrame(rows), EXPLANATIONS, "e"))
    assert targets.row(0, named=True) == {"rm": "r", "comparison_id": "c1", "plus_target": "rejected"}


NAN = math.nan
TABLE = local(
    [
        ("r", "c1", "plus", "chosen", 1.0), ("r", "c1", "minus", "chosen", 0.2),  # Σ 1.2
        ("r", "c2", "plus", "chosen", 0.4), ("r", "c2", "minus", "chosen", 0.8),  # Σ 1.2 (+2e-16 in floats)
        ("r", "c3", "plus", "chosen", NAN), ("r", "c3", "minus", "chosen", 1.0),  # undefined: not eligible
        ("r", "c4", "plus", "chosen", 0.9),  # one side only: not eligible
        ("q", "c1", "plus", "chosen", 0.5), ("q", "c1", "minus", "chosen", 0.5),
        ("q", "c2", "plus", "chosen", 1.0), ("q", "c2", "minus", "chosen", -1.0),
        ("q", "c4", "plus", "rejected", 1.0),  # q and r disagree on c4
    ]
)  # fmt: skip


def test_one_rm_selection_sums_both_sides_and_breaks_ties_by_id():
    best = select_for_rm(TABLE, "r")
    assert best["comparison_id"] == "c1" and best["score"] == pytest.approx(1.2)
    assert (best["tau_1"], best["tau_2"]) == (1.0, 0.2) and best["n_eligible"] == 2
    assert select_for_rm(TABLE, "q")["comparison_id"] == "c1"  # 1.0 beats 0.0


def test_pair_selection_requires_the_same_preferred_response():
    best = select_for_pair(TABLE, "r", "q", "plus")
    # c4 would score 0.9 + 1.0 = 1.9, but r prefers chosen and q rejected there.
    assert best["comparison_id"] == "c1" and best["score"] == pytest.approx(1.5)
    assert (best["tau_1"], best["tau_2"]) == (1.0, 0.5) and best["n_eligible"] == 2
    minus = select_for_pair(TABLE, "r", "q", "minus")
    assert minus["comparison_id"] == "c1" and minus["score"] == pytest.approx(0.7)


def test_no_eligible_comparison_gives_an_empty_slot():
    best = select_for_rm(
        local([("r", "c1", "plus", "chosen", NAN), ("r", "c1", "minus", "chosen", 1.0)]), "r"
    )
    assert best == {"comparison_id": None, "score": None, "tau_1": None, "tau_2": None, "n_eligible": 0}


def test_select_examples_lists_every_slot():
    table = select_examples(TABLE, ["r", "q"], [("r", "q")])
    assert table.select("kind", "rm_a", "rm_b", "side").rows() == [
        ("rm", "r", None, None),
        ("rm", "q", None, None),
        ("pair", "r", "q", "plus"),
        ("pair", "r", "q", "minus"),
    ]
    assert table["comparison_id"].to_list() == ["c1", "c1", "c1", "c1"]
