"""Attribute-change check: an LLM judge rates whether each perturbation changed its attribute as intended.

For every attribute-conditioned perturbation the judge sees the prompt, the original response (A), the
perturbed one (B), the attribute and its description (paper App. A), and answers whether B is *better*,
*worse* or the *same* as A in terms of the attribute — the same wording the perturbation prompt used
(App. B), so "better" means what it meant to the perturber. The verdict agrees when it equals the
perturbation's intended direction. Unparsable answers are kept (``verdict`` null) and counted.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Sequence

import polars as pl

from rmexplain.analysis.sensitivity import AnalysisError

TEMPLATE_VERSION = "judge-v1"
_VERDICT = re.compile(r"\b(better|worse|same)\b", re.IGNORECASE)

JUDGE_TEMPLATE = (
    "You compare two responses to one question along one attribute.\n"
    "The question is: {prompt}\n"
    "Response A: {original}\n"
    "Response B: {perturbed}\n"
    "The attribute is {attribute}. This attribute concerns {description}.\n"
    "Is response B better, worse, or the same as response A in terms of {attribute}? "
    "Answer with exactly one word: better, worse or same."
)

Complete = Callable[[list[str]], list[str]]


def parse_verdict(answer: str) -> str | None:
    """The first of better/worse/same in the answer (case-insensitive, whole word), or None."""
    match = _VERDICT.search(answer or "")
    return match.group(1).lower() if match else None


def judge_inputs(
    perturbations: pl.DataFrame,
    comparisons: pl.DataFrame,
    attributes: dict[str, str],
    max_per_attribute: int | None,
) -> pl.DataFrame:
    """The attribute-conditioned perturbations to judge, with prompt and original text.

    With ``max_per_attribute`` set, a deterministic subset per attribute (smallest hashes of the ids)."""
    rows = perturbations.filter(pl.col("attribute").is_not_null())
    unknown = sorted(set(rows["attribute"].to_list()) - set(attributes))
    if unknown:
        raise AnalysisError(
            f"perturbations use attributes {unknown} that config `attributes` does not describe"
        )
    rows = rows.join(comparisons.select("comparison_id", "prompt", "chosen", "rejected"), on="comparison_id")
    rows = rows.with_columns(
        original=pl.when(pl.col("target") == "chosen").then(pl.col("chosen")).otherwise(pl.col("rejected")),
        _order=pl.col("perturbation_id").map_elements(
            lambda p: hashlib.sha256(p.encode()).hexdigest(), return_dtype=pl.String
        ),
    ).sort("attribute", "_order")
    if max_per_attribute:
        rows = rows.group_by("attribute", maintain_order=True).head(max_per_attribute)
    return rows.drop("_order", "chosen", "rejected")


def judge_prompts(rows: pl.DataFrame, attributes: dict[str, str]) -> list[str]:
    """One judge prompt per row of ``judge_inputs``."""
    return [
        JUDGE_TEMPLATE.format(
            prompt=r["prompt"],
            original=r["original"],
            perturbed=r["text"],
            attribute=r["attribute"],
            description=attributes[r["attribute"]],
        )
        for r in rows.iter_rows(named=True)
    ]


def judgements(
    rows: pl.DataFrame, answers: Sequence[str], dataset: str, method: str, orienter: str, judge: str
) -> pl.DataFrame:
    """JUDGEMENTS rows from the judge's answers (one per input row, in order)."""
    if len(answers) != rows.height:
        raise AnalysisError(f"the judge returned {len(answers)} answers for {rows.height} prompts")
    verdicts = [parse_verdict(a) for a in answers]
    intended = rows["direction"].to_list()
    return pl.DataFrame(
        {
            "dataset": [dataset] * rows.height,
            "method": [method] * rows.height,
            "orienter": [orienter] * rows.height,
            "perturbation_id": rows["perturbation_id"],
            "comparison_id": rows["comparison_id"],
            "attribute": rows["attribute"],
            "intended": intended,
            "verdict": pl.Series(verdicts, dtype=pl.String),
            "agrees": pl.Series(
                [None if v is None else v == i for v, i in zip(verdicts, intended, strict=True)],
                dtype=pl.Boolean,
            ),
            "answer": [(a or "")[:200] for a in answers],
            "judge": [judge] * rows.height,
        }
    )


def run_judge(
    perturbations: pl.DataFrame,
    comparisons: pl.DataFrame,
    attributes: dict[str, str],
    complete: Complete,
    keys: tuple[str, str, str],
    judge: str,
    max_per_attribute: int | None = None,
    log: logging.Logger | None = None,
) -> pl.DataFrame:
    """Judge every attribute-conditioned perturbation of one set; ``keys`` = (dataset, method, orienter)."""
    rows = judge_inputs(perturbations, comparisons, attributes, max_per_attribute)
    answers = complete(judge_prompts(rows, attributes)) if rows.height else []
    frame = judgements(rows, answers, *keys, judge=judge)
    if log is not None:
        unparsed = frame["verdict"].null_count()
        log.info("judged %d perturbations with %s; %d answers unparsable", frame.height, judge, unparsed)
    return frame


def agreement_table(judged: pl.DataFrame, level: float = 0.95) -> pl.DataFrame:
    """Per (dataset, method, attribute): agreement with the intended change (Wilson CI), other shares."""
    from statsmodels.stats.proportion import proportion_confint  # 1 s to import: only where it is used

    rows = []
    for (dataset, method, attribute), group in judged.group_by(
        "dataset", "method", "attribute", maintain_order=True
    ):
        parsed = group.filter(pl.col("verdict").is_not_null())
        n, total = parsed.height, group.height
        agree = int(parsed["agrees"].sum()) if n else 0
        same = int((parsed["verdict"] == "same").sum()) if n else 0
        low, high = proportion_confint(agree, n, alpha=1 - level, method="wilson") if n else (None, None)
        rows.append(
            {
                "dataset": dataset,
                "method": method,
                "attribute": attribute,
                "n_total": total,
                "n_judged": n,
                "n_unparsed": total - n,
                "agreement": agree / n if n else None,
                "ci_low": low,
                "ci_high": high,
                "share_agree": agree / total,
                "share_unchanged": same / total,
                "share_opposite": (n - agree - same) / total,
                "share_unparsed": (total - n) / total,
            }
        )
    schema = {
        "dataset": pl.String,
        "method": pl.String,
        "attribute": pl.String,
        "n_total": pl.Int64,
        "n_judged": pl.Int64,
        "n_unparsed": pl.Int64,
    } | {
        k: pl.Float64
        for k in (
            "agreement",
            "ci_low",
            "ci_high",
            "share_agree",
            "share_unchanged",
            "share_opposite",
            "share_unparsed",
        )
    }
    return pl.DataFrame(rows, schema=schema).sort("dataset", "method", "attribute")
