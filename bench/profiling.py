"""Where a fold's time goes: ``python -m bench.profiling KIND [options]``.

Generates one ``gen.py`` stream and profiles one fold of it (after a warm-up fold):

* ``--form sse`` / ``jsonl``: ``agui_client.replay`` of the SSE / JSONL bytes;
* ``--form http``: ``AgentClient.thread().run()`` against the loopback server of the suite (the
  server thread is not profiled by cProfile; pyinstrument samples only the calling thread too).

``--stages`` instead times the pipeline stage by stage without any profiler (cumulative passes over
the JSONL lines: parse, + decode, + chunk expansion, + verification, + fold, then the real session and
``replay``), median of ``--reps``, and prints microseconds per event and each stage's increment: the
least distorted answer to "where does the time go".

``--tool cprofile`` (default) prints the top functions by own time ("self") with their share of the
profiled total, their cumulative time, and the same totals grouped by source file. cProfile's
per-call overhead inflates small, frequently called functions; ``--tool pyinstrument`` (if
installed) samples instead and reports self time per function and per file the same way.

Example::

    python -m bench.profiling chat --scale 0.25 --form jsonl --top 25
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import agui_client  # noqa: E402
from agui_client import AgentClient  # noqa: E402
from agui_client.stores import MemoryStore  # noqa: E402

from . import gen  # noqa: E402
from .run import BASE_SCALE  # noqa: E402
from .servers import StreamServer  # noqa: E402


def _short(path: str) -> str:
    for marker in ("/agui_client/", "/site-packages/", "/lib/python3"):
        if marker in path:
            return path.split(marker, 1)[1] if marker != "/agui_client/" else "agui_client/" + path.split(marker, 1)[1]
    return path


def _stream(kind: str, scale: float, seed: int) -> tuple[bytes, bytes, dict[str, Any]]:
    buffer = io.BytesIO()
    gen.write(kind, seed, scale, False, buffer)
    jsonl = buffer.getvalue()
    lines = jsonl.splitlines()
    sse = b"".join([b"data: " + line + b"\n\n" for line in lines])
    return jsonl, sse, json.loads(lines[0])


def report_cprofile(profile: cProfile.Profile, top: int, wall: float) -> str:
    stats = pstats.Stats(profile)
    entries = stats.stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in entries.values()) or 1e-12
    rows = sorted(entries.items(), key=lambda kv: kv[1][2], reverse=True)
    out = [f"wall {wall:.3f} s under cProfile; profiled own time {total:.3f} s",
           f"{'self %':>7} {'self s':>8} {'cum s':>8} {'calls':>10}  function"]
    for (path, line, name), (_cc, calls, tt, ct, _callers) in rows[:top]:
        out.append(f"{100 * tt / total:6.1f}% {tt:8.3f} {ct:8.3f} {calls:>10}  {_short(path)}:{line} {name}")
    by_file: dict[str, float] = defaultdict(float)
    for (path, _line, _name), v in entries.items():
        by_file[_short(path) if path != "~" else "(builtins)"] += v[2]
    out.append("")
    out.append("self time by file:")
    for path, tt in sorted(by_file.items(), key=lambda kv: kv[1], reverse=True)[:top]:
        out.append(f"{100 * tt / total:6.1f}% {tt:8.3f}  {path}")
    return "\n".join(out)


def report_pyinstrument(session: Any, top: int, wall: float) -> str:
    root = session.root_frame()
    by_function: dict[str, float] = defaultdict(float)
    by_file: dict[str, float] = defaultdict(float)

    def walk(frame: Any) -> None:
        # Own time: what the children do not account for, plus pyinstrument's synthetic "[self]" leaves.
        real = [c for c in frame.children if not c.is_synthetic]
        own = frame.time - sum(child.time for child in real)
        if own > 0:
            path = frame.file_path or "(native)"
            key = f"{_short(path)}:{frame.line_no} {frame.function}"
            by_function[key] += own
            by_file[_short(path)] += own
        for child in real:
            walk(child)

    walk(root)
    total = sum(by_function.values()) or 1e-12
    out = [f"wall {wall:.3f} s under pyinstrument; sampled {total:.3f} s",
           f"{'self %':>7} {'self s':>8}  function"]
    for key, tt in sorted(by_function.items(), key=lambda kv: kv[1], reverse=True)[:top]:
        out.append(f"{100 * tt / total:6.1f}% {tt:8.3f}  {key}")
    out.append("")
    out.append("self time by file:")
    for path, tt in sorted(by_file.items(), key=lambda kv: kv[1], reverse=True)[:top]:
        out.append(f"{100 * tt / total:6.1f}% {tt:8.3f}  {path}")
    return "\n".join(out)


def _pipeline(lines: list[bytes], upto: str) -> None:
    """Run the sans-IO stages by hand, up to ``upto``, the way RunSession composes them."""
    from agui_client.core.chunks import ChunkExpander
    from agui_client.core.fold import ThreadState
    from agui_client.core.verify import RunVerifier
    from agui_client.wire import codec, jsonio, sink

    parse, decode = jsonio.parse_json, codec.decode_value
    state = ThreadState()
    chunks = ChunkExpander()
    verifier = RunVerifier(known_tool_call_ids=state.has_tool_call)
    with sink.collect_warnings():
        if upto == "parse":
            for line in lines:
                parse(line)
            return
        if upto == "decode":
            for line in lines:
                decode(parse(line))
            return
        for index, line in enumerate(lines):
            for item in chunks.feed(decode(parse(line))):
                if upto == "chunks":
                    continue
                verifier.check(item, index)
                if upto == "verify":
                    continue
                state.apply(item)


def stages(jsonl: bytes, sse: bytes, reps: int) -> str:
    import gc
    import statistics

    lines = jsonl.splitlines()

    def session_pass() -> None:
        session = agui_client.RunSession()
        for line in lines:
            session.feed_payload(line)
        session.end()

    def floor(loads: Callable[[bytes], Any]) -> Callable[[], None]:
        def run() -> None:
            for line in lines:
                loads(line)
        return run

    todo: list[tuple[str, Callable[[], None]]] = [("json.loads (floor)", floor(json.loads))]
    try:
        import orjson

        todo.append(("orjson.loads", floor(orjson.loads)))
    except ImportError:
        pass
    todo += [
        ("codec.parse_json", lambda: _pipeline(lines, "parse")),
        ("+ codec.decode_value", lambda: _pipeline(lines, "decode")),
        ("+ ChunkExpander.feed", lambda: _pipeline(lines, "chunks")),
        ("+ RunVerifier.check", lambda: _pipeline(lines, "verify")),
        ("+ ThreadState.apply", lambda: _pipeline(lines, "fold")),
        ("RunSession.feed_payload", session_pass),
        ("replay(jsonl)", lambda: None if agui_client.replay(jsonl) else None),
        ("replay(sse)", lambda: None if agui_client.replay(sse) else None),
    ]
    samples: dict[str, list[float]] = {name: [] for name, _ in todo}
    for _, fn in todo:
        fn()  # warm-up
    for _ in range(reps):  # interleaved
        for name, fn in todo:
            gc.collect()
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    n = len(lines)
    base = statistics.median(samples["json.loads (floor)"])
    out = [f"{'stage':<26} {'median s':>9} {'us/event':>9} {'increment':>10} {'x json.loads':>13}"]
    previous = None
    for name, _ in todo:
        med = statistics.median(samples[name])
        step = ""
        if name.startswith("+ ") or name in ("RunSession.feed_payload", "codec.parse_json"):
            if previous is not None:
                step = f"{(med - previous) / n * 1e6:+.2f}"
        if name == "replay(jsonl)":
            step = f"{(med - statistics.median(samples['RunSession.feed_payload'])) / n * 1e6:+.2f}"
        if name == "replay(sse)":
            step = f"{(med - statistics.median(samples['replay(jsonl)'])) / n * 1e6:+.2f}"
        out.append(f"{name:<26} {med:9.4f} {med / n * 1e6:9.2f} {step:>10} {base / med:12.2f}x")
        if not name.startswith(("json.loads", "orjson")):
            previous = med
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.profiling", description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", choices=gen.KINDS)
    ap.add_argument("--scale", type=float, default=None, help="gen.py --scale (default: the suite's base scale)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--form", choices=("sse", "jsonl", "http"), default="sse")
    ap.add_argument("--tool", choices=("cprofile", "pyinstrument"), default="cprofile")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--stages", action="store_true", help="time the pipeline stage by stage (no profiler)")
    ap.add_argument("--reps", type=int, default=5, help="--stages: repetitions (median)")
    ap.add_argument("--dump", type=Path, default=None, help="cProfile: also write the raw stats here (snakeviz, ...)")
    a = ap.parse_args(argv)
    scale = a.scale if a.scale is not None else BASE_SCALE[a.kind]
    jsonl, sse, first = _stream(a.kind, scale, a.seed)
    from .run import machine

    info = machine()
    print(f"{a.kind} scale {scale:g}: {len(jsonl.splitlines())} events, {len(jsonl) / 1e6:.2f} MB JSONL, "
          f"form {'(stages)' if a.stages else a.form}, python {info['python']}, agui_client sources "
          f"{info['source_sha256']}, load average {info['loadavg_start']}")
    if a.stages:
        print(stages(jsonl, sse, a.reps))
        return 0

    server: StreamServer | None = None
    client: AgentClient | None = None
    fold: Callable[[], agui_client.RunResult]
    if a.form == "http":
        server = StreamServer()
        server.start()
        client = AgentClient(server.add("s", sse), idle_timeout=120.0)

        def fold() -> agui_client.RunResult:
            assert client is not None
            client.store = MemoryStore()
            return client.thread(first["threadId"]).run(run_id=first["runId"])
    else:
        data = sse if a.form == "sse" else jsonl

        def fold() -> agui_client.RunResult:
            return agui_client.replay(data)

    try:
        fold()  # warm-up
        if a.tool == "cprofile":
            profile = cProfile.Profile()
            start = time.perf_counter()
            profile.enable()
            result = fold()
            profile.disable()
            wall = time.perf_counter() - start
            print(report_cprofile(profile, a.top, wall))
            if a.dump:
                profile.dump_stats(str(a.dump))
        else:
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.0005)
            start = time.perf_counter()
            profiler.start()
            result = fold()
            profiler.stop()
            wall = time.perf_counter() - start
            print(report_pyinstrument(profiler.last_session, a.top, wall))
        print(f"\noutcome {result.outcome}, {len(result.state.messages)} messages, {len(result.warnings)} warnings")
    finally:
        if client is not None:
            client.close()
        if server is not None:
            server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
