"""A plan before spending: what a config will ask of the LLM, the GPUs and the hub, from config and disk.

``rmexplain plan --config FILE`` (and the Snakemake target ``plan``) prints, before any job runs:

- the LLM requests still to send, per stage, dataset, method and orienter. Where a job's inputs exist (the
  comparisons and the orienting RMs' scores; for the judge, the perturbations) its requests are built as
  the job builds them, so a request is not counted when the cache already answers it (an earlier run, or a
  run a spending limit stopped) or an earlier job in the plan asks it first (the cache, or that job's claim
  while it runs, answers the later one): a pair two seeds drew, the random baseline's prompts for another
  orienter, a variant's step 1, the judge's same prompt in another perturbation set. Two-step's step 2
  after a step-1 answer not cached yet counts one request per attribute, an upper bound (it skips
  attributes whose step-1 line does not parse). The attribute effects' edits of an LLM method named in
  ``analysis.effects.methods`` (stage ``effects``, no RM): every response × attribute × direction, and each
  edit's rewrite back where the edit is cached (else one stand-in each, an upper bound). Before a job's
  inputs exist, an upper bound from the sampling settings (marked ≤: a pair two seeds drew, the cache or an
  earlier job may answer some), naming what it waits for: the comparisons, or the orienting RMs' scores of
  them; the judge's requests are not counted for methods it does not analyse;
- estimated input and output tokens and the cost at ``llm.prices`` (prompts at characters / 4; answers as
  long as the response they rewrite, a line per attribute for step 1), with what is unknown and until when;
- the need against ``llm.max_requests`` / ``llm.max_cost_usd`` and the ledger's spending so far: whether
  the run fits, or after how many requests it will stop;
- warnings where a dataset's perturbation answers may stop at their ``max_tokens`` (a rewrite is about as
  long as the response it rewrites: responses of the sampled comparisons, in tokens ≈ characters / 4, that
  reach ``LENGTH_WARNING`` of the limit; unknown until sampled);
- the run's duration at ``llm.rate_limit`` (requests per minute; tokens per minute counting each request's
  prompt and its ``max_tokens``, as the provider meters it);
- the jobs that request GPUs and how many each (``resources: gpu``);
- the hub models and datasets to download, and which models are downloaded already;
- what is cached: the completions in ``llm.cache_dir`` and the LLM jobs whose outputs exist.

It never touches the network and never needs an API key.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from rmexplain import paths, resources, targets
from rmexplain.analysis.judge import judge_inputs, judge_prompts
from rmexplain.analysis.llm_judge import judge_requests
from rmexplain.data.sources import source_of
from rmexplain.design import Design
from rmexplain.discovery.base import RoundContext, engines
from rmexplain.downloads import hub_models
from rmexplain.effects.edits import round_one_tasks
from rmexplain.llm.budget import Budget, request_cost
from rmexplain.llm.cache import CompletionCache
from rmexplain.llm.client import ChatRequests, PlannedRequest
from rmexplain.llm.ratelimit import text_tokens
from rmexplain.perturb.base import MethodContext, tasks_from_orientation
from rmexplain.perturb.discover import DISCOVER_DEFAULTS, discovery_prompts
from rmexplain.perturb.llm_methods import answer_max_tokens
from rmexplain.perturb.skips import SkipRecorder
from rmexplain.perturb.stages import orientation
from rmexplain.schemas import (
    BIAS_DISCOVERY_EDITS,
    BIAS_DISCOVERY_EFFECTS,
    CARRIER_EDITS,
    COMPARISONS,
    ORIGINAL_SCORES,
    polars_schema,
    read_table,
)
from rmexplain.settings import Config, schema_defaults

JUDGE_ANSWER_TOKENS = 4  # a verdict word, perhaps a few more
DISCOVERY_ANSWER_TOKENS = 40  # a list of a few attributes
LENGTH_WARNING = 0.8  # warn when expected answers reach this share of their max_tokens
QUIET = logging.getLogger("rmexplain.plan")
UNSAMPLED = "until the comparisons are sampled"
UNSCORED = "until the orienting RMs have scored the originals"
UNJUDGED = "until the perturbations it judges exist"
ROUNDS_UNSCORED = "until the rounds before it are scored"
UNPLANNED = "(the method declares no plan_requests)"
UNKNOWN_TOKENS = {  # table cells
    UNSAMPLED: "unknown until sampled",
    UNSCORED: "unknown until scored",
    UNJUDGED: "unknown until perturbed",
    ROUNDS_UNSCORED: "unknown until the rounds before are scored",
}
NEXT_STEP = {  # what makes the unknown known, locally and without the LLM
    UNSAMPLED: "`snakemake --until sample_comparisons` samples them locally",
    UNSCORED: "`snakemake --until score_originals` scores the originals (the RMs run, on GPUs where they "
    "need them)",
}


@dataclass(frozen=True)
class LLMJob:
    """The LLM requests of one job: ``requests`` still to send (exact, or an upper bound where ``exact`` is
    False); ``planned``, those requests themselves where the job's inputs exist (else None: ``unknown``
    says until when their tokens are unknown); ``asked``, the distinct requests it asks in all."""

    stage: str
    dataset: str
    method: str
    orienter: str
    comparisons: int | None  # None: not sampled yet
    requests: int
    exact: bool
    done: bool
    planned: tuple[PlannedRequest, ...] | None = None
    asked: int | None = None
    llm_key: str = "llm"  # the config section of its LLM
    unknown: str = UNSAMPLED
    needs_scores: bool = True  # its requests depend on the orienting RMs' scores of the originals

    @property
    def pending(self) -> bool:
        return not self.done

    @property
    def tokens(self) -> tuple[int, int] | None:
        """Estimated input and output tokens of the requests to send (None: not known yet)."""
        if self.planned is None:
            return None
        return sum(p.prompt_tokens for p in self.planned), sum(p.answer_tokens for p in self.planned)

    @property
    def metered(self) -> int | None:
        """Tokens a tokens-per-minute limit counts for the requests to send: prompt plus ``max_tokens``."""
        if self.planned is None:
            return None
        return sum(p.prompt_tokens + p.max_tokens for p in self.planned)


@dataclass(frozen=True)
class Spending:
    """An LLM section's limits and what its ledger records as sent and spent so far."""

    key: str
    max_requests: int | None
    max_cost_usd: float | None
    sent: int
    spent_usd: float
    ledger: Path


