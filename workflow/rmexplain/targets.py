"""The files a design asks for: rule inputs that depend on the config, and every target list of ``rule all``.

The rule files (``import rmexplain.targets as targets``) and the input functions of
``workflow/rules/common.smk`` use these with the design built once there, so the layout of ``results/`` is
``rmexplain.paths`` and what a config runs is ``rmexplain.design``; this module only combines the two.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rmexplain import paths
from rmexplain.analysis.catalog import ANALYSIS_TABLES, analysis_table
from rmexplain.design import Design
from rmexplain.discovery.base import engines
from rmexplain.downloads import hub_models
from rmexplain.effects.base import estimators, reported_estimators
from rmexplain.score.base import overlong_policy
from rmexplain.tokens.elo import DATA_DIR, ELO_PROMPTS
from rmexplain.tokens.stats import scores_in_ranking_file


# ── data, scores, perturbations, explanations, evaluation ─────────────────────────────────────────────────
def rm_artifact_files(design: Design, rm: str) -> dict[str, str]:
    """Files from earlier rules that RM ``rm``'s backend needs (``Design.rm_artifact_files``)."""
    return design.rm_artifact_files(rm)


def orientation_score_files(design: Design, dataset: str, orienter: str) -> list[str]:
    """The original-score tables that orient perturbation set ``orienter``."""
    rms = design.dataset(dataset).orienting_rms(orienter)
    return [paths.fmt(paths.ORIGINAL_SCORES, dataset=dataset, rm=rm) for rm in rms]


def perturbation_file(dataset: str, method: str, orienter: str) -> str:
    return paths.fmt(paths.PERTURBATIONS, dataset=dataset, method=method, orienter=orienter)


def perturbation_files_for_rm(design: Design, dataset: str, rm: str) -> list[str]:
    """All perturbation tables that RM ``rm`` scores on ``dataset`` (every method of the dataset)."""
    d = design.dataset(dataset)
    return [perturbation_file(dataset, m, d.orienter_for(rm)) for m in d.methods]


def perturbation_files_of_dataset(design: Design, dataset: str) -> list[str]:
    """Every perturbation table of ``dataset``: each method for each orienter."""
    d = design.dataset(dataset)
    return [perturbation_file(dataset, m, o) for m in d.methods for o in d.orienters]


def text_embeddings_for_rm(design: Design, dataset: str, rm: str) -> list[str]:
    """The dataset's text embeddings where RM ``rm`` encodes texts with the same sentence encoder as the
    distances (the demo RMs and the bundled MiniLM): its scoring job looks them up instead of encoding."""
    if not looks_texts_up(design, rm):
        return []
    return [paths.fmt(paths.TEXT_EMBEDDINGS, dataset=dataset)]


def looks_texts_up(design: Design, rm: str) -> bool:
    """Whether RM ``rm`` (a planted RM: its base) embeds texts with the dataset embeddings' encoder."""
    encoder = design.rm_backend(design.scoring_rm(rm)).sentence_encoder
    return encoder is not None and encoder == design.embedding_model


def text_embedding_datasets(design: Design) -> list[str]:
    """Datasets whose texts ``embed_texts`` embeds: those evaluated, and those a demo-like RM scores."""
    evaluated = design.stage_datasets("evaluation")
    return [
        name
        for name, d in design.datasets.items()
        if name in evaluated or any(text_embeddings_for_rm(design, name, rm) for rm in d.rms)
    ]


def shared_request_input(design: Design, dataset: str, method: str, orienter: str) -> list[str]:
    """For an LLM variant whose method also runs on ``dataset``: that method's perturbation table, so the
    variant's job starts after it and finds the requests they share (two_step's step 1) in the cache."""
    source = design.shared_request_source(dataset, method)
    return [] if source is None else [perturbation_file(dataset, source, orienter)]


def truncation_parts(design: Design) -> list[list[str]]:
    """``[dataset, rm, stage, score file]`` of every score table, in config order: the rows of the
    truncation table (stage ``originals``, ``perturbations`` where the dataset has methods, ``effects`` where
    it has attribute effects, ``discovery <engine> round <n>`` for each round of bias discovery)."""
    parts = []
    for name, dataset in design.datasets.items():
        for rm in dataset.rms:
            parts.append([name, rm, "originals", paths.fmt(paths.ORIGINAL_SCORES, dataset=name, rm=rm)])
            if dataset.methods:
                scores = paths.fmt(paths.PERTURBATION_REWARDS, dataset=name, rm=rm)
                parts.append([name, rm, "perturbations", scores])
            if name in design.effect_datasets():
                parts.append([name, rm, "effects", paths.fmt(paths.EFFECT_REWARDS, dataset=name, rm=rm)])
            if name in design.discovery_datasets():
                parts += [
                    [name, rm, discovery_stage(engine, r), round_rewards(name, engine, r, rm)]
                    for engine, r in discovery_rounds(design)
                ]
    return parts


def discovery_stage(engine: str, round_: int) -> str:
    """The truncation table's stage of one discovery round's scores (engine names hold no space)."""
    return f"discovery {engine} round {round_}"


def overlong_policies(design: Design) -> dict[str, str]:
    """Each RM's ``overlong`` setting."""
    return {rm: overlong_policy(spec) for rm, spec in design.reward_models.items()}


