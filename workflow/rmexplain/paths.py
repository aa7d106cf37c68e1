"""Every output path of the workflow, as patterns and their formatting: the layout of ``results/``.

A leaf: no config interpretation (that is ``rmexplain.design``), no file lists of a config (that is
``rmexplain.targets``), no I/O, no import of the project.
"""

from __future__ import annotations

from importlib import resources
from pathlib import PurePosixPath

# ── data, scores, perturbations, explanations, evaluation ─────────────────────────────────────────────────
COMPARISONS = "results/data/{dataset}/comparisons.parquet"
DATA_ORIGIN = "results/data/{dataset}/origin.json"  # what the sampling read and the rows it skipped
DEMO_HEAD = "results/models/{rm}/head.pt"
ORIGINAL_SCORES = "results/scores/{dataset}/originals/{rm}.parquet"
PERTURBATIONS = "results/perturbations/{dataset}/{method}/{orienter}.parquet"
# Skipped slots of each perturbation table (a separate tree, so no path is ambiguous with PERTURBATIONS).
PERTURB_SKIPS = "results/skipped/perturb/{dataset}/{method}/{orienter}.parquet"
PERTURBATION_REWARDS = "results/scores/{dataset}/perturbations/{rm}.parquet"
EXPLANATIONS = "results/explanations/{dataset}/{method}/{rm}.parquet"
# Every distinct text of a dataset (originals and perturbations) embedded once, for distances and demo RMs.
TEXT_EMBEDDINGS = "results/embeddings/{dataset}.parquet"
DISTANCES = "results/distances/{dataset}/{method}/{orienter}.parquet"
METRICS = "results/metrics/{dataset}/{method}/{rm}.parquet"
# ── attribute effects: edits in both directions (no RM), their rewards, the effects, planted recovery ─────
EFFECT_EDITS = "results/effects/{dataset}/{method}/edits.parquet"
EFFECT_SKIPS = "results/skipped/effects/{dataset}/{method}.parquet"
EFFECT_EMBEDDINGS = "results/effects/{dataset}/embeddings.parquet"
EFFECT_REWARDS = "results/scores/{dataset}/effects/{rm}.parquet"
# A base RM's reward mean and sd on the bundled responses: the unit of a planted RM's bias strength.
REWARD_SCALE = "results/models/{rm}/reward_scale.json"
TABLE = "results/tables/{table}.{ext}"
TABLE_EXTS = ("csv", "md", "html")  # the HTML copy is what the report shows
EVALUATION_TABLES = ("coverage", "distances", "coverage_by_correctness", "distances_by_correctness")
FIGURE = "results/figures/{figure}.{ext}"
# Files an RM backend needs from earlier rules, by the names the backends declare (``artifacts``).
RM_ARTIFACTS = {"head": DEMO_HEAD}

# ── hub downloads ─────────────────────────────────────────────────────────────────────────────────────────
HUB_MARKER = "results/hub/{model}.json"

# ── provenance: what produced the numbers ─────────────────────────────────────────────────────────────────
# Each LLM job's record of its LLM use (configured model, sampling, the model names the server reported).
LLM_USE_PERTURB = "results/llm_use/perturb/{dataset}/{method}/{orienter}.json"
LLM_USE_DISCOVERY = "results/llm_use/discover/{dataset}/{orienter}.json"
LLM_USE_JUDGE = "results/llm_use/judge/{dataset}/{method}/{orienter}.json"
LLM_USE_EFFECTS = "results/llm_use/effects/{dataset}/{method}.json"
LLM_USE_BIASES = "results/llm_use/discovery/{dataset}/{engine}/round{round}.json"  # bias discovery
LLM_USE_BIASES_JUDGE = "results/llm_use/discovery/{dataset}/{engine}/round{round}.judge.json"
PROVENANCE = "results/provenance.json"
PROVENANCE_CONFIG = "results/provenance/config.json"  # the checked config itself; its sha256 is the record's
# Each job that loads an RM, calls an LLM or may use a GPU leaves a record of the environment it ran in.
JOB_RECORDS = "results/provenance/jobs"
PROVENANCE_TABLE = "provenance"  # results/tables/provenance.{csv,md,html}
# Every earlier record, one JSON line each: read by the provenance job (to name what changed since the last
# run) and appended to; no rule declares it, so Snakemake never deletes it before the job runs.
PROVENANCE_HISTORY = "results/provenance_history.jsonl"


