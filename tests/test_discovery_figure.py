"""The discovered-biases figure: forest panels per RM, the findings × RMs heatmap, the figure that says
nothing is significant, and byte-identical files from the same table."""

from __future__ import annotations

import logging
import math

import numpy as np
import polars as pl
import pytest
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.colors import to_hex
from matplotlib.image import AxesImage, imread

from rmexplain.discovery.plots import (
    NONE_TEXT,
    PENALISED,
    REWARDED,
    biases_figure,
    finding_label,
)
from rmexplain.discovery.stages import run_biases_figure
from rmexplain.figures import FigureOptions
from rmexplain.schemas import DISCOVERED_BIASES, conform, write_table

LOG = logging.getLogger("test_discovery_figure")
OPTIONS = FigureOptions.from_config({"dpi": 60, "width": 9})
DEFAULTS = {
    "engine": "offline", "description": "a feature", "q_value": 0.5, "n": 20, "support": 0.3, "p_value": 0.5,
    "round": 1, "kind": "probe", "source": "catalogue", "directions": "both", "n_comparisons": 10,
    "pairs": 10, "reference": None, "reward_sd": 1.0, "example_comparison_id": None,
    "example_direction": None, "example_before": None, "example_after": None, "example_reward_change": None,
}  # fmt: skip


def _table(rows: list[tuple]) -> pl.DataFrame:
    """DISCOVERED_BIASES from (dataset, rm, feature, effect, low, high, significant) rows; rank per RM."""
    keys = ("dataset", "rm", "feature", "effect", "low", "high", "significant")
    types = {k: c.dtype for k, c in DISCOVERED_BIASES.items()}
    frame = pl.DataFrame([{**DEFAULTS, **dict(zip(keys, r, strict=True))} for r in rows], schema=types)
    frame = frame.with_columns(q_value=pl.when("significant").then(0.001).otherwise(0.5))
    frame = frame.with_columns(rank=pl.int_range(1, pl.len() + 1).over("dataset", "rm").cast(pl.Int64))
    return conform(frame, DISCOVERED_BIASES, "hand-made biases")


ONE_RM = _table([
    ("d", "a", "bold", 0.3, 0.1, 0.5, True),
    ("d", "a", "emoji", -0.9, -1.2, -0.6, True),
    ("d", "a", "header", 0.6, 0.4, 0.8, True),
    ("d", "a", "link", 0.05, -0.1, 0.2, False),
])  # fmt: skip


def _write_twice(table: pl.DataFrame, tmp_path, name: str = "biases.png"):
    """The figure, written twice to two files: (figure, its bytes); the two files must be equal."""
    first, second = tmp_path / "one" / name, tmp_path / "two" / name
    fig = biases_figure(table, first, OPTIONS, "95%", 0.05)
    biases_figure(table, second, OPTIONS, "95%", 0.05)
    data = first.read_bytes()
    assert data and data == second.read_bytes()
    return fig, data


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def _dots(ax) -> list[tuple[float, float]]:
    (dots,) = [c for c in ax.collections if isinstance(c, PathCollection)]
    return [tuple(p) for p in dots.get_offsets().tolist()]


def _whiskers(ax) -> list[list[list[float]]]:
    lines = [c for c in ax.collections if isinstance(c, LineCollection)]
    return [s.tolist() for c in lines for s in c.get_segments()]


def test_one_rm_is_a_forest_plot_of_its_significant_findings_largest_first(tmp_path):
    fig, data = _write_twice(ONE_RM, tmp_path)
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and b"Software" not in data and b"Matplotlib" not in data
    (ax,) = fig.axes  # one RM: no heatmap
    assert [t.get_text() for t in ax.get_yticklabels()] == ["emoji", "header", "bold"]  # link not significant
    assert _dots(ax) == [(-0.9, 0.0), (0.6, 1.0), (0.3, 2.0)]
    assert _whiskers(ax) == [[[-1.2, 0.0], [-0.6, 0.0]], [[0.4, 1.0], [0.8, 1.0]], [[0.1, 2.0], [0.5, 2.0]]]
    (dots,) = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert [to_hex(c) for c in dots.get_facecolors()] == [PENALISED, REWARDED, REWARDED]
    zero = [line for line in ax.get_lines() if list(line.get_xdata()) == [0, 0]]
    assert len(zero) == 1  # the vertical zero line
    assert ax.get_ylim() == (2.5, -0.5)  # the first row on top
    assert ax.get_title(loc="left") == "a: 3 of 4 significant"
    assert "95% intervals" in fig.get_suptitle() and "q ≤ 0.05" in fig.get_suptitle()
    height, width = imread(tmp_path / "one" / "biases.png").shape[:2]
    assert width == 9 * 60 and height > 60


