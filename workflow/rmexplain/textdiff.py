"""Word-level edits of a text against its original: the explorer stores every perturbation and effect edit
as one, and the findings read what an edit inserted and deleted from the same words.

Why the explorer computes them at build time (Python's ``difflib``) and not in the browser: it then stores
each perturbation as its edit — runs of copied words and the words put in their place — instead of a second
full copy of the response, so the data files grow with what the perturbations changed, not with how long the
responses are (hs2's responses run to thousands of characters, and most perturbations change a few words).
The page only replays the edit (linear in the text), one implementation is tested here in Python, and the
browser never runs a quadratic diff over hundreds of perturbations when a comparison opens.

A text is split into words with the ASCII whitespace that follows them (``"Hello, "``, ``"world"``) and
leading whitespace on its own, so joining the pieces gives the text back exactly. An edit is a list of steps
``[keep, drop, insert]``: copy ``keep`` words of the original, skip ``drop`` words (they were deleted), then
write the string ``insert``; after the last step the rest of the original is copied. Applying the edit to the
original gives the perturbed text back exactly (``apply_edit``; the build checks it for every perturbation).
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

Edit = list[list[int | str]]  # [[keep, drop, insert], ...]

# ASCII whitespace only, spelled out: the page's JavaScript splits with the same class (Python's and
# JavaScript's ``\s`` differ on some Unicode characters, and both sides must cut the same pieces).
_WORD = re.compile(r"[ \t\n\r\f\v]+|[^ \t\n\r\f\v]+[ \t\n\r\f\v]*")


def words(text: str) -> list[str]:
    """The words of ``text``, each with the whitespace after it (leading whitespace a piece of its own)."""
    return _WORD.findall(text)


def word_edit(original: str, perturbed: str) -> Edit:
    """The word-level edit turning ``original`` into ``perturbed`` (deterministic: difflib, no junk
    heuristic)."""
    a, b = words(original), words(perturbed)
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    steps: Edit = []
    keep = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            keep += i2 - i1
            continue
        steps.append([keep, i2 - i1, "".join(b[j1:j2])])
        keep = 0
    return steps


def apply_edit(original: str, edit: Edit) -> str:
    """The perturbed text an edit of ``original`` describes (what the page's JavaScript does)."""
    a = words(original)
    out: list[str] = []
    pos = 0
    for keep, drop, insert in edit:
        if not isinstance(keep, int) or not isinstance(drop, int) or not isinstance(insert, str):
            raise ValueError(f"malformed edit step {[keep, drop, insert]!r}")
        if pos + keep + drop > len(a):
            raise ValueError(f"edit step {[keep, drop, insert]!r} runs past the original's {len(a)} words")
        out.extend(a[pos : pos + keep])
        out.append(insert)
        pos += keep + drop
    out.extend(a[pos:])
    return "".join(out)


def changed_words(edit: Edit) -> int:
    """How many words an edit deletes or inserts (a size for sorting and summaries)."""
    return sum(int(drop) + len(words(str(insert))) for _, drop, insert in edit)
