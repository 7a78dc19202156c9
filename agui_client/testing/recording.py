"""Recordings: every exchange an httpx client makes, kept on disk as it happens.

A recording is a folder of numbered exchanges, in request order (``NN`` is ``01``, ``02`` ... and
grows a digit past ``99``):

* ``NN.request.json``: the request body as sent (the ``RunAgentInput``), but for the request's
  credentials, which it may carry back to the agent (see below);
* ``NN.response.json``: the answer's status and content type (``{"status": 200, "contentType":
  "text/event-stream"}``);
* ``NN.sse``: the response body, written (and flushed) as it streams through (decompressed when the agent sent
  it gzip- or deflate-encoded, so the file is the event stream the client read).

Headers are never written, in either direction (they carry credentials), nor is the URL (a query
may carry a token). A credential of the request that the agent repeats in its answer (an error that
quotes the ``Authorization`` header) is written as ``[redacted]``, as in the client's errors, also
when the answer's charset writes it otherwise (a UTF-16 or EBCDIC error page), or the answer is
written in another charset than it names (a UTF-16 page naming UTF-8, or none). So it is in a
request's body: the thread's messages and state that the next request sends back hold what the agent
answered, echo included (each string holding one is written with ``[redacted]`` in its place). A
request that got no answer at all (the agent unreachable) leaves no file.
``agui replay DIR`` folds such a folder into the thread it recorded, and
:class:`~agui_client.testing.RecordedAgent` serves it back to a client under test.

``RecordingTransport`` wraps any ``httpx.BaseTransport`` (httpx's own by default)::

    import httpx
    from agui_client import AgentClient
    from agui_client.testing import RecordingTransport

    recorder = RecordingTransport("recordings/delete-staging")
    with httpx.Client(transport=recorder) as http, AgentClient(url, http_client=http) as client:
        client.thread().run("Delete the staging environment")

Recording never fails a run: a file that cannot be written (a full disk, a folder deleted while
recording) leaves that exchange unrecorded (its files so far are removed) or, once its answer is
streaming, the rest of that answer unrecorded (what was written is kept, as when a process is killed).
Each such problem is logged as a warning (the ``agui_client.testing`` logger) and kept in the transport's
``problems``.

It can also start and stop mid-session (``recorder.start(DIR)`` / ``recorder.stop()``), as
``agui chat``'s ``/record`` does. A folder that already holds exchanges is continued after its last
number, so two processes working one thread in turn (``agui run --thread-file ... --record DIR``,
then ``--resume``) leave one recording of the whole thread.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import stat
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, BinaryIO, ClassVar

import httpx

from .._inflate import CODINGS, Inflater
from .._pool import ShardedSyncTransport, ShardedTransport
from ..core.redact import SENSITIVE_EXTENSION, BytesRedactor, Redactor

__all__ = ["RecordingTransport", "AsyncRecordingTransport", "recorded_exchanges", "EXCHANGE_NAME", "open_recorded",
           "read_recorded", "unanswered", "REQUEST_FILE_BYTES", "META_FILE_BYTES"]

logger = logging.getLogger("agui_client.testing")

#: The most problems a transport keeps in ``problems`` (each is also logged): a full disk fails every
#: exchange of a long session the same way.
PROBLEMS_KEPT = 100

#: The name of one exchange's request file: ``01.request.json`` (its number and the rest).
EXCHANGE_NAME = re.compile(r"^(\d{2,})\.request\.json$")


#: The most bytes of a recorded request (``NN.request.json``) read: the whole thread as it was sent, so
#: large, but a folder is the reader's input, and one file of it must not take all its memory.
REQUEST_FILE_BYTES = 256 * 1024 * 1024
#: The most bytes of a recorded response's status and content type (``NN.response.json``).
META_FILE_BYTES = 64 * 1024


def open_recorded(path: str | os.PathLike[str]) -> BinaryIO:
    """``path``, a file of a recording folder, open for binary reading: a regular file only.

    A folder may come from anyone: a name that is a FIFO (or a link to one) would block the open
    until some other process wrote to it, and a link to ``/dev/zero`` or ``/dev/urandom`` would never
    end. The file is opened without blocking and looked at before anything is read.

    Raises:
        OSError: it cannot be opened.
        ValueError: it is not a regular file.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path}: not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_recorded(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of ``path``, a file of a recording folder (see :func:`open_recorded`), at most ``limit``.

    Raises:
        OSError: it cannot be read.
        ValueError: it is not a regular file, or holds more than ``limit`` bytes.
    """
    with open_recorded(path) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path}: larger than {limit} bytes")
    return data


def recorded_exchanges(directory: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """The exchanges a recording folder holds: ``(number, request file)`` in request order."""
    found: list[tuple[int, Path]] = []
    for entry in Path(directory).iterdir():
        match = EXCHANGE_NAME.match(entry.name)
        if match is not None:
            found.append((int(match.group(1)), entry))
    found.sort()
    return found


def unanswered(request: str | os.PathLike[str]) -> str | None:
    """What to say of ``request`` (an ``NN.request.json``) when its answer never came, ``None`` when it did.

    A request is written before it is sent; its ``NN.response.json`` and ``NN.sse`` when the answer's head
    comes. A request with neither beside it is the last of a recording whose command ended (killed,
    or still running) during that run: naming the missing ``NN.sse`` said which file, not why. What
    reads a folder (``agui replay``, ``agui verify``, :class:`~agui_client.testing.RecordedAgent` and so
    ``agui serve``) says this, and that the runs before it read once the request is moved away.
    """
    path = Path(request)
    name = path.name.split(".", 1)[0]
    stem = path.parent / name
    # (lexists: a dangling link or a FIFO in an answer's place is an answer to refuse, named as it is,
    # not one that never came)
    if any(os.path.lexists(f"{stem}{rest}") for rest in (".response.json", ".sse")):
        return None
    return (f"{path} has no response beside it ({name}.sse): the recording stopped during that run, before its "
            f"answer came (move {path.name} away to read the runs before it)")


def _redacted_body(body: bytes, redactor: Redactor) -> bytes:
    """A request's body as its file keeps it: as sent, unless it holds one of the request's credentials.

    A credential the agent echoed is written ``[redacted]`` in the answer's file, and sent back to it in
    the next request: the thread's messages and state hold the reply as the agent wrote it. That body is
    read as JSON and written again with each string (keys too) redacted, so the file still reads as the
    ``RunAgentInput`` it was (``agui replay``, ``RecordedAgent``); one that is not JSON is redacted as text.
    """
    if not redactor:
        return body
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return body  # (not a body this client sends; the answer's scrub has no charset to go by here either)
    if redactor.text(text) == text:
        return body
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return redactor.text(text).encode("utf-8")
    redacted = redactor.json(value)
    try:
        return json.dumps(redacted, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate the thread holds (an agent may send one): the client wrote it as an escape,
        # which UTF-8 text cannot hold. Every character past ASCII escaped, the file reads as the same JSON.
        return json.dumps(redacted).encode("ascii")


class _Recorder:
    """Where the next exchange goes, shared by the sync and async transports."""

    def __init__(self, directory: str | os.PathLike[str] | None, sensitive_headers: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self.marked = frozenset(name.strip().lower() for name in sensitive_headers)
        self._directory: Path | None = None
        self.files: list[Path] = []
        self.problems: list[str] = []
        if directory is not None:
            self.start(directory)

    @property
    def directory(self) -> Path | None:
        return self._directory

    def start(self, directory: str | os.PathLike[str]) -> None:
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        with self._lock:
            self._directory = path

    def stop(self) -> None:
        with self._lock:
            self._directory = None

    def failed(self, path: str | os.PathLike[str], error: OSError, what: str) -> None:
        """A file of the recording could not be written: logged, and kept in ``problems`` (the run goes on)."""
        problem = f"{os.fspath(path)}: {error.strerror or error} ({what})"
        logger.warning("recording: %s", problem)
        with self._lock:
            if len(self.problems) < PROBLEMS_KEPT:
                self.problems.append(problem)

    def redactor(self, request: httpx.Request) -> Redactor:
        """The redactor of ``request``'s credentials: its sensitive headers and URL, by the names this
        transport was given and those the client that sent it marked."""
        marked = self.marked | frozenset(request.extensions.get(SENSITIVE_EXTENSION, ()))
        return Redactor.of(request.headers.multi_items(), [str(request.url)], marked=marked)

    def reserve(self, request: httpx.Request, body: bytes) -> str | None:
        """Write ``body`` (``request``'s, without its credentials: :func:`_redacted_body`) as the next
        exchange's request; its stem (``dir/NN``), or ``None`` when stopped (or when the request file could
        not be written: that exchange is not recorded)."""
        with self._lock:
            directory = self._directory
            if directory is None:
                return None
            try:
                taken = recorded_exchanges(directory)
                number = taken[-1][0] + 1 if taken else 1
                while True:
                    stem = directory / f"{number:02d}"
                    if any(os.path.lexists(f"{stem}{rest}") for rest in (".response.json", ".sse")):
                        number += 1  # (files left there by something else are never written over)
                        continue
                    try:
                        # O_EXCL: another process recording into the same folder never shares a number.
                        fd = os.open(f"{stem}.request.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                    except FileExistsError:
                        number += 1
                        continue
                    break
            except OSError as error:
                failure: tuple[str | os.PathLike[str], OSError] | None = (directory, error)
            else:
                failure = None
        if failure is not None:
            self.failed(*failure, "this exchange is not recorded")
            return None
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(_redacted_body(body, self.redactor(request)))
        except OSError as error:
            self._remove(str(stem))
            self.failed(f"{stem}.request.json", error, "this exchange is not recorded")
            return None
        self.files.append(Path(f"{stem}.request.json"))
        return str(stem)

    def _remove(self, stem: str) -> None:
        """Remove what was written of exchange ``stem`` (no answer, or its files could not be made)."""
        for path in (Path(f"{stem}.request.json"), Path(f"{stem}.response.json"), Path(f"{stem}.sse")):
            if path.is_file() or path.is_symlink():
                with contextlib.suppress(OSError):
                    path.unlink()
            with contextlib.suppress(ValueError):
                self.files.remove(path)

    def unreserve(self, stem: str | None) -> None:
        """No answer came (the agent was unreachable, the connection failed): no exchange to keep."""
        if stem is not None:
            self._remove(stem)

    def response(self, stem: str, response: httpx.Response, request: httpx.Request) -> _BodyFile | None:
        """The answer's files: its status and content type written, its body's file open (``None``, and
        the exchange's files removed, when they could not be made: the answer goes on unrecorded)."""
        try:
            return self._response(stem, response, request)
        except OSError as error:
            self._remove(stem)
            self.failed(getattr(error, "filename", None) or stem, error, "this exchange is not recorded")
            return None

    def _response(self, stem: str, response: httpx.Response, request: httpx.Request) -> _BodyFile:
        encoding = response.headers.get("content-encoding", "").strip().lower()
        redactor = self.redactor(request)
        meta: dict[str, object] = {"status": response.status_code,
                                   "contentType": redactor.text(response.headers.get("content-type", ""))}
        if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
            # An encoding this module does not undo is kept as it came, and said.
            meta["contentEncoding"] = redactor.text(response.headers["content-encoding"]).strip().lower()
        Path(f"{stem}.response.json").write_text(json.dumps(meta) + "\n", encoding="utf-8")
        handle = open(f"{stem}.sse", "wb")  # (closed with the response)
        self.files += [Path(f"{stem}.response.json"), Path(f"{stem}.sse")]
        return _BodyFile(handle, encoding, _Scrub(redactor, response.charset_encoding),
                         lambda error: self.failed(f"{stem}.sse", error, "the rest of this answer is not recorded"))


class _Scrub:
    """The response body's bytes with the request's credentials replaced, as they pass to the file.

    The rule is :class:`~agui_client.core.redact.BytesRedactor`'s (the one an error's excerpt is
    redacted by): each secret looked for in the ``charset`` the answer's ``Content-Type`` names and, as an
    agent may write in another or name none, in UTF-8, UTF-16 and UTF-32, replaced by
    :data:`~agui_client.core.redact.MARK` as the encoding that wrote it writes it. The last bytes of each
    read that may start a secret are held back until more come, as a secret may be cut between two reads.
    Without secrets it hands the bytes on as they are.
    """

    __slots__ = ("_redact", "_keep", "_held")

    def __init__(self, redactor: Redactor, charset: str | None = None) -> None:
        self._redact = BytesRedactor(redactor, charset)
        self._keep = self._redact.keep
        self._held = b""

    def __call__(self, data: bytes) -> bytes:
        if not self._redact:
            return data
        text = self._redact(self._held + data)
        cut = len(text) - self._keep
        self._held = text[max(cut, 0):]
        return text[:cut] if cut > 0 else b""

    def rest(self) -> bytes:
        """What is held back, at the end of the body."""
        held, self._held = self._held, b""
        return held


class _BodyFile:
    """The response body on its way to ``NN.sse``: each chunk written as it passes, decompressed and
    without the request's credentials."""

    def __init__(self, handle: IO[bytes], encoding: str, scrub: _Scrub, failed: Callable[[OSError], None]) -> None:
        self._scrub = scrub
        self._handle: IO[bytes] | None = handle
        self._failed = failed
        # (the clients' own decoder: a recording keeps what they read)
        self._inflate: Inflater | None = Inflater(encoding) if encoding in CODINGS else None

    def write(self, chunk: bytes) -> None:
        if self._handle is None or not chunk:
            return
        try:
            self._write(self._handle, chunk)
        except OSError as error:
            self._give_up(error)

    def _give_up(self, error: OSError) -> None:
        # The file cannot take more (a full disk): what it holds is kept, the answer goes on unrecorded.
        handle, self._handle = self._handle, None
        if handle is not None:
            with contextlib.suppress(OSError):
                handle.close()
        self._failed(error)

    def _write(self, handle: IO[bytes], chunk: bytes) -> None:
        inflate = self._inflate
        scrub = self._scrub
        if inflate is None:
            handle.write(scrub(chunk))
        else:
            try:
                for piece in inflate.feed(chunk):
                    handle.write(scrub(piece))
            except httpx.DecodingError:
                # A body that is not what its header says: the rest is kept as it came rather than lost.
                self._inflate = None
                handle.write(scrub(chunk))
        # On disk as it arrives (one write per network read): a run cut short, or a process killed,
        # still leaves everything that came, but for the last few bytes the scrubber holds back (as
        # many as its longest secret, less one: a secret may be split between two reads).
        handle.flush()

    def close(self) -> None:
        handle = self._handle
        if handle is None:
            return
        try:
            if self._inflate is not None:
                try:
                    handle.write(self._scrub(self._inflate.flush()))
                except httpx.DecodingError:
                    pass
            handle.write(self._scrub.rest())
            self._handle = None
            handle.close()
        except OSError as error:
            self._give_up(error)


class _RecordedStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, body: _BodyFile) -> None:
        self._inner = inner
        self._body = body

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            self._body.write(chunk)
            yield chunk

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._body.close()


class _AsyncRecordedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, body: _BodyFile) -> None:
        self._inner = inner
        self._body = body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._body.write(chunk)
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._body.close()


