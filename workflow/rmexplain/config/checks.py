"""Every section's checks that the JSON schema cannot express; each raises ``ConfigError`` naming the key.

``rmexplain.config.check`` runs the schema first (which fills the defaults), then :func:`check_sections`.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path

import jsonschema

from rmexplain.analysis.probes import probes_from_config
from rmexplain.analysis.reference import load_reference, paper_names
from rmexplain.analysis.sensitivity import AnalysisError
from rmexplain.attributes import PAPER_ATTRIBUTES
from rmexplain.config.schema import load_schema, plugin_spec_keys, unknown_value
from rmexplain.data.sources import source_of
from rmexplain.data.stages import identical_seeds
from rmexplain.design import Design
from rmexplain.discovery.base import engines as discovery_engines
from rmexplain.discovery.base import probes
from rmexplain.downloads import hub_models
from rmexplain.effects.base import LENGTH, estimators, reported_estimators
from rmexplain.llm.budget import unpriced_cost_cap
from rmexplain.llm.prompts import TemplateError, load_template, resolved_templates
from rmexplain.perturb.base import method_entry, method_settings, methods, registered_method
from rmexplain.score.base import backend_of
from rmexplain.settings import Config, ConfigError, section
from rmexplain.tokens import stats as token_stats


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


def _known(values: Iterable[str], allowed: Iterable[str], key: str, what: str) -> None:
    allowed = set(allowed)
    for value in values:
        _require(value in allowed, f"{key}: {value!r} is not {what} {sorted(allowed)}")


def check_attribute_names(config: Config) -> None:
    """No two attributes differ by case only, nor one from a built-in attribute (the paper's 15, whose rule
    editors know their own spelling): ``Harmlessness`` is refused, naming ``harmlessness``."""
    extra = config.get("extra_attributes") or {}
    seen = {name.casefold(): name for name in PAPER_ATTRIBUTES}
    for name in config["attributes"]:
        other = seen.setdefault(str(name).casefold(), name)
        where = "extra_attributes" if name in extra else "attributes"
        built_in = "the built-in attribute" if other in PAPER_ATTRIBUTES else "the attribute"
        _require(
            other == name,
            f"{where}.{name}: {name!r} differs from {built_in} {other!r} only by case; write {other!r} "
            "for that attribute, or give yours another name",
        )


def check_datasets(config: Config) -> None:
    """Each dataset's source has the keys it needs, and local files exist."""
    for name, spec in config["datasets"].items():
        source_of(spec).check(f"datasets.{name}", spec)


def check_extra_attributes(config: Config) -> None:
    """``extra_attributes`` join ``attributes`` (the paper's 15 unless set); a name already there with another
    description is refused (set it in ``attributes`` to change a description). Checking again is a no-op."""
    for name, description in (config.get("extra_attributes") or {}).items():
        given = config["attributes"].get(name)
        _require(
            given in (None, description),
            f"extra_attributes.{name}: already an attribute ({given!r}); extra_attributes adds new ones, "
            "attributes replaces the list",
        )
        config["attributes"][name] = description


def check_sample(design: Design) -> None:
    """Seeds that would all draw the same comparisons (``n_per_seed`` at or above the rows of a local
    dataset) are refused; the sampling job checks the usable rows of every source again."""
    for name, dataset in design.datasets.items():
        if len(dataset.seeds) < 2:
            continue
        rows = source_of(dataset.spec).rows(dataset.spec)
        if rows is not None:
            identical = identical_seeds(name, rows, dataset.n_per_seed, dataset.seeds, "rows")
            _require(identical is None, str(identical))


