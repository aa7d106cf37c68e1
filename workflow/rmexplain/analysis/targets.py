"""Target files of the analysis stage (issue 5)."""

from __future__ import annotations

from typing import Any

import rmexplain.paths as P
from rmexplain.analysis import paths as A


def analysis_files(config: dict[str, Any]) -> list[str]:
    """Files ``rule all`` asks of the analysis stage: tables (CSV, Markdown, HTML), figures, example pages."""
    if not A.analysed_methods(config):
        # Only unconditioned methods (random, polyjuice): no attributes to analyse; Table 5 still applies.
        return [P.fmt(A.SUMMARY_FIGURE, figure="correctness", ext=A.figure_ext(config))]
    return A.table_files(config) + A.figure_files(config)
