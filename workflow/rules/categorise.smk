rule categorise:
    input:
        comparisons=P.COMPARISONS,
        originals=P.ORIGINAL_SCORES,
        perturbations=perturbations_explained,
        rewards=P.PERTURBATION_REWARDS,
    output:
        P.EXPLANATIONS,
    log:
        "logs/categorise/{dataset}/{method}/{rm}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/categorise.py"
