"""LLM perturbation methods: the paper's two-step method (§2.3, App. B) and its random baseline (App. C).

``two_step``: step 1 asks, once per (comparison, target), for the words of response A relevant to
each attribute; step 2 asks, once per attribute, to change response A in the direction opposing the
RM (y+ worse, y− better) along that attribute, with both RM scores in the prompt and a focus
requirement on the step-1 words: ``center`` (the paper's), ``only`` or ``pass`` (App. D ablation).
A step-1 answer that does not parse for an attribute is recorded as a skip with its raw text and a
reason; that attribute then gets no perturbation (``on_unparsed: skip``) or one without a focus
requirement (``on_unparsed: pass``).

``random``: ``n`` (default 15) samples of the App. C prompt per response, told apart by ``variant``
(which offsets the seed and enters the cache key).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rmexplain.llm.base import ChatRequest, Completion, Sampling
from rmexplain.llm.client import PlannedRequest
from rmexplain.llm.prompts import PromptTemplate, load_template, register_template, template_path
from rmexplain.llm.ratelimit import text_tokens
from rmexplain.perturb.base import Draft, MethodContext, PerturbationError, PerturbTask, methods
from rmexplain.perturb.skips import SkipRecorder
from rmexplain.settings import schema_defaults

TWO_STEP_DEFAULTS: dict[str, Any] = schema_defaults("perturb", "two_step")
RANDOM_DEFAULTS: dict[str, Any] = schema_defaults("perturb", "random")
FOCUS_VARIANTS = ("center", "only", "pass")
STEP1_TOKENS_PER_ATTRIBUTE = 8  # a step-1 answer's "attribute: word, word" line, for the plan
COMPARISON_FIELDS = ("question", "score_1", "response_1", "score_2", "response_2", "current_better_worse")
register_template("two_step_step1", {*COMPARISON_FIELDS, "attribute_list"})
register_template(
    "two_step_step2",
    {
        *COMPARISON_FIELDS,
        "attribute",
        "attribute_description",
        "target_better_worse",
        "positively_negatively",
        "focus_requirement",
    },
)
register_template(
    "attribute_rewrite",
    {
        "question",
        "response",
        "attribute",
        "attribute_description",
        "target_better_worse",
        "positively_negatively",
    },
)
register_template("two_step_focus_center", {"words"})
register_template("two_step_focus_only", {"words"})
register_template("random", {"response"})


def normalise_name(name: str) -> str:
    """Attribute names compared without case, spaces, hyphens, underscores or markup."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def format_score(score: float) -> str:
    """A reward as written into prompts (4 significant digits)."""
    return f"{score:.4g}"


@dataclass
class Step1Result:
    """Words per attribute parsed from a step-1 answer, and why the other attributes failed."""

    words: dict[str, list[str]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)


STEP1_CUT_OFF = (
    "step-1 answer cut off at max_tokens={max_tokens} (finish_reason 'length'); "
    "raise perturb.two_step.step1_sampling.max_tokens or llm.sampling.max_tokens"
)
_LINE = re.compile(r"^\s*(?:[-*•]+|\d+[.)])?\s*\**\s*(?P<name>[^:*]+?)\s*\**\s*:\s*(?P<words>.*)$")


def parse_step1(answer: str, attributes: Sequence[str]) -> Step1Result:
    """Parse ``attribute: word1, word2`` lines (bullets, numbering and bold markers allowed)."""
    by_key = {normalise_name(a): a for a in attributes}
    found: dict[str, list[str]] = {}
    for line in answer.splitlines():
        match = _LINE.match(line)
        attribute = by_key.get(normalise_name(match.group("name"))) if match else None
        if match is None or attribute is None:
            continue
        words = [w.strip().strip("\"'`*.").strip() for w in match.group("words").split(",")]
        found.setdefault(attribute, []).extend(w for w in words if w)
    result = Step1Result()
    for attribute in attributes:
        if found.get(attribute):
            result.words[attribute] = found[attribute]
        elif attribute in found:
            result.failures[attribute] = "attribute listed with no words in the step-1 answer"
        elif not found:
            result.failures[attribute] = (
                "no 'attribute: words' line for any configured attribute in the step-1 answer"
            )
        else:
            result.failures[attribute] = "attribute missing from the step-1 answer"
    return result


