"""Every edit the rules method makes on the bundled data, pinned by one digest.

All 360 bundled comparisons (both parts, both splits), each response in both directions, along the paper's
15 attributes: 21,600 slots. Any change to any edit (or to which slots are skipped) changes the digest, so
a refactor of the rules package that claims to change nothing is checked here.
"""

from __future__ import annotations

import hashlib
import json
import sys

from conftest import REPO

from rmexplain.perturb.rules import EDITORS, perturb

sys.path.insert(0, str(REPO / "docs"))
from rules_edit_stats import bundled_tasks

DIGEST = "22c4b56b6b653c68037043d8104b0d4071abd0e555bbcaa2b9fc1de79db406a5"


def test_every_bundled_edit_is_unchanged():
    digest = hashlib.sha256()
    slots = 0
    for task in bundled_tasks():
        for attribute in EDITORS:
            edit = perturb(task, attribute)
            record = [task.comparison_id, task.target, task.direction, attribute]
            record += [None] if edit is None else [edit.text, list(edit.focus), edit.name]
            digest.update(json.dumps(record, ensure_ascii=False).encode() + b"\n")
            slots += 1
    assert slots == 21_600
    assert digest.hexdigest() == DIGEST
