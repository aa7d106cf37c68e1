"""``llm.backend: vllm`` — offline batched generation with ``vllm.LLM.chat`` on local GPUs.

Settings under ``llm.vllm``: ``engine`` (keyword arguments for ``vllm.LLM``, e.g.
``tensor_parallel_size``, ``gpu_memory_utilization``, ``max_model_len``, ``dtype``), ``chunk_size``
(conversations per ``LLM.chat`` call; results are cached after each chunk) and ``chat_template``
(a Jinja string or a path to a file; default: the model's own).

vLLM is not a dependency of rmexplain (it needs CUDA); install it in the LLM environment. This
backend follows vLLM's documented offline API: ``LLM(model=..., **engine)``,
``LLM.chat(list_of_conversations, sampling_params=[SamplingParams(...), ...])`` returning one
``RequestOutput`` per conversation with ``prompt_token_ids`` and ``outputs[0].text/token_ids``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rmexplain.hub import model_and_tokenizer_refs
from rmexplain.llm.base import ChatRequest, Completion, LLMBackend, LLMError, OnResult, llm_backends
from rmexplain.settings import schema_defaults

VLLM_DEFAULTS: dict[str, Any] = schema_defaults("llm", "vllm")


def read_chat_template(value: str | None) -> str | None:
    """A chat template given inline or as a path to a file."""
    if value and "{" not in value and Path(value).is_file():
        return Path(value).read_text()
    return value


@llm_backends.register("vllm")
class VLLMBackend(LLMBackend):
    """One ``vllm.LLM`` engine, fed in chunks so completed work is cached as it finishes."""

    conda_env = "vllm"  # envs/vllm.yaml: vLLM brings its own CUDA torch

    @staticmethod
    def gpus(llm: dict[str, Any]) -> int:
        return int(((llm.get("vllm") or {}).get("engine") or {}).get("tensor_parallel_size", 1))

    @staticmethod
    def hub_refs(key: str, llm: dict[str, Any]) -> list[Any]:
        """The model, and the engine's tokenizer when set (its revision defaults to the model's)."""

        engine = (llm.get("vllm") or {}).get("engine") or {}
        return model_and_tokenizer_refs(
            key,
            llm.get("model"),
            engine.get("revision"),
            engine.get("tokenizer"),
            engine.get("tokenizer_revision", engine.get("revision")),
            tokenizer_key=f"{key}.vllm.engine.tokenizer",
        )

    def __init__(self, config: dict[str, Any]) -> None:
        settings = {**VLLM_DEFAULTS, **(config.get("vllm") or {})}
        self.model = str(config["model"])
        self.model_id = f"vllm:{self.model}"
        self.engine_kwargs = dict(settings["engine"] or {})
        self.chunk_size = int(settings["chunk_size"])
        self.chat_template = read_chat_template(settings["chat_template"])
        self._llm: Any = None

    def _engine(self) -> Any:
        if self._llm is None:
            try:
                from vllm import LLM
            except ImportError as err:
                raise LLMError(
                    "llm.backend 'vllm' needs the vllm package (pip install vllm) on a CUDA machine"
                ) from err
            self._llm = LLM(model=self.model, **self.engine_kwargs)
        return self._llm

    def complete(self, requests: Sequence[ChatRequest], on_result: OnResult) -> None:
        llm = self._engine()
        from vllm import SamplingParams

        for start in range(0, len(requests), self.chunk_size):
            chunk = requests[start : start + self.chunk_size]
            params = [
                SamplingParams(
                    temperature=r.sampling.temperature,
                    top_p=r.sampling.top_p,
                    max_tokens=r.sampling.max_tokens,
                    seed=r.seed,
                )
                for r in chunk
            ]
            outputs = llm.chat(
                [r.message_dicts() for r in chunk],
                sampling_params=params,
                use_tqdm=True,
                chat_template=self.chat_template,
            )
            for offset, output in enumerate(outputs):
                best = output.outputs[0]
                on_result(
                    start + offset,
                    Completion(
                        text=best.text,
                        prompt_tokens=len(output.prompt_token_ids or []),
                        completion_tokens=len(best.token_ids),
                        finish_reason=best.finish_reason,
                    ),
                )
