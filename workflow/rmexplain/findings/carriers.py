"""Which class carries a finding: a catalogue probe, a mined string or an attribute whose edits change a
class the RM rewards or penalises (a numbered list adds digits, "Let me know if …" adds a first-person
word) is listed under that class, not as a finding of its own (docs/findings.md).

The classes are the discovered features of ``rmexplain.discovery.classes`` (numbers as digits, first- and
second-person words, filler words, ending on a question, opening with "I"), the word classes the offline
engine's second round merges (``rmexplain.discovery.merging``: a member word goes under its class) and the
class of long words it screens (``classes.LongWords``: "consideration" goes under words of 10 letters or
more), the features that count one character class (the catalogue's punctuation probes — an exclamation mark,
an ellipsis, … — its emoji probe, a mined character): "Sure!", "Hi there!" and "Good luck!" are the
exclamation mark an RM penalises, every other catalogue probe, whose pattern's matches are its instances: the
mined "I’m sorry," is the apology an RM penalises, and the miner's lexicon categories (a word of AFINN's
negative words, "bad", is one of the negative words an RM penalises). Each is tested with its own edits, so
its effect per instance, β_c, is measured causally. A feature F's effect per instance β_F is fitted on its own
edits at the length slope (``rmexplain.effects.estimators.length_design``: an intercept where F has edits both
ways, the signed instance s, the instances beyond the first, dose − s, where their number varies); the same
fit of each edit's change in the class's count, Δc = count(edited) − count(source), gives b_c, the class's
instances that come with one instance of F. Where the RM's reward is additive in the classes, F's fit is Σ_c
β_c·b_c plus what F does besides, so β_c·b_c / β_F is the share of F's effect that the class's own measured
effect accounts for. F goes under the class whose share is nearest the whole of it (ties by the class's name),
where that share is at least ``MIN_SHARE`` and both are significant: of two nested classes (opening with "I"
holds a first-person word) the one that overshoots is not the carrier. A class may go under another (opening
with "I" under first-person words, a numbered list under the digits), never under itself: the classes are
placed first, then the other features, each share nearest the whole first, and a row under a class carries
none; a feature of another engine whose edits are the row's own is the same row
(``rmexplain.findings.summary.place_under_same_edits``), not its carrier. An attribute effect is read the same
way over its round-1 edits (an intercept and the signed direction: b_c per edit towards the better side); one
a class does not carry may still go under a discovered feature by its carrier phrase
(``rmexplain.findings.summary.place_under_carriers``).

These shares propose; the re-scoring decides (``rmexplain.findings.attribution``): each proposed class is
tested by scoring F's edits again with the class's change undone, and where that measured share is known
from enough edits it replaces the proposed one (``under_check`` "re-scored"; a class whose measured share
falls below ``MIN_SHARE`` carries nothing); where it is not (no stand-in of the same length, too few
edits), the proposed share stands (``under_check`` "inferred"). A probe of phrases or markup (an apology,
bold) and a lexicon category have no stand-in of the same length and are never proposed for re-scoring:
their shares are inferred.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import polars as pl

from rmexplain.discovery.base import Feature
from rmexplain.discovery.catalogue import Probe
from rmexplain.discovery.classes import CLASS_KINDS, LongWords
from rmexplain.discovery.mining import LexiconWords, WordClass, feature_named, lexicon_features
from rmexplain.findings.attribution import (
    CHARACTER_KINDS,
    MIN_MASKING_PART,
    MIN_SHARE,
    TOLERANCE,
    WORD_CLASSES,
    Candidate,
    Check,
    CheckKey,
    has_stand_in,
    signed_coefficient,
)

MIN_PER_INSTANCE = 0.5  # a word class is tried on a finding whose instance comes with this many or more


def place_under_classes(
    rows: list[dict[str, Any]],
    edits: Mapping[str, pl.DataFrame],
    checks: Mapping[CheckKey, Check] | None = None,
    texts: Mapping[tuple[str, str], EditTexts] | None = None,
) -> list[dict[str, Any]]:
    """``rows`` (discovered FINDINGS rows) with ``under``, ``under_share`` and ``under_per_instance`` set on
    each significant feature a significant class of the same dataset and RM carries; ``edits``: dataset ->
    its discovery edits (``feature``, ``direction``, ``source_text``, ``edited_text``; ``engine`` and ``dose``
    where the table has them). A class may go under another class (opening with "I" under first-person
    words); the classes are placed first, then the other features, each share nearest the whole first (ties
    by the feature's, then the class's name), and a row that is under a class carries none, so no class
    ends up under itself; a class whose edits are the row's own, made by another engine, is not its carrier;
    ``checks``: the re-scored shares (``rmexplain.findings.attribution``), which decide where they can;
    ``texts``: ``feature_edit_texts(edits)``, where the caller has it."""
    held = _classes(rows)
    fitted = _PerInstance(
        lambda dataset, method, name: _feature_edits(edits[dataset], method, name)
    )  # every RM of a dataset shares a feature's edits: each b_c is fitted once
    texts = feature_edit_texts(edits) if texts is None else texts
    engine = {(r["dataset"], r["rm"], r["name"]): r["method"] for r in rows}
    candidates = []
    for row in rows:
        mine = held.get((row["dataset"], row["rm"]), [])
        if mine and row["significant"] and row["dataset"] in edits:
            candidates += [
                (c, row)
                for c in _shares(row, mine, fitted, checks)
                if c.name != row["name"] and not _same_edits_elsewhere(row, c.name, texts, engine)
            ]
    placed: set[tuple[str, str, str]] = set()  # (dataset, RM, feature)
    carriers: set[tuple[str, str, str]] = set()
    is_class = {(d, rm, name) for (d, rm), found in held.items() for name, _, _ in found}
    nearest_first = sorted(
        candidates,
        key=lambda c: (
            (c[1]["dataset"], c[1]["rm"], c[1]["name"]) not in is_class,
            _from_whole(c[0].share),
            c[1]["name"],
            c[0].name,
        ),
    )  # classes first: a class another carries (a numbered list's digits) is placed before it could carry
    for share, row in nearest_first:
        key = (row["dataset"], row["rm"])
        if (*key, row["name"]) in placed or (*key, row["name"]) in carriers or (*key, share.name) in placed:
            continue
        row.update(share.columns())
        placed.add((*key, row["name"]))
        carriers.add((*key, share.name))
    return rows


MIN_SHARED_EDITS = 3  # (response, direction) pairs two features must both have edited to be called alike
EditTexts = dict[tuple[str, int], str]  # a feature's edits: (source text, direction) -> edited text


def same_edits_alike(a: EditTexts, b: EditTexts) -> bool:
    """Whether two features' edits ((source text, direction) -> edited text) are the same edits: on every
    (source, direction) both edited, at least ``MIN_SHARED_EDITS`` of them, the same edited text."""
    shared = a.keys() & b.keys()
    return len(shared) >= MIN_SHARED_EDITS and all(a[key] == b[key] for key in shared)


def feature_edit_texts(discovery_edits: Mapping[str, pl.DataFrame]) -> dict[tuple[str, str], EditTexts]:
    """(dataset, feature) -> its edits."""
    out: dict[tuple[str, str], EditTexts] = {}
    for dataset, edits in discovery_edits.items():
        columns = edits.select("feature", "source_text", "direction", "edited_text")
        for feature, source, direction, edited in columns.iter_rows():
            out.setdefault((dataset, feature), {})[(source, direction)] = edited
    return out


def _same_edits_elsewhere(
    row: Mapping[str, Any],
    name: str,
    texts: Mapping[tuple[str, str], EditTexts],
    engine: Mapping[tuple[str, str, str], str],
) -> bool:
    """Whether feature ``name`` is another engine's with ``row``'s own edits: the same row
    (``rmexplain.findings.summary.place_under_same_edits``), not its carrier."""
    dataset = row["dataset"]
    return engine[(dataset, row["rm"], name)] != row["method"] and same_edits_alike(
        texts.get((dataset, row["name"]), {}), texts.get((dataset, name), {})
    )


def place_attributes_under_classes(
    attributes: list[dict[str, Any]],
    discovered: Sequence[Mapping[str, Any]],
    edits: Mapping[tuple[str, str], pl.DataFrame],
    checks: Mapping[CheckKey, Check] | None = None,
) -> list[dict[str, Any]]:
    """``attributes`` (attribute FINDINGS rows) with ``under``, ``under_share`` and ``under_per_instance``
    set on each significant attribute effect a significant class of the same dataset and RM carries (one
    not itself under another), its edits fitted as its effect is (an intercept and the signed direction);
    ``edits``: (dataset, method) ->
    its round-1 edits (``attribute``, ``direction`` better/worse, ``source_text``, ``text``). Per edit, as the
    attribute effects are: b_c is the class's instances one edit towards the better side changes; ``checks``
    as ``place_under_classes``'s."""
    held = _classes([r for r in discovered if r.get("under") is None])  # a row under another carries none
    fitted = _attribute_fits(edits)
    for row in attributes:
        mine = held.get((row["dataset"], row["rm"]), [])
        pair = edits.get((row["dataset"], row["method"]))
        if row["kind"] != "attribute" or not mine or not row["significant"] or pair is None:
            continue
        shares = _shares(row, mine, fitted, checks)
        if shares:
            row.update(min(shares, key=lambda c: (_from_whole(c.share), c.name)).columns())
    return attributes