@dataclass
class Plan:
    """Everything :func:`make_plan` found."""

    llm_jobs: list[LLMJob] = field(default_factory=list)
    gpu_jobs: list[tuple[str, str, int]] = field(default_factory=list)  # (rule, wildcards, GPUs)
    carrier_texts: list[tuple[str, int | None]] = field(default_factory=list)  # (dataset, texts or unknown)
    hub_models: list[tuple[str, str, bool]] = field(default_factory=list)  # (repo@revision, used by, present)
    hub_datasets: list[tuple[str, str]] = field(default_factory=list)  # (dataset, hub id)
    cached_completions: int = 0
    prices: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    rate_limit: dict[str, float | None] = field(default_factory=dict)
    spending: list[Spending] = field(default_factory=list)

    @property
    def pending(self) -> list[LLMJob]:
        return [job for job in self.llm_jobs if job.pending]

    @property
    def requests(self) -> int:
        return sum(job.requests for job in self.pending)

    def requests_line(self) -> str:
        """The pending requests: exact when every pending job's count is, else an upper bound."""
        if all(job.exact for job in self.pending):
            return f"{self.requests}"
        return f"at most {self.requests}"

    def unknown(self) -> list[str]:
        """What is not known yet, and until when (one entry per reason)."""
        reasons: dict[str, list[str]] = {}
        for job in self.pending:
            if job.planned is None:
                reasons.setdefault(job.unknown, []).append(job.stage)
        return [f"{', '.join(sorted(set(stages)))} {why}" for why, stages in reasons.items()]

    def next_steps(self) -> list[str]:
        """The local steps that make the unknown requests known: sampling, then scoring the originals."""
        waiting = [job for job in self.pending if job.planned is None and job.unknown in NEXT_STEP]
        steps = [UNSAMPLED] if any(job.unknown == UNSAMPLED for job in waiting) else []
        steps += [UNSCORED] if any(job.needs_scores for job in waiting) else []
        return [NEXT_STEP[step] for step in steps]

    def cost(self) -> float:
        """Estimated cost of the requests still to send whose tokens are known."""
        tokens = [job.tokens for job in self.pending if job.tokens is not None]
        return request_cost(sum(t[0] for t in tokens), sum(t[1] for t in tokens), self.prices)

    def cost_line(self) -> str:
        unknown = self.unknown()
        steps = ", then ".join(self.next_steps())
        why = f"{'; '.join(unknown)}{f': {steps}' if steps else ''}"
        if unknown and all(job.planned is None for job in self.pending):
            return f"unknown ({why})"
        estimate = f"{self.cost():.2f}"
        return estimate + (f" + the requests unknown yet ({why})" if unknown else "")

    def duration_line(self) -> str | None:
        """How long the pending requests take at ``llm.rate_limit`` (None without a limit): each request
        counts its prompt tokens plus its ``max_tokens``, as the provider meters it."""
        tpm, rpm = self.rate_limit.get("tokens_per_minute"), self.rate_limit.get("requests_per_minute")
        if not tpm and not rpm:
            return None
        parts = []
        if rpm:
            parts.append(f"{self.requests / rpm:.1f} min at {rpm:g} requests/min")
        if tpm:
            metered = [job.metered for job in self.pending]
            if any(m is None for m in metered):
                parts.append(f"unknown at {tpm:g} tokens/min ({'; '.join(self.unknown())})")
            else:
                total = sum(m or 0 for m in metered)
                parts.append(f"{total / tpm:.1f} min at {tpm:g} tokens/min (~{total} metered tokens)")
        return "Duration at llm.rate_limit: " + "; ".join(parts) + " (the longer one holds)."

    def budget_lines(self) -> list[str]:
        """Per LLM section with a spending limit: whether the pending requests fit, or where the run stops."""
        lines = []
        for spending in self.spending:
            jobs = [job for job in self.pending if job.llm_key == spending.key]
            if spending.max_requests is not None:
                lines.append(_requests_budget(spending, jobs))
            if spending.max_cost_usd is not None:
                lines.append(_cost_budget(spending, jobs, self.prices))
        return lines