def metric_files(design: Design) -> list[str]:
    """All per-(dataset, method, RM) metric tables of the evaluation datasets."""
    return [
        paths.fmt(paths.METRICS, dataset=d, method=m, rm=r)
        for d in design.stage_datasets("evaluation")
        for m in design.dataset(d).methods
        for r in design.dataset(d).rms
    ]


def evaluation_table_files() -> list[str]:
    """The paper's Tables 1, 2 and 5 as CSV, Markdown and HTML."""
    return [paths.table_file(t, e) for t in paths.EVALUATION_TABLES for e in paths.TABLE_EXTS]


def explanation_targets(design: Design) -> list[str]:
    """Files ``rule all`` asks of the explanation stage: the evaluation tables and figures."""
    if not design.stage_datasets("evaluation"):
        return []
    return [*evaluation_table_files(), paths.fmt(paths.FIGURE, figure="methods", ext=design.figures.format)]


# ── attribute discovery ───────────────────────────────────────────────────────────────────────────────────
def discovery_targets(design: Design) -> list[str]:
    """Files ``rule all`` asks of attribute discovery (none unless ``perturb.discover.enabled``)."""
    if not design.discovery_enabled:
        return []
    return [
        paths.fmt(pattern, dataset=dataset, orienter=design.discovery_orienter(dataset))
        for dataset in design.datasets
        for pattern in (paths.DISCOVERY_ANSWERS, paths.DISCOVERY_CSV, paths.DISCOVERY_MD)
    ]


# ── analyses ──────────────────────────────────────────────────────────────────────────────────────────────
def _per_dataset_method(design: Design, pattern: str, **extra: str) -> list[str]:
    return [paths.fmt(pattern, dataset=d, method=m, **extra) for d, m in design.analysed_pairs]


def probe_orienters(design: Design, dataset: str) -> dict[str, list[str]]:
    """RM -> [the orienter of the perturbation set it is explained with, then that set's orienting RMs]."""
    d = design.dataset(dataset)
    return {rm: [d.orienter_for(rm), *d.orienting_rms(d.orienter_for(rm))] for rm in d.rms}


def analysis_table_inputs(design: Design, table: str) -> list[str]:
    """The per-(dataset, method) Parquet files one summary table is built from."""
    return analysis_table(table).parts(design)


def analysis_tables(design: Design) -> list[str]:
    """Names of the summary tables this config produces."""
    return [name for name, table in ANALYSIS_TABLES.items() if table.enabled(design)]


def summary_figures(design: Design) -> list[str]:
    """Names of the figures summarising all datasets and methods."""
    names = ["rank_similarity"]
    if design.stage_datasets("evaluation"):
        names.append("correctness")
    if design.rewards_example:
        names.append("rewards_example")
    if design.probes_enabled:
        names.append("probe_win_rate")
    if design.judge_enabled:
        names.append("attribute_judge")
    return names


def example_slot_file(design: Design, part: str) -> str:
    """Pattern of one part (``figure``, ``html``, ``md``) of an example (wildcards dataset, method, slot)."""
    return paths.example_slot_file(part, design.figures.format)


def example_outputs(design: Design, dataset: str, method: str) -> dict[str, list[str]]:
    """The example files of one (dataset, method) by part: figures, HTML pages, Markdown pages."""
    slots = design.example_slots(dataset)
    return {
        part: [
            paths.fmt(example_slot_file(design, part), dataset=dataset, method=method, slot=s) for s in slots
        ]
        for part in paths.EXAMPLE_PARTS
    }


def example_files(design: Design) -> list[str]:
    """Figures and pages of every representative example."""
    return [
        f for d, m in design.analysed_pairs for files in example_outputs(design, d, m).values() for f in files
    ]


def analysis_figure_files(design: Design) -> list[str]:
    """Every analysis figure (per-dataset PFR and local-τ figures, summaries, examples)."""
    ext = design.figures.format
    files = _per_dataset_method(design, paths.PFR_FIGURE, ext=ext)
    files += _per_dataset_method(design, paths.LOCAL_TAU_FIGURE, ext=ext)
    files += [paths.summary_figure(f, ext) for f in summary_figures(design)]
    return files + example_files(design)


def analysis_targets(design: Design) -> list[str]:
    """Files ``rule all`` asks of the analysis stage: tables (CSV, Markdown, HTML), figures, example pages."""
    if not design.analysed_pairs:
        # Only unconditioned methods (random, polyjuice): no attributes to analyse; Table 5 still applies
        # where a dataset is evaluated (a dataset with discovery alone has neither).
        evaluated = bool(design.stage_datasets("evaluation"))
        return [paths.summary_figure("correctness", design.figures.format)] if evaluated else []
    tables = [paths.table_file(t, e) for t in analysis_tables(design) for e in paths.TABLE_EXTS]
    return tables + analysis_figure_files(design)


# ── attribute effects ─────────────────────────────────────────────────────────────────────────────────────
def effect_edit_files(design: Design, dataset: str) -> list[str]:
    """The effect edits of every method of ``dataset`` that has attribute effects."""
    return [paths.fmt(paths.EFFECT_EDITS, dataset=dataset, method=m) for m in design.effect_methods(dataset)]


def effect_estimators(design: Design) -> list[str]:
    """The estimators the attribute-effects tables report (``analysis.effects``)."""
    return reported_estimators(design.effects)


def pair_effect_estimators(design: Design, dataset: str, method: str) -> list[str]:
    """``effect_estimators`` of one (dataset, method): without those that read the paper's perturbations
    (the flip rates) where ``method`` makes none on ``dataset``."""
    perturbed = method in design.dataset(dataset).methods
    return [e for e in effect_estimators(design) if perturbed or not estimators.get(e).reads_perturbations]


