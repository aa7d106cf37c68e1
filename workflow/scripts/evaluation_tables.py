from pathlib import Path

import polars as pl

from rmexplain.evaluation import evaluation_tables
from rmexplain.logs import script_logger
from rmexplain.schemas import METRICS, read_table

log = script_logger(snakemake)
metrics = pl.concat([read_table(p, METRICS, "metrics") for p in snakemake.input])
for name, (frame, markdown) in evaluation_tables(metrics).items():
    csv = next(p for p in snakemake.output if Path(p).name == f"{name}.csv")
    frame.write_csv(csv, float_precision=4)
    Path(csv).with_suffix(".md").write_text(markdown)
    log.info("wrote %s (%d rows)", name, frame.height)
