# Hub models: downloaded by the localrule download_model (download.smk) first; ancient: only the order matters
# (a model change reruns these jobs through params.spec).
import rmexplain.hub as H


rule score_originals:
    input:
        unpack(rm_artifacts),
        comparisons=P.COMPARISONS,
        hub=lambda w: ancient(H.models_for_rm(config, w.rm)),
    output:
        P.ORIGINAL_SCORES,
    params:
        spec=rm_spec,
    log:
        "logs/score_originals/{dataset}/{rm}.log",
    threads: 2
    resources:
        gpu=rm_gpus,
    conda:
        rm_conda_env
    script:
        "../scripts/score_originals.py"


rule score_perturbations:
    input:
        unpack(rm_artifacts),
        comparisons=P.COMPARISONS,
        perturbations=perturbations_for_rm,
        hub=lambda w: ancient(H.models_for_rm(config, w.rm)),
    output:
        P.PERTURBATION_REWARDS,
    params:
        spec=rm_spec,
    log:
        "logs/score_perturbations/{dataset}/{rm}.log",
    threads: 2
    resources:
        gpu=rm_gpus,
    conda:
        rm_conda_env
    script:
        "../scripts/score_perturbations.py"
