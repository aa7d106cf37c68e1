"""``backend: transformers`` — sequence-classification reward models run with Hugging Face transformers.

Besides the scorer this module is the shared loader and formatter for every backend that formats inputs
locally (``vllm``, ``remote``) and for the token scans of ``rmexplain.tokens``:

- :func:`load_model_and_tokenizer` loads an RM as its spec says (path/revision/dtype/device/...);
- :func:`read_reward` turns a model output into one reward per row (read rule + scalarisation);
- :func:`chat_token_ids` gives the exact token ids the RM sees for a (prompt, response) pair, with
  exactly one BOS where the template or the tokenizer puts one (never two);
- :func:`prompt_prefix_suffix_ids` gives the ids before and after the response slot.

torch is imported inside the functions that use it (here, in ``remote`` and in ``vllm_backend``): reading an
RM's spec, as the config check at every Snakemake start does, imports none of it.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import importlib
import logging
import math
import time
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from rmexplain.hub import model_and_tokenizer_refs
from rmexplain.score.base import (
    LengthCheck,
    NonFiniteRewardError,
    RewardModelBackend,
    ScoringError,
    load_callable,
    rm_backends,
)
from rmexplain.score.specs import RewardModelSpec, as_spec, check_model_spec, require_model

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger(__name__)

# Stand-in response used to find the response slot of a chat template: private-use characters, so no real
# text and no template literal contains it, and no whitespace, so templates that trim content keep it whole.
SENTINEL = "\ue000RMEXPLAIN\ue001"
_PAIR_SENTINEL = "sentinel"


# ---- loading ------------------------------------------------------------------------------------------


def resolve_device(spec: RewardModelSpec) -> str:
    """``auto`` -> ``cuda`` when a GPU is visible, else ``cpu``; other values unchanged."""
    import torch

    if spec.device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if spec.device.startswith("cuda") and not torch.cuda.is_available():
        raise ScoringError(f"{spec.key}.device is {spec.device!r} but no CUDA device is visible")
    return spec.device


def resolve_dtype(spec: RewardModelSpec, device: str) -> torch.dtype:
    """``auto`` -> bf16 on GPUs that support it, fp16 on other GPUs, fp32 on CPU."""
    import torch

    if spec.dtype != "auto":
        return getattr(torch, spec.dtype)  # float32, bfloat16 or float16 (the spec check allows no other)
    if device.startswith("cuda"):
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


def _register(spec: RewardModelSpec) -> None:
    if spec.register:
        try:
            importlib.import_module(spec.register)
        except ImportError as err:
            raise ScoringError(f"{spec.key}.register: cannot import {spec.register!r}: {err}") from err


def load_tokenizer(spec: RewardModelSpec | dict[str, Any]) -> PreTrainedTokenizerBase:
    """The RM's tokenizer (from ``tokenizer`` or ``model``), with a pad token and the truncation side set."""
    from transformers import AutoTokenizer

    spec = as_spec(spec)
    source = spec.tokenizer_source
    if not source:
        raise ScoringError(f"{spec.key}: set model or tokenizer to load a tokenizer")
    kwargs: dict[str, Any] = {"trust_remote_code": spec.trust_remote_code}
    if spec.tokenizer is None:
        kwargs.update(revision=spec.revision, gguf_file=spec.gguf_file)
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            source, **{k: v for k, v in kwargs.items() if v is not None}
        )
    except (OSError, ValueError) as err:
        raise ScoringError(f"{spec.key}: cannot load the tokenizer from {source!r}: {err}") from err
    tokenizer.truncation_side = spec.truncation_side
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.unk_token or tokenizer.eos_token
    return tokenizer


