"""Which single-token responses a token scan scores: the whole vocabulary or a filtered subset.

Every row keeps the exact token id. ``text`` is what the id decodes to on its own; ``retokenizes_same``
records whether encoding that text gives back exactly ``[token_id]`` (for a Llama-3 vocabulary about half
of the ids do not — the reason the scan never decodes and re-tokenises).

``clean_up`` decides the text: ``paper`` (default) as the paper's runs decoded it with transformers 4.43,
whose ``decode`` applied :data:`CLEAN_UP_REPLACEMENTS` whenever the tokenizer's
``clean_up_tokenization_spaces`` was true (Llama 3: `` .`` decodes to ``.``); transformers 5 skips that
step for BPE tokenizers, so the replacements are applied here, whatever transformers is installed.
``none`` keeps the decoder's raw text.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

log = logging.getLogger(__name__)

MODES = ("all", "word", "english", "list")
CLEAN_UP = ("paper", "none")
# transformers 4.43's ``PreTrainedTokenizerBase.clean_up_tokenization``: the fixed replacements, in order,
# that its ``decode`` made when ``clean_up_tokenization_spaces`` was true (the paper's requirements pin 4.43).
CLEAN_UP_REPLACEMENTS = (
    (" .", "."),
    (" ?", "?"),
    (" !", "!"),
    (" ,", ","),
    (" ' ", "'"),
    (" n't", "n't"),
    (" 'm", "'m"),
    (" 's", "'s"),
    (" 've", "'ve"),
    (" 're", "'re"),
)


class VocabularyError(ValueError):
    """A vocabulary setting or list file is wrong; the message names the key or line."""


def normalise_text(text: str, match: str = "strip") -> str:
    """The key decoded texts are compared by across tokenizers: ``exact``, ``strip`` or ``lower``."""
    if match == "exact":
        return text
    if match == "strip":
        return text.strip()
    if match == "lower":
        return text.strip().lower()
    raise VocabularyError(f"tokens.analysis.match: unknown mode {match!r}; choose exact, strip or lower")


def is_word(text: str) -> bool:
    """True when the decoded token, without surrounding spaces, is one alphabetic word."""
    stripped = text.strip()
    return bool(stripped) and stripped.isalpha()


def clean_up_tokenization(text: str) -> str:
    """``text`` after transformers 4.43's clean-up (:data:`CLEAN_UP_REPLACEMENTS`, applied in order)."""
    for old, new in CLEAN_UP_REPLACEMENTS:
        text = text.replace(old, new)
    return text


def paper_cleans_up(tokenizer: Any) -> bool:
    """Whether transformers 4.43 cleaned up this tokenizer's decoded text: the
    ``clean_up_tokenization_spaces`` its config sets (Llama 3: true, Gemma 2: false), true where the config
    leaves it out (4.43's default; transformers 5 defaults to false)."""
    value = getattr(tokenizer, "init_kwargs", {}).get("clean_up_tokenization_spaces")
    return True if value is None else bool(value)


def decode_tokens(tokenizer: Any, token_ids: Sequence[int], clean_up: str = "paper") -> list[str]:
    """What each id decodes to on its own (special tokens kept): ``clean_up`` ``paper`` as transformers 4.43
    decoded it (:func:`paper_cleans_up`, :func:`clean_up_tokenization`), ``none`` the decoder's raw text."""
    if clean_up not in CLEAN_UP:
        raise VocabularyError(
            f"tokens.vocabulary.clean_up: unknown {clean_up!r}; choose one of {list(CLEAN_UP)}"
        )
    texts = tokenizer.batch_decode(
        [[int(i)] for i in token_ids], skip_special_tokens=False, clean_up_tokenization_spaces=False
    )
    if clean_up == "paper" and paper_cleans_up(tokenizer):
        texts = [clean_up_tokenization(t) for t in texts]
    return texts


def _special_ids(tokenizer: Any) -> set[int]:
    ids = set(tokenizer.all_special_ids)
    ids.update(i for i, token in getattr(tokenizer, "added_tokens_decoder", {}).items() if token.special)
    return ids


def vocabulary_table(tokenizer: Any, include_special: bool = False, clean_up: str = "paper") -> pl.DataFrame:
    """Every token id of ``tokenizer`` with its raw piece and its decoded text (no round-trip flag yet);
    ``clean_up``: see :func:`decode_tokens`."""
    special = _special_ids(tokenizer)
    ids = [i for i in range(len(tokenizer)) if include_special or i not in special]
    if len(ids) < len(tokenizer):
        log.info(
            "vocabulary: left out %d special token(s) (tokens.vocabulary.include_special)",
            len(tokenizer) - len(ids),
        )
    pieces = tokenizer.convert_ids_to_tokens(ids)
    texts = decode_tokens(tokenizer, ids, clean_up)
    return pl.DataFrame(
        {"token_id": ids, "piece": [p if p is not None else "" for p in pieces], "text": texts},
        schema={"token_id": pl.Int64, "piece": pl.String, "text": pl.String},
    )


