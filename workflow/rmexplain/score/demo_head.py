"""The demo RMs' Bradley–Terry head: its network, its features and its training (the ``train_demo_rm`` rule).

Apart from ``rmexplain.score.demo`` so that reading a demo RM's spec (the config check, at every Snakemake
start) does not import torch.
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
    embed_or_look_up,
    embedding_dimension,
    load_sentence_model,
)


class BTHead(nn.Module):
    """Scalar reward head on frozen sentence-embedding features."""

    def __init__(self, embedding_dim: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3 * embedding_dim, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.net(features).squeeze(-1)


def pair_features(
    prompts: Sequence[str], responses: Sequence[str], encoder: Any | None, known: TextEmbeddings | None = None
) -> torch.Tensor:
    """[e(x), e(y), e(x)⊙e(y)] for each (prompt, response); texts over the encoder's limit are truncated.
    Prompts and responses that ``known`` holds (text embeddings of the same encoder) are looked up; the
    encoder may be None when it holds them all."""
    e_prompt = embed_or_look_up(prompts, encoder, known, long_texts="truncate")
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
