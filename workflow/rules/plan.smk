# A plan before spending: `snakemake plan` writes results/plan.md (the same as `rmexplain plan`).


rule plan:
    output:
        "results/plan.md",
    log:
        "logs/plan.log",
    localrule: True
    conda:
        "../../envs/core.yaml"
    params:
        config=config,
    script:
        "../scripts/plan.py"
