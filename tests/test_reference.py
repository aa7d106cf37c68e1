"""The bundled published numbers of Jiang et al. (ICLR 2025) against a second, independent reading.

The expected values below were typed column by column from the paper's text (the CSV was typed row by
row), so a transcription slip in either shows up as a mismatch.
"""

import polars as pl
import pytest

from rmexplain.analysis.reference import load_reference, reference_names
from rmexplain.explanations.stages import COVERAGE_COLUMNS, DISTANCE_COLUMNS

ROWS_PER_TABLE = {"1": 48, "2": 24, "3": 18, "4": 45, "5": 30, "6": 9, "7": 5}

# Tables 1 and 2: column → (mean, sd) in row order harmless PJ, RP, OURS; helpful PJ, RP, OURS; hs2 RP, OURS.
T12_ROWS = [
    ("harmless", "PJ"),
    ("harmless", "RP"),
    ("harmless", "OURS"),
    ("helpful", "PJ"),
    ("helpful", "RP"),
    ("helpful", "OURS"),
    ("hs2", "RP"),
    ("hs2", "OURS"),
]
TABLE1 = {
    "Chosen/CF cov.": [
        (0.74, 0.149), (0.64, 0.118), (0.76, 0.086), (0.97, 0.035),
        (0.84, 0.066), (0.81, 0.042), (0.86, 0.035), (0.83, 0.069),
    ],
    "Chosen/SF cov.": [
        (0.94, 0.039), (0.93, 0.051), (0.97, 0.031), (0.87, 0.042),
        (0.81, 0.081), (0.99, 0.020), (0.54, 0.060), (0.86, 0.160),
    ],
    "Rejected/CF cov.": [
        (0.40, 0.016), (0.38, 0.159), (0.85, 0.109), (0.14, 0.097),
        (0.23, 0.095), (0.98, 0.028), (0.05, 0.038), (0.39, 0.145),
    ],
    "Rejected/SF cov.": [
        (0.95, 0.064), (0.92, 0.082), (0.91, 0.059), (0.99, 0.008),
        (0.99, 0.008), (0.75, 0.081), (0.99, 0.008), (0.95, 0.047),
    ],
    "Both/CF cov.": [
        (0.26, 0.080), (0.22, 0.100), (0.69, 0.111), (0.13, 0.088),
        (0.21, 0.088), (0.80, 0.047), (0.04, 0.035), (0.33, 0.144),
    ],
    "Both/SF cov.": [
        (0.89, 0.061), (0.86, 0.072), (0.90, 0.061), (0.87, 0.041),
        (0.81, 0.079), (0.74, 0.067), (0.54, 0.060), (0.84, 0.149),
    ],
}  # fmt: skip
TABLE2 = {
    "syn. dist.": [
        (0.74, 0.042), (0.81, 0.015), (0.65, 0.015), (0.48, 0.059),
        (0.59, 0.031), (0.61, 0.018), (0.44, 0.023), (0.31, 0.023),
    ],
    "sem. dist": [
        (0.69, 0.038), (0.70, 0.018), (0.36, 0.028), (0.40, 0.047),
        (0.34, 0.022), (0.28, 0.018), (0.18, 0.015), (0.07, 0.017),
    ],
    "sem. div.": [
        (0.49, 0.024), (0.36, 0.028), (0.31, 0.023), (0.46, 0.025),
        (0.29, 0.028), (0.20, 0.012), (0.14, 0.020), (0.07, 0.010),
    ],
}  # fmt: skip
# Table 3: column → τ for (v1, v2), (v1, pythia), (v2, pythia).
TABLE3 = {
    "harmless/Y+": (0.16, 0.68, 0.10),
    "harmless/Y-": (0.54, 0.62, 0.73),
    "helpful/Y+": (0.60, 0.68, 0.62),
    "helpful/Y-": (0.75, 0.77, 0.79),
    "hs2/Y+": (0.71, 0.47, 0.60),
    "hs2/Y-": (0.79, 0.52, 0.62),
}
# Tables 4 and 5: a sample of (block, row, column, mean, sd).
TABLE4 = [
    ("harmless", "only", "CF cov.", 0.49, 0.123),
    ("harmless", "only", "sem. div.", 0.21, 0.022),
    ("harmless", "pass", "SF cov.", 0.55, 0.161),
    ("harmless", "pass", "syn. dist.", 0.81, 0.011),
    ("harmless", "center", "sem. dist", 0.36, 0.028),
    ("helpful", "only", "CF cov.", 0.72, 0.008),
    ("helpful", "pass", "SF cov.", 0.13, 0.083),
    ("helpful", "center", "syn. dist.", 0.61, 0.018),
    ("hs2", "only", "SF cov.", 0.76, 0.178),
    ("hs2", "only", "syn. dist.", 0.29, 0.098),
    ("hs2", "pass", "CF cov.", 0.39, 0.094),
    ("hs2", "pass", "sem. dist", 0.11, 0.030),
    ("hs2", "center", "sem. div.", 0.07, 0.010),
]
TABLE5 = [
    ("harmless", "correct", "CF cov.", 0.71, 0.149),
    ("harmless", "correct", "sem. div.", 0.30, 0.029),
    ("harmless", "wrong", "SF cov.", 0.90, 0.127),
    ("harmless", "wrong", "sem. dist", 0.37, 0.039),
    ("helpful", "correct", "SF cov.", 0.73, 0.007),
    ("helpful", "correct", "syn. dist.", 0.63, 0.018),
    ("helpful", "wrong", "CF cov.", 0.86, 0.105),
    ("helpful", "wrong", "sem. div.", 0.21, 0.049),
    ("hs2", "correct", "CF cov.", 0.29, 0.161),
    ("hs2", "correct", "sem. dist", 0.08, 0.021),
    ("hs2", "wrong", "SF cov.", 0.82, 0.156),
    ("hs2", "wrong", "syn. dist.", 0.27, 0.029),
]
# Tables 6 and 7 have fewer than ten cells: all of them.
TABLE6 = {"harmless": (0.18, 0.49, 0.28), "helpful": (0.03, 0.30, 0.31), "hs2": (0.12, 0.28, 0.07)}
TABLE7 = {"pythia": 0.75, "v1": 0.51, "v2": 0.56, "Llama OB": 0.30, "Llama SW": 0.15}


