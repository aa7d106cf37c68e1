"""Mined candidates at the level of their class: numbers, personal pronouns, sentence shape, filler words.

An RM that gives a reward per digit or per first-person word does not reward one string: mined one string at
a time it reads as seven word rows ("i", "i’m", "i can", "me", …) and a list format, the class never named.
These candidates name the class, each a ``Feature`` whose edits change every instance of it (``remove``)
or put one in (``add``), and leave the rest of the response as it was, byte for byte (no whitespace
tidied elsewhere; a sentence start capitalised only where its first word was removed). An edit that has no
sensible form raises ``SkipEdit`` with the reason, a counted skip. English only: the repository detects no
response's language, and the word lists are English (a response in another language simply lacks them).

- ``numbers`` (``numbers as digits``): a digit anywhere. Removed: every whole number from 0 to 9999 written
  out in words (``12`` → ``twelve``, ``2024`` → ``two thousand twenty-four``; no number-words package is
  installed, so ``number_words`` spells them; ``5-minute`` → ``five-minute``; a response with anything
  else holding a digit — ``3.5``, ``5th``, ``10%``, ``$5``, ``COVID-19``, ``12,000``, a numbered list's
  ``1.`` — is a skip). Added: every number written in words (``two`` … ``nine thousand nine hundred
  ninety-nine``, ``two hundred and five``; not a lone ``one``, as often a pronoun: ``no one``) in digits; a
  response with none is a skip.
- ``pronouns`` (``pronouns first person``, ``pronouns second person``): the words of ``FIRST_PERSON`` and
  ``SECOND_PERSON``. Removed only where every instance sits in a clause that can go without changing what
  is said (first person: ``I think/believe/guess/suppose/reckon (that)``, ``I'd say``, ``I feel that``
  before a clause, ``In my opinion,``, ``To me,``, ``, I think,``; second person: ``As you (may) know,``,
  ``As you can see,``, ``You know,``, ``, you know,``, and ``thank you`` → ``thanks``); any other instance
  (``I can``, ``my``, ``your``) has no neutral rewrite and the response is skipped. Added, in the last
  statement that opens with its subject (``it``, ``the``, ``this``, ``you``, …; an imperative, ``Boil it.``,
  takes neither): ``, I think`` before its full stop (``The egg is done, I think.``: inside the sentence, so
  that an RM that penalises sentences opening with "I" does not read as penalising the word) / ``You'll
  find that `` before it.
- ``shape`` (``shape ends on a question``, ``shape opens with I``): the last sentence a question — added:
  ``Does that help?`` after the last sentence; removed: the questions that end the response dropped — and
  sentences whose first word is ``I`` (``I``, ``I'm``, ``I've``, ``I'd``, ``I'll``), one instance a sentence
  — added: ``I think `` before the first sentence where it is a statement opening with its subject;
  removed: each sentence's opening ``I think``-style clause dropped (a sentence opening ``I can help.`` is a
  skip).
- ``filler`` (``filler words``): the words of ``FILLER``. Removed: each deleted with the comma that goes with
  it (``Honestly, it`` → ``It``, ``is, really, fine`` → ``is fine``); added: ``Honestly, `` before the
  first sentence.

Each class counts its instances (``count``: number tokens, class words, sentences opening with "I"; ending on
a question is one), so an edit that changes three numbers has dose 3 and the estimate
(``rmexplain.discovery.estimate``) reports the effect of one instance. ``COUNTED_CLASSES`` are the counts the
length slope holds equal, the shapes' among them (a closing "Does that help?" adds words with the shape, in
doses no feature fixes) and AFINN's positive and negative words, which the miner's lexicon categories test (an
edit that makes a response safer and longer adds "harmful" and "unsafe" with its words). ``long_words`` are
classes of form (words of at least 8, …, 14 letters) that the slope holds equal per RM where its reward moves
with them, as it does single words."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

import regex

from rmexplain.discovery.base import Feature, SkipEdit, probe, probes
from rmexplain.discovery.text import (
    LETTERS,
    WORD,
    before_final_punctuation,
    capitalise_at,
    delete_clause,
    delete_words,
    opens_sentence,
    prefix_sentence,
    replace_spans,
    sentences,
    statement_sentences,
)
from rmexplain.effects.analysis import UNSPACED
from rmexplain.tokens.stats import afinn_lexicon

CLASS_KINDS = ("numbers", "pronouns", "shape", "filler")  # in the miner's order
SOURCE = "mined from the responses (a class)"
FLAGS = regex.IGNORECASE | regex.VERSION1
BOUNDARY = r"(?<![\p{L}\p{N}\p{M}'’])"
END = r"(?![\p{L}\p{N}\p{M}])"


def word_key(word: str) -> str:
    """A word as the lists below hold it: lower case, curly apostrophes straightened."""
    return word.lower().replace("’", "'")


# ── numbers ───────────────────────────────────────────────────────────────────────────────────────────────
UNITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
         "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
         "nineteen")  # fmt: skip
TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
LARGEST = 9999
DIGIT = regex.compile(r"\p{Nd}")
# a run of letters and digits with inner . , : / - ' (3.5, 1,000, 2:30, COVID-19): one number token
TOKEN = regex.compile(r"[\p{L}\p{N}\p{M}]+(?:[.,:/\-'’][\p{L}\p{N}\p{M}]+)*")
# a whole number, with a hyphenated word after it (5-minute, 10-year-old) kept as it is
WHOLE = regex.compile(r"(?P<number>[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:-[\p{L}\p{M}]+)*")
LIST_MARKER = regex.compile(r"(?:^|\n)[ \t]*$")
NUMBER_WORD = regex.compile(
    BOUNDARY + r"(?:(?:" + "|".join(TENS[2:]) + r")-(?:" + "|".join(UNITS[1:10]) + r")|"
    + "|".join(sorted([*UNITS, *TENS[2:], "hundred", "thousand"], key=len, reverse=True))
    + r")(?![\p{L}\p{N}\p{M}]|['’]\p{L})",
    FLAGS,
)  # fmt: skip
NUMBER_GAP = regex.compile(r"[ \t]+(?:and[ \t]+)?", FLAGS)


def number_words(n: int) -> str:
    """``n`` (0 to 9999) in English words, as a US style guide writes it: ``twelve``, ``forty-two``,
    ``one hundred five``, ``two thousand twenty-four`` (a small function, as no number-words package such
    as ``num2words`` is installed)."""
    if not 0 <= n <= LARGEST:
        raise ValueError(f"{n} is not from 0 to {LARGEST}")
    if n < 20:
        return UNITS[n]
    if n < 100:
        tens, unit = divmod(n, 10)
        return TENS[tens] + (f"-{UNITS[unit]}" if unit else "")
    big, rest = divmod(n, 1000) if n >= 1000 else divmod(n, 100)
    head = f"{UNITS[big]} {'thousand' if n >= 1000 else 'hundred'}"
    return f"{head} {number_words(rest)}" if rest else head


@cache
def number_values() -> dict[str, int]:
    """A number's words (hyphens as spaces, no ``and``) -> its value, 0 to 9999."""
    return {number_words(n).replace("-", " "): n for n in range(LARGEST + 1)}


