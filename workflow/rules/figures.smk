rule figure_methods:
    input:
        coverage=P.fmt(P.TABLE, table="coverage", ext="csv"),
        distances=P.fmt(P.TABLE, table="distances", ext="csv"),
    output:
        report(
            P.FIGURE.replace("{figure}", "methods"),
            category="Evaluation",
            caption="../report/figure_methods.rst",
        ),
    params:
        figures=config["figures"],
    log:
        "logs/figures/methods_{ext}.log",
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/figure_methods.py"
