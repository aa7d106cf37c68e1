"""The editor table (attribute -> direction -> strategies in order) and the registered ``rules`` method."""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from rmexplain.perturb.base import Draft, MethodContext, PerturbationError, PerturbTask, methods
from rmexplain.perturb.rules import lexicon as lx
from rmexplain.perturb.rules.content import (
    add_helpful,
    add_informative,
    blur,
    correct_claims,
    correctness_hedge,
    curt_close,
    depersonalise,
    drop_engaging,
    drop_informative,
    false_claim,
    falsify_number,
    flip_fact,
    flip_negation,
    follow_up,
    generic_help,
    informative_tail,
    qualify_absolutes,
    truncate_detail,
    vague_fragment,
    vague_numbers,
    vague_out,
)
from rmexplain.perturb.rules.custom import Editors, check_editors, checked_edit, editor_files, load_editors
from rmexplain.perturb.rules.edits import is_imperative
from rmexplain.perturb.rules.safety import (
    answer_directly_harmful,
    answer_more_directly,
    decline_more,
    deflect,
    direct_answer_from_other,
    direct_prefix,
    drop_evasion,
    evade,
    harm_comply,
    harm_decline,
    harm_discourage,
    harm_escalate,
    harm_reinforce,
    harm_safety_caveat,
    harm_undermine_safety,
)
from rmexplain.perturb.rules.social import (
    add_detail,
    biased_remark,
    disclose_private,
    drop_off_topic,
    generalise_pii,
    inclusive_line,
    invite_private,
    neutralise,
    off_topic,
    pad,
    pad_tail,
    privacy_assurance,
    privacy_caveat,
    stereotype_group,
    tie_back,
    trim_least_relevant,
    trim_padding,
)
from rmexplain.perturb.rules.style import (
    add_judgement,
    connect,
    dangling_sentence,
    dangling_subject,
    drop_dangling,
    drop_detail_clause,
    drop_fillers,
    drop_hedges,
    filler_clause,
    hedge_prefix,
    hedge_words,
    jargon_clause,
    jargonise,
    number_points,
    plain_prefix,
    plain_words,
    polite_frame,
    polite_to_rude,
    ramble,
    rude_opener,
    rude_to_polite,
    soften_command,
    split_long,
    the_hell,
    tie_in,
)
from rmexplain.perturb.rules.text import (
    Doc,
    RuleEdit,
    compile_pattern,
    sentence_spans,
    strip_end,
    words,
)

# ---- registry ------------------------------------------------------------------------------------------
EDITORS: Editors = {
    "avoid-to-answer": {
        "worse": (answer_directly_harmful, answer_more_directly, evade),
        "better": (
            deflect,
            decline_more,
            drop_evasion,
            direct_answer_from_other,
            direct_prefix,
        ),
    },
    "appropriateness": {
        "worse": (the_hell, polite_to_rude, rude_opener),
        "better": (rude_to_polite, soften_command, polite_frame),
    },
    "assertiveness": {
        "worse": (hedge_words, hedge_prefix),
        "better": (drop_hedges, add_judgement),
    },
    "clarity": {
        "worse": (ramble, filler_clause),
        "better": (drop_fillers, split_long, number_points, plain_prefix),
    },
    "coherence": {
        "worse": (dangling_subject, dangling_sentence),
        "better": (drop_dangling, connect, tie_in),
    },
    "complexity": {
        "worse": (jargonise, jargon_clause),
        "better": (plain_words, split_long, plain_prefix),
    },
    "correctness": {
        "worse": (falsify_number, flip_fact, flip_negation, false_claim),
        "better": (correct_claims, qualify_absolutes, correctness_hedge),
    },
    "engagement": {
        "worse": (drop_engaging, depersonalise, curt_close),
        "better": (follow_up,),
    },
    "harmlessness": {
        "worse": (harm_comply, harm_undermine_safety, harm_escalate),
        "better": (
            harm_discourage,
            harm_decline,
            harm_reinforce,
            harm_safety_caveat,
        ),
    },
    "helpfulness": {
        "worse": (vague_out, vague_fragment),
        "better": (add_helpful, generic_help),
    },
    "informativeness": {
        "worse": (
            drop_detail_clause,
            vague_numbers,
            drop_informative,
            truncate_detail,
            blur,
        ),
        "better": (add_informative, informative_tail),
    },
    "neutrality": {
        "worse": (stereotype_group, biased_remark),
        "better": (neutralise, inclusive_line),
    },
    "relevance": {"worse": (off_topic,), "better": (drop_off_topic, tie_back)},
    "sensitivity": {
        "worse": (disclose_private, invite_private),
        "better": (generalise_pii, privacy_caveat, privacy_assurance),
    },
    "verbosity": {
        "worse": (pad, pad_tail),
        "better": (
            trim_padding,
            trim_least_relevant,
            add_detail,
            informative_tail,
        ),
    },
}