def effect_rms(design: Design, dataset: str) -> list[str]:
    """RMs whose rewards the attribute effects of ``dataset`` read: its RMs (references are among them)."""
    return list(design.dataset(dataset).rms)


def effect_embeddings_for_rm(design: Design, dataset: str, rm: str) -> list[str]:
    """The effect edits' text embeddings where RM ``rm`` looks texts up (as ``text_embeddings_for_rm``),
    after the dataset's own table (its prompts)."""
    return stage_embeddings_for_rm(design, dataset, rm, paths.fmt(paths.EFFECT_EMBEDDINGS, dataset=dataset))


def stage_embeddings_for_rm(design: Design, dataset: str, rm: str, stage_table: str) -> list[str]:
    """Where RM ``rm`` looks texts up: the dataset's text embeddings (its prompts, perturbations and their
    originals) and a later stage's table ``stage_table`` (its edited texts); else none."""
    return [*text_embeddings_for_rm(design, dataset, rm), stage_table] if looks_texts_up(design, rm) else []


def text_embeddings_of(design: Design, dataset: str) -> list[str]:
    """The dataset's text embedding table, where ``embed_texts`` writes one (empty list otherwise)."""
    if dataset not in text_embedding_datasets(design):
        return []
    return [paths.fmt(paths.TEXT_EMBEDDINGS, dataset=dataset)]


def embeddings_before(design: Design, dataset: str, round_: int | None = None) -> list[str]:
    """The embedding tables a later stage's encoding copies the texts of, in the order the stages run: the
    dataset's, the effect edits' where they are embedded, and every engine's discovery rounds before
    ``round_`` (the carriers: ``None``, after every round) where they are."""
    effects = dataset in effect_embedding_datasets(design)
    effect_table = [paths.fmt(paths.EFFECT_EMBEDDINGS, dataset=dataset)] if effects else []
    rounds = [
        discovery_round_file(paths.BIASES_ROUND_EMBEDDINGS, dataset, engine, r)
        for engine, r in discovery_rounds(design)
        if round_ is None or r < round_
    ]
    discovery = rounds if dataset in discovery_embedding_datasets(design) else []
    return [*text_embeddings_of(design, dataset), *effect_table, *discovery]


def looks_texts_up_on(design: Design, dataset: str) -> bool:
    """Whether an RM of ``dataset`` looks its texts up in the embedding tables (so its edits are embedded)."""
    return any(looks_texts_up(design, rm) for rm in effect_rms(design, dataset))


def effect_embedding_datasets(design: Design) -> list[str]:
    """Datasets whose effect edits ``embed_effect_texts`` embeds: those with an RM that looks texts up."""
    return [d for d in design.effect_datasets() if looks_texts_up_on(design, d)]


def discovery_embedding_datasets(design: Design) -> list[str]:
    """Datasets whose discovery rounds ``embed_discovery_texts`` embeds: with an RM that looks texts up."""
    return [d for d in design.discovery_datasets() if looks_texts_up_on(design, d)]


def attribute_effect_inputs(design: Design, dataset: str, method: str) -> dict[str, list[str] | str]:
    """What the attribute effects of one (dataset, method) read, per RM in ``effect_rms`` order."""
    rms = effect_rms(design, dataset)
    return {
        "comparisons": paths.fmt(paths.COMPARISONS, dataset=dataset),
        "edits": paths.fmt(paths.EFFECT_EDITS, dataset=dataset, method=method),
        "originals": [paths.fmt(paths.ORIGINAL_SCORES, dataset=dataset, rm=rm) for rm in rms],
        "rewards": [paths.fmt(paths.EFFECT_REWARDS, dataset=dataset, rm=rm) for rm in rms],
        # the paper's explanations, for the flip-rate estimators; none where the method perturbs no response
        # of the dataset (its effect edits need no perturbations)
        "explanations": [
            paths.fmt(paths.EXPLANATIONS, dataset=dataset, method=method, rm=rm)
            for rm in rms
            if method in design.dataset(dataset).methods
        ],
        **slope_edit_inputs(design, dataset, besides=method),  # the other methods' edits, for one γ
    }


def slope_edit_inputs(design: Design, dataset: str, besides: str | None = None) -> dict[str, list[str]]:
    """The dataset's attribute edits that inform the length slope of an estimate (every effect method's but
    ``besides``, the estimate's own) and their rewards per RM (``effect_rms`` order); empty lists where there
    are none (a dataset without attribute effects: each estimate fits γ over its own edits)."""
    methods = [m for m in design.effect_methods(dataset) if m != besides]
    if not methods:
        return {"slope_edits": [], "slope_rewards": []}
    return {
        "slope_edits": [paths.fmt(paths.EFFECT_EDITS, dataset=dataset, method=m) for m in methods],
        "slope_rewards": [
            paths.fmt(paths.EFFECT_REWARDS, dataset=dataset, rm=rm) for rm in effect_rms(design, dataset)
        ],
    }


def effect_references(design: Design, dataset: str) -> dict[str, str | None]:
    """Each RM of ``dataset`` -> the RM its attribute effects subtract (``reference``; a planted RM: base)."""
    return {rm: design.reference_rm(rm) for rm in effect_rms(design, dataset)}


