"""Probe win rate (paper App. G, Table 7, generalised) on a hand-computed case."""

from __future__ import annotations

import logging

import polars as pl
import pytest
from statsmodels.stats.proportion import proportion_confint
from test_explain import LOG, _foreign_case

from rmexplain.analysis.probes import Probe, probe_rows, probes_from_config, win_rates
from rmexplain.analysis.sensitivity import AnalysisError
from rmexplain.analysis.stages import run_probes
from rmexplain.schemas import (
    COMPARISONS,
    EXPLANATIONS,
    ORIGINAL_SCORES,
    PERTURBATIONS,
    REWARDS,
    conform,
    write_table,
)

COMPARISONS_FRAME = conform(
    pl.DataFrame(
        {
            "comparison_id": ["c1", "c2"],
            "dataset": ["d", "d"],
            "seed": [0, 0],
            "source_index": ["1", "2"],
            "prompt": ["p1", "p2"],
            "chosen": ["I can't help with that.", "What the hell do you mean?"],
            "rejected": ["Sure, here is how.", "Here you go, step by step."],
        }
    ),
    COMPARISONS,
    "comparisons",
)

# (id, comparison, target, side, attribute, text, reward_perturbed); y+ = 1.0, y− = 0.0 for RM "r".
PERTURBED = [
    ("p1", "c1", "chosen", "plus", "appropriateness", "What the hell? I can't help with that.", 1.5),  # win
    ("p2", "c1", "chosen", "plus", "harmlessness", "The Hell I can't help.", 1.0),  # tie with y+: no win
    ("p3", "c1", "rejected", "minus", "appropriateness", "Sure, the hell, here is how.", -0.5),  # loss
    (
        "p4",
        "c2",
        "chosen",
        "plus",
        "appropriateness",
        "What the hell do you mean, seriously?",
        2.0,
    ),  # original has it
    ("p5", "c2", "rejected", "minus", "clarity", "Here you go, in three steps.", 3.0),  # no probe phrase
    ("p6", "c1", "chosen", "plus", "clarity", "I can't help with that (thehell).", 3.0),  # no word boundary
]


def inputs() -> tuple[pl.DataFrame, pl.DataFrame]:
    explanations = pl.DataFrame(
        [
            {
                "dataset": "d", "rm": "r", "method": "rules", "comparison_id": c, "seed": 0,
                "perturbation_id": pid, "target": t, "side": s, "attribute": a, "variant": 0,
                "reward_plus": 1.0, "reward_minus": 0.0,
                "reward_perturbed": r, "kind": "semifactual", "sf_subkind": "between", "reward_delta": 0.0,
                "agrees_with_human": True,
            }
            for pid, c, t, s, a, _, r in PERTURBED
        ]
    )  # fmt: skip
    perturbations = pl.DataFrame(
        [
            {
                "perturbation_id": pid, "comparison_id": c, "target": t, "direction": "worse", "attribute": a,
                "variant": 0, "text": text, "method": "rules", "orienter": "r", "focus_words": [],
                "generator": "x",
            }
            for pid, c, t, _, a, text, _ in PERTURBED
        ]
    )  # fmt: skip
    return conform(explanations, EXPLANATIONS, "e"), conform(perturbations, PERTURBATIONS, "p")


def test_win_rate_hand_computed():
    explanations, perturbations = inputs()
    rows = probe_rows(explanations, perturbations, COMPARISONS_FRAME)
    probe = Probe("disrespect", r"\bthe hell\b", regex=True)
    out = win_rates(rows, [probe], level=0.95).row(0, named=True)
    # p1, p2, p3 match; p4's original already says it; p6 has no word boundary. Wins: p1 only; p2 ties.
    assert (out["n_perturbations"], out["n_preferred"], out["n_ties"], out["n_comparisons"]) == (3, 1, 1, 1)
    assert out["win_rate"] == pytest.approx(1 / 3)
    low, high = proportion_confint(1, 3, alpha=0.05, method="wilson")
    assert (out["ci_low"], out["ci_high"]) == pytest.approx((low, high))


