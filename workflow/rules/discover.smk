# Attribute discovery (issue 3, paper App. A): which attributes the LLM names for the RM's preferences.
# Enabled by perturb.discover.enabled; targets from rmexplain.llm.targets.discovery_files.
import rmexplain.hub as H
import rmexplain.llm.targets as LT


rule discover_attributes:
    input:
        comparisons=P.COMPARISONS,
        scores=orientation_scores,
        prompt=LT.discovery_prompt_input(config),
        hub=ancient(H.models_for_discovery(config)),
    output:
        answers=LT.DISCOVERY_ANSWERS,
        csv=report(LT.DISCOVERY_CSV, category="Attribute discovery", caption="../report/discovery_attributes.rst"),
        md=LT.DISCOVERY_MD,
    params:
        settings=config["perturb"].get("discover") or {},
        llm=config.get("llm") or {},
        attributes=config["attributes"],
    log:
        "logs/discover/{dataset}/{orienter}.log",
    threads: 1
    resources:
        gpu=LT.llm_gpus(config, "discover"),
    conda:
        "../../envs/llm.yaml"
    script:
        "../scripts/discover.py"
