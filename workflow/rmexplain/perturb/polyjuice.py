"""``polyjuice`` — the paper's PJ baseline: Polyjuice (Wu et al., 2021) counterfactuals with its GPT-2 model.

Polyjuice perturbs one sentence at a time: its prompt is ``<sentence> <|perturb|> [<control code>]
<sentence with [BLANK]s> [SEP]`` and the model writes one answer per blank, each followed by
``[ANSWER]`` (``[EMPTY]`` for a deletion). Responses are split into sentences; perturbation ``v`` of
a response rewrites sentence ``v mod (number of sentences)`` with control code
``ctrl_codes[v mod len]`` and a random blank of 1–``max_blank_words`` words, and puts the
sentence back into the response. ``n`` (default 15, as in the paper) perturbations per response;
a slot whose generations are all invalid (unfilled blanks, unchanged or duplicate text) is retried
with a new blank and code for up to ``max_rounds`` rounds, then recorded as a skip.

Differences from the original package, stated plainly: blanks are random word spans (the original
picks spaCy dependency subtrees), and its optional GPT-2 perplexity filter is not applied.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rmexplain.hub import hub_ref
from rmexplain.perturb.base import Draft, MethodContext, PerturbationError, PerturbTask, methods
from rmexplain.perturb.skips import SkipRecorder
from rmexplain.settings import schema_defaults

PERTURB_TOK = "<|perturb|>"
BLANK_TOK = "[BLANK]"
SEP_TOK = "[SEP]"
EMPTY_TOK = "[EMPTY]"
ANSWER_TOK = "[ANSWER]"
SPECIAL_TOKENS = (PERTURB_TOK, BLANK_TOK, SEP_TOK, EMPTY_TOK, ANSWER_TOK)
ALL_CTRL_CODES = (
    "negation",
    "quantifier",
    "shuffle",
    "lexical",
    "resemantic",
    "insert",
    "delete",
    "restructure",
)

POLYJUICE_DEFAULTS: dict[str, Any] = schema_defaults("perturb", "polyjuice")

_SENTENCE_BREAK = re.compile(r"((?<=[.!?])\s+|\s*\n\s*)")


def split_sentences(text: str) -> list[str]:
    """Sentences and the whitespace between them, alternating: ``''.join(parts) == text``."""
    return _SENTENCE_BREAK.split(text)


def sentence_slots(parts: Sequence[str]) -> list[int]:
    """Indices (into ``split_sentences`` parts) of the sentences worth perturbing (at least two words)."""
    return [i for i in range(0, len(parts), 2) if len(parts[i].split()) >= 2]


def blank_words(sentence: str, rng: random.Random, max_words: int) -> tuple[str, list[str]]:
    """Replace a random span of 1..max_words words with ``[BLANK]`` (punctuation after the span stays);
    return the blanked text and the removed words."""
    words = sentence.split()
    length = rng.randint(1, min(max_words, len(words)))
    start = rng.randint(0, len(words) - length)
    removed = words[start : start + length]
    trailing = re.search(r"[.,!?;:]+$", removed[-1])
    tail = trailing.group(0) if trailing else ""
    if tail:
        removed[-1] = removed[-1][: -len(tail)]
    blanked = [*words[:start], BLANK_TOK + tail, *words[start + length :]]
    return " ".join(blanked), [w for w in removed if w]


def build_prompt(sentence: str, ctrl_code: str, blanked: str) -> str:
    """Polyjuice's prompt for a complete blank: original, control code, blanked sentence, ``[SEP]``."""
    return f"{sentence.strip()} {PERTURB_TOK} [{ctrl_code}] {blanked.strip()} {SEP_TOK}"


