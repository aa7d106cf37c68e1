"""The carrier re-scored: each class that may carry a finding (``rmexplain.findings.carriers`` proposes it
from the classes' measured effects) is tested by scoring the finding's edits again with that class's change
undone, at the same length (docs/findings.md).

An edit turns a source S into an edited text E. Its pieces (words, number tokens, single marks, runs of
space) are diffed; every instance of the class among the pieces the edit inserted (in E) or deleted (in S)
is replaced by a stand-in of the same length in words — a number by its words (``Step 1:`` → ``Step one:``),
a first- or second-person word by the third person's (``I`` → ``they``, ``your`` → ``their``), a filler word
by ``also``, an exclamation or question mark by a full stop, any other mark of a character class dropped —
giving S′ and E′, whose counts of the class are equal: the edit without its change of the class. What the
class carries of the edit is (r(E) − r(E′)) − (r(S) − r(S′)); less the reference RM's same where the finding
has one, in the RM's reward sd. Fitted over the finding's edits as its own effect is (``signed_coefficient``),
over that effect, it is the share of the finding the class carries, measured: the re-scoring decides where
the estimate proposed. An edit whose instance has no stand-in of the same length (a number above 99,
``3.5``, ``let's``, a sentence shape), whose class count the stand-ins do not even out, or whose stand-ins
change another class too (``undone_apart``: "They think" opens no sentence with "I"), is a counted skip.
Every edit of the finding is re-scored (one that does not change the class keeps its texts, which are
copied): a sample's own effect would differ from the finding's.

A class that carries a significant finding this way but has no significant row of its own (the responses
rarely hold it: numbers) is measured on the re-scored edits of the findings it carries
(``rescored_classes``): a row of its own, engine ``re-scored``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from difflib import SequenceMatcher
from functools import cache
from typing import Any

import numpy as np
import polars as pl
import regex

from rmexplain.analysis.bootstrap import (
    BootstrapSettings,
    clusters_of,
    interval,
    jackknife_counts,
    resample_counts,
)
from rmexplain.discovery.base import Feature, SkipEdit
from rmexplain.discovery.classes import (
    CLASS_KINDS,
    FILLER,
    I_FORMS,
    class_features,
    class_words,
    number_words,
    word_key,
)
from rmexplain.discovery.mining import feature_named
from rmexplain.discovery.text import pronoun_i
from rmexplain.effects.analysis import (
    MIN_FINDING_PAIRS,
    HalfEstimate,
    excludes_zero,
    median_row,
    replication,
    split_halves,
    word_count,
)
from rmexplain.effects.base import Observations
from rmexplain.effects.estimators import length_design
from rmexplain.ids import text_id
from rmexplain.markup import signed
from rmexplain.schemas import CARRIER_EDITS, conform, polars_schema

# a run of space, a word or number token (with inner ' . , : / -), or any other single character
PIECE = regex.compile(r"\s+|[\p{L}\p{N}\p{M}]+(?:['’.,:/\-][\p{L}\p{N}\p{M}]+)*|.", regex.DOTALL | regex.V1)
THIRD_PERSON = {
    "i": "they", "me": "them", "my": "their", "mine": "theirs", "myself": "themselves", "i'm": "they're",
    "i've": "they've", "i'd": "they'd", "i'll": "they'll", "we": "they", "us": "them", "our": "their",
    "ours": "theirs", "ourselves": "themselves", "we're": "they're", "we've": "they've", "we'd": "they'd",
    "we'll": "they'll", "you": "they", "your": "their", "yours": "theirs", "yourself": "themselves",
    "yourselves": "themselves", "you're": "they're", "you've": "they've", "you'd": "they'd",
    "you'll": "they'll",
}  # fmt: skip
# "you" after one of these is an object: "thank you" → "thank them", "for you" → "for them"
OBJECT_AFTER = frozenset({"thank", "to", "for", "with", "help", "tell", "give", "let", "ask", "see", "about",
                          "at", "from", "of", "on", "by", "show", "send", "after", "before", "like", "than",
                          "into", "without", "assist", "guide", "remind", "wish", "meet", "call",
                          "join"})  # fmt: skip
FILLER_STAND_IN = "also"
SENTENCE_MARKS = frozenset("!?…！？")  # a mark that ends a sentence: a full stop stands in for it
CHARACTER_KINDS = ("punctuation", "character")  # a catalogue punctuation probe, a mined character
CHARACTER_PROBES = ("emoji",)
LARGEST_ONE_WORD = 99  # numbers up to this are one word spelled out ("forty-two")
MIN_SHARE = 0.5  # of a finding's effect a class must carry to be its carrier
TOLERANCE = 1e-9  # a share of exactly MIN_SHARE, up to rounding, counts
MIN_CHECKED_EDITS = 5  # edits that change the class, re-scored, before the re-scoring decides
# Classes of words with a stand-in: tried as the carrier of a significant finding whose edits change them
# wherever their own estimate could carry half of it, significant or not (a class the responses rarely
# hold, such as numbers, has too few edits of its own: rmexplain.findings.carriers.proposals); character
# classes only where their own edits found them significant.
WORD_CLASSES = ("numbers as digits", "pronouns first person", "pronouns second person", "filler words")
RESCORED = "re-scored"  # the engine named on a class measured by re-scoring the findings it carries


def stand_in(detector: Feature, piece: str, word_before: str = "") -> str:
    """A stand-in for one instance of ``detector``'s class of the same length in words (``word_before``:
    the word the instance follows, which makes "you" an object); SkipEdit where the class has none."""
    if detector.kind == "numbers":
        if not piece.isdecimal() or int(piece) > LARGEST_ONE_WORD or (len(piece) > 1 and piece[0] == "0"):
            raise SkipEdit(f"“{piece}” has no one-word spelling (a whole number up to {LARGEST_ONE_WORD})")
        return number_words(int(piece))
    if detector.kind == "pronouns":
        replacement = THIRD_PERSON.get(word_key(piece))
        if word_key(piece) == "you" and word_key(word_before) in OBJECT_AFTER:
            replacement = "them"
        if replacement is None:
            raise SkipEdit(f"“{piece}” has no one-word third-person stand-in")
        replacement = replacement.replace("'", "’") if "’" in piece else replacement
        if word_key(piece) in I_FORMS:  # "I" is upper case anywhere: "they" is where no sentence starts
            opens = not word_before or word_before[-1] in SENTENCE_MARKS or word_before[-1] == "."
            return _same_case("T" if opens else "t", replacement)
        return _same_case(piece, replacement)
    if detector.kind == "filler":
        return _same_case(piece, FILLER_STAND_IN)
    return "." if piece in SENTENCE_MARKS else ""  # a mark of a character class


def _same_case(original: str, replacement: str) -> str:
    return replacement[0].upper() + replacement[1:] if original[:1].isupper() else replacement


def has_stand_in(detector: Feature) -> bool:
    """Whether the class's instances have stand-ins (a class of words or of marks, not a sentence shape)."""
    kinds = ("numbers", "pronouns", "filler", *CHARACTER_KINDS)
    return detector.kind in kinds or detector.name in CHARACTER_PROBES


