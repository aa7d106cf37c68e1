"""Published numbers to compare a reproduction against.

``jiang2025``: every cell of Tables 1–7 of Jiang et al., "Interpreting Language Reward Models via
Contrastive Explanations" (ICLR 2025), one row per cell. ``mean`` is the printed value and ``sd`` the
printed standard deviation over the five seeds (null where the table has none); ``sign_uncertain``
marks Kendall τ cells whose minus sign may have been lost in the flattened PDF text; ``metric`` is the
evaluation's metric name where the cell has one. See docs/reference_jiang2025.md.
"""

from __future__ import annotations

from importlib import resources

import polars as pl

SCHEMA: dict[str, type[pl.DataType]] = {
    "table": pl.String,
    "section": pl.String,
    "block": pl.String,
    "row": pl.String,
    "column": pl.String,
    "metric": pl.String,
    "mean": pl.Float64,
    "sd": pl.Float64,
    "sign_uncertain": pl.Boolean,
    "note": pl.String,
}


def reference_names() -> list[str]:
    """The bundled reference sets (CSV stems under ``rmexplain/analysis/reference``)."""
    folder = resources.files("rmexplain.analysis") / "reference"
    return sorted(p.name.removesuffix(".csv") for p in folder.iterdir() if p.name.endswith(".csv"))


def load_reference(name: str = "jiang2025") -> pl.DataFrame:
    """A bundled reference set as a frame (columns ``SCHEMA``); an unknown name raises ValueError."""
    names = reference_names()
    if name not in names:
        raise ValueError(f"unknown reference {name!r}; bundled: {names}")
    path = resources.files("rmexplain.analysis") / "reference" / f"{name}.csv"
    with resources.as_file(path) as local:
        return pl.read_csv(local, schema=SCHEMA)
