"""Rule editors of an attribute of my own, emoji: how much the response uses emoji."""

import regex

from rmexplain.perturb.rules import Doc, RuleEdit, finish, words

EMOJI = regex.compile(r"\p{Extended_Pictographic}\uFE0F?")


def add_emoji(doc: Doc) -> RuleEdit | None:
    """Better: a smiley after the first sentence (centred on its last words)."""
    end = doc.spans[0][1]
    return finish(doc, doc.text[:end] + " 🙂" + doc.text[end:], words(doc.sentence(0))[-2:], "add-emoji")


def drop_emoji(doc: Doc) -> RuleEdit | None:
    """Worse: every emoji removed (None, a counted skip, when there is none)."""
    found = EMOJI.findall(doc.text)
    return finish(doc, EMOJI.sub("", doc.text), found, "drop-emoji") if found else None
