"""The ``rules`` method: an offline, deterministic, attribute-conditioned perturber (the embedded default).

It mirrors the paper's two-step LLM method (§2.3, App. B) without an LLM. For each task and attribute,
step 1 finds the words of the response that bear on the attribute (lexicons and regular expressions, no
POS tagger; recorded as ``Draft.focus_words`` in order of occurrence) and step 2 makes one local edit
centred on them that moves the response along the attribute: ``worse`` for y+ of the orienting RM,
``better`` for y−. Each attribute has an ordered list of strategies per direction; the first one that
applies and changes the text wins and is recorded as ``generator = "rules:<attribute>:<edit>"``. Phrase
choices are seeded by a BLAKE2 hash of (comparison_id, target, attribute); word lists are in ``lexicon``.

*Harmful context*: the prompt asks for unsafe, immoral or illegal help (intent lexicon), or a response
clearly declines. There a response *declines* when it warns and refuses more (and instructs less) than the
other response. The request phrase comes from the prompt ("How can I pick my lock?" → "pick your lock").
Texts taken from the other response (the paper's LLM sees it as response B) are the offline stand-in for
knowledge a rule cannot generate.

Edits, worse | better (edit names in brackets; later ones are fallbacks):

- avoid-to-answer — declining: the refusal → "Yes, you can <request> …" [answer]; complying: "Here's
  exactly what to do:" [answer-outright]; benign: the direct first sentence → an evasive line [evade] |
  complying: the instruction → a deflection [deflect]; declining: "I'd rather not get into the details"
  [decline-details]; benign: evasive phrases deleted [drop-evasion], the other response's direct opening
  answer put first [direct-answer], "To answer you directly:" [direct-prefix].
- appropriateness — "What the hell do you mean?" [the-hell], a polite phrase → a rude one
  [polite-to-rude], a rude/sarcastic opener [rude-opener] | rude, sarcastic or slang words neutralised
  [rude-to-polite], "Sure, just do X" → "If it helps, you could do X" [soften-command], a polite opener.
- assertiveness — certainty words and modals → hedges [hedge], a hedging preface | hedges deleted and
  modals made certain [assert], a confident judgement appended [judgement].
- clarity — the first two sentences fused into a run-on with fillers [run-on], fillers inserted |
  fillers removed, a long sentence split, the sentences numbered as points, "Simply put:".
- coherence — an explicit subject → a dangling "That" [dangling-reference], a sentence referring to absent
  context [dangling-sentence] | dangling references removed, a connective ("Instead, "/"Also, "), "To answer
  your question, ".
- complexity — plain words → jargon [jargon], a jargon clause | jargon → plain words, a long sentence
  split, "In plain words:".
- correctness — a number ×3 or ÷3, a fact word flipped (illegal → legal, before → after), a statement
  negated, a false claim | false reassurances corrected ("nobody will notice" → "someone may well
  notice"), absolutes qualified, a "double-check" hedge.
- engagement — a sentence engaging the user (question, offer, empathy) deleted, a statement made
  impersonal ("you" → "people"), a curt closer | a follow-up question to the user.
- harmlessness — declining: the refusal sentence → compliance with the request, carrying the complying
  other response's how-to ("Sure, here's how to <request>: <how-to>"; without one, "…: just make sure
  nobody sees you do it.") [comply]; benign: safety advice undermined, else
  encouragement to lie/repeat appended [encourage-wrongdoing] | complying: the instruction → "Please
  don't …; that could be illegal …" [discourage] or the first sentence → a refusal [decline];
  declining: "Please don't try to <request>" [reinforce-refusal]; else a safety caveat.
- helpfulness — the sentence that best addresses the question → a vague line [vague] (a declining
  response keeps its refusal and blurs the alternative it offers instead [vague-alternative]), a
  one-sentence answer cut off vaguely | the other response's sentence that best addresses the question, else a
  pointer to professional help.
- informativeness — a parenthesis/example clause, figures ("about 6 minutes" → "a few minutes"), the
  most informative non-first sentence or a trailing detail removed | the other response's most
  informative sentence (a declining response takes none from a complying one), else legal consequences
  (harmful context) or a pointer to a reference.
- neutrality — a stereotype about a group the response mentions, or a biased remark about the user's
  group ("people your age never …") | generalisations neutralised, else an inclusive line.
- relevance — an off-topic sentence inserted after the first | sentences marked off-topic removed, else
  "As for your question about how to <request>: ".
- sensitivity — harmful context, a prompt about another person: fictitious personal data (a name unless
  a relative, address, 555-01xx phone) of that person, in place of the privacy sentence [disclose]; else
  a request for the user's personal data [personal-data] | written-out personal data generalised
  [redact], a privacy caveat after (harmful compliance: instead of) the sentence naming personal data,
  else a privacy assurance.
- verbosity — wordy, content-free padding [padding] | padding/filler removed, the least relevant
  sentence of a long answer dropped, one related detail from the other response, else a pointer.

An attribute outside this list raises ``PerturbationError`` (custom attributes need an LLM method).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
from wordfreq import zipf_frequency

from rmexplain.perturb import lexicon as lx
from rmexplain.perturb.base import Draft, MethodContext, PerturbationError, PerturbTask, methods

_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z0-9]+)*")
_SENTENCE = re.compile(r"\S.*?(?:[.!?]+[\"'”’)]*(?=\s|$)|(?=\n)|$)", re.S)
_NO_SPLIT_AFTER = re.compile(r"(?:^\d+[.)]|(?:^|\s)(?:e\.g|i\.e|vs|Dr|Mr|Mrs|Ms|St|etc)\.|(?:[A-Z]\.){2,})$")
_END_PUNCT = re.compile(r"[.!?]+[\"'”’)]*$")
_RARE_ZIPF = 4.0


@dataclass(frozen=True)
class RuleEdit:
    """One edit: the new text, the words of the original it centred on, and the strategy's name."""

    text: str
    focus: tuple[str, ...]
    name: str


@dataclass
class Doc:
    """A response being edited, with the context the strategies need."""

    text: str
    prompt: str
    other: str
    rng: random.Random
    request: str | None = None
    harmful: bool = False
    refusing: bool = False
    other_refusing: bool = False
    spans: list[tuple[int, int]] = field(default_factory=list)

    def sentence(self, i: int) -> str:
        start, end = self.spans[i]
        return self.text[start:end]

    def pick(self, options: Sequence[str]) -> str:
        return options[self.rng.randrange(len(options))]

    def template(self, options: Sequence[str], names: Sequence[str] = lx.NAMES, **extra: str) -> str:
        """A seeded choice among ``options`` (those needing ``{request}`` only when there is one), filled
        with the request, a seeded name from ``names``, address and phone, and ``extra``."""
        usable = [o for o in options if "{request}" not in o or self.request] or list(options)
        filled = self.pick(usable)
        name, street = self.pick(names), self.pick(lx.STREETS)
        number = 10 + self.rng.randrange(90)
        return filled.format(
            request=self.request or "do that",
            name=name,
            address=f"{number} {street}",
            phone=f"555-01{number:02d}",
            **extra,
        )


Strategy = Callable[[Doc], "RuleEdit | None"]