_LABEL = re.compile(r"^\s*\**\s*(?:modified|perturbed)\s+(?:response(?:\s+a)?|text)\s*:\s*\**\s*", re.I)


def clean_answer(text: str) -> str:
    """Strip whitespace, a leading 'Modified response A:' label and quotes wrapping the whole text."""
    text = _LABEL.sub("", text.strip()).strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


def _chat(context: MethodContext) -> Any:
    """The LLM client (a ``CachedChat``; for the plan, a ``ChatRequests`` that sends nothing)."""
    chat = context.services.get("chat")
    if chat is None:
        raise PerturbationError(
            "LLM methods need an LLM client (services['chat']); set the `llm` config section"
        )
    return chat


def _skips(context: MethodContext) -> SkipRecorder:
    return context.services.setdefault("skips", SkipRecorder())


def _settings(context: MethodContext, defaults: dict[str, Any], method: str) -> dict[str, Any]:
    unknown = set(context.settings) - set(defaults)
    if unknown:
        raise PerturbationError(
            f"perturb.{method}: unknown key(s) {sorted(unknown)}; allowed {sorted(defaults)}"
        )
    return {**defaults, **context.settings}


# Where each method's answer length is set (the perturbation texts), for skip reasons and the plan.
ANSWER_SAMPLING_KEY = {"two_step": "step2_sampling", "random": "sampling"}
CUT_OFF = "LLM answer cut off at max_tokens={max_tokens} (finish_reason 'length'); raise {setting}"


def answer_max_tokens(method: str, settings: dict[str, Any], llm: dict[str, Any] | None) -> int | None:
    """``max_tokens`` of the answers that become perturbations of registered ``method`` (None: no LLM)."""
    key = ANSWER_SAMPLING_KEY.get(method)
    if key is None:
        return None
    llm_sampling = (llm or {}).get("sampling")
    return Sampling.from_config(llm_sampling, settings.get(key)).max_tokens


def cut_off_reason(method: str, sampling: Sampling) -> str:
    """The skip reason of an answer that stopped at ``max_tokens``, naming the settings to raise."""
    key = ANSWER_SAMPLING_KEY[method]
    setting = f"perturb.<method or variant>.{key}.max_tokens or llm.sampling.max_tokens"
    return CUT_OFF.format(max_tokens=sampling.max_tokens, setting=setting)


def cut_off(completion: Completion) -> bool:
    """Whether the answer stopped at its token limit (never a usable perturbation)."""
    return completion.finish_reason == "length"


@dataclass(frozen=True)
class TwoStepPrompts:
    step1: PromptTemplate
    step2: PromptTemplate
    focus: PromptTemplate | None

    @classmethod
    def load(cls, focus: str, paths: dict[str, str | None]) -> TwoStepPrompts:
        if focus not in FOCUS_VARIANTS:
            raise PerturbationError(f"perturb.two_step.focus: {focus!r} is not one of {FOCUS_VARIANTS}")
        unknown = set(paths) - {"step1", "step2", "focus_center", "focus_only", "rewrite"}
        if unknown:
            raise PerturbationError(f"perturb.two_step.prompts: unknown key(s) {sorted(unknown)}")
        focus_template = None
        if focus != "pass":
            focus_template = load_template(f"two_step_focus_{focus}", paths.get(f"focus_{focus}"))
        return cls(
            step1=load_template("two_step_step1", paths.get("step1")),
            step2=load_template("two_step_step2", paths.get("step2")),
            focus=focus_template,
        )

    def version(self, focus: PromptTemplate | None) -> str:
        """Template version of a step-2 prompt with this focus requirement (None: the `pass` prompt)."""
        if focus is None:
            return f"{self.step2.version} focus=pass"
        return f"{self.step2.version}+{focus.version} focus={focus.name.removeprefix('two_step_focus_')}"


