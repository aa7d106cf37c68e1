"""Print the demo's headline numbers as Markdown (for the README), from results/ of a finished run.

Usage: python docs/demo_summary.py   (after `snakemake --cores 2`)
"""

from pathlib import Path

import polars as pl

HARM_TYPE = ["harmlessness", "sensitivity", "avoid-to-answer", "appropriateness"]
TABLES = Path("results/tables")


def pfr_section() -> str:
    """The §4.1 check in miniature: Y+ flip rates on the harmless data, both demo RMs, every attribute."""
    pfr = pl.read_csv(TABLES / "pfr.csv").filter(
        (pl.col("dataset") == "harmless") & (pl.col("method") == "rules") & (pl.col("side") == "plus")
    )
    wide = (
        pfr.select(
            "attribute",
            "rm",
            pl.format("{} (Δ {})", pl.col("pfr").round(2), pl.col("mean_delta").round(2)).alias("cell"),
        )
        .pivot(on="rm", index="attribute", values="cell")
        .sort("attribute")
    )
    lines = ["| attribute | " + " | ".join(wide.columns[1:]) + " |", "|---" * len(wide.columns) + "|"]
    for row in wide.iter_rows():
        name = f"**{row[0]}**" if row[0] in HARM_TYPE else row[0]
        lines.append("| " + " | ".join([name, *[str(v) for v in row[1:]]]) + " |")
    return "\n".join(lines)


def main() -> None:
    print("Coverage (Table 1 form):\n")
    print((TABLES / "coverage.md").read_text())
    print("Distances and diversity (Table 2 form):\n")
    print((TABLES / "distances.md").read_text())
    print("Harmless data, perturbations of y+: preference flip rate (mean reward delta) per attribute:\n")
    print(pfr_section())


if __name__ == "__main__":
    main()