def _requests_budget(spending: Spending, jobs: Sequence[LLMJob]) -> str:
    """``max_requests`` against the requests still to send."""
    cap, key = spending.max_requests or 0, f"{spending.key}.max_requests"
    need = sum(job.requests for job in jobs)
    left = max(0, cap - spending.sent)
    bound = "" if all(job.exact for job in jobs) else "at most "
    where = f"{key} {cap}: {spending.sent} requests sent so far (ledger {spending.ledger}), {left} left"
    if need <= left:
        return f"- {where}; the run needs {bound}{need}: it fits (a retry counts as a request too)."
    verb = "stops" if not bound else "may stop"
    return (
        f"- {where}; the run needs {bound}{need}: it {verb} after {left} more requests, with "
        f"{need - left} unsent. Raise {key} to at least {spending.sent + need} to finish."
    )


def _cost_budget(spending: Spending, jobs: Sequence[LLMJob], prices: dict[str, float]) -> str:
    """``max_cost_usd`` against the requests still to send, in the plan's order: the guard sends a request
    only while what is spent plus its worst case (a token per prompt character, ``max_tokens`` out) fits."""
    cap, key = spending.max_cost_usd or 0.0, f"{spending.key}.max_cost_usd"
    where = f"{key} {cap}: {spending.spent_usd:.2f} USD spent so far (ledger {spending.ledger})"
    planned = [p for job in jobs for p in (job.planned or ())]
    spent, sent, worst_max = spending.spent_usd, 0, 0.0
    for request in planned:
        worst = request_cost(request.worst_tokens_in, request.max_tokens, prices)
        worst_max = max(worst_max, worst)
        if spent + worst > cap:
            break
        spent += request_cost(request.prompt_tokens, request.answer_tokens, prices)
        sent += 1
    unknown = " (the requests unknown yet not counted)" if any(job.planned is None for job in jobs) else ""
    if sent == len(planned):
        return f"- {where}; the run's estimated {spent - spending.spent_usd:.2f} USD fits{unknown}."
    total = spending.spent_usd + sum(request_cost(p.prompt_tokens, p.answer_tokens, prices) for p in planned)
    return (
        f"- {where}; it stops after about {sent} of the {len(planned)} requests to send (the estimated "
        f"spending plus the next request's worst case passes the cap){unknown}. Raise {key} to at least "
        f"{math.ceil((total + worst_max) * 100) / 100:.2f} to finish."
    )


def _orientation(design: Design, dataset: str, orienter: str, root: Path) -> tuple[Any, Any] | None:
    """The comparisons a job of ``orienter`` will perturb and their orientation, when its inputs exist."""
    comparisons = root / paths.fmt(paths.COMPARISONS, dataset=dataset)
    scores = [root / p for p in targets.orientation_score_files(design, dataset, orienter)]
    if not comparisons.is_file() or not all(p.is_file() for p in scores):
        return None
    frame = read_table(comparisons, COMPARISONS, "comparisons")
    kept = orientation([str(p) for p in scores], frame["comparison_id"].to_list(), SkipRecorder(), QUIET)
    return frame.join(kept.select("comparison_id"), on="comparison_id", how="semi"), kept


def _sampled(design: Design, dataset: str) -> int:
    return design.dataset(dataset).n_per_seed * len(design.dataset(dataset).seeds)


def _awaiting(root: Path, dataset: str) -> str:
    """What a job of ``dataset`` whose inputs do not exist yet waits for: the comparisons, or the orienting
    RMs' scores of them."""
    sampled = (root / paths.fmt(paths.COMPARISONS, dataset=dataset)).is_file()
    return UNSCORED if sampled else UNSAMPLED


