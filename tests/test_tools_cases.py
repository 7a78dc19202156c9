"""The cases of the version differential (``python -m tools.differential --base``), without folding them."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
try:
    from tools.differential import cases
finally:
    sys.path.remove(str(ROOT))


def _depth(value: object) -> int:
    depth = 0
    while isinstance(value, list) and value:
        value, depth = value[0], depth + 1
    return depth


def test_a_golden_event_nested_past_the_limit_is_mutated_whole() -> None:
    # Golden payload-nested-past-limit holds a value 600 lists deep; a mutation that copies its event
    # overflowed the stack, and the whole run (`--count 20000 --seed 20261206`) stopped before folding.
    path = ROOT / "tests" / "golden" / "streams" / "payload-nested-past-limit.jsonl"
    deep = next(json.loads(text) for text in path.read_text(encoding="utf-8").splitlines() if "[[[[" in text)
    levels = _depth(deep["value"])
    assert levels > 500
    whole = json.dumps(deep)
    copies = 0
    for seed in range(40):
        mutated = cases._mutate(random.Random(seed), [deep])
        # an event inserted again is a copy of the whole event, every level of it
        copies += sum(1 for event in mutated if event is not deep and json.dumps(event) == whole)
    assert copies > 0
