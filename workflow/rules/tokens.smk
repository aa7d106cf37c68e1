# Optimal and pessimal tokens (issue 6): vocabulary -> one scan per RM x prompt -> analyses, figures, GCG.
# Paths and target lists: rmexplain.tokens.targets. Run only this part with `snakemake tokens_all`.
# Hub models are downloaded first by download_model (download.smk); `hub=` markers are ancient: only order matters.
import rmexplain.hub as H
import rmexplain.tokens.targets as TK

TOKENS = config["tokens"]  # defaults filled by validate() in common.smk


wildcard_constraints:
    prompt="[A-Za-z0-9][A-Za-z0-9_-]*",
    objective="optimal|pessimal",


rule tokens_all:
    input:
        TK.token_files(config),


rule tokens_vocabulary:
    input:
        hub=lambda w: ancient(H.models_for_tokens_vocabulary(config, w.rm)),
    output:
        TK.VOCABULARY,
    params:
        spec=rm_spec,
        vocabulary=TOKENS["vocabulary"],
    log:
        "logs/tokens/vocabulary/{rm}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/tokens_vocabulary.py"


rule tokens_scan:
    input:
        unpack(rm_artifacts),
        vocabulary=TK.VOCABULARY,
        hub=lambda w: ancient(H.models_for_rm(config, w.rm)),
    output:
        TK.SCAN,
    params:
        spec=rm_spec,
        prompt=lambda w: TOKENS["prompts"][w.prompt],
        scan=TOKENS["scan"],
    log:
        "logs/tokens/scan/{rm}/{prompt}.log",
    threads: lambda w: TK.scan_threads(config["reward_models"][w.rm])
    resources:
        gpu=rm_gpus,
    conda:
        "../../envs/scoring.yaml"
    script:
        "../scripts/tokens_scan.py"


rule tokens_extremes:
    input:
        TK.scan_files(config),
    output:
        report(TK.table("extremes"), category="Optimal and pessimal tokens", caption="../report/tokens_extremes.rst"),
    params:
        n=TOKENS["analysis"].get("n_extremes"),
    log:
        "logs/tokens/extremes.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/tokens_extremes.py"


rule tokens_agreement:
    input:
        TK.scan_files(config),
    output:
        kendall_tau=TK.table("kendall_tau"),
        mds=TK.table("mds"),
        rsa=report(TK.table("rsa"), category="Optimal and pessimal tokens", caption="../report/tokens_rsa.rst"),
    params:
        prompt_ids=list(TOKENS["prompts"]),
        analysis={k: TOKENS["analysis"][k] for k in ("match", "mds_seed", "rsa_permutations")},
        properties=TOKENS["model_properties"],
    log:
        "logs/tokens/agreement.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/tokens_agreement.py"


rule tokens_lexical:
    input:
        TK.scan_files(config),
    output:
        sentiment_slopes=TK.table("sentiment_slopes"),
        frequency_slopes=TK.table("frequency_slopes"),
    params:
        lexicon=TOKENS["analysis"].get("afinn_lexicon"),
    log:
        "logs/tokens/lexical.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/tokens_lexical.py"


rule figure_tokens:
    input:
        scans=TK.scan_files(config),
        kendall_tau=TK.table("kendall_tau"),
        mds=TK.table("mds"),
        rsa=TK.table("rsa"),
        sentiment_slopes=TK.table("sentiment_slopes"),
        frequency_slopes=TK.table("frequency_slopes"),
    output:
        violins=report(TK.figure(config, "violins"), category="Optimal and pessimal tokens",
                       caption="../report/tokens_violins.rst"),
        tau_heatmap=report(TK.figure(config, "tau_heatmap"), category="Optimal and pessimal tokens",
                           caption="../report/tokens_tau_heatmap.rst"),
        mds=report(TK.figure(config, "mds"), category="Optimal and pessimal tokens",
                   caption="../report/tokens_mds.rst"),
        sentiment_slopes=report(TK.figure(config, "sentiment_slopes"), category="Optimal and pessimal tokens",
                                caption="../report/tokens_sentiment_slopes.rst"),
        frequency_slopes=report(TK.figure(config, "frequency_slopes"), category="Optimal and pessimal tokens",
                                caption="../report/tokens_frequency_slopes.rst"),
    params:
        prompts=TOKENS["prompts"],
        figures=config["figures"],
    log:
        "logs/tokens/figures.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/figure_tokens.py"