def with_round_trip(tokenizer: Any, table: pl.DataFrame) -> pl.DataFrame:
    """Add ``retokenizes_same``: whether encoding the decoded text gives back exactly ``[token_id]``."""
    texts = table["text"].to_list()
    encoded = tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []
    same = [e == [i] for i, e in zip(table["token_id"].to_list(), encoded, strict=True)]
    return table.with_columns(pl.Series("retokenizes_same", same, dtype=pl.Boolean))


def _read_list(path: str | Path) -> list[str]:
    file = Path(path)
    if not file.is_file():
        raise VocabularyError(f"tokens.vocabulary.list_path: file {str(path)!r} does not exist")
    return [line.rstrip("\n") for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]


def _select_list(table: pl.DataFrame, entries: Sequence[str], list_kind: str) -> pl.DataFrame:
    if list_kind == "id":
        try:
            wanted = [int(e) for e in entries]
        except ValueError as err:
            raise VocabularyError(f"tokens.vocabulary.list_path: not a token id: {err}") from None
        chosen = table.filter(pl.col("token_id").is_in(wanted))
        missing = len(set(wanted) - set(chosen["token_id"].to_list()))
    elif list_kind == "text":
        wanted_text = {e.strip() for e in entries}
        chosen = table.filter(pl.col("text").str.strip_chars().is_in(list(wanted_text)))
        missing = len(wanted_text - set(chosen["text"].str.strip_chars().to_list()))
    else:
        raise VocabularyError(f"tokens.vocabulary.list_kind: unknown {list_kind!r}; choose text or id")
    if missing:
        log.warning(
            "vocabulary: %d list entr(ies) match no single token of this tokenizer (skipped)", missing
        )
    return chosen


def _english(table: pl.DataFrame, min_zipf: float) -> pl.DataFrame:
    from wordfreq import zipf_frequency

    words = table.filter(pl.col("text").map_elements(is_word, return_dtype=pl.Boolean))
    zipf = [zipf_frequency(t.strip(), "en") for t in words["text"].to_list()]
    return (
        words.with_columns(pl.Series("zipf", zipf, dtype=pl.Float64))
        .filter(pl.col("zipf") >= min_zipf)
        .sort(["zipf", "token_id"], descending=[True, False])
        .drop("zipf")
    )


def select_vocabulary(
    tokenizer: Any,
    mode: str = "all",
    *,
    include_special: bool = False,
    min_zipf: float = 3.0,
    max_tokens: int | None = None,
    list_path: str | None = None,
    list_kind: str = "text",
    clean_up: str = "paper",
) -> pl.DataFrame:
    """The tokens to scan, as a VOCABULARY table (see ``rmexplain.schemas``).

    ``all``: every id (special tokens only with ``include_special``); ``word``: ids whose decoded text is one
    alphabetic word; ``english``: words with ``wordfreq`` Zipf frequency >= ``min_zipf`` (most frequent
    first); ``list``: ids or decoded texts listed one per line in ``list_path``. ``max_tokens`` keeps the
    first rows (lowest ids; for ``english`` the most frequent words). ``clean_up``: ``paper`` decodes as the
    paper's transformers 4.43 did, ``none`` keeps the raw text (:func:`decode_tokens`).
    """
    if mode not in MODES:
        raise VocabularyError(f"tokens.vocabulary.mode: unknown mode {mode!r}; choose one of {list(MODES)}")
    table = vocabulary_table(tokenizer, include_special=include_special, clean_up=clean_up)
    if mode == "word":
        table = table.filter(pl.col("text").map_elements(is_word, return_dtype=pl.Boolean))
    elif mode == "english":
        table = _english(table, min_zipf)
    elif mode == "list":
        if not list_path:
            raise VocabularyError("tokens.vocabulary.list_path is required for mode 'list'")
        table = _select_list(table, _read_list(list_path), list_kind)
    if max_tokens is not None and table.height > max_tokens:
        log.info(
            "vocabulary: kept the first %d of %d tokens (tokens.vocabulary.max_tokens)",
            max_tokens,
            table.height,
        )
        table = table.head(max_tokens)
    if table.height == 0:
        raise VocabularyError(f"tokens.vocabulary: mode {mode!r} selects no token of this tokenizer")
    table = with_round_trip(tokenizer, table)
    n_changed = table.height - int(table["retokenizes_same"].sum())
    log.info(
        "vocabulary: %d tokens (mode %s); %d decode to text that re-tokenises differently",
        table.height,
        mode,
        n_changed,
    )
    return table
