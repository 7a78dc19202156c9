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
the same tree counts the same within some 0.1 %. ``--calls FILE`` profiles the measured waves with
cProfile instead, natively: the Python calls per event, by function (exact counts; its timings are not).
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
    """``callgrind_annotate``'s rows: instructions by function (the file's path left out)."""
    rows: dict[str, int] = {}
    for line in annotated.splitlines():
        match = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*)$", line)
        if match and ":" in match.group(2):
            name = re.sub(r"\[\S*/", "[", re.sub(r"^\S*/", "", match.group(2).strip()))
            rows[name] = rows.get(name, 0) + int(match.group(1).replace(",", ""))
    return rows


def _callgrind(args: argparse.Namespace, rounds: int, out: Path) -> tuple[int, int, dict[str, int]]:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-m", "bench.fixedload",
               "--n", str(args.n), "--warm", str(args.warm), "--rounds", str(rounds), "--scale", str(args.scale)]
    done = subprocess.run(command, cwd=Path.cwd(), env=env, capture_output=True, text=True, check=True)
    events = int(done.stdout.split()[-1])
    total = int(re.search(r"Collected : (\d+)", done.stderr).group(1))  # type: ignore[union-attr]
    annotated = subprocess.run(["callgrind_annotate", f"--inclusive={'yes' if args.inclusive else 'no'}",
                                f"--threshold={args.threshold}", str(out)],
                               capture_output=True, text=True, check=True).stdout
    return events, total, _by_function(annotated)


def measure(args: argparse.Namespace) -> str:
    """Two runs under callgrind, ``1`` and ``1 + args.rounds`` waves: the instructions of the difference."""
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp)
        events1, total1, rows1 = _callgrind(args, 1, where / "one.out")
        events2, total2, rows2 = _callgrind(args, 1 + args.rounds, where / "more.out")
    events = events2 - events1
    lines = [f"{events} events in {args.rounds} wave(s) of {args.n} runs: {total2 - total1:,} instructions, "
             f"{(total2 - total1) / events:,.0f} per event (runs: {total1:,} and {total2:,})",
             f"{'inclusive' if args.inclusive else 'own'} instructions per event (the difference of the two runs), "
             "by function:"]
    delta = {name: (rows2.get(name, 0) - rows1.get(name, 0)) / events for name in rows1.keys() | rows2.keys()}
    for name, per in sorted(delta.items(), key=lambda kv: -abs(kv[1]))[:args.top]:
        lines.append(f"{per:12,.0f}  {name}")
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
