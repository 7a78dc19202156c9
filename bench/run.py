"""The agui_client performance suite: ``python -m bench`` (see bench/README.md).

Generates the five ``bench/gen.py`` stream kinds at a base and a 4x scale (JSONL and SSE forms) in a
temporary directory and measures, in this one process, interleaved (every measure once per
repetition, so drift and noise hit all of them alike), median of ``--reps``:

* ``json.loads`` / ``orjson.loads`` over the JSONL lines: the floor a Python client cannot beat;
* ``replay(sse)`` / ``replay(jsonl)``: ``agui_client.replay`` of the whole recorded response
  (SSE framing, decode, chunk expansion, verification, fold);
* ``http run()``: ``AgentClient(url).thread(tid).run(run_id=rid)`` against a loopback HTTP/1.1 server
  streaming the same SSE bytes (chunked, 64 KiB writes); one client per stream, reused, so the
  connection is kept alive as an application's would be;
* peak memory (``tracemalloc``, a separate pass after the timings) of each of the three folds, as a
  ratio to the final thread's size, ``len(json.dumps(state.to_wire()))``;
* ``first event``: loopback latency from just before the server writes ``RUN_STARTED`` to the moment
  ``thread.stream()`` yields it (``--ttfe-reps`` samples, median and p95);
* ``ts reference fold`` (optional, base scale only): ``fold.mjs --summary``'s own ``timing.foldMs``
  when node and the oracle are installed; its message/state hashes are compared with ours.

Prints one table and writes every number (with all samples) as JSON (``--json``).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import io
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

import agui_client  # noqa: E402
from agui_client import AgentClient, replay  # noqa: E402
from agui_client.stores import MemoryStore  # noqa: E402

from . import freeze_setup, gen  # noqa: E402
from .servers import FirstEventServer, ProcessStreamServer, StreamServer  # noqa: E402

try:
    import orjson
except ImportError:  # pragma: no cover - the suite works without it
    orjson = None  # type: ignore[assignment]

KINDS = gen.KINDS
BASE_SCALE = {"chat": 0.25, "state": 0.25, "tools": 0.25, "snapshot": 0.5, "mixed": 0.5}
TINY_SCALE = 0.01
GROWTH = 4.0
EXPECTED_OUTCOME = {"mixed": "interrupt"}  # the others end in success
DEFAULT_ORACLE = Path(tempfile.gettempdir()) / "agui-oracle"
DEFAULT_JSON = Path(tempfile.gettempdir()) / "agui_bench_results.json"

# Measure names (the JSON's "measure" values).
M_JSON = "json.loads"
M_ORJSON = "orjson.loads"
M_REPLAY_SSE = "replay(sse)"
M_REPLAY_JSONL = "replay(jsonl)"
M_HTTP = "http run()"
M_ORACLE = "ts reference fold"
M_TTFE = "first event"

# The targets of the performance issue.
TARGET_THROUGHPUT = 0.7   # replay throughput >= 0.7x json.loads, every kind
TARGET_GROWTH = 1.1       # growth exponent base -> 4x <= 1.1
TARGET_MEMORY = 3.0       # peak memory of the fold <= 3x the final state (as Python objects)
TARGET_TTFE = 1e-3        # first event <= 1 ms after its bytes are written
TARGET_HTTP = 0.8         # HTTP path throughput >= 0.8x replay(sse)


@dataclass
class Stream:
    kind: str
    size: str            # "base" or "4x"
    scale: float
    jsonl: bytes
    sse: bytes
    lines: list[bytes]
    thread_id: str
    run_id: str
    jsonl_path: Path
    url: str = ""
    client: AgentClient | None = None

    @property
    def events(self) -> int:
        return len(self.lines)

    def nbytes(self, measure: str) -> int:
        return len(self.sse) if measure in (M_REPLAY_SSE, M_HTTP) else len(self.jsonl)


@dataclass
class Row:
    kind: str
    size: str
    scale: float | None
    events: int
    bytes: int
    measure: str
    samples: list[float] = field(default_factory=list)
    error: str | None = None
    growth_exponent: float | None = None
    peak_bytes: int | None = None
    retained_bytes: int | None = None
    state_bytes: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def median(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None

    @property
    def memory_ratio(self) -> float | None:
        """Peak traced memory of the fold over the final state held as plain Python objects.

        The final state's size is measured as the memory it takes in Python (``json.loads`` of its JSON):
        the same JSON text takes 2.5-4.5x its length as Python objects, so a ratio against the text
        would charge every Python client for the interpreter's object headers. ``json_ratio`` is the
        ratio against the JSON text, also reported.
        """
        plain = self.extra.get("plain_objects_bytes")
        if self.peak_bytes is None or not plain:
            return None
        return float(self.peak_bytes / plain)

    @property
    def json_ratio(self) -> float | None:
        if self.peak_bytes is None or not self.state_bytes:
            return None
        return self.peak_bytes / self.state_bytes


# --------------------------------------------------------------------------------------------------
# streams
# --------------------------------------------------------------------------------------------------

def make_stream(kind: str, size: str, scale: float, seed: int, out_dir: Path) -> Stream:
    """Generate one stream with gen.py; the SSE form is gen.py's ``--sse`` framing of the same lines."""
    buffer = io.BytesIO()
    gen.write(kind, seed, scale, False, buffer)
    jsonl = buffer.getvalue()
    lines = jsonl.splitlines()
    sse = b"".join([b"data: " + line + b"\n\n" for line in lines])  # byte-identical to gen.py --sse
    tag = f"{kind}-x{scale:g}"
    jsonl_path = out_dir / f"{tag}.jsonl"
    jsonl_path.write_bytes(jsonl)
    (out_dir / f"{tag}.sse").write_bytes(sse)
    first = json.loads(lines[0])
    return Stream(kind=kind, size=size, scale=scale, jsonl=jsonl, sse=sse, lines=lines,
                  thread_id=first["threadId"], run_id=first["runId"], jsonl_path=jsonl_path)


