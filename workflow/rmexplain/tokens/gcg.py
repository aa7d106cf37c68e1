"""Greedy coordinate gradient (GCG; Zou et al., 2023) search for multi-token optimal and pessimal responses.

Each step takes the gradient of the loss with respect to a one-hot encoding of the response tokens (the
one-hot rows times the embedding matrix replace the response's input embeddings), keeps the ``top_k``
tokens with the most negative gradient per position, builds ``candidates`` sequences that each swap one
position for one of them, scores them all by exact ids in batches (prefix KV cache where it checks out),
and moves to the best. The loss is −reward for ``optimal`` and +reward for ``pessimal``, so both directions
minimise their loss. ``transformers`` RMs only: the search needs the model's embeddings and gradients.
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


def allowed_tokens(tokenizer: Any, n_embeddings: int, mode: str) -> torch.Tensor:
    """Boolean mask over embedding rows the search may use: never special tokens or rows past the tokenizer;
    ``ascii``: only tokens whose decoded text is printable ASCII (as in the GCG paper); ``all``: any other."""
    mask = torch.zeros(n_embeddings, dtype=torch.bool)
    n = min(len(tokenizer), n_embeddings)
    mask[:n] = True
    special = set(tokenizer.all_special_ids)
    special.update(i for i, t in getattr(tokenizer, "added_tokens_decoder", {}).items() if t.special)
    mask[[i for i in special if i < n_embeddings]] = False
    if mode == "ascii":
        texts = tokenizer.batch_decode([[i] for i in range(n)], clean_up_tokenization_spaces=False)
        ok = torch.tensor([bool(t) and t.isascii() and t.isprintable() for t in texts], dtype=torch.bool)
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
    from rmexplain.score.hf import read_reward

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
    from rmexplain.score.hf import prompt_prefix_suffix_ids

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