def number_phrases(text: str) -> list[tuple[int, int, int]]:
    """(start, end, value) of each number written in words: the longest run of number words (joined by
    spaces, hyphens or ``and``) that spells one number as ``number_words`` does (``twenty-five``,
    ``two hundred and five``); a lone ``one`` is left out (``no one``, ``one of them``)."""
    found: list[tuple[int, int, int]] = []
    matches = list(NUMBER_WORD.finditer(text))
    i = 0
    while i < len(matches):
        chain = [matches[i]]
        while (
            i + len(chain) < len(matches)
            and NUMBER_GAP.fullmatch(text, chain[-1].end(), matches[i + len(chain)].start()) is not None
        ):
            chain.append(matches[i + len(chain)])
        for size in range(len(chain), 0, -1):
            key = " ".join(word_key(m.group()).replace("-", " ") for m in chain[:size])
            if key in number_values() and key != "one":
                found.append((chain[0].start(), chain[size - 1].end(), number_values()[key]))
                i += size
                break
        else:
            i += 1
    return found


class NumbersAsDigits(Feature):
    """A number written with digits (any digit). Removed: each whole number 0–9999 spelled out; added: each
    number written in words put in digits (see the module)."""

    kind, source = "numbers", SOURCE
    name = "numbers as digits"
    description = "Numbers written as digits."

    def present(self, text: str) -> bool:
        return DIGIT.search(text) is not None

    def count(self, text: str) -> int:
        """Tokens holding a digit (``12``, ``3.5`` and ``COVID-19`` one each)."""
        return sum(DIGIT.search(m.group()) is not None for m in TOKEN.finditer(text))

    def add(self, text: str) -> str:
        found = number_phrases(text)
        if not found:
            raise SkipEdit(
                "the response has no number written in words (two, twenty-five, …) to put in digits"
            )
        return replace_spans(text, [(a, b, str(value)) for a, b, value in found])

    def remove(self, text: str) -> str:
        replacements = []
        for match in TOKEN.finditer(text):
            token = match.group()
            if DIGIT.search(token) is None:
                continue
            whole = WHOLE.fullmatch(token)
            if whole is None:
                raise SkipEdit(f"“{token}” is no whole number (a decimal, ordinal, range, time or code)")
            number = whole.group("number")
            a, b = match.start(), match.start() + len(number)
            if len(number) > 1 and number.startswith("0"):
                raise SkipEdit(f"“{token}” has a leading zero")
            if regex.match(r"\p{Sc}", text[a - 1 : a]) or regex.match(r"[%‰°]", text[b : b + 1]):
                raise SkipEdit(f"“{token}” goes with a sign (currency, percent, degrees)")
            if LIST_MARKER.search(text, 0, a) and regex.match(r"[.)](?=\s)", text[b : b + 2]):
                raise SkipEdit(f"“{token}” is a numbered list's marker")
            value = int(number.replace(",", ""))
            if value > LARGEST:
                raise SkipEdit(f"“{token}” is beyond {LARGEST}, the largest number spelled out")
            spelled = number_words(value)
            if opens_sentence(text, a):
                spelled = capitalise_at(spelled, 0)
            replacements.append((a, b, spelled))
        return replace_spans(text, replacements)


