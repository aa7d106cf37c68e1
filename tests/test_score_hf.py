"""backend: transformers — tiny random DeBERTa-v2 and Llama RMs built with save_pretrained (no hub)."""

from __future__ import annotations

import logging
import random

import pytest
import torch

from rmexplain.score.base import ScoringError, build_scorer, gpus_needed
from rmexplain.score.hf import (
    TransformersScorer,
    chat_token_ids,
    length_batches,
    load_model_and_tokenizer,
    prompt_prefix_suffix_ids,
    read_reward,
    render_chat,
)
from rmexplain.score.specs import parse_spec
from rmexplain.score.tiny import build_llama_tokenizer

PROMPTS = [
    "How do I bake bread at home?",
    "What is a reward model?",
    "Tell me a joke about dogs.",
    "How can I pick a lock?",
    "Give me three ideas for a rainy day.",
]
RESPONSES = [
    "Mix flour, water, salt and yeast, knead, let it rise and bake it.",
    "A model that scores responses to prompts; higher is better.",
    "Why did the dog sit in the shade? It did not want to be a hot dog.",
    "I cannot help with that request.",
    "Sure! Read a book, bake bread, or call a friend.",
]


pytestmark = pytest.mark.usefixtures("one_thread")  # the tiny RMs' fixtures: tests/conftest.py


def _pairs(n: int = 24, seed: int = 0) -> tuple[list[str], list[str]]:
    """Pairs of varied lengths, with duplicates, in a shuffled order."""
    rng = random.Random(seed)
    prompts, responses = [], []
    for i in range(n):
        k = rng.randrange(len(PROMPTS))
        prompts.append(PROMPTS[k])
        responses.append(" ".join([RESPONSES[(k + i) % len(RESPONSES)]] * rng.randint(1, 4)))
    prompts += prompts[:3]
    responses += responses[:3]
    order = list(range(len(prompts)))
    rng.shuffle(order)
    return [prompts[i] for i in order], [responses[i] for i in order]


