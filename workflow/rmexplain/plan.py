"""A plan before spending: what a config will ask of the LLM, the GPUs and the hub, from config and disk.

``rmexplain plan --config FILE`` (and the Snakemake target ``plan``) prints, before any job runs:

- the LLM requests per stage, dataset, method and orienter: exact when the comparisons and the orienting
  RMs' original scores already exist (the comparisons the job will perturb are then known), otherwise an
  upper bound from the sampling settings; two-step's step 2 is at most one request per attribute (it skips
  attributes whose step-1 line did not parse); requests another job asks first are not counted again
  (the cache answers them: the random baseline's prompts depend only on the response, so with
  ``per_rm`` orientation the second and third RM reuse the first's; variants reuse their method's step 1;
  the attribute judge's identical prompts across perturbation sets), nor are the judge's requests
  for methods it does not analyse; completions cached by earlier runs are not subtracted;
- estimated input and output tokens and the cost at ``llm.prices`` (tokens estimated as characters / 4 of
  the rendered prompts where the comparisons exist, else not estimated);
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from rmexplain import paths, resources, targets
from rmexplain.analysis.judge import judge_inputs, judge_prompts
from rmexplain.data.sources import source_of
from rmexplain.design import Design
from rmexplain.downloads import hub_models
from rmexplain.llm.budget import request_cost
from rmexplain.llm.cache import CompletionCache
from rmexplain.perturb.llm_methods import answer_max_tokens, response_only_requests
from rmexplain.perturb.skips import SkipRecorder
from rmexplain.perturb.stages import orientation
from rmexplain.schemas import COMPARISONS, read_table
from rmexplain.settings import Config, schema_defaults

CHARS_PER_TOKEN = 4  # OpenAI's rule of thumb for English text
JUDGE_ANSWER_TOKENS = 4  # a verdict word, perhaps a few more
JUDGE_MAX_TOKENS = 8  # the judge's default answer limit
LENGTH_WARNING = 0.8  # warn when expected answers reach this share of their max_tokens


@dataclass(frozen=True)
class LLMJob:
    """The LLM requests of one job."""

    stage: str
    dataset: str
    method: str
    orienter: str
    comparisons: int | None  # None: not sampled yet
    requests: int
    exact: bool  # False: an upper bound
    tokens_in: int | None
    tokens_out: int | None
    done: bool
    max_tokens: int | None = None  # the answers' limit, which counts against a tokens-per-minute limit


@dataclass
class Plan:
    """Everything :func:`make_plan` found."""

    llm_jobs: list[LLMJob] = field(default_factory=list)
    gpu_jobs: list[tuple[str, str, int]] = field(default_factory=list)  # (rule, wildcards, GPUs)
    hub_models: list[tuple[str, str, bool]] = field(default_factory=list)  # (repo@revision, used by, present)
    hub_datasets: list[tuple[str, str]] = field(default_factory=list)  # (dataset, hub id)
    cached_completions: int = 0
    prices: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    rate_limit: dict[str, float | None] = field(default_factory=dict)
    default_max_tokens: int = 1024

    def duration_line(self) -> str | None:
        """How long the pending requests take at ``llm.rate_limit`` (None without a limit): each request
        counts its prompt tokens plus its ``max_tokens``, as the provider meters it."""
        tpm, rpm = self.rate_limit.get("tokens_per_minute"), self.rate_limit.get("requests_per_minute")
        if not tpm and not rpm:
            return None
        pending = [job for job in self.llm_jobs if not job.done]
        parts = []
        if rpm:
            parts.append(f"{self.requests / rpm:.1f} min at {rpm:g} requests/min")
        if tpm:
            if any(job.tokens_in is None for job in pending):
                parts.append(f"unknown at {tpm:g} tokens/min until the comparisons are sampled")
            else:
                metered = sum(
                    (job.tokens_in or 0) + job.requests * (job.max_tokens or self.default_max_tokens)
                    for job in pending
                )
                parts.append(f"{metered / tpm:.1f} min at {tpm:g} tokens/min (~{metered} metered tokens)")
        return "Duration at llm.rate_limit: " + "; ".join(parts) + " (the longer one holds)."

    @property
    def requests(self) -> int:
        return sum(job.requests for job in self.llm_jobs if not job.done)

    def requests_line(self) -> str:
        """The pending requests: exact when every pending job's count is, else an upper bound."""
        if all(job.exact for job in self.llm_jobs if not job.done):
            return f"{self.requests} (requests the cache will answer not counted)"
        return f"at most {self.requests} (requests the cache will answer not counted where known)"

    def cost(self) -> float | None:
        """Estimated cost of the jobs not done yet, or None when some token count is unknown."""
        pending = [job for job in self.llm_jobs if not job.done]
        if any(job.tokens_in is None or job.tokens_out is None for job in pending):
            return None
        tokens_in = sum(job.tokens_in or 0 for job in pending)
        tokens_out = sum(job.tokens_out or 0 for job in pending)
        return request_cost(tokens_in, tokens_out, self.prices)


