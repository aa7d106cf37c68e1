"""Every output path of the workflow and every target list, as patterns and plain functions of config.

The rule files (``import rmexplain.paths as paths``) and the input functions in
``workflow/rules/common.smk`` use these, so the layout of ``results/`` is defined once and testable
without Snakemake. ``config`` is the checked config (``rmexplain.config.check`` has filled the defaults).
Building a target list never validates: the config check runs once, before.
"""

from __future__ import annotations

from importlib import resources
from itertools import combinations
from pathlib import Path

from rmexplain.config import Config, section

# ── data, scores, perturbations, explanations, evaluation ─────────────────────────────────────────────────
COMPARISONS = "results/data/{dataset}/comparisons.parquet"
DEMO_HEAD = "results/models/{rm}/head.pt"
ORIGINAL_SCORES = "results/scores/{dataset}/originals/{rm}.parquet"
PERTURBATIONS = "results/perturbations/{dataset}/{method}/{orienter}.parquet"
# Skipped slots of each perturbation table (a separate tree, so no path is ambiguous with PERTURBATIONS).
PERTURB_SKIPS = "results/skipped/perturb/{dataset}/{method}/{orienter}.parquet"
PERTURBATION_REWARDS = "results/scores/{dataset}/perturbations/{rm}.parquet"
EXPLANATIONS = "results/explanations/{dataset}/{method}/{rm}.parquet"
DISTANCES = "results/distances/{dataset}/{method}/{orienter}.parquet"
METRICS = "results/metrics/{dataset}/{method}/{rm}.parquet"
TABLE = "results/tables/{table}.{ext}"
TABLE_EXTS = ("csv", "md", "html")  # the HTML copy is what the report shows
EVALUATION_TABLES = ("coverage", "distances", "coverage_by_correctness", "distances_by_correctness")
FIGURE = "results/figures/{figure}.{ext}"
# Files an RM backend needs from earlier rules, by the names the backends declare (``artifacts``).
RM_ARTIFACTS = {"head": DEMO_HEAD}

SHARED_ORIENTER = "shared"
STAGES = ("evaluation", "analysis")  # what a dataset feeds: the evaluation tables, the attribute analyses

# ── hub downloads ─────────────────────────────────────────────────────────────────────────────────────────
HUB_MARKER = "results/hub/{model}.json"

# ── attribute discovery ───────────────────────────────────────────────────────────────────────────────────
DISCOVERY_ANSWERS = "results/discovery/{dataset}/{orienter}/answers.parquet"
DISCOVERY_CSV = "results/discovery/{dataset}/{orienter}/attributes.csv"
DISCOVERY_MD = "results/discovery/{dataset}/{orienter}/attributes.md"

# ── analyses ──────────────────────────────────────────────────────────────────────────────────────────────
ANALYSIS_DIR = "results/analysis/{dataset}/{method}"
PFR = ANALYSIS_DIR + "/pfr.parquet"
TAU_RMS = ANALYSIS_DIR + "/tau_rms.parquet"
TAU_SIDES = ANALYSIS_DIR + "/tau_sides.parquet"
LOCAL_TAU = ANALYSIS_DIR + "/local_tau.parquet"
EXAMPLES = ANALYSIS_DIR + "/examples.parquet"
PROBES = ANALYSIS_DIR + "/probe_win_rate.parquet"
JUDGEMENTS = ANALYSIS_DIR + "/judge/{orienter}.parquet"
# Representative examples: a figure, an HTML page (figure embedded, texts) and a Markdown copy of the page.
# One example per slot: an RM's name, or ``<rm_a>_vs_<rm_b>_<Yplus|Yminus>`` for a pair on one side.
EXAMPLE_SLOT = "results/analysis/examples/{dataset}/{method}/{slot}"
SIDE_LABELS = {"plus": "Yplus", "minus": "Yminus"}
EXAMPLE_PARTS = ("figure", "html", "md")
PFR_FIGURE = "results/figures/analysis/pfr/{dataset}/{method}.{ext}"
LOCAL_TAU_FIGURE = "results/figures/analysis/local_tau/{dataset}/{method}.{ext}"
SUMMARY_FIGURE = "results/figures/analysis/{figure}.{ext}"
ANALYSIS_TABLES = (
    "pfr",
    "tau_rms",
    "tau_sides",
    "representative_examples",
    "probe_win_rate",
    "attribute_judge",
)