def _comparison_fields(task: PerturbTask) -> dict[str, str]:
    """Fields shared by both steps; 'current' is how the RM rates A against B now."""
    return {
        "question": task.prompt,
        "score_1": format_score(task.score),
        "response_1": task.response,
        "score_2": format_score(task.other_score),
        "response_2": task.other,
        "current_better_worse": "better" if task.direction == "worse" else "worse",
    }


def step1_prompt(task: PerturbTask, attributes: Sequence[str], template: PromptTemplate) -> str:
    """App. B step 1 for one (comparison, target)."""
    return template.render(**_comparison_fields(task), attribute_list=", ".join(attributes))


def step2_prompt(
    task: PerturbTask,
    attribute: str,
    description: str,
    words: Sequence[str],
    prompts: TwoStepPrompts,
    focus: PromptTemplate | None,
) -> str:
    """App. B step 2 for one attribute; ``focus`` None drops the focus requirement (the `pass` prompt)."""
    focus_line = focus.render(words=", ".join(words)) + "\n" if focus is not None else ""
    return prompts.step2.render(
        **_comparison_fields(task),
        attribute=attribute,
        attribute_description=description,
        target_better_worse=task.direction,
        positively_negatively="Positively" if task.direction == "better" else "Negatively",
        focus_requirement=focus_line,
    )


@dataclass(frozen=True)
class Slot:
    """One perturbation to ask for: task, attribute, step-1 words, generator label."""

    task: PerturbTask
    attribute: str
    words: list[str]
    generator: str


class TwoStep:
    """One two_step run: settings, templates and services, and the two steps."""

    def __init__(self, context: MethodContext) -> None:
        self.chat, self.skips, self.log = _chat(context), _skips(context), context.log
        self.settings = _settings(context, TWO_STEP_DEFAULTS, "two_step")
        if self.settings["on_unparsed"] not in ("skip", "pass"):
            raise PerturbationError(
                f"perturb.two_step.on_unparsed: {self.settings['on_unparsed']!r} is not skip or pass"
            )
        self.prompts = TwoStepPrompts.load(self.settings["focus"], dict(self.settings["prompts"] or {}))
        self.attributes = dict(context.attributes)

    def step1_requests(self, tasks: Sequence[PerturbTask]) -> list[ChatRequest]:
        """One step-1 request per task."""
        sampling, template = self.chat.sampling(self.settings["step1_sampling"]), self.prompts.step1
        names = list(self.attributes)
        return [
            self.chat.request(step1_prompt(t, names, template), sampling, template.version) for t in tasks
        ]

    def parse_answers(self, completions: Sequence[Completion]) -> tuple[list[str], list[Step1Result]]:
        """Raw step-1 answers and the words parsed from them (none from an answer cut off at max_tokens)."""
        names = list(self.attributes)
        limit = self.chat.sampling(self.settings["step1_sampling"]).max_tokens
        answers = [c.text or "" for c in completions]
        parsed = [
            Step1Result(failures=dict.fromkeys(names, STEP1_CUT_OFF.format(max_tokens=limit)))
            if cut_off(c)
            else parse_step1(a, names)
            for c, a in zip(completions, answers, strict=True)
        ]
        return answers, parsed

    def step1(self, tasks: Sequence[PerturbTask]) -> tuple[list[str], list[Step1Result]]:
        """Raw answers and parsed words per task."""
        completions = self.chat.completions(self.step1_requests(tasks), desc="two_step step 1")
        answers, parsed = self.parse_answers(completions)
        self.log.info(
            "two_step step 1: %d answers; %d of %d (task, attribute) pairs without usable words",
            len(answers), sum(len(p.failures) for p in parsed), len(tasks) * len(self.attributes),
        )  # fmt: skip
        return answers, parsed

    def step2_requests(
        self, tasks: Sequence[PerturbTask], answers: Sequence[str], parsed: Sequence[Step1Result]
    ) -> tuple[list[Slot], list[ChatRequest]]:
        """One request per (task, attribute); attributes that failed step 1 are recorded as skips and
        dropped (``on_unparsed: skip``) or asked without the focus requirement (``pass``)."""
        sampling = self.chat.sampling(self.settings["step2_sampling"])
        slots: list[Slot] = []
        requests: list[ChatRequest] = []
        for task, result, answer in zip(tasks, parsed, answers, strict=True):
            for attribute, description in self.attributes.items():
                focus = self.prompts.focus
                if attribute in result.failures:
                    self.skips.add(
                        task.comparison_id, "step1", result.failures[attribute],
                        target=task.target, attribute=attribute, raw=answer,
                    )  # fmt: skip
                    if self.settings["on_unparsed"] == "skip":
                        continue
                    focus = None
                words = result.words.get(attribute, [])
                version = self.prompts.version(focus)
                prompt = step2_prompt(task, attribute, description, words, self.prompts, focus)
                slots.append(Slot(task, attribute, words, f"{self.chat.model_id} {version}"))
                requests.append(self.chat.request(prompt, sampling, version))
        return slots, requests