def _tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def _oriented_comparisons(design: Design, dataset: str, orienter: str, root: Path) -> Any:
    """The comparisons a job of ``orienter`` will perturb, when its inputs exist; else None."""
    comparisons = root / paths.fmt(paths.COMPARISONS, dataset=dataset)
    scores = [root / p for p in targets.orientation_score_files(design, dataset, orienter)]
    if not comparisons.is_file() or not all(p.is_file() for p in scores):
        return None
    frame = read_table(comparisons, COMPARISONS, "comparisons")
    quiet = logging.getLogger("rmexplain.plan")
    kept = orientation([str(p) for p in scores], frame["comparison_id"].to_list(), SkipRecorder(), quiet)
    return frame.join(kept.select("comparison_id"), on="comparison_id", how="semi")


def _sampled(design: Design, dataset: str) -> int:
    return design.dataset(dataset).n_per_seed * len(design.dataset(dataset).seeds)


def _token_estimate(
    design: Design, method: str, comparisons: Any, n_attributes: int, settings: Config
) -> tuple[int, int]:
    """Input and output tokens of one job: each task's prompt carries the question and both responses; the
    answers are about as long as the response (step 2, random) or a line per attribute (step 1)."""
    tokens_in = tokens_out = 0
    for row in comparisons.iter_rows(named=True):
        question = _tokens(row["prompt"])
        for response in (row["chosen"], row["rejected"]):
            per_task = design.method(method).entry.llm_requests(1, n_attributes, settings)
            prompt = question + _tokens(row["chosen"]) + _tokens(row["rejected"]) + 150  # template text
            tokens_in += per_task * prompt
            tokens_out += per_task * _tokens(response)
    return tokens_in, tokens_out


def _response_tokens(root: Path, dataset: str) -> list[int] | None:
    """Estimated tokens of every sampled response of ``dataset`` (None: not sampled yet)."""
    comparisons = root / paths.fmt(paths.COMPARISONS, dataset=dataset)
    if not comparisons.is_file():
        return None
    frame = read_table(comparisons, COMPARISONS, "comparisons")
    return [_tokens(t) for column in ("chosen", "rejected") for t in frame[column].to_list()]


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


def _perturb_jobs(design: Design, root: Path) -> list[LLMJob]:
    jobs = []
    n_attributes = len(design.config["attributes"])
    for method in design.llm_methods:
        entry = design.method(method)
        settings = dict(entry.settings)
        for dataset in design.datasets_of_method(method):
            seen: set[str] = set()  # responses an earlier orienter's job asked about (response-only requests)
            for orienter in design.dataset(dataset).orienters:
                done = root / paths.fmt(
                    paths.PERTURBATIONS, dataset=dataset, method=method, orienter=orienter
                )
                oriented = _oriented_comparisons(design, dataset, orienter, root)
                n = _sampled(design, dataset) if oriented is None else oriented.height
                requests = entry.entry.llm_requests(2 * n, n_attributes, settings)
                if design.shared_request_source(dataset, method):
                    # a variant after its method: the requests they share come from the cache
                    requests -= entry.entry.shared_requests_per_task * 2 * n
                if oriented is not None and response_only_requests(entry.registered):
                    # the same response asked again (another orienter's job) is answered by the cache
                    responses = oriented["chosen"].to_list() + oriented["rejected"].to_list()
                    new = set(responses) - seen
                    seen |= new
                    requests = entry.entry.llm_requests(len(new), n_attributes, settings)
                    oriented = oriented.filter(pl.col("chosen").is_in(new) | pl.col("rejected").is_in(new))
                tokens = (
                    (None, None)
                    if oriented is None
                    else _token_estimate(design, method, oriented, n_attributes, settings)
                )
                exact = oriented is not None and entry.entry.exact_requests
                limit = answer_max_tokens(entry.registered, settings, design.config.get("llm"))
                jobs.append(
                    LLMJob(
                        "perturb",
                        dataset,
                        method,
                        orienter,
                        n,
                        requests,
                        exact,
                        *tokens,
                        done.is_file(),
                        limit,
                    )
                )
    return jobs