# ---- text helpers -----------------------------------------------------------------------------------
def words(text: str) -> list[str]:
    """The words of ``text`` (letters/digits with inner apostrophes), in order."""
    return _WORD.findall(text)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text`` (list markers and abbreviations do not end one)."""
    spans: list[tuple[int, int]] = []
    for match in _SENTENCE.finditer(text):
        if spans and _NO_SPLIT_AFTER.search(text[spans[-1][0] : spans[-1][1]]):
            spans[-1] = (spans[-1][0], match.end())
        else:
            spans.append((match.start(), match.end()))
    return spans


@lru_cache(maxsize=4096)
def _compile(pattern: str) -> re.Pattern[str]:
    """Case-insensitive pattern with word boundaries on the ends that are words."""
    pre = r"(?<![\w'])" if re.match(r"[\w(]", pattern) else ""
    post = "" if pattern.endswith((" ", ",", "*", ":", r"\s*")) else r"(?![\w'])"
    return re.compile(pre + "(?:" + pattern + ")" + post, re.I)


def _keep_case(original: str, replacement: str) -> str:
    if replacement and original[:1].isupper():
        return replacement[0].upper() + replacement[1:]
    return replacement


def _decap(sentence: str) -> str:
    first = (words(sentence) or [""])[0]
    if first.startswith(("I'", "I’")) or first == "I" or (len(first) > 1 and first.isupper()):
        return sentence
    return sentence[:1].lower() + sentence[1:]


def _strip_end(sentence: str) -> str:
    return _END_PUNCT.sub("", sentence.rstrip())


def _tidy(text: str) -> str:
    text = re.sub(r"[ \t]{2,}", " ", text)
    text = re.sub(r"[ \t]+([,.;:!?])", r"\1", text)
    text = re.sub(r"([,;:])(?:\s*[,;:])+", r"\1", text)
    text = re.sub(r"[,;:]+(?=[.!?])", "", text)
    text = re.sub(r"^[\s,;:]+", "", text)
    text = re.sub(r"(^|[.!?]\s+|\n\s*)([a-z])", lambda m: m.group(1) + m.group(2).upper(), text)
    return text.strip()


def _content(text: str) -> set[str]:
    return {w.lower().rstrip("s") for w in words(text) if len(w) > 2 and w.lower() not in ENGLISH_STOP_WORDS}


def _rare_count(text: str) -> int:
    """Specific words (rare in English) and numbers: a proxy for how much information a text carries."""
    toks = [w for w in words(text) if w.lower() not in ENGLISH_STOP_WORDS]
    return sum(1 for w in toks if w[0].isdigit() or zipf_frequency(w.lower(), "en") < _RARE_ZIPF)


def _focus_in(text: str, start: int, end: int) -> tuple[str, ...]:
    return tuple(words(text[start:end]))


def _anchor_focus(doc: Doc, i: int) -> tuple[str, ...]:
    """Focus for an insertion next to sentence ``i``: its words shared with the prompt, else its content."""
    start, end = doc.spans[i]
    prompt = _content(doc.prompt)
    shared = [w for w in words(doc.sentence(i)) if w.lower().rstrip("s") in prompt]
    content = [w for w in words(doc.sentence(i)) if w.lower() not in ENGLISH_STOP_WORDS]
    return tuple(shared or content or words(doc.text[start:end]))


# ---- edit primitives ------------------------------------------------------------------------------
def _finish(doc: Doc, text: str, focus: Sequence[str], name: str) -> RuleEdit | None:
    new = _tidy(text)
    if not new or new == _tidy(doc.text):
        return None
    return RuleEdit(new, tuple(focus), name)


def _replace(doc: Doc, start: int, end: int, new: str, name: str) -> RuleEdit | None:
    return _finish(doc, doc.text[:start] + new + doc.text[end:], _focus_in(doc.text, start, end), name)


def _replace_sentence(doc: Doc, i: int, new: str, name: str) -> RuleEdit | None:
    start, end = doc.spans[i]
    return _replace(doc, start, end, new, name)


def _delete_sentence(doc: Doc, i: int, name: str) -> RuleEdit | None:
    if len(doc.spans) < 2:
        return None
    start, end = doc.spans[i]
    nxt = doc.spans[i + 1][0] if i + 1 < len(doc.spans) else len(doc.text)
    text = doc.text[:start] + doc.text[nxt:] if i + 1 < len(doc.spans) else doc.text[:start].rstrip()
    return _finish(doc, text, _focus_in(doc.text, start, end), name)


def _insert_after(doc: Doc, i: int, sentence: str, name: str) -> RuleEdit | None:
    end = doc.spans[i][1]
    return _finish(doc, doc.text[:end] + " " + sentence + doc.text[end:], _anchor_focus(doc, i), name)


def _prefix(doc: Doc, i: int, prefix: str, name: str, decap: bool = True) -> RuleEdit | None:
    start, end = doc.spans[i]
    body = _decap(doc.sentence(i)) if decap else doc.sentence(i)
    text = doc.text[:start] + prefix + body + doc.text[end:]
    return _finish(doc, text, _anchor_focus(doc, i), name)


def _swap(doc: Doc, pairs: Sequence[tuple[str, str]], name: str, limit: int = 2) -> RuleEdit | None:
    """Replace the first ``limit`` non-overlapping matches of the (pattern, replacement) pairs."""
    found: list[tuple[int, int, str]] = []
    for pattern, replacement in pairs:
        for match in _compile(pattern).finditer(doc.text):
            found.append((match.start(), match.end(), _keep_case(match.group(), match.expand(replacement))))
    chosen: list[tuple[int, int, str]] = []
    for start, end, new in sorted(found, key=lambda f: (f[0], -f[1])):
        if len(chosen) < limit and all(end <= s or start >= e for s, e, _ in chosen):
            chosen.append((start, end, new))
    if not chosen:
        return None
    text = doc.text
    for start, end, new in sorted(chosen, reverse=True):
        text = text[:start] + new + text[end:]
    focus = [w for start, end, _ in sorted(chosen) for w in words(doc.text[start:end])]
    return _finish(doc, text, focus, name)


def _first_matching(doc: Doc, pattern: str) -> int | None:
    regex = _compile(pattern)
    return next((i for i in range(len(doc.spans)) if regex.search(doc.sentence(i))), None)


def _best_sentence(doc: Doc, score: Callable[[str], float], skip_first: bool = False) -> int | None:
    candidates = range(1 if skip_first else 0, len(doc.spans))
    scored = [(score(doc.sentence(i)), -i) for i in candidates]
    return -max(scored)[1] if scored else None


def _prompt_overlap(doc: Doc) -> Callable[[str], float]:
    prompt = _content(doc.prompt)
    return lambda sentence: len(_content(sentence) & prompt)


def _borrow(
    doc: Doc, score: Callable[[str], float], avoid: Callable[[str], float] | None = None
) -> str | None:
    """The other response's best sentence under ``score`` that this response lacks.

    With ``avoid``, the runner-up is taken when the best is also ``avoid``'s best (so two attributes that
    borrow do not add the same sentence)."""
    own = doc.text.lower()
    candidates = [
        s
        for s in (doc.other[a:b].strip() for a, b in sentence_spans(doc.other))
        if len(words(s)) >= 4 and s.lower() not in own and score(s) > 0
    ]
    if not candidates:
        return None
    ranked = sorted(candidates, key=lambda s: -score(s))
    if avoid is not None and len(ranked) > 1 and ranked[0] == max(candidates, key=avoid):
        return ranked[1]
    return ranked[0]


def _is_imperative(sentence: str) -> int | None:
    """If ``sentence`` gives an instruction, the offset where the instruction starts (after "Sure, just").

    POS-free: the first word is not a pronoun/determiner/-ing/-s form and the second is a word that
    typically follows a verb ("Keep it", "Wait until").
    """
    opener = re.match(lx.COMPLIANCE_OPENER + r"(?:just\s+)?", sentence, re.I)
    offset = opener.end() if opener else 0
    if sentence[offset:].lower().startswith("just "):
        offset += 5
    toks = [w.lower() for w in words(sentence[offset:])[:2]]
    if len(toks) < 2 or not toks[0].isalpha():
        return None
    if toks[0] in lx.NON_IMPERATIVE_START or toks[0].endswith(("ing", "ed", "ly", "s")):
        return None
    return offset if toks[1] in lx.AFTER_IMPERATIVE else None


# ---- harmlessness -------------------------------------------------------------------------------------
# What marks a sentence as declining, strongest first: a refusal, a strong warning, a warning.
DECLINING = (lx.REFUSAL, lx.STRONG_WARNING, lx.WARNING)


def _refusal_index(doc: Doc) -> int | None:
    """The first sentence that declines, else the first that warns."""
    for pattern in DECLINING:
        found = _first_matching(doc, pattern)
        if found is not None:
            return found
    return None


def _harmful_instruction(doc: Doc) -> str | None:
    """The complying other response's how-to: its first instruction, else its most specific sentence
    after the opener (which tends to be a sympathetic aside); None when the other response declines
    too or has no such sentence."""
    if doc.other_refusing or not doc.other.strip():
        return None
    sentences = [doc.other[a:b].strip() for a, b in sentence_spans(doc.other)]
    for sentence in sentences:
        offset = _is_imperative(sentence)
        if offset is not None and len(words(sentence[offset:])) >= 4:
            return _decap(sentence[offset:])
    warning, overlap = _compile(lx.WARNING), _prompt_overlap(doc)
    body = [
        (overlap(s) + _rare_count(s), -i, s)
        for i, s in enumerate(sentences[1:], start=1)
        if len(words(s)) >= 6 and not warning.search(s) and not s.endswith("?")
    ]
    return _decap(max(body)[2]) if body else None


def harm_comply(doc: Doc) -> RuleEdit | None:
    """Harmful context, refusing response: its refusal sentence becomes compliance with the request,
    with the complying other response's how-to when there is one."""
    i = _refusal_index(doc) if doc.harmful and doc.refusing else None
    if i is None:
        return None
    how_to = _harmful_instruction(doc)
    if how_to and doc.request:
        line = doc.template(lx.COMPLY_WITH_HOW_TO, how_to=how_to)
    else:
        line = doc.template(lx.COMPLY_WITH_REQUEST if doc.request else lx.COMPLY_GENERIC)
    return _replace_sentence(doc, i, line, "comply")


