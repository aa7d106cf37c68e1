"""One record per summary table of the analyses: what the rules, the targets, the stage and the report know
about it. Adding a table is adding a record here (plus its compute function and, if shown, a presenter).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import polars as pl

from rmexplain import paths
from rmexplain.analysis import judge
from rmexplain.analysis import tables as T
from rmexplain.design import Design
from rmexplain.schemas import (
    ATTRIBUTE_EFFECTS,
    EXAMPLES,
    JUDGEMENTS,
    PFR,
    PROBE_WIN_RATE,
    TAU_RMS,
    TAU_SIDES,
    Column,
)


def _always(design: Design) -> bool:
    return True


def _analysed(design: Design) -> list[tuple[str, str]]:
    return design.analysed_pairs


@dataclass(frozen=True)
class AnalysisTable:
    """A summary table (``results/tables/<name>.{csv,md,html}``) concatenated from per-part Parquet files.

    ``part`` is the path pattern of one part (wildcards dataset and method, and orienter where
    ``per_orienter``); ``contract`` its Parquet contract; ``present`` the readable layout of the Markdown and
    HTML copies; ``summarise`` turns the concatenated parts into the table (default: as they are);
    ``enabled`` says whether a design writes it; ``title`` heads its pages; ``pairs`` the (dataset, method)
    pairs it covers (default every analysed one); ``from_explanations``: its RMs are measured on the
    comparisons each is explained on, so its pages mark an RM measured on a subset of a shared set
    (``rmexplain.analysis.subsets``).
    """

    name: str
    title: str
    part: str
    contract: Mapping[str, Column]
    present: Callable[[pl.DataFrame, str], pl.DataFrame]
    enabled: Callable[[Design], bool] = _always
    per_orienter: bool = False
    summarise: Callable[[pl.DataFrame, float], pl.DataFrame] | None = None
    pairs: Callable[[Design], list[tuple[str, str]]] = _analysed
    from_explanations: bool = False

    def parts(self, design: Design) -> list[str]:
        """The per-(dataset, method) files — per orienter too where ``per_orienter`` — it is built from."""
        return [
            paths.fmt(self.part, dataset=d, method=m, orienter=o)
            for d, m in self.pairs(design)
            for o in (design.dataset(d).orienters if self.per_orienter else ("",))
        ]


ANALYSIS_TABLES: dict[str, AnalysisTable] = {
    table.name: table
    for table in (
        AnalysisTable(
            "pfr",
            "Preference flip rate per attribute (paper Fig. 3)",
            paths.PFR,
            PFR,
            T.present_pfr,
            from_explanations=True,
        ),
        AnalysisTable(
            "tau_rms",
            "Kendall τ between RMs' PFR rankings (paper Table 3)",
            paths.TAU_RMS,
            TAU_RMS,
            T.present_tau_rms,
            from_explanations=True,
        ),
        AnalysisTable(
            "tau_sides",
            "Kendall τ between Y+ and Y− PFR rankings per RM (paper Table 6)",
            paths.TAU_SIDES,
            TAU_SIDES,
            T.present_tau_sides,
            from_explanations=True,
        ),
        AnalysisTable(
            "representative_examples",
            "Most representative comparisons (paper §4.2)",
            paths.EXAMPLES,
            EXAMPLES,
            T.present_examples,
            from_explanations=True,
        ),
        AnalysisTable(
            "probe_win_rate",
            "Probe win rate (paper Table 7, generalised)",
            paths.PROBES,
            PROBE_WIN_RATE,
            T.present_probes,
            enabled=lambda design: design.probes_enabled,
        ),
        AnalysisTable(
            "attribute_effects",
            "Attribute effects beside the paper's flip rates (docs/effects.md)",
            paths.ATTRIBUTE_EFFECTS,
            ATTRIBUTE_EFFECTS,
            T.present_effects,
            enabled=lambda design: bool(design.effect_pairs),
            pairs=lambda design: design.effect_pairs,
        ),
        AnalysisTable(
            "attribute_judge",
            "Did each perturbation change its attribute as intended? (LLM judge)",
            paths.JUDGEMENTS,
            JUDGEMENTS,
            T.present_judge,
            enabled=lambda design: design.judge_enabled,
            per_orienter=True,
            summarise=judge.agreement_table,
        ),
    )
}


def analysis_table(name: str) -> AnalysisTable:
    """The record of summary table ``name``."""
    if name not in ANALYSIS_TABLES:
        raise KeyError(f"unknown analysis table {name!r}; known: {list(ANALYSIS_TABLES)}")
    return ANALYSIS_TABLES[name]
