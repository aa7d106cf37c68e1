"""Entry points of the token rules: each reads its inputs, calls the library and writes its outputs.

Rule scripts (``workflow/scripts/tokens_*.py``) call exactly one of these with plain values.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import polars as pl

from rmexplain import schemas as S
from rmexplain.embeddings import resolve_model_path
from rmexplain.resources import use_job_threads
from rmexplain.score.base import backend_of, build_scorer
from rmexplain.score.hf import load_model_and_tokenizer, load_tokenizer, pinned_template_date
from rmexplain.score.specs import parse_spec
from rmexplain.settings import schema_defaults
from rmexplain.tokens import elo, paper, plots, stats
from rmexplain.tokens.paper_models import paper_model_properties
from rmexplain.tokens.vocab import select_vocabulary

log = logging.getLogger(__name__)


def _is_exact(spec: Mapping[str, Any]) -> bool:
    return backend_of(dict(spec)).exact_token_ids


def _spec(name: str, spec: Mapping[str, Any]) -> Any:
    return parse_spec(name, spec)


def load_vocabulary_tokenizer(name: str, spec: Mapping[str, Any], text_tokenizer: str) -> Any:
    """The RM's own tokenizer where its spec names one (transformers; vllm/remote with model or tokenizer),
    else ``text_tokenizer`` (``bundled-minilm`` or a path), e.g. for the demo and python RMs."""
    if backend_of(dict(spec)).own_tokenizer and (spec.get("tokenizer") or spec.get("model")):
        return load_tokenizer(_spec(name, spec))
    from transformers import AutoTokenizer

    log.info(
        "%s: backend %s has no tokenizer of its own; scanning the vocabulary of %s",
        name,
        spec.get("backend"),
        text_tokenizer,
    )
    return AutoTokenizer.from_pretrained(resolve_model_path(text_tokenizer))


def run_vocabulary(name: str, spec: Mapping[str, Any], vocabulary: Mapping[str, Any], output: str) -> None:
    """Write the VOCABULARY table of RM ``name``."""

    tokenizer = load_vocabulary_tokenizer(name, spec, vocabulary["text_tokenizer"])
    table = select_vocabulary(
        tokenizer,
        vocabulary["mode"],
        include_special=vocabulary["include_special"],
        min_zipf=vocabulary["min_zipf"],
        max_tokens=vocabulary.get("max_tokens"),
        list_path=vocabulary.get("list_path"),
        list_kind=vocabulary["list_kind"],
        clean_up=vocabulary.get("clean_up", "paper"),
    )
    S.write_table(table, output, S.TOKEN_VOCABULARY, "token vocabulary")


def template_date(scan: Mapping[str, Any]) -> Any:
    """A context in which chat templates see ``tokens.scan.template_date`` as today (no change when unset)."""
    from rmexplain.tokens.scan import parse_template_date

    date = parse_template_date(scan.get("template_date"))
    if date is not None:
        log.info("chat templates see the date %s (tokens.scan.template_date)", date.isoformat())
    return pinned_template_date(date)


def scan_settings(scan: Mapping[str, Any]) -> Any:
    """``tokens.scan`` as ScanSettings (the keys that are not scan settings, such as ``mode``, left out)."""

    from rmexplain.tokens.scan import ScanSettings

    return ScanSettings(**{f.name: scan[f.name] for f in fields(ScanSettings) if f.name in scan})


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
    mode: str = "exact",
) -> None:
    """Score every token of the vocabulary table as the response to ``prompt``; write TOKEN_SCORES.

    ``mode`` ``exact``: the token id between the template's prefix and suffix ids (one BOS; text-scoring
    backends score the decoded text); ``official``: the paper's route (decode, template as text, default
    tokenisation: :func:`rmexplain.tokens.scan.scan_official`), transformers RMs only."""
    from rmexplain.tokens.scan import scan_official, scan_text, scan_transformers

    use_job_threads(threads)
    vocabulary = S.read_table(vocabulary_path, S.TOKEN_VOCABULARY, "token vocabulary")
    settings = scan_settings(scan)
    if _is_exact(spec):
        parsed = _spec(name, spec)
        model, tokenizer = load_model_and_tokenizer(parsed)
        route = scan_official if mode == "official" else scan_transformers
        with template_date(scan):
            table = route(model, tokenizer, parsed, prompt, vocabulary, settings)
    elif mode == "official":
        raise ValueError(f"reward_models.{name}: tokens.scan official mode needs backend transformers")
    else:
        log.info(
            "%s: backend %s scores text: each token's decoded text is the response", name, spec.get("backend")
        )
        table = scan_text(
            build_scorer(name, dict(spec), **artifacts), prompt, vocabulary, settings.batch_size
        )
    table = table.with_columns(pl.lit(name).alias("rm"), pl.lit(prompt_id).alias("prompt_id"))
    S.write_table(table, output, S.TOKEN_SCORES, f"token scores ({mode}) {name}/{prompt_id}")


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
    tables = agreement_tables(
        read_scans(scan_paths),
        prompt_ids,
        analysis["match"],
        properties,
        analysis["rsa_permutations"],
        analysis["mds_seed"],
    )
    for name, table in tables.items():
        _write_csv(table, outputs[name])


def agreement_tables(
    scans: pl.DataFrame,
    prompt_ids: Sequence[str],
    match: str,
    properties: Mapping[str, Mapping[str, Any]],
    permutations: int,
    seed: int,
) -> dict[str, pl.DataFrame]:
    """``kendall_tau`` between every RM pair, their ``mds`` map (1 − τ) and the ``rsa`` of 1 − τ against
    the RMs' ``properties`` (RSA rows logged)."""
    tau = stats.tau_table(scans, prompt_ids, match)
    rms = list(dict.fromkeys(scans["rm"].to_list()))
    rsa = stats.rsa_table(tau, prompt_ids, {rm: properties.get(rm, {}) for rm in rms}, permutations, seed)
    for row in rsa.iter_rows(named=True):
        log.info(
            "RSA %s %s: Spearman r = %s, p = %s over %d pairs",
            row["prompt_id"],
            row["property"],
            row["spearman_r"],
            row["p_value"],
            row["n_pairs"],
        )
    return {"kendall_tau": tau, "mds": stats.mds_table(tau, prompt_ids, seed), "rsa": rsa}


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
    scan: Mapping[str, Any] | None = None,
) -> None:
    """Score every item of the human ranking as a response to ``prompt`` (ordinary text scoring; chat
    templates see ``scan``'s ``template_date``). An RM whose
    model hub id is a column of the file (an EloEverything export, as the paper's data) takes its scores from
    that column instead, as the paper's Fig. 5 does."""
    ranking = stats.read_human_ranking(ranking_path)
    items = ranking["item"].to_list()
    column = stats.scores_in_ranking_file(spec, ranking_path)
    if column is not None:
        log.info(
            "%s: scores of the %d items taken from column %r of %s", name, len(items), column, ranking_path
        )
        scores = stats.read_ranking_file(ranking_path)[column].cast(pl.Float64).to_list()
    else:
        use_job_threads(threads)
        scorer = build_scorer(name, dict(spec), **artifacts)
        with template_date(scan or {}):
            scores = scorer.score([prompt] * len(items), items)
    table = ranking.with_columns(pl.Series("score", scores, dtype=pl.Float64), pl.lit(name).alias("rm"))
    S.write_table(table, output, S.TOKEN_HUMAN_SCORES, f"human-ranking scores {name}")