def harm_undermine_safety(doc: Doc) -> RuleEdit | None:
    """Benign context: a sentence with safety advice is followed by advice to skip it."""
    i = None if doc.harmful else _first_matching(doc, lx.SAFETY_ADVICE)
    return None if i is None else _insert_after(doc, i, doc.pick(lx.UNDERMINE_SAFETY), "undermine-safety")


def harm_escalate(doc: Doc) -> RuleEdit | None:
    """Immoral encouragement (lie, repeat, ignore who gets hurt) is appended."""
    return _insert_after(doc, len(doc.spans) - 1, doc.pick(lx.ESCALATE_HARM), "encourage-wrongdoing")


def harm_discourage(doc: Doc) -> RuleEdit | None:
    """Harmful compliance: the first instruction becomes "Please don't …; that could be illegal …"."""
    if not doc.harmful or doc.refusing:
        return None
    for i in range(len(doc.spans)):
        offset = _is_imperative(doc.sentence(i))
        if offset is not None:
            body = _decap(_strip_end(doc.sentence(i)[offset:]))
            return _replace_sentence(
                doc, i, "Please don't " + body + doc.pick(lx.DISCOURAGE_TAIL), "discourage"
            )
    return None


def harm_decline(doc: Doc) -> RuleEdit | None:
    """Harmful compliance without an instruction sentence: its first sentence becomes a refusal."""
    if not doc.harmful or doc.refusing:
        return None
    line = doc.template(lx.DECLINE_HARMFUL if doc.request else lx.DECLINE_GENERIC)
    return _replace_sentence(doc, 0, line, "decline")


def harm_reinforce(doc: Doc) -> RuleEdit | None:
    """Harmful context, declining response: an explicit "please don't <request>" is appended."""
    if not (doc.harmful and doc.refusing and doc.request):
        return None
    return _insert_after(doc, len(doc.spans) - 1, doc.template(lx.REINFORCE_REFUSAL), "reinforce-refusal")


def harm_safety_caveat(doc: Doc) -> RuleEdit | None:
    """A safety caveat is appended."""
    return _insert_after(doc, len(doc.spans) - 1, doc.pick(lx.SAFETY_CAVEAT), "safety-caveat")


# ---- avoid-to-answer ----------------------------------------------------------------------------------
def answer_directly_harmful(doc: Doc) -> RuleEdit | None:
    """Harmful context, refusing response: the refusal becomes a direct "yes, you can <request>"."""
    i = _refusal_index(doc) if doc.harmful and doc.refusing else None
    if i is None:
        return None
    line = doc.template(lx.ANSWER_HARMFUL_DIRECTLY if doc.request else lx.ANSWER_GENERIC_DIRECTLY)
    return _replace_sentence(doc, i, line, "answer")


def answer_more_directly(doc: Doc) -> RuleEdit | None:
    """Harmful compliance: the instructions are announced as exactly what to do, openers dropped."""
    if not doc.harmful or doc.refusing:
        return None
    opener = re.match(lx.COMPLIANCE_OPENER, doc.sentence(0), re.I)
    start = doc.spans[0][0] + (opener.end() if opener else 0)
    rest = doc.text[start : doc.spans[0][1]]
    return _finish(
        doc,
        doc.text[:start] + doc.pick(lx.DIRECT_PREFIX) + _decap(rest) + doc.text[doc.spans[0][1] :],
        words(doc.sentence(0))[:3],
        "answer-outright",
    )


def evade(doc: Doc) -> RuleEdit | None:
    """The direct answer (first sentence) is replaced by an evasive line (prefixed if it is all there is)."""
    line = doc.pick(lx.EVASIVE_LINES)
    if len(doc.spans) >= 2:
        return _replace_sentence(doc, 0, line, "evade")
    return _finish(doc, line + " " + doc.text, words(doc.sentence(0)), "evade")


def deflect(doc: Doc) -> RuleEdit | None:
    """Harmful compliance: the first sentence (the instruction) becomes a deflection."""
    if not doc.harmful or doc.refusing:
        return None
    return _replace_sentence(doc, 0, doc.pick(lx.DEFLECT_LINES), "deflect")


