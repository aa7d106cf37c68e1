"""The Parquet column contracts between rules, in one place.

Every table a rule writes is checked against its contract here before it is written
(``write_table``), and every table a rule reads is checked when it is read (``read_table``).
`docs/schemas.md`-style documentation lives in the README's "Data contracts" section, generated
from these dictionaries by ``rmexplain schemas`` so the two cannot drift apart.
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
    "reward_chosen": Column(pl.Float64, "r(x, chosen)."),
    "reward_rejected": Column(pl.Float64, "r(x, rejected)."),
    "plus_target": Column(
        pl.String, "Which original the RM prefers (y+): `chosen` or `rejected`; null on an exact tie.", True
    ),
    "agrees_with_human": Column(pl.Boolean, "True when y+ is the human-chosen response.", True),
}

PERTURBATIONS: Contract = {
    "perturbation_id": Column(pl.String, "Stable id: hash of (method, orienter, comparison, target, attribute, variant)."),
    "comparison_id": Column(pl.String, "Joins COMPARISONS."),
    "target": Column(pl.String, "Which original was perturbed: `chosen` or `rejected`."),
    "direction": Column(pl.String, "`worse` (target was y+) or `better` (target was y−) for the orienting RM."),
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
    "reward": Column(pl.Float64, "r(x, y') of the perturbed response."),
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
        "For semifactuals: `between` (reward stayed between the originals) or `beyond` (moved past the"
        " perturbed response's own original, away from the other); null for counterfactuals.",
        True,
    ),
    "reward_delta": Column(
        pl.Float64, "Change opposing the original preference: r(y+) − r(y'+) on plus, r(y'−) − r(y−) on minus."
    ),
    "agrees_with_human": Column(pl.Boolean, "Whether the RM's original preference matches the human label."),
}

DISTANCES: Contract = {
    "perturbation_id": Column(pl.String, "Joins PERTURBATIONS."),
    "syntactic_distance": Column(pl.Float64, "Word-level Levenshtein distance / max(len) in words."),
    "semantic_distance": Column(pl.Float64, "1 − cosine similarity of sentence embeddings."),
    "embedding": Column(pl.List(pl.Float32), "Sentence embedding of the perturbed text (for diversity)."),
}

METRICS: Contract = {
    "dataset": Column(pl.String, "Dataset name."),
    "rm": Column(pl.String, "Reward model."),
    "method": Column(pl.String, "Perturbation method."),
    "seed": Column(pl.Int64, "Sampling seed."),
    "subset": Column(pl.String, "`all`, `correct` or `wrong` (RM preference vs human label)."),
    "metric": Column(pl.String, "Metric name, e.g. `cf_coverage_plus`, `syntactic_distance`."),
    "value": Column(pl.Float64, "Value for this seed; NaN where undefined (e.g. no pairs for diversity).", True),
    "n": Column(pl.Int64, "Number of units the value averages over (comparisons, perturbations or sets)."),
}

CONTRACTS: dict[str, Contract] = {
    "comparisons": COMPARISONS,
    "original_scores": ORIGINAL_SCORES,
    "perturbations": PERTURBATIONS,
    "rewards": REWARDS,
    "explanations": EXPLANATIONS,
    "distances": DISTANCES,
    "metrics": METRICS,
}


class ContractError(ValueError):
    """A table does not match its column contract."""


def polars_schema(contract: Contract) -> dict[str, pl.DataType]:
    """The polars schema of a contract, for building empty or typed frames."""
    return {name: col.dtype for name, col in contract.items()}


def empty_frame(contract: Contract) -> pl.DataFrame:
    """An empty frame with the contract's columns and dtypes."""
    return pl.DataFrame(schema=polars_schema(contract))


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
    """All contracts as Markdown tables (for the README's data-contracts section)."""
    parts = []
    for table, contract in CONTRACTS.items():
        parts.append(f"#### `{table}`\n\n| column | type | null | meaning |\n|---|---|---|---|")
        for col_name, col in contract.items():
            parts.append(f"| `{col_name}` | {col.dtype} | {'yes' if col.nullable else 'no'} | {col.doc} |")
        parts.append("")
    return "\n".join(parts)
