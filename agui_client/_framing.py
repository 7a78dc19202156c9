"""The answer's body on its way to the fold, for both clients: its media type checked, a coded body
inflated in bounded steps, and the bytes framed into SSE payloads within the run's byte budget
(``max_run_bytes``). Nothing here does I/O: the clients hand it each network read.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterator

import httpx

from ._answers import ERROR_BODY_LIMIT, excerpt_text, media_type
from ._inert import quoted_name
from ._inflate import Inflater
from .core.budget import MemoryBudget
from .core.exchange import StreamHandle
from .core.redact import Redactor, redact_exception
from .errors import LimitExceeded, ProtocolError, StreamWarning
from .wire.sse import SSEDecoder

__all__ = ["SSE", "REFUSED_TYPES", "Framer", "check_media", "inflater_for", "framed"]

#: The media type of an event stream.
SSE = "text/event-stream"
#: Answers that are plainly not an event stream, refused (``TR-04``) rather than read as SSE.
REFUSED_TYPES = {
    "text/html": "an HTML page",
    "application/x-ndjson": "NDJSON",
    "application/jsonl": "JSON lines",
    "application/vnd.ag-ui.event+proto": "protobuf frames (not offered by this client)",
}


#: ``max_run_bytes=None``: no bound (a budget no response reaches).
_UNBOUNDED = 1 << 62


class Framer:
    """Turns response chunks into SSE payloads; shared by both shells.

    It also keeps the run's budget of body bytes (``max_run_bytes``): an agent streaming small valid
    events for ever (a text delta, an element added to an array in state) would grow the fold without
    bound, each event within ``max_event_bytes``. It is counted per read, not per event (a read holds
    many events), and before the read is framed, so the run stops with what it folded so far.
    """

    def __init__(self, max_event_bytes: int, handle: StreamHandle, media: str,
                 max_run_bytes: int | None = None, run_id: str | None = None, charset: str | None = None,
                 max_run_memory: int | None = None) -> None:
        self.decoder = SSEDecoder(max_event_bytes=max_event_bytes)
        self.handle = handle
        self.media = media
        #: The charset the answer's ``Content-Type`` names (what a refusal quoting its start reads it with).
        self.charset = charset
        self.frames = 0
        self.head = bytearray()
        self.max_run_bytes = max_run_bytes
        #: What is left of the run's budget of body bytes.
        self.left = self.left_sent = _UNBOUNDED if max_run_bytes is None else max_run_bytes
        #: Below this, a read needs a closer look (:meth:`_watched`): always while the head is kept, then
        #: only once the budget is spent. (One comparison a read does both.)
        self.watch = _UNBOUNDED << 1
        self.run_id = run_id
        #: What the run's events may make the thread hold (``max_run_memory``), charged read by read and
        #: handed to the session through the handle, which checks it before folding each read.
        self.budget = handle.budget = MemoryBudget(max_run_memory) if max_run_memory is not None else None

    def feed(self, chunk: bytes) -> list[str | bytes]:
        left = self.left = self.left - len(chunk)
        if left < self.watch:
            self._watched(chunk)
        payloads = self.decoder.feed_payloads(chunk)
        if self.budget is not None:
            self.budget.read(chunk, len(payloads), replaced=self.decoder.replaced)
        if self.decoder.warnings:
            self._drain()
        self.frames += len(payloads)
        return payloads

    def close(self) -> list[str | bytes]:
        frames = self.decoder.close()
        if self.budget is not None and self.decoder.replaced:
            self.budget.read(b"", 0, replaced=True)  # (the last event's, replaced as it closed, may widen)
        self._drain()
        self.frames += len(frames)
        if self.frames == 0 and self.media not in ("", SSE) and self.head.strip():
            head = excerpt_text(bytes(self.head), ERROR_BODY_LIMIT, self.handle.redactor, self.charset)
            raise ProtocolError(
                f"the agent answered {quoted_name(self.handle.redactor.text(self.media))}, not an event stream: "
                f"{head[:300]!r}",
                rule="TR-09")
        return [f.data for f in frames]

    def _watched(self, chunk: bytes) -> None:
        if self.left < 0:
            raise self._too_long()
        self.head += chunk[: ERROR_BODY_LIMIT - len(self.head)]
        if len(self.head) >= ERROR_BODY_LIMIT:
            self.watch = 0

    def sent(self, size: int) -> None:
        """A read of a coded body, ``size`` bytes as sent: charged to a budget of its own, as a coded body may
        bring bytes that decode to nothing (an endless gzip header) and are not counted by :meth:`feed`."""
        self.left_sent -= size
        if self.left_sent < 0:
            raise self._too_long()

    def _too_long(self) -> LimitExceeded:
        self.left = self.left_sent = -1  # (and stays spent: a caller reading on gets the same refusal)
        return LimitExceeded(
            f"the run's response went past max_run_bytes ({self.max_run_bytes} bytes of body); what "
            "came before is kept, the rest is not read", limit=self.max_run_bytes or 0, run_id=self.run_id,
            rule="RUN-BYTES")

    def _drain(self) -> None:
        for warning in self.decoder.warnings:
            self.handle.warnings.append(StreamWarning(
                code=warning.code, message=f"{warning.message} (line {warning.line}, byte {warning.offset})",
                index=warning.index))
        self.decoder.warnings.clear()


def check_media(response: httpx.Response, excerpt: Callable[[], bytes], handle: StreamHandle) -> str:
    media = media_type(response.headers.get("content-type"))
    charset = response.charset_encoding
    if charset is not None and not _utf8(charset) and media not in REFUSED_TYPES:
        # An event stream is UTF-8 whatever its Content-Type says (browsers read it so), and it is read
        # so here: a body written in the charset named (UTF-16, say) reads as no events at all, and the
        # run's end would be the only word of it.
        handle.warnings.append(StreamWarning(
            code="SSE-CHARSET",
            message=f"the answer names charset {quoted_name(handle.redactor.text(charset))}; an event stream is "
                    "read as UTF-8 whatever it names"))
    if media == SSE:
        return media
    redactor = handle.redactor
    if media in REFUSED_TYPES:
        head = excerpt_text(excerpt(), ERROR_BODY_LIMIT, redactor, response.charset_encoding)
        raise ProtocolError(
            f"the agent answered HTTP {response.status_code} with {REFUSED_TYPES[media]} ({media}), not an event "
            f"stream: {head[:300]!r}", rule="TR-04")
    handle.warnings.append(StreamWarning(
        code="AGUI505",
        message=f"content type {quoted_name(redactor.text(media) or '(none)')} is not text/event-stream; reading it "
                "as SSE"))
    return media


#: The labels the WHATWG Encoding Standard reads as UTF-8 that Python's codecs do not know.
_UTF8_LABELS = frozenset({"unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "x-unicode20utf8"})


def _utf8(charset: str) -> bool:
    """``charset`` writes an event stream's bytes as UTF-8 does (ASCII is a part of it)."""
    if charset.strip().lower() in _UTF8_LABELS:
        return True
    try:
        return codecs.lookup(charset).name in ("utf-8", "utf-8-sig", "ascii")
    except LookupError:
        return False


def inflater_for(response: httpx.Response, redactor: Redactor, run_id: str | None) -> Inflater | None:
    """``Inflater.of(response)``, its refusal redacted (it quotes the ``Content-Encoding`` header, which
    is the agent's to write, an echoed credential included) and naming the run ``run_id``, as a refusal
    before the first event is otherwise located by nothing."""
    try:
        return Inflater.of(response)
    except ProtocolError as exc:
        raise redact_exception(exc.locate(run_id=run_id), redactor.text) from None


def framed(chunk: bytes, framer: Framer, inflater: Inflater | None) -> Iterator[list[str | bytes]]:
    """The payload batches of one network read: one, or one per piece a coded read inflates to (each
    handed over as it is inflated, so events are not held back behind the rest of the read)."""
    if inflater is None:
        yield framer.feed(chunk)
        return
    framer.sent(len(chunk))
    for piece in inflater.feed(chunk):
        yield framer.feed(piece)
