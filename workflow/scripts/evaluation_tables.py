from pathlib import Path

import polars as pl

from rmexplain.analysis.tables import to_html
from rmexplain.evaluation import evaluation_tables, markdown_table
from rmexplain.logs import script_logger
from rmexplain.schemas import METRICS, read_table

TITLES = {
    "coverage": "CF and SF coverage (paper Table 1)",
    "distances": "Distances and diversity (paper Table 2)",
    "coverage_by_correctness": "Coverage by correct vs wrong RM preference (paper Table 5)",
    "distances_by_correctness": "Distances by correct vs wrong RM preference (paper Table 5)",
}
NOTE = "Mean ± sd over seeds; chosen/rejected are the RM's y+ and y−."

log = script_logger(snakemake)
metrics = pl.concat([read_table(p, METRICS, "metrics") for p in snakemake.input])
for name, (frame, formatted) in evaluation_tables(metrics).items():
    csv = next(p for p in snakemake.output if Path(p).name == f"{name}.csv")
    frame.write_csv(csv, float_precision=4)
    Path(csv).with_suffix(".md").write_text(markdown_table(formatted))
    Path(csv).with_suffix(".html").write_text(to_html(formatted, TITLES[name], NOTE))
    log.info("wrote %s (%d rows)", name, frame.height)
