# A plan before spending: `snakemake plan` writes results/plan.md (the same as `rmexplain plan`).


rule plan:
    output:
        "results/plan.md",
    params:
        config=config,
    log:
        "logs/plan.log",
    localrule: True
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/plan.py"