def planted_recovery_targets(design: Design) -> list[str]:
    """The planted-recovery and recall tables, where some RM declares what it is known to reward."""
    if not design.expectations or not design.effect_pairs:
        return []
    tables = (paths.PLANTED_RECOVERY, paths.PLANTED_RECALL)
    return [paths.table_file(t, e) for t in tables for e in paths.TABLE_EXTS]


def effect_targets(design: Design) -> list[str]:
    """Files ``rule all`` asks of the attribute effects: the figure of each (dataset, method), the planted
    recovery (the table itself is an analysis table) and the findings."""
    figures = [
        paths.fmt(paths.EFFECTS_FIGURE, dataset=d, method=m, ext=design.figures.format)
        for d, m in design.effect_pairs
    ]
    return figures + planted_recovery_targets(design) + findings_targets(design)


# ── the findings ──────────────────────────────────────────────────────────────────────────────────────────
def effect_change_inputs(design: Design, dataset: str, method: str) -> dict[str, list[str] | str]:
    """What the effect changes of one (dataset, method) read (``attribute_effect_inputs`` but the paper's
    explanations)."""
    inputs = attribute_effect_inputs(design, dataset, method)
    return {key: value for key, value in inputs.items() if key != "explanations"}


def effect_change_files(design: Design) -> list[str]:
    """Every (dataset, method)'s effect changes, in ``effect_pairs`` order."""
    return [paths.fmt(paths.EFFECT_CHANGES, dataset=d, method=m) for d, m in design.effect_pairs]


def findings_inputs(design: Design) -> dict[str, list[str]]:
    """What the findings read: per effect pair (in ``effect_pairs`` order) its effects, edits, changes and
    comparisons; the discovery stage's table and edits where it runs; the carriers re-scored (per dataset of
    ``carrier_rms``: its carrier edits and comparisons; per RM of it, its rewards of them and of the
    originals)."""
    carriers = carrier_rms(design)
    per_rm = [(d, rm) for d, references in carriers.items() for rm in references]
    return {
        **_effect_and_discovery_inputs(design.effect_pairs, design.discovery_datasets()),
        "carrier_edits": [paths.fmt(paths.CARRIER_EDITS, dataset=d) for d in carriers],
        "carrier_comparisons": [paths.fmt(paths.COMPARISONS, dataset=d) for d in carriers],
        "carrier_rewards": [paths.fmt(paths.CARRIER_REWARDS, dataset=d, rm=rm) for d, rm in per_rm],
        "carrier_originals": [paths.fmt(paths.ORIGINAL_SCORES, dataset=d, rm=rm) for d, rm in per_rm],
    }


def _effect_and_discovery_inputs(
    pairs: Sequence[tuple[str, str]], discovery_datasets: Sequence[str]
) -> dict[str, list[str]]:
    return {
        "effects": [paths.fmt(paths.ATTRIBUTE_EFFECTS, dataset=d, method=m) for d, m in pairs],
        "edits": [paths.fmt(paths.EFFECT_EDITS, dataset=d, method=m) for d, m in pairs],
        "changes": [paths.fmt(paths.EFFECT_CHANGES, dataset=d, method=m) for d, m in pairs],
        "comparisons": [paths.fmt(paths.COMPARISONS, dataset=d) for d, _ in pairs],
        # bias discovery, where it runs: its table and each discovery dataset's tested edits
        "discovered": [paths.BIASES_TABLE] if discovery_datasets else [],
        "discovery_edits": [paths.fmt(paths.BIASES_EDITS, dataset=d) for d in discovery_datasets],
    }


def carrier_rms(design: Design) -> dict[str, dict[str, str | None]]:
    """Datasets whose findings' carriers are re-scored (bias discovery's: the classes are discovered
    features) -> each RM of the dataset -> the RM it is read against."""
    return {d: effect_references(design, d) for d in design.discovery_datasets()}


def carrier_edit_inputs(design: Design, dataset: str) -> dict[str, list[str]]:
    """What a dataset's carrier edits read: the findings' inputs (``findings_inputs``) of that dataset."""
    pairs = [(d, m) for d, m in design.effect_pairs if d == dataset]
    return _effect_and_discovery_inputs(pairs, [dataset])


def carrier_embeddings_for_rm(design: Design, dataset: str, rm: str) -> list[str]:
    """The carrier edits' text embeddings where RM ``rm`` looks texts up (as ``effect_embeddings_for_rm``)."""
    return stage_embeddings_for_rm(design, dataset, rm, paths.fmt(paths.CARRIER_EMBEDDINGS, dataset=dataset))


def report_links(design: Design) -> dict[str, str | None]:
    """The report categories the landing text links to: the findings table's and the flip rates'."""
    return {
        "table": design.report_category("Findings"),
        "flip_rates": design.report_category("Analyses") if design.analysed_pairs else None,
    }


def findings_targets(design: Design) -> list[str]:
    """The findings table (Parquet and its pages) and the report's landing text, where they run."""
    if not design.findings_enabled:
        return []
    tables = [paths.table_file(paths.FINDINGS_TABLE, ext) for ext in paths.TABLE_EXTS]
    return [paths.FINDINGS, *tables, paths.REPORT_LANDING]


# ── bias discovery ────────────────────────────────────────────────────────────────────────────────────────
def discovery_rounds(design: Design) -> list[tuple[str, int]]:
    """(engine, round) of every round that runs on each discovery dataset, engines in config order."""
    return [(engine, r) for engine in design.discovery_engines for r in design.discovery_rounds(engine)]


