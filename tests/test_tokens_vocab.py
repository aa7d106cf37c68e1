"""Vocabulary selection on real tokenizers: MiniLM's WordPiece (bundled) and a byte-level BPE built here."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from rmexplain.score.tiny import build_llama_tokenizer, minilm_tokenizer_dir
from rmexplain.tokens.vocab import VocabularyError, normalise_text, select_vocabulary


@pytest.fixture(scope="module")
def minilm():
    return AutoTokenizer.from_pretrained(minilm_tokenizer_dir())


@pytest.fixture(scope="module")
def bpe():
    return build_llama_tokenizer()


def test_all_keeps_every_non_special_id_with_its_piece_and_text(bpe):
    table = select_vocabulary(bpe, "all")
    special = {bpe.bos_token_id, bpe.eos_token_id, bpe.pad_token_id, bpe.convert_tokens_to_ids("<|user|>")}
    assert table.height == len(bpe) - 7  # the tokenizer's seven special tokens
    assert not special & set(table["token_id"].to_list())
    row = table.filter(table["piece"] == "Ġthe").row(0, named=True)
    assert row["text"] == " the" and row["retokenizes_same"] is True
    # Lone UTF-8 bytes decode to U+FFFD and do not come back as themselves.
    lone = table.filter(table["piece"] == "¡").row(0, named=True)
    assert lone["text"] == "\ufffd" and lone["retokenizes_same"] is False
    with_special = select_vocabulary(bpe, "all", include_special=True)
    assert with_special.height == len(bpe)


def test_word_and_english_filters(minilm):
    words = select_vocabulary(minilm, "word")
    assert words["text"].str.strip_chars().str.contains(r"^[^\W\d_]+$").all()
    assert "##ing" not in words["text"].to_list() and "love" in words["text"].to_list()
    english = select_vocabulary(minilm, "english", min_zipf=4.0)
    assert english.height < words.height
    assert english["text"][0] == "the"  # most frequent first
    assert {"love", "war", "peace"} <= set(english["text"].to_list())
    capped = select_vocabulary(minilm, "english", min_zipf=4.0, max_tokens=50)
    assert capped["text"].to_list() == english["text"].to_list()[:50]


def test_list_by_text_and_by_id(minilm, tmp_path, caplog):
    texts = tmp_path / "words.txt"
    texts.write_text("love\nwar\nnot-a-single-token-xyz\n")
    chosen = select_vocabulary(minilm, "list", list_path=str(texts))
    assert sorted(chosen["text"].to_list()) == ["love", "war"]
    assert "1 list entr" in caplog.text
    ids = tmp_path / "ids.txt"
    ids.write_text("2293\n3000\n")
    assert select_vocabulary(minilm, "list", list_path=str(ids), list_kind="id")["token_id"].to_list() == [
        2293,
        3000,
    ]
    ids.write_text("2293\nlove\n")
    with pytest.raises(VocabularyError, match="not a token id"):
        select_vocabulary(minilm, "list", list_path=str(ids), list_kind="id")


def test_bad_settings_name_the_key(minilm, tmp_path):
    with pytest.raises(VocabularyError, match=r"tokens\.vocabulary\.mode"):
        select_vocabulary(minilm, "nouns")
    with pytest.raises(VocabularyError, match="list_path is required"):
        select_vocabulary(minilm, "list")
    with pytest.raises(VocabularyError, match="does not exist"):
        select_vocabulary(minilm, "list", list_path=str(tmp_path / "missing.txt"))
    with pytest.raises(VocabularyError, match="selects no token"):
        select_vocabulary(minilm, "english", min_zipf=9.0)


def test_normalise_text():
    assert normalise_text(" Love ", "exact") == " Love "
    assert normalise_text(" Love ", "strip") == "Love"
    assert normalise_text(" Love ", "lower") == "love"
    with pytest.raises(VocabularyError, match=r"tokens\.analysis\.match"):
        normalise_text("x", "casefold")
