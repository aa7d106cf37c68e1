"""Token-scan analyses as Christian et al. computed them (their ``analysis_support.py``, ``figures/`` and
``tables/``), with the project's variants as options. Inputs are TOKEN_SCORES frames (``rm, prompt_id,
token_id, piece, text, score``), e.g. from :func:`read_official_scores` or the project's scans.

Paper defaults: the shared vocabulary is the decoded texts (exact, leading spaces kept) every RM has under
every prompt, minus texts two ids of one RM decode to, minus texts pandas reads as missing (``"null"``,
``"None"``, ``""``…, which then collapse into one duplicated missing value); Table 3 uses ``np.var``
(ddof 0) and ``scipy.stats.skew`` (biased); Fig. 3 regresses the raw score. Every ranked list orders by
score, then token id ascending (stated in each function).
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import polars as pl
from scipy import stats

from rmexplain.tokens.paper_models import hub_to_short
from rmexplain.tokens.stats import mds_coordinates
from rmexplain.tokens.stats import mds_table as stats_mds_table
from rmexplain.tokens.vocab import normalise_text

log = logging.getLogger(__name__)

# pandas.read_csv's default missing-value strings: the paper's CSVs were read with pandas, so a token that
# decodes to one of these became NaN there.
PANDAS_NA_TEXTS = frozenset(
    {
        "",
        "#N/A",
        "#N/A N/A",
        "#NA",
        "-1.#IND",
        "-1.#QNAN",
        "-NaN",
        "-nan",
        "1.#IND",
        "1.#QNAN",
        "<NA>",
        "N/A",
        "NA",
        "NULL",
        "NaN",
        "None",
        "n/a",
        "nan",
        "null",
    }
)
OFFICIAL_ID_COLUMNS = ("token_id", "token_name", "token_decoded")
DUPLICATES = ("drop", "mean")
AFINN_JOINS = ("paper", "stripped")


class PaperAnalysisError(ValueError):
    """Inputs of a paper analysis are inconsistent; the message names the file, prompt or option."""


# ---- official-format scan CSVs ----------------------------------------------------------------------------


def read_official_file(file: str | Path, rm: str) -> pl.DataFrame:
    """One of the paper's per-RM CSVs (``token_id, token_name, token_decoded`` and one score column per
    prompt, e.g. ``greatest, best, worst``) as TOKEN_SCORES rows of RM ``rm``: ``prompt_id`` the column
    name, ``piece`` the ``token_name``, ``text`` the ``token_decoded`` read literally (an empty field as
    ``""``). Rows with a missing score are dropped, as the paper's ``dropna`` does."""
    table = pl.read_csv(
        file,
        schema_overrides={"token_id": pl.Int64, "token_name": pl.String, "token_decoded": pl.String},
        infer_schema_length=None,
    )
    missing = [c for c in OFFICIAL_ID_COLUMNS if c not in table.columns]
    prompts = [c for c in table.columns if c not in OFFICIAL_ID_COLUMNS]
    if missing or not prompts:
        raise PaperAnalysisError(
            f"{file}: expected {list(OFFICIAL_ID_COLUMNS)} and score columns; have {table.columns}"
        )
    parts = [
        table.select(
            pl.lit(rm).alias("rm"),
            pl.lit(prompt).alias("prompt_id"),
            "token_id",
            pl.col("token_name").fill_null("").alias("piece"),
            pl.col("token_decoded").fill_null("").alias("text"),
            pl.col(prompt).cast(pl.Float64).alias("score"),
        ).filter(pl.col("score").is_not_null() & pl.col("score").is_not_nan())
        for prompt in prompts
    ]
    log.info("%s: %d tokens, prompts %s", rm, table.height, prompts)
    return pl.concat(parts)