def discovery_round_file(pattern: str, dataset: str, engine: str, round_: int) -> str:
    return paths.fmt(pattern, dataset=dataset, engine=engine, round=str(round_))


def discovery_round_inputs(
    design: Design, dataset: str, engine: str, round_: int
) -> dict[str, list[str] | str]:
    """What one round of one engine reads: the comparisons, every RM's scores of the originals (in
    ``effect_rms`` order), the engine's effects and edits of every earlier round, its prompt templates and,
    in a later round of an engine that reads them, the dataset's attribute edits and their changes."""

    def earlier(pattern: str) -> list[str]:
        return [discovery_round_file(pattern, dataset, engine, r) for r in range(1, round_)]

    entry = engines.get(engine)
    reads = entry.reads_attribute_edits and round_ > 1
    methods = [m for d, m in design.effect_pairs if d == dataset] if reads else []
    return {
        "comparisons": paths.fmt(paths.COMPARISONS, dataset=dataset),
        "originals": original_score_files(design, dataset),
        "previous": earlier(paths.BIASES_ROUND_EFFECTS),
        "previous_edits": earlier(paths.BIASES_ROUND_EDITS),
        "attribute_edits": [paths.fmt(paths.EFFECT_EDITS, dataset=dataset, method=m) for m in methods],
        "attribute_changes": [paths.fmt(paths.EFFECT_CHANGES, dataset=dataset, method=m) for m in methods],
        **entry.prompt_inputs(design.bias_discovery.get(engine) or {}),
    }


def original_score_files(design: Design, dataset: str) -> list[str]:
    """Every RM's scores of the originals of ``dataset``, in ``effect_rms`` order."""
    return [paths.fmt(paths.ORIGINAL_SCORES, dataset=dataset, rm=rm) for rm in effect_rms(design, dataset)]


def discovery_rewards(design: Design, dataset: str, engine: str, round_: int) -> list[str]:
    """Every RM's rewards of one round's edits (``effect_rms`` order), each round scored by its own jobs."""
    return [round_rewards(dataset, engine, round_, rm) for rm in effect_rms(design, dataset)]


def round_rewards(dataset: str, engine: str, round_: int, rm: str) -> str:
    """RM ``rm``'s rewards of one discovery round's edits."""
    return paths.fmt(paths.BIASES_ROUND_REWARDS, dataset=dataset, engine=engine, round=str(round_), rm=rm)


def discovery_round_embeddings_for_rm(
    design: Design, dataset: str, engine: str, round_: int, rm: str
) -> list[str]:
    """A round's text embeddings where RM ``rm`` looks texts up (as ``effect_embeddings_for_rm``), each
    round's encoded by a job of its own (``embed_discovery_texts``)."""
    return stage_embeddings_for_rm(
        design, dataset, rm, discovery_round_file(paths.BIASES_ROUND_EMBEDDINGS, dataset, engine, round_)
    )


def scores_before(
    design: Design, dataset: str, rm: str, stage: str, engine: str = "", round_: int = 0
) -> list[str]:
    """The score tables of RM ``rm`` on ``dataset`` that a scoring job of ``stage`` (``perturbations``,
    ``effects``, ``discovery``: ``engine``'s round ``round_``, or ``carriers``: after every round) copies the
    texts of rather than scoring them again, in the order the jobs run: the originals, the perturbations, the
    effect edits, then every discovery round before this one (engines in config order, rounds in order)."""
    d = design.dataset(dataset)
    tables = [paths.fmt(paths.ORIGINAL_SCORES, dataset=dataset, rm=rm)]
    if stage in ("effects", "discovery", "carriers") and d.methods and rm in d.rms:
        tables.append(paths.fmt(paths.PERTURBATION_REWARDS, dataset=dataset, rm=rm))
    if stage in ("discovery", "carriers"):
        if dataset in design.effect_datasets():
            tables.append(paths.fmt(paths.EFFECT_REWARDS, dataset=dataset, rm=rm))
        rounds = discovery_rounds(design)
        before = rounds.index((engine, round_)) if stage == "discovery" else len(rounds)
        tables += [round_rewards(dataset, e, r, rm) for e, r in rounds[:before]]
    return tables


def discovery_effect_inputs(
    design: Design, dataset: str, engine: str, round_: int
) -> dict[str, list[str] | str]:
    """What the effects of one round read: comparisons, its edits and candidates, and per RM (``effect_rms``
    order) the originals' scores and the edits' rewards."""
    return {
        "comparisons": paths.fmt(paths.COMPARISONS, dataset=dataset),
        "edits": discovery_round_file(paths.BIASES_ROUND_EDITS, dataset, engine, round_),
        "candidates": discovery_round_file(paths.BIASES_ROUND_CANDIDATES, dataset, engine, round_),
        "originals": original_score_files(design, dataset),
        "rewards": discovery_rewards(design, dataset, engine, round_),
        **slope_edit_inputs(design, dataset),  # the attribute edits: γ is the attribute effects' own
    }


def discovered_biases_inputs(design: Design) -> dict[str, list[str]]:
    """Every round's effects and edits, dataset by dataset."""
    rounds = [(d, e, r) for d in design.discovery_datasets() for e, r in discovery_rounds(design)]
    return {
        "effects": [discovery_round_file(paths.BIASES_ROUND_EFFECTS, d, e, r) for d, e, r in rounds],
        "edits": [discovery_round_file(paths.BIASES_ROUND_EDITS, d, e, r) for d, e, r in rounds],
    }


