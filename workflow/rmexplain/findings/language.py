"""What a finding says in words: the phrase of the side an RM rewards (``directions.yaml``, package data).

An attribute effect is the reward change when a response moves to the attribute's *better* side; a positive
effect says the RM rewards that side, a negative one the worse side. Each phrase names the rewarded side
directly ("rewards less padding", "rewards hedging"), so no sentence negates an attribute's name. A
discovered feature's effect is the change when the feature is *added*: "rewards <what it adds>" or
"penalises <what it adds>", a noun phrase or an -ing clause built from the feature's kind (``FORMS``):

- mined words, openers and closers quote their text, case kept ("the word “I”", "the words “I can”",
  "opening with “Good question!”", "ending with “I hope this helps!”");
- every other kind is phrased from its description: a noun phrase as written, its first letter lowered
  ("An apology (I'm sorry)." → "an apology (I'm sorry)"; "I", "AFINN" stay), "Uses X" as X ("Uses the
  character “;” (semicolon)." → "the character “;” (semicolon)"), "Use X" likewise ("Use bold text" →
  "bold text"), another verb first as its -ing form ("End the response with …" → "ending the response
  with …"), and a sentence about the response as "a response that …". The mined classes are phrased so
  from their descriptions: "numbers written as digits", "first-person words (I, me, my, we, our)",
  "ending on a question", "sentences that open with the word “I”", "filler words (honestly, actually, …)".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import cache
from importlib import resources
from typing import Any

import regex
import yaml

from rmexplain.discovery.text import MINED_NAME, PRONOUN_I, pronoun_i
from rmexplain.effects.analysis import MIN_FINDING_PAIRS
from rmexplain.effects.base import LENGTH
from rmexplain.findings.phrases import written_form

DIRECTIONS_FILE = "directions.yaml"


@cache
def directions() -> dict[str, dict[str, str]]:
    """Attribute (and ``length``) -> ``{"better": phrase, "worse": phrase}``, from ``directions.yaml``."""
    text = (resources.files("rmexplain.findings") / DIRECTIONS_FILE).read_text(encoding="utf-8")
    data: Any = yaml.safe_load(text)
    for name, sides in data.items():
        if set(sides) != {"better", "worse"}:
            raise ValueError(f"{DIRECTIONS_FILE}: {name!r} needs exactly the keys better and worse")
    return data


def side(effect: float) -> str:
    """The side an effect says the RM rewards: ``better`` (effect ≥ 0) or ``worse`` (effect < 0)."""
    return "worse" if effect < 0 else "better"


def attribute_phrase(attribute: str, effect: float) -> str:
    """The plain-language direction of an attribute (or ``length``) effect."""
    rewarded = side(effect)
    known = directions().get(attribute)
    if known is not None:
        return known[rewarded]
    return f"rewards the {rewarded} side of {attribute}"


def feature_phrase(
    feature: str, description: str | None, effect: float, kind: str | None = None, texts: Iterable[str] = ()
) -> str:
    """The plain-language direction of a discovered feature (effect: the change when it is added). ``kind``:
    the feature's (read from a mined feature's name where not given); ``texts``: responses that have it,
    where a mined phrase's written form is read (as it appears most often; else as in its name)."""
    verb = "penalises" if effect < 0 else "rewards"
    return f"{verb} {what_is_added(feature, description, kind, texts)}"


def what_is_added(
    feature: str, description: str | None, kind: str | None = None, texts: Iterable[str] = ()
) -> str:
    """What a discovered feature adds to a response, as the object of "rewards" (see the module)."""
    quoted = MINED_NAME.fullmatch(feature)
    kind = kind or (quoted.group("kind") if quoted else None)
    form = FORMS.get(kind or "", described)
    if form is described or quoted is None:
        return described((description or "").strip().rstrip(".").strip() or feature)
    text = quoted.group("text")
    if kind == "words":
        text = written_form(text, texts) or pronoun_i(text)
    return form(text)


