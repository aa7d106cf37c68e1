# Hub downloads: one localrule job per hub model of the config (rmexplain.hub.hub_models), run where
# Snakemake runs (a cluster's login node has the internet; compute nodes often do not). It fills the Hugging Face
# cache ($HF_HOME/hub); the rules that load a model take its marker as input (`hub=`, rmexplain.hub.models_for_*).


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
