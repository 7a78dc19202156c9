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

Stores: ``memory`` and ``sqlite`` always; ``redis`` with ``--redis URL``; ``postgres`` with
``--postgres DSN``.
"""

from __future__ import annotations

import argparse
import json
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
    """The store, its writes timed and their JSON sized (sized after the timed call, untimed)."""

    def __init__(self, store: ThreadStore, *, incremental: bool) -> None:
        self._store = store
        self.writes: list[tuple[str, float, int]] = []  # (operation, seconds, bytes)
        if incremental:
            self.append = self._append  # (absent in full mode: the flow then saves the whole thread)

    def load(self, thread_id: str) -> StoredThread | None:
        return self._store.load(thread_id)

    def save(self, thread_id: str, data: Mapping[str, Any], *, expected_version: int | None) -> int:
        start = time.perf_counter()
        version = self._store.save(thread_id, data, expected_version=expected_version)
        self.writes.append(("save", time.perf_counter() - start, _size(data)))
        return version

    def _append(self, thread_id: str, changes: Mapping[str, Any], *, expected_version: int) -> int:
        start = time.perf_counter()
        version: int = self._store.append(thread_id, changes, expected_version=expected_version)  # type: ignore[attr-defined]
        self.writes.append(("append", time.perf_counter() - start, _size(changes)))
        return version

    def claim(self, thread_id: str, *, expected_version: int | None, owner: str,
              data: Mapping[str, Any] | None = None) -> int:
        return self._store.claim(thread_id, expected_version=expected_version, owner=owner, data=data)

    def release(self, thread_id: str, *, claimed_version: int, owner: str) -> int:
        return self._store.release(thread_id, claimed_version=claimed_version, owner=owner)

    def delete(self, thread_id: str) -> None:
        self._store.delete(thread_id)

    def close(self) -> None:
        self._store.close()


def _size(data: Mapping[str, Any]) -> int:
    return len(dump_record(dict(data)))


@dataclass
class Window:
    runs: int
    bytes_per_save: float
    save_median_us: float
    save_mean_us: float
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
        growth: dict[int, list[tuple[str, float, int]]] = {}
        for mark, thread in threads.items():
            before = len(store.writes)
            for n in range(mark):
                thread.run(f"question {n}: what next?", run_id=f"r{n}")
            growth[mark] = [w for w in store.writes[before:] if w[0] in ("save", "append")]
        sampled: dict[int, list[tuple[str, float, int]]] = {mark: [] for mark in chosen}
        run_times: dict[int, list[float]] = {mark: [] for mark in chosen}
        for n in range(samples):
            for mark, thread in threads.items():
                before = len(store.writes)
                start = time.perf_counter()
                thread.run(f"one more {n}", run_id=f"s{n}")
                run_times[mark].append(time.perf_counter() - start)
                sampled[mark] += [w for w in store.writes[before:] if w[0] in ("save", "append")]
    store.close()
    largest = growth[chosen[-1]]
    out = []
    for mark in chosen:
        saves = sampled[mark]
        assert len(saves) == samples, (len(saves), samples)  # (every run saves once)
        times = [t for _, t, _ in saves]
        operations: dict[str, int] = {}
        for op, _, _ in saves:
            operations[op] = operations.get(op, 0) + 1
        out.append(Window(
            runs=mark,
            bytes_per_save=statistics.median(b for _, _, b in saves),
            save_median_us=statistics.median(times) * 1e6,
            save_mean_us=statistics.mean(times) * 1e6,
            save_mean_all_us=statistics.mean(t for _, t, _ in largest[:mark]) * 1e6,
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


def _table(results: list[Result], marks: list[int]) -> str:
    lines = ["| store | mode | runs | bytes/save | save median µs | save mean µs | mean of all saves so far µs "
             "| run() median µs | writes |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for result in results:
        if result.error:
            lines.append(f"| {result.store} | {result.mode} | | | | | | | error: {result.error} |")
            continue
        for w in result.windows:
            ops = ", ".join(f"{k} {v}" for k, v in sorted(w.operations.items()))
            lines.append(f"| {result.store} | {result.mode} | {w.runs} | {w.bytes_per_save:,.0f} | "
                         f"{w.save_median_us:,.0f} | {w.save_mean_us:,.0f} | {w.save_mean_all_us:,.0f} | "
                         f"{w.run_median_us:,.0f} | {ops} |")
        if len(result.windows) >= 2:
            first, last = result.windows[0], result.windows[-1]
            lines.append(f"| {result.store} | {result.mode} | {last.runs}/{first.runs} | "
                         f"{last.bytes_per_save / first.bytes_per_save:.2f}x | "
                         f"{last.save_median_us / first.save_median_us:.2f}x | "
                         f"{last.save_mean_us / first.save_mean_us:.2f}x | "
                         f"{last.save_mean_all_us / first.save_mean_all_us:.2f}x | "
                         f"{last.run_median_us / first.run_median_us:.2f}x | |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