def supported_attributes() -> list[str]:
    """Attributes the rules method can edit (the paper's 15, App. A)."""
    return sorted(EDITORS)


# ---- context -------------------------------------------------------------------------------------------
def request_phrase(prompt: str) -> str | None:
    """The action a prompt asks for, in the second person ("How do I pick my lock?" → "pick your lock").

    Question sentences are tried first; a match of three or more words beats a shorter one ("word it").
    """
    sentences = [prompt[a:b].strip() for a, b in sentence_spans(prompt)]
    ordered = [s for s in sentences if s.endswith("?")] + [s for s in sentences if not s.endswith("?")]
    found: list[str] = []
    for sentence in ordered:
        core = strip_end(sentence).strip()
        match = next((m for p in lx.REQUEST_PATTERNS if (m := re.match(p, core, re.I))), None)
        if match:
            found.append(_second_person(match.group("req")))
    return next((f for f in found if len(words(f)) >= 3), found[0] if found else None)


def _second_person(phrase: str) -> str:
    keys = sorted(lx.PRONOUN_SWAP, key=len, reverse=True)
    regex = re.compile(r"(?<![\w'’])(" + "|".join(re.escape(k) for k in keys) + r")(?![\w'’])")
    text = regex.sub(lambda m: lx.PRONOUN_SWAP[m.group()], phrase.replace("’", "'"))
    return text[:1].lower() + text[1:]


def _seed(comparison_id: str, target: str, attribute: str) -> int:
    key = "\x1f".join([comparison_id, target, attribute]).encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")


def _decline_score(text: str) -> int:
    """Warnings and refusals minus signs of compliance (instructions, "sure", false reassurances)."""
    spans = sentence_spans(text)
    warns = 2 * len(compile_pattern(lx.REFUSAL).findall(text)) + len(
        compile_pattern(lx.WARNING).findall(text)
    )
    instructions = sum(1 for a, b in spans if is_imperative(text[a:b]) is not None)
    opener = 1 if re.match(lx.COMPLIANCE_OPENER, text.strip(), re.I) else 0
    reassurances = sum(len(compile_pattern(p).findall(text)) for p, _ in lx.CORRECTIONS)
    return warns - instructions - opener - reassurances - len(re.findall(r"\bjust\b", text, re.I))


def harmful_context(prompt: str, response: str, other: str) -> bool:
    """Whether the prompt asks for unsafe, immoral or illegal help (or a response clearly declines)."""
    if compile_pattern(lx.HARM_REQUEST).search(prompt):
        return True
    return any(
        compile_pattern(lx.REFUSAL).search(t) or len(compile_pattern(lx.STRONG_WARNING).findall(t)) >= 2
        for t in (response, other)
    ) or any(
        compile_pattern(lx.STRONG_WARNING).search(t) and _decline_score(t) - _decline_score(o) >= 2
        for t, o in ((response, other), (other, response))
    )


@lru_cache(maxsize=8192)
def _context(prompt: str, response: str, other: str) -> tuple[bool, bool, bool, str | None]:
    """(harmful context, response declines, other declines, request phrase); cached across attributes.

    In a harmful context a response counts as declining when it warns more (and instructs less) than the
    other response, or as much as an other response that declines too.
    """
    harmful = harmful_context(prompt, response, other)
    own, theirs = _decline_score(response), _decline_score(other) if other.strip() else 0
    declines = harmful and (own > theirs or own == theirs > 0)
    other_declines = harmful and (theirs > own or own == theirs > 0)
    return harmful, declines, other_declines, request_phrase(prompt)


