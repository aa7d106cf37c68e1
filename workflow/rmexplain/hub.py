"""Hub models: references to hub repositories, and their download by a localrule.

Which models a configuration loads is ``rmexplain.downloads`` (it asks the design and the declarations of
its backends and methods, which build their references with :func:`hub_ref` and
:func:`model_and_tokenizer_refs`).


Login nodes have the internet; compute nodes often do not. Rule ``download_model`` (a ``localrule``, so it
runs where Snakemake runs) fetches every hub model of the configuration into the Hugging Face cache
(``$HF_HOME/hub``) and writes a marker ``results/hub/<name>.json``. The rules that load a model take its
marker as input (``hub=``), so they start only after the download and load the same repo and revision from
the cache: their scripts call :func:`use_local_copies` first, which sets ``HF_HUB_OFFLINE=1`` for the job
(without it, huggingface_hub retries every file it probes five times with backoff when the hub is unreachable:
minutes per model on an offline node).

Sources (``config/README.md`` documents the keys): ``reward_models.<rm>.model`` / ``.tokenizer`` (backends
``transformers`` and ``vllm``; ``remote`` only for its local tokenizer), the ``llm`` section (and
``analysis.judge.llm``) for backends ``transformers`` and ``vllm``, ``perturb.polyjuice.model``,
``evaluate.embedding_model`` and ``tokens.vocabulary.text_tokenizer``. Local paths that exist and
``bundled-minilm`` need no download.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rmexplain.settings import ConfigError

BUNDLED_MINILM = "bundled-minilm"  # rmexplain.embeddings.BUNDLED_MINILM (not imported: it pulls numpy)
# What a tokenizer (and the model config) needs, for sources that only load a tokenizer or GGUF weights.
TOKENIZER_FILES = ("*.json", "*.model", "*.txt", "*.tiktoken", "*.jinja", "*.py")
# Weight formats of other frameworks and runtimes, which transformers, sentence-transformers and vLLM never
# load here (sentence-transformers repos ship ONNX and OpenVINO copies: hundreds of MB for nothing).
NOT_LOADED = ("*.h5", "*.msgpack", "*.ot", "*.onnx", "onnx/*", "openvino/*", "*.tflite", "coreml/*")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


class HubError(RuntimeError):
    """A hub model could not be downloaded; the message names the config keys that use it."""


@dataclass(frozen=True)
class HubRef:
    """One hub repository at one revision, as one config key asks for it."""

    repo_id: str
    revision: str | None
    key: str
    allow_patterns: tuple[str, ...] | None = None  # None: every file (minus NOT_LOADED)
    required: tuple[str, ...] = ()  # files that must be in the snapshot (a GGUF file)

    @property
    def name(self) -> str:
        """Filesystem-safe marker name: ``org--repo`` (hub ids never contain ``--``), ``@revision`` if set."""
        base = self.repo_id.replace("/", "--")
        return base if self.revision is None else f"{base}@{_UNSAFE.sub('_', self.revision)}"


def hub_ref(
    source: Any, revision: Any, key: str, *, gguf_file: str | None = None, tokenizer_only: bool = False
) -> HubRef | None:
    """The download ``source`` (from config ``key``) needs; None for local paths and ``bundled-minilm``."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if source is None or source == BUNDLED_MINILM or Path(str(source)).expanduser().exists():
        return None
    try:
        validate_repo_id(str(source))
    except HFValidationError as err:
        raise ConfigError(
            f"{key}: {source!r} is neither an existing local path nor a hub id ({err})"
        ) from None
    allow = None
    if gguf_file or tokenizer_only:
        allow = (*([gguf_file] if gguf_file else []), *TOKENIZER_FILES)
    rev = None if revision is None else str(revision)
    return HubRef(str(source), rev, key, allow, (gguf_file,) if gguf_file else ())


