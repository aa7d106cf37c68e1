# rmexplain: explain language reward models.
# This file only includes the rule files and declares the targets; see README.md.
import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

# This workflow's own library (workflow/rmexplain) comes first, installed or not: a clone or a deployed
# module, and the conda envs of its rules (which list third-party packages only), run the code they ship.
sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))


# The embedded demo, unless --configfile names another config (which then replaces it, not extends it).
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/score.smk"
include: "workflow/rules/perturb.smk"
include: "workflow/rules/explanations.smk"
include: "workflow/rules/analyse.smk"
include: "workflow/rules/effects.smk"
include: "workflow/rules/discovery.smk"
include: "workflow/rules/tokens.smk"
include: "workflow/rules/findings.smk"
include: "workflow/rules/explorer.smk"
include: "workflow/rules/provenance.smk"


# The report's landing text: this run's findings first once rule findings wrote them, else the template.
report: report_text()


rule all:
    default_target: True
    input:
        targets.reproduction_targets(design),
        targets.explanation_targets(design),
        targets.discovery_targets(design),
        targets.analysis_targets(design),
        targets.effect_targets(design),
        targets.bias_discovery_targets(design),
        targets.token_targets(design),
        targets.diagnostic_targets(design),
        paths.EXPLORER,
        targets.provenance_targets(),
