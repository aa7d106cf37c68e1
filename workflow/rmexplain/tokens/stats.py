"""Analyses of token scans (paper Figs. 1–5): agreement between RMs, RSA, lexical slopes, framing, humans.

All functions take the concatenated scan tables (TOKEN_SCORES contract: ``rm, prompt_id, token_id, piece,
text, score``) as a polars frame and return plain frames, so they are testable without Snakemake.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from rmexplain.tokens.vocab import is_word, normalise_text

log = logging.getLogger(__name__)

PROPERTY_KINDS = {
    "base_model": "categorical",
    "developer": "categorical",
    "params_b": "numeric",
    "leaderboard_rank": "numeric",
}


class AnalysisError(ValueError):
    """Inputs of a token analysis are inconsistent; the message names the key or the RM."""


# ---- agreement between RMs ---------------------------------------------------------------------------------


def shared_vocabulary_scores(scans: pl.DataFrame, prompt_id: str, match: str = "strip") -> pl.DataFrame:
    """Scores of one prompt, one column per RM, over the decoded texts every RM scanned.

    Texts are matched by ``normalise_text(text, match)``; several tokens of one RM with the same key (e.g.
    ``love`` and `` love`` under ``strip``) are averaged. Empty keys are dropped.
    """
    one = scans.filter(pl.col("prompt_id") == prompt_id)
    if one.height == 0:
        raise AnalysisError(f"no scan rows for prompt {prompt_id!r}")
    keyed = one.with_columns(
        pl.col("text").map_elements(lambda t: normalise_text(t, match), return_dtype=pl.String).alias("key")
    ).filter(pl.col("key") != "")
    per_rm = keyed.group_by(["rm", "key"]).agg(pl.col("score").mean())
    wide = per_rm.pivot(on="rm", index="key", values="score").drop_nulls().sort("key")
    rms = list(dict.fromkeys(one["rm"].to_list()))
    return wide.select(["key", *rms])


def kendall_tau_matrix(wide: pl.DataFrame) -> tuple[list[str], np.ndarray]:
    """Pairwise Kendall τ-b between the RM columns of ``shared_vocabulary_scores`` (diagonal 1)."""
    from scipy import stats  # SciPy takes a second to import

    rms = [c for c in wide.columns if c != "key"]
    tau = np.eye(len(rms))
    for i, j in itertools.combinations(range(len(rms)), 2):
        value = stats.kendalltau(wide[rms[i]].to_numpy(), wide[rms[j]].to_numpy()).statistic
        tau[i, j] = tau[j, i] = value
    return rms, tau


def tau_table(scans: pl.DataFrame, prompt_ids: Sequence[str], match: str = "strip") -> pl.DataFrame:
    """Long table ``prompt_id, rm_a, rm_b, tau, n_shared`` for every prompt and ordered RM pair."""
    rows = []
    for prompt_id in prompt_ids:
        wide = shared_vocabulary_scores(scans, prompt_id, match)
        rms, tau = kendall_tau_matrix(wide)
        log.info("tau %s: %d RMs over %d shared decoded texts", prompt_id, len(rms), wide.height)
        rows += [
            {"prompt_id": prompt_id, "rm_a": a, "rm_b": b, "tau": float(tau[i, j]), "n_shared": wide.height}
            for (i, a), (j, b) in itertools.product(enumerate(rms), repeat=2)
        ]
    return pl.DataFrame(rows)


def tau_square(table: pl.DataFrame, prompt_id: str) -> tuple[list[str], np.ndarray]:
    """The τ matrix of one prompt back from ``tau_table``, RMs in first-seen order."""
    one = table.filter(pl.col("prompt_id") == prompt_id)
    rms = list(dict.fromkeys(one["rm_a"].to_list()))
    index = {rm: k for k, rm in enumerate(rms)}
    tau = np.full((len(rms), len(rms)), np.nan)
    for a, b, value in one.select("rm_a", "rm_b", "tau").iter_rows():
        tau[index[a], index[b]] = value
    return rms, tau


def mds_coordinates(dissimilarity: np.ndarray, seed: int = 0) -> np.ndarray:
    """2-D metric MDS of a precomputed dissimilarity matrix (e.g. 1 − τ); ``(n, 2)`` coordinates."""
    from sklearn.manifold import MDS

    n = dissimilarity.shape[0]
    if n < 3:
        # Two points: the exact embedding is a segment of length d; SMACOF adds nothing.
        coords = np.zeros((n, 2))
        if n == 2:
            coords[:, 0] = [-dissimilarity[0, 1] / 2, dissimilarity[0, 1] / 2]
        return coords
    mds = MDS(n_components=2, metric="precomputed", metric_mds=True, init="classical_mds", random_state=seed)
    return mds.fit_transform(dissimilarity)


def mds_table(
    table: pl.DataFrame,
    prompt_ids: Sequence[str],
    seed: int = 0,
    coordinates: Callable[[np.ndarray, int], np.ndarray] = mds_coordinates,
) -> pl.DataFrame:
    """MDS coordinates of every RM for every prompt, from the τ table: ``coordinates`` of the dissimilarity
    1 − τ with ``seed`` (``prompt_id, rm, x, y``; RMs in the τ table's order)."""
    rows = []
    for prompt_id in prompt_ids:
        rms, tau = tau_square(table, prompt_id)
        coords = coordinates(1.0 - tau, seed)
        rows += [
            {"prompt_id": prompt_id, "rm": rm, "x": float(x), "y": float(y)}
            for rm, (x, y) in zip(rms, coords, strict=True)
        ]
    return pl.DataFrame(rows)


# ---- representational similarity analysis ------------------------------------------------------------------


def property_dissimilarity(values: Sequence[Any], kind: str) -> np.ndarray:
    """Theoretical dissimilarity of models from one property (paper Fig. 2C, as 1 − similarity).

    categorical: similarity [v_i = v_j]; numeric: similarity (1 + |v_i − v_j|)^-1.
    """
    n = len(values)
    sim = np.eye(n)
    for i, j in itertools.combinations(range(n), 2):
        if kind == "categorical":
            s = float(values[i] == values[j])
        elif kind == "numeric":
            s = 1.0 / (1.0 + abs(float(values[i]) - float(values[j])))
        else:
            raise AnalysisError(f"unknown property kind {kind!r}")
        sim[i, j] = sim[j, i] = s
    return 1.0 - sim


def _upper(matrix: np.ndarray) -> np.ndarray:
    return matrix[np.triu_indices(matrix.shape[0], k=1)]


def mantel(model: np.ndarray, theory: np.ndarray, n_permutations: int, seed: int = 0) -> tuple[float, float]:
    """Spearman correlation of two dissimilarity matrices' upper triangles and its Mantel p-value.

    The p-value (one-sided, greater) permutes the model labels of ``theory``: exactly over all n! orders when
    n! ≤ ``n_permutations``, else over ``n_permutations`` random orders (plus the identity).
    """
    from scipy import stats  # SciPy takes a second to import

    if len(_upper(model)) < 3 or np.ptp(_upper(model)) == 0 or np.ptp(_upper(theory)) == 0:
        return float("nan"), float("nan")  # fewer than three pairs, or a constant matrix: undefined
    observed = stats.spearmanr(_upper(model), _upper(theory)).statistic
    n = model.shape[0]
    if math.factorial(n) <= n_permutations:
        orders = [np.array(p) for p in itertools.permutations(range(n))]
    else:
        rng = np.random.default_rng(seed)
        orders = [np.arange(n)] + [rng.permutation(n) for _ in range(n_permutations)]
    null = np.nan_to_num(_permuted_spearman(model, theory, np.stack(orders)), nan=-np.inf)
    return float(observed), float(np.mean(null >= observed - 1e-12))


def _permuted_spearman(model: np.ndarray, theory: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """Spearman r of ``model``'s upper triangle with ``theory``'s under each row of ``orders``, all at once.

    Relabelling the models reorders the theory's upper-triangle entries but keeps their multiset, so each
    entry keeps its rank: the permuted rank vectors are gathered from one ranked matrix and correlated
    with the model's ranks in one product (``stats.spearmanr`` per order took seconds for 10,000 orders).
    """
    from scipy import stats  # SciPy takes a second to import

    rows, cols = np.triu_indices(model.shape[0], k=1)
    ranked = np.zeros(theory.shape)
    ranked[rows, cols] = stats.rankdata(theory[rows, cols])
    ranked += ranked.T
    permuted = ranked[orders[:, rows], orders[:, cols]]  # one row of ranks per order
    x = stats.rankdata(model[rows, cols])
    x = x - x.mean()
    y = permuted - permuted.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (y @ x) / (np.sqrt(x @ x) * np.sqrt(np.einsum("ij,ij->i", y, y)))
    return np.clip(r, -1.0, 1.0)


def rsa_table(
    tau: pl.DataFrame,
    prompt_ids: Sequence[str],
    properties: Mapping[str, Mapping[str, Any]],
    n_permutations: int = 10000,
    seed: int = 0,
) -> pl.DataFrame:
    """RSA: Spearman r between the model dissimilarity (1 − τ) and each property's dissimilarity, per prompt.

    ``properties`` maps RM -> {base_model, developer, params_b, leaderboard_rank}; a property no RM sets is
    skipped (logged); one some RMs lack is an error naming ``tokens.model_properties.<rm>.<property>``.
    """
    rows = []
    for prompt_id in prompt_ids:
        rms, square = tau_square(tau, prompt_id)
        for prop, kind in PROPERTY_KINDS.items():
            present = [rm for rm in rms if prop in properties.get(rm, {})]
            if not present:
                log.info("rsa: no RM sets %s; skipped", prop)
                continue
            if len(present) < len(rms):
                missing = next(rm for rm in rms if rm not in present)
                raise AnalysisError(f"tokens.model_properties.{missing}.{prop} is missing (other RMs set it)")
            theory = property_dissimilarity([properties[rm][prop] for rm in rms], kind)
            r, p = mantel(1.0 - square, theory, n_permutations, seed)
            if not np.isfinite(r):
                log.warning(
                    "rsa %s/%s: undefined (fewer than 3 RM pairs or a constant matrix)", prompt_id, prop
                )
            rows.append(
                {
                    "prompt_id": prompt_id,
                    "property": prop,
                    "spearman_r": r,
                    "p_value": p,
                    "n_models": len(rms),
                    "n_pairs": len(rms) * (len(rms) - 1) // 2,
                }
            )
    return pl.DataFrame(
        rows,
        schema={
            "prompt_id": pl.String,
            "property": pl.String,
            "spearman_r": pl.Float64,
            "p_value": pl.Float64,
            "n_models": pl.Int64,
            "n_pairs": pl.Int64,
        },
    )


# ---- lexical regressions -----------------------------------------------------------------------------------


def afinn_lexicon(name: str = "AFINN-111") -> dict[str, int]:
    """An AFINN word list shipped with the ``afinn`` package (``AFINN-111`` as in the paper, or
    ``AFINN-en-165``)."""
    import afinn

    path = Path(afinn.__file__).parent / "data" / f"{name}.txt"
    if not path.is_file():
        raise AnalysisError(f"tokens.analysis.afinn_lexicon: {name!r} is not a list of the afinn package")
    return afinn.Afinn.read_word_file(str(path))


def with_lexical_features(scans: pl.DataFrame, lexicon: Mapping[str, int]) -> pl.DataFrame:
    """Add ``word`` (stripped, lower-cased), ``afinn`` (null if not in the lexicon), ``zipf`` and ``score_z``.

    ``score_z`` standardises scores within each (RM, prompt) so slopes are comparable across RMs whose scores
    live on different scales (paper Fig. 1). Only tokens that decode to one alphabetic word are kept.
    """
    from wordfreq import zipf_frequency

    words = scans.filter(pl.col("text").map_elements(is_word, return_dtype=pl.Boolean)).with_columns(
        pl.col("text").str.strip_chars().str.to_lowercase().alias("word")
    )
    unique = words["word"].unique().to_list()
    zipf = {w: zipf_frequency(w, "en") for w in unique}
    return words.with_columns(
        pl.col("word").replace_strict(lexicon, default=None, return_dtype=pl.Float64).alias("afinn"),
        pl.col("word").replace_strict(zipf, return_dtype=pl.Float64).alias("zipf"),
        ((pl.col("score") - pl.col("score").mean()) / pl.col("score").std())
        .over(["rm", "prompt_id"])
        .alias("score_z"),
    )


def _ols(y: np.ndarray, columns: dict[str, np.ndarray], term: str) -> dict[str, float]:
    import statsmodels.api as sm

    design = sm.add_constant(np.column_stack(list(columns.values())), has_constant="add")
    fit = sm.OLS(y, design).fit()
    k = 1 + list(columns).index(term)
    return {"slope": float(fit.params[k]), "std_error": float(fit.bse[k]), "p_value": float(fit.pvalues[k])}


def sentiment_slopes(features: pl.DataFrame, min_n: int = 3) -> pl.DataFrame:
    """OLS slope of ``score_z`` on AFINN value, per (RM, prompt, valence) (paper Fig. 3C).

    Groups with fewer than ``min_n`` lexicon words are skipped and counted in the log.
    """
    rows, skipped = [], 0
    rated = features.filter(pl.col("afinn").is_not_null() & (pl.col("afinn") != 0))
    rated = rated.with_columns(
        pl.when(pl.col("afinn") > 0).then(pl.lit("positive")).otherwise(pl.lit("negative")).alias("valence")
    )
    for (rm, prompt_id, valence), group in rated.group_by(
        ["rm", "prompt_id", "valence"], maintain_order=True
    ):
        if group.height < min_n or group["afinn"].n_unique() < 2:
            skipped += 1
            continue
        fit = _ols(group["score_z"].to_numpy(), {"afinn": group["afinn"].to_numpy()}, "afinn")
        rows.append({"rm": rm, "prompt_id": prompt_id, "valence": valence, **fit, "n": group.height})
    if skipped:
        log.warning(
            "sentiment slopes: %d (RM, prompt, valence) group(s) with < %d rated words skipped",
            skipped,
            min_n,
        )
    return pl.DataFrame(
        rows,
        schema={
            "rm": pl.String,
            "prompt_id": pl.String,
            "valence": pl.String,
            "slope": pl.Float64,
            "std_error": pl.Float64,
            "p_value": pl.Float64,
            "n": pl.Int64,
        },
    ).sort(["prompt_id", "valence", "rm"])


def frequency_slopes(features: pl.DataFrame, min_n: int = 10) -> pl.DataFrame:
    """Slope of ``score_z`` on standardised Zipf frequency, controlling for AFINN value (0 when unrated),
    per (RM, prompt) (paper Fig. 3D). Words with Zipf frequency 0 (unknown to wordfreq) are left out."""
    rows = []
    known = features.filter(pl.col("zipf") > 0)
    for (rm, prompt_id), group in known.group_by(["rm", "prompt_id"], maintain_order=True):
        if group.height < min_n:
            log.warning("frequency slope %s/%s: only %d words; skipped", rm, prompt_id, group.height)
            continue
        zipf = group["zipf"].to_numpy()
        zipf_z = (zipf - zipf.mean()) / zipf.std()
        sentiment = group["afinn"].fill_null(0.0).to_numpy()
        fit = _ols(group["score_z"].to_numpy(), {"afinn": sentiment, "zipf_z": zipf_z}, "zipf_z")
        rows.append({"rm": rm, "prompt_id": prompt_id, **fit, "n": group.height})
    return pl.DataFrame(
        rows,
        schema={
            "rm": pl.String,
            "prompt_id": pl.String,
            "slope": pl.Float64,
            "std_error": pl.Float64,
            "p_value": pl.Float64,
            "n": pl.Int64,
        },
    ).sort(["prompt_id", "rm"])


# ---- optimal / pessimal tokens and framing -----------------------------------------------------------------


def extreme_tokens(scans: pl.DataFrame, k: int = 10) -> pl.DataFrame:
    """The ``k`` optimal (highest-scoring) and ``k`` pessimal tokens of every (RM, prompt); tied scores keep
    the scan's order (token id)."""
    ranked = scans.with_columns(
        pl.col("score").rank("ordinal", descending=True).over(["rm", "prompt_id"]).alias("rank_top"),
        pl.col("score").rank("ordinal").over(["rm", "prompt_id"]).alias("rank_bottom"),
    )
    cols = ["rm", "prompt_id", "kind", "rank", "token_id", "text", "score"]
    top = ranked.filter(pl.col("rank_top") <= k).with_columns(
        pl.lit("optimal").alias("kind"), pl.col("rank_top").alias("rank")
    )
    bottom = ranked.filter(pl.col("rank_bottom") <= k).with_columns(
        pl.lit("pessimal").alias("kind"), pl.col("rank_bottom").alias("rank")
    )
    return (
        pl.concat([top.select(cols), bottom.select(cols)])
        .with_columns(pl.col("rank").cast(pl.Int64))
        .sort(["rm", "prompt_id", "kind", "rank"])
    )


def framing_table(scans: pl.DataFrame, prompt_a: str, prompt_b: str) -> pl.DataFrame:
    """Per RM and token: standardised scores under two framings (paper Fig. 4), joined by exact token id.

    ``both`` = (z_a + z_b)/√2 is the axis orthogonal to the expected anti-correlation: tokens good (or bad)
    answers to both framings.
    """

    def z(prompt_id: str) -> pl.DataFrame:
        one = scans.filter(pl.col("prompt_id") == prompt_id)
        if one.height == 0:
            raise AnalysisError(f"tokens.analysis.framing_pairs: prompt {prompt_id!r} has no scan")
        return one.with_columns(
            ((pl.col("score") - pl.col("score").mean()) / pl.col("score").std())
            .over("rm")
            .alias(f"z_{prompt_id}")
        ).select("rm", "token_id", "text", f"z_{prompt_id}")

    joined = z(prompt_a).join(z(prompt_b).drop("text"), on=["rm", "token_id"], how="inner")
    return joined.rename({f"z_{prompt_a}": "z_a", f"z_{prompt_b}": "z_b"}).with_columns(
        ((pl.col("z_a") + pl.col("z_b")) / math.sqrt(2)).alias("both"),
        pl.lit(prompt_a).alias("prompt_a"),
        pl.lit(prompt_b).alias("prompt_b"),
    )


def framing_summary(framing: pl.DataFrame) -> pl.DataFrame:
    """Per RM: Spearman ρ between the two framings and the tokens most extreme on the ``both`` axis."""
    from scipy import stats  # SciPy takes a second to import

    rows = []
    for (rm,), group in framing.group_by(["rm"], maintain_order=True):
        rho = stats.spearmanr(group["z_a"].to_numpy(), group["z_b"].to_numpy()).statistic
        ordered = (  # ties: lower token id first
            group.sort(["both", "token_id"], descending=[True, False])["text"].str.strip_chars().to_list()
        )
        rows.append(
            {
                "rm": rm,
                "prompt_a": group["prompt_a"][0],
                "prompt_b": group["prompt_b"][0],
                "spearman_rho": float(rho),
                "n": group.height,
                "good_for_both": ", ".join(ordered[:5]),
                "bad_for_both": ", ".join(ordered[-5:][::-1]),
            }
        )
    return pl.DataFrame(rows)


# ---- external human ranking --------------------------------------------------------------------------------


EVERYTHING_COLUMNS = {"name": "item", "elo_rank": "rank"}  # an EloEverything export, as the paper's data/elo


def read_ranking_file(path: str | Path) -> pl.DataFrame:
    """The human-ranking CSV as it is: ``item, rank`` or an EloEverything export (``elo_rank, elo_score, name,
    elo_matches`` and one score column per RM hub id)."""
    file = Path(path)
    if not file.is_file():
        raise AnalysisError(f"tokens.human_ranking.path: file {str(path)!r} does not exist")
    header = pl.read_csv(file, n_rows=0, comment_prefix="#").columns
    texts = {c: pl.String for c in ("item", "name") if c in header}  # only columns the file has (old polars)
    table = pl.read_csv(file, schema_overrides=texts, comment_prefix="#")
    if set(EVERYTHING_COLUMNS) <= set(table.columns):
        table = table.rename(EVERYTHING_COLUMNS)
    return table


def scores_in_ranking_file(spec: Mapping[str, Any], ranking_path: str) -> str | None:
    """The column of the human-ranking file holding this RM's scores (its model hub id), if there is one."""
    model = spec.get("model")
    if not model or not Path(ranking_path).is_file():
        return None
    return model if model in read_ranking_file(ranking_path).columns else None


def read_human_ranking(path: str | Path) -> pl.DataFrame:
    """A CSV of ``item, rank`` (1 = best), or an EloEverything export (``name``, ``elo_rank``); ranks must be
    positive integers and items unique."""
    table = read_ranking_file(path)
    missing = {"item", "rank"} - set(table.columns)
    if missing:
        raise AnalysisError(f"tokens.human_ranking.path: {path} lacks column(s) {sorted(missing)}")
    for row, (item, rank) in enumerate(table.select("item", "rank").iter_rows(), start=2):
        if item is None or not str(item).strip():
            raise AnalysisError(f"tokens.human_ranking.path: {path} line {row}: empty item")
        if rank is None or int(rank) != rank or rank < 1:
            raise AnalysisError(
                f"tokens.human_ranking.path: {path} line {row}: rank {rank!r} is not a positive integer"
            )
    duplicated = table.filter(pl.col("item").is_duplicated())["item"].unique().to_list()
    if duplicated:
        raise AnalysisError(f"tokens.human_ranking.path: {path}: duplicated item(s) {duplicated[:5]}")
    return table.select(pl.col("item"), pl.col("rank").cast(pl.Int64).alias("human_rank"))


def human_comparison(scored: pl.DataFrame) -> pl.DataFrame:
    """Per RM: Spearman ρ between human ranks and the RM's ranks of the same items (``rm, item, human_rank,
    score`` in), plus the number of items."""
    from scipy import stats  # SciPy takes a second to import

    rows = []
    ranked = model_ranks(scored)
    for (rm,), group in ranked.group_by(["rm"], maintain_order=True):
        rho = stats.spearmanr(group["human_rank"].to_numpy(), group["model_rank"].to_numpy()).statistic
        rows.append({"rm": rm, "spearman_rho": float(rho), "n_items": group.height})
    return pl.DataFrame(rows, schema={"rm": pl.String, "spearman_rho": pl.Float64, "n_items": pl.Int64})


def model_ranks(scored: pl.DataFrame) -> pl.DataFrame:
    """Each RM's rank of each item (1 = highest score; ties share the mean rank)."""
    return scored.with_columns(
        pl.col("score").rank("average", descending=True).over("rm").alias("model_rank")
    )


def human_disagreements(scored: pl.DataFrame, n: int = 10) -> pl.DataFrame:
    """The items whose human rank differs most from their mean rank over RMs (paper Fig. 5B), both ways.

    ``difference`` = mean model rank − human rank: positive where humans rank the item higher than the RMs.
    Ties on ``difference`` are broken by human rank (better first), then by item name.
    """
    mean = (
        model_ranks(scored)
        .group_by(["item", "human_rank"])
        .agg(pl.col("model_rank").mean().alias("mean_model_rank"))
        .with_columns((pl.col("mean_model_rank") - pl.col("human_rank")).alias("difference"))
    )
    humans_higher = (
        mean.sort(["difference", "human_rank", "item"], descending=[True, False, False])
        .head(n)
        .with_columns(pl.lit("humans_higher").alias("direction"))
    )
    models_higher = (
        mean.sort(["difference", "human_rank", "item"])
        .head(n)
        .with_columns(pl.lit("models_higher").alias("direction"))
    )
    return pl.concat([humans_higher, models_higher]).select(
        "direction", "item", "human_rank", "mean_model_rank", "difference"
    )
