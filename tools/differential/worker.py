"""Fold every case of a file with the agui_client found on ``sys.path`` and write what came of each.

Run by ``python -m tools.differential`` once per tree (``PYTHONPATH`` names the tree), so it uses only
names every release since the first has kept public: ``replay``, ``RunSession``, ``ThreadState``,
``AguiError``, ``encode``.

Each case is folded three ways, each into a thread of its own that every run of the case continues:
``replay()`` of the recorded bytes (the path ``Thread.run()`` takes), a ``RunSession`` fed payload by
payload with events handed out (the path ``Thread.stream()`` takes), and a collecting session (the
path ``agui verify`` takes). For each run it records the result (outcome, interrupts, pending calls,
usage, new messages, warnings, steps) or the error (type, message, run, index, event type, pointer,
rule), the thread in wire form, and the thread after a ``dump()``/``load()`` round trip.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import attrs

from agui_client import AguiError, RunSession, ThreadState, encode, replay

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
#: The digest ending a long name or value cut in a message (``...#`` and eight hex digits): keyed by a
#: secret each process draws when it starts, so the two trees' workers write different digests of the
#: same cut text, a difference that says nothing about either tree (as a uuid drawn per run says nothing).
_CUT_DIGEST = re.compile(r"\.\.\.#[0-9a-f]{8}")


def _plain(value: Any) -> Any:
    if attrs.has(type(value)):
        try:
            return encode(value)
        except Exception:  # noqa: BLE001 - a record that is not a wire type
            return {k: _plain(v) for k, v in attrs.asdict(value, recurse=False).items() if k != "state"}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(map(str, value))
    return value


def _warnings(items: Any) -> list[Any]:
    return [[w.code, w.message, w.index, w.event_type, w.run_id, w.pointer] for w in items]


def _thread(thread: ThreadState) -> dict[str, Any]:
    out: dict[str, Any] = {"wire": thread.to_wire(), "incomplete": sorted(thread.incomplete_ids),
                           "pending": list(thread.pending_tool_call_ids), "interruptedRunId": thread.interrupted_run_id,
                           "inSync": thread.state_in_sync, "usage": _plain(thread.usage_by_run),
                           "subagents": _plain(dict(thread.subagents)), "warnings": _warnings(thread.warnings)}
    try:
        out["reloaded"] = ThreadState.load(thread.dump()).to_wire()
    except Exception as exc:  # noqa: BLE001 - recorded, compared like anything else
        out["reloaded"] = f"{type(exc).__name__}: {exc}"
    return out


def _result(result: Any) -> dict[str, Any]:
    if result is None:
        return {}
    return {"outcome": result.outcome, "runId": result.run_id, "runIds": list(result.run_ids),
            "interrupts": _plain(result.interrupts), "pending": list(result.pending_tool_call_ids),
            "result": _plain(result.result), "error": _plain(result.error), "lateError": _plain(result.late_error),
            "usage": _plain(result.usage), "new": list(result.new_message_ids), "events": result.events,
            "steps": _plain(result.steps), "warnings": _warnings(result.warnings)}


def _error(exc: BaseException) -> dict[str, Any]:
    return {"type": type(exc).__name__, "message": str(exc),
            **{name: _plain(getattr(exc, name, None)) for name in ("run_id", "index", "event_type", "pointer", "rule",
                                                                  "interrupts")},
            "result": _result(getattr(exc, "result", None))}


def _framed(case: dict[str, Any], run: list[str]) -> bytes:
    if case["framing"] == "jsonl":
        return "".join(line + "\n" for line in run).encode("utf-8", "surrogatepass")
    return "".join(f"data: {line}\n\n" for line in run).encode("utf-8", "surrogatepass")


def _fold(case: dict[str, Any], mode: str) -> list[Any]:
    thread = ThreadState()
    out: list[Any] = []
    for run in case["runs"]:
        record: dict[str, Any] = {}
        try:
            if mode == "replay":
                record["result"] = _result(replay(_framed(case, run), state=thread))
            else:
                session = RunSession(thread, collect_errors=mode == "collect")
                types = []
                for payload in run:
                    types += [getattr(e, "TYPE", None) or getattr(e, "type", None)
                              for e in session.feed_payload(payload.encode("utf-8", "surrogatepass"))]
                record["result"] = _result(session.end())
                record["types"] = types
                if mode == "collect":
                    record["errors"] = [_error(e) for e in session.errors]
        except AguiError as exc:
            record["error"] = _error(exc)
        except Exception as exc:  # noqa: BLE001 - a crash is a finding: recorded, never fatal here
            record["crash"] = f"{type(exc).__name__}: {exc}"
        try:
            record["thread"] = _thread(thread)
        except Exception as exc:  # noqa: BLE001
            record["thread"] = f"crash: {type(exc).__name__}: {exc}"
        out.append(record)
    return out


def main(source: str, target: str) -> None:
    with open(source, encoding="utf-8") as cases, open(target, "w", encoding="utf-8") as results:
        for line in cases:
            case = json.loads(line)
            folded = {mode: _fold(case, mode) for mode in ("replay", "stream", "collect")}
            text = json.dumps({"name": case["name"], "folded": folded}, sort_keys=True, default=repr,
                              ensure_ascii=True)
            results.write(_CUT_DIGEST.sub("...#<digest>", _UUID.sub("<uuid>", text)) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
