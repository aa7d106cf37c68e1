"""Exhaustive single-token scans: the reward of every token of a vocabulary as the whole response.

For ``backend: transformers`` RMs each sequence is built from exact ids — the chat-template prefix ids
(one BOS) + ``[token_id]`` + the suffix ids — never by decoding and re-tokenising. For causal RMs the
prefix is run once and its KV cache is copied per batch, so a batch only runs the 1 + len(suffix) new
positions; a check on the first tokens compares cached against full-sequence scores before the scan goes on.

Other backends (``demo``, ``python``, ``remote``, ``vllm``) take text: the scan scores each token's decoded
text as the response through ``Scorer.score`` (exact-id scoring does not apply to them).
"""

from __future__ import annotations

import copy
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
import torch

from rmexplain.score.base import ScoringError

log = logging.getLogger(__name__)

CACHE_MODES = ("auto", "always", "never")


@dataclass(frozen=True)
class ScanSettings:
    """How a scan batches and checks itself (``tokens.scan`` in config)."""

    batch_size: int = 256
    prefix_cache: str = "auto"
    verify_tokens: int = 8
    verify_atol: float = 1e-3
    verify_rtol: float = 2e-2


class PrefixScorer:
    """Scores ``prefix + middle + suffix`` for many middles of one length, exactly by token id.

    ``cached=True`` runs the prefix once (``past_key_values``) and only the middle and suffix per batch;
    ``cached=False`` runs whole sequences (the reference). All sequences of a call have one length, so no
    padding is involved either way.
    """

    def __init__(self, model: Any, spec: Any, prefix_ids: Sequence[int], suffix_ids: Sequence[int]) -> None:
        if not prefix_ids:
            raise ScoringError("a token scan needs a non-empty prefix (at least the BOS or the prompt)")
        self.model = model
        self.spec = spec
        self.prefix = list(prefix_ids)
        self.suffix = list(suffix_ids)
        self.device = next(model.parameters()).device
        self.pad_id = getattr(model.config, "pad_token_id", None)
        self._cache: Any = None

    def full_ids(self, middle: Sequence[int]) -> list[int]:
        """The exact ids of one scored sequence."""
        return [*self.prefix, *middle, *self.suffix]

    def _prefix_cache(self) -> Any:
        if self._cache is None:
            ids = torch.tensor([self.prefix], device=self.device)
            with torch.inference_mode():
                out = self.model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True)
            cache = getattr(out, "past_key_values", None)
            if cache is None or not hasattr(cache, "batch_repeat_interleave"):
                raise ScoringError(
                    f"{self.spec.key}: the model returns no transformers Cache; "
                    "use tokens.scan.prefix_cache: never"
                )
            self._cache = cache
        return self._cache

    def _batch_cache(self, batch: int) -> Any:
        """A fresh copy of the prefix cache, repeated to ``batch`` rows (the forward pass appends to it)."""
        cache = copy.deepcopy(self._prefix_cache())
        cache.batch_repeat_interleave(batch)
        return cache

    def score(self, middles: torch.Tensor, cached: bool) -> torch.Tensor:
        """Rewards [batch] of ``prefix + middles[i] + suffix``; ``middles`` is a LongTensor [batch, m]."""
        middles = middles.to(self.device)
        batch = middles.shape[0]
        suffix = torch.tensor(self.suffix, dtype=torch.long, device=self.device).expand(batch, -1)
        total = len(self.prefix) + middles.shape[1] + len(self.suffix)
        mask = torch.ones((batch, total), dtype=torch.long, device=self.device)
        with torch.inference_mode():
            if cached:
                outputs = self.model(
                    input_ids=torch.cat([middles, suffix], dim=1),
                    attention_mask=mask,
                    past_key_values=self._batch_cache(batch),
                    use_cache=True,
                )
            else:
                prefix = torch.tensor(self.prefix, dtype=torch.long, device=self.device).expand(batch, -1)
                outputs = self.model(
                    input_ids=torch.cat([prefix, middles, suffix], dim=1), attention_mask=mask
                )
        from rmexplain.score.hf import read_reward

        return read_reward(self.spec, outputs).float().cpu()

    def needs_full(self, middles: torch.Tensor) -> torch.Tensor:
        """Rows the cached pass cannot pool like the full pass: middle and suffix all pad tokens (HF heads
        pool at the rightmost non-pad id, which then lies in the prefix)."""
        if self.pad_id is None:
            return torch.zeros(middles.shape[0], dtype=torch.bool)
        tail_all_pad = all(t == self.pad_id for t in self.suffix)
        return (middles == self.pad_id).all(dim=1) & tail_all_pad