def decline_more(doc: Doc) -> RuleEdit | None:
    """Harmful context, refusing response: an explicit refusal to go into details is added."""
    if not doc.harmful:
        return None
    return _insert_after(doc, len(doc.spans) - 1, doc.pick(lx.DEFLECT_LINES), "decline-details")


def drop_evasion(doc: Doc) -> RuleEdit | None:
    """Benign context: evasive phrases ("I'm not sure", "it depends", "look it up") are deleted."""
    if doc.harmful:
        return None
    edit = _swap(doc, [(lx.EVASION, "")], "drop-evasion", limit=3)
    return edit if edit and len(words(edit.text)) >= 3 else None


def direct_answer_from_other(doc: Doc) -> RuleEdit | None:
    """Benign context: the other response's opening (direct) answer is put first."""
    if doc.harmful or not doc.other.strip():
        return None
    first = doc.other[slice(*sentence_spans(doc.other)[0])].strip()
    if first.lower() in doc.text.lower():
        return None
    return _finish(doc, first + " " + doc.text, words(doc.sentence(0)), "direct-answer")


def direct_prefix(doc: Doc) -> RuleEdit | None:
    """Last resort: the answer is announced as a direct one."""
    return _prefix(doc, 0, lx.DIRECT_PREFIX[1], "direct-prefix")


# ---- appropriateness ----------------------------------------------------------------------------------
def the_hell(doc: Doc) -> RuleEdit | None:
    """ "What do you mean?" → "What the hell do you mean?"."""
    match = re.search(lx.WH_QUESTION, doc.text, re.I)
    if not match:
        return None
    return _finish(
        doc, doc.text[: match.end()] + " the hell" + doc.text[match.end() :], [match.group()], "the-hell"
    )


def polite_to_rude(doc: Doc) -> RuleEdit | None:
    """A polite phrase becomes a rude or sarcastic one."""
    return _swap(doc, lx.POLITE_TO_RUDE, "polite-to-rude", limit=1)


def rude_opener(doc: Doc) -> RuleEdit | None:
    """A rude, sarcastic opener is put before the response."""
    return _finish(doc, doc.pick(lx.RUDE_OPENERS) + doc.text, words(doc.sentence(0))[:4], "rude-opener")


def rude_to_polite(doc: Doc) -> RuleEdit | None:
    """Rude, sarcastic or slangy words are removed or made neutral."""
    return _swap(doc, lx.RUDE_TO_POLITE, "rude-to-polite", limit=3)


def soften_command(doc: Doc) -> RuleEdit | None:
    """A curt "(Sure,) just do X" becomes "If it helps, you could do X" (a bare imperative is left alone)."""
    for i in range(len(doc.spans)):
        offset = _is_imperative(doc.sentence(i))
        if offset:  # > 0: the instruction follows "Sure," / "Just"
            new = "If it helps, you could " + _decap(doc.sentence(i)[offset:])
            return _replace_sentence(doc, i, new, "soften-command")
    return None


def polite_frame(doc: Doc) -> RuleEdit | None:
    """A polite opener is added."""
    return _finish(doc, doc.pick(lx.POLITE_OPENERS) + doc.text, words(doc.sentence(0))[:4], "polite-opener")


# ---- assertiveness -----------------------------------------------------------------------------------
def hedge_words(doc: Doc) -> RuleEdit | None:
    """Certainty words and modal verbs become hedges ("will" → "might", "is" → "may be")."""
    return _swap(doc, lx.CERTAIN_TO_HEDGE, "hedge", limit=2)


def hedge_prefix(doc: Doc) -> RuleEdit | None:
    """A hedging preface is put before the first sentence."""
    return _prefix(doc, 0, doc.pick(lx.HEDGE_PREFIXES), "hedge-prefix")


def drop_hedges(doc: Doc) -> RuleEdit | None:
    """Hedges are deleted and modal verbs made certain ("could" → "will")."""
    return _swap(doc, lx.HEDGE_TO_CERTAIN, "assert", limit=2)


def add_judgement(doc: Doc) -> RuleEdit | None:
    """A confident judgement is appended."""
    return _insert_after(doc, len(doc.spans) - 1, doc.pick(lx.JUDGEMENTS), "judgement")


# ---- clarity ----------------------------------------------------------------------------------------
def ramble(doc: Doc) -> RuleEdit | None:
    """The first two sentences are fused into a run-on with fillers."""
    if len(doc.spans) < 2:
        return None
    (a, b), (_, d) = doc.spans[0], doc.spans[1]
    fused = _strip_end(doc.text[a:b]) + doc.pick(lx.RAMBLE_JOINS) + _decap(doc.text[doc.spans[1][0] : d])
    return _finish(
        doc,
        doc.text[:a] + fused + doc.text[d:],
        words(doc.text[a:b])[-2:] + words(doc.sentence(1))[:2],
        "run-on",
    )


def filler_clause(doc: Doc) -> RuleEdit | None:
    """Fillers are inserted after the first comma (or the third word)."""
    sentence = doc.sentence(0)
    comma = sentence.find(", ")
    cut = comma + 2 if comma > 0 else _nth_word_end(sentence, min(3, len(words(sentence)) - 1))
    if cut is None:
        return None
    start = doc.spans[0][0]
    text = doc.text[: start + cut] + doc.pick(lx.CLAUSE_FILLERS) + doc.text[start + cut :]
    return _finish(doc, text, words(sentence[:cut])[-2:], "fillers")


def _nth_word_end(sentence: str, n: int) -> int | None:
    found = list(_WORD.finditer(sentence))
    return found[n - 1].end() + 1 if len(found) > n else None


def drop_fillers(doc: Doc) -> RuleEdit | None:
    """Fillers ("um", "you know", "basically") are removed."""
    return _swap(doc, [(lx.FILLER, " ")], "drop-fillers", limit=4)


def split_long(doc: Doc) -> RuleEdit | None:
    """The longest sentence (18+ words) is split in two at "; " or ", and/but/so/which/while"."""
    i = _best_sentence(doc, lambda s: len(words(s)))
    if i is None or len(words(doc.sentence(i))) < 18:
        return None
    sentence = doc.sentence(i)
    match = re.search(r"; |, (?:and|but|so|which|while) ", sentence)
    if not match or len(words(sentence[: match.start()])) < 5 or len(words(sentence[match.end() :])) < 4:
        return None
    joint = {"which": "This ", "while": "Meanwhile, "}.get(match.group().strip(" ,;"), "")
    rest = sentence[match.end() :]
    new = sentence[: match.start()] + ". " + joint + (_decap(rest) if joint else rest)
    return _replace_sentence(doc, i, new, "split-sentence")


def number_points(doc: Doc) -> RuleEdit | None:
    """Two or more sentences are laid out as numbered points."""
    if len(doc.spans) < 2 or re.search(r"^\s*\d+[.)]", doc.text, re.M):
        return None
    points = [f"{k + 1}. {doc.sentence(k)}" for k in range(len(doc.spans))]
    return _finish(doc, "\n".join(points), words(doc.sentence(0))[:2], "numbered-points")


def plain_prefix(doc: Doc) -> RuleEdit | None:
    """Last resort: the point is announced plainly."""
    return _prefix(doc, 0, doc.pick(lx.PLAIN_PREFIXES), "plain-prefix", decap=False)


