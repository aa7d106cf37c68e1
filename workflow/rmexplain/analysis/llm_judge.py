"""The judge's connection to the LLM backends (``rmexplain.llm``): cached, retried, any configured backend."""

from __future__ import annotations

import logging
from typing import Any

from rmexplain.analysis.judge import TEMPLATE_VERSION, Complete
from rmexplain.llm.base import ChatRequest
from rmexplain.llm.client import CachedChat, ChatRequests, build_chat

# Greedy, short answers unless ``analysis.judge.sampling`` says otherwise.
JUDGE_SAMPLING = {"temperature": 0.0, "max_tokens": 8}


def judge_llm_config(llm: dict[str, Any] | None, judge: dict[str, Any] | None) -> dict[str, Any]:
    """The ``llm`` section with ``analysis.judge.llm`` overrides applied (e.g. a different judge model)."""
    return {**(llm or {}), **((judge or {}).get("llm") or {})}


def judge_requests(chat: ChatRequests, judge: dict[str, Any] | None, prompts: list[str]) -> list[ChatRequest]:
    """The judge's requests for ``prompts`` (``analysis.judge.sampling`` over ``JUDGE_SAMPLING``)."""
    sampling = chat.sampling(JUDGE_SAMPLING, (judge or {}).get("sampling"))
    return [chat.request(p, sampling, template=TEMPLATE_VERSION) for p in prompts]


def build_complete(
    llm: dict[str, Any] | None, judge: dict[str, Any] | None, log: logging.Logger
) -> tuple[Complete, CachedChat]:
    """``complete(prompts) -> answers`` through the cached chat client, and that client (its ``model_id``
    names the judge; its ``use_record`` is the job's LLM use)."""

    chat = build_chat(judge_llm_config(llm, judge), log)

    def complete(prompts: list[str]) -> list[str]:
        answers = chat.complete(judge_requests(chat, judge, prompts), desc="attribute judge")
        chat.log_summary("attribute judge")
        return answers

    return complete, chat
