"""Probe win rate (paper App. G, Table 7, generalised to any phrase or regular expression).

For a probe (a phrase or a regular expression) and an RM, the probe set is every perturbation whose text
matches the probe while the original response it was perturbed from does not (optionally only the
perturbations of some attributes, or only perturbations of originals matching ``original_pattern`` and at
most ``original_max_words`` long: the paper's Table 7 items are avoiding answers such as "What do you
mean?" whose appropriateness perturbation inserts "the hell"). The win rate is the share of the probe set
that the RM scores strictly higher than that original; exact ties count as not preferred and are reported
in ``n_ties``. The interval is Wilson's score interval for a binomial proportion (``statsmodels``).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

import polars as pl

from rmexplain.analysis.sensitivity import AnalysisError


@dataclass(frozen=True)
class Probe:
    """One configured probe (``analysis.probes.<name>``)."""

    name: str
    pattern: str
    regex: bool = False
    ignore_case: bool = True
    attributes: tuple[str, ...] = ()
    original_pattern: str | None = None  # the original response must match it (Python regex)
    original_max_words: int | None = None

    def item_filter(self, original: str) -> bool:
        """Whether a perturbation of ``original`` can be an item of this probe (the rules on the original)."""
        if self.original_max_words is not None and len(original.split()) > self.original_max_words:
            return False
        if self.original_pattern is None:
            return True
        return self._regex("original_pattern", self.original_pattern).search(original) is not None

    def _regex(self, key: str, pattern: str) -> re.Pattern[str]:
        """``pattern`` compiled with the probe's case rule; a bad one raises AnalysisError naming the key."""
        try:
            return re.compile(pattern, re.IGNORECASE if self.ignore_case else 0)
        except re.error as err:
            raise AnalysisError(
                f"analysis.probes.{self.name}.{key}: invalid regular expression: {err}"
            ) from err

    def compile(self) -> re.Pattern[str]:
        """The compiled pattern; a bad regular expression raises AnalysisError naming the key."""
        return self._regex("pattern", self.pattern if self.regex else re.escape(self.pattern))

    def check(self) -> None:
        """Both patterns compile; a bad one raises AnalysisError naming the key."""
        self.compile()
        if self.original_pattern is not None:
            self._regex("original_pattern", self.original_pattern)


def probes_from_config(section: dict[str, Any] | None) -> list[Probe]:
    """Probes from the ``analysis.probes`` config section (name -> settings)."""
    return [
        Probe(
            name=name,
            pattern=spec["pattern"],
            regex=bool(spec.get("regex", False)),
            ignore_case=bool(spec.get("ignore_case", True)),
            attributes=tuple(spec.get("attributes") or ()),
            original_pattern=spec.get("original_pattern"),
            original_max_words=spec.get("original_max_words"),
        )
        for name, spec in (section or {}).items()
    ]


def probe_rows(
    explanations: pl.DataFrame, perturbations: pl.DataFrame, comparisons: pl.DataFrame
) -> pl.DataFrame:
    """Explanation rows with the perturbed text, the original text and the original's reward."""
    texts = perturbations.select("perturbation_id", "text").unique("perturbation_id")
    rows = explanations.join(texts, on="perturbation_id", how="left")
    missing = rows.filter(pl.col("text").is_null())
    if missing.height:
        raise AnalysisError(
            f"perturbation {missing['perturbation_id'][0]!r} (RM {missing['rm'][0]}) of the explanations is "
            f"in none of the perturbation tables ({missing.height} such rows)"
        )
    originals = comparisons.select("comparison_id", "chosen", "rejected")
    rows = rows.join(originals, on="comparison_id", how="left")
    original = pl.when(pl.col("target") == "chosen").then(pl.col("chosen")).otherwise(pl.col("rejected"))
    reward = pl.when(pl.col("side") == "plus").then(pl.col("reward_plus")).otherwise(pl.col("reward_minus"))
    return rows.with_columns(original_text=original, reward_original=reward).drop("chosen", "rejected")


_SCHEMA = {
    "rm": pl.String,
    "probe": pl.String,
    "pattern": pl.String,
    "n_perturbations": pl.Int64,
    "n_comparisons": pl.Int64,
    "n_preferred": pl.Int64,
    "n_ties": pl.Int64,
    "win_rate": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
}


def win_rates(
    rows: pl.DataFrame,
    probes: list[Probe],
    level: float,
    log: logging.Logger | None = None,
    rms: list[str] | None = None,
) -> pl.DataFrame:
    """One row per (rm, probe): size of the probe set, wins, ties, win rate and its Wilson interval.

    ``rms`` orders the RMs (default: in order of appearance)."""
    from statsmodels.stats.proportion import proportion_confint  # 1 s to import: only where it is used

    out = []
    for probe in probes:
        pattern = probe.compile()
        # Python's `re` (not polars' Rust regex) so that patterns follow the documented Python syntax.
        mask = [
            bool(pattern.search(text)) and not pattern.search(original) and probe.item_filter(original)
            for text, original in zip(rows["text"], rows["original_text"], strict=True)
        ]
        hits = rows.filter(pl.Series(mask, dtype=pl.Boolean))
        if probe.attributes:
            hits = hits.filter(pl.col("attribute").is_in(list(probe.attributes)))
        for rm in rms or rows["rm"].unique(maintain_order=True).to_list():
            mine = hits.filter(pl.col("rm") == rm)
            n = mine.height
            wins = int((mine["reward_perturbed"] > mine["reward_original"]).sum())
            ties = int((mine["reward_perturbed"] == mine["reward_original"]).sum())
            low, high = proportion_confint(wins, n, alpha=1 - level, method="wilson") if n else (None, None)
            out.append(
                {
                    "rm": rm,
                    "probe": probe.name,
                    "pattern": probe.pattern,
                    "n_perturbations": n,
                    "n_comparisons": mine["comparison_id"].n_unique(),
                    "n_preferred": wins,
                    "n_ties": ties,
                    "win_rate": wins / n if n else None,
                    "ci_low": low,
                    "ci_high": high,
                }
            )
            if log is not None:
                log.info("probe %s, %s: %d of %d perturbations preferred", probe.name, rm, wins, n)
    return pl.DataFrame(out, schema=_SCHEMA)
