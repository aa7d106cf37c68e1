"""``llm.backend: transformers`` — a local chat model through transformers, batched, with its chat template.

Settings under ``llm.transformers``: ``device`` (cpu, cuda, cuda:N or auto), ``dtype`` (auto, float32,
bfloat16, float16), ``batch_size``, ``gguf_file`` (load GGUF weights from the ``model`` directory or
repo), ``chat_template`` (a Jinja string or a file; needed when the tokenizer has none, as GGUF
files often lack one), ``revision`` and ``trust_remote_code`` (default false).

Requests with the same sampling settings are generated together, ``batch_size`` at a time, with
left padding; each finished batch is reported (and so cached) at once. Sampling (temperature > 0)
seeds torch with the first request's seed per batch, so sampled answers depend on batching; the
cache makes a rerun reproduce them exactly.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from rmexplain.hub import hub_ref
from rmexplain.llm.base import ChatRequest, Completion, LLMBackend, LLMError, OnResult, llm_backends
from rmexplain.llm.vllm_backend import read_chat_template
from rmexplain.settings import schema_defaults

HF_DEFAULTS: dict[str, Any] = schema_defaults("llm", "transformers")


def transformers_settings(llm: dict[str, Any]) -> dict[str, Any]:
    """``llm.transformers`` over the schema's defaults."""
    return {**HF_DEFAULTS, **(llm.get("transformers") or {})}


@llm_backends.register("transformers")
class TransformersChatBackend(LLMBackend):
    """A causal LM and its tokenizer, loaded on first use."""

    @staticmethod
    def gpus(llm: dict[str, Any]) -> int:
        device = str(transformers_settings(llm)["device"])
        return 1 if device.startswith(("cuda", "auto")) else 0

    @staticmethod
    def hub_refs(key: str, llm: dict[str, Any]) -> list[Any]:
        settings = transformers_settings(llm)
        gguf_file = settings["gguf_file"]
        return [hub_ref(llm.get("model"), settings["revision"], f"{key}.model", gguf_file=gguf_file)]

    def __init__(self, config: dict[str, Any]) -> None:
        self.settings = transformers_settings(config)
        self.model_name = str(config["model"])
        gguf = self.settings["gguf_file"]
        self.model_id = f"transformers:{self.model_name}" + (f":{gguf}" if gguf else "")
        self.batch_size = int(self.settings["batch_size"])
        self._model: Any = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        s = self.settings
        common = {"revision": s["revision"], "trust_remote_code": bool(s["trust_remote_code"])}
        if s["gguf_file"]:
            common["gguf_file"] = s["gguf_file"]
        tokenizer = AutoTokenizer.from_pretrained(self.model_name, **common)
        template = read_chat_template(s["chat_template"])
        if template:
            tokenizer.chat_template = template
        if not tokenizer.chat_template:
            raise LLMError(
                f"llm.transformers.chat_template: the tokenizer of {self.model_name!r} has no chat template; "
                "give one (a Jinja string or a file)"
            )
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        dtype = s["dtype"] if s["dtype"] == "auto" else getattr(torch, s["dtype"])
        device = str(s["device"])
        model = AutoModelForCausalLM.from_pretrained(
            self.model_name, dtype=dtype, device_map="auto" if device == "auto" else None, **common
        )
        if device != "auto":
            model = model.to(device)
        self._model, self._tokenizer = model.eval(), tokenizer

    def complete(self, requests: Sequence[ChatRequest], on_result: OnResult) -> None:
        if self._model is None:
            self._load()
        groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
        for index, request in enumerate(requests):
            s = request.sampling
            groups[(s.temperature, s.top_p, s.max_tokens)].append(index)
        for indices in groups.values():
            for start in range(0, len(indices), self.batch_size):
                batch = indices[start : start + self.batch_size]
                for index, completion in zip(
                    batch, self._generate([requests[i] for i in batch]), strict=True
                ):
                    on_result(index, completion)

    def _stop_ids(self) -> set[int]:
        eos = self._model.generation_config.eos_token_id
        ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if self._tokenizer.eos_token_id is not None:
            ids.add(self._tokenizer.eos_token_id)
        return ids

    def _generate(self, batch: list[ChatRequest]) -> list[Completion]:
        import torch

        tokenizer, model = self._tokenizer, self._model
        encoded = tokenizer.apply_chat_template(
            [r.message_dicts() for r in batch],
            add_generation_prompt=True,
            tokenize=True,
            padding=True,
            return_tensors="pt",
            return_dict=True,
        ).to(model.device)
        sampling = batch[0].sampling
        kwargs: dict[str, Any] = {
            "max_new_tokens": sampling.max_tokens,
            "pad_token_id": tokenizer.pad_token_id,
        }
        if sampling.temperature > 0:
            kwargs.update(do_sample=True, temperature=sampling.temperature, top_p=sampling.top_p)
            if batch[0].seed is not None:
                torch.manual_seed(batch[0].seed)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        inputs = {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}
        with torch.inference_mode():
            output = model.generate(**inputs, **kwargs)
        prompt_lengths = encoded["attention_mask"].sum(dim=1).tolist()
        new_tokens = output[:, encoded["input_ids"].shape[1] :].tolist()
        return [self._completion(row, int(n)) for row, n in zip(new_tokens, prompt_lengths, strict=True)]

    def _completion(self, tokens: list[int], prompt_tokens: int) -> Completion:
        stops = self._stop_ids()
        end = next((i for i, t in enumerate(tokens) if t in stops), None)
        kept = tokens if end is None else tokens[:end]
        text = self._tokenizer.decode(kept, skip_special_tokens=True).strip()
        return Completion(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=len(kept) + (0 if end is None else 1),
            finish_reason="length" if end is None else "stop",
        )
