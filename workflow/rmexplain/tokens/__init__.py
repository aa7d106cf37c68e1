"""Optimal and pessimal tokens (Christian et al.): exhaustive single-token scans of RMs and their analyses.

``vocab`` (which tokens), ``scan`` (exact-id scoring with a KV-cached prompt prefix), ``gcg`` (multi-token
search), ``stats`` (τ, MDS, RSA, lexical slopes, framing, human ranking), ``plots``, ``targets`` (paths and
config checks) and ``pipeline`` (the entry points of the rule scripts).
"""
