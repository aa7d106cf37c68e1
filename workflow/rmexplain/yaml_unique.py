"""YAML reading that refuses a key given twice in one mapping (PyYAML silently keeps the last)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rmexplain.settings import ConfigError


class _UniqueKeyLoader(yaml.SafeLoader):
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
