"""A response body's content coding undone in bounded steps: what the clients read, and what a
recording keeps (``agui_client.testing.RecordingTransport``), through one decoder.

httpx's own decoders inflate each read whole, before any limit of the client can look at the result.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator

import httpx

from ._inert import quoted_name
from .errors import ProtocolError

__all__ = ["INFLATE_STEP", "CODINGS", "Inflater"]

#: The most bytes one step of undoing a content coding makes from a read (see :class:`Inflater`).
INFLATE_STEP = 64 * 1024
#: How far a body goes, in bytes read plus bytes handed out, between two copies of the decoder kept to go
#: over a faulty body again (see :meth:`Inflater._salvaged`): a copy costs about a microsecond (zlib's
#: 32 KiB window), paid once in some 64 KiB rather than once a read, and going over again stays bounded.
CHECKPOINT_BYTES = 64 * 1024
#: The content codings the clients undo (one of them, once), and zlib's window bits for each.
CODINGS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class Inflater:
    """A gzip or deflate body undone ``INFLATE_STEP`` bytes at a time, whatever one read inflates to.

    httpx's own decoders inflate each read whole: 64 KiB of gzip may hold 64 MiB, and a body coded
    twice (``gzip, gzip``) a gigabyte per read, all in memory before the event-size limit could look at
    it. Here the pieces go to the SSE decoder one at a time, so that limit (``max_event_bytes``) holds
    for the decoded stream, and only a single coding is read: each coding multiplies what a byte on
    the wire may become (about a thousandfold for deflate).
    """

    __slots__ = ("_inflate", "_wbits", "_started", "_head", "_mark", "_since", "_spent")

    def __init__(self, coding: str) -> None:
        self._wbits = CODINGS[coding]
        self._started = False
        #: The first byte of a deflate body that came alone (see :meth:`feed`).
        self._head = b""
        self._restart()

    def _restart(self) -> None:
        """A new decoder, and its first checkpoint: the decoder as it is (see :meth:`_salvaged`)."""
        self._inflate = zlib.decompressobj(self._wbits)
        # The decoder as it was at the last checkpoint, the reads since, and the bytes read and handed out since.
        self._mark, self._spent = self._inflate.copy(), 0
        self._since: list[bytes] = []

    @staticmethod
    def of(response: httpx.Response) -> Inflater | None:
        """The inflater ``response``'s body needs (``None``: none).

        Raises:
            ProtocolError: a content coding other than one gzip or deflate (``CONTENT-CODING``).
        """
        value = response.headers.get("content-encoding", "")
        codings = [c for c in (part.strip().lower() for part in value.split(",")) if c and c != "identity"]
        if not codings:
            return None
        if len(codings) == 1 and codings[0] in CODINGS:
            return Inflater(codings[0])
        raise ProtocolError(
            f"the response's content coding {quoted_name(value)} is not read: agui_client undoes one gzip or "
            "deflate coding, in bounded steps (a stacked or other coding could inflate past any limit)",
            rule="CONTENT-CODING")

    @property
    def done(self) -> bool:
        """The coded body has ended: a reader stops there. What follows (a body going on uncoded, a second
        gzip member) is not read, so an agent cannot keep a run reading bytes that decode to nothing."""
        return self._inflate.eof

    def feed(self, chunk: bytes) -> Iterable[bytes]:
        """The decoded bytes of ``chunk``, in pieces of at most ``INFLATE_STEP`` bytes.

        All of one feed's pieces are read before the next feed (a reader that stops reads no more): each
        is counted as handed out as it goes, so that a fault later hands out nothing twice.

        Raises:
            httpx.DecodingError: the body is not what its header says (a spoiled trailer too: its CRC or
                length), once the pieces ``chunk`` decodes to before the fault have been handed out.
        """
        if self._inflate.eof:
            # Bytes after the end of the coded body are not read (nor were they by httpx's decoders). zlib
            # would keep them all in ``unused_data``, copying what it kept at every read: a body that goes
            # on uncoded after a few bytes of gzip would fill memory, in quadratic time.
            return ()
        if not self._started and self._wbits == zlib.MAX_WBITS:
            # Whether "deflate" comes with its zlib header or raw is told by its first two bytes: zlib
            # takes a lone first byte without a word, then refuses the second one, too late to switch.
            chunk, self._head = self._head + chunk, b""
            if len(chunk) < 2:
                self._head = chunk
                return ()
        spent = self._spent + len(chunk)
        if spent >= CHECKPOINT_BYTES:
            self._mark, self._since, spent = self._inflate.copy(), [], len(chunk)
        self._since.append(chunk)
        try:
            piece = self._inflate.decompress(chunk, INFLATE_STEP)
        except zlib.error as exc:
            if self._started or self._wbits != zlib.MAX_WBITS or _zlib_header(chunk):
                self._spent = spent
                return self._salvaged(exc)
            # "deflate" is sent raw by some servers, without its zlib header (as httpx also reads it).
            # (Told by the header, not by the failure alone: a whole body in the first read, its
            # Adler-32 spoiled, fails too, and read as raw it would fail at its first byte.)
            self._wbits = -zlib.MAX_WBITS
            self._restart()
            return self.feed(chunk)
        self._started = True
        # (counted here, handed out by the caller's first step: a feed's pieces are all read before the next)
        self._spent = spent + len(piece)
        if not self._inflate.unconsumed_tail and len(piece) < INFLATE_STEP:
            # The usual read, of a few events: one piece, without a generator to make and run.
            return (piece,) if piece else ()
        return self._rest(piece)

    def _rest(self, piece: bytes) -> Iterator[bytes]:
        inflate = self._inflate
        if piece:
            yield piece
        # (more input to read, or a full piece: zlib may hold more output)
        while inflate.unconsumed_tail or len(piece) == INFLATE_STEP:
            try:
                piece = inflate.decompress(inflate.unconsumed_tail, INFLATE_STEP)
            except zlib.error as exc:
                yield from self._salvaged(exc)
            if piece:
                # (counted before it goes: a reader that stops here has had it)
                self._spent += len(piece)
                yield piece

    def _salvaged(self, fault: zlib.error) -> Iterator[bytes]:
        """What the body decodes to before ``fault``, less what was handed out already, in bounded pieces;
        then ``fault`` raised as ``httpx.DecodingError``.

        zlib hands back nothing of a call that fails. A gzip body's CRC and length, and a zlib body's
        Adler-32, come at its very end, in the read that carries the last events: a spoiled trailer lost
        them (a run's end among them), and the run failed as if they had never come. So the body is gone
        over again from the last checkpoint (a copy of the decoder, taken once in ``CHECKPOINT_BYTES`` or
        so: a copy before every read cost more than the read's own decoding), what it decodes to counted
        off up to the bytes handed out since, and the rest handed out.
        """
        data = b"".join(self._since)
        handed = self._spent - len(data)
        for piece in _up_to_fault(self._mark.copy(), data):
            if handed >= len(piece):
                handed -= len(piece)
                continue
            self._spent += len(piece) - handed
            yield piece[handed:]
            handed = 0
        raise httpx.DecodingError(str(fault)) from fault

    def flush(self) -> bytes:
        """What the decoder still holds at the end of the body (at most its window)."""
        if self._head:
            # A body of one byte: no second byte will tell the kind, so it is fed as it is (marked
            # started, or ``feed`` would hold it back again, and this would go round for ever).
            head, self._head = self._head, b""
            self._started = True
            return b"".join(self.feed(head)) + self.flush()
        try:
            return self._inflate.flush()
        except zlib.error as exc:
            raise httpx.DecodingError(str(exc)) from exc


def _zlib_header(chunk: bytes) -> bool:
    """``chunk`` opens with a zlib header zlib takes: deflate (method 8) with a window it reads, no preset
    dictionary, and the header's check (its two bytes a multiple of 31)."""
    first, second = chunk[0], chunk[1]
    return first & 0x0F == 8 and first >> 4 <= 7 and not second & 0x20 and (first << 8 | second) % 31 == 0


#: The bytes of a body :func:`_up_to_fault` gives zlib at a time: at most about 64 KiB of output (deflate
#: makes at most 1,032 bytes of one), as a step of :class:`Inflater` does.
_SALVAGE_STEP = 64


def _up_to_fault(inflate: zlib._Decompress, data: bytes) -> Iterator[bytes]:
    """What ``data`` decodes to before the first fault zlib finds in it (``inflate``: the decoder as it was
    before ``data``), in bounded pieces.

    zlib hands back nothing of a call that fails, so ``data`` is given a few bytes at a time, each step
    from a copy of the decoder, and the few bytes that hold the fault one at a time: only a body that
    fails pays, once, as it ends there.
    """
    for start in range(0, len(data), _SALVAGE_STEP):
        step = data[start:start + _SALVAGE_STEP]
        before = inflate.copy()
        try:
            piece = inflate.decompress(step)
        except zlib.error:
            inflate = before
            break
        if piece:
            yield piece
    else:  # (not found again: nothing more to hand out)
        return
    held = bytearray()
    for byte in range(len(step)):
        try:
            held += inflate.decompress(step[byte:byte + 1])
        except zlib.error:
            break
    if held:
        yield bytes(held)