def discovery_edit_parts(design: Design) -> dict[str, list[str]]:
    """Dataset -> its rounds' edit files (what its edits.parquet holds)."""
    return {
        d: [discovery_round_file(paths.BIASES_ROUND_EDITS, d, e, r) for e, r in discovery_rounds(design)]
        for d in design.discovery_datasets()
    }


def discovery_planted(design: Design) -> dict[str, dict]:
    """RM -> scoring spec of every planted RM (one with a ``bias``) scored on a discovery dataset."""
    rms = {rm for d in design.discovery_datasets() for rm in effect_rms(design, d)}
    return {
        rm: design.scoring_spec(rm)
        for rm in design.reward_models
        if rm in rms and "bias" in design.reward_models[rm] and design.scoring_rm(rm) != rm
    }


def planted_base_scales(design: Design) -> list[str]:
    """The ``reward_scale`` file of each planted RM's base, in ``discovery_planted``'s order: the unit of
    its planted strengths, which the recall's length-slope truth needs."""
    return [paths.fmt(paths.REWARD_SCALE, rm=spec["base"]) for spec in discovery_planted(design).values()]


def bias_discovery_targets(design: Design) -> list[str]:
    """Files ``rule all`` asks of bias discovery: the table and its figure, each dataset's edits, and the
    recall of the planted RMs where there are any."""
    if not design.discovery_datasets():
        return []
    tables = [paths.DISCOVERED_BIASES, *([paths.BIASES_RECALL] if discovery_planted(design) else [])]
    edits = [paths.fmt(paths.BIASES_EDITS, dataset=d) for d in design.discovery_datasets()]
    figure = paths.fmt(paths.BIASES_FIGURE, ext=design.figures.format)
    return [paths.table_file(t, e) for t in tables for e in paths.TABLE_EXTS] + edits + [figure]


# ── optimal and pessimal tokens ───────────────────────────────────────────────────────────────────────────
def _scan_file(design: Design, rm: str, prompt: str, mode: str) -> str:
    """The scan of (``rm``, ``prompt``) in ``mode``, or its import when ``rm`` has a published scan."""
    if rm in design.tokens.imported:
        return paths.fmt(paths.TOKEN_SCAN_IMPORTED, rm=rm, prompt=prompt)
    return paths.fmt(paths.TOKEN_SCAN_IN, scan_dir=paths.SCAN_DIRS[mode], rm=rm, prompt=prompt)


def token_scan_files(design: Design, prompts: list[str] | None = None) -> list[str]:
    """Every scan the analyses read (all RMs × the given prompts, default all), in ``tokens.scan.mode``."""
    tokens = design.tokens
    return [
        _scan_file(design, rm, p, tokens.scan_mode) for rm in tokens.rms for p in (prompts or tokens.prompts)
    ]


def scan_comparisons(design: Design) -> list[tuple[str, str, str, str]]:
    """``(rm, prompt, exact scan, official scan)`` compared when ``tokens.scan.compare``."""
    return [
        (rm, p, _scan_file(design, rm, p, "exact"), _scan_file(design, rm, p, "official"))
        for rm in design.tokens.compared_rms
        for p in design.tokens.prompts
    ]


def human_scores_in_file(design: Design, rm: str) -> bool:
    """Whether RM ``rm`` reads its human-ranking scores from the ranking file (its model names a column)."""
    human = design.tokens.human_ranking
    return bool(human) and scores_in_ranking_file(design.reward_models[rm], human["path"]) is not None


def token_figure(design: Design, name: str) -> str:
    """Path of one token figure in the configured format; ``name`` may hold wildcards such as ``{a}``."""
    return paths.token_figure(name, design.figures.format)


def elo_figure(design: Design, prompt: str, part: str) -> str:
    return paths.elo_figure(prompt, part, design.figures.format)


def elo_prompt_ids() -> list[str]:
    """The bundled EloEverything prompts (the ``elo_prompt`` wildcard's values)."""
    return list(ELO_PROMPTS)


def elo_data_file(prompt: str) -> str:
    """The bundled EloEverything Parquet file of one prompt (an input, so a data update reruns the rule)."""
    return str(Path(DATA_DIR) / ELO_PROMPTS[prompt].file)


def paper_token_tables(design: Design) -> dict[str, str]:
    """The paper's token tables by ``run_paper_analyses`` key (empty unless enabled)."""
    if not design.tokens.paper_analysis:
        return {}
    tables = {name: paths.token_table(f"paper_{name}") for name in paths.PAPER_TOKEN_TABLES}
    if not design.tokens.settings["paper_analysis"].get("frequency_list"):  # the fit on wordfreq, named so
        tables["frequency_slopes"] = paths.token_table("paper_frequency_slopes_wordfreq")
    return tables


def paper_token_figures(design: Design) -> dict[str, str]:
    """Fig. 1 (``violins``) and Fig. 4 (``framing_<a>_<b>``) as the paper draws them (empty when off)."""
    if not design.tokens.paper_analysis:
        return {}
    names = ["violins", *design.tokens.framing_names]
    return {name: token_figure(design, f"paper_{name}") for name in names}


def token_human_files(design: Design) -> list[str]:
    """Per-RM scores of the human-ranking items."""
    if not design.tokens.human_ranking:
        return []
    return [paths.fmt(paths.TOKEN_HUMAN_SCORES, rm=rm) for rm in design.tokens.rms]


