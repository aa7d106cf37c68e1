"""The paper's reward-model specs in config/paper.yaml (the three OpenAssistant RMs and App. G's two 8B Llama
RMs): valid for the JSON schema and for the spec parser."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

from rmexplain.score.base import gpus_needed
from rmexplain.score.specs import parse_spec

ROOT = Path(__file__).resolve().parents[1]


def _schema_for_one_rm() -> dict:
    schema = yaml.safe_load((ROOT / "workflow/rmexplain/config/schema.yaml").read_text())
    return schema["properties"]["reward_models"]


def test_paper_reward_models_are_valid():
    config = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    rms = config["reward_models"]
    assert set(rms) == {"deberta-v1", "deberta-v2", "pythia-1.4b", "offsetbias-8b", "skywork-8b"}
    validator = jsonschema.Draft202012Validator(_schema_for_one_rm())
    for name, raw in rms.items():
        assert not list(validator.iter_errors({name: raw})), name
        spec = parse_spec(name, raw)
        assert spec.read.attr == "logits" and spec.read.index == 0 and not spec.trust_remote_code
        assert gpus_needed(raw) == 1
    assert {parse_spec(n, rms[n]).input_format for n in ("deberta-v1", "deberta-v2")} == {"pair"}
    assert parse_spec("pythia-1.4b", rms["pythia-1.4b"]).register == "rmexplain.score.oasst_rm"


def test_an_error_inside_a_python_rm_names_the_rm_and_the_rows(tmp_path):
    from rmexplain.score.base import ScoringError, build_scorer

    (tmp_path / "rm.py").write_text(
        "def score(prompts, responses):\n"
        "    return [1.0 / (len(r) - 3) for r in responses]  # fails on a 3-character response\n"
    )
    scorer = build_scorer(
        "mine", {"backend": "python", "callable": f"{tmp_path / 'rm.py'}:score", "batch_size": 2}
    )
    assert scorer.score(["q", "q"], ["long one", "longer"]) == pytest.approx([0.2, 1 / 3])
    with pytest.raises(ScoringError, match=r"reward_models\.mine\.callable '.*rm\.py:score' raised "
                       r"ZeroDivisionError: float division by zero \(input rows 2-3\)"):  # fmt: skip
        scorer.score(["q"] * 4, ["long one", "longer", "abc", "fine"])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[str(len(r)) for r in responses]", r"returned text \('7'\) for input row 0, not a number"),
        ("'0.5'", r"returned a str, not one reward per input \(input rows 0-1\)"),
        ("3.0", r"returned a float, not one reward per input \(input rows 0-1\)"),
        ("[1.0, b'2']", r"returned text \(b'2'\) for input row 1, not a number"),
    ],
)
def test_a_python_rm_returning_text_or_a_lone_number_is_refused_naming_the_row(tmp_path, body, message):
    from rmexplain.score.base import ScoringError, build_scorer

    (tmp_path / "rm.py").write_text(f"def score(prompts, responses):\n    return {body}\n")
    scorer = build_scorer("mine", {"backend": "python", "callable": f"{tmp_path / 'rm.py'}:score"})
    with pytest.raises(ScoringError, match=rf"reward_models\.mine\.callable '.*rm\.py:score' {message}"):
        scorer.score(["q", "q"], ["one two", "three"])
