"""Exact-id token scans on tiny random RMs (the Llama template writes BOS and its tokenizer adds one)."""

from __future__ import annotations

import pytest
import torch
from conftest import load_tiny_rm

from rmexplain.score.base import ScoringError
from rmexplain.score.hf import chat_token_ids, prompt_prefix_suffix_ids, read_reward
from rmexplain.score.tiny import build_deberta_rm, build_llama_rm, build_llama_tokenizer
from rmexplain.tokens.scan import PrefixScorer, ScanSettings, choose_cache, scan_transformers
from rmexplain.tokens.vocab import select_vocabulary

PROMPT = "What, in one word, is the best thing ever?"


def build_gemma3_rm(directory, sliding_window: int = 8):
    """A tiny random Gemma 3 RM: sliding-window layers (a window shorter than the prompt prefix, so the
    cache holds DynamicSlidingWindowLayer entries) and an embedding module that scales by sqrt(hidden)."""
    from transformers import Gemma3TextConfig, Gemma3TextForSequenceClassification

    tokenizer = build_llama_tokenizer()
    config = Gemma3TextConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        sliding_window=sliding_window,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        max_position_embeddings=512,
        num_labels=1,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(0)
    Gemma3TextForSequenceClassification(config).eval().save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    torch.set_num_threads(1)
    return load_tiny_rm(build_llama_rm(tmp_path_factory.mktemp("llama"), layers=2, seed=3))


def _one_by_one(model, spec, sequences):
    """Reference: every sequence in its own forward pass (no batching, no cache)."""
    out = []
    with torch.inference_mode():
        for ids in sequences:
            x = torch.tensor([ids])
            out.append(float(read_reward(spec, model(input_ids=x, attention_mask=torch.ones_like(x)))[0]))
    return torch.tensor(out)


def test_prefix_cached_scan_equals_full_sequence_scores(tiny_llama):
    model, tokenizer, spec = tiny_llama
    vocabulary = select_vocabulary(tokenizer, "all")
    cached = scan_transformers(
        model, tokenizer, spec, PROMPT, vocabulary, ScanSettings(batch_size=64, prefix_cache="always")
    )
    full = scan_transformers(
        model, tokenizer, spec, PROMPT, vocabulary, ScanSettings(batch_size=50, prefix_cache="never")
    )
    assert cached["token_id"].to_list() == vocabulary["token_id"].to_list()
    delta = (cached["score"] - full["score"]).abs().max()
    assert delta <= 1e-4, delta
    # ... and both equal one-sequence-at-a-time scoring of prefix + [id] + suffix.
    prefix, suffix = prompt_prefix_suffix_ids(tokenizer, spec, PROMPT)
    sample = vocabulary["token_id"].to_list()[::25]
    reference = _one_by_one(model, spec, [[*prefix, t, *suffix] for t in sample])
    got = torch.tensor(cached.filter(cached["token_id"].is_in(sample))["score"].to_list())
    assert (got - reference).abs().max() <= 1e-4
    assert cached["score"].n_unique() > 100  # a random RM still separates tokens: the test can fail