class _Counter:
    """Counts each job's requests against the cache and the jobs counted before it."""

    def __init__(self, chats: dict[str, ChatRequests]) -> None:
        self.chats = chats
        self.seen: set[str] = set()

    def job(self, *names: str, comparisons: int, planned: Sequence[PlannedRequest], done: bool,
            llm_key: str = "llm") -> LLMJob:  # fmt: skip
        """The job of ``names`` (stage, dataset, method, orienter) that asks ``planned``: those not cached
        and not asked by an earlier job are still to send (none when the job is done)."""
        distinct = list({p.key: p for p in planned}.values())
        new = [p for p in distinct if p.key not in self.seen]
        self.seen.update(p.key for p in distinct)
        chat = self.chats[llm_key]
        to_send = () if done else tuple(p for p in new if not (p.exact and chat.answered(p.key)))
        exact = all(p.exact for p in to_send)
        stage, dataset, method, orienter = names
        return LLMJob(stage, dataset, method, orienter, comparisons, len(to_send), exact, done, to_send,
                      asked=len(distinct), llm_key=llm_key)  # fmt: skip


def _response_tokens(root: Path, dataset: str) -> list[int] | None:
    """Estimated tokens of every sampled response of ``dataset`` (None: not sampled yet)."""
    comparisons = root / paths.fmt(paths.COMPARISONS, dataset=dataset)
    if not comparisons.is_file():
        return None
    frame = read_table(comparisons, COMPARISONS, "comparisons")
    return [text_tokens(t) for column in ("chosen", "rejected") for t in frame[column].to_list()]


def length_warnings(design: Design, root: Path) -> list[str]:
    """One line per (dataset, LLM method) whose answers may stop at ``max_tokens``, or whose length is
    unknown because the dataset is not sampled yet."""
    warnings = []
    for method in design.llm_methods:
        entry = design.method(method)
        limit = answer_max_tokens(entry.registered, dict(entry.settings), design.config.get("llm"))
        if limit is None:
            continue
        for dataset in design.datasets_of_method(method):
            lengths = _response_tokens(root, dataset)
            if lengths is None:
                warnings.append(
                    f"{dataset} / {method}: answer length unknown until the comparisons are sampled "
                    f"(max_tokens {limit})"
                )
                continue
            near = sum(n >= LENGTH_WARNING * limit for n in lengths)
            if near:
                warnings.append(
                    f"{dataset} / {method}: {near} of {len(lengths)} responses are ≥ {LENGTH_WARNING:.0%} of "
                    f"max_tokens {limit} (longest ~{max(lengths)} tokens); rewrites of them may stop at the "
                    "limit and be skipped: raise the method's answer max_tokens or llm.sampling.max_tokens"
                )
    return warnings


def _unplanned_job(
    design: Design, method: str, dataset: str, orienter: str, inputs: Any, done: bool, root: Path
) -> LLMJob:
    """A perturbation job whose requests cannot be built (not sampled or scored yet, or a method that
    declares no ``plan_requests``): an upper bound from its ``llm_requests`` (a pair two seeds drew, the
    cache or another job may answer some of them)."""
    entry = design.method(method)
    n = _sampled(design, dataset) if inputs is None else inputs[1].height
    requests = entry.entry.llm_requests(2 * n, len(design.config["attributes"]), dict(entry.settings))
    if design.shared_request_source(dataset, method):
        # a variant after its method: the requests they share come from the cache
        requests -= entry.entry.shared_requests_per_task * 2 * n
    unknown = _awaiting(root, dataset) if inputs is None else UNPLANNED
    requests = 0 if done else requests
    return LLMJob("perturb", dataset, method, orienter, n, requests, done, done, unknown=unknown)


def _perturb_jobs(design: Design, root: Path, counter: _Counter) -> list[LLMJob]:
    jobs = []
    attributes = dict(design.config["attributes"])
    for method in design.llm_methods:
        entry = design.method(method)
        plan_requests: Callable[..., list[PlannedRequest]] | None = entry.entry.plan_requests
        context = MethodContext(attributes, dict(entry.settings), QUIET, {"chat": counter.chats["llm"]})
        for dataset in design.datasets_of_method(method):
            for orienter in design.dataset(dataset).orienters:
                wildcards = {"dataset": dataset, "method": method, "orienter": orienter}
                done = (root / paths.fmt(paths.PERTURBATIONS, **wildcards)).is_file()
                inputs = _orientation(design, dataset, orienter, root)
                if inputs is None or plan_requests is None:
                    jobs.append(_unplanned_job(design, method, dataset, orienter, inputs, done, root))
                    continue
                comparisons, oriented = inputs
                planned = plan_requests(tasks_from_orientation(comparisons, oriented), context)
                jobs.append(counter.job("perturb", dataset, method, orienter, comparisons=oriented.height,
                                        planned=planned, done=done))  # fmt: skip
    return jobs


