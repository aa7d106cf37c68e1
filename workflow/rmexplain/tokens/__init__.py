"""Optimal and pessimal tokens (Christian et al.): exhaustive single-token scans of RMs and their analyses.

``vocab`` (which tokens), ``scan`` (exact-id scoring with a KV-cached prompt prefix), ``gcg`` (multi-token
search), ``stats`` (τ, MDS, RSA, lexical slopes, framing, human ranking), ``plots``, ``targets`` (paths and
config checks) and ``pipeline`` (the entry points of the rule scripts). ``paper``, ``elo`` and
``paper_models`` compute what the paper's own code computed (its shared vocabulary, Table 3, Fig. 3 and 5, its
ten RMs; bundled EloEverything data), ``paper_pipeline`` holds their entry points; docs/tokens_official.md.
"""