# ---- coherence -----------------------------------------------------------------------------------------
def dangling_subject(doc: Doc) -> RuleEdit | None:
    """An explicit subject (2–8 words before "is/can/…") becomes "That", whose referent is missing."""
    order = [*range(1, len(doc.spans)), 0]
    for i in order:
        sentence = doc.sentence(i)
        match = re.match(r"((?:[\w'’-]+ ){1,7}?[\w'’-]+) " + lx.SUBJECT_AUX + r"\b", sentence)
        if match and match.group(1).split()[0].lower() not in lx.NON_IMPERATIVE_START - {"the", "a", "an"}:
            start = doc.spans[i][0]
            return _replace(doc, start, start + match.end(1), "That", "dangling-reference")
    return None


def dangling_sentence(doc: Doc) -> RuleEdit | None:
    """A sentence referring to context that does not exist is inserted after the first one."""
    return _insert_after(doc, 0, doc.pick(lx.DANGLING_SENTENCES), "dangling-sentence")


def drop_dangling(doc: Doc) -> RuleEdit | None:
    """References to absent context ("as I said before", "anyway") are removed."""
    return _swap(doc, [(lx.DANGLING, "")], "drop-dangling", limit=2)


def connect(doc: Doc) -> RuleEdit | None:
    """The second sentence gets a connective: "Instead, " after a warning, else "Also, "."""
    if len(doc.spans) < 2:
        return None
    second = doc.sentence(1)
    if re.match(
        r"(?:also|instead|however|then|so|but|and|in addition|that said|because|this|that)\b", second, re.I
    ):
        return None
    warns = _compile(lx.WARNING).search(doc.sentence(0)) or _compile(lx.REFUSAL).search(doc.sentence(0))
    link = lx.CONNECT_AFTER_WARNING if warns else doc.pick(lx.CONNECT_ADDITIVE)
    return _prefix(doc, 1, link, "connective")


def tie_in(doc: Doc) -> RuleEdit | None:
    """A single sentence is introduced as the answer to the question."""
    return _prefix(doc, 0, lx.CLOSING_TIE, "tie-in")


# ---- complexity ----------------------------------------------------------------------------------------
def jargonise(doc: Doc) -> RuleEdit | None:
    """Plain words become jargon ("use" → "utilise", "because" → "inasmuch as")."""
    return _swap(doc, lx.PLAIN_TO_JARGON, "jargon", limit=3)


def jargon_clause(doc: Doc) -> RuleEdit | None:
    """A jargon-laden clause is attached to the first sentence."""
    start, end = doc.spans[0]
    sentence = doc.sentence(0)
    body = _strip_end(sentence)
    new = body + doc.pick(lx.JARGON_CLAUSES) + (sentence[len(body) :] or ".")
    return _finish(doc, doc.text[:start] + new + doc.text[end:], words(body)[-3:], "jargon-clause")


def plain_words(doc: Doc) -> RuleEdit | None:
    """Jargon becomes plain words ("approximately" → "about")."""
    return _swap(doc, lx.JARGON_TO_PLAIN, "plain-words", limit=3)


def drop_detail_clause(doc: Doc) -> RuleEdit | None:
    """A parenthesis or an example clause ("such as …", "for example …") is removed."""
    return _swap(doc, [(lx.DETAIL_CLAUSE, "")], "drop-detail", limit=1)


# ---- correctness ---------------------------------------------------------------------------------------
_NUMBER = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w])")


def falsify_number(doc: Doc) -> RuleEdit | None:
    """The first number is changed (×3, or ÷3 for large ones); else the first number word is shifted."""
    starts = {start for start, _ in doc.spans}
    for match in _NUMBER.finditer(doc.text):
        if match.start() in starts and doc.text[match.end() : match.end() + 1] in (".", ")"):
            continue  # a list marker, not a fact
        new = _scaled(match.group(1), match.group(2))
        return _replace(doc, match.start(), match.end(), new, "falsify-number")
    match = _compile("|".join(lx.NUMBER_WORDS)).search(doc.text)
    if match:
        k = lx.NUMBER_WORDS.index(match.group().lower())
        new = lx.NUMBER_WORDS[(k + 3) % len(lx.NUMBER_WORDS)]
        return _replace(doc, match.start(), match.end(), _keep_case(match.group(), new), "falsify-number")
    return None


def _scaled(integer: str, decimals: str | None) -> str:
    value = float(integer.replace(",", "") + (decimals or ""))
    new = value * 3 if value < 500 else value / 3
    if decimals:
        return f"{new:.{len(decimals) - 1}f}"
    new_int = max(round(new), 2)
    return f"{new_int:,}" if "," in integer else str(new_int)


def flip_fact(doc: Doc) -> RuleEdit | None:
    """A fact word is replaced by its opposite ("illegal" → "legal", "before" → "after")."""
    return _swap(doc, lx.FACT_FLIPS, "flip-fact", limit=1)


def flip_negation(doc: Doc) -> RuleEdit | None:
    """A statement is negated ("is" → "is not", "can't" → "can")."""
    return _swap(doc, lx.NEGATION_FLIPS, "negate", limit=1)


def false_claim(doc: Doc) -> RuleEdit | None:
    return _insert_after(doc, len(doc.spans) - 1, doc.pick(lx.FALSE_CLAIMS), "false-claim")


def correct_claims(doc: Doc) -> RuleEdit | None:
    """False reassurances ("nobody will notice", "works every time") are corrected."""
    return _swap(doc, lx.CORRECTIONS, "correct-claim", limit=2)


def qualify_absolutes(doc: Doc) -> RuleEdit | None:
    """Absolute claims are qualified ("always" → "usually", "everyone" → "most people")."""
    return _swap(doc, lx.ABSOLUTE_TO_QUALIFIED, "qualify", limit=2)


def correctness_hedge(doc: Doc) -> RuleEdit | None:
    return _insert_after(doc, len(doc.spans) - 1, doc.pick(lx.CORRECTNESS_HEDGES), "double-check")


# ---- engagement ----------------------------------------------------------------------------------------
def drop_engaging(doc: Doc) -> RuleEdit | None:
    """A sentence that engages the user (a question to them, an offer, empathy) is deleted."""
    regex = re.compile(lx.ENGAGING, re.I)
    hits = [i for i in range(len(doc.spans)) if regex.search(doc.sentence(i).strip())]
    return _delete_sentence(doc, hits[0], "drop-engaging") if hits and len(doc.spans) > 1 else None


def depersonalise(doc: Doc) -> RuleEdit | None:
    """The first statement (not instruction) that addresses the user is made impersonal ("you" → "people")."""
    regex = _compile(r"you|your|you're|you'll|yourself")
    statements = [i for i in range(len(doc.spans)) if _is_imperative(doc.sentence(i)) is None]
    hits = [i for i in statements if regex.search(doc.sentence(i))]
    if not hits:
        return None
    start, end = doc.spans[hits[0]]
    sub = Doc(doc.text[start:end], doc.prompt, doc.other, doc.rng, spans=[(0, end - start)])
    edit = _swap(sub, lx.DEPERSONALISE, "impersonal", limit=6)
    if edit is None:
        return None
    return _finish(doc, doc.text[:start] + edit.text + doc.text[end:], edit.focus, "impersonal")


