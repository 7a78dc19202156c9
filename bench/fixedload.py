"""A fixed concurrent workload for instruction counts: ``python -m bench.fixedload`` (see bench/README.md).

``bench.concurrency`` times the client in CPU seconds, which a shared machine's load moves by more than
the few per cent a change makes. This runs the same work a fixed number of times, so that an instruction
count of the client process (``valgrind --tool=callgrind``, the server outside it) measures it:
``--n`` concurrent ``AsyncAgentClient`` runs of the ``gen.py`` chat stream (``bench.loadserver``'s
``/full``, in a child process), ``--warm`` untimed waves, then ``--rounds`` waves.

Everything the process does besides the waves (the interpreter's start, imports, the warm-up) is the
same whatever ``--rounds`` is, so the count of one wave is the difference between two runs that differ
only in ``--rounds``; ``--callgrind`` does exactly that: it runs this module twice under callgrind
(``--rounds`` 1 and 1 + ``--rounds``, the server a child that callgrind does not follow), and prints the
instructions per event and the functions whose own (``--inclusive``: inclusive) instructions per event
differ most between the two runs' ``callgrind_annotate`` (``--top``). It sets ``PYTHONHASHSEED`` to 0:
the same tree counts the same within some 0.1 %. ``--cache`` adds callgrind's cache and branch
simulation (``--cache-sim=yes --branch-sim=yes``): besides the instructions, the first-level and
last-level read and write misses and the mispredicted branches per event, and the functions whose own
misses per event differ, event by event (``--events``). The simulated caches are given (``--i1``,
``--d1``, ``--ll``), not detected: valgrind reads this kind of virtual machine's shared third level as one
direct-mapped cache of 256 MiB, which no access would miss; the defaults are a core's own caches (32 KiB
8-way first level for instructions and data, the 1 MiB 8-way second level as the last). ``--calls FILE``
profiles the measured waves with cProfile instead, natively: the Python calls per event, by function
(exact counts; its timings are not).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


async def waves(n: int, warm: int, rounds: int, scale: float, profile: Any = None) -> int:
    """``warm`` + ``rounds`` waves of ``n`` concurrent runs against a ``bench.loadserver`` child; the
    events the ``rounds`` waves folded (``profile``, a ``cProfile.Profile``, enabled around them)."""
    from agui_client import AsyncAgentClient
    from agui_client.stores import MemoryStore

    server = subprocess.Popen([sys.executable, "-m", "bench.loadserver", "--scale", str(scale)],
                              cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None
    try:
        port = json.loads(server.stdout.readline())["port"]
        client = AsyncAgentClient(f"http://127.0.0.1:{port}/full", timeout=600.0, idle_timeout=600.0)
        serial = 0

        async def wave() -> int:
            nonlocal serial
            serial += 1
            client.store = MemoryStore()  # (the threads start empty, and the store does not grow)

            async def one(i: int) -> int:
                result = await client.thread(f"t{serial}-{i}").run(run_id=f"r{serial}-{i}")
                if result.outcome != "success" or result.warnings:
                    raise RuntimeError(f"run {i}: {result.outcome} {result.warnings[:3]}")
                return result.events

            return sum(await asyncio.gather(*(one(i) for i in range(n))))

        for _ in range(warm):
            await wave()
        if profile is not None:
            profile.enable()
        events = sum([await wave() for _ in range(rounds)])
        if profile is not None:
            profile.disable()
        await client.close()
        return events
    finally:
        server.stdin.close()
        server.wait(60)
        server.stdout.close()


def _by_function(annotated: str) -> dict[str, int]:
    """``callgrind_annotate``'s rows: the count of its first (``--show``'s one) event by function (the file's
    path left out; a function's ``.``, none, is not a row)."""
    rows: dict[str, int] = {}
    for line in annotated.splitlines():
        match = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*)$", line)
        if match and ":" in match.group(2):
            name = re.sub(r"\[\S*/", "[", re.sub(r"^\S*/", "", match.group(2).strip()))
            rows[name] = rows.get(name, 0) + int(match.group(1).replace(",", ""))
    return rows


def _totals(out: Path) -> dict[str, int]:
    """A callgrind file's whole-program count of each event it recorded (its ``events:`` and ``totals:``
    lines; ``summary:`` where a file has no ``totals:``)."""
    names: list[str] = []
    totals: dict[str, list[int]] = {}
    for line in out.read_text(errors="replace").splitlines():
        key, _, rest = line.partition(": ")
        if key == "events":
            names = rest.split()
        elif key in ("totals", "summary"):
            totals[key] = [int(v) for v in rest.split()]
    counts = totals.get("totals") or totals["summary"]
    return dict(zip(names, counts + [0] * (len(names) - len(counts)), strict=True))


