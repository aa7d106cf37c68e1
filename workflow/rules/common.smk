# The config check, and the input functions shared by the stages. Paths and targets live in rmexplain.paths.
import rmexplain.hub as hub
import rmexplain.perturb.base as perturb_base
import rmexplain.paths as paths
import rmexplain.resources as resources
from rmexplain.config import ConfigError, check

try:
    check(config)  # schema (fills defaults) and every section's cross-key checks
except ConfigError as err:
    raise WorkflowError(f"Invalid configuration: {err}") from None

# The API key is declared (and required) only when an OpenAI-compatible backend with a key is configured.
_llm_envvars = resources.required_envvars(config)
if _llm_envvars:

    envvars:
        *_llm_envvars,


wildcard_constraints:
    dataset="[A-Za-z0-9][A-Za-z0-9_.-]*",
    rm="[A-Za-z0-9][A-Za-z0-9_.-]*",
    method="[a-z_]+",
    orienter="[A-Za-z0-9][A-Za-z0-9_.-]*",


def dataset_files(wildcards):
    return paths.dataset_source_files(config, wildcards.dataset)


def demo_training_data(wildcards):
    """The bundled parts a demo RM trains on (its own) and reports held-out accuracy on (both)."""
    return [paths.embedded_data_file(part) for part in ("helpful", "harmless")]


def rm_spec(wildcards):
    return config["reward_models"][wildcards.rm]


def rm_artifacts(wildcards):
    """Files a scorer needs besides its spec (the trained head of a demo RM)."""
    return paths.rm_artifact_files(config, wildcards.rm)


def rm_hub_models(wildcards):
    """Hub markers of the RM (ancient: only the order matters; a model change reruns through params)."""
    return ancient(hub.models_for_rm(config, wildcards.rm))


def orientation_scores(wildcards):
    return paths.orientation_score_files(config, wildcards.dataset, wildcards.orienter)


def orientation_scores_for_rm(wildcards):
    orienter = paths.orienter_for(config, wildcards.dataset, wildcards.rm)
    return paths.orientation_score_files(config, wildcards.dataset, orienter)


def perturbations_for_rm(wildcards):
    return paths.perturbation_files_for_rm(config, wildcards.dataset, wildcards.rm)


def perturbations_explained(wildcards):
    orienter = paths.orienter_for(config, wildcards.dataset, wildcards.rm)
    return paths.fmt(
        paths.PERTURBATIONS, dataset=wildcards.dataset, method=wildcards.method, orienter=orienter
    )


def distances_explained(wildcards):
    orienter = paths.orienter_for(config, wildcards.dataset, wildcards.rm)
    return paths.fmt(paths.DISTANCES, dataset=wildcards.dataset, method=wildcards.method, orienter=orienter)


def method_settings(wildcards):
    """``perturb.<method>``, with a variant's own keys over its method's."""
    return perturb_base.method_settings(config["perturb"], wildcards.method)


def registered_method(wildcards):
    """The registered method of a configured perturbation (itself, or a variant's ``method``)."""
    return perturb_base.registered_method(config["perturb"], wildcards.method)


def shared_requests(wildcards):
    """An LLM variant waits for its method's job on the same data, whose cached requests it reuses."""
    return paths.shared_request_input(config, wildcards.dataset, wildcards.method, wildcards.orienter)


def dataset_rms_of(wildcards):
    return paths.dataset_rms(config, wildcards.dataset)


def rm_gpus(wildcards):
    return resources.rm_gpus(config, wildcards.rm)


def rm_threads(wildcards):
    return resources.rm_threads(config, wildcards.rm)


def rm_conda_env(wildcards):
    return resources.rm_conda_env(config, wildcards.rm)


def llm_settings(wildcards):
    """The llm section, for LLM-based methods only (so LLM edits never rerun the rules method)."""
    return config.get("llm", {}) if wildcards.method in paths.llm_methods_used(config) else {}


def embedding_gpus(wildcards):
    return resources.embedding_gpus(config)


def explanations_of_dataset(wildcards):
    """Every explanation table of one (dataset, method): one per RM of the dataset."""
    rms = paths.dataset_rms(config, wildcards.dataset)
    return [
        paths.fmt(paths.EXPLANATIONS, dataset=wildcards.dataset, method=wildcards.method, rm=rm) for rm in rms
    ]


def perturbations_of_dataset(wildcards):
    """Every perturbation set of one (dataset, method)."""
    orienters = paths.orienters(config, wildcards.dataset)
    return [
        paths.fmt(paths.PERTURBATIONS, dataset=wildcards.dataset, method=wildcards.method, orienter=o)
        for o in orienters
    ]
