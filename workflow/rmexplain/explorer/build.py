"""Build the explanation explorer: ``index.html`` and the data files it loads on demand.

The page opens from disk (``file://``) without a server and without the network: its JavaScript and CSS are
package data inlined into ``index.html``, together with a small manifest (datasets, methods, RMs, the flip
rates and representative examples, the token extremes). Everything larger is a data file under ``data/``,
loaded with a ``<script>`` tag when a view needs it (Chromium blocks ``fetch()`` of ``file://``):

- ``data/datasets/<dataset>/comparisons.js``: every comparison's id, seed, the start of its prompt and each
  RM's rewards of the two originals;
- ``data/datasets/<dataset>/texts-<k>.js``: prompt, chosen and rejected of comparisons ``k·n … k·n+n−1``;
- ``data/datasets/<dataset>/<method>/rm-<rm>.js``: one RM's explanation rows (side, attribute, reward, CF/SF,
  sub-kind, reward delta) of every perturbation it was explained with;
- ``data/datasets/<dataset>/<method>/edits-<k>.js``: the perturbations of comparison shard ``k`` as word-level
  edits of their originals (``rmexplain.textdiff``), with the judge's verdicts where the judge ran;
- ``data/datasets/<dataset>/<method>/effects/<k>.js`` and ``.../effects/length.js``: the attribute effects'
  edits behind each finding, and ``data/datasets/<dataset>/discovered/<k>.js`` a discovered feature's
  (``rmexplain.explorer.findings``; the findings themselves are in the manifest);
- ``data/tokens/<rm>/<prompt>/<b>.js``: the tokens of one scan whose search key falls in bucket ``b``
  (``token_bucket``), with their scores and ranks; ``data/tokens/human.js``: each RM's scores and ranks of the
  human ranking's items.

Each data file is one call ``RMX.put(key, payload)``. Every text reaches the page as JSON whose ``<``, ``>``,
``&``, U+2028 and U+2029 are written as ``\\uXXXX`` escapes (``js_literal``), so no text can end a
``<script>`` element or open a tag, and the page shows every text through ``textContent``, never as markup.
The same inputs give byte-identical files: rows keep their tables' order, objects are written with sorted
keys, numbers rounded to ``DIGITS`` decimals.
"""

from __future__ import annotations

import html
import json
import math
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import polars as pl

from rmexplain import schemas as S
from rmexplain.effects.base import LENGTH
from rmexplain.explorer.findings import discovery_payloads, effect_payloads, finding_rows
from rmexplain.textdiff import apply_edit, word_edit

DIGITS = 4  # decimals of rewards, deltas and scores in the data files (display only)
KINDS = {"semifactual": 0, "counterfactual": 1}
SUBKINDS = {None: 0, "between": 1, "beyond": 2, "tie": 3}  # the page's SUB
SIDES = {"plus": 0, "minus": 1}
TARGETS = {"chosen": 0, "rejected": 1}
SNIPPET = 200  # characters of a prompt in the comparison list
TOKEN_BUCKETS = 32  # search files per token scan
_ASCII_SPACE = " \t\n\r\f\v"
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_JS_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


class ExplorerError(ValueError):
    """The explorer's inputs do not fit together (a name unusable as a file name, an edit that does not
    reproduce its perturbation, a row without its comparison)."""


@dataclass(frozen=True)
class ExplorerInputs:
    """The workflow's Parquet tables the explorer reads (lists of files, each checked against its contract).

    ``explanations`` decide what is shown: every (dataset, method, RM) with an explanation table, and the
    perturbations those tables name (looked up in ``perturbations`` by id).
    """

    comparisons: Sequence[str]
    originals: Sequence[str]
    perturbations: Sequence[str]
    explanations: Sequence[str]
    pfr: Sequence[str] = ()
    examples: Sequence[str] = ()
    judgements: Sequence[str] = ()
    token_scans: Sequence[str] = ()
    token_human: Sequence[str] = ()
    findings: Sequence[str] = ()
    effect_edits: Sequence[str] = ()
    effect_changes: Sequence[str] = ()
    discovery_edits: Sequence[str] = ()  # results/discovery/<dataset>/edits.parquet (the dataset: its folder)


