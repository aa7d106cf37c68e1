"""Explain one comparison (``rmexplain explain``) with the same library functions the workflow uses.

Steps, per configured RM: score both responses (orientation), perturb with the configured method (per-RM
or shared orientation as in config), score the perturbations, categorise them as CFs/SFs, then write one
figure and one page per RM and a summary (Markdown and HTML) in the output directory. Then the attribute
effects of this one comparison (``rmexplain.effects.single``): both responses edited along every attribute,
both ways, every RM's change in reward per attribute, beside the flip-style deltas. Intermediate tables
go to ``<out>/work/`` in the workflow's own Parquet contracts.
"""

from __future__ import annotations

import html
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from rmexplain.analysis.examples import rm_page, write_page
from rmexplain.analysis.pages import perturbation_rows
from rmexplain.analysis.plots import FigureOptions, example_rm_figure
from rmexplain.analysis.representative import local_tau
from rmexplain.analysis.sensitivity import AnalysisError
from rmexplain.analysis.tables import SIDE_LABEL, num, to_markdown
from rmexplain.data.readers import Pair, SkipCounter, check_pair
from rmexplain.design import Design
from rmexplain.effects.base import LENGTH
from rmexplain.effects.single import NOTE as EFFECTS_NOTE
from rmexplain.effects.single import one_comparison_effects
from rmexplain.explanations.categorise import categorise
from rmexplain.findings.language import attribute_phrase
from rmexplain.perturb.stages import perturb_to_parquet
from rmexplain.schemas import (
    COMPARISONS,
    EXPLANATIONS,
    ORIGINAL_SCORES,
    PERTURBATIONS,
    PFR,
    REWARDS,
    conform,
    read_table,
    write_table,
)
from rmexplain.score.stages import score_originals, score_stage

COMPARISON_ID = "cli-0"


@dataclass
class Request:
    """What to explain: one prompt, the response a person prefers (if known) and the other one."""

    prompt: str
    chosen: str
    rejected: str


def comparison_frame(request: Request, dataset: str = "cli") -> pl.DataFrame:
    """The COMPARISONS row of the request; empty or identical responses are an error."""
    skips = SkipCounter()
    if not check_pair(Pair("0", request.prompt, request.chosen, request.rejected), skips):
        raise AnalysisError(f"cannot explain this comparison: {skips.summary()}")
    frame = pl.DataFrame(
        {
            "comparison_id": [COMPARISON_ID],
            "dataset": [dataset],
            "seed": [0],
            "source_index": ["0"],
            "prompt": [request.prompt],
            "chosen": [request.chosen],
            "rejected": [request.rejected],
        }
    )
    return conform(frame, COMPARISONS, "comparison")


def artifacts_for(config: dict[str, Any], rm: str, root: Path) -> dict[str, str]:
    """Files a scorer needs besides its spec (a demo RM's trained head, made by the workflow)."""
    artifacts = {}
    for name, relative in Design.from_config(config).rm_artifact_files(rm).items():
        path = root / relative
        if not path.is_file():
            raise AnalysisError(
                f"reward model {rm!r} needs {path}, which does not exist; make it first with "
                f"`snakemake --cores 2 {relative}`"
            )
        artifacts[name] = str(path)
    return artifacts


def choose_method(config: dict[str, Any], method: str | None) -> str:
    """The method to perturb with: ``method`` or the first attribute-conditioned one in config."""
    if method is not None:
        return method
    design = Design.from_config(config)
    conditioned = [name for name, m in design.methods.items() if m.attribute_conditioned]
    return (conditioned or list(design.methods))[0]


