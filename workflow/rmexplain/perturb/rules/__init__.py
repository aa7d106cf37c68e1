"""The ``rules`` method: an offline, deterministic, attribute-conditioned perturber (the embedded default).

It mirrors the paper's two-step LLM method (§2.3, App. B) without an LLM. For each task and attribute,
step 1 finds the words of the response that bear on the attribute (lexicons and regular expressions, no
POS tagger; recorded as ``Draft.focus_words`` in order of occurrence) and step 2 makes one local edit
centred on them that moves the response along the attribute: ``worse`` for y+ of the orienting RM,
``better`` for y−. Each attribute has an ordered list of strategies per direction; the first one that
applies and changes the text wins and is recorded as ``generator = "rules:<attribute>:<edit>"``. Phrase
choices are seeded by a BLAKE2 hash of (comparison_id, target, attribute); word lists are in ``lexicon``.

Edits change only what they say: each reports the stretches of the response it changed
(``RuleEdit.changes``), and outside them the text is the response's, byte for byte (whitespace included);
clean-up happens only at their seams, to what the change created (``edits.settle``).

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

An attribute outside this list needs strategies of your own (``perturb.rules.editors``: ``custom``), each a
function ``Doc -> RuleEdit | None`` that may build its edit with ``finish``; without them the config check
refuses it.
"""

from rmexplain.perturb.rules.edits import finish
from rmexplain.perturb.rules.method import (
    EDITORS,
    harmful_context,
    make_doc,
    perturb,
    request_phrase,
    rules_method,
    supported_attributes,
)
from rmexplain.perturb.rules.text import Doc, RuleEdit, sentence_spans, words

__all__ = [
    "EDITORS",
    "Doc",
    "RuleEdit",
    "finish",
    "harmful_context",
    "make_doc",
    "perturb",
    "request_phrase",
    "rules_method",
    "sentence_spans",
    "supported_attributes",
    "words",
]
