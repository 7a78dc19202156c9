"""Replaying a recorded response: ``replay()`` folds it exactly as a live run would.

A recording arrives as a whole (bytes, text, a path, an iterable of reads); it is read block by block
through the same SSE decoder and JSON batch parser a live response goes through, into a
:class:`~agui_client.core.session.RunSession`.
"""

from __future__ import annotations

import itertools
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO, Literal, cast

import attrs

from ..errors import LimitExceeded, StreamWarning
from ..wire.sse import SSEDecoder
from ..wire.types import events as ev
from ..wire.types import run as rn
from .fold import ThreadState
from .result import RunResult
from .session import DEFAULT_MAX_EVENT_BYTES, RunSession, fail_framing

__all__ = ["Source", "replay", "detect_format", "sse_warnings", "open_named"]



Source = str | bytes | bytearray | os.PathLike[str] | Iterable[Any]


def replay(source: Source, *, state: ThreadState | None = None, now: datetime | Callable[[], datetime] | None = None,
           format: Literal["auto", "sse", "jsonl"] = "auto", max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
           run_input: rn.RunAgentInput | None = None) -> RunResult:
    """Fold a recorded response exactly as a live run would, and return its ``RunResult``.

    Args:
        source: SSE bytes or text, JSONL (one event per line), a path to a file holding either (a
            ``Path``, or a ``str`` naming an existing file), a binary file, or a sequence of events /
            wire mappings. The form is detected unless ``format`` says it. A path may name a pipe or a
            FIFO (read until its writer is done; one nobody writes to holds no events), never a device.
        state: the thread to fold into (a new one by default); it is updated in place.
        now: the clock for expiry judgements made while replaying (``RunResult.expired_interrupts``
            takes its own); accepted so a replay is deterministic.
        format: force ``"sse"`` or ``"jsonl"`` for text input.
        max_event_bytes: per-event size limit for SSE input.
        run_input: the input that was sent, when known.

    Raises:
        ProtocolError: the recording breaks the protocol; ``.result`` holds what was folded before.
        ValueError: the path names a device (``/dev/urandom`` would be read without end).
        OSError: the path cannot be opened.

    Example::

        from agui_client import replay

        result = replay([  # wire mappings here; a recorded file: replay("rec/01.sse")
            {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
            {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "delta": "Hello"},
            {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
        ])
        print(result.outcome, result.text)  # success Hello
    """
    del now  # expiry is judged where a decision is made (ResumeBuilder, RunResult.expired_interrupts)
    # (events=False: payloads parsed here are seen by nobody else, so the fold may keep them uncopied;
    # events or mappings the caller hands in are theirs, and copied)
    session = RunSession(state, run_input=run_input, events=False)
    _fold_all(source, session, format, max_event_bytes)
    return session.end()


def _fold_all(source: Source, session: RunSession, format: Literal["auto", "sse", "jsonl"],
              max_event_bytes: int) -> None:
    """Feed a recorded response into ``session`` block by block, as a live stream would arrive (a
    recording is never held whole, nor all its lines or frames at once): one step per payload, no event
    made, as ``replay()`` wants none."""
    for batch in _batches(source, session, format, max_event_bytes):
        if batch and not isinstance(batch[0], (str, bytes)):
            for item in batch:
                session.feed_event(item)
            continue
        session.fold_read(batch)


def _batches(source: Source, session: RunSession, format: Literal["auto", "sse", "jsonl"],
             max_event_bytes: int) -> Iterator[list[Any]]:
    """The recording's payloads (or events), a block's worth at a time."""
    if isinstance(source, str) and "\n" not in source and len(source) < 4096 and os.path.isfile(source):
        source = Path(source)  # a file's name, not a one-line recording (which would start with data: or {)
    if isinstance(source, os.PathLike):
        with open_named(source) as handle:
            yield from _block_batches(iter(lambda: handle.read(_REPLAY_BLOCK), b""), session, format, max_event_bytes)
        return
    if isinstance(source, (str, bytes, bytearray)):
        data = bytes(source, "utf-8", "surrogatepass") if isinstance(source, str) else bytes(source)
        blocks = (data[i:i + _REPLAY_BLOCK] for i in range(0, len(data), _REPLAY_BLOCK))
        yield from _block_batches(blocks, session, format, max_event_bytes)
        return
    if hasattr(source, "read"):  # a binary file (stdin, a socket file …)
        reader = cast("Any", source)
        yield from _block_batches(iter(lambda: bytes(reader.read(_REPLAY_BLOCK)), b""), session, format,
                                  max_event_bytes)
        return
    for item in source:
        if not (isinstance(item, (str, bytes, Mapping, ev.UnknownEvent)) or attrs.has(type(item))):
            raise TypeError(f"cannot replay {type(item).__name__!r}: expected events, mappings or JSON text")
        yield [item]


