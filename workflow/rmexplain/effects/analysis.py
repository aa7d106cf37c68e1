"""From files to the attribute-effects table of one (dataset, method): every RM × estimator × attribute."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import polars as pl
import regex

from rmexplain.analysis.bootstrap import (
    BootstrapSettings,
    clusters_of,
    interval,
    jackknife_counts,
    pair_id,
    resample_counts,
)
from rmexplain.effects.base import EffectInput, Estimator, Observations, RewardChanges, estimators, row_names
from rmexplain.effects.estimators import support
from rmexplain.ids import text_id

SOURCE_KEY = ["comparison_id", "target", "attribute", "chain"]


# Chinese and Japanese are written without spaces between words: each of their characters counts as a word
# (Thai, Lao, Khmer and Burmese are not split: a stretch of them between spaces is one word)
UNSPACED = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}]")
LETTER_OR_DIGIT = regex.compile(r"[\p{L}\p{N}]")


def word_count(text: str) -> int:
    """Words of a text: its whitespace-separated tokens (as the planted length detector counts), where each
    Chinese or Japanese character counts as a word and the rest of its token as one word per stretch between
    them: "AI模型" is 3 words; English text, its tokens."""
    if not UNSPACED.search(text):
        return len(text.split())
    return sum(_unspaced_words(token) if UNSPACED.search(token) else 1 for token in text.split())


def _unspaced_words(token: str) -> int:
    """Words of a token holding Chinese or Japanese: its characters, and each stretch between them that holds
    a letter or digit (full-width punctuation is no word)."""
    rest = [piece for piece in UNSPACED.sub(" ", token).split() if LETTER_OR_DIGIT.search(piece)]
    return len(UNSPACED.findall(token)) + len(rest)


def word_counts(texts: Sequence[str]) -> np.ndarray:
    """``word_count`` of each text."""
    return np.array([word_count(t) for t in texts], dtype=np.float64)


def original_texts(comparisons: pl.DataFrame) -> pl.DataFrame:
    """``comparison_id, target, prompt, text`` of every original response."""
    return pl.concat(
        [
            comparisons.select("comparison_id", pl.lit(t).alias("target"), "prompt", pl.col(t).alias("text"))
            for t in ("chosen", "rejected")
        ]
    )


def with_sources(edits: pl.DataFrame, comparisons: pl.DataFrame) -> pl.DataFrame:
    """Edits with their prompt, the text each edited (``source_text``) and their text ids, in edit order.

    Round 1 edits the original; round 2 the round-1 edit of its chain. A round-2 edit whose round-1 edit is
    missing cannot happen (it was made from it)."""
    originals = original_texts(comparisons).rename({"text": "source_text"})
    first = edits.filter(pl.col("round") == 1).select(*SOURCE_KEY, pl.col("text").alias("source_text"))
    one = edits.filter(pl.col("round") == 1).join(originals, on=["comparison_id", "target"], how="left")
    two = (
        edits.filter(pl.col("round") == 2)
        .join(first, on=SOURCE_KEY, how="left")
        .join(originals.drop("source_text"), on=["comparison_id", "target"], how="left")
    )
    frame = pl.concat([one, two.select(one.columns)]).sort("edit_id")
    return frame.with_columns(
        text_id=pl.struct("prompt", "text").map_elements(
            lambda r: text_id(r["prompt"], r["text"]), pl.String
        ),
        source_id=pl.struct("prompt", "source_text").map_elements(
            lambda r: text_id(r["prompt"], r["source_text"]), pl.String
        ),
    )


def reward_sd(originals: pl.DataFrame) -> float:
    """The RM's reward sd over the original responses (both of every comparison; ddof 1)."""
    values = pl.concat([originals["reward_chosen"], originals["reward_rejected"]]).drop_nulls().to_numpy()
    return float(np.std(values, ddof=1)) if values.size > 1 else float("nan")


