"""Every section's checks that the JSON schema cannot express; each raises ``ConfigError`` naming the key.

``rmexplain.config.check`` runs the schema first (which fills the defaults), then :func:`check_sections`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from rmexplain.attributes import PAPER_ATTRIBUTES
from rmexplain.config import Config, ConfigError, section


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


def _known(values: Iterable[str], allowed: Iterable[str], key: str, what: str) -> None:
    allowed = set(allowed)
    for value in values:
        _require(value in allowed, f"{key}: {value!r} is not {what} {sorted(allowed)}")


def check_datasets(config: Config) -> None:
    """Each dataset's source has the keys it needs, and local files exist."""
    for name, spec in config["datasets"].items():
        source = spec["source"]
        key = f"datasets.{name}"
        if source == "embedded":
            _require("part" in spec, f"{key}.part is required for source 'embedded' (helpful or harmless)")
        if source == "file":
            _require("path" in spec, f"{key}.path is required for source 'file'")
            _require(Path(spec["path"]).is_file(), f"{key}.path: file {spec['path']!r} does not exist")
            _require(
                Path(spec["path"]).suffix in {".jsonl", ".parquet"},
                f"{key}.path: {spec['path']!r} must end in .jsonl or .parquet",
            )
        if source == "hh-rlhf":
            _require("data_dir" in spec, f"{key}.data_dir is required for hh-rlhf (e.g. harmless-base)")


def check_reward_models(config: Config) -> None:
    """Each RM spec passes its backend's own check."""
    from rmexplain.score.base import backend_of

    for name, spec in config["reward_models"].items():
        backend_of(spec).check_spec(name, spec)


def check_perturb(config: Config) -> None:
    """Shared RMs exist; the bring-your-own perturbation file exists."""
    perturb = config["perturb"]
    _known(
        perturb.get("shared_rms") or [],
        config["reward_models"],
        "perturb.shared_rms",
        "a key of reward_models",
    )
    if "file" in perturb["methods"]:
        path = (perturb.get("file") or {}).get("path")
        _require(bool(path), "perturb.file.path is required when perturb.methods includes 'file'")
        _require(Path(path).is_file(), f"perturb.file.path: file {path!r} does not exist")


def check_llm(config: Config) -> None:
    """An LLM stage is configured with a model, a known discovery RM and existing prompt templates."""
    from rmexplain import paths

    if not paths.llm_needed(config):
        return
    why = ", ".join(paths.llm_methods_used(config)) or "perturb.discover"
    llm = config.get("llm")
    _require(
        bool(llm and llm.get("model")), f"llm.model (and the rest of the `llm` section) is required for {why}"
    )
    rm = (section(config, "perturb").get("discover") or {}).get("rm")
    if paths.discovery_enabled(config) and rm is not None:
        _known([rm], paths.orienters(config), "perturb.discover.rm", "one of the orienters")
    templates = {m: paths.prompt_inputs(config, m) for m in paths.llm_methods_used(config)}
    if paths.discovery_enabled(config):
        templates["discover"] = {"prompt": paths.discovery_prompt_input(config)}
    for method, inputs in templates.items():
        for name, path in inputs.items():
            _require(
                Path(path).is_file(),
                f"perturb.{method}: prompt template {name!r} file {path!r} does not exist",
            )


def check_analysis(config: Config) -> None:
    """Analysed methods, example RMs and pairs exist; probe patterns compile."""
    from rmexplain.analysis.probes import probes_from_config
    from rmexplain.analysis.sensitivity import AnalysisError

    analysis = section(config, "analysis")
    rms = config["reward_models"]
    _known(
        analysis.get("methods") or [],
        config["perturb"]["methods"],
        "analysis.methods",
        "one of perturb.methods",
    )
    examples = analysis.get("examples") or {}
    _known(examples.get("rms") or [], rms, "analysis.examples.rms", "a key of reward_models")
    for i, pair in enumerate(examples.get("pairs") or []):
        _known(list(pair), rms, f"analysis.examples.pairs[{i}]", "a key of reward_models")
        _require(
            pair[0] != pair[1], f"analysis.examples.pairs[{i}]: a pair needs two different RMs, got {pair}"
        )
    for name, spec in (analysis.get("probes") or {}).items():
        _known(
            spec.get("attributes") or [],
            config["attributes"],
            f"analysis.probes.{name}.attributes",
            "an attribute",
        )
    try:
        for probe in probes_from_config(analysis.get("probes")):
            probe.compile()
    except AnalysisError as err:
        raise ConfigError(str(err)) from None


def check_tokens(config: Config) -> None:
    """Token RMs, framing pairs and GCG prompts exist; vocabulary list and human ranking files exist."""
    tokens = section(config, "tokens")
    if not tokens.get("enabled", False):
        return
    _known(
        tokens.get("reward_models") or [],
        config["reward_models"],
        "tokens.reward_models",
        "a key of reward_models",
    )
    prompts = tokens["prompts"]
    for pair in tokens["analysis"]["framing_pairs"]:
        _known(pair, prompts, "tokens.analysis.framing_pairs", "a key of tokens.prompts")
    _known(tokens["gcg"].get("prompts") or [], prompts, "tokens.gcg.prompts", "a key of tokens.prompts")
    vocabulary = tokens["vocabulary"]
    if vocabulary["mode"] == "list":
        list_path = vocabulary.get("list_path")
        _require(
            bool(list_path) and Path(list_path).is_file(),
            f"tokens.vocabulary.list_path: {list_path!r} is not a file",
        )
    human = tokens.get("human_ranking")
    if human:
        _require(
            Path(human["path"]).is_file(), f"tokens.human_ranking.path: file {human['path']!r} does not exist"
        )


def check_hub(config: Config) -> None:
    """Every model source is a local path or a hub id, and no two keys map to one marker."""
    from rmexplain.hub import hub_models

    hub_models(config)


def check_sections(config: Config) -> None:
    """Run every section's checks, in config order; fill ``attributes`` with the paper's 15 when unset."""
    config.setdefault("attributes", dict(PAPER_ATTRIBUTES))
    for check in (
        check_datasets,
        check_reward_models,
        check_perturb,
        check_llm,
        check_analysis,
        check_tokens,
        check_hub,
    ):
        check(config)