def undone_pair(detector: Feature, source: str, edited: str) -> tuple[str, str]:
    """(S′, E′): ``source`` and ``edited`` with each instance of the class among the pieces the edit deleted
    and inserted replaced by its stand-in; SkipEdit where one has none, where a stand-in changes the length
    in words, or where the two counts of the class still differ."""
    if not has_stand_in(detector):
        raise SkipEdit(
            f"{detector.name} is no class of words or marks: it has no stand-in of the same length"
        )
    before, after = PIECE.findall(source), PIECE.findall(edited)
    source_out, edited_out = list(before), list(after)
    matcher = SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for pieces, out, start, end in ((before, source_out, i1, i2), (after, edited_out, j1, j2)):
            for k in range(start, end):
                if not pieces[k].isspace() and detector.count(pieces[k]):
                    out[k] = stand_in(detector, pieces[k], _word_before(pieces, k))
    source_undone, edited_undone = "".join(source_out), "".join(edited_out)
    if word_count(source_undone) != word_count(source) or word_count(edited_undone) != word_count(edited):
        raise SkipEdit("a stand-in changes the length in words")
    if detector.count(edited_undone) != detector.count(source_undone):
        raise SkipEdit(f"the edit's change of {detector.name} is not undone piece by piece")
    return source_undone, edited_undone


