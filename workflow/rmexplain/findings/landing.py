"""The report's landing text with the findings first (``results/findings/landing.rst``).

Snakemake renders the landing text (``report:`` in the Snakefile) as a Jinja template and then as
reStructuredText. The findings rule writes this file: the workflow's own template
(``workflow/report/workflow.rst``) with its findings marker replaced by the findings of this run; the
Snakefile points ``report:`` at it once it exists. Every text from the data is escaped for both: a backslash
before each reStructuredText markup character, and each ``{`` written as a Jinja expression.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import polars as pl

from rmexplain.discovery.nature import DIFFERS, NEVER, NO_DETECTOR
from rmexplain.findings import language
from rmexplain.findings.attribution import RESCORED
from rmexplain.findings.summary import ROBUST_DIFFERS, class_noun
from rmexplain.markup import signed

MARKER = ".. findings of this run"  # the line of workflow.rst the findings replace (an rst comment)
_RST_SPECIAL = re.compile(r"([\\`*_|<>\[\]:#=~^+\-'\"!$%&(),./;?@])")
_SPACE = re.compile(r"\s+")
FLIP_RATES_DIFFER = (
    "The paper's preference flip rates answer another question: how often an edit made *against* the RM's "
    "preference flips it. They depend on the margins between the two responses and on what else an edit "
    "changes; the effects above move every response both ways and hold length equal."
)


def text(value: object) -> str:
    """A data text as literal reStructuredText inside a Jinja template: one line, markup escaped."""
    line = _SPACE.sub(" ", str(value)).strip()
    return _RST_SPECIAL.sub(r"\\\1", line).replace("{", '{{ "{" }}')


DISCOVERED_NOTE = (
    " Discovered features (bias discovery: formatting, openers, closers, words no attribute names): the"
    " change when one instance of the feature is added, in reward sd, against the RM's reference where it has"
    " one, with a Benjamini–Hochberg q-value."
)
ONE_SLOPE_NOTE = (
    " Each discovered feature is held at equal length by the same slope as the attribute effects."
)


REPLICATION_NOTE = (
    " Each significant finding is estimated again on two halves of the pairs (docs/findings.md): it holds in"
    " both halves when each half's effect has its sign and each half's interval excludes 0."
)


CARRIED_NOTE = (
    " A finding listed under a class (numbers as digits, first-person words, an exclamation mark, an apology,"
    " …) is one whose edits change the class's count and lose at least half of their effect when they are"
    " scored again with the class's change undone (a digit spelled out, “I” made “they”, at the same length;"
    " where they could not be, the class's own measured effect accounts for at least half of it): what the RM"
    " rewards is the class, and the finding is how its edits read. A class re-scored is measured on those"
    " edits (docs/findings.md)."
)


def replication_sentence(row: dict) -> str | None:
    """A finding's sentence on its halves ("Replication: holds in both halves (A +0.40, B +0.45)."); None
    where it says nothing of them (not significant, or no halves in its table)."""
    said = row.get("replication")
    if not said:
        return None
    a, b = row.get("half_a_effect"), row.get("half_b_effect")
    shown = f" (A {signed(a)}, B {signed(b)})" if a is not None and b is not None else ""
    return f"Replication: {said}{shown}."


INFLUENCE_NOTE = (
    " A finding carried by one pair (or two) is gone once that pair (or those two) is left out: its effect"
    " is then 0, of the other sign or, discovered, within the minimum effect (docs/findings.md)."
)


def influence_sentence(row: dict) -> str | None:
    """A finding's sentence on the pair(s) that carry it ("Carried by one pair: without hh/12 its effect is
    −0.02."); None where no one or two pairs carry it (or it was not asked)."""
    carried, pair = row.get("carried_by"), row.get("influential_pair")
    if carried not in (1, 2) or pair is None:
        return None
    without = signed(row.get("without_it"))
    if carried == 1:
        return f"Carried by one pair: without {pair} its effect is {without}."
    alone = f"without {pair} alone: {without}"
    return f"Carried by two pairs: without {pair} and one more pair it is gone ({alone})."


