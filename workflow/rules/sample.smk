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
        n_per_seed=lambda w: paths.dataset_n_per_seed(config, w.dataset),
        seeds=lambda w: paths.dataset_seeds(config, w.dataset),
        max_words=config["sample"]["max_words"],
    script:
        "../scripts/sample_comparisons.py"