# --------------------------------------------------------------------------------------------------
# the measures
# --------------------------------------------------------------------------------------------------

def _json_pass(s: Stream) -> None:
    loads = json.loads
    for line in s.lines:
        loads(line)


def _orjson_pass(s: Stream) -> None:
    loads = orjson.loads
    for line in s.lines:
        loads(line)


def _replay_sse(s: Stream) -> agui_client.RunResult:
    return replay(s.sse)


def _replay_jsonl(s: Stream) -> agui_client.RunResult:
    return replay(s.jsonl)


def _http(s: Stream) -> agui_client.RunResult:
    assert s.client is not None
    # The stream's own thread and run ids, so the fold sees the run it asked for (no LC-08
    # warnings), in a fresh store so the thread starts empty, as replay's does.
    s.client.store = MemoryStore()
    return s.client.thread(s.thread_id).run(run_id=s.run_id)


MEASURES: dict[str, Callable[[Stream], Any]] = {
    M_JSON: _json_pass,
    M_ORJSON: _orjson_pass,
    M_REPLAY_SSE: _replay_sse,
    M_REPLAY_JSONL: _replay_jsonl,
    M_HTTP: _http,
}
FOLDS = (M_REPLAY_SSE, M_REPLAY_JSONL, M_HTTP)


def timed(fn: Callable[[Stream], Any], s: Stream) -> float:
    gc.collect()
    start = time.perf_counter()
    fn(s)
    return time.perf_counter() - start