def _wrapped(response: httpx.Response, stream: httpx.SyncByteStream | httpx.AsyncByteStream,
             request: httpx.Request) -> httpx.Response:
    return httpx.Response(status_code=response.status_code, headers=response.headers, stream=stream,
                          extensions=response.extensions, request=request)


class _Controls:
    """What the sync and the async recording transports share: the recorder, started and stopped."""

    _recorder: _Recorder

    @property
    def directory(self) -> Path | None:
        """The folder being recorded into; ``None`` while stopped."""
        return self._recorder.directory

    @property
    def files(self) -> list[Path]:
        """The files written so far, in order."""
        return list(self._recorder.files)

    @property
    def problems(self) -> list[str]:
        """The files that could not be written, each with its reason and what went unrecorded (the first
        ``PROBLEMS_KEPT``; each is also logged as a warning). Recording never fails a run.

        Example::

            recorder = RecordingTransport("recordings/run-1")
            ...
            for problem in recorder.problems:  # "recordings/run-1/03.sse: No space left on device (...)"
                print("not recorded:", problem)
        """
        return list(self._recorder.problems)

    def start(self, directory: str | os.PathLike[str]) -> None:
        """Record the next exchanges into ``directory`` (created if missing; continued after its last number)."""
        self._recorder.start(directory)

    def stop(self) -> None:
        """Record nothing more; a response still streaming goes on into its file until it ends."""
        self._recorder.stop()


