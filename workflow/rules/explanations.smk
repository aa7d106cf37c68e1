# The explanations: each perturbation categorised per RM (CF/SF), then evaluated (coverage, distances,
# diversity: the paper's Tables 1, 2 and 5) and drawn. Every distinct text of a dataset is embedded once
# (embed_texts), for the distances of all its perturbation tables and for the demo RMs that share the encoder.


rule categorise:
    input:
        comparisons=paths.COMPARISONS,
        originals=paths.ORIGINAL_SCORES,
        orienting=orientation_scores_for_rm,  # the scores its perturbation set was oriented by
        perturbations=perturbations_explained,
        rewards=paths.PERTURBATION_REWARDS,
    output:
        paths.EXPLANATIONS,
    log:
        "logs/categorise/{dataset}/{method}/{rm}.log",
    conda:
        "../../envs/core.yaml"
    params:
        orientation=explanation_orientation,
    script:
        "../scripts/categorise.py"


# Shared orientation: how many comparisons each RM outside shared_rms orients against the agreed y+, and
# what became of them (datasets.<name>.foreign_rm_orientation). Only where a dataset has such RMs.


rule foreign_rm_orientation_table:
    input:
        [
            paths.fmt(paths.ORIGINAL_SCORES, dataset=d, rm=rm)
            for d, rm in targets.foreign_orientation_parts(design)
        ],
    output:
        csv=paths.table_file(paths.FOREIGN_ORIENTATION_TABLE, "csv"),
        md=paths.table_file(paths.FOREIGN_ORIENTATION_TABLE, "md"),
        html=report(
            paths.table_file(paths.FOREIGN_ORIENTATION_TABLE, "html"),
            caption="../report/foreign_rm_orientation.rst",
            category=design.report_category("Diagnostics"),
        ),
    log:
        "logs/foreign_rm_orientation_table.log",
    conda:
        "../../envs/core.yaml"
    params:
        parts=[list(part) for part in targets.foreign_orientation_parts(design)],
        datasets=targets.foreign_orientation_settings(design),
    script:
        "../scripts/foreign_rm_orientation_table.py"


rule embed_texts:
    input:
        comparisons=paths.COMPARISONS,
        perturbations=perturbations_to_embed,
        hub=ancient(downloads.models_for_distances(design)),  # the embedding model (data.smk)
    output:
        paths.TEXT_EMBEDDINGS,
        job_record=paths.job_record(paths.TEXT_EMBEDDINGS),
    log:
        "logs/embed_texts/{dataset}.log",
    conda:
        "../../envs/core.yaml"
    threads: 2
    resources:
        gpu=embedding_gpus,
    params:
        encoder={k: config["evaluate"].get(k) for k in ("embedding_model", "batch_size", "device")},
    script:
        "../scripts/embed_texts.py"


rule distances:
    input:
        comparisons=paths.COMPARISONS,
        perturbations=paths.PERTURBATIONS,
        embeddings=paths.TEXT_EMBEDDINGS,
    output:
        paths.DISTANCES,
    log:
        "logs/distances/{dataset}/{method}/{orienter}.log",
    conda:
        "../../envs/core.yaml"
    params:
        settings={k: config["evaluate"].get(k) for k in ("long_texts", "punctuation_as_words")},
    script:
        "../scripts/distances.py"


rule evaluate:
    input:
        explanations=paths.EXPLANATIONS,
        distances=distances_explained,
        # their texts (the keys of the embeddings) and, with the rewards, sides left unscored (overlong: skip)
        perturbations=perturbations_explained,
        embeddings=paths.TEXT_EMBEDDINGS,
        originals=paths.ORIGINAL_SCORES,
        orienting=orientation_scores_for_rm,
        comparisons=paths.COMPARISONS,
        rewards=paths.PERTURBATION_REWARDS,
    output:
        paths.METRICS,
    log:
        "logs/evaluate/{dataset}/{method}/{rm}.log",
    conda:
        "../../envs/core.yaml"
    params:
        orientation=explanation_orientation,
        settings={"long_texts": config["evaluate"].get("long_texts")},
    script:
        "../scripts/evaluate.py"


rule evaluation_tables:
    input:
        lambda w: targets.metric_files(design),
    output:
        expand(paths.TABLE, table=paths.EVALUATION_TABLES, ext=["csv", "md"]),
        report(
            expand(paths.TABLE, table=paths.EVALUATION_TABLES, ext=["html"]),
            category=design.report_category("Evaluation"),
            caption="../report/evaluation_tables.rst",
        ),
    log:
        "logs/evaluation_tables.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/evaluation_tables.py"


rule figure_methods:
    input:
        coverage=paths.fmt(paths.TABLE, table="coverage", ext="csv"),
        distances=paths.fmt(paths.TABLE, table="distances", ext="csv"),
    output:
        report(
            paths.FIGURE.replace("{figure}", "methods"),
            category=design.report_category("Evaluation"),
            caption="../report/figure_methods.rst",
        ),
    log:
        "logs/figures/methods_{ext}.log",
    conda:
        "../../envs/core.yaml"
    params:
        figures=design.figures.as_params(),
    script:
        "../scripts/figure_methods.py"
