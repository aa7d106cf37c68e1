"""What a Snakemake run prints when it ends, so a user sees what went wrong without opening a log.

After a failed run (the Snakefile's ``onerror``), each failed job's error line: the last line of the Python
traceback its log holds (the exception and its message, which names the key, file or row), read from the logs
Snakemake's own log names for the failed jobs. After every run (``onerror`` and ``onsuccess``), what the
results hold as skipped or dropped, counted by reason, with the log that names each one: rows the sampling
skipped (a row without ``rejected``, an empty response, …: ``origin.json``'s ``skipped``; first, the rows out
of the project's scope, such as multi-turn dialogues: ``readers.OUT_OF_SCOPE``) and the comparisons
each seed could not draw when fewer rows were usable than ``sample.n_per_seed`` (its ``usable``);
comparisons no perturbation job explains (orientation ties and disagreements), perturbations that could not
be made, cut-off LLM answers among them, and rows of a perturbation file for comparisons not explained
(``results/skipped/perturb``); edit slots of the attribute effects no edit filled
(``results/skipped/effects``); bias discovery's edits a feature could not make
(``results/skipped/discovery``); texts over an RM's token limit (the score tables' ``truncated`` flags,
counted as the truncation table counts them). A file that cannot be read is named, the others counted.
Where Snakemake stops a run with an error of its own, outside any job, which calls neither handler, the
summary is printed at exit (``EndOfRun``).
"""

from __future__ import annotations

import atexit
import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import polars as pl

from rmexplain import paths
from rmexplain.data.readers import OUT_OF_SCOPE
from rmexplain.design import Design
from rmexplain.findings.attribution import skip_reasons
from rmexplain.schemas import CARRIER_EDITS, ORIGINAL_SCORES, PERTURB_SKIPS, REWARDS, read_table
from rmexplain.score.lengths import length_counts
from rmexplain.targets import (
    carrier_rms,
    discovery_rounds,
    discovery_stage,
    perturbation_jobs,
    truncation_parts,
)

# The job logs the summary names, by rule (patterns with the rule's wildcards, as its ``log:`` says).
LOG_RULES = (
    "sample_comparisons",
    "perturb",
    "effect_edits",
    "discovery_round",
    "score_originals",
    "score_perturbations",
    "score_effect_edits",
    "score_discovery_edits",
    "carrier_edits",
)
_ERROR_BLOCK = re.compile(r"^Error in rule (?P<rule>\S+?):?\s*$")
_LOG_LINE = re.compile(r"^\s+log: (?P<logs>.+?) \(check log file\(s\) for error details\)\s*$")
_TRACEBACK = "Traceback (most recent call last):"


@dataclass(frozen=True)
class FailedJob:
    """A job Snakemake reported as failed: its rule and its log files."""

    rule: str
    logs: tuple[str, ...]


def failed_jobs(snakemake_logs: str | Iterable[str]) -> list[FailedJob]:
    """The failed jobs that Snakemake's own log file(s) report (its ``Error in rule`` blocks), in order."""
    files = [snakemake_logs] if isinstance(snakemake_logs, str) else list(snakemake_logs)
    jobs: list[FailedJob] = []
    for file in files:
        rule = None
        try:
            text = Path(file).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            block = _ERROR_BLOCK.match(line)
            if block:
                rule = block["rule"]
                jobs.append(FailedJob(rule, ()))
                continue
            logs = _LOG_LINE.match(line)
            if rule is not None and logs:
                jobs[-1] = FailedJob(rule, tuple(logs["logs"].split(", ")))
                rule = None
    return list(dict.fromkeys(jobs))


def error_line(log: str | Path) -> str | None:
    """The exception line of the last Python traceback in a job's log (``module.Error: message``); None
    when the log is missing or holds no traceback."""
    try:
        lines = Path(log).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    starts = [i for i, line in enumerate(lines) if line.startswith(_TRACEBACK)]
    if not starts:
        return None
    for line in lines[starts[-1] + 1 :]:
        if line.strip() and not line.startswith((" ", "\t")):
            return line.strip()
    return None


def failure_lines(snakemake_logs: str | Iterable[str]) -> list[str]:
    """One line per failed job: its rule, its log and its error line (or where to look for it)."""
    jobs = failed_jobs(snakemake_logs)
    if not jobs:
        return ["no failed job is named in Snakemake's log; see the errors above"]
    lines = []
    for job in jobs:
        found = [(log, error_line(log)) for log in job.logs]
        named = [(log, line) for log, line in found if line]
        if named:
            lines += [f"{job.rule} ({log}): {line}" for log, line in named]
        else:
            where = ", ".join(job.logs) or "Snakemake's output above"
            lines.append(f"{job.rule}: no Python error in its log; see {where}")
    return lines


