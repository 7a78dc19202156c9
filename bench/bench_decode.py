"""How fast ``agui_client.decode_event`` reads realistic streams, against bare JSON parsing.

Usage::

    python bench/bench_decode.py [--scale S] [--seed N] [--repeat R] [--kinds chat,state,...] [--clock cpu|wall]

For each stream kind of ``bench/gen.py`` the script writes the JSONL stream into a temporary
directory, reads its lines as ``bytes`` (reading and splitting are not timed) and then times, in
one process and interleaved (every measure once per repetition, so drift and noise hit all of them
alike), one pass over every line with:

* ``json.loads``                      the stdlib lower bound a Python client cannot beat;
* ``orjson.loads``                    when orjson is installed;
* ``decode_event (orjson)``           the full typed decode, on the orjson fast path;
* ``decode_event (stdlib)``           the same with ``agui_client.wire.jsonio._orjson = None``.

It prints the median of the repetitions as events/s, MB/s and the ratio of throughput to
``json.loads`` (``1.00x`` = as fast as ``json.loads``; the target for decode is ``>= 0.80x``).

Time is the process's CPU time by default (``--clock cpu``): on a shared machine, wall-clock time
mostly measures the neighbours. ``--clock wall`` uses ``time.perf_counter``.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run from a checkout without installing

from agui_client.wire import jsonio  # noqa: E402
from agui_client.wire.codec import decode_event  # noqa: E402
from agui_client.wire.sink import collect_warnings  # noqa: E402

try:
    import orjson
except ImportError:  # pragma: no cover - the benchmark works without it
    orjson = None

KINDS = ("chat", "state", "tools", "snapshot", "mixed")
TARGET = 0.8


def generate(kind: str, scale: float, seed: int, out_dir: Path) -> list[bytes]:
    """Write one gen.py stream and return its lines (without the newline)."""
    path = out_dir / f"{kind}.jsonl"
    subprocess.run(
        [sys.executable, str(HERE / "gen.py"), kind, "--scale", str(scale), "--seed", str(seed), "-o", str(path)],
        check=True,
        stderr=subprocess.DEVNULL,
    )
    return path.read_bytes().splitlines()


def _pass_json(lines: list[bytes]) -> None:
    loads = json.loads
    for line in lines:
        loads(line)


def _pass_orjson(lines: list[bytes]) -> None:
    assert orjson is not None
    loads = orjson.loads
    for line in lines:
        loads(line)


def _pass_decode(lines: list[bytes]) -> None:
    with collect_warnings():
        for line in lines:
            decode_event(line)


def _pass_decode_stdlib(lines: list[bytes]) -> None:
    saved = jsonio._orjson
    jsonio._orjson = None
    try:
        _pass_decode(lines)
    finally:
        jsonio._orjson = saved


def measures() -> list[tuple[str, Callable[[list[bytes]], None]]]:
    out: list[tuple[str, Callable[[list[bytes]], None]]] = [("json.loads", _pass_json)]
    if orjson is not None:
        out.append(("orjson.loads", _pass_orjson))
        out.append(("decode_event (orjson)", _pass_decode))
    out.append(("decode_event (stdlib)", _pass_decode_stdlib))
    return out


def time_pass(fn: Callable[[list[bytes]], None], lines: list[bytes], clock: Callable[[], float]) -> float:
    gc.collect()
    start = clock()
    fn(lines)
    return clock() - start


def bench_kind(lines: list[bytes], repeat: int, clock: Callable[[], float]) -> dict[str, float]:
    """Median seconds per pass for each measure, interleaved."""
    todo = measures()
    for _, fn in todo:  # warm-up: caches, converter hooks, lazy imports
        fn(lines)
    samples: dict[str, list[float]] = {name: [] for name, _ in todo}
    for _ in range(repeat):
        for name, fn in todo:
            samples[name].append(time_pass(fn, lines, clock))
    return {name: statistics.median(values) for name, values in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=0.2, help="gen.py --scale (default 0.2)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=5, help="repetitions per measure (median reported)")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated gen.py kinds")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="cpu: process CPU time (default, robust on a busy machine); wall: perf_counter")
    args = parser.parse_args(argv)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    print(f"python {sys.version.split()[0]}, orjson {getattr(orjson, '__version__', 'not installed')}, "
          f"scale {args.scale}, seed {args.seed}, median of {args.repeat}, {args.clock} time")
    header = f"{'kind':<9} {'events':>8} {'MB':>7}  {'measure':<22} {'events/s':>11} {'MB/s':>8} {'vs json':>8}"
    print(header)
    print("-" * len(header))
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.kinds.split(","):
            lines = generate(kind, args.scale, args.seed, Path(tmp))
            size_mb = sum(len(line) + 1 for line in lines) / 1e6
            medians = bench_kind(lines, args.repeat, clock)
            base = medians["json.loads"]
            results[kind] = medians
            for i, (name, seconds) in enumerate(medians.items()):
                lead = f"{kind:<9} {len(lines):>8} {size_mb:>7.2f}" if i == 0 else " " * 26
                print(f"{lead}  {name:<22} {len(lines) / seconds:>11,.0f} {size_mb / seconds:>8.1f} "
                      f"{base / seconds:>7.2f}x")
    worst = min(min(base["json.loads"] / s for name, s in base.items() if name.startswith("decode_event"))
                for base in results.values())
    print(f"\nslowest decode_event vs json.loads: {worst:.2f}x (target >= {TARGET:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