def _callgrind(args: argparse.Namespace, rounds: int,
               out: Path) -> tuple[int, dict[str, int], dict[str, dict[str, int]]]:
    """One run under callgrind: the events it folded, its totals by event, and by event its rows by function."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    simulate = (["--cache-sim=yes", "--branch-sim=yes", f"--I1={args.i1}", f"--D1={args.d1}", f"--LL={args.ll}"]
                if args.cache else [])
    command = ["valgrind", "--tool=callgrind", *simulate, f"--callgrind-out-file={out}", sys.executable,
               "-m", "bench.fixedload",
               "--n", str(args.n), "--warm", str(args.warm), "--rounds", str(rounds), "--scale", str(args.scale)]
    done = subprocess.run(command, cwd=Path.cwd(), env=env, capture_output=True, text=True, check=True)
    events = int(done.stdout.split()[-1])
    rows: dict[str, dict[str, int]] = {}
    for event in _listed(args):
        rows[event] = _by_function(subprocess.run(
            ["callgrind_annotate", f"--inclusive={'yes' if args.inclusive else 'no'}", f"--threshold={args.threshold}",
             f"--sort={event}", f"--show={event}", str(out)], capture_output=True, text=True, check=True).stdout)
    return events, _totals(out), rows


# What ``--cache`` reports per event, in callgrind's names: instructions, first-level (D1) and last-level
# (DL) data read and write misses, the first level's instruction misses, conditional and indirect
# branches' mispredictions.
CACHE_EVENTS = ("Ir", "D1mr", "D1mw", "DLmr", "DLmw", "I1mr", "ILmr", "Bcm", "Bim")


def _listed(args: argparse.Namespace) -> list[str]:
    """The events whose differences are listed by function: ``--events``, or instructions alone."""
    return args.events.split(",") if args.events else (["Ir", "D1mr", "DLmr", "Bcm"] if args.cache else ["Ir"])


def measure(args: argparse.Namespace) -> str:
    """Two runs under callgrind, ``1`` and ``1 + args.rounds`` waves: the events of the difference."""
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp)
        events1, totals1, rows1 = _callgrind(args, 1, where / "one.out")
        events2, totals2, rows2 = _callgrind(args, 1 + args.rounds, where / "more.out")
    events = events2 - events1
    total1, total2 = totals1["Ir"], totals2["Ir"]
    lines = [f"{events} events in {args.rounds} wave(s) of {args.n} runs: {total2 - total1:,} instructions, "
             f"{(total2 - total1) / events:,.0f} per event (runs: {total1:,} and {total2:,})"]
    if args.cache:
        lines.append(f"{'event':6} {'per event':>11} {'first run':>16} {'second run':>16}")
        for name in CACHE_EVENTS:
            per = (totals2.get(name, 0) - totals1.get(name, 0)) / events
            lines.append(f"{name:6} {per:11,.2f} {totals1.get(name, 0):16,} {totals2.get(name, 0):16,}")
    for event in _listed(args):
        lines.append(f"{'inclusive' if args.inclusive else 'own'} {event} per event (the difference of the two "
                     "runs), by function:")
        one, more = rows1[event], rows2[event]
        delta = {name: (more.get(name, 0) - one.get(name, 0)) / events for name in one.keys() | more.keys()}
        for name, per in sorted(delta.items(), key=lambda kv: -abs(kv[1]))[:args.top]:
            lines.append(f"{per:12,.{0 if event == 'Ir' else 2}f}  {name}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.fixedload", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100, help="concurrent runs a wave (100)")
    ap.add_argument("--warm", type=int, default=1, help="untimed waves first (1)")
    ap.add_argument("--rounds", type=int, default=1, help="waves measured (1)")
    ap.add_argument("--scale", type=float, default=0.01, help="gen.py chat scale of a run (0.01: 2,024 events)")
    ap.add_argument("--callgrind", action="store_true",
                    help="run this twice under valgrind's callgrind and print instructions per event")
    ap.add_argument("--calls", type=Path, help="profile the measured waves (cProfile) into this file and print "
                    "the calls per event, by function")
    ap.add_argument("--threshold", type=float, default=99.0, help="--callgrind: callgrind_annotate's --threshold")
    ap.add_argument("--inclusive", action="store_true", help="--callgrind: list functions' inclusive costs "
                    "(their own by default)")
    ap.add_argument("--cache", action="store_true", help="--callgrind: simulate the caches and the branch "
                    "predictor too, and print their misses per event")
    ap.add_argument("--i1", default="32768,8,64", help="--cache: the first-level instruction cache, "
                    "size,associativity,line (32768,8,64)")
    ap.add_argument("--d1", default="32768,8,64", help="--cache: the first-level data cache (32768,8,64)")
    ap.add_argument("--ll", default="1048576,8,64", help="--cache: the last-level cache (1048576,8,64: a core's "
                    "second level)")
    ap.add_argument("--events", help="--callgrind: the events listed by function, comma-separated callgrind names "
                    "(Ir; with --cache Ir,D1mr,DLmr,Bcm)")
    ap.add_argument("--keep", type=Path, help="--callgrind: keep the two runs' callgrind files in this directory")
    ap.add_argument("--top", type=int, default=40, help="--callgrind: functions listed")
    args = ap.parse_args(argv)
    if args.callgrind:
        print(measure(args))
    elif args.calls:
        import cProfile
        import pstats

        profile = cProfile.Profile()
        events = asyncio.run(waves(args.n, args.warm, args.rounds, args.scale, profile))
        stats = pstats.Stats(profile)
        stats.dump_stats(args.calls)
        rows = stats.stats  # type: ignore[attr-defined]
        calls = sum(v[1] for v in rows.values())
        print(f"{events} events: {calls:,} calls, {calls / events:.2f} per event (cProfile's, exact)")
        for (path, line, name), v in sorted(rows.items(), key=lambda kv: -kv[1][1])[:args.top]:
            print(f"{v[1] / events:9.3f}  {name}  {Path(path).name}:{line}")
    else:
        print(asyncio.run(waves(args.n, args.warm, args.rounds, args.scale)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