# ── optimal and pessimal tokens ───────────────────────────────────────────────────────────────────────────
TOKEN_VOCABULARY = "results/tokens/vocabulary/{rm}.parquet"
# A scan in either mode (``scan_dir``: SCAN_DIRS) and one imported from the paper's published CSVs.
TOKEN_SCAN_IN = "results/tokens/{scan_dir}/{rm}/{prompt}.parquet"
SCAN_DIRS = {"exact": "scans", "official": "scans_official"}
TOKEN_SCAN_IMPORTED = "results/tokens/scans_imported/{rm}/{prompt}.parquet"
TOKEN_HUMAN_SCORES = "results/tokens/human/{rm}.parquet"
TOKEN_GCG = "results/tokens/gcg/{rm}/{prompt}/{objective}.parquet"
TOKEN_TABLE = "results/tokens/tables/{table}.csv"
TOKEN_FIGURE = "results/tokens/figures/{figure}.{ext}"
TOKEN_AGREEMENT_TABLES = ("kendall_tau", "mds", "rsa")
TOKEN_LEXICAL_TABLES = ("sentiment_slopes", "frequency_slopes")
TOKEN_HUMAN_TABLES = ("human_ranking", "human_disagreements")
ELO_TABLES = ("spearman", "differences", "top_items", "trajectories")  # tokens/tables/elo_{prompt}_{part}.csv
# The paper's computations (tokens.paper_analysis): tables/paper_{name}.csv, keys of run_paper_analyses.
PAPER_TOKEN_TABLES = (
    "moments",
    "kendall_tau",
    "mds",
    "rsa",
    "table2",
    "top_bottom",
    "framing",
    "sentiment_slopes",
    "frequency_slopes",
    "slope_summary",
    "afinn_joins",
)


def fmt(pattern: str, **wildcards: str) -> str:
    """Fill a path pattern."""
    return pattern.format(**wildcards)


def figure_ext(config: Config) -> str:
    """Figure file format."""
    return config.get("figures", {}).get("format", "png")


# ── what a config runs ────────────────────────────────────────────────────────────────────────────────────
# A dataset entry may carry its own design (paper §3 per-RM sets for the evaluation tables, §4's shared set
# for the analyses): its seeds, orientation, shared RMs, RMs, methods and stages; unset keys fall back to
# the global settings. Both designs then live side by side under their dataset names.
def datasets(config: Config) -> list[str]:
    """Dataset names, in config order."""
    return list(config["datasets"])


def stage_datasets(config: Config, stage: str) -> list[str]:
    """Datasets that feed ``stage`` (``evaluation`` or ``analysis``; ``datasets.<name>.stages``)."""
    return [d for d, spec in config["datasets"].items() if stage in spec.get("stages", STAGES)]


def reward_models(config: Config) -> list[str]:
    """RM names, in config order."""
    return list(config["reward_models"])


def dataset_rms(config: Config, dataset: str) -> list[str]:
    """RMs that score and are explained on ``dataset`` (``datasets.<name>.reward_models``, default all)."""
    return list(config["datasets"][dataset].get("reward_models") or reward_models(config))


def methods(config: Config) -> list[str]:
    """Perturbation methods to run (on some dataset)."""
    return list(config["perturb"]["methods"])


def dataset_methods(config: Config, dataset: str) -> list[str]:
    """Perturbation methods run on ``dataset`` (``datasets.<name>.methods``, default perturb.methods)."""
    return list(config["datasets"][dataset].get("methods") or methods(config))


def dataset_seeds(config: Config, dataset: str) -> list[int]:
    """Sampling seeds of ``dataset``."""
    return list(config["datasets"][dataset].get("seeds") or config["sample"]["seeds"])


def dataset_n_per_seed(config: Config, dataset: str) -> int:
    """Comparisons drawn per seed for ``dataset``."""
    return int(config["datasets"][dataset].get("n_per_seed", config["sample"]["n_per_seed"]))


def orientation_mode(config: Config, dataset: str) -> str:
    """``per_rm`` (paper §3: each RM's own preference orients its perturbations) or ``shared`` (§4)."""
    spec = config["datasets"][dataset]
    return spec.get("orientation") or config["perturb"].get("orientation", "per_rm")


def shared_rms(config: Config, dataset: str) -> list[str]:
    """RMs whose agreement defines the shared comparisons of ``dataset`` (default: its RMs)."""
    chosen = config["datasets"][dataset].get("shared_rms") or config["perturb"].get("shared_rms")
    return list(chosen or dataset_rms(config, dataset))


def orienter_for(config: Config, dataset: str, rm: str) -> str:
    """Which perturbation set RM ``rm`` is explained with on ``dataset``."""
    return SHARED_ORIENTER if orientation_mode(config, dataset) == "shared" else rm