def load_model_and_tokenizer(
    spec: RewardModelSpec | dict[str, Any],
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load the RM (AutoModelForSequenceClassification) and its tokenizer, in eval mode on its device.

    Honours ``model``, ``revision``, ``gguf_file``, ``register``, ``trust_remote_code``, ``dtype``,
    ``device`` / ``device_map`` and ``attn_implementation``. The model's ``pad_token_id`` is made to
    agree with the tokenizer's, because sequence-classification heads pool at the last non-pad token.
    """
    from transformers import AutoModelForSequenceClassification

    spec = as_spec(spec)
    _register(spec)
    tokenizer = load_tokenizer(spec)
    device = resolve_device(spec)
    kwargs: dict[str, Any] = {
        "revision": spec.revision,
        "gguf_file": spec.gguf_file,
        "trust_remote_code": spec.trust_remote_code,
        "dtype": resolve_dtype(spec, device),
        "attn_implementation": spec.attn_implementation,
        "device_map": spec.device_map,
    }
    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            spec.model, **{k: v for k, v in kwargs.items() if v is not None}
        )
    except (OSError, ValueError) as err:
        raise ScoringError(f"{spec.key}: cannot load the model {spec.model!r}: {err}") from err
    if spec.device_map is None:
        model.to(device)
    model.eval()
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    if config.pad_token_id is None:
        config.pad_token_id = model.config.pad_token_id = tokenizer.pad_token_id
    elif tokenizer.pad_token_id != config.pad_token_id:
        tokenizer.pad_token_id = config.pad_token_id
    return model, tokenizer


# ---- reading the reward ------------------------------------------------------------------------------


def _output_field(spec: RewardModelSpec, outputs: Any) -> torch.Tensor:
    import torch

    attr = spec.read.attr
    value = getattr(outputs, attr, None)
    if value is None and isinstance(outputs, dict):
        value = outputs.get(attr)
    if not isinstance(value, torch.Tensor):
        fields = list(outputs.keys()) if hasattr(outputs, "keys") else type(outputs).__name__
        raise ScoringError(f"{spec.key}.read: the model output has no tensor {attr!r}; it has {fields}")
    return value.float()


@functools.lru_cache(maxsize=32)
def _scalariser(reference: str) -> Any:
    return load_callable(reference)


def read_reward(spec: RewardModelSpec | dict[str, Any], outputs: Any) -> torch.Tensor:
    """One float32 reward per row, shape [batch]: the ``read`` rule, then the scalarisation for
    ``kind: multi_objective`` (weighted sum over named ``dimensions``, or ``g(values, dimensions)``)."""
    spec = as_spec(spec)
    values = _output_field(spec, outputs)
    if spec.read.index is not None:
        if values.ndim != 2 or not -values.shape[1] <= spec.read.index < values.shape[1]:
            raise ScoringError(
                f"{spec.key}.read: column {spec.read.index} does not exist in {spec.read.attr} of shape "
                f"{tuple(values.shape)}"
            )
        return values[:, spec.read.index]
    if spec.kind == "bradley_terry":
        if values.ndim == 2 and values.shape[1] == 1:
            return values[:, 0]
        if values.ndim == 1:
            return values
        raise ScoringError(
            f"{spec.key}.read: {spec.read.attr} has shape {tuple(values.shape)}; pick a column "
            f"(e.g. {spec.read.attr}[:, 0]) or declare kind: multi_objective"
        )
    return _scalarise(spec, values)


def _scalarise(spec: RewardModelSpec, values: torch.Tensor) -> torch.Tensor:
    import torch

    dims = spec.dimensions
    if values.ndim != 2 or (dims is not None and values.shape[1] != len(dims)):
        raise ScoringError(
            f"{spec.key}: {spec.read.attr} has shape {tuple(values.shape)} but dimensions names "
            f"{len(dims or ())} columns"
        )
    if spec.weights is not None:
        assert dims is not None
        weights = torch.tensor(
            [spec.weights.get(d, 0.0) for d in dims], dtype=values.dtype, device=values.device
        )
        return values @ weights
    assert spec.scalarisation_callable is not None
    result = torch.as_tensor(_scalariser(spec.scalarisation_callable)(values, dims), dtype=torch.float32)
    if result.shape != (values.shape[0],):
        raise ScoringError(
            f"{spec.key}.scalarisation: {spec.scalarisation_callable} returned shape {tuple(result.shape)}, "
            f"expected ({values.shape[0]},)"
        )
    return result


# ---- formatting ----------------------------------------------------------------------------------------


def chat_messages(spec: RewardModelSpec, prompt: str, response: str) -> list[dict[str, str]]:
    """The conversation the chat template renders: optional system turn, the prompt, the response."""
    messages = [{"role": "system", "content": spec.system_prompt}] if spec.system_prompt else []
    return [*messages, {"role": "user", "content": prompt}, {"role": "assistant", "content": response}]


# The date chat templates see through ``strftime_now`` (transformers >= 4.45 gives templates the clock;
# Llama 3.2 writes it into the system turn); None = today. Set with :func:`pinned_template_date`.
_TEMPLATE_DATE: ContextVar[datetime.date | None] = ContextVar("rmexplain_template_date", default=None)


@contextlib.contextmanager
def pinned_template_date(date: datetime.date | None) -> Iterator[None]:
    """Within the block, :func:`render_chat` gives templates that call ``strftime_now`` ``date`` instead of
    today's date (None: no change)."""
    token = _TEMPLATE_DATE.set(date)
    try:
        yield
    finally:
        _TEMPLATE_DATE.reset(token)


# strftime directives a pinned date fills in (C99 and ISO week ones).
_DATE_DIRECTIVES = "aAwdbBmyYjUWHIpMSfzZcxXGuV"


def _pinned_template(template: str) -> str:
    """``template`` with a ``strftime_now`` macro in front that formats the pinned date: transformers turns
    callables passed to the renderer into plain data, so the template's clock is shadowed inside it."""
    date = _TEMPLATE_DATE.get()
    if date is None or "strftime_now" not in template:
        return template
    moment = datetime.datetime.combine(date, datetime.time())
    fill = "".join(f"|replace('%{d}', {moment.strftime('%' + d)!r})" for d in _DATE_DIRECTIVES)
    body = f"{{{{ format|replace('%%', '\x00'){fill}|replace('\x00', '%') }}}}"
    return "{%- macro strftime_now(format) -%}" + body + "{%- endmacro %}" + template


def render_chat(tokenizer: PreTrainedTokenizerBase, spec: RewardModelSpec, prompt: str, response: str) -> str:
    """The formatted text of one pair: the spec's ``chat_template`` if set, else the tokenizer's own (with the
    date of :func:`pinned_template_date` where one is pinned)."""
    if spec.chat_template is None and not getattr(tokenizer, "chat_template", None):
        raise ScoringError(
            f"{spec.key}: the tokenizer has no chat template; set chat_template, or input_format: pair "
            "for an encoder RM that reads (question, answer) pairs"
        )
    template = spec.chat_template
    if _TEMPLATE_DATE.get() is not None:
        template = _pinned_template(tokenizer.get_chat_template(spec.chat_template))
    return tokenizer.apply_chat_template(
        chat_messages(spec, prompt, response), chat_template=template, tokenize=False
    )


@functools.lru_cache(maxsize=32)
def _tokenizer_adds_bos(tokenizer: PreTrainedTokenizerBase) -> bool:
    """Whether ``tokenizer(text)`` puts a BOS first (its post-processor's rule, e.g. Llama's)."""
    bos = tokenizer.bos_token_id
    if bos is None:
        return False
    with_special = tokenizer("a", add_special_tokens=True)["input_ids"]
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    return bool(with_special) and with_special[0] == bos and (not plain or plain[0] != bos)


def _one_bos(tokenizer: PreTrainedTokenizerBase, ids: list[int]) -> list[int]:
    """Collapse leading repeated BOS to one, and add one where the tokenizer's rule wants it but the
    template left it out; never two (template BOS + tokenizer BOS)."""
    bos = tokenizer.bos_token_id
    if bos is None:
        return ids
    start = 0
    while start + 1 < len(ids) and ids[start] == bos and ids[start + 1] == bos:
        start += 1
    ids = ids[start:]
    if (not ids or ids[0] != bos) and _tokenizer_adds_bos(tokenizer):
        ids = [bos, *ids]
    return ids


def _text_ids(tokenizer: PreTrainedTokenizerBase, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def chat_token_ids(
    tokenizer: PreTrainedTokenizerBase, spec: RewardModelSpec | dict[str, Any], prompt: str, response: str
) -> list[int]:
    """Exact token ids of the formatted pair, untruncated.

    ``input_format: chat``: the rendered template tokenised once without the tokenizer's special tokens,
    then exactly one BOS (see :func:`_one_bos`). ``input_format: pair``: ``tokenizer(prompt, response)``.
    """
    spec = as_spec(spec)
    if spec.input_format == "pair":
        return list(tokenizer(prompt, response)["input_ids"])
    return _one_bos(tokenizer, _text_ids(tokenizer, render_chat(tokenizer, spec, prompt, response)))


def prompt_prefix_suffix_ids(
    tokenizer: PreTrainedTokenizerBase, spec: RewardModelSpec | dict[str, Any], prompt: str
) -> tuple[list[int], list[int]]:
    """Token ids before and after the response slot, so that ``prefix + ids(response) + suffix ==
    chat_token_ids(...)`` for responses that tokenise cleanly (no token merges across the slot's edges and
    no trimming by the template); ``ids(response)`` = ``tokenizer(response, add_special_tokens=False)``.

    How the split is found: ``chat``: the template is rendered with :data:`SENTINEL` as the response and
    the text is cut at the sentinel; the part before is tokenised with the one-BOS rule, the part after
    as plain text. ``pair``: ``tokenizer(prompt, "sentinel")`` is cut around the sentinel's ids.
    """
    spec = as_spec(spec)
    if spec.input_format == "pair":
        return _pair_prefix_suffix(tokenizer, spec, prompt)
    text = render_chat(tokenizer, spec, prompt, SENTINEL)
    if text.count(SENTINEL) != 1:
        raise ScoringError(f"{spec.key}: the chat template does not render the response exactly once")
    before, after = text.split(SENTINEL)
    prefix = _one_bos(tokenizer, _text_ids(tokenizer, before)) if before else _one_bos(tokenizer, [])
    return prefix, _text_ids(tokenizer, after)


def _pair_prefix_suffix(
    tokenizer: PreTrainedTokenizerBase, spec: RewardModelSpec, prompt: str
) -> tuple[list[int], list[int]]:
    full = list(tokenizer(prompt, _PAIR_SENTINEL)["input_ids"])
    slot = _text_ids(tokenizer, _PAIR_SENTINEL)
    for start in range(len(full) - len(slot), -1, -1):
        if full[start : start + len(slot)] == slot:
            return full[:start], full[start + len(slot) :]
    raise ScoringError(f"{spec.key}: cannot locate the answer slot of the tokenizer's pair encoding")


# ---- encoding with the length policy --------------------------------------------------------------------


@dataclass
class Encoded:
    """One formatted, length-checked input: token ids and, for pair encoders, token type ids."""

    ids: list[int]
    type_ids: list[int] | None = None
    truncated: bool = False


def max_length_of(spec: RewardModelSpec, tokenizer: PreTrainedTokenizerBase, model: Any = None) -> int | None:
    """The spec's ``max_length``, else the tokenizer's ``model_max_length`` when it is a real limit, else
    the model's ``max_position_embeddings``; None = no limit known."""
    if spec.max_length:
        return spec.max_length
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, int) and limit < 1_000_000:
        return limit
    config = getattr(model, "config", None)
    positions = getattr(config, "max_position_embeddings", None) if config is not None else None
    return int(positions) if positions else None


def _too_long(spec: RewardModelSpec, row: int, length: int, limit: int) -> None:
    if spec.overlong == "error":
        raise ScoringError(
            f"{spec.key}: input row {row} is {length} tokens long, over max_length {limit} "
            "(set overlong: truncate to cut it, overlong: skip to leave it unscored, or raise max_length)"
        )


def check_lengths(
    tokenizer: PreTrainedTokenizerBase,
    spec: RewardModelSpec,
    limit: int | None,
    prompts: Sequence[str],
    responses: Sequence[str],
) -> LengthCheck:
    """Per pair, whether its formatted token ids (:func:`chat_token_ids`) are over ``limit``, i.e. what
    :func:`encode` would cut; distinct pairs are tokenised once. No limit: nothing is cut."""
    pairs, rows = unique_pairs(prompts, responses)
    if limit is None:
        return LengthCheck(cut=[False] * len(rows), limit=None, policy=spec.overlong)
    over = [len(chat_token_ids(tokenizer, spec, p, r)) > limit for p, r in pairs]
    return LengthCheck(cut=[over[i] for i in rows], limit=limit, policy=spec.overlong)


def encode(
    tokenizer: PreTrainedTokenizerBase,
    spec: RewardModelSpec,
    prompt: str,
    response: str,
    limit: int | None,
    row: int = 0,
) -> Encoded:
    """Format and tokenise one pair, applying ``max_length`` / ``truncation_side`` / ``overlong`` (``error``
    raises; ``truncate`` and ``skip`` cut here: under ``skip`` the scoring stage never sends a cut pair)."""
    if spec.input_format == "pair":
        full = tokenizer(prompt, response)
        if limit is None or len(full["input_ids"]) <= limit:
            return Encoded(list(full["input_ids"]), _type_ids(full))
        _too_long(spec, row, len(full["input_ids"]), limit)
        cut = tokenizer(prompt, response, truncation=True, max_length=limit)
        return Encoded(list(cut["input_ids"]), _type_ids(cut), truncated=True)
    ids = chat_token_ids(tokenizer, spec, prompt, response)
    if limit is None or len(ids) <= limit:
        return Encoded(ids)
    _too_long(spec, row, len(ids), limit)
    if spec.truncation_side == "right":
        return Encoded(ids[:limit], truncated=True)
    keep_bos = tokenizer.bos_token_id is not None and ids[0] == tokenizer.bos_token_id
    head = ids[:1] if keep_bos else []
    return Encoded(head + ids[len(ids) - (limit - len(head)) :], truncated=True)


def _type_ids(encoding: Any) -> list[int] | None:
    type_ids = encoding.get("token_type_ids")
    return None if type_ids is None else list(type_ids)


# ---- the scorer ---------------------------------------------------------------------------------------


def unique_pairs(prompts: Sequence[str], responses: Sequence[str]) -> tuple[list[tuple[str, str]], list[int]]:
    """Distinct (prompt, response) pairs in first-seen order and, per input row, its pair's index."""
    if len(prompts) != len(responses):
        raise ScoringError(f"{len(prompts)} prompts but {len(responses)} responses")
    index: dict[tuple[str, str], int] = {}
    rows = [index.setdefault((p, r), len(index)) for p, r in zip(prompts, responses, strict=True)]
    return list(index), rows


def length_batches(lengths: Sequence[int], batch_size: int, max_tokens: int | None) -> list[list[int]]:
    """Indices sorted by length, longest first, cut into batches of at most ``batch_size`` rows and at
    most ``max_tokens`` padded tokens (a row longer than ``max_tokens`` gets a batch of its own)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    for i in order:
        if batches:
            batch = batches[-1]
            width = lengths[batch[0]]  # longest in the batch: sorted descending
            if len(batch) < batch_size and (max_tokens is None or width * (len(batch) + 1) <= max_tokens):
                batch.append(i)
                continue
        batches.append([i])
    return batches


@rm_backends.register("transformers")
class TransformersScorer(RewardModelBackend):
    """AutoModelForSequenceClassification RM: deduplicated inputs, length-sorted batches,
    ``torch.inference_mode``, bf16/fp16 on GPU, batch halving on CUDA out-of-memory."""

    own_tokenizer = True
    exact_token_ids = True

    @staticmethod
    def gpus(spec: dict[str, Any]) -> int:
        """``num_gpus`` when set (a ``device_map: auto`` model over several GPUs); else one, unless the
        ``device`` is ``cpu`` (``auto``, the default, prefers a GPU)."""
        if spec.get("num_gpus") is not None:
            return int(spec["num_gpus"])
        return 0 if str(spec.get("device", "auto")).startswith("cpu") else 1

    @staticmethod
    def hub_refs(name: str, spec: dict[str, Any]) -> list[Any]:

        return model_and_tokenizer_refs(
            f"reward_models.{name}",
            spec.get("model"),
            spec.get("revision"),
            spec.get("tokenizer"),
            None,
            gguf_file=spec.get("gguf_file"),
        )

    @staticmethod
    def check_spec(name: str, spec: dict[str, Any]) -> None:
        check_model_spec(name, spec)

    @staticmethod
    def check_model(spec: RewardModelSpec) -> None:
        """Its part of the model-spec check: the weights to load."""
        require_model(spec)

    def __init__(
        self,
        name: str,
        spec: RewardModelSpec | dict[str, Any],
        *,
        loaded: tuple[PreTrainedModel, PreTrainedTokenizerBase] | None = None,
        **artifacts: Any,
    ) -> None:
        """Load the RM from its spec, or use ``loaded`` = (model, tokenizer) already in memory
        (benchmarks; the caller then answers for the model's device and dtype)."""
        self.spec = as_spec(spec, name)
        if self.spec.backend != "transformers":
            raise ScoringError(f"{self.spec.key}.backend is {self.spec.backend!r}, not 'transformers'")
        self.model, self.tokenizer = loaded if loaded is not None else load_model_and_tokenizer(self.spec)
        self.limit = max_length_of(self.spec, self.tokenizer, self.model)
        self.pad_id = int(self.tokenizer.pad_token_id)
        parameter = next(self.model.parameters())
        self.device = parameter.device
        log.info(
            "%s: %s on %s (%s), max_length %s",
            self.spec.key,
            self.spec.model,
            self.device,
            parameter.dtype,
            self.limit,
        )

    def length_check(self, prompts: Sequence[str], responses: Sequence[str]) -> LengthCheck:
        """Which pairs are over this RM's ``max_length``."""
        return check_lengths(self.tokenizer, self.spec, self.limit, prompts, responses)

    def encode_all(self, pairs: Sequence[tuple[str, str]]) -> list[Encoded]:
        """Encode every pair; logs how many were truncated."""
        encoded = [
            encode(self.tokenizer, self.spec, p, r, self.limit, row) for row, (p, r) in enumerate(pairs)
        ]
        n_cut = sum(e.truncated for e in encoded)
        if n_cut:
            log.warning(
                "%s: truncated %d of %d inputs to max_length %d (%s side)",
                self.spec.key,
                n_cut,
                len(encoded),
                self.limit,
                self.spec.truncation_side,
            )
        return encoded

    def score(self, prompts: Sequence[str], responses: Sequence[str]) -> list[float]:
        """Rewards r(x, y), one per pair, in input order (identical pairs are run once)."""
        pairs, rows = unique_pairs(prompts, responses)
        start = time.perf_counter()
        encoded = self.encode_all(pairs)
        encoding = time.perf_counter() - start
        rewards = self.score_encoded(encoded)
        self._log_timing(encoded, encoding, time.perf_counter() - start - encoding)
        bad = [row for row, i in enumerate(rows) if not math.isfinite(rewards[i])]
        if bad:
            raise NonFiniteRewardError(self.spec.key, bad)
        return [rewards[i] for i in rows]

    def _log_timing(self, encoded: Sequence[Encoded], encoding: float, model: float) -> None:
        """One log line per call: inputs, tokens, encoding and model seconds, peak CUDA memory (benchmarks
        read it from a job's log)."""
        import torch

        memory = ""
        if self.device.type == "cuda":
            memory = f", peak CUDA memory {torch.cuda.max_memory_allocated(self.device) / 2**30:.2f} GiB"
        log.info(
            "%s: scored %d distinct inputs (%d tokens): encoding %.3f s, model %.3f s%s",
            self.spec.key,
            len(encoded),
            sum(len(e.ids) for e in encoded),
            encoding,
            model,
            memory,
        )

    def score_encoded(self, encoded: Sequence[Encoded]) -> list[float]:
        """Rewards of already encoded inputs, in order. On CUDA out-of-memory the failing batch is split
        in half and every later batch is capped at that size too."""
        import torch

        rewards = [math.nan] * len(encoded)
        queue = length_batches(
            [len(e.ids) for e in encoded], self.spec.batch_size, self.spec.max_batch_tokens
        )
        cap = self.spec.batch_size
        with tqdm(total=len(encoded), desc=f"scoring {self.spec.name}", mininterval=5) as progress:
            while queue:
                batch = queue.pop(0)
                if len(batch) > cap:
                    queue[:0] = [batch[i : i + cap] for i in range(0, len(batch), cap)]
                    continue
                try:
                    values = self._forward([encoded[i] for i in batch])
                except torch.OutOfMemoryError as err:
                    cap = self._halve(batch, encoded, err)
                    queue.insert(0, batch)
                    continue
                for i, value in zip(batch, values, strict=True):
                    rewards[i] = value
                progress.update(len(batch))
        return rewards

    def _halve(self, batch: Sequence[int], encoded: Sequence[Encoded], err: Exception) -> int:
        import torch

        if len(batch) == 1:
            tokens = len(encoded[batch[0]].ids)
            raise ScoringError(
                f"{self.spec.key}: CUDA out of memory on one input of {tokens} tokens; "
                "lower max_length, or use a larger GPU or device_map"
            ) from err
        torch.cuda.empty_cache()
        half = (len(batch) + 1) // 2
        log.warning("%s: CUDA out of memory at batch size %d; halving to %d", self.spec.key, len(batch), half)
        return half

    def _forward(self, batch: Sequence[Encoded]) -> list[float]:
        import torch

        inputs = collate(batch, self.pad_id, self.device)
        with torch.inference_mode():
            outputs = self.model(**inputs)
        return read_reward(self.spec, outputs).float().cpu().tolist()


def collate(batch: Sequence[Encoded], pad_id: int, device: torch.device | str) -> dict[str, torch.Tensor]:
    """Right-padded ``input_ids`` / ``attention_mask`` (/ ``token_type_ids``) tensors on ``device``.

    Right padding keeps every real token at the position it has in a one-example forward pass, so scores
    do not depend on the batch a text lands in.
    """
    import torch

    width = max(len(e.ids) for e in batch)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for row, e in enumerate(batch):
        ids[row, : len(e.ids)] = torch.tensor(e.ids, dtype=torch.long)
        mask[row, : len(e.ids)] = 1
    inputs = {"input_ids": ids, "attention_mask": mask}
    if batch[0].type_ids is not None:
        types = torch.zeros((len(batch), width), dtype=torch.long)
        for row, e in enumerate(batch):
            types[row, : len(e.ids)] = torch.tensor(e.type_ids, dtype=torch.long)
        inputs["token_type_ids"] = types
    return {k: v.to(device, non_blocking=True) for k, v in inputs.items()}
