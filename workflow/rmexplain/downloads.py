"""Which hub models a design loads: marker name -> download spec, and the markers each job waits for.

Every source asks its own declaration: an RM backend's ``hub_refs``, an LLM backend's, a method's; plus the
sentence-embedding model of the distances and the text tokenizer of text-only token scans. Local paths and
``bundled-minilm`` need no download. ``rmexplain.hub`` downloads them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rmexplain import paths
from rmexplain.design import Design
from rmexplain.hub import BUNDLED_MINILM, NOT_LOADED, HubRef, hub_ref
from rmexplain.settings import Config, ConfigError


def _rm_refs(design: Design, rm: str) -> list[HubRef | None]:
    runs = design.scoring_rm(rm)  # a planted RM loads its base
    return design.rm_backend(runs).hub_refs(runs, design.reward_models[runs])


def _llm_refs(design: Design, key: str, llm: Config) -> list[HubRef | None]:
    return design.llm_backend(llm).hub_refs(key, llm)


def _method_refs(design: Design, method: str) -> list[HubRef | None]:
    entry = design.method(method)
    return entry.entry.hub_refs(entry.settings)


def _embedding_refs(design: Design) -> list[HubRef | None]:
    model = (design.config.get("evaluate") or {}).get("embedding_model", BUNDLED_MINILM)
    return [hub_ref(model, None, "evaluate.embedding_model")]


def _text_tokenizer_refs(design: Design) -> list[HubRef | None]:
    source = (design.tokens.settings.get("vocabulary") or {}).get("text_tokenizer", BUNDLED_MINILM)
    return [hub_ref(source, None, "tokens.vocabulary.text_tokenizer", tokenizer_only=True)]


def _uses_text_tokenizer(design: Design, rm: str) -> bool:
    return not design.rm_backend(rm).exact_token_ids


def _all_refs(design: Design) -> list[HubRef]:
    refs: list[HubRef | None] = []
    for rm in design.reward_models:
        refs += _rm_refs(design, rm)
    for key, llm in design.llm_sections.items():
        refs += _llm_refs(design, key, llm)
    for method in design.methods:
        refs += _method_refs(design, method)
    refs += _embedding_refs(design)
    if design.tokens.enabled and any(_uses_text_tokenizer(design, rm) for rm in design.tokens.rms):
        refs += _text_tokenizer_refs(design)
    return [ref for ref in refs if ref is not None]


def _union(a: tuple[str, ...] | None, b: tuple[str, ...] | None) -> tuple[str, ...] | None:
    return None if a is None or b is None else tuple(dict.fromkeys((*a, *b)))


def _merge(entry: dict[str, Any] | None, ref: HubRef) -> dict[str, Any]:
    if entry is None:
        return {
            "repo_id": ref.repo_id,
            "revision": ref.revision,
            "allow_patterns": None if ref.allow_patterns is None else list(ref.allow_patterns),
            "ignore_patterns": list(NOT_LOADED),
            "required": list(ref.required),
            "used_by": [ref.key],
        }
    if (entry["repo_id"], entry["revision"]) != (ref.repo_id, ref.revision):
        raise ConfigError(
            f"{ref.key}: {ref.repo_id!r} at revision {ref.revision!r} and {entry['used_by'][0]}: "
            f"{entry['repo_id']!r} at revision {entry['revision']!r} map to the same marker {ref.name!r}; "
            "give one of them a commit hash"
        )
    allow = entry["allow_patterns"]
    merged = _union(None if allow is None else tuple(allow), ref.allow_patterns)
    return {
        **entry,
        "allow_patterns": None if merged is None else list(merged),
        "required": list(dict.fromkeys([*entry["required"], *ref.required])),
        "used_by": list(dict.fromkeys([*entry["used_by"], ref.key])),
    }


def _collect(refs: Iterable[HubRef]) -> dict[str, dict[str, Any]]:
    models: dict[str, dict[str, Any]] = {}
    for ref in refs:
        models[ref.name] = _merge(models.get(ref.name), ref)
    return models


def hub_models(design: Design) -> dict[str, dict[str, Any]]:
    """Every hub model the configuration loads: marker name -> download spec.

    A spec has ``repo_id``, ``revision`` (None: the default branch), ``allow_patterns`` (None: all files;
    a GGUF file and the tokenizer files for ``gguf_file``; tokenizer files for tokenizer-only sources),
    ``ignore_patterns``, ``required`` files and ``used_by`` (the config keys). One repo and revision used
    by several keys is downloaded once, with the union of their files.
    """
    return _collect(_all_refs(design))


def hub_spec(design: Design, name: str) -> dict[str, Any]:
    """The download spec of marker ``name`` (the ``download_model`` job's params)."""
    models = hub_models(design)
    if name not in models:
        raise ConfigError(
            f"{paths.fmt(paths.HUB_MARKER, model=name)}: no hub model of this config is called {name!r}; "
            f"they are {sorted(models)}"
        )
    return models[name]


def _markers(refs: Iterable[HubRef | None]) -> list[str]:
    names = dict.fromkeys(ref.name for ref in refs if ref is not None)
    return [paths.fmt(paths.HUB_MARKER, model=name) for name in names]


def models_for_rm(design: Design, rm: str) -> list[str]:
    """Markers a job loading RM ``rm`` (scoring, token scans, GCG) waits for."""
    return _markers(_rm_refs(design, rm))


def models_for_tokens_vocabulary(design: Design, rm: str) -> list[str]:
    """Markers of ``tokens_vocabulary``: the RM's tokenizer, or ``text_tokenizer`` for text-only backends."""
    if _uses_text_tokenizer(design, rm):
        return _markers(_text_tokenizer_refs(design))
    return models_for_rm(design, rm)


def models_for_perturb(design: Design, method: str) -> list[str]:
    """Markers of a ``perturb`` job: the LLM for LLM methods, else the method's own models."""
    if design.method(method).uses_llm:
        return _markers(_llm_refs(design, "llm", design.llm))
    return _markers(_method_refs(design, method))


def models_for_discovery(design: Design) -> list[str]:
    """Markers of ``discover_attributes``: the LLM."""
    return _markers(_llm_refs(design, "llm", design.llm))


def models_for_judge(design: Design) -> list[str]:
    """Markers of ``analyse_judge``: the judge's LLM (``llm`` with ``analysis.judge.llm`` overrides)."""
    return _markers(_llm_refs(design, *design.judge_llm))


def models_for_distances(design: Design) -> list[str]:
    """Markers of ``embed_texts`` (the texts the distances compare): the sentence-embedding model."""
    return _markers(_embedding_refs(design))
