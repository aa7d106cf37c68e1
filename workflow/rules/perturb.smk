rule perturb:
    input:
        comparisons=P.COMPARISONS,
        scores=orientation_scores,
    output:
        P.PERTURBATIONS,
    params:
        settings=method_settings,
        llm=llm_settings,
        attributes=config["attributes"],
    log:
        "logs/perturb/{dataset}/{method}/{orienter}.log",
    threads: 1
    conda:
        "../../envs/llm.yaml"
    script:
        "../scripts/perturb.py"
