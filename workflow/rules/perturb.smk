# Perturbation generation: every method (rules, file, two_step, random, polyjuice) runs through
# rmexplain.perturb.stages.perturb_to_parquet. LLM answers are cached outside results/ (llm.cache_dir).


rule perturb:
    input:
        unpack(lambda w: design.method(w.method).prompt_files()),
        comparisons=paths.COMPARISONS,
        scores=orientation_scores,
        after_method=shared_requests,
        hub=lambda w: ancient(downloads.models_for_perturb(design, w.method)),  # LLM or Polyjuice (data.smk)
    output:
        perturbations=paths.PERTURBATIONS,
        skipped=paths.PERTURB_SKIPS,
        llm_use=paths.LLM_USE_PERTURB,
        job_record=paths.job_record(paths.PERTURBATIONS),
    log:
        "logs/perturb/{dataset}/{method}/{orienter}.log",
    conda:
        lambda w: resources.perturb_conda_env(design, w.method)
    threads: 1
    resources:
        gpu=lambda w: resources.perturb_gpus(design, w.method),
    params:
        settings=method_settings,
        registered_method=registered_method,
        llm=llm_settings,
        attributes=config["attributes"],
    script:
        "../scripts/perturb.py"


# Attribute discovery (paper App. A): which attributes the LLM names for the RM's preferences.
# Enabled by perturb.discover.enabled.


rule discover_attributes:
    input:
        comparisons=paths.COMPARISONS,
        scores=orientation_scores,
        prompt=design.discovery_prompt_file(),
        hub=ancient(downloads.models_for_discovery(design)),
    output:
        answers=paths.DISCOVERY_ANSWERS,
        csv=report(
            paths.DISCOVERY_CSV,
            category=design.report_category("Attribute discovery"),
            caption="../report/discovery_attributes.rst",
        ),
        md=paths.DISCOVERY_MD,
        llm_use=paths.LLM_USE_DISCOVERY,
        job_record=paths.job_record(paths.DISCOVERY_ANSWERS),
    log:
        "logs/discover/{dataset}/{orienter}.log",
    conda:
        resources.llm_conda_env(design)
    threads: 1
    resources:
        gpu=resources.llm_gpus(design),
    params:
        settings=config["perturb"].get("discover") or {},
        llm=config.get("llm") or {},
        attributes=config["attributes"],
    script:
        "../scripts/discover.py"


# Every perturbation job's skips (LLM answers cut off at max_tokens, unparsable answers, orientation ties and
# disagreements, ...) as one table in the report.


rule perturbation_skips_table:
    input:
        targets.perturbation_skip_files(design),
    output:
        csv=paths.table_file(paths.PERTURBATION_SKIPS_TABLE, "csv"),
        md=paths.table_file(paths.PERTURBATION_SKIPS_TABLE, "md"),
        html=report(
            paths.table_file(paths.PERTURBATION_SKIPS_TABLE, "html"),
            caption="../report/perturbation_skips.rst",
            category=design.report_category("Diagnostics"),
        ),
    log:
        "logs/perturbation_skips_table.log",
    conda:
        "../../envs/core.yaml"
    params:
        parts=[list(job) for job in targets.perturbation_jobs(design)],
    script:
        "../scripts/perturbation_skips_table.py"