def gcg_files(design: Design) -> list[str]:
    """Every GCG run (RM × prompt × objective)."""
    tokens = design.tokens
    return [
        paths.fmt(paths.TOKEN_GCG, rm=rm, prompt=p, objective=o)
        for rm in tokens.gcg_rms
        for p in tokens.gcg_prompts
        for o in tokens.gcg_objectives
    ]


def token_figure_files(design: Design) -> list[str]:
    """All token figures of the report."""
    tokens = design.tokens
    names = ["violins", "tau_heatmap", "mds", "sentiment_slopes", "frequency_slopes", *tokens.framing_names]
    if tokens.human_ranking:
        names.append("human_disagreements")
    if tokens.compared_rms:
        names.append("scan_modes")
    elo = [elo_figure(design, p, part) for p in tokens.elo_prompts for part in paths.ELO_AGREEMENT_FIGURES]
    return [token_figure(design, n) for n in names] + list(paper_token_figures(design).values()) + elo


def token_table_files(design: Design) -> list[str]:
    """All token tables."""
    tokens = design.tokens
    names = ["extremes", *paths.TOKEN_AGREEMENT_TABLES, *paths.TOKEN_LEXICAL_TABLES, *tokens.framing_names]
    if tokens.human_ranking:
        names += [*paths.TOKEN_HUMAN_TABLES, *(f"human_figure5_{part}" for part in paths.ELO_TABLES)]
    if tokens.gcg_rms:
        names.append("gcg")
    if tokens.compared_rms:
        names.append("scan_modes")
    tables = [paths.token_table(n) for n in names] + list(paper_token_tables(design).values())
    parts = (*paths.ELO_TABLES, *paths.ELO_AGREEMENT_TABLES)
    return tables + [paths.elo_table(p, part) for p in tokens.elo_prompts for part in parts]


def token_scan_targets(design: Design) -> list[str]:
    """Every scan the token part reads (once each): the analyses' and both modes of the compared RMs."""
    compared = [path for *_, exact, official in scan_comparisons(design) for path in (exact, official)]
    return list(dict.fromkeys([*token_scan_files(design), *compared]))


def token_targets(design: Design) -> list[str]:
    """Files ``rule all`` asks of the token part (none unless ``tokens.enabled``)."""
    if not design.tokens.enabled:
        return []
    return [
        *token_scan_targets(design),
        *token_table_files(design),
        *token_figure_files(design),
        *gcg_files(design),
    ]


# ── reproduction ──────────────────────────────────────────────────────────────────────────────────────────
def reproduction_inputs(design: Design) -> dict[str, list[str]]:
    """The files the reproduction table reads: evaluation metrics and the analyses' τ and probe tables."""
    return {
        "metrics": metric_files(design),
        "tau_rms": analysis_table_inputs(design, "tau_rms"),
        "tau_sides": analysis_table_inputs(design, "tau_sides"),
        "probes": analysis_table_inputs(design, "probe_win_rate") if design.probes_enabled else [],
    }


def reproduction_targets(design: Design) -> list[str]:
    """The reproduction table and figure, when the config declares a paper's design (``reproduce``)."""
    if not design.reproduce:
        return []
    tables = [paths.table_file(paths.REPRODUCTION, e) for e in paths.TABLE_EXTS]
    return [*tables, paths.fmt(paths.REPRODUCTION_FIGURE, ext=design.figures.format)]


# ── provenance ────────────────────────────────────────────────────────────────────────────────────────────
def provenance_inputs(design: Design) -> dict[str, list[str]]:
    """What the provenance record reads: every hub marker, every dataset's origin and the LLM-use record of
    every job that calls an LLM (LLM perturbation methods, attribute discovery, the judge)."""
    llm_use = [
        paths.fmt(paths.LLM_USE_PERTURB, dataset=d, method=m, orienter=o)
        for d, dataset in design.datasets.items()
        for m in dataset.methods
        if m in design.llm_methods
        for o in dataset.orienters
    ]
    if design.discovery_enabled:
        llm_use += [
            paths.fmt(paths.LLM_USE_DISCOVERY, dataset=d, orienter=design.discovery_orienter(d))
            for d in design.datasets
        ]
    llm_use += [
        paths.fmt(paths.LLM_USE_EFFECTS, dataset=d, method=m)
        for d, m in design.effect_pairs
        if m in design.llm_methods
    ]
    llm_use += [
        discovery_round_file(pattern, d, e, r)
        for d in design.discovery_datasets()
        for e, r in discovery_rounds(design)
        if e in design.discovery_llm_engines
        for pattern in (paths.LLM_USE_BIASES, paths.LLM_USE_BIASES_JUDGE)
    ]
    if design.judge_enabled:
        llm_use += [
            paths.fmt(paths.LLM_USE_JUDGE, dataset=d, method=m, orienter=o)
            for d, m in design.analysed_pairs
            for o in design.dataset(d).orienters
        ]
    return {
        "markers": [paths.fmt(paths.HUB_MARKER, model=name) for name in hub_models(design)],
        "origins": [paths.fmt(paths.DATA_ORIGIN, dataset=d) for d in design.datasets],
        "llm_use": llm_use,
        "jobs": [paths.job_record(output) for output in recorded_job_outputs(design)],
    }