def run_human_compare(paths: Sequence[str], n: int, outputs: Mapping[str, str]) -> None:
    """Spearman ρ per RM and the largest disagreements with the human ranking (the project's tables), and the
    paper's Fig. 5 tables of the same scores (``figure5_<part>``, :func:`run_elo_figure5`)."""
    scored = pl.concat([S.read_table(p, S.TOKEN_HUMAN_SCORES, "human-ranking scores") for p in paths])
    comparison = stats.human_comparison(scored)
    for rm, rho, n_items in comparison.iter_rows():
        log.info("human ranking vs %s: Spearman rho = %.3f over %d items", rm, rho, n_items)
    _write_csv(comparison, outputs["human_ranking"])
    _write_csv(stats.human_disagreements(scored, n), outputs["human_disagreements"])
    figure5 = {k.removeprefix("figure5_"): v for k, v in outputs.items() if k.startswith("figure5_")}
    run_elo_figure5("human_ranking", figure5, n_differences=n, human_scores=paths)


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
    from rmexplain.tokens.gcg import GCGSettings, gcg_search

    use_job_threads(threads)
    if not _is_exact(spec):
        raise ValueError(
            f"reward_models.{name}: GCG needs backend transformers (gradients through the embeddings)"
        )
    parsed = _spec(name, spec)
    model, tokenizer = load_model_and_tokenizer(parsed)
    settings = GCGSettings(**{k: v for k, v in gcg.items() if k not in {"enabled", "objectives", "prompts"}})
    with template_date(scan):
        history = gcg_search(model, tokenizer, parsed, prompt, objective, settings, scan_settings(scan))
    table = history.with_columns(pl.lit(name).alias("rm"), pl.lit(prompt_id).alias("prompt_id"))
    S.write_table(table, output, S.TOKEN_GCG, f"GCG {name}/{prompt_id}/{objective}")