ROBUST_NOTE = (
    " Each finding is also fitted as Huber's M-estimate, which weighs edits far from the rest less"
    " (docs/effects.md); where that fit loses the effect's sign or half its size, a few edits make it."
)


def robust_sentence(row: dict) -> str | None:
    """A significant finding's sentence where its robust fit does not agree ("A few edits far from the rest
    make it: Huber's robust fit, which weighs them less, gives +0.02."); None otherwise."""
    if row.get("robust") != ROBUST_DIFFERS:
        return None
    robust = signed(row["robust_effect"])
    return (
        f"A few edits far from the rest make it: Huber's robust fit, which weighs them less, gives {robust}."
    )


NATURE_NOTE = (
    " A discovered feature is also compared with the natural responses (docs/discovery.md, edit versus"
    " nature): in comparisons whose two responses differ in it, the reward difference of the one that has it,"
    " at equal length; it agrees with the edits, contradicts them (the edit does something the natural"
    " feature does not) or neither."
)


def nature_sentence(row: dict) -> str | None:
    """A discovered feature's sentence on the natural responses ("In your data: agrees — a response with it
    +0.31 [+0.12, +0.50] sd, 24 pairs differ in it.", "Never in your data: what the RM would do if it
    were."); None where nothing is said (not significant, no verdict)."""
    said = row.get("nature")
    if not said or not row.get("significant"):
        return None
    if said in (NEVER, NO_DETECTOR):  # says "your data" itself
        return f"{said[0].upper()}{said[1:]}."
    effect, pairs = row.get("natural_effect"), row.get("natural_pairs")
    if effect is None or effect != effect:
        return f"In your data: {said}."
    bounds = f"[{signed(row.get('natural_low'))}, {signed(row.get('natural_high'))}]"
    differ = "1 pair differs" if pairs == 1 else f"{pairs} pairs differ"
    numbers = f"a response with it {signed(effect)} {bounds} sd, {differ} in it"
    return f"In your data: {said} — {numbers}."


def unmasked_sentence(row: dict) -> str | None:
    """What a discovered feature does with a class that works against it undone (``unmasked_by``): "Scored
    again with its exclamation mark undone, its edits give +1.48 [+1.45, +1.50] reward sd per instance added
    (43 pairs); as edited, +0.25: the RM moves the other way with the exclamation mark."; None where no
    class does."""
    by = row.get("unmasked_by")
    if by is None:
        return None
    noun = class_noun(by)
    return (
        f"Scored again with its {noun} undone, its edits give {signed(row['unmasked_effect'])}"
        f" [{signed(row['unmasked_low'])}, {signed(row['unmasked_high'])}] reward sd per instance added"
        f" ({row['unmasked_pairs']} pairs); as edited, {signed(row['effect'])}: the RM moves the other way"
        f" with the {noun}."
    )


def carrier_share(share: float) -> str:
    """What a carrier's edits account for, said as a share of the reward change at equal length; over 100 %
    (the other edits move it the other way) said so."""
    if round(share, 2) > 1:  # over 100 % as printed
        return (
            f"account for more than the whole reward change at equal length ({share:.0%}: the other edits "
            "move it the other way)"
        )
    return f"account for {share:.0%} of the reward change at equal length"


def under_sentence(attribute: dict) -> str:
    """What a finding listed under a discovered feature says there: an attribute effect placed by its
    carrier, its phrase, its effect and how many of its edits change the carrier that holds the feature; a
    finding under a class, its phrase, its effect, the class's instances that come with one instance (one
    edit) of it, and the share of its effect the class's own effect accounts for; a feature of another engine
    that made the same edits, its engine, name and effect."""
    if attribute.get("under_share") is not None:
        return carried_by_class_sentence(attribute)
    if attribute.get("same_edits"):
        return (
            f"The {text(attribute['method'])} engine's “{text(attribute['name'])}” made the same edits "
            f"({text(signed(attribute['effect']))} reward sd per instance added)."
        )
    verb = "insert" if attribute["carrier_change"] == "inserts" else "delete"
    return (
        f"It is what **{text(attribute['phrase'])}** reads ({text(attribute['name'])} "
        f"{text(signed(attribute['effect']))} reward sd): {attribute['carrier_edits']} of "
        f"{attribute['n_direction']} of that attribute's edits {verb} “{text(attribute['carrier'])}”."
    )


