"""What a run's save costs on a long thread: ``python -m bench.saves`` (see bench/README.md).

Threads of 10, 100 and 1,000 runs (``--marks``), run through ``AgentClient`` against an in-process
agent (``httpx.MockTransport``: no socket, so the numbers are the client's and the store's own). Each
run is a short chat turn: the user's message, an assistant answer of 40 deltas, a state snapshot of a
fixed size, token usage; the thread's record grows by about 0.5 KiB a run.

For each store, in two modes, in one process:

* **full**: the store reached through a proxy that has no ``append``, so every run's save writes the
  whole thread, as every release before the incremental record did;
* **incremental**: the store itself: a run's save appends what the run changed.

Each thread is grown to its size, then sampled: ``--samples`` more runs on each (20 by default), the
threads taken in turn so that what disturbs the machine falls on every size alike. It reports per
size the bytes each sampled save wrote (the JSON handed to the store, measured outside the timed
call), the median and mean time of the store call, the mean of every save of the largest thread up
to that size (compactions amortised), and the median time of the whole ``run()``; then the ratio of
the largest size to the smallest (target: flat within 20 %). The mean includes any compaction that
landed among the samples; the median shows the ordinary save. The whole ``run()`` is not flat by
design: every run sends the thread's messages to the agent (``RunAgentInput.messages``).

Beside the wall clock, each save's CPU time in this thread (the client's side of the store call, which
other load moves far less) and its minor page faults; then, after the runs, each thread's last write is
made once more per sample, the threads in turn (``alone``): the store call without the run before it.
A long thread's run allocates and frees its whole request (every message), and the allocator gives
some of that memory back; the save after it then faults pages in again, which the ``alone`` figure,
made after another save, does not pay.

Stores: ``memory`` and ``sqlite`` always; ``redis`` with ``--redis URL``; ``postgres`` with
``--postgres DSN``.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from agui_client import AgentClient  # noqa: E402
from agui_client.stores import MemoryStore, SqliteStore, StoredThread, ThreadStore  # noqa: E402
from agui_client.wire.records import dump_record  # noqa: E402

__all__ = ["main", "measure"]

DELTAS = 40
#: Page faults of the calling thread where the system counts them per thread (Linux), else the process's.
_RUSAGE = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)


def _agent(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content)
    thread_id, run_id = body["threadId"], body["runId"]
    message_id = f"a-{run_id}"
    events: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id},
        {"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"},
        *({"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": f"word{i:02d} "} for i in range(DELTAS)),
        {"type": "TEXT_MESSAGE_END", "messageId": message_id},
        {"type": "STATE_SNAPSHOT", "snapshot": {"turn": run_id, "notes": ["a note of some length"] * 8}},
        {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id,
         "usage": [{"inputTokens": 120, "outputTokens": 40}]},
    ]
    data = b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events)
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=httpx.ByteStream(data))


class _Timed:
    """The store, its writes timed and their JSON sized (sized after the timed call, untimed).

    Each write is recorded as (operation, wall seconds, bytes, CPU seconds of this thread, minor page
    faults of this thread); the last write of each thread and its version are kept, so that the store
    call alone can be repeated after the runs (:meth:`again`).
    """

    def __init__(self, store: ThreadStore, *, incremental: bool) -> None:
        self._store = store
        self.writes: list[tuple[str, float, int, float, int]] = []
        self.last: dict[str, tuple[str, Mapping[str, Any]]] = {}
        self.versions: dict[str, int] = {}
        if incremental:
            self.append = self._append  # (absent in full mode: the flow then saves the whole thread)

    def _timed(self, operation: str, thread_id: str, data: Mapping[str, Any], call: Callable[[], int]) -> int:
        faults, cpu, start = _faults(), time.thread_time(), time.perf_counter()
        version = call()
        wall, cpu, faults = time.perf_counter() - start, time.thread_time() - cpu, _faults() - faults
        self.writes.append((operation, wall, _size(data), cpu, faults))
        self.last[thread_id] = (operation, data)
        self.versions[thread_id] = version
        return version

    def again(self, thread_id: str) -> tuple[str, float, int, float, int]:
        """The thread's last write made once more, outside any run: what the store call costs alone."""
        operation, data = self.last[thread_id]
        expected = self.versions[thread_id]
        if operation == "save":
            self.save(thread_id, data, expected_version=expected)
        else:
            self._append(thread_id, data, expected_version=expected)
        return self.writes.pop()

    def load(self, thread_id: str) -> StoredThread | None:
        return self._store.load(thread_id)

    def save(self, thread_id: str, data: Mapping[str, Any], *, expected_version: int | None) -> int:
        return self._timed("save", thread_id, data,
                           lambda: self._store.save(thread_id, data, expected_version=expected_version))

    def _append(self, thread_id: str, changes: Mapping[str, Any], *, expected_version: int) -> int:
        append = self._store.append  # type: ignore[attr-defined]
        return self._timed("append", thread_id, changes,
                           lambda: int(append(thread_id, changes, expected_version=expected_version)))

    def claim(self, thread_id: str, *, expected_version: int | None, owner: str,
              data: Mapping[str, Any] | None = None) -> int:
        version = self._store.claim(thread_id, expected_version=expected_version, owner=owner, data=data)
        self.versions[thread_id] = version
        return version

    def release(self, thread_id: str, *, claimed_version: int, owner: str) -> int:
        version = self._store.release(thread_id, claimed_version=claimed_version, owner=owner)
        self.versions[thread_id] = version
        return version

    def delete(self, thread_id: str) -> None:
        self._store.delete(thread_id)

    def close(self) -> None:
        self._store.close()


