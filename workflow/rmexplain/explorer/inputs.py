"""What the explorer reads for a design, and the settings its rule passes on (an input function and params of
``rule explorer``, workflow/rules/explorer.smk)."""

from __future__ import annotations

from typing import Any

from rmexplain import paths, targets
from rmexplain.design import Design


def explorer_inputs(design: Design) -> dict[str, list[str]]:
    """The workflow's tables the explorer is built from, by ``ExplorerInputs`` field: every dataset's
    comparisons, original scores, perturbations and explanations (all methods, all RMs), the analyses' flip
    rates and representative examples (and the judge's verdicts where it runs), the
    findings with the effect edits and their reward changes behind them (and the discovery's edits), the
    token scans the token analyses read and the human-ranking scores (where the token part runs)."""
    analysed = bool(design.analysed_pairs)
    tokens = design.tokens.enabled
    datasets = design.datasets.items()
    return {
        "comparisons": [paths.fmt(paths.COMPARISONS, dataset=name) for name in design.datasets],
        "originals": [
            paths.fmt(paths.ORIGINAL_SCORES, dataset=n, rm=rm) for n, d in datasets for rm in d.rms
        ],
        "perturbations": [
            targets.perturbation_file(n, m, o) for n, d in datasets for m in d.methods for o in d.orienters
        ],
        "explanations": [
            paths.fmt(paths.EXPLANATIONS, dataset=n, method=m, rm=rm)
            for n, d in datasets
            for m in d.methods
            for rm in d.rms
        ],
        "pfr": targets.analysis_table_inputs(design, "pfr") if analysed else [],
        "examples": targets.analysis_table_inputs(design, "representative_examples") if analysed else [],
        "judgements": (
            targets.analysis_table_inputs(design, "attribute_judge")
            if analysed and design.judge_enabled
            else []
        ),
        "token_scans": targets.token_scan_files(design) if tokens else [],
        "token_human": targets.token_human_files(design) if tokens else [],
        "findings": [paths.FINDINGS] if design.findings_enabled else [],
        "effect_edits": [paths.fmt(paths.EFFECT_EDITS, dataset=d, method=m) for d, m in design.effect_pairs],
        "effect_changes": targets.effect_change_files(design),
        "discovery_edits": targets.findings_inputs(design)["discovery_edits"],
    }


def explorer_settings(design: Design) -> dict[str, Any]:
    """``ExplorerSettings`` keys that come from the config: the token prompts, the human ranking's prompt, the
    length of the token lists and the flip rates' confidence level."""
    tokens = design.tokens.settings
    human = design.tokens.human_ranking
    return {
        "token_prompts": dict(tokens.get("prompts") or {}) if design.tokens.enabled else {},
        "human_prompt": human.get("prompt") if human and design.tokens.enabled else None,
        "n_extremes": int(tokens["analysis"]["n_extremes"]),
        "level": float(design.analysis["bootstrap"]["confidence_level"]),
    }
