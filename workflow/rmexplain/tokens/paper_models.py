"""The ten reward models of Christian et al. as data: names, RSA properties and load settings.

``data/paper_reward_models.csv`` follows ``config/reward_models.yaml`` of the paper's repository (see
``data/NOTICE.md``): ``family`` is its ``base_model`` (Gemma or Llama; the RSA base-model property),
``developer`` the hub organisation (its ``creator``), ``params_b`` its ``size`` in billions and
``rewardbench_rank`` its ``reward_bench_rank``. ``revision`` is the commit the paper pinned for the
remote-code RMs; ``trust_remote_code``, ``dtype`` and ``num_labels`` are the paper's load settings;
``attn_implementation`` is what the model card asks for (QRM-Gemma-2-27B: ``flash_attention_2``; the
paper's config left it at the default); ``read`` is where the paper's registry reads the reward.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

DATA_DIR = Path(__file__).parent / "data"
MODELS_FILE = DATA_DIR / "paper_reward_models.csv"

_SCHEMA = {
    "hub_id": pl.String,
    "short_name": pl.String,
    "family": pl.String,
    "base_version": pl.String,
    "developer": pl.String,
    "params_b": pl.Int64,
    "rewardbench_rank": pl.Int64,
    "dtype": pl.String,
    "trust_remote_code": pl.Boolean,
    "revision": pl.String,
    "attn_implementation": pl.String,
    "num_labels": pl.Int64,
    "read": pl.String,
}


def paper_reward_models() -> pl.DataFrame:
    """The table of the ten RMs, best RewardBench rank first (the order of the paper's figures)."""
    return pl.read_csv(MODELS_FILE, schema=_SCHEMA).sort("rewardbench_rank")


def hub_to_short() -> dict[str, str]:
    """Hub id -> short name (e.g. ``nicolinho/QRM-Gemma-2-27B`` -> ``N-Gem-27B``)."""
    table = paper_reward_models()
    return dict(zip(table["hub_id"].to_list(), table["short_name"].to_list(), strict=True))


def paper_model_properties() -> dict[str, dict[str, Any]]:
    """RSA properties as the paper's Fig. 2C defines them, keyed by short name, in the shape
    ``stats.rsa_table`` takes: base-model family, developer organisation, parameters (B), RewardBench rank."""
    return {
        row["short_name"]: {
            "base_model": row["family"],
            "developer": row["developer"],
            "params_b": row["params_b"],
            "leaderboard_rank": row["rewardbench_rank"],
        }
        for row in paper_reward_models().iter_rows(named=True)
    }


def paper_reward_model_specs(device: str = "cuda") -> dict[str, dict[str, Any]]:
    """``reward_models`` entries (backend ``transformers``) that load each RM as the paper did, keyed by short
    name: pinned ``revision`` and ``trust_remote_code`` where the paper set them, its dtype, the card's
    ``attn_implementation`` and the paper's reward read-out."""
    specs: dict[str, dict[str, Any]] = {}
    for row in paper_reward_models().iter_rows(named=True):
        spec: dict[str, Any] = {
            "backend": "transformers",
            "model": row["hub_id"],
            "device": device,
            "dtype": row["dtype"],
            "read": row["read"],
        }
        if row["trust_remote_code"]:
            spec["trust_remote_code"] = True
        for key in ("revision", "attn_implementation"):
            if row[key]:
                spec[key] = row[key]
        specs[row["short_name"]] = spec
    return specs