def plan_two_step(tasks: Sequence[PerturbTask], context: MethodContext) -> list[PlannedRequest]:
    """The requests of a two_step job, for the plan: step 1 per task and, where its answer is cached, the
    step-2 requests the job will make of it; where it is not, a stand-in per attribute (step 2 asks only for
    attributes whose step-1 line parses, unless ``on_unparsed: pass``: an upper bound)."""
    run = TwoStep(context)
    chat, focus = run.chat, run.prompts.focus
    step1 = run.step1_requests(tasks)
    planned = [chat.planned(r, STEP1_TOKENS_PER_ATTRIBUTE * len(run.attributes)) for r in step1]
    cached = [chat.cached(r) for r in step1]
    known = [i for i, answer in enumerate(cached) if answer is not None]
    answers, parsed = run.parse_answers([answer for answer in cached if answer is not None])
    slots, step2 = run.step2_requests([tasks[i] for i in known], answers, parsed)
    for slot, request in zip(slots, step2, strict=True):
        planned.append(chat.planned(request, text_tokens(slot.task.response)))
    sampling, version = chat.sampling(run.settings["step2_sampling"]), run.prompts.version(focus)
    unknown = [
        (task, request) for task, request, answer in zip(tasks, step1, cached, strict=True) if not answer
    ]
    for task, request in unknown:
        for attribute, description in run.attributes.items():
            prompt = step2_prompt(task, attribute, description, [], run.prompts, focus)  # sized without words
            like = chat.planned(chat.request(prompt, sampling, version), text_tokens(task.response))
            planned.append(chat.stand_in(request, [attribute, version, sampling.as_dict()], like))
    return planned


def two_step_requests(n_tasks: int, n_attributes: int, settings: dict[str, Any]) -> int:
    """One step-1 request per task and at most one step-2 request per (task, attribute): step 2 asks only
    for attributes whose step-1 line parsed (unless ``on_unparsed: pass``)."""
    return n_tasks * (1 + n_attributes)


def random_requests(n_tasks: int, n_attributes: int, settings: dict[str, Any]) -> int:
    """``n`` requests per task."""
    return n_tasks * int({**RANDOM_DEFAULTS, **(settings or {})}["n"])


def two_step_prompt_inputs(settings: dict[str, Any]) -> dict[str, str]:
    """Step 1, step 2 and the focus template of ``focus`` (none for ``pass``), by rule-input name."""
    overrides = settings.get("prompts") or {}
    names = {"step1": "two_step_step1", "step2": "two_step_step2"}
    focus = {**TWO_STEP_DEFAULTS, **settings}["focus"]
    if focus != "pass":
        names[f"focus_{focus}"] = f"two_step_focus_{focus}"
    return {f"prompt_{key}": str(template_path(name, overrides.get(key))) for key, name in names.items()}


def random_prompt_inputs(settings: dict[str, Any]) -> dict[str, str]:
    """The random baseline's template."""
    return {"prompt_random": str(template_path("random", settings.get("prompt")))}