def test_every_scored_sequence_holds_exactly_one_bos(tiny_llama):
    model, tokenizer, spec = tiny_llama
    bos = tokenizer.bos_token_id
    # The trap: the template writes {{ bos_token }} and the tokenizer's post-processor adds one too.
    assert tokenizer.chat_template.startswith("{{ bos_token }}")
    assert tokenizer("a")["input_ids"][0] == bos
    calls = []

    def record(_module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        calls.append((ids.clone(), kwargs.get("past_key_values") is not None))

    handle = model.register_forward_pre_hook(record, with_kwargs=True)
    try:
        vocabulary = select_vocabulary(tokenizer, "all").head(100)
        scan_transformers(
            model, tokenizer, spec, PROMPT, vocabulary, ScanSettings(batch_size=32, prefix_cache="always")
        )
    finally:
        handle.remove()
    prefixes = [
        ids[0].tolist() for ids, cached in calls if not cached and ids.shape[0] == 1 and ids.shape[1] > 3
    ]
    prefix = prompt_prefix_suffix_ids(tokenizer, spec, PROMPT)[0]
    assert prefix in prefixes
    sequences = []
    for ids, cached in calls:
        for row in ids.tolist():
            sequences.append(prefix + row if cached else row)
    scanned = [s for s in sequences if len(s) == len(prefix) + 1 + 2]
    assert len(scanned) >= 100
    for sequence in scanned:
        assert sequence.count(bos) == 1 and sequence[0] == bos, sequence


def test_token_that_retokenises_differently_is_scored_by_its_id(tiny_llama):
    model, tokenizer, spec = tiny_llama
    vocabulary = select_vocabulary(tokenizer, "all")
    # One id whose decoded text does not even re-tokenise to itself on its own (a lone UTF-8 byte decodes to
    # U+FFFD), and one leading-space word, which the template's `trim` changes.
    lone_byte = vocabulary.filter(~vocabulary["retokenizes_same"] & (vocabulary["text"] == "\ufffd"))[
        "token_id"
    ][0]
    spaced = vocabulary.filter(
        vocabulary["text"].str.starts_with(" ") & (vocabulary["text"].str.len_chars() > 3)
    )
    prefix, suffix = prompt_prefix_suffix_ids(tokenizer, spec, PROMPT)
    for token_id in (lone_byte, spaced["token_id"][0]):
        text = tokenizer.decode([token_id])
        by_id = [*prefix, token_id, *suffix]
        by_text = chat_token_ids(tokenizer, spec, PROMPT, text)  # the decode-and-re-tokenise route
        assert by_text != by_id and token_id not in by_text[len(prefix) :], (token_id, text)
        one = vocabulary.filter(vocabulary["token_id"] == token_id)
        scan = scan_transformers(model, tokenizer, spec, PROMPT, one, ScanSettings(prefix_cache="always"))
        expected, text_route = _one_by_one(model, spec, [by_id, by_text]).tolist()
        assert scan["score"][0] == pytest.approx(expected, abs=1e-5)
        assert abs(scan["score"][0] - text_route) > 1e-6


def test_cache_check_falls_back_for_an_encoder_and_always_refuses(tmp_path):
    path = build_deberta_rm(tmp_path / "deberta")
    template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    model, tokenizer, spec = load_tiny_rm(path, "enc", chat_template=template)
    prefix, suffix = prompt_prefix_suffix_ids(tokenizer, spec, PROMPT)
    scorer = PrefixScorer(model, spec, prefix, suffix)
    sample = torch.tensor([[2293], [3000], [7592]])
    assert choose_cache(scorer, sample, ScanSettings(prefix_cache="auto")) is False
    with pytest.raises(ScoringError, match="prefix-cached"):
        choose_cache(scorer, sample, ScanSettings(prefix_cache="always"))
    assert choose_cache(scorer, sample, ScanSettings(prefix_cache="never")) is False


def test_pad_token_as_response_is_scored_like_the_full_sequence(tiny_llama):
    model, tokenizer, spec = tiny_llama
    vocabulary = select_vocabulary(tokenizer, "all", include_special=True)
    pad = tokenizer.pad_token_id
    assert pad in vocabulary["token_id"].to_list()
    cached = scan_transformers(
        model, tokenizer, spec, PROMPT, vocabulary, ScanSettings(batch_size=64, prefix_cache="always")
    )
    full = scan_transformers(
        model, tokenizer, spec, PROMPT, vocabulary, ScanSettings(batch_size=64, prefix_cache="never")
    )
    assert (cached["score"] - full["score"]).abs().max() <= 1e-4


def test_prefix_cache_with_sliding_window_layers_equals_full_sequences(tmp_path):
    model, tokenizer, spec = load_tiny_rm(build_gemma3_rm(tmp_path / "gemma3", sliding_window=8))
    vocabulary = select_vocabulary(tokenizer, "all")
    prefix, _ = prompt_prefix_suffix_ids(tokenizer, spec, PROMPT)
    assert len(prefix) > 8  # the prompt does not fit in the window
    cached = scan_transformers(
        model, tokenizer, spec, PROMPT, vocabulary, ScanSettings(batch_size=64, prefix_cache="always")
    )
    full = scan_transformers(
        model, tokenizer, spec, PROMPT, vocabulary, ScanSettings(batch_size=64, prefix_cache="never")
    )
    assert (cached["score"] - full["score"]).abs().max() <= 1e-4