def check_reward_models(config: Config) -> None:
    """Each RM spec uses only its own backend's plugin keys and passes its backend's own check; a planted RM's
    base is another RM with its own backend."""
    rms = config["reward_models"]
    plugin_keys = plugin_spec_keys()
    for name, spec in rms.items():
        for key in spec:
            owners = plugin_keys.get(key)
            _require(
                owners is None or spec["backend"] in owners,
                f"reward_models.{name}.{key}: a spec key of backend {' or '.join(owners or [])}, "
                f"not of {spec['backend']!r}",
            )
        backend = backend_of(spec)
        backend.check_spec(name, spec)
        if getattr(backend, "wraps_base", False):
            base = spec["base"]
            _known([base], rms, f"reward_models.{name}.base", "a key of reward_models")
            _require(base != name, f"reward_models.{name}.base: an RM cannot be planted into itself")
            _require(
                not getattr(backend_of(rms[base]), "wraps_base", False),
                f"reward_models.{name}.base: {base!r} is itself planted; plant into an RM with its own "
                "backend",
            )


def check_designs(config: Config) -> None:
    """Each dataset's RMs, shared RMs and methods are configured; shared RMs are among its RMs."""
    for name, spec in config["datasets"].items():
        key = f"datasets.{name}"
        _known(
            spec.get("reward_models") or [],
            config["reward_models"],
            f"{key}.reward_models",
            "a key of reward_models",
        )
        _known(
            spec.get("methods") or [],
            config["perturb"]["methods"],
            f"{key}.methods",
            "one of perturb.methods",
        )
        shared = spec.get("shared_rms") or config["perturb"].get("shared_rms") or []
        where = f"{key}.shared_rms" if spec.get("shared_rms") else "perturb.shared_rms"
        rms = spec.get("reward_models") or config["reward_models"]
        _known(shared, rms, where, f"an RM of dataset {name!r}")
        orientation = spec.get("orientation") or config["perturb"].get("orientation", "per_rm")
        _require(
            "foreign_rm_orientation" not in spec or orientation == "shared",
            f"{key}.foreign_rm_orientation: only in shared orientation (the dataset is {orientation})",
        )


def check_perturb(config: Config, files: Sequence[str | Path] = ()) -> None:
    """Methods are registered or variants (an unknown one named with its file, line and the closest name);
    shared RMs exist; the perturbation file exists."""
    perturb = config["perturb"]
    variants = perturb.get("variants") or {}
    for name in variants:
        _require(
            name not in methods.names(),
            f"perturb.variants.{name}: a variant cannot take the name of a registered method",
        )
    allowed = [*methods.names(), *variants]
    for i, name in enumerate(perturb["methods"]):
        _require(
            name in allowed,
            unknown_value(["perturb", "methods", i], name, allowed, "a method or variant", files),
        )
    _known(
        perturb.get("shared_rms") or [],
        config["reward_models"],
        "perturb.shared_rms",
        "a key of reward_models",
    )
    _check_variant_settings(config)
    for name in perturb["methods"]:
        base = registered_method(perturb, name)
        key = f"perturb.variants.{name}" if base != name else f"perturb.{name}"
        method_entry(perturb, name).check_settings(key, method_settings(perturb, name))
        _check_editable(config, name, key)


def _check_editable(config: Config, name: str, key: str) -> None:
    """An attribute-conditioned method with a fixed list of attributes it can edit (the rules method's
    table) edits every configured attribute."""
    entry = method_entry(config["perturb"], name)
    if not entry.attribute_conditioned or entry.editable_attributes is None:
        return
    editable = entry.editable_attributes(method_settings(config["perturb"], name))
    missing = [attribute for attribute in config["attributes"] if attribute not in editable]
    _require(
        not missing,
        f"attributes: perturbation method {name!r} has no editor for {missing}; add one under {key}.editors "
        "(docs/extending.md, Attributes of your own), or use an LLM method such as two_step, which edits any",
    )


def _check_variant_settings(config: Config) -> None:
    """A variant's settings are valid settings of its method (the schema of ``perturb.<method>``)."""
    properties = load_schema()["properties"]["perturb"]["properties"]
    for name, variant in (config["perturb"].get("variants") or {}).items():
        settings = {k: v for k, v in variant.items() if k != "method"}
        try:
            jsonschema.validate(settings, properties.get(variant["method"], {"type": "object"}))
        except jsonschema.ValidationError as err:
            where = ".".join(str(p) for p in err.absolute_path)
            raise ConfigError(
                f"perturb.variants.{name}{'.' + where if where else ''}: {err.message}"
            ) from None


