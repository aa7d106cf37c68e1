# Provenance: what produced this run's numbers (hub commits, dataset origins, the LLM's reported models,
# packages, the config's sha256) -> results/provenance.json and a report table. Each run's record is also
# appended to results/provenance_history.jsonl (not an output, so it survives reruns); what changed since
# the last record is named there, in the table and as a warning in the log.


rule provenance:
    input:
        unpack(lambda w: targets.provenance_inputs(design)),
    output:
        json=paths.PROVENANCE,
        csv=paths.table_file(paths.PROVENANCE_TABLE, "csv"),
        md=paths.table_file(paths.PROVENANCE_TABLE, "md"),
        html=report(
            paths.table_file(paths.PROVENANCE_TABLE, "html"),
            caption="../report/provenance.rst",
            category=design.report_category("Provenance"),
        ),
    log:
        "logs/provenance.log",
    localrule: True
    conda:
        "../../envs/core.yaml"
    params:
        config_sha256=provenance.config_sha256(config),
        bundled=provenance.bundled_models(config),
        history=paths.PROVENANCE_HISTORY,
    script:
        "../scripts/provenance.py"
