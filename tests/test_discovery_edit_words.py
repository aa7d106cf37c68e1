"""Round 2's words the attribute edits change (rmexplain.discovery.edit_words): the screen by hand, what it
leaves out, the order it takes them in, and the offline engine's later round that tests them."""

from __future__ import annotations

import logging

import numpy as np
import polars as pl
import pytest

from rmexplain.discovery.base import RoundContext
from rmexplain.discovery.classes import LongWords
from rmexplain.discovery.edit_words import EDIT_SCHEMA, edit_word_candidates, one_long_word_class, strongest
from rmexplain.discovery.mining import ScreenSettings
from rmexplain.discovery.offline import NOTHING_TO_TEST, OfflineEngine
from rmexplain.schemas import BIAS_DISCOVERY_EFFECTS, polars_schema
from rmexplain.settings import schema_defaults

LOG = logging.getLogger("test.edit_words")
SOURCES = [
    f"Step {name} is done." for name in ("one", "two", "three", "four", "five", "six", "seven", "eight")
]
INSERTS = {  # what each edit appends; the RM rewards "please" (+1 per instance) and nothing else
    "a": " Please be careful.",
    "b": " Please keep it safe.",
    "c": " Always check twice.",
    "d": " Always check twice.",
    "e": " Be careful, you know.",
    "f": " Keep it dry.",
    "g": " Please, really.",
    "h": " Keep it dry.",
}
NOISE = [0.05, -0.03, 0.02, -0.04, 0.01, 0.03, -0.02, -0.02]  # a residual each, so the t is finite


def edits(rms: dict[str, dict[str, float]] | None = None) -> pl.DataFrame:
    """Eight attribute edits (one per source) appending ``INSERTS``, with each RM's change: by default one
    RM, +1 for each "please" the edit adds, 0.1 per word it adds and ``NOISE``."""
    rows = []
    for rm in sorted(rms or {"rm": {}}):
        for (edit, insert), source, noise in zip(INSERTS.items(), SOURCES, NOISE, strict=True):
            change = (rms or {}).get(rm, {}).get(edit)
            words = len(insert.split())
            y = change if change is not None else insert.lower().count("please") + 0.1 * words + noise
            rows.append({"rm": rm, "edit_id": edit, "source_text": source, "edited_text": source + insert,
                         "effect_change": y, "words_change": words})  # fmt: skip
    return pl.DataFrame(rows, schema=EDIT_SCHEMA)


def names(chosen) -> list[str]:
    return [feature.name for feature, _, _ in chosen]


def test_the_word_the_changes_single_out_comes_first_with_its_t_by_hand():
    """ "please" (in 3 edits, +1 each beside 0.1 per word) leads; its t is the t of x in y ~ 1 + x + Δwords by
    numpy's least squares; a word in fewer than three edits ("safe", "dry" in two) is no candidate."""
    frame = edits()
    chosen = edit_word_candidates(frame, set(), ScreenSettings(max_candidates=30, per_rm=15, min_support=3))
    assert names(chosen)[0] == 'words "please"'
    assert 'words "safe"' not in names(chosen) and 'words "dry"' not in names(chosen)
    x = np.array([insert.lower().count("please") for insert in INSERTS.values()], dtype=float)
    words = frame["words_change"].to_numpy().astype(float)
    y = frame["effect_change"].to_numpy()
    design = np.column_stack([np.ones(8), x, words])
    beta = np.linalg.lstsq(design, y, rcond=None)[0]
    sigma2 = float(np.sum((y - design @ beta) ** 2)) / (8 - 3)
    se = np.sqrt(sigma2 * np.linalg.inv(design.T @ design)[1, 1])
    assert chosen[0][1] == "rm" and chosen[0][2] == pytest.approx(beta[1] / se)