def check_llm(design: Design) -> None:
    """An LLM stage is configured with a model, a known discovery RM and prompt templates that exist and use
    only their fields."""
    if not design.llm_needed:
        return
    engines = [f"discovery engine {e!r}" for e in design.discovery_llm_engines]
    why = ", ".join([*design.llm_methods, *engines]) or "perturb.discover"
    llm = design.config.get("llm")
    _require(
        bool(llm and llm.get("model")), f"llm.model (and the rest of the `llm` section) is required for {why}"
    )
    rm = design.discovery.get("rm")
    if design.discovery_enabled and rm is not None:
        for name, dataset in design.datasets.items():
            _known([rm], dataset.orienters, "perturb.discover.rm", f"an orienter of {name!r}")
    for method in design.llm_methods:
        _check_templates(f"perturb.{method}", design.method(method).prompt_files)
    for method in dict.fromkeys(m for _, m in design.effect_pairs if design.method(m).uses_llm):
        _check_templates(f"perturb.{method}", design.method(method).effect_prompt_files)
    if design.discovery_enabled:
        _check_templates("perturb.discover", lambda: {"prompt": design.discovery_prompt_file()})
    for engine in design.discovery_llm_engines:
        inputs = partial(discovery_engines.get(engine).prompt_inputs, design.bias_discovery.get(engine) or {})
        _check_templates(f"discovery.{engine}", inputs)


def _check_templates(key: str, inputs: Callable[[], Mapping[str, str]]) -> None:
    """The prompt template files of ``inputs`` (a ``prompt_inputs``) exist and use only their template's
    fields (the error names the file, the unknown fields and the known ones)."""
    for name, (path, templates) in resolved_templates(inputs).items():
        _require(Path(path).is_file(), f"{key}: prompt template {name!r} file {path!r} does not exist")
        for template in sorted(templates):
            try:
                load_template(template, path)
            except TemplateError as err:
                raise ConfigError(f"{key}: prompt template {name!r}: {err}") from None


def check_llm_budget(design: Design) -> None:
    """A spending cap in USD has prices to count it with, in every LLM section that will run."""
    for key, llm in design.llm_sections.items():
        unpriced = unpriced_cost_cap(dict(llm))
        _require(unpriced is None, f"{key}.{unpriced}")


