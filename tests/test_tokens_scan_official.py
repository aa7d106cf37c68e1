"""The paper's scoring route beside the exact one, their comparison, and the scan's safety checks."""

from __future__ import annotations

import polars as pl
import pytest
import torch
from conftest import load_tiny_rm
from scipy import stats

from rmexplain.score.base import ScoringError
from rmexplain.score.hf import prompt_prefix_suffix_ids, read_reward
from rmexplain.score.tiny import build_llama_rm
from rmexplain.tokens.scan import (
    PrefixScorer,
    ScanSettings,
    check_limit,
    choose_cache,
    compare_scans,
    exact_token_ids,
    official_token_ids,
    scan_official,
    scan_transformers,
)
from rmexplain.tokens.vocab import select_vocabulary

PROMPT = "What, in one word, is the greatest thing ever?"


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    torch.set_num_threads(1)
    return load_tiny_rm(build_llama_rm(tmp_path_factory.mktemp("llama"), layers=2, seed=7))


def _one_by_one(model, spec, sequences):
    out = []
    with torch.inference_mode():
        for ids in sequences:
            x = torch.tensor([ids])
            out.append(float(read_reward(spec, model(input_ids=x, attention_mask=torch.ones_like(x)))[0]))
    return out


def test_official_sequences_carry_two_bos_and_exact_one(tiny_llama):
    _, tokenizer, spec = tiny_llama
    bos = tokenizer.bos_token_id
    assert tokenizer.chat_template.startswith("{{ bos_token }}")
    vocab = tokenizer.get_vocab()
    ids = [vocab["Ġbake"], vocab["Ġbread"], vocab["Ġyeast"], vocab["yeast"]]
    official = official_token_ids(tokenizer, spec, PROMPT, ids)
    exact = exact_token_ids(tokenizer, spec, PROMPT, ids)
    prefix, suffix = prompt_prefix_suffix_ids(tokenizer, spec, PROMPT)
    for token_id, off, ex in zip(ids, official, exact, strict=True):
        assert off[:2] == [bos, bos] and off.count(bos) == 2, off
        assert ex[0] == bos and ex.count(bos) == 1 and ex == [*prefix, token_id, *suffix]
        # Built as the paper built it: decode, render the template as text, tokenise with the defaults.
        text = tokenizer.apply_chat_template(
            [
                {"role": "user", "content": PROMPT},
                {"role": "assistant", "content": tokenizer.decode([token_id])},
            ],
            tokenize=False,
        )
        assert off == tokenizer(text)["input_ids"]
    # The template's trim makes " yeast" and "yeast" one and the same official sequence.
    assert official[2] == official[3] and exact[2] != exact[3]


def test_official_scan_scores_its_sequences_and_differs_from_exact(tiny_llama):
    model, tokenizer, spec = tiny_llama
    vocabulary = select_vocabulary(tokenizer, "all")
    official = scan_official(model, tokenizer, spec, PROMPT, vocabulary, ScanSettings(batch_size=37))
    assert official["token_id"].to_list() == vocabulary["token_id"].to_list()
    sample = vocabulary["token_id"].to_list()[::40]
    expected = _one_by_one(model, spec, official_token_ids(tokenizer, spec, PROMPT, sample))
    got = official.filter(pl.col("token_id").is_in(sample))["score"].to_list()
    assert got == pytest.approx(expected, abs=1e-5)
    exact = scan_transformers(model, tokenizer, spec, PROMPT, vocabulary, ScanSettings(prefix_cache="never"))
    assert (official["score"] - exact["score"]).abs().max() > 1e-4

    ids = vocabulary["token_id"].to_list()
    report = compare_scans(
        exact,
        official,
        n=20,
        sequences_a=exact_token_ids(tokenizer, spec, PROMPT, ids),
        sequences_b=official_token_ids(tokenizer, spec, PROMPT, ids),
    )
    assert report["n_tokens"] == len(ids)
    assert report["share_sequence_differs"] == 1.0  # every official sequence has the second BOS
    assert report["share_differs_beyond_bos"] is None  # no BOS id given: only the raw comparison
    official_ids = official_token_ids(tokenizer, spec, PROMPT, ids)
    exact_ids = exact_token_ids(tokenizer, spec, PROMPT, ids)
    beyond = compare_scans(
        exact, official, n=20, sequences_a=exact_ids, sequences_b=official_ids, bos_id=tokenizer.bos_token_id
    )["share_differs_beyond_bos"]
    # Without the second BOS the official sequence is the exact one unless the template's trim or the
    # re-tokenisation changed the token: both happen in this vocabulary (" bake" is trimmed to "bake").
    changed = [o[1:] != e for o, e in zip(official_ids, exact_ids, strict=True)]
    assert all(o[:2] == [tokenizer.bos_token_id] * 2 for o in official_ids)
    assert beyond == pytest.approx(sum(changed) / len(ids)) and 0 < beyond < 1
    assert changed[ids.index(tokenizer.convert_tokens_to_ids("Ġbake"))]
    tau = stats.kendalltau(
        exact.sort("token_id")["score"].to_numpy(), official.sort("token_id")["score"].to_numpy()
    ).statistic
    assert report["kendall_tau_b"] == pytest.approx(tau) and -1.0 < tau < 1.0
    assert 0 <= report["top_overlap"] <= 20 and 0 <= report["bottom_overlap"] <= 20
    same = compare_scans(exact, exact, n=20, sequences_a=[[1]] * len(ids), sequences_b=[[1]] * len(ids))
    assert same["kendall_tau_b"] == pytest.approx(1.0)
    assert same["top_overlap"] == same["bottom_overlap"] == 20 and same["share_sequence_differs"] == 0.0


