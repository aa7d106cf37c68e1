# Optimal and pessimal tokens: vocabulary -> one scan per RM x prompt -> analyses, figures, GCG.
# Run only this part with `snakemake tokens_all`.
# Hub models are downloaded first by download_model (data.smk); `hub=` markers are ancient: only order matters.

TOKENS = config["tokens"]  # defaults filled by the config check in common.smk
# What a scan job depends on: not which mode the analyses read or whether modes are compared, so changing
# tokens.scan.mode or .compare reruns no scan.
SCAN_SETTINGS = {k: v for k, v in TOKENS["scan"].items() if k not in ("mode", "compare", "compare_n")}
# The date chat templates see, for the rules that render templates without the other scan settings.
TEMPLATE_DATE = {"template_date": TOKENS["scan"]["template_date"]}
SCAN_MODE_OF_DIR = {scan_dir: mode for mode, scan_dir in paths.SCAN_DIRS.items()}
# The paper's computations take every tokens.paper_analysis key but the switches.
PAPER_OPTIONS = {k: v for k, v in TOKENS["paper_analysis"].items() if k not in ("enabled", "properties")}


wildcard_constraints:
    prompt="[A-Za-z0-9][A-Za-z0-9_-]*",
    objective="optimal|pessimal",
    elo_prompt="|".join(targets.elo_prompt_ids()),


rule tokens_all:
    input:
        targets.token_targets(design),


rule tokens_vocabulary:
    input:
        hub=lambda w: ancient(downloads.models_for_tokens_vocabulary(design, w.rm)),
    output:
        paths.TOKEN_VOCABULARY,
    log:
        "logs/tokens/vocabulary/{rm}.log",
    conda:
        rm_conda_env
    params:
        spec=rm_spec,
        vocabulary=TOKENS["vocabulary"],
    script:
        "../scripts/tokens_vocabulary.py"


rule tokens_scan:
    input:
        unpack(rm_artifacts),
        vocabulary=paths.TOKEN_VOCABULARY,
        hub=rm_hub_models,
    output:
        paths.TOKEN_SCAN_IN,
        job_record=paths.job_record(paths.TOKEN_SCAN_IN),
    log:
        "logs/tokens/{scan_dir}/{rm}/{prompt}.log",
    wildcard_constraints:
        scan_dir="|".join(paths.SCAN_DIRS.values()),
    conda:
        rm_conda_env
    threads: rm_threads
    resources:
        gpu=rm_gpus,
    params:
        spec=rm_spec,
        prompt=lambda w: TOKENS["prompts"][w.prompt],
        scan=SCAN_SETTINGS,
        mode=lambda w: SCAN_MODE_OF_DIR[w.scan_dir],
    script:
        "../scripts/tokens_scan.py"


rule tokens_import_scan:
    input:
        lambda w: design.tokens.imported[w.rm],
    output:
        paths.TOKEN_SCAN_IMPORTED,
    log:
        "logs/tokens/scans_imported/{rm}/{prompt}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/tokens_import_scan.py"


rule tokens_scan_modes:
    input:
        lambda w: [p for *_, exact, official in targets.scan_comparisons(design) for p in (exact, official)],
    output:
        table=report(
            paths.token_table("scan_modes"),
            category=design.report_category("Optimal and pessimal tokens"),
            caption="../report/tokens_scan_modes.rst",
        ),
        figure=report(
            targets.token_figure(design, "scan_modes"),
            category=design.report_category("Optimal and pessimal tokens"),
            caption="../report/tokens_scan_modes.rst",
        ),
    log:
        "logs/tokens/scan_modes.log",
    conda:
        lambda w: resources.rm_conda_env(design, targets.scan_comparisons(design)[0][0])
    params:
        pairs=[list(pair) for pair in targets.scan_comparisons(design)],
        specs=lambda w: {rm: config["reward_models"][rm] for rm, *_ in targets.scan_comparisons(design)},
        prompts=TOKENS["prompts"],
        n=TOKENS["scan"]["compare_n"],
        figures=design.figures.as_params(),
        scan=TEMPLATE_DATE,
    script:
        "../scripts/tokens_scan_modes.py"


rule tokens_paper_analysis:
    input:
        targets.token_scan_files(design),
    output:
        **targets.paper_token_tables(design),
    log:
        "logs/tokens/paper_analysis.log",
    conda:
        "../../envs/core.yaml"
    params:
        prompt_ids=list(design.tokens.prompts),
        options=PAPER_OPTIONS,
        framing_pairs=[list(pair) for pair in design.tokens.framing_pairs],
        properties=(None if TOKENS["paper_analysis"]["properties"] == "paper" else TOKENS["model_properties"]),
    script:
        "../scripts/tokens_paper_analysis.py"