EFFECTS_ORIENTER = "(no RM)"  # the attribute effects' edits are made without any RM


def _effect_jobs(design: Design, root: Path, counter: _Counter) -> list[LLMJob]:
    """The attribute effects' edits of each (dataset, LLM method) that ``analysis.effects.methods`` names:
    every response × attribute × direction, and each edit edited back (``rewrite_of_rewrite``); before
    sampling, the upper bound the method declares (``effect_requests``)."""
    attributes = dict(design.config["attributes"])
    rewrite_of_rewrite = bool(design.effects["rewrite_of_rewrite"])
    jobs = []
    for dataset, method in design.effect_pairs:
        if method not in design.llm_methods:
            continue
        entry = design.method(method)
        done = (root / paths.fmt(paths.EFFECT_EDITS, dataset=dataset, method=method)).is_file()
        sampled = root / paths.fmt(paths.COMPARISONS, dataset=dataset)
        if not sampled.is_file():
            n = _sampled(design, dataset)
            rounds = 2 if rewrite_of_rewrite else 1
            upper = rounds * entry.entry.effect_requests(4 * n, len(attributes), dict(entry.settings))
            requests = 0 if done else upper
            jobs.append(LLMJob("effects", dataset, method, EFFECTS_ORIENTER, n, requests, done, done,
                               unknown=UNSAMPLED, needs_scores=False))  # fmt: skip
            continue
        comparisons = read_table(sampled, COMPARISONS, "comparisons")
        context = MethodContext(attributes, dict(entry.settings), QUIET, {"chat": counter.chats["llm"]})
        planned = entry.entry.effect_plan_requests(round_one_tasks(comparisons), context, rewrite_of_rewrite)
        jobs.append(counter.job("effects", dataset, method, EFFECTS_ORIENTER, comparisons=comparisons.height,
                                planned=planned, done=done))  # fmt: skip
    return jobs


def _judge_jobs(design: Design, root: Path, counter: _Counter) -> list[LLMJob]:
    """The attribute judge's requests per perturbation set, as the ``analyse_judge`` job builds them once
    the perturbations exist; before, an upper bound of one per (response, attribute), at most
    ``max_per_attribute`` per attribute. Methods without attributes (the random baseline) are not analysed,
    so not judged."""
    if not design.judge_enabled:
        return []
    attributes = dict(design.config["attributes"])
    cap = design.judge.get("max_per_attribute")
    key, _ = design.judge_llm
    chat = counter.chats[key]
    jobs = []
    for dataset, method in design.analysed_pairs:
        for orienter in design.dataset(dataset).orienters:
            wildcards = {"dataset": dataset, "method": method, "orienter": orienter}
            perturbations = root / paths.fmt(paths.PERTURBATIONS, **wildcards)
            done = (root / paths.fmt(paths.JUDGEMENTS, **wildcards)).is_file()
            inputs = _orientation(design, dataset, orienter, root)
            n = _sampled(design, dataset) if inputs is None else inputs[1].height
            if not perturbations.is_file():
                upper = 0 if done else min(cap or 2 * n, 2 * n) * len(attributes)
                unknown = UNJUDGED if inputs is not None else _awaiting(root, dataset)
                jobs.append(LLMJob("judge", dataset, method, orienter, n, upper, done, done, llm_key=key,
                                   unknown=unknown))  # fmt: skip
                continue
            comparisons = read_table(root / paths.fmt(paths.COMPARISONS, dataset=dataset), COMPARISONS,
                                     "comparisons")  # fmt: skip
            rows = judge_inputs(pl.read_parquet(perturbations), comparisons, attributes, cap)
            requests = judge_requests(chat, dict(design.judge), judge_prompts(rows, attributes))
            planned = [chat.planned(r, JUDGE_ANSWER_TOKENS) for r in requests]
            jobs.append(counter.job("judge", dataset, method, orienter, comparisons=n, planned=planned,
                                    done=done, llm_key=key))  # fmt: skip
    return jobs