def check_analysis(config: Config) -> None:
    """Analysed methods, example RMs and pairs exist; probe patterns compile."""
    analysis = section(config, "analysis")
    rms = config["reward_models"]
    _known(
        analysis.get("methods") or [],
        config["perturb"]["methods"],
        "analysis.methods",
        "one of perturb.methods",
    )
    for name in analysis.get("methods") or []:
        _require(
            bool(method_entry(config["perturb"], name).attribute_conditioned),
            f"analysis.methods: {name!r} does not perturb along attributes, so every attribute analysis "
            "of it would be empty; name attribute-conditioned methods (or null for all of them)",
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
            probe.check()
    except AnalysisError as err:
        raise ConfigError(str(err)) from None


def check_effects(design: Design) -> None:
    """References and expectations name what they must; the estimators and methods exist and can edit."""
    rms = design.reward_models
    for rm in rms:
        _check_reference(design, rm)
        expect = rms[rm].get("expect")
        if expect is not None:
            allowed = [*design.config["attributes"], LENGTH]
            _known(expect["attributes"], allowed, f"reward_models.{rm}.expect.attributes", "an attribute or")
            _require(
                not expect["attributes"] or "sign" in expect,
                f"reward_models.{rm}.expect.sign (+1 or -1) is required with attributes",
            )
            if isinstance(expect.get("sign"), dict):
                _require(
                    set(expect["sign"]) == set(expect["attributes"]),
                    f"reward_models.{rm}.expect.sign: one sign per expected attribute "
                    f"({sorted(expect['attributes'])}), got {sorted(expect['sign'])}",
                )
    effects = design.effects
    known = estimators.names()
    _known(effects.get("estimators") or [], known, "analysis.effects.estimators", "a registered estimator")
    _known([effects["primary"]], reported_estimators(effects), "analysis.effects.primary", "an estimator of")
    if not effects["rewrite_of_rewrite"]:
        needy = [name for name in effects.get("estimators") or [] if estimators.get(name).needs_round_two]
        _require(
            not needy,
            f"analysis.effects.estimators: {needy} read the edits of edits, which rewrite_of_rewrite: false "
            "does not make",
        )
    for name in effects.get("methods") or []:
        _require(
            name in design.methods or (_registered(name) and not design.method(name).uses_llm),
            f"analysis.effects.methods: {name!r} is neither a method of perturb.methods "
            f"{sorted(design.methods)} nor an offline registered method (such as rules)",
        )
        _require(
            bool(design.method(name).entry.effect_editor),
            f"analysis.effects.methods: {name!r} has no editor for attribute effects (rules and two_step do)",
        )
    undeclared = design.methods_without_effect_editor
    _require(
        not undeclared,
        f"analysis.effects: perturbation method(s) {undeclared} declare no effect_editor, so the attribute "
        "effects cannot edit with them; declare one (docs/extending.md, Attributes of your own), or name the "
        "methods that make the effects' edits in analysis.effects.methods (e.g. [rules]), or set "
        "analysis.effects.enabled: false",
    )


def _registered(name: str) -> bool:
    """Whether ``name`` is a registered perturbation method."""
    return name in methods.names()


def _check_reference(design: Design, rm: str) -> None:
    reference = design.reference_rm(rm)
    if reference is None:
        return
    own = "reference" if "reference" in design.reward_models[rm] else "base"
    key = f"reward_models.{rm}.{own}"
    _known([reference], design.reward_models, key, "a key of reward_models")
    _require(reference != rm, f"{key}: an RM cannot be its own reference")
    for name, dataset in design.datasets.items():
        _require(
            rm not in dataset.rms or reference in dataset.rms or not design.effect_methods(name),
            f"{key}: {reference!r} (the reference of {rm!r}'s attribute effects) must score dataset {name!r} "
            f"too: add it to datasets.{name}.reward_models, or set reward_models.{rm}.reference: null",
        )


def check_reproduce(design: Design) -> None:
    """The ``reproduce`` mapping names configured RMs, datasets of the right stage, methods and a probe."""
    config = design.config
    reproduce = config.get("reproduce")
    if not reproduce:
        return
    for key, names in paper_names(load_reference(reproduce["paper"])).items():
        _known(reproduce[key], names, f"reproduce.{key}", f"one of the paper's names for {key}")
    _known(
        reproduce["reward_models"].values(),
        config["reward_models"],
        "reproduce.reward_models",
        "a key of reward_models",
    )
    _known(
        reproduce["methods"].values(),
        config["perturb"]["methods"],
        "reproduce.methods",
        "one of perturb.methods",
    )
    for block, stages in reproduce["datasets"].items():
        for stage, dataset in stages.items():
            _known(
                [dataset],
                design.stage_datasets(stage),
                f"reproduce.datasets.{block}.{stage}",
                f"a dataset with stage {stage!r}",
            )
    probe = reproduce.get("probe")
    if probe is not None:
        _known(
            [probe],
            section(config, "analysis").get("probes") or {},
            "reproduce.probe",
            "a key of analysis.probes",
        )


def check_rewards_example(design: Design) -> None:
    """``analysis.rewards_example`` names an analysis dataset, an analysed method of it and its RM."""
    settings = design.analysis.get("rewards_example") or {}
    if not settings.get("enabled"):
        return
    key = "analysis.rewards_example"
    analysed = design.stage_datasets("analysis")
    _require(bool(analysed), f"{key}: no dataset has the analysis stage")
    dataset = settings.get("dataset") or analysed[0]
    _known([dataset], analysed, f"{key}.dataset", "a dataset with the analysis stage")
    _known(
        [settings["method"]] if settings.get("method") else [],
        design.dataset_analysed_methods(dataset),
        f"{key}.method",
        f"an analysed method of {dataset!r}",
    )
    _require(bool(design.dataset_analysed_methods(dataset)), f"{key}: {dataset!r} has no analysed method")
    if settings.get("rm"):
        _known([settings["rm"]], design.dataset(dataset).rms, f"{key}.rm", f"an RM of {dataset!r}")


def check_discovery(config: Config) -> None:
    """The offline engine's probes are registered (``discovery.offline.probes``)."""
    chosen = (section(config, "discovery").get("offline") or {}).get("probes") or []
    _known(chosen, probes.names(), "discovery.offline.probes", "a registered probe")


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
    for pair in tokens["analysis"]["framing_pairs"] or []:  # unset: derived from the prompts (Design)
        _known(pair, prompts, "tokens.analysis.framing_pairs", "a key of tokens.prompts")
    _known(tokens["gcg"].get("prompts") or [], prompts, "tokens.gcg.prompts", "a key of tokens.prompts")
    vocabulary = tokens["vocabulary"]
    if vocabulary["mode"] == "list":
        list_path = vocabulary.get("list_path")
        _require(
            bool(list_path) and Path(list_path).is_file(),
            f"tokens.vocabulary.list_path: {list_path!r} is not a file",
        )
    date = tokens["scan"].get("template_date")
    _require(date is None or _is_date(date), f"tokens.scan.template_date: {date!r} is not a date YYYY-MM-DD")
    human = tokens.get("human_ranking")
    if human:
        _require(
            Path(human["path"]).is_file(), f"tokens.human_ranking.path: file {human['path']!r} does not exist"
        )
        try:  # its columns, ranks and items, before any job starts
            token_stats.read_human_ranking(human["path"])
        except token_stats.AnalysisError as err:
            raise ConfigError(str(err)) from None


def _is_date(value: object) -> bool:
    try:
        datetime.date.fromisoformat(str(value))
    except ValueError:
        return False
    return True


def check_token_scans(design: Design) -> None:
    """Official scans and comparisons need transformers RMs; the files the paper's route reads exist."""
    tokens = design.tokens.settings
    if not design.tokens.enabled:
        return
    official = tokens.get("official_scores")
    if official:
        _require(
            Path(official["path"]).is_dir(),
            f"tokens.official_scores.path: {official['path']!r} is not a directory",
        )
    imported = design.tokens.imported
    if design.tokens.scan_mode == "official":
        for rm in design.tokens.rms:
            exact = design.rm_backend(rm).exact_token_ids
            _require(
                exact or rm in imported,
                f"tokens.scan.mode: official scans need backend transformers; reward_models.{rm} has "
                f"{design.reward_models[rm]['backend']!r} (and no file in tokens.official_scores)",
            )
    if tokens["scan"].get("compare"):
        _require(
            bool(design.tokens.compared_rms),
            "tokens.scan.compare: no scanned RM has backend transformers (the official route needs one)",
        )
    frequency_list = tokens["paper_analysis"].get("frequency_list")
    if frequency_list:
        _require(
            Path(frequency_list).is_file(),
            f"tokens.paper_analysis.frequency_list: {frequency_list!r} is not a file",
        )


def check_hub(design: Design) -> None:
    """Every model source is a local path or a hub id, and no two keys map to one marker."""
    hub_models(design)


def check_sections(config: Config, files: Sequence[str | Path] = ()) -> None:
    """Run every section's checks, in config order; fill ``attributes`` with the paper's 15 when unset, and
    add ``extra_attributes`` to them.
    The checks of names come first; the checks of what the config means then ask its design. ``files``, the
    YAML files the config was read from, let an error name the line of a key."""
    config.setdefault("attributes", dict(PAPER_ATTRIBUTES))
    check_extra_attributes(config)
    check_attribute_names(config)
    check_datasets(config)
    check_reward_models(config)
    check_designs(config)
    check_perturb(config, files)
    check_analysis(config)
    check_discovery(config)
    check_tokens(config)
    design = Design.from_config(config)
    for check_design in (
        check_sample,
        check_llm,
        check_llm_budget,
        check_rewards_example,
        check_reproduce,
        check_token_scans,
        check_hub,
        check_effects,
    ):
        check_design(design)
