"""Many runs at once on one event loop: ``python -m bench.concurrency`` (see bench/README.md).

A web backend holds tens or hundreds of runs open on one asyncio loop; what it pays is CPU per event
across all of them, and the delay each event suffers before the caller sees it. This measures both
against a server in another process (``bench/loadserver.py``), for ``agui_client`` and, in the same
process run, interleaved, for the hand-written stack (``bench/handwritten.py``):

* **full speed**: N concurrent runs of the ``gen.py`` chat stream (2,024 events at the default
  scale), written as fast as the socket takes them; events per CPU-second of this process
  (``time.process_time``, every thread of it), against ``agui_client.replay`` of the same bytes in
  this process (the single-stream ceiling);
* **paced**: N concurrent runs, each 50 events per second of a few characters (a model's pace);
  p50/p99 of the delay from the moment the server handed an event's bytes to its socket (stamped in
  the event's ``timestamp`` field, microseconds of CLOCK_MONOTONIC, which both processes share) to
  the moment ``thread.stream()`` yields it;
* **memory per open run**: N runs held open after their first event, ``tracemalloc``'s traced memory
  (and the RSS) less what it was before they opened, per run; beside it a bare ``httpx`` stream held
  open the same way (httpx's own share);
* the **sync** client (``AgentClient``, a thread per run) at N = 10 and 100, in both modes.

``agui_client`` uses the ``httpx`` client it makes itself, its shards' connections on asyncio the
package's own (``agui_client._sockets``; ``--agui-http sized`` gives it the others' client instead;
``--agui-http own,anyio`` runs it twice, the second time with its shards' connections on httpcore's anyio
backend as before the eighteenth round, and ``asyncio-protocol`` or ``asyncio-sock`` put
``bench/asyncio_backend.py``'s plain-asyncio backends there; ``--raw`` adds ``httpx`` alone reading the
same runs' raw bytes on each of those transports); the hand-written stack and the sync
client get one whose pool admits every run (``--pool``): httpx's default (100 connections, 20 kept
alive) would make runs past the 100th queue for a connection, and close 80 a wave; ``--pool default`` measures that.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from array import array
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from agui_client import AgentClient, AsyncAgentClient, replay  # noqa: E402
from agui_client.stores import MemoryStore  # noqa: E402

from . import freeze_setup  # noqa: E402
from .asyncio_backend import BACKENDS, sharded_client, use_backend  # noqa: E402
from .handwritten import HandwrittenThread  # noqa: E402
from .loadserver import _frame, chat_events  # noqa: E402

DEFAULT_JSON = Path(tempfile.gettempdir()) / "agui_bench_concurrency.json"
AGUI, HAND, SYNC, HTTPX = "agui_client", "hand-written", "agui_client sync", "httpx alone"
#: ``--agui-http`` choices: the client's own httpx client (its own connections), the hand-written stack's, or
#: its own with the shards' connections on one of ``BACKENDS`` (httpcore's anyio backend, or a bench one).
AGUI_HTTP = ("own", "sized", *BACKENDS)


def agui_stack(agui_http: str) -> str:
    """The stack name of ``AsyncAgentClient`` on ``agui_http`` (``own`` and ``sized`` are ``agui_client``)."""
    return AGUI if agui_http in ("own", "sized") else f"{AGUI} [{agui_http}]"


def raw_stack(agui_http: str) -> str:
    """The stack name of ``httpx`` alone reading raw bytes on the transport of ``agui_http``."""
    return f"httpx raw [{agui_http}]"

# The targets of issue 21.
TARGET_VS_HAND = 3.0      # full speed, N = 100 and 500: >= 3x the hand-written stack's events per CPU-second
TARGET_VS_REPLAY = 0.8    # ... and >= 0.8x the single-stream replay's
TARGET_P99_MS = 5.0       # paced, N = 100: p99 added delay <= 5 ms
TARGET_IDLE_KIB = 64.0    # memory per open idle run <= 64 KiB beyond httpx's own


@dataclass
class Row:
    mode: str            # "full", "paced", "idle", "replay"
    n: int
    stack: str
    events: list[int] = field(default_factory=list)       # events per repetition
    cpu_s: list[float] = field(default_factory=list)      # client process CPU per repetition
    wall_s: list[float] = field(default_factory=list)
    p50_ms: list[float] = field(default_factory=list)     # paced: per repetition
    p99_ms: list[float] = field(default_factory=list)
    max_ms: list[float] = field(default_factory=list)
    traced_per_run: list[float] = field(default_factory=list)  # idle: bytes
    rss_per_run: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def rate(self) -> float | None:
        """Events per CPU-second: the median over repetitions."""
        rates = [e / c for e, c in zip(self.events, self.cpu_s, strict=True) if c > 0]
        return statistics.median(rates) if rates else None


# --------------------------------------------------------------------------------------------------
# the server
# --------------------------------------------------------------------------------------------------

class Server:
    """``bench.loadserver`` in a child process; closing its stdin stops it."""

    def __init__(self, scale: float, paced_events: int, rate: float = 50.0) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.loadserver", "--scale", str(scale), "--paced-events", str(paced_events),
             "--rate", str(rate)],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.process.stdout is not None
        info = json.loads(self.process.stdout.readline())
        self.port: int = info["port"]
        self.full_events: int = info["full_events"]
        self.paced_events: int = info["paced_events"]

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}"

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


# --------------------------------------------------------------------------------------------------
# the stacks
# --------------------------------------------------------------------------------------------------

def _limits(pool: str, n: int) -> httpx.Limits:
    if pool == "default":
        return httpx.Limits(max_connections=100, max_keepalive_connections=20)
    return httpx.Limits(max_connections=max(n, 1), max_keepalive_connections=max(n, 1))


class Stacks:
    """One long-lived client per stack (as an application keeps one), its pool sized for ``n`` runs."""

    def __init__(self, server: Server, pool: str, n: int, agui_http: list[str] | None = None,
                 raw: bool = False) -> None:
        self.server = server
        limits = _limits(pool, n)
        self.hand_http = httpx.AsyncClient(limits=limits, timeout=60.0)
        # agui_client with its own httpx client (the library's default: its shards on the package's own
        # connections), unless --agui-http sized; on one of BACKENDS, its own client with the shards'
        # connections made by that backend instead.
        self.aguis: dict[str, AsyncAgentClient] = {}
        self.raws: dict[str, httpx.AsyncClient] = {}
        for name in agui_http or ["own"]:
            http = httpx.AsyncClient(limits=limits, timeout=60.0) if name == "sized" else None
            client = AsyncAgentClient(server.url("full"), http_client=http, timeout=60.0, idle_timeout=60.0)
            if name in BACKENDS:
                use_backend(client.http._transport, BACKENDS[name]())  # type: ignore[attr-defined]
            self.aguis[agui_stack(name)] = client
            if raw:  # (the raw reads on the same transport: for "sized", httpx's own pool)
                self.raws[raw_stack(name)] = httpx.AsyncClient(limits=limits, timeout=60.0) if name == "sized" \
                    else sharded_client(name)
        self.agui = next(iter(self.aguis.values()))
        self.serial = 0

    def ids(self, n: int) -> list[tuple[str, str]]:
        self.serial += 1
        return [(f"t{self.serial}-{i}", f"r{self.serial}-{i}") for i in range(n)]

    async def aclose(self) -> None:
        await self.hand_http.aclose()
        for agui in self.aguis.values():
            await agui.http.aclose()  # (closing twice is fine)
            await agui.close()
        for raw in self.raws.values():
            await raw.aclose()

    def full(self, stack: str) -> Callable[[int], Coroutine[Any, Any, int]]:
        """The full-speed runs of ``stack``, as a function of N."""
        if stack == HAND:
            return lambda n: _hand_full(self, n)
        if stack in self.raws:
            return lambda n: _raw_full(self, n, self.raws[stack])
        return lambda n: _agui_full(self, n, self.aguis[stack])

    def paced(self, stack: str) -> Callable[[int, array[int]], Coroutine[Any, Any, int]]:
        if stack == HAND:
            return lambda n, delays: _hand_paced(self, n, delays)
        return lambda n, delays: _agui_paced(self, n, delays, self.aguis[stack])


async def _agui_full(stacks: Stacks, n: int, client: AsyncAgentClient | None = None) -> int:
    client = client or stacks.agui
    client.store = MemoryStore()  # (a fresh store: the threads start empty, and it does not grow)
    client.url = stacks.server.url("full")

    async def one(tid: str, rid: str) -> int:
        result = await client.thread(tid).run(run_id=rid)
        if result.outcome != "success" or result.warnings:
            raise RuntimeError(f"agui_client run {rid}: {result.outcome} {result.warnings[:3]}")
        return result.events

    return sum(await asyncio.gather(*(one(t, r) for t, r in stacks.ids(n))))


async def _hand_full(stacks: Stacks, n: int) -> int:
    url = stacks.server.url("full")

    async def one(tid: str, rid: str) -> int:
        thread = HandwrittenThread(tid)
        count = await thread.run(stacks.hand_http, url, rid)
        if thread.status != "finished":
            raise RuntimeError(f"hand-written run {rid}: {thread.status}")
        return count

    return sum(await asyncio.gather(*(one(t, r) for t, r in stacks.ids(n))))


async def _raw_full(stacks: Stacks, n: int, http: httpx.AsyncClient) -> int:
    """``httpx`` alone: the runs' raw bytes read and dropped (the transport's cost, no framing, no fold)."""
    url = stacks.server.url("full")

    async def one(tid: str, rid: str) -> int:
        async with http.stream("POST", url, json={"threadId": tid, "runId": rid}) as response:
            async for _ in response.aiter_raw():
                pass
        return stacks.server.full_events

    return sum(await asyncio.gather(*(one(t, r) for t, r in stacks.ids(n))))


async def _agui_paced(stacks: Stacks, n: int, delays: array[int], client: AsyncAgentClient | None = None) -> int:
    client = client or stacks.agui
    client.store = MemoryStore()
    client.url = stacks.server.url("paced")
    clock = time.monotonic_ns

    async def one(tid: str, rid: str) -> int:
        count = 0
        async with client.thread(tid).stream(run_id=rid) as stream:
            async for event in stream:
                stamp = event.timestamp
                if stamp is not None:
                    delays.append(clock() // 1000 - stamp)
                count += 1
        assert stream.result is not None and stream.result.outcome == "success", stream.result
        return count

    return sum(await asyncio.gather(*(one(t, r) for t, r in stacks.ids(n))))


async def _hand_paced(stacks: Stacks, n: int, delays: array[int]) -> int:
    url = stacks.server.url("paced")
    clock = time.monotonic_ns

    async def one(tid: str, rid: str) -> int:
        count = 0
        async for event in HandwrittenThread(tid).stream(stacks.hand_http, url, rid):
            stamp = event.timestamp
            if stamp is not None:
                delays.append(clock() // 1000 - stamp)
            count += 1
        return count

    return sum(await asyncio.gather(*(one(t, r) for t, r in stacks.ids(n))))


def _sync_runs(server: Server, pool: str, n: int, mode: str, delays: array[int], serial: int,
               agui_http: str) -> int:
    """``AgentClient`` with a thread per run."""
    lock = threading.Lock()
    clock = time.monotonic_ns
    http = httpx.Client(limits=_limits(pool, n), timeout=60.0) if agui_http == "sized" else None
    with AgentClient(server.url(mode), http_client=http, timeout=60.0, idle_timeout=60.0) as client:

        def one(i: int) -> int:
            thread = client.thread(f"s{serial}-{i}")
            if mode == "full":
                result = thread.run(run_id=f"sr{serial}-{i}")
                assert result.outcome == "success" and not result.warnings, result
                return result.events
            count, mine = 0, array("q")
            with thread.stream(run_id=f"sr{serial}-{i}") as stream:
                for event in stream:
                    if event.timestamp is not None:
                        mine.append(clock() // 1000 - event.timestamp)
                    count += 1
            with lock:
                delays.extend(mine)
            return count

        try:
            with ThreadPoolExecutor(n) as pool_:
                return sum(pool_.map(one, range(n)))
        finally:
            client.http.close()


# --------------------------------------------------------------------------------------------------
# measuring
# --------------------------------------------------------------------------------------------------

def _percentile(sorted_values: list[int], q: float) -> float:
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return float(sorted_values[k])


def _record(row: Row, events: int, cpu: float, wall: float, delays: array[int] | None) -> None:
    row.events.append(events)
    row.cpu_s.append(cpu)
    row.wall_s.append(wall)
    if delays is not None:
        ordered = sorted(delays)
        row.p50_ms.append(_percentile(ordered, 0.50) / 1000)
        row.p99_ms.append(_percentile(ordered, 0.99) / 1000)
        row.max_ms.append(ordered[-1] / 1000 if ordered else float("nan"))


async def _timed(row: Row, make: Callable[[], Coroutine[Any, Any, int]], delays: array[int] | None) -> None:
    gc.collect()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    try:
        events = await make()
    except Exception as exc:  # noqa: BLE001 - the row says so, the suite goes on
        row.error = f"{type(exc).__name__}: {exc}"[:500]
        return
    _record(row, events, time.process_time() - cpu0, time.perf_counter() - wall0, delays)


def _timed_sync(row: Row, make: Callable[[], int], delays: array[int] | None) -> None:
    gc.collect()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    try:
        events = make()
    except Exception as exc:  # noqa: BLE001
        row.error = f"{type(exc).__name__}: {exc}"[:500]
        return
    _record(row, events, time.process_time() - cpu0, time.perf_counter() - wall0, delays)


def _replay_rate(body: bytes, events: int, min_cpu: float) -> tuple[int, float]:
    gc.collect()
    done, cpu0 = 0, time.process_time()
    while True:
        result = replay(body)
        done += events
        cpu = time.process_time() - cpu0
        if cpu >= min_cpu:
            break
    assert result.outcome == "success" and not result.warnings
    return done, cpu


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def _idle(server: Server, stack: str, n: int, pool: str, agui_http: str) -> tuple[float, float]:
    """Open ``n`` runs, wait until each has its first event, and measure what they hold, per run."""
    gc.collect()
    http = httpx.AsyncClient(limits=_limits(pool, n), timeout=60.0)
    agui = AsyncAgentClient(server.url("idle"), timeout=60.0, idle_timeout=60.0,
                            http_client=http if agui_http == "sized" else None)
    url = server.url("idle")
    opened = 0
    all_open = asyncio.Event()
    release = asyncio.Event()

    def arrived() -> None:
        nonlocal opened
        opened += 1
        if opened == n:
            all_open.set()

    async def one(i: int) -> None:
        if stack == HTTPX:
            async with http.stream("POST", url, json={"threadId": f"i{i}", "runId": f"ir{i}"}) as response:
                async for _ in response.aiter_raw():
                    arrived()
                    await release.wait()
                    return
        elif stack == HAND:
            async for _ in HandwrittenThread(f"i{i}").stream(http, url, f"ir{i}"):
                arrived()
                await release.wait()
                return
        else:
            async with agui.thread(f"i{i}").stream(run_id=f"ir{i}") as stream:
                async for _ in stream:
                    arrived()
                    await release.wait()
                    return

    # One connection first, so the client's lazily built parts (the pool, the SSL context) are not charged.
    await asyncio.sleep(0)
    tracemalloc.start()
    rss0 = _rss()
    base = tracemalloc.get_traced_memory()[0]
    tasks = [asyncio.create_task(one(i)) for i in range(n)]
    try:
        await asyncio.wait_for(all_open.wait(), 60)
        gc.collect()
        traced = (tracemalloc.get_traced_memory()[0] - base) / n
        rss = (_rss() - rss0) / n
    finally:
        tracemalloc.stop()
        release.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        await agui.close()
        await agui.http.aclose()
        await http.aclose()
    return traced, rss


# --------------------------------------------------------------------------------------------------
# the suite
# --------------------------------------------------------------------------------------------------

async def run_suite(a: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    server = Server(a.scale, a.paced_events, a.rate)
    rows: dict[tuple[str, int, str], Row] = {}

    def row(mode: str, n: int, stack: str) -> Row:
        return rows.setdefault((mode, n, stack), Row(mode, n, stack))

    full_body = b"".join(_frame(e) for e in chat_events(a.scale))
    sized = "sized" if "sized" in a.agui_http else "own"  # (the sync client and the idle measure)
    try:
        largest = max([*a.n, *a.paced_n], default=1)  # (the pool holds the most runs either mode opens)
        stacks = Stacks(server, a.pool, largest, a.agui_http, a.raw)
        full_stacks = [*stacks.aguis, HAND, *stacks.raws]
        paced_stacks = [*stacks.aguis, HAND]
        # Warm-up: every stack once, so imports, pools and caches are built before anything is timed.
        for stack in full_stacks:
            await stacks.full(stack)(2)
        replay(full_body)
        if a.smoke:
            freeze_setup()

        def turn(names: list[str], rep: int) -> list[str]:
            # (each repetition another stack goes first: with two, they alternate)
            k = rep % len(names)
            return names[k:] + names[:k]

        for rep in range(a.reps):
            log(f"repetition {rep + 1}/{a.reps}")
            # The single-stream ceiling, in the same process and repetition.
            done, cpu = _replay_rate(full_body, server.full_events, a.replay_cpu)
            _record(row("replay", 1, AGUI), done, cpu, cpu, None)
            for n in a.n:
                waves = max(1, math.ceil(a.min_events / (n * server.full_events)))
                for stack in turn(full_stacks, rep):
                    make = stacks.full(stack)

                    async def full(make: Any = make, n: int = n, waves: int = waves) -> int:
                        return sum([await make(n) for _ in range(waves)])

                    await _timed(row("full", n, stack), full, None)
                    log(f"  full  N={n:<4} {stack:<13} {_fmt_rate(row('full', n, stack))}")
            if not a.no_paced:
                for n in a.paced_n:
                    for stack in turn(paced_stacks, rep):
                        delays: array[int] = array("q")
                        make_p = stacks.paced(stack)

                        async def paced(make_p: Any = make_p, n: int = n, delays: array[int] = delays) -> int:
                            return await make_p(n, delays)

                        await _timed(row("paced", n, stack), paced, delays)
                        r = row("paced", n, stack)
                        log(f"  paced N={n:<4} {stack:<13} p50 {_last(r.p50_ms)} p99 {_last(r.p99_ms)} ms")
            for n in a.sync_n:
                for mode in ("full",) + (() if a.no_paced else ("paced",)):
                    delays = array("q")
                    serial = rep * 1000 + n
                    _timed_sync(row(mode, n, SYNC),
                                lambda mode=mode, n=n, delays=delays, serial=serial: _sync_runs(
                                    server, a.pool, n, mode, delays, serial, sized),
                                delays if mode == "paced" else None)
                    log(f"  {mode:<5} N={n:<4} {SYNC:<13} {_fmt_rate(row(mode, n, SYNC))}")
            if not a.no_idle:
                for n in a.idle_n:
                    for stack in (HTTPX, HAND, AGUI):
                        traced, rss = await _idle(server, stack, n, a.pool, sized)
                        r = row("idle", n, stack)
                        r.traced_per_run.append(traced)
                        r.rss_per_run.append(rss)
                        log(f"  idle  N={n:<4} {stack:<13} {traced / 1024:.1f} KiB traced per run")
        await stacks.aclose()
    finally:
        server.close()
    out = [asdict(r) | {"rate": r.rate} for r in rows.values()]
    return {"rows": out, "config": vars(a) | {"full_events": server.full_events,
                                              "paced_events": server.paced_events},
            "machine": _machine()}


def _last(values: list[float]) -> str:
    return f"{values[-1]:.2f}" if values else "-"


def _fmt_rate(r: Row) -> str:
    if r.error:
        return f"ERROR {r.error}"
    return f"{r.events[-1] / r.cpu_s[-1] / 1000:.0f}k ev/cpu-s ({r.wall_s[-1]:.2f} s wall)" if r.cpu_s else "-"


def _machine() -> dict[str, Any]:
    try:
        load = os.getloadavg()
    except OSError:
        load = (float("nan"),) * 3
    return {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count(),
            "httpx": httpx.__version__, "loadavg": load}


def _med(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def table(results: dict[str, Any], markdown: bool) -> str:
    rows = {(r["mode"], r["n"], r["stack"]): r for r in results["rows"]}

    def rate(r: dict[str, Any] | None) -> float | None:
        return None if r is None or r["error"] else r["rate"]

    replay_rate = rate(rows.get(("replay", 1, AGUI)))
    lines: list[list[str]] = [["mode", "N", "agui_client ev/CPU-s", "hand-written ev/CPU-s", "x hand-written",
                               "x replay", "p50 / p99 ms (agui)", "p50 / p99 ms (hand)", "sync ev/CPU-s",
                               "sync p50 / p99 ms"]]
    for mode in ("full", "paced"):
        for n in sorted({k[1] for k in rows if k[0] == mode}):
            ours, hand, sync = rows.get((mode, n, AGUI)), rows.get((mode, n, HAND)), rows.get((mode, n, SYNC))
            o, h, s = rate(ours), rate(hand), rate(sync)

            def lat(r: dict[str, Any] | None) -> str:
                if r is None or r["error"] or not r["p99_ms"]:
                    return "-" if r is None or not r["error"] else "ERROR"
                return f"{_med(r['p50_ms']):.2f} / {_med(r['p99_ms']):.2f}"

            lines.append([mode, str(n), _k(o) if ours else "-", _k(h) if hand else "-",
                          f"{o / h:.2f}x" if o and h else "-",
                          f"{o / replay_rate:.2f}x" if o and replay_rate and mode == "full" else "-",
                          lat(ours), lat(hand), _k(s) if sync else "-", lat(sync) if mode == "paced" else "-"])
    text = _grid(lines, markdown)
    text += f"\n\nsingle-stream replay (same bytes, same process): {_k(replay_rate)} events per CPU-second\n"
    others = sorted({k[2] for k in rows if k[0] in ("full", "paced")} - {AGUI, HAND, SYNC})
    if others:
        text += "\ntransports (--agui-http, --raw): each beside agui_client on its own transport\n\n"
        text += _grid(_transport_lines(rows, others, replay_rate), markdown) + "\n"
    for n in sorted({r["n"] for r in results["rows"] if r["mode"] == "idle"}):
        idle = [r for r in results["rows"] if r["mode"] == "idle" and r["n"] == n]
        text += f"\nmemory per open idle run (N = {n}): " + ", ".join(
            f"{r['stack']} {_med(r['traced_per_run']) / 1024:.1f} KiB traced / {_med(r['rss_per_run']) / 1024:.1f} "
            f"KiB RSS" for r in idle) + "\n"
    return text


def _transport_lines(rows: dict[tuple[str, int, str], dict[str, Any]], others: list[str],
                     replay_rate: float | None) -> list[list[str]]:
    lines = [["mode", "N", "stack", "ev/CPU-s", "x agui_client", "x hand-written", "x replay", "p50 / p99 ms"]]
    for mode in ("full", "paced"):
        for n in sorted({k[1] for k in rows if k[0] == mode}):
            base, hand = rows.get((mode, n, AGUI)), rows.get((mode, n, HAND))
            for stack in (AGUI, *others):
                r = rows.get((mode, n, stack))
                if r is None:
                    continue
                o = None if r["error"] else r["rate"]
                b = None if base is None or base["error"] else base["rate"]
                h = None if hand is None or hand["error"] else hand["rate"]
                lat = "ERROR" if r["error"] else (
                    f"{_med(r['p50_ms']):.2f} / {_med(r['p99_ms']):.2f}" if r["p99_ms"] else "-")
                lines.append([mode, str(n), stack, "ERROR" if r["error"] else _k(o),
                              f"{o / b:.2f}x" if o and b else "-", f"{o / h:.2f}x" if o and h else "-",
                              f"{o / replay_rate:.2f}x" if o and replay_rate and mode == "full" else "-", lat])
    return lines


def _k(value: float | None) -> str:
    return "-" if value is None else f"{value / 1000:.0f}k"


def _grid(lines: list[list[str]], markdown: bool) -> str:
    if markdown:
        out = ["| " + " | ".join(lines[0]) + " |", "| " + " | ".join("---" for _ in lines[0]) + " |"]
        out += ["| " + " | ".join(cells) + " |" for cells in lines[1:]]
        return "\n".join(out)
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in lines)


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    rows = {(r["mode"], r["n"], r["stack"]): r for r in results["rows"]}
    out: list[dict[str, Any]] = []
    replay_row = rows.get(("replay", 1, AGUI))
    replay_rate = replay_row["rate"] if replay_row else None
    # (agui_client on its own connections, then on each backend of --agui-http: "[anyio] full speed ...")
    aguis = [AGUI, *sorted({k[2] for k in rows if k[2].startswith(AGUI + " [")})]
    for stack in aguis:
        tag = "" if stack == AGUI else stack[len(AGUI) + 1:] + " "
        for n in (100, 500):
            ours, hand = rows.get(("full", n, stack)), rows.get(("full", n, HAND))
            if ours and hand and ours["rate"] and hand["rate"]:
                value = ours["rate"] / hand["rate"]
                out.append({"target": f"{tag}full speed N={n}: >= {TARGET_VS_HAND}x hand-written", "value": value,
                            "met": value >= TARGET_VS_HAND})
            if ours and ours["rate"] and replay_rate:
                value = ours["rate"] / replay_rate
                out.append({"target": f"{tag}full speed N={n}: >= {TARGET_VS_REPLAY}x single-stream replay",
                            "value": value, "met": value >= TARGET_VS_REPLAY})
        paced = rows.get(("paced", 100, stack))
        if paced and paced["p99_ms"]:
            value = statistics.median(paced["p99_ms"])
            out.append({"target": f"{tag}paced N=100: p99 added delay <= {TARGET_P99_MS} ms", "value": value,
                        "met": value <= TARGET_P99_MS})
    for n in sorted({r["n"] for r in results["rows"] if r["mode"] == "idle"}):
        idle = {r["stack"]: r for r in results["rows"] if r["mode"] == "idle" and r["n"] == n}
        if AGUI in idle and HTTPX in idle:
            value = (statistics.median(idle[AGUI]["traced_per_run"])
                     - statistics.median(idle[HTTPX]["traced_per_run"])) / 1024
            out.append({"target": f"idle open run, N={n}: <= {TARGET_IDLE_KIB} KiB beyond httpx's own",
                        "value": value, "met": value <= TARGET_IDLE_KIB})
    return out


def _agui_http(text: str) -> list[str]:
    names = [x for x in text.split(",") if x]
    bad = [x for x in names if x not in AGUI_HTTP]
    if bad or not names or len(set(map(agui_stack, names))) != len(names):
        raise argparse.ArgumentTypeError(f"{text!r}: a list of distinct {', '.join(AGUI_HTTP)} (own and sized are "
                                         "the same stack: one of them)")
    return names


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench.concurrency", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    def ints(text: str) -> list[int]:
        # A count of 0 used to reach a thread pool as its size and end the row in an error; an empty list
        # ("") is how a mode is left out.
        counts = [int(x) for x in text.split(",") if x]
        if any(n < 1 for n in counts):
            raise argparse.ArgumentTypeError(f"{text!r}: counts of 1 or more, comma-separated ('' leaves the mode out)")
        return counts

    ap.add_argument("--n", type=ints, default=[1, 10, 100, 500], help="concurrent runs, full speed (1,10,100,500)")
    ap.add_argument("--paced-n", type=ints, default=[1, 10, 100, 500], help="concurrent runs, paced")
    ap.add_argument("--sync-n", type=ints, default=[10, 100], help="the sync client, a thread per run")
    ap.add_argument("--idle-n", type=ints, default=[100], help="open idle runs for the memory measure, "
                    "comma-separated to measure several counts (100)")
    ap.add_argument("--scale", type=float, default=0.01, help="gen.py chat scale of a full-speed run (0.01)")
    ap.add_argument("--paced-events", type=int, default=250, help="events of a paced run (250: 5 s at 50/s)")
    ap.add_argument("--rate", type=float, default=50.0, help="a paced run's events a second (50)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--min-events", type=int, default=60_000,
                    help="full speed: runs are repeated in waves until at least this many events are timed")
    ap.add_argument("--replay-cpu", type=float, default=0.5, help="CPU seconds of replay per repetition")
    ap.add_argument("--pool", choices=("sized", "default"), default="sized",
                    help="httpx pool: one connection per run (sized) or httpx's default limits")
    ap.add_argument("--agui-http", type=_agui_http, default=["own"],
                    help="agui_client's httpx client, comma-separated to run it on several: own (the default: "
                         "its shards on the package's own connections, agui_client._sockets), sized (one sized "
                         "like the others', httpx's own pool), or its own with the shards' connections on "
                         "another network backend: anyio (httpcore's, the package's until the eighteenth round) "
                         "or bench/asyncio_backend.py's asyncio-protocol, asyncio-sock")
    ap.add_argument("--raw", action="store_true",
                    help="full speed: also httpx alone reading raw bytes (aiter_raw, no fold) on the transport of "
                         "each --agui-http (the package's shards on its own connections or on that backend; "
                         "httpx's pool for sized)")
    ap.add_argument("--profile", action="store_true",
                    help="instead of the suite: one full-speed wave at the first --n per --agui-http stack (and "
                         "--raw), under cProfile on time.thread_time: top functions and own time by area")
    ap.add_argument("--top", type=int, default=25, help="--profile: functions listed")
    ap.add_argument("--no-paced", action="store_true")
    ap.add_argument("--no-idle", action="store_true")
    ap.add_argument("--smoke", action="store_true",
                    help="seconds: N = 1,3; full-speed runs of the chat at scale 0.002 (some 400 events); paced "
                         "runs of 12 events at 200 a second; 1 repetition; small idle N")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    a = ap.parse_args(argv)
    if a.smoke:
        a.n, a.paced_n, a.sync_n, a.idle_n = [1, 3], [1, 3], [2], [3]
        a.paced_events, a.reps, a.min_events, a.replay_cpu = 12, 1, 1, 0.01
        # (a smoke run proves every stack reads and folds every run to its end; the default run's length and
        # pace only made it wait: a fifth of the events, and paced runs of 0.06 s instead of 0.24)
        a.scale, a.rate = 0.002, 200.0
    return a


#: Where a profiled function's own time is counted (the first marker its file's path holds).
_AREAS = (("bench/asyncio_backend", "bench backend"), ("/h11/", "h11"), ("/httpcore/", "httpcore"),
          ("/anyio/", "anyio"), ("/sniffio/", "anyio"), ("/httpx/", "httpx"), ("agui_client/core/", "agui_client core"),
          ("agui_client/wire/", "agui_client wire"), ("agui_client/_sockets", "agui_client sockets"),
          ("agui_client/", "agui_client shells"),
          ("/asyncio/", "asyncio"), ("bench/", "bench"))
_SYSCALLS = ("recv", "send", "poll", "select", "epoll", "socket", "connect", "close")


def _area(path: str, name: str) -> str:
    if path == "~":
        return "system calls" if any(word in name for word in _SYSCALLS) else "builtins"
    return next((area for marker, area in _AREAS if marker in path), "other (stdlib)")


async def _profile(a: argparse.Namespace, log: Callable[[str], None]) -> str:
    """One full-speed wave of N runs per ``--agui-http`` stack (and ``--raw``), each under cProfile on
    ``time.thread_time`` after a warm-up wave: its top functions, and its own time by area."""
    import cProfile
    import pstats

    from .profiling import report_cprofile

    server = Server(a.scale, a.paced_events, a.rate)
    n = a.n[0]
    out: list[str] = []
    try:
        stacks = Stacks(server, a.pool, n, a.agui_http, a.raw)
        for stack in [*stacks.aguis, *stacks.raws]:
            make = stacks.full(stack)
            await make(n)  # (warm-up: the connections are kept alive, as in the suite's waves)
            gc.collect()
            profile = cProfile.Profile(time.thread_time)
            cpu0 = time.thread_time()
            profile.enable()
            events = await make(n)
            profile.disable()
            cpu = time.thread_time() - cpu0
            log(f"profiled {stack} N={n}: {events} events")
            entries = pstats.Stats(profile).stats  # type: ignore[attr-defined]
            areas: dict[str, float] = {}
            for (path, _line, name), v in entries.items():
                areas[_area(path, name)] = areas.get(_area(path, name), 0.0) + v[2]
            total = sum(areas.values()) or 1e-12
            out.append(f"## {stack}, full speed, N = {n}: {events} events, {cpu * 1e6 / events:.2f} us of thread "
                       f"CPU per event under cProfile (its own overhead included)\n")
            out.append("own time by area:\n" + "\n".join(
                f"{100 * t / total:6.1f}% {t * 1e6 / events:6.2f} us/event  {area}"
                for area, t in sorted(areas.items(), key=lambda kv: kv[1], reverse=True)))
            out.append(report_cprofile(profile, a.top, cpu) + "\n")
        await stacks.aclose()
    finally:
        server.close()
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if a.profile:
        print(asyncio.run(_profile(a, log)))
        return 0

    results = asyncio.run(run_suite(a, log))
    results["targets"] = targets(results)
    print(table(results, a.markdown))
    for t in results["targets"]:
        print(f"{'met    ' if t['met'] else 'NOT MET'}  {t['target']}: {t['value']:.2f}")
    a.json.write_text(json.dumps(results, indent=1, default=str))
    print(f"\nJSON: {a.json}")
    return 1 if any(r["error"] for r in results["rows"]) else 0


if __name__ == "__main__":
    sys.exit(main())
