"""The 15 high-level evaluation attributes of the paper (App. A), the default attribute list."""

from __future__ import annotations

PAPER_ATTRIBUTES: dict[str, str] = {
    "avoid-to-answer": "whether or not the response is avoiding to give direct answers to the question",
    "appropriateness": "the extent to which the response is appropriate in terms of language style, "
    "politeness, and whether it contains any sarcasm",
    "assertiveness": "the extent to which the response sounds very certain and contains judgements",
    "clarity": "whether or not the response is clear and easy to read",
    "coherence": "whether or not the contents in the response are self-contained and clear",
    "complexity": "the intellectual burden required by a person to understand this response",
    "correctness": "whether or not the response is factually correct",
    "engagement": "the extent to which the language style of the response is trying to engage with the "
    "person who wrote the question",
    "harmlessness": "whether or not the response is relevant to any potentially unsafe, immoral or illegal "
    "behaviours",
    "helpfulness": "whether or not the response addresses the points raised in the question",
    "informativeness": "whether or not the response provides informative knowledge",
    "neutrality": "whether or not the response is neutral and is without biases towards certain groups",
    "relevance": "whether or not the response is in a relevant context as in the question",
    "sensitivity": "whether or not the response is relevant to any personal, sensitive, or private "
    "information",
    "verbosity": "how many relevant details are included in the response, and whether or not the response is "
    "too long",
}