def test_a_word_of_a_class_a_word_tested_before_and_the_caps_leave_words_out():
    """A second-person word ("you") is its class's, tested always: no candidate even where one edit is
    support enough, as it is for "know"; "please" was tested in round 1; per_rm takes the strongest only."""
    frame = edits()
    chosen = edit_word_candidates(frame, {'words "please"'}, ScreenSettings(30, 15, 1))
    assert 'words "please"' not in names(chosen) and 'words "you"' not in names(chosen)
    assert 'words "know"' in names(chosen)
    assert len(edit_word_candidates(frame, set(), ScreenSettings(30, 1, 3))) == 1
    assert edit_word_candidates(frame, set(), ScreenSettings(0, 15, 3)) == []
    assert edit_word_candidates(frame.clear(), set(), ScreenSettings(30, 15, 3)) == []


def test_words_that_change_together_are_all_taken_and_the_rms_take_turns():
    """ "always", "check" and "twice" are always inserted together: they tie (to the rounding of their t) and
    are taken by name, each tested on its own (no two merged, so the one an RM rewards is tested alone). Two
    RMs, two words each, taken in turn by RM name: a's "please", b's "always", a's "always" (taken: passed
    over), b's "check"."""
    together = {"c": 1.0, "d": 1.0}  # rm "b" rewards the sentence "Always check twice."
    b = {k: together.get(k, 0.0) + n for k, n in zip(INSERTS, NOISE, strict=True)}
    chosen = edit_word_candidates(edits({"a": {}, "b": b}), set(), ScreenSettings(30, 2, 2))
    assert [(feature.name, rm) for feature, rm, _ in chosen] == [
        ('words "please"', "a"),
        ('words "always"', "b"),
        ('words "check"', "b"),
    ]


def test_the_strongest_words_by_t_to_its_rounding_then_by_the_word():
    """|t| decides (1.8 before 1.2, whatever the names), equal to 9 decimals it ties and the word decides; a
    t of exactly 0 is no candidate however few the others."""
    vocabulary = ["alpha", "beta", "omega", "zero"]
    t = np.array([1.2, -1.2 - 1e-12, 1.8, 0.0])
    assert strongest(t, vocabulary, 4) == [(2, 1.8), (0, 1.2), (1, -1.2 - 1e-12)]
    assert strongest(np.array([1.2, 1.2000001, 0.0, 0.0]), vocabulary, 1) == [(1, 1.2000001)]
    assert strongest(np.zeros(4), vocabulary, 4) == []


def test_a_deleted_word_counts_against_the_words_the_edit_keeps():
    """An edit that drops "sadly" (x = −1), or one of two (2 → 1: x = −1, not +3), raises an RM that
    penalises it: its t is negative, the word penalised, whatever else the edits keep."""
    sources = ["Sadly, it broke.", "Sadly, sadly, it broke.", "Sadly, it tore badly.", "It broke.",
               "It tore badly.", "Go.", "Stop it."]  # fmt: skip
    edited = [
        "It broke.",
        "Sadly, it broke.",
        "It tore.",
        "It broke now.",
        "It tore.",
        "Go now, then.",
        "Stop.",
    ]
    changes = [1.0, 1.02, 0.97, 0.01, -0.02, 0.0, 0.01]
    rows = [
        {"rm": "rm", "edit_id": f"e{i}", "source_text": s, "edited_text": e, "effect_change": y,
         "words_change": len(e.split()) - len(s.split())}
        for i, (s, e, y) in enumerate(zip(sources, edited, changes, strict=True))
    ]  # fmt: skip
    chosen = edit_word_candidates(pl.DataFrame(rows, schema=EDIT_SCHEMA), set(), ScreenSettings(30, 15, 3))
    feature, _, t = chosen[0]
    assert feature.name == 'words "sadly"' and t < 0


LONG_INSERTS = [  # each edit's appended sentence; an RM of +1 per word of ten letters or more
    " Consideration matters.", " Be careful, always.", " Transportation is available.", " Keep it dry.",
    " Remarkable work.", " Delicious food.", " Wonderful idea.", " Understanding helps.", " Be kind.",
]  # fmt: skip


def long_word_edits(noise: float) -> pl.DataFrame:
    """One edit per ``LONG_INSERTS`` appending it; an RM of +1 per word of ten letters or more, 0.1 per word
    and ``noise`` times a fixed residual."""
    rows = []
    for i, insert in enumerate(LONG_INSERTS):
        source = f"Step {i} is done."
        longs = sum(len(w.strip(".,")) >= 10 for w in insert.split())
        y = longs + 0.1 * len(insert.split()) + noise * (-1) ** i * (i % 3)
        rows.append({"rm": "rm", "edit_id": f"e{i}", "source_text": source, "edited_text": source + insert,
                     "effect_change": y, "words_change": len(insert.split())})  # fmt: skip
    return pl.DataFrame(rows, schema=EDIT_SCHEMA)


