"""``agui replay`` and ``agui verify``: a recorded response (SSE capture or JSONL) read back.

``replay`` folds the recording exactly as a live run would and shows where the thread ended up;
the first protocol error stops it (exit 1), as it would stop a live run. ``verify`` reads the whole
recording with ``RunSession(collect_errors=True)`` and lists every finding. Both exit 2 when the
input cannot be read or holds no events at all.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.table import Table

from ..errors import ProtocolError, StreamWarning
from ..session import RunResult, RunSession, replay_events
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

__all__ = ["read_source", "replay_command", "verify_command", "Unreadable"]


class Unreadable(Exception):
    """The input cannot be read, or holds no AG-UI events (exit status 2)."""


def read_source(path: str) -> bytes:
    """The bytes of ``path`` (``-``: standard input).

    Raises:
        Unreadable: the file cannot be read.
    """
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise Unreadable(f"cannot read {path}: {exc.strerror or exc}") from exc


def _fold(data: bytes, *, collect: bool) -> tuple[RunSession, RunResult]:
    session = RunSession(collect_errors=collect)
    try:
        for _ in replay_events(data, session):
            pass
    except ProtocolError:
        if session.index == 0:
            raise Unreadable("no AG-UI events found") from None
        raise
    if session.index == 0:
        raise Unreadable("no AG-UI events found (expected an SSE capture or JSON lines)")
    return session, session.end()


def replay_command(out: Output, path: str, *, as_json: bool) -> int:
    """Fold the recording and show the thread it leaves; the exit status."""
    data = read_source(path)
    try:
        session, result = _fold(data, collect=False)
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
    data = read_source(path)
    session, _ = _fold(data, collect=True)
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
