"""YAML reading that refuses a key given twice in one mapping (PyYAML silently keeps the last), and the
line a config key stands on (for error messages)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from rmexplain.settings import SAFE_LOADER, ConfigError


class _UniqueKeyLoader(SAFE_LOADER):
    """A safe loader whose mappings raise on a repeated key."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"key {key!r} is given twice (first on line {seen[key] + 1}); one of them would win silently",
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark.line
    loader.flatten_mapping(node)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml(path: str | Path) -> Any:
    """The YAML document in ``path``; a key given twice in a mapping raises ``ConfigError`` naming the key,
    the file and the line."""
    try:
        return yaml.load(Path(path).read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
    except (OSError, yaml.YAMLError) as err:
        raise ConfigError(f"{path}: cannot read the config: {err}") from None


def check_unique_keys(paths: list[str | Path]) -> None:
    """Read every file of ``paths`` with :func:`load_yaml` (Snakemake's own reading keeps the last of
    repeated keys); raises ``ConfigError`` on the first key given twice."""
    for path in paths:
        load_yaml(path)


def _line_in(path: str | Path, keys: Sequence[str | int]) -> int | None:
    """The 1-based line of the deepest of ``keys`` (a path of mapping keys and list indices) found in the
    YAML file ``path``; None when the file cannot be read or its first key is not there."""
    try:
        node = yaml.compose(Path(path).read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, yaml.YAMLError):
        return None
    line = None
    for key in keys:
        if isinstance(node, yaml.MappingNode):
            found = [(k, v) for k, v in node.value if k.value == str(key)]
            if not found:
                break
            line, node = found[-1][0].start_mark.line + 1, found[-1][1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            break
    return line


def key_location(files: Sequence[str | Path], keys: Sequence[str | int]) -> str | None:
    """Where config key ``keys`` is written: ``"<file>, line <n>"`` of the last of ``files`` (the one whose
    value wins) that holds its first key, at the deepest of its keys found there; None when none does."""
    for path in reversed(files):
        line = _line_in(path, keys)
        if line is not None:
            return f"{path}, line {line}"
    return None