def recorded_job_outputs(design: Design) -> list[str]:
    """The main output of every job that leaves a job record (``paths.job_record``): those that load an RM
    to score (datasets, the attribute effects' edits, a planted RM's base scale, token scans, human-ranking
    items, GCG), perturb or edit, discover attributes, judge or embed texts. Training a demo RM, reading an
    RM's vocabulary and comparing scan modes run in the environment of that RM's scoring jobs, whose records
    stand for them."""
    outputs = [part[3] for part in truncation_parts(design)]
    outputs += [perturbation_file(d, m, o) for d, m, o in perturbation_jobs(design)]
    outputs += [paths.fmt(paths.TEXT_EMBEDDINGS, dataset=d) for d in text_embedding_datasets(design)]
    outputs += [paths.fmt(paths.EFFECT_EDITS, dataset=d, method=m) for d, m in design.effect_pairs]
    outputs += [paths.fmt(paths.EFFECT_EMBEDDINGS, dataset=d) for d in effect_embedding_datasets(design)]
    outputs += [paths.fmt(paths.REWARD_SCALE, rm=rm) for rm in design.planted_bases]
    outputs += discovery_round_embeddings(design)
    outputs += carrier_outputs(design)
    if design.discovery_enabled:
        outputs += [
            paths.fmt(paths.DISCOVERY_ANSWERS, dataset=d, orienter=design.discovery_orienter(d))
            for d in design.datasets
        ]
    if design.judge_enabled:
        outputs += [
            paths.fmt(paths.JUDGEMENTS, dataset=d, method=m, orienter=o)
            for d, m in design.analysed_pairs
            for o in design.dataset(d).orienters
        ]
    if design.tokens.enabled:
        imported = paths.TOKEN_SCAN_IMPORTED.split("{", 1)[0]
        outputs += [f for f in token_scan_targets(design) if not f.startswith(imported)]
        outputs += [*token_human_files(design), *gcg_files(design)]
    return outputs


def discovery_round_embeddings(design: Design) -> list[str]:
    """Every discovery round's embeddings, each round encoded on its own, where an RM looks texts up (the
    rounds' rewards are among ``truncation_parts``)."""
    return [
        discovery_round_file(paths.BIASES_ROUND_EMBEDDINGS, d, e, r)
        for d in discovery_embedding_datasets(design)
        for e, r in discovery_rounds(design)
    ]


def carrier_outputs(design: Design) -> list[str]:
    """Embeddings (where an RM looks texts up) and every RM's rewards of the carriers re-scored."""
    carriers = carrier_rms(design)
    embedded = [d for d in carriers if looks_texts_up_on(design, d)]
    outputs = [paths.fmt(paths.CARRIER_EMBEDDINGS, dataset=d) for d in embedded]
    rewards = [paths.fmt(paths.CARRIER_REWARDS, dataset=d, rm=r) for d, rms in carriers.items() for r in rms]
    return outputs + rewards


def provenance_targets() -> list[str]:
    """The provenance record, the config it hashed and its table: every config writes them."""
    tables = [paths.table_file(paths.PROVENANCE_TABLE, e) for e in paths.TABLE_EXTS]
    return [paths.PROVENANCE, paths.PROVENANCE_CONFIG, *tables]


# ── diagnostics: what was skipped on the way ─────────────────────────────────────────────────────────────
def perturbation_jobs(design: Design) -> list[tuple[str, str, str]]:
    """Every perturbation job as (dataset, method, orienter)."""
    return [(d, m, o) for d, ds in design.datasets.items() for m in ds.methods for o in ds.orienters]


def perturbation_skip_files(design: Design) -> list[str]:
    """Every perturbation job's skips, in ``perturbation_jobs`` order."""
    jobs = perturbation_jobs(design)
    return [paths.fmt(paths.PERTURB_SKIPS, dataset=d, method=m, orienter=o) for d, m, o in jobs]


def foreign_orientation_parts(design: Design) -> list[tuple[str, str]]:
    """(dataset, RM) of every score table the foreign-RM orientation table reads: the shared and the foreign
    RMs of each dataset that has foreign RMs."""
    return [
        (name, rm)
        for name in design.foreign_rm_datasets
        for rm in (*design.dataset(name).shared_rms, *design.dataset(name).foreign_rms)
    ]


def foreign_orientation_settings(design: Design) -> dict[str, dict[str, object]]:
    """Per dataset with foreign RMs: its ``shared_rms``, ``foreign_rms`` and ``foreign_rm_orientation``."""
    return {
        name: {
            "shared_rms": list(d.shared_rms),
            "foreign_rms": list(d.foreign_rms),
            "orientation": d.foreign_rm_orientation,
        }
        for name, d in design.datasets.items()
        if d.foreign_rms
    }


def diagnostic_targets(design: Design) -> list[str]:
    """The report's diagnostic tables: texts over the RMs' token limits, perturbation skips, and where a
    shared set explains RMs outside its ``shared_rms``, the comparisons they orient against the agreed y+."""
    names = [paths.PERTURBATION_SKIPS_TABLE] if design.datasets else []
    names += [paths.TRUNCATION] if truncation_parts(design) else []
    if design.foreign_rm_datasets:
        names.append(paths.FOREIGN_ORIENTATION_TABLE)
    return [paths.table_file(name, ext) for name in names for ext in paths.TABLE_EXTS]


# ── everything ────────────────────────────────────────────────────────────────────────────────────────────
def all_targets(design: Design) -> list[str]:
    """Every file ``rule all`` asks for."""
    return [
        *reproduction_targets(design),
        *explanation_targets(design),
        *discovery_targets(design),
        *analysis_targets(design),
        *bias_discovery_targets(design),
        *token_targets(design),
        *provenance_targets(),
        *diagnostic_targets(design),
    ]
