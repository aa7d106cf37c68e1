"""Attribute effects beside the paper's flip rates: what an RM's reward does when a response moves along an
attribute, in both directions, with the edits' length changes accounted for (docs/effects.md).

``edits`` makes the edits (every response, every attribute, both directions, and each edit edited back),
``estimators`` the registered estimators over one table of edits and rewards, ``recovery`` scores them
against RMs with planted biases, ``stages`` holds the rules' entry points.
"""