@pytest.mark.parametrize("noise", [0.02, 0.0])
def test_a_class_of_long_words_is_screened_beside_the_words_one_threshold_per_rm(noise):
    """No long word is in three edits, so none is a candidate alone; their class is. Of the nested classes
    the RM's own (ten letters: "remarkable" in, "delicious" out) has the largest |t| and is the one taken,
    tested as a class — without noise too, where it fits the changes exactly (t infinite, not 0); a class
    tested before is passed over."""
    frame = long_word_edits(noise)
    chosen = edit_word_candidates(frame, set(), ScreenSettings(30, 15, 3))
    longs = [(feature, t) for feature, _, t in chosen if isinstance(feature, LongWords)]
    assert [(feature.name, feature.letters) for feature, _ in longs] == [("words of 10 letters or more", 10)]
    assert names(chosen)[0] == "words of 10 letters or more" and longs[0][1] > 0
    assert np.isinf(longs[0][1]) == (noise == 0)
    assert not any("consideration" in name or "remarkable" in name for name in names(chosen))
    again = edit_word_candidates(frame, {"words of 10 letters or more"}, ScreenSettings(30, 15, 3))
    assert "words of 10 letters or more" not in names(again)


def test_nested_long_word_classes_equal_in_t_give_the_one_of_fewest_letters():
    vocabulary = ["words of 11 letters or more", "words of 10 letters or more", "please"]
    t = one_long_word_class(np.array([2.0, 2.0 + 1e-12, 1.0]), vocabulary)
    assert t.tolist() == [0.0, 2.0 + 1e-12, 1.0]
    assert one_long_word_class(np.array([3.0, 2.0, 1.0]), vocabulary).tolist() == [3.0, 0.0, 1.0]


def test_a_word_is_added_where_the_edits_put_it():
    """ "please" opens the sentences the edits insert: a response gets "Please," before its last sentence.
    Where the edits add it at the end ("…, please."), it is added there, however many of the texts the
    edits leave it in open with it."""
    (feature, _, _), *_ = edit_word_candidates(edits(), set(), ScreenSettings(30, 15, 3))
    assert feature.add("Boil it. Then cut it.") == "Boil it. Please, then cut it."
    kept = ["Please go.", "Please stop.", "Please wait.", "Please sit."]
    added = ["Cut it.", "Boil it.", "Fry it."]
    rows = [
        *({"source_text": s, "edited_text": s[:-1] + ", please.", "effect_change": 1.0 + 0.01 * i}
          for i, s in enumerate(added)),
        *({"source_text": s, "edited_text": s[:-1] + " now.", "effect_change": 0.01 * i}
          for i, s in enumerate(kept)),
    ]  # fmt: skip
    frame = pl.DataFrame(
        [{"rm": "rm", "edit_id": f"e{i}", **r, "words_change": 1} for i, r in enumerate(rows)],
        schema=EDIT_SCHEMA,
    )
    chosen = {
        feature.name: feature
        for feature, _, _ in edit_word_candidates(frame, set(), ScreenSettings(30, 15, 3))
    }
    assert chosen['words "please"'].add("Boil it. Then cut it.") == "Boil it. Then cut it, please."


def _context(previous: pl.DataFrame, attribute_edits: pl.DataFrame) -> RoundContext:
    comparisons = pl.DataFrame(
        {"comparison_id": ["c1"], "prompt": ["Does it?"], "chosen": ["It works."], "rejected": ["No."]}
    )
    settings = {"offline": {}, "fdr": 0.05, "encoder": schema_defaults("evaluate")}
    return RoundContext("d", 2, comparisons, {}, {}, previous, settings, LOG, attribute_edits=attribute_edits)