def test_compare_scans_by_hand():
    a = pl.DataFrame({"token_id": [0, 1, 2, 3, 9], "score": [1.0, 2.0, 3.0, 4.0, 0.0]})
    b = pl.DataFrame({"token_id": [3, 2, 1, 0], "score": [4.0, 2.0, 3.0, 1.0]})
    report = compare_scans(a, b, n=2)  # id 9 is not in b: compared over ids 0-3
    assert report["n_tokens"] == 4
    assert report["kendall_tau_b"] == pytest.approx((5 - 1) / 6)
    assert report["top_overlap"] == 1  # {3, 2} against {3, 1}
    assert report["bottom_overlap"] == 1  # {1, 0} against {2, 0}
    assert report["share_sequence_differs"] is None
    tied = pl.DataFrame({"token_id": [4, 1, 2, 3], "score": [1.0, 1.0, 0.0, 0.0]})
    assert compare_scans(tied, tied, n=1)["top_overlap"] == 1  # ties: token id ascending, deterministic


def test_pad_id_in_the_template_is_refused(tmp_path):
    path = build_llama_rm(tmp_path / "llama", layers=1)
    template = "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<pad>{% endfor %}"
    model, tokenizer, spec = load_tiny_rm(path, "padded", chat_template=template)
    prefix, suffix = prompt_prefix_suffix_ids(tokenizer, spec, PROMPT)
    assert tokenizer.pad_token_id in suffix
    with pytest.raises(ScoringError, match="pad id"):
        PrefixScorer(model, spec, prefix, suffix)


class _FakeScorer:
    """Cached scores off by 0.05 from full scores that all lie near −30."""

    class spec:
        key = "fake"

    def score(self, middles, cached):
        full = -30.0 + 0.1 * torch.arange(middles.shape[0], dtype=torch.float32)
        return full + 0.05 if cached else full


def test_cache_check_tolerance_scales_with_the_spread_not_the_magnitude():
    sample = torch.arange(4).unsqueeze(1)
    settings = ScanSettings(prefix_cache="auto", verify_tokens=4, verify_atol=1e-3, verify_rtol=2e-2)
    full = _FakeScorer().score(sample, cached=False)
    assert check_limit(full, settings) == pytest.approx(1e-3 + 2e-2 * 0.3, rel=1e-5)
    # 0.05 is within 2% of |−30| but not within 2% of the 0.3 spread: the check refuses the cache.
    assert choose_cache(_FakeScorer(), sample, settings) is False
    with pytest.raises(ScoringError, match="differ"):
        choose_cache(_FakeScorer(), sample, ScanSettings(prefix_cache="always", verify_tokens=4))
    assert choose_cache(_FakeScorer(), sample, ScanSettings(prefix_cache="auto", verify_rtol=0.5)) is True


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_both_scan_modes_and_the_papers_gcg_on_gpu_match_the_cpu(tmp_path):
    """The token rules' entry points on CUDA (fp32): exact and official scans equal their CPU scans, and the
    paper's pessimal GCG lowers the reward."""
    from rmexplain import schemas as S
    from rmexplain.tokens import stages

    path = build_llama_rm(tmp_path / "llama", layers=2, seed=4)
    vocabulary = select_vocabulary(load_tiny_rm(path)[1], "all").head(200)
    vocab_path = str(tmp_path / "vocab.parquet")
    S.write_table(vocabulary, vocab_path, S.TOKEN_VOCABULARY, "vocabulary")
    scan = {"batch_size": 64, "prefix_cache": "auto"}
    scores = {}
    for device in ("cpu", "cuda"):
        spec = {"backend": "transformers", "model": str(path), "device": device, "dtype": "float32"}
        for mode in ("exact", "official"):
            out = str(tmp_path / f"{device}_{mode}.parquet")
            stages.run_scan("tiny", spec, {}, "greatest", PROMPT, vocab_path, scan, out, threads=1, mode=mode)
            scores[device, mode] = S.read_table(out, S.TOKEN_SCORES, "scan")["score"].to_list()
    for mode in ("exact", "official"):
        assert scores["cuda", mode] == pytest.approx(scores["cpu", mode], abs=1e-4), mode
    assert scores["cpu", "exact"] != pytest.approx(scores["cpu", "official"], abs=1e-4)  # two BOS move them
    gcg_path = str(tmp_path / "gcg.parquet")
    spec = {"backend": "transformers", "model": str(path), "device": "cuda", "dtype": "float32"}
    stages.run_gcg_variant(
        "paper", name="tiny", spec=spec, prompt_id="worst", prompt=PROMPT, objective="pessimal",
        gcg={"steps": 5, "paper": {"search_width": 64, "init": "x x x x"}}, scan=scan, output=gcg_path,
    )  # fmt: skip
    history = S.read_table(gcg_path, S.TOKEN_GCG, "gcg")
    assert history["best_score"][-1] < history["score"][0]
