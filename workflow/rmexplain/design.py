"""What a checked config means, built once: the typed design that rules, the plan, hub downloads, job
resources and the CLI query.

``Design.from_config(config)`` interprets a config that passed the schema (defaults filled) and the name
checks of ``rmexplain.config``: which datasets run with which RMs, orienters, methods and stages; which
perturbation methods call an LLM and with which prompt files; what the analyses, the token part and the
report show. Nothing else in the project reads these decisions from the raw config. File paths are
``rmexplain.paths`` (patterns) and ``rmexplain.targets`` (the file lists of a design).

A dataset entry may carry its own design (paper §3's per-RM sets for the evaluation tables, §4's shared set
for the analyses): its seeds, orientation, shared RMs, RMs, methods and stages; unset keys fall back to the
global settings. Both designs then live side by side under their dataset names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from itertools import combinations
from pathlib import Path
from typing import Any

from rmexplain import paths
from rmexplain.data.sources import source_of
from rmexplain.discovery_engines import engines
from rmexplain.explanations.categorise import AGREED
from rmexplain.figures import FigureOptions
from rmexplain.llm.base import backend_of as llm_backend_of
from rmexplain.llm.prompts import template_path
from rmexplain.perturb.base import method_entry, method_settings, registered_method
from rmexplain.score.base import backend_of
from rmexplain.settings import Config, schema_defaults, section

ROUNDS = "rounds"  # discovery.<engine>.rounds: how many rounds the engine runs

SHARED_ORIENTER = "shared"  # the orienter of a dataset whose perturbations all RMs share (paper §4)
# what a dataset feeds: the evaluation tables, the attribute analyses, bias discovery
STAGES = ("evaluation", "analysis", "discovery")
PERTURBED_STAGES = ("evaluation", "analysis")  # a dataset that feeds neither is not perturbed
SIDE_LABELS = {"plus": "Yplus", "minus": "Yminus"}  # example slot names of a pair's sides
PAPER_FRAMING_PAIR = ("best", "worst")  # the token paper's Fig. 4: the framing pair where both prompts exist
REPORT_SECTIONS = (
    "Findings",
    "Reproduction",
    "Evaluation",
    "Analyses",
    "Representative examples",
    "Attribute discovery",
    "Optimal and pessimal tokens",
    "Diagnostics",
)


@dataclass(frozen=True)
class Method:
    """A configured perturbation method: a registered method or a ``perturb.variants`` entry of one."""

    name: str
    registered: str  # the registered method behind it (itself, or a variant's ``method``)
    settings: Mapping[str, Any]  # ``perturb.<method>`` with a variant's own keys over it
    entry: Any  # the registry entry, with its declarations

    @property
    def uses_llm(self) -> bool:
        return bool(self.entry.uses_llm)

    @property
    def attribute_conditioned(self) -> bool:
        return bool(self.entry.attribute_conditioned)

    @property
    def is_variant(self) -> bool:
        return self.registered != self.name

    def prompt_files(self) -> dict[str, str]:
        """Prompt-template files its jobs read, by rule-input name (what the method declares)."""
        return dict(self.entry.prompt_inputs(self.settings))

    def effect_prompt_files(self) -> dict[str, str]:
        """Prompt-template files its attribute-effect edits read, by rule-input name."""
        return dict(self.entry.effect_prompt_inputs(self.settings))


@dataclass(frozen=True)
class Dataset:
    """One dataset entry with its own design resolved against the global settings."""

    name: str
    spec: Mapping[str, Any]
    seeds: tuple[int, ...]
    n_per_seed: int
    rms: tuple[str, ...]
    methods: tuple[str, ...]
    orientation: str  # ``per_rm`` (paper §3) or ``shared`` (§4)
    shared_rms: tuple[str, ...]
    stages: tuple[str, ...]
    foreign_rm_orientation: str = AGREED  # how an RM outside ``shared_rms`` is explained by the shared set

    @property
    def foreign_rms(self) -> tuple[str, ...]:
        """RMs explained with a shared perturbation set whose agreement filter they are not part of (App. G's
        RMs on the harmless shared set); none in ``per_rm`` orientation."""
        if self.orientation != "shared":
            return ()
        return tuple(rm for rm in self.rms if rm not in self.shared_rms)

    def explanation_orientation(self, rm: str) -> str:
        """Whose y+ RM ``rm``'s explanations take: ``agreed`` (the preference its perturbation set was built
        against; a comparison the RM orients the other way is skipped) or ``own`` (the RM's own preference).
        The two coincide for every RM but a foreign one, whose ``foreign_rm_orientation`` decides."""
        return self.foreign_rm_orientation if rm in self.foreign_rms else AGREED

    @property
    def orienters(self) -> tuple[str, ...]:
        """Distinct perturbation sets generated per method."""
        return (SHARED_ORIENTER,) if self.orientation == "shared" else self.rms

    def orienter_for(self, rm: str) -> str:
        """Which perturbation set RM ``rm`` is explained with."""
        return SHARED_ORIENTER if self.orientation == "shared" else rm

    def orienting_rms(self, orienter: str) -> tuple[str, ...]:
        """RMs whose original scores orient the perturbation set ``orienter``."""
        return self.shared_rms if orienter == SHARED_ORIENTER else (orienter,)

    @property
    def source_files(self) -> list[str]:
        """Local files the dataset is read from (bundled part or user file); hub datasets have none."""
        return source_of(self.spec).files(self.spec)


@dataclass(frozen=True)
class Tokens:
    """The token part: which RMs scan which prompts, in which mode, and what is analysed."""

    enabled: bool
    settings: Mapping[str, Any]  # the ``tokens`` section, defaults filled
    rms: tuple[str, ...]
    imported: Mapping[str, str]  # RM -> its published scan (``tokens.official_scores``)
    compared_rms: tuple[str, ...]  # scanned in both modes (``tokens.scan.compare``)
    gcg_rms: tuple[str, ...]

    @property
    def prompts(self) -> tuple[str, ...]:
        return tuple(self.settings.get("prompts") or ())

    @property
    def scan_mode(self) -> str:
        """Which scans the analyses read: ``exact`` or ``official`` (``tokens.scan.mode``)."""
        return self.settings["scan"].get("mode", "exact")

    @property
    def gcg_prompts(self) -> tuple[str, ...]:
        return tuple(self.settings["gcg"].get("prompts") or self.prompts)

    @property
    def gcg_objectives(self) -> tuple[str, ...]:
        return tuple(self.settings["gcg"]["objectives"])

    @property
    def paper_analysis(self) -> bool:
        return bool(self.settings["paper_analysis"].get("enabled"))

    @property
    def human_ranking(self) -> Mapping[str, Any] | None:
        return self.settings.get("human_ranking") or None

    @property
    def framing_pairs(self) -> list[tuple[str, str]]:
        """``tokens.analysis.framing_pairs``; unset, the paper's Fig. 4 pair (best, worst) where both prompt
        ids are among ``tokens.prompts``, else none."""
        pairs = self.settings["analysis"].get("framing_pairs")
        if pairs is None:
            pairs = [PAPER_FRAMING_PAIR] if set(PAPER_FRAMING_PAIR) <= set(self.prompts) else []
        return [(a, b) for a, b in pairs]

    @property
    def framing_names(self) -> list[str]:
        """``framing_<a>_<b>`` for each configured pair."""
        return [f"framing_{a}_{b}" for a, b in self.framing_pairs]

    @property
    def elo_prompts(self) -> list[str]:
        """Bundled EloEverything prompts whose Fig. 5 tables are written (``tokens.elo``)."""
        elo = self.settings.get("elo") or {}
        return list(elo.get("prompts") or []) if elo.get("enabled") else []


class Design:
    """The interpreted config. Build it with :meth:`from_config` from a checked config."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.reward_models: dict[str, Mapping[str, Any]] = dict(section(config, "reward_models"))
        self.methods: dict[str, Method] = {
            name: self._method(name) for name in section(config, "perturb").get("methods") or []
        }
        self.datasets: dict[str, Dataset] = {
            name: self._dataset(name, spec) for name, spec in section(config, "datasets").items()
        }

    @classmethod
    def from_config(cls, config: Config) -> Design:
        """The design of a config that passed ``rmexplain.config.check`` (or at least its schema)."""
        return cls(config)

    def _method(self, name: str) -> Method:
        perturb = section(self.config, "perturb")
        entry = method_entry(perturb, name)
        return Method(name, registered_method(perturb, name), method_settings(perturb, name), entry)

    def _dataset(self, name: str, spec: Mapping[str, Any]) -> Dataset:
        config, perturb = self.config, section(self.config, "perturb")
        rms = tuple(spec.get("reward_models") or self.reward_models)
        return Dataset(
            name=name,
            spec=spec,
            seeds=tuple(spec.get("seeds") or config["sample"]["seeds"]),
            n_per_seed=int(spec.get("n_per_seed", config["sample"]["n_per_seed"])),
            rms=rms,
            methods=tuple(spec.get("methods") or self.methods) if self._perturbed(spec) else (),
            orientation=spec.get("orientation") or perturb.get("orientation", "per_rm"),
            shared_rms=tuple(spec.get("shared_rms") or perturb.get("shared_rms") or rms),
            stages=tuple(spec.get("stages", STAGES)),
            foreign_rm_orientation=spec.get("foreign_rm_orientation", AGREED),
        )

    @staticmethod
    def _perturbed(spec: Mapping[str, Any]) -> bool:
        return bool(set(spec.get("stages", STAGES)) & set(PERTURBED_STAGES))

    @cached_property
    def figures(self) -> FigureOptions:
        return FigureOptions.from_config(section(self.config, "figures"))

    # ── datasets, RMs, methods ───────────────────────────────────────────────────────────────────────────
    def dataset(self, name: str) -> Dataset:
        return self.datasets[name]

    def stage_datasets(self, stage: str) -> list[str]:
        """Datasets that feed ``stage`` (``evaluation``, ``analysis`` or ``discovery``;
        ``datasets.<name>.stages``)."""
        return [name for name, d in self.datasets.items() if stage in d.stages]

    def rm_backend(self, rm: str) -> Any:
        """The registered backend class of RM ``rm``."""
        return backend_of(self.reward_models[rm])

    def scoring_rm(self, rm: str) -> str:
        """The RM whose backend runs ``rm``'s scoring jobs: its base for a backend that wraps one (a planted
        RM: the base's env, GPUs, downloads, files and text embeddings), else ``rm`` itself."""
        if getattr(self.rm_backend(rm), "wraps_base", False):
            return str(self.reward_models[rm]["base"])
        return rm

    def scoring_spec(self, rm: str) -> dict[str, Any]:
        """The spec ``rm``'s scoring jobs get: its own, with its base's as ``base_spec`` if it wraps one."""
        spec = dict(self.reward_models[rm])
        base = self.scoring_rm(rm)
        if base != rm:
            spec["base_spec"] = dict(self.reward_models[base])
        return spec

    def rm_artifact_files(self, rm: str) -> dict[str, str]:
        """Files from earlier rules that RM ``rm``'s backend needs (its declared ``artifacts``); a planted RM
        needs its base's, and the base's reward scale."""
        runs = self.scoring_rm(rm)
        files = paths.rm_artifact_files(self.rm_backend(runs).artifacts, runs)
        if runs != rm:
            files["base_scale"] = paths.fmt(paths.REWARD_SCALE, rm=runs)
        return files

    def reference_rm(self, rm: str) -> str | None:
        """The RM whose reward changes ``rm``'s attribute effects subtract: ``reference``, else a planted
        RM's base, else none."""
        spec = self.reward_models[rm]
        if "reference" in spec:
            return spec["reference"]
        base = self.scoring_rm(rm)
        return base if base != rm else None

    @cached_property
    def planted_bases(self) -> list[str]:
        """RMs some planted RM is built on (each gets a ``reward_scale``), in config order."""
        bases = {self.scoring_rm(rm) for rm in self.reward_models if self.scoring_rm(rm) != rm}
        return [rm for rm in self.reward_models if rm in bases]

    @cached_property
    def expectations(self) -> dict[str, Mapping[str, Any]]:
        """RM -> its ``expect`` (what a planted bias is known to reward), for the RMs that declare one."""
        return {rm: spec["expect"] for rm, spec in self.reward_models.items() if "expect" in spec}

    @property
    def encoder(self) -> dict[str, Any]:
        """The sentence encoder's settings (``evaluate``: ``embedding_model``, ``batch_size``, ``device``)."""
        evaluate = {**schema_defaults("evaluate"), **section(self.config, "evaluate")}
        return {k: evaluate.get(k) for k in ("embedding_model", "batch_size", "device")}

    @property
    def embedding_model(self) -> str:
        """The sentence encoder of the semantic metrics (``evaluate.embedding_model``)."""
        return str({**schema_defaults("evaluate"), **section(self.config, "evaluate")}["embedding_model"])

    def method(self, name: str) -> Method:
        """A configured method, or any registered method or variant by name."""
        return self.methods.get(name) or self._method(name)

    @cached_property
    def llm_methods(self) -> list[str]:
        """Configured perturbation methods that call the LLM."""
        return [name for name, m in self.methods.items() if m.uses_llm]

    def datasets_of_method(self, method: str) -> list[str]:
        """Datasets on which ``method`` runs."""
        return [name for name, d in self.datasets.items() if method in d.methods]

    def shared_request_source(self, dataset: str, method: str) -> str | None:
        """For an LLM variant whose method also runs on ``dataset``: that method, whose job's cached requests
        (two_step's step 1) the variant reuses, so it waits for it. None otherwise."""
        entry = self.methods[method]
        if not entry.is_variant or not entry.uses_llm:
            return None
        return entry.registered if entry.registered in self.datasets[dataset].methods else None

    # ── the LLM ──────────────────────────────────────────────────────────────────────────────────────────
    @property
    def discovery(self) -> Mapping[str, Any]:
        return section(self.config, "perturb").get("discover") or {}

    @property
    def discovery_enabled(self) -> bool:
        """Whether attribute discovery runs (``perturb.discover.enabled``)."""
        return bool(self.discovery.get("enabled", False))

    def discovery_orienter(self, dataset: str) -> str:
        """Whose preference and scores go into the discovery prompts on ``dataset``: ``perturb.discover.rm``,
        else the dataset's first orienter (its first RM, or ``shared``)."""
        return self.discovery.get("rm") or self.datasets[dataset].orienters[0]

    def discovery_prompt_file(self) -> str:
        """The App. A template file the discovery jobs read."""

        return str(template_path("discover", self.discovery.get("prompt")))

    @property
    def llm_needed(self) -> bool:
        """Whether any perturbation, attribute-discovery or bias-discovery job calls the LLM."""
        return bool(self.llm_methods) or self.discovery_enabled or bool(self.discovery_llm_engines)

    @property
    def judge(self) -> Mapping[str, Any]:
        return section(self.config, "analysis").get("judge") or {}

    @property
    def judge_enabled(self) -> bool:
        """Whether the optional LLM attribute-change judge runs."""
        return bool(self.judge.get("enabled", False))

    @property
    def llm(self) -> Config:
        return self.config.get("llm") or {}

    @property
    def judge_llm(self) -> tuple[str, Config]:
        """The judge's config key and effective LLM section (``llm`` with ``analysis.judge.llm`` over it)."""
        overrides = self.judge.get("llm") or {}
        return ("analysis.judge.llm" if overrides else "llm"), {**self.llm, **overrides}

    @cached_property
    def llm_sections(self) -> dict[str, Config]:
        """Config key -> effective ``llm`` section, for the jobs that will run: perturbation and discovery
        (``llm``), and the analysis judge."""
        sections = {"llm": self.llm} if self.llm_needed else {}
        if self.judge_enabled:
            key, llm = self.judge_llm
            sections[key] = llm
        for engine in self.discovery_llm_engines:  # an engine's own sections (the llm engine's judge)
            settings = self.bias_discovery.get(engine) or {}
            sections.update(engines.get(engine).llm_sections(settings, self.llm))
        return sections

    def llm_backend(self, llm: Config) -> Any:
        """The registered backend class of an ``llm`` section (default ``openai``)."""
        return llm_backend_of(dict(llm))

    # ── analyses ─────────────────────────────────────────────────────────────────────────────────────────
    @property
    def analysis(self) -> Config:
        return section(self.config, "analysis")

    @cached_property
    def analysed_methods(self) -> list[str]:
        """Methods the attribute analyses run on (default: every attribute-conditioned one)."""
        chosen = self.analysis.get("methods")
        if chosen:
            return list(chosen)
        return [name for name, m in self.methods.items() if m.attribute_conditioned]

    def dataset_analysed_methods(self, dataset: str) -> list[str]:
        """Analysed methods that run on ``dataset``."""
        return [m for m in self.analysed_methods if m in self.datasets[dataset].methods]

    @cached_property
    def analysed_pairs(self) -> list[tuple[str, str]]:
        """Every analysed (dataset, method): analysis datasets × their analysed methods."""
        return [(d, m) for d in self.stage_datasets("analysis") for m in self.dataset_analysed_methods(d)]

    @property
    def effects(self) -> Config:
        """``analysis.effects`` with its defaults."""
        return {**schema_defaults("analysis", "effects"), **(self.analysis.get("effects") or {})}

    def effect_methods(self, dataset: str) -> list[str]:
        """Methods whose editor makes the attribute effects' edits on analysis dataset ``dataset``: those
        listed in ``analysis.effects.methods`` (on every analysis dataset: their edits need none of the
        dataset's perturbations), else every analysed method of the dataset with an editor that calls no
        LLM."""
        if not self.effects.get("enabled") or "analysis" not in self.dataset(dataset).stages:
            return []
        chosen = self.effects.get("methods")
        if chosen:
            return [m for m in chosen if self.method(m).entry.effect_editor is not None]
        editable = [m for m in self.dataset_analysed_methods(dataset) if self.method(m).entry.effect_editor]
        return [m for m in editable if not self.method(m).uses_llm]

    @cached_property
    def methods_without_effect_editor(self) -> list[str]:
        """Analysed methods that would get attribute effects by default (``analysis.effects.methods`` unset)
        but declare no ``effect_editor`` (``False``, a method that cannot edit by design, is not one)."""
        if not self.effects.get("enabled") or self.effects.get("methods"):
            return []
        analysed = {m for d in self.stage_datasets("analysis") for m in self.dataset_analysed_methods(d)}
        return [
            m for m in self.analysed_methods if m in analysed and self.method(m).entry.effect_editor is None
        ]

    @cached_property
    def effect_pairs(self) -> list[tuple[str, str]]:
        """Every (dataset, method) with attribute effects."""
        return [(d, m) for d in self.datasets for m in self.effect_methods(d)]

    def effect_datasets(self) -> list[str]:
        """Datasets with attribute effects."""
        return list(dict.fromkeys(d for d, _ in self.effect_pairs))

    @property
    def findings_enabled(self) -> bool:
        """Whether the findings run: wherever attribute effects or bias discovery run."""
        return bool(self.effect_pairs or self.discovery_datasets())

    # ── bias discovery ───────────────────────────────────────────────────────────────────────────────────
    @property
    def bias_discovery(self) -> Config:
        """The ``discovery`` section with its defaults (bias discovery; not ``perturb.discover``)."""
        return {**schema_defaults("discovery"), **section(self.config, "discovery")}

    def discovery_datasets(self) -> list[str]:
        """Datasets whose biases are discovered (stage ``discovery``)."""
        return self.stage_datasets("discovery")

    @property
    def discovery_engines(self) -> list[str]:
        return list(self.bias_discovery["engines"])

    def discovery_round_settings(self, engine: str, round_: int) -> dict[str, Any]:
        """What round ``round_`` of ``engine`` reads: ``discovery.<engine>``, ``responses_per_feature`` and
        ``min_per_direction``; a round after the first also ``fdr`` and the sentence ``encoder`` (what is
        significant before it, and how words relate: the offline engine's merged word classes). The rest of
        the section reaches only the rules after it. ``rounds`` reaches no round (it says how many there
        are: adding one reruns none before it), and round 1 leaves out the keys only later rounds read (the
        engine's ``later_round_settings``: editing them reruns those rounds alone)."""
        settings = self.bias_discovery
        later = {"fdr": settings["fdr"], "encoder": self.encoder} if round_ > 1 else {}
        left_out = {ROUNDS, *(engines.get(engine).later_round_settings if round_ == 1 else ())}
        section = {key: value for key, value in (settings.get(engine) or {}).items() if key not in left_out}
        return {
            engine: section,
            **{k: settings[k] for k in ("responses_per_feature", "min_per_direction")},
            **later,
        }

    @cached_property
    def discovery_llm_engines(self) -> list[str]:
        """Configured discovery engines that call the LLM (none without a discovery dataset)."""
        if not self.discovery_datasets():
            return []
        return [engine for engine in self.discovery_engines if engines.get(engine).uses_llm]

    def discovery_rounds(self, engine: str) -> list[int]:
        """The rounds engine ``engine`` runs: 1 … ``discovery.<engine>.rounds`` (default 1)."""
        return list(range(1, int((self.bias_discovery.get(engine) or {}).get(ROUNDS, 1)) + 1))

    @property
    def probes_enabled(self) -> bool:
        """Whether any probe phrase is configured."""
        return bool(self.analysis.get("probes"))

    def example_rms(self, dataset: str) -> list[str]:
        """RMs of ``dataset`` that get a one-RM representative example (default: all)."""
        chosen = self.analysis.get("examples", {}).get("rms")
        rms = self.datasets[dataset].rms
        return [rm for rm in chosen if rm in rms] if chosen is not None else list(rms)

    def example_pairs(self, dataset: str) -> list[tuple[str, str]]:
        """RM pairs of ``dataset`` that get a two-RM representative example (default: every pair)."""
        pairs = self.analysis.get("examples", {}).get("pairs")
        rms = self.datasets[dataset].rms
        if pairs is not None:
            return [(a, b) for a, b in pairs if a in rms and b in rms]
        return list(combinations(rms, 2))

    def example_slots(self, dataset: str) -> dict[str, dict[str, list]]:
        """Every example slot of ``dataset`` (one-RM examples first, then each pair's Y+ and Y−) with what it
        shows, as ``run_examples`` arguments: ``rms``, ``pairs``, ``sides``."""
        slots = {rm: {"rms": [rm], "pairs": [], "sides": []} for rm in self.example_rms(dataset)}
        for a, b in self.example_pairs(dataset):
            for side, label in SIDE_LABELS.items():
                slots[f"{a}_vs_{b}_{label}"] = {"rms": [], "pairs": [[a, b]], "sides": [side]}
        return slots

    def example_slot(self, dataset: str, slot: str) -> dict[str, list]:
        """What one example slot of ``dataset`` shows (:meth:`example_slots`)."""
        slots = self.example_slots(dataset)
        if slot not in slots:
            raise KeyError(f"{slot!r} is no example of dataset {dataset!r}")
        return slots[slot]

    @cached_property
    def rewards_example(self) -> dict[str, Any] | None:
        """The resolved ``analysis.rewards_example`` (paper Fig. 6), or None when it is off: ``dataset``,
        ``method``, ``rm`` (whose representative example), ``comparison_id``, ``rms`` (the dataset's RMs)."""
        settings = self.analysis.get("rewards_example") or {}
        if not settings.get("enabled"):
            return None
        dataset = settings.get("dataset") or self.stage_datasets("analysis")[0]
        rms = list(self.datasets[dataset].rms)
        return {
            "dataset": dataset,
            "method": settings.get("method") or self.dataset_analysed_methods(dataset)[0],
            "rm": settings.get("rm") or rms[0],
            "comparison_id": settings.get("comparison_id"),
            "rms": rms,
        }

    @property
    def reproduce(self) -> Config:
        return self.config.get("reproduce") or {}

    # ── optimal and pessimal tokens ──────────────────────────────────────────────────────────────────────
    @cached_property
    def tokens(self) -> Tokens:
        settings = section(self.config, "tokens")
        enabled = bool(settings.get("enabled", False))
        rms = tuple(settings.get("reward_models") or self.reward_models)
        imported = self._imported_scans(settings, rms) if enabled else {}
        exact = [rm for rm in rms if self.rm_backend(rm).exact_token_ids]
        compare = enabled and (settings.get("scan") or {}).get("compare")
        gcg = enabled and (settings.get("gcg") or {}).get("enabled")
        return Tokens(
            enabled=enabled,
            settings=settings,
            rms=rms,
            imported=imported,
            compared_rms=tuple(rm for rm in exact if rm not in imported) if compare else (),
            gcg_rms=tuple(exact) if gcg else (),
        )

    def _imported_scans(self, settings: Mapping[str, Any], rms: tuple[str, ...]) -> dict[str, str]:
        """Token RMs whose scans come from the paper's published CSVs (``tokens.official_scores``): RM -> the
        ``<org>--<model>.csv`` of its hub id, where that file exists."""
        official = settings.get("official_scores")
        if not official:
            return {}
        found = {}
        for rm in rms:
            model = self.reward_models[rm].get("model")
            path = Path(official["path"]) / paths.official_file_name(model) if model else None
            if path is not None and path.is_file():
                found[rm] = str(path)
        return found

    @cached_property
    def foreign_rm_datasets(self) -> list[str]:
        """Datasets with RMs explained by a shared perturbation set they do not orient (``foreign_rms``)."""
        return [name for name, d in self.datasets.items() if d.foreign_rms]

    # ── the report ───────────────────────────────────────────────────────────────────────────────────────
    @cached_property
    def report_sections(self) -> list[str]:
        """The report's result sections this config fills, in reading order."""
        present = {
            "Findings": bool(self.effect_pairs or self.discovery_datasets()),
            "Reproduction": bool(self.reproduce),
            "Evaluation": bool(self.stage_datasets("evaluation")),
            "Analyses": bool(self.analysed_pairs),
            "Representative examples": any(self.example_slots(d) for d, _ in self.analysed_pairs),
            "Attribute discovery": self.discovery_enabled,
            "Optimal and pessimal tokens": self.tokens.enabled,
            "Diagnostics": bool(self.datasets),
        }
        return [name for name in REPORT_SECTIONS if present[name]]

    def report_category(self, name: str) -> str:
        """A report category, numbered by its place among the sections present (the report's menu sorts
        categories by name, so the number keeps the reading order: Reproduction first)."""
        sections = self.report_sections
        return f"{sections.index(name) + 1}. {name}" if name in sections else name
