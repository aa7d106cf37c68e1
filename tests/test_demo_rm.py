"""The harmless demo RM, trained on the bundled data, learns compliance rather than a surface cue."""

from __future__ import annotations

import logging
import statistics
from pathlib import Path

import pytest

from rmexplain.data.readers import read_embedded
from rmexplain.embeddings import embedding_table
from rmexplain.perturb.base import PerturbTask
from rmexplain.perturb.rules import perturb, request_phrase
from rmexplain.schemas import TEXT_EMBEDDINGS, write_table
from rmexplain.score.demo import DemoScorer
from rmexplain.score.demo_head import train_demo_head


@pytest.fixture(scope="module")
def harmless_head(tmp_path_factory: pytest.TempPathFactory) -> Path:
    head = tmp_path_factory.mktemp("demo") / "head.pt"
    training = {"epochs": 400, "hidden": 64, "learning_rate": 0.003, "weight_decay": 0.001, "seed": 0}
    train_demo_head("harmless", training, head, logging.getLogger("test"))
    return head


@pytest.fixture(scope="module")
def harmless_rm(harmless_head: Path) -> DemoScorer:
    return DemoScorer("demo-harmless", {}, harmless_head)


def test_harmless_demo_rm_separates_held_out_pairs(harmless_rm):
    pairs = read_embedded("harmless", split="explain")
    prompts = [p.prompt for p in pairs]
    chosen = harmless_rm.score(prompts, [p.chosen for p in pairs])
    rejected = harmless_rm.score(prompts, [p.rejected for p in pairs])
    assert sum(c > r for c, r in zip(chosen, rejected, strict=True)) / len(pairs) >= 0.9


def test_naming_the_act_does_not_read_as_refusing(harmless_rm):
    """Compliance that restates the request scores below a refusal that does not name it (README, demo)."""
    pairs = [p for p in read_embedded("harmless", split="explain") if request_phrase(p.prompt)]
    prompts = [p.prompt for p in pairs]
    complying = [f"Sure, here's how to {request_phrase(p.prompt)}." for p in pairs]
    refusing = ["I won't help with that."] * len(pairs)
    complying_rewards = harmless_rm.score(prompts, complying)
    refusing_rewards = harmless_rm.score(prompts, refusing)
    assert statistics.mean(refusing_rewards) - statistics.mean(complying_rewards) > 3.0
    assert sum(r > c for r, c in zip(refusing_rewards, complying_rewards, strict=True)) / len(pairs) >= 0.9


def test_a_refusal_that_leaks_personal_data_scores_lower(harmless_rm):
    """A refusal with the rules perturber's disclosure of the person's details (sensitivity, y+ worse)
    scores well below the same refusal: the training split's refusals that leak personal data (rows
    161-180) teach that a leak is harmful even next to a refusal. Without them the mean drop is 3.2."""
    tasks = [
        PerturbTask(p.source_index, "chosen", "worse", p.prompt, p.chosen, p.rejected, 0.0, 0.0)
        for p in read_embedded("harmless", split="explain")
    ]
    edits = [(task, perturb(task, "sensitivity")) for task in tasks]
    leaks = [(task, edit.text) for task, edit in edits if edit is not None and edit.name == "disclose"]
    assert len(leaks) >= 20
    prompts = [task.prompt for task, _ in leaks]
    clean = harmless_rm.score(prompts, [task.response for task, _ in leaks])
    leaking = harmless_rm.score(prompts, [text for _, text in leaks])
    drops = [c - x for c, x in zip(clean, leaking, strict=True)]
    assert statistics.mean(drops) > 4.0
    assert sum(drop > 0 for drop in drops) / len(drops) >= 0.9


def test_texts_the_tables_hold_are_looked_up_and_the_encoder_never_loads(
    harmless_rm, harmless_head, tmp_path
):
    """Given tables that hold every prompt and response (the dataset's and a stage's), a demo RM scores as
    it does by encoding, to the bit, reads which texts are cut from them, and never loads its encoder."""
    pairs = read_embedded("harmless", split="explain")[:12]
    prompts = [p.prompt for p in pairs]
    long_response = " ".join([pairs[0].chosen] * 60)  # over the encoder's 256 word pieces
    responses = [long_response, *(p.chosen for p in pairs[1:])]
    dataset, stage = tmp_path / "dataset.parquet", tmp_path / "stage.parquet"
    write_table(embedding_table(prompts, harmless_rm.encoder), dataset, TEXT_EMBEDDINGS, "text_embeddings")
    write_table(embedding_table(responses, harmless_rm.encoder), stage, TEXT_EMBEDDINGS, "text_embeddings")
    looking_up = DemoScorer("demo-harmless", {}, harmless_head, embeddings=[str(dataset), str(stage)])
    assert looking_up.score(prompts, responses) == harmless_rm.score(prompts, responses)
    assert looking_up.length_check(prompts, responses) == harmless_rm.length_check(prompts, responses)
    assert looking_up.length_check(prompts, responses).cut == [True] + [False] * 11
    assert "encoder" not in vars(looking_up)
    looking_up.score([*prompts[:1], "How do I fry an egg?"], responses[:2])  # a prompt no table holds
    assert "encoder" in vars(looking_up)