def orienters(config: Config, dataset: str) -> list[str]:
    """Distinct perturbation sets to generate per method on ``dataset``."""
    if orientation_mode(config, dataset) == "shared":
        return [SHARED_ORIENTER]
    return dataset_rms(config, dataset)


def orienting_rms(config: Config, dataset: str, orienter: str) -> list[str]:
    """RMs whose original scores orient the perturbation set ``orienter`` of ``dataset``."""
    return shared_rms(config, dataset) if orienter == SHARED_ORIENTER else [orienter]


def method_entry(config: Config, method: str) -> object:
    """The registry entry of configured perturbation ``method`` (a method or a ``perturb.variants`` name)."""
    from rmexplain.perturb.base import method_entry as entry

    return entry(section(config, "perturb"), method)


def shared_request_input(config: Config, dataset: str, method: str, orienter: str) -> list[str]:
    """For an LLM variant whose method also runs on ``dataset``: that method's perturbation table, so the
    variant's job starts after it and finds the requests they share (two_step's step 1) in the cache."""
    from rmexplain.perturb.base import registered_method

    base = registered_method(section(config, "perturb"), method)
    if base == method or base not in dataset_methods(config, dataset):
        return []
    if not method_entry(config, method).uses_llm:
        return []
    return [fmt(PERTURBATIONS, dataset=dataset, method=base, orienter=orienter)]


def llm_methods_used(config: Config) -> list[str]:
    """Configured perturbation methods that call the LLM."""
    return [m for m in section(config, "perturb").get("methods", []) if method_entry(config, m).uses_llm]


def discovery_enabled(config: Config) -> bool:
    """Whether attribute discovery runs (``perturb.discover.enabled``)."""
    return bool((section(config, "perturb").get("discover") or {}).get("enabled", False))


def llm_needed(config: Config) -> bool:
    """Whether any perturbation or discovery job calls the LLM."""
    return bool(llm_methods_used(config)) or discovery_enabled(config)


def judge_enabled(config: Config) -> bool:
    """Whether the optional LLM attribute-change judge runs."""
    return bool(section(config, "analysis").get("judge", {}).get("enabled", False))


def llm_sections_in_use(config: Config) -> dict[str, Config]:
    """Config key -> effective ``llm`` section, for the jobs that will run: perturbation and discovery
    (``llm``), and the analysis judge (``llm`` with the ``analysis.judge.llm`` overrides)."""
    llm = config.get("llm") or {}
    sections = {"llm": llm} if llm_needed(config) else {}
    judge = section(config, "analysis").get("judge") or {}
    if judge.get("enabled"):
        sections["analysis.judge.llm" if judge.get("llm") else "llm"] = {**llm, **(judge.get("llm") or {})}
    return sections


# ── data, scores, perturbations, explanations, evaluation ─────────────────────────────────────────────────
def embedded_data_file(part: str) -> str:
    """Path of a bundled JSONL part (an input of the rules that read it, so edits to it rerun them)."""
    return str(resources.files("rmexplain.data") / "embedded" / f"{part}.jsonl")


def dataset_source_files(config: Config, dataset: str) -> list[str]:
    """Local files a dataset is read from (bundled part or user file); hub datasets have none."""
    spec = config["datasets"][dataset]
    if spec["source"] == "embedded":
        return [embedded_data_file(spec["part"])]
    if spec["source"] == "file":
        return [spec["path"]]
    return []


def rm_artifact_files(config: Config, rm: str) -> dict[str, str]:
    """Files from earlier rules that RM ``rm``'s backend needs (its declared ``artifacts``)."""
    from rmexplain.score.base import backend_of

    names = backend_of(config["reward_models"][rm]).artifacts
    return {name: fmt(RM_ARTIFACTS[name], rm=rm) for name in names}


def orientation_score_files(config: Config, dataset: str, orienter: str) -> list[str]:
    """The original-score tables that orient perturbation set ``orienter``."""
    return [fmt(ORIGINAL_SCORES, dataset=dataset, rm=rm) for rm in orienting_rms(config, dataset, orienter)]


def perturbation_files_for_rm(config: Config, dataset: str, rm: str) -> list[str]:
    """All perturbation tables that RM ``rm`` scores on ``dataset`` (every method of the dataset)."""
    orienter = orienter_for(config, dataset, rm)
    return [
        fmt(PERTURBATIONS, dataset=dataset, method=m, orienter=orienter)
        for m in dataset_methods(config, dataset)
    ]