def _judge_prompts(design: Design, root: Path, perturbations: Path, dataset: str) -> list[str]:
    """The judge's prompts for one perturbation set (as the ``analyse_judge`` job builds them)."""
    attributes = dict(design.config["attributes"])
    comparisons = read_table(root / paths.fmt(paths.COMPARISONS, dataset=dataset), COMPARISONS, "comparisons")
    cap = design.judge.get("max_per_attribute")
    rows = judge_inputs(pl.read_parquet(perturbations), comparisons, attributes, cap)
    return judge_prompts(rows, attributes)


def _judge_jobs(design: Design, root: Path) -> list[LLMJob]:
    """The attribute judge's requests per perturbation set: one per distinct judge prompt (the same prompt
    in another set is answered by the cache), exact once the perturbations exist; else an upper bound of one
    per (response, attribute), at most ``max_per_attribute`` per attribute. Methods without attributes (the
    random baseline) are not analysed, so not judged."""
    if not design.judge_enabled:
        return []
    n_attributes = len(design.config["attributes"])
    cap = design.judge.get("max_per_attribute")
    seen: set[str] = set()
    jobs = []
    for dataset, method in design.analysed_pairs:
        for orienter in design.dataset(dataset).orienters:
            wildcards = {"dataset": dataset, "method": method, "orienter": orienter}
            perturbations = root / paths.fmt(paths.PERTURBATIONS, **wildcards)
            done = (root / paths.fmt(paths.JUDGEMENTS, **wildcards)).is_file()
            oriented = _oriented_comparisons(design, dataset, orienter, root)
            n = _sampled(design, dataset) if oriented is None else oriented.height
            if perturbations.is_file():
                new = set(_judge_prompts(design, root, perturbations, dataset)) - seen
                seen |= new
                requests, exact = len(new), True
                tokens = (sum(_tokens(p) for p in new), JUDGE_ANSWER_TOKENS * len(new))
            else:
                requests, exact = min(cap or 2 * n, 2 * n) * n_attributes, False
                tokens = (None, None)
            jobs.append(
                LLMJob(
                    "judge", dataset, method, orienter, n, requests, exact, *tokens, done, JUDGE_MAX_TOKENS
                )
            )
    return jobs


def _discovery_jobs(design: Design, root: Path) -> list[LLMJob]:
    if not design.discovery_enabled:
        return []
    jobs = []
    for dataset in design.datasets:
        orienter = design.discovery_orienter(dataset)
        oriented = _oriented_comparisons(design, dataset, orienter, root)
        n = _sampled(design, dataset) if oriented is None else oriented.height
        tokens = (None, None)
        if oriented is not None:
            texts = [r["prompt"] + r["chosen"] + r["rejected"] for r in oriented.iter_rows(named=True)]
            tokens = (sum(_tokens(t) + 200 for t in texts), 40 * len(texts))
        done = root / paths.fmt(paths.DISCOVERY_ANSWERS, dataset=dataset, orienter=orienter)
        jobs.append(LLMJob("discover", dataset, "discover", orienter, n, n, oriented is not None, *tokens,
                           done.is_file()))  # fmt: skip
    return jobs


