import rmexplain.hub as H


rule distances:
    input:
        comparisons=P.COMPARISONS,
        perturbations=P.PERTURBATIONS,
        hub=ancient(H.models_for_distances(config)),  # the embedding model (download.smk)
    output:
        P.DISTANCES,
    params:
        settings=config["evaluate"],
    log:
        "logs/distances/{dataset}/{method}/{orienter}.log",
    threads: 2
    resources:
        gpu=embedding_gpus,
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/distances.py"


rule evaluate:
    input:
        explanations=P.EXPLANATIONS,
        distances=distances_explained,
        originals=P.ORIGINAL_SCORES,
        orienting=orientation_scores_for_rm,
        comparisons=P.COMPARISONS,
    output:
        P.METRICS,
    log:
        "logs/evaluate/{dataset}/{method}/{rm}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/evaluate.py"


rule evaluation_tables:
    input:
        lambda w: P.metric_files(config),
    output:
        expand(P.TABLE, table=P.EVALUATION_TABLES, ext=["csv", "md"]),
        report(
            expand(P.TABLE, table=P.EVALUATION_TABLES, ext=["html"]),
            category="Evaluation",
            caption="../report/evaluation_tables.rst",
        ),
    log:
        "logs/evaluation_tables.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/evaluation_tables.py"