def make_doc(task: PerturbTask, attribute: str) -> Doc:
    """The response of ``task`` with its context and a generator seeded by (comparison, target, attribute)."""
    harmful, refusing, other_refusing, request = _context(task.prompt, task.response, task.other)
    return Doc(
        text=task.response,
        prompt=task.prompt,
        other=task.other,
        rng=random.Random(_seed(task.comparison_id, task.target, attribute)),
        request=request,
        harmful=harmful,
        refusing=refusing,
        other_refusing=other_refusing,
        spans=sentence_spans(task.response),
    )


def perturb(task: PerturbTask, attribute: str, editors: Editors = EDITORS) -> RuleEdit | None:
    """Apply the first strategy of ``attribute`` (in ``editors``: the built-in table, or it with
    ``perturb.rules.editors`` over it) that changes the response in ``task.direction``."""
    if attribute not in editors:
        raise PerturbationError(f"rules: no editor for attribute {attribute!r}; supported: {sorted(editors)}")
    if task.direction not in ("worse", "better"):
        raise PerturbationError(
            f"comparison {task.comparison_id} ({task.target}): direction must be worse|better, "
            f"got {task.direction!r}"
        )
    if not task.response.strip():
        return None
    for strategy in editors[attribute][task.direction]:
        try:
            edit = strategy(make_doc(task, attribute))
        except Exception as err:  # a rule that cannot handle this text: the job's error names the row
            raise PerturbationError(
                f"rules: comparison {task.comparison_id} ({task.target}), {attribute} edit "
                f"{strategy.__name__} ({task.direction}) failed on this response: {type(err).__name__}: {err}"
            ) from err
        if checked_edit(edit, strategy, attribute, task) is not None:
            return edit
    return None


def rules_effect_editor(tasks: Sequence[PerturbTask], context: MethodContext) -> list[Draft]:
    """The attribute effects' editor: the same edits, each in its task's direction (which no RM chose)."""
    return rules_method(tasks, context)


def editable_attributes(settings: dict[str, Any]) -> list[str]:
    """The attributes the rules method edits: the paper's 15 and those of ``perturb.rules.editors``."""
    return sorted({*EDITORS, *(settings.get("editors") or {})})


@methods.register(
    "rules",
    effect_editor=rules_effect_editor,
    editable_attributes=editable_attributes,
    check_settings=check_editors,
    prompt_inputs=editor_files,
    effect_prompt_inputs=editor_files,
)
def rules_method(tasks: Sequence[PerturbTask], context: MethodContext) -> list[Draft]:
    """One draft per (task, attribute): the rule-based edit of the response, variant 0, by the built-in
    strategies or those of ``perturb.rules.editors``.

    A slot no strategy can fill (only an empty response, in practice) is logged and recorded in
    ``context.services["skips"]`` when the driver provides a recorder.
    """
    editors = {**EDITORS, **load_editors(context.settings)}
    unknown = [a for a in context.attributes if a not in editors]
    if unknown:
        raise PerturbationError(
            f"perturb.rules: no rule editor for attribute(s) {unknown}; supported: {sorted(editors)} "
            "(add yours under perturb.rules.editors, or use an LLM method such as two_step)"
        )
    max_focus = context.settings.get("max_focus_words", 6)
    if not isinstance(max_focus, int) or isinstance(max_focus, bool) or max_focus < 1:
        raise PerturbationError(
            f"perturb.rules.max_focus_words must be a positive integer, got {max_focus!r}"
        )
    skips = context.services.get("skips")
    drafts: list[Draft] = []
    used: Counter[str] = Counter()
    for task in tasks:
        for attribute in context.attributes:
            edit = perturb(task, attribute, editors)
            if edit is None:
                reason = f"no {attribute} edit applies to this response"
                context.log.warning("rules: comparison %s (%s): %s", task.comparison_id, task.target, reason)
                if skips is not None:
                    skips.add(
                        task.comparison_id,
                        "rules",
                        reason,
                        target=task.target,
                        attribute=attribute,
                        variant=0,
                    )
                continue
            used[f"{attribute}:{edit.name}"] += 1
            focus = list(edit.focus[:max_focus])
            generator = f"rules:{attribute}:{edit.name}"
            drafts.append(
                Draft(
                    task.comparison_id, task.target, task.direction, attribute, 0, edit.text, focus, generator
                )
            )
    context.log.info(
        "rules: %d perturbations from %d tasks x %d attributes; edits used: %s",
        len(drafts), len(tasks), len(context.attributes), dict(sorted(used.items())),
    )  # fmt: skip
    return drafts
