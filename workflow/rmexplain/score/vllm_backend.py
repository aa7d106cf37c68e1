"""``backend: vllm`` — decoder reward models served in-process by vLLM's pooling runner.

Written against vLLM 0.16.0 (pinned in ``envs/vllm.yaml``): ``LLM(model, runner="pooling", ...)`` and
``LLM.classify(prompts, pooling_params=PoolingParams(use_activation=False))``, whose
``ClassificationRequestOutput.outputs.probs`` then holds the raw logits (no sigmoid/softmax), which
``read`` / ``scalarisation`` turn into the reward exactly as in the transformers backend.

Inputs are formatted here, not by vLLM: the same :func:`rmexplain.score.hf.encode` produces the token ids
(chat template, exactly one BOS, ``max_length`` policy), and vLLM receives them as
``{"prompt_token_ids": [...]}``, so both backends score the same tokens. vLLM's classification pooler
takes the last token's hidden state, as HF's ``*ForSequenceClassification`` heads do for unpadded input.
DeBERTa and other encoder RMs (``input_format: pair``) are refused: use ``backend: transformers``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

from rmexplain.hub import model_and_tokenizer_refs
from rmexplain.score.base import (
    LengthCheck,
    NonFiniteRewardError,
    RewardModelBackend,
    ScoringError,
    rm_backends,
)
from rmexplain.score.hf import (
    Encoded,
    check_lengths,
    encode,
    load_tokenizer,
    max_length_of,
    read_reward,
    unique_pairs,
)
from rmexplain.score.specs import RewardModelSpec, as_spec, check_model_spec, require_model

log = logging.getLogger(__name__)
VLLM_VERSION = "0.16.0"


def check_vllm_spec(spec: RewardModelSpec) -> None:
    """Refuse what vLLM cannot serve, with the key to change."""
    if spec.input_format == "pair":
        raise ScoringError(
            f"{spec.key}: vLLM does not serve encoder RMs read as (question, answer) pairs (e.g. DeBERTa); "
            "use backend: transformers"
        )
    if spec.read.attr != "logits":
        raise ScoringError(
            f"{spec.key}.read: vLLM returns the classifier logits only; read must be 'logits' or "
            f"'logits[:, i]', not {spec.read.attr!r}"
        )
    if spec.gguf_file or spec.register:
        raise ScoringError(f"{spec.key}: gguf_file and register are only supported by backend: transformers")


def engine_arguments(spec: RewardModelSpec) -> dict[str, Any]:
    """Keyword arguments for ``vllm.LLM`` from the spec (``engine_kwargs`` passed through last)."""
    arguments: dict[str, Any] = {
        "model": spec.model,
        "runner": "pooling",
        "revision": spec.revision,
        "tokenizer": spec.tokenizer,
        "trust_remote_code": spec.trust_remote_code,
        "dtype": spec.dtype,
        "tensor_parallel_size": spec.tensor_parallel_size,
        "gpu_memory_utilization": spec.gpu_memory_utilization,
        "max_model_len": spec.max_length,
        "max_num_seqs": spec.max_num_seqs,
    }
    arguments = {k: v for k, v in arguments.items() if v is not None}
    arguments.update(spec.engine_kwargs)
    return arguments


def token_prompts(encoded: Sequence[Encoded]) -> list[dict[str, list[int]]]:
    """vLLM ``TokensPrompt`` dicts: vLLM adds no special tokens to pre-tokenised prompts."""
    return [{"prompt_token_ids": list(e.ids)} for e in encoded]


@rm_backends.register("vllm")
class VLLMScorer(RewardModelBackend):
    """A decoder RM in a vLLM pooling engine; raw logits, one reward per (prompt, response)."""

    own_tokenizer = True
    conda_env = "vllm"

    @staticmethod
    def gpus(spec: dict[str, Any]) -> int:
        """``num_gpus`` when set, else ``tensor_parallel_size`` (vLLM always runs on GPUs)."""
        if spec.get("num_gpus") is not None:
            return int(spec["num_gpus"])
        return int(spec.get("tensor_parallel_size", 1))

    @staticmethod
    def hub_refs(name: str, spec: dict[str, Any]) -> list[Any]:
        """Model and tokenizer as the engine loads them (``engine_kwargs`` win; vLLM's
        ``tokenizer_revision`` defaults to ``revision``)."""
        engine = spec.get("engine_kwargs") or {}
        revision = engine.get("revision", spec.get("revision"))
        return model_and_tokenizer_refs(
            f"reward_models.{name}",
            engine.get("model", spec.get("model")),
            revision,
            engine.get("tokenizer", spec.get("tokenizer")),
            engine.get("tokenizer_revision", revision),
            gguf_file=spec.get("gguf_file"),
        )

    @staticmethod
    def check_spec(name: str, spec: dict[str, Any]) -> None:
        check_model_spec(name, spec)

    @staticmethod
    def check_model(spec: RewardModelSpec) -> None:
        """Its part of the model-spec check: the weights to load, and a decoder RM."""
        require_model(spec)
        if spec.input_format != "chat":
            raise ScoringError(
                f"{spec.key}: vLLM serves decoder RMs only; input_format 'pair' (encoder RMs such as "
                "DeBERTa) must use backend: transformers"
            )

    def __init__(self, name: str, spec: RewardModelSpec | dict[str, Any], **artifacts: Any) -> None:
        self.spec = as_spec(spec, name)
        check_vllm_spec(self.spec)
        try:
            import vllm
        except ImportError as err:
            raise ScoringError(
                f"{self.spec.key}: backend vllm needs the vllm package (conda env envs/vllm.yaml pins "
                f"vllm=={VLLM_VERSION}); run snakemake with --use-conda or pip install vllm=={VLLM_VERSION}"
            ) from err
        if vllm.__version__ != VLLM_VERSION:
            log.warning(
                "%s: vllm %s is installed; this backend was written for %s",
                self.spec.key,
                vllm.__version__,
                VLLM_VERSION,
            )
        self.tokenizer = load_tokenizer(self.spec)
        self.limit = max_length_of(self.spec, self.tokenizer)
        self._pooling_params = vllm.PoolingParams(use_activation=False)
        self.llm = vllm.LLM(**engine_arguments(self.spec))

    def length_check(self, prompts: Sequence[str], responses: Sequence[str]) -> LengthCheck:
        """Which pairs are over this RM's ``max_length`` (the same check as the transformers backend's)."""
        return check_lengths(self.tokenizer, self.spec, self.limit, prompts, responses)

    def score(self, prompts: Sequence[str], responses: Sequence[str]) -> list[float]:
        """Rewards r(x, y), one per pair, in input order (identical pairs are run once)."""
        import torch

        pairs, rows = unique_pairs(prompts, responses)
        encoded = [
            encode(self.tokenizer, self.spec, p, r, self.limit, row) for row, (p, r) in enumerate(pairs)
        ]
        n_cut = sum(e.truncated for e in encoded)
        if n_cut:
            log.warning(
                "%s: truncated %d of %d inputs to max_length %d",
                self.spec.key,
                n_cut,
                len(encoded),
                self.limit,
            )
        outputs = self.llm.classify(
            token_prompts(encoded), pooling_params=self._pooling_params, use_tqdm=True
        )
        logits = torch.tensor([list(o.outputs.probs) for o in outputs], dtype=torch.float32)
        rewards = read_reward(self.spec, {"logits": logits}).tolist()
        bad = [row for row, i in enumerate(rows) if not math.isfinite(rewards[i])]
        if bad:
            raise NonFiniteRewardError(self.spec.key, bad)
        return [rewards[i] for i in rows]