def canonical_sha(value: Any) -> str:
    """fold.mjs --summary's hash: sorted keys, no whitespace, non-ASCII unescaped; JS prints 1.0 as 1."""
    def norm(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
            return int(v)
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, list):
            return [norm(x) for x in v]
        return v

    text = json.dumps(norm(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def check_fold(s: Stream, measure: str, result: agui_client.RunResult) -> str | None:
    """What is wrong with a fold's result, or None."""
    want = EXPECTED_OUTCOME.get(s.kind, "success")
    if result.outcome != want:
        return f"outcome {result.outcome!r}, expected {want!r}"
    if result.warnings:
        codes = sorted({w.code for w in result.warnings})
        return f"{len(result.warnings)} warnings ({', '.join(codes)})"
    return None


def state_digest(result: agui_client.RunResult) -> dict[str, Any]:
    wire = result.state.to_wire()
    return {"messages": len(wire["messages"]), "messagesSha256": canonical_sha(wire["messages"]),
            "stateSha256": canonical_sha(wire["state"])}


# --------------------------------------------------------------------------------------------------
# phases
# --------------------------------------------------------------------------------------------------

def warm_up(streams: list[Stream], names: list[str], rows: dict[tuple[str, str, str], Row],
            log: Callable[[str], None]) -> dict[str, dict[str, Any]]:
    """Run every measure once (caches, lazy imports, connections) and check every fold's result."""
    digests: dict[str, dict[str, Any]] = {}
    for s in streams:
        key = f"{s.kind}/{s.size}"
        for name in names:
            row = rows[(s.kind, s.size, name)]
            try:
                result = MEASURES[name](s)
            except Exception as exc:  # noqa: BLE001 - recorded, the suite goes on
                row.error = f"{type(exc).__name__}: {exc}"[:500]
                log(f"  {key} {name}: FAILED {row.error}")
                continue
            if name in FOLDS:
                problem = check_fold(s, name, result)
                digest = state_digest(result)
                row.extra["result"] = digest
                if problem:
                    row.error = problem
                    log(f"  {key} {name}: {problem}")
                first = digests.setdefault(key, digest)
                if digest != first:
                    row.error = f"folded state differs from {M_REPLAY_SSE}'s: {digest} vs {first}"
                    log(f"  {key} {name}: {row.error}")
    return digests


def time_all(streams: list[Stream], names: list[str], rows: dict[tuple[str, str, str], Row], reps: int,
             log: Callable[[str], None]) -> None:
    for rep in range(reps):
        started = time.perf_counter()
        for s in streams:
            for name in names:
                row = rows[(s.kind, s.size, name)]
                if row.error:
                    continue
                row.samples.append(timed(MEASURES[name], s))
        log(f"  repetition {rep + 1}/{reps}: {time.perf_counter() - started:.1f} s")


def memory_pass(streams: list[Stream], names: list[str], rows: dict[tuple[str, str, str], Row],
                log: Callable[[str], None]) -> None:
    """Peak traced memory of each fold (tracemalloc slows Python down: never mixed with the timings).

    The input (bytes, lines) exists before tracing starts and is not counted; whatever the fold
    allocates is, including copies or decoded forms of the input it holds at once.
    """
    for s in streams:
        for name in names:
            if name not in FOLDS:
                continue
            row = rows[(s.kind, s.size, name)]
            if row.error:
                continue
            gc.collect()
            tracemalloc.start()
            tracemalloc.reset_peak()
            try:
                result = MEASURES[name](s)
                gc.collect()
                current, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            row.peak_bytes = peak
            row.retained_bytes = current
            text = json.dumps(result.state.to_wire())
            row.state_bytes = len(text)
            del result
            # The floor: the final thread as plain Python objects (json.loads of its JSON). No Python
            # client holding the thread as dicts/lists/str can use less; peak / floor is the overhead.
            gc.collect()
            tracemalloc.start()
            plain = json.loads(text)
            row.extra["plain_objects_bytes"] = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            del plain, text
        log(f"  {s.kind}/{s.size}: done")


def first_event_latency(reps: int, warmup: int = 5) -> list[float]:
    """Seconds from just before the server writes RUN_STARTED to thread.stream() yielding it."""
    samples: list[float] = []
    with FirstEventServer() as server, AgentClient(server.url("ttfe")) as client:
        for i in range(warmup + reps):
            thread = client.thread()
            with thread.stream() as events:
                iterator = iter(events)
                server.ready()
                first = next(iterator)
                arrived = time.perf_counter()
                server.got()
                for _ in iterator:
                    pass
            if type(first).__name__ != "RunStartedEvent":
                raise RuntimeError(f"first event was {first!r}")
            if events.result is None or events.result.outcome != "success":
                raise RuntimeError(f"first-event run ended {events.result!r}")
            if i >= warmup:
                samples.append(arrived - server.sent_at)
    return samples


def run_oracle(oracle: Path, s: Stream, reps: int, timeout: float, ours: dict[str, Any] | None,
               row: Row, log: Callable[[str], None]) -> None:
    env = {**os.environ, "NODE_ENV": "production"}
    for _ in range(reps):
        try:
            proc = subprocess.run(
                ["node", "--max-old-space-size=8192", str(oracle / "fold.mjs"), "--summary", str(s.jsonl_path)],
                capture_output=True, env=env, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            row.error = f"fold.mjs timed out after {timeout:g} s"
            log(f"  {s.kind}: {row.error}")
            return
        try:
            out = json.loads(proc.stdout)
        except ValueError:
            row.error = f"fold.mjs exit {proc.returncode}: {proc.stderr.decode(errors='replace')[:300]}"
            log(f"  {s.kind}: {row.error}")
            return
        if not out.get("ok") or not out.get("terminated") or out.get("warnings"):
            row.error = (f"reference fold: ok={out.get('ok')} terminated={out.get('terminated')} "
                         f"warnings={len(out.get('warnings') or [])} error={out.get('error')!r}")
            log(f"  {s.kind}: {row.error}")
            return
        row.samples.append(out["timing"]["foldMs"] / 1000)
        row.extra["reference"] = {"messages": out["messages"], "state": out["state"], "outcome": out.get("outcome"),
                                  "parseMs": out["timing"].get("parseMs")}
        log(f"  {s.kind}/{s.size}: {row.samples[-1]:.2f} s")
    if ours is not None and "reference" in row.extra:
        ref = row.extra["reference"]
        row.extra["sameAsOurs"] = (ref["messages"]["sha256"] == ours["messagesSha256"]
                                   and ref["state"]["sha256"] == ours["stateSha256"])


# --------------------------------------------------------------------------------------------------
# reporting
# --------------------------------------------------------------------------------------------------

def fill_growth(rows: list[Row]) -> None:
    by_key = {(r.kind, r.size, r.measure): r for r in rows}
    for r in rows:
        if r.size != "4x":
            continue
        base = by_key.get((r.kind, "base", r.measure))
        if base is None or not base.median or not r.median or base.bytes == r.bytes:
            continue
        r.growth_exponent = math.log(r.median / base.median) / math.log(r.bytes / base.bytes)
        # the same from the fastest samples: less sensitive to other load on the machine
        r.extra["growth_exponent_min"] = math.log(min(r.samples) / min(base.samples)) / math.log(r.bytes / base.bytes)


def ratio_to_json(rows: list[Row], r: Row) -> float | None:
    """json.loads time over this measure's time, same stream: 1.0 = as fast as json.loads."""
    base = next((x for x in rows if x.kind == r.kind and x.size == r.size and x.measure == M_JSON), None)
    if base is None or not base.median or not r.median or r.measure == M_TTFE:
        return None
    return base.median / r.median


def _si(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    if value >= 1e3:
        return f"{value / 1e3:.1f}k"
    return f"{value:.0f}"


def format_table(rows: list[Row], markdown: bool = False) -> str:
    head = ["kind", "scale", "events", "MB", "measure", "median s", "events/s", "MB/s", "x json.loads",
            "growth exp", "peak mem / state", "notes"]
    body: list[list[str]] = []
    for r in rows:
        med = r.median
        ratio = ratio_to_json(rows, r)
        notes: list[str] = []
        if r.error:
            notes.append(f"ERROR: {r.error}")
        if r.measure == M_HTTP and med:
            rep = next((x for x in rows if x.kind == r.kind and x.size == r.size and x.measure == M_REPLAY_SSE), None)
            if rep is not None and rep.median:
                notes.append(f"{rep.median / med:.2f}x replay(sse)")
        if r.measure == M_TTFE and med is not None and "p95_s" in r.extra:
            notes.append(f"p95 {r.extra['p95_s'] * 1e3:.3f} ms, median {med * 1e3:.3f} ms, "
                         f"n={len(r.samples)}")
        if r.peak_bytes is not None and r.state_bytes is not None:
            plain = r.extra.get("plain_objects_bytes")
            notes.append(f"peak {r.peak_bytes / 1e6:.1f} MB, state {r.state_bytes / 1e6:.2f} MB"
                         + (f" ({plain / 1e6:.1f} MB as Python objects)" if plain else ""))
        if r.measure == M_ORACLE and "sameAsOurs" in r.extra:
            notes.append("same messages+state as ours" if r.extra["sameAsOurs"] else "hashes DIFFER from ours")
        scale = r.size if r.scale is None else f"{r.size} ({r.scale:g})"
        body.append([
            r.kind, scale, str(r.events) if r.events else "", f"{r.bytes / 1e6:.2f}" if r.bytes else "", r.measure,
            "" if med is None else (f"{med:.6f}" if med < 0.001 else f"{med:.4f}" if med < 1 else f"{med:.3f}"),
            _si(r.events / med) if med and r.events and r.measure != M_TTFE else "",
            f"{r.bytes / 1e6 / med:.1f}" if med and r.bytes else "",
            "" if ratio is None else f"{ratio:.2f}x",
            "" if r.growth_exponent is None else f"{r.growth_exponent:.2f}",
            "" if r.memory_ratio is None else f"{r.memory_ratio:.1f}x",
            "; ".join(notes),
        ])
    if markdown:
        right = {2, 3, 5, 6, 7, 8, 9, 10}
        lines = ["| " + " | ".join(head) + " |",
                 "| " + " | ".join("---:" if i in right else "---" for i in range(len(head))) + " |"]
        lines += ["| " + " | ".join(cells) + " |" for cells in body]
        return "\n".join(lines)
    widths = [max(len(head[i]), *(len(b[i]) for b in body)) for i in range(len(head) - 1)]
    def fmt(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i in (0, 1, 4) else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=False))) + "  " + cells[-1]
    return "\n".join([fmt(head), "-" * (sum(widths) + 2 * len(widths) + 5)] + [fmt(b) for b in body])


def evaluate_targets(rows: list[Row]) -> list[dict[str, Any]]:
    """One verdict per target and (kind, scale) it applies to."""
    out: list[dict[str, Any]] = []

    def add(target: str, where: str, value: float | None, limit: float, ok: bool | None) -> None:
        out.append({"target": target, "where": where, "value": value, "limit": limit, "met": ok})

    for r in rows:
        where = f"{r.kind} {r.size}"
        if r.measure in (M_REPLAY_SSE, M_REPLAY_JSONL):
            ratio = ratio_to_json(rows, r)
            add(f"{r.measure} throughput >= {TARGET_THROUGHPUT}x json.loads", where, ratio, TARGET_THROUGHPUT,
                None if ratio is None else ratio >= TARGET_THROUGHPUT)
        if r.measure in (M_REPLAY_SSE, M_REPLAY_JSONL, M_HTTP) and r.growth_exponent is not None:
            add(f"{r.measure} growth exponent <= {TARGET_GROWTH}", r.kind, r.growth_exponent, TARGET_GROWTH,
                r.growth_exponent <= TARGET_GROWTH)
        if r.memory_ratio is not None:
            add(f"{r.measure} peak memory <= {TARGET_MEMORY}x final state", where, r.memory_ratio, TARGET_MEMORY,
                r.memory_ratio <= TARGET_MEMORY)
        if r.measure == M_HTTP and r.median:
            rep = next((x for x in rows if x.kind == r.kind and x.size == r.size and x.measure == M_REPLAY_SSE), None)
            if rep is not None and rep.median:
                value = rep.median / r.median
                add(f"http throughput >= {TARGET_HTTP}x replay(sse)", where, value, TARGET_HTTP, value >= TARGET_HTTP)
        if r.measure == M_TTFE and r.samples:
            add("first event <= 1 ms after its bytes (median)", "loopback", r.median, TARGET_TTFE,
                r.median is not None and r.median <= TARGET_TTFE)
            add("first event <= 1 ms after its bytes (p95)", "loopback", r.extra["p95_s"], TARGET_TTFE,
                r.extra["p95_s"] <= TARGET_TTFE)
    return out


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = ""
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=False).stdout.strip()
    except OSError:
        pass
    digest = hashlib.sha256()
    for path in sorted((ROOT / "agui_client").rglob("*.py")):
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    dirty = ""
    try:
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "agui_client"],
                               capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        pass
    return {
        "source_sha256": digest.hexdigest()[:16], "agui_client_modified": bool(dirty),
        "loadavg_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "nproc": os.cpu_count(), "cpu": cpu or platform.processor(), "platform": platform.platform(),
        "python": platform.python_version(), "implementation": platform.python_implementation(),
        "orjson": getattr(orjson, "__version__", None), "agui_client": agui_client.__version__,
        "commit": commit,
    }