@dataclass(frozen=True)
class ExplorerSettings:
    """What the page says and how it splits its data.

    ``comparisons_per_file``: comparisons per text and edit file (a comparison view loads one of each);
    ``token_prompts``: prompt id -> prompt text of the token scans; ``n_extremes``: tokens in the top and
    bottom lists; ``level``: confidence level of the flip-rate intervals (for their label);
    ``human_prompt``: the prompt the human-ranking items were scored under.
    """

    title: str = "rmexplain explorer"
    comparisons_per_file: int = 25
    token_prompts: Mapping[str, str] = field(default_factory=dict)
    n_extremes: int = 20
    level: float = 0.95
    human_prompt: str | None = None


# ── writing ───────────────────────────────────────────────────────────────────────────────────────────────
def js_literal(value: Any) -> str:
    """``value`` as a JSON literal that is safe inside JavaScript and inside an HTML ``<script>`` element:
    sorted keys, no NaN, and ``<``, ``>``, ``&``, U+2028, U+2029 as ``\\uXXXX`` escapes (they can only occur
    inside strings, where the escape means the same character)."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return re.sub("[<>&\u2028\u2029]", lambda m: _JS_ESCAPES[m.group(0)], text)


def _num(value: float | None) -> float | None:
    """A number for the page: rounded, null when missing or not finite."""
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), DIGITS) + 0.0  # + 0.0: no "-0.0"


def _safe(name: str, what: str) -> str:
    if not _SAFE_NAME.fullmatch(name):
        raise ExplorerError(f"{what} {name!r} cannot name an explorer data file (use letters, digits, _ . -)")
    return name


class _Writer:
    """Writes data files under ``root/data`` and remembers their sizes."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.sizes: dict[str, int] = {}

    def put(self, relative: str, key: str, payload: Any) -> str:
        """Write ``RMX.put(key, payload);`` to ``data/<relative>``; return the path relative to ``root``."""
        path = self.root / "data" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        text = f"RMX.put({js_literal(key)},{js_literal(payload)});\n"
        path.write_bytes(text.encode("utf-8"))
        rel = f"data/{relative}"
        self.sizes[rel] = len(text.encode("utf-8"))
        return rel


# ── reading ───────────────────────────────────────────────────────────────────────────────────────────────
def _read(files: Iterable[str], contract: S.Contract, name: str) -> pl.DataFrame:
    frames = [S.read_table(f, contract, name).select(list(contract)) for f in files]
    return pl.concat(frames) if frames else pl.DataFrame(schema=S.polars_schema(contract))