# ── personal pronouns ─────────────────────────────────────────────────────────────────────────────────────
FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "i'm", "i've", "i'd", "i'll", "we", "us", "our",
                          "ours", "ourselves", "we're", "we've", "we'd", "we'll", "let's"})  # fmt: skip
SECOND_PERSON = frozenset({"you", "your", "yours", "yourself", "yourselves", "you're", "you've", "you'd",
                           "you'll"})  # fmt: skip
I_FORMS = frozenset({"i", "i'm", "i've", "i'd", "i'll"})
# a word that opens the clause after a hedge: where "I think" is followed by one, it hedges that clause
CLAUSE_START = (
    r"(?:that|it|it's|it’s|its|this|these|those|the|a|an|i|you|your|we|they|he|she|there|their|most|many|"
    r"some|any|all|both|each|every|no|one|people)" + END
)
# "that" as the subject ("I think that is wrong"): the clause keeps it
THAT_SUBJECT = r"(?:is|was|will|would|can|could|should|might|may|does|did|has|had|sounds|seems|makes)" + END
HEDGE = regex.compile(
    BOUNDARY + r"i(?:[ \t]+(?:(?:really|honestly|personally|do|also|still|genuinely|strongly)[ \t]+)?"
    r"(?:think|believe|guess|suppose|reckon|would[ \t]+say|feel(?=[ \t]+that" + END + r"))"
    r"|['’]d[ \t]+say)(?:[ \t]+that[ \t]+(?!" + THAT_SUBJECT + r")|,?[ \t]+(?=" + CLAUSE_START + r"))",
    FLAGS,
)  # fmt: skip
FRAME = regex.compile(
    BOUNDARY + r"(?:in[ \t]+my[ \t]+(?:humble[ \t]+)?(?:opinion|view)|to[ \t]+me),[ \t]+", FLAGS
)
PARENTHETICAL_I = regex.compile(
    r",[ \t]+(?:i[ \t]+(?:think|believe|guess|suppose)|in[ \t]+my[ \t]+(?:humble[ \t]+)?(?:opinion|view))"
    r"(?:,(?=[ \t])|(?=[.!?…;:]))",
    FLAGS,
)
ASIDE_YOU = regex.compile(
    BOUNDARY + r"(?:as[ \t]+you[ \t]+(?:(?:may|might|probably|already)[ \t]+)?(?:know|can[ \t]+see)"
    r"|you[ \t]+(?:know|see)),[ \t]+",
    FLAGS,
)
PARENTHETICAL_YOU = regex.compile(
    r",[ \t]+(?:as[ \t]+)?you[ \t]+(?:may[ \t]+)?know(?:,(?=[ \t])|(?=[.!?…;:]))", FLAGS
)
THANK_YOU = regex.compile(BOUNDARY + r"(?P<t>t)hank[ \t]+you" + END, FLAGS)
# a statement an added "I think " or "You'll find that " runs into: one opening with its subject (not an
# imperative: "I think boil it" is no sentence)
SUBJECT_START = regex.compile(
    r"(?:it|this|these|those|that|the|a|an|you|your|we|our|they|he|she|there|their|most|many|some|all|"
    r"both|each|every|any|people)" + END,
    FLAGS,
)
AFTER_CONNECTIVE = regex.compile(r"(?:[,;:—–]|(?<![\p{L}\p{N}])(?:and|but|so))[ \t]+$", FLAGS)


