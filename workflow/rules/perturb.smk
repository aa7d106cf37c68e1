# Perturbation generation (issues 2 and 3): every method (rules, file, two_step, random, polyjuice) runs
# through rmexplain.perturb.run.perturb_to_parquet. LLM answers are cached outside results/ (llm.cache_dir).
import rmexplain.hub as H
import rmexplain.llm.targets as LT
from rmexplain.perturb.run import PERTURB_SKIPS_PATH


rule perturb:
    input:
        unpack(lambda w: LT.prompt_inputs(config, w.method)),
        comparisons=P.COMPARISONS,
        scores=orientation_scores,
        hub=lambda w: ancient(H.models_for_perturb(config, w.method)),  # LLM or Polyjuice (download.smk)
    output:
        perturbations=P.PERTURBATIONS,
        skipped=PERTURB_SKIPS_PATH,
    params:
        settings=method_settings,
        llm=llm_settings,
        attributes=config["attributes"],
    log:
        "logs/perturb/{dataset}/{method}/{orienter}.log",
    threads: 1
    resources:
        gpu=lambda w: LT.llm_gpus(config, w.method),
    conda:
        "../../envs/llm.yaml"
    script:
        "../scripts/perturb.py"
