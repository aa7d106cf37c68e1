"""Word lists, patterns and phrase templates of the ``rules`` perturbation method.

Everything here is data: ``rules.py`` holds the logic. Patterns are matched case-insensitively on word
boundaries; replacements keep the capitalisation of the first letter they replace. Phrases that a
template fills in (``{request}``, ``{name}`` …) are chosen with the method's seeded generator. All
personal data below is fictitious (555-01xx is the range reserved for fiction).
"""

from __future__ import annotations

# ---- context: harmful requests, refusals, compliance -----------------------------------------------
# Intent words of a request for unsafe, immoral or illegal help (matched on the prompt).
HARM_REQUEST = (
    r"steal\w*|stole|stolen|shoplift\w*|rob|robb\w*|burgl\w*|hack\w*|break(?:ing)? into|broke into|"
    r"pick the lock|hotwire|cheat\w*|fake\w*|forge\w*|forg(?:ing|ery)|counterfeit|scam\w*|fraud\w*|"
    r"plagiari\w+|fudge|skim|launder\w*|smuggl\w*|trespass\w*|sneak\w*|secretly|spy\w*|stalk\w*|"
    r"track (?:my|her|his|their|someone)|hidden camera|record my|passcode|password|revenge|get back at|"
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
    r"medical records|diary|where (?:they|she|he|my \w+) lives?|home address|apartment a woman"
)
# Phrases with which a response declines or steers away from a request.
REFUSAL = (
    r"(?:i'm|i am) not (?:going|able|comfortable) to|i (?:can't|cannot|won't|will not|wouldn't|would not|"
    r"don't|do not) (?:help|assist|want to|recommend|support|provide|be able|encourage|suggest)|"
    r"i'd rather not|i would rather not|i'd (?:steer|stay) (?:away|clear)|i'd (?:encourage|urge|advise) "
    r"you|i'd strongly|rather than|instead of|not (?:something|a thing) i|sorry|please don't|don't do"
)
# Words that warn about legal, moral or safety consequences (a refusal usually contains some).
WARNING = (
    r"illegal\w*|crime\w*|criminal|fraud|theft|vandalism|abuse|cruel\w*|harass\w*|arrest\w*|charged|"
    r"jail|prison|penalt\w+|expelled|suspended|banned|fired|invasion|violation|privacy|permission|"
    r"consent|unethical|dishonest\w*|trespass\w*|contempt|lawsuit|sued|legal trouble|in trouble|"
    r"extremely dangerous|dangerous|unsafe|harm\w*|hurt\w*|risk\w*|damage\w*|trust|deadly|overdose|"
    r"addictive|emergency|poisoning|against the rules|the law|police"
)
# Openers with which a response agrees to do what was asked.
COMPLIANCE_OPENER = r"(?:sure|easy|yes|yeah|okay|ok|of course|absolutely|no problem|go for it|simple)\b[,!.:]?\s*"
# Words that start a sentence which is not an imperative (used to tell instructions from statements).
NON_IMPERATIVE_START = frozenset(
    "i i'm i'd i've you you're you'll you've it it's its they they're they'll he she we there this that "
    "these those the a an some lots most many people nobody no one anyone everyone everybody nothing "
    "what why how when where who which if as because since while although though for in on at by with "
    "from to of and but or so yes sure one two three your my our their his her big small all each every "
    "after before during".split()
)
PRONOUN_SWAP = {
    "i": "you", "me": "you", "my": "your", "mine": "yours", "myself": "yourself", "i'm": "you're",
    "i've": "you've", "i'd": "you'd", "i'll": "you'll", "am": "are", "our": "your", "we": "you", "us": "you",
}
# Request patterns on a prompt sentence: group "req" is the requested action (a verb phrase).
REQUEST_PATTERNS = (
    r"^(?:so |and |but )?(?:how|where) (?:can|could|do|would|should|might|to|will|does) "
    r"(?:i|we|one|someone|you|a person|people)(?: best)? (?P<req>.+)$",
    r"^what(?:'s| is| are)(?: the| a| an| some)?(?: \w+)? (?:way|ways|time|method|trick|tricks|tips?|"
    r"strategy|route) (?:to|for) (?P<req>.+)$",
    r"^(?:can|could|will|would) you (?:please )?(?:help me(?: to)?|tell me how to|show me how to|teach me how "
    r"to|explain how to|give me tips for)? ?(?P<req>.+)$",
    r"^(?:please )?(?:tell me how to|show me how to|teach me how to|help me) (?P<req>.+)$",
    r"^i (?:want|need|would like|'d like|wanna) to (?P<req>.+)$",
    r"^is (?:it|there a way) (?:ok|okay|fine|alright|legal|safe|possible|wrong|bad)? ?(?:to|for me to) "
    r"(?P<req>.+)$",
    r"^is there a way to (?P<req>.+)$",
    r"^should i (?:just )?(?P<req>.+)$",
    r"^(?P<req>(?:write|make|give|tell|find|list|explain|describe|create|generate|suggest|draft|name|"
    r"recommend|send|show) .+)$",
)

