"""The agent side of ``python -m bench.concurrency``: a raw asyncio HTTP/1.1 server in its own process.

Run as ``python -m bench.loadserver --scale S --paced-events K``; it prints its port on the first
line of stdout and serves until stdin closes. Every answer is a chunked ``text/event-stream`` whose
first and last events carry the request's ``threadId`` and ``runId`` (so every concurrent run folds
a run it recognises, in a thread of its own):

* ``POST /full``: the ``gen.py`` chat stream at ``--scale`` (2,024 events at 0.01), written at full
  speed in 64 KiB chunks with a ``drain()`` after each: throughput.
* ``POST /paced``: ``--paced-events`` events of a streamed assistant message (tokens of a few
  characters), one chunk per event, 50 events per second per run (``--rate``), each run starting at a
  random phase. Each event's ``timestamp`` field holds the moment its bytes were handed to the socket:
  ``time.monotonic_ns() // 1000`` (microseconds of CLOCK_MONOTONIC, which both processes share), taken
  just before the write. The field exists in every event already, so the stamp costs the client
  nothing it would not parse anyway: latency.
* ``POST /idle``: the head and ``RUN_STARTED``, then nothing until the client closes: memory per open run.

Standard library only (plus ``bench.gen``): the server must cost the client nothing and be cheap
enough itself to pace 500 runs on a shared 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import random
import sys
import time
from typing import Any

from . import gen
from .servers import read_request

_HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-store\r\n"
         b"transfer-encoding: chunked\r\n\r\n")
_LAST_CHUNK = b"0\r\n\r\n"
WRITE_SIZE = 64 * 1024


def _frame(event: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n"


def chat_events(scale: float, seed: int = 1) -> list[dict[str, Any]]:
    """The ``gen.py`` chat stream's events."""
    buffer = io.BytesIO()
    gen.write("chat", seed, scale, False, buffer)
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def paced_events(count: int, seed: int = 1) -> list[dict[str, Any]]:
    """One streamed assistant message of ``count`` events in all; its deltas are chat's tokens."""
    deltas = [e["delta"] for e in chat_events(0.01, seed) if e["type"] == "TEXT_MESSAGE_CONTENT"]
    body: list[dict[str, Any]] = [{"type": "TEXT_MESSAGE_START", "messageId": "m-paced", "role": "assistant"}]
    body += [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-paced", "delta": deltas[i % len(deltas)]}
             for i in range(max(0, count - 4))]
    body.append({"type": "TEXT_MESSAGE_END", "messageId": "m-paced"})
    return [{"type": "RUN_STARTED", "threadId": "T", "runId": "R"}, *body,
            {"type": "RUN_FINISHED", "threadId": "T", "runId": "R"}]


def _ids_frame(event: dict[str, Any], ids: dict[str, str]) -> bytes:
    return _frame({**event, **ids})


def run_ids(raw: bytes) -> dict[str, str]:
    """The thread and run ids a request's body names (``T`` and ``R`` when it names none)."""
    body = json.loads(raw) if raw else {}
    return {"threadId": body.get("threadId", "T"), "runId": body.get("runId", "R")}


def _chunk(data: bytes | memoryview) -> list[bytes | memoryview]:
    return [b"%x\r\n" % len(data), data, b"\r\n"]


class LoadServer:
    def __init__(self, scale: float, paced: int, rate: float) -> None:
        events = chat_events(scale)
        self.full_first, self.full_last = events[0], events[-1]
        self.full_middle = b"".join(_frame(e) for e in events[1:-1])
        self.full_events = len(events)
        self.pacer = PacedRuns(paced, rate)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while (request := await read_request(reader)) is not None:
                path, raw = request
                ids = run_ids(raw)
                writer.write(_HEAD)
                if path == "/full":
                    await self.full(writer, ids)
                elif path == "/paced":
                    await self.paced_run(writer, ids)
                elif path == "/idle":
                    writer.writelines(_chunk(_ids_frame(self.pacer.events[0], ids)))
                    await writer.drain()
                    while await reader.read(65536):  # until the client hangs up
                        pass
                    return
                writer.write(_LAST_CHUNK)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def full(self, writer: asyncio.StreamWriter, ids: dict[str, str]) -> None:
        body = _ids_frame(self.full_first, ids) + self.full_middle + _ids_frame(self.full_last, ids)
        view = memoryview(body)
        for start in range(0, len(view), WRITE_SIZE):
            writer.writelines(_chunk(view[start:start + WRITE_SIZE]))
            await writer.drain()

    async def paced_run(self, writer: asyncio.StreamWriter, ids: dict[str, str]) -> None:
        await self.pacer.run(writer, ids, random.random())  # a random phase: runs do not tick together


class PacedRuns:
    """Runs paced like a model: ``count`` events each, ``rate`` a second, each stamped as it is sent (its
    ``timestamp``: microseconds of CLOCK_MONOTONIC, which the measuring process shares). This module's
    server and ``bench.hostile``'s send them."""

    def __init__(self, count: int, rate: float) -> None:
        self.events = paced_events(count)
        # Each paced event as the bytes before its stamp; the stamp and "}\n\n" are added when it is sent.
        self.prefix = [_frame(e)[:-3] + b',"timestamp":' for e in self.events[1:-1]]
        self.interval = 1.0 / rate

    async def run(self, writer: asyncio.StreamWriter, ids: dict[str, str], phase: float) -> None:
        """One run to ``writer`` (chunked), its first event ``phase`` (0 to 1) of an interval from now."""
        loop = asyncio.get_running_loop()
        interval = self.interval
        at = loop.time() + phase * interval
        stamp = time.monotonic_ns

        async def tick() -> None:
            nonlocal at
            delay = at - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            at += interval

        await tick()
        writer.writelines(_chunk(_ids_frame(self.events[0], ids)))
        for prefix in self.prefix:
            await tick()
            data = b"%s%d}\n\n" % (prefix, stamp() // 1000)
            writer.write(b"%x\r\n%s\r\n" % (len(data), data))
            await writer.drain()
        await tick()
        writer.writelines(_chunk(_ids_frame(self.events[-1], ids)))


async def serve(scale: float, paced: int, rate: float) -> None:
    server = LoadServer(scale, paced, rate)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0, backlog=4096, limit=2**20)
    port = listener.sockets[0].getsockname()[1]
    sys.stdout.write(json.dumps({"port": port, "full_events": server.full_events,
                                 "paced_events": len(server.pacer.events)}) + "\n")
    sys.stdout.flush()
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes our stdin
    sys.stdout.flush()
    os._exit(0)  # (at once: connections a client kept alive need no goodbye)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=float, default=0.01)
    ap.add_argument("--paced-events", type=int, default=250)
    ap.add_argument("--rate", type=float, default=50.0)
    a = ap.parse_args(argv)
    asyncio.run(serve(a.scale, a.paced_events, a.rate))
    return 0


if __name__ == "__main__":
    sys.exit(main())
