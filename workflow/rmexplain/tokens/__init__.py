"""Optimal and pessimal tokens (Christian et al.): exhaustive single-token scans of RMs and their analyses.

``vocab`` (which tokens), ``scan`` (exact-id scoring with a KV-cached prompt prefix, or the paper's own
route), ``gcg`` (multi-token search, the project's and the paper's), ``stats`` (τ, MDS, RSA, lexical slopes,
framing, human ranking), ``plots``, and ``stages`` (the entry points of the rule scripts). ``paper``, ``elo``
and ``paper_models`` compute what the paper's own code computed (its shared vocabulary, Table 3, Fig. 3 and
5, its ten RMs; the bundled EloEverything data); docs/tokens_official.md. Paths and target lists live in
``rmexplain.paths``, config checks in ``rmexplain.config``.
"""
