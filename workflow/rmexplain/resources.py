"""What each job asks of the scheduler and the environment: GPUs, threads, conda env, API-key variables.

The rule files read these through the input functions of ``workflow/rules/common.smk``; each answer comes
from what the registered backend or method declares, never from its name.
"""

from __future__ import annotations

from rmexplain import paths
from rmexplain.config import Config, section


def rm_gpus(config: Config, rm: str) -> int:
    """GPUs a job loading RM ``rm`` (scoring, token scans, GCG) asks for."""
    from rmexplain.score.base import gpus_needed

    return gpus_needed(config["reward_models"][rm])


def rm_threads(config: Config, rm: str) -> int:
    """CPU threads a token-scan job asks for: 2 for RMs scored from exact token ids, 1 for text backends
    (small encoders; jobs run side by side and torch's all-core default oversubscribes them)."""
    from rmexplain.score.base import backend_of

    return 2 if backend_of(config["reward_models"][rm]).exact_token_ids else 1


def rm_conda_env(config: Config, rm: str) -> str:
    """The env file (relative to a rule file) of jobs that load RM ``rm``."""
    from rmexplain.score.base import backend_of

    return f"../../envs/{backend_of(config['reward_models'][rm]).conda_env}.yaml"


def llm_gpus(config: Config) -> int:
    """GPUs a job calling the configured LLM asks for (vLLM's tensor parallelism, a CUDA transformers LM)."""
    from rmexplain.llm.base import backend_of

    return backend_of(config.get("llm") or {}).gpus(config.get("llm") or {})


def perturb_gpus(config: Config, method: str) -> int:
    """GPUs one perturbation job of ``method`` asks for: the LLM's for LLM methods, else the method's."""
    from rmexplain.perturb.base import method_entry, method_settings

    perturb = section(config, "perturb")
    entry = method_entry(perturb, method)
    if entry.uses_llm:
        return llm_gpus(config)
    return entry.gpus(method_settings(perturb, method))


def embedding_gpus(config: Config) -> int:
    """GPUs a distances job asks for: 1 when the embedding model runs on CUDA."""
    return 1 if str(section(config, "evaluate").get("device", "cpu")).startswith("cuda") else 0


def required_envvars(config: Config) -> list[str]:
    """Environment variables the workflow must declare (``envvars:``): API keys of the LLM backends in use.
    Empty for the offline demo, so it runs without any key."""
    from rmexplain.llm.base import backend_of

    names: list[str] = []
    for llm in paths.llm_sections_in_use(config).values():
        names += [n for n in backend_of(llm).envvars(llm) if n not in names]
    return names