def read_official_scores(directory: str | Path, names: Mapping[str, str] | None = None) -> pl.DataFrame:
    """Every per-RM CSV (``<org>--<model>.csv``) of a directory, in name order (:func:`read_official_file`);
    ``rm`` is the short name of the hub id (``names``, default the paper's ten; else the hub id)."""
    folder = Path(directory)
    files = sorted(folder.glob("*.csv"))
    if not files:
        raise PaperAnalysisError(f"no official-format score CSV in {str(folder)!r}")
    names = dict(hub_to_short() if names is None else names)
    hub_ids = [file.stem.replace("--", "/") for file in files]
    return pl.concat(read_official_file(f, names.get(h, h)) for f, h in zip(files, hub_ids, strict=True))


def _keyed(scans: pl.DataFrame, match: str, drop_na_like: bool) -> pl.DataFrame:
    rows = scans.filter(~pl.col("text").is_in(sorted(PANDAS_NA_TEXTS))) if drop_na_like else scans
    return rows.with_columns(
        pl.col("text").map_elements(lambda t: normalise_text(t, match), return_dtype=pl.String).alias("key")
    ).filter(pl.col("key") != "")


def shared_scores(
    scans: pl.DataFrame,
    *,
    match: str = "exact",
    duplicates: str = "drop",
    drop_na_like: bool = True,
    prompt_ids: Sequence[str] | None = None,
) -> pl.DataFrame:
    """The scans restricted to the shared vocabulary, one row per (RM, prompt, ``key``), sorted by RM (first-
    seen order), prompt and token id.

    ``key`` = ``normalise_text(text, match)``; shared = the keys every (RM, prompt) group holds (over
    ``prompt_ids``, default all prompts in ``scans``). ``duplicates="drop"`` (paper) removes keys two ids of
    one group share; ``"mean"`` (the project's variant) averages them (the row keeps the smallest id).
    ``drop_na_like`` removes texts in :data:`PANDAS_NA_TEXTS` first (paper).
    """
    if duplicates not in DUPLICATES:
        raise PaperAnalysisError(f"duplicates: {duplicates!r} is not one of {list(DUPLICATES)}")
    chosen = scans if prompt_ids is None else scans.filter(pl.col("prompt_id").is_in(list(prompt_ids)))
    if chosen.height == 0:
        raise PaperAnalysisError(f"no scan rows for prompts {prompt_ids}")
    keyed = _keyed(chosen, match, drop_na_like)
    groups = chosen.select("rm", "prompt_id").unique()
    counts = keyed.group_by(["rm", "prompt_id", "key"]).agg(pl.len().alias("n_ids"))
    per_key = counts.group_by("key").agg(
        pl.len().alias("n_groups"), (pl.col("n_ids") > 1).any().alias("duplicated")
    )
    shared = per_key.filter(pl.col("n_groups") == groups.height)
    if duplicates == "drop":
        shared = shared.filter(~pl.col("duplicated"))
    rows = keyed.filter(pl.col("key").is_in(shared["key"].to_list()))
    if duplicates == "mean":
        rows = (
            rows.sort("token_id")
            .group_by(["rm", "prompt_id", "key"], maintain_order=True)
            .agg(
                pl.col("token_id").first(),
                pl.col("piece").first(),
                pl.col("text").first(),
                pl.col("score").mean(),
            )
        )
    order = {rm: k for k, rm in enumerate(dict.fromkeys(chosen["rm"].to_list()))}
    log.info(
        "shared vocabulary: %d keys over %d (RM, prompt) groups (match %s, duplicates %s)",
        shared.height,
        groups.height,
        match,
        duplicates,
    )
    return (
        rows.with_columns(pl.col("rm").replace_strict(order, return_dtype=pl.Int64).alias("_rm"))
        .sort(["_rm", "prompt_id", "token_id"])
        .drop("_rm")
        .select("rm", "prompt_id", "token_id", "piece", "text", "score", "key")
    )


# ---- Table 3, Kendall τ, top/bottom tables ----------------------------------------------------------------


def _rms(frame: pl.DataFrame) -> list[str]:
    return list(dict.fromkeys(frame["rm"].to_list()))


