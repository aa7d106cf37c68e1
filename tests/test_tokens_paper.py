"""The paper's analyses (shared vocabulary, Table 3, top/bottom tables, RSA properties, Fig. 3C/3D, Fig. 4) on
hand-made scans and official-format CSVs, checked against hand computations."""

from __future__ import annotations

from rmexplain.score.specs import parse_spec
from rmexplain.tokens.paper_models import (
    paper_model_properties,
    paper_reward_model_specs,
    paper_reward_models,
)


def test_reward_model_table_follows_the_paper_config():
    table = paper_reward_models()
    ranks = dict(table.select("short_name", "rewardbench_rank").iter_rows())
    assert ranks == {
        "N-Gem-27B": 2,
        "S-Gem-27B-v0.2": 3,
        "S-Gem-27B": 5,
        "S-Lla-8B-v0.2": 10,
        "N-Lla-8B": 11,
        "L-Lla-8B": 12,
        "R-Lla-8B": 17,
        "R-Lla-3B": 19,
        "F-Lla-8B-v0.1": 20,
        "R-Gem-2B": 31,
    }
    props = paper_model_properties()
    assert props["N-Gem-27B"] == {
        "base_model": "Gemma",
        "developer": "nicolinho",
        "params_b": 27,
        "leaderboard_rank": 2,
    }
    assert props["R-Lla-3B"] == {
        "base_model": "Llama",
        "developer": "Ray2333",
        "params_b": 3,
        "leaderboard_rank": 19,
    }
    assert {p["base_model"] for p in props.values()} == {"Gemma", "Llama"}
    specs = paper_reward_model_specs()
    pinned = {k: v["revision"] for k, v in specs.items() if "revision" in v}
    assert pinned == {
        "N-Gem-27B": "eef8d852e886240e308a57b61d69f0e58489f0ed",
        "N-Lla-8B": "74280eebb9580bfecff5d0b2edb81f7d6186a204",
        "F-Lla-8B-v0.1": "39aadadd6d1b66ab358f0b4ce8899624c35c7434",
    }
    assert all(specs[k].get("trust_remote_code") for k in pinned)
    assert specs["N-Gem-27B"]["attn_implementation"] == "flash_attention_2"
    for name, spec in specs.items():
        parsed = parse_spec(name, spec)
        assert parsed.model == table.filter(table["short_name"] == name)["hub_id"][0]