def metric_files(config: Config) -> list[str]:
    """All per-(dataset, method, RM) metric tables of the evaluation datasets."""
    return [
        fmt(METRICS, dataset=d, method=m, rm=r)
        for d in stage_datasets(config, "evaluation")
        for m in dataset_methods(config, d)
        for r in dataset_rms(config, d)
    ]


def evaluation_table_files(config: Config) -> list[str]:
    """The paper's Tables 1, 2 and 5 as CSV, Markdown and HTML."""
    return [fmt(TABLE, table=t, ext=e) for t in EVALUATION_TABLES for e in TABLE_EXTS]


def evaluation_figure_files(config: Config) -> list[str]:
    """Figures of the evaluation stage."""
    return [fmt(FIGURE, figure="methods", ext=figure_ext(config))]


def explanation_targets(config: Config) -> list[str]:
    """Files ``rule all`` asks of the explanation stage: the evaluation tables and figures."""
    if not stage_datasets(config, "evaluation"):
        return []
    return evaluation_table_files(config) + evaluation_figure_files(config)


# ── attribute discovery ───────────────────────────────────────────────────────────────────────────────────
def discovery_orienter(config: Config, dataset: str) -> str:
    """Whose preference and scores go into the discovery prompts on ``dataset``: ``perturb.discover.rm``,
    else the dataset's first orienter (its first RM, or ``shared``)."""
    chosen = (section(config, "perturb").get("discover") or {}).get("rm")
    return chosen or orienters(config, dataset)[0]


def discovery_targets(config: Config) -> list[str]:
    """Files ``rule all`` asks of attribute discovery (none unless ``perturb.discover.enabled``)."""
    if not discovery_enabled(config):
        return []
    return [
        fmt(pattern, dataset=dataset, orienter=discovery_orienter(config, dataset))
        for dataset in datasets(config)
        for pattern in (DISCOVERY_ANSWERS, DISCOVERY_CSV, DISCOVERY_MD)
    ]


def _two_step_templates(settings: Config) -> dict[str, str]:
    from rmexplain.llm.prompts import template_path

    paths = settings.get("prompts") or {}
    names = {"step1": "two_step_step1", "step2": "two_step_step2"}
    focus = settings.get("focus", "center")
    if focus != "pass":
        names[f"focus_{focus}"] = f"two_step_focus_{focus}"
    return {key: str(template_path(name, paths.get(key))) for key, name in names.items()}


def prompt_inputs(config: Config, method: str) -> dict[str, str]:
    """Prompt-template files a perturbation job reads (rule inputs, so editing one reruns the job)."""
    from rmexplain.llm.prompts import template_path
    from rmexplain.perturb.base import method_settings, registered_method

    perturb = section(config, "perturb")
    settings, base = method_settings(perturb, method), registered_method(perturb, method)
    if base == "two_step":
        return {f"prompt_{k}": v for k, v in _two_step_templates(settings).items()}
    if base == "random":
        return {"prompt_random": str(template_path("random", settings.get("prompt")))}
    return {}


def discovery_prompt_input(config: Config) -> str:
    """The App. A template file the discovery jobs read."""
    from rmexplain.llm.prompts import template_path

    return str(template_path("discover", (section(config, "perturb").get("discover") or {}).get("prompt")))


# ── analyses ──────────────────────────────────────────────────────────────────────────────────────────────
def analysed_methods(config: Config) -> list[str]:
    """Perturbation methods the attribute analyses run on (default: every attribute-conditioned one)."""
    chosen = section(config, "analysis").get("methods")
    if chosen:
        return list(chosen)
    return [m for m in methods(config) if method_entry(config, m).attribute_conditioned]


def dataset_analysed_methods(config: Config, dataset: str) -> list[str]:
    """Analysed methods that run on ``dataset``."""
    return [m for m in analysed_methods(config) if m in dataset_methods(config, dataset)]


def example_rms(config: Config, dataset: str) -> list[str]:
    """RMs of ``dataset`` that get a one-RM representative example (default: all)."""
    chosen = section(config, "analysis").get("examples", {}).get("rms")
    rms = dataset_rms(config, dataset)
    return [rm for rm in chosen if rm in rms] if chosen else rms


def example_pairs(config: Config, dataset: str) -> list[tuple[str, str]]:
    """RM pairs of ``dataset`` that get a two-RM representative example (default: every pair)."""
    pairs = section(config, "analysis").get("examples", {}).get("pairs")
    rms = dataset_rms(config, dataset)
    if pairs:
        return [(a, b) for a, b in pairs if a in rms and b in rms]
    return list(combinations(rms, 2))