rule figure_tokens_paper:
    input:
        targets.token_scan_files(design),
    output:
        **{
            name: report(
                path,
                category=design.report_category("Optimal and pessimal tokens"),
                caption="../report/tokens_paper_figures.rst",
            )
            for name, path in targets.paper_token_figures(design).items()
        },
    log:
        "logs/tokens/figure_paper.log",
    conda:
        "../../envs/core.yaml"
    params:
        prompts=TOKENS["prompts"],
        options=PAPER_OPTIONS,
        framing_pairs=[list(pair) for pair in design.tokens.framing_pairs],
        figures=design.figures.as_params(),
    script:
        "../scripts/figure_tokens_paper.py"


rule tokens_extremes:
    input:
        targets.token_scan_files(design),
    output:
        report(
            paths.token_table("extremes"),
            category=design.report_category("Optimal and pessimal tokens"),
            caption="../report/tokens_extremes.rst",
        ),
    log:
        "logs/tokens/extremes.log",
    conda:
        "../../envs/core.yaml"
    params:
        n=TOKENS["analysis"].get("n_extremes"),
    script:
        "../scripts/tokens_extremes.py"


rule tokens_agreement:
    input:
        targets.token_scan_files(design),
    output:
        kendall_tau=paths.token_table("kendall_tau"),
        mds=paths.token_table("mds"),
        rsa=report(
            paths.token_table("rsa"),
            category=design.report_category("Optimal and pessimal tokens"),
            caption="../report/tokens_rsa.rst",
        ),
    log:
        "logs/tokens/agreement.log",
    conda:
        "../../envs/core.yaml"
    params:
        prompt_ids=list(TOKENS["prompts"]),
        analysis={k: TOKENS["analysis"][k] for k in ("match", "mds_seed", "rsa_permutations")},
        properties=TOKENS["model_properties"],
    script:
        "../scripts/tokens_agreement.py"


rule tokens_lexical:
    input:
        targets.token_scan_files(design),
    output:
        sentiment_slopes=paths.token_table("sentiment_slopes"),
        frequency_slopes=paths.token_table("frequency_slopes"),
    log:
        "logs/tokens/lexical.log",
    conda:
        "../../envs/core.yaml"
    params:
        lexicon=TOKENS["analysis"].get("afinn_lexicon"),
    script:
        "../scripts/tokens_lexical.py"


rule figure_tokens:
    input:
        scans=targets.token_scan_files(design),
        kendall_tau=paths.token_table("kendall_tau"),
        mds=paths.token_table("mds"),
        rsa=paths.token_table("rsa"),
        sentiment_slopes=paths.token_table("sentiment_slopes"),
        frequency_slopes=paths.token_table("frequency_slopes"),
    output:
        violins=report(
            targets.token_figure(design, "violins"),
            category=design.report_category("Optimal and pessimal tokens"),
            caption="../report/tokens_violins.rst",
        ),
        tau_heatmap=report(
            targets.token_figure(design, "tau_heatmap"),
            category=design.report_category("Optimal and pessimal tokens"),
            caption="../report/tokens_tau_heatmap.rst",
        ),
        mds=report(
            targets.token_figure(design, "mds"),
            category=design.report_category("Optimal and pessimal tokens"),
            caption="../report/tokens_mds.rst",
        ),
        sentiment_slopes=report(
            targets.token_figure(design, "sentiment_slopes"),
            category=design.report_category("Optimal and pessimal tokens"),
            caption="../report/tokens_sentiment_slopes.rst",
        ),
        frequency_slopes=report(
            targets.token_figure(design, "frequency_slopes"),
            category=design.report_category("Optimal and pessimal tokens"),
            caption="../report/tokens_frequency_slopes.rst",
        ),
    log:
        "logs/tokens/figures.log",
    conda:
        "../../envs/core.yaml"
    params:
        prompts=TOKENS["prompts"],
        figures=design.figures.as_params(),
    script:
        "../scripts/figure_tokens.py"


rule tokens_framing:
    input:
        lambda w: targets.token_scan_files(design, [w.a, w.b]),
    output:
        report(
            paths.token_table("framing_{a}_{b}"),
            category=design.report_category("Optimal and pessimal tokens"),
            caption="../report/tokens_framing.rst",
        ),
    log:
        "logs/tokens/framing_{a}_{b}.log",
    wildcard_constraints:
        a="[A-Za-z0-9]+",
        b="[A-Za-z0-9]+",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/tokens_framing.py"


rule figure_tokens_framing:
    input:
        lambda w: targets.token_scan_files(design, [w.a, w.b]),
    output:
        report(
            targets.token_figure(design, "framing_{a}_{b}"),
            category=design.report_category("Optimal and pessimal tokens"),
            caption="../report/tokens_framing.rst",
        ),
    log:
        "logs/tokens/figure_framing_{a}_{b}.log",
    wildcard_constraints:
        a="[A-Za-z0-9]+",
        b="[A-Za-z0-9]+",
    conda:
        "../../envs/core.yaml"
    params:
        figures=design.figures.as_params(),
    script:
        "../scripts/figure_tokens_framing.py"


