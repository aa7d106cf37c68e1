"""The one registry: schema enums come from the registered names, lazy imports, declared properties,
duplicate names refused, and plugins from other packages through entry points."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from conftest import REPO, tiny_demo_config

from rmexplain.config import ConfigError, check, validate_schema
from rmexplain.design import Design
from rmexplain.llm.base import LLMError, llm_backends
from rmexplain.perturb.base import PerturbationError, methods
from rmexplain.registry import Registry, RegistryError
from rmexplain.resources import rm_conda_env
from rmexplain.score.base import ScoringError, build_scorer, rm_backends

PLUGIN = REPO / "tests" / "plugins" / "length_rm"


# The names the project ships, by the config key that takes them.
SHIPPED = {
    "rm": ["demo", "planted", "python", "remote", "transformers", "vllm"],
    "llm": ["openai", "transformers", "vllm"],
    "method": ["file", "polyjuice", "random", "rules", "rules_random", "two_step"],
    "source": ["embedded", "file", "helpsteer2", "hh-rlhf"],
}
RM_KEYS = {
    "transformers": {"model": "org/rm"},
    "vllm": {"model": "org/rm"},
    "remote": {"url": "http://x"},
    "planted": {"base": "demo-helpful", "bias": {"detector": "none"}},
}


def naming(kind: str, name: str) -> tuple[dict, str]:
    """The tiny demo's config with ``name`` where a config names a registered entry of ``kind`` (and the
    keys the schema requires of that RM backend), and the key's dotted path as errors name it (a regex)."""
    config = tiny_demo_config()
    if kind == "rm":
        config["reward_models"]["demo-harmless"].update(backend=name, **RM_KEYS.get(name, {}))
        return config, r"reward_models\.demo-harmless\.backend"
    if kind == "llm":
        config["llm"]["backend"] = name
        return config, r"llm\.backend"
    if kind == "method":
        config["perturb"]["variants"] = {"mine": {"method": name}}
        return config, r"perturb\.variants\.mine\.method"
    config["datasets"]["harmless"]["source"] = name
    return config, r"datasets\.harmless\.source"


def test_the_shipped_names_are_the_lazy_maps_and_the_schema_lists_none_by_hand():
    from rmexplain.data.sources import SOURCES

    registries = {"rm": rm_backends, "llm": llm_backends, "method": methods}
    assert {kind: registry.builtins() for kind, registry in registries.items()} == {
        kind: SHIPPED[kind] for kind in registries
    }
    assert sorted(SOURCES) == SHIPPED["source"]
    for registry in registries.values():  # each built-in is registered by the module its map names
        for name in registry.builtins():
            assert registry.get(name).__module__.startswith(registry._modules[name]), name
    bundled = yaml.safe_load((REPO / "workflow" / "rmexplain" / "config" / "schema.yaml").read_text())
    assert "enum" not in bundled["properties"]["llm"]["properties"]["backend"]


@pytest.mark.parametrize("kind", sorted(SHIPPED))
def test_the_schema_refuses_an_unregistered_name_naming_the_key_and_the_choices(kind):
    config, path = naming(kind, "nope")
    with pytest.raises(ConfigError, match=rf"^{path}: 'nope' is not one of") as err:
        validate_schema(config)
    listed = re.search(r"'nope' is not one of \[([^\]]*)\]", str(err.value))
    assert listed, str(err.value)
    assert set(SHIPPED[kind]) <= set(re.findall(r"'([^']+)'", listed.group(1)))


@pytest.mark.parametrize(
    ("kind", "name"), [(kind, name) for kind in sorted(SHIPPED) for name in SHIPPED[kind]]
)
def test_the_schema_accepts_every_shipped_name(kind, name):
    config, _ = naming(kind, name)
    validate_schema(config)


PLUGIN_MODULE = """
from rmexplain.llm.base import LLMBackend
from rmexplain.score.base import RewardModelBackend


class ShellRM(RewardModelBackend):
    spec_schema = {"shell": {"type": "string"}}


class EchoLLM(LLMBackend):
    pass


def shuffle(tasks, context):
    return []
"""


@pytest.fixture
def entry_point_plugins(tmp_path, monkeypatch) -> Iterator[None]:
    """A package on sys.path that declares an RM backend, an LLM backend and a method as entry points,
    read afresh by the registries; what it registers is gone again after the test."""
    (tmp_path / "schema_plugins.py").write_text(PLUGIN_MODULE)
    declare_entry_points(
        tmp_path,
        "schema-plugins",
        "[rmexplain.reward_models]\nshell = schema_plugins:ShellRM\n"
        "[rmexplain.llm_backends]\necho = schema_plugins:EchoLLM\n"
        "[rmexplain.perturb_methods]\nshuffle = schema_plugins:shuffle\n",
    )
    registries = (rm_backends, llm_backends, methods)
    for registry in registries:
        monkeypatch.setattr(registry, "_entries", dict(registry._entries))
    monkeypatch.syspath_prepend(str(tmp_path))
    for registry in registries:
        registry.plugins(refresh=True)
    yield
    monkeypatch.undo()
    sys.modules.pop("schema_plugins", None)
    for registry in registries:
        registry.plugins(refresh=True)