def probes_enabled(config: Config) -> bool:
    """Whether any probe phrase is configured."""
    return bool(section(config, "analysis").get("probes"))


def analysed_pairs(config: Config) -> list[tuple[str, str]]:
    """Every analysed (dataset, method): analysis datasets × their analysed methods."""
    return [(d, m) for d in stage_datasets(config, "analysis") for m in dataset_analysed_methods(config, d)]


def _per_dataset_method(config: Config, pattern: str, **extra: str) -> list[str]:
    return [fmt(pattern, dataset=d, method=m, **extra) for d, m in analysed_pairs(config)]


def judgement_files(config: Config) -> list[str]:
    """Every judge output (one per perturbation set)."""
    return [
        fmt(JUDGEMENTS, dataset=d, method=m, orienter=o)
        for d, m in analysed_pairs(config)
        for o in orienters(config, d)
    ]


def analysis_table_inputs(config: Config, table: str) -> list[str]:
    """The per-(dataset, method) Parquet files one summary table is built from."""
    pattern = {
        "pfr": PFR,
        "tau_rms": TAU_RMS,
        "tau_sides": TAU_SIDES,
        "representative_examples": EXAMPLES,
        "probe_win_rate": PROBES,
    }.get(table)
    if pattern is not None:
        return _per_dataset_method(config, pattern)
    if table == "attribute_judge":
        return judgement_files(config)
    raise KeyError(f"unknown analysis table {table!r}; known: {ANALYSIS_TABLES}")


def analysis_tables(config: Config) -> list[str]:
    """Names of the summary tables this config produces."""
    names = ["pfr", "tau_rms", "tau_sides", "representative_examples"]
    if probes_enabled(config):
        names.append("probe_win_rate")
    if judge_enabled(config):
        names.append("attribute_judge")
    return names


def analysis_table_files(config: Config) -> list[str]:
    """Every analysis table as CSV, Markdown and HTML."""
    return [fmt(TABLE, table=t, ext=e) for t in analysis_tables(config) for e in TABLE_EXTS]


def summary_figures(config: Config) -> list[str]:
    """Names of the figures summarising all datasets and methods."""
    names = ["rank_similarity"]
    if stage_datasets(config, "evaluation"):
        names.append("correctness")
    if rewards_example(config):
        names.append("rewards_example")
    if probes_enabled(config):
        names.append("probe_win_rate")
    if judge_enabled(config):
        names.append("attribute_judge")
    return names


def summary_figure(config: Config, name: str) -> str:
    """Path of one summary figure in the configured format."""
    return fmt(SUMMARY_FIGURE, figure=name, ext=figure_ext(config))


def example_slot_file(config: Config, part: str) -> str:
    """Pattern of one part (``figure``, ``html``, ``md``) of an example (wildcards dataset, method, slot)."""
    suffix = figure_ext(config) if part == "figure" else part
    return f"{EXAMPLE_SLOT}.{suffix}"


def example_slots(config: Config, dataset: str) -> dict[str, dict[str, list]]:
    """Every example slot of ``dataset`` (one-RM examples first, then each pair's Y+ and Y−) with what it
    shows, as ``run_examples`` arguments: ``rms``, ``pairs``, ``sides``."""
    slots = {rm: {"rms": [rm], "pairs": [], "sides": []} for rm in example_rms(config, dataset)}
    for a, b in example_pairs(config, dataset):
        for side, label in SIDE_LABELS.items():
            slots[f"{a}_vs_{b}_{label}"] = {"rms": [], "pairs": [[a, b]], "sides": [side]}
    return slots


def example_slot(config: Config, dataset: str, slot: str) -> dict[str, list]:
    """What one example slot of ``dataset`` shows (:func:`example_slots`)."""
    slots = example_slots(config, dataset)
    if slot not in slots:
        raise KeyError(f"{slot!r} is no example of dataset {dataset!r}")
    return slots[slot]


def example_outputs(config: Config, dataset: str, method: str) -> dict[str, list[str]]:
    """The example files of one (dataset, method) by part: figures, HTML pages, Markdown pages."""
    slots = example_slots(config, dataset)
    return {
        part: [fmt(example_slot_file(config, part), dataset=dataset, method=method, slot=s) for s in slots]
        for part in EXAMPLE_PARTS
    }


def example_files(config: Config) -> list[str]:
    """Figures and pages of every representative example."""
    return [
        f
        for d, m in analysed_pairs(config)
        for files in example_outputs(config, d, m).values()
        for f in files
    ]


