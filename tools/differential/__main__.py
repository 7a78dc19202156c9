"""Fold thousands of streams with two versions of agui_client and compare everything that came of them.

Usage::

    python -m tools.differential --base REF [--head REF] [--count N] [--seed S] [--show K] [--per-case L]
    python -m tools.differential --oracle DIR [PATH ...] [--gen KIND:SEED:SCALE ...] [--mutate N] [--seed S]

The second form compares agui_client with the *reference* client instead (``reference.py``).

``--base`` (and ``--head``; default: the working tree) name git revisions; each is exported to a
temporary folder (``git archive``) and folded there by ``tools/differential/worker.py`` in its own
process, with that tree first on ``PYTHONPATH``. The cases (``tools/differential/cases.py``) are
generated once, by this checkout, so both versions fold the same bytes. Exit status 0 when every case
gave identical results (thread in wire form, outcome, warnings with their codes, messages and
indexes, errors with their location), 1 when some differ (the first ``--show`` are printed, each with
its first ``--per-case`` differences).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from .cases import ROOT, cases

WORKER = Path(__file__).with_name("worker.py")


def _export(ref: str, into: Path) -> Path:
    archive = into / f"{ref.replace('/', '_')}.tar"
    with open(archive, "wb") as out:
        subprocess.run(["git", "-C", str(ROOT), "archive", ref, "agui_client"], stdout=out, check=True)
    tree = into / f"tree-{ref.replace('/', '_')}"
    tree.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    return tree


def _fold(tree: Path, source: Path, target: Path) -> float:
    # (a fixed hash seed: warnings about unknown members come in set order, which the seed decides)
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONWARNINGS": "ignore", "PYTHONHASHSEED": "0"}
    started = time.perf_counter()
    subprocess.run([sys.executable, str(WORKER), str(source), str(target)], env=env, check=True, cwd=str(tree))
    return time.perf_counter() - started


def _differences(a: Any, b: Any, path: str = "") -> list[str]:
    if type(a) is not type(b):
        return [f"{path}: {a!r:.300} != {b!r:.300}"]
    if isinstance(a, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                out.append(f"{path}/{key}: only in {'head' if key in b else 'base'}")
            else:
                out += _differences(a[key], b[key], f"{path}/{key}")
        return out
    if isinstance(a, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items != {len(b)} items: {a!r:.300} != {b!r:.300}"]
        return [d for x, y, i in zip(a, b, range(len(a)), strict=True) for d in _differences(x, y, f"{path}/{i}")]
    return [] if a == b else [f"{path}: {a!r:.300} != {b!r:.300}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.differential", description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", help="the git revision to compare against")
    parser.add_argument("--head", help="a git revision (default: the working tree)")
    parser.add_argument("--count", type=int, default=3000, help="random cases (default 3000; plus gen and golden)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--show", type=int, default=10, metavar="K",
                        help="with --base: the first K differing cases printed (default 10)")
    parser.add_argument("--per-case", type=int, default=8, metavar="L",
                        help="with --base: the first L differences printed of each case shown, out of the "
                             "count it names (default 8; 0: every one)")
    mode = parser.add_argument_group("against the reference client (instead of --base)")
    mode.add_argument("--oracle", help="the oracle folder (fold.mjs, with `npm ci` done): compare with the reference")
    mode.add_argument("paths", nargs="*", metavar="PATH", help="streams (.jsonl, .sse) or folders of them")
    mode.add_argument("--gen", action="append", default=[], metavar="KIND:SEED:SCALE",
                      help="also a bench/gen.py stream; KIND producers, families, integrations or sdkwire: "
                           "SCALE variants of every producer shape, stream family or SDK dialect (repeatable)")
    mode.add_argument("--mutate", type=int, default=0, metavar="N",
                      help="also N hostile variants of every .jsonl stream (tools/differential/hostile.py; --seed)")
    mode.add_argument("--mutations", metavar="M,M", help="draw only these mutations (names: see hostile.MUTATIONS)")
    mode.add_argument("--sse-every", type=int, default=0, metavar="K",
                      help="write every K-th variant SSE-framed (the oracle's HTTP path)")
    mode.add_argument("--corpus", help="write generated streams here and keep them (without --oracle: only write)")
    mode.add_argument("--skip-sources", action="store_true", help="compare only what --gen/--mutate made")
    mode.add_argument("--save", help="write both folds of every stream that is not SAME here")
    mode.add_argument("--node", default="node", help="the node executable")
    mode.add_argument("--quiet", action="store_true", help="print only the streams that are not SAME")
    args = parser.parse_args(argv)
    if args.oracle or args.corpus:
        from .reference import run

        return run(args)
    if not args.base:
        parser.error("--base (two versions of agui_client) or --oracle (against the reference) is required")
    with tempfile.TemporaryDirectory(prefix="agui-differential-") as tmp:
        folder = Path(tmp)
        source = folder / "cases.jsonl"
        total = 0
        with open(source, "w", encoding="utf-8") as out:
            for case in cases(args.count, args.seed):
                out.write(json.dumps(case, ensure_ascii=True) + "\n")
                total += 1
        base_tree = _export(args.base, folder)
        head_tree = _export(args.head, folder) if args.head else ROOT
        base_out, head_out = folder / "base.jsonl", folder / "head.jsonl"
        base_time = _fold(base_tree, source, base_out)
        head_time = _fold(head_tree, source, head_out)
        differing = 0
        with open(base_out, encoding="utf-8") as a, open(head_out, encoding="utf-8") as b:
            for line_a, line_b in zip(a, b, strict=True):
                if line_a == line_b:
                    continue
                differing += 1
                if differing <= args.show:
                    one, two = json.loads(line_a), json.loads(line_b)
                    found = _differences(one["folded"], two["folded"])
                    print(f"--- {one['name']}: {len(found)} differences")
                    for item in found[:args.per_case or None]:
                        print("   ", item)
        print(f"{total} cases ({args.count} random, the rest gen.py and golden), each folded three ways "
              f"(replay, stream, collect): {total - differing} identical, {differing} differ "
              f"(base {base_time:.1f}s, head {head_time:.1f}s)")
        return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
