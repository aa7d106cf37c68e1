# Provenance: what produced this run's numbers (the config itself and its sha256, hub commits, RM code
# hashes, dataset origins, the LLM's reported models, the environments and GPUs of the jobs, the source
# commit) -> results/provenance.json, results/provenance/config.json and a report table. Each run's record
# is also appended to results/provenance_history.jsonl (not an output, so it survives reruns); what changed
# since the last record is named there, in the table and as a warning in the log.


rule provenance:
    input:
        unpack(lambda w: targets.provenance_inputs(design)),
    output:
        json=paths.PROVENANCE,
        config=paths.PROVENANCE_CONFIG,
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
        config=config,
        config_files=[str(f) for f in workflow.configfiles],
        bundled=provenance.bundled_models(config),
        history=paths.PROVENANCE_HISTORY,
    script:
        "../scripts/provenance.py"