def _first_seen(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


# ── datasets and comparisons ──────────────────────────────────────────────────────────────────────────────
@dataclass
class _Dataset:
    name: str
    comparisons: pl.DataFrame  # COMPARISONS rows of this dataset, in table order
    index: dict[str, int]  # comparison id -> position (its shard: position // comparisons_per_file)


def _datasets(comparisons: pl.DataFrame) -> dict[str, _Dataset]:
    out = {}
    for name in _first_seen(comparisons["dataset"]):
        rows = comparisons.filter(pl.col("dataset") == name).unique(
            "comparison_id", keep="first", maintain_order=True
        )
        out[_safe(name, "dataset")] = _Dataset(
            name, rows, {c: i for i, c in enumerate(rows["comparison_id"])}
        )
    return out


def _comparison_file(data: _Dataset, originals: pl.DataFrame, rms: list[str]) -> dict[str, Any]:
    """The comparison list of one dataset with each RM's rewards of the two originals."""
    rewards: dict[str, list[Any]] = {}
    plus: dict[str, list[Any]] = {}
    ids = data.comparisons["comparison_id"].to_list()
    for rm in rms:
        mine = originals.filter(pl.col("rm") == rm)
        by_id = {r["comparison_id"]: r for r in mine.iter_rows(named=True)}
        rewards[rm] = [
            [_num(by_id[c]["reward_chosen"]), _num(by_id[c]["reward_rejected"])] if c in by_id else None
            for c in ids
        ]
        plus[rm] = [TARGETS.get(by_id[c]["plus_target"]) if c in by_id else None for c in ids]
    return {
        "id": ids,
        "seed": data.comparisons["seed"].to_list(),
        "prompt": [p[:SNIPPET] for p in data.comparisons["prompt"]],
        "rewards": rewards,
        "plus": plus,
    }


def _text_files(writer: _Writer, data: _Dataset, per_file: int) -> int:
    """Prompt, chosen and rejected of each shard of comparisons; returns the number of shards."""
    rows = data.comparisons
    n = math.ceil(rows.height / per_file) if rows.height else 0
    for k in range(n):
        part = rows.slice(k * per_file, per_file)
        payload = {
            "first": k * per_file,
            "prompt": part["prompt"].to_list(),
            "chosen": part["chosen"].to_list(),
            "rejected": part["rejected"].to_list(),
        }
        writer.put(f"datasets/{data.name}/texts-{k}.js", f"texts/{data.name}/{k}", payload)
    return n


# ── explanations and perturbations of one (dataset, method) ───────────────────────────────────────────────
def _attributes(explained: pl.DataFrame) -> list[str]:
    """Attributes in first-seen order (null attributes, of unconditioned methods, are index -1)."""
    return _first_seen(a for a in explained["attribute"] if a is not None)


def _rm_file(rows: pl.DataFrame, data: _Dataset, attributes: list[str]) -> dict[str, Any]:
    """One RM's explanation rows as columns."""
    attr_index = {a: i for i, a in enumerate(attributes)}
    missing = [c for c in rows["comparison_id"].unique().to_list() if c not in data.index]
    if missing:
        raise ExplorerError(
            f"explanations name comparison {sorted(missing)[0]!r}, not in {data.name}'s table"
        )
    return {
        "pid": rows["perturbation_id"].to_list(),
        "c": [data.index[c] for c in rows["comparison_id"]],
        "side": [SIDES[s] for s in rows["side"]],
        "attr": [attr_index.get(a, -1) for a in rows["attribute"]],
        "target": [TARGETS[t] for t in rows["target"]],
        "variant": rows["variant"].to_list(),
        "r": [_num(x) for x in rows["reward_perturbed"]],
        "kind": [KINDS[k] for k in rows["kind"]],
        "sub": [SUBKINDS[s] for s in rows["sf_subkind"]],
        "delta": [_num(x) for x in rows["reward_delta"]],
    }


def _judge_rows(judgements: pl.DataFrame) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in judgements.iter_rows(named=True):
        out.setdefault(r["perturbation_id"], []).append(
            {k: r[k] for k in ("verdict", "intended", "agrees", "answer", "judge")}
        )
    return out


def _edit_entry(
    r: Mapping[str, Any], original: str, c: int, attr_index: Mapping[str, int], judged: Mapping[str, Any]
) -> dict[str, Any]:
    """One perturbation for the page: its word-level edit of ``original`` (checked to give its text back),
    where it comes from, and the judge's verdicts on it (null where the judge did not run)."""
    edit = word_edit(original, r["text"])
    if apply_edit(original, edit) != r["text"]:
        raise ExplorerError(f"perturbation {r['perturbation_id']}: its word edit does not give its text back")
    return {
        "pid": r["perturbation_id"],
        "c": c,
        "orienter": r["orienter"],
        "target": TARGETS[r["target"]],
        "attr": attr_index.get(r["attribute"], -1),
        "variant": r["variant"],
        "direction": r["direction"],
        "generator": r["generator"],
        "focus": list(r["focus_words"]),
        "edit": edit,
        "judge": judged.get(r["perturbation_id"]),
    }


def _edit_files(
    writer: _Writer,
    data: _Dataset,
    method: str,
    perturbations: pl.DataFrame,
    attributes: list[str],
    judged: Mapping[str, list[dict[str, Any]]],
    per_file: int,
) -> list[int]:
    """The perturbations of (dataset, method) as columns of edits, one file per comparison shard, in
    comparison order and table order within a comparison; returns the shards written."""
    attr_index = {a: i for i, a in enumerate(attributes)}
    texts = {
        c: (chosen, rejected)
        for c, chosen, rejected in data.comparisons.select("comparison_id", "chosen", "rejected").iter_rows()
    }
    stray = [c for c in perturbations["comparison_id"].to_list() if c not in texts]
    if stray:
        raise ExplorerError(
            f"{data.name}/{method}: a perturbation names comparison {stray[0]!r}, not in its table"
        )
    rows = sorted(perturbations.iter_rows(named=True), key=lambda r: data.index[r["comparison_id"]])
    shards: dict[int, dict[str, list[Any]]] = {}
    for r in rows:
        c = data.index[r["comparison_id"]]
        entry = _edit_entry(r, texts[r["comparison_id"]][TARGETS[r["target"]]], c, attr_index, judged)
        part = shards.setdefault(c // per_file, {k: [] for k in entry})
        for key, value in entry.items():
            part[key].append(value)
    for k, payload in sorted(shards.items()):
        writer.put(f"datasets/{data.name}/{method}/edits-{k}.js", f"edits/{data.name}/{method}/{k}", payload)
    return sorted(shards)


def _pfr_rows(pfr: pl.DataFrame) -> list[dict[str, Any]]:
    return [
        {
            "rm": r["rm"],
            "side": r["side"],
            "attribute": r["attribute"],
            "pfr": _num(r["pfr"]),
            "low": _num(r["pfr_low"]),
            "high": _num(r["pfr_high"]),
            "mean_delta": _num(r["mean_delta"]),
            "n_comparisons": r["n_comparisons"],
            "n_perturbations": r["n_perturbations"],
        }
        for r in pfr.iter_rows(named=True)
    ]


def _example_rows(examples: pl.DataFrame) -> list[dict[str, Any]]:
    keep = ("kind", "rm_a", "rm_b", "side", "comparison_id")
    return [{**{k: r[k] for k in keep}, "score": _num(r["score"])} for r in examples.iter_rows(named=True)]


def _method_entry(
    writer: _Writer,
    data: _Dataset,
    method: str,
    tables: Mapping[str, pl.DataFrame],
    per_file: int,
) -> dict[str, Any]:
    """Write one (dataset, method)'s RM and edit files; return its manifest entry."""
    explained = tables["explanations"].filter((pl.col("dataset") == data.name) & (pl.col("method") == method))
    rms = [_safe(rm, "RM") for rm in _first_seen(explained["rm"])]
    attributes = _attributes(explained)
    orienters: dict[str, str] = {}
    ids = explained["perturbation_id"].unique(maintain_order=True).to_list()
    perturbations = tables["perturbations"].filter(pl.col("perturbation_id").is_in(ids))
    perturbations = perturbations.unique("perturbation_id", keep="first", maintain_order=True)
    if perturbations.height != len(ids):
        missing = sorted(set(ids) - set(perturbations["perturbation_id"].to_list()))
        raise ExplorerError(f"{data.name}/{method}: perturbation {missing[0]!r} is in no perturbation table")
    orienter_of = dict(zip(perturbations["perturbation_id"], perturbations["orienter"], strict=True))
    for rm in rms:
        rows = explained.filter(pl.col("rm") == rm)
        orienters[rm] = ", ".join(_first_seen(orienter_of[p] for p in rows["perturbation_id"]))
        writer.put(
            f"datasets/{data.name}/{method}/rm-{rm}.js",
            f"rm/{data.name}/{method}/{rm}",
            _rm_file(rows, data, attributes),
        )
    judged = _judge_rows(
        tables["judgements"].filter((pl.col("dataset") == data.name) & (pl.col("method") == method))
    )
    shards = _edit_files(writer, data, method, perturbations, attributes, judged, per_file)
    in_pair = (pl.col("dataset") == data.name) & (pl.col("method") == method)
    pfr = tables["pfr"].filter(in_pair)
    return {
        "name": method,
        "rms": rms,
        "orienters": orienters,
        "attributes": attributes,
        "n_perturbations": perturbations.height,
        "n_explained": explained.height,
        "judged": bool(judged),
        "edit_files": shards,  # shards with perturbations (a view loads no file for the others)
        "pfr": _pfr_rows(pfr),
        "examples": _example_rows(tables["examples"].filter(in_pair)),
    }


def _dataset_entries(
    writer: _Writer, tables: Mapping[str, pl.DataFrame], per_file: int
) -> list[dict[str, Any]]:
    explanations = tables["explanations"]
    with_findings = set(tables["findings"]["dataset"].to_list())
    entries = []
    for data in _datasets(tables["comparisons"]).values():
        mine = explanations.filter(pl.col("dataset") == data.name)
        methods = [_safe(m, "method") for m in _first_seen(mine["method"])]
        if not methods and data.name not in with_findings:  # a dataset of bias discovery alone: its findings
            continue
        in_dataset = tables["originals"].filter(pl.col("comparison_id").is_in(list(data.index)))
        rms = _first_seen([*mine["rm"], *in_dataset["rm"]])
        writer.put(
            f"datasets/{data.name}/comparisons.js",
            f"comparisons/{data.name}",
            _comparison_file(data, in_dataset, rms),
        )
        n_files = _text_files(writer, data, per_file)
        entries.append(
            {
                "name": data.name,
                "n_comparisons": data.comparisons.height,
                "n_files": n_files,
                "rms": rms,
                "methods": [_method_entry(writer, data, m, tables, per_file) for m in methods],
                "effects": _effect_entries(writer, data, tables),
                "discovered": _discovery_entry(writer, data, tables["discovery_edits"].get(data.name)),
            }
        )
    return entries


def _effect_entries(writer: _Writer, data: _Dataset, tables: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Write the effect-edit files of each effect method of a dataset; return their manifest entries."""
    changes = tables["effect_changes"].filter(pl.col("dataset") == data.name)
    entries = []
    for method in _first_seen(changes["method"]):
        mine = changes.filter(pl.col("method") == method)
        edits = tables["effect_edits"].filter(pl.col("edit_id").is_in(mine["edit_id"].unique().to_list()))
        found = tables["findings"].filter(
            (pl.col("dataset") == data.name) & (pl.col("method") == method) & pl.col("carrier").is_not_null()
        )
        carriers = {
            (r["rm"], r["name"]): (r["carrier"], r["carrier_change"]) for r in found.iter_rows(named=True)
        }
        attributes, payloads = effect_payloads(edits, mine, data.comparisons, data.index, _num, carriers)
        for key, payload in payloads.items():
            name = str(attributes.index(key)) if key in attributes else key
            where = f"{data.name}/{_safe(method, 'method')}"
            writer.put(f"datasets/{where}/effects/{name}.js", f"effects/{where}/{name}", payload)
        entries.append({"method": method, "attributes": attributes, "length": LENGTH in payloads})
    return entries


def _discovery_entry(writer: _Writer, data: _Dataset, edits: pl.DataFrame | None) -> list[dict[str, Any]]:
    """Write the edit files of a dataset's discovered features; return each feature's name and edit count."""
    if edits is None:
        return []
    features, payloads = discovery_payloads(edits)
    for k, payload in enumerate(payloads):
        writer.put(f"datasets/{data.name}/discovered/{k}.js", f"discovered/{data.name}/{k}", payload)
    return [{"feature": f, "n": p["n"]} for f, p in zip(features, payloads, strict=True)]


# ── tokens ────────────────────────────────────────────────────────────────────────────────────────────────
def token_key(text: str) -> str:
    """What a token search compares: the text without surrounding ASCII whitespace, lower-cased (the page's
    ``norm``)."""
    return text.strip(_ASCII_SPACE).lower()


def token_bucket(text: str) -> int:
    """The search file of a token: its key's first character's code point modulo TOKEN_BUCKETS (0 for an
    empty key), so a search for a word or a prefix of one loads one small file per scan (the page's
    ``bucket``)."""
    key = token_key(text)
    return ord(key[0]) % TOKEN_BUCKETS if key else 0


def _token_entries(writer: _Writer, scans: pl.DataFrame, settings: ExplorerSettings) -> dict[str, Any] | None:
    """Each (RM, prompt) scan listed best first (ties by token id; tied scores share their average rank),
    split into TOKEN_BUCKETS search files of ``[text, score, rank]`` columns; the manifest keeps the size and
    the top and bottom lists."""
    if scans.is_empty():
        return None
    n = settings.n_extremes
    rms = [_safe(rm, "RM") for rm in _first_seen(scans["rm"])]
    prompts = [_safe(p, "token prompt") for p in _first_seen(scans["prompt_id"])]
    files: dict[str, dict[str, Any]] = {}
    for rm in rms:
        for prompt in prompts:
            scan = scans.filter((pl.col("rm") == rm) & (pl.col("prompt_id") == prompt))
            if scan.is_empty():
                continue
            scan = scan.sort(["score", "token_id"], descending=[True, False])
            texts, scores = scan["text"].to_list(), [_num(s) for s in scan["score"]]
            ranks = _average_ranks(scan["score"])
            buckets: dict[int, dict[str, list[Any]]] = {}
            for rank, text, score in zip(ranks, texts, scores, strict=True):
                part = buckets.setdefault(token_bucket(text), {"text": [], "score": [], "rank": []})
                part["text"].append(text)
                part["score"].append(score)
                part["rank"].append(rank)
            for b, part in sorted(buckets.items()):
                writer.put(f"tokens/{rm}/{prompt}/{b}.js", f"tokens/{rm}/{prompt}/{b}", part)
            pairs = list(zip(texts, scores, strict=True))
            files.setdefault(rm, {})[prompt] = {
                "n": len(texts),
                "top": pairs[:n],
                "bottom": pairs[-n:][::-1],
                "buckets": sorted(buckets),  # the search files written
            }
    return {
        "rms": rms,
        "prompts": [{"id": p, "text": settings.token_prompts.get(p)} for p in prompts],
        "scans": files,
        "buckets": TOKEN_BUCKETS,
    }


def _average_ranks(scores: pl.Series) -> list[int | float | None]:
    """1 = the highest score; tied scores share the mean of their places (1, 2.5, 2.5, 4), as the token
    statistics rank; a whole rank is written as an integer, a missing score has none."""
    ranks = scores.rank("average", descending=True).to_list()
    return [r if r is None or r != int(r) else int(r) for r in ranks]


def _human_file(writer: _Writer, human: pl.DataFrame, prompt: str | None) -> bool:
    """Each RM's scores of the human ranking's items, with the RM's own rank of them (1 = best; tied scores
    share their average rank)."""
    if human.is_empty():
        return False
    rms: dict[str, Any] = {}
    for rm in _first_seen(human["rm"]):
        rows = human.filter(pl.col("rm") == rm).sort(["human_rank", "item"])
        rms[rm] = {
            "item": rows["item"].to_list(),
            "human_rank": rows["human_rank"].to_list(),
            "score": [_num(s) for s in rows["score"]],
            "rank": _average_ranks(rows["score"]),
        }
    writer.put("tokens/human.js", "human", {"prompt": prompt, "rms": rms})
    return True


# ── the page ──────────────────────────────────────────────────────────────────────────────────────────────
def _static(name: str) -> str:
    return (resources.files("rmexplain.explorer") / "static" / name).read_text(encoding="utf-8")


def render_page(manifest: Mapping[str, Any], title: str) -> str:
    """``index.html``: the template with the CSS, the JavaScript, the manifest and the title filled in (one
    pass over the template, so nothing inserted is scanned for markers again)."""
    script = _static("explorer.js")
    if re.search(r"</script", script, re.IGNORECASE):
        raise ExplorerError("explorer.js must not contain '</script' (it is inlined into index.html)")
    fill = {
        "/*CSS*/": _static("explorer.css"),
        "/*MANIFEST*/": js_literal(manifest),
        "/*JS*/": script,
        "<!--TITLE-->": html.escape(title),
    }
    page = _static("index.html")
    missing = [marker for marker in fill if marker not in page]
    if missing:
        raise ExplorerError(f"the page template has no {missing} marker")
    return re.sub("|".join(re.escape(m) for m in fill), lambda m: fill[m.group(0)], page)


def read_inputs(inputs: ExplorerInputs) -> dict[str, pl.DataFrame]:
    """Every input table, checked against its contract."""
    return {
        "comparisons": _read(inputs.comparisons, S.COMPARISONS, "comparisons"),
        "originals": _read(inputs.originals, S.ORIGINAL_SCORES, "original scores"),
        "perturbations": _read(inputs.perturbations, S.PERTURBATIONS, "perturbations"),
        "explanations": _read(inputs.explanations, S.EXPLANATIONS, "explanations"),
        "pfr": _read(inputs.pfr, S.PFR, "pfr"),
        "examples": _read(inputs.examples, S.EXAMPLES, "examples"),
        "judgements": _read(inputs.judgements, S.JUDGEMENTS, "judgements"),
        "token_scans": _read(inputs.token_scans, S.TOKEN_SCORES, "token scores"),
        "token_human": _read(inputs.token_human, S.TOKEN_HUMAN_SCORES, "token human scores"),
        "findings": _read(inputs.findings, S.FINDINGS, "findings"),
        "effect_edits": _read(inputs.effect_edits, S.EFFECT_EDITS, "effect edits"),
        "effect_changes": _read(inputs.effect_changes, S.EFFECT_CHANGES, "effect changes"),
        "discovery_edits": {Path(p).parent.name: pl.read_parquet(p) for p in inputs.discovery_edits},
    }


def build_explorer(inputs: ExplorerInputs, out_dir: str | Path, settings: ExplorerSettings) -> dict[str, int]:
    """Write ``out_dir/index.html`` and ``out_dir/data/`` (replaced if present); return every written file's
    size in bytes, by path relative to ``out_dir``."""
    if settings.comparisons_per_file < 1:
        raise ExplorerError(f"comparisons_per_file must be at least 1, not {settings.comparisons_per_file}")
    root = Path(out_dir)
    if (root / "data").exists():
        shutil.rmtree(root / "data")
    (root / "data").mkdir(parents=True)  # the rule's output, empty where nothing needs a data file
    tables = read_inputs(inputs)
    writer = _Writer(root)
    per_file = settings.comparisons_per_file
    manifest = {
        "title": settings.title,
        "level": settings.level,
        "per_file": per_file,
        "datasets": _dataset_entries(writer, tables, per_file),
        "tokens": _token_entries(writer, tables["token_scans"], settings),
        "human": _human_file(writer, tables["token_human"], settings.human_prompt),
        "human_prompt": settings.human_prompt,
        "findings": finding_rows(tables["findings"], _num),
    }
    manifest["data_files"] = {"count": len(writer.sizes), "bytes": sum(writer.sizes.values())}
    page = render_page(manifest, settings.title).encode("utf-8")
    (root / "index.html").write_bytes(page)
    return {"index.html": len(page), **dict(sorted(writer.sizes.items()))}


def run_explorer(
    inputs: Mapping[str, Sequence[str]], index: str, settings: Mapping[str, Any]
) -> dict[str, int]:
    """The rule's call: build the explorer whose page is ``index`` (its data files go beside it, in
    ``data/``) from input files by ``ExplorerInputs`` field and ``ExplorerSettings`` keys."""
    unknown = set(inputs) - set(ExplorerInputs.__dataclass_fields__)
    if unknown:
        raise ExplorerError(f"unknown explorer input(s) {sorted(unknown)}")
    files = ExplorerInputs(**{name: list(paths) for name, paths in inputs.items()})
    return build_explorer(files, Path(index).parent, ExplorerSettings(**settings))
