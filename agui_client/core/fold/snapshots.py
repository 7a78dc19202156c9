"""Whole restatements: a ``MESSAGES_SNAPSHOT`` merged into the log, activities replaced or patched.

A messages snapshot is the producer's complete list (MS-01..MS-06): the messages it names replace
the thread's, the ones it leaves out are dropped, except the client's own kinds it does not speak
for (reasoning when it holds none, activities it is not authoritative for). A snapshot's messages
may arrive as their plain JSON (``Roster.wire``): they are held as such, typed when first read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..._inert import quoted_name
from ...errors import StreamWarning
from ...wire import codec
from ...wire.sink import warn
from ...wire.types import messages as msg
from ...wire.types.base import Metadata
from ...wire.values import describe, frozen_json, thawed_json
from ..patch import PatchFailed, apply_patch
from ..roster import Roster
from .document import StateDocument, foreign_copy
from .entries import Call, Entry, Held, merge_metadata
from .log import MessageLog, hold, holder_of
from .records import RunRecord, note_removed

__all__ = ["Snapshots", "detached"]

_NO_WARNINGS: tuple[StreamWarning, ...] = ()
_UNDECLARED: Any = object()


def detached(messages: Sequence[msg.Message]) -> Sequence[msg.Message]:
    """``messages`` with the dicts inside each copied: its ``metadata``, an activity's ``content``, a
    content part's and a tool call's ``metadata``. A message without any is kept as it is.

    For a snapshot event handed out (or built elsewhere): whoever holds the event keeps its messages'
    dicts, and changing them changes nothing the thread holds, sends or saves, as a state or activity
    snapshot's document is copied. A message's strings and frozen parts need no copy, nor does a
    message, part or tool call without a dict: the copies share them.

    The dicts of all the messages are gathered in one flat list and copied together, in one pass at C
    speed (``marshal``'s bytes, made and read here: every container new, the values exactly as they
    were, a tuple a tuple), and each message holding one is built again with its copies through its
    slots. When ``marshal`` cannot write them all (a subclass, a ``datetime``, nesting past some 2,000
    levels), each is copied as any JSON an event brought (``foreign_copy``). A snapshot of 100,000
    messages with metadata: one copy instead of 100,000, and a message built at a quarter of
    ``attrs.evolve``'s cost. As ``copy.deepcopy`` of the messages would, the copies share among themselves
    what the messages shared (a dict two messages of a snapshot built in Python both hold is one dict in
    the thread too): nothing is shared between the caller's messages and the copies, which is what
    keeps each side's changes its own, and ``marshal`` without its references would write a value held
    through many paths out in full.
    """
    positions: list[int] = []  # the messages holding a dict
    shapes: list[int] = []  # which of them each holds (_CONTENT, _PARTS, _CALLS: the metadata always)
    gathered: list[Any] = []  # their dicts, in the order _rebuilt takes them back
    add = gathered.append
    for position, message in enumerate(messages):
        shape = 0
        content: Any = getattr(message, "content", None)
        kind = type(content)
        if kind is dict:  # (an activity's)
            shape = _CONTENT
        elif kind is tuple and any(part.metadata is not None for part in content):
            shape = _PARTS
        calls: tuple[msg.ToolCall, ...] | None = getattr(message, "tool_calls", None)
        if calls and any(call.metadata is not None for call in calls):
            shape |= _CALLS
        if shape or message.metadata is not None:
            positions.append(position)
            shapes.append(shape)
            add(message.metadata)
            if shape & _CONTENT:
                add(content)
            elif shape & _PARTS:
                gathered += [part.metadata for part in content]
            if shape & _CALLS:
                gathered += [call.metadata for call in calls]  # type: ignore[union-attr]
    if not positions:
        return messages
    frozen = frozen_json(gathered)
    copies = thawed_json(frozen) if frozen is not None else [foreign_copy(value) for value in gathered]
    take = iter(copies).__next__
    out = list(messages)
    for position, shape in zip(positions, shapes, strict=True):
        out[position] = _rebuilt(out[position], shape, take)
    return out


def _rebuilt(message: msg.Message, shape: int, take: Callable[[], Any]) -> msg.Message:
    # ``message`` again, its dicts replaced by their copies, taken in the order ``detached`` gathered
    # them (its metadata, then its content or each part's metadata, then each tool call's metadata);
    # its other fields, and any part or call without metadata, shared.
    names: tuple[str, ...] = _METADATA
    values = [take()]
    if shape & _CONTENT:
        names += ("content",)
        values.append(take())
    elif shape & _PARTS:
        parts: tuple[Any, ...] = message.content  # type: ignore[assignment]
        names += ("content",)
        values.append(tuple([part if copied is None else _replacer(type(part), _METADATA)(part, copied)
                             for part, copied in zip(parts, [take() for _ in parts], strict=True)]))
    if shape & _CALLS:
        calls: tuple[msg.ToolCall, ...] = message.tool_calls  # type: ignore[assignment,union-attr]
        names += ("tool_calls",)
        values.append(tuple([call if copied is None else _replacer(type(call), _METADATA)(call, copied)
                             for call, copied in zip(calls, [take() for _ in calls], strict=True)]))
    made: msg.Message = _replacer(type(message), names)(message, *values)
    return made


_CONTENT, _PARTS, _CALLS = 1, 2, 4
_METADATA: tuple[str, ...] = ("metadata",)
_replacer = codec.replacer


class Snapshots:
    """The messages-snapshot merge and the activity handlers.

    Args:
        log: the thread's messages.
        runs: the thread's runs (the ledger's list): the running one learns what a snapshot added.
        document: the state document, whose per-run copy allowance activity patches share.
    """

    def __init__(self, log: MessageLog, runs: list[RunRecord], document: StateDocument) -> None:
        self.log = log
        self._runs = runs
        self._document = document

    # -- activities ------------------------------------------------------------------------------

    def activity_snapshot(self, message_id: str, activity_type: str, content: Mapping[str, Any],
                          replace: bool | None, owner: str | None, metadata: Metadata | None
                          ) -> Sequence[StreamWarning]:
        """ACTIVITY_SNAPSHOT: an activity message minted, or replaced (or kept, ``replace: false``)."""
        log = self.log
        existing = log.entry(message_id)
        replacing = replace is not False
        target: Entry | None = None
        if existing is None or (replacing and existing.role != "activity"):
            entry = Entry(message_id, "activity")
            entry.attrs["activity_type"] = activity_type
            entry.value = foreign_copy(content)
            entry.owned = True
            if owner is not None:
                entry.attrs["subagent_run_id"] = owner
            if existing is None:
                log.insert(entry)
            else:
                log.replace(existing, entry)
            target = entry
        elif existing.role == "activity":
            target = existing
            if replacing:
                existing.attrs["activity_type"] = activity_type
                existing.value = foreign_copy(content)
                existing.owned = True
                if owner is not None:
                    existing.attrs["subagent_run_id"] = owner
                else:
                    existing.attrs.pop("subagent_run_id", None)
        if target is not None and metadata is not None:
            target.attrs["metadata"] = merge_metadata(target.attrs.get("metadata"), metadata)
        if target is not None:
            log.touch(target)
            log.changed()
        return _NO_WARNINGS

    def activity_delta(self, message_id: str, activity_type: str, patch: Sequence[Any],
                       metadata: Metadata | None) -> Sequence[StreamWarning]:
        """ACTIVITY_DELTA: the activity's content patched (atomically; its content stays an object, AC-01)."""
        log = self.log
        entry = log.entry(message_id)
        if entry is None:
            return (StreamWarning(code="AC-04", message=f"no activity {quoted_name(message_id)} to "
                                                        "patch; delta dropped",
                                  pointer="/messageId"),)
        if entry.role != "activity":
            return (StreamWarning(code="AC-07", message=f"message {quoted_name(message_id)} is not "
                                                        "an activity; delta dropped",
                                  pointer="/messageId"),)
        if metadata is not None:
            entry.attrs["metadata"] = merge_metadata(entry.attrs.get("metadata"), metadata)
        content = entry.value if entry.value is not None else {}
        whole = [i for i, op in enumerate(patch) if type(op) is dict and op.get("path") == ""]
        if not entry.owned or whole:
            # A message handed out (or the snapshot event it came with) may hold this dict: patch a copy,
            # so that nothing handed out ever changes. So does a patch that replaces the whole content,
            # which may leave something not an object.
            content = foreign_copy(content)  # (an activity an event built elsewhere brought may not be plain)
        try:
            patched = apply_patch(content, patch, copy_allowance=self._document.allowance,
                                  max_ops=self._document.max_ops)
            if type(patched) is not dict:
                # AC-01: an activity's content is an object; anything else could not even be loaded again.
                raise PatchFailed(f"the content would become {describe(patched)}, not an object", whole[-1])
        except PatchFailed as exc:
            log.touch(entry)
            log.changed()
            return (StreamWarning(code="AC-05" if exc.rule == "SP-06" else f"{exc.rule}/AGUI303",
                                  message=f"activity patch did not apply: {exc}", pointer=f"/patch/{exc.op_index}"),)
        entry.value = patched
        entry.owned = True
        entry.attrs["activity_type"] = activity_type
        log.touch(entry)
        log.changed()
        return _NO_WARNINGS

    # -- messages snapshots ------------------------------------------------------------------------

    def hold(self, messages: Sequence[msg.Message]) -> bool:
        """The messages a thread starts with (a constructor's, a stored record's), one per id.

        A thread holds one message per id. A list repeating one (another writer's record, a damaged one,
        or a caller's) is read by the snapshot's rule (MS-01: the last copy wins, at the first's place)
        and says so, as a ``MESSAGES_SNAPSHOT`` repeating one would: one rule for every way messages
        come in whole. Returns whether the ids were distinct (every message held as given).
        """
        if len({message.id for message in messages}) == len(messages):
            for message in messages:
                self.log.insert(Entry.of(message))
            return True
        for warning in self.messages_snapshot(Roster.of(messages), None):
            warn(warning.code, warning.message, pointer=warning.pointer)
        return False

    def messages_snapshot(self, roster: Roster, metadata: Metadata | None) -> Sequence[StreamWarning]:
        """MESSAGES_SNAPSHOT: the producer's complete list, merged (the last of a repeated id wins, at the
        place of the first, as a dict keeps it)."""
        warnings = [StreamWarning(code="MS-01", message=f"snapshot repeats message id {quoted_name(key)}; "
                                                        "the last wins",
                                  pointer=f"/messages/{position}/id") for position, key in roster.repeats]
        self._merge(roster.by_id, roster.roles, _authoritative_activity_types(metadata))
        return warnings

    def _merge(self, incoming: Mapping[str, Any], roles: set[str], authority: Any) -> None:
        # MS-01..MS-06: ``incoming`` (id -> message, typed or plain JSON, in snapshot order) is the
        # producer's complete list.
        log = self.log
        has_activity = "activity" in roles
        has_reasoning = "reasoning" in roles

        def keep_local(entry: Entry) -> bool:
            if entry.role == "activity":
                if authority is _UNDECLARED:
                    return not has_activity
                if authority is None:
                    return False
                return entry.attrs.get("activity_type") not in authority
            return entry.role == "reasoning" and not has_reasoning

        kept: list[Held] = []
        by_id: dict[str, Held] = {}
        calls: dict[str, tuple[Entry, Call] | Held] = {}
        shared = log.shared  # (call ids held twice: see MessageLog.replace)
        lazy = False
        for held in log.entries:
            if type(held) is dict:
                # A message held as JSON (never an activity; no calls if a reasoning message).
                replacement = incoming.get(held["id"])
                if replacement is not None:
                    lazy = hold((replacement,), kept, by_id, calls, shared) or lazy
                elif held["role"] == "reasoning" and not has_reasoning:
                    kept.append(held)
                    by_id[held["id"]] = held
                    lazy = True
                continue
            entry: Entry = held  # type: ignore[assignment]
            replacement = incoming.get(entry.id)
            if replacement is not None:
                lazy = hold((replacement,), kept, by_id, calls, shared) or lazy
            elif keep_local(entry):
                kept.append(entry)
                by_id[entry.id] = entry
                if entry.calls:
                    for call in entry.calls:
                        pair = (entry, call)
                        found = calls.setdefault(call.id, pair)  # (the first holder)
                        if found is not pair and holder_of(found) is not entry:
                            shared.add(call.id)
        held_ids = by_id.keys()  # (read below before ``hold`` grows it with the fresh messages)
        runs = self._runs
        run = runs[-1] if runs else None
        restated = _restated_streamed(run, incoming)
        fresh = [message for key, message in incoming.items() if key not in held_ids] if held_ids \
            else incoming.values()
        if run is not None and not run.terminated:
            # Read from the keys (the ids): a snapshot into a thread that held nothing adds them all.
            # What the snapshot dropped is found by a set difference (the usual answer: nothing).
            if len(by_id) < len(log.by_id):  # (what is kept is the old ids less what was dropped)
                for key in log.by_id.keys() - by_id.keys():
                    note_removed(run, key)
            fresh_ids = [key for key in incoming if key not in held_ids] if held_ids else list(incoming)
            removed = run.removed_before
            if removed:
                added = [key for key in fresh_ids if key not in removed]
                removed.difference_update(fresh_ids)  # (there at the start, gone, and back)
            else:
                added = fresh_ids
            run.born.update(added)
            run.added_message_ids.extend(added)
        lazy = hold(fresh, kept, by_id, calls, shared) or lazy
        if restated and run is not None:
            self._note_snapshot_calls(run, restated, by_id, calls)
        log.take(kept, by_id, calls, lazy)

    def _note_snapshot_calls(self, run: RunRecord, restated: list[str], by_id: dict[str, Held],
                             calls: Mapping[str, Any]) -> None:
        # TC-17 with MS-01: a snapshot that restates a message this run streamed into may hold calls
        # the stream never started (ag-ui-langgraph streams the first of several parallel calls and
        # names the rest only in its closing snapshot). They were made in this run, so they count as
        # started. Calls on a message only snapshots built never do, however many snapshots built it
        # (one final message, one answer: the reference's), nor do calls of restated history. A call
        # the stream started stays one, answered by result events only, even when the thread lost it
        # before the snapshot (an activity took its message's id).
        known = self.log.calls
        started = run.started_tool_calls
        for message_id in restated:
            held = by_id.get(message_id)
            if held is None:
                continue
            if type(held) is dict:
                ids = [call["id"] for call in held.get("toolCalls", ())]
            else:
                ids = [call.id for call in held.calls or ()]  # type: ignore[union-attr]
            for call_id in ids:
                if call_id not in known and call_id not in started and call_id in calls:
                    run.started_tool_calls[call_id] = None
                    run.snapshot_tool_calls.add(call_id)


def _restated_streamed(run: RunRecord | None, incoming: Mapping[str, Any]) -> list[str]:
    """The messages this run streamed into before a snapshot that the snapshot restates (none after its end)."""
    if run is None or run.terminated or not run.streamed:
        return []
    return list(dict.fromkeys(entry.id for entry in run.streamed if entry.id in incoming))


def _authoritative_activity_types(metadata: Mapping[str, Any] | None) -> Any:
    # The reference's convention (its README, "Activity snapshots"): metadata["@ag-ui/client"]
    # .authoritativeActivityTypes: a list owns those types, null owns all, absent = legacy rule,
    # anything malformed owns none.
    if metadata is None or "@ag-ui/client" not in metadata:
        return _UNDECLARED
    namespace = metadata["@ag-ui/client"]
    if not isinstance(namespace, dict):
        return ()
    if "authoritativeActivityTypes" not in namespace:
        return _UNDECLARED
    declared = namespace["authoritativeActivityTypes"]
    if declared is None:
        return None
    if isinstance(declared, list) and all(isinstance(item, str) for item in declared):
        return tuple(declared)
    return ()