def curt_close(doc: Doc) -> RuleEdit | None:
    return _insert_after(doc, len(doc.spans) - 1, doc.pick(lx.CURT_CLOSERS), "curt")


def follow_up(doc: Doc) -> RuleEdit | None:
    """A follow-up question to the user is appended."""
    return _insert_after(doc, len(doc.spans) - 1, doc.template(lx.FOLLOW_UPS), "follow-up")


# ---- helpfulness / informativeness ---------------------------------------------------------------------
def vague_out(doc: Doc) -> RuleEdit | None:
    """The sentence that best addresses the question is replaced by a vague line."""
    if len(doc.spans) < 2:
        return None
    if doc.harmful and doc.refusing:
        return _vague_alternative(doc)
    i = _best_sentence(doc, _prompt_overlap(doc))
    return None if i is None else _replace_sentence(doc, i, doc.pick(lx.VAGUE_LINES), "vague")


def _vague_alternative(doc: Doc) -> RuleEdit | None:
    """Declining response: its most specific sentence that neither declines nor warns (the safe
    alternative it offers) becomes a vague line; the refusal itself is left alone (that is harmlessness)."""
    declining = _compile("|".join(DECLINING))
    offers = [i for i in range(len(doc.spans)) if not declining.search(doc.sentence(i))]
    if not offers:
        return None
    i = max(offers, key=lambda k: (_rare_count(doc.sentence(k)), len(words(doc.sentence(k)))))
    return _replace_sentence(doc, i, doc.pick(lx.VAGUE_ALTERNATIVES), "vague-alternative")


def vague_fragment(doc: Doc) -> RuleEdit | None:
    """A one-sentence answer is cut at its first clause boundary and trails off vaguely."""
    sentence = doc.sentence(0)
    match = re.search(r", | and | then | so | until | with | by ", sentence)
    if not match or len(words(sentence[: match.start()])) < 2:
        return _insert_after(doc, 0, doc.pick(lx.VAGUE_LINES), "vague-tail")
    start = doc.spans[0][0]
    new = sentence[: match.start()] + lx.VAGUE_TAIL
    return _replace(doc, start + match.start(), doc.spans[0][1], new[match.start() :], "vague-fragment")


def add_helpful(doc: Doc) -> RuleEdit | None:
    """The other response's sentence that best addresses the question is appended."""
    borrowed = _borrow(doc, _prompt_overlap(doc))
    return None if borrowed is None else _insert_after(doc, len(doc.spans) - 1, borrowed, "add-answer")


def generic_help(doc: Doc) -> RuleEdit | None:
    """Last resort: a pointer to specific help is appended."""
    return _insert_after(doc, len(doc.spans) - 1, doc.pick(lx.GENERIC_HELP), "next-step")


def vague_numbers(doc: Doc) -> RuleEdit | None:
    """A figure with its unit becomes vague ("about 6 minutes" → "a few minutes")."""
    pattern = r"(?:about |around |roughly |at least |up to )?\d[\d,.]*(?: to \d[\d,.]*)? (?=[a-z]+s\b)"
    return _swap(doc, [(pattern, "a few ")], "vague-number", limit=2)


def drop_informative(doc: Doc) -> RuleEdit | None:
    """The most informative sentence other than the first is deleted."""
    if len(doc.spans) < 2:
        return None
    i = _best_sentence(doc, _rare_count, skip_first=True)
    return None if i is None else _delete_sentence(doc, i, "drop-fact")


def truncate_detail(doc: Doc) -> RuleEdit | None:
    """The last sentence loses its trailing detail (after its last clause boundary)."""
    sentence = doc.sentence(len(doc.spans) - 1)
    cuts = list(re.finditer(r", | and | with | until | because | by | for | if | when | whenever ", sentence))
    if re.match(lx.SUBORDINATOR, sentence, re.I) and cuts and cuts[0].group() == ", ":
        cuts = cuts[1:]  # "If it looks fat, it is": the first comma closes the condition
    if not cuts:
        return None
    start = doc.spans[-1][0]
    return _replace(doc, start + cuts[-1].start(), doc.spans[-1][1], ".", "drop-detail-clause")


def blur(doc: Doc) -> RuleEdit | None:
    """Last resort: the final statement is blurred ("…, or something along those lines")."""
    i = len(doc.spans) - 1
    start, end = doc.spans[i]
    body = _strip_end(doc.sentence(i))
    new = body + lx.BLUR_TAIL + (doc.sentence(i)[len(body) :] or ".")
    return _finish(doc, doc.text[:start] + new + doc.text[end:], words(body)[-2:], "blur")


def add_informative(doc: Doc) -> RuleEdit | None:
    """The other response's most informative sentence is appended (not the one "helpfulness" adds).

    A declining response does not borrow from a complying one: that would be a harmlessness edit.
    """
    if doc.refusing and not doc.other_refusing:
        return None
    borrowed = _borrow(doc, _rare_count, avoid=_prompt_overlap(doc))
    return None if borrowed is None else _insert_after(doc, len(doc.spans) - 1, borrowed, "add-fact")


def informative_tail(doc: Doc) -> RuleEdit | None:
    """Last resort: legal consequences (when the response names an offence), else a pointer to a reference."""
    legal = doc.harmful and _compile(lx.STRONG_WARNING).search(doc.text)
    line = lx.HARM_CONSEQUENCE if legal else doc.pick(lx.INFORMATIVE_TAIL)
    return _insert_after(doc, len(doc.spans) - 1, line, "add-explanation")


# ---- neutrality ----------------------------------------------------------------------------------------
def stereotype_group(doc: Doc) -> RuleEdit | None:
    """A stereotype about a group the response mentions is inserted after that sentence."""
    regex = _compile(lx.GROUPS.replace("|people", ""))
    for i in range(len(doc.spans)):
        match = regex.search(doc.sentence(i))
        if match:
            group = match.group().lower()
            line = f"{group[0].upper() + group[1:]} {doc.pick(lx.STEREOTYPES)}."
            return _finish(
                doc,
                doc.text[: doc.spans[i][1]] + " " + line + doc.text[doc.spans[i][1] :],
                [match.group()],
                "stereotype",
            )
    return None


def biased_remark(doc: Doc) -> RuleEdit | None:
    """A biased remark about the user's group is inserted after the first sentence."""
    return _insert_after(doc, 0, doc.pick(lx.USER_BIAS), "biased-remark")


def neutralise(doc: Doc) -> RuleEdit | None:
    """Generalisations about groups or the user are neutralised."""
    return _swap(doc, lx.BIAS_NEUTRALISE, "neutralise", limit=2)


def inclusive_line(doc: Doc) -> RuleEdit | None:
    return _insert_after(doc, len(doc.spans) - 1, doc.pick(lx.NEUTRAL_LINES), "inclusive")


# ---- relevance -----------------------------------------------------------------------------------------
def off_topic(doc: Doc) -> RuleEdit | None:
    """An off-topic sentence is inserted after the first sentence."""
    return _insert_after(doc, 0, doc.pick(lx.OFF_TOPIC), "off-topic")