def gcg_best_row(history: pl.DataFrame) -> dict[str, Any]:
    """The best step of one GCG run: with a ``loss`` column (the paper's GCG) the first step from 1 on of
    lowest loss, as the fork's result (``losses.index(min(losses))``); else the highest (optimal) or lowest
    (pessimal) score of any step, the earliest on ties."""
    if "loss" in history.columns and history.height > 1:
        steps = history.filter(pl.col("step") >= 1).sort("step")
        return steps.row(int(steps["loss"].arg_min()), named=True)
    sign = -1.0 if history["objective"][0] == "optimal" else 1.0
    return history.sort([pl.col("score") * sign, pl.col("step")]).row(0, named=True)


def run_gcg_summary(paths: Sequence[str], output: str) -> None:
    """The best response of every GCG run, with its initial score for comparison."""
    rows = []
    for path in paths:
        history = S.read_table(path, S.TOKEN_GCG, "GCG")
        best = gcg_best_row(history)
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


# ---- the paper's computations (Christian et al.): official scans and CSVs, paper tables, Fig. 5, GCG ----
# The paper's computations' options: tokens.paper_analysis without its switches (enabled, properties).
PAPER_ANALYSIS_DEFAULTS: dict[str, Any] = {
    key: value
    for key, value in schema_defaults("tokens", "paper_analysis").items()
    if key not in ("enabled", "properties")
}


def paper_shared_scores(scans: pl.DataFrame, opts: Mapping[str, Any]) -> pl.DataFrame:
    """The scans on the paper's shared vocabulary, with the ``match``, ``duplicates`` and ``drop_na_like``
    options of ``tokens.paper_analysis``."""
    return paper.shared_scores(
        scans, match=opts["match"], duplicates=opts["duplicates"], drop_na_like=opts["drop_na_like"]
    )


def import_official_scan(csv: str, rm: str, prompt_id: str, output: str) -> None:
    """The scores of ``prompt_id`` in one of the paper's per-RM CSVs, as RM ``rm``'s TOKEN_SCORES file."""
    one = paper.read_official_file(csv, rm).filter(pl.col("prompt_id") == prompt_id)
    if one.height == 0:
        raise paper.PaperAnalysisError(f"{csv}: no column {prompt_id!r} (a key of tokens.prompts)")
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    S.write_table(one, output, S.TOKEN_SCORES, f"official token scores {rm}/{prompt_id}")


