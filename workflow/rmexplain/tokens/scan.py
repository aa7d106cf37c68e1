"""Exhaustive single-token scans: the reward of every token of a vocabulary as the whole response.

For ``backend: transformers`` RMs each sequence is built from exact ids — the chat-template prefix ids
(one BOS) + ``[token_id]`` + the suffix ids — never by decoding and re-tokenising. For causal RMs the
prefix is run once and its KV cache is copied per batch, so a batch only runs the 1 + len(suffix) new
positions; a check on the first tokens compares cached against full-sequence scores before the scan goes on.

``scan_official`` scores instead as the paper's code did (decode, render the template as text, re-tokenise
with the tokenizer's defaults: two BOS where the template and the tokenizer both add one) and
``compare_scans`` measures how far the two routes agree.

Other backends (``demo``, ``python``, ``remote``, ``vllm``) take text: the scan scores each token's decoded
text as the response through the backend's ``score`` (exact-id scoring does not apply to them).
"""

from __future__ import annotations

import copy
import datetime
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
import torch
from scipy import stats

from rmexplain.score.base import ScoringError
from rmexplain.score.hf import SENTINEL, prompt_prefix_suffix_ids, read_reward, render_chat
from rmexplain.tokens.vocab import decode_tokens

log = logging.getLogger(__name__)

CACHE_MODES = ("auto", "always", "never")


@dataclass(frozen=True)
class ScanSettings:
    """How a scan batches and checks itself (``tokens.scan`` in config). The cache check compares the first
    ``verify_tokens`` cached and full-sequence scores within ``verify_atol + verify_rtol × spread``."""

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
        if self.pad_id is not None and (self.pad_id in self.prefix or self.pad_id in self.suffix):
            raise ScoringError(
                f"{spec.key}: the pad id {self.pad_id} occurs in the template's prefix or suffix ids; "
                "HF heads read the reward at the last non-pad token, so every score would be read elsewhere"
            )
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
    limit = check_limit(full, settings)
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


def check_limit(full: torch.Tensor, settings: ScanSettings) -> float:
    """Largest |cached − full| the cache check allows: ``verify_atol + verify_rtol × spread`` of the full
    scores (max − min), so an offset shared by all scores (e.g. every reward near −30) does not widen it."""
    spread = float(full.max() - full.min()) if full.numel() else 0.0
    return settings.verify_atol + settings.verify_rtol * spread


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
    if spec.input_format != "chat":
        log.info(
            "%s: input_format %s; the prefix cache is not used (encoders attend both ways)",
            spec.key,
            spec.input_format,
        )
        settings = ScanSettings(**{**settings.__dict__, "prefix_cache": "never"})
    prefix, suffix = prompt_prefix_suffix_ids(tokenizer, spec, prompt)
    check_bos(tokenizer, prefix, suffix, spec.key)
    log_rendered_prompt(tokenizer, spec, prompt)
    log.info("%s: prefix %d ids, suffix %d ids", spec.key, len(prefix), len(suffix))
    scorer = PrefixScorer(model, spec, prefix, suffix)
    scores = scan_ids(scorer, vocabulary["token_id"].to_list(), settings)
    return vocabulary.select("token_id", "piece", "text").with_columns(
        pl.Series("score", scores, dtype=pl.Float64)
    )


def parse_template_date(value: str | datetime.date | None) -> datetime.date | None:
    """``tokens.scan.template_date`` (``"YYYY-MM-DD"``) as a date; None = the run's date."""
    if value is None or isinstance(value, datetime.date):
        return value
    try:
        return datetime.date.fromisoformat(str(value))
    except ValueError:
        raise ScoringError(f"tokens.scan.template_date: {value!r} is not a date YYYY-MM-DD") from None


def log_rendered_prompt(tokenizer: Any, spec: Any, prompt: str) -> str | None:
    """Log the chat template rendered around the response slot (``{response}``), as every scored sequence of
    the scan sees it (a template that reads the date shows it here); None for pair encoders."""
    if spec.input_format != "chat":
        return None
    text = render_chat(tokenizer, spec, prompt, SENTINEL).replace(SENTINEL, "{response}")
    log.info("%s: rendered prompt: %r", spec.key, text)
    return text


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


# ---- the paper's scoring route, for comparison -------------------------------------------------------------

SCORING_MODES = ("exact", "official")


def exact_token_ids(tokenizer: Any, spec: Any, prompt: str, token_ids: Sequence[int]) -> list[list[int]]:
    """The sequences the exact mode scores: template prefix ids (one BOS) + ``[token_id]`` + suffix ids."""
    prefix, suffix = prompt_prefix_suffix_ids(tokenizer, spec, prompt)
    return [[*prefix, int(t), *suffix] for t in token_ids]


def official_token_ids(
    tokenizer: Any, spec: Any, prompt: str, token_ids: Sequence[int], texts: Sequence[str] | None = None
) -> list[list[int]]:
    """The sequences the paper's code scores: the decoded text of each id (``texts``, e.g. the vocabulary
    table's, aligned with ``token_ids``; default the ids decoded as the paper's transformers 4.43 did,
    :func:`rmexplain.tokens.vocab.decode_tokens`) as the assistant turn of the chat template rendered as text
    (``tokenize=False``), and the rendered string tokenised with the tokenizer's defaults
    (``truncation=True``): where the template writes ``{{ bos_token }}`` and the tokenizer adds one too, the
    sequence starts with two BOS; the template's ``trim`` and re-tokenisation may change or drop the token.
    (The paper pads each batch; these are not padded.)
    """
    if texts is None:
        texts = decode_tokens(tokenizer, token_ids, "paper")
    if len(texts) != len(token_ids):
        raise ScoringError(f"{spec.key}: {len(texts)} texts for {len(token_ids)} token ids")
    rendered = [render_chat(tokenizer, spec, prompt, text) for text in texts]
    if not rendered:
        return []
    return [list(ids) for ids in tokenizer(rendered, truncation=True)["input_ids"]]


