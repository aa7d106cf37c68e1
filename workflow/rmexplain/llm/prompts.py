"""Prompt templates: editable text files with ``{field}`` placeholders (Python ``str.format`` syntax).

The bundled defaults live in ``rmexplain/prompts/`` and follow the paper's App. B (two-step), C
(random) and A (attribute discovery). A config may point any template at its own file; the fields a
template may use are listed in ``TEMPLATE_FIELDS`` (a literal brace is written ``{{`` / ``}}``). A
template's version — its name and a hash of its text — enters the LLM cache key and the
``generator`` column, so editing a template never reuses answers to the old one. Each method declares its
templates (``register_template``) in its own module. The config check reads each template file a method or
engine declares (``resolved_templates``), so an unknown field is refused before any job starts.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROMPT_DIR = Path(__file__).resolve().parent.parent / "prompts"

# Template name -> the fields it may use, and the folder of its bundled default. A method declares its own
# templates where it is defined (``register_template``); attribute discovery's is declared here.
TEMPLATE_FIELDS: dict[str, frozenset[str]] = {}
_BUNDLED_DIRS: dict[str, Path] = {}
# While ``resolved_templates`` runs: each file ``template_path`` names -> the templates it is read as.
_RESOLVED: ContextVar[dict[str, set[str]] | None] = ContextVar("resolved_templates", default=None)


def register_template(name: str, fields: Iterable[str], directory: Path = PROMPT_DIR) -> None:
    """Declare template ``name``: the ``{field}`` names it may use, and the folder holding its bundled default
    ``<name>.txt`` (the project's ``prompts/``, or a plugin's own)."""
    held = TEMPLATE_FIELDS.get(name)
    if held is not None and held != frozenset(fields):
        raise TemplateError(f"prompt template {name!r} is declared twice, with different fields")
    TEMPLATE_FIELDS[name] = frozenset(fields)
    _BUNDLED_DIRS[name] = directory


register_template(
    "discover", {"question", "chosen_reward", "chosen_response", "rejected_reward", "rejected_response"}
)


class TemplateError(ValueError):
    """A prompt template file is missing or uses an unknown field."""


@dataclass(frozen=True)
class PromptTemplate:
    """One template: its name, text and the file it came from."""

    name: str
    text: str
    source: str

    @property
    def version(self) -> str:
        """``name@hash`` of the text: changes whenever the template does."""
        return f"{self.name}@{hashlib.sha256(self.text.encode()).hexdigest()[:10]}"

    def render(self, **values: Any) -> str:
        """Fill the placeholders; every field the template uses must be given."""
        missing = template_fields(self.text) - set(values)
        if missing:
            raise TemplateError(f"prompt template {self.source}: no value for field(s) {sorted(missing)}")
        return self.text.format(**values)


def template_fields(text: str) -> set[str]:
    """Names of the ``{field}`` placeholders in a template."""
    return {field for _, field, _, _ in string.Formatter().parse(text) if field is not None}


def bundled_path(name: str) -> Path:
    """Path of the bundled default template ``name``."""
    return _BUNDLED_DIRS.get(name, PROMPT_DIR) / f"{name}.txt"


def template_path(name: str, override: str | None = None) -> Path:
    """The file template ``name`` is read from: ``override`` if given, else the bundled default."""
    if name not in TEMPLATE_FIELDS:
        raise TemplateError(f"unknown prompt template {name!r}; known: {sorted(TEMPLATE_FIELDS)}")
    path = Path(override) if override else bundled_path(name)
    resolved = _RESOLVED.get()
    if resolved is not None:
        resolved.setdefault(str(path), set()).add(name)
    return path


def resolved_templates(inputs: Callable[[], Mapping[str, str]]) -> dict[str, tuple[str, frozenset[str]]]:
    """Input name -> (file, the templates it is read as) of ``inputs()``, a method's or engine's
    ``prompt_inputs``; no template for a file that ``template_path`` did not name."""
    resolved: dict[str, set[str]] = {}
    token = _RESOLVED.set(resolved)
    try:
        files = inputs()
    finally:
        _RESOLVED.reset(token)
    return {name: (path, frozenset(resolved.get(path, ()))) for name, path in files.items()}


def load_template(name: str, override: str | None = None) -> PromptTemplate:
    """Read and check template ``name`` (from ``override`` if given)."""
    path = template_path(name, override)
    if not path.is_file():
        raise TemplateError(f"prompt template {name!r}: file {str(path)!r} does not exist")
    text = path.read_text(encoding="utf-8").rstrip("\n")
    try:
        fields = template_fields(text)
    except ValueError as err:
        raise TemplateError(f"prompt template {path}: {err} (write a literal brace as {{{{ or }}}})") from err
    unknown = fields - TEMPLATE_FIELDS[name]
    if unknown:
        raise TemplateError(
            f"prompt template {path}: unknown field(s) {sorted(unknown)}; {name!r} may use "
            f"{sorted(TEMPLATE_FIELDS[name])}"
        )
    return PromptTemplate(name=name, text=text, source=str(path))
