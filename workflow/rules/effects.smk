# Attribute effects beside the paper's flip rates (docs/effects.md): every response edited along every
# attribute in both directions (and each edit edited back), no RM involved; every RM scores the edits (the
# first round of bias discovery's edits are encoded in the same encoder pass, discovery.smk); the
# registered estimators turn the reward changes into effects; RMs with planted biases are scored against
# what they are known to reward. The summary table is the analysis table attribute_effects (analyse.smk).

EFFECTS = design.effects


rule effect_edits:
    input:
        unpack(lambda w: design.method(w.method).effect_prompt_files()),
        comparisons=paths.COMPARISONS,
        hub=lambda w: ancient(downloads.models_for_perturb(design, w.method)),
    output:
        edits=paths.EFFECT_EDITS,
        skipped=paths.EFFECT_SKIPS,
        llm_use=paths.LLM_USE_EFFECTS,
        job_record=paths.job_record(paths.EFFECT_EDITS),
    log:
        "logs/effects/edits/{dataset}/{method}.log",
    conda:
        lambda w: resources.perturb_conda_env(design, w.method)
    threads: 1
    resources:
        gpu=lambda w: resources.perturb_gpus(design, w.method),
    params:
        settings=method_settings,
        registered_method=registered_method,
        llm=llm_settings,
        attributes=config["attributes"],
        rewrite_of_rewrite=EFFECTS["rewrite_of_rewrite"],
    script:
        "../scripts/effect_edits.py"


rule embed_effect_texts:
    input:
        edits=lambda w: targets.effect_edit_files(design, w.dataset),
        known=lambda w: targets.text_embeddings_of(design, w.dataset),  # texts embedded already: copied
        hub=ancient(downloads.models_for_distances(design)),
    output:
        paths.EFFECT_EMBEDDINGS,
        job_record=paths.job_record(paths.EFFECT_EMBEDDINGS),
    log:
        "logs/effects/embed/{dataset}.log",
    conda:
        "../../envs/core.yaml"
    threads: 2
    resources:
        gpu=embedding_gpus,
    params:
        encoder={k: config["evaluate"].get(k) for k in ("embedding_model", "batch_size", "device")},
    script:
        "../scripts/embed_effect_texts.py"


rule score_effect_edits:
    input:
        unpack(rm_artifacts),
        comparisons=paths.COMPARISONS,
        texts=lambda w: targets.effect_edit_files(design, w.dataset),
        embeddings=lambda w: targets.effect_embeddings_for_rm(design, w.dataset, w.rm),
        known=lambda w: targets.scores_before(design, w.dataset, w.rm, "effects"),
        hub=rm_hub_models,
    output:
        paths.EFFECT_REWARDS,
        job_record=paths.job_record(paths.EFFECT_REWARDS),
    log:
        "logs/effects/score/{dataset}/{rm}.log",
    conda:
        rm_conda_env
    threads: rm_threads
    resources:
        gpu=rm_gpus,
    params:
        spec=rm_spec,
        store=config["scoring"]["cache_dir"],
        stage="effects",
    script:
        "../scripts/score_stage.py"


rule reward_scale:
    input:
        unpack(rm_artifacts),
        hub=rm_hub_models,
    output:
        paths.REWARD_SCALE,
        job_record=paths.job_record(paths.REWARD_SCALE),
    log:
        "logs/effects/reward_scale/{rm}.log",
    conda:
        rm_conda_env
    threads: rm_threads
    resources:
        gpu=rm_gpus,
    params:
        spec=rm_spec,
    script:
        "../scripts/reward_scale.py"


rule attribute_effects:
    input:
        unpack(lambda w: targets.attribute_effect_inputs(design, w.dataset, w.method)),
    output:
        paths.ATTRIBUTE_EFFECTS,
    log:
        "logs/effects/analysis/{dataset}/{method}.log",
    conda:
        "../../envs/core.yaml"
    params:
        rms=lambda w: targets.effect_rms(design, w.dataset),
        references=lambda w: targets.effect_references(design, w.dataset),
        settings=lambda w: {
            "estimators": targets.pair_effect_estimators(design, w.dataset, w.method),
            "primary": EFFECTS["primary"],
            "bootstrap": config["analysis"]["bootstrap"],
        },
        attributes=list(config["attributes"]),
    script:
        "../scripts/attribute_effects.py"


rule figure_attribute_effects:
    input:
        paths.ATTRIBUTE_EFFECTS,
    output:
        report(
            paths.EFFECTS_FIGURE,
            caption="../report/figure_attribute_effects.rst",
            category=design.report_category("Analyses"),
            subcategory="Attribute effects",
            labels={"dataset": "{dataset}", "method": "{method}"},
        ),
    log:
        "logs/figures/effects/{dataset}/{method}_{ext}.log",
    conda:
        "../../envs/core.yaml"
    params:
        figures=design.figures.as_params(),
        level=config["analysis"]["bootstrap"]["confidence_level"],
    script:
        "../scripts/figure_attribute_effects.py"


rule planted_recovery:
    input:
        effects=targets.analysis_table_inputs(design, "attribute_effects"),
        edits=[paths.fmt(paths.EFFECT_EDITS, dataset=d, method=m) for d, m in design.effect_pairs],
        comparisons=[paths.fmt(paths.COMPARISONS, dataset=d) for d, m in design.effect_pairs],
    output:
        csv=paths.table_file(paths.PLANTED_RECOVERY, "csv"),
        md=paths.table_file(paths.PLANTED_RECOVERY, "md"),
        html=report(
            paths.table_file(paths.PLANTED_RECOVERY, "html"),
            caption="../report/planted_recovery.rst",
            category=design.report_category("Analyses"),
            subcategory="Attribute effects",
        ),
        recall_csv=paths.table_file(paths.PLANTED_RECALL, "csv"),
        recall_md=paths.table_file(paths.PLANTED_RECALL, "md"),
        recall_html=report(
            paths.table_file(paths.PLANTED_RECALL, "html"),
            caption="../report/planted_recovery.rst",
            category=design.report_category("Analyses"),
            subcategory="Attribute effects",
        ),
    log:
        "logs/effects/planted_recovery.log",
    conda:
        "../../envs/core.yaml"
    params:
        expectations=design.expectations,
        planted={rm: design.scoring_spec(rm) for rm in design.expectations},
        pairs=[list(p) for p in design.effect_pairs],
        primary=EFFECTS["primary"],
        level=config["analysis"]["bootstrap"]["confidence_level"],
    script:
        "../scripts/planted_recovery.py"