def analysis_figure_files(config: Config) -> list[str]:
    """Every analysis figure (per-dataset PFR and local-τ figures, summaries, examples)."""
    ext = figure_ext(config)
    files = _per_dataset_method(config, PFR_FIGURE, ext=ext) + _per_dataset_method(
        config, LOCAL_TAU_FIGURE, ext=ext
    )
    files += [summary_figure(config, f) for f in summary_figures(config)]
    return files + example_files(config)


def rewards_example(config: Config) -> dict[str, object] | None:
    """The resolved ``analysis.rewards_example`` (paper Fig. 6), or None when it is off: ``dataset``,
    ``method``, ``rm`` (whose representative example), ``comparison_id``, ``rms`` (the dataset's RMs)."""
    settings = section(config, "analysis").get("rewards_example") or {}
    if not settings.get("enabled"):
        return None
    dataset = settings.get("dataset") or stage_datasets(config, "analysis")[0]
    return {
        "dataset": dataset,
        "method": settings.get("method") or dataset_analysed_methods(config, dataset)[0],
        "rm": settings.get("rm") or dataset_rms(config, dataset)[0],
        "comparison_id": settings.get("comparison_id"),
        "rms": dataset_rms(config, dataset),
    }


def analysis_targets(config: Config) -> list[str]:
    """Files ``rule all`` asks of the analysis stage: tables (CSV, Markdown, HTML), figures, example pages."""
    if not analysed_pairs(config):
        # Only unconditioned methods (random, polyjuice): no attributes to analyse; Table 5 still applies.
        return [summary_figure(config, "correctness")]
    return analysis_table_files(config) + analysis_figure_files(config)


# ── optimal and pessimal tokens ───────────────────────────────────────────────────────────────────────────
def tokens_enabled(config: Config) -> bool:
    """Whether the token part runs."""
    return bool(section(config, "tokens").get("enabled", False))


def token_rms(config: Config) -> list[str]:
    """RMs scanned, in config order."""
    chosen = section(config, "tokens").get("reward_models")
    return list(chosen) if chosen else reward_models(config)


def token_prompts(config: Config) -> list[str]:
    """Prompt ids, in config order."""
    return list(section(config, "tokens")["prompts"])


def gcg_rms(config: Config) -> list[str]:
    """RMs GCG runs on: the scanned RMs whose backend scores exact token ids, when ``tokens.gcg.enabled``."""
    from rmexplain.score.base import backend_of

    if not section(config, "tokens")["gcg"]["enabled"]:
        return []
    return [rm for rm in token_rms(config) if backend_of(config["reward_models"][rm]).exact_token_ids]


def gcg_prompts(config: Config) -> list[str]:
    """Prompt ids GCG searches."""
    return list(section(config, "tokens")["gcg"].get("prompts") or token_prompts(config))


def scan_mode(config: Config) -> str:
    """Which scans the analyses read: ``exact`` or ``official`` (``tokens.scan.mode``)."""
    return section(config, "tokens")["scan"].get("mode", "exact")


def official_score_files(config: Config) -> dict[str, str]:
    """Token RMs whose scans come from the paper's published CSVs (``tokens.official_scores``): RM -> the
    ``<org>--<model>.csv`` of its hub id."""
    from rmexplain.tokens.paper import official_file_name

    official = section(config, "tokens").get("official_scores")
    if not official:
        return {}
    found = {}
    for rm in token_rms(config):
        model = config["reward_models"][rm].get("model")
        path = Path(official["path"]) / official_file_name(model) if model else None
        if path is not None and path.is_file():
            found[rm] = str(path)
    return found


def _scan_file(rm: str, prompt: str, mode: str, imported: dict[str, str]) -> str:
    """The scan of (``rm``, ``prompt``) in ``mode``, or its import when ``rm`` is in ``imported``."""
    if rm in imported:
        return fmt(TOKEN_SCAN_IMPORTED, rm=rm, prompt=prompt)
    return fmt(TOKEN_SCAN_IN, scan_dir=SCAN_DIRS[mode], rm=rm, prompt=prompt)


def token_scan_files(config: Config, prompts: list[str] | None = None) -> list[str]:
    """Every scan the analyses read (all RMs × the given prompts, default all), in ``tokens.scan.mode``."""
    mode, imported = scan_mode(config), official_score_files(config)
    return [
        _scan_file(rm, p, mode, imported)
        for rm in token_rms(config)
        for p in (prompts or token_prompts(config))
    ]


