"""The offline engine (the default): the catalogue's probes and candidates mined from the responses.

Round 1: every probe of ``discovery.offline.probes`` (default: every registered probe, plugins included)
is tested, and so is every class candidate of the kinds asked for (``rmexplain.discovery.classes``: numbers,
pronouns, shape, filler): a class's edits add it to any response, so whether the responses happen to have it
says little about what the RM does with it, and a screen on presence left weak classes out. The other mined
candidates (``rmexplain.discovery.mining``) are screened on the original responses against each RM's reward
(beyond its reference) at equal length, and the strongest ``mined.per_rm`` of each RM are tested,
``mined.max_candidates`` in all. No LLM, no model: what it can see is what a regular expression or
a word list can name. Round 2 (``rounds: 2``) tests the word classes merged from the words round 1 found
alike (``rmexplain.discovery.merging``) and the words the attribute edits change that their reward changes
single out (``rmexplain.discovery.edit_words``); it stops early, saying why, where there is neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import polars as pl

from rmexplain.discovery.base import Engine, Feature, RoundContext, RoundOutput, engines, probe, probes
from rmexplain.discovery.classes import CLASS_KINDS, class_features
from rmexplain.discovery.edit_words import edit_word_candidates
from rmexplain.discovery.edits import original_units
from rmexplain.discovery.merging import (
    MergeSettings,
    embedding_similarity,
    screened_word_classes,
    with_edited_words,
    word_classes,
)
from rmexplain.discovery.mining import (
    MinedWords,
    ScreenSettings,
    WordClass,
    all_candidates,
    opens_sentences,
    presence_matrix,
    screen,
)
from rmexplain.effects.analysis import original_rewards, reward_sd, word_counts
from rmexplain.settings import schema_defaults


@engines.register("offline")
class OfflineEngine(Engine):
    """Catalogue probes and mined candidates (round 1); word classes merged from round 1's words and the words
    the attribute edits change (round 2)."""

    later_round_settings: ClassVar[tuple[str, ...]] = ("merge",)
    reads_attribute_edits: ClassVar[bool] = True

    def run_round(self, context: RoundContext) -> RoundOutput:
        if context.round > 1:
            return later_round(context)
        settings = context.engine_settings("offline")
        units = original_units(context.comparisons)
        texts = units["text"].to_list()
        catalogue = [probe(name) for name in settings.get("probes") or probes.names()]
        mined = {**schema_defaults("discovery", "offline", "mined"), **(settings.get("mined") or {})}
        kinds = mined["kinds"]
        screening = screen_settings(settings)
        if set(kinds) - set(CLASS_KINDS):
            warn_unreachable_support(screening.min_support, len(texts), context)
        always = [*catalogue, *class_features(kinds)]
        screened_kinds = [kind for kind in kinds if kind not in CLASS_KINDS]
        ngram_max = int(mined["ngram_max"])
        candidates, presence = all_candidates(texts, screening.min_support, ngram_max, screened_kinds)
        chosen = screen(
            candidates,
            presence,
            screen_rewards(units, context.originals, context.references),
            word_counts(texts),
            list(presence_matrix(always, texts).T),
            screening,
        )  # fmt: skip
        context.log.info(
            "%s: %d catalogue probes, %d class candidates; %d mined candidates, %d screened in: %s",
            context.dataset, len(catalogue), len(always) - len(catalogue), len(candidates), len(chosen),
            ", ".join(f.name for f, _, _ in chosen),
        )  # fmt: skip
        features: list[Feature] = [*always, *(f for f, _, _ in chosen)]
        return RoundOutput(features=features, screened={f.name: (rm, t) for f, rm, t in chosen})


def later_round(context: RoundContext) -> RoundOutput:
    """Round 2: the word classes of ``rmexplain.discovery.merging`` (with the screened words that join
    them, then the classes of the screened words that join none, up to ``merge.max_classes``), each added
    where its first member mostly stands, and the words of ``rmexplain.discovery.edit_words``; stopped
    early where there is neither."""
    settings = context.engine_settings("offline")
    merge = MergeSettings.of(settings.get("merge") or {}, context.settings["fdr"])
    similarity = embedding_similarity(context.settings["encoder"])
    merged = word_classes(context.previous, merge, similarity)
    tested = set(context.previous["feature"].to_list()) if "feature" in context.previous.columns else set()
    edited = edit_word_candidates(context.attribute_edits, tested, screen_settings(settings))
    words = [(f.phrase, rm, t) for f, rm, t in edited if isinstance(f, MinedWords)]
    merged = with_edited_words(merged, context.previous, words, merge, similarity)
    room = max(merge.max_classes - len(merged), 0)
    merged += screened_word_classes(words, merged, merge, similarity)[:room]
    texts = original_units(context.comparisons)["text"].to_list()
    classes: list[Feature] = [WordClass(members, opens_sentences(members[0], texts)) for members in merged]
    if not classes and not edited:
        return RoundOutput(stopped=NOTHING_TO_TEST.format(round=context.round, fdr=merge.fdr))
    context.log.info(
        "%s: %d word classes merged from the words round 1 found alike and those screened in: %s; %d words "
        "the attribute edits change, screened in: %s",
        context.dataset, len(classes), "; ".join(f.name for f in classes) or "none", len(edited),
        ", ".join(f.name for f, _, _ in edited) or "none",
    )  # fmt: skip
    return RoundOutput(
        features=[*classes, *(f for f, _, _ in edited)], screened={f.name: (rm, t) for f, rm, t in edited}
    )


NOTHING_TO_TEST = (
    "round {round} stopped early: no RM has two significant word features (q ≤ {fdr}) of round 1 that behave "
    "alike (discovery.offline.merge), so there is no word class to test, and no word the attribute edits "
    "change is screened in (none, or no attribute effects on this dataset)"
)


def screen_settings(settings: Mapping[str, Any]) -> ScreenSettings:
    """``discovery.offline.mined`` as the screens read it (the schema's defaults where it is silent)."""
    mined = {**schema_defaults("discovery", "offline", "mined"), **(settings.get("mined") or {})}
    return ScreenSettings(int(mined["max_candidates"]), int(mined["per_rm"]), int(mined["min_support"]))


def warn_unreachable_support(min_support: int, responses: int, context: RoundContext) -> None:
    """Warn, naming the key, when ``min_support`` is not below the number of responses: a screened candidate
    needs that many responses and may not be in all of them, so none can be tested (the classes still are)."""
    if min_support >= responses:
        context.log.warning(
            "%s: discovery.offline.mined.min_support is %d, not below the %d responses: no screened mined "
            "candidate can be tested (one needs min_support responses and may not be in all of them; the "
            "class candidates are tested all the same)",
            context.dataset, min_support, responses,
        )  # fmt: skip


def screen_rewards(
    units: pl.DataFrame, originals: Mapping[str, pl.DataFrame], references: Mapping[str, str | None]
) -> dict[str, np.ndarray]:
    """Per RM, each unit's reward less its reference's, over the RM's reward sd on the originals (as the
    effects standardise reward changes; NaN where unscored)."""
    out = {}
    for rm, frame in originals.items():
        reward = unit_rewards(units, frame)
        reference = references.get(rm)
        if reference is not None:
            reward = reward - unit_rewards(units, originals[reference])
        out[rm] = reward / reward_sd(frame)
    return out


def unit_rewards(units: pl.DataFrame, originals: pl.DataFrame) -> np.ndarray:
    """The RM's reward of each unit (comparison_id, target), NaN where unscored."""
    reward = original_rewards(originals)
    values = [reward.get(key) for key in units.select("comparison_id", "target").iter_rows()]
    return np.array([np.nan if v is None else float(v) for v in values])