@pytest.mark.parametrize(("kind", "name"), [("rm", "shell"), ("llm", "echo"), ("method", "shuffle")])
def test_the_schema_accepts_a_name_a_plugin_registers(kind, name, entry_point_plugins):
    config, _ = naming(kind, name)
    validate_schema(config)
    config, path = naming(kind, name + "-not-installed")
    with pytest.raises(ConfigError, match=rf"^{path}: '{name}-not-installed' is not one of [^\n]*'{name}'"):
        validate_schema(config)


def test_a_plugin_rm_backends_own_spec_keys_are_checked(entry_point_plugins):
    config, _ = naming("rm", "shell")
    config["reward_models"]["demo-harmless"]["shell"] = "echo 1"
    validate_schema(config)
    config["reward_models"]["demo-harmless"]["shell"] = 1
    with pytest.raises(ConfigError, match=r"1 is not of type 'string'"):
        validate_schema(config)


def test_without_the_plugin_its_names_are_refused():
    for kind, name in [("rm", "shell"), ("llm", "echo"), ("method", "shuffle")]:
        with pytest.raises(ConfigError, match=rf"'{name}' is not one of"):
            validate_schema(naming(kind, name)[0])


def test_every_entry_declares_what_the_workflow_needs():
    for name in rm_backends.names():
        backend = rm_backends.get(name)
        assert backend.conda_env in {"scoring", "vllm"}
        assert isinstance(backend.exact_token_ids, bool)
    assert [n for n in rm_backends.names() if rm_backends.get(n).exact_token_ids] == ["transformers"]
    assert rm_backends.get("vllm").gpus({"tensor_parallel_size": 4}) == 4
    assert rm_backends.get("demo").artifacts == ("head",)
    uses_llm = {n for n in methods.names() if methods.get(n).uses_llm}
    unconditioned = {n for n in methods.names() if not methods.get(n).attribute_conditioned}
    assert uses_llm == {"two_step", "random"} and unconditioned == {"random", "polyjuice", "rules_random"}
    assert methods.get("polyjuice").gpus({"device": "cuda:0"}) == 1 and methods.get("rules").gpus({}) == 0
    assert llm_backends.get("openai").envvars({}) == ["OPENAI_API_KEY"]
    assert llm_backends.get("openai").envvars({"api_key_env": None}) == []


@pytest.mark.parametrize(
    ("registry", "error", "key"),
    [
        (rm_backends, ScoringError, "reward_models.<rm>.backend"),
        (llm_backends, LLMError, "llm.backend"),
        (methods, PerturbationError, "perturb.methods"),
    ],
)
def test_unknown_names_name_the_config_key(registry, error, key):
    with pytest.raises(error, match=rf"{key}: unknown name 'nope'"):
        registry.get("nope")


def test_registry_imports_lazily_and_fills_declared_defaults():
    registry: Registry = Registry(
        "x.kind", {"json": "json"}, group="rmexplain.tests_nothing", defaults={"cheap": True}
    )

    @registry.register("a", "b", cheap=False)
    def expensive() -> None: ...

    @registry.register("c")
    def plain() -> None: ...

    assert registry.get("a") is registry.get("b") is expensive and expensive.cheap is False
    assert plain.cheap is True
    assert registry.names() == ["a", "b", "c", "json"]
    with pytest.raises(KeyError, match=r"x\.kind: unknown name 'json'"):
        registry.get("json")  # the module imports but registers nothing under that name


def test_a_class_attribute_is_kept_over_the_registry_default():
    """What an entry declares as a class attribute wins over the default; only what it leaves out is filled,
    and a ``register`` keyword wins over both."""
    registry: Registry = Registry(
        "x.kind", {}, group="rmexplain.tests_nothing", defaults={"cheap": True, "gpus": 0, "env": "core"}
    )

    @registry.register("costly")
    class Costly:
        cheap = False
        gpus = 2

    @registry.register("told", env="scoring")
    class Told:
        env = "vllm"

    assert (Costly.cheap, Costly.gpus, Costly.env) == (False, 2, "core")
    assert (Told.cheap, Told.gpus, Told.env) == (True, 0, "scoring")


def test_a_name_registered_twice_is_an_error():
    registry: Registry = Registry("x.kind", {}, group="rmexplain.tests_nothing")

    @registry.register("a")
    def first() -> None: ...

    registry.register("a")(first)  # the same object again (a module imported twice) is harmless
    with pytest.raises(RegistryError) as err:

        @registry.register("a")
        def second() -> None: ...

    where = f"{__name__}.test_a_name_registered_twice_is_an_error.<locals>"
    assert str(err.value) == f"x.kind: 'a' is registered twice, by {where}.first and by {where}.second"