def test_the_offline_engines_later_round_tests_the_words_or_stops_saying_why(caplog):
    previous = pl.DataFrame(schema=polars_schema(BIAS_DISCOVERY_EFFECTS))  # round 1 found no word
    with caplog.at_level(logging.INFO, logger=LOG.name):
        output = OfflineEngine().run_round(_context(previous, edits()))
    assert output.features[0].name == 'words "please"' and output.stopped is None
    assert output.screened['words "please"'][0] == "rm"
    assert 'words the attribute edits change, screened in: words "please"' in caplog.text
    nothing = OfflineEngine().run_round(_context(previous, pl.DataFrame(schema=EDIT_SCHEMA)))
    assert nothing.features == [] and nothing.stopped == NOTHING_TO_TEST.format(round=2, fdr=0.05)


def test_the_round_reads_the_attribute_edits_with_their_sources_and_every_rms_change(tmp_path):
    """EFFECT_EDITS (round 1 only: a round-2 edit of RATE's chain is no attribute edit of an original) joined
    with EFFECT_CHANGES: one row per RM and edit, the source the original response."""
    from rmexplain.discovery.stages import attribute_edits
    from rmexplain.schemas import EFFECT_CHANGES, EFFECT_EDITS, write_table

    comparisons = pl.DataFrame(
        {"comparison_id": ["c1"], "prompt": ["Go?"], "chosen": ["Boil it."], "rejected": ["No."]}
    )
    base = {"comparison_id": "c1", "target": "chosen", "attribute": "harmlessness", "chain": "better",
            "method": "rules", "generator": "rules"}  # fmt: skip
    edit_rows = [
        {**base, "edit_id": "e1", "round": 1, "direction": "better", "text": "Boil it. Please be careful."},
        {**base, "edit_id": "e2", "round": 2, "direction": "worse", "text": "Boil it."},
    ]
    write_table(pl.DataFrame(edit_rows), tmp_path / "edits.parquet", EFFECT_EDITS, "effect edits")
    change = {"edit_id": "e1", "comparison_id": "c1", "target": "chosen", "attribute": "harmlessness",
              "direction": "better", "reward_change": 1.0, "words_change": 3, "length_change": 0.1,
              "reference": None, "dataset": "d", "method": "rules"}  # fmt: skip
    changes = pl.DataFrame(
        [{**change, "rm": "b", "effect_change": 0.5}, {**change, "rm": "a", "effect_change": 0.9}]
    )
    write_table(changes, tmp_path / "changes.parquet", EFFECT_CHANGES, "effect changes")
    frame = attribute_edits(
        [str(tmp_path / "edits.parquet")], [str(tmp_path / "changes.parquet")], comparisons
    )
    assert frame.rows() == [
        ("a", "e1", "Boil it.", "Boil it. Please be careful.", 0.9, 3),
        ("b", "e1", "Boil it.", "Boil it. Please be careful.", 0.5, 3),
    ]
    assert attribute_edits([], [], comparisons).columns == list(EDIT_SCHEMA)


def test_a_later_offline_round_reads_the_datasets_attribute_edits_and_no_other_round_does():
    """Round 2 of the offline engine on a dataset with attribute effects reads its rules edits and changes;
    round 1 does not, nor does round 2 on a dataset with discovery alone (no attribute edits)."""
    from conftest import tiny_demo_config

    from rmexplain import paths, targets
    from rmexplain.config import check
    from rmexplain.design import Design

    config = tiny_demo_config()
    config["datasets"] = {
        "both": {"source": "embedded", "part": "harmless"},
        "alone": {"source": "embedded", "part": "helpful", "stages": ["discovery"]},
    }
    config["discovery"] = {"offline": {"rounds": 2}}
    design = Design.from_config(check(config))
    second = targets.discovery_round_inputs(design, "both", "offline", 2)
    assert second["attribute_edits"] == [paths.fmt(paths.EFFECT_EDITS, dataset="both", method="rules")]
    assert second["attribute_changes"] == [paths.fmt(paths.EFFECT_CHANGES, dataset="both", method="rules")]
    for dataset, round_ in (("both", 1), ("alone", 2)):
        inputs = targets.discovery_round_inputs(design, dataset, "offline", round_)
        assert inputs["attribute_edits"] == [] and inputs["attribute_changes"] == []