def reward_changes(
    edits: pl.DataFrame,
    originals: pl.DataFrame,
    rewards: pl.DataFrame,
    explanations: pl.DataFrame,
    comparisons: list[str],
    attributes: list[str],
) -> RewardChanges:
    """One RM's reward change on every edit (NaN where a text went unscored), and its paper arrays."""
    by_text = dict(zip(rewards["text_id"].to_list(), rewards["reward"].to_list(), strict=True))
    original = original_rewards(originals)
    edited = np.array([_value(by_text.get(t)) for t in edits["text_id"]])
    source = np.array(
        [
            _value(original.get((c, t))) if r == 1 else _value(by_text.get(s))
            for c, t, r, s in edits.select("comparison_id", "target", "round", "source_id").iter_rows()
        ]
    )
    paper = explanations.filter(
        pl.col("attribute").is_in(attributes) & pl.col("comparison_id").is_in(comparisons)
    )
    c_index, a_index = {c: i for i, c in enumerate(comparisons)}, {a: i for i, a in enumerate(attributes)}
    return RewardChanges(
        change=edited - source,
        sd=reward_sd(originals),
        paper_comparison=np.array([c_index[c] for c in paper["comparison_id"]], dtype=np.int64),
        paper_attribute=np.array([a_index[a] for a in paper["attribute"]], dtype=np.int64),
        paper_counterfactual=(paper["kind"] == "counterfactual").cast(pl.Float64).to_numpy(),
        paper_delta=paper["reward_delta"].cast(pl.Float64).to_numpy(),
    )


def original_rewards(originals: pl.DataFrame) -> dict[tuple[str, str], float | None]:
    """(comparison_id, ``chosen``/``rejected``) -> the RM's reward of that original (ORIGINAL_SCORES rows)."""
    rewards = {}
    for row in originals.iter_rows(named=True):
        rewards[(row["comparison_id"], "chosen")] = row["reward_chosen"]
        rewards[(row["comparison_id"], "rejected")] = row["reward_rejected"]
    return rewards


def _value(reward: float | None) -> float:
    return float("nan") if reward is None else float(reward)


ClassCounts = Callable[[str], Sequence[int]]  # a text's count of each class the length slope holds equal
WordChanges = Callable[[str, str], Mapping[str, int]]  # (source, edited): each changed word's count change


def count_changes(sources: Sequence[str], edited: Sequence[str], counts: ClassCounts) -> np.ndarray:
    """[edits, classes]: each edit's change in every count of ``counts`` (each distinct text counted once:
    a source is edited many times)."""
    by_text = {text: counts(text) for text in {*sources, *edited}}
    pairs = zip(sources, edited, strict=True)
    rows = [np.subtract(by_text[after], by_text[before]) for before, after in pairs]
    return np.array(rows, dtype=np.float64).reshape(len(rows), len(counts("")))


def effect_input(
    comparisons: pl.DataFrame,
    edits: pl.DataFrame,
    originals: Mapping[str, pl.DataFrame],
    rewards: Mapping[str, pl.DataFrame],
    explanations: Mapping[str, pl.DataFrame],
    attributes: list[str],
    class_counts: ClassCounts | None = None,
    word_changes: WordChanges | None = None,
) -> EffectInput:
    """The arrays every estimator reads, for the RMs of ``originals`` (keyed by RM); with ``class_counts``,
    each edit's change in those counts, which the length-adjusted estimator holds equal for its length slope
    (``covariates``), and with ``word_changes`` each edit's changed words, whose counts it holds equal where
    an RM's reward moves with them (``word_changes``)."""
    ids = sorted(comparisons["comparison_id"].to_list())
    edits = with_sources(edits.filter(pl.col("attribute").is_in(attributes)), comparisons)
    length_sd = original_length_sd(comparisons)
    c_index, a_index = {c: i for i, c in enumerate(ids)}, {a: i for i, a in enumerate(attributes)}
    empty = pl.DataFrame(schema={"comparison_id": pl.String, "attribute": pl.String, "kind": pl.String,
                                 "reward_delta": pl.Float64})  # fmt: skip
    return EffectInput(
        comparisons=ids,
        attributes=list(attributes),
        comparison=np.array([c_index[c] for c in edits["comparison_id"]], dtype=np.int64),
        attribute=np.array([a_index[a] for a in edits["attribute"]], dtype=np.int64),
        direction=np.where(edits["direction"].to_numpy() == "better", 1, -1),
        round=edits["round"].to_numpy(),
        chain=np.where(edits["chain"].to_numpy() == "better", 1, -1),
        length_change=length_changes(edits, length_sd),
        rms={
            rm: reward_changes(
                edits, originals[rm], rewards[rm], explanations.get(rm, empty), ids, attributes
            )
            for rm in originals
        },
        dataset=_one_dataset(comparisons),
        length_measured=measures_length(length_sd),
        covariates=None
        if class_counts is None
        else count_changes(edits["source_text"].to_list(), edits["text"].to_list(), class_counts),
        word_changes=None
        if word_changes is None
        else edit_word_changes(edits["source_text"].to_list(), edits["text"].to_list(), word_changes),
    )


