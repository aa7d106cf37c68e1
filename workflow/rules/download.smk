# Hub downloads (issue 7): one localrule job per hub model of the config (rmexplain.hub.hub_models), run where
# Snakemake runs (a cluster's login node has the internet; compute nodes often do not). It fills the Hugging Face
# cache ($HF_HOME/hub); the rules that load a model take its marker as input (`hub=`, rmexplain.hub.models_for_*).
import rmexplain.hub as H


rule download_model:
    output:
        H.HUB_MARKER,
    params:
        spec=lambda w: H.hub_spec(config, w.model),
    wildcard_constraints:
        model="[A-Za-z0-9][A-Za-z0-9_.@-]*",
    log:
        "logs/hub/{model}.log",
    localrule: True
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/download_model.py"
