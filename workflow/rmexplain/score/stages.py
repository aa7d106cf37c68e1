"""The scoring stage: originals (which orient each comparison), perturbations, the attribute effects' edits
and bias discovery's, each text once per RM.

A job scores each distinct (prompt, text) of its inputs once, and not at all where an earlier job of the
same RM and dataset scored it already (``known``: its score tables, in the order the rules chain them:
originals, perturbations, effect edits, discovery rounds): that row is copied, so the RM is asked once per
distinct text in a run, and its scorer is not even loaded when every text is known."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from rmexplain.data.readers import EMBEDDED_PARTS, EMBEDDED_SPLITS, read_embedded
from rmexplain.explanations.categorise import orient, skipped_for_length
from rmexplain.ids import text_id
from rmexplain.markup import to_html, to_markdown
from rmexplain.schemas import (
    BIAS_DISCOVERY_EDITS,
    CARRIER_EDITS,
    COMPARISONS,
    EFFECT_EDITS,
    ORIGINAL_SCORES,
    PERTURBATIONS,
    REWARDS,
    conform,
    polars_schema,
    read_table,
)
from rmexplain.score.base import build_scorer
from rmexplain.score.lengths import (
    TRUNCATION_NOTE,
    TRUNCATION_TITLE,
    Scored,
    length_counts,
    present_truncation,
    score_within_limit,
    truncation_table,
)
from rmexplain.score.store import Row, ScoreStore


def score_originals(
    comparisons_path: str,
    rm: str,
    spec: dict[str, Any],
    artifacts: dict[str, str],
    log: logging.Logger,
    store: ScoreStore | None = None,
) -> pl.DataFrame:
    """ORIGINAL_SCORES for one (dataset, RM), under the RM's ``overlong`` policy; with a ``store``, the RM
    is asked only for the responses it lacks."""
    comparisons = read_table(comparisons_path, COMPARISONS, "comparisons")
    n = comparisons.height
    ids = comparisons["comparison_id"].to_list()
    scored = score_with_store(
        functools.cache(lambda: build_scorer(rm, spec, **artifacts)),
        comparisons["prompt"].to_list() * 2,
        comparisons["chosen"].to_list() + comparisons["rejected"].to_list(),
        [f"{c} (chosen)" for c in ids] + [f"{c} (rejected)" for c in ids],
        (rm, comparisons_path, log),
        store,
    )
    rewards, cut = scored.rewards, scored.cut
    frame = orient(comparisons, rm, rewards[:n], rewards[n:], (cut[:n], cut[n:]), scored.limit)
    check_not_all_tied(frame, rm, comparisons_path)
    agree = frame["agrees_with_human"].drop_nulls()
    log.info(
        "%s: %d comparisons, %d ties, %d skipped for length, agreement with human labels %.3f",
        rm,
        n,
        tied(frame).height,
        skipped_for_length(frame).height,
        agree.mean() if agree.len() else float("nan"),
    )
    return frame


class AllTiedError(ValueError):
    """An RM oriented no comparison (all tied, or tied or skipped for length): nothing to explain."""


def tied(frame: pl.DataFrame) -> pl.DataFrame:
    """ORIGINAL_SCORES rows whose two rewards are exactly equal."""
    return frame.filter(pl.col("reward_chosen") == pl.col("reward_rejected"))


def check_not_all_tied(frame: pl.DataFrame, rm: str, comparisons_path: str) -> None:
    """Raise when ``rm`` orients no comparison (0 kept): every table downstream would be empty."""
    if not frame.height or frame["plus_target"].null_count() < frame.height:
        return
    too_long = skipped_for_length(frame).height
    if too_long:
        raise AllTiedError(
            f"{rm} orients none of the {frame.height} comparisons of {comparisons_path} (0 kept): "
            f"{too_long} have an original over its {frame['max_length'][0]}-token limit, left unscored by "
            f"overlong: skip, and the other {frame.height - too_long} are ties. Set "
            f"reward_models.{rm}.overlong: truncate, raise its max_length, or drop it from the dataset"
        )
    raise AllTiedError(
        f"{rm} scores chosen and rejected exactly equal on all {frame.height} comparisons of "
        f"{comparisons_path} (0 kept): nothing can be explained. Check the RM (a constant or untrained "
        "head, the wrong model, texts cut to the same prefix) or drop it from the dataset"
    )


def _perturbation_texts(path: str) -> pl.DataFrame:
    frame = read_table(path, PERTURBATIONS, "perturbations")
    return frame.select(pl.col("perturbation_id").alias("id"), "comparison_id", "text")


def _effect_edit_texts(path: str) -> pl.DataFrame:
    return read_table(path, EFFECT_EDITS, "effect edits").select(
        pl.col("edit_id").alias("id"), "comparison_id", "text"
    )


def _discovery_edit_texts(path: str) -> pl.DataFrame:
    frame = read_table(path, BIAS_DISCOVERY_EDITS, "discovery edits").with_row_index("row")
    return frame.select(pl.format(f"{path} row {{}}", "row").alias("id"), "comparison_id", text="edited_text")


def _carrier_edit_texts(path: str) -> pl.DataFrame:
    frame = read_table(path, CARRIER_EDITS, "carrier edits").filter(pl.col("skip").is_null())
    frame = frame.with_row_index("row")
    return pl.concat(
        frame.select(pl.format(f"{path} row {{}} {column}", "row").alias("id"), "comparison_id", text=column)
        for column in ("source_text", "edited_text", "source_undone", "edited_undone")
    )  # S and E were scored before (copied): the check reads all four rewards from this table


# The texts of each scoring stage's tables (``id, comparison_id, text``): the perturbations, the attribute
# effects' edits, one round of bias discovery's edits.
STAGE_TEXTS: dict[str, Callable[[str], pl.DataFrame]] = {
    "perturbations": _perturbation_texts,
    "effects": _effect_edit_texts,
    "discovery": _discovery_edit_texts,
    "carriers": _carrier_edit_texts,
}


def score_stage(
    stage: str,
    comparisons_path: str,
    table_paths: Sequence[str],
    rm: str,
    spec: dict[str, Any],
    artifacts: dict[str, str],
    log: logging.Logger,
    known: Sequence[str] = (),
    store: ScoreStore | None = None,
) -> pl.DataFrame:
    """REWARDS for every distinct (prompt, text) of one scoring stage's tables (``STAGE_TEXTS``: the
    perturbations, the attribute effects' edits, a discovery round's edits, the carrier edits' texts), under
    the RM's ``overlong`` policy; a text of the score tables ``known`` is copied, one the ``store`` holds
    read from it (``score_texts``)."""
    texts = [STAGE_TEXTS[stage](path) for path in table_paths]
    groups = [pl.concat(texts)] if texts else []
    source = ", ".join(table_paths)
    return score_texts(comparisons_path, groups, source, rm, spec, artifacts, log, known, store)


def score_texts(
    comparisons_path: str,
    groups: Sequence[pl.DataFrame],
    source: str,
    rm: str,
    spec: dict[str, Any],
    artifacts: dict[str, str],
    log: logging.Logger,
    known: Sequence[str] = (),
    store: ScoreStore | None = None,
) -> pl.DataFrame:
    """REWARDS of every distinct (prompt, text) of the ``groups`` of texts (each ``id, comparison_id, text``;
    ``source`` names the files for errors), under the RM's ``overlong`` policy: one scoring call per group
    (a text of an earlier group is not scored again), so a group scores alike whatever follows it. A text
    the score tables ``known`` hold (``known_scores``) is copied from them, one the ``store`` holds is read
    from it; the scorer is built only if a text is left to score."""
    comparisons = read_table(comparisons_path, COMPARISONS, "comparisons")
    prompts = comparisons.select("comparison_id", "prompt")
    reused = known_scores(known, comparisons, rm)
    scorer = functools.cache(lambda: build_scorer(rm, spec, **artifacts))  # built if a text is left
    frames, done = [_empty_rewards()], set(reused["text_id"].to_list())
    for group in groups:
        texts = group.join(prompts, on="comparison_id", how="inner")
        unique = texts.unique(["prompt", "text"], keep="first", maintain_order=True)
        ids = [text_id(p, t) for p, t in unique.select("prompt", "text").iter_rows()]
        unique = unique.with_columns(text_id=pl.Series(ids, dtype=pl.String))
        copied = reused.join(unique.select("text_id"), on="text_id", how="semi")
        unique = unique.filter(~pl.col("text_id").is_in(list(done)))
        done.update(unique["text_id"].to_list())
        log.info(
            "%s: %d texts, %d distinct texts to score, %d scored already by an earlier job (copied)",
            rm, texts.height, unique.height, copied.height,
        )  # fmt: skip
        frames += [copied, _scored_frame(scorer, unique, rm, source, log, store)]
    frame = pl.concat(frames).unique("text_id", keep="first", maintain_order=True)
    return conform(frame, REWARDS, f"rewards[{rm}]")


def known_scores(paths: Sequence[str], comparisons: pl.DataFrame, rm: str) -> pl.DataFrame:
    """REWARDS rows of every text the score tables ``paths`` of RM ``rm`` hold (ORIGINAL_SCORES: each
    comparison's chosen and rejected; REWARDS otherwise), the first table's row where several hold a text."""
    frames = [_empty_rewards()]
    for path in paths:
        if "reward_chosen" in pl.read_parquet_schema(path):
            frames.append(_original_rows(read_table(path, ORIGINAL_SCORES, "original scores"), comparisons))
        else:
            frames.append(read_table(path, REWARDS, "rewards").select(list(REWARDS)))
    frame = pl.concat(frames).with_columns(rm=pl.lit(rm))
    return frame.unique("text_id", keep="first", maintain_order=True)


def _original_rows(scores: pl.DataFrame, comparisons: pl.DataFrame) -> pl.DataFrame:
    """ORIGINAL_SCORES as REWARDS rows: the chosen and the rejected response of each comparison."""
    texts = comparisons.select("comparison_id", "prompt", "chosen", "rejected")
    joined = scores.join(texts, on="comparison_id", how="inner", maintain_order="left")
    sides = []
    for side in ("chosen", "rejected"):
        ids = [text_id(p, t) for p, t in joined.select("prompt", side).iter_rows()]
        sides.append(
            joined.select(
                text_id=pl.Series(ids, dtype=pl.String),
                rm="rm",
                reward=f"reward_{side}",
                truncated=f"truncated_{side}",
                max_length="max_length",
            )
        )
    return pl.concat(sides)


def _empty_rewards() -> pl.DataFrame:
    return pl.DataFrame(schema=polars_schema(REWARDS))


def _scored_frame(
    scorer: Callable[[], Any],
    unique: pl.DataFrame,
    rm: str,
    source: str,
    log: logging.Logger,
    store: ScoreStore | None,
) -> pl.DataFrame:
    """REWARDS rows of the distinct texts ``unique`` (``id, prompt, text, text_id``), scored by
    ``scorer()`` (``score_with_store``)."""
    if not unique.height:
        return _empty_rewards()
    names = [f"{c} (text {i})" for c, i in unique.select("comparison_id", "id").iter_rows()]
    scored = score_with_store(
        scorer, unique["prompt"].to_list(), unique["text"].to_list(), names, (rm, source, log), store
    )
    return pl.DataFrame(
        {
            "text_id": unique["text_id"],
            "rm": [rm] * unique.height,
            "reward": pl.Series(scored.rewards, dtype=pl.Float64),
            "truncated": pl.Series(scored.cut, dtype=pl.Boolean),
            "max_length": pl.Series([scored.limit] * unique.height, dtype=pl.Int64),
        }
    )


def score_with_store(
    scorer: Callable[[], Any],
    prompts: Sequence[str],
    responses: Sequence[str],
    names: Sequence[str],
    where: tuple[str, str, logging.Logger],
    store: ScoreStore | None,
) -> Scored:
    """``score_within_limit`` of the pairs (``where``: the RM's name, the source file, the log); with a
    ``store``, only the pairs it lacks go to ``scorer()`` (built only then), and what they score is kept.
    Without one, or with a store that lacks them all, the RM scores exactly the pairs it would alone."""
    rm, source, log = where
    if store is None:
        return score_within_limit(scorer(), prompts, responses, names, rm, source, log)
    ids = [text_id(p, r) for p, r in zip(prompts, responses, strict=True)]
    stored = store.get(ids)
    missing = [i for i, t in enumerate(ids) if t not in stored]
    rows: dict[str, Row] = dict(stored)
    limit = next((row[2] for row in stored.values() if row[2] is not None), None)
    if missing:
        scored = score_within_limit(
            scorer(), *([items[i] for i in missing] for items in (prompts, responses, names)), rm, source, log
        )
        new = {
            ids[i]: (r, c, scored.limit) for i, r, c in zip(missing, scored.rewards, scored.cut, strict=True)
        }
        store.put((t, *row) for t, row in new.items())
        rows |= new
        limit = scored.limit
    log.info(
        "%s: %d of %d texts read from the score store %s", rm, len(ids) - len(missing), len(ids), store.path
    )
    return Scored([rows[t][0] for t in ids], [rows[t][1] for t in ids], limit)


def scale_of(rewards: np.ndarray) -> tuple[float, float, int]:
    """Mean, sd (ddof 1) and number of rewards."""
    return float(rewards.mean()), float(rewards.std(ddof=1)), int(rewards.size)


def reward_scale(
    rm: str, spec: dict[str, Any], artifacts: dict[str, str], log: logging.Logger
) -> dict[str, Any]:
    """The RM's reward mean and sd (ddof 1) on every response of the bundled data (both parts, all rows):
    the unit of the bias strength of the RMs planted into it."""
    pairs = [p for part in EMBEDDED_PARTS for split in EMBEDDED_SPLITS for p in read_embedded(part, split)]
    prompts = [p.prompt for p in pairs] * 2
    responses = [p.chosen for p in pairs] + [p.rejected for p in pairs]
    rewards = np.asarray(build_scorer(rm, spec, **artifacts).score(prompts, responses), dtype=np.float64)
    mean, sd, n = scale_of(rewards)
    scale = {
        "rm": rm,
        "mean": mean,
        "sd": sd,
        "n_texts": n,
        "texts": f"every chosen and rejected response of the bundled parts {list(EMBEDDED_PARTS)}, all rows",
    }
    log.info("%s: reward mean %.4f, sd %.4f over %d bundled responses", rm, *scale_of(rewards))
    return scale


def run_truncation_table(
    parts: Sequence[Sequence[str]],
    policies: Mapping[str, str],
    outputs: Mapping[str, str],
    log: logging.Logger,
) -> None:
    """The truncation table from the score tables ``parts`` = ``[dataset, rm, stage, file]``: CSV (null =
    unknown), and Markdown and HTML (the report)."""
    counts = []
    for dataset, rm, stage, path in parts:
        contract = ORIGINAL_SCORES if stage == "originals" else REWARDS
        row = {"dataset": dataset, "rm": rm, "stage": stage, "policy": policies[rm]}
        row |= length_counts(read_table(path, contract, f"{stage} scores"), stage)
        log.info("%s", row)
        counts.append(row)
    table = truncation_table(counts)
    table.write_csv(outputs["csv"])
    shown = present_truncation(table)
    Path(outputs["md"]).write_text(f"### {TRUNCATION_TITLE}\n\n" + to_markdown(shown), encoding="utf-8")
    Path(outputs["html"]).write_text(to_html(shown, TRUNCATION_TITLE, TRUNCATION_NOTE), encoding="utf-8")


def train_demo_rm(part: str, training: dict, output: str, log: logging.Logger) -> None:
    """The ``train_demo_rm`` rule: fit a demo RM's scalar head on one bundled part."""
    from rmexplain.score.demo_head import train_demo_head

    train_demo_head(part, training, output, log)
