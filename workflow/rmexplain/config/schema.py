"""The configuration's JSON schema (``schema.yaml``, shipped in this package) as the check applies it.

The names of RM backends, LLM backends and perturbation methods are enums filled from their registries
(plugins included), so the schema never lists them by hand; a plugin RM backend's own spec keys
(``spec_schema``) join the RM spec's properties.
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path

import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from rmexplain.data.sources import SOURCES
from rmexplain.llm.base import llm_backends
from rmexplain.perturb.base import methods
from rmexplain.score.base import rm_backends
from rmexplain.settings import Config, ConfigError, schema


def load_schema() -> Config:
    """The JSON schema as a mapping, with the registered names as the enums of the keys that name a
    registered entry, and the spec keys that plugin RM backends declare (``spec_schema``)."""
    composed = copy.deepcopy(schema())
    props = composed["properties"]
    rm_spec = props["reward_models"]["additionalProperties"]["properties"]
    rm_spec["backend"]["enum"] = rm_backends.names()
    for name in rm_backends.plugins():
        for key, rule in rm_backends.get(name).spec_schema.items():
            rm_spec.setdefault(key, rule)
    props["llm"]["properties"]["backend"]["enum"] = llm_backends.names()
    props["datasets"]["additionalProperties"]["properties"]["source"]["enum"] = list(SOURCES)
    variant = props["perturb"]["properties"]["variants"]["additionalProperties"]
    variant["properties"]["method"]["enum"] = methods.names()
    return composed


def validate_schema(config: Config) -> None:
    """Validate against the JSON schema and fill its defaults in place."""
    with tempfile.TemporaryDirectory() as folder:  # Snakemake's validator reads the schema from a file
        schema = Path(folder) / "schema.yaml"
        schema.write_text(yaml.safe_dump(load_schema(), sort_keys=False), encoding="utf-8")
        try:
            validate(config, str(schema), set_default=True)
        except WorkflowError as err:
            raise ConfigError(f"the config does not match its schema: {err}") from None
