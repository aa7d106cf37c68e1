"""The interfaces and registries of bias discovery: features, probes, engines, and what a round receives.

A light module (no scikit-learn, scipy or torch): the config check and the rules' file lists read the
registered names and an engine's number of rounds from here without importing the engines, which live in
``rmexplain.discovery.offline`` (the registries' lazy maps) or in a plugin (entry-point groups
``rmexplain.discovery_engines`` and ``rmexplain.discovery_probes``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import polars as pl

from rmexplain import discovery_engines
from rmexplain.registry import Registry
from rmexplain.schemas import BIAS_DISCOVERY_EDITS, polars_schema

ADD, REMOVE = 1, -1  # an edit's direction: +1 adds the feature, −1 removes it
DIRECTION_NAMES = {ADD: "add", REMOVE: "remove"}


class SkipEdit(ValueError):
    """An edit that cannot be made on one response; the message is the counted reason."""


class Feature:
    """A candidate feature of a response, with its own detector and edits.

    ``name`` is unique within a dataset (one name, one set of edits for every RM); ``kind`` groups features
    (``format``, ``spacing``, ``opener``, ``closer``, ``punctuation``, ``casing``, ``wording``, ``words``,
    ``character``, ``lexicon``, the classes ``numbers``, ``pronouns``, ``shape``, ``filler``, ``long words``,
    and the merged ``word class``);
    ``source`` says where it comes from (a citation, or how it was mined).
    ``add`` puts the feature into a response that lacks it, where it naturally goes; ``remove`` takes every
    instance out of one that has it. Both raise ``SkipEdit`` with a reason where they cannot, and must leave
    ``present`` true after ``add`` and false after ``remove`` (the edit maker checks it). ``count`` says how
    many instances a text holds (0 exactly where ``present`` is false; default 1 where present): an edit's
    dose, the instances it adds or removes, is the change of the count.
    """

    name: str = ""
    description: str = ""
    kind: str = ""
    source: str = ""

    def present(self, text: str) -> bool:
        raise NotImplementedError

    def count(self, text: str) -> int:
        """How many instances of the feature ``text`` holds."""
        return int(bool(self.present(text)))

    def add(self, text: str) -> str:
        raise NotImplementedError

    def remove(self, text: str) -> str:
        raise NotImplementedError


@dataclass
class RoundContext:
    """What an engine's round receives.

    ``comparisons``: the dataset's sampled comparisons (COMPARISONS); ``originals``: each RM's scores of
    the original responses (ORIGINAL_SCORES, by RM, in the dataset's RM order); ``references``: each RM's
    reference RM (or None); ``previous``: the effects of this engine's earlier rounds
    (BIAS_DISCOVERY_EFFECTS, every RM; empty in round 1): what an engine that selects and mutates (Wang et
    al.'s loop) reads; ``previous_edits``: those rounds' edits (BIAS_DISCOVERY_EDITS); ``settings``:
    ``discovery.<engine>`` (under the engine's name), ``responses_per_feature`` and ``min_per_direction``;
    ``services``: what the job opened for the engine: ``skips`` (a ``SkipRecorder`` for an engine that writes
    its own edits) and, for an engine that ``uses_llm``, ``chats``: a cached LLM client per section of
    ``Engine.llm_sections``; ``attribute_edits``: for an engine that ``reads_attribute_edits``, in rounds
    after the first, the attribute effects' round-1 edits with each RM's reward change
    (``rmexplain.discovery.edit_words.EDIT_COLUMNS``; empty where the dataset has no attribute effects).
    """

    dataset: str
    round: int
    comparisons: pl.DataFrame
    originals: Mapping[str, pl.DataFrame]
    references: Mapping[str, str | None]
    previous: pl.DataFrame
    settings: Mapping[str, Any]
    log: logging.Logger
    services: dict[str, Any] = field(default_factory=dict)
    previous_edits: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema=polars_schema(BIAS_DISCOVERY_EDITS))
    )
    attribute_edits: pl.DataFrame = field(default_factory=pl.DataFrame)

    def engine_settings(self, engine: str) -> Mapping[str, Any]:
        """``discovery.<engine>``."""
        return self.settings.get(engine) or {}


class Engine:
    """A discovery engine: proposes candidate features and edits responses to test them, round by round.

    The workflow runs, for each dataset, rounds 1, …, ``discovery.<engine>.rounds`` (a setting, default 1,
    so the rules know them without importing the engine) of each engine: ``run_round`` returns the round's
    features (``Feature`` objects: the shared edit maker, ``rmexplain.discovery.edits``, makes their edits)
    or, for an engine that writes its own edits (an LLM's rewrites), a ready edits frame
    (``RoundOutput.edits``); every RM scores the edits; the round's effects are estimated and passed to the
    next round as ``RoundContext.previous``. A new engine is one subclass registered with
    ``@engines.register("name")`` (or an entry point of group ``rmexplain.discovery_engines``).
    """

    uses_llm: ClassVar[bool] = False  # it calls the configured LLM (its jobs get the ``llm`` section)
    # rounds after the first read the attribute edits and their changes (``RoundContext.attribute_edits``)
    reads_attribute_edits: ClassVar[bool] = False
    settings_schema: ClassVar[Mapping[str, Any]] = {}  # a plugin's ``discovery.<name>`` keys (JSON schema)
    # keys of ``discovery.<name>`` that only rounds after the first read (round 1's params leave them out)
    later_round_settings: ClassVar[tuple[str, ...]] = ()

    def run_round(self, context: RoundContext) -> RoundOutput:
        raise NotImplementedError

    @classmethod
    def llm_sections(cls, settings: Mapping[str, Any], llm: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        """Config key -> the effective LLM section of each client its jobs open (``settings``: its
        ``discovery.<name>``): the ``llm`` section for an engine that ``uses_llm``, none otherwise."""
        return {"llm": dict(llm)} if cls.uses_llm else {}

    @classmethod
    def prompt_inputs(cls, settings: Mapping[str, Any]) -> dict[str, str]:
        """Rule-input name -> the prompt template file a round reads (a changed template reruns it)."""
        return {}

    def plan_round(self, context: RoundContext) -> list[PlannedRound]:
        """For ``rmexplain plan``, the LLM requests of one round whose inputs exist (``context.services``
        holds request builders that answer from the cache only); none for an engine without an LLM."""
        return []

    @classmethod
    def request_bound(
        cls, discovery: Mapping[str, Any], units: int, rms: int, round_: int
    ) -> list[PlannedRound]:
        """For ``rmexplain plan``, an upper bound of one round's LLM requests before its inputs exist
        (``discovery``: the whole section; ``units``: at most this many distinct responses; ``rms``: the
        dataset's RMs), as counts."""
        return []


@dataclass(frozen=True)
class PlannedRound:
    """Requests of one round to one LLM section, as the plan counts them: ``planned`` (the requests, where
    the round's inputs exist) or ``bound`` (a count, where they do not)."""

    what: str  # e.g. "rewrites" or "judge"
    llm_key: str
    planned: tuple[Any, ...] = ()  # rmexplain.llm.client.PlannedRequest
    bound: int | None = None


@dataclass
class RoundOutput:
    """One round of one engine: the features it tests (``screened``: feature -> the RM whose screen chose it
    and its statistic, for the candidates table), or, for an engine that writes its own edits (an LLM's
    rewrites), those edits (BIAS_DISCOVERY_EDITS) with its candidates (BIAS_DISCOVERY_CANDIDATES).
    ``stopped``: why the round stopped early and tests nothing (its tables empty, the reason also recorded
    as its skip); a round that is not stopped and makes no edit fails."""

    features: list[Feature] = field(default_factory=list)
    screened: dict[str, tuple[str, float]] = field(default_factory=dict)
    edits: pl.DataFrame | None = None
    candidates: pl.DataFrame | None = None
    stopped: str | None = None


engines: Registry[type[Engine]] = discovery_engines.engines  # defined below the design, which reads it

# The catalogue of surface and format probes the offline engine tests whatever the responses hold
# (docs/discovery.md lists each with its source).
CATALOGUE = (
    "bold",
    "italics",
    "header",
    "bullet_list",
    "numbered_list",
    "numbered_steps",
    "code_block",
    "inline_code",
    "table",
    "blockquote",
    "horizontal_rule",
    "link",
    "emoji",
    "exclamation",
    "affirmative_opener",
    "flattering_opener",
    "thanks_opener",
    "hope_this_helps",
    "let_me_know",
    "follow_up_offer",
    "greeting_opener",
    "here_is_opener",
    "good_luck_closer",
    "extra_spaces",
    "double_space_sentences",
    "paragraph_breaks",
    "line_per_sentence",
    "extra_blank_lines",
    "trailing_spaces",
    "all_caps_word",
    "all_lowercase",
    "ellipsis",
    "em_dash",
    "curly_quotes",
    "emoticon",
    "parentheses",
    "hedging",
    "certainty",
    "apology",
    "ai_self_reference",
    "llm_vocabulary",
    "consult_professional",
    "summary_closer",
    "note_label",
)

probes: Registry[Feature] = Registry(
    "discovery.offline.probes",
    dict.fromkeys(CATALOGUE, "rmexplain.discovery.catalogue"),
    group="rmexplain.discovery_probes",
    error=KeyError,
)


def probe(name: str) -> Feature:
    """The registered probe ``name`` (a plugin may register a ``Feature`` subclass: it is instantiated)."""
    entry: Any = probes.get(name)
    return entry() if isinstance(entry, type) else entry