def undone_apart(detector: Feature, source: str, edited: str) -> tuple[str, str]:
    """``undone_pair``, and SkipEdit where the stand-ins change another class too (``class_features``: an
    RM may reward either): "I think it is done." → "They think it is done." drops a first-person word and
    the sentence's opening "I" at once, so the re-scored part is as much the opening's as the words', and
    the two cannot be told apart on that edit."""
    source_undone, edited_undone = undone_pair(detector, source, edited)
    for other in _classes():
        change = other.count(edited) - other.count(source)
        if other.name != detector.name and other.count(edited_undone) - other.count(source_undone) != change:
            raise SkipEdit(f"undoing {detector.name} changes {other.name} too: the two cannot be told apart")
    return source_undone, edited_undone


@cache
def _classes() -> tuple[Feature, ...]:
    return tuple(class_features(CLASS_KINDS))


def _word_before(pieces: Sequence[str], k: int) -> str:
    """The piece before ``pieces[k]`` past a run of space ("" at the start)."""
    k -= 1
    while k >= 0 and pieces[k].isspace():
        k -= 1
    return pieces[k] if k >= 0 else ""


QUOTED = r"“[^”]*”"  # the instance a skip's reason quotes


def skip_reasons(edits: pl.DataFrame) -> pl.DataFrame:
    """``skip, count`` of the carrier edits not undone, the instance each reason quotes left out so that
    reasons group, most first (ties by reason)."""
    skips = edits.filter(pl.col("skip").is_not_null()).select(pl.col("skip").str.replace_all(QUOTED, "“…”"))
    return skips["skip"].value_counts().sort(["count", "skip"], descending=[True, False])


@dataclass(frozen=True)
class Candidate:
    """A class that may carry a finding (one of a dataset's; the same edits for every RM)."""

    dataset: str
    kind: str  # attribute or discovered
    method: str  # the attribute effects' method or the discovery engine
    finding: str  # the attribute or the feature
    carrier: str  # the class


def carrier_edits(
    candidates: Sequence[Candidate],
    detectors: Mapping[str, Feature],
    edits_of: Callable[[Candidate], pl.DataFrame],
) -> pl.DataFrame:
    """CARRIER_EDITS: every edit of each candidate's finding with the class's change undone (or why not);
    ``edits_of(candidate)`` gives the finding's edits (``comparison_id, target, direction, dose,
    source_text, edited_text``), ``detectors`` each class's detector by name."""
    rows = []
    for candidate in candidates:
        detector = detectors[candidate.carrier]
        for edit in edits_of(candidate).iter_rows(named=True):
            try:
                source_undone, edited_undone, skip = (
                    *undone_apart(detector, edit["source_text"], edit["edited_text"]),
                    None,
                )
            except SkipEdit as why:
                source_undone, edited_undone, skip = None, None, str(why)
            change = detector.count(edit["edited_text"]) - detector.count(edit["source_text"])
            rows.append(
                {**vars(candidate), **edit, "class_change": change, "source_undone": source_undone,
                 "edited_undone": edited_undone, "skip": skip}
            )  # fmt: skip
    frame = pl.DataFrame(rows, schema=polars_schema(CARRIER_EDITS))
    return conform(frame, CARRIER_EDITS, "carrier edits")


