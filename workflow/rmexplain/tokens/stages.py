"""Entry points of the token rules: each reads its inputs, calls the library and writes its outputs.

Rule scripts (``workflow/scripts/tokens_*.py``) call exactly one of these with plain values.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from rmexplain import schemas as S
from rmexplain.tokens import plots, stats

log = logging.getLogger(__name__)


def _is_exact(spec: Mapping[str, Any]) -> bool:
    from rmexplain.score.base import backend_of

    return backend_of(dict(spec)).exact_token_ids


def _spec(name: str, spec: Mapping[str, Any]) -> Any:
    from rmexplain.score.specs import parse_spec

    return parse_spec(name, spec)


def load_vocabulary_tokenizer(name: str, spec: Mapping[str, Any], text_tokenizer: str) -> Any:
    """The RM's own tokenizer where its spec names one (transformers; vllm/remote with model or tokenizer),
    else ``text_tokenizer`` (``bundled-minilm`` or a path), e.g. for the demo and python RMs."""
    if spec.get("backend") in ("transformers", "vllm", "remote") and (
        spec.get("tokenizer") or spec.get("model")
    ):
        from rmexplain.score.hf import load_tokenizer

        return load_tokenizer(_spec(name, spec))
    from transformers import AutoTokenizer

    from rmexplain.embeddings import resolve_model_path

    log.info(
        "%s: backend %s has no tokenizer of its own; scanning the vocabulary of %s",
        name,
        spec.get("backend"),
        text_tokenizer,
    )
    return AutoTokenizer.from_pretrained(resolve_model_path(text_tokenizer))


def run_vocabulary(name: str, spec: Mapping[str, Any], vocabulary: Mapping[str, Any], output: str) -> None:
    """Write the VOCABULARY table of RM ``name``."""
    from rmexplain.tokens.vocab import select_vocabulary

    tokenizer = load_vocabulary_tokenizer(name, spec, vocabulary["text_tokenizer"])
    table = select_vocabulary(
        tokenizer,
        vocabulary["mode"],
        include_special=vocabulary["include_special"],
        min_zipf=vocabulary["min_zipf"],
        max_tokens=vocabulary.get("max_tokens"),
        list_path=vocabulary.get("list_path"),
        list_kind=vocabulary["list_kind"],
    )
    S.write_table(table, output, S.TOKEN_VOCABULARY, "token vocabulary")


def set_threads(threads: int) -> None:
    """Use exactly the job's CPU threads: torch's default (all cores) oversubscribes parallel jobs badly."""
    import torch

    torch.set_num_threads(max(1, int(threads)))


def run_scan(
    name: str,
    spec: Mapping[str, Any],
    artifacts: Mapping[str, str],
    prompt_id: str,
    prompt: str,
    vocabulary_path: str,
    scan: Mapping[str, Any],
    output: str,
    threads: int = 1,
) -> None:
    """Score every token of the vocabulary table as the response to ``prompt``; write TOKEN_SCORES."""
    from rmexplain.tokens.scan import ScanSettings, scan_text, scan_transformers

    set_threads(threads)
    vocabulary = S.read_table(vocabulary_path, S.TOKEN_VOCABULARY, "token vocabulary")
    settings = ScanSettings(**scan)
    if _is_exact(spec):
        from rmexplain.score.hf import load_model_and_tokenizer

        parsed = _spec(name, spec)
        model, tokenizer = load_model_and_tokenizer(parsed)
        table = scan_transformers(model, tokenizer, parsed, prompt, vocabulary, settings)
    else:
        from rmexplain.score.base import build_scorer

        log.info(
            "%s: backend %s scores text: each token's decoded text is the response", name, spec.get("backend")
        )
        table = scan_text(
            build_scorer(name, dict(spec), **artifacts), prompt, vocabulary, settings.batch_size
        )
    table = table.with_columns(pl.lit(name).alias("rm"), pl.lit(prompt_id).alias("prompt_id"))
    S.write_table(table, output, S.TOKEN_SCORES, f"token scores {name}/{prompt_id}")


def read_scans(paths: Sequence[str]) -> pl.DataFrame:
    """Concatenate scan tables (checked against TOKEN_SCORES)."""
    return pl.concat([S.read_table(p, S.TOKEN_SCORES, "token scores") for p in paths])


def _write_csv(table: pl.DataFrame, path: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    table.write_csv(path, float_precision=6)


def run_extremes(scan_paths: Sequence[str], n: int, output: str) -> None:
    """The optimal and pessimal tokens of every (RM, prompt)."""
    _write_csv(stats.extreme_tokens(read_scans(scan_paths), n), output)


def run_agreement(
    scan_paths: Sequence[str],
    prompt_ids: Sequence[str],
    analysis: Mapping[str, Any],
    properties: Mapping[str, Mapping[str, Any]],
    outputs: Mapping[str, str],
) -> None:
    """Kendall τ, MDS coordinates and RSA tables."""
    scans = read_scans(scan_paths)
    tau = stats.tau_table(scans, prompt_ids, analysis["match"])
    _write_csv(tau, outputs["kendall_tau"])
    _write_csv(stats.mds_table(tau, prompt_ids, analysis["mds_seed"]), outputs["mds"])
    rms = list(dict.fromkeys(scans["rm"].to_list()))
    rsa = stats.rsa_table(
        tau,
        prompt_ids,
        {rm: properties.get(rm, {}) for rm in rms},
        analysis["rsa_permutations"],
        analysis["mds_seed"],
    )
    for row in rsa.iter_rows(named=True):
        log.info(
            "RSA %s %s: Spearman r = %s, p = %s over %d pairs",
            row["prompt_id"],
            row["property"],
            row["spearman_r"],
            row["p_value"],
            row["n_pairs"],
        )
    _write_csv(rsa, outputs["rsa"])


def run_lexical(scan_paths: Sequence[str], lexicon: str, outputs: Mapping[str, str]) -> None:
    """AFINN sentiment slopes by valence and word-frequency slopes controlling for sentiment."""
    features = stats.with_lexical_features(read_scans(scan_paths), stats.afinn_lexicon(lexicon))
    log.info(
        "lexical features: %d word tokens, %d rated by %s",
        features.height,
        features["afinn"].is_not_null().sum(),
        lexicon,
    )
    _write_csv(stats.sentiment_slopes(features), outputs["sentiment_slopes"])
    _write_csv(stats.frequency_slopes(features), outputs["frequency_slopes"])


def run_framing(scan_paths: Sequence[str], prompt_a: str, prompt_b: str, table_out: str) -> None:
    """Per-RM comparison of two framings (summary table)."""
    framing = stats.framing_table(read_scans(scan_paths), prompt_a, prompt_b)
    _write_csv(stats.framing_summary(framing), table_out)


def plot_framing(
    scan_paths: Sequence[str], prompt_a: str, prompt_b: str, figures: Mapping[str, Any], figure_out: str
) -> None:
    """The best-vs-worst framing scatter (Fig. 4)."""
    plots.framing_figure(
        stats.framing_table(read_scans(scan_paths), prompt_a, prompt_b), dict(figures), figure_out
    )


def run_human_scores(
    name: str,
    spec: Mapping[str, Any],
    artifacts: Mapping[str, str],
    ranking_path: str,
    prompt: str,
    output: str,
    threads: int = 1,
) -> None:
    """Score every item of the human ranking as a response to ``prompt`` (ordinary text scoring)."""
    from rmexplain.score.base import build_scorer

    set_threads(threads)
    ranking = stats.read_human_ranking(ranking_path)
    scorer = build_scorer(name, dict(spec), **artifacts)
    items = ranking["item"].to_list()
    scores = scorer.score([prompt] * len(items), items)
    table = ranking.with_columns(pl.Series("score", scores, dtype=pl.Float64), pl.lit(name).alias("rm"))
    S.write_table(table, output, S.TOKEN_HUMAN_SCORES, f"human-ranking scores {name}")


def run_human_compare(paths: Sequence[str], n: int, outputs: Mapping[str, str]) -> None:
    """Spearman ρ per RM and the largest disagreements with the human ranking (tables)."""
    scored = pl.concat([S.read_table(p, S.TOKEN_HUMAN_SCORES, "human-ranking scores") for p in paths])
    comparison = stats.human_comparison(scored)
    for rm, rho, n_items in comparison.iter_rows():
        log.info("human ranking vs %s: Spearman rho = %.3f over %d items", rm, rho, n_items)
    _write_csv(comparison, outputs["human_ranking"])
    _write_csv(stats.human_disagreements(scored, n), outputs["human_disagreements"])


def plot_human_disagreements(disagreements_csv: str, figures: Mapping[str, Any], figure_out: str) -> None:
    """The largest human-vs-RM disagreements as bars (Fig. 5B)."""
    plots.human_disagreements_figure(pl.read_csv(disagreements_csv), dict(figures), figure_out)


def run_gcg(
    name: str,
    spec: Mapping[str, Any],
    prompt_id: str,
    prompt: str,
    objective: str,
    gcg: Mapping[str, Any],
    scan: Mapping[str, Any],
    output: str,
    threads: int = 2,
) -> None:
    """GCG search for one (RM, prompt, objective); writes the per-step TOKEN_GCG table."""
    from rmexplain.score.hf import load_model_and_tokenizer
    from rmexplain.tokens.gcg import GCGSettings, gcg_search
    from rmexplain.tokens.scan import ScanSettings

    set_threads(threads)
    if not _is_exact(spec):
        raise ValueError(
            f"reward_models.{name}: GCG needs backend transformers (gradients through the embeddings)"
        )
    parsed = _spec(name, spec)
    model, tokenizer = load_model_and_tokenizer(parsed)
    settings = GCGSettings(**{k: v for k, v in gcg.items() if k not in {"enabled", "objectives", "prompts"}})
    history = gcg_search(model, tokenizer, parsed, prompt, objective, settings, ScanSettings(**scan))
    table = history.with_columns(pl.lit(name).alias("rm"), pl.lit(prompt_id).alias("prompt_id"))
    S.write_table(table, output, S.TOKEN_GCG, f"GCG {name}/{prompt_id}/{objective}")


def run_gcg_summary(paths: Sequence[str], output: str) -> None:
    """The best response of every GCG run, with its initial score for comparison."""
    rows = []
    for path in paths:
        history = S.read_table(path, S.TOKEN_GCG, "GCG")
        sign = -1.0 if history["objective"][0] == "optimal" else 1.0
        best = history.sort(pl.col("score") * sign).row(0, named=True)
        rows.append(
            {
                "rm": best["rm"],
                "prompt_id": best["prompt_id"],
                "objective": best["objective"],
                "initial_score": history.filter(pl.col("step") == 0)["score"][0],
                "best_score": best["score"],
                "best_step": best["step"],
                "steps": int(history["step"].max()),
                "text": best["text"],
                "token_ids": " ".join(str(i) for i in best["token_ids"]),
                "retokenizes_same": best["retokenizes_same"],
            }
        )
    _write_csv(pl.DataFrame(rows), output)


def run_figures(
    scan_paths: Sequence[str],
    prompts: Mapping[str, str],
    tables: Mapping[str, str],
    figures: Mapping[str, Any],
    outputs: Mapping[str, str],
) -> None:
    """Violins, τ heatmap, MDS map and the two slope figures."""
    options = dict(figures)
    plots.violins(read_scans(scan_paths), dict(prompts), options, outputs["violins"])
    tau = pl.read_csv(tables["kendall_tau"])
    plots.tau_heatmap(tau, options, outputs["tau_heatmap"])
    plots.mds_map(pl.read_csv(tables["mds"]), pl.read_csv(tables["rsa"]), options, outputs["mds"])
    plots.sentiment_slopes_figure(
        pl.read_csv(tables["sentiment_slopes"]), options, outputs["sentiment_slopes"]
    )
    plots.frequency_slopes_figure(
        pl.read_csv(tables["frequency_slopes"]), options, outputs["frequency_slopes"]
    )
