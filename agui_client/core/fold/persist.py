"""A thread in its stored form and back: what a store keeps, what ``to_wire()`` shows.

The stored form (``dump``) is versioned (``STATE_FORMAT_VERSION``) so later releases can read it.
Messages go out in their wire form, built directly from the entries (a message still being streamed
need not be typed first) or taken as the JSON a snapshot or a store gave; a save that writes the
record at once gets the thread's own dicts, marked as already checked to be plain JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, get_args

import attrs

from ..._inert import QUOTED_CHARS, named, quoted_name
from ...errors import DecodeError
from ...wire import codec
from ...wire.jsonio import escape
from ...wire.types import messages as msg
from ...wire.types import run as rn
from ...wire.values import PlainDict, PlainList, copy_json
from ..legacy import LEGACY_BRIDGES
from ..roster import Roster
from .log import MessageLog
from .records import Outcome, RunErrorInfo, RunRecord, SubagentRecord

if TYPE_CHECKING:
    from . import ThreadState

__all__ = ["STATE_FORMAT_VERSION", "dump", "changes", "load", "to_wire", "wire_messages", "Mark"]

#: Version of the ``dump()`` / ``load()`` layout (stores keep it so later releases can read them).
STATE_FORMAT_VERSION = 1


def to_wire(thread: ThreadState) -> dict[str, Any]:
    """The thread in wire form: ``{"messages": [...], "state": ..., "openInterrupts": [...]}``."""
    return {
        "messages": codec.encode(thread.messages),
        "state": thread.document.copy(),  # (its own: the copy reads share is not handed out twice)
        "openInterrupts": codec.encode(thread.open_interrupts),
    }


def dump(thread: ThreadState, *, share_state: bool = False) -> dict[str, Any]:
    """Everything a store needs to bring the thread back (see ``ThreadState.dump``)."""
    ledger = thread.ledger
    last = ledger.last_run
    data = {
        "format": STATE_FORMAT_VERSION,
        "threadId": thread.thread_id,
        # Built directly, and marked as checked plain JSON for a save that serialises at once.
        "messages": wire_messages(thread.log, share_state),
        "state": thread.document.shared() if share_state else thread.document.copy(),
        "stateInSync": thread.document.in_sync,
        "openInterrupts": codec.encode(ledger.open_interrupts),
        "interruptedRunId": ledger.interrupted_run_id,
        "pendingToolCallIds": list(ledger.pending_tool_call_ids()),
        "usageByRun": {run_id: codec.encode(entries) for run_id, entries in ledger.usage.items()},
        "lastOutcome": last.outcome if last else None,
        "lastRunId": last.run_id if last else None,
        "subagents": {k: _dump_subagent(v) for k, v in ledger.subagents.items()},
    }
    if ledger.open_via is not None:
        # (only then: a record without it reads as before, and an older release reading this one sends
        # the answers as a resume list, which ag-ui-langgraph reads too)
        data["openInterruptsVia"] = ledger.open_via
    if thread.log.incomplete:
        # A cut run is not saved, but the next run's save holds what it streamed: the flags go with it,
        # or the thread loaded again would take a half message for a whole one (LC-04). Only then, as above.
        data["incompleteIds"] = sorted(thread.log.incomplete)
    return data


def changes(thread: ThreadState, mark: Mark) -> dict[str, Any]:
    """What changed since the thread's ``mark``, as one change of ``apply_changes`` (see ``ThreadState.changes``).

    Built from what the parts noted since the mark, never from a walk of the thread: the messages from
    the log's ``low`` on, the small fields, the state only if the document changed, the usage and
    subagents written. A thread never marked is new: its change rebuilds it from an empty record.
    """
    ledger = thread.ledger
    log = thread.log
    last = ledger.last_run
    out: dict[str, Any] = {}
    low = log.low
    if low < len(log.entries) or low != log.marked_len:
        out["messagesFrom"] = low
        out["messages"] = wire_messages(log, True, low)
    replaced: dict[str, Any] = {
        "format": STATE_FORMAT_VERSION,
        "threadId": thread.thread_id,
        "stateInSync": thread.document.in_sync,
        "openInterrupts": codec.encode(ledger.open_interrupts),
        "interruptedRunId": ledger.interrupted_run_id,
        "pendingToolCallIds": list(ledger.pending_tool_call_ids()),
        "lastOutcome": last.outcome if last else None,
        "lastRunId": last.run_id if last else None,
    }
    if thread.document.changes != mark.document:
        replaced["state"] = thread.document.shared()
    unset = []
    if ledger.open_via is not None:
        replaced["openInterruptsVia"] = ledger.open_via
    elif mark.via:
        unset.append("openInterruptsVia")
    if log.incomplete:
        replaced["incompleteIds"] = sorted(log.incomplete)
    elif mark.incomplete:
        unset.append("incompleteIds")
    if unset:
        out["unset"] = unset
    out["set"] = replaced
    merged: dict[str, Any] = {}
    if ledger.usage_touched or mark.maps:
        usage = ledger.usage
        merged["usageByRun"] = {run_id: codec.encode(usage[run_id]) for run_id in ledger.usage_touched}
    if ledger.subagents_touched or mark.maps:
        subagents = ledger.subagents
        merged["subagents"] = {k: _dump_subagent(subagents[k]) for k in ledger.subagents_touched}
    if merged:
        out["merge"] = merged
    return out


def wire_messages(log: MessageLog, checked: bool, start: int = 0) -> list[Any]:
    """The log's messages in wire form (a :class:`PlainList` of the log's own dicts when ``checked``), from
    position ``start`` on."""
    # A message held as plain JSON (a snapshot's) goes out as it is for a save that writes it at
    # once, else as a copy; a message still being streamed into an entry is encoded from the
    # entry; the others (frozen already: messages read before) go through the wire encoders.
    warn = log.warnings
    out: list[Any] = []
    append = out.append
    frozen: list[int] = []  # where typed messages wait for the wire encoders
    for entry in (log.entries[start:] if start else log.entries):
        if type(entry) is dict:
            append(entry if checked else copy_json(entry))
            continue
        held = entry.frozen  # type: ignore[union-attr]
        if held is None:
            encoded = entry.wire(warn)  # type: ignore[union-attr]
            if encoded is not None:
                if checked and entry.complete:  # type: ignore[union-attr]
                    # Kept as the message as it stands (anything that changes the entry clears
                    # it), so the next save does not build it again: a long conversation's saves
                    # would otherwise rebuild every earlier message each time.
                    entry.frozen = encoded  # type: ignore[union-attr]
                append(encoded)
                continue
            held = entry.freeze(warn)  # type: ignore[union-attr]
        elif type(held) is dict:
            append(held if checked else copy_json(held))
            continue
        else:
            cached = entry.wire_of  # type: ignore[union-attr]
            if cached is not None and cached[0] is held:  # typed from this JSON, unchanged since
                append(cached[1] if checked else copy_json(cached[1]))
                continue
        frozen.append(len(out))
        append(held)
    if not frozen:
        return PlainList(out) if checked else out
    rest = codec.encode_messages([out[i] for i in frozen], checked=checked)
    for i, encoded in zip(frozen, rest, strict=True):
        out[i] = encoded
    return PlainList(out) if checked and type(rest) is PlainList else out


def load(cls: type[ThreadState], data: Mapping[str, Any], *, adopt: bool) -> tuple[ThreadState, Mark]:
    """Rebuild a thread from :func:`dump` output (see ``ThreadState.load``), with the mark of the record
    it came from (which the thread keeps: its first change writes what ``data`` lacks)."""
    version = data.get("format", 1)
    if type(version) is not int or version < 1:
        raise ValueError(f"format must be a positive integer, not {_shown(version)}")
    if version > STATE_FORMAT_VERSION:
        raise ValueError(f"thread state format {quoted_name(version)} is newer than this release reads")
    for key in ("threadId", "interruptedRunId", "lastRunId", "lastOutcome"):
        # (a record edited by hand or by another tool: an id of another JSON type would pass for one,
        # and fail later, untyped, where the thread compares or sends it)
        if not isinstance(data.get(key), str | None):
            raise ValueError(f"{key} must be a string or null, not {type(data.get(key)).__name__}")
    state: Any = data.get("state")
    marked = type(state) is PlainDict or type(state) is PlainList
    adopt_state = adopt and not marked
    if marked:
        # dump(share_state=True)'s state: the dumping thread's own, marked as checked for a save that
        # writes it at once. Handed back here it may have changed since (a key set beside the thread's,
        # a list doubled forty times over inside them, a trillion members to write: trusted, the copy
        # wrote until memory ran out), so it is walked as any caller's state is, then copied.
        state = dict(state) if type(state) is PlainDict else list(state)
    thread = cls(state=None if adopt_state else state, thread_id=data.get("threadId"))
    if adopt_state:
        thread.document.adopt(state)
    wire = data.get("messages", [])
    if type(wire) is PlainList:
        # dump(share_state=True)'s list holds the dicts its thread holds; those are never changed
        # in place, so sharing them is safe, but the list itself is the codec's exact type.
        wire = list(wire)
    # A store's record of plain messages is held as its JSON, typed when read, as a snapshot is:
    # loading a long thread then costs a check per message instead of building each. (Data of
    # the caller's is decoded: typed messages share its strings, where a copy would copy them.)
    roster = Roster.of_wire(wire) if adopt and codec.held_messages(wire) else None
    distinct = True  # (one message per id in the record, as the thread holds them)
    if roster is not None and roster.unique:
        thread.snapshots.messages_snapshot(roster, None)
    else:
        # (a record repeating an id, another writer's or a damaged one, is read by the snapshot's rule)
        distinct = thread.snapshots.hold(_decoded(wire, tuple[msg.Message, ...], "/messages"))
    ledger = thread.ledger
    in_sync = data.get("stateInSync", True)
    if type(in_sync) is not bool:
        # (bool() would read "no" as true: the state would be sent as in step when it is not)
        raise ValueError(f"stateInSync must be true or false, not {_shown(in_sync)}")
    thread.document.in_sync = in_sync
    # (held by the ledger's rule, one per id, as a stream's are: a record may come from another writer)
    # (a store's record, adopted, is as its parser made it: copied without a walk)
    ledger.hold_interrupts(_decoded(data.get("openInterrupts", []), tuple[rn.Interrupt, ...], "/openInterrupts"),
                           data.get("interruptedRunId"), plain=adopt)
    via = data.get("openInterruptsVia")
    if via is not None and (via not in LEGACY_BRIDGES or not ledger.open_interrupts):
        raise ValueError(f"openInterruptsVia {quoted_name(via)} names no legacy bridge of this release, or no "
                         "interrupt is open")
    ledger.open_via = via
    incomplete = data.get("incompleteIds", [])
    if not isinstance(incomplete, list) or not all(isinstance(i, str) for i in incomplete):
        raise ValueError("incompleteIds must be a list of strings")
    thread.log.incomplete.update(incomplete)
    pending = data.get("pendingToolCallIds", [])
    # (a list, not any iterable: tuple() would read "ab" as the calls "a" and "b", an object as its keys)
    if not isinstance(pending, list) or not all(isinstance(call_id, str) for call_id in pending):
        raise ValueError(f"pendingToolCallIds must be a list of strings, not {_shown(pending)}")
    ledger.pending = tuple(pending)
    ledger.usage = {k: _decoded(v, tuple[rn.TokenUsage, ...], f"/usageByRun/{escape(k)}")
                    for k, v in _object(data, "usageByRun").items()}
    for key, value in _object(data, "subagents").items():
        ledger.subagents[key] = _load_subagent(value, f"/subagents/{escape(key)}")
    last_outcome = data.get("lastOutcome")
    if last_outcome is not None and last_outcome not in _OUTCOMES:
        raise ValueError(f"lastOutcome must be one of {', '.join(_OUTCOMES)} or null, not {_shown(last_outcome)}")
    last_run = data.get("lastRunId")
    if last_run is not None:
        run = RunRecord(run_id=last_run, thread_id=thread.thread_id or "", outcome=last_outcome, terminated=True)
        # (copies: the record hands them out, and the ledger's are the schemas a resume is checked against)
        run.interrupts = ledger.kept.handed_out() if last_outcome == "interrupt" else ()
        run.bridged = via if last_outcome == "interrupt" else None
        ledger.runs.append(run)
    thread.settled()  # (however the messages went in: a loaded thread has not changed yet)
    # What the store holds is ``data``: the thread's changes are counted from it. What ``dump()`` writes
    # and ``data`` lacks (an older or a foreign record) is written by the first change.
    thread.mark()
    if "messages" not in data or not distinct:
        # (a record repeating an id holds more messages than the thread: a change counted from its
        # list would keep the record's first copy and drop the one the thread holds, so it is written whole)
        thread.log.low, thread.log.marked_len = 0, -1
    return thread, Mark(document=-1 if "state" not in data else thread.document.changes,
                        via=via is not None, maps="usageByRun" not in data or "subagents" not in data,
                        incomplete=bool(incomplete))


@attrs.frozen
class Mark:
    """What a thread's changes are counted from (besides what the log and the ledger note).

    Attributes:
        document: the state document's change count at the mark (-1: the state is written).
        via: whether the marked record holds ``openInterruptsVia`` (a change then unsets it, if cleared).
        maps: whether a change writes ``usageByRun`` and ``subagents`` even when nothing was added (the
            record has none: a thread never marked).
        incomplete: whether the marked record holds ``incompleteIds`` (a change then unsets it, if none is left).
    """

    document: int = -1
    via: bool = False
    maps: bool = True
    incomplete: bool = False


def _dump_subagent(record: SubagentRecord) -> dict[str, Any]:
    data = attrs.asdict(record, recurse=True)
    if data.get("error") is not None:
        # SUBAGENT_ERROR reports no usage: the stored form stays what it was before errors carried any.
        del data["error"]["usage"]
    return data


def _decoded(value: Any, kind: Any, at: str) -> Any:
    """``codec.decode`` of one part of a record, its error located in the record (``at``: the part's pointer)."""
    try:
        return codec.decode(value, kind)
    except DecodeError as exc:
        exc.pointer = at + (exc.pointer or "")
        raise


def _at(pointer: str, key: str | None = None) -> str:
    """A pointer into the record, as a message shows it: a subagent's id and a field's name are keys of
    a record another writer may have made, so they are escaped and cut as an id is (never raw on a
    terminal, never a megabyte of message)."""
    return named(pointer if key is None else f"{pointer}/{escape(key)}", QUOTED_CHARS)


def _shown(value: Any) -> str:
    # A damaged field is quoted in the error, cut short: it may be of any size.
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:50] + "..."