def edit_word_changes(
    sources: Sequence[str], edited: Sequence[str], word_changes: WordChanges
) -> list[Mapping[str, int]]:
    """Each edit's ``word_changes`` (each distinct pair of texts read once)."""
    pairs = list(zip(sources, edited, strict=True))
    by_pair = {pair: word_changes(*pair) for pair in dict.fromkeys(pairs)}
    return [by_pair[pair] for pair in pairs]


def slope_input(
    comparisons: pl.DataFrame,
    edits: Sequence[pl.DataFrame],
    originals: Mapping[str, pl.DataFrame],
    rewards: Mapping[str, pl.DataFrame],
    attributes: list[str] | None = None,
    class_counts: ClassCounts | None = None,
    word_changes: WordChanges | None = None,
) -> EffectInput | None:
    """The attribute edits of ``edits`` (EFFECT_EDITS of one or more methods; of ``attributes`` only, where
    given) as one input for the length slope: each (method, attribute) an attribute of its own; None where
    there are none."""
    wanted = [e if attributes is None else e.filter(pl.col("attribute").is_in(attributes)) for e in edits]
    frames = [f for f in wanted if f.height]
    if not frames:
        return None
    joined = pl.concat(frames, how="vertical").with_columns(
        attribute=pl.col("method") + ": " + pl.col("attribute")
    )
    named = list(dict.fromkeys(joined["attribute"].to_list()))
    return effect_input(comparisons, joined, originals, rewards, {}, named, class_counts, word_changes)


def original_length_sd(comparisons: pl.DataFrame) -> float:
    """The sd (ddof 1) of the original responses' word counts: the unit of the edits' length changes."""
    lengths = word_counts(original_texts(comparisons)["text"].to_list())
    return float(np.std(lengths, ddof=1)) if lengths.size > 1 else float("nan")


def measures_length(length_sd: float) -> bool:
    """Whether ``length_sd`` is a unit to measure length changes in (finite and above 0)."""
    return bool(np.isfinite(length_sd) and length_sd > 0)


def length_changes(edits: pl.DataFrame, length_sd: float) -> np.ndarray:
    """Each edit's change in words over ``length_sd``; 0 for every edit where that sd is 0 or undefined (no
    unit to measure length in: γ is then undefined and the effects are not length-adjusted)."""
    words = word_counts(edits["text"].to_list()) - word_counts(edits["source_text"].to_list())
    return words / length_sd if measures_length(length_sd) else np.zeros_like(words)


def _one_dataset(comparisons: pl.DataFrame) -> str | None:
    """The comparisons' dataset when they share one (they do in the workflow), else None."""
    names = comparisons["dataset"].unique().to_list() if "dataset" in comparisons.columns else []
    return names[0] if len(names) == 1 else None


# ── replication: each significant finding again on two halves of the pairs ─────────────────────────────────
HALVES = (0, 1)  # half A, half B
HALF_COLUMNS = ("half_a_effect", "half_b_effect", "replicates")


def shown_pair(pair: str) -> str:
    """A ``pair_id`` as the tables and pages show it: ``{dataset}/{source_index}``; an id of another form
    (``\x01`` and a comparison id): the comparison id."""
    return pair.removeprefix("\x01").replace("\x00", "/")