@dataclass(frozen=True, eq=False)
class Check:
    """One RM's re-scoring of a candidate: the share of the finding its class carries, over ``checked``
    edits that change the class (``skipped``: edits with no stand-in or a text unscored); per re-scored
    edit, its (comparison, source, edited) ``edits``, the class's ``change`` and ``part`` (reward sd)."""

    share: float
    checked: int
    skipped: int
    edits: tuple[tuple[str, str, str], ...] = ()
    undone: tuple[tuple[str, str], ...] = ()  # (S′, E′) of each edit
    change: np.ndarray = field(default_factory=lambda: np.zeros(0))
    part: np.ndarray = field(default_factory=lambda: np.zeros(0))
    whole: np.ndarray = field(default_factory=lambda: np.zeros(0))  # the edit's own reward change (sd)
    direction: np.ndarray = field(default_factory=lambda: np.zeros(0))
    dose: np.ndarray = field(default_factory=lambda: np.zeros(0))
    words_change: np.ndarray = field(default_factory=lambda: np.zeros(0))
    significant: bool = True  # whether the finding is: only a significant one can be carried

    @property
    def decides(self) -> bool:
        return self.checked >= MIN_CHECKED_EDITS and bool(np.isfinite(self.share))

    @property
    def carries(self) -> bool:
        """Whether the re-scoring decides that the class carries the finding."""
        return self.significant and self.decides and self.share >= MIN_SHARE - TOLERANCE


CheckKey = tuple[str, str, str, str, str, str]  # dataset, RM, kind, method, finding, class


def carrier_checks(
    edits: pl.DataFrame,
    prompts: Mapping[str, str],
    rewards: Mapping[str, Mapping[str, float | None]],
    sds: Mapping[str, float],
    references: Mapping[str, str | None],
    effects: Mapping[tuple[str, str, str, str, str], float],
    significant: Collection[tuple[str, str, str, str, str]] | None = None,
) -> dict[CheckKey, Check]:
    """Each RM's ``Check`` of every candidate of one dataset's CARRIER_EDITS; ``prompts``: comparison id ->
    prompt; ``rewards``: RM -> text id -> reward; ``sds``: RM -> its reward sd; ``references``: RM -> the RM
    it is read against; ``effects``: (dataset, RM, kind, method, finding) -> the finding's effect (per
    instance, or per edit towards the better side); ``significant``: the findings of those that are (every
    one where not given), the only ones a class can carry."""
    out: dict[CheckKey, Check] = {}
    keys = ["dataset", "kind", "method", "finding", "carrier"]
    for group_key, group in edits.group_by(keys, maintain_order=True):
        dataset, kind, method, finding, carrier = (str(k) for k in group_key)
        for rm, reference in references.items():
            effect = effects.get((dataset, rm, kind, method, finding))
            if effect is None or rm not in rewards:
                continue
            check = _check(
                group, prompts, [rewards[rm], *([rewards[reference]] if reference else [])], sds[rm], effect
            )
            key = (dataset, rm, kind, method, finding)
            mine = significant is None or key in significant
            out[(*key, carrier)] = check if mine else replace(check, significant=False)
    return out


