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


def paper_names(reference: pl.DataFrame) -> dict[str, set[str]]:
    """The paper's names a ``reproduce`` mapping may use, per key: ``reward_models`` (Tables 3, 6, 7),
    ``datasets`` (the blocks) and ``methods`` (the rows of Tables 1, 2, 4)."""
    rows = lambda *tables: reference.filter(pl.col("table").is_in(tables))  # noqa: E731
    rms = {name.strip() for pair in rows("3")["row"] for name in pair.split(",")}
    rms |= set(rows("6")["row"]) | set(rows("7")["column"])
    methods = set(rows("1", "2", "4")["row"])
    return {"reward_models": rms, "datasets": set(reference["block"].drop_nulls()), "methods": methods}
