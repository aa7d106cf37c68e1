import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.analysis.stages import run_probes  # after the log is open

run_probes(
    snakemake.input,
    snakemake.params.rms,
    snakemake.params.orienters,
    snakemake.wildcards.dataset,
    snakemake.wildcards.method,
    snakemake.params.probes,
    snakemake.params.level,
    snakemake.output[0],
    log,
)
