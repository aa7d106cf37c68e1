import sys

sys.path.insert(0, f"{snakemake.scriptdir}/..")  # this workflow's own rmexplain, installed or not

from rmexplain.logs import script_logger

log = script_logger(snakemake)
from rmexplain.analysis.stages import run_reproduction  # after the log is open

run_reproduction(
    snakemake.params.reproduce,
    {name: list(snakemake.input.get(name, [])) for name in ("metrics", "tau_rms", "tau_sides", "probes")},
    snakemake.params.figures,
    {name: snakemake.output[name] for name in ("csv", "md", "html", "figure")},
    log,
)
