"""The LLM settings' defaults have one source, the config schema: the library called without a checked
config (tests, ``rmexplain explain``) fills a setting left out with the schema's default, so changing the
default in the schema changes what the clients, backends and methods use."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml
from conftest import REPO
from snakemake.utils import validate

from rmexplain.settings import SCHEMA_FILE, schema_defaults

# A subprocess edits the schema's defaults before it imports the library, then reports what the library
# does with settings left out.
OBSERVE = """
import json, logging, os, sys
from rmexplain.settings import schema

for path, value in json.loads(sys.argv[1]):
    node = schema()
    for key in path:
        node = node["properties"][key]
    node["default"] = value

from rmexplain.llm.base import Sampling, backend_of
from rmexplain.llm.client import CachedChat
from rmexplain.llm.hf_backend import TransformersChatBackend
from rmexplain.llm.openai_backend import OpenAIBackend
from rmexplain.llm.vllm_backend import VLLMBackend
from rmexplain.perturb.llm_methods import answer_max_tokens, random_requests, two_step_prompt_inputs
from rmexplain.perturb.polyjuice import polyjuice_gpus, polyjuice_hub_refs

chat = CachedChat({"model": "m"}, logging.getLogger("defaults"))
chat.stats.tokens_in = chat.stats.tokens_out = 1_000_000
openai = OpenAIBackend({"model": "m"})
hf = TransformersChatBackend({"model": "m"})
vllm = VLLMBackend({"model": "m"})
print(json.dumps({
    "backend": [chat.config["backend"], backend_of({}).__name__],
    "cache_dir": str(chat.cache.directory),
    "system_prompt": chat.system_prompt,
    "sampling": [chat.sampling().as_dict(), Sampling().as_dict()],
    "answer_max_tokens": answer_max_tokens("random", {}, None),
    "cost": chat.stats.cost(chat.config["prices"]),
    "openai": [openai.base_url, openai.api_key_env, openai.concurrency, openai.max_retries, openai.timeout,
               openai.malformed_retries, openai.extra_body, openai.http_client, openai.token_limit_param,
               sorted(openai.omitted), OpenAIBackend.envvars({})],
    "transformers": [hf.batch_size, hf.model_id, TransformersChatBackend.gpus({})],
    "vllm": [vllm.chunk_size, vllm.chat_template, vllm.engine_kwargs],
    "two_step": sorted(two_step_prompt_inputs({})),
    "random": random_requests(2, 0, {}),
    "polyjuice": [polyjuice_gpus({}), polyjuice_hub_refs({})[0].repo_id],
}))
"""


def test_settings_left_out_follow_the_schemas_defaults(tmp_path):
    edits = {
        ("llm", "backend"): "vllm",
        ("llm", "cache_dir"): str(tmp_path / "cache"),
        ("llm", "system_prompt"): "Be brief.",
        ("llm", "sampling", "temperature"): 0.25,
        ("llm", "sampling", "top_p"): 0.5,
        ("llm", "sampling", "max_tokens"): 77,
        ("llm", "sampling", "seed"): 5,
        ("llm", "prices", "input_per_million"): 2.0,
        ("llm", "prices", "output_per_million"): 4.0,
        ("llm", "base_url"): "http://127.0.0.1:9/v1",
        ("llm", "api_key_env"): "RMEXPLAIN_TEST_KEY",
        ("llm", "concurrency"): 3,
        ("llm", "max_retries"): 2,
        ("llm", "timeout"): 9.5,
        ("llm", "malformed_retries"): 1,
        ("llm", "extra_body"): {"top_k": 5},
        ("llm", "http_client"): "httpx",
        ("llm", "token_limit_param"): "max_completion_tokens",
        ("llm", "omit_params"): ["seed"],
        ("llm", "transformers", "device"): "cuda",
        ("llm", "transformers", "batch_size"): 3,
        ("llm", "transformers", "gguf_file"): "m.gguf",
        ("llm", "vllm", "engine"): {"max_model_len": 64},
        ("llm", "vllm", "chunk_size"): 7,
        ("llm", "vllm", "chat_template"): "{{ messages }}",
        ("perturb", "two_step", "focus"): "only",
        ("perturb", "random", "n"): 4,
        ("perturb", "polyjuice", "device"): "cuda",
        ("perturb", "polyjuice", "model"): "someone/polyjuice",
    }
    env = {**os.environ, "RMEXPLAIN_TEST_KEY": "test-key"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "workflow"), env.get("PYTHONPATH")]))
    argv = [sys.executable, "-c", OBSERVE, json.dumps([[list(path), value] for path, value in edits.items()])]
    result = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)

    sampling = {"temperature": 0.25, "top_p": 0.5, "max_tokens": 77, "seed": 5}
    assert seen["backend"] == ["vllm", "VLLMBackend"]
    assert seen["cache_dir"] == str(tmp_path / "cache")
    assert seen["system_prompt"] == "Be brief."
    assert seen["sampling"] == [sampling, sampling]
    assert seen["answer_max_tokens"] == 77
    assert seen["cost"] == 6.0  # a million tokens each way at 2 and 4 per million
    assert seen["openai"] == [
        "http://127.0.0.1:9/v1", "RMEXPLAIN_TEST_KEY", 3, 2, 9.5, 1, {"top_k": 5}, "httpx",
        "max_completion_tokens", ["seed"], ["RMEXPLAIN_TEST_KEY"],
    ]  # fmt: skip
    assert seen["transformers"] == [3, "transformers:m:m.gguf", 1]
    assert seen["vllm"] == [7, "{{ messages }}", {"max_model_len": 64}]
    assert seen["two_step"] == ["prompt_focus_only", "prompt_step1", "prompt_step2"]
    assert seen["random"] == 8
    assert seen["polyjuice"] == [1, "someone/polyjuice"]


def test_schema_defaults_are_what_the_config_check_fills():
    """``schema_defaults`` (the library's defaults) gives each section as validation fills it."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config.update(llm={"model": "m"}, perturb={"methods": ["rules"]})
    validate(config, str(SCHEMA_FILE))
    filled = {key: value for key, value in config["llm"].items() if key != "model"}
    assert filled == {key: schema_defaults("llm", key) for key in filled}
    assert {"sampling", "prices", "vllm", "transformers", "cache_dir", "api_key_env"} <= set(filled)
    for key in ("two_step", "random", "polyjuice", "discover"):
        assert config["perturb"][key] == schema_defaults("perturb", key), key
