"""Measurement (not a test): discovery's length slope γ and per-instance effects on RMs whose truth is known.

The RMs are python functions of the response with their own tokenisation (whitespace tokens, punctuation
stripped), not the project's: +1 per token holding a digit, −0.8 per first-person word (I, me, my, …) and
a per-word slope of +0.02, 0 or −0.02 reward units, and an RM of length alone. Their truths in the
estimate's units: γ = slope · sd(words) / sd(reward), an instance's effect = its reward / sd(reward). The
offline engine's round runs in process on 60 bundled comparisons of each part; every RM scores its edits;
the script prints, per part and RM, γ with its 95 % interval and three features' effects beside the truths
(``let_me_know`` adds a closer holding "me"; ``numbers as digits`` and ``numbered_list`` add digits).
Beside it, the attribute effects' length row on the rules editor's edits of every paper attribute of the same
comparisons, with the classes held equal for γ (as the workflow computes it) and without (the one-step fit
the effects had before). ``tests/test_discovery_length_slope.py`` holds the current code to these truths on
the helpful part.

Run it with the code to measure on the path, e.g. for the code before a change:
``PYTHONPATH=/tmp/before/workflow python benchmarks/length_slope.py --label before``.

    python benchmarks/length_slope.py --label after --out benchmarks/results/length_slope/after.json
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Callable
from pathlib import Path

import polars as pl

from rmexplain.analysis.bootstrap import BootstrapSettings, interval
from rmexplain.attributes import PAPER_ATTRIBUTES
from rmexplain.data.readers import EMBEDDED_SPLITS, read_embedded
from rmexplain.discovery.base import RoundContext
from rmexplain.discovery.classes import class_counts
from rmexplain.discovery.edit_words import word_changes
from rmexplain.discovery.edits import EditSettings, make_edits, original_units
from rmexplain.discovery.estimate import discovery_input, length_fitted
from rmexplain.discovery.offline import OfflineEngine
from rmexplain.effects.analysis import (
    EffectSettings,
    effect_input,
    effects_table,
    original_length_sd,
    reward_sd,
)
from rmexplain.effects.base import EffectInput
from rmexplain.effects.edits import make_effect_edits
from rmexplain.ids import text_id
from rmexplain.perturb.skips import SkipRecorder
from rmexplain.schemas import ORIGINAL_SCORES, REWARDS, conform

LOG = logging.getLogger("length_slope")
FIRST_PERSON = {"i", "me", "my", "mine", "myself", "i'm", "i've", "i'd", "i'll"}
SLOPES = {"per-word +0.02": 0.02, "per-word 0": 0.0, "per-word -0.02": -0.02}
PER_WORD = {**SLOPES, "length alone": 0.02}
PAIRS = 60
SHOWN = ("let_me_know", "numbers as digits", "numbered_list")
PER_INSTANCE_TRUTH = {"let_me_know": -0.8, "numbers as digits": 1.0, "numbered_list": 1.0}


def tokens(text: str) -> list[str]:
    return [t.strip(".,!?;:\"'()*") for t in text.split()]


def score(rm: str, text: str) -> float:
    """RM ``rm``'s reward of a response."""
    words = tokens(text)
    digits = sum(any(c.isdigit() for c in w) for w in words)
    first = sum(w.lower() in FIRST_PERSON for w in words)
    features = 0.0 if rm == "length alone" else digits - 0.8 * first
    return features + PER_WORD[rm] * len(words)


def comparisons_of(part: str) -> pl.DataFrame:
    """The first 60 bundled comparisons of ``part`` as COMPARISONS."""
    pairs = [pair for split in EMBEDDED_SPLITS for pair in read_embedded(part, split)][:PAIRS]
    return pl.DataFrame({
        "comparison_id": [f"{part}-s0-{i}" for i in range(len(pairs))], "dataset": part, "seed": 0,
        "source_index": [str(i) for i in range(len(pairs))], "prompt": [p.prompt for p in pairs],
        "chosen": [p.chosen for p in pairs], "rejected": [p.rejected for p in pairs],
    })  # fmt: skip


def _filled(frame: pl.DataFrame, contract: dict, name: str) -> pl.DataFrame:
    nulls = {c: pl.lit(None, dtype=contract[c].dtype) for c in contract if c not in frame.columns}
    return conform(frame.with_columns(**nulls), contract, name)


def original_scores(rm: str, comparisons: pl.DataFrame) -> pl.DataFrame:
    """ORIGINAL_SCORES of RM ``rm``."""
    return scores_of(rm, comparisons, lambda text: score(rm, text))


def scores_of(rm: str, comparisons: pl.DataFrame, reward: Callable[[str], float]) -> pl.DataFrame:
    """ORIGINAL_SCORES of an RM named ``rm`` whose reward of a response is ``reward``."""
    frame = comparisons.select(
        "comparison_id",
        rm=pl.lit(rm),
        reward_chosen=pl.col("chosen").map_elements(reward, return_dtype=pl.Float64),
        reward_rejected=pl.col("rejected").map_elements(reward, return_dtype=pl.Float64),
    )
    return _filled(frame, ORIGINAL_SCORES, "original scores")


def edit_rewards(rm: str, comparisons: pl.DataFrame, edits: pl.DataFrame) -> pl.DataFrame:
    """REWARDS of RM ``rm`` on every edited text of a discovery round."""
    return rewards_of(rm, comparisons, edits["comparison_id"], edits["edited_text"])