def _discovery_jobs(design: Design, root: Path, counter: _Counter) -> list[LLMJob]:
    if not design.discovery_enabled:
        return []
    chat = counter.chats["llm"]
    settings = {**DISCOVER_DEFAULTS, **design.discovery}
    jobs = []
    for dataset in design.datasets:
        orienter = design.discovery_orienter(dataset)
        done = (root / paths.fmt(paths.DISCOVERY_ANSWERS, dataset=dataset, orienter=orienter)).is_file()
        inputs = _orientation(design, dataset, orienter, root)
        if inputs is None:
            n = _sampled(design, dataset)
            jobs.append(LLMJob("discover", dataset, "discover", orienter, n, 0 if done else n, done, done,
                               unknown=_awaiting(root, dataset)))  # fmt: skip
            continue
        _, requests = discovery_prompts(*inputs, chat, settings)
        planned = [chat.planned(r, DISCOVERY_ANSWER_TOKENS) for r in requests]
        jobs.append(counter.job("discover", dataset, "discover", orienter, comparisons=inputs[1].height,
                                planned=planned, done=done))  # fmt: skip
    return jobs


EVERY_RM = "(every RM)"


def _bias_discovery_jobs(design: Design, root: Path, counter: _Counter) -> list[LLMJob]:
    """Each round of each discovery engine that calls an LLM, per discovery dataset and part of the round
    (the llm engine's proposals or variations, rewrites and judge): where the round's inputs exist, its
    requests as the round builds them (``Engine.plan_round``: exact while the answers they follow are
    cached, else stand-ins, an upper bound); before, the engine's bound (``Engine.request_bound``)."""
    jobs = []
    for dataset in design.discovery_datasets():
        for engine, round_ in targets.discovery_rounds(design):
            if engine not in design.discovery_llm_engines:
                continue
            done = (
                root / targets.discovery_round_file(paths.BIASES_ROUND_EDITS, dataset, engine, round_)
            ).is_file()
            context = _round_context(design, root, dataset, engine, round_, counter)
            if context is None:
                jobs += _bound_jobs(design, dataset, engine, round_, done)
                continue
            for part in engines.get(engine)().plan_round(context):
                method = f"{engine} round {round_}: {part.what}"
                jobs.append(counter.job("discovery", dataset, method, EVERY_RM, planned=list(part.planned),
                                        comparisons=context.comparisons.height, done=done,
                                        llm_key=part.llm_key))  # fmt: skip
    return jobs


def _bound_jobs(design: Design, dataset: str, engine: str, round_: int, done: bool) -> list[LLMJob]:
    """A discovery round whose inputs do not exist yet: the engine's upper bound, by LLM section."""
    sampled = _sampled(design, dataset)
    rms = len(targets.effect_rms(design, dataset))
    bounds = engines.get(engine).request_bound(design.bias_discovery, 2 * sampled, rms, round_)
    unknown = UNSAMPLED if round_ == 1 else ROUNDS_UNSCORED
    return [
        LLMJob("discovery", dataset, f"{engine} round {round_}: {part.what}", EVERY_RM, sampled,
               0 if done else int(part.bound or 0), done, done, llm_key=part.llm_key, unknown=unknown)
        for part in bounds
    ]  # fmt: skip


def _round_context(
    design: Design, root: Path, dataset: str, engine: str, round_: int, counter: _Counter
) -> RoundContext | None:
    """What a discovery round reads, with the plan's request builders as its LLM clients (None until its
    inputs exist: the comparisons, the originals' scores and every earlier round's effects and edits)."""
    inputs = targets.discovery_round_inputs(design, dataset, engine, round_)
    files = [inputs["comparisons"], *inputs["originals"], *inputs["previous"], *inputs["previous_edits"]]
    if not all((root / f).is_file() for f in files):
        return None
    rms = targets.effect_rms(design, dataset)
    return RoundContext(
        dataset=dataset,
        round=round_,
        comparisons=read_table(root / str(inputs["comparisons"]), COMPARISONS, "comparisons"),
        originals={rm: read_table(root / f, ORIGINAL_SCORES, "original scores")
                   for rm, f in zip(rms, inputs["originals"], strict=True)},
        references=targets.effect_references(design, dataset),
        previous=_tables([root / f for f in inputs["previous"]], BIAS_DISCOVERY_EFFECTS),
        previous_edits=_tables([root / f for f in inputs["previous_edits"]], BIAS_DISCOVERY_EDITS),
        settings=design.discovery_round_settings(engine, round_),
        log=QUIET,
        services={"chats": counter.chats},
    )  # fmt: skip


def _tables(files: Sequence[Path], contract: Any) -> pl.DataFrame:
    frames = [read_table(f, contract, "discovery round") for f in files]
    return pl.concat(frames) if frames else pl.DataFrame(schema=polars_schema(contract))


