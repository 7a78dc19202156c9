"""Four costs an agent can choose, in CPU time: ``python -m bench.choices`` (see bench/README.md).

Each is work the client does for a few bytes, or a shape, the agent picks:

* ``save``/``request``: a record of 1 MiB of state nested 500 deep, which orjson cannot write (it stops
  at 254 levels), written by ``dump_record`` (a store's save) and ``dump_json`` (every run's request),
  for three shapes (arrays, objects, arrays of objects); beside it, orjson writing 1 MiB of arrays 200
  deep, the shallower state's cost;
* ``depth``: the depth check (``wire.depth.nests_deeper``) of a flat list of 7 million numbers beside
  600 empty arrays, a text whose brackets outnumber the limit, judged at the default limit;
* ``undo``: 20,000 ``add`` (then ``remove``) operations at ``/list/0`` of a list of 100,000, refused at
  the last (``apply_patch`` without a copy allowance: the client's own allowance stops such a patch
  after some 670 of them), applied and undone.

The fourth, the operations one patch may hold, is the client's ``max_patch_ops`` setting (20,000 by
default; a microsecond or two an operation). Times are ``time.process_time()``, the least of
``--reps`` runs (the machine's other load makes wall time unreliable); ``--tiny`` runs it all at a
64th of the sizes, in a second or two (what ``tests/test_bench_smoke.py`` runs). The package measured is
the checkout's this file sits in: to compare two, run a copy of it from the other checkout's ``bench/``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

from agui_client.core.patch import PatchFailed, apply_patch  # noqa: E402
from agui_client.wire.depth import nests_deeper  # noqa: E402
from agui_client.wire.jsonio import DEFAULT_MAX_DEPTH, dump_json, orjson_in_use, parse_json  # noqa: E402
from agui_client.wire.records import dump_record  # noqa: E402

__all__ = ["main", "measure"]


def _cpu_ms(call: Callable[[], Any], reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        start = time.process_time()
        call()
        best = min(best, time.process_time() - start)
    return best * 1000


def _nested(shape: str, depth: int, size: int) -> Any:
    """``size`` bytes of JSON nested ``depth`` deep, side by side, parsed."""
    if shape == "arrays":
        nest = "[" * depth + "]" * depth
    elif shape == "objects":
        nest = '{"a":' * depth + "1" + "}" * depth
    else:  # arrays of objects
        nest = '{"k":[' * (depth // 2) + '{"x":"text","n":1}' + "]}" * (depth // 2)
    text = "[" + ",".join([nest] * max(1, size // len(nest))) + "]"
    return parse_json(text.encode(), max_depth=depth + 100)


def _front_patch(name: str, ops: int, length: int) -> Callable[[], None]:
    def refused() -> None:
        document = {"list": list(range(length))}
        op = {"op": "add", "path": "/list/0", "value": 0} if name == "add" else {"op": "remove", "path": "/list/0"}
        try:
            apply_patch(document, [op] * (ops - 1) + [{"op": "test", "path": "/list/0", "value": "refused"}])
        except PatchFailed:
            pass
    return refused


def measure(scale: float = 1.0, reps: int = 5) -> list[dict[str, Any]]:
    """One row per measure: ``name``, ``what`` and ``cpu_ms``."""
    rows: list[dict[str, Any]] = []
    size = int(2**20 * scale)
    for shape in ("arrays", "objects", "arrays of objects"):
        record = {"state": _nested(shape, 500, size), "messages": []}
        what = f"{size:,} bytes of {shape} 500 deep"
        rows.append({"name": "save", "what": what, "cpu_ms": _cpu_ms(partial(dump_record, record), reps)})
        rows.append({"name": "request", "what": what, "cpu_ms": _cpu_ms(partial(dump_json, record), reps)})
    orjson = orjson_in_use()
    if orjson is not None:
        shallow = {"state": _nested("arrays", 200, size)}
        rows.append({"name": "orjson", "what": f"{size:,} bytes of arrays 200 deep",
                     "cpu_ms": _cpu_ms(lambda: orjson.dumps(shallow), reps)})
    count = int(7_000_000 * scale)
    text = b'{"a":[' + b",".join([b"1"] * count) + b'],"b":[' + b",".join([b"[]"] * 600) + b"]}"
    value = json.loads(text)
    rows.append({"name": "depth", "what": f"a flat list of {count:,} numbers ({len(text):,} bytes)",
                 "cpu_ms": _cpu_ms(lambda: nests_deeper(text, value, DEFAULT_MAX_DEPTH, None), reps)})
    ops, length = max(2, int(20_000 * scale)), max(2, int(100_000 * scale))
    for name in ("add", "remove"):
        rows.append({"name": "undo", "what": f"{ops:,} {name} at /list/0 of {length:,}, refused at the last",
                     "cpu_ms": _cpu_ms(_front_patch(name, ops, length), reps)})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.choices", description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="a 64th of the sizes, one repetition")
    parser.add_argument("--reps", type=int, default=5, help="repetitions; the least CPU time is kept (5)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    rows = measure(1 / 64 if args.tiny else 1.0, 1 if args.tiny else args.reps)
    for row in rows:
        print(f"{row['name']:8} {row['cpu_ms']:9.1f} ms CPU  {row['what']}")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