def distribution_moments(
    shared: pl.DataFrame, prompt_id: str, ddof: int = 0, bias: bool = True
) -> pl.DataFrame:
    """Table 3: per RM, ``n``, mean, variance and skewness of one prompt's scores. Paper: ``np.var`` (ddof 0)
    and ``scipy.stats.skew`` (bias=True, the moment estimator); ``ddof=1``/``bias=False`` give the sample
    versions."""
    one = shared.filter(pl.col("prompt_id") == prompt_id)
    if one.height == 0:
        raise PaperAnalysisError(f"no scores for prompt {prompt_id!r}")
    rows = []
    for rm in _rms(one):
        scores = one.filter(pl.col("rm") == rm)["score"].to_numpy()
        rows.append(
            {
                "rm": rm,
                "prompt_id": prompt_id,
                "n": len(scores),
                "mean": float(np.mean(scores)),
                "variance": float(np.var(scores, ddof=ddof)),
                "skewness": float(stats.skew(scores, bias=bias)),
            }
        )
    return pl.DataFrame(rows)


def kendall_tau_table(shared: pl.DataFrame, prompt_ids: Sequence[str]) -> pl.DataFrame:
    """Fig. 2A: Kendall τ-b (``scipy.stats.kendalltau``) of every ordered RM pair over the shared keys, per
    prompt: ``prompt_id, rm_a, rm_b, tau, p_value, n_shared`` (the layout of ``stats.tau_table``)."""
    rows = []
    for prompt_id in prompt_ids:
        one = shared.filter(pl.col("prompt_id") == prompt_id)
        rms = _rms(one)
        wide = one.pivot(on="rm", index="key", values="score").drop_nulls().sort("key")
        for a, b in itertools.product(rms, repeat=2):
            result = stats.kendalltau(wide[a].to_numpy(), wide[b].to_numpy())
            rows.append(
                {
                    "prompt_id": prompt_id,
                    "rm_a": a,
                    "rm_b": b,
                    "tau": float(result.statistic),
                    "p_value": float(result.pvalue),
                    "n_shared": wide.height,
                }
            )
    return pl.DataFrame(rows)


def paper_mds_coordinates(
    dissimilarity: np.ndarray,
    random_state: int = 42,
    n_init: int = 4,
    max_iter: int = 300,
    eps: float = 1e-3,
) -> np.ndarray:
    """Fig. 2B's map: ``MDS(n_components=2, dissimilarity='precomputed', random_state=42).fit_transform`` as
    scikit-learn up to 1.6 computed it (the paper's script passes no other option): metric SMACOF from
    ``n_init`` uniform random starts drawn in turn from one ``RandomState(random_state)``, Guttman updates
    until the stress, divided by the summed point norms, falls by less than ``eps`` (at most ``max_iter``
    steps), the run of lowest raw stress kept. scikit-learn 1.7 changed this criterion and 1.9 the defaults,
    so the algorithm is written out here. Fewer than three RMs: the exact segment of
    :func:`rmexplain.tokens.stats.mds_coordinates` (SMACOF would give the same distances, rotated)."""
    from sklearn.metrics import euclidean_distances

    d = np.asarray(dissimilarity, dtype=float)
    n = d.shape[0]
    if n < 3:
        return mds_coordinates(d)
    rng = np.random.RandomState(random_state)
    best_stress, best = math.inf, np.zeros((n, 2))
    for _ in range(n_init):
        x = rng.uniform(size=n * 2).reshape((n, 2))
        old = None
        for _step in range(max_iter):
            dis = euclidean_distances(x)
            stress = ((dis.ravel() - d.ravel()) ** 2).sum() / 2
            dis[dis == 0] = 1e-5
            b = -d / dis
            b[np.arange(n), np.arange(n)] += (d / dis).sum(axis=1)
            x = np.dot(b, x) / n
            norm = np.sqrt((x**2).sum(axis=1)).sum()
            if old is not None and (old - stress / norm) < eps:
                break
            old = stress / norm
        if stress < best_stress:
            best_stress, best = stress, x.copy()
    return best