def class_words(text: str, members: frozenset[str]) -> list[tuple[int, int]]:
    """(start, end) of each word of ``text`` in ``members`` (``US`` in capitals is no pronoun)."""
    return [m.span() for m in WORD.finditer(text) if word_key(m.group()) in members and m.group() != "US"]


def opening_clauses(text: str, pattern: regex.Pattern[str]) -> list[tuple[int, int]]:
    """Spans of ``pattern`` where it opens a sentence or a clause (after a comma, semicolon, colon, dash,
    ``and``, ``but`` or ``so``): ``Do I think the …`` is a question, not a hedge."""
    return [
        m.span()
        for m in pattern.finditer(text)
        if opens_sentence(text, m.start()) or AFTER_CONNECTIVE.search(text, 0, m.start())
    ]


def subject_statements(text: str) -> list[tuple[int, int]]:
    """The statements of ``text`` (``statement_sentences``) that open with a subject (``SUBJECT_START``)."""
    return [span for span in statement_sentences(text) if SUBJECT_START.match(text, span[0])]


def without_clauses(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` without the clauses at ``spans`` (each capitalising what follows where it opened a sentence
    in capitals), from the end so that earlier offsets stay valid."""
    for start, end in sorted(set(spans), reverse=True):
        text = delete_clause(text, start, end)
    return text


class PersonalPronouns(Feature):
    """Words of a person's pronoun class (see the module); ``kind`` ``pronouns``."""

    kind, source = "pronouns", SOURCE
    members: frozenset[str] = frozenset()
    prefix = ""
    why_not = ""

    def present(self, text: str) -> bool:
        return bool(class_words(text, self.members))

    def count(self, text: str) -> int:
        return len(class_words(text, self.members))

    def add(self, text: str) -> str:
        statements = subject_statements(text)
        if not statements:
            opener = self.prefix.strip()
            raise SkipEdit(f"the response has no statement opening with its subject to put “{opener}” before")
        return prefix_sentence(text, statements[-1], self.prefix)

    def removable(self, text: str) -> str:
        """``text`` without the clauses this class can drop."""
        raise NotImplementedError

    def remove(self, text: str) -> str:
        out = self.removable(text)
        if self.present(out):
            raise SkipEdit(self.why_not)
        return out


class FirstPerson(PersonalPronouns):
    members = FIRST_PERSON
    name = "pronouns first person"
    description = "First-person words (I, me, my, we, our)."
    aside = ", I think"
    why_not = "a first-person word outside an “I think”-style clause (I can, my, we) has no neutral rewrite"

    def add(self, text: str) -> str:
        """``, I think`` before the full stop of the last statement opening with its subject (``The egg is
        done, I think.``): inside the sentence, so that the word, not a sentence opening with it, is added
        (opening with "I" is a class of its own)."""
        statements = subject_statements(text)
        if not statements:
            raise SkipEdit("the response has no statement opening with its subject to put “, I think” in")
        a, b = statements[-1]
        return text[:a] + before_final_punctuation(text[a:b], self.aside) + text[b:]

    def removable(self, text: str) -> str:
        out = without_clauses(text, [m.span() for m in PARENTHETICAL_I.finditer(text)])
        return without_clauses(out, opening_clauses(out, HEDGE) + opening_clauses(out, FRAME))


class SecondPerson(PersonalPronouns):
    members = SECOND_PERSON
    name = "pronouns second person"
    description = "Second-person words (you, your, yours)."
    prefix = "You'll find that "
    why_not = "a second-person word outside “thank you” and “as you know”-style asides has no neutral rewrite"

    def removable(self, text: str) -> str:
        out = without_clauses(text, [m.span() for m in PARENTHETICAL_YOU.finditer(text)])
        out = without_clauses(out, opening_clauses(out, ASIDE_YOU))
        return THANK_YOU.sub(lambda m: f"{m.group('t')}hanks", out)


# ── sentence shape ────────────────────────────────────────────────────────────────────────────────────────
QUESTION = regex.compile(r"[?？][\"'”’)\]]*$")
ENDS_SENTENCE = regex.compile(r"[.!?…。！？][\"'”’)\]]*$")
CLOSING_QUESTION = "Does that help?"


def is_question(sentence: str) -> bool:
    return QUESTION.search(sentence.rstrip()) is not None


class EndsOnQuestion(Feature):
    """The last sentence a question. Added: ``Does that help?`` after it (on the same line after final
    punctuation; else, after a list item, header or line without it, as a paragraph of its own); removed:
    the questions that end the response dropped (the space before them with them)."""

    kind, source = "shape", SOURCE
    name = "shape ends on a question"
    description = "Ends on a question."

    def present(self, text: str) -> bool:
        spans = sentences(text)
        return bool(spans) and is_question(text[spans[-1][0] : spans[-1][1]])

    def add(self, text: str) -> str:
        spans = sentences(text)
        if not spans:
            raise SkipEdit("the response has no sentence")
        a, b = spans[-1]
        end = a + len(text[a:b].rstrip())
        joint = " " if ENDS_SENTENCE.search(text[a:end]) else "\n\n"
        return text[:end] + joint + CLOSING_QUESTION + text[end:]

    def remove(self, text: str) -> str:
        ends = [a + len(text[a:b].rstrip()) for a, b in sentences(text)]  # each sentence's last character
        kept = [end for (a, b), end in zip(sentences(text), ends, strict=True) if not is_question(text[a:b])]
        if not kept:
            raise SkipEdit("every sentence of the response is a question")
        return text[: kept[-1]] + text[ends[-1] :]


def is_i(word: regex.Match[str] | None) -> bool:
    """Whether a found word is ``I`` (``I``, ``I'm``, ``I've``, ``I'd``, ``I'll``)."""
    return word is not None and word_key(word.group()) in I_FORMS


def opens_with_i(text: str) -> int:
    """1 where the first word of ``text`` is ``I``, else 0."""
    return int(is_i(WORD.search(text)))


def i_openings(text: str) -> list[tuple[int, int]]:
    """(start, end) of the first word of each sentence of ``text`` that is ``I``."""
    firsts = (WORD.search(text, a, b) for a, b in sentences(text))
    return [first.span() for first in firsts if is_i(first)]


class OpensWithI(Feature):
    """Sentences that open with the word ``I`` (``I``, ``I'm``, ``I've``, ``I'd``, ``I'll``), one instance a
    sentence. Added: ``I think `` before the first sentence where it is a statement opening with its
    subject; removed: each sentence's opening ``I think``-style clause dropped (a sentence opening with
    another ``I …`` is a skip)."""

    kind, source = "shape", SOURCE
    name = "shape opens with I"
    description = "Sentences that open with the word “I”."

    def present(self, text: str) -> bool:
        return bool(i_openings(text))

    def count(self, text: str) -> int:
        return len(i_openings(text))

    def add(self, text: str) -> str:
        spans = sentences(text)
        if not spans or spans[0] not in subject_statements(text):
            raise SkipEdit("the response does not open with a statement opening with its subject")
        return prefix_sentence(text, spans[0], "I think ")

    def remove(self, text: str) -> str:
        clauses = [HEDGE.match(text, start) for start, _ in i_openings(text)]
        if any(clause is None for clause in clauses):
            raise SkipEdit("a sentence opens with “I …” but not with an “I think”-style clause")
        out = without_clauses(text, [clause.span() for clause in clauses if clause is not None])
        if self.present(out):
            raise SkipEdit("a sentence still opens with “I …” after its “I think”-style clause")
        return out


# ── filler words ──────────────────────────────────────────────────────────────────────────────────────────
FILLER = frozenset({"honestly", "actually", "basically", "literally", "really", "just", "simply", "totally",
                    "definitely", "clearly", "obviously"})  # fmt: skip
FILLER_OPENER = "Honestly, "


class FillerWords(Feature):
    """Words of ``FILLER``. Removed: each deleted with its comma (``rmexplain.discovery.text.word_cut``);
    a sentence of filler words alone (``Really?``) is a skip. Added: ``Honestly, `` before the first sentence
    where it opens with a letter."""

    kind, source = "filler", SOURCE
    name = "filler words"
    description = "Filler words (honestly, actually, basically, really, just, …)."

    def present(self, text: str) -> bool:
        return bool(class_words(text, FILLER))

    def count(self, text: str) -> int:
        return len(class_words(text, FILLER))

    def add(self, text: str) -> str:
        spans = sentences(text)
        if not spans or not regex.match(r"\p{L}", text[spans[0][0]]):
            raise SkipEdit("the response does not open with a sentence of words")
        return prefix_sentence(text, spans[0], FILLER_OPENER)

    def remove(self, text: str) -> str:
        for a, b in sentences(text):
            found = [word_key(w.group()) for w in WORD.finditer(text, a, b)]
            if found and all(w in FILLER for w in found):
                raise SkipEdit(f"the sentence “{text[a:b].strip()}” is filler words alone")
        return delete_words(text, class_words(text, FILLER))


# ── what the length slope holds equal ─────────────────────────────────────────────────────────────────────
AFINN = "AFINN-en-165"  # the sentiment lexicon (the ``afinn`` package's) of the lexicon categories


@cache
def afinn_scores() -> dict[str, int]:
    """``AFINN``'s words (lower case) and their scores, −5 to +5."""
    return afinn_lexicon(AFINN)


def sentiment_spans(text: str, sign: int, by_parts: bool = False) -> list[tuple[int, int, int]]:
    """(start, end, count) of each word of ``text`` (in any case) holding words ``AFINN`` scores with
    ``sign`` (+1 positive, −1 negative): the word itself, or, ``by_parts``, for a hyphenated word AFINN does
    not list ("no-parking", "self-doubt"; it lists "well-being"), each of its parts, as some RMs' tokenisers
    split it."""
    scores = afinn_scores()
    found = []
    for match in WORD.finditer(text):
        word = match.group().lower()
        parts = word.split("-") if by_parts and "-" in word and word not in scores else [word]
        count = sum(sign * scores.get(part, 0) > 0 for part in parts)
        if count:
            found.append((*match.span(), count))
    return found


def sentiment_words(text: str, sign: int, by_parts: bool = False) -> int:
    """How many words ``AFINN`` scores with ``sign`` ``text`` holds (``sentiment_spans``)."""
    return sum(count for *_, count in sentiment_spans(text, sign, by_parts))


LONG_WORD_LETTERS = range(8, 15)  # the thresholds of the long-word classes
WORD_PARTS = regex.compile(r"['’\-]")
LONG_WORD_NAME = regex.compile(r"words of (?P<letters>[0-9]+) letters or more")


def long_word_class(letters: int) -> str:
    """The name of the class of words of at least ``letters`` letters."""
    return f"words of {letters} letters or more"


def word_parts_letters(text: str) -> list[tuple[int, int, list[int]]]:
    """(start, end, the letters of each part) of each word of ``text``: its parts those between hyphens and
    apostrophes, as RMs' tokenisers split "neighbour's"; a run of Chinese or Japanese none (each character a
    word, as ``word_count`` reads it)."""
    out = []
    for m in WORD.finditer(text):
        parts = WORD_PARTS.split(m.group())
        letters = [len(LETTERS.findall(part)) for part in parts if not UNSPACED.search(part)]
        out.append((m.start(), m.end(), letters))
    return out


def long_words(text: str) -> dict[str, int]:
    """How many words of ``text`` have at least n letters, for each n of ``LONG_WORD_LETTERS``, by name
    (``long_word_class``; a word's parts each a word, ``word_parts_letters``): classes of form no list names,
    each of whose members is too rare to be held on its own — an RM that rewards long words is read through
    them."""
    letters = [k for *_, parts in word_parts_letters(text) for k in parts]
    return {long_word_class(n): sum(k >= n for k in letters) for n in LONG_WORD_LETTERS}


class LongWords(Feature):
    """Words of at least ``letters`` letters, counted as ``long_words`` counts them (a word's parts each a
    word). Removed only: every word that holds such a part deleted (``delete_words``); a sentence of them
    alone is a skip. Nothing stands in for a long word (no thesaurus ships) and nothing is added: no long word
    belongs in every response. Round 2 tests the class that the attribute edits' reward changes single out
    (``rmexplain.discovery.edit_words``), so that an RM that rewards long words is named by the class, not
    word by word."""

    kind, source = "long words", "screened from the words the attribute edits change (a class of form)"

    def __init__(self, letters: int) -> None:
        self.letters = letters
        self.name = long_word_class(letters)
        self.description = f"Words of {letters} letters or more."

    def _instances(self, text: str) -> list[tuple[int, int, int]]:
        found = ((a, b, sum(k >= self.letters for k in parts)) for a, b, parts in word_parts_letters(text))
        return [(a, b, n) for a, b, n in found if n]

    def present(self, text: str) -> bool:
        return bool(self._instances(text))

    def count(self, text: str) -> int:
        return sum(n for *_, n in self._instances(text))

    def add(self, text: str) -> str:
        raise SkipEdit("a long word is only removed: none belongs in every response")

    def remove(self, text: str) -> str:
        spans = [(a, b) for a, b, _ in self._instances(text)]
        for a, b in sentences(text):
            inside = [(x, y) for x, y in spans if a <= x < b]
            if inside and len(inside) == sum(1 for _ in WORD.finditer(text, a, b)):
                raise SkipEdit(f"the sentence “{text[a:b].strip()}” is long words alone")
        return delete_words(text, spans)


MARKUP = regex.compile(r"[*#`|]|^[ \t]*(?:[-+>]|\d+[.)])(?=[ \t])", regex.MULTILINE)
EMOJI = regex.compile(r"\p{Extended_Pictographic}")
DIGITS = regex.compile(r"\p{Nd}+")
COUNTED_CLASSES: dict[str, Callable[[str], int]] = {
    "number tokens": NumbersAsDigits().count,
    "digit runs": lambda text: len(DIGITS.findall(text)),  # 3.5 twice: RMs split numbers their own way
    "first-person words": FirstPerson().count,
    "second-person words": SecondPerson().count,
    "filler words": FillerWords().count,
    "exclamation marks": lambda text: text.count("!"),
    "question marks": lambda text: text.count("?"),
    "markdown marks": lambda text: len(MARKUP.findall(text)),
    # a hyphenated word AFINN does not list by its parts, as RMs' tokenisers read "no-parking"
    "positive words": lambda text: sentiment_words(text, +1, by_parts=True),
    "negative words": lambda text: sentiment_words(text, -1, by_parts=True),
    "emoji": lambda text: len(EMOJI.findall(text)),
    "ending on a question": EndsOnQuestion().count,
    # both: an RM may read the response's first word or every sentence's; holding one count alone, an edit
    # that changes only the other (an "I think" dropped from a later sentence) bends the length slope
    "opening with I": opens_with_i,
    "sentences opening with I": OpensWithI().count,
}