def choose_cache(scorer: PrefixScorer, sample: torch.Tensor, settings: ScanSettings) -> bool:
    """Decide whether to use the prefix cache: ``never``; ``always``/``auto`` after checking that cached and
    full-sequence scores of the first ``verify_tokens`` rows of ``sample`` (middles [rows, m]) agree
    (``always`` raises if they do not, ``auto``
    falls back to full sequences with a warning, e.g. for bidirectional encoders or custom heads)."""
    if settings.prefix_cache not in CACHE_MODES:
        raise ScoringError(
            f"tokens.scan.prefix_cache: {settings.prefix_cache!r} is not one of {list(CACHE_MODES)}"
        )
    if settings.prefix_cache == "never":
        return False
    sample = sample[: max(1, settings.verify_tokens)]
    try:
        cached = scorer.score(sample, cached=True)
    except (ScoringError, TypeError, ValueError, RuntimeError) as err:
        if settings.prefix_cache == "always":
            raise ScoringError(f"{scorer.spec.key}: prefix-cached scoring failed: {err}") from err
        log.warning("%s: prefix cache unusable (%s); scoring full sequences", scorer.spec.key, err)
        return False
    full = scorer.score(sample, cached=False)
    delta = float((cached - full).abs().max())
    limit = settings.verify_atol + settings.verify_rtol * float(full.abs().max())
    log.info(
        "%s: prefix-cache check on %d tokens: max |cached - full| = %.3g (allowed %.3g)",
        scorer.spec.key,
        len(sample),
        delta,
        limit,
    )
    if delta <= limit:
        return True
    if settings.prefix_cache == "always":
        raise ScoringError(
            f"{scorer.spec.key}: prefix-cached scores differ from full-sequence scores by "
            f"{delta:.3g} > {limit:.3g}"
        )
    log.warning("%s: cached and full scores disagree (%.3g); scoring full sequences", scorer.spec.key, delta)
    return False


def scan_ids(scorer: PrefixScorer, token_ids: Sequence[int], settings: ScanSettings) -> list[float]:
    """The reward of every single-token response ``token_ids[i]``, exactly by id, in order."""
    ids = torch.tensor(token_ids, dtype=torch.long).unsqueeze(1)
    cached = choose_cache(scorer, ids, settings)
    scores = torch.empty(len(token_ids))
    start_time, step = time.perf_counter(), settings.batch_size
    for start in range(0, len(token_ids), step):
        middles = ids[start : start + step]
        scores[start : start + step] = _score_batch(scorer, middles, cached)
        done = min(start + step, len(token_ids))
        if (start // step) % 50 == 0 or done == len(token_ids):
            rate = done / max(time.perf_counter() - start_time, 1e-9)
            log.info(
                "%s: %d/%d tokens scored (%.0f tokens/s, cache %s)",
                scorer.spec.key,
                done,
                len(token_ids),
                rate,
                cached,
            )
    values = scores.tolist()
    bad = [token_ids[i] for i, v in enumerate(values) if not math.isfinite(v)]
    if bad:
        raise ScoringError(f"{scorer.spec.key}: non-finite reward for token id(s) {bad[:10]}")
    return values


def _score_batch(scorer: PrefixScorer, middles: torch.Tensor, cached: bool) -> torch.Tensor:
    if not cached:
        return scorer.score(middles, cached=False)
    out = scorer.score(middles, cached=True)
    fallback = scorer.needs_full(middles)
    if fallback.any():
        out[fallback] = scorer.score(middles[fallback], cached=False)
    return out


def scan_transformers(
    model: Any, tokenizer: Any, spec: Any, prompt: str, vocabulary: pl.DataFrame, settings: ScanSettings
) -> pl.DataFrame:
    """Scan ``vocabulary`` (token_id, piece, text) with a loaded transformers RM for one prompt."""
    from rmexplain.score.hf import prompt_prefix_suffix_ids

    if spec.input_format != "chat":
        log.info(
            "%s: input_format %s; the prefix cache is not used (encoders attend both ways)",
            spec.key,
            spec.input_format,
        )
        settings = ScanSettings(**{**settings.__dict__, "prefix_cache": "never"})
    prefix, suffix = prompt_prefix_suffix_ids(tokenizer, spec, prompt)
    check_bos(tokenizer, prefix, suffix, spec.key)
    log.info(
        "%s: prefix %d ids, suffix %d ids: %r",
        spec.key,
        len(prefix),
        len(suffix),
        tokenizer.decode(prefix + suffix),
    )
    scorer = PrefixScorer(model, spec, prefix, suffix)
    scores = scan_ids(scorer, vocabulary["token_id"].to_list(), settings)
    return vocabulary.select("token_id", "piece", "text").with_columns(
        pl.Series("score", scores, dtype=pl.Float64)
    )


def check_bos(tokenizer: Any, prefix: Sequence[int], suffix: Sequence[int], key: str) -> None:
    """Raise unless the template part of every scored sequence holds at most one BOS, and that one first
    (exactly one wherever the template or the tokenizer adds it; see ``rmexplain.score.hf.chat_token_ids``).
    """
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        return
    positions = [i for i, t in enumerate([*prefix, *suffix]) if t == bos]
    if len(positions) > 1 or positions not in ([], [0]):
        raise ScoringError(
            f"{key}: the scored sequences would hold BOS at positions {positions}; expected one, first"
        )


def scan_text(scorer: Any, prompt: str, vocabulary: pl.DataFrame, batch_size: int = 512) -> pl.DataFrame:
    """Scan by text for backends without token ids: each token's decoded text is the response."""
    texts = vocabulary["text"].to_list()
    scores: list[float] = []
    start_time = time.perf_counter()
    for start in range(0, len(texts), batch_size):
        chunk = texts[start : start + batch_size]
        scores += [float(s) for s in scorer.score([prompt] * len(chunk), chunk)]
        log.info(
            "text scan: %d/%d tokens (%.0f tokens/s)",
            len(scores),
            len(texts),
            len(scores) / max(time.perf_counter() - start_time, 1e-9),
        )
    bad = [t for t, s in zip(texts, scores, strict=True) if not math.isfinite(s)]
    if bad:
        raise ScoringError(f"non-finite reward for token text(s) {bad[:10]}")
    return vocabulary.select("token_id", "piece", "text").with_columns(
        pl.Series("score", scores, dtype=pl.Float64)
    )