def rewards_of(
    rm: str,
    comparisons: pl.DataFrame,
    comparison_ids: pl.Series,
    texts: pl.Series,
    reward: Callable[[str], float] | None = None,
) -> pl.DataFrame:
    """REWARDS of RM ``rm`` (or of ``reward`` under that name) on each text, a response to its comparison's
    prompt."""
    reward = reward or (lambda text: score(rm, text))
    prompts = dict(comparisons.select("comparison_id", "prompt").iter_rows())
    rewards = {text_id(prompts[c], t): reward(t) for c, t in zip(comparison_ids, texts, strict=True)}
    frame = pl.DataFrame({"text_id": list(rewards), "rm": rm, "reward": list(rewards.values())})
    return _filled(frame, REWARDS, "rewards")


def scored_round(part: str) -> tuple[pl.DataFrame, dict[str, pl.DataFrame], pl.DataFrame, EffectInput]:
    """(comparisons, originals by RM, edits, the estimator's input) of the offline engine's round."""
    comparisons = comparisons_of(part)
    originals = {rm: original_scores(rm, comparisons) for rm in PER_WORD}
    context = RoundContext(
        dataset=part, round=1, comparisons=comparisons, originals=originals,
        references=dict.fromkeys(PER_WORD), previous=pl.DataFrame(),
        settings={"offline": {"mined": {"max_candidates": 10, "per_rm": 4}}}, log=LOG,
    )  # fmt: skip
    output = OfflineEngine().run_round(context)
    units = original_units(comparisons)
    edits, _ = make_edits(
        output.features, units, EditSettings(40, 3), "offline", 1, output.screened, SkipRecorder()
    )
    rewards = {rm: edit_rewards(rm, comparisons, edits) for rm in PER_WORD}
    return comparisons, originals, edits, discovery_input(comparisons, edits, originals, rewards, part)


def attribute_slopes(
    comparisons: pl.DataFrame, originals: dict[str, pl.DataFrame], settings: BootstrapSettings, classes: bool
) -> dict[str, tuple[float, float, float]]:
    """RM -> the attribute effects' length row (γ, low, high) under the primary estimator: the rules editor's
    round-1 edits of every paper attribute, with the classes (and the words the RM's reward moves with) held
    equal for γ (``classes``) or not (the one-step fit the effects had before)."""
    edits, _ = make_effect_edits(comparisons, "rules", "rules", {}, dict(PAPER_ATTRIBUTES), {}, False, LOG)
    out = {}
    for rm in PER_WORD:
        frame = rewards_of(rm, comparisons, edits["comparison_id"], edits["text"])
        data = effect_input(comparisons, edits, {rm: originals[rm]}, {rm: frame}, {}, list(PAPER_ATTRIBUTES),
                            class_counts if classes else None,
                            word_changes if classes else None)  # fmt: skip
        table = effects_table(
            data, [rm], {rm: None}, EffectSettings(("length_adjusted",), "length_adjusted", settings)
        )
        row = table.filter(pl.col("attribute") == "length").row(0, named=True)
        out[rm] = (row["effect"], row["low"], row["high"])
    return out


def slope_truth(rm: str, comparisons: pl.DataFrame, originals: dict[str, pl.DataFrame]) -> float:
    """RM ``rm``'s true γ: reward sd per sd of words."""
    return PER_WORD[rm] * original_length_sd(comparisons) / reward_sd(originals[rm])


def measure(part: str, settings: BootstrapSettings) -> list[dict]:
    """One row per RM: γ, its interval and truth, the shown features' effects and truths."""
    comparisons, originals, _, data = scored_round(part)
    effects = attribute_slopes(comparisons, originals, settings, classes=True)
    one_step = attribute_slopes(comparisons, originals, settings, classes=False)
    rows = []
    for rm in PER_WORD:
        point, boot, jack = length_fitted(data, rm, None, settings, LOG)
        gamma = float(point[0, -1])
        low, high = interval(gamma, boot[:, -1], jack[:, -1], settings)[:2]
        effect = dict(zip(data.attributes, point[0, :-1].tolist(), strict=True))
        sd = reward_sd(originals[rm])
        truth = {f: 0.0 if rm == "length alone" else PER_INSTANCE_TRUTH[f] / sd for f in SHOWN}
        rows.append({
            "part": part, "rm": rm, "gamma": gamma, "low": float(low), "high": float(high),
            "gamma_truth": slope_truth(rm, comparisons, originals),
            "effects_gamma": effects[rm][0], "effects_low": effects[rm][1], "effects_high": effects[rm][2],
            "effects_gamma_one_step": one_step[rm][0],
            **{f: effect.get(f, float("nan")) for f in SHOWN}, **{f"{f} truth": truth[f] for f in SHOWN},
        })  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="current")
    parser.add_argument("--resamples", type=int, default=200)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    settings = BootstrapSettings(n_resamples=args.resamples)
    rows = [row for part in ("helpful", "harmless") for row in measure(part, settings)]
    for r in rows:
        shown = "  ".join(f"{f} {r[f]:+.2f} (truth {r[f + ' truth']:+.2f})" for f in SHOWN)
        gamma = f"γ {r['gamma']:+.2f} [{r['low']:+.2f}, {r['high']:+.2f}] truth {r['gamma_truth']:+.2f}"
        effects = (
            f"effects' γ {r['effects_gamma']:+.2f} [{r['effects_low']:+.2f}, {r['effects_high']:+.2f}] "
            f"(one step {r['effects_gamma_one_step']:+.2f})"
        )
        print(f"{args.label}  {r['part']:8s} {r['rm']:15s} {gamma} | {effects} | {shown}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"label": args.label, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
