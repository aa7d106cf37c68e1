# Bias discovery (docs/discovery.md; not App. A's attribute discovery, perturb.discover): each engine
# proposes candidate features round by round and edits the responses to add and remove them; every RM
# scores the edits (each round's encoded and scored by jobs of its own);
# the effects layer's estimate and bootstrap give each feature's effect; Benjamini-Hochberg across the
# features per RM and dataset; planted RMs are scored on whether a feature that moves their detector is found.

DISCOVERY = design.bias_discovery


wildcard_constraints:
    engine="[a-z][a-z0-9_]*",
    round="[1-9][0-9]*",


rule discovery_round:
    input:
        unpack(lambda w: targets.discovery_round_inputs(design, w.dataset, w.engine, int(w.round))),
        hub=lambda w: ancient(downloads.models_for_distances(design) if int(w.round) > 1 else []),
    output:
        edits=paths.BIASES_ROUND_EDITS,
        candidates=paths.BIASES_ROUND_CANDIDATES,
        skipped=paths.BIASES_SKIPS,
        llm_use=paths.LLM_USE_BIASES,
        judge_llm_use=paths.LLM_USE_BIASES_JUDGE,
    log:
        "logs/discovery/round/{dataset}/{engine}/round{round}.log",
    conda:
        lambda w: resources.discovery_conda_env(design, w.engine)
    resources:
        gpu=lambda w: resources.discovery_gpus(design, w.engine),
    params:
        rms=lambda w: targets.effect_rms(design, w.dataset),
        references=lambda w: targets.effect_references(design, w.dataset),
        settings=lambda w: design.discovery_round_settings(w.engine, int(w.round)),
        llm=lambda w: design.llm if w.engine in design.discovery_llm_engines else {},
    script:
        "../scripts/discovery_round.py"


# Each round's edits encoded on their own (for the RMs that look texts up) and scored by jobs of their own.
rule embed_discovery_texts:
    input:
        discovery=[paths.BIASES_ROUND_EDITS],
        known=lambda w: targets.embeddings_before(design, w.dataset, int(w.round)),
        hub=ancient(downloads.models_for_distances(design)),
    output:
        paths.BIASES_ROUND_EMBEDDINGS,
        job_record=paths.job_record(paths.BIASES_ROUND_EMBEDDINGS),
    log:
        "logs/discovery/embed/{dataset}/{engine}/round{round}.log",
    conda:
        "../../envs/core.yaml"
    threads: 2
    resources:
        gpu=embedding_gpus,
    params:
        encoder={k: config["evaluate"].get(k) for k in ("embedding_model", "batch_size", "device")},
    script:
        "../scripts/embed_effect_texts.py"


rule score_discovery_edits:
    input:
        unpack(rm_artifacts),
        comparisons=paths.COMPARISONS,
        texts=[paths.BIASES_ROUND_EDITS],
        embeddings=lambda w: targets.discovery_round_embeddings_for_rm(
            design, w.dataset, w.engine, int(w.round), w.rm
        ),
        known=lambda w: targets.scores_before(design, w.dataset, w.rm, "discovery", w.engine, int(w.round)),
        hub=rm_hub_models,
    output:
        paths.BIASES_ROUND_REWARDS,
        job_record=paths.job_record(paths.BIASES_ROUND_REWARDS),
    log:
        "logs/discovery/score/{dataset}/{engine}/round{round}/{rm}.log",
    conda:
        rm_conda_env
    threads: rm_threads
    resources:
        gpu=rm_gpus,
    params:
        spec=rm_spec,
        store=config["scoring"]["cache_dir"],
        stage="discovery",
    script:
        "../scripts/score_stage.py"


rule discovery_effects:
    input:
        unpack(lambda w: targets.discovery_effect_inputs(design, w.dataset, w.engine, int(w.round))),
    output:
        paths.BIASES_ROUND_EFFECTS,
    log:
        "logs/discovery/effects/{dataset}/{engine}/round{round}.log",
    conda:
        "../../envs/core.yaml"
    params:
        rms=lambda w: targets.effect_rms(design, w.dataset),
        references=lambda w: targets.effect_references(design, w.dataset),
        bootstrap=config["analysis"]["bootstrap"],
        min_effect=DISCOVERY["min_effect"],
        fdr=DISCOVERY["fdr"],
    script:
        "../scripts/discovery_effects.py"


rule discovered_biases:
    input:
        effects=targets.discovered_biases_inputs(design)["effects"],
        edits=targets.discovered_biases_inputs(design)["edits"],
    output:
        parquet=paths.BIASES_TABLE,
        csv=paths.table_file(paths.DISCOVERED_BIASES, "csv"),
        md=paths.table_file(paths.DISCOVERED_BIASES, "md"),
        html=paths.table_file(paths.DISCOVERED_BIASES, "html"),
        edits=[paths.fmt(paths.BIASES_EDITS, dataset=d) for d in design.discovery_datasets()],
    log:
        "logs/discovery/discovered_biases.log",
    conda:
        "../../envs/core.yaml"
    params:
        parts=targets.discovery_edit_parts(design),
        datasets=design.discovery_datasets(),
        fdr=DISCOVERY["fdr"],
    script:
        "../scripts/discovered_biases.py"


rule discovery_recall:
    input:
        biases=paths.BIASES_TABLE,
        edits=[paths.fmt(paths.BIASES_EDITS, dataset=d) for d in design.discovery_datasets()],
        comparisons=[paths.fmt(paths.COMPARISONS, dataset=d) for d in design.discovery_datasets()],
        scales=targets.planted_base_scales(design),
    output:
        csv=paths.table_file(paths.BIASES_RECALL, "csv"),
        md=paths.table_file(paths.BIASES_RECALL, "md"),
        html=paths.table_file(paths.BIASES_RECALL, "html"),
    log:
        "logs/discovery/recall.log",
    conda:
        "../../envs/core.yaml"
    params:
        datasets=design.discovery_datasets(),
        planted=targets.discovery_planted(design),
        moved_share=DISCOVERY["recall"]["moved_share"],
    script:
        "../scripts/discovery_recall.py"


rule figure_discovered_biases:
    input:
        paths.BIASES_TABLE,
    output:
        report(
            paths.fmt(paths.BIASES_FIGURE, ext=design.figures.format),
            caption="../report/figure_discovered_biases.rst",
            category=design.report_category("Findings"),
            subcategory="Discovered biases",
        ),
    log:
        "logs/discovery/figure.log",
    conda:
        "../../envs/core.yaml"
    params:
        figures=design.figures.as_params(),
        level=config["analysis"]["bootstrap"]["confidence_level"],
        fdr=DISCOVERY["fdr"],
    script:
        "../scripts/figure_discovered_biases.py"
