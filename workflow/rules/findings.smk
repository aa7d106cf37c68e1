# The findings (docs/findings.md): per dataset and RM, what it rewards and penalises in words and numbers, each
# effect with the edits behind it. They lead the report's landing text (results/findings/landing.rst, which
# the Snakefile's `report:` reads once it exists) and the explorer's first view.


rule effect_changes:
    input:
        unpack(lambda w: targets.effect_change_inputs(design, w.dataset, w.method)),
    output:
        paths.EFFECT_CHANGES,
    log:
        "logs/findings/changes/{dataset}/{method}.log",
    conda:
        "../../envs/core.yaml"
    params:
        rms=lambda w: targets.effect_rms(design, w.dataset),
        references=lambda w: targets.effect_references(design, w.dataset),
        attributes=list(config["attributes"]),
    script:
        "../scripts/effect_changes.py"


rule findings:
    input:
        unpack(lambda w: targets.findings_inputs(design)),
        template=workflow.source_path("../report/workflow.rst"),
    output:
        parquet=paths.FINDINGS,
        csv=paths.table_file(paths.FINDINGS_TABLE, "csv"),
        md=paths.table_file(paths.FINDINGS_TABLE, "md"),
        html=report(
            paths.table_file(paths.FINDINGS_TABLE, "html"),
            caption="../report/findings.rst",
            category=design.report_category("Findings"),
        ),
        landing=paths.REPORT_LANDING,
    log:
        "logs/findings/findings.log",
    conda:
        "../../envs/core.yaml"
    params:
        descriptions=config["attributes"],
        order={"datasets": list(design.datasets), "rms": list(design.reward_models)},
        level=config["analysis"]["bootstrap"]["confidence_level"],
        links=targets.report_links(design),
    script:
        "../scripts/findings.py"
