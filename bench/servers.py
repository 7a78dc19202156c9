"""Loopback HTTP/1.1 servers for the benchmark (standard library only: asyncio in a background thread).

``StreamServer`` answers every ``POST /<key>`` with the SSE bytes registered under ``key``, as a
chunked ``text/event-stream`` response written in ``write_size`` pieces (64 KiB by default) with a
``drain()`` after each, the way a real producer streams a large response. Connections are kept
alive, so an ``httpx.Client`` reuses its connection across runs.

``FirstEventServer`` measures the latency of one event: on a request it sends the response head at
once, waits until the client says it is reading (``ready``), takes ``perf_counter()`` just before
writing ``RUN_STARTED``, then waits until the client has the event before it finishes the run.

Both run their loop in a daemon thread of this process, so server and client share one clock
(``time.perf_counter``) and, being Python, one GIL: what the numbers show is the client's cost
plus a small server share, as in any in-process harness. ``ProcessStreamServer`` runs a
``StreamServer`` in a child process instead (the suite's default for throughput, ``--server``), as a
real agent would run: the client is then charged for its own work and the transport only.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any

from typing_extensions import Self

__all__ = ["StreamServer", "ProcessStreamServer", "FirstEventServer"]

_HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-store\r\n"
         b"transfer-encoding: chunked\r\n\r\n")
_LAST_CHUNK = b"0\r\n\r\n"


def _chunk(data: bytes | memoryview) -> list[bytes | memoryview]:
    return [b"%x\r\n" % len(data), data, b"\r\n"]


async def read_request(reader: asyncio.StreamReader) -> tuple[str, bytes] | None:
    """Read one request (head and Content-Length body); return (path, body), or None at EOF.

    The benchmarks' servers (this module's, ``bench.loadserver``'s and ``bench.hostile``'s) all read
    their requests with it.
    """
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    body = await reader.readexactly(length) if length else b""
    return path, body


class _LoopThread:
    """An asyncio server running in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._server: asyncio.AbstractServer | None = None
        self._thread = threading.Thread(target=self.loop.run_forever, name=type(self).__name__, daemon=True)
        self.port = 0
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self) -> Self:
        self._thread.start()
        self._server = self.call(asyncio.start_server(self._tracked, "127.0.0.1", 0, limit=2**20))
        assert self._server is not None
        self.port = self._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    def call(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}/{path}"

    async def _tracked(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._handle(reader, writer)
        except asyncio.CancelledError:  # shut down with the connection still open
            writer.close()
        finally:
            self._tasks.discard(task)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    def close(self) -> None:
        async def stop() -> None:
            assert self._server is not None
            self._server.close()
            for task in list(self._tasks):  # connections a client kept alive
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self._server.wait_closed()

        try:
            self.call(asyncio.wait_for(stop(), 5))
        except Exception:  # noqa: BLE001 - best effort at shutdown
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self.loop.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


class StreamServer(_LoopThread):
    """Serves registered SSE bodies: ``server.add(key, body)`` then ``POST server.url(key)``."""

    def __init__(self, write_size: int = 64 * 1024) -> None:
        super().__init__()
        self.write_size = write_size
        self.bodies: dict[str, bytes] = {}

    def add(self, key: str, body: bytes) -> str:
        self.bodies[key] = body
        return self.url(key)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while (request := await read_request(reader)) is not None:
                body = self.bodies.get(request[0].lstrip("/"))
                if body is None:
                    writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                    await writer.drain()
                    continue
                writer.write(_HEAD)
                view = memoryview(body)
                step = self.write_size
                for start in range(0, len(view), step):
                    writer.writelines(_chunk(view[start:start + step]))
                    await writer.drain()
                writer.write(_LAST_CHUNK)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()


class ProcessStreamServer:
    """A :class:`StreamServer` in a child process, driven through a pipe (the same ``add``/``url`` API).

    An agent is another process: served from a thread of the client's own process, the server's
    Python work and its share of the GIL would be charged to the client being measured.
    """

    def __init__(self, write_size: int = 64 * 1024) -> None:
        self.write_size = write_size
        self.port = 0
        self._conn: Any = None
        self._process: Any = None

    def start(self) -> Self:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve_streams, args=(child, self.write_size), daemon=True,
                                        name="bench-stream-server")
        self._process.start()
        child.close()
        self.port = self._conn.recv()
        return self

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}/{path}"

    def add(self, key: str, body: bytes) -> str:
        self._conn.send(("add", key, body))
        self._conn.recv()  # stored
        return self.url(key)

    def close(self) -> None:
        if self._process is None:
            return
        try:
            self._conn.send(("stop",))
        except (BrokenPipeError, OSError):
            pass
        self._process.join(10)
        if self._process.is_alive():
            self._process.kill()
        self._conn.close()
        self._process = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _serve_streams(conn: Any, write_size: int) -> None:
    """The child process of :class:`ProcessStreamServer`."""
    with StreamServer(write_size) as server:
        conn.send(server.port)
        while True:
            try:
                message = conn.recv()
            except EOFError:
                return
            if message[0] != "add":
                return
            server.add(message[1], message[2])
            conn.send(True)


class FirstEventServer(_LoopThread):
    """One event's latency. Protocol per request (the client drives it):

    1. the server sends the response head immediately;
    2. the client enters ``thread.stream()`` and calls :meth:`ready` just before asking for the first event;
    3. the server records ``sent_at = perf_counter()`` and writes ``RUN_STARTED`` (one chunk);
    4. the client, holding the event, calls :meth:`got`; the server writes ``RUN_FINISHED`` and ends.
    """

    def __init__(self, thread_id: str = "ttfe-thread", run_id: str = "ttfe-run",
                 clock: Callable[[], float] = time.perf_counter) -> None:
        super().__init__()
        self.thread_id = thread_id
        self.run_id = run_id
        self.clock = clock
        self.sent_at: float = 0.0
        self._ready: asyncio.Event | None = None
        self._got: asyncio.Event | None = None

    def start(self) -> Self:
        super().start()

        async def make() -> None:
            self._ready = asyncio.Event()
            self._got = asyncio.Event()

        self.call(make())
        return self

    def ready(self) -> None:
        assert self._ready is not None
        self.loop.call_soon_threadsafe(self._ready.set)

    def got(self) -> None:
        assert self._got is not None
        self.loop.call_soon_threadsafe(self._got.set)

    def _frame(self, event: dict[str, Any]) -> bytes:
        return b"data: " + json.dumps(event, separators=(",", ":")).encode() + b"\n\n"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert self._ready is not None and self._got is not None
        try:
            while (request := await read_request(reader)) is not None:
                # Echo the request's ids so the client folds a run it recognises (no LC-08 warnings).
                sent = json.loads(request[1] or b"{}")
                ids = {"threadId": sent.get("threadId", self.thread_id), "runId": sent.get("runId", self.run_id)}
                first = b"".join(_chunk(self._frame({"type": "RUN_STARTED", **ids})))
                finished = self._frame({"type": "RUN_FINISHED", **ids, "outcome": {"type": "success"}})
                self._ready.clear()
                self._got.clear()
                writer.write(_HEAD)
                await writer.drain()
                await self._ready.wait()
                self.sent_at = self.clock()
                writer.write(first)
                await writer.drain()
                await self._got.wait()
                writer.writelines(_chunk(finished))
                writer.write(_LAST_CHUNK)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()
