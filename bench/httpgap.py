"""Where the HTTP path's time goes beyond replay: ``python -m bench.httpgap`` (see bench/README.md).

For each gen.py kind (base size, and 4x with ``--growth``), in one process, the same SSE bytes:

* ``replay``: ``agui_client.replay`` of the bytes (parse, verify, fold);
* ``http``: ``AgentClient.thread().run()`` against the suite's loopback server in another process,
  with a fresh ``MemoryStore`` (what ``python -m bench`` times as ``http run()``);
* ``http, no store``: the same with a store that keeps nothing (the thread's dump is still made, as
  the run protocol hands it to the store, but nothing encodes or copies it);
* ``httpx alone``: ``httpx.Client.stream`` reading the same response and doing nothing with it;
* ``dump`` and ``encode``: the first ``ThreadState.dump()`` of the replayed thread, and the JSON
  encoding of it (what a ``MemoryStore`` save costs on a new thread's first run);
* ``budget``: the run's memory budget (``max_run_memory``) charging the response's reads, 64 KiB each
  (a count of the body's structural characters, which replay does not pay).

A last row, ``(fixed)``, is a run of 24 events (a chat of one short message): what every HTTP run
costs beyond its events (the request, the response's setup and end, the claim and the save), beside
httpx alone making the same request.

Times are this process's CPU time (``time.process_time``; the server is another process), median of
``--reps`` interleaved repetitions. ``http / replay`` is replay's time over http's (the issue's
"HTTP path against replay" ratio); the last column is what is left of http's time when replay, httpx,
the dump, the encoding and the budget are taken away (the run protocol: request, claim, save bookkeeping).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

import httpx  # noqa: E402

from agui_client import AgentClient, replay  # noqa: E402
from agui_client.core.budget import MemoryBudget  # noqa: E402
from agui_client.stores import MemoryStore, StoredThread  # noqa: E402
from agui_client.wire.records import dump_record  # noqa: E402
from bench import freeze_setup, gen  # noqa: E402
from bench.run import BASE_SCALE, TINY_SCALE, make_stream  # noqa: E402
from bench.servers import ProcessStreamServer  # noqa: E402


class KeepsNothing:
    """A store that answers every write and keeps nothing (no encoding, no copy)."""

    def load(self, thread_id: str) -> StoredThread | None:
        return None

    def save(self, thread_id: str, data: Any, *, expected_version: int | None) -> int:
        return (expected_version or 0) + 1

    def claim(self, thread_id: str, *, expected_version: int | None, owner: str, data: Any = None) -> int:
        return 0 if expected_version is None else expected_version + 1

    def release(self, thread_id: str, *, claimed_version: int, owner: str) -> int:
        return claimed_version + 1

    def delete(self, thread_id: str) -> None:
        pass

    def close(self) -> None:
        pass


def measure(stream: Any, reps: int) -> dict[str, float]:
    """Median CPU seconds per measure for one stream (``stream.url`` served)."""
    with AgentClient(stream.url, idle_timeout=120.0) as kept, \
            AgentClient(stream.url, idle_timeout=120.0, store=KeepsNothing()) as bare, \
            httpx.Client(timeout=120.0) as raw:
        def http() -> None:
            kept.store = MemoryStore()
            kept.thread(stream.thread_id).run(run_id=stream.run_id)

        def no_store() -> None:
            bare.thread(stream.thread_id).run(run_id=stream.run_id)

        def httpx_alone() -> None:
            with raw.stream("POST", stream.url, json={}) as response:
                for _ in response.iter_raw():
                    pass

        timed: dict[str, Callable[[], object]] = {
            "replay": lambda: replay(stream.sse), "http": http, "http, no store": no_store,
            "httpx alone": httpx_alone}
        samples: dict[str, list[float]] = {name: [] for name in (*timed, "dump", "encode", "budget")}
        reads = [stream.sse[at:at + READ] for at in range(0, len(stream.sse), READ)]
        for run in timed.values():
            run()  # (warm-up)
        for _ in range(reps):
            for name, run in timed.items():
                gc.collect()
                started = time.process_time()
                run()
                samples[name].append(time.process_time() - started)
            state = replay(stream.sse).state
            gc.collect()
            started = time.process_time()
            data = state.dump(share_state=True)
            samples["dump"].append(time.process_time() - started)
            started = time.process_time()
            dump_record(data)
            samples["encode"].append(time.process_time() - started)
            budget = MemoryBudget(1 << 62)
            started = time.process_time()
            for chunk in reads:
                budget.read(chunk, 0)
            samples["budget"].append(time.process_time() - started)
    return {name: statistics.median(values) for name, values in samples.items()}


#: The read size the ``budget`` measure charges the response in (what one read of the body brings at most).
READ = 64 * 1024

#: The base scale of the chat stream the ``(fixed)`` row measures: 24 events.
FIXED_SCALE = 0.0001


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.httpgap", description=__doc__.splitlines()[0])
    ap.add_argument("--kinds", default=",".join(gen.KINDS), help="comma-separated gen.py kinds (default: all five)")
    ap.add_argument("--growth", type=float, default=4.0, help="also the size this many times the base (0: base only)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tiny", action="store_true",
                    help="smoke run: every base scale 0.01, one repetition, the heap frozen before measuring")
    a = ap.parse_args(argv)
    reps = 1 if a.tiny else a.reps
    names = ("replay", "http", "http, no store", "httpx alone", "dump", "encode", "budget")
    print(f"{'kind':<9} {'size':<6} {'events':>7} " + " ".join(f"{n:>15}" for n in names)
          + f" {'http / replay':>14} {'rest':>8}")
    with tempfile.TemporaryDirectory(prefix="agui-httpgap-") as tmp, ProcessStreamServer() as server:
        rows = [(kind, size, scale) for kind in a.kinds.split(",")
                for size, scale in [("base", TINY_SCALE if a.tiny else BASE_SCALE[kind])]
                + ([(f"{a.growth:g}x", (TINY_SCALE if a.tiny else BASE_SCALE[kind]) * a.growth)] if a.growth else [])]
        # (the fixed cost is small against the noise of one timing: many repetitions, each cheap)
        rows.append(("(fixed)", "chat", FIXED_SCALE))
        if a.tiny:
            freeze_setup()
        for kind, size, scale in rows:
            fixed = kind == "(fixed)"
            stream = make_stream(size if fixed else kind, "base" if fixed else size, round(scale, 6), a.seed, Path(tmp))
            stream.url = server.add(f"{kind}-{size}", stream.sse)
            got = measure(stream, reps * 20 if fixed else reps)
            rest = got["http"] - got["replay"] - got["httpx alone"] - got["dump"] - got["encode"] - got["budget"]
            print(f"{kind:<9} {size:<6} {stream.events:>7} "
                  + " ".join(f"{got[n] * 1e3:>12.2f} ms" for n in names)
                  + f" {got['replay'] / got['http']:>13.2f}x {rest * 1e3:>5.2f} ms", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
