"""The scoring stage's ``overlong`` policy: what happens to an input longer than the RM reads.

The backend says which (prompt, response) pairs it would cut at its token limit
(``RewardModelBackend.length_check``); then, by ``reward_models.<rm>.overlong``,

- ``truncate`` (default): every pair is scored, cut ones as the RM reads them (their start, or their end
  with ``truncation_side: left``);
- ``skip``: cut pairs are not scored: their reward is null, and they are counted and left out downstream;
- ``error``: the job fails naming the RM, the file, the first ids and the setting to change.

Backends that cannot see the RM's tokens (``python``, ``remote`` without ``send: token_ids``) report the
flags as unknown (null), never as "nothing cut".
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from rmexplain.score.base import NoneRewardError, NonFiniteRewardError, RewardModelBackend, ScoringError


class OverlongError(ScoringError):
    """Inputs over the RM's token limit under ``overlong: error``."""


@dataclass(frozen=True)
class Scored:
    """Rewards of a batch of pairs with what the length check found.

    ``rewards``: None where ``overlong: skip`` left a cut pair unscored; ``cut``: per pair, whether the RM
    cuts it (None: the backend cannot tell); ``limit``: the token limit checked (None: none known).
    """

    rewards: list[float | None]
    cut: list[bool | None]
    limit: int | None


def counted(rewards: Sequence[float], expected: int, rm: str, source: str) -> list[float]:
    """``rewards`` as a list, if the backend returned one per input (a broken backend is named)."""
    rewards = list(rewards)
    if len(rewards) != expected:
        raise ScoringError(
            f"reward_models.{rm}: its backend returned {len(rewards)} rewards for {expected} inputs "
            f"from {source}"
        )
    return rewards


def scored_finite(
    scorer: RewardModelBackend,
    prompts: Sequence[str],
    responses: Sequence[str],
    ids: Sequence[str],
    rm: str,
    source: str,
) -> list[float]:
    """The rewards of the pairs, one per pair; a None, NaN or infinite reward (found by the backend, or
    returned by one that does not check) fails naming the pairs by ``ids``, not by their position in a
    batch."""
    try:
        rewards = counted(scorer.score(prompts, responses), len(prompts), rm, source)
    except NoneRewardError as err:
        raise _refused(rm, f"{err.returned_by} returned None", err.rows, ids, source) from None
    except NonFiniteRewardError as err:
        raise _refused(rm, "NaN or infinite reward", err.rows, ids, source) from None
    missing = [i for i, reward in enumerate(rewards) if reward is None]
    if missing:
        raise _refused(rm, "its backend returned None", missing, ids, source)
    bad = [i for i, reward in enumerate(rewards) if not math.isfinite(reward)]
    if bad:
        raise _refused(rm, "NaN or infinite reward", bad, ids, source)
    return rewards


def _refused(rm: str, what: str, rows: Sequence[int], ids: Sequence[str], source: str) -> ScoringError:
    """The error for rewards refused at ``rows``: the RM, what was wrong, how many and which pairs."""
    named = ", ".join(ids[i] for i in rows[:10]) + (", …" if len(rows) > 10 else "")
    return ScoringError(
        f"reward_models.{rm}: {what} for {len(rows)} of {len(ids)} inputs from {source}: {named}"
    )