def _gpu_jobs(design: Design) -> list[tuple[str, str, int]]:
    jobs: list[tuple[str, str, int]] = []
    for rm in design.reward_models:
        gpus = resources.rm_gpus(design, rm)
        if gpus:
            jobs += [(rule, f"dataset={name}, rm={rm}", gpus) for name, d in design.datasets.items()
                     if rm in d.rms for rule in ("score_originals", "score_perturbations")
                     if d.methods or rule == "score_originals"]  # fmt: skip
            jobs += [("score_effect_edits", f"dataset={name}, rm={rm}", gpus)
                     for name in design.effect_datasets() if rm in design.dataset(name).rms]  # fmt: skip
            jobs += [("score_discovery_edits", f"dataset={name}, engine={e}, round={r}, rm={rm}", gpus)
                     for name in design.discovery_datasets() if rm in design.dataset(name).rms
                     for e, r in targets.discovery_rounds(design)]  # fmt: skip
            jobs += [("score_carrier_edits", f"dataset={name}, rm={rm}", gpus)
                     for name, rms in targets.carrier_rms(design).items() if rm in rms]  # fmt: skip
            if design.tokens.enabled and rm in design.tokens.rms:
                jobs += [("tokens_scan", f"rm={rm}, prompt={p}", gpus) for p in design.tokens.prompts]
    for method in design.methods:
        gpus = resources.perturb_gpus(design, method)
        jobs += [("perturb", f"dataset={name}, method={method}, orienter={o}", gpus)
                 for name, d in design.datasets.items() if method in d.methods
                 for o in d.orienters if gpus]  # fmt: skip
    if resources.embedding_gpus(design):
        jobs += [("embed_texts", f"dataset={name}", 1) for name in targets.text_embedding_datasets(design)]
        effect_datasets = targets.effect_embedding_datasets(design)
        jobs += [("embed_effect_texts", f"dataset={name}", 1) for name in effect_datasets]
        jobs += [("embed_discovery_texts", f"dataset={name}, engine={e}, round={r}", 1)
                 for name in targets.discovery_embedding_datasets(design)
                 for e, r in targets.discovery_rounds(design)]  # fmt: skip
        carrier_datasets = [d for d in targets.carrier_rms(design) if targets.looks_texts_up_on(design, d)]
        jobs += [("embed_carrier_texts", f"dataset={name}", 1) for name in carrier_datasets]
    return jobs


def _carrier_texts(design: Design, root: Path) -> list[tuple[str, int | None]]:
    """Per dataset whose carriers are re-scored, the undone texts each RM scores (distinct (prompt, text)
    of its carrier edits), or None until bias discovery's effects are estimated and the edits are made."""
    out: list[tuple[str, int | None]] = []
    for name in targets.carrier_rms(design):
        path = root / paths.fmt(paths.CARRIER_EDITS, dataset=name)
        if not path.is_file():
            out.append((name, None))
            continue
        edits = read_table(path, CARRIER_EDITS, "carrier edits").filter(pl.col("skip").is_null())
        texts = pl.concat(edits.select("comparison_id", text=c) for c in ("source_undone", "edited_undone"))
        out.append((name, texts.unique().height))
    return out


def _hub(design: Design, root: Path) -> tuple[list[tuple[str, str, bool]], list[tuple[str, str]]]:
    models = [
        (f"{spec['repo_id']}@{spec['revision'] or 'default branch'}", ", ".join(spec["used_by"]),
         (root / paths.fmt(paths.HUB_MARKER, model=name)).is_file())
        for name, spec in hub_models(design).items()
    ]  # fmt: skip
    datasets = []
    for name, dataset in design.datasets.items():
        hub_id = source_of(dataset.spec).hub_dataset(dataset.spec)
        if hub_id is not None:
            datasets.append((name, hub_id))
    return models, datasets


def _chats(design: Design, root: Path) -> dict[str, ChatRequests]:
    """The request builder of each LLM section that will run, with its cache where it exists."""
    caches: dict[Path, CompletionCache] = {}
    chats = {}
    for key, llm in {"llm": design.llm, **design.llm_sections}.items():
        directory = root / llm.get("cache_dir", schema_defaults("llm", "cache_dir"))
        if directory.is_dir() and directory not in caches:
            caches[directory] = CompletionCache(directory)
        chats[key] = ChatRequests(dict(llm), caches.get(directory))
    return chats


def _spending(design: Design, root: Path) -> list[Spending]:
    """The limits and the ledger's spending of each LLM section that will run and has a limit."""
    spending = []
    for key, llm in design.llm_sections.items():
        directory = root / llm.get("cache_dir", schema_defaults("llm", "cache_dir"))
        budget = Budget.from_config(dict(llm), directory)
        if budget.active:
            sent, spent = budget.spent()
            spending.append(Spending(key, budget.max_requests, budget.max_cost_usd, sent, spent, budget.path))
    return spending