def _attribute_fits(edits: Mapping[tuple[str, str], pl.DataFrame]) -> _PerInstance:
    """b_c of attribute effects' round-1 edits, each per edit towards the better side."""
    return _PerInstance(
        lambda dataset, method, name: (
            edits[(dataset, method)]
            .filter(pl.col("attribute") == name)
            .select(
                pl.when(pl.col("direction") == "better").then(1).otherwise(-1).alias("direction"),
                "source_text",
                pl.col("text").alias("edited_text"),
            )
        )
    )  # every RM of a (dataset, method) shares an attribute's edits: each b_c is fitted once


def proposals(
    attributes: Sequence[Mapping[str, Any]],
    discovered: Sequence[Mapping[str, Any]],
    attribute_edits: Mapping[tuple[str, str], pl.DataFrame],
    discovery_edits: Mapping[str, pl.DataFrame],
) -> list[Candidate]:
    """Every (finding, class) to re-score, whatever the RM, in row order, each once: for each significant
    finding (attribute effect or discovered feature) of some RM, each significant class whose measured
    effect accounts for at least ``MIN_SHARE`` of it, and each class of ``WORD_CLASSES`` whose own edits'
    estimate, anywhere in its interval, could (significant or not: a class the responses rarely hold has too
    few edits of its own), or that has no estimate and comes with at least ``MIN_PER_INSTANCE`` instances
    per instance of the finding (per edit of an attribute); and for every discovered feature, significant
    or not, each class that may work against it (``_masking``). ``discovered``: every discovered row, the
    classes' own among them."""
    held = _classes(discovered)
    estimates = {(r["dataset"], r["rm"], r["name"]): r for r in discovered if r["name"] in WORD_CLASSES}
    fits = {
        "discovered": _PerInstance(lambda d, m, name: _feature_edits(discovery_edits[d], m, name)),
        "attribute": _attribute_fits(attribute_edits),
    }
    found: dict[Candidate, None] = {}
    for row in [*attributes, *discovered]:
        mine = held.get((row["dataset"], row["rm"]), [])
        has_edits = (
            (row["dataset"], row["method"]) in attribute_edits
            if row["kind"] == "attribute"
            else row["dataset"] in discovery_edits
        )
        if row["kind"] not in fits or not has_edits:
            continue
        names = []
        if row["significant"]:
            names += [share.name for share in _shares(row, mine, fits[row["kind"]])]
            names += [
                c
                for c in WORD_CLASSES
                if _could_carry(
                    row,
                    fits[row["kind"]](row, c, class_named(c)),
                    estimates.get((row["dataset"], row["rm"], c)),
                )
            ]
        if row["kind"] == "discovered":
            names += _masking(row, mine, fits["discovered"])
        for name in names:
            if name != row["name"] and not _never_rescored(name):
                found[Candidate(row["dataset"], row["kind"], row["method"], row["name"], name)] = None
    return list(found)


