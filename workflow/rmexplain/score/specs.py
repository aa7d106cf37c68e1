"""Reward-model specs: one validated dataclass per ``config["reward_models"][name]`` entry.

The backends ``transformers``, ``vllm`` and ``remote`` share this parser, so a key means the same in
all three and a wrong value fails with a message naming ``reward_models.<name>.<key>``.

Key groups (``config/README.md`` documents every key):

- what to load: ``model`` (hub id or local path), ``revision``, ``tokenizer``, ``gguf_file``,
  ``register`` (a module imported first, registering a custom architecture with the Auto classes),
  ``trust_remote_code`` (off unless set);
- how to format a (prompt, response) pair: ``input_format`` = ``chat`` (the tokenizer's chat template, or
  the Jinja ``chat_template`` given here) or ``pair`` (a (question, answer) text pair, for encoder RMs);
  ``system_prompt``; ``max_length``, ``truncation_side``, ``overlong`` (what the scoring stage does with
  an input over ``max_length``: ``truncate`` it, ``skip`` it as a counted null reward, or ``error``);
- how to read the reward: ``read`` (``"logits[:, 0]"``, ``"score"``, ``"rewards[:, 3]"``: an output
  attribute, optionally one column), ``kind`` (``bradley_terry`` or ``multi_objective`` with
  ``dimensions`` naming the columns and ``scalarisation`` = ``{weights: {dim: w}}`` or ``"module:function"``);
- where and how fast: ``device``, ``device_map``, ``dtype``, ``batch_size``, ``max_batch_tokens``,
  ``attn_implementation``, ``num_gpus``; vLLM: ``tensor_parallel_size``, ``gpu_memory_utilization``,
  ``max_num_seqs``, ``engine_kwargs``; remote: ``url``, ``endpoint``, ``api_key_env``, ``concurrency``,
  ``max_retries``, ``retry_backoff_s``, ``timeout_s``, ``send``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rmexplain.score.base import OVERLONG, ScoringError, rm_backends
from rmexplain.settings import ConfigError

INPUT_FORMATS = ("chat", "pair")
KINDS = ("bradley_terry", "multi_objective")
DTYPES = ("auto", "float32", "bfloat16", "float16")
ENDPOINTS = ("classify", "pooling")
SEND_MODES = ("token_ids", "text", "messages")
_READ_RE = re.compile(r"^(?P<attr>[A-Za-z_]\w*)(?:\[\s*:\s*,\s*(?P<index>-?\d+)\s*\])?$")


@dataclass(frozen=True)
class ReadRule:
    """Where the reward sits in the model output: ``outputs.<attr>`` and optionally one column of it."""

    attr: str
    index: int | None

    @classmethod
    def parse(cls, text: str, key: str) -> ReadRule:
        match = _READ_RE.match(text.strip())
        if match is None:
            raise ScoringError(
                f"{key}: {text!r} is not a read rule; use an output attribute with an optional column, "
                "e.g. 'logits[:, 0]', 'score' or 'rewards[:, 2]'"
            )
        index = match.group("index")
        return cls(attr=match.group("attr"), index=None if index is None else int(index))


@dataclass(frozen=True)
class RewardModelSpec:
    """A validated reward-model spec (see the module docstring for the keys)."""

    name: str
    backend: str
    model: str | None = None
    revision: str | None = None
    tokenizer: str | None = None
    gguf_file: str | None = None
    register: str | None = None
    trust_remote_code: bool = False
    input_format: str = "chat"
    chat_template: str | None = None
    system_prompt: str | None = None
    max_length: int | None = None
    truncation_side: str = "right"
    overlong: str = "truncate"
    kind: str = "bradley_terry"
    read: ReadRule = field(default_factory=lambda: ReadRule("logits", 0))
    dimensions: tuple[str, ...] | None = None
    weights: Mapping[str, float] | None = None
    scalarisation_callable: str | None = None
    device: str = "auto"
    device_map: Any = None
    num_gpus: int | None = None
    dtype: str = "auto"
    batch_size: int = 16
    max_batch_tokens: int | None = None
    attn_implementation: str | None = None
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.9
    max_num_seqs: int | None = None
    engine_kwargs: Mapping[str, Any] = field(default_factory=dict)
    url: str | None = None
    endpoint: str = "classify"
    api_key_env: str | None = None
    concurrency: int = 8
    max_retries: int = 4
    retry_backoff_s: float = 0.5
    timeout_s: float = 120.0
    send: str = "token_ids"

    @property
    def key(self) -> str:
        """The config path of this spec, for error messages."""
        return f"reward_models.{self.name}"

    @property
    def tokenizer_source(self) -> str | None:
        """Where the tokenizer comes from: ``tokenizer`` if set, else ``model``."""
        return self.tokenizer or self.model


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ScoringError(message)


def _scalarisation(raw: Any, key: str) -> tuple[Mapping[str, float] | None, str | None]:
    if raw is None:
        return None, None
    if isinstance(raw, str):
        _check(":" in raw, f"{key}.scalarisation: {raw!r} must be 'module:function' or {{weights: ...}}")
        return None, raw
    _check(
        isinstance(raw, Mapping) and set(raw) == {"weights"} and isinstance(raw["weights"], Mapping),
        f"{key}.scalarisation must be 'module:function' or a mapping {{weights: {{dimension: weight}}}}",
    )
    weights = {str(k): float(v) for k, v in raw["weights"].items()}
    _check(bool(weights), f"{key}.scalarisation.weights is empty")
    return weights, None


def _check_choices(values: Mapping[str, Any], key: str) -> None:
    for option, choices in (
        ("input_format", INPUT_FORMATS),
        ("kind", KINDS),
        ("dtype", DTYPES),
        ("overlong", OVERLONG),
        ("truncation_side", ("left", "right")),
        ("endpoint", ENDPOINTS),
        ("send", SEND_MODES),
    ):
        if option in values:
            _check(
                values[option] in choices, f"{key}.{option}: {values[option]!r} is not one of {list(choices)}"
            )
    for option in (
        "batch_size",
        "max_batch_tokens",
        "max_length",
        "tensor_parallel_size",
        "concurrency",
        "num_gpus",
        "max_num_seqs",
    ):
        value = values.get(option)
        if value is not None:
            _check(
                isinstance(value, int) and not isinstance(value, bool) and value >= 1,
                f"{key}.{option}: {value!r} must be a positive integer",
            )


def _check_multi_objective(spec: RewardModelSpec) -> None:
    key = spec.key
    if spec.kind == "bradley_terry":
        _check(
            spec.weights is None and spec.scalarisation_callable is None,
            f"{key}.scalarisation is only for kind: multi_objective",
        )
        return
    _check(
        spec.read.index is None,
        f"{key}.read: {spec.read.attr}[:, {spec.read.index}] selects one column; a multi_objective RM reads "
        f"all dimensions (e.g. read: {spec.read.attr})",
    )
    _check(
        (spec.weights is None) != (spec.scalarisation_callable is None),
        f"{key}.scalarisation is required for kind: multi_objective",
    )
    if spec.weights is not None:
        _check(
            bool(spec.dimensions), f"{key}.dimensions (names of the output columns) is required with weights"
        )
        unknown = sorted(set(spec.weights) - set(spec.dimensions or ()))
        _check(not unknown, f"{key}.scalarisation.weights: {unknown} are not in dimensions {spec.dimensions}")


def _check_backend(spec: RewardModelSpec) -> None:
    """The backend takes a model spec (it declares ``check_model``), and the spec passes that check."""
    key = spec.key
    check_model = getattr(rm_backends.get(spec.backend), "check_model", None)
    _check(check_model is not None, f"{key}.backend: {spec.backend!r} does not take a model spec")
    check_model(spec)
    if spec.input_format == "pair":
        _check(spec.chat_template is None, f"{key}.chat_template is only used with input_format: chat")


def require_model(spec: RewardModelSpec) -> None:
    """``model`` is set (backends that load the RM's weights)."""
    _check(
        bool(spec.model), f"{spec.key}.model (hub id or local path) is required for backend {spec.backend!r}"
    )


def check_model_spec(name: str, spec: Mapping[str, Any]) -> None:
    """The config check of a model backend's spec: ``ConfigError`` naming the key."""

    try:
        parse_spec(name, spec)
    except ScoringError as err:
        raise ConfigError(str(err)) from None


def parse_spec(name: str, raw: Mapping[str, Any] | RewardModelSpec) -> RewardModelSpec:
    """Validate a config dict into a :class:`RewardModelSpec`; errors name ``reward_models.<name>.<key>``."""
    if isinstance(raw, RewardModelSpec):
        return raw
    key = f"reward_models.{name}"
    values = dict(raw)
    known = {f.name for f in dataclasses.fields(RewardModelSpec)} - {
        "name",
        "weights",
        "scalarisation_callable",
    } | {"scalarisation"}
    unknown = sorted(set(values) - known)
    _check(not unknown, f"{key}: unknown key(s) {unknown}; known keys are {sorted(known)}")
    _check_choices(values, key)
    weights, function = _scalarisation(values.pop("scalarisation", None), key)
    read = ReadRule.parse(str(values.pop("read", "logits[:, 0]")), f"{key}.read")
    if "dimensions" in values and values["dimensions"] is not None:
        values["dimensions"] = tuple(str(d) for d in values["dimensions"])
    if values.get("trust_remote_code") is not None:
        _check(
            isinstance(values["trust_remote_code"], bool), f"{key}.trust_remote_code must be true or false"
        )
    spec = RewardModelSpec(name=name, read=read, weights=weights, scalarisation_callable=function, **values)
    _check_backend(spec)
    _check_multi_objective(spec)
    return spec


def as_spec(spec: Mapping[str, Any] | RewardModelSpec, name: str | None = None) -> RewardModelSpec:
    """Accept a parsed spec or a raw config dict (named by ``name``, or by its own ``name`` key)."""
    if isinstance(spec, RewardModelSpec):
        return spec
    values = dict(spec)
    label = name or str(values.pop("name", "rm"))
    values.pop("name", None)
    return parse_spec(label, values)
