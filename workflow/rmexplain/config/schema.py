"""The configuration's JSON schema (``schema.yaml``, shipped in this package) as the check applies it.

The names of RM backends, LLM backends, perturbation methods and discovery engines are enums filled from
their registries (plugins included), so the schema never lists them by hand; a plugin RM backend's own spec
keys (``spec_schema``) join the RM spec's properties, and a plugin perturbation method's or discovery
engine's settings (``settings_schema``) are the properties of its ``perturb.<method>`` or
``discovery.<engine>`` section.

A config that does not match is described in one line per problem: the key, the closest valid key of a
misspelt one, and the file and line it stands on. A number that is NaN or infinite is refused first, naming
its key (JSON schema's ``minimum`` and ``maximum`` let NaN through: every comparison with it is false).
"""

from __future__ import annotations

import copy
import difflib
import math
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import jsonschema
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from rmexplain.data.sources import SOURCES
from rmexplain.discovery.base import engines
from rmexplain.llm.base import llm_backends
from rmexplain.perturb.base import methods
from rmexplain.score.base import rm_backends
from rmexplain.settings import Config, ConfigError, schema
from rmexplain.yaml_unique import key_location


def load_schema() -> Config:
    """The JSON schema as a mapping, with the registered names as the enums of the keys that name a
    registered entry, the spec keys that plugin RM backends declare (``spec_schema``) and the settings that
    plugin perturbation methods declare (``settings_schema``, as ``perturb.<method>``)."""
    composed = copy.deepcopy(schema())
    props = composed["properties"]
    rm_spec = props["reward_models"]["additionalProperties"]["properties"]
    rm_spec["backend"]["enum"] = rm_backends.names()
    for name in rm_backends.plugins():
        for key, rule in rm_backends.get(name).spec_schema.items():
            rm_spec.setdefault(key, rule)
    props["llm"]["properties"]["backend"]["enum"] = llm_backends.names()
    props["datasets"]["additionalProperties"]["properties"]["source"]["enum"] = list(SOURCES)
    perturb = props["perturb"]["properties"]
    perturb["variants"]["additionalProperties"]["properties"]["method"]["enum"] = methods.names()
    for name in methods.names():
        if name not in perturb:  # a plugin's: the settings it declares, nothing else (method_settings
            perturb[name] = {  # fills their defaults where it runs, so an unused plugin adds no key)
                "description": f"Settings of the perturbation method {name!r} (its settings_schema).",
                "type": "object",
                "additionalProperties": False,
                "properties": dict(methods.get(name).settings_schema),
            }
    discovery = props["discovery"]["properties"]
    discovery["engines"]["items"]["enum"] = engines.names()
    for name in engines.plugins():  # a plugin engine's settings: the keys it declares (settings_schema)
        discovery.setdefault(name, {
            "description": f"Settings of the discovery engine {name!r} (its settings_schema).",
            "type": "object",
            "additionalProperties": False,
            "default": {},
            "properties": dict(engines.get(name).settings_schema),
        })  # fmt: skip
    return composed


def plugin_spec_keys() -> dict[str, list[str]]:
    """RM spec keys that only plugin backends declare (``spec_schema``) -> the backends declaring them: a
    spec of any other backend may not use them."""
    built_in = schema()["properties"]["reward_models"]["additionalProperties"]["properties"]
    owners: dict[str, list[str]] = {}
    for name in rm_backends.plugins():
        for key in rm_backends.get(name).spec_schema:
            if key not in built_in:
                owners.setdefault(key, []).append(name)
    return owners


def validate_schema(config: Config, files: Sequence[str | Path] = ()) -> None:
    """Validate against the JSON schema and fill its defaults in place; ``files`` are the YAML files the
    config was read from (the error names the line of the key)."""
    check_finite(config, files)
    composed = load_schema()
    with tempfile.TemporaryDirectory() as folder:  # Snakemake's validator reads the schema from a file
        path = Path(folder) / "schema.yaml"
        path.write_text(yaml.safe_dump(composed, sort_keys=False), encoding="utf-8")
        try:
            validate(config, str(path), set_default=True)
        except WorkflowError as err:
            cause = err.__context__  # Snakemake raises its error while handling jsonschema's
            if not isinstance(cause, jsonschema.ValidationError):
                raise ConfigError(f"the config does not match its schema: {err}") from None
            raise ConfigError(schema_problem(cause, files)) from None


def check_finite(config: Config, files: Sequence[str | Path] = ()) -> None:
    """Refuse a number that is NaN or infinite anywhere in the config, naming its key (and file and line)."""
    for keys, value in _numbers(config, []):
        if not math.isfinite(value):
            where = key_location(files, keys)
            raise ConfigError(
                f"{_dotted(keys)}: {value!r} is not a finite number" + (f" ({where})" if where else "")
            )


def _numbers(value: object, keys: list[str | int]) -> Iterator[tuple[list[str | int], float]]:
    """(key path, value) of every float in a config's nested mappings and lists."""
    if isinstance(value, float):
        yield keys, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _numbers(item, [*keys, key])
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _numbers(item, [*keys, i])


def schema_problem(error: jsonschema.ValidationError, files: Sequence[str | Path] = ()) -> str:
    """One line per problem of a schema error: the key, what is wrong, a close valid key for an unknown
    one ("did you mean"), and where the key is written (file and line, when ``files`` hold it)."""
    if error.validator == "oneOf" and error.context:  # the branch of the value's shape says what is wrong
        within = [e for e in error.context if e.validator != "type"]
        if within:
            return schema_problem(max(within, key=lambda e: len(e.absolute_path)), files)
        shapes = [str(e.validator_value) for e in error.context]
        error.message = f"{error.instance!r} is none of the forms it takes ({' or '.join(shapes)})"
    keys = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = list(error.schema.get("properties") or {})
        unknown = [key for key in error.instance if key not in known]
        return "; ".join(_unknown_key([*keys, key], known, files) for key in unknown)
    where = key_location(files, keys) if keys else None
    name = _dotted(keys) or "the config"
    return f"{name}: {error.message}" + (f" ({where})" if where else "")


def unknown_value(
    keys: Sequence[str | int],
    value: object,
    allowed: Sequence[str],
    what: str,
    files: Sequence[str | Path] = (),
) -> str:
    """The problem of a config value that names nothing known: the key, where it is written (file and line,
    when ``files`` hold it) and the closest known name ("did you mean"), else every known name."""
    close = difflib.get_close_matches(str(value), list(allowed), n=1)
    hint = f"did you mean {close[0]!r}?" if close else f"known: {sorted(allowed)}"
    where = key_location(files, list(keys))
    return f"{_dotted(keys)}: {value!r} is not {what}" + (f" ({where})" if where else "") + f"; {hint}"


def _unknown_key(keys: list[str | int], known: list[str], files: Sequence[str | Path]) -> str:
    close = difflib.get_close_matches(str(keys[-1]), known, n=1)
    hint = f"did you mean {close[0]!r}?" if close else f"the keys here are {sorted(known)}"
    where = key_location(files, keys)
    return f"{_dotted(keys)}: unknown key" + (f" ({where})" if where else "") + f"; {hint}"


def _dotted(keys: Sequence[str | int]) -> str:
    return "".join(f"[{k}]" if isinstance(k, int) else (f".{k}" if i else str(k)) for i, k in enumerate(keys))