@pytest.fixture(scope="module")
def ref() -> pl.DataFrame:
    return load_reference()


def cell(ref: pl.DataFrame, table: str, block: str | None, row: str, column: str) -> tuple[float, float]:
    hit = ref.filter(
        (pl.col("table") == table)
        & (pl.col("block").is_null() if block is None else pl.col("block") == block)
        & (pl.col("row") == row)
        & (pl.col("column") == column)
    )
    assert hit.height == 1, (table, block, row, column, hit)
    return hit["mean"][0], hit["sd"][0]


def test_shape_and_keys(ref):
    assert reference_names() == ["jiang2025"]
    counts = dict(ref.group_by("table").len().iter_rows())
    assert counts == ROWS_PER_TABLE
    assert not ref.select("table", "block", "row", "column").is_duplicated().any()
    with pytest.raises(ValueError, match="unknown reference 'nope'"):
        load_reference("nope")


@pytest.mark.parametrize(("table", "expected"), [("1", TABLE1), ("2", TABLE2)])
def test_tables_1_and_2_every_cell(ref, table, expected):
    for column, values in expected.items():
        for (block, method), (mean, sd) in zip(T12_ROWS, values, strict=True):
            assert cell(ref, table, block, method, column) == (mean, sd), (table, block, method, column)


def test_table_3_every_cell(ref):
    for column, values in TABLE3.items():
        for row, tau in zip(("v1, v2", "v1, pythia", "v2, pythia"), values, strict=True):
            assert cell(ref, "3", None, row, column) == (tau, None)


@pytest.mark.parametrize(("table", "sample"), [("4", TABLE4), ("5", TABLE5)])
def test_tables_4_and_5_sample(ref, table, sample):
    for block, row, column, mean, sd in sample:
        assert cell(ref, table, block, row, column) == (mean, sd), (table, block, row, column)


def test_tables_6_and_7_every_cell(ref):
    for column, values in TABLE6.items():
        for row, tau in zip(("v1", "v2", "pythia"), values, strict=True):
            assert cell(ref, "6", None, row, column) == (tau, None)
    for column, rate in TABLE7.items():
        assert cell(ref, "7", None, "win rate", column) == (rate, None)


def test_values_in_range_and_sd_where_printed(ref):
    with_sd = ref.filter(pl.col("table").is_in(["1", "2", "4", "5"]))
    assert with_sd["sd"].null_count() == 0
    assert ref.filter(~pl.col("table").is_in(["1", "2", "4", "5"]))["sd"].null_count() == 18 + 9 + 5
    assert ref["mean"].is_between(0, 1).all()
    uncertain = ref.filter(pl.col("sign_uncertain"))
    assert set(uncertain["table"]) == {"3", "6"}
    # Only Table 3's helpful/Y- cells are pinned positive by the prose ("highly correlated").
    assert uncertain.height == 18 - 3 + 9


def test_both_sides_coverage_is_at_most_each_side(ref):
    """Table 1's header reading: "Both" needs a CF (SF) on each side, so it cannot exceed either side."""
    t1 = ref.filter(pl.col("table") == "1")
    for (block, method), _ in t1.group_by("block", "row"):
        for kind in ("CF", "SF"):
            both = cell(ref, "1", block, method, f"Both/{kind} cov.")[0]
            sides = [cell(ref, "1", block, method, f"{s}/{kind} cov.")[0] for s in ("Chosen", "Rejected")]
            assert both <= min(sides), (block, method, kind)


def test_center_prompt_rows_repeat_our_method(ref):
    """Table 4's center prompt is the paper's method: its rows repeat Table 1 (Both) and Table 2, except one
    coverage cell the paper prints as 0.69 in Table 1 and 0.68 in Table 4 (noted on both rows)."""
    differing = []
    for block in ("harmless", "helpful", "hs2"):
        pairs = [("CF cov.", "1", "Both/CF cov."), ("SF cov.", "1", "Both/SF cov.")]
        pairs += [(c, "2", c) for c in ("syn. dist.", "sem. dist", "sem. div.")]
        for column, table, source in pairs:
            if cell(ref, "4", block, "center", column) != cell(ref, table, block, "OURS", source):
                differing.append((block, column))
    assert differing == [("harmless", "CF cov.")]
    noted_cells = (("1", "Both/CF cov.", "Table 4 prints 0.68"), ("4", "CF cov.", "Table 1 prints 0.69"))
    for table, column, says in noted_cells:
        noted = ref.filter(
            (pl.col("table") == table) & (pl.col("column") == column) & pl.col("note").str.contains(says)
        )
        assert noted["block"].to_list() == ["harmless"]


def test_metric_names_are_the_evaluation_metrics(ref):
    names = set(ref["metric"].drop_nulls())
    assert names == set(COVERAGE_COLUMNS) | set(DISTANCE_COLUMNS)
    assert ref.filter(pl.col("table").is_in(["1", "2", "4", "5"]))["metric"].null_count() == 0
