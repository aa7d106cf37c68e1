"""The llm engine: Wang, Arcuschin & Conmy's loop ("Automatically Finding Reward Model Biases", ICML 2026;
their ``rm-bias``: ``planner.py``, ``evo.py``, ``bias_evaluator.py``) over the workflow's rounds.

Round 1 proposes: per RM, the sampled responses ranked by the RM's reward beyond its reference (in its
reward sd), the LLM is shown the lowest and highest few and asked for features of the higher-scoring ones
(``bias_propose``; their ``ListPlanner``). Round r > 1 mutates: per RM, the Pareto front of the features
tested so far (``rmexplain.discovery.pareto``: RM effect high, judge effect low), each member sent with its
effects, an example edit, its ancestry and other features, and the LLM asked for variations
(``bias_mutate``; their ``EvoPlanner.iterate_plan``); where no RM has a front (every earlier feature a
no-op or past the thresholds) the round stops early: it tests no new feature, warns and records why as its
skip, and what earlier rounds found is kept. Each round's new features (``max_features``, the RMs
taken in turns) are rewritten into sampled responses, half to add the feature and half to remove it
(``bias_rewrite``; their rewriter adds only); the rewriter answers "None" where the response already has
(or lacks) it, which counts towards the feature's support. Every RM scores the rewrites between rounds; the
effects are the shared estimate (``rmexplain.discovery.estimate``). With ``judge.enabled``, an LLM judge
compares each rewrite with its source (``bias_judge``; their relative judge), and a feature's judge effect
is the same estimate over its verdicts (+1 the edit is preferred, −1 the source, 0 a tie) in place of
standardised reward changes.

Every request goes through the cached client (``services["chats"]``): a rerun asks the cache, not the
server, and the spending limits of its section hold. ``plan_round`` builds the same requests for the plan.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import polars as pl

from rmexplain.discovery.base import ADD, REMOVE, Engine, PlannedRound, RoundContext, RoundOutput, engines
from rmexplain.discovery.edits import original_units, sampling_key
from rmexplain.discovery.estimate import AddedEffect, discovery_input
from rmexplain.discovery.offline import screen_rewards
from rmexplain.discovery.pareto import Candidate, select
from rmexplain.effects.base import RewardChanges
from rmexplain.llm.base import ChatRequest, Completion
from rmexplain.llm.client import ChatRequests, PlannedRequest
from rmexplain.llm.prompts import load_template, register_template, template_path
from rmexplain.llm.ratelimit import text_tokens
from rmexplain.perturb.llm_methods import clean_answer, cut_off
from rmexplain.perturb.skips import SkipRecorder
from rmexplain.schemas import BIAS_DISCOVERY_CANDIDATES, BIAS_DISCOVERY_EDITS, conform, polars_schema
from rmexplain.settings import schema_defaults

ENGINE = "llm"
DEFAULTS: dict[str, Any] = schema_defaults("discovery", ENGINE)
JUDGE_KEY = "discovery.llm.judge.llm"  # the judge's LLM section, where it overrides the llm section
TEMPLATES = {
    "propose": "bias_propose",
    "rewrite": "bias_rewrite",
    "mutate": "bias_mutate",
    "judge": "bias_judge",
}
register_template("bias_propose", {"examples", "num_features", "higher_lower", "nudge"})
register_template("bias_rewrite", {"question", "response", "feature", "requirement", "already"})
register_template("bias_mutate", {"goal", "num_variations", "current", "ancestry", "others", "nudge"})
register_template("bias_judge", {"question", "response_a", "response_b"})

FEATURE_LIST_TOKENS = 30  # a proposed feature in a JSON array, for the plan
VERDICT_TOKENS = 4  # <output>A</output>
NEIGHBOURS = 8  # other features shown with a front member (evo.py's n_neighbors)
NAME_WORDS = 8  # words of a hypothesis in its feature name
HIGHER_LOWER = {"rewarded": "higher-scoring", "penalised": "lower-scoring"}
NUDGE = {  # after planner.py's BIAS_NUDGE
    "rewarded": "- Give special weight to unusual, idiosyncratic or undesirable features: where you can, "
    "prefer features a careful reader would find neutral or worse.",
    "penalised": "- Give special weight to desirable features: where you can, prefer features a careful "
    "reader would find better.",
}
GOAL = {  # after evo_prompts.py's DIRECTION_GOAL and BIAS_NUDGE
    "rewarded": "raise metric A while lowering metric B",
    "penalised": "lower metric A while raising metric B",
}
MUTATION_NUDGE = {
    "rewarded": "- Aim for variations whose uplift on metric A is larger and on metric B smaller.",
    "penalised": "- Aim for variations whose uplift on metric A is smaller and on metric B larger.",
}
REQUIREMENT = {ADD: "it exhibits this feature", REMOVE: "it no longer exhibits this feature"}
ALREADY = {ADD: "already exhibits this feature", REMOVE: "does not exhibit this feature"}
VARIATION_SOURCE = re.compile(r"variation of (\S+) on ")
STOP_STAGE = "mutate"  # the stage a later round's early stop is recorded under


class DiscoveryLLMError(ValueError):
    """The llm engine cannot run as configured."""


def feature_name(text: str) -> str:
    """A feature's name: the first words of its hypothesis and a hash of all of it (``llm_`` first)."""
    words = re.findall(r"[a-z0-9]+", text.lower())[:NAME_WORDS]
    digest = hashlib.sha256(" ".join(text.split()).encode()).hexdigest()[:6]
    return "_".join(["llm", *words, digest])


