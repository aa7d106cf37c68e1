"""Print how far the ``rules`` perturber moves the bundled responses (the README's numbers).

Every bundled response (both parts, both splits, chosen and rejected) is perturbed in both directions
along the paper's 15 attributes; the distance is the evaluation's syntactic distance (word-level
Levenshtein, normalised by the longer length).

Usage: python docs/rules_edit_stats.py
"""

from collections import defaultdict
from collections.abc import Iterator

import numpy as np

from rmexplain.data.readers import read_embedded
from rmexplain.explanations.metrics import syntactic_distance
from rmexplain.perturb.base import PerturbTask
from rmexplain.perturb.rules import EDITORS, perturb


def bundled_tasks() -> Iterator[PerturbTask]:
    """Each bundled response as a task, in both directions."""
    for part in ("helpful", "harmless"):
        for split in ("train", "explain"):
            for pair in read_embedded(part, split=split):
                sides = (("chosen", pair.chosen, pair.rejected), ("rejected", pair.rejected, pair.chosen))
                for target, response, other in sides:
                    for direction in ("worse", "better"):
                        yield PerturbTask(
                            pair.source_index, target, direction, pair.prompt, response, other, 0, 0
                        )


def main() -> None:
    per_attribute: dict[str, list[float]] = defaultdict(list)
    slots = skipped = 0
    for task in bundled_tasks():
        for attribute in EDITORS:
            slots += 1
            edit = perturb(task, attribute)
            if edit is None:
                skipped += 1
                continue
            per_attribute[attribute].append(syntactic_distance(task.response, edit.text))
    everything = np.concatenate([np.asarray(v) for v in per_attribute.values()])
    print(f"{slots} slots, {skipped} skipped")
    print(
        f"syntactic distance: mean {everything.mean():.2f}, median {np.median(everything):.2f}, "
        f"90th percentile {np.percentile(everything, 90):.2f}"
    )
    for attribute, values in sorted(per_attribute.items(), key=lambda kv: np.mean(kv[1])):
        print(f"  {attribute:16s} {np.mean(values):.2f}")


if __name__ == "__main__":
    main()