def model_and_tokenizer_refs(
    key: str,
    model: Any,
    revision: Any,
    tokenizer: Any,
    tokenizer_revision: Any,
    *,
    gguf_file: str | None = None,
    tokenizer_key: str | None = None,
) -> list[HubRef | None]:
    """A model (``key.model``) and, when it differs, its separate tokenizer (``key.tokenizer``)."""
    refs = [hub_ref(model, revision, f"{key}.model", gguf_file=gguf_file)]
    if tokenizer and tokenizer != model:
        refs.append(
            hub_ref(tokenizer, tokenizer_revision, tokenizer_key or f"{key}.tokenizer", tokenizer_only=True)
        )
    return refs


def use_local_copies(markers: Sequence[str], log: logging.Logger) -> bool:
    """Make this job read its hub models from the cache only (``HF_HUB_OFFLINE=1``) if it has markers.

    Call it before the job loads a model. The job then uses exactly the snapshot ``download_model`` fetched
    and never touches the network (compute nodes are often offline). An explicit ``HF_HUB_OFFLINE`` in the
    environment is kept. Returns whether offline mode is on.
    """
    markers = list(markers)
    if not markers:
        return False
    value = os.environ.setdefault("HF_HUB_OFFLINE", "1")
    offline = value.strip().upper() in {"1", "ON", "YES", "TRUE"}
    if "huggingface_hub.constants" in sys.modules:  # imported already: it read the variable at import
        sys.modules["huggingface_hub.constants"].HF_HUB_OFFLINE = offline
    log.info(
        "hub models %s: HF_HUB_OFFLINE=%s (%s)",
        markers,
        value,
        "cache only" if offline else "may use the network",
    )
    return offline


def _snapshot(spec: Mapping[str, Any]) -> str:
    from huggingface_hub import snapshot_download

    return snapshot_download(
        repo_id=spec["repo_id"],
        revision=spec.get("revision"),
        allow_patterns=spec.get("allow_patterns"),
        ignore_patterns=spec.get("ignore_patterns"),
    )


def download_model(spec: Mapping[str, Any], marker_path: str | Path, log: logging.Logger) -> dict[str, Any]:
    """Download one :func:`hub_models` spec into the Hugging Face cache and write its JSON marker.

    The marker records ``repo_id``, ``revision``, the resolved ``commit``, the snapshot ``path`` and the
    files. Raises :class:`HubError` naming the config keys when the download fails or a required file
    (``gguf_file``) is not in the repo.
    """
    from huggingface_hub import constants

    repo, keys = spec["repo_id"], ", ".join(spec.get("used_by") or ["?"])
    revision = spec.get("revision") or "default branch"
    log.info(
        "downloading %s (revision %s) from %s into %s",
        repo,
        revision,
        constants.ENDPOINT,
        constants.HF_HUB_CACHE,
    )
    try:
        path = Path(_snapshot(spec))
    except Exception as err:  # huggingface_hub raises HTTP, offline, validation and OS errors
        raise HubError(
            f"{keys}: cannot download {repo!r} (revision {revision}) from {constants.ENDPOINT}: "
            f"{type(err).__name__}: {err}; if {repo!r} is a local path, nothing is at "
            f"{Path(repo).expanduser().resolve()}"
        ) from err
    missing = [name for name in spec.get("required") or [] if not (path / name).is_file()]
    if missing:
        raise HubError(f"{keys}: {repo!r} (revision {revision}) has no file {missing}")
    files = sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())
    marker = {
        "repo_id": repo,
        "revision": spec.get("revision"),
        "commit": path.name,
        "path": str(path),
        "files": files,
        "bytes": sum((path / f).stat().st_size for f in files),
        "used_by": list(spec.get("used_by") or []),
    }
    Path(marker_path).parent.mkdir(parents=True, exist_ok=True)
    Path(marker_path).write_text(json.dumps(marker, indent=2) + "\n")
    log.info(
        "%s at commit %s: %d files, %.1f MB in %s", repo, path.name, len(files), marker["bytes"] / 1e6, path
    )
    return marker
