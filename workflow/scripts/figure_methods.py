import polars as pl

from rmexplain.evaluation_plots import methods_figure
from rmexplain.logs import script_logger

log = script_logger(snakemake)
methods_figure(
    pl.read_csv(snakemake.input.coverage),
    pl.read_csv(snakemake.input.distances),
    snakemake.params.figures,
    snakemake.output[0],
)
log.info("wrote %s", snakemake.output[0])
