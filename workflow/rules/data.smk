# What a run needs before it spends: the hub models (one localrule job per model of the config, run where
# Snakemake runs: a cluster's login node has the internet, compute nodes often do not; it fills the Hugging Face
# cache and writes a marker that the rules loading the model take as input, `hub=`), the sampled comparisons,
# and the plan (`snakemake plan` writes results/plan.md, as `rmexplain plan` prints it).


rule download_model:
    output:
        paths.HUB_MARKER,
    log:
        "logs/hub/{model}.log",
    wildcard_constraints:
        model="[A-Za-z0-9][A-Za-z0-9_.@-]*",
    localrule: True
    conda:
        "../../envs/core.yaml"
    params:
        spec=lambda w: downloads.hub_spec(design, w.model),
    script:
        "../scripts/download_model.py"


rule sample_comparisons:
    input:
        dataset_files,
    output:
        comparisons=paths.COMPARISONS,
        origin=paths.DATA_ORIGIN,
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