# --------------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated gen.py kinds (default: all five)")
    ap.add_argument("--scale-factor", type=float, default=1.0,
                    help="multiplies every base scale (base: chat/state/tools 0.25, snapshot/mixed 0.5)")
    ap.add_argument("--growth", type=float, default=GROWTH, help="the large size, as a multiple of the base (4)")
    ap.add_argument("--tiny", action="store_true",
                    help=f"smoke run: every base scale {TINY_SCALE}, 1 repetition, 5 first-event samples, no oracle")
    ap.add_argument("--reps", type=int, default=None, help="repetitions per measure (default 5; --tiny 1)")
    ap.add_argument("--ttfe-reps", type=int, default=None, help="first-event samples (default 50; --tiny 5)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-http", action="store_true", help="skip the loopback HTTP measures")
    ap.add_argument("--server", choices=("process", "thread"), default="process",
                    help="where the loopback HTTP server runs: a child process (default; an agent is another "
                         "process) or a thread of the measuring process (it then shares the client's GIL)")
    ap.add_argument("--no-memory", action="store_true", help="skip the tracemalloc pass")
    ap.add_argument("--oracle", type=Path, default=None,
                    help=f"the reference fold's directory (fold.mjs); default {DEFAULT_ORACLE} when it and node exist")
    ap.add_argument("--no-oracle", action="store_true", help="skip the reference fold")
    ap.add_argument("--oracle-reps", type=int, default=1, help="reference folds per kind (default 1: they are slow)")
    ap.add_argument("--oracle-timeout", type=float, default=900.0, help="seconds per reference fold")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON, help=f"write the results here (default {DEFAULT_JSON})")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--keep-streams", type=Path, default=None, help="write the streams here and keep them")
    a = ap.parse_args(argv)
    a.kinds = [k.strip() for k in a.kinds.split(",") if k.strip()]
    unknown = [k for k in a.kinds if k not in KINDS]
    if unknown:
        ap.error(f"unknown kinds {unknown}; choose from {', '.join(KINDS)}")
    if a.reps is None:
        a.reps = 1 if a.tiny else 5
    if a.ttfe_reps is None:
        a.ttfe_reps = 5 if a.tiny else 50
    if a.reps < 1 or a.ttfe_reps < 1 or a.scale_factor <= 0 or a.growth <= 1:
        ap.error("--reps/--ttfe-reps must be >= 1, --scale-factor > 0, --growth > 1")
    return a


