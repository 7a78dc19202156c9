"""Incremental Server-Sent-Events decoding (WHATWG event-stream rules), sans-IO.

``SSEDecoder`` turns bytes into ``SSEFrame`` objects, one per dispatched event, whether the bytes
come from a recorded capture or from a live response in reads of any size. It follows the WHATWG
rules (TR-06): UTF-8 with U+FFFD for malformed bytes, one leading BOM stripped,
lines ended only by CRLF, LF or CR, ``:`` comments ignored, ``data`` values joined with LF, one
space after the colon stripped, ``event``/``id``/``retry`` kept, unknown fields ignored, a blank
line dispatches and an empty data buffer dispatches nothing.

Where a lenient reading hides a producer fault, the decoder says so in ``SSEDecoder.warnings``
rather than failing: a JSON-looking line without ``data:`` (TR-07), an unknown field, a stray BOM,
malformed UTF-8, a whitespace-only payload, and a frame cut off by the end of the stream (TR-08).
Only the size guard raises (TR-11): one event may not grow past ``max_event_bytes``.

Lines are split on bytes and text is decoded only once a line (for data, the whole event) is
complete. CR and LF never occur inside a multi-byte UTF-8 sequence, so a sequence split across
reads is simply completed by the next read, and the text is the same as an incremental decoder's.
The common shape, one ``data: {...}`` line per event (TR-19), takes a fast path that splits a read
on blank lines and builds each frame directly; everything else goes line by line.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterable, Iterator
from itertools import compress, repeat
from operator import not_
from typing import Any

import attrs

from .._inert import quoted_name
from ..errors import LimitExceeded
from .sink import WARNINGS_PER_CODE

__all__ = ["SSEFrame", "SSEWarning", "SSEDecoder", "iter_frames", "DEFAULT_MAX_EVENT_BYTES"]

#: The default bound on one event's raw bytes (16 MiB).
DEFAULT_MAX_EVENT_BYTES = 16 * 2**20

_BOM = b"\xef\xbb\xbf"
# A capture group keeps the separators, whose lengths keep byte offsets exact.
_LINE_END = re.compile(rb"(\r\n|\r|\n)")
_JSON_WHITESPACE = b" \t\r\n"
#: An event's data lines are joined into one item each time it grows by this many bytes (see
#: ``_EventAssembler._join_lines``).
_JOIN_EVERY = 64 * 1024


@attrs.frozen(kw_only=True, slots=False)
class SSEFrame:
    """One dispatched SSE event.

    Attributes:
        data: the event's ``data`` values joined with ``"\\n"``.
        event: the SSE event name, ``None`` when the frame named none (AG-UI gives it no meaning).
        id: the last event id seen so far in the stream (WHATWG keeps it across events), or ``None``.
        retry: the ``retry`` value given in this frame, when it was all digits.
        line: the 1-based line number of the frame's first field line.
        offset: the byte offset of the frame's first field line in the stream (a stripped BOM counts).
        truncated: ``True`` when the stream ended before the frame's terminating blank line.
    """

    data: str
    event: str | None = None
    id: str | None = None
    retry: int | None = None
    line: int
    offset: int
    truncated: bool = False


_new_object = object.__new__
_DATA_OBJECT = b"data: {"


def _canonical_payloads(body: bytes, limit: int) -> tuple[list[bytes], int] | None:
    """The payloads of the complete frames at the start of ``body`` when each is one canonical line, and
    how many bytes of ``body`` they take (through the last frame's blank line).

    ``body`` starts with ``data: {``. ``None`` when any complete frame is not a single ``data: {`` line
    within ``limit`` bytes of valid UTF-8 (the frame-by-frame path then reads it, and warns).
    """
    cut = body.rfind(b"\n\n")
    if cut < 0:
        return None
    head = body[6:cut]
    payloads = head.split(b"\n\ndata: ")
    if head.count(b"\n") != 2 * (len(payloads) - 1) or not all(map(bytes.startswith, payloads, repeat(b"{"))) \
            or (len(head) + 6 > limit and max(map(len, payloads)) + 6 > limit):
        return None
    if not head.isascii():
        # Only the frames that hold non-ASCII bytes need decoding to prove them UTF-8 (decoding the
        # whole read would build a wide string of all of it).
        if not all(map(_is_utf8, compress(payloads, map(not_, map(bytes.isascii, payloads))))):
            return None
    return payloads, cut + 2


def _frame_new(data: str, id: str | None, line: int, offset: int) -> SSEFrame:
    """Build a plain frame (no event name or retry) for the hot paths, without the attrs ``__init__``.

    The generated ``__init__`` makes one ``object.__setattr__`` call per field, which costs as much
    as all the framing work around it. Filling the instance ``__dict__`` gives the same frozen
    instance at half the cost; that is why ``SSEFrame`` is not slotted.
    """
    frame = _new_object(SSEFrame)
    fields = frame.__dict__
    fields["data"] = data
    fields["event"] = None
    fields["id"] = id
    fields["retry"] = None
    fields["line"] = line
    fields["offset"] = offset
    fields["truncated"] = False
    return frame


@attrs.frozen(kw_only=True)
class SSEWarning:
    """A framing fault the decoder tolerated.

    Attributes:
        code: ``"AGUI501"`` (unknown field, JSON-looking line without ``data:``, blank payload,
            truncated frame), ``"BOM"`` (a byte-order mark after the start of the stream) or
            ``"UTF8"`` (malformed UTF-8 replaced by U+FFFD).
        message: what was found and what was done about it.
        line: the 1-based line number it concerns.
        offset: the byte offset of that line.
        index: the index the next frame dispatched has (of a dropped frame: the one it would have had).
    """

    code: str
    message: str
    line: int
    offset: int
    index: int = attrs.field(default=0, eq=False)  # (where it is, not what: not compared)


class _EventAssembler:
    """The WHATWG line rules: complete lines in, events out.

    It holds the event being accumulated (its data lines, name and retry, where it began), the last
    id, the number and byte offset of the next line, the count of frames dispatched and the warnings.
    Cutting reads into lines, and taking the canonical frames past the line rules, is
    :class:`SSEDecoder`'s part.
    """

    def __init__(self, max_event_bytes: int) -> None:
        self.warnings: list[SSEWarning] = []
        #: Warnings past ``WARNINGS_PER_CODE`` of their code: counted, not kept.
        self.warnings_dropped = 0
        #: Whether malformed UTF-8 was replaced by U+FFFD in what was read (each byte may then be a
        #: character Python holds wider than one: the memory budget asks).
        self.replaced = False
        self._warned: dict[str, int] = {}
        self._max = max_event_bytes
        self._dispatched = 0
        self._closed = False
        self._line = 1  # number of the next line to apply
        self._offset = 0  # byte offset where that line begins
        self._data: list[bytes] = []
        self._event: str | None = None
        self._retry: int | None = None
        self._event_line = 0  # 0 while the event has no field line yet
        self._event_offset = 0
        self._event_bytes = 0
        # Many short data lines are a Python object each until the event is joined (a 7-byte line held
        # ~45 bytes): past each ``_JOIN_EVERY`` bytes of an event, the lines since the last such point
        # are joined into one (``_join_lines``), so an event holds about its own size however it is cut.
        self._join_at = _JOIN_EVERY
        self._joined = 0  # the leading items of ``_data`` that are such joins
        self._last_id: str | None = None

    def _lines(self, lines: list[bytes], eols: Iterable[int], frames: list[SSEFrame]) -> None:
        """Apply complete lines to the decoder (``eols``: each line's line-end length)."""
        # The loop keeps its counters in locals and writes them back on the way out.
        data = self._data
        limit = self._max
        lineno = self._line
        offset = self._offset
        event_line = self._event_line
        event_bytes = self._event_bytes
        # (one comparison a line, as before: past ``bound`` the event is too big, or its lines are joined)
        first = min(limit, _JOIN_EVERY)
        bound = min(limit, self._join_at)
        for line, eol in zip(lines, eols):  # noqa: B905 - eols may be an endless repeat()
            if not line:
                if event_line:
                    frame = self._dispatch(event_line)
                    if frame is not None:
                        frames.append(frame)
                    event_line = event_bytes = 0
                    if bound > first:
                        bound = first
            elif line[0] != 58:  # not a ":" comment
                if not event_line:
                    event_line = lineno
                    self._event_offset = offset
                event_bytes += len(line)
                if event_bytes > bound:
                    if event_bytes > limit:
                        raise self._too_big(f"an SSE event grew past {limit} bytes")
                    self._join_lines(event_bytes)
                    bound = min(limit, self._join_at)
                if line.startswith(b"data: "):
                    data.append(line[6:])
                elif line.startswith(b"data:"):
                    data.append(line[5:])
                else:
                    self._field(line, lineno, offset)
            lineno += 1
            offset += len(line) + eol
        self._line = lineno
        self._offset = offset
        self._event_line = event_line
        self._event_bytes = event_bytes

    def _join_lines(self, event_bytes: int) -> None:
        """Join the data lines read since the last join into one item (the event has ``event_bytes``)."""
        data = self._data
        joined = self._joined
        if len(data) - joined > 1:
            data[joined:] = [b"\n".join(data[joined:])]
        self._joined = len(data)
        self._join_at = event_bytes + _JOIN_EVERY

    def _field(self, line: bytes, lineno: int, offset: int) -> None:
        """Apply a field line other than ``data:`` (the hot loop handles those)."""
        if line.startswith(_BOM):
            message = "byte-order mark inside the stream (only a leading one is stripped); line ignored"
            self._warn("BOM", message, lineno, offset)
            return
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":  # a bare "data" line: a data field with an empty value
            self._data.append(value)
        elif name == b"event":
            self._event = self._text(value, lineno, offset) or None
        elif name == b"id":
            if b"\0" not in value:  # WHATWG ignores such ids
                self._last_id = self._text(value, lineno, offset)
        elif name == b"retry":
            # ASCII digits only: "-1" and "abc" are ignored, and so is a number too long for int()
            if value.isdigit() and len(value) <= 4000:
                self._retry = int(value)
        elif line.startswith(b"{"):
            self._warn("AGUI501", "JSON-looking line without data: prefix", lineno, offset)
        else:
            self._warn("AGUI501", f"unknown SSE field {quoted_name(self._text(name, lineno, offset))}", lineno, offset)

    def _dispatch(self, line: int) -> SSEFrame | None:
        """Finish the pending event at a blank line; ``line`` is its first field line."""
        data = self._data
        offset = self._event_offset
        raw = data[0] if len(data) == 1 else b"\n".join(data)
        event = self._event
        retry = self._retry
        data.clear()
        if self._join_at != _JOIN_EVERY:
            self._joined = 0
            self._join_at = _JOIN_EVERY
        self._event = self._retry = None
        if not raw:  # WHATWG: an empty data buffer dispatches nothing
            return None
        if raw[0] <= 32 and not raw.strip(_JSON_WHITESPACE):
            self._warn("AGUI501", "blank data payload dropped (read as a keep-alive)", line, offset)
            return None
        text = self._text(raw, line, offset)  # (a warning about it names this frame's index)
        return self._frame(text, event, retry, line, offset, truncated=False)

    def _text(self, raw: bytes, line: int, offset: int) -> str:
        """Decode UTF-8, replacing malformed bytes with U+FFFD and warning once."""
        try:
            return raw.decode()
        except UnicodeDecodeError:
            self.replaced = True
            self._warn("UTF8", "malformed UTF-8 replaced by U+FFFD", line, offset)
            return raw.decode(errors="replace")

    def _reset_event(self) -> None:
        """Forget the event being accumulated (its last id stays, as WHATWG keeps it)."""
        self._data.clear()
        self._joined = 0
        self._join_at = _JOIN_EVERY
        self._event = self._retry = None
        self._event_line = self._event_bytes = 0

    def _pending_frame(self) -> list[SSEFrame]:
        """The event still pending at the end of the stream, as ``SSEDecoder.close`` describes."""
        if not self._event_line:
            return []
        line, offset = self._event_line, self._event_offset
        raw = b"\n".join(self._data)
        event, retry = self._event, self._retry
        self._reset_event()
        text = self._text(raw, line, offset)
        try:
            complete = isinstance(json.loads(text), dict)
        except (ValueError, RecursionError):
            complete = False
        if not complete:
            self._warn("AGUI501", "truncated frame discarded: the stream ended before its blank line", line, offset)
            return []
        message = "truncated frame: dispatched although the stream ended before its blank line"
        self._warn("AGUI501", message, line, offset)
        return [self._frame(text, event, retry, line, offset, truncated=True)]

    def _frame(self, text: str, event: str | None, retry: int | None, line: int, offset: int, *,
               truncated: bool) -> SSEFrame:
        """Dispatch a frame of the line-by-line path (it carries the last id seen)."""
        self._dispatched += 1
        return SSEFrame(data=text, event=event, id=self._last_id, retry=retry, line=line, offset=offset,
                        truncated=truncated)

    def _warn(self, code: str, message: str, line: int, offset: int) -> None:
        """Note a tolerated fault; it names the index the next frame dispatched has. Past
        ``WARNINGS_PER_CODE`` of one code, faults are counted (``warnings_dropped``), not noted: a stream of
        two-byte faults must not cost a warning object each. (The run's warnings, a ``WarningList``, keep
        as many and say so in the last one kept.)"""
        count = self._warned.get(code, 0) + 1
        self._warned[code] = count
        if count > WARNINGS_PER_CODE:
            self.warnings_dropped += 1
            return
        self.warnings.append(SSEWarning(code=code, message=message, line=line, offset=offset, index=self._dispatched))

    def _too_big(self, message: str) -> LimitExceeded:
        """Drop the pending event and close: the stream cannot be resynchronised."""
        self._reset_event()
        self._closed = True
        return LimitExceeded(message, limit=self._max, index=self._dispatched, rule="TR-11")


class SSEDecoder(_EventAssembler):
    """Incremental SSE decoder: feed it bytes, get back the frames they complete.

    The decoder holds at most one event's field lines plus one unfinished line, and refuses to hold
    more than ``max_event_bytes`` of them. Reads may be cut anywhere, a CRLF or a UTF-8 sequence
    included; the frames are the same for every cut.

    Attributes:
        warnings: framing faults found so far, appended as they are found; the caller drains it.
    """

    def __init__(self, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        """Create a decoder.

        Args:
            max_event_bytes: the most raw bytes one event's field lines (line ends excluded) and a
                line still without its end may take together.

        Raises:
            ValueError: when ``max_event_bytes`` is not positive.
        """
        if max_event_bytes < 1:
            raise ValueError(f"max_event_bytes must be positive, got {max_event_bytes}")
        super().__init__(max_event_bytes)
        self._bytes_seen = 0
        self._raw = False  # set by feed_payloads() for the duration of one feed()
        self._fault: LimitExceeded | None = None  # raised by the next call (see _defer)
        # Until three bytes (or a non-BOM prefix) arrive, a leading BOM may still be in flight.
        self._at_start = True
        # The previous read ended in CR: an LF opening the next read is that CRLF's second half.
        self._after_cr = False
        self._edge = True  # either of the two above: feed() takes the slow door
        # A line whose end has not arrived, as the pieces its reads brought (joined once, when it ends:
        # growing one buffer would copy a large event's start again at every read). It begins at the
        # assembler's line number and byte offset.
        self._partial: list[bytes] = []
        self._partial_size = 0

    @property
    def frames_dispatched(self) -> int:
        """How many frames the decoder has returned so far."""
        return self._dispatched

    @property
    def bytes_seen(self) -> int:
        """How many bytes have been fed, a stripped BOM included."""
        return self._bytes_seen

    @property
    def last_event_id(self) -> str | None:
        """The last ``id`` field value (``""`` after an empty ``id:``), or ``None`` before any."""
        return self._last_id

    def feed_payloads(self, chunk: bytes) -> list[str | bytes]:
        """Decode one read into the frames' payloads only (what a transport folding events needs).

        The same framing, limits and warnings as :meth:`feed`, without building an :class:`SSEFrame`
        per event: a canonical single-line frame's payload in valid UTF-8 is returned as the ``bytes``
        it arrived as (the JSON parser reads them directly, without the text's wide copy and its UTF-8
        twin: a large snapshot with one non-ASCII character would need both), any other frame's as
        its ``data`` text.

        Raises:
            LimitExceeded: as :meth:`feed`.
            RuntimeError: as :meth:`feed`.
        """
        self._raw = True
        try:
            frames: list[Any] = self.feed(chunk)
        finally:
            self._raw = False
        return [f if type(f) is bytes else f.data for f in frames]

    def feed(self, chunk: bytes) -> list[SSEFrame]:
        """Decode one read.

        Args:
            chunk: the next bytes of the stream, cut anywhere.

        Returns:
            The frames whose terminating blank line is in ``chunk``, in stream order.

        Raises:
            LimitExceeded: the event being read, or a line without an end, outgrew
                ``max_event_bytes``; ``index`` is the index the frame would have had. When the same
                read completed frames before the fault, they are returned and the next ``feed()``
                or ``close()`` raises. The decoder is closed afterwards.
            RuntimeError: the decoder was closed, or raised ``LimitExceeded`` before.
        """
        if self._closed:
            self._raise_fault()
            raise RuntimeError("feed() after close() or after LimitExceeded")
        self._bytes_seen += len(chunk)
        if self._edge:
            chunk = self._edge_bytes(chunk)
        if not chunk:
            return []
        raw_size = len(chunk)
        eol = 1
        if b"\r" in chunk:
            # A read whose every line ends in CRLF is read as LF lines, each end counted as 2 bytes.
            lf = chunk.replace(b"\r\n", b"\n")
            if b"\r" in lf or raw_size - len(lf) != lf.count(b"\n"):
                return self._feed_mixed(chunk)
            chunk = lf
            eol = 2
        size = len(chunk)
        if (
            # A live producer usually writes one canonical event per read (TR-19): skip the splitting.
            chunk.startswith(b"data: {")
            and chunk.find(b"\n") == size - 2
            and chunk.endswith(b"\n")
            and not self._partial
            and not self._event_line
        ):
            if size - 2 > self._max:
                raise self._too_big(f"an SSE event grew past {self._max} bytes")
            payload = chunk[6:-2]
            if self._raw and (payload.isascii() or _is_utf8(payload)):
                self._dispatched += 1
                self._line += 2
                self._offset += raw_size
                return [payload]  # type: ignore[list-item]  # feed_payloads() takes bytes as they are
            try:
                text = payload.decode()
            except UnicodeDecodeError:
                pass  # the general path replaces and warns
            else:
                frame = _frame_new(text, self._last_id, self._line, self._offset)
                self._dispatched += 1
                self._line += 2
                self._offset += raw_size
                return [frame]
        end = chunk.rfind(b"\n") + 1
        if not end:
            self._grow(chunk)
            return []
        frames: list[SSEFrame] = []
        try:
            if self._partial and self._raw and eol == 1:
                used = self._large_frame(chunk, frames)
                if used:
                    chunk = chunk[used:]
                    size -= used
                    end -= used
                    if not end:
                        self._grow(chunk)
                        return frames
            body = chunk if end == size else chunk[:end]
            if self._partial:
                body = b"".join((*self._take_partial(), body))  # one copy: a large event arrives as many reads
            self._blocks(body, eol, frames)
            if end < size:
                self._grow(chunk[end:])
        except LimitExceeded as exc:
            self._defer(exc, frames)
        return frames

    def _large_frame(self, chunk: bytes, frames: list[Any]) -> int:
        """A canonical frame that began in earlier reads and ends in ``chunk`` (a large snapshot): its
        payload appended as ``bytes``, from one join of the pieces; the bytes of ``chunk`` it took are
        returned, or 0 when it is not such a frame (the general path then reads it, and decides).
        """
        pieces = self._partial
        if self._event_line or not pieces[0].startswith(_DATA_OBJECT):
            return 0
        first = chunk.find(b"\n")
        size = self._partial_size + first
        if chunk[first + 1:first + 2] != b"\n" or size > self._max:
            return 0
        payload = b"".join((pieces[0][6:], *pieces[1:], chunk[:first]))
        if not (payload.isascii() or _is_utf8(payload)):
            return 0
        self._take_partial()
        frames.append(payload)
        self._dispatched += 1
        self._line += 2
        self._offset += size + 2
        return first + 2

    def _take_partial(self) -> list[bytes]:
        pieces = self._partial
        self._partial = []
        self._partial_size = 0
        return pieces

    def close(self) -> list[SSEFrame]:
        """End the stream.

        A line without its end is read as a line. If an event is then still pending (its blank line
        never came) and its data is a complete JSON object, it is returned with ``truncated=True``
        and an AGUI501 warning, as the reference client does (TR-08); any other pending event is
        discarded with an AGUI501 warning (TR-08). Calling ``close()`` again returns nothing.

        Returns:
            The truncated frame, or nothing.

        Raises:
            LimitExceeded: the fault deferred by the last ``feed()``, if any.
        """
        if self._closed:
            self._raise_fault()
            return []
        self._closed = True
        self._at_start = False
        if self._partial:
            self._lines([b"".join(self._take_partial())], (0,), [])
        return self._pending_frame()

    def _edge_bytes(self, chunk: bytes) -> bytes:
        """Strip a leading BOM (even one split across reads) and an LF that completes a split CRLF."""
        if self._at_start:
            head = b"".join((*self._take_partial(), chunk))
            if len(head) < 3 and _BOM.startswith(head):
                self._partial = [head]  # may still become a BOM
                self._partial_size = len(head)
                return b""
            self._at_start = False
            if head.startswith(_BOM):
                head = head[3:]
                self._offset = 3
            chunk = head
        if self._after_cr and chunk:
            self._after_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
                self._offset += 1
        self._edge = self._at_start or self._after_cr
        return chunk

    def _grow(self, tail: bytes) -> None:
        """Keep the start of a line whose end has not arrived, within the size limit."""
        if not tail:
            return
        # Checked before buffering, so an endless line costs at most the limit (TR-11).
        line = self._partial_size + len(tail)
        if self._event_bytes + line > self._max:
            # (said as what outgrew the limit: the line alone, or the event its earlier lines began)
            raise self._too_big(f"an SSE line grew past {self._max} bytes without a line end" if line > self._max
                                else f"an SSE event grew past {self._max} bytes")
        self._partial.append(tail)
        self._partial_size += len(tail)

    def _feed_mixed(self, chunk: bytes) -> list[SSEFrame]:
        """Decode a read whose lines do not all end alike (CR alone, or CRLF mixed with LF)."""
        parts = _LINE_END.split(chunk)
        lines = parts[0::2]
        seps = parts[1::2]
        # A CR closing the read may be the first half of a CRLF split across reads (TR-06).
        self._after_cr = self._edge = not lines[-1] and seps[-1] == b"\r"
        tail = lines.pop()
        if self._partial:
            lines[0] = b"".join((*self._take_partial(), lines[0]))
        frames: list[SSEFrame] = []
        try:
            self._lines(lines, map(len, seps), frames)
            self._grow(tail)
        except LimitExceeded as exc:
            self._defer(exc, frames)
        return frames

    def _blocks(self, body: bytes, eol: int, frames: list[SSEFrame]) -> None:
        """Apply complete LF-ended lines (``body`` ends with one); each line end was ``eol`` bytes.

        Splitting on blank lines cuts the body into blocks that each end an event. A block that is
        one canonical ``data: {...}`` line with no event pending (what producers send, TR-19) is
        dispatched here directly; any other block goes through the line-by-line path.
        """
        raw = self._raw
        step = 2 * eol
        limit = self._max
        lineno = self._line
        offset = self._offset
        pending = self._event_line  # only the first block can continue an event
        if raw and not pending and body.startswith(_DATA_OBJECT):
            # What producers send: a run of canonical frames. Their payloads come out of one split on
            # the frame boundary, in a few C-level passes, with no Python step per frame.
            canonical = _canonical_payloads(body, limit)
            if canonical is not None:
                payloads, consumed = canonical
                count = len(payloads)
                frames.extend(payloads)  # type: ignore[arg-type]  # feed_payloads(): bytes, no SSEFrame
                self._dispatched += count
                lineno += 2 * count
                offset += consumed - 2 * count + step * count
                body = body[consumed:]
        blocks = body.split(b"\n\n")
        last = blocks.pop()  # its lines are complete, but no blank line follows them yet
        new_object = _new_object
        cls = SSEFrame
        append = frames.append
        last_id = self._last_id
        # One count tells whether every block is a single line, sparing a scan per block.
        single = body.count(b"\n") == 2 * len(blocks) + last.count(b"\n")
        fast = 0  # frames dispatched here and not yet counted in self._dispatched
        for block in blocks:
            if block.startswith(b"data: {") and not pending and (single or b"\n" not in block):
                size = len(block)
                if size > limit:
                    self._dispatched += fast
                    raise self._too_big(f"an SSE event grew past {limit} bytes")
                if raw and (block.isascii() or _is_utf8(block)):
                    append(block[6:])  # type: ignore[arg-type]  # feed_payloads(): the bytes, no SSEFrame
                    fast += 1
                    lineno += 2
                    offset += size + step
                    continue
                try:
                    text = block[6:].decode()
                except UnicodeDecodeError:
                    pass  # the line-by-line path below replaces and warns
                else:
                    # _frame_new, inlined: a call per frame is a tenth of the framing cost.
                    frame = new_object(cls)
                    fields = frame.__dict__
                    fields["data"] = text
                    fields["event"] = None
                    fields["id"] = last_id
                    fields["retry"] = None
                    fields["line"] = lineno
                    fields["offset"] = offset
                    fields["truncated"] = False
                    append(frame)
                    fast += 1
                    lineno += 2
                    offset += size + step
                    continue
            lines = block.split(b"\n")
            lines.append(b"")
            self._dispatched += fast
            fast = 0
            self._line, self._offset = lineno, offset
            self._lines(lines, repeat(eol), frames)
            lineno, offset = self._line, self._offset
            last_id = self._last_id
            pending = self._event_line
        self._dispatched += fast
        self._line, self._offset = lineno, offset
        lines = last.split(b"\n")
        lines.pop()  # the empty piece after the body's final line end
        if lines:
            self._lines(lines, repeat(eol), frames)

    def _too_big(self, message: str) -> LimitExceeded:
        self._take_partial()
        return super()._too_big(message)

    def _defer(self, fault: LimitExceeded, frames: list[SSEFrame]) -> None:
        """Raise ``fault`` now, or, when this read completed frames before it, on the next call.

        The frames before the fault are sound; a buffered response (TR-14) must not lose them.
        """
        if not frames:
            raise fault
        self._fault = fault

    def _raise_fault(self) -> None:
        """Raise a deferred fault once."""
        fault, self._fault = self._fault, None
        if fault is not None:
            raise fault


def _is_utf8(data: bytes) -> bool:
    try:
        if len(data) <= _UTF8_STEP:
            data.decode()
        else:
            # In steps: decoding a large payload whole builds (and drops) a text up to 6x its size.
            decoder = codecs.getincrementaldecoder("utf-8")()
            view = memoryview(data)
            for start in range(0, len(data), _UTF8_STEP):
                decoder.decode(view[start:start + _UTF8_STEP])
            decoder.decode(b"", True)
    except UnicodeDecodeError:
        return False
    return True


_UTF8_STEP = 1 << 16


def iter_frames(data: bytes | str, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> Iterator[SSEFrame]:
    """Decode a whole capture, lazily.

    A frame left truncated at the end is yielded as ``SSEDecoder.close`` decides. Warnings are not
    reported; use ``SSEDecoder`` directly to read them.

    Args:
        data: the capture; text is encoded as UTF-8 first.
        max_event_bytes: as for ``SSEDecoder``.

    Raises:
        LimitExceeded: an event outgrew ``max_event_bytes``.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    decoder = SSEDecoder(max_event_bytes=max_event_bytes)
    step = 1 << 16  # slices keep each returned list short and yield frames before the whole capture is split
    for start in range(0, len(raw), step):
        yield from decoder.feed(raw[start : start + step])
    yield from decoder.close()