def mds_table(tau: pl.DataFrame, prompt_ids: Sequence[str], random_state: int = 42) -> pl.DataFrame:
    """Fig. 2B per prompt: :func:`rmexplain.tokens.stats.mds_table` with :func:`paper_mds_coordinates`."""
    return stats_mds_table(tau, prompt_ids, random_state, paper_mds_coordinates)


def top_bottom(frame: pl.DataFrame, n: int) -> pl.DataFrame:
    """The first and last ``n`` rows of every RM's order (score descending, then token id ascending), with
    ``part`` (top/bottom) and ``rank`` (1-based position in that order; bottom rows keep the order)."""
    ranked = frame.sort(["rm", "score", "token_id"], descending=[False, True, False]).with_columns(
        pl.int_range(1, pl.len() + 1).over("rm").alias("rank"), pl.len().over("rm").alias("_n")
    )
    top = ranked.filter(pl.col("rank") <= n).with_columns(pl.lit("top").alias("part"))
    bottom = ranked.filter(pl.col("rank") > pl.col("_n") - n).with_columns(pl.lit("bottom").alias("part"))
    order = {rm: k for k, rm in enumerate(_rms(frame))}
    return (
        pl.concat([top, bottom])
        .drop("_n")
        .with_columns(pl.col("rm").replace_strict(order, return_dtype=pl.Int64).alias("_rm"))
        .sort(["_rm", "part", "rank"], descending=[False, True, False])
        .drop("_rm")
    )


def top_bottom_tokens(scans: pl.DataFrame, prompt_id: str, n: int = 22) -> pl.DataFrame:
    """Table 2 (and A6/A7 on a shared frame): per RM the ``n`` best and worst tokens of one prompt:
    ``rm, prompt_id, part, rank, token_id, text, score``. Order: score descending, then token id."""
    one = scans.filter(pl.col("prompt_id") == prompt_id)
    if one.height == 0:
        raise PaperAnalysisError(f"no scores for prompt {prompt_id!r}")
    return top_bottom(one, n).select("rm", "prompt_id", "part", "rank", "token_id", "text", "score")


def combined_scores(shared: pl.DataFrame, prompt_a: str, prompt_b: str, operation: str) -> pl.DataFrame:
    """Per RM and shared key: ``score_a + score_b`` (``operation="sum"``, Table A8) or ``score_a − score_b``
    (``"difference"``, Table A9), joined on the key as the paper joins on ``token_decoded``; keeps prompt
    a's token id and text. Columns ``rm, token_id, text, key, score_a, score_b, score``."""
    if operation not in ("sum", "difference"):
        raise PaperAnalysisError(f"operation: {operation!r} is not 'sum' or 'difference'")
    a = shared.filter(pl.col("prompt_id") == prompt_a).select(
        "rm", "token_id", "text", "key", pl.col("score").alias("score_a")
    )
    b = shared.filter(pl.col("prompt_id") == prompt_b).select("rm", "key", pl.col("score").alias("score_b"))
    if a.height == 0 or b.height == 0:
        raise PaperAnalysisError(f"no shared scores for prompt {prompt_a if a.height == 0 else prompt_b!r}")
    joined = a.join(b, on=["rm", "key"], how="inner", maintain_order="left")
    sign = 1.0 if operation == "sum" else -1.0
    return joined.with_columns((pl.col("score_a") + sign * pl.col("score_b")).alias("score"))


def framing_scores(shared: pl.DataFrame, prompt_a: str, prompt_b: str) -> pl.DataFrame:
    """Fig. 4: raw scores of every shared key under two prompts, per RM (``rm, token_id, text, key, score_a,
    score_b``)."""
    return combined_scores(shared, prompt_a, prompt_b, "sum").drop("score")


