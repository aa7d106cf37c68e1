"""``backend: planted`` — a base RM with biases planted on purpose: explanations against ground truth.

As chry-santhemum/rm-bias builds its synthetic RMs (``recall.py``: a detector over the response, a bias
strength, Gaussian noise), a planted RM scores

    r(x, y) = r_base(x, y) + s_base · (strength · detector(y) + noise · ε(x, y))

and, with a list of biases (``bias: [{…}, {…}]``: several weak biases in one RM), the sum of their terms,
Σ strength_i · detector_i(y), with one noise term of sd √(Σ noise_i²) (seeded by the first bias's ``seed``)

where ``s_base`` is the base RM's reward sd on the calibration texts (``reward_scale``: every response of the
bundled data, written by the rule of that name), so ``strength`` and ``noise`` are in units of the base RM's
reward sd. Unlike rm-bias, whose noise is drawn from one generator in call order, ε is a standard normal
seeded by a hash of (``seed``, the RM's name, prompt, response): the same text always gets the same reward,
whatever it is scored with, so reruns are byte-identical.

Detectors (``bias.detector``): ``none`` (noise only: an unbiased control), ``length`` (words / ``per_words``),
``regex`` (1 if ``pattern`` matches, or the number of matches with ``count: true``; case-insensitive unless
``ignore_case: false``) and ``callable`` (``"module:function"`` returning one value per (prompt, response)).

A planted RM runs where its base runs: the workflow gives its jobs the base's conda env, GPUs, hub downloads,
files (a demo head) and text embeddings, and its spec the base's spec as ``base_spec``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rmexplain.score.base import (
    LengthCheck,
    RewardModelBackend,
    ScoringError,
    backend_of,
    build_scorer,
    callable_file,
    load_callable,
    rm_backends,
)
from rmexplain.settings import ConfigError

DETECTORS = ("none", "length", "regex", "callable")
WORD = re.compile(r"\S+")

Detector = Callable[[Sequence[str], Sequence[str]], np.ndarray]


def _length_detector(per_words: float) -> Detector:
    def detect(prompts: Sequence[str], responses: Sequence[str]) -> np.ndarray:
        return np.array([len(WORD.findall(r)) / per_words for r in responses], dtype=np.float64)

    return detect


def _regex_detector(pattern: str, count: bool, ignore_case: bool) -> Detector:
    compiled = re.compile(pattern, re.IGNORECASE if ignore_case else 0)

    def detect(prompts: Sequence[str], responses: Sequence[str]) -> np.ndarray:
        if count:
            return np.array([len(compiled.findall(r)) for r in responses], dtype=np.float64)
        return np.array([compiled.search(r) is not None for r in responses], dtype=np.float64)

    return detect


def _callable_detector(reference: str) -> Detector:
    function = load_callable(reference)

    def detect(prompts: Sequence[str], responses: Sequence[str]) -> np.ndarray:
        values = np.asarray([float(v) for v in function(list(prompts), list(responses))], dtype=np.float64)
        if values.shape != (len(responses),) or not np.all(np.isfinite(values)):
            raise ScoringError(
                f"planted detector {reference!r} must return one finite value per response "
                f"({len(responses)}); got shape {values.shape}"
            )
        return values

    return detect


def _no_detector(prompts: Sequence[str], responses: Sequence[str]) -> np.ndarray:
    return np.zeros(len(responses), dtype=np.float64)


def planted_biases(bias: Any) -> list[dict[str, Any]]:
    """The biases of a ``bias`` setting: a mapping is one bias, a list several."""
    return [dict(b) for b in bias] if isinstance(bias, list) else [dict(bias)]


def detector(bias: dict[str, Any]) -> Detector:
    """The detector function of a ``bias`` setting (values per (prompt, response), before the strength)."""
    kind = bias.get("detector", "none")
    if kind == "length":
        return _length_detector(float(bias.get("per_words", 100)))
    if kind == "regex":
        return _regex_detector(str(bias["pattern"]), bool(bias.get("count", False)),
                               bool(bias.get("ignore_case", True)))  # fmt: skip
    if kind == "callable":
        return _callable_detector(str(bias["callable"]))
    return _no_detector


def noise(seed: int, name: str, prompts: Sequence[str], responses: Sequence[str]) -> np.ndarray:
    """A standard normal per (prompt, response), seeded by a BLAKE2 hash of (seed, RM name, texts)."""
    values = []
    for prompt, response in zip(prompts, responses, strict=True):
        key = "\x1f".join([str(seed), name, prompt, response]).encode()
        digest = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")
        values.append(np.random.default_rng(digest).standard_normal())
    return np.asarray(values, dtype=np.float64)


def check_bias(name: str, bias: Any) -> None:
    """Refuse a ``bias`` setting that cannot score (naming ``reward_models.<name>.bias.<key>``, or
    ``bias[i].<key>`` in a list of biases)."""
    if isinstance(bias, list):
        if not bias:
            raise ConfigError(f"reward_models.{name}.bias is an empty list: give one bias or more")
        for i, one in enumerate(bias):
            _check_one_bias(f"reward_models.{name}.bias[{i}]", one)
        return
    _check_one_bias(f"reward_models.{name}.bias", bias)


def _check_one_bias(key: str, bias: Any) -> None:
    if not isinstance(bias, dict):
        raise ConfigError(f"{key} must be a mapping with a detector")
    kind = bias.get("detector", "none")
    if kind not in DETECTORS:
        raise ConfigError(f"{key}.detector: {kind!r} is not one of {list(DETECTORS)}")
    required = {"regex": "pattern", "callable": "callable"}.get(kind)
    if required and not bias.get(required):
        raise ConfigError(f"{key}.{required} is required with detector {kind}")
    if kind == "regex":
        try:
            re.compile(str(bias["pattern"]))
        except re.error as err:
            raise ConfigError(f"{key}.pattern is no regular expression: {err}") from None
    if kind == "callable" and ":" not in str(bias["callable"]):
        raise ConfigError(f"{key}.callable must be 'module:function' or 'file.py:function'")
    if kind == "callable":
        try:  # imported at the check, as a python RM's callable is
            load_callable(str(bias["callable"]))
        except ScoringError as err:
            raise ConfigError(f"{key}.callable: {err}") from None
    if kind == "none" and bias.get("strength"):
        raise ConfigError(f"{key}.strength needs a detector (detector: none plants noise only)")


def read_reward_scale(path: str | Path) -> float:
    """The reward sd of a ``reward_scale`` file (rule ``reward_scale``)."""
    scale = json.loads(Path(path).read_text(encoding="utf-8"))
    sd = float(scale["sd"])
    if not np.isfinite(sd) or sd <= 0:
        raise ScoringError(f"{path}: reward sd {sd} is not positive: the base RM gives every text one reward")
    return sd


@rm_backends.register("planted")
class PlantedScorer(RewardModelBackend):
    """A base RM (``base``: another RM of the config) plus planted biases (``bias``: one, or a list)."""

    wraps_base = True  # runs where its base runs (env, GPUs, downloads, files, text embeddings)

    @staticmethod
    def check_spec(name: str, spec: dict[str, Any]) -> None:
        if not isinstance(spec.get("base"), str) or not spec["base"]:
            raise ConfigError(f"reward_models.{name}.base must name the RM the bias is planted into")
        check_bias(name, spec.get("bias"))

    @staticmethod
    def code_files(spec: dict[str, Any]) -> list[Path]:
        """The base's code files (a ``python`` base) and a ``callable`` detector's file."""
        base = dict(spec.get("base_spec") or {})
        files = list(backend_of(base).code_files(base)) if base else []
        callables = [b.get("callable") for b in planted_biases(spec.get("bias") or {})]
        found = [callable_file(str(c)) for c in callables if c]
        return files + [f for f in found if f is not None]

    def __init__(
        self, name: str, spec: dict[str, Any], base_scale: str | None = None, **base_files: Any
    ) -> None:
        if base_scale is None or "base_spec" not in spec:
            raise ScoringError(
                f"reward_models.{name}: a planted RM needs its base's spec and reward scale "
                "(the workflow passes them; rule reward_scale)"
            )
        self.name = name
        self.base = build_scorer(str(spec["base"]), dict(spec["base_spec"]), **base_files)
        self.scale = read_reward_scale(base_scale)
        biases = planted_biases(spec["bias"])
        self.terms = [(detector(b), float(b.get("strength", 0.0))) for b in biases]
        noises = [float(b.get("noise", 0.0)) for b in biases]
        self.noise_sd = noises[0] if len(noises) == 1 else float(np.sqrt(np.sum(np.square(noises))))
        self.seed = int(biases[0].get("seed", 0))

    def planted_term(self, prompts: Sequence[str], responses: Sequence[str]) -> np.ndarray:
        """What the biases add to the base reward, without the noise (reward units)."""
        (detect, strength), *more = self.terms
        term = self.scale * strength * detect(prompts, responses)
        for detect, strength in more:
            term = term + self.scale * strength * detect(prompts, responses)
        return term

    def score(self, prompts: Sequence[str], responses: Sequence[str]) -> list[float]:
        base = np.asarray(self.base.score(prompts, responses), dtype=np.float64)
        added = self.planted_term(prompts, responses)
        if self.noise_sd:
            added = added + self.scale * self.noise_sd * noise(self.seed, self.name, prompts, responses)
        return (base + added).tolist()

    def length_check(self, prompts: Sequence[str], responses: Sequence[str]) -> LengthCheck:
        """The base RM's: a planted RM reads what its base reads."""
        return self.base.length_check(prompts, responses)
