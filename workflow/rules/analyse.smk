# The analyses of paper §4 and App. E-G: global sensitivity (PFR, Kendall tau), representative examples,
# probe win rates, the optional LLM attribute-change judge, and their tables and figures.
# Settings reach every rule through params.


ANALYSIS = config["analysis"]
REWARDS_EXAMPLE = design.rewards_example  # None when analysis.rewards_example is off


rule analyse_global_sensitivity:
    input:
        explanations=explanations_of_dataset,
    output:
        pfr=paths.PFR,
        tau_rms=paths.TAU_RMS,
        tau_sides=paths.TAU_SIDES,
    log:
        "logs/analyse/global_sensitivity/{dataset}/{method}.log",
    conda:
        "../../envs/core.yaml"
    params:
        settings={"bootstrap": ANALYSIS["bootstrap"], "variants": ANALYSIS["variants"]},
        attributes=list(config["attributes"]),
        rms=dataset_rms_of,
    script:
        "../scripts/analyse_global_sensitivity.py"


rule analyse_representative:
    input:
        explanations=explanations_of_dataset,
        pfr=paths.PFR,
    output:
        local_tau=paths.LOCAL_TAU,
        examples=paths.EXAMPLES,
    log:
        "logs/analyse/representative/{dataset}/{method}.log",
    conda:
        "../../envs/core.yaml"
    params:
        variants=ANALYSIS["variants"],
        rms=lambda w: design.example_rms(w.dataset),
        pairs=lambda w: [list(p) for p in design.example_pairs(w.dataset)],
    script:
        "../scripts/analyse_representative.py"


rule analyse_probes:
    input:
        perturbations=perturbations_of_dataset,
        comparisons=paths.COMPARISONS,
        originals=original_scores_of_dataset,
        rewards=rewards_of_dataset,
    output:
        paths.PROBES,
    log:
        "logs/analyse/probes/{dataset}/{method}.log",
    conda:
        "../../envs/core.yaml"
    params:
        probes=ANALYSIS["probes"],
        level=ANALYSIS["bootstrap"]["confidence_level"],
        rms=dataset_rms_of,
        orienters=lambda w: targets.probe_orienters(design, w.dataset),
    script:
        "../scripts/analyse_probes.py"


rule analyse_judge:
    input:
        perturbations=paths.PERTURBATIONS,
        comparisons=paths.COMPARISONS,
        hub=ancient(downloads.models_for_judge(design)),
    output:
        judgements=paths.JUDGEMENTS,
        llm_use=paths.LLM_USE_JUDGE,
        job_record=paths.job_record(paths.JUDGEMENTS),
    log:
        "logs/analyse/judge/{dataset}/{method}/{orienter}.log",
    conda:
        resources.llm_conda_env(design, design.judge_llm[1])
    threads: 1
    params:
        settings={k: v for k, v in ANALYSIS["judge"].items() if k != "enabled"},
        llm=config.get("llm") or {},
        attributes=config["attributes"],
    script:
        "../scripts/analyse_judge.py"


rule analyse_table:
    input:
        lambda w: targets.analysis_table_inputs(design, w.table),
    output:
        csv=paths.TABLE.replace("{ext}", "csv"),
        md=paths.TABLE.replace("{ext}", "md"),
        html=report(
            paths.TABLE.replace("{ext}", "html"),
            caption="../report/analysis_table.rst",
            category=design.report_category("Analyses"),
            subcategory="Tables",
            labels={"table": "{table}"},
        ),
    log:
        "logs/analyse/table_{table}.log",
    wildcard_constraints:
        table="|".join(ANALYSIS_TABLES),
    conda:
        "../../envs/core.yaml"
    params:
        level=ANALYSIS["bootstrap"]["confidence_level"],
        foreign=targets.foreign_orientation_settings(design),  # RMs measured on a subset: marked
    script:
        "../scripts/analyse_table.py"


rule figure_pfr:
    input:
        paths.PFR,
    output:
        report(
            paths.PFR_FIGURE,
            caption="../report/figure_pfr.rst",
            category=design.report_category("Analyses"),
            subcategory="Global sensitivity",
            labels={"dataset": "{dataset}", "method": "{method}"},
        ),
    log:
        "logs/figures/pfr/{dataset}/{method}_{ext}.log",
    conda:
        "../../envs/core.yaml"
    params:
        figures=design.figures.as_params(),
        level=ANALYSIS["bootstrap"]["confidence_level"],
        foreign=targets.foreign_orientation_settings(design),
    script:
        "../scripts/figure_pfr.py"


rule figure_local_tau:
    input:
        paths.LOCAL_TAU,
    output:
        report(
            paths.LOCAL_TAU_FIGURE,
            caption="../report/figure_local_tau.rst",
            category=design.report_category("Analyses"),
            subcategory="Representativeness",
            labels={"dataset": "{dataset}", "method": "{method}"},
        ),
    log:
        "logs/figures/local_tau/{dataset}/{method}_{ext}.log",
    conda:
        "../../envs/core.yaml"
    params:
        figures=design.figures.as_params(),
    script:
        "../scripts/figure_local_tau.py"