def _check(
    group: pl.DataFrame,
    prompts: Mapping[str, str],
    rewards: Sequence[Mapping[str, float | None]],
    sd: float,
    effect: float,
) -> Check:
    """The share of ``effect`` the class carries over one candidate's edits (``rewards``: the RM's, then its
    reference's, subtracted)."""
    checked, skipped = 0, 0
    edits, undone, changes, parts, directions, doses, wholes, lengths = [], [], [], [], [], [], [], []
    for row in group.iter_rows(named=True):
        if row["skip"] is not None:
            skipped += 1
            continue
        prompt = prompts[row["comparison_id"]]
        texts = (row["edited_text"], row["edited_undone"], row["source_text"], row["source_undone"])
        values = [[_reward(r, text_id(prompt, t)) for t in texts] for r in rewards]
        per_rm = [(e - e_undone) - (s - s_undone) for e, e_undone, s, s_undone in values]
        part = per_rm[0] - (per_rm[1] if len(per_rm) > 1 else 0.0)
        whole = values[0][0] - values[0][2] - (values[1][0] - values[1][2] if len(values) > 1 else 0.0)
        if not np.isfinite(part) or not np.isfinite(whole):
            skipped += 1
            continue
        checked += texts[0] != texts[1] or texts[2] != texts[3]
        edits.append((row["comparison_id"], row["source_text"], row["edited_text"]))
        undone.append((row["source_undone"], row["edited_undone"]))
        changes.append(row["class_change"])
        parts.append(part / sd)
        directions.append(row["direction"])
        doses.append(row["dose"])
        wholes.append(whole / sd)
        lengths.append(word_count(row["edited_text"]) - word_count(row["source_text"]))
    direction, dose = np.array(directions, float), np.array(doses, float)
    carried = signed_coefficient(direction, dose, np.array(parts), [edit[0] for edit in edits])
    share = carried / effect if effect else float("nan")
    return Check(float(share), checked, skipped, tuple(edits), tuple(undone), np.array(changes, float),
                 np.array(parts), np.array(wholes), direction, dose, np.array(lengths, float))  # fmt: skip


def signed_coefficient(
    sign: np.ndarray, dose: np.ndarray, values: np.ndarray, comparison: Sequence[str]
) -> float:
    """What one instance of a finding carries of ``values``, fitted per edit as the finding's own effect is
    (``rmexplain.effects.estimators.length_design``, over the edits' ``comparison`` ids): an intercept where
    it has edits both ways, the signed instance, and the instances beyond the first (dose − sign) where their
    number varies over enough pairs (the dose as the instance's column where it varies over few); the signed
    instance's coefficient. NaN without edits."""
    if not values.size:
        return float("nan")
    design, signed_column = _signed_design(sign, dose, comparison)
    coefficients = np.linalg.lstsq(design, values, rcond=None)[0]
    return float(coefficients[signed_column])


def _signed_design(sign: np.ndarray, dose: np.ndarray, comparison: Sequence[str]) -> tuple[np.ndarray, int]:
    """``signed_coefficient``'s design matrix (``length_design``'s for one attribute, less its length
    column) and the column of the signed instance."""
    n = len(sign)
    codes = np.unique(np.asarray(comparison, dtype=object), return_inverse=True)[1].astype(np.int64)
    edits = Observations(codes, np.zeros(n, dtype=np.int64), np.zeros(n), sign, np.zeros(n), dose)
    design, columns = length_design(edits)
    return design[:, :-1], columns[0]


def _weighted_signed_coefficients(design: np.ndarray, column: int, y: np.ndarray, weights: np.ndarray):
    """The signed instance's coefficient of each row of ``weights`` (one weight per edit: a resample's
    counts), NaN where the weighted fit is singular."""
    weights = np.asarray(weights, dtype=np.float64)
    gram = np.einsum("rn,ni,nj->rij", weights, design, design)  # the normal equations of each weighted fit
    moments = np.einsum("rn,ni,n->ri", weights, design, y)
    out = np.full(weights.shape[0], np.nan)
    full = np.linalg.matrix_rank(gram) == design.shape[1]
    if full.any():
        out[full] = np.linalg.solve(gram[full], moments[full][..., None])[:, column, 0]
    return out


def _reward(rewards: Mapping[str, float | None], key: str) -> float:
    value = rewards.get(key)
    return float("nan") if value is None else float(value)


# ── a finding with a class that works against it undone ───────────────────────────────────────────────────
MIN_MASKING_PART = 0.1  # reward sd per instance: the least a class must take from a finding to be undone


