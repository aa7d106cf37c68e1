"""GCG as the paper ran it (nanoGCG fork): MSE to ±target, FasterGCG distance term, deterministic candidates,
history; both objectives move the reward their way on a tiny RM."""

from __future__ import annotations

import pytest
import torch
from conftest import load_tiny_rm

from rmexplain.score.base import ScoringError
from rmexplain.score.hf import prompt_prefix_suffix_ids, read_reward
from rmexplain.score.tiny import build_llama_rm
from rmexplain.tokens.gcg import (
    PaperGCGSettings,
    allowed_tokens,
    embedding_distances,
    mse_gradient,
    one_hot_gradient,
    ordered_candidates,
    paper_gcg_search,
    paper_target,
)
from rmexplain.tokens.scan import ScanSettings

PROMPT = "What, in one word, is the greatest thing ever?"


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    torch.set_num_threads(1)
    return load_tiny_rm(build_llama_rm(tmp_path_factory.mktemp("llama"), seed=11))


def _reward(model, spec, ids):
    x = torch.tensor([ids])
    with torch.inference_mode():
        return float(read_reward(spec, model(input_ids=x, attention_mask=torch.ones_like(x)))[0])


def test_ordered_candidates_walk_the_flattened_scores():
    scores = torch.tensor([[0.5, -1.0, 2.0], [-3.0, 0.0, 1.0]])
    allowed = torch.tensor([True, True, True])
    current = torch.tensor([0, 1])
    got = ordered_candidates(current, scores, allowed, 3, {(0, 1)})
    # -3 (pos 1 → 0), -1 (pos 0 → 1), then 0 and 0.5 are no-ops (the current sequence), then 1 (pos 1 → 2).
    assert got.tolist() == [[0, 0], [1, 1], [0, 2]]
    seen = {(0, 1), (0, 0)}
    assert ordered_candidates(current, scores, allowed, 3, seen).tolist() == [[1, 1], [0, 2], [2, 1]]
    blocked = torch.tensor([True, False, True])
    assert ordered_candidates(current, scores, blocked, 5, {(0, 1)}).tolist() == [[0, 0], [0, 2], [2, 1]]


def test_mse_gradient_and_the_forks_pessimal_sign(tiny_llama):
    model, tokenizer, spec = tiny_llama
    prefix, suffix = prompt_prefix_suffix_ids(tokenizer, spec, PROMPT)
    response = tokenizer(" bake bread now", add_special_tokens=False)["input_ids"]
    reward_grad, reward = one_hot_gradient(model, spec, prefix, response, suffix, sign=1.0)
    settings = PaperGCGSettings()
    assert paper_target("optimal", settings) == 30.0 and paper_target("pessimal", settings) == -30.0
    up, r = mse_gradient(model, spec, prefix, response, suffix, 30.0)
    down, _ = mse_gradient(model, spec, prefix, response, suffix, -30.0)
    assert r == pytest.approx(reward)
    assert torch.allclose(up, 2 * (reward - 30.0) * reward_grad)
    assert torch.allclose(down, 2 * (reward + 30.0) * reward_grad)
    # |reward| < 30: towards +30 the loss falls where the reward rises, towards −30 where it falls.
    assert torch.equal(torch.sign(up), -torch.sign(reward_grad)) and torch.equal(
        torch.sign(down), torch.sign(reward_grad)
    )
    distances = embedding_distances(model, response)
    weight = model.get_input_embeddings().weight.detach()
    assert distances.shape == (len(response), weight.shape[0])
    assert distances[0, response[0]] == pytest.approx(0.0, abs=1e-3)  # cdist computes through a matmul
    assert distances[1, 7] == pytest.approx(float((weight[response[1]] - weight[7]).norm()), rel=1e-5)


