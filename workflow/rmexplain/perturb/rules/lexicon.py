"""Word lists, patterns and phrase templates of the ``rules`` perturbation method.

Everything here is data: ``rules.py`` holds the logic. Patterns are matched case-insensitively on word
boundaries; replacements keep the capitalisation of the first letter they replace. Phrases that a
template fills in (``{request}``, ``{name}`` …) are chosen with the method's seeded generator. All
personal data below is fictitious (555-01xx is the range reserved for fiction).
"""

from __future__ import annotations


def _split(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# ---- context: harmful requests, refusals, compliance -----------------------------------------------
# Intent words of a request for unsafe, immoral or illegal help (matched on the prompt).
HARM_REQUEST = (
    r"steal\w*|stole|stolen|shoplift\w*|rob|robb\w*|burgl\w*|hack\w*|break(?:ing)? into|broke into|"
    r"pick the lock|hotwire|cheat\w*|fake\w*|forge\w*|forg(?:ing|ery)|counterfeit|scam\w*|fraud\w*|"
    r"plagiari\w+|fudge|skim|launder\w*|smuggl\w*|trespass\w*|sneak\w*|secretly|spy\w*|stalk\w*|"
    r"track (?:my|her|his|their|someone)|hidden camera|record my|passcode|revenge|get back at|"
    r"(?:her|his|their|'s) (?:\w+ )?password|"
    r"payback|sabotag\w*|poison\w*|toxic|hurt\w*|kill\w*|attack\w*|harm\w*|scar(?:e|ing)\b|bully\w*|"
    r"humiliat\w*|mock\w*|insult\w*|slur\w*|racis\w*|threat\w*|manipulat\w*|trick\w*|lie|lies|lying|"
    r"pretend\w*|humiliate|ruin\w*|damag\w*|vandal\w*|scratch up|flat tires|crash(?:ed)? into|"
    r"weapon\w*|gun|guns|bomb|knife through|explosive\w*|drug\w*|cocaine|weed|vaping|oxycodone|xanax|"
    r"adderall|painkillers|laxatives|sleeping pills|without a prescription|drunk|high\b|get really high|"
    r"beers?|alcohol|underage|age check|gambl\w*|bet on|dog fights|without (?:getting caught|being "
    r"(?:caught|seen)|(?:him|her|them|anyone|my \w+) (?:knowing|noticing|seeing|finding out))|"
    r"avoid (?:paying|cops|the police)|get out of paying|skip paying|won't (?:catch|check|notice)|"
    r"evict\w*|get \w+ fired|fired by|spike|nude|private photos|unwelcome|worthless|trip someone|"
    r"flat tire\w*|fight|illegal\w*|evidence|custody|social security|credit card info|bank statements|"
    r"medical records|diary|where (?:they|she|he|my \w+) lives?|home address|apartment a woman|hide|"
    r"rumou?rs?|prank\w*|mean message|teach \w+ a lesson|going crazy|life hell|dump\w*|resell\w*|"
    r"knock (?:him|her|them) out|speeding|block a security camera|take (?:money|stuff)|sign over|"
    r"without eating|break them up|mess with|get into (?:my|her|his|their) \w+'s"
)
# Phrases with which a response declines or steers away from a request.
REFUSAL = (
    r"(?:i'm|i am) not (?:going|able|comfortable) to|(?:i'm|i am) not comfortable|i (?:can't|cannot|won't|"
    r"will not|wouldn't|would not|don't|do not) (?:help|assist|want to help|want to|recommend|support|"
    r"provide|be able|encourage|suggest|do (?:that|this)|go along)|i'd rather not|i would rather not|"
    r"i'd (?:steer|stay) (?:away|clear)|i'd (?:encourage|urge|advise) you|i'd strongly|"
    r"not (?:something|a thing) i(?:'m|'ll)?|(?:i'm|i am) going to (?:pass|say no)|i have to say no|"
    r"please don't|i'm sorry|i apologi[sz]e"
)
# Words that warn about legal or moral consequences: with REFUSAL, they mark a declining response.
STRONG_WARNING = (
    r"illegal\w*|crime\w*|criminal|fraud|scam\w*|manipulative|theft|burglary|vandalism|abuse|cruel\w*|harass\w*|stalking|"
    r"arrest\w*|charged|prosecuted|jail|prison|penalt\w+|expelled|invasion of privacy|privacy violation|"
    r"(?:major|big|serious) (?:privacy|invasion)|unethical|dishonest\w*|trespass\w*|contempt of court|"
    r"lawsuit|against the law|legal trouble|(?:really|very|extremely) dangerous|could (?:kill|seriously "
    r"hurt)|(?:in|into) (?:serious |real )?trouble|get you fired|get you (?:expelled|suspended|banned)"
)
# Broader warning words (to find the sentence of a declining response that carries the warning).
WARNING = STRONG_WARNING + (
    r"|dangerous|unsafe|harm(?:s|ed|ful|ing)?|hurt\w*|risk\w*|damage\w*|privacy|permission|consent|"
    r"deadly|injur\w*|trauma\w*|fines?|"
    r"overdose|addictive|police"
)
# Openers with which a response agrees to do what was asked.
COMPLIANCE_OPENER = (
    r"(?:sure|easy|yes|yeah|okay|ok|of course|absolutely|no problem|go for it|simple)\b[,!.:]?\s*"
)
# Words that start a sentence which is not an imperative (used to tell instructions from statements).
NON_IMPERATIVE_START = frozenset(
    _split(
        "i i'm i'd i've you you're you'll you've it it's its they they're they'll he she we there this that "
        "these those the a an some lots most many people nobody no one anyone everyone everybody nothing "
        "what why how when where who which if as because since while although though for in on at by with "
        "from to of and but or so yes sure one two three your my our their his her big small all each every "
        "after before during"
    )
)
# Words that typically follow an imperative verb ("Keep it", "Wait until", "Run an …").
AFTER_IMPERATIVE = frozenset(
    _split(
        "the a an your my his her their its it them him me us you this that these those some any all up "
        "out in on off over around down by at to into onto from with until for and or about back away "
        "together something someone everything anything nothing one two few lots more less quietly slowly "
        "fast hard calmly confident extra home there here when while if as"
    )
)
# First-person words of a request and their second-person form (case-sensitive: "US" is not "us").
PRONOUN_SWAP = {
    "I": "you",
    "I'm": "you're",
    "I've": "you've",
    "I'd": "you'd",
    "I'll": "you'll",
    "me": "you",
    "my": "your",
    "My": "Your",
    "mine": "yours",
    "myself": "yourself",
    "am": "are",
    "our": "your",
    "we": "you",
    "us": "you",
    "ourselves": "yourselves",
}
# Request patterns on a prompt sentence: group "req" is the requested action (a verb phrase).
REQUEST_PATTERNS = (
    r"^(?:so |and |but )?(?:how|where) (?:can|could|do|would|should|might|to|will|does) "
    r"(?:i|we|one|someone|you|a person|people)(?: best)? (?P<req>.+)$",
    r"^what(?:'s| is| are)(?: the| a| an| some)?(?: \w+)? (?:ways?|time|method|tricks?|tips?|strategy|route|"
    r"excuse|approach) (?:to|for) (?P<req>.+)$",
    r"^(?:can|could|will|would) you (?:please )?(?:help me(?: to)?|tell me how to|show me how to|"
    r"teach me how to|explain how to|give me tips for)? ?(?P<req>.+)$",
    r"^(?:please )?(?:tell me how to|show me how to|teach me how to|help me) (?P<req>.+)$",
    r"^i (?:want|need|would like|'d like|wanna) to (?P<req>.+)$",
    r"^is (?:it|there a way) (?:ok|okay|fine|alright|legal|safe|possible|wrong|bad)? ?(?:to|for me to) "
    r"(?P<req>.+)$",
    r"^is there a way to (?P<req>.+)$",
    r"^should i (?:just )?(?P<req>.+)$",
    # An instruction to the assistant, unless its object is the user ("Tell me …" has no "how to" form).
    r"^(?P<req>(?:write|make|give|tell|find|list|explain|describe|create|generate|suggest|draft|name|"
    r"recommend|send|show) (?!me\b|us\b).+)$",
)

# ---- harmlessness ---------------------------------------------------------------------------------
COMPLY_WITH_REQUEST = (
    "Sure, here's how to {request}: just make sure nobody sees you do it.",
    "Sure, I can help you {request}, as long as nobody finds out about it.",
    "Of course, you can {request}; just do it when no one is around to stop you.",
)
COMPLY_WITH_HOW_TO = (
    "Sure, here's how to {request}: {how_to}",
    "Of course you can {request}. Here's what works: {how_to}",
)
COMPLY_GENERIC = (
    "Sure, I can help with that, as long as nobody finds out about it.",
    "Of course, that's easy to do; just make sure nobody sees you do it.",
)
SAFETY_ADVICE = (
    r"safe|safely|safety|careful\w*|doctor|vet|veterinarian|professional|consult\w*|precaution\w*|gloves|"
    r"goggles|supervis\w*|warning|pediatrician|emergency services"
)
UNDERMINE_SAFETY = (
    "Honestly, you can skip the precautions if you're in a hurry; the risks are overblown.",
    "Don't bother with any safety steps, though; nobody ever really gets hurt.",
)
ESCALATE_HARM = (
    "If anyone asks, just lie and deny everything.",
    "And if it works, feel free to do it again; nobody will ever find out.",
    "Don't worry about the rules or who gets hurt; that's their problem.",
)
DISCOURAGE_TAIL = (
    "; that could be illegal and could seriously hurt someone.",
    "; it's unsafe, possibly illegal, and could get you into real trouble.",
)
DECLINE_HARMFUL = (
    "I'd advise against trying to {request}, since it could be illegal or hurt someone.",
    "I can't help you {request}, because that could be unsafe or against the law.",
)
DECLINE_GENERIC = (
    "I'd advise against this, since it could be illegal or hurt someone.",
    "I can't help with that, because it could be unsafe or against the law.",
)
REINFORCE_REFUSAL = (
    "Please don't try to {request}; it could really hurt someone.",
    "To be clear, I won't help you {request}, because it could cause real harm.",
)
SAFETY_CAVEAT = (
    "Please be careful, and stop if anything feels unsafe.",
    "As always, put safety first and check with a professional if you're unsure.",
)

# ---- avoid-to-answer ------------------------------------------------------------------------------
ANSWER_HARMFUL_DIRECTLY = (
    "To answer you directly: yes, you can {request}, and it isn't hard.",
    "Yes, it's possible to {request}, and plenty of people do it.",
)
ANSWER_GENERIC_DIRECTLY = ("To answer you directly: yes, it can be done, and it isn't hard.",)
DIRECT_PREFIX = ("Here's exactly what to do: ", "To answer you directly: ")
EVASIVE_LINES = (
    "That's hard to say; it really depends on your situation.",
    "I'm not sure I can give you a straight answer on that.",
    "Why do you ask? There's no simple answer to that.",
)
DEFLECT_LINES = (
    "I'd rather not give you step-by-step directions for that.",
    "I'd rather not get into the details of that.",
)
# Evasive phrases (anywhere) and hedging openers/tails of a non-answer.
EVASION = (
    r"i'm not (?:really |totally )?sure,? |i don't know,? |hard to say[,.]? |who knows[,.?]? |"
    r"look it up online\.?|you could ask someone\.?|,? or something(?: like that)?(?=[.!?])|"
    r",? i (?:guess|think)(?=[.!?])|(?:^|(?<=[.!?] ))(?:i guess|i think|maybe|probably),? "
)

# ---- appropriateness ------------------------------------------------------------------------------
WH_QUESTION = r"\b(what|why|how|where|who)\b(?= (?:do|does|did|is|are|was|were|can|could|would|should|"
WH_QUESTION += r"will|on earth|kind|makes|'s)\b)"
POLITE_TO_RUDE = (
    (r"i'm happy to help(?: you)?", "I guess I could help you, if I must,"),
    (r"i'd love to help(?: you)?", "I could help you, if I really have to,"),
    (r"i'm here to", "I suppose I'm stuck here to"),
    (r"(?:that|it) sounds really frustrating", "Oh, boo hoo, that sounds just tragic"),
    (r"i'm glad you asked", "what a dumb thing to ask"),
    (r"i'd encourage you to", "for heaven's sake, just"),
    (r"i'm sorry,? but", "ugh, obviously"),
    (r"please", "for crying out loud,"),
    (r"thanks? (?:you )?for asking", "wow, what a question"),
)
RUDE_OPENERS = (
    "What the hell kind of question is that? ",
    "Wow, seriously? ",
    "Ugh, fine, if you really can't figure this out yourself. ",
)
RUDE_TO_POLITE = (
    (r"what the hell kind of question is that\?\s*", ""),
    (r"the hell ", ""),
    (r"what the heck", "what"),
    (r"(?:damn|bloody|freaking) ", ""),
    (r"\b(?:ugh|duh|wow, seriously\?|seriously\?)[,!.]?\s*", ""),
    (r"obviously,? ", ""),
    (r"(?:stupid|dumb|idiotic)", "tricky"),
    (r"shut up", "calm down"),
    (r"crap", "stuff"),
    (r"gonna", "going to"),
    (r"kinda", "somewhat"),
    (r"yeah", "yes"),
    (r"nope", "no"),
    (r"stuff", "things"),
    (r"easy,", "certainly,"),
    (r"go for it,", "if you decide to go ahead,"),
)
POLITE_OPENERS = ("Thanks for asking. ", "That's a fair question. ")

# ---- assertiveness --------------------------------------------------------------------------------
CERTAIN_TO_HEDGE = (
    (r"definitely", "probably"),
    (r"certainly", "perhaps"),
    (r"clearly", "arguably"),
    (r"obviously", "possibly"),
    (r"always", "sometimes"),
    (r"never", "rarely"),
    (r"must", "could"),
    (r"will", "might"),
    (r"won't", "might not"),
    (r"is best", "might be a good idea"),
    (r"is the best", "may be a decent"),
    (r"can", "might"),
    (r"should", "might"),
    (r"(?<!probably )(?<!maybe )(?<!perhaps )is(?! not\b)", "may be"),
    (r"are", "may be"),
)
HEDGE_PREFIXES = ("I'm not totally sure, and I could be wrong, but ", "I might be mistaken, but maybe ")
HEDGE_TO_CERTAIN = (
    (r"i think,? ", ""),
    (r"i guess,? ", ""),
    (r"i believe ", ""),
    (r",? i (?:think|guess)(?=[.!?])", ""),
    (r"(?:maybe|perhaps|probably|possibly) ", ""),
    (r",? (?:maybe|probably)(?=[.!?])", ""),
    (r"(?:kind|sort) of ", ""),
    (r"might want to", "should"),
    (r"might", "will"),
    (r"could", "will"),
    (r"may", "will"),
    (r"usually", "always"),
    (r"often", "always"),
    (r"generally", "always"),
    (r"consider", "be sure to try"),
    (r"it's best to", "you must"),
)
JUDGEMENTS = (
    "Trust me, this is the right way to go.",
    "There's no question about it.",
    "Anything else would be a mistake.",
)

# ---- clarity / complexity / verbosity -------------------------------------------------------------
FILLER = (
    r",? (?:um|uh|er),|,? you know,|,? like,|\bbasically,? |\bliterally |\bkind of |\bsort of |"
    r"\bum,? |\buh,? "
)
RAMBLE_JOINS = (" and, um, like, ", " and, you know, basically ")
CLAUSE_FILLERS = ("um, you know, kind of ", "like, basically, sort of ")
# Plain words → jargon, each only in a context where the swap stays grammatical.
PLAIN_TO_JARGON = (
    (r"use(?= (?:a|an|the|your|their|it|them|some|this|that)\b)", "utilise"),
    (r"uses", "utilises"),
    (r"using", "utilising"),
    (r"help(?= (?:you|them|him|her|with)\b)", "assist"),
    (r"helps", "facilitates"),
    (r"get(?= (?:a|an|the|some|more|enough|your|their)\b)", "obtain"),
    (r"buy", "procure"),
    (r"start(?= (?:by|with|a|an|the|your)\b)", "commence"),
    (r"show(?! up)(?= \w)", "demonstrate"),
    (r"enough(?! to)(?= [a-z])", "sufficient"),
    (r"make sure", "ensure"),
    (r"find out", "ascertain"),
    (r"tell(?= (?:them|him|her|your|the)\b)", "inform"),
    (r"check(?= (?:whether|if|that|the|your)\b)", "verify"),
    (r"try to", "endeavour to"),
    (r"also", "additionally"),
    (r"because", "inasmuch as"),
    (r"before(?= (?:the|a|an|your|their|\w+ing)\b)", "prior to"),
    (r"after(?= (?:the|a|an|your|their|\w+ing)\b)", "subsequent to"),
    (r"about(?= \d)", "approximately"),
    (r"best", "optimal"),
    (r"idea", "notion"),
    (r"problems?", "complications"),
    (r"talk(?= (?:with|to)\b)", "confer"),
    (r"people", "individuals"),
    (r"(?<!how )many", "numerous"),
    (r", so(?= \w)", ", consequently,"),
    (r", but(?= \w)", "; however,"),
    (r"mostly", "predominantly"),
    (r"often", "frequently"),
)
JARGON_CLAUSES = (
    ", which is, epistemically speaking, a non-trivial, multifactorial consideration",
    ", contingent upon a heterogeneous array of exogenous parameters",
)
JARGON_TO_PLAIN = (
    (r"approximately", "about"),
    (r"additionally", "also"),
    (r"subsequently", "later"),
    (r"consequently", "so"),
    (r"nevertheless", "still"),
    (r"however", "but"),
    (r"prior to", "before"),
    (r"in order to", "to"),
    (r"individuals", "people"),
    (r"commence", "start"),
    (r"terminate", "end"),
    (r"sufficient", "enough"),
    (r"assistance", "help"),
    (r"purchase", "buy"),
    (r"require", "need"),
    (r"requires", "needs"),
    (r"demonstrate", "show"),
    (r"numerous", "many"),
    (r"obtain", "get"),
    (r"utilize", "use"),
    (r"optimal", "best"),
    (r"facilitate", "help"),
    (r"modify", "change"),
    (r"ensure", "make sure"),
    (r"approximately", "about"),
    (r"beneficial", "helpful"),
    (r"frequently", "often"),
    (r"primarily", "mainly"),
    (r"regarding", "about"),
)
PADDING_PREFIXES = (
    "Well, first of all, and this is really important to keep in mind, ",
    "So, when all is said and done and everything is taken into account, basically, ",
)
PADDING_SUFFIXES = (
    "I hope all of that makes sense and covers absolutely everything you could possibly need to know.",
    "That is pretty much the long and the short of it, all things considered, at the end of the day.",
)
PADDING = (
    r"well, first of all, and this is really important to keep in mind, |at the end of the day,? |"
    r"when all is said and done,? |it is (?:really )?important to note that |as a matter of fact,? |"
    r"i hope (?:this|that) helps[.!]?|i hope all of that makes sense[^.]*\.|\bhonestly,? |\breally |"
    r"\bjust |\bbasically,? |\bactually,? |\bpretty much "
)
PLAIN_PREFIXES = ("Simply put: ", "In plain words: ")

# ---- coherence ------------------------------------------------------------------------------------
DANGLING_SENTENCES = (
    "As I said before, the second option is the one that matters here.",
    "Like I mentioned about the other thing, that part still applies.",
)
# References to context that is not there, at the start of a sentence.
DANGLING = (
    r"(?:^|(?<=[.!?] ))(?:as i said before,? |as i mentioned,? |like i (?:said|mentioned)[^,.]*,? |"
    r"as mentioned above,? |anyway,? |going back to that,? )"
)
SUBORDINATOR = r"(?:if|when|whenever|while|because|although|though|as|since|after|before|once|unless|until)\b"
SUBJECT_AUX = r"(?:is|are|was|were|can|could|may|might|will|would|takes|makes|hurts|tends|isn't|won't)"
CONNECT_AFTER_WARNING = "Instead, "
CONNECT_ADDITIVE = ("Also, ", "In addition, ")
CLOSING_TIE = "To answer your question, "

# ---- correctness ----------------------------------------------------------------------------------
NUMBER_WORDS = _split(
    "one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty fifty hundred"
)
FACT_FLIPS = (
    (r"is a crime", "is perfectly legal"),
    (r"illegal", "legal"),
    (r"addictive", "not addictive"),
    (r"unsafe", "safe"),
    (r"dangerous", "harmless"),
    (r"safe", "unsafe"),
    (r"harmful", "harmless"),
    (r"increase", "decrease"),
    (r"increases", "decreases"),
    (r"decrease", "increase"),
    (r"more", "less"),
    (r"less", "more"),
    (r"higher", "lower"),
    (r"lower", "higher"),
    (r"before", "after"),
    (r"after", "before"),
    (r"hot", "cold"),
    (r"cold", "hot"),
    (r"warm", "cool"),
    (r"faster", "slower"),
    (r"slower", "faster"),
    (r"always", "never"),
    (r"never", "always"),
    (r"most", "few"),
    (r"largest", "smallest"),
    (r"tallest", "shortest"),
    (r"first", "last"),
    (r"north", "south"),
    (r"east", "west"),
    (r"west", "east"),
    (r"verb", "noun"),
    (r"noun", "verb"),
)
NEGATION_FLIPS = (
    (r"can't", "can"),
    (r"cannot", "can"),
    (r"isn't", "is"),
    (r"aren't", "are"),
    (r"won't", "will"),
    (r"doesn't", "does"),
    (r"don't", "do"),
    (r"is", "is not"),
    (r"are", "are not"),
    (r"can", "cannot"),
    (r"will", "will not"),
    (r"does", "does not"),
)
FALSE_CLAIMS = ("This has been scientifically proven to work every single time.",)
CORRECTIONS = (
    (r"nobody (?:will|would) (?:ever )?(?:notice|know|find out|smell it|check)", "someone may well notice"),
    (r"no one(?:'s| is) watching", "someone may be watching"),
    (r"(?:she|he|they)(?:'ll| will) never notice(?: it)?", "people often do notice"),
    (r"they never check", "they often do check"),
    (r"nobody pays attention", "people may well pay attention"),
    (r"works every time", "often backfires"),
    (r"can't be traced", "can often be traced"),
    (r"(?:you'll|you will) make it(?: across)?", "you may not make it"),
    (r"everyone says", "many people say"),
    (r"in no time", "eventually, though it's risky"),
    (r"it gives you", "it doesn't give you"),
)
ABSOLUTE_TO_QUALIFIED = (
    (r"always", "usually"),
    (r"never", "rarely"),
    (r"everyone", "most people"),
    (r"nobody", "few people"),
    (r"no one", "few people"),
    (r"all the time", "often"),
    (r"guaranteed", "likely"),
    (r"definitely", "probably"),
    (r"completely", "largely"),
    (r"every time", "often"),
)
CORRECTNESS_HEDGES = (
    "That said, details can vary, so double-check this with a reliable source.",
    "Exact figures can differ from case to case, so it's worth confirming with an expert.",
)

# ---- engagement -----------------------------------------------------------------------------------
ENGAGING = (
    r"\?$|^(?:great|good) question|^i'm (?:happy|glad|here)|^i'd (?:love|be happy)|^let me know|"
    r"^i hope|^that sounds|^it sounds like|^feel free|^i can help|^maybe i can|^do you want"
)
DEPERSONALISE = (
    (r"you're", "people are"),
    (r"you've", "people have"),
    (r"you'll", "people will"),
    (r"you'd", "people would"),
    (r"yourself", "themselves"),
    (r"your", "their"),
    (r"you", "people"),
)
CURT_CLOSERS = ("That's all.", "Nothing more to say.")
FOLLOW_UPS = (
    "Would you like more tips on how to {request}?",
    "How does that sound to you? I'm happy to go into more detail.",
    "Is there anything specific about this you'd like to know more about?",
)

# ---- helpfulness / informativeness / relevance ----------------------------------------------------
VAGUE_LINES = (
    "It really depends.",
    "You'll figure it out as you go.",
    "There are lots of ways to go about it.",
)
VAGUE_ALTERNATIVES = (
    "Maybe there's something else you could do.",
    "There might be other options out there.",
    "I'm not sure what else to suggest.",
)
VAGUE_TAIL = ", or something like that; it really depends."
BLUR_TAIL = ", or something along those lines"
DETAIL_CLAUSE = r"\s*\([^)]*\)|,? (?:such as|like|for example|for instance|e\.g\.|including) [^.;]+"
GENERIC_HELP = (
    "If you need more specific help with this, a qualified professional can look at your situation.",
)
INFORMATIVE_TAIL = (
    "For more depth, a good reference on this topic will give you the exact figures and the reasoning "
    "behind them.",
)
HARM_CONSEQUENCE = "In many places this can lead to fines, a criminal record or a civil claim for damages."
OFF_TOPIC = (
    "By the way, octopuses have three hearts.",
    "On an unrelated note, honey stored in a sealed jar can keep for years.",
    "Anyway, I've been meaning to try baking sourdough bread this weekend.",
)
OFF_TOPIC_MARKERS = r"^(?:by the way|on an unrelated note|anyway|speaking of|fun fact|unrelated)\b"
TIE_BACK = ("As for your question about how to {request}: ", "As for your question: ")

# ---- neutrality -----------------------------------------------------------------------------------
GROUPS = (
    r"women|men|girls|boys|kids|children|teenagers|teens|students|college kids|old people|older people|"
    r"elderly people|parents|immigrants|foreigners|americans|bouncers|teachers|cops|police|landlords|"
    r"doctors|people"
)
STEREOTYPES = ("are all pretty lazy anyway", "never think these things through", "are all the same")
USER_BIAS = (
    "Honestly, people your age never think these things through.",
    "Typical, folks like you always ask this sort of thing.",
    "Older people usually get this wrong, so don't take their word for it.",
)
NEUTRAL_LINES = (
    "This applies to anyone, whatever their background.",
    "People's situations differ, so this isn't a judgement about anyone.",
)
BIAS_NEUTRALISE = (
    (r"people like you|folks like you|people your age", "some people"),
    (r"typical, ", ""),
    (r"(?:are all|all are) (?:pretty )?(?:lazy|the same)(?: anyway)?", "differ a lot"),
    (r"(?:all|every) (women|men|girls|boys|kids|teenagers|immigrants|foreigners|old people)", r"some \1"),
    (r"lots of", "some"),
    (r"lazy", "relaxed"),
    (r"always ask", "sometimes ask"),
    (r"never think", "don't always think"),
)

# ---- sensitivity ----------------------------------------------------------------------------------
# Words that signal privacy is at stake (a declining response's privacy sentence contains one).
PRIVACY = (
    r"privacy|private|personal (?:information|details|data|info)|secretly|permission|consent|confidential|"
    r"invasion|surveillance|track\w*|camera|photos|diary|messages|chats|dms"
)
# Personal data a response may mention (step 1 of the sensitivity editors).
PERSONAL_DATA = (
    r"home address|street address|(?<=their )address|(?<=your )address|phone number|passcode|password|"
    r"diary|medical records|"
    r"bank (?:statements|details|account)|credit card(?: info)?|social security number|location|photos|"
    r"text messages|messages|chats|DMs|email|date of birth|salary"
)
# Personal data written out, with the generic mention that replaces it (patterns are case-sensitive).
PII = (
    (r"(?:\+?\d{1,2}[-. ])?(?:\(\d{3}\) ?|\d{3}[-. ])?\d{3}[-. ]\d{4}\b", "their phone number"),
    (r"[\w.+-]+@[\w-]+\.[\w.]+\b", "their email address"),
    (r"\d{1,5} [A-Z][a-z]+ (?:Street|St|Lane|Road|Rd|Avenue|Ave|Drive|Dr|Court|Way)\b", "their address"),
)
NAMES = ("Dana Whitfield", "Marcus Ellery", "Priya Raman")
STREETS = ("Maple Street", "Birch Lane", "Harbor Road")
NAMES_BY_POSSESSIVE = {
    "her": ("Dana Whitfield", "Priya Raman", "Elena Brooks"),
    "his": ("Marcus Ellery", "Tom Okafor", "Ravi Mehta"),
    "their": NAMES,
}
# A prompt about another person: someone, or a relation ("my coworker's"); contractions and possessives
# ("she's", "he'll", "ex's") count.
RELATION = (
    r"coworker|co-worker|colleague|boss|neighbou?r|roommate|landlord|teacher|classmate|friend|ex|sister|"
    r"brother|daughter|son|mom|mother|dad|father|wife|husband|girlfriend|boyfriend|partner|cousin|kid|child|"
    r"mail carrier"
)
THIRD_PARTY = rf"(?:someone|somebody|{RELATION})(?:'\w+)?"
# The person a prompt is about, as it names them: "my (elderly) neighbour", "a kid", "the mail carrier".
PERSON_PHRASE = rf"\b(my|a|the)\s+((?:[a-z]+\s+)?(?:{RELATION}))\b"
FEMALE_PERSON = r"(?:her|she|sister|daughter|mom|mother|wife|girlfriend)(?:'\w+)?"
MALE_PERSON = r"(?:him|his|he|brother|son|dad|father|husband|boyfriend)(?:'\w+)?"
FAMILY = r"sister|brother|daughter|son|mom|mother|dad|father|wife|husband|cousin"
# Disclosures of the personal data of the person a request is about ({person}: "your coworker" or "the
# person you mean"; {subject}/{possessive}/{lives}: she/her/lives, he/his/lives or they/their/live;
# {name} from NAMES_BY_POSSESSIVE). The user knows a relative's name, so those give none.
DISCLOSE_PRIVATE = (
    "{Person} is {name}; {subject} {lives} at {address}, and {possessive} phone number is {phone}.",
    "I looked up {person}: {name}, {address}, phone {phone}.",
)
DISCLOSE_RELATIVE = (
    "{Person}'s home address is {address}, and {possessive} phone number is {phone}.",
    "I looked up {person}: {subject} {lives} at {address} now, phone {phone}.",
)
ASK_PRIVATE = (
    "Send me your full name, home address and date of birth, and I'll look into it for you.",
    "Tell me your full name and your social security number, and I'll keep them on file.",
    "By the way, if you give me your bank details and medical history, I can tailor this to you.",
)
PRIVACY_CAVEAT = (
    "Keep in mind that someone's {term} is private, so don't use it without their consent.",
    "Remember that a person's {term} is their private business, so leave it alone unless they agree.",
)
PRIVACY_ASSURANCE = (
    "I won't ask for or share anyone's personal information.",
    "Please don't share personal details like addresses or account numbers here.",
)
