"""``python -m bench.sqlite_append``: what a run's save costs a SqliteStore as its thread grows.

For a thread of 10, 100 and 1,000 runs (each run adds a ~1 KiB message, so the data grows ~1 KiB
per run), it times, as medians over ``--reps`` repetitions in a fresh database file:

* ``append``: one run's change (one message, a few fields) onto the thread's record, ``--reps``
  appends one after the other (the thread grows a run's worth each time), with no compaction;
* ``append~``: the same with the default ``Compaction`` policy, over as many appends as it takes to
  fold once, so the compaction's cost is spread over the appends that triggered it;
* ``claim+release``: the pair a run that never reached the agent makes;
* ``save``: the whole thread, one run longer, written again (what every run's save cost before the
  incremental record);
* ``load``: the whole thread read back (its data plus the ``--reps`` changes appended).

"bytes" is what the write put into SQLite's write-ahead log (frames of one page each, counted by a
checkpoint before and after the write; the checkpoints are not timed). Every commit waits for an
fsync (``synchronous=FULL``), so on a slow disk the fsync is most of a write's time.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from functools import partial
from pathlib import Path
from typing import Any

from agui_client.core.fold import ThreadState
from agui_client.stores import Compaction, SqliteStore
from agui_client.types import AssistantMessage, UserMessage

__all__ = ["main"]

NEVER = Compaction(min_bytes=1 << 62, ratio=1e18, max_changes=1 << 62)


def thread(runs: int) -> dict[str, Any]:
    messages = [(UserMessage if i % 2 else AssistantMessage)(id=f"m{i}", content=f"{i:06d} " + "x" * 1000)
                for i in range(runs)]
    return ThreadState(messages=messages, thread_id="t", state={"turn": runs}).dump()


def change(runs: int) -> dict[str, Any]:
    return {"messagesFrom": runs, "messages": [{"id": f"m{runs}", "role": "assistant",
                                                "content": f"{runs:06d} " + "y" * 1000}],
            "set": {"lastRunId": f"run-{runs}", "state": {"turn": runs + 1}},
            "merge": {"usageByRun": {f"run-{runs}": [{"inputTokens": runs}]}}}


def measured(path: Path, write: Callable[[], object]) -> tuple[float, float, int]:
    """Seconds ``write()`` took (wall clock, and this process's CPU: the wall clock less the waits for
    the disk), and the bytes it put into the write-ahead log."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        start, cpu = time.perf_counter(), time.process_time()
        write()
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        _, frames, _ = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        (page,) = conn.execute("PRAGMA page_size").fetchone()
    return elapsed, cpu, int(frames) * (int(page) + 24)


def bench(runs: int, reps: int, folder: Path) -> dict[str, tuple[float, float, float]]:
    path = folder / f"threads-{runs}.db"
    data, longer = thread(runs), thread(runs + 1)
    results: dict[str, list[tuple[float, float, int]]] = {"append": [], "append~": [], "claim+release": [], "save": [],
                                                   "load": []}
    with SqliteStore(path, compaction=NEVER) as store:
        version = store.save("t", data, expected_version=None)

        def append(version: int, runs: int) -> None:
            store.append("t", change(runs), expected_version=version)

        def pair(version: int) -> None:
            claimed = store.claim("t", expected_version=version, owner="bench")
            store.release("t", claimed_version=claimed, owner="bench")

        def save(version: int, data: dict[str, Any]) -> None:
            store.save("t", data, expected_version=version)

        # One after the other, as a thread's runs append: the thread grows a run's worth each time.
        for i in range(reps):
            results["append"].append(measured(path, partial(append, version, runs + i)))
            version += 1
        for _ in range(reps):
            results["load"].append(measured(path, partial(store.load, "t")))
        for _ in range(reps):
            results["claim+release"].append(measured(path, partial(pair, version)))
            version += 2
        for i in range(reps):
            # (alternately one run longer and back: data as long as the old is written in place)
            results["save"].append(measured(path, partial(save, version, longer if i % 2 == 0 else data)))
            version += 1
    with SqliteStore(path, compaction=Compaction()) as store:
        # Appends onto a growing thread until the default policy has folded once: the average.
        version = store.save("t", data, expected_version=version)
        total, cpu, written, count = 0.0, 0.0, 0, 0
        while True:
            elapsed, used, nbytes = measured(path, partial(append, version, runs + count))
            version, count = version + 1, count + 1
            total, cpu, written = total + elapsed, cpu + used, written + nbytes
            # (the head's count, not a load: a load's garbage would set off the collector in the next append)
            with closing(sqlite3.connect(path)) as conn:
                if conn.execute("SELECT changes FROM agui_threads WHERE thread_id = 't'").fetchone() == (0,):
                    break
        results["append~"] = [(total / count, cpu / count, written // count)]
    return {name: tuple(statistics.median(row[i] for row in rows) for i in range(3))  # type: ignore[misc]
            for name, rows in results.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--runs", type=int, nargs="+", default=[10, 100, 1000])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        print(f"{'runs':>6} {'measure':<14} {'ms':>8} {'cpu ms':>8} {'bytes':>10}")
        for runs in args.runs:
            for name, (seconds, cpu, nbytes) in bench(runs, args.reps, Path(folder)).items():
                print(f"{runs:>6} {name:<14} {seconds * 1000:>8.3f} {cpu * 1000:>8.3f} {nbytes:>10.0f}")


if __name__ == "__main__":
    main()
