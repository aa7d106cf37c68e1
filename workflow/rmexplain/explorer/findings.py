"""The explorer's findings (its first view) and the edits behind each: what the page needs from the findings
table, the attribute effects' edits with every RM's reward change, and the discovery's edits.

- the manifest carries every finding (``FINDINGS`` rows; the example as a word edit of its before → after);
- ``data/datasets/<dataset>/<method>/effects/<k>.js``: the round-1 edits of attribute ``k`` (its index in
  the method's effect attributes) as word edits of their originals, each RM's reward change (reward units and
  the effects' y in reward sd), the words changed, and the stretches the edits of each direction inserted and
  deleted most often;
- ``.../effects/length.js``: the ``LENGTH_EDITS`` edits that changed the length most (any attribute), behind
  the length row;
- ``data/datasets/<dataset>/discovered/<k>.js``: the first ``DISCOVERY_EDITS`` edits of discovered feature
  ``k`` (its index in the dataset's discovered features), each with its source text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl

from rmexplain.effects.base import LENGTH
from rmexplain.findings import language
from rmexplain.findings.landing import unmasked_sentence
from rmexplain.findings.phrases import Changed, changed_runs, shown, top_runs
from rmexplain.textdiff import word_edit

LENGTH_EDITS = 300  # edits listed behind the length row: those that changed the length most
DISCOVERY_EDITS = 200  # edits listed behind a discovered feature
TOP_RUNS = 12  # stretches listed per direction and change
DISCOVERY_COLUMNS = ("feature", "direction", "source_text", "edited_text")
TARGETS = {"chosen": 0, "rejected": 1}
DIRECTIONS = {"better": 1, "worse": -1}
_KEEP = ("dataset", "method", "rm", "kind", "name", "description", "phrase", "significant", "reference", "n",
         "rank", "order", "leading", "n_direction", "example_edit_id", "example_comparison_id",
         "example_words_change", "inserted_most", "deleted_most", "carrier", "carrier_change",
         "carrier_edits", "under", "same_edits", "replication", "carried_by", "nature", "robust",
         "natural_pairs", "under_check", "under_checked_edits", "members")  # fmt: skip
_NUMBERS = ("effect", "low", "high", "q_value", "example_effect_change", "example_reward_change",
            "carrier_share_edits", "carrier_share_change", "half_a_effect", "half_b_effect",
            "without_it", "natural_effect", "natural_low", "natural_high", "under_share",
            "under_per_instance", "under_inferred_share", "robust_effect")  # fmt: skip


def finding_rows(findings: pl.DataFrame, num: Callable[[float | None], float | None]) -> list[dict[str, Any]]:
    """The findings for the manifest: every row, numbers rounded, the example as a word edit."""
    rows = []
    for r in findings.iter_rows(named=True):
        row = {k: r[k] for k in _KEEP}
        row.update({k: num(r[k]) for k in _NUMBERS})
        row["influential_pair"] = r["influential_pair"]
        row["significance_note"] = language.significance_note(r["significant"], r.get("pairs"))
        row["unmasked"] = unmasked_sentence(r)
        before, after = r["example_before"], r["example_after"]
        row["example"] = None if before is None else {"before": before, "edit": word_edit(before, after)}
        rows.append(row)
    return rows


def _runs(sources: Sequence[str], texts: Sequence[str]) -> dict[str, list[list[Any]]]:
    inserted, deleted = zip(*(changed_runs(s, t) for s, t in zip(sources, texts, strict=True)), strict=True)
    return {
        "inserted": [[shown(r), n] for r, n in top_runs(inserted, TOP_RUNS)],
        "deleted": [[shown(r), n] for r, n in top_runs(deleted, TOP_RUNS)],
    }


def _columns(
    rows: pl.DataFrame, index: Mapping[str, int], rms: Sequence[str], num: Callable
) -> dict[str, Any]:
    """Edits (one per row of ``rows``: an edit joined to its original and each RM's change) as columns."""
    return {
        "id": rows["edit_id"].to_list(),
        "c": [index[c] for c in rows["comparison_id"]],
        "target": [TARGETS[t] for t in rows["target"]],
        "dir": [DIRECTIONS[d] for d in rows["direction"]],
        "edit": [word_edit(s, t) for s, t in zip(rows["source_text"], rows["text"], strict=True)],
        "words": rows["words_change"].to_list(),
        "rm": {
            rm: {"r": [num(x) for x in rows[f"r:{rm}"]], "y": [num(x) for x in rows[f"y:{rm}"]]} for rm in rms
        },
    }


def edit_table(
    edits: pl.DataFrame, changes: pl.DataFrame, comparisons: pl.DataFrame
) -> tuple[pl.DataFrame, list]:
    """The round-1 edits with their original (``source_text``) and one ``r:<rm>`` and ``y:<rm>`` column per
    RM of ``changes``, in edit order; and those RMs."""
    originals = pl.concat(
        [comparisons.select("comparison_id", pl.lit(t).alias("target"), pl.col(t).alias("source_text"))
         for t in TARGETS]
    )  # fmt: skip
    rms = changes["rm"].unique(maintain_order=True).to_list()
    table = (
        edits.filter(pl.col("round") == 1)
        .select("edit_id", "attribute", "text")
        .join(
            changes.filter(pl.col("rm") == rms[0]).select(
                "edit_id", "comparison_id", "target", "direction", "words_change"
            ),
            on="edit_id",
        )
    )
    for rm in rms:
        mine = changes.filter(pl.col("rm") == rm).select(
            "edit_id", pl.col("reward_change").alias(f"r:{rm}"), pl.col("effect_change").alias(f"y:{rm}")
        )
        table = table.join(mine, on="edit_id", how="left")
    table = table.join(originals, on=["comparison_id", "target"], how="left").sort("edit_id")
    return table, rms


def effect_payloads(
    edits: pl.DataFrame,
    changes: pl.DataFrame,
    comparisons: pl.DataFrame,
    index: Mapping[str, int],
    num: Callable[[float | None], float | None],
    carriers: Mapping[tuple[str, str], tuple[str, str]] | None = None,
) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The effect attributes of one (dataset, method), and the payload of each attribute's file and of the
    length file (key ``length``). ``carriers``: (RM, attribute) -> (carrier, ``inserts``/``deletes``) of the
    findings; each attribute's file lists, per RM with a carrier, the positions of the edits that change
    it."""
    if changes.is_empty():
        return [], {}
    table, rms = edit_table(edits, changes, comparisons)
    attributes = table["attribute"].unique(maintain_order=True).to_list()
    payloads = {}
    for attribute in attributes:
        rows = table.filter(pl.col("attribute") == attribute)
        payload = {"attribute": attribute, **_columns(rows, index, rms, num), "runs": {}, "carrier": {}}
        for direction in DIRECTIONS:
            mine = rows.filter(pl.col("direction") == direction)
            if mine.height:
                payload["runs"][direction] = _runs(mine["source_text"].to_list(), mine["text"].to_list())
        mine_carriers = {rm: c for (rm, a), c in (carriers or {}).items() if a == attribute and rm in rms}
        if mine_carriers:
            changed = [Changed.of(s, t) for s, t in zip(rows["source_text"], rows["text"], strict=True)]
            for rm, (phrase, change) in mine_carriers.items():
                edits_with = [j for j, c in enumerate(changed) if c.changes(phrase, change)]
                payload["carrier"][rm] = {"phrase": phrase, "change": change, "edits": edits_with}
        payloads[attribute] = payload
    longest = table.sort([pl.col("words_change").abs(), "edit_id"], descending=[True, False]).head(
        LENGTH_EDITS
    )
    payloads[LENGTH] = {
        "attribute": LENGTH,
        **_columns(longest, index, rms, num),
        "a": [attributes.index(a) for a in longest["attribute"]],
        "runs": {},
    }
    return attributes, payloads


def discovery_payloads(edits: pl.DataFrame) -> tuple[list[str], list[dict[str, Any]]]:
    """The discovered features of one dataset (first-seen order) and the payload of each one's file."""
    missing = [c for c in DISCOVERY_COLUMNS if c not in edits.columns]
    if missing:
        raise ValueError(f"discovery edits: missing column(s) {missing}; have {edits.columns}")
    features = edits["feature"].unique(maintain_order=True).to_list()
    payloads = []
    for feature in features:
        mine = edits.filter(pl.col("feature") == feature)
        part = mine.head(DISCOVERY_EDITS)
        payloads.append(
            {
                "feature": feature,
                "n": mine.height,
                "dir": [int(d) for d in part["direction"]],
                "source": part["source_text"].to_list(),
                "edit": [
                    word_edit(s, t) for s, t in zip(part["source_text"], part["edited_text"], strict=True)
                ],
            }
        )
    return features, payloads
