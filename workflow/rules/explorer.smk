# The explanation explorer: one page to read what the workflow found (results/explorer/index.html, opened
# from disk), built from the tables of every stage. docs/explorer.md.
import rmexplain.explorer.inputs as explorer


rule explorer:
    input:
        unpack(lambda w: explorer.explorer_inputs(design)),
    output:
        index=report(
            paths.EXPLORER,
            caption="../report/explorer.rst",
            category="Explorer",
        ),
        data=directory(paths.EXPLORER_DATA),
    log:
        "logs/explorer.log",
    conda:
        "../../envs/core.yaml"
    params:
        settings=explorer.explorer_settings(design),
    script:
        "../scripts/explorer.py"