def _masking(
    row: Mapping[str, Any], classes: Sequence[tuple[str, float, Feature]], per_instance_of: _PerInstance
) -> list[str]:
    """The significant classes with stand-ins that may work against a discovered feature: its edits change
    the class (``b_c``), and what the class's measured effect takes, β_c·b_c, is at least
    ``MIN_MASKING_PART`` and of the other sign, or the feature is not significant (its edits' two parts
    may cancel: "I hope this helps!" adds a phrase an RM rewards and a mark it penalises)."""
    if not np.isfinite(row["effect"]):
        return []
    out = []
    for name, effect, detector in classes:
        if name == row["name"] or not has_stand_in(detector):
            continue
        part = per_instance_of(row, name, detector) * effect
        opposed = not row["significant"] or np.sign(part) == -np.sign(row["effect"])
        if np.isfinite(part) and abs(part) >= MIN_MASKING_PART and opposed:
            out.append(name)
    return out


def _never_rescored(name: str) -> bool:
    """Whether the class is a catalogue probe of phrases or markup (an apology, bold), a lexicon category
    (a negative word has no neutral word of its sense) or a class of long words (no thesaurus ships): none of
    its instances has a stand-in of the same length, so it is never re-scored and the share it proposes
    stands."""
    detector = class_named(name)
    return isinstance(detector, (Probe, LexiconWords, LongWords)) and not has_stand_in(detector)