def split_halves(comparison_ids: Sequence[str], dataset: str | None) -> np.ndarray:
    """Half of each comparison: 0 (A) or 1 (B). The distinct pairs (``pair_id``) are sorted by the sha256
    hex digest of their id (UTF-8) and dealt alternately to A and B (the first to A), so A has ⌈k/2⌉ of k
    pairs, every copy of a pair is in its pair's half, and the split needs no seed."""
    ids = [pair_id(c, dataset) for c in comparison_ids]
    order = sorted(set(ids), key=lambda p: (hashlib.sha256(p.encode("utf-8")).hexdigest(), p))
    half = {p: i % 2 for i, p in enumerate(order)}
    return np.array([half[p] for p in ids], dtype=np.int64)


def half_weights(
    clusters: np.ndarray, within: np.ndarray, settings: BootstrapSettings
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Comparison weights of one half (``within``: a mask over the comparisons), 0 outside it: the point
    estimate's (1 inside), the bootstrap's (``resample_counts`` over the half's clusters, the configured seed)
    and the leave-one-cluster-out jackknife's (one row per cluster of the half)."""
    inside = np.flatnonzero(within)
    point = np.zeros((1, clusters.size))
    point[0, inside] = 1.0
    counts = np.zeros((settings.n_resamples, clusters.size), dtype=np.int64)
    counts[:, inside] = resample_counts(clusters[inside], settings)
    left_out = jackknife_counts(clusters[inside])
    jack = np.zeros((left_out.shape[0], clusters.size), dtype=np.int64)
    jack[:, inside] = left_out
    return point, counts, jack


@dataclass(frozen=True)
class HalfEstimate:
    """One row's estimate on one half: the effect, its interval and the distinct pairs behind it."""

    effect: float
    low: float
    high: float
    pairs: int


def half_estimate(
    fit: Sequence[np.ndarray], k: int, behind: np.ndarray, settings: BootstrapSettings
) -> HalfEstimate:
    """Row ``k`` of a half's (point, bootstrap, jackknife) fit; ``behind``: the cluster of each observation
    of the row in the half. The interval is the whole sample's (method, level), expanded for the half's
    clusters (its jackknife rows)."""
    point, boot, jack = fit
    effect = settled(float(point[0, k])) if behind.size else float("nan")
    low, high = (settled(b) for b in interval(effect, boot[:, k], jack[:, k], settings)[:2])
    return HalfEstimate(effect, low, high, int(np.unique(behind).size))


def median_row(values: np.ndarray) -> int:
    """Index of the lower median of ``values`` (finite), the first such index on ties."""
    order = np.argsort(values, kind="stable")
    return int(order[(len(order) - 1) // 2])


# Reward sd within which a change is rounding, not an effect: an RM whose reward its held counts span exactly
# leaves its attribute effects at 1e-10, whose intervals, every resample rounding alike, miss 0 all the same
NEGLIGIBLE = 1e-6


def excludes_zero(low: float, high: float, signed: bool = True) -> bool:
    """Whether an interval excludes 0 and every value within ``NEGLIGIBLE`` of it (an unsigned share's: lies
    above them); False where it is undefined."""
    return bool(low > NEGLIGIBLE or (signed and high < -NEGLIGIBLE))


def replication(effect: float, halves: Sequence[HalfEstimate], signed: bool = True) -> dict:
    """``half_a_effect``, ``half_b_effect`` and ``replicates`` of a finding with whole-sample ``effect``.

    A half over fewer than ``MIN_PAIRS`` pairs of the finding has no estimate (null), and then
    ``replicates`` is null; so is it where a half's estimate is undefined (NaN). Otherwise ``replicates``:
    each half's effect has the sign of ``effect`` and each half's interval excludes 0."""
    values = [h.effect if h.pairs >= MIN_PAIRS else None for h in halves]
    if any(v is None or not np.isfinite(v) for v in values):
        held = None
    else:
        held = all(
            np.sign(h.effect) == np.sign(effect) and excludes_zero(h.low, h.high, signed) for h in halves
        )
    return dict(zip(HALF_COLUMNS, [*values, held], strict=True))


# ── influence: whether one or two pairs carry a significant finding ────────────────────────────────────────
INFLUENCE_COLUMNS = ("influential_pair", "without_it", "carried_by")


def cluster_pairs(comparison_ids: Sequence[str], dataset: str | None) -> list[str]:
    """The pair id (``pair_id``) of each cluster ``clusters_of`` numbers, in its order (first appearance):
    entry j names the cluster that row j of ``jackknife_counts`` leaves out."""
    return list(dict.fromkeys(pair_id(c, dataset) for c in comparison_ids))


def gone(effect: float, value: float, bar: float = 0.0) -> bool:
    """Whether ``value`` (the effect with pairs left out) no longer stands for a finding of ``effect``: it is
    0, has the other sign, or lies within ``bar`` of 0 on ``effect``'s side (sign(effect)·value ≤ bar); an
    undefined value (NaN) says nothing (False)."""
    return bool(np.isfinite(value) and np.sign(effect) * value <= bar)


@dataclass(frozen=True)
class Influence:
    """The clusters whose leaving out moves a finding most towards 0 (most first, at most two), and the
    finding without the first."""

    ranked: tuple[int, ...]
    without_it: float


def most_influential(effect: float, jack: np.ndarray) -> Influence | None:
    """The clusters of the jackknife column ``jack`` (its row j leaves out cluster j) ordered by how far their
    leaving out moves ``effect`` towards 0: the lowest sign(effect)·(effect without it) first (values
    settled to 1e-12), ties by cluster (the caller numbers clusters in the sorted order of their pair ids);
    undefined (NaN) replicates are not ranked. None where none is defined or the effect is undefined."""
    sign = np.sign(effect)
    defined = np.flatnonzero(np.isfinite(jack))
    if not np.isfinite(effect) or not defined.size:
        return None
    order = sorted(defined.tolist(), key=lambda j: (sign * settled(float(jack[j])), j))
    return Influence(tuple(order[:2]), settled(float(jack[order[0]])))


def leave_out_weights(clusters: np.ndarray, left_out: Sequence[Sequence[int]]) -> np.ndarray:
    """A row of comparison weights per entry of ``left_out``: 1, and 0 on the comparisons of its clusters."""
    weights = np.ones((len(left_out), clusters.size))
    for row, these in enumerate(left_out):
        weights[row, np.isin(clusters, list(these))] = 0.0
    return weights


def fill_influence(
    rows: Sequence[dict],
    wanted: Sequence[int],
    jack: np.ndarray,
    clusters: np.ndarray,
    pairs: Sequence[str],
    refit: Callable[[np.ndarray], np.ndarray],
    bar: float = 0.0,
) -> None:
    """Fill ``influential_pair``, ``without_it`` and ``carried_by`` of ``rows[k]`` for each k of ``wanted``
    (row k: column k of the fit). ``jack``: the fit's leave-one-cluster-out replicates (row j leaves out
    cluster j, whose pair id is ``pairs[j]``; ``clusters``: each comparison's cluster); ``refit``: the same
    fit under rows of comparison weights, for the leave-two-out fits; ``bar``: how near 0 counts as gone
    (``gone``). ``carried_by`` is 1 where leaving out the most influential pair makes the effect gone, 2
    where leaving out the two most influential (one refit, their weights 0) does, else null."""
    if not wanted:
        return
    rank = np.argsort(np.argsort(np.array(pairs, dtype=object)))  # ties go to the smaller pair id
    by_id = np.argsort(rank)  # cluster of each rank
    found = {}
    for k in wanted:
        influence = most_influential(rows[k]["effect"], jack[by_id, k])
        if influence is not None:
            ranked = tuple(int(by_id[r]) for r in influence.ranked)
            found[k] = Influence(ranked, influence.without_it)
    again = [
        k for k, i in found.items() if not gone(rows[k]["effect"], i.without_it, bar) and len(i.ranked) > 1
    ]
    twice = refit(leave_out_weights(clusters, [found[k].ranked for k in again])) if again else None
    for k, influence in found.items():
        carried = 1 if gone(rows[k]["effect"], influence.without_it, bar) else None
        if k in again and twice is not None:
            carried = 2 if gone(rows[k]["effect"], settled(float(twice[again.index(k), k])), bar) else None
        rows[k].update(
            influential_pair=shown_pair(pairs[influence.ranked[0]]),
            without_it=influence.without_it,
            carried_by=carried,
        )


@dataclass(frozen=True)
class EffectSettings:
    """``analysis.effects`` and ``analysis.bootstrap`` as the table needs them."""

    estimators: tuple[str, ...]
    primary: str
    bootstrap: BootstrapSettings


def effects_table(
    data: EffectInput,
    rms: Sequence[str],
    references: Mapping[str, str | None],
    settings: EffectSettings,
    log: logging.Logger | None = None,
) -> pl.DataFrame:
    """ATTRIBUTE_EFFECTS rows (without dataset and method) of every RM × estimator × row; ``log`` gets why
    a row with observations is undefined, and why a table over fewer than ``MIN_PAIRS`` pairs has no
    interval (and no significant row). Each significant row is estimated again on the two halves of the
    pairs (``split_halves``; ``half_a_effect``, ``half_b_effect``, ``replicates``) and gets the pair that
    moves it most towards 0 (``fill_influence``: ``influential_pair``, ``without_it``, ``carried_by``), null
    on the others."""
    n = len(data.comparisons)
    clusters = clusters_of(data.comparisons, data.dataset)
    counts, jack = resample_counts(clusters, settings.bootstrap), jackknife_counts(clusters)
    pairs = int(np.unique(clusters).size)
    halves = split_halves(data.comparisons, data.dataset)
    point = np.ones((1, n))
    rows = []
    for rm in rms:
        warn_same_as_reference(
            data.standardised(rm, references.get(rm)), rm, references.get(rm), data.dataset, log
        )
        for name in settings.estimators:
            estimator: Estimator = estimators.get(name)()
            reference = references.get(rm) if estimator.referenced else None
            obs = estimator.observations(data, rm, reference)
            values = [estimator.estimate(obs, w, n, len(data.attributes)) for w in (point, counts, jack)]
            _log_reasons(log, rm, name, estimator, obs, data)
            mine = _rows(rm, name, estimator, reference, data, obs, values, settings, clusters)
            if pairs >= MIN_PAIRS:
                _replicate(mine, estimator, obs, data, clusters, halves, settings.bootstrap)
                _influence(mine, estimator, obs, data, clusters, values[2])
            rows.extend(mine)
    table = rank_rows(pl.DataFrame(rows, schema=_SCHEMA))
    if pairs >= MIN_PAIRS:
        return table
    if log is not None:
        log.warning("%s: %s", _where(data.dataset), too_few_pairs(pairs, n))
    return without_intervals(table)


MIN_PAIRS = 2  # distinct pairs an interval needs: one pair has nothing to resample
# Distinct pairs a finding's edits must come from before it can be called significant: below it a cluster
# bootstrap's interval (and a t test on k - 1 degrees of freedom) rests on a handful of responses
MIN_FINDING_PAIRS = 5


def too_few_pairs(pairs: int, comparisons: int) -> str:
    """Why a table over ``pairs`` distinct pairs (``comparisons`` comparisons) has no interval."""
    copies = "" if comparisons == pairs else f", {comparisons} comparisons"
    return (
        f"too few comparisons to say: {pairs} pair{'s' * (pairs != 1)}{copies} (minimum {MIN_PAIRS}); "
        "the effects are point estimates with no interval (low and high NaN) and none is significant"
    )


def without_intervals(table: pl.DataFrame) -> pl.DataFrame:
    """``table`` without intervals (NaN) or significance (false): its effects are point estimates."""
    return table.with_columns(
        low=pl.lit(float("nan")),
        high=pl.lit(float("nan")),
        significant=pl.lit(False),
        **{column: pl.lit(None, dtype=_SCHEMA[column]) for column in (*HALF_COLUMNS, *INFLUENCE_COLUMNS)},
    )


UNADJUSTED = (
    "the length sensitivity γ is undefined (the original responses all have one length in words); the "
    "attributes' effects are estimated without the length adjustment (γ = 0) and are NOT length-adjusted"
)


def _log_reasons(
    log: logging.Logger | None, rm: str, name: str, estimator: Estimator, obs: Observations, data: EffectInput
) -> None:
    """Log why rows with observations are undefined; where the originals have no length sd, that the
    estimator's effects are not length-adjusted (in place of its length row's reason)."""
    if log is None:
        return
    why = estimator.undefined_reasons(obs, len(data.attributes))
    if type(estimator).length_row and not data.length_measured and obs.value.size:
        why.pop(len(data.attributes), None)
        log.warning("%s, %s: %s", named_rm(rm, data.dataset), name, UNADJUSTED)
    _log_undefined(log, rm, name, row_names(type(estimator), data.attributes), why)


def warn_same_as_reference(
    y: np.ndarray, rm: str, reference: str | None, dataset: str | None, log: logging.Logger | None
) -> bool:
    """Warn, and say whether, an RM's reward changes less its reference's (``y``, reward sd) are 0 on every
    scored edit (two at least): it rewards nothing beyond its reference — the same model under two names?"""
    finite = y[np.isfinite(y)]
    if reference is None or finite.size < 2 or np.max(np.abs(finite)) > NEGLIGIBLE:
        return False
    if log is not None:
        log.warning(
            "%s: every scored edit changes its reward exactly as it changes its reference %r's, so every "
            "effect against that reference is 0; is the reference the same model under another name?",
            named_rm(rm, dataset), reference,
        )  # fmt: skip
    return True


def named_rm(rm: str, dataset: str | None) -> str:
    """How a warning names an RM: with its dataset where it has one."""
    return f"RM {rm!r}" if dataset is None else f"RM {rm!r} on dataset {dataset!r}"


def _where(dataset: str | None) -> str:
    return "the comparisons" if dataset is None else f"dataset {dataset!r}"


def _log_undefined(
    log: logging.Logger | None, rm: str, name: str, rows: list[str], why: dict[int, str]
) -> None:
    if log is None:
        return
    for index, reason in sorted(why.items()):
        log.warning("%s, %s: %s undefined (NaN): %s", rm, name, rows[index], reason)


def _rows(
    rm: str,
    name: str,
    estimator: Estimator,
    reference: str | None,
    data: EffectInput,
    obs: Observations,
    values: list[np.ndarray],
    settings: EffectSettings,
    clusters: np.ndarray,
) -> list[dict]:
    """One row per attribute (and length) of one RM and estimator: the point value and its interval; a row
    is significant where its interval excludes 0 and its observations come from at least
    ``MIN_FINDING_PAIRS`` pairs (``clusters``: each comparison's pair)."""
    estimate, boot, jack = values
    names = row_names(type(estimator), data.attributes)
    n_obs, n_comp = support(obs, len(data.attributes), type(estimator).length_row)
    # the distinct pairs behind each row: support's count over each observation's pair, not its comparison
    by_pair = replace(obs, comparison=clusters[obs.comparison])
    _, pairs = support(by_pair, len(data.attributes), type(estimator).length_row)
    sd = data.rms[rm].sd
    out = []
    for k, attribute in enumerate(names):
        effect = settled(float(estimate[0, k]))
        low, high = (settled(b) for b in interval(effect, boot[:, k], jack[:, k], settings.bootstrap)[:2])
        defined = bool(np.isfinite(effect) and n_obs[k] > 0)
        out.append(
            {
                "rm": rm,
                "estimator": name,
                "attribute": attribute,
                "effect": effect if defined else float("nan"),
                "low": low if defined else float("nan"),
                "high": high if defined else float("nan"),
                "n": int(n_obs[k]),
                "primary": name == settings.primary,
                "effect_reward": effect * sd if defined and estimator.signed else None,
                "reward_sd": sd,
                "reference": reference,
                "n_comparisons": int(n_comp[k]),
                "pairs": int(pairs[k]),
                "significant": bool(
                    defined and pairs[k] >= MIN_FINDING_PAIRS and excludes_zero(low, high, estimator.signed)
                ),
                **dict.fromkeys(HALF_COLUMNS),
                **dict.fromkeys(INFLUENCE_COLUMNS),
            }
        )
    return out


def _replicate(
    rows: list[dict],
    estimator: Estimator,
    obs: Observations,
    data: EffectInput,
    clusters: np.ndarray,
    halves: np.ndarray,
    bootstrap: BootstrapSettings,
) -> None:
    """Fill the half columns of the significant ``rows`` of one RM and estimator (in row order: the
    attributes, then the length row): the estimator again on each half of the pairs, the same observations
    and design, its bootstrap and jackknife over that half's pairs."""
    wanted = [k for k, row in enumerate(rows) if row["significant"]]
    if not wanted:
        return
    n, n_attributes = len(data.comparisons), len(data.attributes)
    fits = []
    for h in HALVES:  # point, bootstrap and jackknife in one call (each row of weights is fitted on its own)
        weights = half_weights(clusters, halves == h, bootstrap)
        stacked = estimator.estimate(obs, np.vstack(weights), n, n_attributes)
        fits.append(np.split(stacked, np.cumsum([w.shape[0] for w in weights])[:-1]))
    for k in wanted:
        behind = obs.attribute == k if k < n_attributes else np.ones(obs.value.size, dtype=bool)
        estimates = [
            half_estimate(fit, k, clusters[obs.comparison[behind & (halves[obs.comparison] == h)]], bootstrap)
            for h, fit in zip(HALVES, fits, strict=True)
        ]
        rows[k].update(replication(rows[k]["effect"], estimates, estimator.signed))


def _influence(
    rows: list[dict],
    estimator: Estimator,
    obs: Observations,
    data: EffectInput,
    clusters: np.ndarray,
    jack: np.ndarray,
) -> None:
    """Fill the influence columns of the significant ``rows`` of one RM and estimator from its jackknife
    replicates ``jack`` (``fill_influence``; gone: 0 or the other sign), refitting only to leave out two
    pairs."""
    wanted = [k for k, row in enumerate(rows) if row["significant"]]
    n, n_attributes = len(data.comparisons), len(data.attributes)
    pairs = cluster_pairs(data.comparisons, data.dataset)
    fill_influence(
        rows, wanted, jack, clusters, pairs, lambda w: estimator.estimate(obs, w, n, n_attributes), bar=0.0
    )


def settled(value: float) -> float:
    """``value`` rounded to 1e-12: sums that are 0 in exact arithmetic tie at 0 instead of ranking by their
    rounding error (reward sd units: far below any effect a table shows)."""
    return round(value, 12) + 0.0 if np.isfinite(value) else value


_SCHEMA = {
    "rm": pl.String,
    "estimator": pl.String,
    "attribute": pl.String,
    "effect": pl.Float64,
    "low": pl.Float64,
    "high": pl.Float64,
    "n": pl.Int64,
    "primary": pl.Boolean,
    "effect_reward": pl.Float64,
    "reward_sd": pl.Float64,
    "reference": pl.String,
    "n_comparisons": pl.Int64,
    "pairs": pl.Int64,
    "significant": pl.Boolean,
    "half_a_effect": pl.Float64,
    "half_b_effect": pl.Float64,
    "replicates": pl.Boolean,
    "influential_pair": pl.String,
    "without_it": pl.Float64,
    "carried_by": pl.Int64,
}


def rank_rows(frame: pl.DataFrame) -> pl.DataFrame:
    """Rank rows by |effect| within (rm, estimator): 1 = largest; undefined last; ties by attribute name."""
    ordered = frame.with_columns(
        _key=pl.when(pl.col("effect").is_nan()).then(pl.lit(-1.0)).otherwise(pl.col("effect").abs())
    ).sort(["rm", "estimator", "_key", "attribute"], descending=[False, False, True, False])
    ranked = ordered.with_columns(rank=pl.int_range(1, pl.len() + 1).over("rm", "estimator").cast(pl.Int64))
    return ranked.drop("_key")


def log_summary(frame: pl.DataFrame, primary: str, log: logging.Logger) -> None:
    """Each RM's three largest effects under the primary estimator."""
    for rm in frame["rm"].unique(maintain_order=True):
        top = frame.filter((pl.col("rm") == rm) & (pl.col("estimator") == primary)).sort("rank").head(3)
        shown = ", ".join(f"{a} {e:+.2f} [{lo:+.2f}, {hi:+.2f}]" for a, e, lo, hi in
                          top.select("attribute", "effect", "low", "high").iter_rows())  # fmt: skip
        log.info("%s, %s: %s", rm, primary, shown)
