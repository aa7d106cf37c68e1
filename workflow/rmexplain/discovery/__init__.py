"""Bias discovery: what an RM rewards or penalises beyond the attributes it was told (docs/discovery.md).

Not the paper's App. A *attribute* discovery (``rmexplain.perturb.discover``, config ``perturb.discover``),
where an LLM names attributes that a human then perturbs along. Here candidate *features* of the responses
are proposed, each is tested causally with edits that add it where absent and remove it where present, every
RM of the dataset scores the edits, and the effects layer's estimate (``length_adjusted``, against the RM's
reference, the cluster bootstrap over comparisons) gives each feature's effect; Benjamini–Hochberg runs across
every feature tested per RM and dataset.

Modules: ``base`` (the registries and interfaces, light), ``text`` (Unicode-safe words and sentences),
``catalogue`` (the registered probes), ``mining`` (candidates mined from the responses and their screen),
``offline`` (the default engine), ``edits`` (the shared edit maker), ``estimate`` (effects, p-values, BH),
``nature`` (edit versus nature: each feature among the natural responses), ``recall`` (planted biases),
``stages`` (the rules' entry points).

**An engine** is one ``Engine`` subclass registered with ``@engines.register("name")`` (or an entry point of
group ``rmexplain.discovery_engines``; its ``discovery.<name>`` settings are the keys its ``settings_schema``
declares). For each dataset with stage ``discovery`` the workflow runs rounds 1 … ``discovery.<name>.rounds``
(default 1) of every engine of ``discovery.engines``, each round one pass of

    propose → edit → every RM scores → estimate → (the next round selects from it)

as rules with an ``{engine}`` and a ``{round}`` wildcard: ``discovery_round`` calls ``run_round(context)``
with a ``RoundContext`` (the comparisons, every RM's scores of the originals, the references, the engine's
effects of the round before as ``previous``, its settings — ``discovery.<engine>``,
``responses_per_feature``, ``min_per_direction`` —, a logger, and the services the job opened: an LLM client
for an engine that declares ``uses_llm``), and the engine returns a ``RoundOutput``: ``Feature`` objects
whose edits the shared edit maker makes (``edits.make_edits``: sampled responses, both directions, each edit
checked against the feature's own detector), or, for an engine that writes its edits itself (an LLM's
rewrites), a BIAS_DISCOVERY_EDITS frame and its BIAS_DISCOVERY_CANDIDATES.
Each round's edits are encoded by a job of their own (``embed_discovery_texts``, for the RMs that look texts
up; texts an earlier table holds are copied) and scored by jobs of their own (``score_discovery_edits``, one
per RM), which copy the texts the RM's earlier score tables hold (the originals, perturbations, effect edits
and rounds before) rather than asking the RM again.
``discovery_effects`` estimates each round (BIAS_DISCOVERY_EFFECTS, every RM × feature, with p-values), which
the next round reads; ``discovered_biases`` joins every engine's rounds, applies Benjamini–Hochberg per
(dataset, RM) and writes ``results/tables/discovered_biases.*`` and
``results/discovery/<dataset>/edits.parquet``. Feature names are unique per dataset across engines and rounds.

**A probe** (a catalogue entry of the offline engine) is one ``Feature`` (or subclass) registered with
``probes.register("name")`` (or an entry point of group ``rmexplain.discovery_probes``).
"""