UNDER_SHOWN = 3  # findings a line lists under it in full (largest first); the rest by name


def carried_by_class_sentence(row: dict) -> str:
    """A finding under a class: "It is what **rewards a numbered list** reads (numbered_list +0.61 reward sd
    per instance added): each instance adds 1.0 of this class; scored again with the class undone in the 24
    edits that change it, 95% of its effect goes." (an attribute effect: per edit towards its better side);
    where its edits could not be re-scored, the share the class's own effect accounts for, said so."""
    per = row["under_per_instance"]
    change = f"{'adds' if per > 0 else 'removes'} {abs(per):.2g}"
    unit, each = ("reward sd", "each edit")
    if row["kind"] == "discovered":
        unit, each = ("reward sd per instance added", "each instance")
    share = text(format(row["under_share"], ".0%"))
    over = round(row["under_share"], 2) > 1  # over 100 % as printed
    back = f"({share}: the edits' other changes move it back)"
    if row.get("under_check") == "re-scored":
        goes = f"more than all of its effect goes {back}" if over else f"{share} of its effect goes"
        edits = row["under_checked_edits"]
        said = f"; scored again with the class undone in the {edits} edits that change it, {goes}"
    else:
        accounts = f"accounts for more than all of it {back}" if over else f"accounts for {share} of it"
        said = f", whose own effect {accounts} (inferred: its edits could not be re-scored without the class)"
    return (
        f"It is what **{text(row['phrase'])}** reads ({text(row['name'])} {text(signed(row['effect']))} "
        f"{unit}): {each} {text(change)} of this class{said}."
    )


def finding_line(row: dict, under: Sequence[dict] = ()) -> str:
    """One bullet: the direction in words, the number and interval, whether it holds in both halves of the
    pairs, whether one or two pairs carry it, the carrier, the example; for a discovered feature, the
    attribute effects listed ``under`` it; a class measured by re-scoring says so."""
    name = row["name"] if row["kind"] != "discovered" else f"discovered: {row['name']}"
    unit = language.unit(row["name"]) if row["kind"] != "discovered" else "reward sd per instance added"
    if row.get("method") == RESCORED:
        name, unit = f"re-scored: {row['name']}", f"{unit}, measured on the edits of the findings under it"
    vs = f" vs {row['reference']}" if row.get("reference") else ""
    parts = [
        f"- **{text(row['phrase'])}** — {text(name)} {text(signed(row['effect']))} "
        f"\\[{text(signed(row['low']))}, {text(signed(row['high']))}\\] {text(unit + vs)}"
        + language.significance_note(row["significant"], row.get("pairs"))
        + "."
    ]
    if row.get("members"):
        parts.append(f"Its members measured alone, per instance: {text(row['members'])}.")
    unmasked = unmasked_sentence(row)
    if unmasked is not None:
        parts.append(f"**{text(unmasked)}**")
    replicated = replication_sentence(row)
    if replicated is not None:
        parts.append(text(replicated))
    carried = influence_sentence(row)
    if carried is not None:
        parts.append(f"**{text(carried)}**")
    robust = robust_sentence(row)
    if robust is not None:
        parts.append(f"**{text(robust)}**")
    natural = nature_sentence(row)
    if natural is not None:
        parts.append(f"**{text(natural)}**" if row.get("nature") == DIFFERS else text(natural))
    if row.get("carrier"):
        verb = "insert" if row["carrier_change"] == "inserts" else "delete"
        parts.append(
            f"{row['carrier_edits']} of {row['n_direction']} edits {verb} “{text(row['carrier'])}”; they "
            f"{text(carrier_share(row['carrier_share_change']))}."
        )
    if row.get("example_before") is not None:
        change, words = row.get("example_effect_change"), row.get("example_words_change")
        reward = row.get("example_reward_change")
        said = [f"{signed(change)} sd"] if change is not None else []
        said += [f"{signed(reward)} reward"] if change is None and reward is not None else []
        said += [f"{words:+d} words".replace("-", "−")] if words else []
        tail = f" ({text(', '.join(said))})" if said else ""
        parts.append(f"E.g. “{text(row['example_before'])}” → “{text(row['example_after'])}”{tail}.")
    parts += [under_sentence(attribute) for attribute in under[:UNDER_SHOWN]]
    if len(under) > UNDER_SHOWN:
        rest = ", ".join(text(a["name"]) for a in under[UNDER_SHOWN:])
        parts.append(f"It also carries {len(under) - UNDER_SHOWN} more: {rest}.")
    return " ".join(parts)