def _could_carry(row: Mapping[str, Any], per_instance: float, own: Mapping[str, Any] | None) -> bool:
    """Whether a word class whose instances come ``per_instance`` with one of ``row``'s could carry half
    of its effect: by its own edits' estimate or either end of its interval (``own``), or, without one,
    where at least ``MIN_PER_INSTANCE`` instances come with each."""
    if not np.isfinite(per_instance):
        return False
    values = [own.get(k) for k in ("effect", "low", "high")] if own is not None else []
    values = [v for v in values if v is not None and np.isfinite(v)]
    if not values:
        return abs(per_instance) >= MIN_PER_INSTANCE
    return max(per_instance * v / row["effect"] for v in values) >= MIN_SHARE - TOLERANCE


def _from_whole(share: float) -> float:
    """How far a share is from the whole of a finding (to 1e-9: shares equal but for rounding tie)."""
    return round(abs(1 - share), 9)


def _classes(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], list[tuple[str, float, Feature]]]:
    """(dataset, RM) -> its significant classes: (name, effect per instance, detector)."""
    out: dict[tuple[str, str], list[tuple[str, float, Feature]]] = {}
    for row in rows:
        found = _class_of(row)
        if found is not None:
            out.setdefault((row["dataset"], row["rm"]), []).append((row["name"], row["effect"], found))
    return out


class _PerInstance:
    """b_c of a finding's edits, fitted once per (dataset, method, finding, class) whatever the RM;
    ``edits_of(dataset, method, finding)`` gives the finding's edits."""

    def __init__(self, edits_of: Callable[[str, str, str], pl.DataFrame]) -> None:
        self.edits_of = edits_of
        self.edits: dict[tuple[str, str, str], pl.DataFrame] = {}
        self.fitted: dict[tuple[str, str, str, str], float] = {}

    def __call__(self, row: Mapping[str, Any], name: str, detector: Feature) -> float:
        finding = (row["dataset"], row["method"], row["name"])
        if (*finding, name) not in self.fitted:
            if finding not in self.edits:
                self.edits[finding] = self.edits_of(*finding)
            self.fitted[(*finding, name)] = _per_instance(self.edits[finding], detector)
        return self.fitted[(*finding, name)]