def rewrite_prompt(task: PerturbTask, attribute: str, description: str, template: PromptTemplate) -> str:
    """The attribute effects' edit of one response along one attribute in the task's direction: no RM
    scores, no other response (a prompt beside the paper's, which always moves against the RM)."""
    return template.render(
        question=task.prompt,
        response=task.response,
        attribute=attribute,
        attribute_description=description,
        target_better_worse=task.direction,
        positively_negatively="Positively" if task.direction == "better" else "Negatively",
    )


@dataclass(frozen=True)
class Rewrites:
    """The attribute-rewrite requests of some tasks, one per (task, attribute), with their slots."""

    slots: list[Slot]
    requests: list[ChatRequest]
    cut_off_why: str


def rewrite_requests_of(tasks: Sequence[PerturbTask], context: MethodContext) -> Rewrites:
    """One ``attribute_rewrite`` request per (task, attribute of ``context``), in the task's direction
    (``perturb.two_step.prompts.rewrite``, ``rewrite_sampling``)."""
    chat = _chat(context)
    settings = _settings(context, TWO_STEP_DEFAULTS, "two_step")
    template = load_template("attribute_rewrite", (settings["prompts"] or {}).get("rewrite"))
    sampling = chat.sampling(settings["rewrite_sampling"])
    slots = [
        Slot(task, attribute, [], f"{chat.model_id} {template.version}")
        for task in tasks
        for attribute in context.attributes
    ]
    requests = [
        chat.request(rewrite_prompt(s.task, s.attribute, context.attributes[s.attribute], template), sampling,
                     template.version)
        for s in slots
    ]  # fmt: skip
    setting = "perturb.two_step.rewrite_sampling.max_tokens or llm.sampling.max_tokens"
    return Rewrites(slots, requests, CUT_OFF.format(max_tokens=sampling.max_tokens, setting=setting))


def attribute_rewrites(tasks: Sequence[PerturbTask], context: MethodContext) -> list[Draft]:
    """two_step's editor for the attribute effects: one rewrite per (task, attribute)."""
    rewrites = rewrite_requests_of(tasks, context)
    completions = _chat(context).completions(rewrites.requests, desc="attribute rewrites")
    return _drafts(rewrites.slots, completions, _skips(context), rewrites.cut_off_why)


def plan_attribute_rewrites(
    tasks: Sequence[PerturbTask], context: MethodContext, rewrite_of_rewrite: bool
) -> list[PlannedRequest]:
    """The requests of an effect-edits job, for the plan: every round-1 rewrite and, with
    ``rewrite_of_rewrite``, the rewrite back of each one whose answer is cached (exactly), else a stand-in
    (an upper bound: a cut-off or empty answer gets no rewrite back)."""
    chat = _chat(context)
    first = rewrite_requests_of(tasks, context)
    pairs = list(zip(first.slots, first.requests, strict=True))
    planned = [chat.planned(request, text_tokens(slot.task.response)) for slot, request in pairs]
    if not rewrite_of_rewrite:
        return planned
    for slot, request in pairs:
        back_direction = "better" if slot.task.direction == "worse" else "worse"
        back = dataclasses.replace(slot.task, direction=back_direction)
        answer = chat.cached(request)
        if answer is None:
            like = chat.planned(request, text_tokens(slot.task.response))
            planned.append(chat.stand_in(request, ["rewrite back", slot.attribute], like))
            continue
        text = clean_answer(answer.text or "")
        if cut_off(answer) or not text:
            continue
        attribute = {slot.attribute: context.attributes[slot.attribute]}
        one = MethodContext(attribute, context.settings, context.log, context.services)
        again = rewrite_requests_of([dataclasses.replace(back, response=text)], one)
        planned.append(chat.planned(again.requests[0], text_tokens(text)))
    return planned


def rewrite_requests(n_tasks: int, n_attributes: int, settings: dict[str, Any]) -> int:
    """One request per (task, attribute)."""
    return n_tasks * n_attributes


def rewrite_prompt_inputs(settings: dict[str, Any]) -> dict[str, str]:
    """The attribute-rewrite template of the effect edits."""
    override = (settings.get("prompts") or {}).get("rewrite")
    return {"prompt_rewrite": str(template_path("attribute_rewrite", override))}