rule figure_example:
    input:
        examples=paths.EXAMPLES,
        explanations=explanations_of_dataset,
        perturbations=perturbations_of_dataset,
        comparisons=paths.COMPARISONS,
    output:
        figure=targets.example_slot_file(design, "figure"),
        page=report(
            targets.example_slot_file(design, "html"),
            caption="../report/examples.rst",
            category=design.report_category("Representative examples"),
            subcategory="{dataset} · {method}",
        ),
        markdown=targets.example_slot_file(design, "md"),
    log:
        "logs/figures/examples/{dataset}/{method}/{slot}.log",
    wildcard_constraints:
        slot="[A-Za-z0-9][A-Za-z0-9_.-]*",
    conda:
        "../../envs/core.yaml"
    params:
        slot=lambda w: design.example_slot(w.dataset, w.slot),
        figures=design.figures.as_params(),
    script:
        "../scripts/figure_examples.py"


rule figure_rank_similarity:
    input:
        tau_rms=targets.analysis_table_inputs(design, "tau_rms"),
        tau_sides=targets.analysis_table_inputs(design, "tau_sides"),
    output:
        report(
            paths.SUMMARY_FIGURE.replace("{figure}", "rank_similarity"),
            caption="../report/figure_rank_similarity.rst",
            category=design.report_category("Analyses"),
            subcategory="Rank similarity",
        ),
    log:
        "logs/figures/rank_similarity_{ext}.log",
    conda:
        "../../envs/core.yaml"
    params:
        figures=design.figures.as_params(),
        level=ANALYSIS["bootstrap"]["confidence_level"],
        foreign=targets.foreign_orientation_settings(design),
    script:
        "../scripts/figure_rank_similarity.py"


rule figure_probes:
    input:
        targets.analysis_table_inputs(design, "probe_win_rate"),
    output:
        report(
            paths.SUMMARY_FIGURE.replace("{figure}", "probe_win_rate"),
            caption="../report/figure_probes.rst",
            category=design.report_category("Analyses"),
            subcategory="Probes",
        ),
    log:
        "logs/figures/probe_win_rate_{ext}.log",
    conda:
        "../../envs/core.yaml"
    params:
        figures=design.figures.as_params(),
    script:
        "../scripts/figure_probes.py"


rule figure_judge:
    input:
        targets.analysis_table_inputs(design, "attribute_judge"),
    output:
        report(
            paths.SUMMARY_FIGURE.replace("{figure}", "attribute_judge"),
            caption="../report/figure_judge.rst",
            category=design.report_category("Analyses"),
            subcategory="Attribute-change check",
        ),
    log:
        "logs/figures/attribute_judge_{ext}.log",
    conda:
        "../../envs/core.yaml"
    params:
        level=ANALYSIS["bootstrap"]["confidence_level"],
        figures=design.figures.as_params(),
    script:
        "../scripts/figure_judge.py"


rule figure_correctness:
    input:
        targets.metric_files(design),
    output:
        report(
            paths.SUMMARY_FIGURE.replace("{figure}", "correctness"),
            caption="../report/figure_correctness.rst",
            category=design.report_category("Evaluation"),
            subcategory="Correct vs wrong preferences",
        ),
    log:
        "logs/figures/correctness_{ext}.log",
    conda:
        "../../envs/core.yaml"
    params:
        figures=design.figures.as_params(),
    script:
        "../scripts/figure_correctness.py"


rule figure_rewards_example:
    input:
        explanations=lambda w: [
            paths.fmt(
                paths.EXPLANATIONS,
                dataset=REWARDS_EXAMPLE["dataset"],
                method=REWARDS_EXAMPLE["method"],
                rm=rm,
            )
            for rm in REWARDS_EXAMPLE["rms"]
        ],
        examples=lambda w: paths.fmt(
            paths.EXAMPLES, dataset=REWARDS_EXAMPLE["dataset"], method=REWARDS_EXAMPLE["method"]
        ),
    output:
        report(
            paths.SUMMARY_FIGURE.replace("{figure}", "rewards_example"),
            caption="../report/figure_rewards_example.rst",
            category=design.report_category("Analyses"),
            subcategory=design.report_category("Representative examples"),
        ),
    log:
        "logs/figures/rewards_example_{ext}.log",
    conda:
        "../../envs/core.yaml"
    params:
        example=REWARDS_EXAMPLE,
        figures=design.figures.as_params(),
    script:
        "../scripts/figure_rewards_example.py"


# The reproduction page: every published cell of the paper named by `reproduce` beside this run's value.


rule reproduction:
    input:
        unpack(lambda w: targets.reproduction_inputs(design)),
    output:
        csv=paths.fmt(paths.TABLE, table=paths.REPRODUCTION, ext="csv"),
        md=paths.fmt(paths.TABLE, table=paths.REPRODUCTION, ext="md"),
        html=report(
            paths.fmt(paths.TABLE, table=paths.REPRODUCTION, ext="html"),
            caption="../report/reproduction.rst",
            category=design.report_category("Reproduction"),
        ),
        figure=report(
            paths.REPRODUCTION_FIGURE.replace("{ext}", design.figures.format),
            caption="../report/reproduction_figure.rst",
            category=design.report_category("Reproduction"),
        ),
    log:
        "logs/reproduction.log",
    conda:
        "../../envs/core.yaml"
    params:
        reproduce=config.get("reproduce"),
        figures=design.figures.as_params(),
    script:
        "../scripts/reproduction.py"