def _gpu_jobs(design: Design) -> list[tuple[str, str, int]]:
    jobs: list[tuple[str, str, int]] = []
    for rm in design.reward_models:
        gpus = resources.rm_gpus(design, rm)
        if gpus:
            jobs += [(rule, f"dataset={name}, rm={rm}", gpus) for name, d in design.datasets.items()
                     if rm in d.rms for rule in ("score_originals", "score_perturbations")]  # fmt: skip
            if design.tokens.enabled and rm in design.tokens.rms:
                jobs += [("tokens_scan", f"rm={rm}, prompt={p}", gpus) for p in design.tokens.prompts]
    for method in design.methods:
        gpus = resources.perturb_gpus(design, method)
        jobs += [("perturb", f"dataset={name}, method={method}, orienter={o}", gpus)
                 for name, d in design.datasets.items() if method in d.methods
                 for o in d.orienters if gpus]  # fmt: skip
    if resources.embedding_gpus(design):
        jobs += [("embed_texts", f"dataset={name}", 1) for name in targets.text_embedding_datasets(design)]
    return jobs


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


def _cached_completions(config: Config, root: Path) -> int:
    directory = root / (config.get("llm") or {}).get("cache_dir", schema_defaults("llm", "cache_dir"))
    if not directory.is_dir():
        return 0

    cache = CompletionCache(directory)
    try:
        return len(cache)
    finally:
        cache.close()


def make_plan(config: Config, root: str | Path = ".") -> Plan:
    """The plan of a checked ``config`` run in ``root`` (the workflow's working directory)."""
    root, design = Path(root), Design.from_config(config)
    models, datasets = _hub(design, root)
    return Plan(
        llm_jobs=_perturb_jobs(design, root) + _discovery_jobs(design, root) + _judge_jobs(design, root),
        gpu_jobs=_gpu_jobs(design),
        hub_models=models,
        hub_datasets=datasets,
        cached_completions=_cached_completions(config, root) if design.llm_sections else 0,
        prices=dict((config.get("llm") or {}).get("prices") or {}),
        warnings=length_warnings(design, root),
        rate_limit=dict((config.get("llm") or {}).get("rate_limit") or {}),
        default_max_tokens=int(
            ((config.get("llm") or {}).get("sampling") or {}).get("max_tokens")
            or schema_defaults("llm", "sampling")["max_tokens"]
        ),
    )


def plan_markdown(plan: Plan) -> str:
    """The plan as Markdown (what ``rmexplain plan`` prints)."""
    lines = ["# Plan", "", "## LLM requests", ""]
    if plan.llm_jobs:
        lines += [
            "| stage | dataset | method | orienter | comparisons | requests | tokens in / out | status |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for job in plan.llm_jobs:
            count = f"{job.requests}" if job.exact else f"≤ {job.requests}"
            tokens = "unknown until sampled"
            if job.tokens_in is not None:
                tokens = f"~{job.tokens_in} / ~{job.tokens_out}"
            status = "done" if job.done else "to run"
            cells = [job.stage, job.dataset, job.method, job.orienter, job.comparisons, count, tokens, status]
            lines.append("| " + " | ".join(str(c) for c in cells) + " |")
        cost = plan.cost()
        estimate = f"{cost:.2f}" if cost is not None else (
            "unknown until the comparisons are sampled (`snakemake --until sample_comparisons` samples them "
            "locally; then plan again)"
        )  # fmt: skip
        lines += [
            "",
            f"Requests still to make: {plan.requests_line()}. "
            f"Estimated cost: {estimate}, "
            f"at {plan.prices or 'no prices (llm.prices)'} per 1M tokens.",
        ]
    else:
        lines.append("None: no configured method or stage calls an LLM.")
    duration = plan.duration_line() if plan.llm_jobs else None
    if duration:
        lines += ["", duration]
    if plan.warnings:
        lines += ["", "### Answers near their max_tokens", ""] + [f"- WARNING {w}" for w in plan.warnings]
    lines += ["", f"Completions already cached: {plan.cached_completions}.", "", "## GPU jobs", ""]
    lines += [f"- `{rule}` ({wildcards}): gpu={gpus}" for rule, wildcards, gpus in plan.gpu_jobs] or ["None."]
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
