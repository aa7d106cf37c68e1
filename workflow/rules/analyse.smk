# The analyses of paper §4 and App. E-G (issue 5): global sensitivity (PFR, Kendall tau), representative
# examples, probe win rates, the optional LLM attribute-change judge, and their tables and figures.
# Paths and target lists: rmexplain.analysis.paths (AP). Settings reach every rule through params.
import rmexplain.hub as H
import rmexplain.analysis.paths as AP


ANALYSIS = AP.settings(config)


rule analyse_global_sensitivity:
    input:
        explanations=expand(P.EXPLANATIONS, rm=P.reward_models(config), allow_missing=True),
    output:
        pfr=AP.PFR,
        tau_rms=AP.TAU_RMS,
        tau_sides=AP.TAU_SIDES,
    params:
        settings={"bootstrap": ANALYSIS["bootstrap"], "variants": ANALYSIS["variants"]},
        attributes=list(config["attributes"]),
        rms=P.reward_models(config),
    log:
        "logs/analyse/global_sensitivity/{dataset}/{method}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/analyse_global_sensitivity.py"


rule analyse_representative:
    input:
        explanations=expand(P.EXPLANATIONS, rm=P.reward_models(config), allow_missing=True),
        pfr=AP.PFR,
    output:
        local_tau=AP.LOCAL_TAU,
        examples=AP.EXAMPLES,
    params:
        variants=ANALYSIS["variants"],
        rms=AP.example_rms(config),
        pairs=[list(p) for p in AP.example_pairs(config)],
    log:
        "logs/analyse/representative/{dataset}/{method}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/analyse_representative.py"


rule analyse_probes:
    input:
        explanations=expand(P.EXPLANATIONS, rm=P.reward_models(config), allow_missing=True),
        perturbations=expand(P.PERTURBATIONS, orienter=P.orienters(config), allow_missing=True),
        comparisons=P.COMPARISONS,
    output:
        AP.PROBES,
    params:
        probes=ANALYSIS["probes"],
        level=ANALYSIS["bootstrap"]["confidence_level"],
    log:
        "logs/analyse/probes/{dataset}/{method}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/analyse_probes.py"


rule analyse_judge:
    input:
        perturbations=P.PERTURBATIONS,
        comparisons=P.COMPARISONS,
        hub=ancient(H.models_for_judge(config)),
    output:
        AP.JUDGEMENTS,
    params:
        settings={k: v for k, v in ANALYSIS["judge"].items() if k != "enabled"},
        llm=config.get("llm") or {},
        attributes=config["attributes"],
    log:
        "logs/analyse/judge/{dataset}/{method}/{orienter}.log",
    threads: 1
    conda:
        "../../envs/llm.yaml"
    script:
        "../scripts/analyse_judge.py"


rule analyse_table:
    input:
        lambda w: AP.table_inputs(config, w.table),
    output:
        csv=P.TABLE.replace("{ext}", "csv"),
        md=P.TABLE.replace("{ext}", "md"),
        html=report(
            P.TABLE.replace("{ext}", "html"),
            caption="../report/analysis_table.rst",
            category="Analyses",
            subcategory="Tables",
            labels={"table": "{table}"},
        ),
    params:
        level=ANALYSIS["bootstrap"]["confidence_level"],
    wildcard_constraints:
        table="|".join(AP.ANALYSIS_TABLES),
    log:
        "logs/analyse/table_{table}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/analyse_table.py"


rule figure_pfr:
    input:
        AP.PFR,
    output:
        report(
            AP.PFR_FIGURE,
            caption="../report/figure_pfr.rst",
            category="Analyses",
            subcategory="Global sensitivity",
            labels={"dataset": "{dataset}", "method": "{method}"},
        ),
    params:
        figures=config["figures"],
        level=ANALYSIS["bootstrap"]["confidence_level"],
    log:
        "logs/figures/pfr/{dataset}/{method}_{ext}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/figure_pfr.py"


rule figure_local_tau:
    input:
        AP.LOCAL_TAU,
    output:
        report(
            AP.LOCAL_TAU_FIGURE,
            caption="../report/figure_local_tau.rst",
            category="Analyses",
            subcategory="Representativeness",
            labels={"dataset": "{dataset}", "method": "{method}"},
        ),
    params:
        figures=config["figures"],
    log:
        "logs/figures/local_tau/{dataset}/{method}_{ext}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/figure_local_tau.py"


rule figure_examples:
    input:
        examples=AP.EXAMPLES,
        explanations=expand(P.EXPLANATIONS, rm=P.reward_models(config), allow_missing=True),
        perturbations=expand(P.PERTURBATIONS, orienter=P.orienters(config), allow_missing=True),
        comparisons=P.COMPARISONS,
    output:
        figures=AP.example_outputs(config, "{dataset}", "{method}")["figure"],
        pages=report(
            AP.example_outputs(config, "{dataset}", "{method}")["html"],
            caption="../report/examples.rst",
            category="Representative examples",
            subcategory="{dataset} · {method}",
        ),
        markdown=AP.example_outputs(config, "{dataset}", "{method}")["md"],
    params:
        rms=AP.example_rms(config),
        pairs=[list(p) for p in AP.example_pairs(config)],
        figures=config["figures"],
    log:
        "logs/figures/examples/{dataset}/{method}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/figure_examples.py"


rule figure_rank_similarity:
    input:
        tau_rms=expand(AP.TAU_RMS, dataset=P.datasets(config), method=AP.analysed_methods(config)),
        tau_sides=expand(AP.TAU_SIDES, dataset=P.datasets(config), method=AP.analysed_methods(config)),
    output:
        report(
            AP.SUMMARY_FIGURE.replace("{figure}", "rank_similarity"),
            caption="../report/figure_rank_similarity.rst",
            category="Analyses",
            subcategory="Rank similarity",
        ),
    params:
        figures=config["figures"],
        level=ANALYSIS["bootstrap"]["confidence_level"],
    log:
        "logs/figures/rank_similarity_{ext}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/figure_rank_similarity.py"


rule figure_probes:
    input:
        expand(AP.PROBES, dataset=P.datasets(config), method=AP.analysed_methods(config)),
    output:
        report(
            AP.SUMMARY_FIGURE.replace("{figure}", "probe_win_rate"),
            caption="../report/figure_probes.rst",
            category="Analyses",
            subcategory="Probes",
        ),
    params:
        figures=config["figures"],
    log:
        "logs/figures/probe_win_rate_{ext}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/figure_probes.py"


rule figure_judge:
    input:
        AP.judgement_files(config),
    output:
        report(
            AP.SUMMARY_FIGURE.replace("{figure}", "attribute_judge"),
            caption="../report/figure_judge.rst",
            category="Analyses",
            subcategory="Attribute-change check",
        ),
    params:
        level=ANALYSIS["bootstrap"]["confidence_level"],
        figures=config["figures"],
    log:
        "logs/figures/attribute_judge_{ext}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/figure_judge.py"


rule figure_correctness:
    input:
        P.metric_files(config),
    output:
        report(
            AP.SUMMARY_FIGURE.replace("{figure}", "correctness"),
            caption="../report/figure_correctness.rst",
            category="Evaluation",
            subcategory="Correct vs wrong preferences",
        ),
    params:
        figures=config["figures"],
    log:
        "logs/figures/correctness_{ext}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/figure_correctness.py"