def job_record(output: str) -> str:
    """The record of the job that writes ``output`` (a path or a pattern under ``results/``): the same
    path under ``JOB_RECORDS``, ending in ``.json`` (``results/scores/d/originals/rm.parquet`` →
    ``results/provenance/jobs/scores/d/originals/rm.json``)."""
    return str(PurePosixPath(JOB_RECORDS, output.removeprefix("results/")).with_suffix(".json"))


# ── attribute discovery ───────────────────────────────────────────────────────────────────────────────────
DISCOVERY_ANSWERS = "results/discovery/{dataset}/{orienter}/answers.parquet"
DISCOVERY_CSV = "results/discovery/{dataset}/{orienter}/attributes.csv"
DISCOVERY_MD = "results/discovery/{dataset}/{orienter}/attributes.md"

# ── bias discovery (the ``discovery`` section; not App. A's attribute discovery above) ────────────────────
# Each engine's rounds: the features it proposed, their edits, the effects every RM's rewards give them.
BIASES_ROUND = "results/discovery/{dataset}/engines/{engine}/round{round}"
BIASES_ROUND_EDITS = BIASES_ROUND + "/edits.parquet"
BIASES_ROUND_CANDIDATES = BIASES_ROUND + "/candidates.parquet"
BIASES_ROUND_EFFECTS = BIASES_ROUND + "/effects.parquet"
BIASES_SKIPS = "results/skipped/discovery/{dataset}/{engine}/round{round}.parquet"
# Rounds after the first are encoded and scored on their own (round 1 with the effect edits, EFFECT_*).
BIASES_ROUND_EMBEDDINGS = BIASES_ROUND + "/embeddings.parquet"
BIASES_ROUND_REWARDS = "results/scores/{dataset}/discovery/{engine}/round{round}/{rm}.parquet"
BIASES_EDITS = "results/discovery/{dataset}/edits.parquet"  # every tested edit of the dataset
BIASES_TABLE = "results/discovery/discovered_biases.parquet"  # the table below, as Parquet
DISCOVERED_BIASES = "discovered_biases"  # results/tables/discovered_biases.{csv,md,html}
BIASES_RECALL = "discovery_recall"  # results/tables/discovery_recall.{csv,md,html}: planted RMs
BIASES_FIGURE = "results/figures/discovery/discovered_biases.{ext}"  # the table's findings, drawn

# ── analyses ──────────────────────────────────────────────────────────────────────────────────────────────
ANALYSIS_DIR = "results/analysis/{dataset}/{method}"
PFR = ANALYSIS_DIR + "/pfr.parquet"
TAU_RMS = ANALYSIS_DIR + "/tau_rms.parquet"
TAU_SIDES = ANALYSIS_DIR + "/tau_sides.parquet"
LOCAL_TAU = ANALYSIS_DIR + "/local_tau.parquet"
EXAMPLES = ANALYSIS_DIR + "/examples.parquet"
PROBES = ANALYSIS_DIR + "/probe_win_rate.parquet"
JUDGEMENTS = ANALYSIS_DIR + "/judge/{orienter}.parquet"
ATTRIBUTE_EFFECTS = ANALYSIS_DIR + "/attribute_effects.parquet"
EFFECTS_FIGURE = "results/figures/analysis/effects/{dataset}/{method}.{ext}"
# The findings (docs/findings.md): each effect edit's reward change per RM, the findings table, and the
# report's landing text with the findings first (the Snakefile's `report:` reads it once it exists).
EFFECT_CHANGES = "results/findings/{dataset}/{method}/changes.parquet"
FINDINGS = "results/findings/findings.parquet"
FINDINGS_TABLE = "findings"  # results/tables/findings.{csv,md,html}
REPORT_LANDING = "results/findings/landing.rst"
# The carrier re-scored (docs/findings.md): each proposed (finding, class)'s edits with the class undone,
# their embeddings (for RMs that look texts up) and every RM's rewards of them.
CARRIER_EDITS = "results/findings/{dataset}/carriers/edits.parquet"
CARRIER_EMBEDDINGS = "results/findings/{dataset}/carriers/embeddings.parquet"
CARRIER_REWARDS = "results/scores/{dataset}/carriers/{rm}.parquet"
PLANTED_RECOVERY = "planted_recovery"  # results/tables/planted_recovery.{csv,md,html}: per planted RM
PLANTED_RECALL = "planted_recall"  # results/tables/planted_recall.{csv,md,html}: recall@k per estimator
# Representative examples: a figure, an HTML page (figure embedded, texts) and a Markdown copy of the page.
# One example per slot: an RM's name, or ``<rm_a>_vs_<rm_b>_<Yplus|Yminus>`` for a pair on one side.
EXAMPLE_SLOT = "results/analysis/examples/{dataset}/{method}/{slot}"
EXAMPLE_PARTS = ("figure", "html", "md")
PFR_FIGURE = "results/figures/analysis/pfr/{dataset}/{method}.{ext}"
LOCAL_TAU_FIGURE = "results/figures/analysis/local_tau/{dataset}/{method}.{ext}"
SUMMARY_FIGURE = "results/figures/analysis/{figure}.{ext}"

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