def framing_correlations(framing: pl.DataFrame) -> pl.DataFrame:
    """Per RM: Pearson r and Spearman ρ between the two prompts' raw scores of :func:`framing_scores`."""
    rows = []
    for rm in _rms(framing):
        one = framing.filter(pl.col("rm") == rm)
        a, b = one["score_a"].to_numpy(), one["score_b"].to_numpy()
        rows.append(
            {
                "rm": rm,
                "pearson_r": float(stats.pearsonr(a, b).statistic),
                "spearman_rho": float(stats.spearmanr(a, b).statistic),
                "n": one.height,
            }
        )
    return pl.DataFrame(rows)


# ---- Fig. 3C/3D: AFINN sentiment and word frequency -------------------------------------------------------


def afinn_matches(scans: pl.DataFrame, lexicon: Mapping[str, int], join: str = "paper") -> pl.DataFrame:
    """Scan rows whose token is an AFINN word, with ``token`` and ``value`` (generate_figure_3.R's
    ``inner_join``). ``join="paper"``: token = lower-cased decoded text, so tokens with a leading space
    (`` love``) never match; ``"stripped"``: surrounding whitespace removed first (both spellings match)."""
    if join not in AFINN_JOINS:
        raise PaperAnalysisError(f"afinn join: {join!r} is not one of {list(AFINN_JOINS)}")
    token = pl.col("text").str.to_lowercase()
    if join == "stripped":
        token = pl.col("text").str.strip_chars().str.to_lowercase()
    words = pl.DataFrame(
        {"token": list(lexicon), "value": [float(v) for v in lexicon.values()]},
        schema={"token": pl.String, "value": pl.Float64},
    )
    return scans.with_columns(token.alias("token")).join(
        words, on="token", how="inner", maintain_order="left"
    )


