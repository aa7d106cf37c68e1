"""The documentation stays true to the code: contracts and config keys."""

from pathlib import Path

import yaml

from rmexplain.schemas import contracts_markdown

REPO = Path(__file__).resolve().parents[1]


def test_docs_hold_the_current_data_contracts():
    page = (REPO / "docs" / "contracts.md").read_text()
    assert contracts_markdown() in page, (
        "docs/contracts.md is stale: regenerate the contracts with `rmexplain schemas`"
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


def test_readme_is_short_and_links_resolve():
    import re

    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    pages = [REPO / "README.md", REPO / "config" / "README.md", *(REPO / "docs").glob("*.md")]
    broken = [
        (page.name, target)
        for page in pages
        for target in re.findall(r"\]\(([^)#\s]+)", page.read_text())
        if not target.startswith("http") and not (page.parent / target).exists()
    ]
    assert not broken, f"links to missing files: {broken}"


def test_no_internal_issue_references():
    import re
    import subprocess

    files = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    owner_tag = "own" + "er: "  # split, so this file does not match itself
    pattern = re.compile(r"\(issues? \d+|\bissues? \d+\b|" + owner_tag, re.IGNORECASE)
    hits = [
        f
        for f in files
        if not f.endswith((".jsonl", ".png", ".csv.gz"))
        and (REPO / f).is_file()
        and pattern.search((REPO / f).read_text(errors="ignore"))
    ]
    assert not hits, f"internal issue references in {hits}"