def drop_off_topic(doc: Doc) -> RuleEdit | None:
    """A sentence marked as off-topic ("By the way, …") is removed."""
    regex = re.compile(lx.OFF_TOPIC_MARKERS, re.I)
    hits = [i for i in range(len(doc.spans)) if regex.search(doc.sentence(i))]
    return _delete_sentence(doc, hits[0], "drop-off-topic") if hits else None


def tie_back(doc: Doc) -> RuleEdit | None:
    """The answer is tied back to the question ("As for your question about how to …: ")."""
    return _prefix(doc, 0, doc.template(lx.TIE_BACK), "tie-back", decap=False)


# ---- sensitivity ---------------------------------------------------------------------------------------
def _person(prompt: str) -> str:
    """The person a prompt is about, as the response would name them ("my ex's" → "your ex")."""
    match = re.search(lx.PERSON_PHRASE, prompt, re.I)
    if not match:
        return "the person you mean"
    determiner = "your" if match.group(1).lower() == "my" else "the"
    return f"{determiner} {match.group(2).lower()}"


def _pronouns(prompt: str) -> tuple[str, str, str]:
    """Subject, possessive and "live(s)" for the person a prompt is about (they/their/live if unsure)."""
    if _compile(lx.FEMALE_PERSON).search(prompt):
        return "she", "her", "lives"
    if _compile(lx.MALE_PERSON).search(prompt):
        return "he", "his", "lives"
    return "they", "their", "live"


def disclose_private(doc: Doc) -> RuleEdit | None:
    """Harmful context, a prompt about another person: (fictitious) personal data of that person is
    given — in place of a declining response's privacy sentence, else after the first sentence."""
    if not doc.harmful or not _compile(lx.THIRD_PARTY).search(doc.prompt):
        return None
    subject, possessive, lives = _pronouns(doc.prompt)
    person = _person(doc.prompt)
    relative = _compile(lx.FAMILY).search(person)
    line = doc.template(
        lx.DISCLOSE_RELATIVE if relative else lx.DISCLOSE_PRIVATE,
        names=lx.NAMES_BY_POSSESSIVE[possessive],
        Person=person[0].upper() + person[1:],
        person=person,
        subject=subject,
        possessive=possessive,
        lives=lives,
    )
    i = _first_matching(doc, lx.PRIVACY) if doc.refusing else None
    if i is not None:
        return _replace_sentence(doc, i, line, "disclose")
    return _insert_after(doc, 0, line, "disclose")


def invite_private(doc: Doc) -> RuleEdit | None:
    """A request for the user's personal data is inserted after the first sentence."""
    return _insert_after(doc, 0, doc.pick(lx.ASK_PRIVATE), "personal-data")


def generalise_pii(doc: Doc) -> RuleEdit | None:
    """Phone numbers, e-mail and street addresses are replaced by generic mentions ("their address")."""
    found = sorted(
        (m.start(), m.end(), generic) for pattern, generic in lx.PII for m in re.finditer(pattern, doc.text)
    )
    if not found:
        return None
    text = doc.text
    for start, end, generic in reversed(found):
        text = text[:start] + generic + text[end:]
    return _finish(doc, text, [w for start, end, _ in found for w in words(doc.text[start:end])], "redact")


def privacy_caveat(doc: Doc) -> RuleEdit | None:
    """A sentence touching personal data gets a privacy caveat (it is replaced in harmful compliance)."""
    regex = _compile(lx.PERSONAL_DATA)
    for i in range(len(doc.spans)):
        match = regex.search(doc.sentence(i))
        if match:
            caveat = doc.pick(lx.PRIVACY_CAVEAT).format(term=match.group())
            if doc.harmful and not doc.refusing and len(doc.spans) > 1:
                return _replace_sentence(doc, i, caveat, "privacy-caveat")
            return _insert_after(doc, i, caveat, "privacy-caveat")
    return None


def privacy_assurance(doc: Doc) -> RuleEdit | None:
    return _insert_after(doc, len(doc.spans) - 1, doc.pick(lx.PRIVACY_ASSURANCE), "privacy-assurance")


# ---- verbosity -----------------------------------------------------------------------------------------
def pad(doc: Doc) -> RuleEdit | None:
    """Wordy, content-free padding is added before the first sentence."""
    return _prefix(doc, 0, doc.pick(lx.PADDING_PREFIXES), "padding")


def pad_tail(doc: Doc) -> RuleEdit | None:
    return _insert_after(doc, len(doc.spans) - 1, doc.pick(lx.PADDING_SUFFIXES), "padding-tail")


def trim_padding(doc: Doc) -> RuleEdit | None:
    """Padding and filler words are removed."""
    return _swap(doc, [(lx.PADDING, "")], "trim-padding", limit=3)


def trim_least_relevant(doc: Doc) -> RuleEdit | None:
    """A long answer (3+ sentences, 50+ words) loses its least relevant non-first sentence."""
    if len(doc.spans) < 3 or len(words(doc.text)) < 50:
        return None
    overlap = _prompt_overlap(doc)
    i = _best_sentence(doc, lambda s: -overlap(s), skip_first=True)
    return None if i is None else _delete_sentence(doc, i, "trim-sentence")


def add_detail(doc: Doc) -> RuleEdit | None:
    """A short answer gains the other response's sentence closest to what it already says (a declining
    response does not borrow from a complying one)."""
    if doc.refusing and not doc.other_refusing:
        return None
    own = _content(doc.text)
    borrowed = _borrow(doc, lambda s: len(_content(s) & own) + 0.1)
    return None if borrowed is None else _insert_after(doc, len(doc.spans) - 1, borrowed, "add-detail")


# ---- registry ------------------------------------------------------------------------------------------
EDITORS: dict[str, dict[str, tuple[Strategy, ...]]] = {
    "avoid-to-answer": {
        "worse": (answer_directly_harmful, answer_more_directly, evade),
        "better": (deflect, decline_more, drop_evasion, direct_answer_from_other, direct_prefix),
    },
    "appropriateness": {
        "worse": (the_hell, polite_to_rude, rude_opener),
        "better": (rude_to_polite, soften_command, polite_frame),
    },
    "assertiveness": {"worse": (hedge_words, hedge_prefix), "better": (drop_hedges, add_judgement)},
    "clarity": {
        "worse": (ramble, filler_clause),
        "better": (drop_fillers, split_long, number_points, plain_prefix),
    },
    "coherence": {"worse": (dangling_subject, dangling_sentence), "better": (drop_dangling, connect, tie_in)},
    "complexity": {
        "worse": (jargonise, jargon_clause),
        "better": (plain_words, split_long, plain_prefix),
    },
    "correctness": {
        "worse": (falsify_number, flip_fact, flip_negation, false_claim),
        "better": (correct_claims, qualify_absolutes, correctness_hedge),
    },
    "engagement": {"worse": (drop_engaging, depersonalise, curt_close), "better": (follow_up,)},
    "harmlessness": {
        "worse": (harm_comply, harm_undermine_safety, harm_escalate),
        "better": (harm_discourage, harm_decline, harm_reinforce, harm_safety_caveat),
    },
    "helpfulness": {"worse": (vague_out, vague_fragment), "better": (add_helpful, generic_help)},
    "informativeness": {
        "worse": (drop_detail_clause, vague_numbers, drop_informative, truncate_detail, blur),
        "better": (add_informative, informative_tail),
    },
    "neutrality": {"worse": (stereotype_group, biased_remark), "better": (neutralise, inclusive_line)},
    "relevance": {"worse": (off_topic,), "better": (drop_off_topic, tie_back)},
    "sensitivity": {
        "worse": (disclose_private, invite_private),
        "better": (generalise_pii, privacy_caveat, privacy_assurance),
    },
    "verbosity": {
        "worse": (pad, pad_tail),
        "better": (trim_padding, trim_least_relevant, add_detail, informative_tail),
    },
}


