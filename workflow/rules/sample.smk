rule sample_comparisons:
    input:
        dataset_files,
    output:
        paths.COMPARISONS,
    log:
        "logs/sample/{dataset}.log",
    localrule: True
    conda:
        "../../envs/core.yaml"
    params:
        spec=lambda w: config["datasets"][w.dataset],
        n_per_seed=lambda w: design.dataset(w.dataset).n_per_seed,
        seeds=lambda w: list(design.dataset(w.dataset).seeds),
        max_words=config["sample"]["max_words"],
    script:
        "../scripts/sample_comparisons.py"