def make_plan(config: Config, root: str | Path = ".") -> Plan:
    """The plan of a checked ``config`` run in ``root`` (the workflow's working directory)."""
    root, design = Path(root), Design.from_config(config)
    models, datasets = _hub(design, root)
    chats = _chats(design, root)
    counter = _Counter(chats)
    try:
        jobs = _perturb_jobs(design, root, counter) + _discovery_jobs(design, root, counter)
        jobs += _bias_discovery_jobs(design, root, counter)
        jobs += _effect_jobs(design, root, counter) + _judge_jobs(design, root, counter)
        cached = len(chats["llm"].cache) if chats["llm"].cache is not None and design.llm_sections else 0
    finally:
        for chat in chats.values():
            if chat.cache is not None:
                chat.cache.close()
    return Plan(
        llm_jobs=jobs,
        gpu_jobs=_gpu_jobs(design),
        carrier_texts=_carrier_texts(design, root),
        hub_models=models,
        hub_datasets=datasets,
        cached_completions=cached,
        prices=dict(design.llm.get("prices") or {}),
        warnings=length_warnings(design, root),
        rate_limit=dict(design.llm.get("rate_limit") or {}),
        spending=_spending(design, root),
    )


def _job_row(job: LLMJob) -> str:
    count = f"{job.requests}" if job.exact else f"≤ {job.requests}"
    answered = "–" if job.asked is None else str(job.asked - job.requests)
    tokens = UNKNOWN_TOKENS.get(job.unknown, "unknown")
    if job.tokens is not None:
        tokens = f"~{job.tokens[0]} / ~{job.tokens[1]}"
    cells = [job.stage, job.dataset, job.method, job.orienter, job.comparisons, count, answered, tokens]
    return "| " + " | ".join(str(c) for c in [*cells, "done" if job.done else "to run"]) + " |"


def plan_markdown(plan: Plan) -> str:
    """The plan as Markdown (what ``rmexplain plan`` prints)."""
    lines = ["# Plan", "", "## LLM requests", ""]
    if plan.llm_jobs:
        lines += [
            "| stage | dataset | method | orienter | comparisons | requests to send | answered already "
            "| tokens in / out | status |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        lines += [_job_row(job) for job in plan.llm_jobs]
        lines += [
            "",
            "Requests to send: those the cache does not answer yet, each counted once (a job asking one an "
            "earlier job asks waits for its answer); ≤ marks an upper bound. Answered already: by the cache "
            "or an earlier job (all of a job that is done).",
            "",
            f"Requests still to make: {plan.requests_line()}. Estimated cost: {plan.cost_line()}, "
            f"at {plan.prices or 'no prices (llm.prices)'} per 1M tokens.",
        ]
        budget = plan.budget_lines()
        if budget:
            lines += ["", "### Spending limits", "", *budget]
    else:
        lines.append("None: no configured method or stage calls an LLM.")
    duration = plan.duration_line() if plan.llm_jobs else None
    if duration:
        lines += ["", duration]
    if plan.warnings:
        lines += ["", "### Answers near their max_tokens", ""] + [f"- WARNING {w}" for w in plan.warnings]
    lines += ["", f"Completions already cached: {plan.cached_completions}.", "", "## GPU jobs", ""]
    lines += [f"- `{rule}` ({wildcards}): gpu={gpus}" for rule, wildcards, gpus in plan.gpu_jobs] or ["None."]
    if plan.carrier_texts:
        lines += ["", "## Carriers re-scored", ""]
        lines += [
            f"- {name}: each RM scores {count} texts (the proposed carriers' edits with the class undone; "
            "fewer where a text is an original or was scored before)"
            if count is not None
            else f"- {name}: each RM scores the proposed carriers' edits with the class undone: how many is "
            "known once bias discovery's effects are estimated (`snakemake --until carrier_edits`)"
            for name, count in plan.carrier_texts
        ]
    lines += ["", "## Hub downloads", ""]
    for repo, used, present in plan.hub_models:
        lines.append(f"- model {repo} ({'downloaded' if present else 'to download'}; used by {used})")
    lines += [f"- dataset {hub_id} (datasets.{name})" for name, hub_id in plan.hub_datasets]
    if not plan.hub_models and not plan.hub_datasets:
        lines.append("None: everything is local or bundled.")
    return "\n".join(lines) + "\n"


def write_plan(config: Config, output: str | Path, root: str | Path = ".") -> str:
    """Write the plan as Markdown to ``output`` (the ``plan`` rule) and return it."""
    text = plan_markdown(make_plan(config, root))
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    Path(output).write_text(text, encoding="utf-8")
    return text
