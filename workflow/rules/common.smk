# Configuration validation, input functions and target lists. Paths live in rmexplain.paths.
import rmexplain.paths as P
from rmexplain.analysis.config import check_analysis_config
from rmexplain.analysis.targets import analysis_files
from rmexplain.config import ConfigError, check_config
from rmexplain.hub import hub_models
from rmexplain.llm.targets import check_llm_config, discovery_files, required_envvars
from rmexplain.perturb.base import LLM_METHODS
from rmexplain.score.base import gpus_needed
from rmexplain.tokens.targets import token_files
from snakemake.utils import validate

validate(config, schema="../schemas/config.schema.yaml")
try:
    check_config(config)
    check_llm_config(config)
    check_analysis_config(config)
    hub_models(config)  # a model source that is neither a local path nor a hub id names its key
except ConfigError as err:
    raise WorkflowError(f"Invalid configuration: {err}") from None

# The API key is declared (and required) only when an OpenAI-compatible backend with a key is configured.
_llm_envvars = required_envvars(config)
if _llm_envvars:

    envvars:
        *_llm_envvars


wildcard_constraints:
    dataset="[A-Za-z0-9][A-Za-z0-9_.-]*",
    rm="[A-Za-z0-9][A-Za-z0-9_.-]*",
    method="[a-z_]+",
    orienter="[A-Za-z0-9][A-Za-z0-9_.-]*",


def explanation_targets():
    return P.evaluation_tables(config) + P.evaluation_figures(config)


def discovery_targets():
    return discovery_files(config)


def analysis_targets():
    return analysis_files(config)


def token_targets():
    return token_files(config)


def dataset_files(wildcards):
    return P.dataset_source_files(config, wildcards.dataset)


def demo_training_data(wildcards):
    """The bundled parts a demo RM trains on (its own) and reports held-out accuracy on (both)."""
    return [P.embedded_data_file(part) for part in ("helpful", "harmless")]


def rm_spec(wildcards):
    return config["reward_models"][wildcards.rm]


def rm_artifacts(wildcards):
    """Files a scorer needs besides its spec (the trained head of a demo RM)."""
    if config["reward_models"][wildcards.rm]["backend"] == "demo":
        return {"head": P.fmt(P.DEMO_HEAD, rm=wildcards.rm)}
    return {}


def orientation_scores(wildcards):
    return [
        P.fmt(P.ORIGINAL_SCORES, dataset=wildcards.dataset, rm=rm)
        for rm in P.orienting_rms(config, wildcards.orienter)
    ]


def orientation_scores_for_rm(wildcards):
    orienter = P.orienter_for(config, wildcards.rm)
    return [P.fmt(P.ORIGINAL_SCORES, dataset=wildcards.dataset, rm=rm) for rm in P.orienting_rms(config, orienter)]


def perturbations_for_rm(wildcards):
    return P.perturbation_files_for_rm(config, wildcards.dataset, wildcards.rm)


def perturbations_explained(wildcards):
    orienter = P.orienter_for(config, wildcards.rm)
    return P.fmt(P.PERTURBATIONS, dataset=wildcards.dataset, method=wildcards.method, orienter=orienter)


def distances_explained(wildcards):
    orienter = P.orienter_for(config, wildcards.rm)
    return P.fmt(P.DISTANCES, dataset=wildcards.dataset, method=wildcards.method, orienter=orienter)


def method_settings(wildcards):
    return config["perturb"].get(wildcards.method) or {}


def rm_gpus(wildcards):
    return gpus_needed(config["reward_models"][wildcards.rm])


def embedding_gpus(wildcards):
    """GPUs a distances job asks for: 1 when the embedding model runs on CUDA."""
    return 1 if str(config["evaluate"].get("device", "cpu")).startswith("cuda") else 0


def rm_conda_env(wildcards):
    backend = config["reward_models"][wildcards.rm]["backend"]
    return "../../envs/vllm.yaml" if backend == "vllm" else "../../envs/scoring.yaml"


def llm_settings(wildcards):
    """The llm section, for LLM-based methods only (so LLM edits never rerun the rules method)."""
    return config.get("llm", {}) if wildcards.method in LLM_METHODS else {}