@dataclass(frozen=True)
class Dropped:
    """What one job skipped or dropped for one reason: how many of what, and the log that names them."""

    what: str  # singular: "row", "comparison", "perturbation slot", "effect edit slot", "text"
    reason: str
    count: int
    log: str
    out_of_scope: bool = False  # rows of a kind the project does not explain: named first


def _log_of(patterns: Mapping[str, str], rule: str, **wildcards: str) -> str:
    return patterns[rule].format(**wildcards)


class Unread(Exception):
    """Files a collector could not read, each named with its error, and what the other files held."""

    def __init__(self, problems: list[str], drops: list[Dropped]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems
        self.drops = drops


def each_file(counts: Iterable[tuple[str, Callable[[str], list[Dropped]]]]) -> list[Dropped]:
    """What each file holds (``count(path)``): a file not written yet is passed over, and one that cannot be
    read (in a folder that cannot be read, a table that breaks its contract) is named, after the others are
    counted (``Unread``)."""
    drops: list[Dropped] = []
    problems: list[str] = []
    for path, count in counts:
        try:
            if Path(path).is_file():
                drops += count(path)
        except Exception as err:  # the summary never fails a run; it says what it could not count
            problems.append(str(err) if str(path) in str(err) else f"{path}: {err}")
    if problems:
        raise Unread(problems, drops)
    return drops


def data_drops(design: Design, logs: Mapping[str, str]) -> list[Dropped]:
    """Rows each dataset's sampling skipped, by reason (``origin.json``'s ``skipped``), and the comparisons a
    seed could not draw when fewer rows were usable than ``n_per_seed`` asks for (its ``usable``)."""
    return each_file(
        (
            paths.fmt(paths.DATA_ORIGIN, dataset=dataset),
            partial(_origin_drops, dataset, partial(_log_of, logs, "sample_comparisons", dataset=dataset)),
        )
        for dataset in design.datasets
    )


def _origin_drops(dataset: str, log: Callable[[], str], origin: str) -> list[Dropped]:
    """One dataset's skipped rows and the comparisons short of ``n_per_seed``, from its ``origin.json``."""
    record = json.loads(Path(origin).read_text(encoding="utf-8"))
    out = [
        _sampling_skip(dataset, reason, n["rows"], log())
        for reason, n in (record.get("skipped") or {}).items()
    ]
    usable, wanted = record.get("usable"), record.get("n_per_seed")
    if usable is not None and wanted is not None and usable < wanted:
        short = (
            f"sampling {dataset}: short of sample.n_per_seed={wanted} per seed (only {usable} usable "
            "rows; each seed took all of them)"
        )
        out.append(Dropped("comparison", short, wanted - usable, log()))
    return out


def _sampling_skip(dataset: str, reason: str, rows: int, log: str) -> Dropped:
    """Rows the sampling of ``dataset`` skipped for ``reason``; one out of scope says so, and why."""
    why = OUT_OF_SCOPE.get(reason)
    if why is None:
        return Dropped("row", f"sampling {dataset}: {reason}", rows, log)
    return Dropped("row", f"sampling {dataset}: out of scope, {reason} ({why})", rows, log, out_of_scope=True)


def perturbation_drops(design: Design, logs: Mapping[str, str]) -> list[Dropped]:
    """Each perturbation job's skips by stage and reason (``results/skipped/perturb``): a skip without a
    target is a whole comparison left out (an orientation tie or disagreement), one with a target a slot."""
    return each_file(
        (
            paths.fmt(paths.PERTURB_SKIPS, dataset=dataset, method=method, orienter=orienter),
            partial(
                _perturb_drops,
                partial(_log_of, logs, "perturb", dataset=dataset, method=method, orienter=orienter),
            ),
        )
        for dataset, method, orienter in perturbation_jobs(design)
    )


def _perturb_drops(log: Callable[[], str], path: str) -> list[Dropped]:
    """One perturbation job's skips, whole comparisons apart from slots."""
    skips = read_table(path, PERTURB_SKIPS, "perturb skips").with_columns(whole=pl.col("target").is_null())
    counts = skips.group_by("whole", "stage", "reason").len().sort("stage", "reason", "whole")
    return [
        Dropped("comparison" if whole else "perturbation slot", f"[{stage}] {reason}", n, log())
        for whole, stage, reason, n in counts.iter_rows()
    ]


def effect_edit_drops(design: Design, logs: Mapping[str, str]) -> list[Dropped]:
    """The attribute effects' edit slots no edit filled, by stage and reason (``results/skipped/effects``)."""
    return each_file(
        (
            paths.fmt(paths.EFFECT_SKIPS, dataset=dataset, method=method),
            partial(_effect_drops, partial(_log_of, logs, "effect_edits", dataset=dataset, method=method)),
        )
        for dataset, method in design.effect_pairs
    )


def _effect_drops(log: Callable[[], str], path: str) -> list[Dropped]:
    """One effect-edit job's unfilled slots."""
    counts = read_table(path, PERTURB_SKIPS, "effect edit skips").group_by("stage", "reason").len()
    return [
        Dropped("effect edit slot", f"[{stage}] {reason}", n, log())
        for stage, reason, n in counts.sort("stage", "reason").iter_rows()
    ]


def discovery_edit_drops(design: Design, logs: Mapping[str, str]) -> list[Dropped]:
    """Bias discovery's edits a feature could not make, by reason (``results/skipped/discovery``)."""
    return each_file(
        (
            paths.fmt(paths.BIASES_SKIPS, dataset=dataset, engine=engine, round=str(round_)),
            partial(
                _discovery_drops,
                partial(_log_of, logs, "discovery_round", dataset=dataset, engine=engine, round=str(round_)),
            ),
        )
        for dataset in design.discovery_datasets()
        for engine, round_ in discovery_rounds(design)
    )


def _discovery_drops(log: Callable[[], str], path: str) -> list[Dropped]:
    """One discovery round's edits not made."""
    counts = read_table(path, PERTURB_SKIPS, "discovery edit skips").group_by("reason").len()
    return [Dropped("discovery edit", reason, n, log()) for reason, n in counts.sort("reason").iter_rows()]


def carrier_edit_drops(design: Design, logs: Mapping[str, str]) -> list[Dropped]:
    """The carriers' edits whose class could not be undone, by reason (the carrier edits' ``skip``; the
    token an instance is quoted by left out, so that reasons group)."""
    return each_file(
        (
            paths.fmt(paths.CARRIER_EDITS, dataset=dataset),
            partial(_carrier_drops, partial(_log_of, logs, "carrier_edits", dataset=dataset)),
        )
        for dataset in carrier_rms(design)
    )


def _carrier_drops(log: Callable[[], str], path: str) -> list[Dropped]:
    """One dataset's carrier edits not undone."""
    reasons = skip_reasons(read_table(path, CARRIER_EDITS, "carrier edits"))
    return [Dropped("carrier edit", reason, n, log()) for reason, n in reasons.iter_rows()]


SCORING_RULES = {
    "originals": "score_originals",
    "perturbations": "score_perturbations",
    "effects": "score_effect_edits",
}


def length_drops(design: Design, logs: Mapping[str, str]) -> list[Dropped]:
    """Texts over an RM's token limit, cut or left unscored, per score table (as the truncation table)."""
    rounds = {discovery_stage(engine, r): (engine, r) for engine, r in discovery_rounds(design)}
    log_of = partial(_scoring_log, logs, rounds)
    return each_file(
        (path, partial(_length_drops, dataset, rm, stage, partial(log_of, stage, dataset, rm)))
        for dataset, rm, stage, path in truncation_parts(design)
    )


def _scoring_log(
    logs: Mapping[str, str], rounds: Mapping[str, tuple[str, int]], stage: str, dataset: str, rm: str
) -> str:
    """The log of the job that wrote a truncation part's score table (``rounds``: each discovery round's
    stage → its engine and round)."""
    if stage not in rounds:
        return _log_of(logs, SCORING_RULES[stage], dataset=dataset, rm=rm)
    engine, round_ = rounds[stage]
    return _log_of(logs, "score_discovery_edits", dataset=dataset, engine=engine, round=str(round_), rm=rm)


def _length_drops(dataset: str, rm: str, stage: str, log: Callable[[], str], path: str) -> list[Dropped]:
    """One score table's texts over the RM's token limit."""
    contract = ORIGINAL_SCORES if stage == "originals" else REWARDS
    counts = length_counts(read_table(path, contract, f"{stage} scores"), stage)
    over = f"{stage} of {dataset} over {rm}'s {counts['max_length']}-token limit"
    out = []
    if counts["skipped"]:
        out.append(Dropped("text", f"{over}, left unscored", counts["skipped"], log()))
    cut = (counts["truncated"] or 0) - counts["skipped"]
    if cut > 0:
        out.append(Dropped("text", f"{over}, scored cut", cut, log()))
    return out


def drop_lines(drops: Sequence[Dropped]) -> list[str]:
    """One line per (what, reason) summed over jobs, with its log, or the first of its logs and how many."""
    grouped: dict[tuple[str, str], list[Dropped]] = {}
    for drop in drops:
        grouped.setdefault((drop.what, drop.reason), []).append(drop)
    lines = []
    for (what, reason), group in grouped.items():
        total = sum(d.count for d in group)
        logs = list(dict.fromkeys(d.log for d in group))
        where = logs[0] if len(logs) == 1 else f"{len(logs)} jobs, e.g. {logs[0]}"
        lines.append(f"{total:>7,} {what}{'' if total == 1 else 's'}: {reason} ({where})")
    return lines


def run_summary(design: Design, logs: Mapping[str, str]) -> list[str]:
    """What ``results/`` holds as skipped or dropped, counted by reason with the logs that name each one;
    ``logs`` maps each rule of LOG_RULES to its log pattern."""
    drops: list[Dropped] = []
    unread: list[str] = []
    collectors = (data_drops, perturbation_drops, effect_edit_drops, discovery_edit_drops, carrier_edit_drops,
                  length_drops)  # fmt: skip
    for collect in collectors:
        try:
            drops += collect(design, logs)
        except Unread as err:
            drops += err.drops
            unread += [f"        (not counted: {collect.__name__}: {problem})" for problem in err.problems]
        except Exception as err:  # the summary never fails a run; it says what it could not count
            unread.append(f"        (not counted: {collect.__name__}: {err})")
    if not drops and not unread:
        return ["rmexplain: nothing in results/ was skipped or dropped."]
    drops.sort(key=lambda drop: not drop.out_of_scope)  # the rows out of scope first, in order
    return ["rmexplain: skipped or dropped in results/ (each log names them):", *drop_lines(drops), *unread]


def last_error(snakemake_logs: str | Iterable[str] | None) -> str | None:
    """The exception line of the last traceback in Snakemake's own log file(s); None when none holds one."""
    files = [snakemake_logs] if isinstance(snakemake_logs, str) else list(snakemake_logs or [])
    found = [line for line in map(error_line, files) if line]
    return found[-1] if found else None


@dataclass
class EndOfRun:
    """What a run prints when it ends, once: from ``onsuccess`` or ``onerror``, or at exit where Snakemake
    stops a run with an error of its own that calls neither (an output it cannot remove from a folder it
    cannot write: its traceback, with no failed job), after that traceback."""

    design: Design
    printed: bool = False

    def start(self, logs: Mapping[str, str], snakemake_logs: str | Iterable[str] | None) -> None:
        """At ``onstart``: print ``stopped`` at exit unless ``succeeded`` or ``failed`` printed first."""
        atexit.register(self.stopped, logs, snakemake_logs)

    def succeeded(self, logs: Mapping[str, str]) -> None:
        """At ``onsuccess``: what ``results/`` skipped or dropped."""
        self._print(run_summary(self.design, logs))

    def failed(self, logs: Mapping[str, str], snakemake_logs: str | Iterable[str]) -> None:
        """At ``onerror``: each failed job's error line, then what ``results/`` skipped or dropped."""
        failed = [f"    {line}" for line in failure_lines(snakemake_logs)]
        self._print(["rmexplain: failed jobs and their errors:", *failed, *run_summary(self.design, logs)])

    def stopped(self, logs: Mapping[str, str], snakemake_logs: str | Iterable[str] | None) -> None:
        """At exit, unless ``succeeded`` or ``failed`` printed: Snakemake's error, then the summary."""
        if self.printed:
            return
        error = last_error(snakemake_logs) or "see Snakemake's error above"
        said = f"rmexplain: Snakemake stopped the run outside any job (no job failed): {error}"
        self._print([said, *run_summary(self.design, logs)])

    def _print(self, lines: list[str]) -> None:
        self.printed = True
        print("\n".join(lines), file=sys.stderr, flush=True)