# ── the forms ─────────────────────────────────────────────────────────────────────────────────────────────
VERB_FIRST = regex.compile(r"(?P<verb>\p{L}+)\s+(?P<rest>.+)", regex.DOTALL)
ABOUT_THE_RESPONSE = regex.compile(
    r"(?:the|a|each|every)\s+(?:response|answer|reply)\s+(?P<rest>(?P<verb>\p{L}+).*)",
    regex.IGNORECASE | regex.DOTALL,
)
NAMES_ITS_OBJECT = frozenset({"use", "uses"})  # "Uses X" adds X
GERUNDS = {  # verbs a description opens with (as an instruction, or of the response) -> their -ing form
    "add": "adding", "address": "addressing", "acknowledge": "acknowledging", "apologise": "apologising",
    "apologize": "apologizing", "ask": "asking", "avoid": "avoiding", "be": "being", "begin": "beginning",
    "close": "closing", "contain": "containing", "emphasise": "emphasising", "emphasize": "emphasizing",
    "end": "ending", "express": "expressing", "finish": "finishing", "follow": "following", "give": "giving",
    "have": "having", "highlight": "highlighting", "include": "including", "insert": "inserting",
    "make": "making", "mention": "mentioning", "offer": "offering", "open": "opening", "place": "placing",
    "praise": "praising", "provide": "providing", "put": "putting", "refer": "referring",
    "repeat": "repeating", "restate": "restating", "start": "starting", "state": "stating",
    "thank": "thanking", "wrap": "wrapping", "write": "writing",
}  # fmt: skip
THIRD_PERSON = {  # "begins" -> "begin"; not "thanks", as often a noun ("Thanks for asking")
    "has": "have", "is": "be",
    **{v + ("es" if v.endswith(("s", "sh", "ch", "x")) else "s"): v
       for v in GERUNDS if v not in ("be", "have", "thank")},
}  # fmt: skip
FINITE = frozenset({*THIRD_PERSON, "uses", "does", "can", "will", "should", "would"})  # after "The response"


def quoted_words(text: str) -> str:
    return f"the {'words' if len(text.split()) > 1 else 'word'} “{text}”"


def described(text: str) -> str:
    """What a description names (see the module): a noun phrase, or an -ing clause."""
    about = ABOUT_THE_RESPONSE.fullmatch(text)
    if about and about.group("verb").lower() in FINITE:
        return f"a response that {about.group('rest')}"
    first = VERB_FIRST.fullmatch(text)
    if first:
        verb = first.group("verb").lower()
        verb = THIRD_PERSON.get(verb, verb)
        if verb in NAMES_ITS_OBJECT:
            return lower_first(first.group("rest"))
        if verb in GERUNDS:
            return f"{GERUNDS[verb]} {first.group('rest')}"
    return lower_first(text)


def lower_first(text: str) -> str:
    """``text`` with its first letter lowered where it opens a word in sentence case ("An apology"), not
    ``I`` or one in capitals ("AFINN-en-165")."""
    if text[:1].isupper() and not text[1:2].isupper() and not PRONOUN_I.match(text.lower()):
        return text[0].lower() + text[1:]
    return text


FORMS: dict[str, Callable[[str], str]] = {  # a feature's kind -> what it adds, in words
    "words": quoted_words,  # mined: its text quoted
    "opener": lambda text: f"opening with “{text}”",  # mined (a probe: described)
    "closer": lambda text: f"ending with “{text}”",  # mined (a probe: described)
    **dict.fromkeys(
        ("character", "lexicon", "hypothesis", "variation",  # mined, and the llm engine's
         "numbers", "pronouns", "shape", "filler", "long words",  # classes (rmexplain.discovery.classes)
         "format", "spacing", "punctuation", "casing", "wording"),  # the catalogue's probes
        described,
    ),
}  # fmt: skip


def unit(name: str) -> str:
    """What one unit of an effect is, in words."""
    return "reward sd per sd of length" if name == LENGTH else "reward sd"


def significance_note(significant: bool, pairs: int | None) -> str:
    """What a finding's line adds after its interval: nothing where it is significant; else "(too few
    pairs to say)" where its edits come from fewer than ``MIN_FINDING_PAIRS`` pairs, else "(not
    significant)"."""
    if significant:
        return ""
    too_few = pairs is not None and pairs < MIN_FINDING_PAIRS
    return " (too few pairs to say)" if too_few else " (not significant)"


CLASS_NOUNS = {
    "numbers as digits": "numbers in digits",
    "pronouns first person": "first-person words",
    "pronouns second person": "second-person words",
    "filler words": "filler words",
}
PARENTHESIS = regex.compile(r"\s*\([^)]*\)\s*$")
ARTICLE = regex.compile(r"^(?:an?|the)\s+", regex.IGNORECASE)


def class_noun(name: str, description: str | None = None) -> str:
    """A class a finding holds, as the object of "its": "first-person words", "exclamation mark", "“?”"
    (a mined character by its name's character; a probe by its description without article or remark)."""
    if name in CLASS_NOUNS:
        return CLASS_NOUNS[name]
    quoted = MINED_NAME.fullmatch(name)
    if quoted is not None and quoted.group("kind") == "character":
        return f"“{quoted.group('text')}”"
    said = PARENTHESIS.sub("", (description or name).strip().rstrip("."))
    return lower_first(ARTICLE.sub("", said)) or name


def members_phrase(name: str, effect: float, words: Sequence[str]) -> str:
    """A class read by the members the RM moves: "penalises the filler word “basically”", "rewards the
    second-person words “you” and “your”"."""
    noun = CLASS_NOUNS.get(name, name)
    if len(words) == 1:
        noun = noun.removesuffix("s")
    quoted = [f"“{pronoun_i(w)}”" for w in words]
    listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"
    return f"{'penalises' if effect < 0 else 'rewards'} the {noun} {listed}"