def fill_blanks(generated: str) -> str | None:
    """The perturbed sentence from a full decoded sequence (prompt + generation), or None if unusable.

    Takes the text after the last ``<|perturb|>``, drops the control code, and fills each ``[BLANK]``
    with the next ``[ANSWER]``-terminated answer (``[EMPTY]`` deletes the blank).
    """
    tail = generated.split(PERTURB_TOK)[-1]
    if SEP_TOK not in tail:
        return None
    before, answers_text = tail.split(SEP_TOK, 1)
    before = re.sub(r"^\s*\[\s*[a-z]+\s*\]\s*", "", before).strip()
    answers = [a.strip() for a in answers_text.split(ANSWER_TOK)[:-1]]
    if len(answers) < before.count(BLANK_TOK) or not answers:
        return None
    for answer in answers[: before.count(BLANK_TOK)]:
        if answer in ("", EMPTY_TOK):
            before = before.replace(f" {BLANK_TOK}", "", 1).replace(BLANK_TOK, "", 1)
        else:
            before = before.replace(BLANK_TOK, answer, 1)
    text = re.sub(r"\s+", " ", before).strip()
    if not text or any(tok in text for tok in SPECIAL_TOKENS):
        return None
    return text


@dataclass(frozen=True)
class Slot:
    """Perturbation ``variant`` of task ``task_index`` in one round: where and how to blank."""

    task_index: int
    variant: int
    part_index: int
    ctrl_code: str
    prompt: str
    removed: list[str]


def _rng(seed: int, task: PerturbTask, variant: int, round_: int) -> random.Random:
    key = f"{seed}\x1f{task.comparison_id}\x1f{task.target}\x1f{variant}\x1f{round_}"
    return random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))


def plan_slot(
    task_index: int, task: PerturbTask, variant: int, round_: int, settings: dict[str, Any]
) -> Slot | None:
    """Which sentence, control code and blank perturbation ``variant`` uses in round ``round_``."""
    parts = split_sentences(task.response)
    candidates = sentence_slots(parts)
    if not candidates:
        return None
    rng = _rng(int(settings["seed"]), task, variant, round_)
    codes = list(settings["ctrl_codes"])
    part_index = candidates[(variant + round_) % len(candidates)]
    code = codes[(variant + round_ * 7) % len(codes)]
    blanked, removed = blank_words(parts[part_index], rng, int(settings["max_blank_words"]))
    return Slot(
        task_index, variant, part_index, code, build_prompt(parts[part_index], code, blanked), removed
    )