def score_sequences(
    model: Any, spec: Any, sequences: Sequence[Sequence[int]], batch_size: int
) -> list[float]:
    """Rewards of whole id sequences, in order: batches of equal length, no padding, no cache."""
    device = next(model.parameters()).device
    by_length: dict[int, list[int]] = {}
    for index, ids in enumerate(sequences):
        by_length.setdefault(len(ids), []).append(index)
    scores = [math.nan] * len(sequences)
    for indices in by_length.values():
        for start in range(0, len(indices), batch_size):
            chunk = indices[start : start + batch_size]
            ids = torch.tensor([list(sequences[i]) for i in chunk], dtype=torch.long, device=device)
            with torch.inference_mode():
                out = read_reward(spec, model(input_ids=ids, attention_mask=torch.ones_like(ids)))
            for i, value in zip(chunk, out.float().cpu().tolist(), strict=True):
                scores[i] = float(value)
    return scores


def scan_official(
    model: Any, tokenizer: Any, spec: Any, prompt: str, vocabulary: pl.DataFrame, settings: ScanSettings
) -> pl.DataFrame:
    """Scan ``vocabulary`` as the paper's code did (:func:`official_token_ids` of its ``text`` column, the
    text the paper put into the template); same columns as :func:`scan_transformers`."""
    token_ids = vocabulary["token_id"].to_list()
    log_rendered_prompt(tokenizer, spec, prompt)
    sequences = official_token_ids(tokenizer, spec, prompt, token_ids, vocabulary["text"].to_list())
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is not None and sequences:
        doubled = sum(1 for s in sequences if len(s) > 1 and s[0] == bos and s[1] == bos)
        log.info(
            "%s: official mode; %d of %d sequences start with two BOS", spec.key, doubled, len(sequences)
        )
    scores = score_sequences(model, spec, sequences, settings.batch_size)
    bad = [t for t, v in zip(token_ids, scores, strict=True) if not math.isfinite(v)]
    if bad:
        raise ScoringError(f"{spec.key}: non-finite reward for token id(s) {bad[:10]}")
    return vocabulary.select("token_id", "piece", "text").with_columns(
        pl.Series("score", scores, dtype=pl.Float64)
    )


def extreme_ids(scan: pl.DataFrame, n: int) -> tuple[set[int], set[int]]:
    """Token ids of the first and last ``n`` of the order score descending, then token id ascending."""
    ordered = scan.sort(["score", "token_id"], descending=[True, False])["token_id"].to_list()
    if n <= 0:
        return set(), set()
    return set(ordered[:n]), set(ordered[-n:])


def compare_scans(
    a: pl.DataFrame,
    b: pl.DataFrame,
    n: int = 100,
    sequences_a: Sequence[Sequence[int]] | None = None,
    sequences_b: Sequence[Sequence[int]] | None = None,
    bos_id: int | None = None,
) -> dict[str, Any]:
    """Agreement of two scans of one RM × prompt (e.g. exact and official), joined on token id: Kendall τ-b
    (``scipy.stats.kendalltau``) over the common ids, overlaps of their top and bottom ``n`` (see
    :func:`extreme_ids`), and, given the scored sequences of each (aligned with ``a``'s and ``b``'s rows),
    the share of common ids whose sequences differ, and, given ``bos_id``, the share that still differ once
    leading repeats of it are collapsed to one (what the official route changes beyond its second BOS)."""
    joined = a.select("token_id", pl.col("score").alias("score_a")).join(
        b.select("token_id", pl.col("score").alias("score_b")), on="token_id", how="inner"
    )
    if joined.height < 2:
        raise ScoringError("compare_scans: the scans share fewer than two token ids")
    tau = stats.kendalltau(joined["score_a"].to_numpy(), joined["score_b"].to_numpy())
    common = pl.DataFrame({"token_id": joined["token_id"]})
    top_a, bottom_a = extreme_ids(a.join(common, on="token_id"), n)
    top_b, bottom_b = extreme_ids(b.join(common, on="token_id"), n)
    differs: float | None = None
    beyond_bos: float | None = None
    if sequences_a is not None and sequences_b is not None:
        seq_a = {int(t): list(s) for t, s in zip(a["token_id"].to_list(), sequences_a, strict=True)}
        seq_b = {int(t): list(s) for t, s in zip(b["token_id"].to_list(), sequences_b, strict=True)}
        ids = joined["token_id"].to_list()
        differs = sum(seq_a[t] != seq_b[t] for t in ids) / len(ids)
        if bos_id is not None:
            one_bos = [(_one_leading(seq_a[t], bos_id), _one_leading(seq_b[t], bos_id)) for t in ids]
            beyond_bos = sum(x != y for x, y in one_bos) / len(ids)
    return {
        "n_tokens": joined.height,
        "kendall_tau_b": float(tau.statistic),
        "tau_p_value": float(tau.pvalue),
        "n_extreme": n,
        "top_overlap": len(top_a & top_b),
        "bottom_overlap": len(bottom_a & bottom_b),
        "share_sequence_differs": differs,
        "share_differs_beyond_bos": beyond_bos,
    }


def _one_leading(ids: list[int], bos_id: int) -> list[int]:
    """``ids`` with a leading run of ``bos_id`` collapsed to one."""
    start = 0
    while start + 1 < len(ids) and ids[start] == ids[start + 1] == bos_id:
        start += 1
    return ids[start:]