def one_slope(findings: pl.DataFrame) -> bool:
    """Whether discovered features are held at equal length by the attribute effects' slope: every dataset
    with discovered findings has attribute effects (its discovery then takes their γ; docs/discovery.md)."""
    discovered = set(findings.filter(pl.col("kind") == "discovered")["dataset"].to_list())
    measured = set(findings.filter(pl.col("kind") == "attribute")["dataset"].to_list())
    return bool(discovered) and discovered <= measured


def findings_rst(
    findings: pl.DataFrame,
    datasets: Sequence[str],
    rms: Sequence[str],
    level: float,
    table_link: str,
    flip_rates_link: str | None,
) -> str:
    """The findings block: per dataset, method and RM (config order), its leading findings."""
    out = [
        "**What each RM rewards.** Attribute effects: the change in the RM's reward, in its reward sd, when "
        f"a response moves to an attribute's better side, its length held equal ({level:.0%} intervals); "
        f"length: per sd of length, longer. Every finding, with the edits behind it: `{table_link}`_ and the "
        "`explorer <explorer/index.html>`_."
        + (DISCOVERED_NOTE if (findings["kind"] == "discovered").any() else "")
        + (ONE_SLOPE_NOTE if one_slope(findings) else "")
        + (REPLICATION_NOTE if findings["replication"].is_not_null().any() else "")
        + (INFLUENCE_NOTE if findings["carried_by"].is_not_null().any() else "")
        + (CARRIED_NOTE if findings["under_share"].is_not_null().any() else "")
        + (ROBUST_NOTE if (findings["robust"] == ROBUST_DIFFERS).any() else "")
        + (NATURE_NOTE if (findings["nature"].is_not_null() & findings["significant"]).any() else ""),
        "",
    ]
    if findings.is_empty():
        out += ["No attribute effects were computed in this run.", ""]
    for dataset in [d for d in datasets if d in set(findings["dataset"])]:
        mine = findings.filter(pl.col("dataset") == dataset)
        for rm in [r for r in rms if r in set(mine["rm"])]:
            out += _rm_block(mine.filter(pl.col("rm") == rm), dataset, rm)
    if flip_rates_link:
        out += [f"{FLIP_RATES_DIFFER} They are under `{flip_rates_link}`_ and in the explorer.", ""]
    return "\n".join(out)


def _rm_block(rows: pl.DataFrame, dataset: str, rm: str) -> list[str]:
    """One RM's leading findings on one dataset, every kind in one ranking (``order``: largest |effect|
    first)."""
    effects = rows.filter(pl.col("kind") != "discovered")
    methods = ", ".join(effects["method"].unique(maintain_order=True))
    head = f"**{text(rm)}** on {text(dataset)}" + (f" ({text(methods)} edits)" if methods else "") + ":"
    ordered = rows.filter(pl.col("leading")).sort("order")
    placed = rows.filter(pl.col("under").is_not_null()).sort("order")
    bullets = [
        finding_line(r, [a for a in placed.iter_rows(named=True) if a["under"] == r["name"]])
        for r in ordered.iter_rows(named=True)
    ]
    attributes = effects.filter(pl.col("kind") == "attribute")
    if attributes.height and not attributes["significant"].any():
        bullets.insert(0, "- No attribute effect is significant.")
    return [head, "", *bullets, ""]


def landing_text(template: str, findings_block: str) -> str:
    """The workflow's landing template with its findings marker replaced by ``findings_block``."""
    if MARKER not in template:
        raise ValueError(f"the report template has no line {MARKER!r} to put the findings at")
    return template.replace(MARKER, findings_block, 1)
