"""Entry points for rules that run the paper's computations: each reads its inputs, calls ``paper``, ``elo``,
``scan`` or ``gcg`` and writes its outputs (CSV tables; TOKEN_SCORES / TOKEN_GCG Parquet)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from rmexplain import schemas as S
from rmexplain.tokens import elo, paper, stats
from rmexplain.tokens.paper_models import paper_model_properties

log = logging.getLogger(__name__)

PAPER_ANALYSIS_DEFAULTS: dict[str, Any] = {
    "match": "exact",
    "duplicates": "drop",
    "drop_na_like": True,
    "ddof": 0,
    "bias": True,
    "n_table2": 22,
    "n_top_bottom": 20,
    "afinn_lexicon": "AFINN-111",
    "afinn_join": "paper",
    "frequency_list": None,
    "rsa_permutations": 10000,
    "mds_seed": 0,
}


def _write_csv(table: pl.DataFrame, path: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    table.write_csv(path, float_precision=6)


def read_scans(paths: Sequence[str]) -> pl.DataFrame:
    """Concatenate TOKEN_SCORES tables."""
    return pl.concat([S.read_table(p, S.TOKEN_SCORES, "token scores") for p in paths])


def import_official_scores(directory: str, outputs: Mapping[tuple[str, str], str]) -> None:
    """Write the paper's per-RM CSVs in ``directory`` as TOKEN_SCORES files, ``outputs[(rm, prompt_id)]`` each
    (``rm`` = short name for the paper's ten); a pair the CSVs lack is an error naming it."""
    scans = paper.read_official_scores(directory)
    for (rm, prompt_id), path in outputs.items():
        one = scans.filter((pl.col("rm") == rm) & (pl.col("prompt_id") == prompt_id))
        if one.height == 0:
            raise paper.PaperAnalysisError(f"{directory}: no scores of RM {rm!r} for prompt {prompt_id!r}")
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        S.write_table(one, path, S.TOKEN_SCORES, f"token scores {rm}/{prompt_id}")


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
    framing pair), ``framing`` (raw-score correlations), ``sentiment_slopes``, ``frequency_slopes`` and
    ``slope_summary``. ``options``: keys of :data:`PAPER_ANALYSIS_DEFAULTS`; ``properties`` None = the
    paper's RSA properties of its ten RMs."""
    opts = {**PAPER_ANALYSIS_DEFAULTS, **options}
    scans = read_scans(scan_paths)
    shared = paper.shared_scores(
        scans, match=opts["match"], duplicates=opts["duplicates"], drop_na_like=opts["drop_na_like"]
    )
    moments = pl.concat(paper.distribution_moments(shared, p, opts["ddof"], opts["bias"]) for p in prompt_ids)
    _write_csv(moments, outputs["moments"])
    tau = paper.kendall_tau_table(shared, prompt_ids)
    _write_csv(tau, outputs["kendall_tau"])
    _write_csv(stats.mds_table(tau, prompt_ids, opts["mds_seed"]), outputs["mds"])
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
    matches = paper.afinn_matches(scans, lexicon, opts["afinn_join"])
    log.info("AFINN (%s join): %d scan rows matched", opts["afinn_join"], matches.height)
    sentiment = paper.sentiment_slopes(matches)
    _write_csv(sentiment, outputs["sentiment_slopes"])
    if opts["frequency_list"]:
        frequencies = paper.read_bnc_frequencies(opts["frequency_list"])
    else:
        frequencies = paper.wordfreq_frequencies(matches["token"].unique().to_list())
    frequency = paper.frequency_slopes(matches, frequencies)
    _write_csv(frequency, outputs["frequency_slopes"])
    summary = pl.concat(
        [
            paper.slope_summary(sentiment, ["prompt_id", "affect"]).with_columns(
                pl.lit("sentiment").alias("fit")
            ),
            paper.slope_summary(frequency, ["prompt_id"]).with_columns(
                pl.lit("frequency").alias("fit"), pl.lit(None, dtype=pl.String).alias("affect")
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


def run_scan_official(
    name: str,
    spec: Mapping[str, Any],
    prompt_id: str,
    prompt: str,
    vocabulary_path: str,
    scan: Mapping[str, Any],
    output: str,
    threads: int = 2,
) -> None:
    """Scan a transformers RM the paper's way (``scan.scan_official``); writes TOKEN_SCORES."""
    from rmexplain.score.hf import load_model_and_tokenizer
    from rmexplain.score.specs import parse_spec
    from rmexplain.tokens.pipeline import set_threads
    from rmexplain.tokens.scan import ScanSettings, scan_official

    set_threads(threads)
    vocabulary = S.read_table(vocabulary_path, S.TOKEN_VOCABULARY, "token vocabulary")
    parsed = parse_spec(name, dict(spec))
    model, tokenizer = load_model_and_tokenizer(parsed)
    table = scan_official(model, tokenizer, parsed, prompt, vocabulary, ScanSettings(**scan))
    table = table.with_columns(pl.lit(name).alias("rm"), pl.lit(prompt_id).alias("prompt_id"))
    S.write_table(table, output, S.TOKEN_SCORES, f"official token scores {name}/{prompt_id}")


def run_scan_comparison(
    pairs: Sequence[tuple[str, str, str, str]],
    specs: Mapping[str, Mapping[str, Any]],
    prompts: Mapping[str, str],
    n: int,
    output: str,
) -> None:
    """One row per (RM, prompt) comparing its exact and official scans (``scan.compare_scans``); ``pairs`` are
    ``(rm, prompt_id, exact_path, official_path)``. Sequences are rebuilt from the RM's tokenizer."""
    from rmexplain.score.hf import load_tokenizer
    from rmexplain.score.specs import parse_spec
    from rmexplain.tokens.scan import compare_scans, exact_token_ids, official_token_ids

    rows = []
    for rm, prompt_id, exact_path, official_path in pairs:
        exact = S.read_table(exact_path, S.TOKEN_SCORES, "token scores")
        official = S.read_table(official_path, S.TOKEN_SCORES, "official token scores")
        parsed = parse_spec(rm, dict(specs[rm]))
        tokenizer = load_tokenizer(parsed)
        report = compare_scans(
            exact,
            official,
            n,
            exact_token_ids(tokenizer, parsed, prompts[prompt_id], exact["token_id"].to_list()),
            official_token_ids(tokenizer, parsed, prompts[prompt_id], official["token_id"].to_list()),
        )
        log.info("%s/%s exact vs official: %s", rm, prompt_id, report)
        rows.append({"rm": rm, "prompt_id": prompt_id, **report})
    _write_csv(pl.DataFrame(rows), output)


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
    from dataclasses import fields

    from rmexplain.score.hf import load_model_and_tokenizer
    from rmexplain.score.specs import parse_spec
    from rmexplain.tokens.gcg import PaperGCGSettings, paper_gcg_search
    from rmexplain.tokens.pipeline import set_threads
    from rmexplain.tokens.scan import ScanSettings

    set_threads(threads)
    parsed = parse_spec(name, dict(spec))
    model, tokenizer = load_model_and_tokenizer(parsed)
    keys = {f.name for f in fields(PaperGCGSettings)}
    settings = PaperGCGSettings(**{k: v for k, v in gcg.items() if k in keys})
    history = paper_gcg_search(model, tokenizer, parsed, prompt, objective, settings, ScanSettings(**scan))
    table = history.with_columns(pl.lit(name).alias("rm"), pl.lit(prompt_id).alias("prompt_id"))
    S.write_table(table, output, S.TOKEN_GCG, f"paper GCG {name}/{prompt_id}/{objective}")
