"""Measurement (not a test): how often discovery's interval for the length slope γ holds the truth, over many
draws of a planted RM's noise.

A planted RM explained against its base (config/weak_biases.yaml's RMs) has reward changes, less the base's,
of exactly what its biases add: s_base · (Σ strength · Δdetector + noise · Δε), ε a standard normal per text
(``rmexplain.score.planted``). So no RM needs to run here: on the edits and comparisons of a finished
weak-bias suite run (``benchmarks/suites.py weak --size full --workdir W``), each draw replaces ε by the one
of another seed, and γ, its interval (the suite's bootstrap settings) and the truth are computed as the
discovery round and ``discovery_recall`` compute them. The ratio γ / truth and whether the interval holds the
truth do not depend on the reward sd the changes are divided by, so s_base and that sd are 1 here. Seed 0 is
the suite's own draw (its γ / truth is the suite's); the noiseless fit is printed beside it (γ equals the
truth there when the fit holds every planted class equal).

    python benchmarks/slope_coverage.py W/weak-full --seeds 100 \
        --json benchmarks/results/suites/slope-coverage_<date>.json
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import time
from pathlib import Path

import numpy as np
import polars as pl
import yaml

from rmexplain import paths
from rmexplain.analysis.bootstrap import BootstrapSettings
from rmexplain.discovery.estimate import AddedEffect, discovery_input, fitted, length_slope
from rmexplain.discovery.recall import slope_truth
from rmexplain.effects.analysis import original_length_sd
from rmexplain.effects.base import EffectInput, RewardChanges
from rmexplain.score.planted import detector, noise, planted_biases

DEFAULT_RMS = ("slope-up", "slope-down", "control")
NO_ROWS, NO_INDEX = np.zeros(0), np.zeros(0, dtype=np.int64)


@dataclasses.dataclass
class Round:
    """One part's discovery round of a finished suite run: its fit input (no RM yet) and its texts."""

    part: str
    data: EffectInput
    prompts: list[str]
    sources: list[str]
    edited: list[str]
    length_sd: float


def read_round(run: Path, part: str) -> Round:
    """The offline engine's round-1 edits of ``part`` in the suite run at ``run``, as the discovery round
    fits them."""
    comparisons = pl.read_parquet(run / paths.fmt(paths.COMPARISONS, dataset=part))
    round_edits = paths.fmt(paths.BIASES_ROUND_EDITS, dataset=part, engine="offline", round=1)
    edits = pl.read_parquet(run / round_edits)
    prompt_of = dict(comparisons.select("comparison_id", "prompt").iter_rows())
    return Round(
        part=part,
        data=discovery_input(comparisons, edits, {}, {}, part),
        prompts=[prompt_of[c] for c in edits["comparison_id"]],
        sources=edits["source_text"].to_list(),
        edited=edits["edited_text"].to_list(),
        length_sd=original_length_sd(comparisons),
    )


def planted_change(spec: dict, edits: Round) -> np.ndarray:
    """Σ strength · (detector(edited) − detector(source)) per edit, in base reward sd."""
    total = np.zeros(len(edits.edited))
    for bias in planted_biases(spec["bias"]):
        detect = detector(bias)
        change = detect(edits.prompts, edits.edited) - detect(edits.prompts, edits.sources)
        total += float(bias.get("strength", 0.0)) * change
    return total


def noise_sd(spec: dict) -> float:
    """The planted RM's noise sd in base reward sd (one term of sd √(Σ noise²) for several biases)."""
    return float(np.sqrt(sum(float(b.get("noise", 0.0)) ** 2 for b in planted_biases(spec["bias"]))))


def noise_change(name: str, seed: int, edits: Round) -> np.ndarray:
    """ε(edited) − ε(source) per edit for the RM ``name`` and ``seed``."""
    return noise(seed, name, edits.prompts, edits.edited) - noise(seed, name, edits.prompts, edits.sources)


def fitted_slope(edits: Round, change: np.ndarray, settings: BootstrapSettings) -> dict[str, float]:
    """γ and its interval of an RM with these reward changes (reward sd 1), as the discovery round fits it."""
    rm = RewardChanges(change, 1.0, NO_INDEX, NO_INDEX, NO_ROWS, NO_ROWS)
    data = dataclasses.replace(edits.data, rms={"planted": rm})
    point, boot, jack = fitted(AddedEffect(), data, "planted", None, settings)
    return length_slope(point, boot, jack, settings, adjusted=True)


def coverage(name: str, spec: dict, edits: Round, seeds: int, settings: BootstrapSettings) -> dict:
    """Per seed 0..seeds−1: γ, interval, whether it holds the truth; and their summary."""
    truth = slope_truth(spec, spec["base"], 1.0, edits.length_sd, 1.0)
    planted = planted_change(spec, edits)
    first_seed = int(planted_biases(spec["bias"])[0].get("seed", 0))
    draws = []
    for k in range(seeds):
        noisy = planted + noise_sd(spec) * noise_change(name, first_seed + k, edits)
        fit = fitted_slope(edits, noisy, settings)
        low, high = fit["length_slope_low"], fit["length_slope_high"]
        draws.append({"seed": first_seed + k, **fit, "holds": bool(low <= truth <= high)})
    gammas = np.array([d["length_slope"] for d in draws])
    widths = np.array([d["length_slope_high"] - d["length_slope_low"] for d in draws])
    return {
        "part": edits.part,
        "rm": name,
        "truth": truth,
        "noiseless": fitted_slope(edits, planted, settings)["length_slope"],
        "suite_draw": draws[0],
        "coverage": float(np.mean([d["holds"] for d in draws])),
        "mean_gamma": float(gammas.mean()),
        "sd_gamma": float(gammas.std(ddof=1)) if seeds > 1 else float("nan"),
        "mean_width": float(widths.mean()),
        "draws": draws,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a finished weak-bias suite run (its folder)")
    parser.add_argument("--config", default="config/weak_biases.yaml", help="the suite's config, in the run")
    parser.add_argument("--rms", nargs="+", default=list(DEFAULT_RMS))
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    config = yaml.safe_load((args.run / args.config).read_text(encoding="utf-8"))
    settings = BootstrapSettings(**config["analysis"]["bootstrap"])
    started = time.monotonic()
    rows = []
    for part in config["datasets"]:
        edits = read_round(args.run, part)
        for name in args.rms:
            row = coverage(name, config["reward_models"][name], edits, args.seeds, settings)
            rows.append(row)
            print(
                f"{part:8s} {name:10s} truth {row['truth']:+.3f}  noiseless {row['noiseless']:+.3f}  "
                f"suite's draw {row['suite_draw']['length_slope']:+.3f}  mean {row['mean_gamma']:+.3f} "
                f"(sd {row['sd_gamma']:.3f})  mean width {row['mean_width']:.3f}  "
                f"coverage {row['coverage']:.0%} of {args.seeds}",
                flush=True,
            )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        summary = {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "run": str(args.run),
            "seeds": args.seeds,
            "bootstrap": config["analysis"]["bootstrap"],
            "wall_seconds": round(time.monotonic() - started, 1),
            "rows": rows,
        }
        args.json.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
