"""``agui replay`` and ``agui verify``: a recorded response (SSE capture or JSONL) read back.

``replay`` folds the recording exactly as a live run would and shows where the thread ended up;
the first protocol error stops it (exit 1), as it would stop a live run. ``verify`` reads the whole
recording with ``RunSession(collect_errors=True)`` and lists every finding. Both read the recording
block by block (never whole, so the per-event size limit holds for a file of any size), and exit 2
when the input cannot be read or holds no events at all.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

from rich.table import Table

from ..core.session import RunResult, RunSession, replay_events
from ..errors import LimitExceeded, ProtocolError, StreamWarning
from .render import (
    Output,
    RichOutput,
    render_error,
    render_interrupt,
    render_messages,
    render_summary,
    render_warnings,
    usage_text,
)
from .terminal import json_text

__all__ = ["open_source", "replay_command", "verify_command", "Unreadable"]


class Unreadable(Exception):
    """The input cannot be read, or holds no AG-UI events (exit status 2)."""


@contextlib.contextmanager
def open_source(path: str) -> Iterator[BinaryIO]:
    """``path`` open for binary reading (``-``: standard input), closed afterwards.

    The caller reads it block by block (``replay_events`` does), so a recording is never held
    whole: the per-event size limit trips on an endless line before the file is in memory.

    Raises:
        Unreadable: the file cannot be opened.
    """
    if path == "-":
        yield sys.stdin.buffer
        return
    try:
        handle = open(path, "rb")  # (closed by the with below, once the caller has read it)
    except OSError as exc:
        raise Unreadable(f"cannot read {path}: {exc.strerror or exc}") from exc
    with handle:
        yield handle


def _fold(path: str, *, collect: bool) -> tuple[RunSession, RunResult]:
    session = RunSession(collect_errors=collect)
    with open_source(path) as handle:
        try:
            for _ in replay_events(handle, session):
                pass
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
    return session, session.end()


def replay_command(out: Output, path: str, *, as_json: bool) -> int:
    """Fold the recording and show the thread it leaves; the exit status."""
    try:
        session, result = _fold(path, collect=False)
    except ProtocolError as exc:
        if as_json:
            partial = exc.result
            report: dict[str, Any] = {"error": _finding(exc, "error")}
            if partial is not None:
                report.update(_wire(partial))
            print(json_text(report, indent=2))
        else:
            render_error(out, exc)
            out.line(f"the recording breaks the protocol at event #{exc.index}; "
                     f"`agui verify {path}` lists every finding", "red")
        return 1
    if as_json:
        print(json_text(_wire(result), indent=2))
        return 0
    state = result.state
    out.line(f"{'stdin' if path == '-' else path}: {session.index} event(s), {len(result.run_ids)} run(s)", "dim")
    out.line("messages:", "bold")
    render_messages(out, state)
    rows = [("thread", str(result.thread_id)), ("run", str(result.run_id)), ("outcome", str(result.outcome))]
    if result.error is not None:
        rows.append(("error", result.error.message + (f" (code {result.error.code})" if result.error.code else "")))
    if result.pending_tool_call_ids:
        rows.append(("pending tool calls", ", ".join(result.pending_tool_call_ids)))
    if result.result is not None:
        rows.append(("result", json.dumps(result.result, ensure_ascii=False)))
    rows.append(("usage", usage_text(result.usage)))
    rows.append(("open interrupts", str(len(state.open_interrupts))))
    render_summary(out, "replay", rows, state.state)
    for interrupt in state.open_interrupts:
        render_interrupt(out, interrupt, state)
    render_warnings(out, result.warnings)
    return 0


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


def verify_command(out: Output, path: str, *, as_json: bool) -> int:
    """List every error and warning in the recording; the exit status (1 when there are errors)."""
    session, _ = _fold(path, collect=True)
    findings = [_finding(e, "error") for e in session.errors] + [_finding(w, "warning") for w in session.warnings]
    findings.sort(key=lambda f: (f["index"] is None, f["index"] if f["index"] is not None else 0))
    errors = len(session.errors)
    warnings = len(session.warnings)
    if as_json:
        print(json_text({"events": session.index, "errors": errors, "warnings": warnings, "findings": findings},
                        indent=2))
        return 1 if errors else 0
    name = "stdin" if path == "-" else path
    _findings_view(out, findings)
    verdict = f"{name}: {session.index} event(s), {errors} error(s), {warnings} warning(s)"
    if errors:
        out.line(verdict, "bold red")
    else:
        out.line(verdict + (" - clean" if not warnings else " - no errors"), "bold green")
    return 1 if errors else 0


def _findings_view(out: Output, findings: Sequence[dict[str, Any]]) -> None:
    if not findings:
        return
    if isinstance(out, RichOutput):
        table = Table(show_edge=False, header_style="bold")
        for column in ("", "event", "type", "rule", "finding"):
            table.add_column(column)
        for f in findings:
            style = "red" if f["severity"] == "error" else "yellow"
            table.add_row(f["severity"], _index(f), f["eventType"] or "-", f["rule"] or "-", f["message"], style=style)
        out.console.print(table)
        return
    for f in findings:
        out.line(f"{f['severity']}: {_where(f)} {f['eventType'] or '-'} [{f['rule'] or '-'}] {f['message']}")


def _index(finding: dict[str, Any]) -> str:
    return f"#{finding['index']}" if finding["index"] is not None else "end"


def _where(finding: dict[str, Any]) -> str:
    return f"event #{finding['index']}" if finding["index"] is not None else "at the end"
