"""The plugin examples of docs/extending.md, installed with pip as other packages: a perturbation method
(tests/plugins/rewrite_method, the page's code file for file) with its own prompt and settings schema, and an
RM backend (tests/plugins/length_rm) whose spec keys stay its own."""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from conftest import REPO, tiny_demo_config

from rmexplain.config import ConfigError, check
from rmexplain.design import Design
from rmexplain.llm.devserver import ChatServer
from rmexplain.perturb.base import methods
from rmexplain.perturb.stages import perturb_to_parquet
from rmexplain.plan import make_plan, plan_markdown
from rmexplain.score.base import rm_backends

PLUGINS = REPO / "tests" / "plugins"
METHOD_PACKAGE = PLUGINS / "rewrite_method"
PLUGIN_NAMES = {
    "rmexplain_rewrite_method": (methods, "rewrite"),
    "rmexplain_length_rm": (rm_backends, "length"),
}


@pytest.fixture
def installed(tmp_path, monkeypatch) -> Iterator[Path]:
    """Both plugin packages installed by pip into a folder on sys.path; afterwards, gone again (their
    registrations included, so the built-ins' own tests see only the built-ins)."""
    target = tmp_path / "site"
    for source in (METHOD_PACKAGE, PLUGINS / "length_rm"):
        package = shutil.copytree(source, tmp_path / source.name)  # pip builds in the copy, not in tests/
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
             "--target", str(target), str(package)],
            check=True, capture_output=True, cwd=tmp_path,
        )  # fmt: skip
    monkeypatch.syspath_prepend(str(target))
    for registry, _ in PLUGIN_NAMES.values():
        registry.plugins(refresh=True)
    yield target
    monkeypatch.undo()
    for module, (registry, name) in PLUGIN_NAMES.items():
        sys.modules.pop(module, None)
        registry._entries.pop(name, None)
        registry.plugins(refresh=True)


def method_config(**settings: object) -> dict:
    config = tiny_demo_config()
    config["perturb"]["methods"] = ["rules", "rewrite"]
    config["llm"] = {
        "backend": "openai",
        "model": "dev",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": None,
    }
    if settings:
        config["perturb"]["rewrite"] = settings
    return config


def test_the_page_shows_the_method_package_file_for_file():
    page = (REPO / "docs" / "extending.md").read_text(encoding="utf-8")
    shown: dict[str, list[str]] = {}
    for line in page.splitlines():
        header = re.fullmatch(r"\+\+\+ my-method-package/(\S+)", line)
        if header:
            current = shown.setdefault(header[1], [])
        elif shown and line.startswith("+"):
            current.append(line[1:])
        elif shown and line == "```":
            break
    files = sorted(
        str(p.relative_to(METHOD_PACKAGE))
        for p in METHOD_PACKAGE.rglob("*")
        if p.is_file() and not {"__pycache__", "build"} & set(p.parts) and ".egg-info" not in str(p)
    )
    assert sorted(shown) == files
    for name, lines in shown.items():
        assert "\n".join(lines) + "\n" == (METHOD_PACKAGE / name).read_text(encoding="utf-8"), name


def test_a_method_from_another_package_declares_its_settings_prompt_and_requests(installed):
    assert "rewrite" in methods.plugins() and "rewrite" not in methods.builtins()
    design = Design.from_config(check(method_config()))
    rewrite = design.method("rewrite")
    assert rewrite.entry.uses_llm and rewrite.settings == {"prompt": None, "max_tokens": 256}  # its defaults
    prompt = Path(rewrite.prompt_files()["prompt_rewrite"])
    assert prompt.is_relative_to(installed) and prompt.name == "rewrite.txt"  # from its own package
    assert "rewrite" in design.llm_methods
    planned = plan_markdown(make_plan(check(method_config(max_tokens=64)), installed))
    assert re.search(r"\| perturb \| harmless \| rewrite \|", planned), planned  # its requests are planned
    with pytest.raises(
        ConfigError, match=r"perturb\.rewrite\.max_token: unknown key; did you mean 'max_tokens'"
    ):
        check(method_config(max_token=64))
    with pytest.raises(ConfigError, match=r"perturb\.rewrite\.max_tokens: 0 is less than the minimum of 1"):
        check(method_config(max_tokens=0))