def scan_comparisons(config: Config) -> list[tuple[str, str, str, str]]:
    """``(rm, prompt, exact scan, official scan)`` compared when ``tokens.scan.compare``: every scanned
    (not imported) RM whose backend scores exact token ids."""
    from rmexplain.score.base import backend_of

    if not section(config, "tokens")["scan"].get("compare"):
        return []
    imported = official_score_files(config)
    rms = [
        rm
        for rm in token_rms(config)
        if rm not in imported and backend_of(config["reward_models"][rm]).exact_token_ids
    ]
    return [
        (rm, p, _scan_file(rm, p, "exact", imported), _scan_file(rm, p, "official", imported))
        for rm in rms
        for p in token_prompts(config)
    ]


def paper_analysis_enabled(config: Config) -> bool:
    """Whether the paper's token tables and figures are written (``tokens.paper_analysis.enabled``)."""
    return bool(section(config, "tokens")["paper_analysis"].get("enabled"))


def paper_token_tables(config: Config) -> dict[str, str]:
    """The paper's token tables by ``run_paper_analyses`` key (empty unless enabled)."""
    if not paper_analysis_enabled(config):
        return {}
    tables = {name: token_table(f"paper_{name}") for name in PAPER_TOKEN_TABLES}
    if not section(config, "tokens")["paper_analysis"].get("frequency_list"):
        tables["frequency_slopes"] = token_table("paper_frequency_slopes_wordfreq")  # not the paper's list
    return tables


def paper_token_figures(config: Config) -> dict[str, str]:
    """Fig. 1 (``violins``) and Fig. 4 (``framing_<a>_<b>``) as the paper draws them (empty when off)."""
    if not paper_analysis_enabled(config):
        return {}
    names = ["violins", *framing_names(config)]
    return {name: token_figure(config, f"paper_{name}") for name in names}


def human_ranking_enabled(config: Config) -> bool:
    """Whether an external human ranking is configured (``tokens.human_ranking``)."""
    return bool(section(config, "tokens").get("human_ranking"))


def human_scores_in_file(config: Config, rm: str) -> bool:
    """Whether RM ``rm`` reads its human-ranking scores from the ranking file (its model names a column)."""
    from rmexplain.tokens.stages import scores_in_ranking_file

    human = section(config, "tokens").get("human_ranking")
    return bool(human) and scores_in_ranking_file(config["reward_models"][rm], human["path"]) is not None


def token_human_files(config: Config) -> list[str]:
    """Per-RM scores of the human-ranking items."""
    if not human_ranking_enabled(config):
        return []
    return [fmt(TOKEN_HUMAN_SCORES, rm=rm) for rm in token_rms(config)]


def gcg_files(config: Config) -> list[str]:
    """Every GCG run (RM × prompt × objective)."""
    objectives = section(config, "tokens")["gcg"]["objectives"]
    return [
        fmt(TOKEN_GCG, rm=rm, prompt=p, objective=o)
        for rm in gcg_rms(config)
        for p in gcg_prompts(config)
        for o in objectives
    ]


def framing_names(config: Config) -> list[str]:
    """``framing_<a>_<b>`` for each configured pair."""
    return [f"framing_{a}_{b}" for a, b in section(config, "tokens")["analysis"]["framing_pairs"]]


def token_figure(config: Config, name: str) -> str:
    """Path of one token figure in the configured format; ``name`` may hold wildcards such as ``{a}``."""
    return TOKEN_FIGURE.replace("{figure}", name).replace("{ext}", figure_ext(config))


def token_table(name: str) -> str:
    """Path of one token CSV table; ``name`` may hold wildcards."""
    return TOKEN_TABLE.replace("{table}", name)


def elo_prompts(config: Config) -> list[str]:
    """Bundled EloEverything prompts whose Fig. 5 tables the token part writes (``tokens.elo``)."""
    elo = section(config, "tokens").get("elo") or {}
    return list(elo.get("prompts") or []) if elo.get("enabled") else []


def elo_table(prompt: str, part: str) -> str:
    """One Fig. 5 table of a bundled EloEverything prompt (``prompt`` and ``part`` may be wildcards)."""
    return token_table(f"elo_{prompt}_{part}")


ELO_AGREEMENT_TABLES = ("kendall_tau", "mds", "rsa")  # the ten RMs against each other on the Elo items
ELO_AGREEMENT_FIGURES = ("tau_heatmap", "mds_map")


def elo_figure(config: Config, prompt: str, part: str) -> str:
    """One figure of the between-RM analyses on a bundled EloEverything prompt (wildcards allowed)."""
    return token_figure(config, f"elo_{prompt}_{part}")


