"""Hostile inputs to the attribute effects and the scoring stage: originals all of one length, a single pair,
and a python RM that returns None — each a stated warning or a message naming what is wrong, not a crash, a
NaN or a silent "significant"."""

from __future__ import annotations

import logging

import numpy as np
import polars as pl
import pytest
from test_score_lengths import _comparisons

from rmexplain.analysis.bootstrap import BootstrapSettings
from rmexplain.attributes import PAPER_ATTRIBUTES
from rmexplain.effects.analysis import EffectSettings, effect_input, effects_table
from rmexplain.effects.base import EffectInput
from rmexplain.effects.edits import make_effect_edits
from rmexplain.ids import text_id
from rmexplain.score.base import ScoringError, build_scorer
from rmexplain.score.stages import score_originals

LOG = logging.getLogger("test_hostile_effects_scores")
ATTRIBUTES = {a: PAPER_ATTRIBUTES[a] for a in ("verbosity", "assertiveness", "relevance")}
SETTINGS = EffectSettings(
    ("two_way", "length_adjusted"), "length_adjusted", BootstrapSettings(n_resamples=100)
)
PROMPTS = ("How do I boil an egg?", "Can you help me pick a lock?")
CHOSEN = (
    "Boil it for about 6 minutes, then cool it in ice water so it peels easily.",
    "I can't help with that; if you're locked out, call a licensed locksmith.",
)
REJECTED = ("Just boil it.", "Sure, just jam a pin in it and wiggle until it opens.")


def _pairs(seeds: list[int], n: int, one_length: bool = False) -> pl.DataFrame:
    """``n`` pairs of dataset ``d`` drawn by every seed of ``seeds`` (ids ``d-s{seed}-{pair}``); with
    ``one_length`` every response is five words."""
    rows = [
        {
            "comparison_id": f"d-s{seed}-{pair}",
            "dataset": "d",
            "seed": seed,
            "source_index": str(pair),
            "prompt": f"{PROMPTS[pair % 2]} (case {pair})",
            "chosen": "one two three four five" if one_length else CHOSEN[pair % 2],
            "rejected": "six seven eight nine ten" if one_length else REJECTED[pair % 2],
        }
        for seed in seeds
        for pair in range(n)
    ]
    return pl.DataFrame(rows)


def _wobbly(text: str) -> float:
    """A reward of the words, the characters and a text-seeded wobble: effects with spread to resample."""
    return -0.1 * len(text.split()) + 0.01 * (sum(map(ord, text)) % 97)


def _input(comparisons: pl.DataFrame) -> EffectInput:
    """The effect input of the ``rules`` edits of ``comparisons``, scored by ``_wobbly`` (RM ``r``)."""
    edits, _ = make_effect_edits(comparisons, "rules", "rules", {}, ATTRIBUTES, {}, False, LOG)
    prompts = dict(zip(comparisons["comparison_id"], comparisons["prompt"], strict=True))
    rows = [
        (text_id(prompts[c], t), _wobbly(t)) for c, t in edits.select("comparison_id", "text").iter_rows()
    ]
    rewards = pl.DataFrame(rows, schema={"text_id": pl.String, "reward": pl.Float64}, orient="row")
    originals = comparisons.select(
        "comparison_id",
        pl.col("chosen").map_elements(_wobbly, pl.Float64).alias("reward_chosen"),
        pl.col("rejected").map_elements(_wobbly, pl.Float64).alias("reward_rejected"),
    )
    return effect_input(comparisons, edits, {"r": originals}, {"r": rewards}, {}, list(ATTRIBUTES))


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOG.name and r.levelno == logging.WARNING]


def _effects(table: pl.DataFrame, estimator: str) -> dict[str, float]:
    rows = table.filter(pl.col("estimator") == estimator).select("attribute", "effect").rows()
    return dict(rows)