def unmasked_effect(
    check: Check, dataset: str, slope: float, length_sd: float, bootstrap: BootstrapSettings
) -> dict[str, Any]:
    """The finding's effect per instance with the class's change undone ("I hope this helps!" without its
    "!"): each re-scored edit's reward change r(E′) − r(S′) (its whole change less the class's part, the
    reference RM's same subtracted), held at equal length by the RM's ``slope`` (reward sd per
    ``length_sd`` words; E′ has E's words), fitted as the finding's own effect is (``signed_coefficient``:
    without the class undone the same fit gives the finding's effect), its interval over the pairs
    resampled (only where the class could work against it, ``_works_against``: else no interval, not
    significant); significant where that excludes 0 and the edits come from at least
    ``MIN_FINDING_PAIRS`` pairs. ``as_edited``: the same fit without the class undone (the finding's own
    effect)."""
    if not check.whole.size or not np.isfinite(slope) or not length_sd > 0:
        return {"effect": float("nan"), "low": float("nan"), "high": float("nan"), "pairs": 0,
                "significant": False, "as_edited": float("nan")}  # fmt: skip
    as_edited = check.whole - slope * check.words_change / length_sd
    rest = as_edited - check.part
    comparisons = [edit[0] for edit in check.edits]
    design, column = _signed_design(check.direction, check.dose, comparisons)
    effect = float(np.linalg.lstsq(design, rest, rcond=None)[0][column])
    as_edited_effect = signed_coefficient(check.direction, check.dose, as_edited, comparisons)
    point = {"effect": effect, "as_edited": as_edited_effect}
    if not _works_against(point["effect"], point["as_edited"]):
        return {**point, "low": float("nan"), "high": float("nan"), "pairs": 0, "significant": False}
    clusters = clusters_of(comparisons, dataset)
    samples = _weighted_signed_coefficients(design, column, rest, resample_counts(clusters, bootstrap))
    jackknife = _weighted_signed_coefficients(design, column, rest, jackknife_counts(clusters))
    low, high, _ = interval(effect, samples, jackknife, bootstrap)
    pairs = len(set(clusters.tolist()))
    return {**point, "low": low, "high": high, "pairs": pairs,
            "significant": excludes_zero(low, high) and pairs >= MIN_FINDING_PAIRS}  # fmt: skip


def masks(check: Check, unmasked: Mapping[str, Any]) -> bool:
    """Whether the class works against the finding, as the re-scoring decides (over at least
    ``MIN_CHECKED_EDITS`` edits that change it): with it undone the finding is significant and larger than
    as edited, the class having taken at least ``MIN_MASKING_PART`` of the other sign. A class that
    carries the finding (undone, it goes) takes of the same sign: it does not mask it."""
    return bool(
        check.checked >= MIN_CHECKED_EDITS
        and unmasked["significant"]
        and _works_against(unmasked["effect"], unmasked["as_edited"])
    )


def _works_against(effect: float, as_edited: float) -> bool:
    """Whether the class took at least ``MIN_MASKING_PART`` of the other sign from a finding whose effect is
    ``effect`` undone and ``as_edited`` as edited, leaving it smaller."""
    taken = as_edited - effect
    return bool(
        np.sign(taken) == -np.sign(effect)
        and abs(taken) >= MIN_MASKING_PART - TOLERANCE
        and abs(effect) > abs(as_edited)
    )