def _block_batches(blocks: Iterator[bytes], session: RunSession, format: Literal["auto", "sse", "jsonl"],
                   max_event_bytes: int) -> Iterator[list[Any]]:
    first = next(blocks, b"")
    kind = format if format != "auto" else detect_format(first)
    blocks = itertools.chain((first,), blocks)
    if kind == "jsonl":
        # The start of a line longer than a block is kept in pieces, joined once its end arrives:
        # prepending it to every block would copy a long line once per block (quadratic in its length).
        pieces: list[bytes] = []
        held = 0
        for block in blocks:
            if b"\n" not in block:
                held += len(block)
                if held > max_event_bytes:
                    fail_framing(session, LimitExceeded(f"a JSONL line grew past {max_event_bytes} bytes",
                                                        limit=max_event_bytes, rule="TR-11"))
                    return
                pieces.append(block)
                continue
            batch: list[bytes] = []
            if pieces:
                head, _, block = block.partition(b"\n")
                pieces.append(head)
                line = b"".join(pieces)
                pieces.clear()
                if line and not line.isspace():
                    batch.append(line)
                del line
            lines = block.split(b"\n")
            carry = lines.pop()
            batch += [line for line in lines if line and not line.isspace()]
            held = len(carry)
            if held > max_event_bytes:
                yield batch
                fail_framing(session, LimitExceeded(f"a JSONL line grew past {max_event_bytes} bytes",
                                                    limit=max_event_bytes, rule="TR-11"))
                return
            if carry:
                pieces.append(carry)
            yield batch
        carry = b"".join(pieces)
        if carry and not carry.isspace():
            yield [carry]
        return
    decoder = SSEDecoder(max_event_bytes=max_event_bytes)
    try:
        for block in blocks:
            payloads = decoder.feed_payloads(block)
            sse_warnings(decoder, session)
            yield payloads
        frames = decoder.close()
    except LimitExceeded as exc:
        sse_warnings(decoder, session)
        fail_framing(session, exc)
        return
    sse_warnings(decoder, session)
    yield [frame.data for frame in frames]


_REPLAY_BLOCK = 32 * 1024


def open_named(path: str | os.PathLike[str]) -> BinaryIO:
    """A recording's file, open for binary reading: a regular file, or a pipe or FIFO.

    A recording may come from someone else, and its file may be a link to ``/dev/urandom`` (read
    without end: nothing ever came back) or a FIFO (the open waited for a writer that never came).
    The file is opened without blocking and looked at first: a device is refused; a pipe or FIFO is
    read blocking from then on, so ``<(gunzip -c rec.sse.gz)`` is read until gunzip is done, and a
    FIFO nobody writes to ends at once, holding no events. (``replay()`` and ``agui replay``/``verify``
    read a named file through it.)

    Raises:
        OSError: it cannot be opened.
        ValueError: it is a device.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            raise ValueError(f"{os.fsdecode(path)}: a device, not a recording")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def sse_warnings(decoder: SSEDecoder, session: RunSession) -> None:
    for warning in decoder.warnings:
        session.warnings.append(StreamWarning(
            code=warning.code, message=f"{warning.message} (line {warning.line}, byte {warning.offset})",
            index=warning.index, run_id=session.run_id))
    decoder.warnings.clear()


def detect_format(data: bytes) -> Literal["sse", "jsonl"]:
    # JSONL starts with a JSON object and holds no line starting "data:" (a raw line break cannot be
    # inside a JSON string); anything else is SSE, such as a capture whose first line is an unprefixed
    # JSON object, which the SSE reading warns about (TR-07) instead of folding it as an event.
    head = data[:4096].lstrip(b"\xef\xbb\xbf").lstrip()
    return "jsonl" if head.startswith(b"{") and _SSE_DATA_LINE.search(head) is None else "sse"


_SSE_DATA_LINE = re.compile(rb"[\r\n]data:")
