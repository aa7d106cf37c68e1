# The findings (docs/findings.md): per dataset and RM, what it rewards and penalises in words and numbers, each
# effect with the edits behind it. They lead the report's landing text (results/findings/landing.rst, which
# the Snakefile's `report:` reads once it exists) and the explorer's first view.


rule effect_changes:
    input:
        unpack(lambda w: targets.effect_change_inputs(design, w.dataset, w.method)),
    output:
        paths.EFFECT_CHANGES,
    log:
        "logs/findings/changes/{dataset}/{method}.log",
    conda:
        "../../envs/core.yaml"
    params:
        rms=lambda w: targets.effect_rms(design, w.dataset),
        references=lambda w: targets.effect_references(design, w.dataset),
        attributes=list(config["attributes"]),
    script:
        "../scripts/effect_changes.py"


# The carrier re-scored (docs/findings.md): the edits of each (finding, class) the classes' measured effects
# propose, with the class's change undone; their embeddings for RMs that look texts up; every RM's rewards.
rule carrier_edits:
    input:
        unpack(lambda w: targets.carrier_edit_inputs(design, w.dataset)),
    output:
        paths.CARRIER_EDITS,
    log:
        "logs/findings/carriers/{dataset}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/carrier_edits.py"


rule embed_carrier_texts:
    input:
        carriers=[paths.CARRIER_EDITS],
        known=lambda w: targets.embeddings_before(design, w.dataset),
        hub=ancient(downloads.models_for_distances(design)),
    output:
        paths.CARRIER_EMBEDDINGS,
        job_record=paths.job_record(paths.CARRIER_EMBEDDINGS),
    log:
        "logs/findings/carriers/embed/{dataset}.log",
    conda:
        "../../envs/core.yaml"
    threads: 2
    resources:
        gpu=embedding_gpus,
    params:
        encoder={k: config["evaluate"].get(k) for k in ("embedding_model", "batch_size", "device")},
    script:
        "../scripts/embed_effect_texts.py"


rule score_carrier_edits:
    input:
        unpack(rm_artifacts),
        comparisons=paths.COMPARISONS,
        texts=[paths.CARRIER_EDITS],
        embeddings=lambda w: targets.carrier_embeddings_for_rm(design, w.dataset, w.rm),
        known=lambda w: targets.scores_before(design, w.dataset, w.rm, "carriers"),
        hub=rm_hub_models,
    output:
        paths.CARRIER_REWARDS,
        job_record=paths.job_record(paths.CARRIER_REWARDS),
    log:
        "logs/findings/carriers/score/{dataset}/{rm}.log",
    conda:
        rm_conda_env
    threads: rm_threads
    resources:
        gpu=rm_gpus,
    params:
        spec=rm_spec,
        store=config["scoring"]["cache_dir"],
        stage="carriers",
    script:
        "../scripts/score_stage.py"


rule findings:
    input:
        unpack(lambda w: targets.findings_inputs(design)),
        template=workflow.source_path("../report/workflow.rst"),
    output:
        parquet=paths.FINDINGS,
        csv=paths.table_file(paths.FINDINGS_TABLE, "csv"),
        md=paths.table_file(paths.FINDINGS_TABLE, "md"),
        html=report(
            paths.table_file(paths.FINDINGS_TABLE, "html"),
            caption="../report/findings.rst",
            category=design.report_category("Findings"),
        ),
        landing=paths.REPORT_LANDING,
    log:
        "logs/findings/findings.log",
    conda:
        "../../envs/core.yaml"
    params:
        descriptions=config["attributes"],
        order={"datasets": list(design.datasets), "rms": list(design.reward_models)},
        level=config["analysis"]["bootstrap"]["confidence_level"],
        links=targets.report_links(design),
        carriers=targets.carrier_rms(design),
        bootstrap=config["analysis"]["bootstrap"],
    script:
        "../scripts/findings.py"
