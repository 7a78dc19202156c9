"""Growth on stream shapes the ``gen.py`` kinds do not have: ``python -m bench.scaling``.

The five ``gen.py`` kinds are realistic conversations; a fold can still be quadratic in a shape they
never produce (a thread of thousands of runs, thousands of results for one assistant message, steps
nested thousands deep, thousands of frontend calls left pending, a snapshot restating a long thread
in every run). Each shape here is generated at ``n`` and ``4n`` events' worth, folded with
``agui_client.replay`` (median of ``--reps``), and reported with its growth exponent
``log(t4n / tn) / log(bytes4n / bytesn)``: about 1 is linear, 2 quadratic. Memory (tracemalloc peak)
is reported the same way, in a separate pass. Time is also taken with the garbage collector off while
folding: CPython's full collections walk the whole heap, so a fold that keeps a growing thread pays
more for them as it grows, which is the interpreter's cost, not the fold's algorithm.

No target is asserted (the smoke test only runs it at a tiny size); BENCHMARKS.md records a run.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agui_client import replay  # noqa: E402

Event = dict[str, Any]


def _run(run_id: str, body: list[Event]) -> Iterator[Event]:
    yield {"type": "RUN_STARTED", "threadId": "t", "runId": run_id}
    yield from body
    yield {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id}


def many_runs(n: int) -> Iterator[Event]:
    """``n`` runs on one thread, one assistant message each (a long chat replayed whole)."""
    for r in range(n):
        yield from _run(f"r{r}", [{"type": "TEXT_MESSAGE_START", "messageId": f"m{r}", "role": "assistant"},
                                  {"type": "TEXT_MESSAGE_CONTENT", "messageId": f"m{r}", "delta": "ok"},
                                  {"type": "TEXT_MESSAGE_END", "messageId": f"m{r}"}])


def results_for_one_message(n: int) -> Iterator[Event]:
    """``n`` tool calls of one assistant message, each answered by a TOOL_CALL_RESULT."""
    body: list[Event] = []
    for i in range(n):
        body += [{"type": "TOOL_CALL_START", "toolCallId": f"c{i}", "toolCallName": "f", "parentMessageId": "a1"},
                 {"type": "TOOL_CALL_END", "toolCallId": f"c{i}"},
                 {"type": "TOOL_CALL_RESULT", "messageId": f"t{i}", "toolCallId": f"c{i}", "content": "x"}]
    yield from _run("r0", body)


def nested_steps(n: int) -> Iterator[Event]:
    """``n`` steps opened, then finished innermost first."""
    body = [{"type": "STEP_STARTED", "stepName": f"s{i}"} for i in range(n)]
    body += [{"type": "STEP_FINISHED", "stepName": f"s{i}"} for i in reversed(range(n))]
    yield from _run("r0", body)


def pending_calls(n: int) -> Iterator[Event]:
    """``n`` frontend calls left for the client (derived pending list, TC-17)."""
    body: list[Event] = []
    for i in range(n):
        body += [{"type": "TOOL_CALL_START", "toolCallId": f"c{i}", "toolCallName": "f", "parentMessageId": "a1"},
                 {"type": "TOOL_CALL_ARGS", "toolCallId": f"c{i}", "delta": "{}"},
                 {"type": "TOOL_CALL_END", "toolCallId": f"c{i}"}]
    yield from _run("r0", body)


def snapshot_per_run(n: int) -> Iterator[Event]:
    """``n // 20`` runs, each streaming 20 messages then restating the whole thread in a snapshot."""
    held: list[Event] = []
    for r in range(max(1, n // 20)):
        body: list[Event] = []
        for i in range(20):
            message_id = f"m{r}.{i}"
            body += [{"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"},
                     {"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": "ok"},
                     {"type": "TEXT_MESSAGE_END", "messageId": message_id}]
            held.append({"id": message_id, "role": "assistant", "content": "ok"})
        body.append({"type": "MESSAGES_SNAPSHOT", "messages": list(held)})
        yield from _run(f"r{r}", body)


SHAPES: dict[str, Callable[[int], Iterator[Event]]] = {
    "many runs": many_runs,
    "results for one message": results_for_one_message,
    "nested steps": nested_steps,
    "pending calls": pending_calls,
    "snapshot per run": snapshot_per_run,
}


def _jsonl(events: Iterator[Event]) -> bytes:
    return b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in events)


def _time(data: bytes, reps: int, *, collector: bool = True) -> float:
    samples = []
    for _ in range(reps):
        gc.collect()
        if not collector:
            gc.disable()
        try:
            start = time.perf_counter()
            replay(data)
            samples.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return statistics.median(samples)


def _peak(data: bytes) -> int:
    gc.collect()
    tracemalloc.start()
    replay(data)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def measure(n: int, reps: int) -> list[dict[str, Any]]:
    """One row per shape: sizes, median times, peaks and growth exponents at ``n`` and ``4n``."""
    rows = []
    for name, make in SHAPES.items():
        small, large = _jsonl(make(n)), _jsonl(make(4 * n))
        replay(small)  # (warm-up)
        t_small, t_large = _time(small, reps), _time(large, reps)
        a_small, a_large = _time(small, reps, collector=False), _time(large, reps, collector=False)
        m_small, m_large = _peak(small), _peak(large)
        growth = math.log(len(large) / len(small))
        rows.append({"shape": name, "n": n, "bytes": [len(small), len(large)], "seconds": [t_small, t_large],
                     "seconds_gc_off": [a_small, a_large], "peak_bytes": [m_small, m_large],
                     "time_exponent": math.log(t_large / t_small) / growth,
                     "time_exponent_gc_off": math.log(a_large / a_small) / growth,
                     "memory_exponent": math.log(m_large / m_small) / growth})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.scaling", description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=5000, help="the smaller size (the larger is 4n); default 5000")
    ap.add_argument("--reps", type=int, default=3, help="timed repetitions per size (median); default 3")
    ap.add_argument("--json", type=Path, help="also write the rows as JSON here")
    a = ap.parse_args(argv)
    rows = measure(a.n, a.reps)
    print("| shape | n -> 4n | MB at 4n | s at n | s at 4n | time exponent | same, gc off | peak MB at 4n "
          "| memory exponent |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(f"| {row['shape']} | {a.n} -> {4 * a.n} | {row['bytes'][1] / 1e6:.2f} | {row['seconds'][0]:.4f} | "
              f"{row['seconds'][1]:.4f} | {row['time_exponent']:.2f} | {row['time_exponent_gc_off']:.2f} | "
              f"{row['peak_bytes'][1] / 1e6:.1f} | {row['memory_exponent']:.2f} |")
    if a.json is not None:
        a.json.write_text(json.dumps({"n": a.n, "reps": a.reps, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
