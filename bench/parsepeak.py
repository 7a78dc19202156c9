"""What parsing one large event takes at its peak: ``python -m bench.parsepeak``.

``max_run_memory`` charges an event of ``PARSED_LARGE`` bytes or more, while it is parsed,
``PARSE_COST`` bytes for each ``[``, ``{``, ``,`` and ``:`` (and ``PARSE_BYTE_COST`` a byte) beside
the ``STRUCTURE_COST`` each is charged anyway. This measures what the parse takes: each shape is
written to a file as a ``STATE_SNAPSHOT`` event, and a child process reads it, resets its peak resident
memory (``/proc/self/clear_refs``), parses it with ``parse_json`` (orjson's path, or the standard
library's) and reports the peak over what it held before. Resident memory, not tracemalloc: orjson
reserves room to write a text back and touches only what it writes, which tracemalloc counts.

Reported per shape, size and path: the peak over the input, per structural character and per byte,
and the excess over the charge that is not the parse's own (``STRUCTURE_COST`` a structural character)
with the per-byte charge taken out: the largest is what ``PARSE_COST`` must cover. Linux only.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MiB = 2**20


def _repeat(item: bytes, size: int, opening: bytes = b"[", closing: bytes = b"]") -> bytes:
    return opening + b",".join([item] * max(1, size // (len(item) + 1))) + closing


def _members(value: bytes, size: int) -> bytes:
    count = max(1, size // (len(value) + 8))
    return b"{" + b",".join(b'"%x":%s' % (i, value) for i in range(count)) + b"}"


def _nested(depth: int, size: int) -> bytes:
    block = b"[" * depth + b"]" * depth
    return _repeat(block, size)


def _records(size: int) -> bytes:
    record = {"id": "rec-0000001", "title": "Item number 1", "price": 1.25, "tags": ["a", "b"],
              "owner": {"name": "somebody", "active": True}}
    return _repeat(json.dumps(record, separators=(",", ":")).encode(), size)


def _string(size: int, head: bytes = b"") -> bytes:
    return b'"' + head + b"a" * (size - len(head)) + b'"'


#: name -> (the snapshot's body of about ``size`` bytes, what follows it in the event object)
SHAPES: dict[str, tuple[Callable[[int], bytes], bytes]] = {
    "[[],…]": (lambda n: _repeat(b"[]", n), b""),
    "[{},…]": (lambda n: _repeat(b"{}", n), b""),
    "[{\"a\":[]},…]": (lambda n: _repeat(b'{"a":[]}', n), b""),
    "[{\"a\":\"a\"},…]": (lambda n: _repeat(b'{"a":"a"}', n), b""),
    "[[\"a\"],…]": (lambda n: _repeat(b'["a"]', n), b""),
    "one-letter strings": (lambda n: _repeat(b'"a"', n), b""),
    "object of one-letter strings": (lambda n: _members(b'"a"', n), b""),
    "object of empty arrays": (lambda n: _members(b"[]", n), b""),
    "numbers": (lambda n: _repeat(b"1", n), b""),
    "long integers": (lambda n: _repeat(b"123456789012345678", n), b""),
    "integers past 64 bits": (lambda n: _repeat(b"12345678901234567890123", n), b""),
    "nested 100 deep": (lambda n: _nested(100, n), b""),
    "nested 500 deep": (lambda n: _nested(500, n), b""),
    "lone surrogates, \\u escapes": (lambda n: _repeat(b'"\\ud800\\u00e9"', n), b""),
    "records": (_records, b""),
    "one ASCII string": (_string, b""),
    "one string, an emoji first": (lambda n: _string(n, "\U0001f600".encode()), b""),
    "one string, an escaped emoji first": (lambda n: _string(n, b"\\ud83d\\ude00"), b""),
    "refused: nested 500 deep, a repeated key": (lambda n: _nested(500, n), b',"type":"STATE_SNAPSHOT"'),
    "refused: [[]] members, a repeated key": (lambda n: _members(b"[[]]", n)[:-1] + b',"type":1,"type":2}', b""),
    "refused: [{\"type\":[[]]},…], a repeated key": (lambda n: _repeat(b'{"type":[[]]}', n),
                                                   b',"type":"STATE_SNAPSHOT"'),
    "refused: [[],…], a repeated key": (lambda n: _repeat(b"[]", n), b',"type":"STATE_SNAPSHOT"'),
    "refused: [[],…], a key repeated as \\u escapes": (lambda n: _repeat(b"[]", n),
                                                      b',"typ\\u0065":"STATE_SNAPSHOT"'),
    "passes: [{\"type\":\"\\ud800\"},…], no key repeated": (lambda n: _repeat(b'{"type":"\\ud800"}', n), b""),
}


def event(shape: str, size: int) -> bytes:
    """The ``STATE_SNAPSHOT`` event of ``shape`` at about ``size`` bytes."""
    body, tail = SHAPES[shape]
    return b'{"type":"STATE_SNAPSHOT","snapshot":' + body(size) + tail + b"}"


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def child(path: str, reader: str) -> dict[str, Any]:
    """Parse the event in ``path`` (in this process) and say what the parse took at its peak."""
    import agui_client
    from agui_client.wire import jsonio

    if reader == "stdlib":
        jsonio._orjson = None
    data = Path(path).read_bytes()
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")  # (the peak resident memory, reset to what is resident)
    before = _status("VmRSS")
    try:
        jsonio.parse_json(data)
        outcome = "parsed"
    except agui_client.AguiError as exc:
        outcome = f"refused ({exc.rule}, at {getattr(exc, 'pointer', None)!r})"
    return {"peak": _status("VmHWM") - before, "outcome": outcome}


def measure(shape: str, size: int, reader: str, workdir: Path) -> dict[str, Any]:
    """One shape at one size on one path, in a child process."""
    from agui_client.core.budget import STRUCTURE_COST

    data = event(shape, size)
    file = workdir / "event.json"
    file.write_bytes(data)
    done = subprocess.run([sys.executable, "-m", "bench.parsepeak", "--child", str(file), reader],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    found = json.loads(done.stdout)
    structure = sum(data.count(mark) for mark in (b"[", b"{", b",", b":"))
    found.update(shape=shape, size=len(data), reader=reader, structure=structure,
                 per_character=found["peak"] / structure, per_byte=found["peak"] / len(data))
    found["excess"] = found["per_character"] - STRUCTURE_COST
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.parsepeak", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,4,16", help="event sizes in MiB, comma-separated (default 1,4,16)")
    parser.add_argument("--shapes", default="", help="only the shapes whose names hold this text")
    parser.add_argument("--child", nargs=2, metavar=("FILE", "READER"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    from agui_client.core.budget import PARSE_BYTE_COST

    sizes = [int(float(size) * MiB) for size in args.sizes.split(",")]
    print("| shape | MiB | path | peak MB | a byte | a structural character | excess, less a byte's charge | outcome |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as directory:
        for shape in SHAPES:
            if args.shapes not in shape:
                continue
            for size in sizes:
                for reader in ("orjson", "stdlib"):
                    row = measure(shape, size, reader, Path(directory))
                    beyond = row["excess"] - PARSE_BYTE_COST * row["size"] / row["structure"]
                    print(f"| {shape} | {size // MiB} | {reader} | {row['peak'] / 1e6:.0f} | {row['per_byte']:.1f} "
                          f"| {row['per_character']:.0f} | {beyond:.0f} | {row['outcome']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
