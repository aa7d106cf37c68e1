"""Paths, target lists and config checks of the optimal/pessimal-token part (issue 6).

``workflow/rules/tokens.smk`` and ``rule all`` (via ``token_files``) use these, so the layout of
``results/tokens/`` is defined once and testable without Snakemake. ``config`` is the validated config
(the JSON schema has filled the defaults of the ``tokens`` section).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

Config = dict[str, Any]

VOCABULARY = "results/tokens/vocabulary/{rm}.parquet"
SCAN = "results/tokens/scans/{rm}/{prompt}.parquet"
HUMAN_SCORES = "results/tokens/human/{rm}.parquet"
GCG = "results/tokens/gcg/{rm}/{prompt}/{objective}.parquet"
TABLE = "results/tokens/tables/{table}.csv"
FIGURE = "results/tokens/figures/{figure}.{ext}"

AGREEMENT_TABLES = ("kendall_tau", "mds", "rsa")
LEXICAL_TABLES = ("sentiment_slopes", "frequency_slopes")
HUMAN_TABLES = ("human_ranking", "human_disagreements")
# Backends whose tokenizer is the RM's own (exact ids); the rest scan the text tokenizer's vocabulary.
EXACT_ID_BACKENDS = ("transformers",)


class TokensConfigError(ValueError):
    """A ``tokens`` setting is wrong; the message names the key."""


def settings(config: Config) -> dict[str, Any]:
    """The ``tokens`` section (empty when absent)."""
    return config.get("tokens") or {}


def enabled(config: Config) -> bool:
    """Whether the token part runs."""
    return bool(settings(config).get("enabled", False))


def scan_threads(spec: dict[str, Any]) -> int:
    """CPU threads a scoring job asks for: 1 for text backends (small encoders; jobs run side by side and
    torch's all-core default oversubscribes them), 2 for transformers RMs."""
    return 2 if spec.get("backend") in EXACT_ID_BACKENDS else 1


def token_rms(config: Config) -> list[str]:
    """RMs scanned, in config order."""
    chosen = settings(config).get("reward_models")
    return list(chosen) if chosen else list(config["reward_models"])


def prompt_ids(config: Config) -> list[str]:
    """Prompt ids, in config order."""
    return list(settings(config)["prompts"])


def gcg_rms(config: Config) -> list[str]:
    """RMs GCG runs on: the scanned ``transformers`` RMs, when ``tokens.gcg.enabled``."""
    if not settings(config)["gcg"]["enabled"]:
        return []
    return [rm for rm in token_rms(config) if config["reward_models"][rm]["backend"] in EXACT_ID_BACKENDS]


def gcg_prompts(config: Config) -> list[str]:
    """Prompt ids GCG searches."""
    return list(settings(config)["gcg"].get("prompts") or prompt_ids(config))


def fmt(pattern: str, **wildcards: str) -> str:
    """Fill a path pattern."""
    return pattern.format(**wildcards)


def scan_files(config: Config, prompts: list[str] | None = None) -> list[str]:
    """Every scan table (all RMs × the given prompts, default all)."""
    return [fmt(SCAN, rm=rm, prompt=p) for rm in token_rms(config) for p in (prompts or prompt_ids(config))]


def human_files(config: Config) -> list[str]:
    """Per-RM scores of the human-ranking items."""
    return (
        [fmt(HUMAN_SCORES, rm=rm) for rm in token_rms(config)]
        if settings(config).get("human_ranking")
        else []
    )


def gcg_files(config: Config) -> list[str]:
    """Every GCG run (RM × prompt × objective)."""
    objectives = settings(config)["gcg"]["objectives"]
    return [
        fmt(GCG, rm=rm, prompt=p, objective=o)
        for rm in gcg_rms(config)
        for p in gcg_prompts(config)
        for o in objectives
    ]


def framing_names(config: Config) -> list[str]:
    """``framing_<a>_<b>`` for each configured pair."""
    return [f"framing_{a}_{b}" for a, b in settings(config)["analysis"]["framing_pairs"]]


def figure(config: Config, name: str) -> str:
    """Path of one figure in the configured format; ``name`` may hold wildcards such as ``{a}``."""
    return FIGURE.replace("{figure}", name).replace("{ext}", config.get("figures", {}).get("format", "png"))


def table(name: str) -> str:
    """Path of one CSV table; ``name`` may hold wildcards."""
    return TABLE.replace("{table}", name)


def figure_files(config: Config) -> list[str]:
    """All token figures of the report."""
    names = ["violins", "tau_heatmap", "mds", "sentiment_slopes", "frequency_slopes", *framing_names(config)]
    if settings(config).get("human_ranking"):
        names.append("human_disagreements")
    return [figure(config, n) for n in names]


def table_files(config: Config) -> list[str]:
    """All token tables."""
    names = ["extremes", *AGREEMENT_TABLES, *LEXICAL_TABLES, *framing_names(config)]
    if settings(config).get("human_ranking"):
        names += HUMAN_TABLES
    if gcg_rms(config):
        names.append("gcg")
    return [table(n) for n in names]


def check_tokens_config(config: Config) -> None:
    """Cross-key checks the JSON schema cannot express; raises TokensConfigError naming the key."""
    tokens = settings(config)
    rms = set(config["reward_models"])
    for rm in tokens.get("reward_models") or []:
        if rm not in rms:
            raise TokensConfigError(
                f"tokens.reward_models: {rm!r} is not a key of reward_models {sorted(rms)}"
            )
    prompts = set(tokens["prompts"])
    for pair in tokens["analysis"]["framing_pairs"]:
        for p in pair:
            if p not in prompts:
                raise TokensConfigError(
                    f"tokens.analysis.framing_pairs: {p!r} is not a key of tokens.prompts"
                )
    for p in tokens["gcg"].get("prompts") or []:
        if p not in prompts:
            raise TokensConfigError(f"tokens.gcg.prompts: {p!r} is not a key of tokens.prompts")
    vocabulary = tokens["vocabulary"]
    if vocabulary["mode"] == "list" and not (
        vocabulary.get("list_path") and Path(vocabulary["list_path"]).is_file()
    ):
        raise TokensConfigError(f"tokens.vocabulary.list_path: {vocabulary.get('list_path')!r} is not a file")
    human = tokens.get("human_ranking")
    if human and not Path(human["path"]).is_file():
        raise TokensConfigError(f"tokens.human_ranking.path: file {human['path']!r} does not exist")


def token_files(config: Config) -> list[str]:
    """Files ``rule all`` asks of the token part (none unless ``tokens.enabled``)."""
    if not enabled(config):
        return []
    check_tokens_config(config)
    return [*scan_files(config), *table_files(config), *figure_files(config), *gcg_files(config)]
