"""The 15 high-level evaluation attributes of the paper (App. A), the default attribute list.

Their names and descriptions live in a data file a user can read beside this module (``attributes.yaml``);
a config adds its own with ``extra_attributes`` or replaces the list with ``attributes``.
"""

from __future__ import annotations

from importlib import resources

import yaml

ATTRIBUTES_FILE = "attributes.yaml"


def _paper_attributes() -> dict[str, str]:
    text = (resources.files("rmexplain") / ATTRIBUTES_FILE).read_text(encoding="utf-8")
    return {str(name): str(description) for name, description in yaml.safe_load(text).items()}


PAPER_ATTRIBUTES: dict[str, str] = _paper_attributes()
