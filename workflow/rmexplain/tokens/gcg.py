"""Greedy coordinate gradient (GCG; Zou et al., 2023) search for multi-token optimal and pessimal responses.

Each step takes the gradient of the loss with respect to a one-hot encoding of the response tokens (the
one-hot rows times the embedding matrix replace the response's input embeddings), keeps the ``top_k``
tokens with the most negative gradient per position, builds ``candidates`` sequences that each swap one
position for one of them, scores them all by exact ids in batches (prefix KV cache where it checks out),
and moves to the best. The loss is −reward for ``optimal`` and +reward for ``pessimal``, so both directions
minimise their loss. ``transformers`` RMs only: the search needs the model's embeddings and gradients.
``paper_gcg_search`` is the paper's variant (its nanoGCG fork): MSE to ±30, FasterGCG distance term,
deterministic candidates and a history.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
import torch

from rmexplain.score.base import ScoringError
from rmexplain.score.hf import prompt_prefix_suffix_ids, read_reward
from rmexplain.tokens.scan import PrefixScorer, ScanSettings, check_bos, choose_cache

log = logging.getLogger(__name__)

OBJECTIVES = {"optimal": -1.0, "pessimal": 1.0}  # loss = sign * reward


@dataclass(frozen=True)
class GCGSettings:
    """Search settings (``tokens.gcg`` in config)."""

    n_tokens: int = 8
    steps: int = 100
    top_k: int = 256
    candidates: int = 512
    init: str = "!"
    allowed: str = "ascii"
    seed: int = 0


def loss_sign(objective: str) -> float:
    """−1 for ``optimal`` (minimising −reward maximises reward), +1 for ``pessimal``."""
    if objective not in OBJECTIVES:
        raise ScoringError(f"tokens.gcg.objectives: {objective!r} is not one of {list(OBJECTIVES)}")
    return OBJECTIVES[objective]


def allowed_tokens(tokenizer: Any, n_embeddings: int, mode: str, allow_empty: bool = False) -> torch.Tensor:
    """Boolean mask over embedding rows the search may use: never special tokens or rows past the tokenizer;
    ``ascii``: only tokens whose decoded text is printable ASCII (as in the GCG paper), a token decoding to
    nothing only with ``allow_empty`` (the paper's fork: ``"".isascii()`` is true); ``all``: any other."""
    mask = torch.zeros(n_embeddings, dtype=torch.bool)
    n = min(len(tokenizer), n_embeddings)
    mask[:n] = True
    special = set(tokenizer.all_special_ids)
    special.update(i for i, t in getattr(tokenizer, "added_tokens_decoder", {}).items() if t.special)
    mask[[i for i in special if i < n_embeddings]] = False
    if mode == "ascii":
        texts = tokenizer.batch_decode([[i] for i in range(n)], clean_up_tokenization_spaces=False)
        ok = torch.tensor(
            [(allow_empty or bool(t)) and t.isascii() and t.isprintable() for t in texts], dtype=torch.bool
        )
        mask[:n] &= ok
    elif mode != "all":
        raise ScoringError(f"tokens.gcg.allowed: {mode!r} is not 'ascii' or 'all'")
    if not mask.any():
        raise ScoringError("tokens.gcg.allowed: no token is allowed")
    return mask


def one_hot_gradient(
    model: Any, spec: Any, prefix: Sequence[int], response: Sequence[int], suffix: Sequence[int], sign: float
) -> tuple[torch.Tensor, float]:
    """∂(sign · reward)/∂(one-hot response), shape [n, vocab], and the reward of ``response``.

    The model runs on the exact input ids; a forward hook on the input embedding replaces the response rows
    by ``one_hot @ W`` (times the module's ``embed_scale`` where it has one, e.g. Gemma 3), after checking
    that this reproduces the module's own output, so any pooling or gating that reads ``input_ids`` is kept.
    """
    embedding = model.get_input_embeddings()
    weight = embedding.weight
    device = weight.device
    start, n = len(prefix), len(response)
    one_hot = torch.zeros(n, weight.shape[0], dtype=weight.dtype, device=device)
    one_hot[torch.arange(n), torch.tensor(response, device=device)] = 1.0
    one_hot.requires_grad_(True)
    scale = getattr(embedding, "embed_scale", None)

    def replace(_module: Any, _inputs: Any, output: torch.Tensor) -> torch.Tensor:
        rows = one_hot @ weight
        if scale is not None:
            rows = rows * scale.to(rows.dtype)
        original = output[:, start : start + n]
        if not torch.allclose(rows.detach(), original.detach().to(rows.dtype), rtol=1e-3, atol=1e-3):
            raise ScoringError(f"{spec.key}: cannot reproduce the input embeddings from one-hot rows for GCG")
        return torch.cat(
            [output[:, :start], rows.unsqueeze(0).to(output.dtype), output[:, start + n :]], dim=1
        )

    ids = torch.tensor([[*prefix, *response, *suffix]], device=device)
    handle = embedding.register_forward_hook(replace)
    try:
        with torch.enable_grad():
            outputs = model(input_ids=ids, attention_mask=torch.ones_like(ids))
            reward = read_reward(spec, outputs)[0]
            (sign * reward).backward()
    finally:
        handle.remove()
    assert one_hot.grad is not None
    return one_hot.grad.float(), float(reward.detach())


def top_candidates(grad: torch.Tensor, allowed: torch.Tensor, top_k: int) -> torch.Tensor:
    """Per position, the ``top_k`` allowed tokens with the most negative loss gradient, shape [n, k]."""
    grad = grad.clone()
    grad[:, ~allowed] = math.inf
    return (-grad).topk(min(top_k, int(allowed.sum())), dim=1).indices.cpu()


def sample_candidates(
    current: torch.Tensor, top: torch.Tensor, n_candidates: int, generator: torch.Generator
) -> torch.Tensor:
    """``n_candidates`` copies of ``current`` [n], each with one position (spread evenly over positions)
    swapped for a random one of that position's ``top`` [n, k] tokens; duplicates and no-ops dropped."""
    n, k = top.shape
    positions = torch.arange(n_candidates) % n
    picks = torch.randint(0, k, (n_candidates,), generator=generator)
    candidates = current.repeat(n_candidates, 1)
    candidates[torch.arange(n_candidates), positions] = top[positions, picks]
    candidates = torch.unique(candidates, dim=0)
    changed = (candidates != current).any(dim=1)
    return candidates[changed]


def gcg_search(
    model: Any,
    tokenizer: Any,
    spec: Any,
    prompt: str,
    objective: str,
    settings: GCGSettings,
    scan: ScanSettings,
) -> pl.DataFrame:
    """Run GCG for one prompt and objective; one row per step (step 0 = the initial response)."""
    sign = loss_sign(objective)
    prefix, suffix = prompt_prefix_suffix_ids(tokenizer, spec, prompt)
    check_bos(tokenizer, prefix, suffix, spec.key)
    init = tokenizer(settings.init, add_special_tokens=False)["input_ids"]
    if len(init) != 1:
        raise ScoringError(
            f"tokens.gcg.init: {settings.init!r} is {len(init)} tokens for {spec.key}; give one token"
        )
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    allowed = allowed_tokens(tokenizer, model.get_input_embeddings().weight.shape[0], settings.allowed).to(
        model.get_input_embeddings().weight.device
    )
    scorer = PrefixScorer(model, spec, prefix, suffix)
    current = torch.tensor(init * settings.n_tokens, dtype=torch.long)
    cached = choose_cache(scorer, current.unsqueeze(0), scan) if spec.input_format == "chat" else False
    generator = torch.Generator().manual_seed(settings.seed)
    score = float(scorer.score(current.unsqueeze(0), cached=False)[0])
    best = score
    rows = [_row(0, current, score, best, tokenizer)]
    for step in range(1, settings.steps + 1):
        grad, _ = one_hot_gradient(model, spec, prefix, current.tolist(), suffix, sign)
        candidates = sample_candidates(
            current, top_candidates(grad, allowed, settings.top_k), settings.candidates, generator
        )
        if candidates.shape[0] == 0:
            log.warning("%s %s: step %d produced no new candidate; stopping", spec.key, objective, step)
            break
        scores = torch.cat([scorer.score(chunk, cached) for chunk in candidates.split(scan.batch_size)])
        pick = int(torch.argmin(sign * scores))
        current, score = candidates[pick], float(scores[pick])
        best = min(best, score, key=lambda value: sign * value)
        rows.append(_row(step, current, score, best, tokenizer))
        log.info(
            "%s %s step %d: reward %.4f (best %.4f) %r",
            spec.key,
            objective,
            step,
            score,
            best,
            tokenizer.decode(current.tolist()),
        )
    return pl.DataFrame(rows).with_columns(pl.lit(objective).alias("objective"))


def _row(step: int, ids: torch.Tensor, score: float, best: float, tokenizer: Any) -> dict[str, Any]:
    token_ids = [int(i) for i in ids.tolist()]
    text = tokenizer.decode(token_ids, clean_up_tokenization_spaces=False)
    same = tokenizer(text, add_special_tokens=False)["input_ids"] == token_ids
    return {
        "step": step,
        "score": score,
        "best_score": best,
        "token_ids": token_ids,
        "text": text,
        "retokenizes_same": same,
    }


# ---- GCG as the paper ran it (thompsonj/nanoGCG) ----------------------------------------------------------

PAPER_GRADIENT_TARGETS = ("objective", "fork")
INIT_CHARS = (
    ".",
    ",",
    "!",
    "?",
    ";",
    ":",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "@",
    "#",
    "$",
    "%",
    "&",
    "*",
    "w",
    "x",
    "y",
    "z",
)


@dataclass(frozen=True)
class PaperGCGSettings:
    """The paper's GCG (its nanoGCG fork, FasterGCG variant): ``tokens.gcg`` with ``variant: paper``.

    Loss (reward − target)², target +``target`` for ``optimal`` and −``target`` for ``pessimal``;
    ``gradient_target: fork`` takes the gradient towards +``target`` for both objectives as the fork did (so
    its pessimal candidates are those the gradient expects to *raise* the reward); ``objective`` (default)
    uses the objective's own target. ``distance_weight`` × the embedding distance of each swap is added to
    the gradient (FasterGCG; 0 turns it off).
    """

    steps: int = 250
    search_width: int = 512
    init: str = " ".join(["x"] * 20)
    target: float = 30.0
    distance_weight: float = 4.5
    buffer_size: int = 0
    gradient_target: str = "objective"
    allowed: str = "ascii"
    seed: int = 0


def paper_target(objective: str, settings: PaperGCGSettings) -> float:
    """+target for ``optimal``, −target for ``pessimal``."""
    return -settings.target * loss_sign(objective)


def mse_gradient(
    model: Any,
    spec: Any,
    prefix: Sequence[int],
    response: Sequence[int],
    suffix: Sequence[int],
    target: float,
) -> tuple[torch.Tensor, float]:
    """∂(reward − target)²/∂(one-hot response) [n, vocab], i.e. 2 (reward − target) ∂reward/∂one-hot, and the
    reward."""
    grad, reward = one_hot_gradient(model, spec, prefix, response, suffix, sign=1.0)
    return 2.0 * (reward - target) * grad, reward


def embedding_distances(model: Any, response: Sequence[int]) -> torch.Tensor:
    """Euclidean distance [n, vocab] from each response token's embedding row to every row (FasterGCG)."""
    weight = model.get_input_embeddings().weight.detach().float()
    return torch.cdist(weight[torch.tensor(list(response), device=weight.device)], weight)


def ordered_candidates(
    current: torch.Tensor,
    scores: torch.Tensor,
    allowed: torch.Tensor,
    width: int,
    history: set[tuple[int, ...]],
) -> torch.Tensor:
    """Up to ``width`` single-swap candidates of ``current`` [n] in ascending order of ``scores`` [n, vocab]
    (the regularised gradient; ties by position, then token id), skipping disallowed tokens and sequences in
    ``history`` (the current one included): the fork's deterministic walk down the flattened gradient."""
    flat = scores.detach().float().cpu().clone()
    flat[:, ~allowed.cpu()] = math.inf
    order = torch.sort(flat.reshape(-1), stable=True).indices
    n_vocab = flat.shape[1]
    base = [int(i) for i in current.tolist()]
    chosen: list[list[int]] = []
    seen: set[tuple[int, ...]] = set()
    for flat_index in order.tolist():
        position, token = divmod(flat_index, n_vocab)
        if not math.isfinite(float(flat[position, token])) or len(chosen) == width:
            break
        candidate = [*base]
        candidate[position] = token
        key = tuple(candidate)
        if key in history or key in seen:
            continue
        seen.add(key)
        chosen.append(candidate)
    return torch.tensor(chosen, dtype=torch.long).reshape(len(chosen), len(base))


def paper_gcg_search(
    model: Any,
    tokenizer: Any,
    spec: Any,
    prompt: str,
    objective: str,
    settings: PaperGCGSettings,
    scan: ScanSettings,
) -> pl.DataFrame:
    """Run the paper's GCG for one prompt and objective; one row per step (step 0 = the initial sequence).

    Each step moves to the lowest-loss new candidate even when it is worse than the current sequence (the
    fork does; the history of candidates keeps it from cycling, and the starting sequence, never in it, may
    come back as a candidate); ``best_score`` is the reward of the lowest-loss step so far, steps 1 on (the
    fork's result leaves the start out; step 0's row carries the start's own score), and ``loss`` the step's
    loss. Sequences are scored by exact ids (prefix KV cache where it checks
    out), reading the reward by the spec's ``read`` rule.
    """
    if settings.gradient_target not in PAPER_GRADIENT_TARGETS:
        raise ScoringError(
            f"tokens.gcg.gradient_target: {settings.gradient_target!r} is not one of "
            f"{list(PAPER_GRADIENT_TARGETS)}"
        )
    target = paper_target(objective, settings)
    gradient_target = settings.target if settings.gradient_target == "fork" else target
    prefix, suffix = prompt_prefix_suffix_ids(tokenizer, spec, prompt)
    check_bos(tokenizer, prefix, suffix, spec.key)
    init = list(tokenizer(settings.init, add_special_tokens=False)["input_ids"])
    if not init:
        raise ScoringError(f"tokens.gcg.init: {settings.init!r} gives no token for {spec.key}")
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    weight = model.get_input_embeddings().weight
    allowed = allowed_tokens(tokenizer, weight.shape[0], settings.allowed, allow_empty=True)
    scorer = PrefixScorer(model, spec, prefix, suffix)
    cached = choose_cache(scorer, torch.tensor([init]), scan) if spec.input_format == "chat" else False

    def losses(batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        rewards = torch.cat([scorer.score(chunk, cached) for chunk in batch.split(scan.batch_size)])
        return (rewards - target) ** 2, rewards

    buffer_ids = torch.tensor([init], dtype=torch.long)
    if settings.buffer_size > 1:
        chars = [tokenizer(c, add_special_tokens=False)["input_ids"] for c in INIT_CHARS]
        pool = torch.tensor([c[0] for c in chars if len(c) == 1], dtype=torch.long)
        generator = torch.Generator().manual_seed(settings.seed)
        picks = torch.randint(0, len(pool), (settings.buffer_size - 1, len(init)), generator=generator)
        buffer_ids = torch.cat([buffer_ids, pool[picks]])
    buffer_loss, buffer_reward = losses(buffer_ids)
    buffer = sorted(
        zip(buffer_loss.tolist(), buffer_reward.tolist(), buffer_ids.tolist(), strict=True),
        key=lambda e: e[0],
    )[: max(1, settings.buffer_size)]
    history: set[tuple[int, ...]] = set()  # the fork records candidates only, never the starting sequences
    start_loss, start_reward, current_ids = buffer[0]
    current = torch.tensor(current_ids, dtype=torch.long)
    rows = [{**_row(0, current, start_reward, start_reward, tokenizer), "loss": start_loss}]
    best_loss, best_reward = math.inf, start_reward  # the fork's best is over the steps, not the start
    for step in range(1, settings.steps + 1):
        grad, _ = mse_gradient(model, spec, prefix, current.tolist(), suffix, gradient_target)
        if settings.distance_weight:
            grad = grad + settings.distance_weight * embedding_distances(model, current.tolist()).to(
                grad.device
            )
        candidates = ordered_candidates(current, grad, allowed, settings.search_width, history)
        if candidates.shape[0] == 0:
            log.warning("%s %s: step %d found no new candidate; stopping", spec.key, objective, step)
            break
        loss, rewards = losses(candidates)
        history.update(tuple(ids) for ids in candidates.tolist())
        pick = int(torch.argmin(loss))
        current, step_loss, reward = candidates[pick], float(loss[pick]), float(rewards[pick])
        if step_loss < buffer[-1][0] or len(buffer) < max(1, settings.buffer_size):
            buffer = sorted([*buffer, (step_loss, reward, current.tolist())], key=lambda e: e[0])
            buffer = buffer[: max(1, settings.buffer_size)]
        if step_loss < best_loss:
            best_loss, best_reward = step_loss, reward
        rows.append({**_row(step, current, reward, best_reward, tokenizer), "loss": step_loss})
        log.info(
            "%s %s step %d: reward %.4f loss %.4f (best reward %.4f) %r",
            spec.key,
            objective,
            step,
            reward,
            step_loss,
            best_reward,
            tokenizer.decode(current.tolist()),
        )
    return pl.DataFrame(rows).with_columns(pl.lit(objective).alias("objective"))
