"""A discovery engine from another package, for the tests: two rounds, the second chosen from the first.

Round 1 tests two catalogue probes; round 2 reads round 1's effects and follows the feature with the largest
|effect| (over every RM; ties by name) up with a probe of the same kind: the shape of a propose → score →
select → mutate loop, without an LLM.
"""

from __future__ import annotations

from typing import Any, ClassVar

import polars as pl

from rmexplain.discovery.base import Engine, RoundContext, RoundOutput, engines, probe

FOLLOW_UP = {"bold": "italics", "exclamation": "emoji"}


@engines.register("refine")
class Refine(Engine):
    settings_schema: ClassVar[dict[str, Any]] = {
        "rounds": {"type": "integer", "minimum": 1, "maximum": 2, "default": 2}
    }

    def run_round(self, context: RoundContext) -> RoundOutput:
        if context.round == 1:
            return RoundOutput(features=[probe(name) for name in FOLLOW_UP])
        ranked = context.previous.with_columns(size=pl.col("effect").abs()).sort(
            "size", "feature", descending=[True, False], nulls_last=True
        )
        best = ranked["feature"][0]
        context.log.info("round %d follows %s up", context.round, best)
        return RoundOutput(features=[probe(FOLLOW_UP[best])])
