"""Paths, target lists, rule inputs and config checks of the LLM stages (issue 3), from config alone.

``workflow/rules/common.smk`` uses ``discovery_files`` in ``rule all``, ``required_envvars`` for its
``envvars:`` declaration (only when an OpenAI-compatible backend with a key is actually used, so the
offline demo needs no key) and ``check_llm_config`` next to ``check_config``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rmexplain.config import ConfigError
from rmexplain.llm.prompts import template_path
from rmexplain.perturb.base import LLM_METHODS

Config = dict[str, Any]

DISCOVERY_ANSWERS = "results/discovery/{dataset}/{orienter}/answers.parquet"
DISCOVERY_CSV = "results/discovery/{dataset}/{orienter}/attributes.csv"
DISCOVERY_MD = "results/discovery/{dataset}/{orienter}/attributes.md"


def _perturb(config: Config) -> Config:
    return config.get("perturb") or {}


def llm_methods_used(config: Config) -> list[str]:
    """Configured perturbation methods that call the LLM."""
    return [m for m in _perturb(config).get("methods", []) if m in LLM_METHODS]


def discovery_enabled(config: Config) -> bool:
    return bool((_perturb(config).get("discover") or {}).get("enabled", False))


def llm_needed(config: Config) -> bool:
    """Whether any scheduled job calls the LLM."""
    return bool(llm_methods_used(config)) or discovery_enabled(config)


def llm_configs_in_use(config: Config) -> list[Config]:
    """Effective ``llm`` sections of the jobs that will run: perturbation/discovery, and the analysis
    judge (``llm`` with ``analysis.judge.llm`` overrides) when enabled."""
    llm = config.get("llm") or {}
    configs = [llm] if llm_needed(config) else []
    judge = (config.get("analysis") or {}).get("judge") or {}
    if judge.get("enabled"):
        configs.append({**llm, **(judge.get("llm") or {})})
    return configs


def required_envvars(config: Config) -> list[str]:
    """Environment variables the workflow must declare (``envvars:``): API keys of the OpenAI-compatible
    backends in use. Empty for the offline demo, so it runs without any key."""
    names: list[str] = []
    for llm in llm_configs_in_use(config):
        name = llm.get("api_key_env", "OPENAI_API_KEY")
        if llm.get("backend", "openai") == "openai" and name and name not in names:
            names.append(name)
    return names


def discovery_orienter(config: Config) -> str:
    """Whose preference and scores go into the discovery prompts: ``perturb.discover.rm``, else the
    first orienter (the first RM, or ``shared``)."""
    from rmexplain.paths import orienters

    chosen = (_perturb(config).get("discover") or {}).get("rm")
    return chosen or orienters(config)[0]


def discovery_files(config: Config) -> list[str]:
    """Files ``rule all`` asks of attribute discovery (none unless ``perturb.discover.enabled``)."""
    if not discovery_enabled(config):
        return []
    orienter = discovery_orienter(config)
    return [
        pattern.format(dataset=dataset, orienter=orienter)
        for dataset in config["datasets"]
        for pattern in (DISCOVERY_ANSWERS, DISCOVERY_CSV, DISCOVERY_MD)
    ]


def _two_step_templates(settings: Config) -> dict[str, str | None]:
    paths = settings.get("prompts") or {}
    names = {"step1": "two_step_step1", "step2": "two_step_step2"}
    focus = settings.get("focus", "center")
    if focus != "pass":
        names[f"focus_{focus}"] = f"two_step_focus_{focus}"
    return {key: str(template_path(name, paths.get(key))) for key, name in names.items()}


def prompt_inputs(config: Config, method: str) -> dict[str, str]:
    """Prompt-template files a perturbation job reads (rule inputs, so editing one reruns the job)."""
    settings = _perturb(config).get(method) or {}
    if method == "two_step":
        return {f"prompt_{k}": v for k, v in _two_step_templates(settings).items() if v}
    if method == "random":
        return {"prompt_random": str(template_path("random", settings.get("prompt")))}
    return {}


def discovery_prompt_input(config: Config) -> str:
    """The App. A template file the discovery jobs read."""
    return str(template_path("discover", (_perturb(config).get("discover") or {}).get("prompt")))


def llm_gpus(config: Config, method: str) -> int:
    """GPUs one perturbation job of ``method`` asks the scheduler for (``resources: gpu``)."""
    llm = config.get("llm") or {}
    if method in LLM_METHODS or method == "discover":
        if llm.get("backend") == "vllm":
            return int(((llm.get("vllm") or {}).get("engine") or {}).get("tensor_parallel_size", 1))
        if llm.get("backend") == "transformers":
            device = str((llm.get("transformers") or {}).get("device", "cpu"))
            return 1 if device.startswith(("cuda", "auto")) else 0
    if method == "polyjuice":
        device = str((_perturb(config).get("polyjuice") or {}).get("device", "cpu"))
        return 1 if device.startswith("cuda") else 0
    return 0


def check_llm_config(config: Config) -> None:
    """Raise ConfigError naming the key when an LLM stage is configured without what it needs."""
    if not llm_needed(config):
        return
    why = ", ".join(llm_methods_used(config)) or "perturb.discover"
    llm = config.get("llm")
    if not llm or not llm.get("model"):
        raise ConfigError(f"llm.model (and the rest of the `llm` section) is required for {why}")
    rm = (_perturb(config).get("discover") or {}).get("rm")
    if discovery_enabled(config) and rm is not None:
        from rmexplain.paths import orienters

        if rm not in orienters(config):
            raise ConfigError(f"perturb.discover.rm: {rm!r} is not one of the orienters {orienters(config)}")
    methods = [*llm_methods_used(config)] + (["discover"] if discovery_enabled(config) else [])
    for method in methods:
        if method == "discover":
            inputs = {"prompt": discovery_prompt_input(config)}
        else:
            inputs = prompt_inputs(config, method)
        for name, path in inputs.items():
            if not Path(path).is_file():
                raise ConfigError(f"perturb.{method}: prompt template {name!r} file {path!r} does not exist")