def test_several_rms_add_a_heatmap_and_a_panel_without_findings_says_so(tmp_path):
    rows = ONE_RM.select("dataset", "rm", "feature", "effect", "low", "high", "significant").rows()
    rows += [("d", "b", "bold", 0.2, 0.1, 0.3, False), ("d", "b", "link", 0.7, 0.5, 0.9, True),
             ("d", "c", "bold", 0.01, -0.1, 0.1, False)]  # fmt: skip
    table = _table(rows).with_columns(
        reference=pl.when(pl.col("rm") == "b").then(pl.lit("a")).otherwise(None)
    )
    fig, _ = _write_twice(table, tmp_path)
    forests, heatmap = fig.axes[:3], fig.axes[3]
    assert len(fig.axes) == 5  # three panels, the heatmap and its colour bar
    assert [ax.get_title(loc="left") for ax in forests] == [
        "a: 3 of 4 significant", "b (vs a): 1 of 2 significant", "c: 0 of 1 significant"
    ]  # fmt: skip
    assert [t.get_text() for t in forests[1].get_yticklabels()] == ["link"]
    assert not forests[2].axison and [t.get_text() for t in forests[2].texts] == [NONE_TEXT]
    (image,) = [i for i in heatmap.get_images() if isinstance(i, AxesImage)]
    cells = np.ma.filled(image.get_array(), np.nan)
    assert [t.get_text() for t in heatmap.get_yticklabels()] == ["emoji", "link", "header", "bold"]
    assert [t.get_text() for t in heatmap.get_xticklabels()] == ["a", "b", "c"]
    expected = [[-0.9, np.nan, np.nan], [np.nan, 0.7, np.nan], [0.6, np.nan, np.nan], [0.3, np.nan, np.nan]]
    np.testing.assert_allclose(cells, expected)  # non-significant and untested cells: no colour
    hatched = [(p.get_x() + 0.5, p.get_y() + 0.5) for p in heatmap.patches if p.get_hatch()]
    assert sorted(hatched) == [(0.0, 1.0), (1.0, 3.0), (2.0, 3.0)]  # a's link, b's and c's bold
    norm = image.norm
    assert (norm.vmin, norm.vcenter, norm.vmax) == (-0.9, 0.0, 0.9)
    assert fig.axes[4].get_ylabel() == "effect (reward sd, at equal length)"
    assert [t.get_text() for t in heatmap.texts] == ["-0.90", "+0.70", "+0.60", "+0.30"]  # each coloured cell


def test_several_datasets_name_each_panel_with_its_dataset(tmp_path):
    table = _table([("hh", "a", "bold", 0.4, 0.2, 0.6, True), ("shp", "a", "bold", 0.8, 0.6, 1.0, True)])
    fig, _ = _write_twice(table, tmp_path)
    assert [ax.get_title(loc="left") for ax in fig.axes[:2]] == ["hh · a: 1 of 1 significant",
                                                                "shp · a: 1 of 1 significant"]  # fmt: skip
    assert [t.get_text() for t in fig.axes[2].get_xticklabels()] == ["hh · a", "shp · a"]


def test_no_significant_row_gives_a_figure_that_says_so(tmp_path):
    table = ONE_RM.with_columns(significant=pl.lit(False))
    fig, _ = _write_twice(table, tmp_path)
    (ax,) = fig.axes
    assert not ax.axison
    assert _texts(fig) == [
        f"Discovered biases: {NONE_TEXT} — none of the 4 features tested on 1 RM has q ≤ 0.05."
    ]


def test_an_empty_table_gives_a_figure_that_says_so(tmp_path):
    empty = ONE_RM.clear()
    fig, data = _write_twice(empty, tmp_path)
    assert len(data) > 1000 and _texts(fig) == [
        "Discovered biases: no feature was tested, so there is no finding."
    ]


def test_a_nan_interval_draws_the_dot_without_a_whisker(tmp_path):
    table = _table([
        ("d", "a", "bold", 0.5, math.nan, math.nan, True),
        ("d", "a", "emoji", 0.2, 0.1, 0.3, True),
        ("d", "a", "header", math.nan, math.nan, math.nan, True),
    ])  # fmt: skip
    fig, _ = _write_twice(table, tmp_path)
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["bold", "emoji"]  # undefined effect: left out
    assert _dots(ax) == [(0.5, 0.0), (0.2, 1.0)]
    assert _whiskers(ax) == [[[0.1, 1.0], [0.3, 1.0]]]


def test_labels_are_the_tables_phrases_where_it_has_them_wrapped(tmp_path):
    long = "rewards markdown headers (## …) at the start of a long answer, and more words than two lines"
    table = ONE_RM.with_columns(phrase=pl.Series(["", "penalises an emoji", long, None], dtype=pl.String))
    fig, _ = _write_twice(table, tmp_path)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == [
        "penalises an emoji", "rewards markdown headers (## …) at\nthe start of a long answer, and …", "bold"
    ]  # fmt: skip
    assert finding_label({"feature": "bold"}) == "bold"


@pytest.mark.parametrize("ext", ["png", "svg", "pdf"])
def test_every_format_gives_the_same_bytes_twice(tmp_path, ext):
    _write_twice(ONE_RM, tmp_path, f"biases.{ext}")


def test_the_stage_reads_the_table_and_logs_the_figure(tmp_path, caplog):
    source, output = tmp_path / "biases.parquet", tmp_path / "figures" / "biases.png"
    write_table(ONE_RM, source, DISCOVERED_BIASES, "biases")
    with caplog.at_level(logging.INFO, logger=LOG.name):
        run_biases_figure(str(source), {"dpi": 60, "width": 9}, 0.9, 0.05, str(output), LOG)
    assert caplog.messages[-1] == f"wrote {output} (3 significant of 4 rows)"
    biases_figure(ONE_RM, tmp_path / "expected.png", OPTIONS, "90%", 0.05)
    assert output.read_bytes() == (tmp_path / "expected.png").read_bytes()