def _object(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ValueError(f"{key} must be an object, not {_shown(value)}")
    return value


#: A stored subagent's fields (``_dump_subagent``) and the JSON types each may hold; every one is written.
_SUBAGENT_FIELDS: dict[str, tuple[type, ...]] = {
    "subagent_run_id": (str,), "name": (str,), "run_id": (str, type(None)), "status": (str,),
    "description": (str, type(None)), "parent_subagent_run_id": (str, type(None)),
    "parent_tool_call_id": (str, type(None)), "parent_message_id": (str, type(None)),
    "interrupt_ids": (list, tuple), "error": (dict, type(None)),  # (a tuple: dump() output not yet JSON)
}
_SUBAGENT_STATUSES = ("running", "success", "suspended", "error")
_OUTCOMES: tuple[str, ...] = get_args(Outcome)


def _load_subagent(data: Any, at: str) -> SubagentRecord:
    """A stored subagent, each field checked against what ``_dump_subagent`` writes (``at``: its pointer)."""
    if not isinstance(data, dict):
        raise ValueError(f"at {_at(at)}: a subagent must be an object, not {_shown(data)}")
    for key, value in data.items():
        kinds = _SUBAGENT_FIELDS.get(key)
        if kinds is None and key != "result":  # (a result is any JSON)
            raise ValueError(f"at {_at(at, key)}: a subagent has no field {quoted_name(key)}")
        if kinds is not None and not isinstance(value, kinds):
            raise ValueError(f"at {_at(at, key)}: {_shown(value)} is of the wrong type")
    for key in ("subagent_run_id", "name"):
        if key not in data:
            raise ValueError(f"at {_at(at, key)}: a subagent needs its {key}")
    values = dict(data)
    if values.get("status", "running") not in _SUBAGENT_STATUSES:
        raise ValueError(f"at {_at(at, 'status')}: {_shown(values['status'])} is not one of "
                         f"{', '.join(_SUBAGENT_STATUSES)}")
    ids = values.get("interrupt_ids", [])
    if not all(isinstance(i, str) for i in ids):
        raise ValueError(f"at {_at(at, 'interrupt_ids')}: interrupt ids must be strings")
    values["interrupt_ids"] = tuple(ids)
    error = values.get("error")
    if error is not None:
        message, code, late = error.get("message"), error.get("code"), error.get("late", False)
        if (set(error) - {"message", "code", "late"} or type(message) is not str
                or not (code is None or type(code) is str) or type(late) is not bool):
            raise ValueError(f"at {_at(at, 'error')}: {_shown(error)} is not a stored subagent error")
        values["error"] = RunErrorInfo(message=message, code=code, late=late)
    return SubagentRecord(**values)