class RecordingTransport(_Controls, httpx.BaseTransport):
    """An httpx transport that keeps every exchange in a recording folder (see the module docstring).

    Args:
        directory: the folder to record into (created if missing); ``None`` starts stopped.
        inner: the transport that really sends; closed with this one. By default the pool an
            ``AgentClient`` makes for itself, so that the run's deadline and the bound on the answer's
            head hold through the recorder as without it. httpx reads the environment's proxies only
            for a client made without a transport: pass ``inner=httpx.HTTPTransport(proxy=...)`` to
            record through one.
        sensitive_headers: names of more request headers (and URL query parameters) whose values are
            secrets, as ``AgentClient(sensitive_headers=...)``; a request sent by an ``AgentClient``
            also brings the names that client marked.

    Requests pass to ``inner`` unchanged, and responses come back unchanged: recording adds a file
    write per chunk, nothing else. Safe to share between threads.

    Attributes:
        inner: the wrapped transport.
        files: every file written so far, in order.
        passes_through: ``True``: every request, its ``trace`` extension included, goes to ``inner``
            unchanged, so a client relies on the inner transport's progress reports.
    """

    passes_through: ClassVar[bool] = True

    def __init__(self, directory: str | os.PathLike[str] | None = None,
                 inner: httpx.BaseTransport | None = None, *, sensitive_headers: Iterable[str] = ()) -> None:
        # (whether or not the environment names a proxy: httpx gives it only to a client made without a
        # transport, so httpx's plain transport would not use it either, and would lose the bounds)
        self.inner = inner if inner is not None else ShardedSyncTransport()
        self._recorder = _Recorder(directory, sensitive_headers)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through ``inner``, recording the exchange while recording is on."""
        stem = self._recorder.reserve(request, request.read()) if self._recorder.directory is not None else None
        try:
            response = self.inner.handle_request(request)
        except BaseException:
            self._recorder.unreserve(stem)
            raise
        if stem is None:
            return response
        assert isinstance(response.stream, httpx.SyncByteStream)
        try:
            body = self._recorder.response(stem, response, request)
        except BaseException:
            response.close()  # (the connection goes back, the error goes on)
            raise
        if body is None:
            return response  # (its files could not be made: it goes on unrecorded)
        return _wrapped(response, _RecordedStream(response.stream, body), request)

    def close(self) -> None:
        """Close the inner transport."""
        self.inner.close()


class AsyncRecordingTransport(_Controls, httpx.AsyncBaseTransport):
    """:class:`RecordingTransport` for ``httpx.AsyncClient`` (wrapping an ``httpx.AsyncBaseTransport``).

    The files are written from the event loop: one small write per request and per read of the
    response, the same as the sync transport's.
    """

    passes_through: ClassVar[bool] = True  # (see RecordingTransport.passes_through)

    def __init__(self, directory: str | os.PathLike[str] | None = None,
                 inner: httpx.AsyncBaseTransport | None = None, *, sensitive_headers: Iterable[str] = ()) -> None:
        self.inner = inner if inner is not None else ShardedTransport()  # (as RecordingTransport's)
        self._recorder = _Recorder(directory, sensitive_headers)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through ``inner``, recording the exchange while recording is on."""
        stem = self._recorder.reserve(request, await request.aread()) if self._recorder.directory is not None else None
        try:
            response = await self.inner.handle_async_request(request)
        except BaseException:
            self._recorder.unreserve(stem)
            raise
        if stem is None:
            return response
        assert isinstance(response.stream, httpx.AsyncByteStream)
        try:
            body = self._recorder.response(stem, response, request)
        except BaseException:
            await response.aclose()  # (as RecordingTransport's)
            raise
        if body is None:
            return response  # (as RecordingTransport's)
        return _wrapped(response, _AsyncRecordedStream(response.stream, body), request)

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self.inner.aclose()