def class_counts(text: str) -> list[int]:
    """What the length slope holds equal in ``text``: its count of each class of ``COUNTED_CLASSES``, in its
    order, then of each probe of the catalogue (``held_probes``)."""
    return [count(text) for count in COUNTED_CLASSES.values()] + [held.count(text) for held in held_probes()]


@cache
def held_probes() -> tuple[Feature, ...]:
    """The catalogue's probes (the project's own, by name; not a plugin's), whose instances the length slope
    holds equal as it does the classes': an apology, a closer or a list adds words with what an RM may
    reward or penalise, in doses the attribute edits do not fix."""
    return tuple(probe(name) for name in sorted(probes.builtins()))


def class_features(kinds: Sequence[str]) -> list[Feature]:
    """The class candidates of the kinds asked for: in ``CLASS_KINDS`` order, each kind's by name."""
    by_kind: dict[str, list[Feature]] = {
        "numbers": [NumbersAsDigits()],
        "pronouns": [FirstPerson(), SecondPerson()],
        "shape": [EndsOnQuestion(), OpensWithI()],
        "filler": [FillerWords()],
    }
    return [f for kind in CLASS_KINDS if kind in kinds for f in sorted(by_kind[kind], key=lambda f: f.name)]


def of_a_word_class(phrase: str) -> bool:
    """Whether a class of words (a number as digits, a first- or second-person word, a filler word) counts
    an instance in ``phrase``: a word its class tests already ("i", "and i", "really", "3")."""
    return any(feature.count(phrase) for feature in class_features(("numbers", "pronouns", "filler")))
