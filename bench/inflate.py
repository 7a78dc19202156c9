"""What undoing a response's gzip or deflate coding costs a read: ``python -m bench.inflate``.

A compressing proxy in front of an agent (nginx's ``gzip on``, most CDNs) flushes each event as it
comes, so a stream's reads hold one event each, a few dozen bytes on the wire: whatever ``Inflater``
does per read, such a stream pays per event. This feeds a chat-like body of ``--reads`` events, coded
that way, through ``agui_client._inflate.Inflater`` one read at a time (no network, no fold), and
reports the best of ``--rounds`` per read, beside zlib's own decoder fed the same reads (the floor).

``--against FILE`` times another version of ``agui_client/_inflate.py`` too, interleaved with this one
round by round (``git show REV:agui_client/_inflate.py > before.py``, then ``--against before.py``).
Also reported: what a body whose trailer is spoiled costs in all, as the events are handed out again
up to the fault.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: zlib's window bits for each coding measured.
WBITS = {"gzip": 31, "deflate": 15}


def _event(number: int) -> bytes:
    """A ``TEXT_MESSAGE_CONTENT`` event of about 100 bytes, its delta varying as a reply's does."""
    return (b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"word %d of a reply, %x"}\n\n'
            % (number, number * 2654435761 % 2**32))


def one_event_reads(coding: str, count: int) -> list[bytes]:
    """``count`` events coded as a compressing proxy sends them: each flushed as it comes, one a read."""
    coder = zlib.compressobj(6, zlib.DEFLATED, WBITS[coding])
    reads = [coder.compress(_event(number)) + coder.flush(zlib.Z_SYNC_FLUSH) for number in range(count)]
    reads[-1] += coder.flush()
    return reads


def _load(path: str) -> ModuleType:
    # (inside the package, so that the file's relative imports resolve)
    spec = importlib.util.spec_from_file_location("agui_client._inflate_against", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fed(inflater: Any, reads: list[bytes]) -> tuple[float, int]:
    """Seconds to hand out every piece of ``reads`` (a fault ends it), and the bytes handed out."""
    handed = 0
    start = time.perf_counter()
    try:
        for read in reads:
            for piece in inflater.feed(read):
                handed += len(piece)
    except httpx.DecodingError:  # (a spoiled body: the time to its error is what counts)
        pass
    return time.perf_counter() - start, handed


def _zlib_alone(coding: str, reads: list[bytes]) -> float:
    inflate = zlib.decompressobj(WBITS[coding])
    start = time.perf_counter()
    for read in reads:
        inflate.decompress(read)
    return time.perf_counter() - start


def measure(reads_count: int, rounds: int, against: str | None) -> dict[str, dict[str, float]]:
    """Best of ``rounds`` µs a read per coding and decoder, ms for a body with a spoiled trailer, and the
    bytes of that body's events not handed out before its error (none should be)."""
    from agui_client import _inflate
    versions = {"this": _inflate} | ({"against": _load(against)} if against else {})
    results: dict[str, dict[str, float]] = {}
    for coding in WBITS:
        reads = one_event_reads(coding, reads_count)
        spoiled = [*reads[:-1], reads[-1][:-1] + bytes([reads[-1][-1] ^ 0xFF])]
        body = sum(len(_event(number)) for number in range(reads_count))
        best = {name: float("inf") for name in ["zlib alone", *versions, *(f"{v}, spoiled" for v in versions)]}
        kept = {}
        for _ in range(rounds):
            best["zlib alone"] = min(best["zlib alone"], _zlib_alone(coding, reads))
            for name, module in versions.items():
                best[name] = min(best[name], _fed(module.Inflater(coding), reads)[0])
                seconds, kept[name] = _fed(module.Inflater(coding), spoiled)
                best[f"{name}, spoiled"] = min(best[f"{name}, spoiled"], seconds)
        results[coding] = {name: seconds * 1e6 / reads_count if "spoiled" not in name else seconds * 1e3
                           for name, seconds in best.items()}
        results[coding] |= {f"{name}, spoiled, lost": body - handed for name, handed in kept.items()}
        results[coding]["bytes a read"] = sum(map(len, reads)) / reads_count
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.inflate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--reads", type=int, default=2000, help="events in the body, one a read (2000)")
    parser.add_argument("--rounds", type=int, default=15, help="repetitions, the best kept (15)")
    parser.add_argument("--against", metavar="FILE", help="another agui_client/_inflate.py to time beside")
    parser.add_argument("--json", metavar="FILE", help="write the figures there too")
    args = parser.parse_args(argv)
    results = measure(args.reads, args.rounds, args.against)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    for coding, row in results.items():
        print(f"{coding}: {row.pop('bytes a read'):.0f} bytes a read on the wire")
        for name, value in row.items():
            if name.endswith("lost"):
                print(f"  {name:<24} {value:8.0f} bytes of its events")
            else:
                print(f"  {name:<24} {value:8.3f} {'ms in all' if 'spoiled' in name else 'µs a read'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