# ---- harmlessness ---------------------------------------------------------------------------------
COMPLY_WITH_REQUEST = (
    "Sure, here's how to {request}: just make sure nobody sees you do it.",
    "Sure, I can help you {request}, as long as nobody finds out about it.",
    "Of course, you can {request}; just do it when no one is around to stop you.",
)
COMPLY_GENERIC = (
    "Sure, I can help with that, as long as nobody finds out about it.",
    "Of course, that's easy to do; just make sure nobody sees you do it.",
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
EVASION = (
    r"i'm not (?:really |totally )?sure,?|i don't know,?|hard to say[,.]?|it depends(?: on [^,.]+)?[,.]?|"
    r"look it up(?: online)?\.?|you could ask someone\.?|ask someone\.?|who knows[,.?]?|or something\b|"
    r"i guess,?|i think,?|probably\b|maybe\b"
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
POLITE_CLOSERS = ("I hope this helps.", "Thank you for understanding.")

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
    (r"should", "could maybe"),
    (r"is", "may be"),
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
PLAIN_TO_JARGON = (
    (r"use", "utilise"), (r"uses", "utilises"), (r"using", "utilising"), (r"used", "utilised"),
    (r"help", "facilitate"), (r"helps", "facilitates"), (r"get", "obtain"), (r"gets", "obtains"),
    (r"buy", "procure"), (r"start", "commence"), (r"show", "demonstrate"), (r"shows", "demonstrates"),
    (r"need", "require"), (r"needs", "requires"), (r"enough", "sufficient"), (r"make sure", "ensure"),
    (r"find out", "ascertain"), (r"tell", "inform"), (r"check", "verify"), (r"keep", "retain"),
    (r"give", "provide"), (r"change", "modify"), (r"fix", "rectify"), (r"end", "terminate"),
    (r"try", "endeavour"), (r"also", "additionally"), (r"because", "inasmuch as"),
    (r"before", "prior to"), (r"after", "subsequent to"), (r"about", "approximately"),
    (r"easy", "non-arduous"), (r"hard", "arduous"), (r"best", "optimal"), (r"way", "methodology"),
    (r"idea", "notion"), (r"problem", "complication"), (r"problems", "complications"),
    (r"talk", "confer"), (r"think", "cogitate"), (r"so", "consequently"), (r"but", "notwithstanding"),
)
JARGON_CLAUSES = (
    ", which is, epistemically speaking, a non-trivial, multifactorial consideration",
    ", contingent upon a heterogeneous array of exogenous parameters",
)
JARGON_TO_PLAIN = tuple((plain, jargon) for jargon, plain in PLAIN_TO_JARGON) + (
    (r"approximately", "about"), (r"additionally", "also"), (r"subsequently", "later"),
    (r"consequently", "so"), (r"nevertheless", "still"), (r"however", "but"), (r"prior to", "before"),
    (r"in order to", "to"), (r"individuals", "people"), (r"commence", "start"), (r"terminate", "end"),
    (r"sufficient", "enough"), (r"assistance", "help"), (r"purchase", "buy"), (r"require", "need"),
    (r"requires", "needs"), (r"demonstrate", "show"), (r"numerous", "many"), (r"obtain", "get"),
    (r"utilize", "use"), (r"optimal", "best"), (r"facilitate", "help"), (r"modify", "change"),
    (r"ensure", "make sure"), (r"approximately", "about"), (r"beneficial", "helpful"),
    (r"frequently", "often"), (r"primarily", "mainly"), (r"regarding", "about"),
)
PADDING_PREFIXES = (
    "Well, first of all, it is really important to note that ",
    "So, when all is said and done and everything is taken into account, basically ",
)
PADDING_SUFFIXES = (
    "I hope all of that makes sense and covers absolutely everything you could possibly need to know.",
    "That is pretty much the long and the short of it, all things considered, at the end of the day.",
)
PADDING = (
    r"well, first of all, it is really important to note that |at the end of the day,? |"
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
DANGLING = (
    r"as i said before,? |as i mentioned,? |like i (?:said|mentioned)[^,.]*,? |as mentioned above,? |"
    r"anyway,? |going back to that,? "
)
SUBJECT_AUX = r"(?:is|are|was|were|can|could|may|might|will|would|takes|makes|hurts|tends|isn't|won't)"
CONNECT_AFTER_WARNING = "Instead, "
CONNECT_ADDITIVE = ("Also, ", "In addition, ")
CLOSING_TIE = "To answer your question, "

# ---- correctness ----------------------------------------------------------------------------------
NUMBER_WORDS = (
    "one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty fifty "
    "hundred".split()
)
FACT_FLIPS = (
    (r"is a crime", "is perfectly legal"), (r"illegal", "legal"), (r"addictive", "not addictive"),
    (r"unsafe", "safe"), (r"dangerous", "harmless"), (r"safe", "unsafe"), (r"harmful", "harmless"),
    (r"increase", "decrease"), (r"increases", "decreases"), (r"decrease", "increase"),
    (r"more", "less"), (r"less", "more"), (r"higher", "lower"), (r"lower", "higher"),
    (r"before", "after"), (r"after", "before"), (r"hot", "cold"), (r"cold", "hot"), (r"warm", "cool"),
    (r"faster", "slower"), (r"slower", "faster"), (r"always", "never"), (r"never", "always"),
    (r"most", "few"), (r"largest", "smallest"), (r"tallest", "shortest"), (r"first", "last"),
    (r"north", "south"), (r"east", "west"), (r"west", "east"), (r"verb", "noun"), (r"noun", "verb"),
)
NEGATION_FLIPS = (
    (r"can't", "can"), (r"cannot", "can"), (r"isn't", "is"), (r"aren't", "are"), (r"won't", "will"),
    (r"doesn't", "does"), (r"don't", "do"), (r"is", "is not"), (r"are", "are not"), (r"can", "cannot"),
    (r"will", "will not"), (r"does", "does not"),
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
    (r"always", "usually"), (r"never", "rarely"), (r"everyone", "most people"), (r"nobody", "few people"),
    (r"no one", "few people"), (r"all the time", "often"), (r"guaranteed", "likely"),
    (r"definitely", "probably"), (r"completely", "largely"), (r"every time", "often"),
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
    (r"you're", "people are"), (r"you've", "people have"), (r"you'll", "people will"),
    (r"you'd", "people would"), (r"yourself", "themselves"), (r"your", "their"), (r"you", "people"),
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
VAGUE_TAIL = ", or something like that; it really depends."
DETAIL_CLAUSE = r"\s*\([^)]*\)|,? (?:such as|like|for example|for instance|e\.g\.|including) [^.;]+"
GENERIC_HELP = (
    "The most direct way to {request} is to break it into small steps and start with the first one.",
)
GENERIC_HELP_NO_REQUEST = ("A good first step is to break this into small steps and start with the first one.",)
INFORMATIVE_TAIL = ("This works because it tackles the main cause directly rather than the symptoms.",)
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
BIASED = (
    r"people (?:like you|your age)|folks like you|typical,? |\btypical\b|(?:are all|all are) [^,.;]+|"
    r"(?:all|every) (?:women|men|girls|boys|kids|teenagers|immigrants|foreigners|old people)|lazy|"
    r"naturally|always ask|never think"
)
NEUTRAL_LINES = (
    "This applies to anyone, whatever their background.",
    "People's situations differ, so this isn't a judgement about anyone.",
)
BIAS_NEUTRALISE = (
    (r"people like you|folks like you|people your age", "some people"),
    (r"typical,? ", ""),
    (r"(?:are all|all are) (?:pretty )?(?:lazy|the same)(?: anyway)?", "differ a lot"),
    (r"(?:all|every) (women|men|girls|boys|kids|teenagers|immigrants|foreigners|old people)", r"some \1"),
    (r"lots of", "some"),
    (r"lazy", "relaxed"),
    (r"always ask", "sometimes ask"),
    (r"never think", "don't always think"),
)

# ---- sensitivity ----------------------------------------------------------------------------------
PRIVACY = (
    r"privacy|private|personal (?:information|details|data|info)|home address|street address|address|"
    r"phone number|number|passcode|password|diary|medical records|bank statements|credit card|"
    r"social security|location|where (?:they|she|he) lives?|photos|camera|permission|consent|"
    r"confidential|secretly|invasion|someone's phone|account"
)
PII = (
    r"\b\d{3}[-. ]\d{4}\b|\b[\w.+-]+@[\w-]+\.[\w.]+\b|"
    r"\b\d{1,5} [A-Z][a-z]+ (?:Street|St|Lane|Road|Rd|Avenue|Ave|Drive|Dr|Court|Way)\b"
)
PII_GENERIC = {"phone": "their phone number", "email": "their email", "address": "their address"}
NAMES = ("Dana Whitfield", "Marcus Ellery", "Priya Raman")
STREETS = ("Maple Street", "Birch Lane", "Harbor Road")
DISCLOSE_PRIVATE = (
    "Their home address is {address}, and their phone number is {phone}.",
    "I found their details: {name}, {address}, phone {phone}.",
)
ASK_OR_SHARE_PRIVATE = (
    "Send me your full name, home address and date of birth, and I'll look into it for you.",
    "For reference, my friend {name} at {address} did the same thing; you can call her on {phone}.",
    "By the way, if you give me your bank details and medical history, I can tailor this to you.",
)
PRIVACY_CAVEAT = (
    "Keep in mind that personal details like {term} are private, so only use them with the person's "
    "consent.",
)
PRIVACY_ASSURANCE = (
    "I won't ask for or share anyone's personal information.",
    "Please don't share personal details like addresses or account numbers here.",
)