def oracle_dir(a: argparse.Namespace) -> Path | None:
    if a.no_oracle or (a.tiny and a.oracle is None):
        return None
    directory = a.oracle if a.oracle is not None else DEFAULT_ORACLE
    installed = (directory / "fold.mjs").exists() and (directory / "node_modules").exists()
    if shutil.which("node") is None or not installed:
        if a.oracle is not None:
            raise SystemExit(f"--oracle {directory}: needs node on PATH and an installed fold.mjs (npm ci)")
        return None
    return directory


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    oracle = oracle_dir(a)
    names = [M_JSON] + ([M_ORJSON] if orjson is not None else []) + [M_REPLAY_SSE, M_REPLAY_JSONL]
    if not a.no_http:
        names.append(M_HTTP)
    info = machine()
    log(f"python {info['python']}, orjson {info['orjson']}, {info['nproc']} cpu ({info['cpu']}), "
        f"{a.reps} repetitions, kinds {','.join(a.kinds)}; agui_client sources {info['source_sha256']}"
        f"{' (uncommitted changes)' if info['agui_client_modified'] else ''}; load average {info['loadavg_start']}"
        f"{'' if a.no_http else f'; HTTP server in a {a.server}'}")

    with tempfile.TemporaryDirectory(prefix="agui-bench-") as tmp:
        out_dir = a.keep_streams or Path(tmp)
        out_dir.mkdir(parents=True, exist_ok=True)
        streams: list[Stream] = []
        log("generating streams ...")
        for kind in a.kinds:
            base = (TINY_SCALE if a.tiny else BASE_SCALE[kind]) * a.scale_factor
            for size, scale in (("base", base), (f"{a.growth:g}x", base * a.growth)):
                s = make_stream(kind, size, round(scale, 6), a.seed, out_dir)
                streams.append(s)
                log(f"  {kind} {size} scale {s.scale:g}: {s.events} events, {len(s.jsonl) / 1e6:.2f} MB JSONL, "
                    f"{len(s.sse) / 1e6:.2f} MB SSE")
        rows_by_key: dict[tuple[str, str, str], Row] = {}
        rows: list[Row] = []
        for s in streams:
            for name in names:
                row = Row(kind=s.kind, size=s.size, scale=s.scale, events=s.events, bytes=s.nbytes(name), measure=name)
                rows_by_key[(s.kind, s.size, name)] = row
                rows.append(row)

        server: StreamServer | ProcessStreamServer | None = None
        if not a.no_http:
            server = ProcessStreamServer() if a.server == "process" else StreamServer()
        try:
            if server is not None:
                server.start()
                for s in streams:
                    s.url = server.add(f"{s.kind}-{s.size}", s.sse)
                    s.client = AgentClient(s.url, idle_timeout=120.0)
            if a.tiny:
                freeze_setup()
            log("warm-up and result checks ...")
            digests = warm_up(streams, names, rows_by_key, log)
            log(f"timing ({a.reps} interleaved repetitions) ...")
            time_all(streams, names, rows_by_key, a.reps, log)
            if not a.no_memory:
                log("memory pass (tracemalloc) ...")
                memory_pass(streams, names, rows_by_key, log)
        finally:
            for s in streams:
                if s.client is not None:
                    s.client.close()
            if server is not None:
                server.close()

        log(f"first-event latency ({a.ttfe_reps} samples) ...")
        ttfe = Row(kind="-", size="loopback", scale=None, events=1, bytes=0, measure=M_TTFE)
        try:
            ttfe.samples = first_event_latency(a.ttfe_reps, warmup=2 if a.tiny else 5)
            ordered = sorted(ttfe.samples)
            ttfe.extra["p95_s"] = ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]
        except Exception as exc:  # noqa: BLE001 - recorded
            ttfe.error = f"{type(exc).__name__}: {exc}"[:500]
            log(f"  first event: FAILED {ttfe.error}")

        if oracle is not None:
            log(f"reference fold ({oracle}/fold.mjs --summary, base scale, {a.oracle_reps} rep) ...")
            for s in streams:
                if s.size != "base":
                    continue
                row = Row(kind=s.kind, size=s.size, scale=s.scale, events=s.events, bytes=len(s.jsonl),
                          measure=M_ORACLE)
                run_oracle(oracle, s, a.oracle_reps, a.oracle_timeout, digests.get(f"{s.kind}/{s.size}"), row, log)
                # after this kind's base rows
                index = max(i for i, r in enumerate(rows) if r.kind == s.kind and r.size == "base")
                rows.insert(index + 1, row)
        rows.append(ttfe)

    fill_growth(rows)
    targets = evaluate_targets(rows)
    table = format_table(rows, markdown=a.markdown)
    print(table)
    missed = [t for t in targets if t["met"] is False]
    print(f"\ntargets: {sum(1 for t in targets if t['met'])} met, {len(missed)} missed")
    by_target: dict[str, list[str]] = {}
    for t in missed:
        value = t["value"]
        shown = f"{value * 1e3:.3f} ms" if "first event" in t["target"] else f"{value:.2f}"
        by_target.setdefault(t["target"], []).append(f"{t['where']} {shown}")
    for target, where in by_target.items():
        print(f"  MISSED {target}: " + ", ".join(where))

    errors = [r for r in rows if r.error]
    payload = {
        "machine": info,
        "config": {"kinds": a.kinds, "reps": a.reps, "ttfe_reps": a.ttfe_reps, "seed": a.seed, "tiny": a.tiny,
                   "scale_factor": a.scale_factor, "growth": a.growth,
                   "base_scales": {k: (TINY_SCALE if a.tiny else BASE_SCALE[k]) * a.scale_factor for k in a.kinds},
                   "oracle": str(oracle) if oracle else None, "http_write_size": 65536,
                   "http_server": None if a.no_http else a.server,
                   "state_size": "len(json.dumps(result.state.to_wire()))"},
        "rows": [{
            "kind": r.kind, "size": r.size, "scale": r.scale, "events": r.events, "bytes": r.bytes,
            "measure": r.measure, "median_s": r.median, "min_s": min(r.samples) if r.samples else None,
            "samples_s": r.samples,
            "events_per_s": (r.events / r.median) if r.median and r.events else None,
            "mb_per_s": (r.bytes / 1e6 / r.median) if r.median and r.bytes else None,
            "ratio_to_json_loads": ratio_to_json(rows, r), "growth_exponent": r.growth_exponent,
            "peak_bytes": r.peak_bytes, "retained_bytes": r.retained_bytes, "state_bytes": r.state_bytes,
            "memory_ratio": r.memory_ratio, "json_ratio": r.json_ratio, "error": r.error, **r.extra,
        } for r in rows],
        "targets": targets,
    }
    if hasattr(os, "getloadavg"):
        info["loadavg_end"] = list(os.getloadavg())
    info["source_sha256_end"] = machine()["source_sha256"]
    if info["source_sha256_end"] != info["source_sha256"]:
        log("note: agui_client's sources changed on disk while the suite ran "
            "(it measured the version imported at the start)")
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps(payload, indent=1))
    log(f"results written to {a.json}")
    if errors:
        log(f"{len(errors)} measure(s) failed: " + "; ".join(f"{r.kind}/{r.size} {r.measure}" for r in errors))
        return 1
    return 0