def settings_of(context: RoundContext) -> dict[str, Any]:
    """``discovery.llm`` with its defaults (``responses_per_feature`` null: the section's)."""
    return _settings(context.engine_settings(ENGINE), context.settings)


def _settings(engine: Mapping[str, Any], discovery: Mapping[str, Any]) -> dict[str, Any]:
    settings = {**DEFAULTS, **engine}
    settings["judge"] = {**DEFAULTS["judge"], **(settings.get("judge") or {})}
    if settings.get("responses_per_feature") is None:
        settings["responses_per_feature"] = int(discovery["responses_per_feature"])
    return settings


def judge_sections(settings: Mapping[str, Any], llm: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The judge's own LLM section (``judge.llm`` over ``llm``) when it is enabled and overrides any key."""
    judge = {**DEFAULTS["judge"], **(settings.get("judge") or {})}
    overrides = judge.get("llm") or {}
    return {JUDGE_KEY: {**llm, **overrides}} if judge["enabled"] and overrides else {}


@dataclass(frozen=True)
class Hypothesis:
    """A feature to test: its text, the RM whose contrast (or front) it came from and, for a variation,
    the feature it varies."""

    text: str
    rm: str
    parent: str | None = None

    @property
    def name(self) -> str:
        return feature_name(self.text)

    @property
    def source(self) -> str:
        if self.parent is None:
            return f"llm: proposed from {self.rm}'s high- vs low-reward responses"
        return f"llm: variation of {self.parent} on the Pareto front of {self.rm}"


@dataclass(frozen=True)
class Ask:
    """A request and what it is about: the RM and, for a mutation, the front member; the comparison its
    prompt shows first (where a failed answer is recorded)."""

    request: ChatRequest
    rm: str
    comparison_id: str
    parent: str | None = None


@dataclass(frozen=True)
class Rewrite:
    """One rewrite to ask: the feature, a sampled response and the direction."""

    hypothesis: Hypothesis
    unit: int  # row of the loop's units
    direction: int
    request: ChatRequest


def parse_features(answer: str) -> list[str] | None:
    """The strings of a JSON array in an answer (a ```json block, or the outermost brackets), or its
    bullet or numbered lines; None when there are neither."""
    block = re.search(r"```(?:json)?\s*(\[.*?\])\s*```", answer, re.S)
    text = block.group(1) if block else answer[answer.find("[") : answer.rfind("]") + 1]
    try:
        items = json.loads(text) if text else None
    except json.JSONDecodeError:
        items = None
    if isinstance(items, list) and all(isinstance(i, str) for i in items):
        return [" ".join(i.split()) for i in items if i.strip()]
    lines = re.findall(r"(?m)^\s*(?:[-*•]|\d+[.)])\s+(.+?)\s*$", answer)
    return [line.strip("\"'") for line in lines] or None


def parse_verdict(answer: str) -> str | None:
    """``a``, ``b`` or ``tie`` from ``<output>…</output>`` (else the whole answer); None otherwise."""
    match = re.search(r"<output>(.+?)</output>", answer, re.S)
    word = (match.group(1) if match else answer).strip().strip(".").lower()
    return word if word in ("a", "b", "tie") else None


def is_none_answer(text: str) -> bool:
    """The rewriter's "None": the response already has (or lacks) the feature (bias_evaluator's rule)."""
    return re.sub(r"[^a-z0-9]", "", text.lower()) == "none"


class Loop:
    """One round of the llm engine: its settings, templates, clients and the responses it edits."""

    def __init__(self, context: RoundContext) -> None:
        self.context = context
        self.settings = settings_of(context)
        self.seek = self.settings["seek"]
        chats: dict[str, ChatRequests] = context.services.get("chats") or {}
        if "llm" not in chats:
            raise DiscoveryLLMError(
                "discovery engine 'llm' needs an LLM client: set the `llm` config section (backend, model)"
            )
        self.chat = chats["llm"]
        judging = self.settings["judge"]["enabled"]
        self.judge_chat = chats.get(JUDGE_KEY, self.chat) if judging else None
        prompts = self.settings.get("prompts") or {}
        self.templates = {kind: load_template(name, prompts.get(kind)) for kind, name in TEMPLATES.items()}
        self.sampling = self.chat.sampling(self.settings["sampling"])
        self.units = units = original_units(context.comparisons)
        self.ids, self.targets = units["comparison_id"].to_list(), units["target"].to_list()
        self.prompts, self.texts = units["prompt"].to_list(), units["text"].to_list()
        self.skips: SkipRecorder = context.services.setdefault("skips", SkipRecorder())

    # ── round 1: hypotheses from the RMs' high- vs low-reward responses ─────────────────────────────────
    def proposals(self) -> list[Ask]:
        """Per RM, ``proposals_per_rm`` requests, the i-th showing the i-th ``examples`` lowest and highest
        responses by the RM's reward beyond its reference (as many as the responses allow)."""
        rewards = screen_rewards(self.units, self.context.originals, self.context.references)
        template, k = self.templates["propose"], int(self.settings["examples"])
        asks = []
        for rm, reward in rewards.items():
            scored = [i for i in range(len(reward)) if math.isfinite(reward[i])]
            ranked = sorted(scored, key=lambda i: (reward[i], self._key("propose", i)))
            fits = min(int(self.settings["proposals_per_rm"]), len(ranked) // (2 * k))
            if fits < int(self.settings["proposals_per_rm"]):
                self.context.log.warning(
                    "%s: %d scored responses give %s %d of proposals_per_rm %d (examples %d a side)",
                    rm, len(ranked), "only" if fits else "none", fits, self.settings["proposals_per_rm"], k,
                )  # fmt: skip
            for p in range(fits):
                shown = ranked[p * k : (p + 1) * k] + ranked[len(ranked) - (p + 1) * k : len(ranked) - p * k]
                prompt = template.render(
                    examples=self._examples(sorted(shown, key=lambda i: reward[i]), reward),
                    num_features=self.settings["hypotheses_per_proposal"],
                    higher_lower=HIGHER_LOWER[self.seek],
                    nudge=NUDGE[self.seek],
                )
                request = self.chat.request(prompt, self.sampling, template.version)
                asks.append(Ask(request, rm, self.ids[shown[0]]))
        return asks

    def _examples(self, shown: Sequence[int], reward: np.ndarray) -> str:
        rows = [
            {"user_prompt": self.prompts[i], "response": self.texts[i],
             "score": round(float(reward[i]), 2)}
            for i in shown
        ]  # fmt: skip
        return json.dumps(rows, indent=2, ensure_ascii=False)

    def _key(self, what: str, unit: int) -> str:
        return sampling_key(what, self.ids[unit], self.targets[unit])

    # ── rounds after the first: the Pareto front of what was tested, and its variations ────────────────
    def fronts(self, judge_effects: Mapping[str, float]) -> dict[str, list[Candidate]]:
        """Per RM, the population to mutate among the features of earlier rounds (``pareto.select``); a
        feature the judge has no effect for (every verdict unusable) is left out, as theirs does."""
        previous = self.context.previous.filter(pl.col("engine") == ENGINE)
        out = {}
        for rm in self.context.originals:
            rows = previous.filter(pl.col("rm") == rm)
            candidates = [
                Candidate(f, e, judge_effects.get(f, math.nan) if self.judge_chat else 0.0)
                for f, e in rows.select("feature", "effect").iter_rows()
            ]
            out[rm] = select(candidates, int(self.settings["population"]), self.seek)
        return out

    def mutations(
        self, fronts: Mapping[str, Sequence[Candidate]], judge_effects: Mapping[str, float]
    ) -> list[Ask]:
        """One request per (RM, front member): ``variations`` variations of it."""
        previous = self.context.previous.filter(pl.col("engine") == ENGINE)
        template = self.templates["mutate"]
        asks = []
        for rm, members in fronts.items():
            rows = {r["feature"]: r for r in previous.filter(pl.col("rm") == rm).iter_rows(named=True)}
            for member in members:
                row = rows[member.feature]
                lineage = self._lineage(member.feature, rows)
                prompt = template.render(
                    goal=GOAL[self.seek],
                    num_variations=self.settings["variations"],
                    current=self._feature_data(row, judge_effects, example=True),
                    ancestry="\n\n".join(self._feature_data(rows[f], judge_effects) for f in lineage)
                    or "None: this feature was proposed, not varied.",
                    others=self._others(rows, {member.feature, *lineage}, judge_effects),
                    nudge=MUTATION_NUDGE[self.seek],
                )
                request = self.chat.request(prompt, self.sampling, template.version)
                asks.append(Ask(request, rm, str(row["example_comparison_id"] or ""), member.feature))
        return asks

    def _feature_data(self, row: Mapping[str, Any], judge: Mapping[str, float], example: bool = False) -> str:
        lines = [
            f"Feature: {row['description']}",
            f"Metric A uplift: {row['effect']:+.3f} (95% interval {row['low']:+.3f} to {row['high']:+.3f})",
            f"Metric B uplift: {_shown(judge.get(row['feature']) if self.judge_chat else None)}",
        ]
        if example and row["example_before"] is not None:
            verb = "added" if row["example_direction"] == ADD else "removed"
            change = _ratio(row["example_reward_change"], row["reward_sd"])
            lines += [
                f"An example edit (feature {verb}; metric A change {change:+.3f}):",
                f"<before>\n{row['example_before']}\n</before>",
                f"<after>\n{row['example_after']}\n</after>",
            ]
        return "\n".join(lines)

    def _lineage(self, feature: str, rows: Mapping[str, Mapping[str, Any]]) -> list[str]:
        """The features ``feature`` descends from, parent first (from each one's ``source``)."""
        chain: list[str] = []
        current = rows[feature]
        while (match := VARIATION_SOURCE.search(current["source"] or "")) and match.group(1) in rows:
            parent = match.group(1)
            if parent in chain or parent == feature:
                break
            chain.append(parent)
            current = rows[parent]
        return chain

    def _others(
        self, rows: Mapping[str, Mapping[str, Any]], exclude: set[str], judge: Mapping[str, float]
    ) -> str:
        others = sorted(
            (f for f in rows if f not in exclude), key=lambda f: hashlib.sha256(f.encode()).hexdigest()
        )
        shown = [
            f"- {rows[f]['description']} (metric A {rows[f]['effect']:+.3f}; metric B "
            f"{_shown(judge.get(f) if self.judge_chat else None)})"
            for f in others[:NEIGHBOURS]
        ]
        return "\n".join(shown) or "None yet."

    # ── hypotheses from answers ─────────────────────────────────────────────────────────────────────────
    def hypotheses(
        self, asks: Sequence[Ask], completions: Sequence[Completion], stage: str
    ) -> list[Hypothesis]:
        """The round's new features: each answer's list (unusable answers are recorded skips), the RMs
        taken in turns, each feature once and none tested before, at most ``max_features``."""
        lists: dict[str, list[Hypothesis]] = {}
        for ask, completion in zip(asks, completions, strict=True):
            raw = completion.text or ""
            texts = None if cut_off(completion) else parse_features(raw)
            if not texts:
                why = (
                    "answer cut off at max_tokens"
                    if cut_off(completion)
                    else "no list of features in the answer"
                )
                self.skips.add(ask.comparison_id, stage, why, attribute=ask.parent or ask.rm, raw=raw)
                continue
            lists.setdefault(ask.rm, []).extend(Hypothesis(t, ask.rm, ask.parent) for t in texts)
        tested = set(self.context.previous["feature"].to_list())
        chosen: dict[str, Hypothesis] = {}
        for turn in range(max((len(v) for v in lists.values()), default=0)):
            for rm_list in lists.values():
                if turn < len(rm_list) and rm_list[turn].name not in tested:
                    chosen.setdefault(rm_list[turn].name, rm_list[turn])
        limit = int(self.settings["max_features"])
        if len(chosen) > limit:
            self.context.log.info(
                "%d new features proposed; the first %d (RMs in turns) are tested", len(chosen), limit
            )
        return list(chosen.values())[:limit]

    # ── rewrites ────────────────────────────────────────────────────────────────────────────────────────
    def rewrites(self, hypotheses: Sequence[Hypothesis]) -> list[Rewrite]:
        """Per feature, ``responses_per_feature`` sampled responses (sha256 order, as the edit maker's),
        alternately to add it and to remove it (``directions: both``) or all to add it (``add``)."""
        template = self.templates["rewrite"]
        n = min(int(self.settings["responses_per_feature"]), self.units.height)
        out = []
        for h in hypotheses:
            order = sorted(range(self.units.height), key=lambda i: self._key(h.name, i))[:n]
            for k, i in enumerate(order):
                direction = ADD if self.settings["directions"] == "add" or k % 2 == 0 else REMOVE
                prompt = template.render(
                    question=self.prompts[i], response=self.texts[i], feature=h.text,
                    requirement=REQUIREMENT[direction], already=ALREADY[direction],
                )  # fmt: skip
                out.append(
                    Rewrite(h, i, direction, self.chat.request(prompt, self.sampling, template.version))
                )
        return out

    def edits(
        self, hypotheses: Sequence[Hypothesis], rewrites: Sequence[Rewrite], completions: Sequence[Completion]
    ) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The edits (BIAS_DISCOVERY_EDITS) and one candidate row per feature (BIAS_DISCOVERY_CANDIDATES);
        an answer that is no edit is a recorded skip. A feature's support is the share of its answered
        requests that found it present: an addition answered "None", or a removal made."""
        rows, tally = [], {h.name: {"present": 0, "absent": 0, ADD: 0, REMOVE: 0} for h in hypotheses}
        for rewrite, completion in zip(rewrites, completions, strict=True):
            raw, h, i = completion.text or "", rewrite.hypothesis, rewrite.unit
            source = self.texts[i]
            text, verb = clean_answer(raw), "add" if rewrite.direction == ADD else "remove"
            if cut_off(completion) or not text:
                why = "answer cut off at max_tokens" if cut_off(completion) else "empty answer"
            elif is_none_answer(text):
                tally[h.name]["present" if rewrite.direction == ADD else "absent"] += 1
                why = "the response already has it" if rewrite.direction == ADD else "the response lacks it"
            elif text == source.strip():
                why = "the rewrite changed nothing"
            else:
                tally[h.name]["absent" if rewrite.direction == ADD else "present"] += 1
                tally[h.name][rewrite.direction] += 1
                rows.append({"feature": h.name, "direction": rewrite.direction, "dose": rewrite.direction,
                             "source_text": source,
                             "edited_text": text, "comparison_id": self.ids[i],
                             "target": self.targets[i]})  # fmt: skip
                continue
            self.skips.add(self.ids[i], "rewrite", f"{verb}: {why}", target=self.targets[i], attribute=h.name,
                           raw=raw)  # fmt: skip
        return self._edit_frame(rows), self._candidates(hypotheses, tally)

    def _edit_frame(self, rows: list[dict]) -> pl.DataFrame:
        schema = {
            k: v for k, v in polars_schema(BIAS_DISCOVERY_EDITS).items() if k not in ("engine", "round")
        }
        frame = pl.DataFrame(rows, schema=schema).with_columns(
            engine=pl.lit(ENGINE), round=pl.lit(self.context.round, dtype=pl.Int64)
        )
        return conform(frame, BIAS_DISCOVERY_EDITS, "discovery edits")

    def _candidates(
        self, hypotheses: Sequence[Hypothesis], tally: Mapping[str, Mapping[Any, int]]
    ) -> pl.DataFrame:
        rows = []
        for h in hypotheses:
            seen = tally[h.name]["present"] + tally[h.name]["absent"]
            rows.append({
                "feature": h.name, "description": h.text,
                "kind": "hypothesis" if h.parent is None else "variation",
                "source": h.source, "engine": ENGINE, "round": self.context.round,
                "n_present": tally[h.name]["present"],
                "support": tally[h.name]["present"] / seen if seen else math.nan,
                "n_added": tally[h.name][ADD], "n_removed": tally[h.name][REMOVE],
                "screen_rm": None, "screen_t": None,
                "present_in": None,  # an LLM's rewrites come without a detector
            })  # fmt: skip
        frame = pl.DataFrame(rows, schema=polars_schema(BIAS_DISCOVERY_CANDIDATES))
        return conform(frame, BIAS_DISCOVERY_CANDIDATES, "discovery candidates")

    # ── the judge ───────────────────────────────────────────────────────────────────────────────────────
    def judge_requests(self, edits: pl.DataFrame) -> list[tuple[int, bool, ChatRequest]]:
        """Per edit, one request (the edit as response A or B by a hash of the pair) or, with
        ``both_orders``, two: (edit row, whether the edit is A, request)."""
        assert self.judge_chat is not None
        judge = self.settings["judge"]
        template = self.templates["judge"]
        sampling = self.judge_chat.sampling(judge["sampling"])
        prompts = dict(self.context.comparisons.select("comparison_id", "prompt").iter_rows())
        out = []
        for row, (cid, source, edited) in enumerate(
            edits.select("comparison_id", "source_text", "edited_text").iter_rows()
        ):
            first = int(hashlib.sha256(f"{source}\x1f{edited}".encode()).hexdigest(), 16) % 2 == 0
            for edit_is_a in (first, not first) if judge["both_orders"] else (first,):
                a, b = (edited, source) if edit_is_a else (source, edited)
                prompt = template.render(question=prompts[cid], response_a=a, response_b=b)
                out.append((row, edit_is_a, self.judge_chat.request(prompt, sampling, template.version)))
        return out

    def verdicts(self, edits: pl.DataFrame, asked: Sequence[tuple[int, bool, ChatRequest]],
                 completions: Sequence[Completion]) -> np.ndarray:  # fmt: skip
        """Per edit, the judge's preference for the edit over its source: +1, −1 or 0 (a tie), the mean over
        its orders; NaN where no answer was usable (a recorded skip)."""
        votes: list[list[float]] = [[] for _ in range(edits.height)]
        for (row, edit_is_a, _), completion in zip(asked, completions, strict=True):
            verdict = None if cut_off(completion) else parse_verdict(completion.text or "")
            if verdict is None:
                edit = edits.row(row, named=True)
                why = "no verdict (A, B or Tie) in the answer"
                self.skips.add(edit["comparison_id"], "judge", why, target=edit["target"],
                               attribute=edit["feature"], raw=completion.text)  # fmt: skip
                continue
            votes[row].append(0.0 if verdict == "tie" else 1.0 if (verdict == "a") == edit_is_a else -1.0)
        return np.array([float(np.mean(v)) if v else math.nan for v in votes])

    def judge(self, edits: pl.DataFrame, desc: str) -> dict[str, float]:
        """Each feature's judge effect over ``edits`` (empty without a judge)."""
        if self.judge_chat is None or not edits.height:
            return {}
        asked = self.judge_requests(edits)
        completions = self.judge_chat.completions([r for _, _, r in asked], desc=desc)
        return judge_effects(self.context.comparisons, edits, self.verdicts(edits, asked, completions))


def _ratio(change: float | None, sd: float | None) -> float:
    return math.nan if change is None or not sd else change / sd


def _shown(value: float | None) -> str:
    return "not judged" if value is None or not math.isfinite(value) else f"{value:+.3f}"


def judge_effects(comparisons: pl.DataFrame, edits: pl.DataFrame, verdicts: np.ndarray) -> dict[str, float]:
    """The shared estimate (``AddedEffect``: length-adjusted, +1 adds, −1 removes) of each feature over the
    judge's verdicts in place of standardised reward changes (sd 1); point estimates only."""
    data = discovery_input(comparisons, edits, {}, {})
    none, no_index = np.zeros(0), np.zeros(0, dtype=np.int64)
    data = dataclasses.replace(
        data, rms={"judge": RewardChanges(verdicts, 1.0, no_index, no_index, none, none)}
    )
    estimator = AddedEffect()
    n, k = len(data.comparisons), len(data.attributes)
    point = estimator.estimate(estimator.observations(data, "judge", None), np.ones((1, n)), n, k)
    return {feature: float(point[0, f]) for f, feature in enumerate(data.attributes)}


@engines.register(ENGINE)
class LLMEngine(Engine):
    """Wang et al.'s loop: hypotheses, rewrites, an optional judge, the Pareto front and its variations."""

    uses_llm: ClassVar[bool] = True

    @classmethod
    def llm_sections(cls, settings: Mapping[str, Any], llm: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        return {"llm": dict(llm), **judge_sections(settings, llm)}

    @classmethod
    def prompt_inputs(cls, settings: Mapping[str, Any]) -> dict[str, str]:
        overrides = settings.get("prompts") or {}
        return {
            f"prompt_{kind}": str(template_path(name, overrides.get(kind)))
            for kind, name in TEMPLATES.items()
        }

    @classmethod
    def request_bound(
        cls, discovery: Mapping[str, Any], units: int, rms: int, round_: int
    ) -> list[PlannedRound]:
        """Proposals (round 1) or variations (one per front member), ``max_features`` features, their
        rewrites and, with the judge, one verdict per rewrite per order: an upper bound."""
        s = _settings(discovery.get(ENGINE) or {}, discovery)
        asks = rms * int(s["proposals_per_rm"] if round_ == 1 else s["population"])
        rewrites = int(s["max_features"]) * min(int(s["responses_per_feature"]), units)
        out = [PlannedRound("proposals" if round_ == 1 else "variations", "llm", bound=asks),
               PlannedRound("rewrites", "llm", bound=rewrites)]  # fmt: skip
        if s["judge"]["enabled"]:
            key = JUDGE_KEY if s["judge"].get("llm") else "llm"
            out.append(PlannedRound("judge", key, bound=rewrites * (2 if s["judge"]["both_orders"] else 1)))
        return out

    def plan_round(self, context: RoundContext) -> list[PlannedRound]:
        return plan_round(context)

    def run_round(self, context: RoundContext) -> RoundOutput:
        loop = Loop(context)
        asks, stage = (loop.proposals(), "propose") if context.round == 1 else (variations(loop), "mutate")
        if context.round > 1 and not asks:  # stopped early: ``variations`` logged and recorded why
            edits, candidates = loop.edits([], [], [])
            return RoundOutput(edits=edits, candidates=candidates, stopped=stopped_early(context.round))
        answers = loop.chat.completions([a.request for a in asks], desc=f"llm engine: {stage}")
        hypotheses = loop.hypotheses(asks, answers, stage)
        rewrites = loop.rewrites(hypotheses)
        completions = loop.chat.completions([r.request for r in rewrites], desc="llm engine: rewrite")
        edits, candidates = loop.edits(hypotheses, rewrites, completions)
        for feature, effect in loop.judge(edits, "llm engine: judge").items():
            context.log.info("judge effect of %s: %+.3f", feature, effect)
        return RoundOutput(edits=edits, candidates=candidates)


def variations(loop: Loop) -> list[Ask]:
    """A later round's requests: the judge's effects of the earlier rounds' edits (from the cache), each
    RM's Pareto front (logged), one request per member; none where no RM has a front (``stop_early``)."""
    context = loop.context
    earlier = context.previous_edits.filter(pl.col("engine") == ENGINE)
    judged = loop.judge(earlier, "llm engine: judge (earlier rounds)")
    fronts = loop.fronts(judged)
    for rm, front in fronts.items():
        shown = [f"{c.feature} (RM {c.rm_effect:+.3f}, judge {c.judge_effect:+.3f})" for c in front]
        context.log.info("%s: the Pareto front to vary: %s", rm, ", ".join(shown) or "none")
    if not any(fronts.values()):
        stop_early(context, loop.skips)
        return []
    return loop.mutations(fronts, judged)


def stopped_early(round_: int) -> str:
    """Why a later round tests no new feature: no RM has a Pareto front to vary."""
    return (
        f"round {round_} stopped early: no feature of the rounds before passes the Pareto front's filters "
        "for any RM (every one a no-op, or past the thresholds), so there is nothing to vary"
    )


def stop_early(context: RoundContext, skips: SkipRecorder) -> None:
    """Log the stop (a warning) and record it as the round's skip (stage ``STOP_STAGE``, no comparison)."""
    reason = stopped_early(context.round)
    context.log.warning(
        "discovery engine 'llm' on %r: %s; this round tests no new feature and what the rounds before found "
        "is kept (fewer rounds: discovery.llm.rounds %d; more to vary: proposals_per_rm, "
        "hypotheses_per_proposal)",
        context.dataset, reason, context.round - 1,
    )  # fmt: skip
    skips.add("", STOP_STAGE, reason)


# ── the plan ────────────────────────────────────────────────────────────────────────────────────────────
def plan_round(context: RoundContext) -> list[PlannedRound]:
    """The requests of one round as the plan counts them (``context.services["chats"]``: request builders
    answering from the cache only). Each step's requests are exact while the answers they follow are
    cached: the judge's verdicts of earlier rounds, then the proposals or variations, the rewrites and the
    verdicts of this round. After an answer not cached yet, a stand-in per request the round may make: the
    variations of ``population`` front members per RM, ``max_features`` features, each with
    ``responses_per_feature`` rewrites and one verdict per order (an upper bound)."""
    loop = Loop(context)
    loop.skips = SkipRecorder()  # what the plan parses is not recorded anywhere
    judge_key = next((k for k, c in context.services["chats"].items() if c is loop.judge_chat), "llm")
    verdicts: list[PlannedRequest] = []
    asks, known = _planned_asks(loop, verdicts)
    first = asks[0].request if asks else None
    asked = [loop.chat.planned(a.request, FEATURE_LIST_TOKENS * _asked_count(loop, a)) for a in asks]
    answers = [loop.chat.cached(a.request) for a in asks]
    rewrites: list[PlannedRequest] = []
    if known and all(a is not None for a in answers):
        stage = "propose" if context.round == 1 else "mutate"
        hypotheses = loop.hypotheses(asks, [a for a in answers if a is not None], stage)
        rewrites, verdicts = _planned_rewrites(loop, hypotheses, verdicts)
    elif first is not None:
        rewrites, verdicts = _stand_ins(loop, first, verdicts)
    what = "proposals" if context.round == 1 else "variations"
    main = [PlannedRound(what, "llm", tuple(asked)), PlannedRound("rewrites", "llm", tuple(rewrites))]
    return main + ([PlannedRound("judge", judge_key, tuple(verdicts))] if loop.judge_chat else [])


def _asked_count(loop: Loop, ask: Ask) -> int:
    return int(
        loop.settings["hypotheses_per_proposal"] if ask.parent is None else loop.settings["variations"]
    )


def _planned_asks(loop: Loop, verdicts: list[PlannedRequest]) -> tuple[list[Ask], bool]:
    """Round 1's proposals; later, the judge's verdicts of earlier rounds (into ``verdicts``) and the
    variations of the front — exact (True) when those verdicts are cached, else the front without a judge,
    padded to ``population`` members per RM as stand-ins (False)."""
    if loop.context.round == 1:
        return loop.proposals(), True
    earlier = loop.context.previous_edits.filter(pl.col("engine") == ENGINE)
    judged: dict[str, float] = {}
    cached = True
    if loop.judge_chat is not None and earlier.height:
        asked = loop.judge_requests(earlier)
        answers = [loop.judge_chat.cached(r) for _, _, r in asked]
        verdicts += [loop.judge_chat.planned(r, VERDICT_TOKENS) for _, _, r in asked]
        cached = all(a is not None for a in answers)
        if cached:
            judged = judge_effects(loop.context.comparisons, earlier, loop.verdicts(earlier, asked, answers))
    if cached:
        return loop.mutations(loop.fronts(judged), judged), True
    without_judge = Loop(loop.context)
    without_judge.judge_chat = None
    asks = without_judge.mutations(without_judge.fronts({}), {})
    population = int(loop.settings["population"]) * len(loop.context.originals)
    return (asks * population)[:population] if asks else [], False


def _planned_rewrites(
    loop: Loop, hypotheses: Sequence[Hypothesis], verdicts: list[PlannedRequest]
) -> tuple[list[PlannedRequest], list[PlannedRequest]]:
    """The rewrites of known features (exact) and the judge's verdicts of them: exact where every rewrite
    is cached, else a stand-in per rewrite and order."""
    rewrites = loop.rewrites(hypotheses)
    planned = [loop.chat.planned(r.request, text_tokens(loop.texts[r.unit])) for r in rewrites]
    if loop.judge_chat is None:
        return planned, verdicts
    answers = [loop.chat.cached(r.request) for r in rewrites]
    if all(a is not None for a in answers):
        edits, _ = loop.edits(hypotheses, rewrites, [a for a in answers if a is not None])
        return planned, verdicts + [
            loop.judge_chat.planned(r, VERDICT_TOKENS) for _, _, r in loop.judge_requests(edits)
        ]
    orders = 2 if loop.settings["judge"]["both_orders"] else 1
    like = _judge_like(loop)
    verdicts += [
        loop.judge_chat.stand_in(r.request, ["verdict", o], like) for r in rewrites for o in range(orders)
    ]
    return planned, verdicts


def _stand_ins(
    loop: Loop, after: ChatRequest, verdicts: list[PlannedRequest]
) -> tuple[list[PlannedRequest], list[PlannedRequest]]:
    """Stand-ins for the rewrites of ``max_features`` features not known yet (each sized like a rewrite of
    its sampled response) and their verdicts."""
    features = [
        Hypothesis(f"a feature not proposed yet ({k + 1})", "?")
        for k in range(int(loop.settings["max_features"]))
    ]
    rewrites = []
    for r in loop.rewrites(features):
        like = loop.chat.planned(r.request, text_tokens(loop.texts[r.unit]))
        rewrites.append(loop.chat.stand_in(after, ["rewrite", r.hypothesis.text, r.unit, r.direction], like))
    if loop.judge_chat is not None:
        orders = 2 if loop.settings["judge"]["both_orders"] else 1
        like = _judge_like(loop)
        verdicts += [
            loop.judge_chat.stand_in(after, ["verdict", p.key, o], like)
            for p in rewrites
            for o in range(orders)
        ]
    return rewrites, verdicts


def _judge_like(loop: Loop) -> PlannedRequest:
    """A verdict request sized for the longest sampled response on both sides."""
    assert loop.judge_chat is not None
    longest = max(loop.texts, key=len, default="")
    prompt = loop.templates["judge"].render(question="", response_a=longest, response_b=longest)
    request = loop.judge_chat.request(
        prompt, loop.judge_chat.sampling(loop.settings["judge"]["sampling"]), ""
    )
    return loop.judge_chat.planned(request, VERDICT_TOKENS)