def _faults() -> int:
    """This thread's minor page faults so far (pages the kernel handed the process on first touch)."""
    return resource.getrusage(_RUSAGE).ru_minflt


def _size(data: Mapping[str, Any]) -> int:
    return len(dump_record(dict(data)))


@dataclass
class Window:
    runs: int
    bytes_per_save: float
    save_median_us: float
    save_mean_us: float
    #: The store call's CPU time in this thread (the client's side: a server's own work is not in it), which
    #: other load on a shared machine moves far less than the wall clock.
    save_cpu_median_us: float
    #: Minor page faults per save, mean: memory the allocator had given back since (after a long thread's
    #: run, whose request carries every message) and the save's first touch brought in again.
    save_faults_mean: float
    #: The same write (the thread's last) made once more per sample after the runs, each thread in turn:
    #: the store call alone, without the run before it; median CPU and wall time.
    alone_cpu_median_us: float
    alone_median_us: float
    #: The mean of every save from the first run to this one: compactions included, as they amortise.
    save_mean_all_us: float
    run_median_us: float
    operations: dict[str, int] = field(default_factory=dict)


@dataclass
class Result:
    store: str
    mode: str
    windows: list[Window]
    error: str | None = None


def measure(make_store: Callable[[], ThreadStore], *, incremental: bool, runs: int, marks: list[int],
            samples: int = 20) -> list[Window]:
    """One thread per mark, grown to that many runs; then ``samples`` more runs on each, taken in turn.

    The sampled runs of the threads alternate (10, 100, 1,000, 10, 100, ...), so what disturbs the
    machine meanwhile falls on every size alike; a thread grows by ``samples`` runs while it is
    sampled. The mean of all saves so far is the largest thread's, over its growth from its first run.
    """
    store = _Timed(make_store(), incremental=incremental)
    chosen = [mark for mark in marks if mark <= runs]
    with AgentClient("http://agent.invalid/run", store=store,
                     http_client=httpx.Client(transport=httpx.MockTransport(_agent))) as client:
        threads = {mark: client.thread(f"bench-{mark}-{uuid.uuid4().hex}") for mark in chosen}
        growth: dict[int, list[tuple[str, float, int, float, int]]] = {}
        for mark, thread in threads.items():
            before = len(store.writes)
            for n in range(mark):
                thread.run(f"question {n}: what next?", run_id=f"r{n}")
            growth[mark] = [w for w in store.writes[before:] if w[0] in ("save", "append")]
        sampled: dict[int, list[tuple[str, float, int, float, int]]] = {mark: [] for mark in chosen}
        run_times: dict[int, list[float]] = {mark: [] for mark in chosen}
        for n in range(samples):
            for mark, thread in threads.items():
                before = len(store.writes)
                start = time.perf_counter()
                thread.run(f"one more {n}", run_id=f"s{n}")
                run_times[mark].append(time.perf_counter() - start)
                sampled[mark] += [w for w in store.writes[before:] if w[0] in ("save", "append")]
        alone: dict[int, list[tuple[str, float, int, float, int]]] = {mark: [] for mark in chosen}
        for _ in range(samples):
            for mark in chosen:
                alone[mark].append(store.again(threads[mark].id))
    store.close()
    largest = growth[chosen[-1]]
    out = []
    for mark in chosen:
        saves = sampled[mark]
        assert len(saves) == samples, (len(saves), samples)  # (every run saves once)
        times = [w[1] for w in saves]
        operations: dict[str, int] = {}
        for op, *_ in saves:
            operations[op] = operations.get(op, 0) + 1
        out.append(Window(
            runs=mark,
            bytes_per_save=statistics.median(w[2] for w in saves),
            save_median_us=statistics.median(times) * 1e6,
            save_mean_us=statistics.mean(times) * 1e6,
            save_cpu_median_us=statistics.median(w[3] for w in saves) * 1e6,
            save_faults_mean=statistics.mean(w[4] for w in saves),
            alone_cpu_median_us=statistics.median(w[3] for w in alone[mark]) * 1e6,
            alone_median_us=statistics.median(w[1] for w in alone[mark]) * 1e6,
            save_mean_all_us=statistics.mean(w[1] for w in largest[:mark]) * 1e6,
            run_median_us=statistics.median(run_times[mark]) * 1e6,
            operations=operations,
        ))
    return out


