"""The one registry: schema enums match the registered names, lazy imports, declared properties."""

from __future__ import annotations

import pytest
import yaml
from conftest import REPO

from rmexplain.llm.base import LLMError, llm_backends
from rmexplain.perturb.base import PerturbationError, methods
from rmexplain.registry import Registry
from rmexplain.score.base import ScoringError, rm_backends

SCHEMA = yaml.safe_load((REPO / "workflow" / "rmexplain" / "config" / "schema.yaml").read_text())


def _enum(*keys: str) -> list[str]:
    node = SCHEMA
    for key in keys:
        node = node[key]
    return sorted(node["enum"])


def test_schema_enums_equal_the_registered_names():
    props = SCHEMA["properties"]
    assert _enum("properties", "reward_models", "additionalProperties", "properties", "backend") == (
        rm_backends.builtins()
    )
    assert sorted(props["llm"]["properties"]["backend"]["enum"]) == llm_backends.builtins()
    variant = props["perturb"]["properties"]["variants"]["additionalProperties"]
    assert sorted(variant["properties"]["method"]["enum"]) == methods.builtins()
    # perturb.methods also takes variant names: the config check names an unknown one (tests/test_designs.py)
    for registry in (rm_backends, llm_backends, methods):  # every built-in registers what its map says
        assert all(registry.get(name) for name in registry.builtins())


def test_every_entry_declares_what_the_workflow_needs():
    for name in rm_backends.names():
        backend = rm_backends.get(name)
        assert backend.conda_env in {"scoring", "vllm"}
        assert isinstance(backend.exact_token_ids, bool)
    assert [n for n in rm_backends.names() if rm_backends.get(n).exact_token_ids] == ["transformers"]
    assert rm_backends.get("vllm").gpus({"tensor_parallel_size": 4}) == 4
    assert rm_backends.get("demo").artifacts == ("head",)
    uses_llm = {n for n in methods.names() if methods.get(n).uses_llm}
    unconditioned = {n for n in methods.names() if not methods.get(n).attribute_conditioned}
    assert uses_llm == {"two_step", "random"} and unconditioned == {"random", "polyjuice", "rules_random"}
    assert methods.get("polyjuice").gpus({"device": "cuda:0"}) == 1 and methods.get("rules").gpus({}) == 0
    assert llm_backends.get("openai").envvars({}) == ["OPENAI_API_KEY"]
    assert llm_backends.get("openai").envvars({"api_key_env": None}) == []


@pytest.mark.parametrize(
    ("registry", "error", "key"),
    [
        (rm_backends, ScoringError, "reward_models.<rm>.backend"),
        (llm_backends, LLMError, "llm.backend"),
        (methods, PerturbationError, "perturb.methods"),
    ],
)
def test_unknown_names_name_the_config_key(registry, error, key):
    with pytest.raises(error, match=rf"{key}: unknown name 'nope'"):
        registry.get("nope")


def test_registry_imports_lazily_and_fills_declared_defaults():
    registry: Registry = Registry("x.kind", {"json": "json"}, defaults={"cheap": True})

    @registry.register("a", "b", cheap=False)
    def expensive() -> None: ...

    @registry.register("c")
    def plain() -> None: ...

    assert registry.get("a") is registry.get("b") is expensive and expensive.cheap is False
    assert plain.cheap is True
    assert registry.names() == ["a", "b", "c", "json"]
    with pytest.raises(KeyError, match=r"x\.kind: unknown name 'json'"):
        registry.get("json")  # the module imports but registers nothing under that name