def test_paper_gcg_moves_each_objective_its_way(tiny_llama):
    model, tokenizer, spec = tiny_llama
    settings = PaperGCGSettings(steps=5, search_width=48, init="x x x x x x")
    scan = ScanSettings(batch_size=64, prefix_cache="never")
    prefix, suffix = prompt_prefix_suffix_ids(tokenizer, spec, PROMPT)
    runs = {}
    for objective in ("optimal", "pessimal"):
        history = paper_gcg_search(model, tokenizer, spec, PROMPT, objective, settings, scan)
        runs[objective] = history
        assert history["step"].to_list() == list(range(6))
        initial = history["score"][0]
        assert initial == pytest.approx(
            _reward(model, spec, [*prefix, *history["token_ids"][0], *suffix]), abs=1e-5
        )
        # Every step's reward is the exact-id reward of its sequence, and no step revisits another (the
        # start is not in the fork's history, so only it may come back once).
        last = history.row(-1, named=True)
        assert last["score"] == pytest.approx(
            _reward(model, spec, [*prefix, *last["token_ids"], *suffix]), abs=1e-5
        )
        steps = [tuple(ids) for ids in history["token_ids"].to_list()[1:]]
        assert len(set(steps)) == len(steps)
        assert history["loss"][-1] == pytest.approx(
            (last["score"] - paper_target(objective, settings)) ** 2, rel=1e-4
        )
    assert runs["optimal"]["best_score"][-1] > runs["optimal"]["score"][0] + 1e-3
    assert runs["pessimal"]["best_score"][-1] < runs["pessimal"]["score"][0] - 1e-3
    # Deterministic: the same run again gives the same sequences.
    again = paper_gcg_search(model, tokenizer, spec, PROMPT, "pessimal", settings, scan)
    assert again["token_ids"].to_list() == runs["pessimal"]["token_ids"].to_list()


def test_fork_gradient_gives_pessimal_the_optimal_candidates(tiny_llama):
    model, tokenizer, spec = tiny_llama
    prefix, suffix = prompt_prefix_suffix_ids(tokenizer, spec, PROMPT)
    init = tokenizer("x x x x", add_special_tokens=False)["input_ids"]
    n_rows = model.get_input_embeddings().weight.shape[0]
    allowed = allowed_tokens(tokenizer, n_rows, "ascii", allow_empty=True)
    history: set[tuple[int, ...]] = set()  # the fork's history starts empty: the start may be a candidate

    def candidates(target):
        grad, _ = mse_gradient(model, spec, prefix, init, suffix, target)
        grad = grad + 4.5 * embedding_distances(model, init)
        return ordered_candidates(torch.tensor(init), grad, allowed, 32, history).tolist()

    # The fork's gradient aims at +30 for both objectives, so its pessimal search proposes the optimal one's
    # candidates; with the objective's own target (−30) they differ.
    assert candidates(30.0) != candidates(-30.0)
    scan = ScanSettings(batch_size=64, prefix_cache="never")
    fork = PaperGCGSettings(steps=1, search_width=32, init="x x x x", gradient_target="fork")
    own = PaperGCGSettings(steps=1, search_width=32, init="x x x x")
    optimal = paper_gcg_search(model, tokenizer, spec, PROMPT, "optimal", fork, scan)
    pessimal_fork = paper_gcg_search(model, tokenizer, spec, PROMPT, "pessimal", fork, scan)
    pessimal_own = paper_gcg_search(model, tokenizer, spec, PROMPT, "pessimal", own, scan)
    # Step 1 picks, among its candidates, the highest reward (optimal) or the lowest (pessimal).
    for run, target, pick in ((optimal, 30.0, max), (pessimal_fork, 30.0, min), (pessimal_own, -30.0, min)):
        rewards = {tuple(ids): _reward(model, spec, [*prefix, *ids, *suffix]) for ids in candidates(target)}
        assert tuple(run["token_ids"][1]) in rewards
        assert run["score"][1] == pytest.approx(pick(rewards.values()), abs=1e-5)
    with pytest.raises(ScoringError, match="gradient_target"):
        paper_gcg_search(
            model, tokenizer, spec, PROMPT, "optimal", PaperGCGSettings(gradient_target="x"), scan
        )
