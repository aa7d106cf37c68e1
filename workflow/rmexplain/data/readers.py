"""Dataset readers: Anthropic HH-RLHF, NVIDIA HelpSteer2, the bundled data, and local files.

Each reader yields ``Pair`` records; rows that cannot be used are skipped and counted by reason in a
``SkipCounter`` (logged by the sampling stage), and malformed files raise ``DataError`` naming the
row or column.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import polars as pl

HH_ASSISTANT = "\n\nAssistant:"
HH_HUMAN = "\n\nHuman:"
HELPSTEER_ASPECTS = ("helpfulness", "correctness", "coherence", "complexity", "verbosity")
REQUIRED_COLUMNS = ("prompt", "chosen", "rejected")
# Skip reasons that put a row out of the project's scope (data of a kind it does not explain, not a broken
# row), with why: the sampling job warns of each with its count, and the end-of-run summary names them first.
OUT_OF_SCOPE = {"multi-turn": "a dialogue of several turns; rmexplain explains single-turn comparisons"}


class DataError(ValueError):
    """An input file or record is malformed; the message names the row or column."""


@dataclass(frozen=True)
class Pair:
    """One single-turn comparison with the human preference chosen ≻ rejected."""

    source_index: str
    prompt: str
    chosen: str
    rejected: str


class SkipCounter(Counter):
    """Counts skipped rows by reason, keeping the first few rows of each reason for the log: a row's ``id``
    where the data has one, else its 0-based row number."""

    def __init__(self) -> None:
        super().__init__()
        self.examples: dict[str, list[str]] = {}

    def skip(self, reason: str, row: str) -> None:
        """Record that ``row`` was skipped for ``reason``."""
        self[reason] += 1
        self.examples.setdefault(reason, [])
        if len(self.examples[reason]) < 5:
            self.examples[reason].append(row)

    def summary(self) -> str:
        """One line per reason: count and example rows."""
        if not self:
            return "no rows skipped"
        return "; ".join(f"{reason}: {n} (e.g. rows {self.examples[reason]})" for reason, n in self.items())

    def out_of_scope(self) -> dict[str, int]:
        """The rows skipped as out of scope (``OUT_OF_SCOPE``), by reason."""
        return {reason: self[reason] for reason in OUT_OF_SCOPE if self[reason]}

    def record(self) -> dict[str, dict[str, Any]]:
        """``{reason: {"rows": n, "examples": [...]}}`` by reason: what the sampling's origin record keeps."""
        return {reason: {"rows": self[reason], "examples": self.examples[reason]} for reason in sorted(self)}


def check_pair(pair: Pair, skips: SkipCounter, max_words: int | None = None) -> bool:
    """Whether a pair is usable; unusable pairs are counted in ``skips`` with their reason."""
    if not pair.prompt.strip():
        skips.skip("empty prompt", pair.source_index)
    elif not pair.chosen.strip() or not pair.rejected.strip():
        skips.skip("empty response", pair.source_index)
    elif pair.chosen.strip() == pair.rejected.strip():
        skips.skip("identical responses", pair.source_index)
    elif (
        max_words is not None
        and max(len(t.split()) for t in (pair.prompt, pair.chosen, pair.rejected)) > max_words
    ):
        skips.skip(f"longer than sample.max_words={max_words}", pair.source_index)
    else:
        return True
    return False


def split_hh_transcript(transcript: str) -> tuple[str, str]:
    """Split an HH-RLHF transcript at its last "\\n\\nAssistant:" into (dialogue prefix, final response)."""
    cut = transcript.rfind(HH_ASSISTANT)
    if cut < 0:
        raise DataError("transcript has no '\\n\\nAssistant:' turn")
    return transcript[:cut], transcript[cut + len(HH_ASSISTANT) :].strip()


def read_hh_rlhf(records: Iterable[dict[str, Any]], skips: SkipCounter) -> Iterator[Pair]:
    """Single-turn HH-RLHF pairs: both transcripts share one prompt with exactly one Human turn."""
    for index, record in enumerate(records):
        row = str(index)
        try:
            prefix_c, chosen = split_hh_transcript(record["chosen"])
            prefix_r, rejected = split_hh_transcript(record["rejected"])
        except DataError:
            skips.skip("no assistant turn", row)
            continue
        except KeyError as err:
            raise DataError(f"hh-rlhf row {index}: missing field {err}") from None
        if prefix_c != prefix_r:
            skips.skip("chosen and rejected prompts differ", row)
            continue
        if prefix_c.count(HH_HUMAN) != 1 or HH_ASSISTANT in prefix_c:
            skips.skip("multi-turn", row)
            continue
        prompt = prefix_c.split(HH_HUMAN, 1)[1].strip()
        yield Pair(row, prompt, chosen, rejected)


