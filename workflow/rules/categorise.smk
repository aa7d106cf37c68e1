rule categorise:
    input:
        comparisons=paths.COMPARISONS,
        originals=paths.ORIGINAL_SCORES,
        perturbations=perturbations_explained,
        rewards=paths.PERTURBATION_REWARDS,
    output:
        paths.EXPLANATIONS,
    log:
        "logs/categorise/{dataset}/{method}/{rm}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/categorise.py"