REPRODUCTION = "reproduction"  # results/tables/reproduction.{csv,md,html}
TRUNCATION = "truncation"  # results/tables/truncation.{csv,md,html}: texts cut at the RMs' token limits
PERTURBATION_SKIPS_TABLE = "perturbation_skips"  # results/tables/…: every perturbation job's skips
FOREIGN_ORIENTATION_TABLE = "foreign_rm_orientation"  # results/tables/…: RMs outside shared_rms
REPRODUCTION_FIGURE = "results/figures/reproduction.{ext}"
ELO_AGREEMENT_TABLES = ("kendall_tau", "mds", "rsa")  # the ten RMs against each other on the Elo items
ELO_AGREEMENT_FIGURES = ("tau_heatmap", "mds_map")


def fmt(pattern: str, **wildcards: str) -> str:
    """Fill a path pattern."""
    return pattern.format(**wildcards)


def table_file(name: str, ext: str) -> str:
    """One summary table (``results/tables``) in one of TABLE_EXTS."""
    return fmt(TABLE, table=name, ext=ext)


def summary_figure(name: str, ext: str) -> str:
    """One figure summarising all datasets and methods."""
    return fmt(SUMMARY_FIGURE, figure=name, ext=ext)


def example_slot_file(part: str, ext: str) -> str:
    """Pattern of one part (``figure``, ``html``, ``md``) of an example (wildcards dataset, method, slot);
    ``ext`` is the figure format."""
    return f"{EXAMPLE_SLOT}.{ext if part == 'figure' else part}"


def token_figure(name: str, ext: str) -> str:
    """Path of one token figure; ``name`` may hold wildcards such as ``{a}``."""
    return TOKEN_FIGURE.replace("{figure}", name).replace("{ext}", ext)


def token_table(name: str) -> str:
    """Path of one token CSV table; ``name`` may hold wildcards."""
    return TOKEN_TABLE.replace("{table}", name)


def elo_table(prompt: str, part: str) -> str:
    """One Fig. 5 table of a bundled EloEverything prompt (``prompt`` and ``part`` may be wildcards)."""
    return token_table(f"elo_{prompt}_{part}")


def elo_figure(prompt: str, part: str, ext: str) -> str:
    """One figure of the between-RM analyses on a bundled EloEverything prompt (wildcards allowed)."""
    return token_figure(f"elo_{prompt}_{part}", ext)


def rm_artifact_files(names: tuple[str, ...], rm: str) -> dict[str, str]:
    """The files of RM ``rm`` that its backend's declared ``artifacts`` name (keys of RM_ARTIFACTS)."""
    return {name: fmt(RM_ARTIFACTS[name], rm=rm) for name in names}


def official_file_name(hub_id: str) -> str:
    """The token paper's file name of an RM's published scan: ``<org>--<model>.csv``."""
    return hub_id.replace("/", "--") + ".csv"


def embedded_data_file(part: str) -> str:
    """Path of a bundled JSONL part (an input of the rules that read it, so edits to it rerun them)."""
    return str(resources.files("rmexplain.data") / "embedded" / f"{part}.jsonl")


# ── the explanation explorer ──────────────────────────────────────────────────────────────────────────────
EXPLORER = "results/explorer/index.html"  # the page; its data files are under EXPLORER_DATA
EXPLORER_DATA = "results/explorer/data"
