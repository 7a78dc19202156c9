"""``RecordingTransport``: keep each request body and the raw response bytes in a folder.

A MINIMAL STAND-IN, written for ``agui chat --record`` / ``/record`` on the h-chat branch: it is to
be replaced at merge by the fuller ``agui_client.testing.recording`` of the recordings work (issue 18
item 2), which keeps this interface: ``RecordingTransport(directory=None, inner=None)``, an
``httpx.BaseTransport`` with ``start(directory)`` and ``stop()``, writing ``NN.request.json`` and
``NN.sse`` per request.

Usage::

    recorder = RecordingTransport("captures/")
    with AgentClient(url, http_client=httpx.Client(transport=recorder)) as client:
        client.thread().run("hi")          # captures/01.request.json, captures/01.sse

Header values are never written (they may hold credentials); only the body goes to disk.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import httpx

__all__ = ["RecordingTransport"]


class RecordingTransport(httpx.BaseTransport):
    """An httpx transport that passes requests to ``inner`` and, while recording, writes each one.

    Args:
        directory: start recording there at once (created if missing); ``None``: not recording.
        inner: the transport that does the work (a fresh ``httpx.HTTPTransport`` by default).

    Request ``n`` (1-based, continuing after the files already in the folder) leaves
    ``NN.request.json`` (the body as sent) and ``NN.sse`` (the response body's bytes, as they were
    read, written as they arrive so a run cut short leaves what came).
    """

    def __init__(self, directory: str | Path | None = None, inner: httpx.BaseTransport | None = None) -> None:
        self._inner = inner if inner is not None else httpx.HTTPTransport()
        self._lock = threading.Lock()
        self._directory: Path | None = None
        self._count = 0
        if directory is not None:
            self.start(directory)

    @property
    def directory(self) -> Path | None:
        """The folder being recorded to, or ``None``."""
        return self._directory

    def start(self, directory: str | Path) -> None:
        """Record every later request into ``directory`` (created if missing).

        Raises:
            OSError: the folder cannot be created.
        """
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        with self._lock:
            self._directory = folder
            self._count = len(list(folder.glob("*.request.json")))

    def stop(self) -> None:
        """Record no further requests (a response being read is still written to its end)."""
        with self._lock:
            self._directory = None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through the inner transport, recording it when a folder is set."""
        with self._lock:
            folder = self._directory
            if folder is not None:
                self._count += 1
                stem = folder / f"{self._count:02d}"
        if folder is None:
            return self._inner.handle_request(request)
        body = request.read()
        stem.with_suffix(".request.json").write_bytes(body)
        response = self._inner.handle_request(request)
        sink = open(stem.with_suffix(".sse"), "wb")  # noqa: SIM115 - closed with the response
        return httpx.Response(status_code=response.status_code, headers=response.headers,
                              stream=_Tee(response.stream, sink), extensions=response.extensions)

    def close(self) -> None:
        """Close the inner transport."""
        self._inner.close()


class _Tee(httpx.SyncByteStream):
    """A response body read through, every chunk also written to ``sink``."""

    def __init__(self, stream: httpx.SyncByteStream | httpx.AsyncByteStream, sink: IO[bytes]) -> None:
        self._stream = stream
        self._sink = sink

    def __iter__(self) -> Iterator[bytes]:
        assert isinstance(self._stream, httpx.SyncByteStream)
        for chunk in self._stream:
            self._sink.write(chunk)
            self._sink.flush()
            yield chunk

    def close(self) -> None:
        try:
            if isinstance(self._stream, httpx.SyncByteStream):
                self._stream.close()
        finally:
            self._sink.close()
