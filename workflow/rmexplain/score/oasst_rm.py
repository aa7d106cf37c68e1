"""The Open-Assistant Pythia reward-model architecture (``gpt_neox_reward_model``), registered with the
transformers Auto classes so ``OpenAssistant/oasst-rm-2.1-pythia-1.4b-epoch-2.5`` loads with
``AutoModelForSequenceClassification`` (spec key ``register: rmexplain.score.oasst_rm``).

The checkpoint's config names ``GPTNeoXRewardModel``, a class that lives in Open-Assistant's
``model_training`` package (not on PyPI). This is the same architecture — a GPT-NeoX trunk, last-token
pooling by attention mask (or mean pooling), a linear ``out_proj`` to one logit — so the checkpoint's
weights (``gpt_neox.*``, ``out_proj.*``) load unchanged; reward = ``logits[:, 0]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers import AutoConfig, AutoModelForSequenceClassification, GPTNeoXConfig, GPTNeoXModel
from transformers.models.gpt_neox.modeling_gpt_neox import GPTNeoXPreTrainedModel
from transformers.utils import ModelOutput


class GPTNeoXRewardModelConfig(GPTNeoXConfig):
    """GPT-NeoX config plus ``pooling`` (``last`` or ``mean``)."""

    model_type = "gpt_neox_reward_model"

    def __init__(self, pooling: str = "last", **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.pooling = pooling or "last"


@dataclass
class GPTNeoXRewardModelOutput(ModelOutput):
    """``logits``: shape [batch, 1], the reward."""

    logits: torch.FloatTensor | None = None


class GPTNeoXRewardModel(GPTNeoXPreTrainedModel):
    """GPT-NeoX trunk + pooled hidden state + ``out_proj`` to one logit."""

    config_class = GPTNeoXRewardModelConfig

    def __init__(self, config: GPTNeoXRewardModelConfig) -> None:
        super().__init__(config)
        self.gpt_neox = GPTNeoXModel(config)
        self.out_proj = nn.Linear(config.hidden_size, 1)
        self.pooling = config.pooling
        self.post_init()

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **kwargs: object
    ) -> GPTNeoXRewardModelOutput:
        hidden = self.gpt_neox(input_ids, attention_mask=attention_mask).last_hidden_state
        if attention_mask is None:
            pooled = hidden.mean(dim=1) if self.pooling == "mean" else hidden[:, -1]
        elif self.pooling == "mean":
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1)
        else:
            last = attention_mask.cumsum(dim=1).argmax(dim=1)
            pooled = hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
        return GPTNeoXRewardModelOutput(logits=self.out_proj(pooled))


AutoConfig.register("gpt_neox_reward_model", GPTNeoXRewardModelConfig, exist_ok=True)
AutoModelForSequenceClassification.register(GPTNeoXRewardModelConfig, GPTNeoXRewardModel, exist_ok=True)