rule tokens_framing:
    input:
        lambda w: TK.scan_files(config, [w.a, w.b]),
    output:
        report(TK.table("framing_{a}_{b}"), category="Optimal and pessimal tokens",
               caption="../report/tokens_framing.rst"),
    wildcard_constraints:
        a="[A-Za-z0-9]+",
        b="[A-Za-z0-9]+",
    log:
        "logs/tokens/framing_{a}_{b}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/tokens_framing.py"


rule figure_tokens_framing:
    input:
        lambda w: TK.scan_files(config, [w.a, w.b]),
    output:
        report(
            TK.figure(config, "framing_{a}_{b}"),
            category="Optimal and pessimal tokens",
            caption="../report/tokens_framing.rst",
        ),
    params:
        figures=config["figures"],
    wildcard_constraints:
        a="[A-Za-z0-9]+",
        b="[A-Za-z0-9]+",
    log:
        "logs/tokens/figure_framing_{a}_{b}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/figure_tokens_framing.py"


rule tokens_human_scores:
    input:
        unpack(rm_artifacts),
        ranking=(TOKENS.get("human_ranking") or {}).get("path", []),
        hub=lambda w: ancient(H.models_for_rm(config, w.rm)),
    output:
        TK.HUMAN_SCORES,
    params:
        spec=rm_spec,
        prompt=(TOKENS.get("human_ranking") or {}).get("prompt"),
    log:
        "logs/tokens/human/{rm}.log",
    threads: lambda w: TK.scan_threads(config["reward_models"][w.rm])
    resources:
        gpu=rm_gpus,
    conda:
        "../../envs/scoring.yaml"
    script:
        "../scripts/tokens_human_scores.py"


rule tokens_human_compare:
    input:
        TK.human_files(config),
    output:
        human_ranking=report(TK.table("human_ranking"), category="Optimal and pessimal tokens",
                             caption="../report/tokens_human_ranking.rst"),
        human_disagreements=TK.table("human_disagreements"),
    params:
        n=(TOKENS.get("human_ranking") or {}).get("n_disagreements"),
    log:
        "logs/tokens/human_compare.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/tokens_human_compare.py"


rule figure_tokens_human:
    input:
        TK.table("human_disagreements"),
    output:
        report(TK.figure(config, "human_disagreements"), category="Optimal and pessimal tokens",
               caption="../report/tokens_human_disagreements.rst"),
    params:
        figures=config["figures"],
    log:
        "logs/tokens/figure_human_disagreements.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/figure_tokens_human.py"


rule tokens_gcg:
    input:
        hub=lambda w: ancient(H.models_for_rm(config, w.rm)),
    output:
        TK.GCG,
    params:
        spec=rm_spec,
        prompt=lambda w: TOKENS["prompts"][w.prompt],
        gcg={k: v for k, v in TOKENS["gcg"].items() if k not in ("enabled", "objectives", "prompts")},
        scan=TOKENS["scan"],
    log:
        "logs/tokens/gcg/{rm}/{prompt}/{objective}.log",
    threads: 2
    resources:
        gpu=rm_gpus,
    conda:
        "../../envs/scoring.yaml"
    script:
        "../scripts/tokens_gcg.py"


rule tokens_gcg_summary:
    input:
        TK.gcg_files(config),
    output:
        report(TK.table("gcg"), category="Optimal and pessimal tokens", caption="../report/tokens_gcg.rst"),
    log:
        "logs/tokens/gcg_summary.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/tokens_gcg_summary.py"
