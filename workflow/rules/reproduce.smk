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
        figures=design.figures.options(),
    script:
        "../scripts/reproduction.py"