def test_a_plugin_backend_spec_key_is_refused_on_another_backend(installed):
    config = tiny_demo_config()
    config["reward_models"]["words"] = {"backend": "length", "per_word": 0.5}
    check(config)
    config["reward_models"]["black_box"] = {"backend": "python", "callable": "json:loads", "per_word": 3}
    with pytest.raises(
        ConfigError, match=r"reward_models\.black_box\.per_word: a spec key of backend length"
    ):
        check(config)


def test_the_plugin_method_runs_against_the_scripted_llm_server(installed, tmp_path):
    from test_llm_methods import ATTRIBUTES, write_inputs

    comparisons, scores = write_inputs(tmp_path / "in")
    with ChatServer() as server:
        llm = {"backend": "openai", "model": "dev", "base_url": server.base_url, "api_key_env": None,
               "timeout": 5.0, "cache_dir": str(tmp_path / "cache")}  # fmt: skip
        settings = Design.from_config(check(method_config(max_tokens=64))).method("rewrite").settings
        frame = perturb_to_parquet(
            comparisons=str(comparisons),
            scores=str(scores),
            method="rewrite",
            orienter="rm-a",
            settings=settings,
            attributes=ATTRIBUTES,
            output=str(tmp_path / "out.parquet"),
            skipped=str(tmp_path / "skipped.parquet"),
            log=logging.getLogger("test"),
            llm=llm,
        )
        sent = server.stats.requests
    oriented = 5  # write_inputs' third comparison is a tie
    assert sent == frame.height == oriented * 2 * len(ATTRIBUTES)
    assert set(frame["attribute"]) == set(ATTRIBUTES) and set(frame["method"]) == {"rewrite"}
    first = frame.row(0, named=True)
    assert first["text"].startswith("echo: Rewrite the response below to make it")  # its own prompt was sent
    assert pl.read_parquet(tmp_path / "skipped.parquet").filter(pl.col("stage") == "rewrite").is_empty()


def test_the_plugin_methods_effect_editor_makes_the_attribute_effects_edits(installed, tmp_path):
    """``effect_editor=edit``: named in analysis.effects.methods, the plugin method edits every response both
    ways and every edit back, with its own prompt; its requests are planned as the editor declares."""
    from test_llm_methods import ATTRIBUTES, write_inputs

    from rmexplain.effects.edits import make_effect_edits
    from rmexplain.perturb.stages import method_services
    from rmexplain.schemas import COMPARISONS, read_table

    config = method_config(max_tokens=64)
    config["analysis"] = {"methods": ["rules", "rewrite"], "effects": {"methods": ["rewrite"]}}
    design = Design.from_config(check(config))
    assert design.effect_pairs == [("harmless", "rewrite")]
    comparisons, _ = write_inputs(tmp_path / "in")
    frame = read_table(comparisons, COMPARISONS, "comparisons")
    with ChatServer() as server:
        llm = {"backend": "openai", "model": "dev", "base_url": server.base_url, "api_key_env": None,
               "timeout": 5.0, "cache_dir": str(tmp_path / "cache")}  # fmt: skip
        log = logging.getLogger("test")
        settings, services = design.method("rewrite").settings, method_services("rewrite", llm, log)
        edits, skipped = make_effect_edits(
            frame, "rewrite", "rewrite", settings, ATTRIBUTES, services, True, log
        )
    assert not skipped.records
    assert edits.height == frame.height * 2 * 2 * len(ATTRIBUTES) * 2  # both sides, both ways, and back
    assert edits["text"].str.starts_with("echo: Rewrite the response below to make it").all()