def test_objects_without_a_module_or_a_name_are_named_by_their_repr():
    registry: Registry = Registry("x.kind", {}, group="rmexplain.tests_nothing")
    registry.register("a")(SimpleNamespace(kind="first"))
    with pytest.raises(RegistryError) as err:
        registry.register("a")(SimpleNamespace(kind="second"))
    assert str(err.value) == (
        "x.kind: 'a' is registered twice, by ?.namespace(kind='first') and by ?.namespace(kind='second')"
    )


def declare_entry_points(folder: Path, package: str, entry_points: str) -> None:
    """The metadata of an installed distribution in ``folder`` (to be put on sys.path) that declares
    ``entry_points`` (the text of its entry_points.txt)."""
    dist = folder / f"{package}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(entry_points)


def test_a_registry_reads_its_entry_point_group_on_first_use_and_names_a_broken_plugin(tmp_path, monkeypatch):
    (tmp_path / "registry_plugin.py").write_text("def tool() -> None: ...\n")
    declare_entry_points(
        tmp_path,
        "registry-plugin",
        "[rmexplain.tests_group]\ntool = registry_plugin:tool\nbroken = no_such_module:thing\n"
        "[rmexplain.tests_other_group]\nelsewhere = registry_plugin:tool\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "registry_plugin", raising=False)
    registry: Registry = Registry("x.kind", {}, group="rmexplain.tests_group", defaults={"cheap": True})
    assert registry.plugins() == ["broken", "tool"] and registry.names() == ["broken", "tool"]
    tool = registry.get("tool")
    assert (tool.__module__, tool.__name__, tool.cheap) == ("registry_plugin", "tool", True)
    with pytest.raises(RegistryError) as err:
        registry.get("broken")
    assert str(err.value) == (
        "x.kind: plugin 'broken' (no_such_module:thing) cannot be loaded: No module named 'no_such_module'"
    )


@pytest.fixture
def installed_plugin(tmp_path, monkeypatch) -> Path:
    """The plugin package of tests/plugins/length_rm, installed by pip into a folder on sys.path."""
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--target", str(target), str(PLUGIN)],
        check=True, capture_output=True, cwd=tmp_path,
    )  # fmt: skip
    monkeypatch.syspath_prepend(str(target))
    rm_backends.plugins(refresh=True)
    yield target
    monkeypatch.undo()
    rm_backends.plugins(refresh=True)


def test_a_backend_from_another_package_registers_through_its_entry_point(installed_plugin):
    assert "length" in rm_backends.plugins() and "length" not in rm_backends.builtins()
    config = tiny_demo_config()
    config["reward_models"]["words"] = {"backend": "length", "per_word": 0.5}  # its own spec key
    design = Design.from_config(check(config))
    assert rm_conda_env(design, "words") == "../../envs/core.yaml"  # what the plugin declares
    scorer = build_scorer("words", config["reward_models"]["words"])
    assert scorer.score(["q", "q"], ["one two three", "four"]) == [1.5, 0.5]
    config["reward_models"]["words"]["per_word"] = "many"
    with pytest.raises(ConfigError, match="per_word"):
        check(config)


def test_a_plugin_may_not_take_a_built_in_name(tmp_path, monkeypatch):
    declare_entry_points(tmp_path, "clash", "[rmexplain.reward_models]\ndemo = json:loads\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(RegistryError) as err:
            rm_backends.plugins(refresh=True)
        assert str(err.value) == (
            "reward_models.<rm>.backend: plugin(s) ['demo'] of entry-point group 'rmexplain.reward_models' "
            "take built-in names"
        )
    finally:
        monkeypatch.undo()
        rm_backends.plugins(refresh=True)


def test_nothing_outside_a_registry_entry_branches_on_its_name():
    """A registered name is compared only in the module that registers it (its own self-checks)."""
    from rmexplain.data.sources import SOURCES

    owners: dict[str, set[str]] = {name: {"rmexplain.data.sources"} for name in SOURCES}
    for registry in (rm_backends, llm_backends, methods):
        for name in registry.builtins():
            owners.setdefault(name, set()).add(registry._modules[name])
    files = [*(REPO / "workflow" / "rmexplain").rglob("*.py"), *(REPO / "workflow" / "rules").glob("*.smk")]
    files += list((REPO / "workflow" / "scripts").glob("*.py"))
    branches = []
    for path in files:
        module = ".".join(path.relative_to(REPO / "workflow").with_suffix("").parts).removesuffix(".__init__")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            code = line.split("#", 1)[0]
            for name, owner in owners.items():
                quoted = rf"""["']{re.escape(name)}["']"""
                compared = rf"(==|!=|\bin\b)\s*[(\[{{]?[^)\]}}]*{quoted}|{quoted}\s*(==|!=|\bin\b)"
                if module not in owner and re.search(compared, code):
                    branches.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not branches, "branches on a registered name:\n" + "\n".join(branches)
