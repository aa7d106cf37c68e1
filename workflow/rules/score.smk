# Hub models: downloaded by the localrule download_model (data.smk) first; ancient: only the order matters
# (a model change reruns these jobs through params.spec). Each RM is asked once per distinct text of a
# dataset: a scoring job copies the texts its RM's earlier score tables hold (``known``: the originals, then
# the perturbations, the effect edits and the discovery rounds, in that order).


rule score_originals:
    input:
        unpack(rm_artifacts),
        comparisons=paths.COMPARISONS,
        hub=rm_hub_models,
    output:
        paths.ORIGINAL_SCORES,
        job_record=paths.job_record(paths.ORIGINAL_SCORES),
    log:
        "logs/score_originals/{dataset}/{rm}.log",
    conda:
        rm_conda_env
    threads: rm_threads
    resources:
        gpu=rm_gpus,
    params:
        spec=rm_spec,
        store=config["scoring"]["cache_dir"],
    script:
        "../scripts/score_originals.py"


rule score_perturbations:
    input:
        unpack(rm_artifacts),
        comparisons=paths.COMPARISONS,
        texts=perturbations_for_rm,
        embeddings=text_embeddings_for_rm,
        known=lambda w: targets.scores_before(design, w.dataset, w.rm, "perturbations"),
        hub=rm_hub_models,
    output:
        paths.PERTURBATION_REWARDS,
        job_record=paths.job_record(paths.PERTURBATION_REWARDS),
    log:
        "logs/score_perturbations/{dataset}/{rm}.log",
    conda:
        rm_conda_env
    threads: rm_threads
    resources:
        gpu=rm_gpus,
    params:
        spec=rm_spec,
        store=config["scoring"]["cache_dir"],
        stage="perturbations",
    script:
        "../scripts/score_stage.py"


rule train_demo_rm:
    input:
        demo_training_data,
    output:
        paths.DEMO_HEAD,
    log:
        "logs/demo_rm/{rm}.log",
    conda:
        rm_conda_env
    threads: 1
    params:
        part=lambda w: config["reward_models"][w.rm]["train_part"],
        training=config["demo_rm"],
    script:
        "../scripts/train_demo_rm.py"


# How many scored texts were over each RM's token limit (cut or skipped), per dataset and stage.


rule truncation_table:
    input:
        [part[3] for part in targets.truncation_parts(design)],
    output:
        csv=paths.fmt(paths.TABLE, table=paths.TRUNCATION, ext="csv"),
        md=paths.fmt(paths.TABLE, table=paths.TRUNCATION, ext="md"),
        html=report(
            paths.fmt(paths.TABLE, table=paths.TRUNCATION, ext="html"),
            caption="../report/truncation.rst",
            category=design.report_category("Diagnostics"),
        ),
    log:
        "logs/truncation_table.log",
    conda:
        "../../envs/core.yaml"
    params:
        parts=targets.truncation_parts(design),
        policies=targets.overlong_policies(design),
    script:
        "../scripts/truncation_table.py"