def test_originals_of_one_length_give_effects_not_length_adjusted_with_a_warning(caplog):
    """Every original five words: no sd to measure length changes in. The length changes are 0 (not ±inf),
    the length row is undefined, every attribute's length-adjusted effect is its two-way effect (γ = 0), and
    a warning names the RM and the dataset and says the effects are NOT length-adjusted."""
    data = _input(_pairs([0], n=4, one_length=True))
    assert not data.length_measured and data.length_change.tolist() == [0.0] * data.length_change.size
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        table = effects_table(data, ["r"], {}, SETTINGS, LOG)
    adjusted, two_way = _effects(table, "length_adjusted"), _effects(table, "two_way")
    assert np.isnan(adjusted.pop("length"))
    assert adjusted == pytest.approx(two_way, abs=1e-9) and np.isfinite(list(adjusted.values())).all()
    assert _warnings(caplog) == [
        "RM 'r' on dataset 'd', length_adjusted: the length sensitivity γ is undefined (the original "
        "responses all have one length in words); the attributes' effects are estimated without the length "
        "adjustment (γ = 0) and are NOT length-adjusted"
    ]


def test_originals_of_several_lengths_are_measured_and_warn_nothing(caplog):
    """Valid data: the length changes are the words changed over the originals' word-count sd, as before
    (six pairs: at least the five a significant row needs)."""
    data = _input(_pairs([0], n=6))
    assert data.length_measured and np.isfinite(data.length_change).all() and np.any(data.length_change)
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        table = effects_table(data, ["r"], {}, SETTINGS, LOG)
    assert not _warnings(caplog) and table["low"].is_finite().all() and table["significant"].any()


@pytest.mark.parametrize(
    ("seeds", "said"),
    [([0], "1 pair (minimum 2)"), ([0, 1, 2], "1 pair, 3 comparisons (minimum 2)")],
    ids=["one comparison", "three copies of one pair"],
)
def test_one_pair_gives_no_interval_and_nothing_significant(seeds, said, caplog):
    """One comparison, or every comparison a copy of one pair: one cluster, nothing to resample. The
    effects stay (point estimates); every interval is NaN, no row is significant, and a warning says why."""
    data = _input(_pairs(seeds, n=1))
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        table = effects_table(data, ["r"], {}, SETTINGS, LOG)
    assert table.filter(pl.col("attribute") != "length")["effect"].is_finite().all()
    assert table["low"].is_nan().all() and table["high"].is_nan().all()
    assert not table["significant"].any()
    assert _warnings(caplog)[-1] == (
        f"dataset 'd': too few comparisons to say: {said}; the effects are point estimates with no interval "
        "(low and high NaN) and none is significant"
    )


NONE_RM = """
def score(prompts, responses):
    return [None if "None" in r else float(len(r)) for r in responses]


def nothing(prompts, responses):
    return None
"""


def test_a_python_rm_returning_none_rewards_names_the_rm_its_callable_and_the_comparisons(tmp_path):
    (tmp_path / "none_rm.py").write_text(NONE_RM)
    callable_ = f"{tmp_path / 'none_rm.py'}:score"
    spec = {"backend": "python", "callable": callable_, "batch_size": 2}
    comparisons = _comparisons(tmp_path, ("fine", "None here", "ok"), ("a", "b", "None too"))
    with pytest.raises(ScoringError) as err:
        score_originals(comparisons, "nones", spec, {}, LOG)
    assert str(err.value) == (
        f"reward_models.nones: its callable {callable_!r} returned None for 2 of 6 inputs from "
        f"{comparisons}: c2 (chosen), c3 (rejected)"
    )


def test_a_python_rm_returning_none_for_a_batch_names_every_row(tmp_path):
    (tmp_path / "none_rm.py").write_text(NONE_RM)
    callable_ = f"{tmp_path / 'none_rm.py'}:nothing"
    spec = {"backend": "python", "callable": callable_, "batch_size": 2}
    comparisons = _comparisons(tmp_path, ("fine",), ("a",))
    message = r"^reward_models\.nones: its callable '.*:nothing' returned None for 2 of 2 inputs from .*: "
    with pytest.raises(ScoringError, match=message + r"c1 \(chosen\), c1 \(rejected\)$"):
        score_originals(comparisons, "nones", spec, {}, LOG)
    # the backend on its own names its input rows
    scorer = build_scorer("nones", spec)
    with pytest.raises(ScoringError, match=r"^reward model 'nones': its callable .* returned None for input "
                       r"rows \[0, 1, 2\]$"):  # fmt: skip
        scorer.score(["q"] * 3, ["a", "b", "c"])