def score_within_limit(
    scorer: RewardModelBackend,
    prompts: Sequence[str],
    responses: Sequence[str],
    ids: Sequence[str],
    rm: str,
    source: str,
    log: logging.Logger,
) -> Scored:
    """Score the pairs under the RM's ``overlong`` policy; ``ids`` name the pairs (for the error) and
    ``source`` the file they come from."""
    check = scorer.length_check(prompts, responses)
    if check.cut is None:
        log.info("%s: its backend cannot tell which inputs it cuts; truncation counts are unknown", rm)
        scores = scored_finite(scorer, prompts, responses, ids, rm, source)
        return Scored(scores, [None] * len(prompts), None)
    cut_rows = [i for i, cut in enumerate(check.cut) if cut]
    if cut_rows and check.policy == "error":
        first = ", ".join(ids[i] for i in cut_rows[:5])
        raise OverlongError(
            f"reward_models.{rm}: {len(cut_rows)} of {len(prompts)} inputs from {source} are over the RM's "
            f"{check.limit}-token limit (first: {first}); set reward_models.{rm}.overlong: truncate to "
            "score them cut, or skip to leave them unscored (counted)"
        )
    skipped = set(cut_rows) if check.policy == "skip" else set()
    keep = [i for i in range(len(prompts)) if i not in skipped]
    rewards: list[float | None] = [None] * len(prompts)
    if keep:
        kept_prompts, kept_responses, kept_ids = (
            [items[i] for i in keep] for items in (prompts, responses, ids)
        )
        scores = scored_finite(scorer, kept_prompts, kept_responses, kept_ids, rm, source)
        for i, reward in zip(keep, scores, strict=True):
            rewards[i] = reward
    if cut_rows:
        log.warning(
            "%s: %d of %d inputs are over its %d-token limit: %s (overlong: %s)",
            rm,
            len(cut_rows),
            len(prompts),
            check.limit,
            "left unscored" if skipped else "scored cut",
            check.policy,
        )
    return Scored(rewards, list(check.cut), check.limit)


# ---- the truncation table ------------------------------------------------------------------------------

TRUNCATION_COLUMNS = {
    "dataset": pl.String,
    "rm": pl.String,
    "stage": pl.String,
    "policy": pl.String,
    "max_length": pl.Int64,
    "texts": pl.Int64,
    "truncated": pl.Int64,
    "skipped": pl.Int64,
}
TRUNCATION_TITLE = "Inputs over the reward models' token limits"
TRUNCATION_NOTE = (
    "Per dataset, RM and scoring stage: texts scored (originals: chosen and rejected of every comparison; "
    "perturbations; effects: the attribute effects' edits; discovery <engine> round <n>: bias discovery's "
    "edits of that round; each distinct text once, a text an earlier stage scored counted again but copied, "
    "not asked again), how many were over the RM's "
    "token limit (cut, or under overlong: skip left unscored), and how many were skipped. 'unknown': the "
    "backend cannot see the RM's tokens."
)


def length_counts(scores: pl.DataFrame, stage: str) -> dict[str, int | None]:
    """``texts``, ``truncated`` (None: unknown), ``skipped`` and ``max_length`` of one score table:
    ORIGINAL_SCORES (``stage`` ``originals``) or REWARDS (``perturbations``, ``effects``, a discovery
    round's)."""
    if stage == "originals":
        flags = pl.concat([scores["truncated_chosen"], scores["truncated_rejected"]])
        rewards = pl.concat([scores["reward_chosen"], scores["reward_rejected"]])
    else:
        flags, rewards = scores["truncated"], scores["reward"]
    limits = scores["max_length"].drop_nulls()
    return {
        "max_length": int(limits[0]) if limits.len() else None,
        "texts": rewards.len(),
        "truncated": None if flags.null_count() else int(flags.sum()),
        "skipped": rewards.null_count(),
    }


def truncation_table(counts: list[dict[str, object]]) -> pl.DataFrame:
    """The rows of :func:`length_counts` (with dataset, rm, stage and policy) as the truncation table;
    the policy is null where the count is unknown (the backend cannot apply one)."""
    frame = pl.DataFrame(counts, schema=TRUNCATION_COLUMNS)
    known = pl.col("truncated").is_not_null()
    return frame.with_columns(policy=pl.when(known).then(pl.col("policy")))


def present_truncation(table: pl.DataFrame) -> pl.DataFrame:
    """The readable layout: unknown counts and limits in words."""
    return table.select(
        "dataset",
        pl.col("rm").alias("RM"),
        "stage",
        pl.col("policy").fill_null("–"),
        pl.col("max_length").cast(pl.String).fill_null("none known").alias("token limit"),
        "texts",
        pl.col("truncated").cast(pl.String).fill_null("unknown").alias("over the limit"),
        "skipped",
    )