def _greater_on_all(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """a > b on every HelpSteer2 aspect. The paper (§3): "We filter hs2 for pairs of responses where the
    preference is clear, i.e. the ground truth scores of one response are greater than the other response
    across all evaluation aspects"."""
    return all(a[k] > b[k] for k in HELPSTEER_ASPECTS)


def _dominates(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """a ≥ b on every aspect and > on at least one (Pareto dominance: a looser rule, not the paper's)."""
    ge = all(a[k] >= b[k] for k in HELPSTEER_ASPECTS)
    return ge and any(a[k] > b[k] for k in HELPSTEER_ASPECTS)


# ``datasets.<name>.preference_filter`` for HelpSteer2: the paper's rule (default) and the looser one.
PREFERENCE_FILTERS = {"greater_on_all": _greater_on_all, "dominates": _dominates}


def read_helpsteer2(
    records: Iterable[dict[str, Any]], skips: SkipCounter, preference_filter: str = "greater_on_all"
) -> Iterator[Pair]:
    """HelpSteer2 pairs: rows grouped by prompt, each pair kept where one response is clearly preferred
    under ``preference_filter`` (``greater_on_all``, the paper's, or ``dominates``)."""
    if preference_filter not in PREFERENCE_FILTERS:
        known = sorted(PREFERENCE_FILTERS)
        raise DataError(f"preference_filter: {preference_filter!r} is not one of {known}")
    clearly_preferred = PREFERENCE_FILTERS[preference_filter]
    groups: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for index, record in enumerate(records):
        missing = [k for k in ("prompt", "response", *HELPSTEER_ASPECTS) if k not in record]
        if missing:
            raise DataError(f"helpsteer2 row {index}: missing field(s) {missing}")
        groups.setdefault(record["prompt"], []).append((index, record))
    for prompt, rows in groups.items():
        if "<extra_id_1>" in prompt:
            skips.skip("multi-turn", str(rows[0][0]))
            continue
        kept = 0
        for i, (index_a, a) in enumerate(rows):
            for index_b, b in rows[i + 1 :]:
                for (ia, ra), (ib, rb) in (((index_a, a), (index_b, b)), ((index_b, b), (index_a, a))):
                    if clearly_preferred(ra, rb):
                        kept += 1
                        yield Pair(f"{ia}>{ib}", prompt, ra["response"], rb["response"])
        if not kept:
            skips.skip("no clear preference", str(rows[0][0]))


EMBEDDED_PARTS = ("helpful", "harmless")  # the bundled data's parts
EMBEDDED_SPLITS = ("train", "explain")


def read_embedded(part: str, split: str = "explain") -> list[Pair]:
    """The bundled comparisons written (``part``: helpful|harmless; ``split``: train|explain)."""
    path = resources.files("rmexplain.data") / "embedded" / f"{part}.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [Pair(r["id"], r["prompt"], r["chosen"], r["rejected"]) for r in rows if r["split"] == split]


def json_problem(err: json.JSONDecodeError) -> str:
    """What is wrong at the position a JSON error names, as a whole phrase ("Unterminated string starting
    there", where the decoder's message ends in "at" and keeps the position apart)."""
    return f"{err.msg.removesuffix(' at')} there"


def read_jsonl_records(path: Path) -> list[dict[str, Any]]:
    """Records of a JSONL file; invalid UTF-8 or JSON raises DataError naming the line and column. A byte
    order mark opening the file (as some Windows editors write) is read as none."""
    records = []
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as err:
                raise DataError(
                    f"{path}: line {number} is not valid UTF-8 ({err.reason} at byte {err.start})"
                ) from None
            if not line.strip():
                continue
            try:
                record = json.loads(line.rstrip("\r\n"))  # an open string is unterminated, not a newline
            except json.JSONDecodeError as err:
                raise DataError(
                    f"{path}: line {number}, column {err.colno} is not valid JSON: {json_problem(err)} "
                    "(each line of a JSONL file is one JSON object)"
                ) from None
            if not isinstance(record, dict):
                kind = type(record).__name__
                raise DataError(f"{path}: line {number} is a JSON {kind}, not an object of named columns")
            _check_unicode(record, path, number)
            records.append(record)
    return records


def _check_unicode(record: dict[str, Any], path: Path, number: int) -> None:
    """Raise DataError naming the line and field of a text holding a lone surrogate escape (``\ud800``):
    valid JSON, but no character, which no UTF-8 file or table can hold."""
    for key, value in record.items():
        if not isinstance(value, str):
            continue
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as err:
            escape = f"\\u{ord(value[err.start]):04x}"
            raise DataError(
                f"{path}: line {number}, field {key!r}: {escape} at character {err.start + 1} is half of a"
                " surrogate pair, no character (escape a character outside the BMP as both halves, or write"
                " it as UTF-8)"
            ) from None


def _records_frame(records: list[dict[str, Any]], path: Path) -> pl.DataFrame:
    """Records as a frame (a column whose rows mix types is read as text)."""
    if not records:
        return pl.DataFrame()
    try:
        return pl.DataFrame(records, infer_schema_length=None)
    except (TypeError, ValueError, pl.exceptions.PolarsError) as err:
        raise DataError(f"{path}: cannot read the records as a table: {err}") from None


def read_table_file(path: str | Path, required: Iterable[str] = REQUIRED_COLUMNS) -> pl.DataFrame:
    """A JSONL or Parquet file as a frame, checked for the required columns."""
    path = Path(path)
    if path.suffix == ".parquet":
        frame = pl.read_parquet(path)
    elif path.suffix == ".jsonl":
        records = read_jsonl_records(path)
        frame = _records_frame(records, path)
    else:
        raise DataError(f"{path}: expected a .jsonl or .parquet file")
    if not frame.height and not frame.columns:
        raise DataError(f"{path}: the file holds no rows (each line of a JSONL file is one comparison)")
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; found {frame.columns}")
    return frame


def _id_texts(frame: pl.DataFrame, path: str | Path) -> list[str | None]:
    """The ``id`` column as text (None where a row has none); a column that is not text or numbers raises."""
    try:
        return frame["id"].cast(pl.String).to_list()
    except pl.exceptions.PolarsError:
        raise DataError(
            f"{path}: column id holds {frame['id'].dtype}, not text or numbers: give each comparison a "
            "text id"
        ) from None


def _check_repeated(ids: list[str | None], path: str | Path) -> None:
    """Raise naming the rows of the first id given to two rows or more (rows without an id repeat none)."""
    rows: dict[str, list[int]] = {}
    for index, name in enumerate(ids):
        if name is not None:
            rows.setdefault(name, []).append(index)
    repeated = {name: where for name, where in rows.items() if len(where) > 1}
    if repeated:
        name, where = next(iter(repeated.items()))
        raise DataError(
            f"{path}: id {name!r} is repeated (rows {where}, counting from 0); "
            f"{len(repeated)} id(s) repeat in all. Give every comparison its own id."
        )


def _check_numbered(ids: list[str | None], path: str | Path) -> None:
    """Raise naming both rows where a row without an id, named by its row number, takes another row's id."""
    explicit = {name: index for index, name in enumerate(ids) if name is not None}
    clashes = [
        (index, explicit[str(index)])
        for index, name in enumerate(ids)
        if name is None and str(index) in explicit
    ]
    if clashes:
        row, other = clashes[0]
        raise DataError(
            f"{path}: row {row} has no id, so it is named by its row number {str(row)!r} (counting from "
            f"0), which row {other} has as its id: the two would be one comparison ({len(clashes)} such "
            f"row(s) in all). Give row {row} an id of its own, or give every row one."
        )


def source_ids(frame: pl.DataFrame, path: str | Path) -> list[str]:
    """Each row's source id: its ``id``, or its 0-based row number where it has none. An id given twice, or
    a row number that is another row's id, raises ``DataError`` naming the rows."""
    if "id" not in frame.columns:
        return [str(index) for index in range(frame.height)]
    ids = _id_texts(frame, path)
    _check_repeated(ids, path)
    _check_numbered(ids, path)
    return [str(index) if name is None else name for index, name in enumerate(ids)]


def read_pairs_file(path: str | Path, skips: SkipCounter) -> Iterator[Pair]:
    """Bring-your-own comparisons: a JSONL or Parquet file with prompt / chosen / rejected columns (and an
    optional ``id``, which must be unique: it becomes part of the comparison id; a row without one is named
    by its 0-based row number, which must not be another row's id). A row without one of the three, or with
    a non-text one, is a counted skip named by its source id (``source_ids``)."""
    frame = read_table_file(path)
    names = source_ids(frame, path)
    for name, row in zip(names, frame.iter_rows(named=True), strict=True):
        missing = [c for c in REQUIRED_COLUMNS if row[c] is None]
        if missing:
            skips.skip(f"no {'/'.join(missing)}", name)
        elif any(not isinstance(row[c], str) for c in REQUIRED_COLUMNS):
            skips.skip("non-text prompt/chosen/rejected", name)
        else:
            yield Pair(name, *(row[c] for c in REQUIRED_COLUMNS))