rule tokens_human_scores:
    input:
        unpack(rm_artifacts),
        ranking=(TOKENS.get("human_ranking") or {}).get("path", []),
        hub=lambda w: [] if targets.human_scores_in_file(design, w.rm) else rm_hub_models(w),
    output:
        paths.TOKEN_HUMAN_SCORES,
        job_record=paths.job_record(paths.TOKEN_HUMAN_SCORES),
    log:
        "logs/tokens/human/{rm}.log",
    conda:
        rm_conda_env
    threads: rm_threads
    resources:
        gpu=lambda w: 0 if targets.human_scores_in_file(design, w.rm) else rm_gpus(w),
    params:
        spec=rm_spec,
        prompt=(TOKENS.get("human_ranking") or {}).get("prompt"),
        scan=TEMPLATE_DATE,
    script:
        "../scripts/tokens_human_scores.py"


rule tokens_human_compare:
    input:
        targets.token_human_files(design),
    output:
        **{f"figure5_{part}": paths.token_table(f"human_figure5_{part}") for part in paths.ELO_TABLES},
        human_ranking=report(
            paths.token_table("human_ranking"),
            category=design.report_category("Optimal and pessimal tokens"),
            caption="../report/tokens_human_ranking.rst",
        ),
        human_disagreements=paths.token_table("human_disagreements"),
    log:
        "logs/tokens/human_compare.log",
    conda:
        "../../envs/core.yaml"
    params:
        n=(TOKENS.get("human_ranking") or {}).get("n_disagreements"),
    script:
        "../scripts/tokens_human_compare.py"


rule figure_tokens_human:
    input:
        paths.token_table("human_disagreements"),
    output:
        report(
            targets.token_figure(design, "human_disagreements"),
            category=design.report_category("Optimal and pessimal tokens"),
            caption="../report/tokens_human_disagreements.rst",
        ),
    log:
        "logs/tokens/figure_human_disagreements.log",
    conda:
        "../../envs/core.yaml"
    params:
        figures=design.figures.as_params(),
    script:
        "../scripts/figure_tokens_human.py"


rule tokens_gcg:
    input:
        hub=rm_hub_models,
    output:
        paths.TOKEN_GCG,
        job_record=paths.job_record(paths.TOKEN_GCG),
    log:
        "logs/tokens/gcg/{rm}/{prompt}/{objective}.log",
    conda:
        rm_conda_env
    threads: 2
    resources:
        gpu=rm_gpus,
    params:
        spec=rm_spec,
        prompt=lambda w: TOKENS["prompts"][w.prompt],
        gcg={
            k: v
            for k, v in TOKENS["gcg"].items()
            if k not in ("enabled", "objectives", "prompts", "variant")
        },
        variant=TOKENS["gcg"]["variant"],
        scan=SCAN_SETTINGS,
    script:
        "../scripts/tokens_gcg.py"


rule tokens_gcg_summary:
    input:
        targets.gcg_files(design),
    output:
        report(
            paths.token_table("gcg"),
            category=design.report_category("Optimal and pessimal tokens"),
            caption="../report/tokens_gcg.rst",
        ),
    log:
        "logs/tokens/gcg_summary.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/tokens_gcg_summary.py"


rule tokens_elo:
    input:
        lambda w: targets.elo_data_file(w.elo_prompt),
    output:
        spearman=report(
            paths.elo_table("{elo_prompt}", "spearman"),
            category=design.report_category("Optimal and pessimal tokens"),
            caption="../report/tokens_elo.rst",
        ),
        differences=paths.elo_table("{elo_prompt}", "differences"),
        top_items=paths.elo_table("{elo_prompt}", "top_items"),
        trajectories=paths.elo_table("{elo_prompt}", "trajectories"),
    log:
        "logs/tokens/elo_{elo_prompt}.log",
    conda:
        "../../envs/core.yaml"
    params:
        n_differences=TOKENS["elo"]["n_differences"],
        n_background=TOKENS["elo"]["n_background"],
        n_highlight=TOKENS["elo"]["n_highlight"],
    script:
        "../scripts/tokens_elo.py"


rule tokens_elo_agreement:
    input:
        lambda w: targets.elo_data_file(w.elo_prompt),
    output:
        **{part: paths.elo_table("{elo_prompt}", part) for part in paths.ELO_AGREEMENT_TABLES},
        tau_heatmap=report(
            targets.elo_figure(design, "{elo_prompt}", "tau_heatmap"),
            category=design.report_category("Optimal and pessimal tokens"),
            caption="../report/tokens_elo_agreement.rst",
        ),
        mds_map=report(
            targets.elo_figure(design, "{elo_prompt}", "mds_map"),
            category=design.report_category("Optimal and pessimal tokens"),
            caption="../report/tokens_elo_agreement.rst",
        ),
    log:
        "logs/tokens/elo_agreement_{elo_prompt}.log",
    conda:
        "../../envs/core.yaml"
    params:
        permutations=TOKENS["analysis"]["rsa_permutations"],
        seed=TOKENS["analysis"]["mds_seed"],
        figures=design.figures.as_params(),
    script:
        "../scripts/tokens_elo_agreement.py"
