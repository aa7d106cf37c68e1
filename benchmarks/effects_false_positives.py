"""Measurement (not a test): how often the attribute effects call a noise-only RM's rows significant.

The planted suite's ``control`` is its base RM plus noise: r = r_base + s · noise · ε(seed, name, prompt,
text), ε a standard normal seeded by the text (``rmexplain.score.planted.noise``). Against its base (its
reference) every reward change is s · noise · [ε(edit) − ε(the text it edited)]: no attribute has an effect,
and a row is a false positive when its interval excludes 0. One run of the suite is one draw of ε; this
script redraws it for ``--seeds`` noise seeds on the suite's own comparisons and edits (a finished
``snakemake --configfile config/planted.yaml`` run's ``results/`` under ``--root``) and reports, per
estimator against a reference, the share of rows with a defined effect that are significant, beside the
nominal 1 − confidence level.

The base's own reward changes cancel against the reference, and a constant factor (s, the reward sd) scales
effects and intervals alike, so the control's reward here is ε alone. Run it with the code to measure on the
path, e.g. for the code before a change: ``PYTHONPATH=/tmp/before/workflow python
benchmarks/effects_false_positives.py --label before``.

    python benchmarks/effects_false_positives.py --seeds 40 --out benchmarks/results/false_positives.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import polars as pl

from rmexplain import paths
from rmexplain.analysis.bootstrap import BootstrapSettings
from rmexplain.effects.analysis import EffectSettings, effect_input, effects_table, with_sources
from rmexplain.score.planted import noise

REFERENCED = ("two_way", "rate_att", "rate_atu", "rate_ate", "length_adjusted")


def control_tables(comparisons: pl.DataFrame, edits: pl.DataFrame, seed: int) -> tuple[pl.DataFrame, ...]:
    """ORIGINAL_SCORES-like and REWARDS-like frames of the noise-only control for one noise seed."""
    sourced = with_sources(edits, comparisons)
    rewards = pl.DataFrame(
        {
            "text_id": sourced["text_id"],
            "reward": noise(seed, "control", sourced["prompt"].to_list(), sourced["text"].to_list()),
        }
    )
    prompts = comparisons["prompt"].to_list()
    originals = comparisons.select("comparison_id").with_columns(
        reward_chosen=pl.Series(noise(seed, "control", prompts, comparisons["chosen"].to_list())),
        reward_rejected=pl.Series(noise(seed, "control", prompts, comparisons["rejected"].to_list())),
    )
    return originals, rewards


def false_positives(root: Path, dataset: str, seeds: int, settings: EffectSettings) -> pl.DataFrame:
    """Per noise seed and estimator: rows with a defined effect and how many are significant."""
    comparisons = pl.read_parquet(root / paths.fmt(paths.COMPARISONS, dataset=dataset))
    edits = pl.read_parquet(root / paths.fmt(paths.EFFECT_EDITS, dataset=dataset, method="rules"))
    attributes = sorted(edits["attribute"].unique().to_list())
    rows = []
    for seed in range(seeds):
        originals, rewards = control_tables(comparisons, edits, seed)
        data = effect_input(comparisons, edits, {"control": originals}, {"control": rewards}, {}, attributes)
        table = effects_table(data, ["control"], {}, settings)
        for (estimator,), group in table.group_by(["estimator"], maintain_order=True):
            defined = group.filter(pl.col("effect").is_not_nan())
            rows.append({"dataset": dataset, "seed": seed, "estimator": estimator, "rows": defined.height,
                         "significant": int(defined["significant"].sum())})  # fmt: skip
    return pl.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--root", type=Path, default=Path("."), help="where a planted-suite run's results/ is"
    )
    parser.add_argument("--datasets", nargs="+", default=["harmless", "helpful"])
    parser.add_argument("--seeds", type=int, default=40, help="noise seeds (0 .. N-1)")
    parser.add_argument("--n-resamples", type=int, default=2000)
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--label", default="", help="what code this measures (written into the JSON)")
    parser.add_argument("--out", type=Path, help="write the per-estimator rates as JSON here")
    args = parser.parse_args()
    settings = EffectSettings(
        REFERENCED,
        "length_adjusted",
        BootstrapSettings(n_resamples=args.n_resamples, confidence_level=args.level),
    )
    start = time.perf_counter()
    frame = pl.concat([false_positives(args.root, d, args.seeds, settings) for d in args.datasets])
    summary = (
        frame.group_by("estimator", maintain_order=True)
        .agg(
            pl.col("rows").sum(),
            pl.col("significant").sum(),
            seeds_with_any=(pl.col("significant") > 0).sum(),
        )
        .with_columns(rate=pl.col("significant") / pl.col("rows"))
    )
    total = {"rows": int(frame["rows"].sum()), "significant": int(frame["significant"].sum())}
    total["rate"] = total["significant"] / total["rows"]
    with pl.Config(tbl_rows=-1):
        print(summary)
    print(f"all referenced estimators: {total['significant']} of {total['rows']} rows significant "
          f"({total['rate']:.1%}) at a nominal {1 - args.level:.0%}; {args.seeds} noise seeds x "
          f"{len(args.datasets)} datasets, {time.perf_counter() - start:.0f} s")  # fmt: skip
    if args.out:
        report = {
            "label": args.label,
            "seeds": args.seeds,
            "datasets": args.datasets,
            "n_resamples": args.n_resamples,
            "nominal": round(1 - args.level, 12),
            "total": total,
            "per_estimator": summary.to_dicts(),
            "per_dataset": frame.group_by("dataset", maintain_order=True)
            .agg(pl.col("rows").sum(), pl.col("significant").sum())
            .to_dicts(),
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