# ── a class measured on the edits of the findings it carries ──────────────────────────────────────────────
def class_effect(checks: Sequence[Check], dataset: str, bootstrap: BootstrapSettings) -> dict[str, Any]:
    """A class's effect per instance from the re-scored edits of the findings it carries (each distinct edit
    once): Σ change·part / Σ change², its interval over the pairs resampled (the analysis' bootstrap), the
    edits and pairs that change the class, whether it is significant (interval excluding 0, at least
    ``MIN_FINDING_PAIRS`` pairs), its two halves of the pairs (``replication``) and an example: the re-scored
    edit that adds the class whose part is the median, shown as the stand-in replaced by the class."""
    rows = [(edit, x, y, undone) for edit, (x, y, undone) in distinct_edits(checks).items() if x != 0]
    if not rows:
        return {"effect": float("nan"), "low": float("nan"), "high": float("nan"), "n": 0, "pairs": 0,
                "significant": False}  # fmt: skip
    ids = [edit[0] for edit, *_ in rows]
    clusters = clusters_of(ids, dataset)
    x, y = np.array([r[1] for r in rows]), np.array([r[2] for r in rows])
    whole = _per_instance_estimate(x, y, clusters, bootstrap)
    split = split_halves(ids, dataset)
    halves = [
        _per_instance_estimate(x[split == h], y[split == h], clusters[split == h], bootstrap) for h in (0, 1)
    ]
    added = [i for i, r in enumerate(rows) if r[1] > 0]
    example = {}
    if added:
        (comparison, _, edited), *_, stand_in = rows[added[median_row(y[added] / x[added])]]
        example = {"example_comparison_id": comparison, "example_before": stand_in, "example_after": edited}
    significant = excludes_zero(whole.low, whole.high) and whole.pairs >= MIN_FINDING_PAIRS
    return {"effect": whole.effect, "low": whole.low, "high": whole.high, "n": len(rows),
            "pairs": whole.pairs, "significant": significant, **replication(whole.effect, halves),
            **example}  # fmt: skip


def distinct_edits(checks: Sequence[Check]) -> dict[tuple[str, str, str], tuple[float, float, str]]:
    """(comparison, S, E) -> the class's change, its part and E′ of each re-scored edit of ``checks``, an
    edit two findings share once (the first's)."""
    seen: dict[tuple[str, str, str], tuple[float, float, str]] = {}
    for check in checks:
        for edit, x, y, undone in zip(check.edits, check.change, check.part, check.undone, strict=True):
            seen.setdefault(edit, (float(x), float(y), undone[1]))
    return seen


def _per_instance_estimate(
    x: np.ndarray, y: np.ndarray, clusters: np.ndarray, bootstrap: BootstrapSettings
) -> HalfEstimate:
    """Σ x·y / Σ x² over observations in ``clusters``, with its bootstrap interval and its pairs."""
    if not x.size:
        return HalfEstimate(float("nan"), float("nan"), float("nan"), 0)
    effect = float(np.sum(x * y) / np.sum(x * x))
    resampled, left_out = resample_counts(clusters, bootstrap), jackknife_counts(clusters)
    with np.errstate(invalid="ignore", divide="ignore"):  # a jackknife sample of one pair: NaN, left out
        samples = (resampled @ (x * y)) / (resampled @ (x * x))
        jackknife = (left_out @ (x * y)) / (left_out @ (x * x))
    low, high, _ = interval(effect, samples, jackknife, bootstrap)
    return HalfEstimate(effect, low, high, len(set(clusters.tolist())))


def member_words(detector: Feature) -> frozenset[str] | None:
    """The words of a class of listed words (filler words, first- or second-person words) as ``word_key``
    holds them; None for any other class (a number is no listed word)."""
    if detector.kind == "filler":
        return FILLER
    return getattr(detector, "members", None) if detector.kind == "pronouns" else None


def member_effects(
    checks: Sequence[Check], members: frozenset[str], dataset: str, bootstrap: BootstrapSettings
) -> list[dict[str, Any]]:
    """Each member word's effect per instance, from the distinct re-scored edits of ``checks`` whose change
    of the class is that word alone (``class_effect``'s Σ Δc·part / Σ Δc², its interval over the pairs),
    for each word changed on at least ``MIN_FINDING_PAIRS`` pairs; largest |effect| first (ties by the
    word). A class whose members the RM moves differently ("actually" penalised, "really" not) is read by
    them."""
    by_word: dict[str, list[tuple[str, float, float]]] = {}
    for (comparison, source, edited), (_, part, _) in distinct_edits(checks).items():
        change = _word_counts(edited, members)
        change.subtract(_word_counts(source, members))
        changed = {w: n for w, n in change.items() if n}
        if len(changed) == 1:
            (word, n), *_ = changed.items()
            by_word.setdefault(word, []).append((comparison, float(n), part))
    out = []
    for word, rows in sorted(by_word.items()):
        clusters = clusters_of([r[0] for r in rows], dataset)
        x, y = np.array([r[1] for r in rows]), np.array([r[2] for r in rows])
        found = _per_instance_estimate(x, y, clusters, bootstrap)
        if found.pairs >= MIN_FINDING_PAIRS:
            significant = excludes_zero(found.low, found.high)
            out.append({"word": word, "effect": found.effect, "low": found.low, "high": found.high,
                        "pairs": found.pairs, "significant": significant})  # fmt: skip
    return sorted(out, key=lambda m: (-round(abs(m["effect"]), 9), m["word"]))