def _stores(args: argparse.Namespace, directory: Path) -> dict[str, Callable[[], ThreadStore]]:
    stores: dict[str, Callable[[], ThreadStore]] = {
        "memory": MemoryStore,
        "sqlite": lambda: SqliteStore(directory / f"{uuid.uuid4().hex}.db"),
    }
    if args.redis:
        from agui_client.stores import RedisStore

        stores["redis"] = lambda: RedisStore(args.redis, prefix=f"agui:bench:{uuid.uuid4().hex}:")
    if args.postgres:
        from agui_client.stores import PostgresStore

        stores["postgres"] = lambda: PostgresStore(args.postgres, table=f"agui_bench_{uuid.uuid4().hex[:12]}")
    return stores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.saves", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000, help="the largest thread's runs (default 1,000)")
    parser.add_argument("--samples", type=int, default=20, help="runs sampled on each thread, in turn (default 20)")
    parser.add_argument("--marks", default="10,100,1000", help="the threads' sizes in runs (default 10,100,1000)")
    parser.add_argument("--stores", default="", help="comma-separated subset of memory,sqlite,redis,postgres")
    parser.add_argument("--modes", default="full,incremental")
    parser.add_argument("--redis", help="a redis:// URL (adds the redis store)")
    parser.add_argument("--postgres", help="a libpq DSN (adds the postgres store)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    marks = [int(m) for m in args.marks.split(",")]
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="agui-bench-saves-") as tmp:
        stores = _stores(args, Path(tmp))
        chosen = [s for s in (args.stores.split(",") if args.stores else stores) if s in stores]
        for name in chosen:
            for mode in args.modes.split(","):
                try:
                    windows = measure(stores[name], incremental=mode == "incremental", runs=args.runs, marks=marks,
                                      samples=args.samples)
                    results.append(Result(store=name, mode=mode, windows=windows))
                except Exception as exc:  # noqa: BLE001 - reported in the table; the other stores go on
                    results.append(Result(store=name, mode=mode, windows=[], error=f"{type(exc).__name__}: {exc}"))
    print(_table(results, marks))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=2))
    return 1 if any(r.error for r in results) else 0


#: The table's columns after store, mode and runs: (heading, the window's field, its format).
_COLUMNS = (("bytes/save", "bytes_per_save", "{:,.0f}"),
            ("save median µs", "save_median_us", "{:,.0f}"),
            ("save mean µs", "save_mean_us", "{:,.0f}"),
            ("save CPU median µs", "save_cpu_median_us", "{:,.0f}"),
            ("page faults per save", "save_faults_mean", "{:,.1f}"),
            ("alone: CPU median µs", "alone_cpu_median_us", "{:,.0f}"),
            ("alone: median µs", "alone_median_us", "{:,.0f}"),
            ("mean of all saves so far µs", "save_mean_all_us", "{:,.0f}"),
            ("run() median µs", "run_median_us", "{:,.0f}"))


def _table(results: list[Result], marks: list[int]) -> str:
    lines = ["| store | mode | runs | " + " | ".join(h for h, _, _ in _COLUMNS) + " | writes |",
             "| --- | --- | --- | " + " | ".join("---" for _ in _COLUMNS) + " | --- |"]
    for result in results:
        if result.error:
            lines.append(f"| {result.store} | {result.mode} | " + "| " * (len(_COLUMNS) + 1)
                         + f"error: {result.error} |")
            continue
        for w in result.windows:
            ops = ", ".join(f"{k} {v}" for k, v in sorted(w.operations.items()))
            cells = [form.format(getattr(w, name)) for _, name, form in _COLUMNS]
            lines.append(f"| {result.store} | {result.mode} | {w.runs} | " + " | ".join(cells) + f" | {ops} |")
        if len(result.windows) >= 2:
            first, last = result.windows[0], result.windows[-1]
            ratios = [f"{getattr(last, name) / getattr(first, name):.2f}x" if getattr(first, name) else "-"
                      for _, name, _ in _COLUMNS]
            lines.append(f"| {result.store} | {result.mode} | {last.runs}/{first.runs} | " + " | ".join(ratios)
                         + " | |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