def elo_prompt_ids() -> list[str]:
    """The bundled EloEverything prompts (the ``elo_prompt`` wildcard's values)."""
    from rmexplain.tokens.elo import ELO_PROMPTS

    return list(ELO_PROMPTS)


def elo_data_file(prompt: str) -> str:
    """The bundled EloEverything Parquet file of one prompt (an input, so a data update reruns the rule)."""
    from rmexplain.tokens.elo import DATA_DIR, ELO_PROMPTS

    return str(Path(DATA_DIR) / ELO_PROMPTS[prompt].file)


def token_figure_files(config: Config) -> list[str]:
    """All token figures of the report."""
    names = ["violins", "tau_heatmap", "mds", "sentiment_slopes", "frequency_slopes", *framing_names(config)]
    if human_ranking_enabled(config):
        names.append("human_disagreements")
    if scan_comparisons(config):
        names.append("scan_modes")
    elo = [elo_figure(config, p, part) for p in elo_prompts(config) for part in ELO_AGREEMENT_FIGURES]
    return [token_figure(config, n) for n in names] + list(paper_token_figures(config).values()) + elo


def token_table_files(config: Config) -> list[str]:
    """All token tables."""
    names = ["extremes", *TOKEN_AGREEMENT_TABLES, *TOKEN_LEXICAL_TABLES, *framing_names(config)]
    if human_ranking_enabled(config):
        names += [*TOKEN_HUMAN_TABLES, *(f"human_figure5_{part}" for part in ELO_TABLES)]
    if gcg_rms(config):
        names.append("gcg")
    if scan_comparisons(config):
        names.append("scan_modes")
    tables = [token_table(n) for n in names] + list(paper_token_tables(config).values())
    parts = (*ELO_TABLES, *ELO_AGREEMENT_TABLES)
    return tables + [elo_table(p, part) for p in elo_prompts(config) for part in parts]


def token_targets(config: Config) -> list[str]:
    """Files ``rule all`` asks of the token part (none unless ``tokens.enabled``)."""
    if not tokens_enabled(config):
        return []
    compared = [path for *_, exact, official in scan_comparisons(config) for path in (exact, official)]
    return [
        *dict.fromkeys([*token_scan_files(config), *compared]),
        *token_table_files(config),
        *token_figure_files(config),
        *gcg_files(config),
    ]


# ── reproduction ──────────────────────────────────────────────────────────────────────────────────────────
REPRODUCTION = "reproduction"  # results/tables/reproduction.{csv,md,html}
REPRODUCTION_FIGURE = "results/figures/reproduction.{ext}"


def reproduction_inputs(config: Config) -> dict[str, list[str]]:
    """The files the reproduction table reads: evaluation metrics and the analyses' τ and probe tables."""
    return {
        "metrics": metric_files(config),
        "tau_rms": analysis_table_inputs(config, "tau_rms"),
        "tau_sides": analysis_table_inputs(config, "tau_sides"),
        "probes": analysis_table_inputs(config, "probe_win_rate") if probes_enabled(config) else [],
    }


def reproduction_targets(config: Config) -> list[str]:
    """The reproduction table and figure, when the config declares a paper's design (``reproduce``)."""
    if not config.get("reproduce"):
        return []
    tables = [fmt(TABLE, table=REPRODUCTION, ext=e) for e in TABLE_EXTS]
    return [*tables, fmt(REPRODUCTION_FIGURE, ext=figure_ext(config))]


# ── the report ────────────────────────────────────────────────────────────────────────────────────────────
def report_sections(config: Config) -> list[str]:
    """The report's result sections this config fills, in reading order."""
    present = {
        "Reproduction": bool(config.get("reproduce")),
        "Evaluation": bool(stage_datasets(config, "evaluation")),
        "Analyses": bool(analysed_pairs(config)),
        "Representative examples": bool(analysed_pairs(config)),
        "Attribute discovery": discovery_enabled(config),
        "Optimal and pessimal tokens": tokens_enabled(config),
    }
    return [name for name, shown in present.items() if shown]


def report_category(config: Config, name: str) -> str:
    """A report category, numbered by its place among the sections present (the report's menu sorts
    categories by name, so the number keeps the reading order: Reproduction first)."""
    sections = report_sections(config)
    return f"{sections.index(name) + 1}. {name}" if name in sections else name


# ── everything ────────────────────────────────────────────────────────────────────────────────────────────
def all_targets(config: Config) -> list[str]:
    """Every file ``rule all`` asks for."""
    return [
        *reproduction_targets(config),
        *explanation_targets(config),
        *discovery_targets(config),
        *analysis_targets(config),
        *token_targets(config),
    ]