def _word_counts(text: str, members: frozenset[str]) -> Counter[str]:
    return Counter(word_key(text[a:b]) for a, b in class_words(text, members))


def members_said(members: Sequence[Mapping[str, Any]]) -> str | None:
    """``member_effects`` in words: "“basically” −0.40 [−0.41, −0.39] (9 pairs); “really” +0.00 …"."""
    if not members:
        return None
    said = [
        f"“{pronoun_i(m['word'])}” {signed(m['effect'])} [{signed(m['low'])}, {signed(m['high'])}]"
        for m in members
    ]
    return "; ".join(f"{text} ({m['pairs']} pairs)" for text, m in zip(said, members, strict=True))


def named_members(members: Sequence[Mapping[str, Any]]) -> list[str]:
    """The members a class is read by: the significant ones, where another member measured is not (the RM
    moves some of the class, not all of it); none otherwise."""
    moving = [m["word"] for m in members if m["significant"]]
    return moving if moving and len(moving) < len(members) else []


def rescored_classes(
    checks: Mapping[CheckKey, Check],
    held: set[tuple[str, str, str]],
    references: Mapping[tuple[str, str], str | None],
    bootstrap: BootstrapSettings,
) -> pl.DataFrame:
    """Discovered-biases rows (engine ``RESCORED``) of each class that carries a significant finding of an
    RM by re-scoring but has no significant row of its own for that dataset and RM (``held``: (dataset, RM,
    class) that have one), measured on the re-scored edits of the findings it carries (``class_effect``);
    ``references``: (dataset, RM) -> the RM it is read against."""
    carried: dict[tuple[str, str, str], list[Check]] = {}
    for (dataset, rm, _, _, _, carrier), check in checks.items():
        if check.carries and (dataset, rm, carrier) not in held:
            carried.setdefault((dataset, rm, carrier), []).append(check)
    rows = []
    for (dataset, rm, carrier), found in carried.items():
        detector = feature_named(carrier)
        words = member_words(detector)
        members = member_effects(found, words, dataset, bootstrap) if words else []
        rows.append(
            {"dataset": dataset, "rm": rm, "engine": RESCORED, "feature": carrier,
             "description": detector.description, "kind": detector.kind, "q_value": None, "support": None,
             "reference": references.get((dataset, rm)), **class_effect(found, dataset, bootstrap),
             "members": members_said(members), "named_members": named_members(members)}
        )  # fmt: skip
    return pl.DataFrame(rows, schema=RESCORED_SCHEMA)


RESCORED_SCHEMA = {
    "dataset": pl.String, "rm": pl.String, "engine": pl.String, "feature": pl.String,
    "description": pl.String, "kind": pl.String, "q_value": pl.Float64, "support": pl.Float64,
    "reference": pl.String,
    "effect": pl.Float64, "low": pl.Float64, "high": pl.Float64, "n": pl.Int64, "pairs": pl.Int64,
    "significant": pl.Boolean, "half_a_effect": pl.Float64, "half_b_effect": pl.Float64,
    "replicates": pl.Boolean, "example_comparison_id": pl.String, "example_before": pl.String,
    "example_after": pl.String, "members": pl.String, "named_members": pl.List(pl.String),
}  # fmt: skip