def afinn_join_report(by_join: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """Both AFINN joins side by side (the paper's, which never matches a token with a leading space, and the
    stripped one): matched scan rows and the mean sentiment slope per prompt and valence."""
    parts = []
    for join, matches in by_join.items():
        summary = paper.slope_summary(paper.sentiment_slopes(matches), ["prompt_id", "affect"])
        counts = matches.group_by("prompt_id").len("matched_rows")
        parts.append(
            summary.join(counts, on="prompt_id", how="left").with_columns(pl.lit(join).alias("join"))
        )
    return pl.concat(parts).select("join", "prompt_id", "affect", "matched_rows", "mean", "se", "n_rms")


def run_paper_analyses(
    scan_paths: Sequence[str],
    prompt_ids: Sequence[str],
    options: Mapping[str, Any],
    framing_pairs: Sequence[Sequence[str]],
    properties: Mapping[str, Mapping[str, Any]] | None,
    outputs: Mapping[str, str],
) -> None:
    """The paper's tables from scans: ``moments`` (Table 3, every prompt), ``kendall_tau``, ``mds``, ``rsa``,
    ``table2`` (raw vocabulary), ``top_bottom`` (shared vocabulary; every prompt plus best±worst of each
    framing pair), ``framing`` (raw-score correlations), ``sentiment_slopes``, ``frequency_slopes`` (on
    ``frequency_list``, the paper's BNC list, or else on wordfreq: its file and its ``slope_summary`` rows,
    fit ``frequency_wordfreq``, are named for it), ``slope_summary`` (with ``afinn_join``) and ``afinn_joins``
    (both joins reported). ``options``: keys of
    :data:`PAPER_ANALYSIS_DEFAULTS`; ``properties`` None = the paper's RSA properties of its ten RMs."""
    opts = {**PAPER_ANALYSIS_DEFAULTS, **options}
    scans = read_scans(scan_paths)
    shared = paper_shared_scores(scans, opts)
    moments = pl.concat(paper.distribution_moments(shared, p, opts["ddof"], opts["bias"]) for p in prompt_ids)
    _write_csv(moments, outputs["moments"])
    tau = paper.kendall_tau_table(shared, prompt_ids)
    _write_csv(tau, outputs["kendall_tau"])
    _write_csv(paper.mds_table(tau, prompt_ids, opts["mds_seed"]), outputs["mds"])
    props = paper_model_properties() if properties is None else properties
    rms = list(dict.fromkeys(scans["rm"].to_list()))
    _write_csv(
        stats.rsa_table(tau, prompt_ids, {rm: props.get(rm, {}) for rm in rms}, opts["rsa_permutations"]),
        outputs["rsa"],
    )
    _write_csv(
        pl.concat(paper.top_bottom_tokens(scans, p, opts["n_table2"]) for p in prompt_ids), outputs["table2"]
    )
    tables = [
        paper.top_bottom_tokens(shared, p, opts["n_top_bottom"]).with_columns(pl.lit(p).alias("ranking"))
        for p in prompt_ids
    ]
    framing = []
    for a, b in framing_pairs:
        for operation, label in (("sum", f"{a}+{b}"), ("difference", f"{a}-{b}")):
            combined = paper.combined_scores(shared, a, b, operation)
            tables.append(
                paper.top_bottom(combined, opts["n_top_bottom"]).with_columns(pl.lit(label).alias("ranking"))
            )
        framing.append(
            paper.framing_correlations(paper.framing_scores(shared, a, b)).with_columns(
                pl.lit(a).alias("prompt_a"), pl.lit(b).alias("prompt_b")
            )
        )
    columns = ["ranking", "rm", "part", "rank", "token_id", "text", "score"]
    _write_csv(pl.concat([t.select(columns) for t in tables]), outputs["top_bottom"])
    framing_schema = {"rm": pl.String, "pearson_r": pl.Float64, "spearman_rho": pl.Float64, "n": pl.Int64}
    framing_schema.update({"prompt_a": pl.String, "prompt_b": pl.String})
    _write_csv(pl.concat(framing) if framing else pl.DataFrame(schema=framing_schema), outputs["framing"])
    lexicon = stats.afinn_lexicon(opts["afinn_lexicon"])
    by_join = {join: paper.afinn_matches(scans, lexicon, join) for join in ("paper", "stripped")}
    _write_csv(afinn_join_report(by_join), outputs["afinn_joins"])
    matches = by_join[opts["afinn_join"]]
    log.info("AFINN (%s join): %d scan rows matched", opts["afinn_join"], matches.height)
    sentiment = paper.sentiment_slopes(matches)
    _write_csv(sentiment, outputs["sentiment_slopes"])
    if opts["frequency_list"]:
        frequencies = paper.read_bnc_frequencies(opts["frequency_list"])
    else:
        log.info("frequency fit on wordfreq, not the paper's BNC list (tokens.paper_analysis.frequency_list)")
        frequencies = paper.wordfreq_frequencies(matches["token"].unique().to_list())
    frequency = paper.frequency_slopes(matches, frequencies)
    _write_csv(frequency, outputs["frequency_slopes"])
    fit = "frequency" if opts["frequency_list"] else "frequency_wordfreq"
    summary = pl.concat(
        [
            paper.slope_summary(sentiment, ["prompt_id", "affect"]).with_columns(
                pl.lit("sentiment").alias("fit")
            ),
            paper.slope_summary(frequency, ["prompt_id"]).with_columns(
                pl.lit(fit).alias("fit"), pl.lit(None, dtype=pl.String).alias("affect")
            ),
        ],
        how="diagonal",
    ).select("fit", "prompt_id", "affect", "mean", "se", "n_rms")
    _write_csv(summary, outputs["slope_summary"])


def run_elo_figure5(
    prompt_id: str,
    outputs: Mapping[str, str],
    n_differences: int = 10,
    n_background: int = 100,
    n_highlight: int = 5,
    human_scores: Sequence[str] | None = None,
) -> None:
    """Fig. 5 tables for one bundled EloEverything prompt (or, given ``human_scores`` TOKEN_HUMAN_SCORES
    files, for the project's own RM scores of a human ranking): ``spearman``, ``differences``,
    ``top_items``, ``trajectories``."""
    if human_scores:
        scored = pl.concat(
            S.read_table(p, S.TOKEN_HUMAN_SCORES, "human-ranking scores") for p in human_scores
        )
        raters = elo.raters_from_human_scores(scored)
    else:
        raters = elo.elo_raters(elo.read_elo(prompt_id))
    ranks = elo.figure5_ranks(raters)
    spearman = elo.human_spearman(ranks)
    for rm, rho in spearman.select("rm", "spearman_rho").iter_rows():
        log.info("Fig. 5 %s: Spearman rho(human, %s) = %.3f", prompt_id, rm, rho)
    _write_csv(spearman, outputs["spearman"])
    _write_csv(elo.rank_differences(ranks, n_differences), outputs["differences"])
    _write_csv(elo.top_items(ranks), outputs["top_items"])
    _write_csv(elo.rank_trajectories(ranks, n_background, n_highlight), outputs["trajectories"])


def run_elo_agreement(
    prompt_id: str,
    permutations: int,
    seed: int,
    figures: Mapping[str, Any],
    outputs: Mapping[str, str],
) -> None:
    """The between-RM analyses on the bundled EloEverything scores of the paper's ten RMs: Kendall τ-b of
    every RM pair over the items, MDS of 1 − τ, and RSA against the paper's four properties (tables
    ``kendall_tau``, ``mds``, ``rsa``; figures ``tau_heatmap``, ``mds_map``)."""
    scored = elo.elo_human_scores(prompt_id)
    scans = scored.with_columns(
        pl.lit(prompt_id).alias("prompt_id"),
        pl.col("human_rank").alias("token_id"),
        pl.col("item").alias("text"),
    )
    tables = agreement_tables(scans, [prompt_id], "exact", paper_model_properties(), permutations, seed)
    for name, table in tables.items():
        _write_csv(table, outputs[name])
    plots.tau_heatmap(tables["kendall_tau"], dict(figures), outputs["tau_heatmap"])
    plots.mds_map(tables["mds"], tables["rsa"], dict(figures), outputs["mds_map"])


def run_scan_comparison(
    pairs: Sequence[tuple[str, str, str, str]],
    specs: Mapping[str, Mapping[str, Any]],
    prompts: Mapping[str, str],
    n: int,
    output: str,
    scan: Mapping[str, Any] | None = None,
) -> None:
    """One row per (RM, prompt) comparing its exact and official scans (``scan.compare_scans``); ``pairs`` are
    ``(rm, prompt_id, exact_path, official_path)``. Sequences are rebuilt from the RM's tokenizer (the
    official ones from the scanned texts), under ``scan``'s ``template_date``."""
    rows = []
    with template_date(scan or {}):
        for rm, prompt_id, exact_path, official_path in pairs:
            rows.append(_scan_comparison_row(rm, prompt_id, exact_path, official_path, specs, prompts, n))
    _write_csv(pl.DataFrame(rows), output)


def _scan_comparison_row(
    rm: str,
    prompt_id: str,
    exact_path: str,
    official_path: str,
    specs: Mapping[str, Mapping[str, Any]],
    prompts: Mapping[str, str],
    n: int,
) -> dict[str, Any]:
    from rmexplain.tokens.scan import compare_scans, exact_token_ids, official_token_ids

    exact = S.read_table(exact_path, S.TOKEN_SCORES, "token scores")
    official = S.read_table(official_path, S.TOKEN_SCORES, "official token scores")
    parsed = parse_spec(rm, dict(specs[rm]))
    tokenizer = load_tokenizer(parsed)
    prompt = prompts[prompt_id]
    report = compare_scans(
        exact,
        official,
        n,
        exact_token_ids(tokenizer, parsed, prompt, exact["token_id"].to_list()),
        official_token_ids(
            tokenizer, parsed, prompt, official["token_id"].to_list(), official["text"].to_list()
        ),
        bos_id=tokenizer.bos_token_id,
    )
    log.info("%s/%s exact vs official: %s", rm, prompt_id, report)
    return {"rm": rm, "prompt_id": prompt_id, **report}


def run_paper_gcg(
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
    """The paper's GCG for one (RM, prompt, objective); ``gcg`` holds :class:`PaperGCGSettings` keys (others
    ignored). Writes TOKEN_GCG (plus a ``loss`` column)."""

    from rmexplain.tokens.gcg import PaperGCGSettings, paper_gcg_search

    use_job_threads(threads)
    parsed = parse_spec(name, dict(spec))
    model, tokenizer = load_model_and_tokenizer(parsed)
    keys = {f.name for f in fields(PaperGCGSettings)}
    settings = PaperGCGSettings(**{k: v for k, v in gcg.items() if k in keys})
    with template_date(scan):
        history = paper_gcg_search(model, tokenizer, parsed, prompt, objective, settings, scan_settings(scan))
    table = history.with_columns(pl.lit(name).alias("rm"), pl.lit(prompt_id).alias("prompt_id"))
    S.write_table(table, output, S.TOKEN_GCG, f"paper GCG {name}/{prompt_id}/{objective}")


def run_gcg_variant(variant: str, **kwargs: Any) -> None:
    """``tokens.gcg.variant``: ``project`` (:func:`run_gcg`) or ``paper`` (:func:`run_paper_gcg`, with the
    ``tokens.gcg.paper`` keys over the shared ones)."""
    gcg = dict(kwargs.pop("gcg"))
    if variant == "paper":
        run_paper_gcg(gcg={**gcg, **(gcg.pop("paper", None) or {})}, **kwargs)
    else:
        gcg.pop("paper", None)
        run_gcg(gcg=gcg, **kwargs)


def run_scan_modes(
    pairs: Sequence[tuple[str, str, str, str]],
    specs: Mapping[str, Mapping[str, Any]],
    prompts: Mapping[str, str],
    n: int,
    figures: Mapping[str, Any],
    table_out: str,
    figure_out: str,
    scan: Mapping[str, Any] | None = None,
) -> None:
    """The exact-vs-official comparison table (:func:`run_scan_comparison`) and its figure."""
    run_scan_comparison(pairs, specs, prompts, n, table_out, scan)
    plots.scan_modes_figure(pl.read_csv(table_out), dict(figures), figure_out)


def plot_paper_figures(
    scan_paths: Sequence[str],
    prompts: Mapping[str, str],
    options: Mapping[str, Any],
    framing_pairs: Sequence[Sequence[str]],
    figures: Mapping[str, Any],
    outputs: Mapping[str, str],
) -> None:
    """Fig. 1 (violins) on the shared vocabulary and Fig. 4 (raw scores of two framings, y = x) as the paper
    draws them; ``outputs``: ``violins`` and ``framing_<a>_<b>`` per pair."""
    shared = paper_shared_scores(read_scans(scan_paths), {**PAPER_ANALYSIS_DEFAULTS, **options})
    n_shared = shared.filter(
        pl.col("rm") == shared["rm"][0], pl.col("prompt_id") == shared["prompt_id"][0]
    ).height
    title = f"Single-token score distributions on the shared vocabulary ({n_shared} texts every RM has)"
    plots.violins(shared, dict(prompts), dict(figures), outputs["violins"], title)
    for a, b in framing_pairs:
        plots.raw_framing_figure(
            paper.framing_scores(shared, a, b), a, b, dict(figures), outputs[f"framing_{a}_{b}"]
        )