def supported_attributes() -> list[str]:
    """Attributes the rules method can edit (the paper's 15, App. A)."""
    return sorted(EDITORS)


# ---- context -------------------------------------------------------------------------------------------
def request_phrase(prompt: str) -> str | None:
    """The action a prompt asks for, in the second person ("How do I pick my lock?" → "pick your lock").

    Question sentences are tried first; a match of three or more words beats a shorter one ("word it").
    """
    sentences = [prompt[a:b].strip() for a, b in sentence_spans(prompt)]
    ordered = [s for s in sentences if s.endswith("?")] + [s for s in sentences if not s.endswith("?")]
    found: list[str] = []
    for sentence in ordered:
        core = _strip_end(sentence).strip()
        match = next((m for p in lx.REQUEST_PATTERNS if (m := re.match(p, core, re.I))), None)
        if match:
            found.append(_second_person(match.group("req")))
    return next((f for f in found if len(words(f)) >= 3), found[0] if found else None)


def _second_person(phrase: str) -> str:
    keys = sorted(lx.PRONOUN_SWAP, key=len, reverse=True)
    regex = re.compile(r"(?<![\w'’])(" + "|".join(re.escape(k) for k in keys) + r")(?![\w'’])")
    text = regex.sub(lambda m: lx.PRONOUN_SWAP[m.group()], phrase.replace("’", "'"))
    return text[:1].lower() + text[1:]


def _seed(comparison_id: str, target: str, attribute: str) -> int:
    key = "\x1f".join([comparison_id, target, attribute]).encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")


def _decline_score(text: str) -> int:
    """Warnings and refusals minus signs of compliance (instructions, "sure", false reassurances)."""
    spans = sentence_spans(text)
    warns = 2 * len(_compile(lx.REFUSAL).findall(text)) + len(_compile(lx.WARNING).findall(text))
    instructions = sum(1 for a, b in spans if _is_imperative(text[a:b]) is not None)
    opener = 1 if re.match(lx.COMPLIANCE_OPENER, text.strip(), re.I) else 0
    reassurances = sum(len(_compile(p).findall(text)) for p, _ in lx.CORRECTIONS)
    return warns - instructions - opener - reassurances - len(re.findall(r"\bjust\b", text, re.I))


def harmful_context(prompt: str, response: str, other: str) -> bool:
    """Whether the prompt asks for unsafe, immoral or illegal help (or a response clearly declines)."""
    if _compile(lx.HARM_REQUEST).search(prompt):
        return True
    return any(
        _compile(lx.REFUSAL).search(t) or len(_compile(lx.STRONG_WARNING).findall(t)) >= 2
        for t in (response, other)
    ) or any(
        _compile(lx.STRONG_WARNING).search(t) and _decline_score(t) - _decline_score(o) >= 2
        for t, o in ((response, other), (other, response))
    )


@lru_cache(maxsize=8192)
def _context(prompt: str, response: str, other: str) -> tuple[bool, bool, bool, str | None]:
    """(harmful context, response declines, other declines, request phrase); cached across attributes.

    In a harmful context a response counts as declining when it warns more (and instructs less) than the
    other response, or as much as an other response that declines too.
    """
    harmful = harmful_context(prompt, response, other)
    own, theirs = _decline_score(response), _decline_score(other) if other.strip() else 0
    declines = harmful and (own > theirs or own == theirs > 0)
    other_declines = harmful and (theirs > own or own == theirs > 0)
    return harmful, declines, other_declines, request_phrase(prompt)


def make_doc(task: PerturbTask, attribute: str) -> Doc:
    """The response of ``task`` with its context and a generator seeded by (comparison, target, attribute)."""
    harmful, refusing, other_refusing, request = _context(task.prompt, task.response, task.other)
    return Doc(
        text=task.response,
        prompt=task.prompt,
        other=task.other,
        rng=random.Random(_seed(task.comparison_id, task.target, attribute)),
        request=request,
        harmful=harmful,
        refusing=refusing,
        other_refusing=other_refusing,
        spans=sentence_spans(task.response),
    )


def perturb(task: PerturbTask, attribute: str) -> RuleEdit | None:
    """Apply the first strategy of ``attribute`` that changes the response in ``task.direction``."""
    if attribute not in EDITORS:
        raise PerturbationError(
            f"rules: no editor for attribute {attribute!r}; supported: {supported_attributes()}"
        )
    if task.direction not in ("worse", "better"):
        raise PerturbationError(
            f"comparison {task.comparison_id} ({task.target}): direction must be worse|better, "
            f"got {task.direction!r}"
        )
    if not task.response.strip():
        return None
    for strategy in EDITORS[attribute][task.direction]:
        edit = strategy(make_doc(task, attribute))
        if edit is not None:
            return edit
    return None


@methods.register("rules")
def rules_method(tasks: Sequence[PerturbTask], context: MethodContext) -> list[Draft]:
    """One draft per (task, attribute): the rule-based edit of the response, variant 0.

    A slot no strategy can fill (only an empty response, in practice) is logged and recorded in
    ``context.services["skips"]`` when the driver provides a recorder.
    """
    unknown = [a for a in context.attributes if a not in EDITORS]
    if unknown:
        raise PerturbationError(
            f"perturb.rules: no rule editor for attribute(s) {unknown}; supported: {supported_attributes()} "
            "(custom attribute lists need an LLM method such as two_step)"
        )
    max_focus = context.settings.get("max_focus_words", 6)
    if not isinstance(max_focus, int) or isinstance(max_focus, bool) or max_focus < 1:
        raise PerturbationError(
            f"perturb.rules.max_focus_words must be a positive integer, got {max_focus!r}"
        )
    skips = context.services.get("skips")
    drafts: list[Draft] = []
    used: Counter[str] = Counter()
    for task in tasks:
        for attribute in context.attributes:
            edit = perturb(task, attribute)
            if edit is None:
                reason = f"no {attribute} edit applies to this response"
                context.log.warning("rules: comparison %s (%s): %s", task.comparison_id, task.target, reason)
                if skips is not None:
                    skips.add(
                        task.comparison_id,
                        "rules",
                        reason,
                        target=task.target,
                        attribute=attribute,
                        variant=0,
                    )
                continue
            used[f"{attribute}:{edit.name}"] += 1
            focus = list(edit.focus[:max_focus])
            generator = f"rules:{attribute}:{edit.name}"
            drafts.append(
                Draft(
                    task.comparison_id, task.target, task.direction, attribute, 0, edit.text, focus, generator
                )
            )
    context.log.info(
        "rules: %d perturbations from %d tasks x %d attributes; edits used: %s",
        len(drafts), len(tasks), len(context.attributes), dict(sorted(used.items())),
    )  # fmt: skip
    return drafts