def _reference_llama(model_dir: str, prompts, responses) -> list[float]:
    """One unpadded forward pass per example on HF's own chat-template tokenisation."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, dtype=torch.float32).eval()
    out = []
    for prompt, response in zip(prompts, responses, strict=True):
        messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": response}]
        ids = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=False)
        with torch.no_grad():
            out.append(model(torch.tensor([ids])).logits[0, 0].item())
    return out


def _reference_deberta(model_dir: str, prompts, responses) -> list[float]:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, dtype=torch.float32).eval()
    out = []
    for prompt, response in zip(prompts, responses, strict=True):
        with torch.no_grad():
            out.append(model(**tokenizer(prompt, response, return_tensors="pt")).logits[0, 0].item())
    return out


@pytest.mark.parametrize("batch_size", [1, 4, 7])
def test_llama_scores_equal_single_example_forward(llama_dir, batch_size):
    prompts, responses = _pairs()
    spec = {"backend": "transformers", "model": llama_dir, "device": "cpu", "batch_size": batch_size}
    scores = build_scorer("tiny-llama", spec).score(prompts, responses)
    reference = _reference_llama(llama_dir, prompts, responses)
    assert torch.tensor(reference).std() > 1e-2  # the check below could fail
    assert scores == pytest.approx(reference, abs=1e-5)


@pytest.mark.parametrize("batch_size", [1, 5])
def test_deberta_pair_scores_equal_single_example_forward(deberta_dir, batch_size):
    prompts, responses = _pairs(seed=3)
    spec = {
        "backend": "transformers",
        "model": deberta_dir,
        "device": "cpu",
        "input_format": "pair",
        "batch_size": batch_size,
    }
    scores = build_scorer("tiny-deberta", spec).score(prompts, responses)
    reference = _reference_deberta(deberta_dir, prompts, responses)
    assert torch.tensor(reference).std() > 1e-3
    assert scores == pytest.approx(reference, abs=1e-5)


def test_scores_do_not_depend_on_batch_order(llama_dir):
    prompts, responses = _pairs(seed=5)
    scorer = build_scorer(
        "tiny-llama",
        {
            "backend": "transformers",
            "model": llama_dir,
            "device": "cpu",
            "batch_size": 3,
            "max_batch_tokens": 200,
        },
    )
    first = scorer.score(prompts, responses)
    order = list(range(len(prompts)))[::-1]
    second = scorer.score([prompts[i] for i in order], [responses[i] for i in order])
    assert [second[order.index(i)] for i in range(len(order))] == pytest.approx(first, abs=1e-5)


def test_llama_chat_template_gets_exactly_one_bos(llama_dir):
    _model, tokenizer = load_model_and_tokenizer(
        {"backend": "transformers", "model": llama_dir, "device": "cpu"}
    )
    spec = parse_spec("tiny-llama", {"backend": "transformers", "model": llama_dir})
    bos = tokenizer.bos_token_id
    text = render_chat(tokenizer, spec, PROMPTS[0], RESPONSES[0])
    naive = tokenizer(text)["input_ids"]  # template BOS + the tokenizer's own: the trap
    assert naive[:2] == [bos, bos]
    ids = chat_token_ids(tokenizer, spec, PROMPTS[0], RESPONSES[0])
    assert ids[0] == bos and ids.count(bos) == 1
    assert ids == naive[1:]
    # A template without BOS: the tokenizer's rule supplies exactly one.
    no_bos = parse_spec(
        "x",
        {
            "backend": "transformers",
            "model": llama_dir,
            "chat_template": "{% for m in messages %}{{ m['content'] }}\n{% endfor %}",
        },
    )
    ids = chat_token_ids(tokenizer, no_bos, PROMPTS[0], RESPONSES[0])
    assert ids[0] == bos and ids.count(bos) == 1


def test_scorer_feeds_exactly_one_bos_to_the_model(llama_dir):
    scorer = TransformersScorer(
        "tiny-llama", {"backend": "transformers", "model": llama_dir, "device": "cpu"}
    )
    bos = scorer.tokenizer.bos_token_id
    seen: list[list[int]] = []
    hook = scorer.model.model.embed_tokens.register_forward_hook(
        lambda module, args, output: seen.extend(args[0].tolist())
    )
    try:
        scorer.score(PROMPTS[:3], RESPONSES[:3])
    finally:
        hook.remove()
    assert len(seen) == 3 and all(row.count(bos) == 1 and row[0] == bos for row in seen)


@pytest.mark.parametrize("fmt", ["chat", "pair"])
def test_prefix_suffix_split_reassembles_chat_ids(llama_dir, deberta_dir, fmt):
    model_dir = llama_dir if fmt == "chat" else deberta_dir
    spec = parse_spec("rm", {"backend": "transformers", "model": model_dir, "input_format": fmt})
    from rmexplain.score.hf import load_tokenizer

    tokenizer = load_tokenizer(spec)
    for prompt, response in zip(PROMPTS, RESPONSES, strict=True):
        prefix, suffix = prompt_prefix_suffix_ids(tokenizer, spec, prompt)
        body = tokenizer(response, add_special_tokens=False)["input_ids"]
        assert prefix + list(body) + suffix == chat_token_ids(tokenizer, spec, prompt, response)
    if fmt == "chat":
        assert prefix[0] == tokenizer.bos_token_id and prefix.count(tokenizer.bos_token_id) == 1


def test_overlong_error_names_the_row(llama_dir):
    spec = {
        "backend": "transformers",
        "model": llama_dir,
        "device": "cpu",
        "max_length": 40,
        "overlong": "error",
    }
    scorer = build_scorer("tiny-llama", spec)
    with pytest.raises(ScoringError, match=r"tiny-llama: input row 1 is \d+ tokens long, over max_length 40"):
        scorer.score(["hi", "hi"], ["short", "a very long answer " * 20])


@pytest.mark.parametrize("side", ["right", "left"])
def test_overlong_truncation_is_counted_and_keeps_bos(llama_dir, side, caplog):
    spec = {
        "backend": "transformers",
        "model": llama_dir,
        "device": "cpu",
        "max_length": 40,
        "truncation_side": side,
    }
    scorer = build_scorer("tiny-llama", spec)
    encoded = scorer.encode_all([("hi", "short"), ("hi", "a very long answer " * 20), ("x", "y " * 50)])
    assert [len(e.ids) <= 40 for e in encoded] == [True, True, True]
    assert [e.truncated for e in encoded] == [False, True, True]
    assert all(e.ids[0] == scorer.tokenizer.bos_token_id for e in encoded)
    with caplog.at_level(logging.WARNING):
        scorer.score(["hi", "hi"], ["short", "a very long answer " * 20])
    assert "truncated 1 of 2 inputs to max_length 40" in caplog.text


def test_out_of_memory_halves_the_batch_and_goes_on(llama_dir, caplog):
    class FlakyScorer(TransformersScorer):
        """Raises the real CUDA OOM exception type for batches above 2 rows."""

        def _forward(self, batch):
            if len(batch) > 2:
                raise torch.OutOfMemoryError("CUDA out of memory (simulated for batches > 2)")
            return super()._forward(batch)

    prompts, responses = _pairs(n=12, seed=7)
    spec = {"backend": "transformers", "model": llama_dir, "device": "cpu", "batch_size": 8}
    with caplog.at_level(logging.WARNING):
        scores = FlakyScorer("tiny-llama", spec).score(prompts, responses)
    assert "halving to 4" in caplog.text and "halving to 2" in caplog.text
    assert scores == pytest.approx(_reference_llama(llama_dir, prompts, responses), abs=1e-5)


def test_read_rules_and_scalarisation():
    from transformers.modeling_outputs import SequenceClassifierOutput

    outputs = SequenceClassifierOutput(logits=torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    column = parse_spec("m", {"backend": "transformers", "model": "m", "read": "logits[:, 2]"})
    assert read_reward(column, outputs).tolist() == [3.0, 6.0]
    weighted = parse_spec(
        "m",
        {
            "backend": "transformers",
            "model": "m",
            "kind": "multi_objective",
            "read": "logits",
            "dimensions": ["help", "safe", "verbose"],
            "scalarisation": {"weights": {"help": 1.0, "safe": 0.5}},
        },
    )
    assert read_reward(weighted, outputs).tolist() == [2.0, 6.5]
    custom = parse_spec(
        "m",
        {
            "backend": "transformers",
            "model": "m",
            "kind": "multi_objective",
            "read": "logits",
            "scalarisation": "torch:logsumexp_rows",
        },
    )
    with pytest.raises(ScoringError, match="has no attribute 'logsumexp_rows'"):
        read_reward(custom, outputs)
    min_g = parse_spec(
        "m",
        {
            "backend": "transformers",
            "model": "m",
            "kind": "multi_objective",
            "read": "logits",
            "scalarisation": "tests.test_score_hf:min_dimension",
        },
    )
    assert read_reward(min_g, outputs).tolist() == [1.0, 4.0]
    missing = parse_spec("m", {"backend": "transformers", "model": "m", "read": "score"})
    with pytest.raises(ScoringError, match=r"reward_models.m.read: the model output has no tensor 'score'"):
        read_reward(missing, outputs)
    bt = parse_spec("m", {"backend": "transformers", "model": "m", "read": "logits"})
    with pytest.raises(ScoringError, match="pick a column"):
        read_reward(bt, outputs)


def min_dimension(values: torch.Tensor, dimensions) -> torch.Tensor:
    """A 'module:function' scalarisation for the test above: the worst dimension."""
    return values.min(dim=1).values


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"backend": "transformers"}, r"reward_models.rm.model .* is required"),
        ({"backend": "transformers", "model": "m", "colour": 1}, r"unknown key\(s\) \['colour'\]"),
        ({"backend": "transformers", "model": "m", "dtype": "fp8"}, r"reward_models.rm.dtype: 'fp8'"),
        (
            {"backend": "transformers", "model": "m", "read": "logits[0]"},
            r"reward_models.rm.read: 'logits\[0\]'",
        ),
        ({"backend": "transformers", "model": "m", "batch_size": 0}, r"batch_size: 0 must be a positive"),
        ({"backend": "vllm", "model": "m", "input_format": "pair"}, r"vLLM serves decoder RMs only"),
        (
            {"backend": "transformers", "model": "m", "kind": "multi_objective", "read": "logits"},
            r"scalarisation is required",
        ),
        (
            {
                "backend": "transformers",
                "model": "m",
                "kind": "multi_objective",
                "read": "logits",
                "dimensions": ["a"],
                "scalarisation": {"weights": {"b": 1}},
            },
            r"\['b'\] are not in dimensions",
        ),
        ({"backend": "remote", "send": "token_ids"}, r"url .* is required"),
        ({"backend": "transformers", "model": "m", "trust_remote_code": "yes"}, r"trust_remote_code must be"),
    ],
)
def test_bad_specs_fail_naming_the_key(raw, message):
    with pytest.raises(ScoringError, match=message):
        parse_spec("rm", raw)


def test_gpus_needed():
    assert gpus_needed({"backend": "transformers", "model": "m", "device": "cpu"}) == 0
    assert gpus_needed({"backend": "transformers", "model": "m"}) == 1
    assert gpus_needed({"backend": "transformers", "model": "m", "device": "cuda:1"}) == 1
    assert gpus_needed({"backend": "transformers", "model": "m", "device_map": "auto", "num_gpus": 2}) == 2
    assert gpus_needed({"backend": "vllm", "model": "m", "tensor_parallel_size": 4}) == 4
    assert gpus_needed({"backend": "remote", "url": "http://x"}) == 0
    assert gpus_needed({"backend": "demo", "train_part": "helpful"}) == 0


def test_length_batches_sorted_longest_first_within_limits():
    lengths = [5, 50, 7, 30, 30, 2, 49]
    batches = length_batches(lengths, batch_size=3, max_tokens=100)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(lengths, reverse=True)
    assert all(len(b) <= 3 and lengths[b[0]] * len(b) <= 100 for b in batches)


def test_oasst_pythia_architecture_loads_via_register(tmp_path):
    """The OpenAssistant Pythia RM class (gpt_neox_reward_model) loads through the Auto classes."""
    import rmexplain.score.oasst_rm as oasst

    tokenizer = build_llama_tokenizer()
    config = oasst.GPTNeoXRewardModelConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        pad_token_id=2,
    )
    torch.manual_seed(0)
    oasst.GPTNeoXRewardModel(config).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    template = (
        "{% for m in messages %}{% if m['role'] == 'user' %}<|prompter|>{% else %}<|assistant|>"
        "{% endif %}{{ m['content'] }}</s>{% endfor %}"
    )
    spec = {
        "backend": "transformers",
        "model": str(tmp_path),
        "register": "rmexplain.score.oasst_rm",
        "chat_template": template,
        "device": "cpu",
        "batch_size": 4,
    }
    scorer = build_scorer("oasst", spec)
    assert type(scorer.model).__name__ == "GPTNeoXRewardModel"
    scores = scorer.score(PROMPTS, RESPONSES)
    reference = []
    for prompt, response in zip(PROMPTS, RESPONSES, strict=True):
        ids = chat_token_ids(scorer.tokenizer, scorer.spec, prompt, response)
        with torch.no_grad():
            reference.append(scorer.model(torch.tensor([ids])).logits[0, 0].item())
    assert scores == pytest.approx(reference, abs=1e-5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize(("dtype", "tolerance"), [("float32", 1e-4), ("auto", 5e-2)])
def test_llama_on_gpu_matches_the_cpu_reference(llama_dir, dtype, tolerance):
    prompts, responses = _pairs(seed=11)
    spec = {"backend": "transformers", "model": llama_dir, "device": "cuda", "dtype": dtype, "batch_size": 5}
    scorer = build_scorer("tiny-llama-gpu", spec)
    expected = torch.float32 if dtype == "float32" else torch.bfloat16
    assert next(scorer.model.parameters()).dtype == expected
    scores = scorer.score(prompts, responses)
    assert scores == pytest.approx(_reference_llama(llama_dir, prompts, responses), abs=tolerance)