def _ols(y: np.ndarray, columns: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """OLS with intercept; per term: estimate, std_error, p_value (NaN where R's ``lm`` gives NA)."""
    import statsmodels.api as sm

    design = sm.add_constant(np.column_stack(list(columns.values())), has_constant="add")
    nan = {"estimate": math.nan, "std_error": math.nan, "p_value": math.nan}
    if len(y) < design.shape[1] or np.linalg.matrix_rank(design) < design.shape[1]:
        return {term: dict(nan) for term in columns}
    fit = sm.OLS(y, design).fit()
    out = {}
    for k, term in enumerate(columns, start=1):
        defined = fit.df_resid > 0
        out[term] = {
            "estimate": float(fit.params[k]),
            "std_error": float(fit.bse[k]) if defined else math.nan,
            "p_value": float(fit.pvalues[k]) if defined else math.nan,
        }
    return out


def sentiment_slopes(matches: pl.DataFrame) -> pl.DataFrame:
    """Fig. 3C: ``lm(score ~ value)`` per (RM, prompt, affect), affect ``positive`` if value > 0 else
    ``negative`` (as the paper's ``if_else(value > 0, …)``): ``rm, prompt_id, affect, slope, std_error,
    p_value, n``."""
    tagged = matches.with_columns(
        pl.when(pl.col("value") > 0).then(pl.lit("positive")).otherwise(pl.lit("negative")).alias("affect")
    )
    rows = []
    for (rm, prompt_id, affect), group in tagged.group_by(["rm", "prompt_id", "affect"], maintain_order=True):
        fit = _ols(group["score"].to_numpy(), {"value": group["value"].to_numpy()})["value"]
        rows.append(
            {
                "rm": rm,
                "prompt_id": prompt_id,
                "affect": affect,
                "slope": fit["estimate"],
                "std_error": fit["std_error"],
                "p_value": fit["p_value"],
                "n": group.height,
            }
        )
    return _slope_frame(rows, ["rm", "prompt_id", "affect"]).sort(["prompt_id", "affect", "rm"])


def read_bnc_frequencies(path: str | Path) -> pl.DataFrame:
    """The paper's word-frequency list (``data/corpora/1_1_all_alpha.txt``: BNC frequencies per million words,
    Leech, Rayson & Wilson 2001) as R's ``read.delim`` sees it: ``Word`` = second tab field, ``Freq`` = fifth
    (null where not a number), every line (lemma-variant lines have ``Word`` ``@``). Bytes that are not
    UTF-8 are replaced, so such words match no token, as in a UTF-8 R session."""
    file = Path(path)
    if not file.is_file():
        raise PaperAnalysisError(f"frequency list {str(path)!r} does not exist")
    words, freqs = [], []
    for line in file.read_bytes().decode("utf-8", errors="replace").splitlines()[1:]:
        fields = line.split("\t")
        if len(fields) < 2:
            continue
        words.append(fields[1])
        try:
            freqs.append(float(fields[4]) if len(fields) > 4 else None)
        except ValueError:
            freqs.append(None)
    return pl.DataFrame({"Word": words, "Freq": freqs}, schema={"Word": pl.String, "Freq": pl.Float64})


def wordfreq_frequencies(words: Sequence[str], lang: str = "en") -> pl.DataFrame:
    """``Word, Freq`` (per million words, 10^(Zipf − 3)) from ``wordfreq`` for the given words: a stand-in for
    the BNC list (unknown words get 0 and are left out of the regression)."""
    from wordfreq import zipf_frequency

    unique = sorted(set(words))
    freq = [10 ** (zipf_frequency(w, lang) - 3) if zipf_frequency(w, lang) > 0 else 0.0 for w in unique]
    return pl.DataFrame({"Word": unique, "Freq": freq}, schema={"Word": pl.String, "Freq": pl.Float64})


def frequency_slopes(matches: pl.DataFrame, frequencies: pl.DataFrame) -> pl.DataFrame:
    """Fig. 3D: ``lm(score ~ log(freq) + value)`` per (RM, prompt) over the AFINN-matched tokens joined to the
    frequency list on ``token == Word`` (every matching line, as the paper's many-to-many ``left_join``),
    frequency > 0: ``rm, prompt_id, slope`` (of log frequency), ``std_error, p_value, n`` (rows)."""
    joined = matches.join(
        frequencies.select("Word", pl.col("Freq").alias("freq")),
        left_on="token",
        right_on="Word",
        how="inner",
        maintain_order="left",
    ).filter(pl.col("freq").is_not_null() & (pl.col("freq") > 0))
    rows = []
    for (rm, prompt_id), group in joined.group_by(["rm", "prompt_id"], maintain_order=True):
        fit = _ols(
            group["score"].to_numpy(),
            {"log_freq": np.log(group["freq"].to_numpy()), "value": group["value"].to_numpy()},
        )["log_freq"]
        rows.append(
            {
                "rm": rm,
                "prompt_id": prompt_id,
                "slope": fit["estimate"],
                "std_error": fit["std_error"],
                "p_value": fit["p_value"],
                "n": group.height,
            }
        )
    return _slope_frame(rows, ["rm", "prompt_id"]).sort(["prompt_id", "rm"])


def _slope_frame(rows: list[dict], keys: list[str]) -> pl.DataFrame:
    schema = {k: pl.String for k in keys}
    schema.update({"slope": pl.Float64, "std_error": pl.Float64, "p_value": pl.Float64, "n": pl.Int64})
    return pl.DataFrame(rows, schema=schema)


def slope_summary(slopes: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    """Mean ± SE of the slopes over RMs per group (the figure's diamonds: ``mean_se``, SE = SD/√n, SD with
    ddof 1); NaN slopes left out."""
    return (
        slopes.filter(pl.col("slope").is_not_nan())
        .group_by(list(by), maintain_order=True)
        .agg(
            pl.col("slope").mean().alias("mean"),
            (pl.col("slope").std(ddof=1) / pl.len().sqrt()).alias("se"),
            pl.len().alias("n_rms"),
        )
        .sort(list(by))
    )
