"""GCG on tiny random RMs: gradient correctness (incl. scaled embeddings), signs, and exact-id scores."""

from __future__ import annotations

import pytest
import torch
from conftest import load_tiny_rm
from test_tokens_scan import build_gemma3_rm

from rmexplain.score.hf import prompt_prefix_suffix_ids, read_reward
from rmexplain.score.tiny import build_llama_rm
from rmexplain.tokens.gcg import GCGSettings, allowed_tokens, gcg_search, loss_sign, one_hot_gradient
from rmexplain.tokens.scan import ScanSettings

PROMPT = "What, in one word, is the worst thing ever?"


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    torch.set_num_threads(1)
    return load_tiny_rm(build_llama_rm(tmp_path_factory.mktemp("llama"), seed=5))


@pytest.fixture(scope="module")
def tiny_gemma3(tmp_path_factory):
    """A Gemma 3 RM: its embedding module multiplies by sqrt(hidden) itself (embed_scale)."""
    return load_tiny_rm(build_gemma3_rm(tmp_path_factory.mktemp("gemma3")))


def _reward(model, spec, ids):
    x = torch.tensor([ids])
    with torch.inference_mode():
        return float(read_reward(spec, model(input_ids=x, attention_mask=torch.ones_like(x)))[0])


@pytest.mark.parametrize("fixture", ["tiny_llama", "tiny_gemma3"])
def test_one_hot_gradient_equals_the_embedding_gradient(fixture, request):
    model, tokenizer, spec = request.getfixturevalue(fixture)
    prefix, suffix = prompt_prefix_suffix_ids(tokenizer, spec, PROMPT)
    response = tokenizer(" bake bread now", add_special_tokens=False)["input_ids"]
    grad, reward = one_hot_gradient(model, spec, prefix, response, suffix, sign=-1.0)
    assert reward == pytest.approx(_reward(model, spec, [*prefix, *response, *suffix]), abs=1e-5)
    # Reference: d(-reward)/d(one-hot) = (d(-reward)/d(input embeddings)) @ W^T * scale.
    embedding = model.get_input_embeddings()
    ids = torch.tensor([[*prefix, *response, *suffix]])
    inputs = embedding(ids).detach().requires_grad_(True)
    (-read_reward(spec, model(inputs_embeds=inputs, attention_mask=torch.ones_like(ids)))[0]).backward()
    scale = float(getattr(embedding, "embed_scale", 1.0))
    expected = inputs.grad[0, len(prefix) : len(prefix) + len(response)] @ embedding.weight.T * scale
    assert torch.allclose(grad, expected, atol=1e-5, rtol=1e-4)
    opposite, _ = one_hot_gradient(model, spec, prefix, response, suffix, sign=1.0)
    assert torch.allclose(opposite, -grad)


def test_gcg_moves_each_objective_in_its_direction_and_scores_by_ids(tiny_llama):
    model, tokenizer, spec = tiny_llama
    settings = GCGSettings(n_tokens=4, steps=6, top_k=32, candidates=64, seed=1)
    prefix, suffix = prompt_prefix_suffix_ids(tokenizer, spec, PROMPT)
    results = {}
    for objective in ("optimal", "pessimal"):
        history = gcg_search(model, tokenizer, spec, PROMPT, objective, settings, ScanSettings(batch_size=32))
        assert history["step"].to_list()[0] == 0 and history.height == 7
        for row in history.iter_rows(named=True):
            assert len(row["token_ids"]) == 4
            assert row["score"] == pytest.approx(
                _reward(model, spec, [*prefix, *row["token_ids"], *suffix]), abs=1e-4
            )
        results[objective] = history
    initial = results["optimal"]["score"][0]
    assert results["pessimal"]["score"][0] == pytest.approx(initial)
    assert results["optimal"]["best_score"][-1] > initial + 1e-3
    assert results["pessimal"]["best_score"][-1] < initial - 1e-3
    assert results["optimal"]["best_score"].is_sorted() and results["pessimal"]["best_score"].is_sorted(
        descending=True
    )


def test_allowed_tokens_and_signs(tiny_llama):
    model, tokenizer, _ = tiny_llama
    rows = model.get_input_embeddings().weight.shape[0]
    mask = allowed_tokens(tokenizer, rows + 3, "ascii")
    assert not mask[[tokenizer.bos_token_id, tokenizer.pad_token_id, rows, rows + 2]].any()
    assert mask[tokenizer.convert_tokens_to_ids("Ġthe")]
    assert not mask[tokenizer.convert_tokens_to_ids("¡")]  # decodes to U+FFFD: not printable ASCII
    assert allowed_tokens(tokenizer, rows, "all")[tokenizer.convert_tokens_to_ids("¡")]
    assert loss_sign("optimal") == -1.0 and loss_sign("pessimal") == 1.0
    with pytest.raises(Exception, match=r"tokens\.gcg\.objectives"):
        loss_sign("neutral")
