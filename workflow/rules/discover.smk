# Attribute discovery (paper App. A): which attributes the LLM names for the RM's preferences.
# Enabled by perturb.discover.enabled; targets from rmexplain.paths.discovery_targets.


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
