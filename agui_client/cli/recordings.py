"""``agui replay`` and ``agui verify``: a recorded response (SSE capture or JSONL) read back.

``replay`` folds the recording exactly as a live run would and shows where the thread ended up;
the first protocol error stops it (exit 1), as it would stop a live run, named by its event and the
line and byte where that event starts. A recording folder (``--record DIR``) is folded exchange by
exchange into the thread it recorded: each request's new messages and state first, as the live thread
took them on, then its response. ``verify`` reads the whole recording with
``RunSession(collect_errors=True)`` and lists every finding, with the line and byte offset of the
event it concerns. Both read the recording block by block (never whole, so the per-event size limit
holds for a file of any size), and exit 2 when the input cannot be read or holds no events at all.

The last line of ``agui run --json`` is the thread's wire form, not an event: it is marked
``{"kind": "agui.thread", ...}`` and both commands skip it (and the unmarked form older versions
wrote: an object without ``type`` holding ``messages``, ``openInterrupts``, ``threadId`` and
``outcome``), so that output replays as it is.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from rich.table import Table

from ..core.fold import ThreadState
from ..core.replaying import detect_format, open_named, sse_warnings
from ..core.result import RunResult
from ..core.session import DEFAULT_MAX_EVENT_BYTES, RunSession, fail_framing
from ..errors import LimitExceeded, ProtocolError, StreamEnded, StreamWarning
from ..testing.recording import (
    META_FILE_BYTES,
    REQUEST_FILE_BYTES,
    open_recorded,
    read_recorded,
    recorded_exchanges,
    unanswered,
)
from ..wire import codec
from ..wire.jsonio import parse_json
from ..wire.sink import collect_warnings
from ..wire.sse import SSEDecoder
from ..wire.types.events import UnknownEvent
from ..wire.types.run import RunAgentInput
from .render import (
    ERROR_CHARS,
    Output,
    RichOutput,
    bounded,
    render_error,
    render_interrupt,
    render_messages,
    render_summary,
    render_warnings,
    see,
    usage_text,
    with_see,
)
from .terminal import json_text, listed, named, one_line, some_lines

__all__ = ["open_source", "replay_command", "verify_command", "Unreadable", "THREAD_LINE_KIND", "LISTED_ERRORS"]

#: The ``kind`` marking the thread line ``agui run --json`` ends with.
THREAD_LINE_KIND = "agui.thread"

_THREAD_LINE = re.compile(rb'\s*\{\s*"kind"\s*:\s*"agui\.thread"')
_LEGACY_THREAD_LINE = re.compile(rb'\s*\{\s*"messages"\s*:')
_LEGACY_KEYS = frozenset({"messages", "openInterrupts", "threadId", "outcome"})


class Unreadable(Exception):
    """The input cannot be read, or holds no AG-UI events (exit status 2)."""


def _is_thread_line(data: str | bytes) -> bool:
    """Whether a payload is the thread line of ``agui run --json`` (a summary, not an event)."""
    head = data[:64].encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data[:64])
    marked = _THREAD_LINE.match(head) is not None
    if not marked and _LEGACY_THREAD_LINE.match(head) is None:
        return False
    try:
        with collect_warnings():
            value = parse_json(data)
    except ProtocolError:
        return False
    if not isinstance(value, dict) or "type" in value:
        return False
    return marked or _LEGACY_KEYS <= value.keys()


class _Session(RunSession):
    """A session that skips the thread line of ``agui run --json`` (counted in ``thread_lines``), and
    keeps the type of the last event folded (``last_type``: a recording cut before its run's end is
    named by the event it ends after)."""

    thread_lines = 0
    last_type: str | None = None

    def feed_payload(self, data: str | bytes) -> list[Any]:
        if data[:1] in ("{", b"{") or data[:1].isspace():
            if _is_thread_line(data):
                self.thread_lines += 1
                return []
        events = super().feed_payload(data)
        if events:
            last = events[-1]
            self.last_type = last.type if isinstance(last, UnknownEvent) else last.TYPE
        return events


@contextlib.contextmanager
def open_source(path: str, *, in_folder: bool = False) -> Iterator[BinaryIO]:
    """``path`` open for binary reading (``-``: standard input), closed afterwards.

    The caller reads it block by block (``_read_located`` does), so a recording is never held
    whole: the per-event size limit trips on an endless line before the file is in memory.
    With ``in_folder`` (a response of a recording folder) only a regular file is read: a FIFO
    there would block the open, a link to a device would never end (``open_recorded``). A path
    the person names may be a pipe (``<(gunzip -c rec.sse.gz)``), read until its writer is done;
    never a device (see :func:`~agui_client.core.replaying.open_named`).

    Raises:
        Unreadable: the file cannot be opened.
    """
    if path == "-":
        yield sys.stdin.buffer
        return
    try:
        # (closed by the with below, once the caller has read it)
        handle = open_recorded(path) if in_folder else open_named(path)
    except OSError as exc:
        raise Unreadable(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise Unreadable(f"cannot read {exc}" + ("" if in_folder else " (for standard input, give -)")) from None
    with handle:
        yield handle


def _fold(path: str, session: _Session, located: _Located) -> RunResult:
    """Fold the recording at ``path`` into ``session``, noting in ``located`` where each event starts (a
    protocol error is then named by line and byte, as ``agui verify`` names its findings)."""
    with open_source(path) as handle:
        try:
            _read_located(handle, session, located)
        except OSError as exc:
            raise Unreadable(f"cannot read {path}: {exc.strerror or exc}") from exc
        except ProtocolError as exc:
            # An event past the size limit is the recording's fault, reported as the library raised
            # it, even when it is the first event (it is not a file without events).
            if session.index == 0 and not isinstance(exc, LimitExceeded):
                raise Unreadable("no AG-UI events found") from None
            raise
    if session.index == 0 and not any(isinstance(error, LimitExceeded) for error in session.errors):
        raise Unreadable("no AG-UI events found (expected an SSE capture or JSON lines)")
    return session.end()


def replay_command(out: Output, path: str, *, as_json: bool) -> int:
    """Fold the recording (a folder, or one file) and show the thread it leaves; the exit status."""
    if path != "-" and os.path.isdir(path):
        return _replay_folder(out, path, as_json=as_json)
    session = _Session(collect_errors=False)
    located = _Located(session)
    try:
        result = _fold(path, session, located)
    except ProtocolError as exc:
        return _broken(out, exc, located, None, as_json=as_json, verify=f"`agui verify {path}`")
    if as_json:
        print(json_text(_wire(result), indent=2))
        return 0
    out.line(f"{'stdin' if path == '-' else path}: {session.index} event(s), {len(result.run_ids)} run(s)", "dim")
    if session.thread_lines:
        out.line("the thread line `agui run --json` ends with was skipped (a summary, not an event)", "dim")
    _show_thread(out, result)
    return 0


def _show_thread(out: Output, result: RunResult) -> None:
    state = result.state
    out.line("messages:", "bold")
    render_messages(out, state)
    rows = [("thread", named(str(result.thread_id))), ("run", named(str(result.run_id))),
            ("outcome", str(result.outcome))]
    if result.error is not None:
        rows.append(("error", bounded(some_lines(result.error.message))
                     + (with_see(f" (code {named(result.error.code)})", result.error.code)
                        if result.error.code else "")))
    if result.pending_tool_call_ids:
        rows.append(("pending tool calls", listed(result.pending_tool_call_ids)))
    if result.result is not None:
        rows.append(("result", bounded(json.dumps(result.result, ensure_ascii=False), ERROR_CHARS)))
    rows.append(("usage", usage_text(result.usage)))
    rows.append(("open interrupts", str(len(state.open_interrupts))))
    render_summary(out, "replay", rows, state.state)
    for interrupt in state.open_interrupts:
        render_interrupt(out, interrupt, state)
    render_warnings(out, result.warnings)


# --------------------------------------------------------------------------------------------------
# a recording folder
# --------------------------------------------------------------------------------------------------


def _read_request(path: Path) -> RunAgentInput:
    try:
        with collect_warnings():
            return codec.decode(parse_json(read_recorded(path, REQUEST_FILE_BYTES)), RunAgentInput)
    except OSError as exc:
        raise Unreadable(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise Unreadable(f"cannot read {exc}") from None
    except ProtocolError as exc:
        raise Unreadable(f"{path} is not a RunAgentInput: {exc}") from None


def _read_meta(path: Path) -> dict[str, Any]:
    meta: dict[str, Any] = {"status": 200, "contentType": "text/event-stream"}
    # (exists, not is_file: a FIFO or a link to a device there is refused by read_recorded, not taken
    # for a folder without the file)
    if path.exists():
        try:
            found = json.loads(read_recorded(path, META_FILE_BYTES).decode("utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            raise Unreadable(f"{path} is not readable JSON: {exc}") from None
        if isinstance(found, dict):
            meta.update(found)
    return meta


#: The most notes of skipped exchanges shown (a folder may hold thousands).
_NOTES_SHOWN = 10


class _Folder:
    """A recording folder read exchange by exchange: for each recorded run, the thread as the live one
    stood when it sent the request (its new messages and a replaced state taken on), and the run's
    input. Exchanges that are not runs (an error status, another media type) are noted and skipped."""

    def __init__(self, path: str) -> None:
        try:
            self.exchanges = recorded_exchanges(path)
        except OSError as exc:
            raise Unreadable(f"cannot read {path}: {exc.strerror or exc}") from exc
        if not self.exchanges:
            raise Unreadable(f"{path} holds no recorded exchange (NN.request.json, as --record writes)")
        self.path = path
        self.threads: dict[str, ThreadState] = {}
        self.notes: list[str] = []

    def runs(self) -> Iterator[tuple[str, str, ThreadState, RunAgentInput]]:
        """``(name, response, thread, run_input)`` a recorded run, in order (``response``: the path
        of its ``NN.sse``)."""
        for _, request in self.exchanges:
            name = request.name.split(".", 1)[0]
            stem = request.parent / name
            run_input = _read_request(request)
            cut = unanswered(request)
            if cut is not None:
                raise Unreadable(cut)
            meta = _read_meta(Path(f"{stem}.response.json"))
            status, media = meta.get("status"), str(meta.get("contentType") or "").split(";")[0].strip().lower()
            if not (isinstance(status, int) and 200 <= status < 300 and media == "text/event-stream"):
                self.notes.append(f"{name}: HTTP {one_line(str(status), 20)} {one_line(media) or '(no content type)'}: "
                                  "not a run, skipped")
                continue
            if meta.get("contentEncoding"):
                raise Unreadable(f"{stem}.sse is {one_line(str(meta['contentEncoding']), 40)}-encoded as it came; "
                                 "decode it first")
            state = self.threads.get(run_input.thread_id)
            if state is None:
                state = self.threads[run_input.thread_id] = ThreadState(thread_id=run_input.thread_id)
            # What the live thread took on when it sent the request: its new messages, a replaced state.
            for message in run_input.messages:
                if not state.has_message(message.id):
                    state.add_message(message)
            if run_input.state != state.state:
                state.set_state(run_input.state)
            yield name, f"{stem}.sse", state, run_input

    def no_run(self) -> Unreadable:
        more = len(self.notes) - _NOTES_SHOWN
        return Unreadable(f"{self.path} holds no run: " + "; ".join(self.notes[:_NOTES_SHOWN])
                          + (f"; and {more} more" if more > 0 else ""))


def _replay_folder(out: Output, path: str, *, as_json: bool) -> int:
    folder = _Folder(path)
    result: RunResult | None = None
    events = runs = 0
    for name, sse, state, run_input in folder.runs():
        session = _Session(state, run_input=run_input)
        located = _Located(session)
        try:
            with open_source(sse, in_folder=True) as handle:
                try:
                    _read_located(handle, session, located)
                except OSError as exc:
                    raise Unreadable(f"cannot read {sse}: {exc.strerror or exc}") from exc
            result = session.end()
        except ProtocolError as exc:
            return _broken(out, exc, located, f"{name}.sse", as_json=as_json, verify="`agui verify` of that file")
        events += session.index
        runs += len(result.run_ids)
    if result is None:
        raise folder.no_run()
    if as_json:
        print(json_text({**_wire(result), "events": events, "exchanges": len(folder.exchanges)}, indent=2))
        return 0
    out.line(f"{path}: {len(folder.exchanges)} exchange(s), {events} event(s), {runs} run(s)", "dim")
    for note in folder.notes[:_NOTES_SHOWN]:
        out.line(note, "yellow")
    if len(folder.notes) > _NOTES_SHOWN:
        out.line(f"... and {len(folder.notes) - _NOTES_SHOWN} more exchange(s) that are not runs", "yellow")
    if len(folder.threads) > 1:
        out.line(f"the recording holds {len(folder.threads)} threads; shown: the last one "
                 f"({named(str(result.thread_id))})", "yellow")
    _show_thread(out, result)
    return 0


def _broken(out: Output, exc: ProtocolError, located: _Located, where: str | None, *, as_json: bool,
            verify: str) -> int:
    """Report the protocol error that ended a replay: its event, and the line and byte where that event
    starts in the file (``where``, a folder's file; ``None``: the one recording given)."""
    finding = _finding(exc, "error")
    finding["line"], finding["offset"] = located.of(finding["index"])
    _cut_short(finding, located)
    if as_json:
        report: dict[str, Any] = {"error": finding if where is None else {**finding, "file": where}}
        if exc.result is not None:
            report.update(_wire(exc.result))
        print(json_text(report, indent=2))
    else:
        ends = finding.get("where")
        render_error(out, exc, at=ends)
        place = "" if where is None else f" in {where}"
        event = "the end" if exc.index is None else f"event #{exc.index}"
        said = f"the recording{place} {ends}" if ends is not None else \
            f"the recording breaks the protocol{place} at {event} ({_position(finding)})"
        out.line(f"{said}; {verify} lists every finding", "red")
    return 1


def _cut_short(finding: dict[str, Any], located: _Located) -> None:
    """Mark the finding of a recording cut before its run's end (``StreamEnded`` at the count of events)
    with ``after``, the last event it holds (``{"index", "eventType"}``; ``None``: it holds none), and
    ``where``, in words: "ends before the run finished, after event #K (TYPE), at byte B" (B: the size).

    Its ``index`` stays the error's typed index, the count of events: one past the last, the index the
    next event would have had. Named by that alone, the end read as an event the file does not hold
    ("event #3 (end, byte 199)"); ``replay``'s panel, its line and ``verify``'s all say what it ends after.
    """
    session = located.session
    if finding.get("error") != StreamEnded.__name__ or finding["index"] != session.index:
        return
    last = session.last_type if isinstance(session, _Session) else None
    after = finding["after"] = {"index": session.index - 1, "eventType": last} if session.index else None
    event = f"after event #{after['index']} ({named(last or '-')})" if after else "before any event"
    finding["where"] = f"ends before the run finished, {event}, at byte {located.size}"


def _wire(result: RunResult) -> dict[str, Any]:
    return {**result.state.to_wire(), "threadId": result.thread_id, "runId": result.run_id,
            "outcome": result.outcome, "events": result.events}


def _finding(item: ProtocolError | StreamWarning, severity: str) -> dict[str, Any]:
    if isinstance(item, ProtocolError):
        return {"severity": severity, "index": item.index, "eventType": item.event_type, "rule": item.rule,
                "message": item.detail, "runId": item.run_id, "pointer": item.pointer,
                "error": type(item).__name__}
    return {"severity": severity, "index": item.index, "eventType": item.event_type, "rule": item.code,
            "message": item.message, "runId": item.run_id, "pointer": item.pointer}


#: Bytes read at a time by ``verify``.
_BLOCK = 32 * 1024


#: The errors ``verify`` lists per response (the first ones); the rest are counted. A recording with a
#: fault on every line kept every error, and its report grew with the file (100,000 faulty lines: half
#: a gigabyte).
LISTED_ERRORS = 1000

#: Events behind the one being read whose start ``verify`` keeps without a finding naming them yet
#: (a framing warning names an event the decoder has reached and the session has not).
_RECENT = 4096


class _Located:
    """Where the events of a recording that findings name start: the 1-based line and byte offset, by
    event index.

    Every event's start is noted as it is read, and those of events more than ``_RECENT`` behind that no
    finding names are let go from time to time: keeping them all cost about 200 bytes an event, a
    gigabyte for a capture of five million events without a single finding.
    """

    def __init__(self, session: RunSession) -> None:
        self.session = session
        self.at: dict[int, tuple[int, int]] = {}
        self.size = 0
        #: Framing warnings the SSE decoder counted and did not keep (past its bound for their code).
        self.dropped = 0

    def note(self, index: int, line: int, offset: int) -> None:
        """Event ``index`` starts at ``line``, byte ``offset``."""
        self.at[index] = (line, offset)
        if len(self.at) > 2 * _RECENT + LISTED_ERRORS:
            session = self.session
            named = {f.index for f in (*session.errors, *session.warnings, *session.state.warnings)}
            recent = index - _RECENT
            self.at = {i: where for i, where in self.at.items() if i >= recent or i in named}

    def of(self, index: int | None) -> tuple[int | None, int]:
        found = self.at.get(index) if index is not None else None
        return found if found is not None else (None, self.size)


def _fold_located(path: str, session: _Session | None = None) -> tuple[_Session, _Located, RunResult]:
    """The recording at ``path`` folded with every finding collected, keeping where each event starts in
    the file; ``session``: one
    that continues a recorded thread (a folder's run, whose response may hold no event at all: the
    session's end says so as a finding)."""
    alone = session is None
    if session is None:
        session = _Session(collect_errors=True, max_errors=LISTED_ERRORS)
    located = _Located(session)
    with open_source(path, in_folder=not alone) as handle:
        try:
            _read_located(handle, session, located)
        except OSError as exc:
            raise Unreadable(f"cannot read {path}: {exc.strerror or exc}") from exc
    if alone and session.index == 0 and not any(isinstance(error, LimitExceeded) for error in session.errors):
        raise Unreadable("no AG-UI events found (expected an SSE capture or JSON lines)")
    return session, located, session.end()


def _read_located(handle: BinaryIO, session: _Session, located: _Located) -> None:
    """Feed the recording ``handle`` reads, SSE or JSON lines, to ``session`` block by block, noting in
    ``located`` where each event starts."""
    blocks = iter(lambda: bytes(handle.read(_BLOCK)), b"")
    first = next(blocks, b"")
    if detect_format(first) == "jsonl":
        _jsonl_located(itertools.chain((first,), blocks), session, located, DEFAULT_MAX_EVENT_BYTES)
    else:
        _sse_located(itertools.chain((first,), blocks), session, located, DEFAULT_MAX_EVENT_BYTES)


def _sse_located(blocks: Iterator[bytes], session: _Session, located: _Located, limit: int) -> None:
    decoder = SSEDecoder(max_event_bytes=limit)
    try:
        for block in blocks:
            located.size += len(block)
            for frame in decoder.feed(block):
                located.note(session.index, frame.line, frame.offset)
                session.feed_payload(frame.data)
            sse_warnings(decoder, session)
        for frame in decoder.close():
            located.note(session.index, frame.line, frame.offset)
            session.feed_payload(frame.data)
    except LimitExceeded as exc:
        fail_framing(session, exc)
    sse_warnings(decoder, session)
    located.dropped = decoder.warnings_dropped


def _jsonl_located(blocks: Iterator[bytes], session: _Session, located: _Located, limit: int) -> None:
    pieces: list[bytes] = []
    held = 0
    line_number, start = 1, 0  # the line being read: its number and where it starts

    def take(line: bytes) -> None:
        nonlocal line_number, start
        if line and not line.isspace():
            located.note(session.index, line_number, start)
            session.feed_payload(line)
        line_number += 1
        start += len(line) + 1

    for block in blocks:
        located.size += len(block)
        at = 0
        while True:
            end = block.find(b"\n", at)
            if end < 0:
                held += len(block) - at
                if held > limit:
                    fail_framing(session, LimitExceeded(f"a JSONL line grew past {limit} bytes (line {line_number}, "
                                                        f"byte {start})", limit=limit, rule="TR-11"))
                    return
                pieces.append(block[at:])
                break
            if pieces:
                pieces.append(block[at:end])
                line = b"".join(pieces)
                pieces, held = [], 0
            else:
                line = block[at:end]
            take(line)
            at = end + 1
    if pieces:
        take(b"".join(pieces))


def _after_refused_terminal(errors: Sequence[ProtocolError]) -> list[ProtocolError]:
    """The errors without the "stream ended without RUN_FINISHED" that only repeats a refused terminal event."""
    refused = {e.run_id for e in errors if e.event_type in ("RUN_FINISHED", "RUN_ERROR")}
    return [e for e in errors if not (isinstance(e, StreamEnded) and e.run_id in refused)]


def _located_findings(session: _Session, located: _Located,
                      result: RunResult) -> tuple[list[dict[str, Any]], int, int, int]:
    """The findings of a folded recording, each with its line and offset, in event order; the number
    of errors, of warnings, and of those not listed (a flood of one fault keeps a bounded number: the
    counts say how many there were).

    The warnings are the result's, as ``replay()`` reports them: the session's, and the thread's
    repairs (``UTF16-SURROGATE``: text joined when it is read, so no event index: "at the end").
    """
    errors_found = _after_refused_terminal(session.errors)
    findings = [_finding(e, "error") for e in errors_found] + [_finding(w, "warning") for w in result.warnings]
    for finding in findings:
        finding["line"], finding["offset"] = located.of(finding["index"])
        _cut_short(finding, located)
    findings.sort(key=lambda f: (f["index"] is None, f["index"] if f["index"] is not None else 0))
    dropped = session.warnings.dropped + session.state.warnings.dropped + located.dropped
    return (findings, len(errors_found) + session.errors_dropped, len(result.warnings) + dropped,
            session.errors_dropped + dropped)


def verify_command(out: Output, path: str, *, as_json: bool) -> int:
    """List every error and warning in the recording (a file, or a ``--record`` folder, each run in
    the thread it continued); the exit status (1 when there are errors)."""
    if path != "-" and os.path.isdir(path):
        findings, summary = _verify_folder(path)
    else:
        session, located, result = _fold_located(path)
        findings, errors, warnings, unlisted = _located_findings(session, located, result)
        summary = {"events": session.index, "errors": errors, "warnings": warnings, "unlisted": unlisted}
    errors = summary["errors"]
    if as_json:
        print(json_text({**summary, "findings": findings}, indent=2))
        return 1 if errors else 0
    name = "stdin" if path == "-" else path
    _findings_view(out, findings)
    # (one line for the list, not one a finding: a recording may hold a thousand findings of one rule)
    hints = [hint for hint in (see(f["rule"]) for f in findings) if hint is not None]
    if hints:
        out.line(hints[0] if len(set(hints)) == 1 else
                 f"{hints[0][:-1]}; each rule above likewise: agui explain CODE)", "dim")
    if summary["unlisted"]:
        out.line(f"... and {summary['unlisted']} more finding(s) counted, not listed (at most {LISTED_ERRORS} "
                 "errors a response, and a bounded number of warnings of each kind)", "yellow")
    counted = f"{summary['exchanges']} exchange(s), " if "exchanges" in summary else ""
    verdict = f"{name}: {counted}{summary['events']} event(s), {errors} error(s), {summary['warnings']} warning(s)"
    if errors:
        out.line(verdict, "bold red")
    else:
        out.line(verdict + (" - clean" if not summary["warnings"] else " - no errors"), "bold green")
    return 1 if errors else 0


def _verify_folder(path: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    # Each run is verified in the thread it continued, as replay folds it (a resume is judged against
    # the interrupts the run before left open); a run's errors do not stop the next from being read.
    folder = _Folder(path)
    findings: list[dict[str, Any]] = []
    events = errors = warnings = unlisted = runs = 0
    for name, sse, state, run_input in folder.runs():
        session, located, result = _fold_located(sse, _Session(state, run_input=run_input, collect_errors=True,
                                                                     max_errors=LISTED_ERRORS))
        found, run_errors, run_warnings, run_unlisted = _located_findings(session, located, result)
        findings.extend({"file": f"{name}.sse", **finding} for finding in found)
        events += session.index
        errors += run_errors
        warnings += run_warnings
        unlisted += run_unlisted
        runs += 1
    if not runs:
        raise folder.no_run()
    return findings, {"exchanges": len(folder.exchanges), "runs": runs, "skipped": folder.notes, "events": events,
                      "errors": errors, "warnings": warnings, "unlisted": unlisted}


def _findings_view(out: Output, findings: Sequence[dict[str, Any]]) -> None:
    if not findings:
        return
    if isinstance(out, RichOutput):
        table = Table(show_edge=False, header_style="bold")
        files = any("file" in f for f in findings)
        for column in ("", *(("file",) if files else ()), "event", "at", "type", "rule", "finding"):
            table.add_column(column)
        for f in findings:
            style = "red" if f["severity"] == "error" else "yellow"
            table.add_row(f["severity"], *((f.get("file", ""),) if files else ()), _index(f),
                          f.get("where") or _position(f),
                          named(f["eventType"] or "-"), f["rule"] or "-", one_line(f["message"], 1000),
                          style=style)
        out.console.print(table)
        return
    for f in findings:
        ends = f.get("where")
        where = f"{_where(f)} ({_position(f)})" if ends is None else \
            (f"{f['file']} {ends}" if "file" in f else ends)
        out.line(f"{f['severity']}: {where} {named(f['eventType'] or '-')} [{f['rule'] or '-'}] "
                 f"{one_line(f['message'], 1000)}")


def _index(finding: dict[str, Any]) -> str:
    return f"#{finding['index']}" if finding["index"] is not None and "after" not in finding else "end"


def _position(finding: dict[str, Any]) -> str:
    if finding.get("line") is None:
        return f"end, byte {finding.get('offset', 0)}"
    return f"line {finding['line']}, byte {finding['offset']}"


def _where(finding: dict[str, Any]) -> str:
    where = f"event #{finding['index']}" if finding["index"] is not None else "at the end"
    return f"{finding['file']} {where}" if "file" in finding else where
