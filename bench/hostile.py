"""One hostile agent beside honest ones on one event loop: ``python -m bench.hostile`` (see bench/README.md).

A web backend holds many runs open on one asyncio loop with one ``AsyncAgentClient``. What one broken
or hostile agent can do to the others there is hold the loop: every event of its stream is decoded and
folded on the loop, and nothing else runs while that lasts. This measures it, within the client's
default limits, against a server in another process (``--serve``):

* N honest runs (``bench.loadserver``'s paced stream: 50 events a second of a few characters, each
  event's send moment stamped in its ``timestamp``), with no hostile run and then beside one hostile
  run of each kind below; p50/p99/max of the honest events' added delay (server's write to
  ``thread.stream()`` yielding it), as ``bench.concurrency`` measures it;
* the longest the loop went without running a 1 ms ticker, in the loop thread's CPU time (the longest
  hold) and in wall time (which counts the machine's other processes, and a worker thread holding the
  interpreter's lock: a store's save);
* the hostile run's own wall time and its outcome (an error's type when it failed).

The hostile kinds, each within the defaults (16 MiB an event, 256 MiB a run):

* ``tiny``: 8 MiB of ``TEXT_MESSAGE_CONTENT`` events of one character, written at full speed (each
  read of 64 KiB is some 900 events);
* ``gzip``: the same events, 64 MiB of them, gzip-coded (223 KiB on the wire, a few reads, each
  inflating to megabytes);
* ``snapshot``: a ``STATE_SNAPSHOT`` of 14 MiB, an object of 300,000 keys;
* ``deep``: a ``STATE_SNAPSHOT`` of 14 MiB of arrays nested 500 deep, side by side (7.5 million);
* ``patch``: a ``STATE_SNAPSHOT`` of 100,000 keys, then a ``STATE_DELTA`` replacing each of them (6 MiB);
* ``messages``: a ``MESSAGES_SNAPSHOT`` of 100,000 messages (10 MiB);
* ``interrupts``: a ``RUN_FINISHED`` interrupt outcome with 20,000 interrupts, each with a small
  ``responseSchema`` (4 MiB);
* ``fronts``: a ``STATE_SNAPSHOT`` of a list of 7 million elements (13 MiB), then 5,000 ``STATE_DELTA``
  events each adding one element at its front (every one shifts the whole list);
* ``bigpatch``: one ``STATE_DELTA`` of 400,000 operations (13 MiB);
* ``args``: a tool call whose arguments are 32 MiB of arrays side by side (``[[],[],…]``), sent in
  ``TOOL_CALL_ARGS`` deltas of 60,000 characters and parsed at ``TOOL_CALL_END``.

``--store sqlite`` saves to SQLite (in a worker thread) instead of a ``MemoryStore`` (on the loop);
``--head-start`` is how long the honest runs stream before the hostile one starts (1 s), ``--rate`` their
events a second (50). ``--tiny`` runs it all in seconds at 1/64 of the sizes, honest runs of 20 events at 200
a second, with a head start of 0.025 s (what ``tests/test_bench_smoke.py`` runs).
Numbers are for one machine, loaded by whatever else runs on it; compare the rows of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

from agui_client import AsyncAgentClient  # noqa: E402
from agui_client.stores import MemoryStore, SqliteStore  # noqa: E402

from .loadserver import _HEAD, _LAST_CHUNK, PacedRuns, _chunk, _frame, run_ids  # noqa: E402
from .servers import read_request  # noqa: E402

KINDS = ("tiny", "gzip", "snapshot", "deep", "patch", "messages", "interrupts", "fronts", "bigpatch", "args")
TEXT = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"}


def _started(ids: dict[str, str]) -> bytes:
    return _frame({"type": "RUN_STARTED", **ids})


def _finished(ids: dict[str, str]) -> bytes:
    return _frame({"type": "RUN_FINISHED", **ids})


def hostile_middle(kind: str, scale: float = 1.0) -> bytes:
    """The events of a hostile run of ``kind`` between its ``RUN_STARTED`` and its end (``scale``: of its size)."""
    if kind in ("tiny", "gzip"):
        start = _frame({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"})
        one = _frame(TEXT)
        count = int((64 if kind == "gzip" else 8) * 2**20 * scale) // len(one)
        return start + one * count + _frame({"type": "TEXT_MESSAGE_END", "messageId": "m"})
    if kind == "snapshot":
        keys = range(int(300_000 * scale))
        return _frame({"type": "STATE_SNAPSHOT", "snapshot": {f"k{i}": f"value {i:030d}" for i in keys}})
    if kind == "deep":
        nest = "[" * 500 + "]" * 500
        nests = ",".join([nest] * int(15_000 * scale)).encode()
        return b'data: {"type":"STATE_SNAPSHOT","snapshot":[' + nests + b"]}\n\n"
    if kind == "patch":
        keys = range(int(100_000 * scale))
        return (_frame({"type": "STATE_SNAPSHOT", "snapshot": {f"k{i}": i for i in keys}})
                + _frame({"type": "STATE_DELTA",
                          "delta": [{"op": "replace", "path": f"/k{i}", "value": -i} for i in keys]}))
    if kind == "messages":
        return _frame({"type": "MESSAGES_SNAPSHOT", "messages": [
            {"id": f"m{i}", "role": "user" if i % 2 else "assistant", "content": f"message number {i:040d}"}
            for i in range(int(100_000 * scale))]})
    if kind == "interrupts":
        return b""
    if kind == "fronts":
        front = _frame({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a/0", "value": 0}]})
        return (b'data: {"type":"STATE_SNAPSHOT","snapshot":{"a":[' + b",".join([b"1"] * int(7_000_000 * scale))
                + b"]}}\n\n" + front * int(5_000 * scale))
    if kind == "bigpatch":
        return _frame({"type": "STATE_DELTA",
                       "delta": [{"op": "add", "path": "/a", "value": 1}] * int(400_000 * scale)})
    if kind == "args":
        piece = _frame({"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "[]," * 20_000})
        return (_frame({"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"})
                + _frame({"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "["})
                + piece * int(32 * 2**20 * scale / 60_000)
                + _frame({"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "[]]"})
                + _frame({"type": "TOOL_CALL_END", "toolCallId": "c"}))
    raise ValueError(kind)


def hostile_end(kind: str, ids: dict[str, str], scale: float = 1.0) -> bytes:
    if kind != "interrupts":
        return _finished(ids)
    schema = {"type": "object", "properties": {"answer": {"type": "string", "pattern": "^[a-z]+$"}},
              "required": ["answer"]}
    return _frame({"type": "RUN_FINISHED", **ids, "outcome": {"type": "interrupt", "interrupts": [
        {"id": f"i{i}", "reason": "input_required", "message": f"question {i}", "responseSchema": schema}
        for i in range(int(20_000 * scale))]}})


# --------------------------------------------------------------------------------------------------
# the server (``--serve``): honest paced runs and hostile ones, told apart by the thread id
# --------------------------------------------------------------------------------------------------

class HostileServer:
    def __init__(self, paced: int, rate: float, scale: float) -> None:
        self.scale = scale
        self.middles = {kind: hostile_middle(kind, scale) for kind in KINDS}
        self.pacer = PacedRuns(paced, rate)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while (request := await read_request(reader)) is not None:
                ids = run_ids(request[1])
                kind = ids["threadId"].partition(":")[0]
                if kind == "gzip":
                    coded = gzip.compress(_started(ids) + self.middles["gzip"] + _finished(ids), 6)
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\n"
                                 b"content-length: %d\r\n\r\n" % len(coded))
                    writer.write(coded)
                    await writer.drain()
                    continue
                writer.write(_HEAD)
                if kind in self.middles:
                    data = memoryview(_started(ids) + self.middles[kind] + hostile_end(kind, ids, self.scale))
                    for start in range(0, len(data), 64 * 1024):
                        writer.writelines(_chunk(data[start:start + 64 * 1024]))
                        await writer.drain()
                else:
                    await self.paced_run(writer, ids)
                writer.write(_LAST_CHUNK)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def paced_run(self, writer: asyncio.StreamWriter, ids: dict[str, str]) -> None:
        # (loadserver's paced run, its phase drawn from the run id)
        await self.pacer.run(writer, ids, (hash(ids["runId"]) % 1000) / 1000)


async def serve(paced: int, rate: float, scale: float) -> None:
    server = HostileServer(paced, rate, scale)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0, backlog=4096, limit=2**20)
    sys.stdout.write(json.dumps({"port": listener.sockets[0].getsockname()[1]}) + "\n")
    sys.stdout.flush()
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    os._exit(0)


# --------------------------------------------------------------------------------------------------
# the client side
# --------------------------------------------------------------------------------------------------

async def _ticker(gaps: list[float], walls: list[float], stop: asyncio.Event) -> None:
    """The loop thread's CPU time while a 1 ms sleep waits: the longest stretch the loop ran something
    else without yielding. CPU time, not wall time: what the other processes of a shared machine take
    from this one is not counted as held (the honest delays do count it). ``walls`` has how late the
    sleep woke: that counts the waits for the GIL a worker thread holds (a store's save) too."""
    clock, wall = time.thread_time, time.perf_counter
    while not stop.is_set():
        before, began = clock(), wall()
        await asyncio.sleep(0.001)
        gaps.append(clock() - before)
        walls.append(wall() - began - 0.001)


async def scenario(client: AsyncAgentClient, honest: int, kind: str | None, serial: int,
                   store: str = "memory", head_start: float = 1.0) -> dict[str, Any]:
    client.store = MemoryStore() if store == "memory" else SqliteStore(Path(tempfile.mkdtemp()) / "threads.db")
    delays: array[int] = array("q")
    clock = time.monotonic_ns

    async def one(index: int) -> None:
        async with client.thread(f"honest:{serial}:{index}").stream() as stream:
            async for event in stream:
                if event.timestamp is not None:
                    delays.append(clock() // 1000 - event.timestamp)
        assert stream.result.outcome == "success", stream.result

    hostile: dict[str, Any] = {}

    async def bad(name: str) -> None:
        await asyncio.sleep(head_start)  # (the honest runs are under way)
        began = time.perf_counter()
        try:
            result = await client.thread(f"{name}:{serial}").run()
            hostile["outcome"] = result.outcome
        except Exception as exc:  # noqa: BLE001  (what the hostile run ended with is a measurement)
            hostile["outcome"] = type(exc).__name__
        hostile["wall_s"] = time.perf_counter() - began

    gaps: list[float] = []
    walls: list[float] = []
    stop = asyncio.Event()
    ticker = asyncio.create_task(_ticker(gaps, walls, stop))
    await asyncio.gather(*(one(i) for i in range(honest)), *([bad(kind)] if kind else []))
    stop.set()
    await ticker
    client.store.close()
    ordered = sorted(delays)
    return {"kind": kind or "(none)", "events": len(ordered),
            "p50_ms": statistics.median(ordered) / 1000, "p99_ms": ordered[int(len(ordered) * 0.99)] / 1000,
            "max_ms": ordered[-1] / 1000, "hold_ms": max(gaps) * 1000, "late_ms": max(walls) * 1000,
            **hostile}


async def measure(port: int, honest: int, kinds: list[str], store: str, head_start: float) -> list[dict[str, Any]]:
    rows = []
    async with AsyncAgentClient(f"http://127.0.0.1:{port}/", timeout=60.0) as client:
        await scenario(client, 2, None, -1, store)  # (first calls import and build what later runs reuse)
        for serial, kind in enumerate([None, *kinds]):
            row = await scenario(client, honest, kind, serial, store, head_start)
            rows.append(row)
            print(_line(row), flush=True)
    return rows


def _line(row: dict[str, Any]) -> str:
    wall = f"{row['wall_s']:.2f}s {row['outcome']}" if "wall_s" in row else ""
    return (f"{row['kind']:<11} honest p50 {row['p50_ms']:7.2f} ms  p99 {row['p99_ms']:8.2f} ms  "
            f"max {row['max_ms']:8.2f} ms  loop held {row['hold_ms']:8.2f} ms (CPU), {row['late_ms']:8.2f} ms (wall)  "
            f"hostile {wall}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--serve", action="store_true", help="be the server (prints its port, serves until stdin closes)")
    ap.add_argument("--honest", type=int, default=20, help="honest paced runs beside each hostile one")
    ap.add_argument("--paced-events", type=int, default=250)
    ap.add_argument("--rate", type=float, default=50.0, help="an honest run's events a second")
    ap.add_argument("--scale", type=float, default=1.0, help="the hostile streams' size, as a fraction of the above")
    ap.add_argument("--head-start", type=float, default=1.0,
                    help="seconds the honest runs stream before the hostile run starts")
    ap.add_argument("--tiny", action="store_true",
                    help="seconds: 2 honest runs of 20 events at 200 a second, streams at 1/64, a head start "
                         "of 0.025 s "
                         "(what the tests run)")
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated, of {', '.join(KINDS)}")
    ap.add_argument("--store", choices=("memory", "sqlite"), default="memory",
                    help="the client's store: a MemoryStore (saved on the loop) or SQLite (in a worker thread)")
    ap.add_argument("--json", type=Path, help="write the rows here")
    a = ap.parse_args(argv)
    if a.serve:
        asyncio.run(serve(a.paced_events, a.rate, a.scale))
        return 0
    if a.tiny:
        # A tiny honest run lasts some 0.1 s (20 events at 200 a second; at 50 a second its 0.4 s, once per
        # kind, was most of the smoke run's time, which waits and measures nothing). A quarter of it starts
        # the hostile run beside them, as the full size's second does a fifth into its 5 s runs.
        a.honest, a.paced_events, a.rate, a.scale, a.head_start = 2, 20, 200.0, 1 / 64, 0.025
    server = subprocess.Popen([sys.executable, "-m", "bench.hostile", "--serve", "--paced-events",
                               str(a.paced_events), "--rate", str(a.rate), "--scale", str(a.scale)],
                              cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert server.stdout is not None
        port = json.loads(server.stdout.readline())["port"]
        rows = asyncio.run(measure(port, a.honest, [k for k in a.kinds.split(",") if k], a.store, a.head_start))
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(10)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
