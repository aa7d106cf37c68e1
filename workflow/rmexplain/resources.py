"""What each job asks of the scheduler and the environment: GPUs, threads, conda env, API-key variables.

The rule files read these through the input functions of ``workflow/rules/common.smk``; each answer comes
from what the registered backend or method declares, never from its name.
"""

from __future__ import annotations

import os
import sys

from rmexplain.design import Design
from rmexplain.settings import schema_defaults, section

CORE_ENV = "core"  # envs/core.yaml: every job that loads no RM and calls no LLM backend


def env_file(name: str) -> str:
    """The env file (relative to a rule file) of conda env ``name``."""
    return f"../../envs/{name}.yaml"


def rm_gpus(design: Design, rm: str) -> int:
    """GPUs a job loading RM ``rm`` (scoring, token scans, GCG) asks for (a planted RM: its base's)."""
    runs = design.scoring_rm(rm)
    return design.rm_backend(runs).gpus(design.reward_models[runs])


def rm_threads(design: Design, rm: str) -> int:
    """CPU threads a job loading RM ``rm`` (scoring, token scans) asks for: 2 for RMs scored from exact
    token ids (transformers models), 1 for text backends (a small encoder or a server: most of such a job
    is starting Python, and two of them side by side finish sooner than one on two threads)."""
    return 2 if design.rm_backend(design.scoring_rm(rm)).exact_token_ids else 1


def use_job_threads(threads: int) -> None:
    """Let torch use exactly the job's CPU threads: its default (all cores) oversubscribes parallel jobs.

    Set through ``OMP_NUM_THREADS``, which torch reads when it is first imported, so that a job whose RM
    never loads torch (a python RM, a server) does not import it (seconds per job); a torch imported
    already is set directly."""
    threads = max(1, int(threads))
    os.environ["OMP_NUM_THREADS"] = str(threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)


def rm_conda_env(design: Design, rm: str) -> str:
    """The env file of jobs that load RM ``rm`` (what its backend declares; a planted RM: its base's)."""
    return env_file(design.rm_backend(design.scoring_rm(rm)).conda_env)


def llm_conda_env(design: Design, llm: dict | None = None) -> str:
    """The env file of jobs calling the LLM of section ``llm`` (default ``llm``): its backend's."""
    llm = design.llm if llm is None else llm
    return env_file(design.llm_backend(llm).conda_env)


def perturb_conda_env(design: Design, method: str) -> str:
    """The env file of a perturbation job: the LLM backend's for LLM methods, else the method's own."""
    entry = design.method(method)
    return llm_conda_env(design) if entry.uses_llm else env_file(entry.entry.conda_env)


def llm_gpus(design: Design, llm: dict | None = None) -> int:
    """GPUs a job calling an LLM asks for (vLLM's tensor parallelism, a CUDA transformers LM)."""
    llm = design.llm if llm is None else llm
    return design.llm_backend(llm).gpus(llm)


def perturb_gpus(design: Design, method: str) -> int:
    """GPUs one perturbation job of ``method`` asks for: the LLM's for LLM methods, else the method's."""
    entry = design.method(method)
    return llm_gpus(design) if entry.uses_llm else entry.entry.gpus(entry.settings)


def discovery_conda_env(design: Design, engine: str) -> str:
    """The env file of a bias-discovery round: the LLM backend's for an engine calling the LLM, else core."""
    return llm_conda_env(design) if engine in design.discovery_llm_engines else env_file(CORE_ENV)


def discovery_gpus(design: Design, engine: str) -> int:
    """GPUs a bias-discovery round asks for: the LLM's (a local vLLM, say) for an engine calling it."""
    return llm_gpus(design) if engine in design.discovery_llm_engines else 0


def embedding_gpus(design: Design) -> int:
    """GPUs an ``embed_texts`` job asks for: 1 when the embedding model runs on CUDA."""
    evaluate = {**schema_defaults("evaluate"), **section(design.config, "evaluate")}
    return 1 if str(evaluate["device"]).startswith("cuda") else 0


def required_envvars(design: Design) -> list[str]:
    """Environment variables the workflow must declare (``envvars:``): API keys of the LLM backends in use.
    Empty for the offline demo, so it runs without any key."""
    names: list[str] = []
    for llm in design.llm_sections.values():
        names += [n for n in design.llm_backend(llm).envvars(llm) if n not in names]
    return names