def load_polyjuice(settings: dict[str, Any]) -> tuple[Any, Any]:
    """The Polyjuice GPT-2 model and tokenizer (left padding, for batched generation)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    common = {"revision": settings["revision"]}
    tokenizer = AutoTokenizer.from_pretrained(settings["model"], **common)
    model = AutoModelForCausalLM.from_pretrained(settings["model"], **common).to(settings["device"]).eval()
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def generate(
    model: Any, tokenizer: Any, prompts: Sequence[str], settings: dict[str, Any], seed: int
) -> list[list[str]]:
    """``num_return_sequences`` decoded sequences (prompt included, special tokens kept) per prompt."""
    import torch

    k = int(settings["num_return_sequences"])
    out: list[list[str]] = []
    torch.manual_seed(seed)
    for start in range(0, len(prompts), int(settings["batch_size"])):
        batch = list(prompts[start : start + int(settings["batch_size"])])
        encoded = tokenizer(batch, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.inference_mode():
            sequences = model.generate(
                input_ids=encoded["input_ids"].to(model.device),
                attention_mask=encoded["attention_mask"].to(model.device),
                do_sample=True,
                temperature=float(settings["temperature"]),
                top_p=float(settings["top_p"]),
                num_return_sequences=k,
                max_new_tokens=int(settings["max_new_tokens"]),
                pad_token_id=tokenizer.pad_token_id,
            )
        texts = tokenizer.batch_decode(sequences, skip_special_tokens=False)
        cleaned = [t.replace(tokenizer.pad_token or "\x00", " ") for t in texts]
        out.extend(cleaned[i : i + k] for i in range(0, len(cleaned), k))
    return out


def _too_long(tokenizer: Any, model: Any, prompt: str, settings: dict[str, Any]) -> bool:
    limit = int(getattr(model.config, "n_positions", 1024)) - int(settings["max_new_tokens"])
    return len(tokenizer(prompt, add_special_tokens=False)["input_ids"]) > limit


def polyjuice_gpus(settings: dict[str, Any]) -> int:
    """One GPU when ``perturb.polyjuice.device`` is CUDA."""
    return 1 if str({**POLYJUICE_DEFAULTS, **(settings or {})}["device"]).startswith("cuda") else 0


def polyjuice_hub_refs(settings: dict[str, Any]) -> list[Any]:
    """The Polyjuice model (``perturb.polyjuice.model``, default ``uw-hai/polyjuice``)."""
    settings = {**POLYJUICE_DEFAULTS, **(settings or {})}
    return [hub_ref(settings["model"], settings["revision"], "perturb.polyjuice.model")]


@methods.register("polyjuice", attribute_conditioned=False, gpus=polyjuice_gpus, hub_refs=polyjuice_hub_refs)
def polyjuice(tasks: Sequence[PerturbTask], context: MethodContext) -> list[Draft]:
    """``n`` Polyjuice perturbations per response, sentence by sentence."""
    settings = _settings(context.settings)
    skips: SkipRecorder = context.services.setdefault("skips", SkipRecorder())
    model, tokenizer = context.services.get("polyjuice") or load_polyjuice(settings)
    n, rounds = int(settings["n"]), int(settings["max_rounds"])
    pending = [(i, v) for i in range(len(tasks)) for v in range(n)]
    used: dict[int, set[str]] = {i: {t.response.strip().lower()} for i, t in enumerate(tasks)}
    drafts: list[Draft] = []
    filled: set[tuple[int, int]] = set()
    reasons: dict[tuple[int, int], str] = {}
    for round_ in range(rounds):
        slots = [plan_slot(i, tasks[i], v, round_, settings) for i, v in pending]
        for (i, v), slot in zip(pending, slots, strict=True):
            if slot is None:
                reasons[(i, v)] = "response has no sentence of two or more words"
            elif _too_long(tokenizer, model, slot.prompt, settings):
                reasons[(i, v)] = "sentence too long for the Polyjuice model's context"
        live = [s for s in slots if s is not None and (s.task_index, s.variant) not in reasons]
        generations = generate(
            model, tokenizer, [s.prompt for s in live], settings, int(settings["seed"]) + round_
        )
        for slot, candidates in zip(live, generations, strict=True):
            draft = _first_valid(slot, tasks[slot.task_index], candidates, used[slot.task_index], settings)
            if draft is not None:
                drafts.append(draft)
                filled.add((slot.task_index, slot.variant))
        pending = [(i, v) for i, v in pending if (i, v) not in filled and (i, v) not in reasons]
        context.log.info("polyjuice round %d: %d slots still open", round_ + 1, len(pending))
        if not pending:
            break
    for i, v in pending:
        reasons[(i, v)] = f"no valid Polyjuice generation in {rounds} rounds"
    for (i, v), reason in sorted(reasons.items()):
        skips.add(tasks[i].comparison_id, "generate", reason, target=tasks[i].target, variant=v)
    return drafts


def _first_valid(
    slot: Slot, task: PerturbTask, candidates: Sequence[str], used: set[str], settings: dict[str, Any]
) -> Draft | None:
    parts = split_sentences(task.response)
    original = parts[slot.part_index].strip().lower()
    for candidate in candidates:
        sentence = fill_blanks(candidate)
        if sentence is None or sentence.lower() == original:
            continue
        text = "".join([*parts[: slot.part_index], sentence, *parts[slot.part_index + 1 :]]).strip()
        if text.lower() in used:
            continue
        used.add(text.lower())
        return Draft(
            comparison_id=task.comparison_id,
            target=task.target,
            direction=task.direction,
            attribute=None,
            variant=slot.variant,
            text=text,
            focus_words=slot.removed,
            generator=f"polyjuice:{settings['model']} [{slot.ctrl_code}]",
        )
    return None


def _settings(given: dict[str, Any]) -> dict[str, Any]:
    unknown = set(given) - set(POLYJUICE_DEFAULTS)
    if unknown:
        raise PerturbationError(f"perturb.polyjuice: unknown key(s) {sorted(unknown)}")
    settings = {**POLYJUICE_DEFAULTS, **given}
    bad = set(settings["ctrl_codes"]) - set(ALL_CTRL_CODES)
    if bad or not settings["ctrl_codes"]:
        raise PerturbationError(
            f"perturb.polyjuice.ctrl_codes: {sorted(bad)} not among {list(ALL_CTRL_CODES)}"
        )
    if int(settings["n"]) < 1:
        raise PerturbationError("perturb.polyjuice.n must be at least 1")
    return settings
