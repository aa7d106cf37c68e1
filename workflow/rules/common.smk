# The config check, the design it means, and the input functions shared by the stages.
# Path patterns: rmexplain.paths; what the config runs: rmexplain.design; file lists: rmexplain.targets.
import rmexplain.downloads as downloads
import rmexplain.paths as paths
import rmexplain.provenance as provenance
import rmexplain.resources as resources
import rmexplain.run_summary as run_summary
import rmexplain.targets as targets
from rmexplain.analysis.catalog import ANALYSIS_TABLES
from rmexplain.config import ConfigError, check
from rmexplain.design import Design
from rmexplain.yaml_unique import check_unique_keys

try:
    check_unique_keys(workflow.configfiles)  # Snakemake's reading keeps the last of a repeated key
    check(config, workflow.configfiles)  # schema (fills defaults), every section's cross-key checks
except ConfigError as err:
    raise WorkflowError(f"Invalid configuration: {err}") from None
design = Design.from_config(config)

# `snakemake --report` describes the files of one config: with another, say so (not a missing-file error).
if any(arg == "--report" or arg.startswith("--report=") for arg in sys.argv):
    _report_problem = provenance.report_config_problem(
        config, workflow.overwrite_configfiles, paths.PROVENANCE
    )
    if _report_problem:
        raise WorkflowError(_report_problem)


def report_text():
    """The report's landing text: results/findings/landing.rst (this run's findings first) once rule
    findings wrote it, else the template it is made from."""
    landing = Path(paths.REPORT_LANDING)
    if targets.findings_targets(design) and landing.is_file():
        return str(landing.resolve())
    return "workflow/report/workflow.rst"


# The API key is declared (and required) only when an OpenAI-compatible backend with a key is configured.
_llm_envvars = resources.required_envvars(design)
if _llm_envvars:

    envvars:
        *_llm_envvars,


def job_log_patterns():
    """The log pattern of each rule whose skips the end-of-run summary names."""
    return {name: getattr(rules, name).log[0] for name in run_summary.LOG_RULES}


# At the end of a run: each failed job's error line (from its log), and what results/ skipped or dropped;
# printed at exit where Snakemake stops a run with an error of its own, which calls neither handler below.
end_of_run = run_summary.EndOfRun(design)


onstart:
    end_of_run.start(job_log_patterns(), log)


onsuccess:
    end_of_run.succeeded(job_log_patterns())


onerror:
    end_of_run.failed(job_log_patterns(), log)


wildcard_constraints:
    dataset="[A-Za-z0-9][A-Za-z0-9_.-]*",
    rm="[A-Za-z0-9][A-Za-z0-9_.-]*",
    method="[a-z][a-z0-9_]*",
    orienter="[A-Za-z0-9][A-Za-z0-9_.-]*",


def dataset_files(wildcards):
    return design.dataset(wildcards.dataset).source_files


def demo_training_data(wildcards):
    """The bundled parts a demo RM trains on (its own) and reports held-out accuracy on (both)."""
    return [paths.embedded_data_file(part) for part in ("helpful", "harmless")]


def rm_spec(wildcards):
    """The RM's spec as its jobs get it (a planted RM's with its base's spec as ``base_spec``)."""
    return design.scoring_spec(wildcards.rm)


def rm_artifacts(wildcards):
    """Files a scorer needs besides its spec (the trained head of a demo RM)."""
    return targets.rm_artifact_files(design, wildcards.rm)


def rm_hub_models(wildcards):
    """Hub markers of the RM (ancient: only the order matters; a model change reruns through params)."""
    return ancient(downloads.models_for_rm(design, wildcards.rm))


def orientation_scores(wildcards):
    return targets.orientation_score_files(design, wildcards.dataset, wildcards.orienter)


def orientation_scores_for_rm(wildcards):
    orienter = design.dataset(wildcards.dataset).orienter_for(wildcards.rm)
    return targets.orientation_score_files(design, wildcards.dataset, orienter)


def explanation_orientation(wildcards):
    """Whose y+ the RM's explanations take: ``agreed`` or, for a foreign RM, its dataset's setting."""
    return design.dataset(wildcards.dataset).explanation_orientation(wildcards.rm)


def perturbations_for_rm(wildcards):
    return targets.perturbation_files_for_rm(design, wildcards.dataset, wildcards.rm)


def text_embeddings_for_rm(wildcards):
    return targets.text_embeddings_for_rm(design, wildcards.dataset, wildcards.rm)


def perturbations_to_embed(wildcards):
    return targets.perturbation_files_of_dataset(design, wildcards.dataset)


def perturbations_explained(wildcards):
    orienter = design.dataset(wildcards.dataset).orienter_for(wildcards.rm)
    return paths.fmt(
        paths.PERTURBATIONS, dataset=wildcards.dataset, method=wildcards.method, orienter=orienter
    )


def distances_explained(wildcards):
    orienter = design.dataset(wildcards.dataset).orienter_for(wildcards.rm)
    return paths.fmt(paths.DISTANCES, dataset=wildcards.dataset, method=wildcards.method, orienter=orienter)


def method_settings(wildcards):
    """``perturb.<method>``, with a variant's own keys over its method's."""
    return dict(design.method(wildcards.method).settings)


def registered_method(wildcards):
    """The registered method of a configured perturbation (itself, or a variant's ``method``)."""
    return design.method(wildcards.method).registered


def shared_requests(wildcards):
    """An LLM variant waits for its method's job on the same data, whose cached requests it reuses."""
    return targets.shared_request_input(design, wildcards.dataset, wildcards.method, wildcards.orienter)


def dataset_rms_of(wildcards):
    return list(design.dataset(wildcards.dataset).rms)


def rm_gpus(wildcards):
    return resources.rm_gpus(design, wildcards.rm)


def rm_threads(wildcards):
    return resources.rm_threads(design, wildcards.rm)


def rm_conda_env(wildcards):
    return resources.rm_conda_env(design, wildcards.rm)


def llm_settings(wildcards):
    """The llm section, for LLM-based methods only (so LLM edits never rerun the rules method)."""
    return config.get("llm", {}) if wildcards.method in design.llm_methods else {}


def embedding_gpus(wildcards):
    return resources.embedding_gpus(design)


def explanations_of_dataset(wildcards):
    """Every explanation table of one (dataset, method): one per RM of the dataset."""
    rms = design.dataset(wildcards.dataset).rms
    return [
        paths.fmt(paths.EXPLANATIONS, dataset=wildcards.dataset, method=wildcards.method, rm=rm) for rm in rms
    ]


def original_scores_of_dataset(wildcards):
    """Every RM's original scores on one dataset, in ``dataset_rms_of`` order."""
    rms = design.dataset(wildcards.dataset).rms
    return [paths.fmt(paths.ORIGINAL_SCORES, dataset=wildcards.dataset, rm=rm) for rm in rms]


def rewards_of_dataset(wildcards):
    """Every RM's perturbation rewards on one dataset, in ``dataset_rms_of`` order."""
    rms = design.dataset(wildcards.dataset).rms
    return [paths.fmt(paths.PERTURBATION_REWARDS, dataset=wildcards.dataset, rm=rm) for rm in rms]


def perturbations_of_dataset(wildcards):
    """Every perturbation set of one (dataset, method)."""
    orienters = design.dataset(wildcards.dataset).orienters
    return [
        paths.fmt(paths.PERTURBATIONS, dataset=wildcards.dataset, method=wildcards.method, orienter=o)
        for o in orienters
    ]