def explain_one(
    config: dict[str, Any],
    request: Request,
    out: str | Path,
    rms: list[str] | None = None,
    method: str | None = None,
    root: str | Path = ".",
    global_pfr: str | Path | None = None,
    log: logging.Logger | None = None,
) -> pl.DataFrame:
    """Explain one comparison with every RM in ``rms`` (default all); return the summary table."""

    log = log or logging.getLogger("rmexplain.explain")
    out, root = Path(out), Path(root)
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    design = Design.from_config(config)
    rms = rms or list(design.reward_models)
    unknown = [rm for rm in rms if rm not in design.reward_models]
    if unknown:
        raise AnalysisError(f"--rm {unknown}: not keys of reward_models {list(design.reward_models)}")
    method = choose_method(config, method)
    comparisons = comparison_frame(request)
    comparisons_path = str(work / "comparisons.parquet")
    write_table(comparisons, comparisons_path, COMPARISONS, "comparisons")
    dataset = next(iter(design.datasets.values()))  # the first dataset's design (orientation, shared RMs)
    orienters = {rm: dataset.orienter_for(rm) for rm in rms}
    scored = set(rms) | {r for o in set(orienters.values()) for r in dataset.orienting_rms(o)}
    originals = {}
    for rm in [r for r in design.reward_models if r in scored]:
        frame = score_originals(
            comparisons_path, rm, design.scoring_spec(rm), artifacts_for(config, rm, root), log
        )
        originals[rm] = str(work / f"originals_{rm}.parquet")
        write_table(frame, originals[rm], ORIGINAL_SCORES, "original_scores")
    for orienter in dict.fromkeys(orienters.values()):
        perturb_to_parquet(
            comparisons=comparisons_path,
            scores=[originals[r] for r in dataset.orienting_rms(orienter)],
            method=method,
            registered_method=design.method(method).registered,
            orienter=orienter,
            settings=dict(design.method(method).settings),
            attributes=config["attributes"],
            output=str(work / f"perturbations_{orienter}.parquet"),
            skipped=str(work / f"skipped_{orienter}.parquet"),
            log=log,
            llm=config.get("llm") if design.method(method).uses_llm else None,
        )
    options = FigureOptions.from_config(config.get("figures"))
    rows, explained = [], {}
    for rm in rms:
        spec, arts = design.scoring_spec(rm), artifacts_for(config, rm, root)
        perturbations_path = str(work / f"perturbations_{orienters[rm]}.parquet")
        rewards = score_stage("perturbations", comparisons_path, [perturbations_path], rm, spec, arts, log)
        write_table(rewards, work / f"rewards_{rm}.parquet", REWARDS, "rewards")
        perturbations = read_table(perturbations_path, PERTURBATIONS, "perturbations")
        explanations = categorise(
            comparisons,
            read_table(originals[rm], ORIGINAL_SCORES, "original_scores"),
            perturbations,
            rewards,
            "cli",
            rm,
            method,
            log,
            orienting=[
                read_table(originals[r], ORIGINAL_SCORES, "original_scores")
                for r in dataset.orienting_rms(orienters[rm])
            ],
            orientation=dataset.explanation_orientation(rm),
        )
        write_table(explanations, work / f"explanations_{rm}.parquet", EXPLANATIONS, "explanations")
        explained[rm] = explanations
        rows.append(
            _report_rm(rm, comparisons, explanations, perturbations, out, options, global_pfr, method)
        )
    summary = pl.DataFrame(rows)
    effects = one_comparison_effects(
        design,
        comparisons,
        comparisons_path,
        method,
        rms,
        {rm: read_table(originals[rm], ORIGINAL_SCORES, "original_scores") for rm in rms},
        explained,
        {rm: artifacts_for(config, rm, root) for rm in rms},
        work,
        log,
    )
    _write_summary(summary, request, method, out, with_directions(effects))
    return summary


def with_directions(effects: pl.DataFrame) -> pl.DataFrame:
    """The one-comparison effects with each one's direction in words (after ``rank``)."""
    direction = (
        pl.struct("attribute", "effect (reward units)")
        .map_elements(lambda r: attribute_phrase(r["attribute"], r["effect (reward units)"]), pl.String)
        .alias("direction")
    )
    return effects.select("rm", "rank", direction, pl.exclude("rm", "rank"))


def _local_facts(explanations: pl.DataFrame, rm: str, global_pfr: str | Path | None) -> dict[str, str]:
    if global_pfr is None:
        return {}
    pfr = read_table(global_pfr, PFR, "pfr").filter(pl.col("rm") == rm)
    if pfr.height == 0:
        return {"local τ vs global PFR": f"no PFR of {rm} in {global_pfr}"}
    local = local_tau(explanations, pfr.drop("dataset", "method"))
    tau = {r["side"]: r["tau"] for r in local.iter_rows(named=True)}
    return {"local τ vs global PFR (Y+, Y−)": f"{num(tau.get('plus'))}, {num(tau.get('minus'))}"}


