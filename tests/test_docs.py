"""The documentation stays true to the code: contracts and config keys."""

from pathlib import Path

import yaml

from rmexplain.schemas import contracts_markdown

REPO = Path(__file__).resolve().parents[1]


def test_readme_holds_the_current_data_contracts():
    readme = (REPO / "README.md").read_text()
    assert contracts_markdown() in readme, (
        "README's data contracts are stale: regenerate with `rmexplain schemas`"
    )


def _keys(schema: dict, prefix: str = "") -> list[str]:
    keys = []
    for name, sub in (schema.get("properties") or {}).items():
        keys.append(prefix + name)
        if isinstance(sub, dict) and sub.get("type") == "object":
            keys.extend(_keys(sub, f"{prefix}{name}."))
    return keys


def test_every_top_level_config_section_is_documented():
    schema = yaml.safe_load((REPO / "workflow/rmexplain/config/schema.yaml").read_text())
    documented = (REPO / "config/README.md").read_text()
    missing = [k for k in schema["properties"] if f"`{k}" not in documented]
    assert not missing, f"config/README.md does not document {missing}"