@methods.register(
    "two_step",
    uses_llm=True,
    effect_editor=attribute_rewrites,
    effect_requests=rewrite_requests,
    effect_plan_requests=plan_attribute_rewrites,
    effect_prompt_inputs=rewrite_prompt_inputs,
    llm_requests=two_step_requests,
    shared_requests_per_task=1,
    prompt_inputs=two_step_prompt_inputs,
    plan_requests=plan_two_step,
)
def two_step(tasks: Sequence[PerturbTask], context: MethodContext) -> list[Draft]:
    """The paper's method: one perturbation per (comparison, target, attribute)."""
    run = TwoStep(context)
    answers, parsed = run.step1(tasks)
    slots, requests = run.step2_requests(tasks, answers, parsed)
    completions = run.chat.completions(requests, desc="two_step step 2")
    reason = cut_off_reason("two_step", run.chat.sampling(run.settings["step2_sampling"]))
    return _drafts(slots, completions, run.skips, reason)


def _drafts(
    slots: Sequence[Slot], completions: Sequence[Completion], skips: SkipRecorder, cut_off_why: str
) -> list[Draft]:
    drafts: list[Draft] = []
    for slot, completion in zip(slots, completions, strict=True):
        raw = completion.text or ""
        text = clean_answer(raw)
        task = slot.task
        why = cut_off_why if cut_off(completion) else None if text else "empty LLM answer"
        if why is not None:
            skips.add(task.comparison_id, "step2", why, target=task.target, attribute=slot.attribute, raw=raw)
            continue
        drafts.append(
            Draft(
                task.comparison_id,
                task.target,
                task.direction,
                slot.attribute,
                0,
                text,
                slot.words,
                slot.generator,
            )
        )
    return drafts


def _random_requests(
    tasks: Sequence[PerturbTask], context: MethodContext
) -> tuple[list[ChatRequest], int, PromptTemplate, Sampling]:
    """``n`` requests per task (task-major), ``n``, the template and the sampling."""
    chat = _chat(context)
    settings = _settings(context, RANDOM_DEFAULTS, "random")
    n = int(settings["n"])
    if n < 1:
        raise PerturbationError(f"perturb.random.n must be at least 1, got {n}")
    template = load_template("random", settings["prompt"])
    sampling = chat.sampling(settings["sampling"])
    requests = [
        chat.request(template.render(response=t.response), sampling, template.version, variant=v)
        for t in tasks
        for v in range(n)
    ]
    return requests, n, template, sampling


def plan_random(tasks: Sequence[PerturbTask], context: MethodContext) -> list[PlannedRequest]:
    """The requests of a random job, for the plan (each as long as its response)."""
    requests, n, _, _ = _random_requests(tasks, context)
    chat = _chat(context)
    return [chat.planned(r, text_tokens(tasks[i // n].response)) for i, r in enumerate(requests)]


@methods.register(
    "random",
    uses_llm=True,
    attribute_conditioned=False,
    llm_requests=random_requests,
    prompt_inputs=random_prompt_inputs,
    plan_requests=plan_random,
)
def random_perturbations(tasks: Sequence[PerturbTask], context: MethodContext) -> list[Draft]:
    """The RP baseline: ``n`` random perturbations of each response, without attributes."""
    chat, skips = _chat(context), _skips(context)
    requests, n, template, sampling = _random_requests(tasks, context)
    completions = chat.completions(requests, desc="random")
    cut_off_why = cut_off_reason("random", sampling)
    drafts: list[Draft] = []
    generator = f"{chat.model_id} {template.version}"
    for index, completion in enumerate(completions):
        task, variant = tasks[index // n], index % n
        raw = completion.text or ""
        text = clean_answer(raw)
        why = cut_off_why if cut_off(completion) else None if text else "empty LLM answer"
        if why is not None:
            skips.add(task.comparison_id, "generate", why, target=task.target, variant=variant, raw=raw)
            continue
        drafts.append(
            Draft(task.comparison_id, task.target, task.direction, None, variant, text, [], generator)
        )
    return drafts
