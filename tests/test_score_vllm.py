"""backend: vllm — what runs without vLLM: spec checks, engine arguments and the token prompts it sends.

vLLM itself cannot be installed here (no GPU); ``LLM.classify`` is not exercised by these tests.
"""

from __future__ import annotations

import importlib.util

import pytest
import torch

from rmexplain.score.base import ScoringError, build_scorer
from rmexplain.score.hf import chat_token_ids, encode, load_tokenizer
from rmexplain.score.specs import parse_spec
from rmexplain.score.tiny import build_llama_rm
from rmexplain.score.vllm_backend import VLLM_VERSION, check_vllm_spec, engine_arguments, token_prompts


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    torch.set_num_threads(1)
    return str(build_llama_rm(tmp_path_factory.mktemp("llama-vllm"), seed=5))


def test_encoder_rms_are_refused_with_the_fix():
    with pytest.raises(ScoringError, match=r"vLLM serves decoder RMs only.*backend: transformers"):
        parse_spec(
            "deberta",
            {
                "backend": "vllm",
                "model": "OpenAssistant/reward-model-deberta-v3-large-v2",
                "input_format": "pair",
            },
        )


def test_only_logits_can_be_read():
    spec = parse_spec("rm", {"backend": "vllm", "model": "m", "read": "score"})
    with pytest.raises(ScoringError, match=r"reward_models.rm.read: vLLM returns the classifier logits only"):
        check_vllm_spec(spec)


def test_engine_arguments_use_the_pooling_runner():
    spec = parse_spec(
        "sky",
        {
            "backend": "vllm",
            "model": "Skywork/Skywork-Reward-Llama-3.1-8B-v0.2",
            "revision": "abc",
            "dtype": "bfloat16",
            "tensor_parallel_size": 2,
            "max_length": 4096,
            "engine_kwargs": {"enforce_eager": True},
        },
    )
    args = engine_arguments(spec)
    assert args == {
        "model": "Skywork/Skywork-Reward-Llama-3.1-8B-v0.2",
        "runner": "pooling",
        "revision": "abc",
        "trust_remote_code": False,
        "dtype": "bfloat16",
        "tensor_parallel_size": 2,
        "gpu_memory_utilization": 0.9,
        "max_model_len": 4096,
        "enforce_eager": True,
    }


def test_token_prompts_are_the_transformers_token_ids(llama_dir):
    spec = parse_spec("rm", {"backend": "vllm", "model": llama_dir, "max_length": 64})
    tokenizer = load_tokenizer(spec)
    pairs = [("How do I bake bread?", "Mix flour and water."), ("Hi", "Hello! " * 3)]
    prompts = token_prompts([encode(tokenizer, spec, p, r, 64) for p, r in pairs])
    assert prompts == [{"prompt_token_ids": chat_token_ids(tokenizer, spec, p, r)} for p, r in pairs]
    assert all(p["prompt_token_ids"].count(tokenizer.bos_token_id) == 1 for p in prompts)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_missing_vllm_is_a_clear_error(llama_dir):
    with pytest.raises(ScoringError, match=rf"needs the vllm package .*vllm=={VLLM_VERSION}"):
        build_scorer("rm", {"backend": "vllm", "model": llama_dir})
