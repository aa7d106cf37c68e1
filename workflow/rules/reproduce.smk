# The reproduction page: every published cell of the paper named by `reproduce` beside this run's value.


rule reproduction:
    input:
        unpack(lambda w: paths.reproduction_inputs(config)),
    output:
        csv=paths.fmt(paths.TABLE, table=paths.REPRODUCTION, ext="csv"),
        md=paths.fmt(paths.TABLE, table=paths.REPRODUCTION, ext="md"),
        html=report(
            paths.fmt(paths.TABLE, table=paths.REPRODUCTION, ext="html"),
            caption="../report/reproduction.rst",
            category=paths.report_category(config, "Reproduction"),
        ),
        figure=report(
            paths.REPRODUCTION_FIGURE.replace("{ext}", paths.figure_ext(config)),
            caption="../report/reproduction_figure.rst",
            category=paths.report_category(config, "Reproduction"),
        ),
    log:
        "logs/reproduction.log",
    conda:
        "../../envs/core.yaml"
    params:
        reproduce=config.get("reproduce"),
        figures=config["figures"],
    script:
        "../scripts/reproduction.py"