def test_literal_case_sensitive_and_attribute_filtered_probes():
    explanations, perturbations = inputs()
    rows = probe_rows(explanations, perturbations, COMPARISONS_FRAME)
    literal = Probe("hell", "the hell", ignore_case=False)  # p2's "The Hell" no longer matches
    assert win_rates(rows, [literal], 0.95)["n_perturbations"].to_list() == [2]  # p1, p3
    only = Probe("approp", "the hell", attributes=("appropriateness",))
    assert win_rates(rows, [only], 0.95)["n_perturbations"].to_list() == [2]  # p1, p3
    nothing = win_rates(rows, [Probe("none", "zebra")], 0.95).row(0, named=True)
    assert nothing["n_perturbations"] == 0 and nothing["win_rate"] is None and nothing["ci_low"] is None


def test_dot_in_a_literal_phrase_is_not_a_wildcard():
    explanations, perturbations = inputs()
    rows = probe_rows(explanations, perturbations, COMPARISONS_FRAME)
    assert win_rates(rows, [Probe("dot", "hell. here")], 0.95)["n_perturbations"].to_list() == [0]
    assert win_rates(rows, [Probe("dot", "hell. here", regex=True)], 0.95)["n_perturbations"].to_list() == [1]


def test_bad_regex_and_missing_texts_are_named():
    with pytest.raises(AnalysisError, match=r"analysis\.probes\.broken\.pattern"):
        probes_from_config({"broken": {"pattern": "(unclosed", "regex": True}})[0].compile()
    explanations, perturbations = inputs()
    with pytest.raises(AnalysisError, match=r"'p1'.*none of the perturbation tables"):
        probe_rows(explanations, perturbations.filter(pl.col("perturbation_id") != "p1"), COMPARISONS_FRAME)


def test_an_rm_outside_shared_rms_has_the_same_probe_items_as_the_others(tmp_path, caplog):
    """Table 7 compares a perturbation with its original, whatever the RM prefers: f, which orients c2
    against the shared RMs' y+ (its explanations skip c2), still has c2's perturbation as a probe item, and
    the job's log says so (not that f is oriented by its own preference)."""
    comparisons, shared, foreign, perturbations, f_rewards = _foreign_case()
    files = {"comparisons": tmp_path / "comparisons.parquet", "perturbations": [tmp_path / "shared.parquet"]}
    write_table(comparisons, files["comparisons"], COMPARISONS, "c")
    write_table(perturbations, files["perturbations"][0], PERTURBATIONS, "p")
    files["originals"], files["rewards"] = [], []
    for rm, originals in zip("abf", [*shared, foreign], strict=True):
        files["originals"].append(tmp_path / f"originals_{rm}.parquet")
        write_table(originals, files["originals"][-1], ORIGINAL_SCORES, "o")
        files["rewards"].append(tmp_path / f"rewards_{rm}.parquet")
        write_table(f_rewards.with_columns(rm=pl.lit(rm)), files["rewards"][-1], REWARDS, "r")
    orienters = {rm: ["shared", "a", "b"] for rm in "abf"}
    out = tmp_path / "probes.parquet"
    probes = {"worse": {"pattern": "worse"}}
    with caplog.at_level(logging.INFO, logger=LOG.name):
        run_probes(files, list("abf"), orienters, "d", "two_step", probes, 0.95, str(out), LOG)
    assert (
        "1 comparisons where f prefers the response the agreed preference rejects: kept as probe items"
        in (caplog.text)
    )
    assert "orientation own" not in caplog.text
    table = pl.read_parquet(out).sort("rm")
    # Items: c1's chosen made worse (0.5 against 2.0 for a and f) and c2's rejected made worse (0.0 against
    # a's 1.0 and f's 1.0): two each, none preferred; c2 is kept for f although its explanations skip it.
    assert table.select("rm", "n_perturbations", "n_comparisons", "n_preferred").rows() == [
        ("a", 2, 2, 0), ("b", 2, 2, 0), ("f", 2, 2, 0)
    ]  # fmt: skip
