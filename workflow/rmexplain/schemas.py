"""The Parquet column contracts between rules, in one place.

Every table a rule writes is checked against its contract here before it is written
(``write_table``), and every table a rule reads is checked when it is read (``read_table``).
docs/contracts.md is generated from these dictionaries by ``rmexplain schemas``
(a test checks that it is up to date), so code and documentation cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl


@dataclass(frozen=True)
class Column:
    """One column of a contract: its polars dtype, whether nulls are allowed, and what it means."""

    dtype: pl.DataType | type[pl.DataType]
    doc: str
    nullable: bool = False


Contract = dict[str, Column]

COMPARISONS: Contract = {
    "comparison_id": Column(pl.String, "Unique id: `{dataset}-s{seed}-{source_index}`."),
    "dataset": Column(pl.String, "Dataset name from config."),
    "seed": Column(pl.Int64, "Sampling seed this comparison was drawn with."),
    "source_index": Column(pl.String, "Row (or group) index of the pair in its source."),
    "prompt": Column(pl.String, "The user prompt x (single turn)."),
    "chosen": Column(pl.String, "Human-preferred response."),
    "rejected": Column(pl.String, "Human-dispreferred response."),
}

ORIGINAL_SCORES: Contract = {
    "comparison_id": Column(pl.String, "Joins COMPARISONS."),
    "rm": Column(pl.String, "Reward model name from config."),
    "reward_chosen": Column(
        pl.Float64, "r(x, chosen); null when `overlong: skip` left it unscored (over the token limit).", True
    ),
    "reward_rejected": Column(pl.Float64, "r(x, rejected); null as for `reward_chosen`.", True),
    "plus_target": Column(
        pl.String,
        "Which original the RM prefers (y+): `chosen` or `rejected`; null on an exact tie or a null reward.",
        True,
    ),
    "agrees_with_human": Column(pl.Boolean, "True when y+ is the human-chosen response.", True),
    "truncated_chosen": Column(
        pl.Boolean,
        "Whether (x, chosen) is over the RM's token limit (cut, or skipped); null: the backend cannot tell.",
        True,
    ),
    "truncated_rejected": Column(pl.Boolean, "The same for (x, rejected).", True),
    "max_length": Column(pl.Int64, "The token limit checked; null when none is known.", True),
}

PERTURBATIONS: Contract = {
    "perturbation_id": Column(
        pl.String, "Stable id: hash of (method, orienter, comparison, target, attribute, variant)."
    ),
    "comparison_id": Column(pl.String, "Joins COMPARISONS."),
    "target": Column(pl.String, "Which original was perturbed: `chosen` or `rejected`."),
    "direction": Column(
        pl.String, "`worse` (target was y+) or `better` (target was y−) for the orienting RM."
    ),
    "attribute": Column(pl.String, "Attribute perturbed along; null for unconditioned methods.", True),
    "variant": Column(pl.Int64, "Index of this perturbation among those of the same (target, attribute)."),
    "text": Column(pl.String, "The perturbed response."),
    "method": Column(pl.String, "Perturbation method (`rules`, `file`, `two_step`, `random`, `polyjuice`)."),
    "orienter": Column(pl.String, "RM whose preference set the direction, or `shared`."),
    "focus_words": Column(pl.List(pl.String), "Words of the original the edit centred on (step-1 analogue)."),
    "generator": Column(pl.String, "Generator details (rule name, LLM model, template version)."),
}

REWARDS: Contract = {
    "text_id": Column(pl.String, "sha256 of prompt + NUL + response; joins PERTURBATIONS via `text_id()`."),
    "rm": Column(pl.String, "Reward model name."),
    "reward": Column(
        pl.Float64, "r(x, y') of the perturbed response; null when `overlong: skip` left it unscored.", True
    ),
    "truncated": Column(
        pl.Boolean, "Whether (x, y') is over the RM's token limit; null: the backend cannot tell.", True
    ),
    "max_length": Column(pl.Int64, "The token limit checked; null when none is known.", True),
}

EXPLANATIONS: Contract = {
    "dataset": Column(pl.String, "Dataset name."),
    "rm": Column(pl.String, "Reward model explained."),
    "method": Column(pl.String, "Perturbation method."),
    "comparison_id": Column(pl.String, "Joins COMPARISONS."),
    "seed": Column(pl.Int64, "Sampling seed of the comparison."),
    "perturbation_id": Column(pl.String, "Joins PERTURBATIONS."),
    "target": Column(pl.String, "`chosen` or `rejected` (human label of the perturbed original)."),
    "side": Column(pl.String, "`plus` (a perturbation of y+) or `minus` (of y−), for this RM."),
    "attribute": Column(pl.String, "Attribute, null for unconditioned methods.", True),
    "variant": Column(pl.Int64, "Variant index."),
    "reward_plus": Column(pl.Float64, "r(x, y+)."),
    "reward_minus": Column(pl.Float64, "r(x, y−)."),
    "reward_perturbed": Column(pl.Float64, "r(x, y') of this perturbation."),
    "kind": Column(pl.String, "`counterfactual` or `semifactual` (paper §2.2; ties are semifactual)."),
    "sf_subkind": Column(
        pl.String,
        "For semifactuals: `tie` (reward exactly equal to the other original's: a tie is no flip),"
        " `between` (reward stayed between the originals) or `beyond` (moved past the perturbed response's"
        " own original, away from the other); null for counterfactuals.",
        True,
    ),
    "reward_delta": Column(
        pl.Float64,
        "Change opposing the original preference: r(y+) − r(y'+) on plus, r(y'−) − r(y−) on minus.",
    ),
    "agrees_with_human": Column(pl.Boolean, "Whether the RM's original preference matches the human label."),
}

DISTANCES: Contract = {
    "perturbation_id": Column(pl.String, "Joins PERTURBATIONS."),
    "syntactic_distance": Column(pl.Float64, "Word-level Levenshtein distance / max(len) in words."),
    "semantic_distance": Column(pl.Float64, "1 − cosine similarity of sentence embeddings."),
}

TEXT_EMBEDDINGS: Contract = {
    "text": Column(
        pl.String, "A distinct text of the dataset (a prompt, original, perturbation or edit), sorted."
    ),
    "embedding": Column(
        pl.List(pl.Float32), "Unit-normalised sentence embedding from one encoder pass (cut at its window)."
    ),
    "chunked_embedding": Column(
        pl.List(pl.Float32),
        "For a text over the encoder's window: the word-piece-weighted mean of its chunks' embeddings.",
        True,
    ),
}

METRICS: Contract = {
    "dataset": Column(pl.String, "Dataset name."),
    "rm": Column(pl.String, "Reward model."),
    "method": Column(pl.String, "Perturbation method."),
    "seed": Column(pl.Int64, "Sampling seed."),
    "subset": Column(pl.String, "`all`, `correct` or `wrong` (RM preference vs human label)."),
    "metric": Column(pl.String, "Metric name, e.g. `cf_coverage_plus`, `syntactic_distance`."),
    "value": Column(pl.Float64, "NaN where undefined (e.g. no pairs for diversity).", True),
    "n": Column(
        pl.Int64,
        "Number of units the value averages over (comparisons, perturbations or sets). A coverage's "
        "comparisons exclude a side whose every perturbation was over the RM's token limit under "
        "`overlong: skip` (docs/backends.md).",
    ),
}

CONTRACTS: dict[str, Contract] = {
    "comparisons": COMPARISONS,
    "original_scores": ORIGINAL_SCORES,
    "perturbations": PERTURBATIONS,
    "rewards": REWARDS,
    "explanations": EXPLANATIONS,
    "text_embeddings": TEXT_EMBEDDINGS,
    "distances": DISTANCES,
    "metrics": METRICS,
}


class ContractError(ValueError):
    """A table does not match its column contract."""


def polars_schema(contract: Contract) -> dict[str, pl.DataType]:
    """The polars schema of a contract, for building empty or typed frames."""
    return {name: col.dtype for name, col in contract.items()}


def conform(df: pl.DataFrame, contract: Contract, name: str) -> pl.DataFrame:
    """Check columns, dtypes and nulls; return the contract's columns first, extra columns after.

    Raises ContractError naming the table, the column and (for nulls) the first offending row.
    """
    missing = [c for c in contract if c not in df.columns]
    if missing:
        raise ContractError(f"{name}: missing column(s) {missing}; have {df.columns}")
    casts = []
    for col_name, col in contract.items():
        if df.schema[col_name] != col.dtype:
            try:
                casts.append(pl.col(col_name).cast(col.dtype, strict=True))
            except Exception as err:  # pragma: no cover - cast building never fails in practice
                raise ContractError(f"{name}: column {col_name!r} cannot be cast to {col.dtype}") from err
    if casts:
        try:
            df = df.with_columns(casts)
        except pl.exceptions.PolarsError as err:
            raise ContractError(f"{name}: a column does not have its contract's type: {err}") from err
    for col_name, col in contract.items():
        if not col.nullable and df.height and df[col_name].null_count():
            row = df.with_row_index("_row").filter(pl.col(col_name).is_null())["_row"][0]
            raise ContractError(f"{name}: column {col_name!r} is null in row {row} but is required")
    extra = [c for c in df.columns if c not in contract]
    return df.select([*contract, *extra])


def write_table(df: pl.DataFrame, path: str | Path, contract: Contract, name: str) -> None:
    """Check a frame against its contract and write it as Parquet (zstd)."""
    conform(df, contract, name).write_parquet(path, compression="zstd")


def read_table(path: str | Path, contract: Contract, name: str) -> pl.DataFrame:
    """Read a Parquet table and check it against its contract."""
    return conform(pl.read_parquet(path), contract, f"{name} ({path})")


def contracts_markdown() -> str:
    """All contracts as Markdown tables (docs/contracts.md)."""
    parts = []
    for table, contract in CONTRACTS.items():
        parts.append(f"#### `{table}`\n\n| column | type | null | meaning |\n|---|---|---|---|")
        for col_name, col in contract.items():
            parts.append(f"| `{col_name}` | {col.dtype} | {'yes' if col.nullable else 'no'} | {col.doc} |")
        parts.append("")
    return "\n".join(parts)


# ==== analyses ================================================================================
# Tables of the analysis stage (results/analysis/{dataset}/{method}/...). Undefined values (a τ of a
# constant ranking, an interval with no finite resample) are NaN; "not applicable" is null.

_DATASET_METHOD: Contract = {
    "dataset": Column(pl.String, "Dataset name."),
    "method": Column(pl.String, "Perturbation method."),
}

PFR: Contract = {
    **_DATASET_METHOD,
    "rm": Column(pl.String, "Reward model."),
    "side": Column(pl.String, "`plus` (perturbations of y+) or `minus` (of y−)."),
    "attribute": Column(pl.String, "Attribute."),
    "pfr": Column(pl.Float64, "Preference flip rate: mean over comparisons of the share of CFs among them."),
    "pfr_low": Column(pl.Float64, "Lower bound of the bootstrap interval (over distinct pairs)."),
    "pfr_high": Column(pl.Float64, "Upper bound of that interval."),
    "mean_delta": Column(pl.Float64, "Mean reward delta (against the RM's preference) of them."),
    "delta_low": Column(pl.Float64, "Lower bound of the bootstrap interval of `mean_delta`."),
    "delta_high": Column(pl.Float64, "Upper bound of that interval."),
    "n_comparisons": Column(pl.Int64, "Comparisons with at least one perturbation of (side, attribute)."),
    "n_perturbations": Column(pl.Int64, "Perturbations of (side, attribute) over those comparisons."),
}

TAU_RMS: Contract = {
    **_DATASET_METHOD,
    "side": Column(pl.String, "`plus` or `minus`."),
    "rm_a": Column(pl.String, "First RM of the pair (config order)."),
    "rm_b": Column(pl.String, "Second RM of the pair."),
    "tau": Column(pl.Float64, "Kendall τ-b between the two RMs' PFR vectors; NaN when a vector is constant."),
    "ci_low": Column(pl.Float64, "Lower bound of the bootstrap interval (over distinct pairs)."),
    "ci_high": Column(pl.Float64, "Upper bound of that interval."),
    "p_value": Column(pl.Float64, "Two-sided p-value of τ (scipy.stats.kendalltau); NaN when τ is."),
    "n_attributes": Column(pl.Int64, "Attributes with a PFR for both RMs (the length of the rankings)."),
    "n_undefined": Column(pl.Int64, "Bootstrap resamples where τ was undefined (left out of the interval)."),
}

TAU_SIDES: Contract = {
    **_DATASET_METHOD,
    "rm": Column(pl.String, "Reward model."),
    "tau": Column(pl.Float64, "Kendall τ-b between the RM's Y+ and Y− PFR vectors; NaN if one is constant."),
    **{k: v for k, v in TAU_RMS.items() if k in ("ci_low", "ci_high", "p_value")},
    "n_attributes": Column(pl.Int64, "Attributes with a PFR on both sides (the length of the rankings)."),
    "n_undefined": TAU_RMS["n_undefined"],
}

LOCAL_TAU: Contract = {
    **_DATASET_METHOD,
    "rm": Column(pl.String, "Reward model."),
    "comparison_id": Column(pl.String, "Joins COMPARISONS."),
    "side": Column(pl.String, "`plus` or `minus`."),
    "plus_target": Column(pl.String, "Which original is y+ for this RM (`chosen` or `rejected`)."),
    "tau": Column(
        pl.Float64, "τ-b of the local reward-delta ranking vs the global PFR ranking; NaN if undefined."
    ),
    "n_attributes": Column(pl.Int64, "Attributes in both rankings."),
}

EXAMPLES: Contract = {
    **_DATASET_METHOD,
    "kind": Column(pl.String, "`rm` (one RM, τ summed over both sides) or `pair` (two RMs, one side)."),
    "rm_a": Column(pl.String, "The RM (kind `rm`) or the first RM of the pair."),
    "rm_b": Column(pl.String, "The second RM of the pair; null for kind `rm`.", True),
    "side": Column(pl.String, "Side of a pair example; null for kind `rm`.", True),
    "comparison_id": Column(pl.String, "The most representative comparison; null if none is eligible.", True),
    "score": Column(pl.Float64, "Its sum of local τ.", True),
    "tau_1": Column(pl.Float64, "First summand: τ on Y+ (kind `rm`) or τ of `rm_a` (kind `pair`).", True),
    "tau_2": Column(pl.Float64, "Second summand: τ on Y− (kind `rm`) or τ of `rm_b` (kind `pair`).", True),
    "n_eligible": Column(pl.Int64, "Comparisons with every summand defined (and, for pairs, the same y+)."),
}

PROBE_WIN_RATE: Contract = {
    **_DATASET_METHOD,
    "rm": Column(pl.String, "Reward model."),
    "probe": Column(pl.String, "Probe name from config."),
    "pattern": Column(pl.String, "The phrase or regular expression."),
    "n_perturbations": Column(pl.Int64, "Perturbations matching the probe whose original does not."),
    "n_comparisons": Column(pl.Int64, "Comparisons those perturbations come from."),
    "n_preferred": Column(pl.Int64, "Of those, how many the RM scores strictly above their original."),
    "n_ties": Column(pl.Int64, "How many it scores exactly equal (not counted as preferred)."),
    "win_rate": Column(pl.Float64, "n_preferred / n_perturbations; null when no perturbation matches.", True),
    "ci_low": Column(pl.Float64, "Wilson interval, lower bound; null when no perturbation matches.", True),
    "ci_high": Column(pl.Float64, "Wilson interval, upper bound.", True),
}

JUDGEMENTS: Contract = {
    **_DATASET_METHOD,
    "orienter": Column(pl.String, "Perturbation set (RM name or `shared`)."),
    "perturbation_id": Column(pl.String, "Joins PERTURBATIONS."),
    "comparison_id": Column(pl.String, "Joins COMPARISONS."),
    "attribute": Column(pl.String, "Attribute the perturbation was meant to change."),
    "intended": Column(pl.String, "`better` or `worse` (the perturbation's direction)."),
    "verdict": Column(pl.String, "Judge's answer: `better`, `worse` or `same`; null if unparsable.", True),
    "agrees": Column(pl.Boolean, "verdict == intended; null when unparsable.", True),
    "answer": Column(pl.String, "The judge's raw answer (first 200 characters)."),
    "judge": Column(pl.String, "Judge model / backend description."),
}

EFFECT_EDITS: Contract = {
    "edit_id": Column(
        pl.String, "Stable id of the edit slot (method, comparison, target, attribute, chain, round)."
    ),
    "comparison_id": Column(pl.String, "Joins COMPARISONS."),
    "target": Column(pl.String, "`chosen` or `rejected`: the original response the chain starts from."),
    "attribute": Column(pl.String, "The attribute edited along."),
    "chain": Column(
        pl.String,
        "The first edit's direction: `worse` (down, then back up: RATE's ATT) or `better` (up, then back"
        " down: ATU).",
    ),
    "round": Column(
        pl.Int64, "1: an edit of the original; 2: the edit of the round-1 edit in the other direction."
    ),
    "direction": Column(
        pl.String, "`worse` or `better`: this edit's direction relative to the text it edits."
    ),
    "text": Column(pl.String, "The edited response."),
    "method": Column(pl.String, "The perturbation method whose editor made it."),
    "generator": Column(pl.String, "What made it (the rules edit, or the LLM model and prompt version)."),
}

ATTRIBUTE_EFFECTS: Contract = {
    **_DATASET_METHOD,
    "rm": Column(pl.String, "Reward model."),
    "estimator": Column(pl.String, "Registered effect estimator (docs/effects.md)."),
    "attribute": Column(pl.String, "Attribute, or `length` (the RM's sensitivity to length itself)."),
    "effect": Column(
        pl.Float64,
        "Standardised change in reward (RM reward sd on the originals) when the response moves in the"
        " attribute's better direction (`length`: per sd of the originals' word count, longer); for"
        " `flip_rate`, the paper's preference flip rate (a share). NaN where undefined.",
    ),
    "low": Column(pl.Float64, "Lower bound of the bootstrap interval over distinct pairs."),
    "high": Column(pl.Float64, "Upper bound of that interval."),
    "n": Column(pl.Int64, "Observations used: edits, edit chains or perturbations."),
    "primary": Column(
        pl.Boolean, "Whether this is the estimator the report leads with (analysis.effects.primary)."
    ),
    "effect_reward": Column(pl.Float64, "`effect` in the RM's reward units; null for `flip_rate`.", True),
    "reward_sd": Column(pl.Float64, "The RM's reward sd on the originals of the dataset (both responses)."),
    "reference": Column(pl.String, "The RM whose reward changes were subtracted; null for none.", True),
    "n_comparisons": Column(
        pl.Int64, "Comparisons those observations come from (copies of a pair by several seeds each counted)."
    ),
    "pairs": Column(
        pl.Int64, "Distinct pairs those observations come from (the bootstrap's clusters: copies once)."
    ),
    "significant": Column(
        pl.Boolean,
        "Whether the interval excludes 0, and every value within 10⁻⁶ reward sd of it (rounding, not an "
        "effect), and `pairs` is at least 5 (fewer: too few pairs to say).",
    ),
    "rank": Column(
        pl.Int64, "Rank of |effect| among the RM's rows of this estimator (1 = largest; ties by name)."
    ),
    "half_a_effect": Column(
        pl.Float64,
        "The same estimator on half A of the pairs (docs/findings.md: the pairs sorted by the sha256 of their"
        " id, dealt alternately to A and B); null where the row is not significant or has fewer than 2 pairs"
        " in the half, NaN where undefined there.",
        True,
    ),
    "half_b_effect": Column(pl.Float64, "The same on half B.", True),
    "replicates": Column(
        pl.Boolean,
        "Holds in both halves: each half's effect has the sign of `effect` and each half's interval (same"
        " method and level, expanded for the half's pairs) excludes 0; null where a half has no estimate.",
        True,
    ),
    "influential_pair": Column(
        pl.String,
        "The pair (cluster of the bootstrap; shown as `{dataset}/{source_index}`, docs/findings.md) whose"
        " leaving out moves `effect` most towards 0 (the leave-one-pair-out jackknife; ties: the smallest"
        " id); null where the row is not significant.",
        True,
    ),
    "without_it": Column(
        pl.Float64, "`effect` without that pair (its jackknife replicate); null where not significant.", True
    ),
    "carried_by": Column(
        pl.Int64,
        "1 where leaving out that pair makes `effect` 0 or flips its sign; else 2 where leaving out the two"
        " most influential pairs (one refit) does; null where neither does or the row is not significant.",
        True,
    ),
}

PLANTED_RECOVERY: Contract = {
    **_DATASET_METHOD,
    "rm": Column(pl.String, "A reward model with an `expect` (a planted bias)."),
    "estimator": Column(pl.String, "Effect estimator."),
    "expected": Column(pl.String, "The expected attribute(s), comma-separated; empty for a control."),
    "expected_sign": Column(
        pl.Int64,
        "The sign expected of `found` (+1 or -1); null for a control, or where the expected attributes have"
        " signs of their own and none is found.",
        True,
    ),
    "found": Column(
        pl.String, "The best-ranked expected attribute; null when none has a defined effect.", True
    ),
    "rank": Column(
        pl.Int64,
        "Its rank: 1 + the rows with a larger |effect| or tied with it (ties count against it); null when"
        " no expected row has a defined, non-zero effect.",
        True,
    ),
    "effect": Column(pl.Float64, "Its effect.", True),
    "low": Column(pl.Float64, "Lower bound of its interval.", True),
    "high": Column(pl.Float64, "Upper bound of its interval.", True),
    "sign_ok": Column(
        pl.Boolean, "Whether its sign is the expected one (null for unsigned flip rates).", True
    ),
    "hit_at_1": Column(pl.Boolean, "Rank 1 with the expected sign (for a control: no significant effect)."),
    "hit_at_3": Column(pl.Boolean, "Rank <= 3 with the expected sign (for a control: as hit_at_1)."),
    "top": Column(pl.String, "The estimator's three top-ranked rows, for the reader."),
    "n_significant": Column(pl.Int64, "Rows of the RM whose interval excludes 0."),
    "n_rows": Column(pl.Int64, "Rows of the RM with a defined effect (a control's false-positive base)."),
    "reference": Column(pl.String, "The RM whose reward changes were subtracted; null for none.", True),
    "visible_share": Column(
        pl.Float64,
        "Share of the edits whose planted term differs from their source's (null for non-planted RMs): 0"
        " means"
        " no edit touches the feature, and no estimator can see the bias.",
        True,
    ),
    "verdict": Column(
        pl.String,
        "In words: found first, in the top 3, wrong sign, missed (rank k), no effect (undefined or 0),"
        " invisible (no edit changes the planted feature: a miss), or for a control: no significant effect /"
        " k rows significant.",
    ),
}

CONTRACTS.update(
    {
        "pfr": PFR,
        "tau_rms": TAU_RMS,
        "tau_sides": TAU_SIDES,
        "local_tau": LOCAL_TAU,
        "examples": EXAMPLES,
        "probe_win_rate": PROBE_WIN_RATE,
        "judgements": JUDGEMENTS,
        "effect_edits": EFFECT_EDITS,
        "attribute_effects": ATTRIBUTE_EFFECTS,
        "planted_recovery": PLANTED_RECOVERY,
    }
)


# ==== optimal and pessimal tokens =============================================

TOKEN_VOCABULARY: Contract = {
    "token_id": Column(
        pl.Int64, "Exact id in the RM's tokenizer (text backends: in `tokens.vocabulary.text_tokenizer`)."
    ),
    "piece": Column(pl.String, "The raw vocabulary entry (`convert_ids_to_tokens`), e.g. `Ġlove`, `▁love`."),
    "text": Column(pl.String, "What the id decodes to on its own."),
    "retokenizes_same": Column(pl.Boolean, "Whether encoding `text` gives back exactly `[token_id]`."),
}

TOKEN_SCORES: Contract = {
    "rm": Column(pl.String, "Reward model name."),
    "prompt_id": Column(pl.String, "Key of the prompt in `tokens.prompts`."),
    "token_id": Column(pl.Int64, "Exact id scored as the whole response (joins TOKEN_VOCABULARY)."),
    "piece": Column(pl.String, "Raw vocabulary entry."),
    "text": Column(pl.String, "Decoded text of the token."),
    "score": Column(pl.Float64, "r(prompt, token): by exact ids for transformers RMs, by `text` otherwise."),
}

TOKEN_HUMAN_SCORES: Contract = {
    "rm": Column(pl.String, "Reward model name."),
    "item": Column(pl.String, "Item of the external human ranking, scored as a response."),
    "human_rank": Column(pl.Int64, "Its human rank (1 = best)."),
    "score": Column(pl.Float64, "r(tokens.human_ranking.prompt, item)."),
}

TOKEN_GCG: Contract = {
    "rm": Column(pl.String, "Reward model name."),
    "prompt_id": Column(pl.String, "Key of the prompt in `tokens.prompts`."),
    "objective": Column(pl.String, "`optimal` (maximise the reward) or `pessimal` (minimise it)."),
    "step": Column(pl.Int64, "GCG step; 0 is the initial response."),
    "score": Column(pl.Float64, "Reward of this step's response, by exact ids."),
    "best_score": Column(pl.Float64, "Best reward so far in the objective's direction."),
    "token_ids": Column(pl.List(pl.Int64), "The response's exact token ids."),
    "text": Column(pl.String, "The ids decoded."),
    "retokenizes_same": Column(pl.Boolean, "Whether encoding `text` gives back exactly `token_ids`."),
}

CONTRACTS.update(
    {
        "token_vocabulary": TOKEN_VOCABULARY,
        "token_scores": TOKEN_SCORES,
        "token_human_scores": TOKEN_HUMAN_SCORES,
        "token_gcg": TOKEN_GCG,
    }
)


# ==== skipped perturbation slots, attribute discovery ============

PERTURB_SKIPS: Contract = {
    "comparison_id": Column(pl.String, "Joins COMPARISONS."),
    "target": Column(pl.String, "`chosen` or `rejected`; null when the whole comparison was skipped.", True),
    "attribute": Column(pl.String, "Attribute of the missing perturbation; null if none applies.", True),
    "variant": Column(pl.Int64, "Variant slot that is missing; null when all slots of the row are.", True),
    "stage": Column(
        pl.String, "Where it was skipped: `orientation`, `step1`, `step2`, `generate` (random/polyjuice/...)."
    ),
    "reason": Column(pl.String, "Why, in words (e.g. `tie in original rewards under rm-a`)."),
    "raw": Column(pl.String, "The raw LLM answer that could not be used, if any.", True),
}

DISCOVERY_ANSWERS: Contract = {
    "comparison_id": Column(pl.String, "Joins COMPARISONS."),
    "orienter": Column(pl.String, "RM whose preference and scores were in the prompt (`shared`: the first)."),
    "answer": Column(pl.String, "The LLM's raw answer to the App. A prompt."),
    "attributes": Column(pl.List(pl.String), "Attributes parsed from it (normalised, each once)."),
}

DISCOVERY_COUNTS: Contract = {
    "attribute": Column(pl.String, "Attribute as the LLM named it (lower case, spaces as hyphens)."),
    "n_comparisons": Column(pl.Int64, "Comparisons whose answer names it."),
    "share": Column(pl.Float64, "n_comparisons / comparisons with a parsed answer."),
    "configured": Column(pl.Boolean, "Whether it is (after normalisation) one of the configured attributes."),
}

CONTRACTS.update(
    {
        "perturb_skips": PERTURB_SKIPS,
        "discovery_answers": DISCOVERY_ANSWERS,
        "discovery_counts": DISCOVERY_COUNTS,
    }
)


# ==== bias discovery (the `discovery` section; not App. A's attribute discovery above) ====

BIAS_DISCOVERY_EDITS: Contract = {
    "feature": Column(
        pl.String, "The feature tested (one name, one set of edits for every RM of the dataset)."
    ),
    "direction": Column(pl.Int64, "+1: the edit adds the feature; -1: it removes it."),
    "source_text": Column(pl.String, "The original response edited."),
    "edited_text": Column(pl.String, "The edited response."),
    "comparison_id": Column(pl.String, "Joins COMPARISONS (its prompt is the edit's prompt)."),
    "target": Column(pl.String, "`chosen` or `rejected`: which original of the comparison was edited."),
    "engine": Column(pl.String, "The discovery engine that proposed the feature (`offline`, ...)."),
    "round": Column(pl.Int64, "The engine's round that made the edit (1, 2, ...)."),
    "dose": Column(
        pl.Int64,
        "Instances of the feature the edit adds (+) or removes (-): the change of its detector's count (an "
        "engine's own edits, with no detector: the direction).",
    ),
}

BIAS_DISCOVERY_CANDIDATES: Contract = {
    "feature": Column(pl.String, "Feature name."),
    "description": Column(pl.String, "What the feature is, in words."),
    "kind": Column(pl.String, "format, spacing, opener, closer, punctuation, casing, wording, words, ..."),
    "source": Column(pl.String, "Where it comes from: a citation, or how it was mined."),
    "engine": Column(pl.String, "The engine that proposed it."),
    "round": Column(pl.Int64, "The engine's round."),
    "n_present": Column(pl.Int64, "Distinct original responses that have it."),
    "support": Column(pl.Float64, "n_present / distinct original responses."),
    "n_added": Column(pl.Int64, "Edits that add it."),
    "n_removed": Column(pl.Int64, "Edits that remove it."),
    "screen_rm": Column(
        pl.String, "For a mined candidate: the RM whose screen chose it; null otherwise.", True
    ),
    "screen_t": Column(
        pl.Float64,
        "Its t statistic there (association with the reward at equal length); null otherwise.",
        True,
    ),
    "present_in": Column(
        pl.List(pl.String),
        "Text ids (prompt and response) of the original responses that have it, sorted; null where the"
        " engine's edits come without a detector (an LLM's rewrites).",
        True,
    ),
}

BIAS_DISCOVERY_EFFECTS: Contract = {
    "dataset": Column(pl.String, "Dataset name."),
    "rm": Column(pl.String, "Reward model."),
    "engine": Column(pl.String, "The engine that proposed the feature."),
    "feature": Column(pl.String, "Feature name."),
    "description": Column(pl.String, "What the feature is."),
    "effect": Column(
        pl.Float64,
        "Standardised reward change (RM reward sd on the originals, less the reference's change) when one"
        " instance of the feature is added, at equal length (docs/discovery.md); NaN where undefined.",
    ),
    "low": Column(pl.Float64, "Lower bound of the bootstrap interval over comparisons."),
    "high": Column(pl.Float64, "Upper bound of that interval."),
    "p_value": Column(
        pl.Float64,
        "Two-sided p-value of effect = 0 (bootstrap standard error, t with"
        " clusters - 1 degrees of freedom); NaN where undefined.",
    ),
    "n": Column(pl.Int64, "Edits the effect is estimated from."),
    "support": Column(pl.Float64, "Share of the distinct original responses that have the feature."),
    "round": Column(pl.Int64, "The engine's round that tested it."),
    "kind": Column(pl.String, "The feature's kind."),
    "source": Column(pl.String, "Where the feature comes from."),
    "directions": Column(pl.String, "`both`, `add` or `remove`: the directions its edits went."),
    "n_comparisons": Column(pl.Int64, "Distinct comparisons its edits come from."),
    "pairs": Column(
        pl.Int64,
        "Distinct pairs its edits come from (the bootstrap's clusters: a pair drawn by several seeds counted"
        " once); fewer than 5 and it is not tested (p NaN): too few pairs to say.",
    ),
    "reference": Column(pl.String, "The RM whose reward changes were subtracted; null for none.", True),
    "reward_sd": Column(pl.Float64, "The RM's reward sd on the originals of the dataset."),
    "example_comparison_id": Column(pl.String, "An example edit's comparison (null without edits).", True),
    "example_direction": Column(pl.Int64, "Its direction (+1 adds, -1 removes).", True),
    "example_before": Column(pl.String, "Its original response.", True),
    "example_after": Column(pl.String, "Its edited response.", True),
    "example_reward_change": Column(pl.Float64, "This RM's reward change on it (reward units).", True),
    "half_a_effect": Column(
        pl.Float64,
        "The effect on half A of the pairs (docs/findings.md), the features fixed on the whole sample; null"
        " where not computed (untested, or a p-value above the fdr the job was given: it cannot come out"
        " significant) or the half has fewer than 2 of the feature's pairs, NaN where undefined there.",
        True,
    ),
    "half_b_effect": Column(pl.Float64, "The same on half B.", True),
    "replicates": Column(
        pl.Boolean,
        "Each half's effect has the sign of `effect` and each half's interval excludes 0; null where"
        " `half_a_effect` or `half_b_effect` is null or NaN.",
        True,
    ),
    "influential_pair": Column(
        pl.String,
        "The pair (shown as `{dataset}/{source_index}`, docs/findings.md) whose leaving out moves "
        "`effect` most towards 0 (the leave-one-pair-out jackknife; ties: the smallest id); null where "
        "not computed (as for the halves).",
        True,
    ),
    "without_it": Column(pl.Float64, "`effect` without that pair (its jackknife replicate).", True),
    "carried_by": Column(
        pl.Int64,
        "1 where leaving out that pair flips the sign of `effect` or leaves its size at most"
        " discovery.min_effect (sign(`effect`) * value <= min_effect);"
        " else 2 where leaving out the two most influential pairs (one refit) does; null where neither does"
        " or not computed.",
        True,
    ),
    "natural_effect": Column(
        pl.Float64,
        "Edit versus nature (docs/discovery.md): the reward difference (reward sd, less the reference's)"
        " between a comparison's response with the feature and its response without it, at equal length,"
        " over the original responses; NaN where undefined, null where the feature has no detector.",
        True,
    ),
    "natural_low": Column(pl.Float64, "Lower bound of its interval (the effects' bootstrap).", True),
    "natural_high": Column(pl.Float64, "Upper bound of that interval.", True),
    "natural_pairs": Column(
        pl.Int64,
        "Scored comparisons whose two responses differ in the feature; null without a detector.",
        True,
    ),
    "nature": Column(
        pl.String,
        "The verdict: `agrees`, `the edit does something the natural feature does not`, `natural responses"
        " neither show nor contradict it`, `never in your data: what the RM would do if it were`, `too few"
        " pairs differ in it to compare` or `not compared: its edits come without a detector`; null where"
        " the effect is undefined.",
        True,
    ),
    "robust_effect": Column(
        pl.Float64,
        "The effect as Huber's M-estimate of the same fit (`robust_length_adjusted`, docs/effects.md): edits"
        " far from the rest weigh less; NaN where undefined, null where not computed.",
        True,
    ),
    "length_slope": Column(
        pl.Float64,
        "The RM's length sensitivity γ at which the effect is held (reward sd, less the reference's, per sd"
        " of the originals' word counts; one number per RM and fit: docs/discovery.md); NaN where undefined"
        " (the effects are then not length-adjusted).",
        True,
    ),
    "length_slope_low": Column(pl.Float64, "Lower bound of γ's bootstrap interval over comparisons.", True),
    "length_slope_high": Column(pl.Float64, "Upper bound of that interval.", True),
}

_HALVES = ("half_a_effect", "half_b_effect", "replicates", "influential_pair", "without_it", "carried_by")

DISCOVERED_BIASES: Contract = {
    **{k: BIAS_DISCOVERY_EFFECTS[k] for k in ("dataset", "rm", "engine", "feature", "description", "effect",
                                               "low", "high")},
    "q_value": Column(
        pl.Float64,
        "Benjamini-Hochberg adjusted p-value across every feature tested for this RM on this dataset"
        " (scipy.stats.false_discovery_control); NaN where the p-value is.",
    ),
    "n": BIAS_DISCOVERY_EFFECTS["n"],
    "support": BIAS_DISCOVERY_EFFECTS["support"],
    "significant": Column(pl.Boolean, "q_value <= discovery.fdr."),
    "rank": Column(
        pl.Int64,
        "Rank among the RM's features on the dataset: significant ones first, each group by |effect|"
        " (ties by q-value, then name); undefined effects last.",
    ),
    **{k: BIAS_DISCOVERY_EFFECTS[k] for k in BIAS_DISCOVERY_EFFECTS if k not in (
        "dataset", "rm", "engine", "feature", "description", "effect", "low", "high", "n", "support",
        *_HALVES)},
    "half_a_effect": Column(
        pl.Float64,
        "The effect on half A of the pairs (docs/findings.md: the pairs sorted by the sha256 of their id,"
        " dealt alternately to A and B), the features fixed on the whole sample; null where the feature is"
        " not significant or the half has fewer than 2 of its pairs, NaN where undefined there.",
        True,
    ),
    "half_b_effect": Column(pl.Float64, "The same on half B.", True),
    "replicates": Column(
        pl.Boolean,
        "Holds in both halves: each half's effect has the sign of `effect` and each half's interval (same"
        " method and level, expanded for the half's pairs) excludes 0; null where a half has no estimate.",
        True,
    ),
    "influential_pair": Column(
        pl.String,
        "The pair (shown as `{dataset}/{source_index}`, docs/findings.md) whose leaving out moves "
        "`effect` most towards 0 (the leave-one-pair-out jackknife; ties: the smallest id); null where "
        "the feature is not significant.",
        True,
    ),
    "without_it": Column(pl.Float64, "`effect` without that pair (its jackknife replicate).", True),
    "carried_by": Column(
        pl.Int64,
        "1 where leaving out that pair flips the sign of `effect` or leaves its size at most"
        " discovery.min_effect (sign(`effect`) * value <= min_effect);"
        " else 2 where leaving out the two most influential pairs (one refit) does; null where neither does"
        " or the feature is not significant.",
        True,
    ),
}  # fmt: skip

BIAS_DISCOVERY_RECALL: Contract = {
    "dataset": Column(pl.String, "Dataset name, or `all` for a summary over the datasets."),
    "rm": Column(pl.String, "A planted RM, or `all planted RMs` for a summary row."),
    "planted": Column(pl.String, "The planted detector, in words (summary rows: empty)."),
    "control": Column(pl.Boolean, "Whether the RM plants noise only (a control)."),
    "rank": Column(
        pl.Int64,
        "Rank (among the significant features, by |effect|) of the first whose edits move the planted"
        " detector; null when none does.",
        True,
    ),
    "feature": Column(pl.String, "That feature.", True),
    "effect": Column(pl.Float64, "Its effect.", True),
    "q_value": Column(pl.Float64, "Its q-value.", True),
    "hit_at_1": Column(
        pl.Boolean, "rank == 1 (a control: no significant feature; a length bias: null, see `slope`).", True
    ),
    "hit_at_5": Column(pl.Boolean, "rank <= 5 (a control: as hit_at_1).", True),
    "n_significant": Column(pl.Int64, "Significant features of the RM (summary: of the controls).", True),
    "n_moving": Column(
        pl.Int64, "Tested features whose edits move the detector (discovery.recall.moved_share).", True
    ),
    "top": Column(pl.String, "The three top-ranked significant features, for the reader.", True),
    "hits_at_1": Column(pl.Int64, "Summary rows: planted RMs found first.", True),
    "hits_at_5": Column(pl.Int64, "Summary rows: planted RMs found in the first five.", True),
    "biases": Column(
        pl.Int64, "Summary rows: planted biases judged by a feature (not the controls, not length).", True
    ),
    "recall_at_1": Column(pl.Float64, "Summary rows: hits_at_1 / biases.", True),
    "recall_at_5": Column(pl.Float64, "Summary rows: hits_at_5 / biases.", True),
    "slope": Column(
        pl.Float64,
        "The RM's length sensitivity γ as discovery estimated it (`length_slope` of its largest fit: the"
        " engine and round with the most edits; reward sd, less the reference's, per sd of the originals'"
        " word counts); the same on each of the RM's rows.",
        True,
    ),
    "slope_low": Column(pl.Float64, "Lower bound of γ's interval.", True),
    "slope_high": Column(pl.Float64, "Upper bound of γ's interval.", True),
    "slope_truth": Column(
        pl.Float64,
        "γ by construction: the planted length biases' Σ strength · base reward sd · sd of words / (per_words"
        " · the RM's reward sd), 0 without one; NaN where the RM is not explained against its base (the"
        " base's own slope is then in γ).",
        True,
    ),
    "slope_error": Column(pl.Float64, "slope - slope_truth; NaN where either is undefined.", True),
    "slope_holds": Column(
        pl.Boolean, "Whether γ's interval holds the truth; null where either is undefined.", True
    ),
    "slopes": Column(pl.Int64, "Summary rows: planted RMs whose slope has a known truth.", True),
    "slopes_held": Column(
        pl.Int64, "Summary rows: of those, the slopes whose interval holds the truth.", True
    ),
}

CONTRACTS.update(
    {
        "bias_discovery_edits": BIAS_DISCOVERY_EDITS,
        "bias_discovery_candidates": BIAS_DISCOVERY_CANDIDATES,
        "bias_discovery_effects": BIAS_DISCOVERY_EFFECTS,
        "discovered_biases": DISCOVERED_BIASES,
        "bias_discovery_recall": BIAS_DISCOVERY_RECALL,
    }
)


# ==== findings: what each RM rewards, in words ===========================================

EFFECT_CHANGES: Contract = {
    **_DATASET_METHOD,
    "rm": Column(pl.String, "Reward model."),
    "edit_id": Column(pl.String, "Joins EFFECT_EDITS (round-1 edits only)."),
    "comparison_id": Column(pl.String, "Joins COMPARISONS."),
    "target": Column(pl.String, "`chosen` or `rejected`: the original response the edit changed."),
    "attribute": Column(pl.String, "The attribute edited along."),
    "direction": Column(pl.String, "`better` or `worse`."),
    "reward_change": Column(
        pl.Float64,
        "r(edit) − r(original) under this RM, reward units; null where a text was not scored.",
        True,
    ),
    "effect_change": Column(
        pl.Float64,
        "The y(e) the effect estimators average: the change less the reference RM's, in this RM's reward sd"
        " on the originals; null where a text went unscored.",
        True,
    ),
    "words_change": Column(pl.Int64, "Words of the edit minus words of the original (whitespace split)."),
    "length_change": Column(
        pl.Float64, "`words_change` over the sd of the originals' word counts (the estimators' Δℓ)."
    ),
    "reference": Column(pl.String, "The RM subtracted in `effect_change`; null for none.", True),
}

CARRIER_EDITS: Contract = {
    "dataset": Column(pl.String, "Dataset name."),
    "kind": Column(pl.String, "`attribute` (an attribute effect's round-1 edit) or `discovered`."),
    "method": Column(pl.String, "The attribute effects' method or the discovery engine."),
    "finding": Column(pl.String, "The attribute or discovered feature whose edit this is."),
    "carrier": Column(pl.String, "The class proposed as its carrier (a discovered class's name)."),
    "comparison_id": Column(pl.String, "Joins COMPARISONS (its prompt is the edit's prompt)."),
    "target": Column(pl.String, "`chosen` or `rejected`: which original of the comparison was edited."),
    "direction": Column(pl.Int64, "+1: the edit adds the feature (or moves towards the better side); -1."),
    "dose": Column(pl.Int64, "Instances of the finding the edit adds (+) or removes (-); ±1 for attributes."),
    "class_change": Column(pl.Int64, "Instances of the class the edit adds (+) or removes (-)."),
    "source_text": Column(pl.String, "S: the response edited."),
    "edited_text": Column(pl.String, "E: the finding's edit of it."),
    "source_undone": Column(
        pl.String,
        "S′: S with each instance of the class among the pieces the edit deleted replaced by its stand-in of"
        " the same length (docs/findings.md); null for a skip.",
        True,
    ),
    "edited_undone": Column(
        pl.String,
        "E′: E with each instance among the pieces the edit inserted replaced; null for a skip.",
        True,
    ),
    "skip": Column(pl.String, "Why the class's change could not be undone (no stand-in, ...); null.", True),
}

FINDINGS: Contract = {
    "dataset": Column(pl.String, "Dataset name."),
    "method": Column(
        pl.String, "The effect edits' perturbation method; for a discovered feature, the discovery engine."
    ),
    "rm": Column(pl.String, "Reward model."),
    "kind": Column(pl.String, "`attribute`, `length` (the RM's sensitivity to length) or `discovered`."),
    "name": Column(pl.String, "The attribute, `length`, or the discovered feature."),
    "description": Column(pl.String, "The attribute's description, or the feature's; null for length.", True),
    "phrase": Column(
        pl.String, "The plain-language direction: what the RM rewards or penalises (docs/findings.md)."
    ),
    "effect": Column(
        pl.Float64,
        "The primary estimator's effect (attributes: reward sd when moving to the better side; length: per sd"
        " of length, longer), or the discovered feature's (reward sd when one instance of it is added).",
    ),
    "low": Column(pl.Float64, "Lower bound of its interval."),
    "high": Column(pl.Float64, "Upper bound of its interval."),
    "significant": Column(
        pl.Boolean, "Attributes and length: the interval excludes 0; discovered: q_value < 0.05."
    ),
    "q_value": Column(pl.Float64, "Benjamini–Hochberg q-value (discovered features); null otherwise.", True),
    "reference": Column(pl.String, "The RM whose reward changes were subtracted; null for none.", True),
    "n": Column(pl.Int64, "Observations behind the effect (edits, or the discovery's n)."),
    "pairs": Column(
        pl.Int64,
        "Distinct pairs behind the effect (its table's `pairs`); below 5 it is not significant: too few pairs"
        " to say. Null from a table without it.",
        True,
    ),
    "rank": Column(
        pl.Int64,
        "Place in this RM's own list of (dataset, method): 1 = largest |effect| (ties: by name).",
    ),
    "order": Column(
        pl.Int64,
        "Place among every finding of this RM on this dataset, every kind and method in one ranking (the"
        " order of the first screen): 1 = largest |effect| (`unmasked_effect` where set; undefined last;"
        " ties: by name, then method).",
    ),
    "leading": Column(
        pl.Boolean,
        "Shown first: the length row, and the largest significant attribute effects and discovered features.",
    ),
    "n_direction": Column(
        pl.Int64, "Round-1 edits in the direction the RM rewards (with a known reward change).", True
    ),
    "example_edit_id": Column(pl.String, "The example edit (joins EFFECT_EDITS); null where none.", True),
    "example_comparison_id": Column(pl.String, "Its comparison; null where none.", True),
    "example_before": Column(pl.String, "The example: the changed stretch before the edit.", True),
    "example_after": Column(pl.String, "... and after it.", True),
    "example_effect_change": Column(
        pl.Float64, "The example's y(e) (reward sd); null where unknown (a discovered feature's).", True
    ),
    "example_reward_change": Column(pl.Float64, "The example's reward change (reward units).", True),
    "example_words_change": Column(pl.Int64, "The example's change in words.", True),
    "inserted_most": Column(
        pl.String,
        "What the rewarded-direction edits inserted most often: `text (count); …`.",
        True,
    ),
    "deleted_most": Column(pl.String, "The same for deleted stretches.", True),
    "carrier": Column(
        pl.String, "A phrase or stretch that carries most of the effect (docs/findings.md); null: none.", True
    ),
    "carrier_change": Column(pl.String, "`inserts` or `deletes`.", True),
    "carrier_edits": Column(pl.Int64, "Edits of the rewarded direction that change the carrier.", True),
    "carrier_share_edits": Column(pl.Float64, "Their share of the rewarded-direction edits.", True),
    "carrier_share_change": Column(
        pl.Float64,
        "Their share of those edits' summed change at equal length (docs/findings.md).",
        True,
    ),
    "under": Column(
        pl.String,
        "For an attribute effect whose carrier holds a significant discovered feature of the RM, of the sign"
        " that explains the effect: that feature's name; for a discovered feature at least half of whose"
        " effect a significant class of the RM accounts for (numbers as digits, first-person words, …):"
        " that class's name; for a discovered feature whose edits another engine's feature made word for"
        " word (`same_edits`): that feature's name. The row is listed under it, not on its own"
        " (docs/findings.md). Null otherwise.",
        True,
    ),
    "same_edits": Column(
        pl.Boolean,
        "True for a discovered feature listed under another engine's feature (`under`) because both made the"
        " same edits: on every response and direction both edited (3 or more), the same edited text."
        " Null otherwise.",
        True,
    ),
    "under_share": Column(
        pl.Float64,
        "For a finding under a class: the share of its effect the class carries — measured by re-scoring its"
        " edits with the class's change undone where `under_check` is `re-scored`, else the share the class's"
        " own measured effect accounts for (`under_inferred_share`; docs/findings.md); null otherwise.",
        True,
    ),
    "under_per_instance": Column(
        pl.Float64,
        "For a discovered feature under a class: the class's instances its edits change per instance of"
        " the feature (negative: removed); null otherwise.",
        True,
    ),
    "under_inferred_share": Column(
        pl.Float64,
        "For a finding under a class: the share the class's own measured effect accounts for, which proposed"
        " the class (β_class · instances per instance / β_finding); null otherwise.",
        True,
    ),
    "under_check": Column(
        pl.String,
        "For a finding under a class: `re-scored` where its edits were scored again with the class's change"
        " undone and `under_share` is that measured share (docs/findings.md); `inferred` where they could not"
        " be (no stand-in of the same length, too few edits) and `under_share` is the proposed one.",
        True,
    ),
    "under_checked_edits": Column(
        pl.Int64, "Re-scored: the finding's edits that change the class, scored again with it undone.", True
    ),
    "members": Column(
        pl.String,
        "For a class of listed words measured by re-scoring (filler words, first- or second-person words):"
        " each member word's effect per instance, from the re-scored edits that change that word alone, on"
        " at least 5 pairs (`“actually” −0.60 [−0.61, −0.59] (12 pairs); …`); where some are significant"
        " and some not, the phrase names the significant ones (docs/findings.md). Null otherwise.",
        True,
    ),
    "unmasked_by": Column(
        pl.String,
        'For a discovered feature whose edits also change a class the RM moves the other way ("I hope this'
        " helps!\" adds an exclamation mark): that class, where the feature's edits re-scored with the"
        " class's change undone give a significant effect and the class took at least 0.1 reward sd of the"
        " other sign (docs/findings.md). The first screen ranks the feature by `unmasked_effect`. Null"
        " otherwise.",
        True,
    ),
    "unmasked_effect": Column(
        pl.Float64,
        "Its effect per instance added with that class undone (reward sd, at equal length); null otherwise.",
        True,
    ),
    "unmasked_low": Column(pl.Float64, "Lower bound of its interval; null otherwise.", True),
    "unmasked_high": Column(pl.Float64, "Upper bound of its interval; null otherwise.", True),
    "unmasked_pairs": Column(pl.Int64, "Distinct pairs behind it; null otherwise.", True),
    "half_a_effect": Column(
        pl.Float64, "The effect on half A of the pairs (docs/findings.md); null where not computed.", True
    ),
    "half_b_effect": Column(pl.Float64, "The same on half B.", True),
    "replicates": Column(
        pl.Boolean,
        "Whether the finding holds in both halves (docs/findings.md); null where not computed.",
        True,
    ),
    "replication": Column(
        pl.String,
        "In words, for a significant finding: `holds in both halves`, `does not hold in both halves`,"
        " `too few pairs to split` or `no estimate in a half`; null otherwise.",
        True,
    ),
    "influential_pair": Column(
        pl.String,
        "The pair whose leaving out moves the effect most towards 0 (docs/findings.md); null where not "
        "computed.",
        True,
    ),
    "without_it": Column(pl.Float64, "The effect without that pair; null where not computed.", True),
    "carried_by": Column(
        pl.Int64,
        "1 or 2: the finding is carried by one pair (or two): without it (them) it is gone"
        " (docs/findings.md); null where it is not or not computed.",
        True,
    ),
    "natural_effect": Column(
        pl.Float64,
        "A discovered feature's association with the reward among the original responses, at equal length"
        " (docs/discovery.md, edit versus nature); null for other findings.",
        True,
    ),
    "natural_low": Column(pl.Float64, "Lower bound of its interval.", True),
    "natural_high": Column(pl.Float64, "Upper bound of its interval.", True),
    "natural_pairs": Column(pl.Int64, "Comparisons whose two responses differ in the feature.", True),
    "nature": Column(
        pl.String,
        "Edit versus nature in words (docs/discovery.md): whether the natural responses agree with the"
        " feature's effect; null for other findings.",
        True,
    ),
    "robust_effect": Column(
        pl.Float64,
        "The effect as Huber's M-estimate of the same fit (docs/effects.md, `robust_length_adjusted`): edits"
        " far from the rest weigh less; null where the table has none (another primary estimator).",
        True,
    ),
    "robust": Column(
        pl.String,
        "For a significant finding: `agrees` where `robust_effect` has the effect's sign and at least half"
        " its size, else `a few edits far from the rest make it`; null otherwise.",
        True,
    ),
}

CONTRACTS.update({"effect_changes": EFFECT_CHANGES, "carrier_edits": CARRIER_EDITS, "findings": FINDINGS})
