"""The cases of the version differential (``python -m tools.differential --base``), without folding them."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
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


#: How long the two differential workers below may take together, imports included (seconds).
WORKER_TIMEOUT = 60


def test_a_cut_value_reads_the_same_from_two_workers(tmp_path: Path) -> None:
    # A long value quoted in an error message is cut and ends in a digest keyed per process: the same
    # case folded by two workers (as `--base` folds it, one per tree) read as a difference in talk-1856
    # of `--count 6000 --seed 20261224` though nothing had changed.
    role = {"c": [{"": 10**20, "b": "v"}] * 40}
    runs = [[json.dumps({"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}),
             json.dumps({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": role})]]
    source = tmp_path / "cases.jsonl"
    source.write_text(json.dumps({"name": "long-role", "runs": runs, "framing": "jsonl"}) + "\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore"}
    targets = [tmp_path / f"folded-{n}.jsonl" for n in range(2)]
    # The two workers run side by side: each spends nearly all its time importing agui_client (the fold
    # of one case is instant), 0.7 s of CPU, and one after the other they waited twice for a busy
    # machine's cores. Both together are given WORKER_TIMEOUT, half the suite's 120 s per test, so a
    # hung worker fails this test naming its command, with margin, before the suite's timeout stops it.
    workers = [subprocess.Popen([sys.executable, str(ROOT / "tools" / "differential" / "worker.py"), str(source),
                                 str(target)], env=env, cwd=str(ROOT)) for target in targets]
    deadline = time.monotonic() + WORKER_TIMEOUT
    try:
        for worker in workers:
            assert worker.wait(timeout=max(0.0, deadline - time.monotonic())) == 0, worker.args
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    written = [target.read_text(encoding="utf-8") for target in targets]
    assert "...#" in written[0]  # the value was cut, so its digest was written
    assert written[0] == written[1]