@dataclass(frozen=True)
class Share:
    """A class's share of a finding: ``share`` decides (the re-scored one where ``check`` is "re-scored"),
    ``inferred`` is the one the classes' measured effects propose."""

    share: float
    name: str
    per_instance: float
    inferred: float
    check: str  # "re-scored" or "inferred"
    checked: int | None = None  # re-scored: the edits that change the class

    def columns(self) -> dict[str, Any]:
        """The FINDINGS columns of a row placed under this class."""
        return {"under": self.name, "under_share": self.share, "under_per_instance": self.per_instance,
                "under_inferred_share": self.inferred, "under_check": self.check,
                "under_checked_edits": self.checked}  # fmt: skip


def _shares(
    row: Mapping[str, Any],
    classes: Sequence[tuple[str, float, Feature]],
    per_instance_of: _PerInstance,
    checks: Mapping[CheckKey, Check] | None = None,
) -> list[Share]:
    """Each class that carries at least ``MIN_SHARE`` of ``row``'s effect: where its re-scoring decides
    (``checks``), by its re-scored share; elsewhere by the share its measured effect accounts for."""
    if not np.isfinite(row["effect"]) or row["effect"] == 0:
        return []
    out = []
    for name, effect, detector in classes:
        per_instance = per_instance_of(row, name, detector)
        share = float(per_instance * effect / row["effect"])
        check = (checks or {}).get((row["dataset"], row["rm"], row["kind"], row["method"], row["name"], name))
        if check is not None and check.decides:
            if check.carries:
                out.append(Share(check.share, name, per_instance, share, "re-scored", check.checked))
        elif np.isfinite(share) and share >= MIN_SHARE - TOLERANCE:
            out.append(Share(share, name, per_instance, share, "inferred"))
    return out


def _class_of(row: Mapping[str, Any]) -> Feature | None:
    """The class a significant discovered row with a finite effect is, else None."""
    if not row["significant"] or not np.isfinite(row["effect"]) or row["effect"] == 0:
        return None
    return class_named(row["name"])


@cache
def class_named(name: str) -> Feature | None:
    """The detector of a carrier class from its name: a class, a merged word class, a class of long words, a
    lexicon category (a word of it is an instance: "bad" is one negative word), a feature that counts one
    character class (``CHARACTER_KINDS``) or a catalogue probe (its pattern's matches: an apology's "I’m
    sorry", "I apologize", …); None for any other feature (a mined string, an LLM's)."""
    found = feature_named(name) or lexicon_categories().get(name)
    if found is None:
        return None
    kinds = (*CLASS_KINDS, *CHARACTER_KINDS, WordClass.kind, LexiconWords.kind, LongWords.kind)
    return found if found.kind in kinds or isinstance(found, Probe) else None


@cache
def lexicon_categories() -> dict[str, Feature]:
    """The miner's lexicon categories by name (``rmexplain.discovery.mining.lexicon_features``)."""
    return {feature.name: feature for feature in lexicon_features()}


def _feature_edits(edits: pl.DataFrame, engine: str, feature: str) -> pl.DataFrame:
    """One feature's edits of one engine (every engine's where the table names none)."""
    mine = edits.filter(pl.col("feature") == feature)
    return mine.filter(pl.col("engine") == engine) if "engine" in mine.columns else mine


def _per_instance(edits: pl.DataFrame, detector: Feature) -> float:
    """b_c: the class instances that come with one instance of the feature (the signed instance's
    coefficient when each edit's change in the class's count is fitted as the feature's effect is); NaN
    without edits."""
    sign = edits["direction"].cast(pl.Float64).to_numpy()
    pairs = edits.select("source_text", "edited_text").iter_rows()
    change = np.array([detector.count(e) - detector.count(s) for s, e in pairs], dtype=np.float64)
    if "dose" not in edits.columns:  # one instance per edit (an attribute's): the comparisons play no part
        return signed_coefficient(sign, sign, change, [""] * edits.height)
    dose = edits["dose"].cast(pl.Float64).to_numpy()
    return signed_coefficient(sign, dose, change, edits["comparison_id"].to_list())