def _top(explanations: pl.DataFrame, side: str, k: int = 3) -> str:
    mine = explanations.filter((pl.col("side") == side) & pl.col("attribute").is_not_null())
    top = mine.sort("reward_delta", descending=True).head(k)
    return ", ".join(f"{a} ({num(d)})" for a, d in top.select("attribute", "reward_delta").rows()) or "–"


def _report_rm(
    rm: str,
    comparisons: pl.DataFrame,
    explanations: pl.DataFrame,
    perturbations: pl.DataFrame,
    out: Path,
    options: FigureOptions,
    global_pfr: str | Path | None,
    method: str,
) -> dict[str, Any]:
    """Figure and page of one RM; its row of the summary."""
    comparison = comparisons.row(0, named=True)
    if explanations.height == 0:
        return {
            "rm": rm,
            "prefers": "tie (not explained)",
            "agrees with human": "–",
            "CF Y+ / Y−": "–",
            "top attributes Y+": "–",
            "top attributes Y−": "–",
            "page": "–",
        }
    originals = {"chosen": comparison["chosen"], "rejected": comparison["rejected"]}
    rows = perturbation_rows(explanations, perturbations, originals)
    title = f"{rm} on one comparison ({method} perturbations)"
    figure, page = out / f"{rm}.png", out / f"{rm}.html"
    example_rm_figure(rows, title, figure, options)
    write_page(rm_page(rows, comparison, _local_facts(explanations, rm, global_pfr), rm, figure, title), page)
    first = rows.row(0, named=True)
    plus = (
        first["target"]
        if first["side"] == "plus"
        else ("rejected" if first["target"] == "chosen" else "chosen")
    )
    cf = [
        rows.filter((pl.col("side") == s) & (pl.col("kind") == "counterfactual")).height for s in SIDE_LABEL
    ]
    return {
        "rm": rm,
        "prefers": plus,
        "agrees with human": str(plus == "chosen"),
        "CF Y+ / Y−": f"{cf[0]} / {cf[1]}",
        "top attributes Y+": _top(rows, "plus"),
        "top attributes Y−": _top(rows, "minus"),
        "page": page.name,
    }


def _write_summary(
    summary: pl.DataFrame, request: Request, method: str, out: Path, effects: pl.DataFrame | None
) -> None:
    intro = (
        f"Perturbation method: {method}. *prefers*: the response the RM scores higher (y+). "
        "*CF*: perturbations that flip the preference, of y+ (Y+) and of y− (Y−). "
        "*Top attributes*: the largest reward changes against the preference (Δ)."
    )
    md = f"# One comparison explained\n\n**Prompt**: {request.prompt}\n\n{intro}\n\n{to_markdown(summary)}"
    effects_html = ""
    if effects is not None:
        per_attribute = effects.filter(pl.col("attribute") != LENGTH)["n edits"]
        note = EFFECTS_NOTE.format(n=int(per_attribute.max() or 0))
        section = f"## Attribute effects\n\n{note}\n\n{to_markdown(effects)}"
        md += f"\n{section}"
        effects.write_csv(out / "effects.csv")
        (out / "effects.md").write_text(section, encoding="utf-8")
        effects_html = f"<h3>Attribute effects</h3><p>{html.escape(note)}</p>" + _html_table(effects)
    (out / "summary.md").write_text(md, encoding="utf-8")
    (out / "summary.html").write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>One comparison explained</title></head>"
        "<body>"
        f"<h2>One comparison explained</h2><p><b>Prompt</b>: {html.escape(request.prompt)}</p>"
        f"<p>{html.escape(intro)}</p>{_html_table(summary)}{effects_html}</body></html>\n",
        encoding="utf-8",
    )


def _html_table(frame: pl.DataFrame) -> str:
    """A table of the summary's HTML page (a ``page`` column links the RM's page)."""
    cells = "".join(
        "<tr>"
        + "".join(
            f"<td><a href='{html.escape(v)}'>{html.escape(v)}</a></td>"
            if k == "page" and v != "–"
            else f"<td>{html.escape(str(v))}</td>"
            for k, v in row.items()
        )
        + "</tr>"
        for row in frame.iter_rows(named=True)
    )
    head = "".join(f"<th>{html.escape(c)}</th>" for c in frame.columns)
    return f"<table border='1' cellpadding='4'><thead><tr>{head}</tr></thead><tbody>{cells}</tbody></table>"
