"""The message log: a thread's messages in order, their ids and tool calls indexed.

Each message is held as an :class:`~.entries.Entry`, or, for a snapshot's or a store's message in the
plain shape, as its JSON (a dict) until something needs its entry; then every such message gets one at
once (:meth:`MessageLog.materialize`), so a thread that only holds and saves them never makes an object
per message. Every change costs time independent of the thread's length: lookups go through the id and
tool-call indexes, and the messages handed out are a tuple rebuilt only after a change.

The log also keeps, for the run being folded, which ids it added (``RunRecord.born``,
``added_message_ids``) and which of those it found in the thread and removed: the run ledger's records
share the log's list of runs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

from ...errors import StreamWarning
from ...wire.types import messages as msg
from .entries import Call, Entry, Held, LazyEntry, new_entry, role_of, type_held, wire_entry
from .records import RunRecord, note_added, note_removed

__all__ = ["MessageLog", "hold", "holder_of"]

#: How many entries from the end a search reads before it asks the map of places (``MessageLog.find``).
_NEAR = 32


class MessageLog:
    """A thread's messages, their indexes, and what is cut or being placed.

    Args:
        runs: the thread's runs (the ledger's list): the running one is told which ids come and go.
        warnings: the thread's warnings, where repairs found while joining streamed text go.
    """

    def __init__(self, runs: list[RunRecord], warnings: list[StreamWarning]) -> None:
        self.entries: list[Held] = []
        self.by_id: dict[str, Held] = {}
        self.lazy = False  # (whether the list may hold a dict)
        # call id -> (the message holding it, the call); or just the message (its entry or its JSON),
        # for a snapshot's message whose calls are made when first looked up (``call``).
        self.calls: dict[str, tuple[Entry, Call] | Held] = {}
        #: Call ids two messages have held at once (a producer's fault, UK-16): only these are looked up
        #: again when the message the index names is replaced (``replace``). Never pruned: an id in it
        #: costs that look-up, nothing else.
        self.shared: set[str] = set()
        self.incomplete: set[str] = set()  # messages and tool calls whose stream was cut
        self.changes = 0
        self.warnings = warnings
        self._runs = runs
        self._view: tuple[msg.Message, ...] = ()
        self._view_at = -1  # the change count ``_view`` was built at
        # Where the last tool result went (the assistant message holding its call, its index, itself):
        # the next result for that message goes after it without walking the results before it.
        # Cleared by anything but an append that moves entries.
        self._tool_hint: tuple[Held, int, Entry] | None = None
        # What a save of the changes since the mark (``ThreadState.changes``) rewrites: the list keeps its
        # first ``low`` messages as they were at the mark (the same objects, unchanged), and held
        # ``marked_len`` then (-1: nothing marked, the whole list is new). An append leaves ``low`` as it
        # is; whatever inserts, replaces or removes lowers it to its position, and an entry changed in
        # place lowers it to the entry's (``touch``). A change needs no walk of the list: the entries
        # ``touch`` found at or after ``low`` since the mark are ``_covered`` (they stay there, whatever
        # moves), and ``hot``, the last one touched, costs a streamed delta one identity check.
        self.low = 0
        self.marked_len = -1
        self.hot: Entry | None = None
        self._covered: set[Entry] = set()
        # Where entries stood (``_place``), made only when a search from the end would go far: an agent
        # replacing, answering or touching message after message of a long thread must not make each
        # event walk it. Each entry is where it was put or later (a tool message put in the middle
        # moves those after it: ``_shifted`` counts such puts since the map was made, and the map is
        # made again past a bound); appended entries are added from ``_known`` on when first looked for.
        self._where: dict[Entry, int] | None = None
        self._known = 0
        self._shifted = 0
        self._last = 0
        # ``free_id``: for an id asked for, the number to try first (those before it were taken).
        self._suffixes: dict[str, int] = {}
        # ``rename``: the run whose ``added_message_ids`` are indexed, where each id stands in it, and
        # how much of the list the index has read.
        self._places: tuple[RunRecord, dict[str, list[int]], int] | None = None

    # -- reading -------------------------------------------------------------------------------

    @property
    def messages(self) -> tuple[msg.Message, ...]:
        """Every message, in order, frozen (the same tuple until something changes)."""
        if self._view_at != self.changes:
            self.materialize()
            made = self.made()
            type_held(made)
            warn = self.warnings
            self._view = tuple(entry.freeze(warn) for entry in made)
            self._view_at = self.changes
        return self._view

    def input_message_ids(self) -> list[str]:
        """The ids of the messages a next run's input carries (activity messages excluded), in order.

        Read from what the log holds, JSON or entry: nothing is made.
        """
        return [held["id"] if type(held) is dict else held.id  # type: ignore[union-attr]
                for held in self.entries if role_of(held) != "activity"]

    def messages_for(self, message_ids: Iterable[str]) -> tuple[msg.Message, ...]:
        """The messages with these ids (a run's new messages: all of a large snapshot's), frozen.

        Entries are made only if one of these messages is held as JSON: a run's few streamed messages
        in a long stored thread leave the rest as they are.
        """
        get = self.by_id.get
        held = [entry for entry in map(get, message_ids) if entry is not None]
        if any(type(entry) is dict for entry in held):
            self.materialize()
            held = [self.by_id[entry["id"]] if type(entry) is dict else entry for entry in held]
        made: list[Entry] = held  # type: ignore[assignment]  # (no JSON among them now)
        type_held(made)
        warn = self.warnings
        return tuple(entry.freeze(warn) for entry in made)

    def message(self, message_id: str) -> msg.Message | None:
        """The message with this id, if the log holds one."""
        entry = self.entry(message_id)
        return None if entry is None else entry.freeze(self.warnings)

    def tool_call(self, tool_call_id: str) -> msg.ToolCall | None:
        """The tool call with this id, if any message holds it."""
        found = self.call(tool_call_id)
        return None if found is None else found[1].freeze(self.warnings)

    def entry(self, message_id: str) -> Entry | None:
        """The entry of the message with this id, if any (made first, with all others held as JSON)."""
        found = self.by_id.get(message_id)
        if type(found) is dict:
            self.materialize()
            found = self.by_id[message_id]
        assert not isinstance(found, dict)
        return found

    def materialize(self) -> None:
        """Give every message held as JSON its entry, in one pass (one at a time would cost a search of
        the list per message)."""
        if not self.lazy:
            return
        self.lazy = False
        self._where = None  # (the JSON it held becomes entries the map does not know)
        entries = self.entries
        by_id = self.by_id
        made: dict[int, Entry] = {}
        for i, held in enumerate(entries):
            if type(held) is dict:
                entries[i] = entry = made[id(held)] = wire_entry(held)
                if by_id.get(entry.id) is held:
                    by_id[entry.id] = entry
        calls = self.calls
        for call_id, holder in calls.items():
            if type(holder) is dict:
                # (each such message is in the list, so it has its entry: the entry holds the JSON,
                # which keeps its id from being reused while this runs)
                calls[call_id] = made[id(holder)]

    def made(self) -> list[Entry]:
        """The list of entries, once :meth:`materialize` has run."""
        return self.entries  # type: ignore[return-value]

    def call(self, call_id: str) -> tuple[Entry, Call] | None:
        """The message holding a tool call and the call, if any."""
        found = self.calls.get(call_id)
        if type(found) is tuple or found is None:
            return found
        if type(found) is dict:
            self.materialize()
            found = self.calls.get(call_id)
            if type(found) is tuple or found is None:
                return found
        # A snapshot message held whole: its calls are made now, and indexed where it holds them.
        assert isinstance(found, Entry)
        calls = found.calls or ()
        owned = {call.id for call in calls if self.calls.get(call.id) is found}
        for call in calls:  # (a repeated id: the first call holding it, as an eager index has it)
            if call.id in owned:
                owned.discard(call.id)
                self.calls[call.id] = (found, call)
        made = self.calls.get(call_id)
        return made if type(made) is tuple else None

    def input_messages(self) -> tuple[msg.Message, ...]:
        """The messages a next run's input carries: activity messages excluded (AC-06)."""
        return tuple(m for m in self.messages if not isinstance(m, msg.ActivityMessage))

    def __iter__(self) -> Iterator[Held]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def answered(self, tool_call_ids: Iterable[str]) -> set[str]:
        """Which of ``tool_call_ids`` a tool message in the log answers (one pass over the log)."""
        wanted = set(tool_call_ids)
        found: set[str] = set()
        for held in self.entries:
            if type(held) is dict:
                if held["role"] == "tool" and held["toolCallId"] in wanted:
                    found.add(held["toolCallId"])
            elif held.role == "tool" and held.attrs.get("tool_call_id") in wanted:  # type: ignore[union-attr, operator]
                found.add(held.attrs["tool_call_id"])  # type: ignore[union-attr]
        return found

    # -- writing -------------------------------------------------------------------------------

    def mark(self) -> None:
        """The list as it stands is what the store holds: changes are counted from here."""
        self.low = self.marked_len = len(self.entries)
        self.hot = None
        self._covered.clear()

    def touch(self, entry: Entry) -> None:
        """``entry`` changes in place: the message handed out is built again, and the next save of the
        changes rewrites it (see :meth:`dirty`)."""
        entry.frozen = None
        self.dirty(entry)

    def dirty(self, entry: Entry) -> None:
        """The next save of the changes rewrites ``entry`` (and what follows it): something of it changed
        in place, or may have.

        Searched from the end (a run changes the messages near it) and only as far as ``low``: an
        entry found there is rewritten anyway; one older than every change since the mark lowers it.
        """
        if entry is self.hot:
            return
        self.hot = entry
        if not self.low:
            return  # (everything is rewritten: a thread never marked, say)
        covered = self._covered
        if entry in covered:
            return
        covered.add(entry)
        position = self.find(entry)
        if 0 <= position < self.low:
            self.low = position

    def moved(self, position: int) -> None:
        """The list changed at ``position`` (an entry put in or taken out there, not appended)."""
        if position < self.low:
            self.low = position

    def changed(self) -> None:
        """Something changed: the messages handed out are built again when next asked for (the view is
        kept with the count of changes it was built at; a handler may move ``changes`` itself)."""
        self.changes += 1

    def insert(self, entry: Entry) -> None:
        """Append a message."""
        self.entries.append(entry)
        if self.index(entry):
            self._runs[-1].added_message_ids.append(entry.id)

    def index(self, entry: Entry) -> bool:
        """Index ``entry``; ``True`` when the running run did not find its id in the thread."""
        by_id = self.by_id
        fresh = entry.id not in by_id
        by_id[entry.id] = entry
        if entry.calls:
            calls = self.calls
            for call in entry.calls:
                pair = (entry, call)
                found = calls.setdefault(call.id, pair)  # (the first holder)
                if found is not pair and holder_of(found) is not entry:
                    self.shared.add(call.id)
        runs = self._runs
        run = runs[-1] if runs else None
        if run is None or run.terminated:
            return False
        if not fresh:
            return entry.id in run.born
        return note_added(run, entry.id)

    def unindex(self, entry: Entry) -> None:
        """Take ``entry`` out of the indexes (it is leaving the log, or being replaced)."""
        self._tool_hint = None
        if self.by_id.get(entry.id) is entry:
            del self.by_id[entry.id]
            self._freed(entry.id)
            run = self._runs[-1] if self._runs else None
            if run is not None and not run.terminated:
                note_removed(run, entry.id)
        if entry.calls:
            for call in entry.calls:
                held = self.calls.get(call.id)
                if held is entry or (type(held) is tuple and held[0] is entry):
                    del self.calls[call.id]

    def replace(self, old: Entry, new: Entry) -> None:
        """Put ``new`` where ``old`` stands."""
        position = self.position(old)
        calls = self.calls
        # The call ids ``old`` was the first holder of: another message may hold one too (UK-16).
        lost = [call.id for call in old.calls if holder_of(calls.get(call.id)) is old] if old.calls else ()
        self.unindex(old)  # (which forgets the tool hint: the entry may change role)
        self.entries[position] = new
        where = self._where
        if where is not None and where.pop(old, None) is not None:
            where[new] = position
        self.moved(position)
        self.index(new)
        # The index keeps the first holder in list order, and a replacement is not an append: an id
        # ``old`` held and ``new`` does not may name a later message now (only one another message has
        # held: ``shared``; none before ``old``, which was the first), and an id ``new`` holds that
        # another message already held names whichever of the two stands first. Neither walks the list
        # unless a producer repeated a call id: an agent replacing message after message must not make
        # each replacement read the whole thread.
        shared = self.shared
        for call_id in lost:
            if call_id not in calls and call_id in shared:
                self._first_holder(call_id, position + 1)
        if new.calls:
            for call in new.calls:
                if holder_of(calls.get(call.id)) is not new:
                    self._first_holder(call.id, 0)

    def _first_holder(self, call_id: str, start: int) -> None:
        """Index ``call_id`` at the first message from ``start`` on that holds it (or not at all)."""
        calls = self.calls
        entries = self.entries
        for i in range(start, len(entries)):  # (not islice, which would step through the first ``start``)
            held = entries[i]
            if isinstance(held, dict):
                if any(wire_call["id"] == call_id for wire_call in held.get("toolCalls") or ()):
                    calls[call_id] = held
                    return
                continue
            for call in held.calls or ():
                if call.id == call_id:
                    calls[call_id] = (held, call)
                    return
        calls.pop(call_id, None)

    def position(self, entry: Entry) -> int:
        """Where ``entry`` stands."""
        position = self.find(entry)
        if position < 0:
            raise LookupError(entry.id)
        return position

    def find(self, entry: Entry) -> int:
        """Where ``entry`` stands, or -1 when the list does not hold it.

        Searched from the end first, where a stream's entries nearly always are; further back, through
        the map of where entries stood (``_where``), so that finding any entry costs a bounded number of
        steps, not a walk of the thread.
        """
        entries = self.entries
        end = len(entries)
        for i in range(end - 1, max(end - _NEAR, 0) - 1, -1):
            if entries[i] is entry:
                return i
        last = self._last  # (then just after the last one found far back: answers to a snapshot's calls, in order)
        for i in range(last, min(last + _NEAR, end)):
            if entries[i] is entry:
                self._last = i
                return i
        where = self._where
        if where is None or self._shifted > max(_NEAR, math.isqrt(end)):
            # (made again once tool messages put in the middle make a stale place a long search:
            # at most the square root of the list, so answering n calls costs n·√n steps, not n²)
            where = self._where = {}
            self._known = self._shifted = 0
        known = self._known
        if known < end and entry not in where:
            for i in range(known, end):  # (what was appended since, or all of it for a new map)
                held = entries[i]
                if type(held) is not dict:
                    where[held] = i  # type: ignore[index]
            self._known = end
        stood = where.get(entry)
        if stood is not None:
            for i in range(stood, min(stood + self._shifted + 1, end)):
                if entries[i] is entry:
                    self._last = i
                    return i
        for i in range(end - 1, -1, -1):  # (never expected: every entry is in the map, at or before its place)
            if entries[i] is entry:
                return i
        return -1

    def open_message(self, message_id: str, role: str, *, name: str | None = None,
                     subagent_run_id: str | None = None) -> Entry:
        """A new streamed message, appended."""
        entry = Entry(message_id, role)
        entry.text = []
        if name is not None:
            entry.attrs["name"] = name
        if subagent_run_id is not None:
            entry.attrs["subagent_run_id"] = subagent_run_id
        entry.complete = False
        self.insert(entry)
        return entry

    def attach_call(self, entry: Entry, call: Call) -> Call:
        """Add a tool call to a message, indexed."""
        if entry.calls is None:
            entry.calls = []
        entry.calls.append(call)
        self.calls[call.id] = (entry, call)
        return call

    def place_tool_message(self, entry: Entry, tool_call_id: str) -> None:
        """Insert a tool message (TC-13): right after the assistant message holding the call, after the
        tool messages that already follow it; at the end when no message holds the call."""
        found = self.call(tool_call_id)
        if found is None:
            self.insert(entry)
            return
        owner = found[0]
        entries = self.entries
        hint = self._tool_hint
        if hint is not None and hint[0] is owner and hint[1] < len(entries) and entries[hint[1]] is hint[2]:
            position = hint[1] + 1  # (after the result placed last for this message: those before are tools)
        else:
            position = self.position(owner) + 1
        while position < len(entries) and role_of(entries[position]) == "tool":
            position += 1
        if position == len(entries):
            self.insert(entry)
        else:
            entries.insert(position, entry)
            self.moved(position)
            where = self._where
            if where is not None and position < self._known:
                where[entry] = position
                self._known += 1
                self._shifted += 1
            if self.index(entry):
                self._runs[-1].added_message_ids.append(entry.id)
        self._tool_hint = (owner, position, entry)

    def free_id(self, wanted: str) -> str:
        """``wanted``, or ``wanted.2``, ``wanted.3`` … whichever no message holds (the first)."""
        by_id = self.by_id
        if wanted not in by_id:
            return wanted
        # Counted on from where the last search for ``wanted`` stopped (every number before it was
        # taken then; ``_freed`` lowers it when one is let go): an agent naming result after result
        # after one message made each search count through all the earlier ones.
        n = self._suffixes.get(wanted, 2)
        found = f"{wanted}.{n}"
        while found in by_id:
            n += 1
            found = f"{wanted}.{n}"
        self._suffixes[wanted] = n
        return found

    def _freed(self, message_id: str) -> None:
        """``message_id`` no longer names a message: ``free_id`` may hand it out again."""
        suffixes = self._suffixes
        if suffixes:
            wanted, _, number = message_id.rpartition(".")
            # (``free_id`` counts from 2: ``x.1`` or ``x.0`` let go is no number it hands out)
            if wanted in suffixes and number.isascii() and number.isdigit() and len(number) < 19 \
                    and 2 <= int(number) < suffixes[wanted]:
                suffixes[wanted] = int(number)

    def rename(self, entry: Entry, new_id: str) -> None:
        """Give a message another id (everywhere the log and the running run name it)."""
        old_id = entry.id
        del self.by_id[old_id]
        self._freed(old_id)
        entry.id = new_id
        self.touch(entry)
        self.by_id[new_id] = entry
        run = self._runs[-1] if self._runs else None
        if run is not None:
            self._rename_new(run, old_id, new_id)  # (``run.streamed`` holds the entry: renamed with it)
            if not run.terminated:
                note_removed(run, old_id)
                note_added(run, new_id)
            elif old_id in run.born:
                # (renamed after its run ended, by an event folded with no verifier: the record's
                # ``new_message_ids`` reads ``born``, so the message is the run's under its new id too)
                run.born.discard(old_id)
                run.born.add(new_id)

    def _rename_new(self, run: RunRecord, old_id: str, new_id: str) -> None:
        """Write ``new_id`` wherever the run's ``added_message_ids`` says ``old_id``.

        Through an index of where each id stands in that list (made at the first rename, extended with
        what was appended since: the list only grows at its end), so a run renaming message after
        message does not read the whole list each time.
        """
        ids = run.added_message_ids
        places = self._places
        if places is None or places[0] is not run:
            places = self._places = (run, {}, 0)
        _, at, known = places
        for i in range(known, len(ids)):
            at.setdefault(ids[i], []).append(i)
        self._places = (run, at, len(ids))
        moved = at.pop(old_id, None)
        if moved:
            for i in moved:
                ids[i] = new_id
            at.setdefault(new_id, []).extend(moved)

    def take(self, entries: list[Held], by_id: dict[str, Held], calls: dict[str, tuple[Entry, Call] | Held],
             lazy: bool) -> None:
        """Hold a whole new list (a snapshot merged): its entries, their indexes, whether JSON is among them."""
        # The next save of the changes keeps what the new list starts with unchanged (the same objects:
        # a snapshot that restates a thread keeps the messages it does not change).
        old = self.entries
        limit = min(self.low, len(entries))
        same = 0
        while same < limit and entries[same] is old[same]:
            same += 1
        self.low = same
        self.entries = entries
        self.by_id = by_id
        self.calls = calls
        self.lazy = lazy
        self._tool_hint = None
        self._where = None
        self._suffixes.clear()  # (ids may have been let go: counted again from the start)
        self.changed()

    def mark_incomplete(self, message_ids: Iterable[str] = (), tool_call_ids: Iterable[str] = ()) -> None:
        """Flag messages and tool calls whose stream was cut (they are kept, never silently closed)."""
        # What was streamed is joined now, as it stands (a cut message is whole as far as it goes), so
        # that its repairs are reported with the run that cut it.
        for message_id in message_ids:
            entry = self.entry(message_id)
            if entry is not None:
                self.dirty(entry)
                entry.complete = False
                self.incomplete.add(message_id)
                if entry.text is not None:
                    entry.judged_whole(self.warnings)
        for call_id in tool_call_ids:
            found = self.call(call_id)
            if found is not None:
                self.dirty(found[0])
                call = found[1]
                call.complete = False
                call.streamed = False
                self.incomplete.add(call_id)
                call.judged_whole(self.warnings)


def holder_of(found: tuple[Entry, Call] | Held | None) -> Held | None:
    """The message a call index value names."""
    return found[0] if type(found) is tuple else found  # type: ignore[return-value]


# A tool call id that two calls hold (a producer's fault: UK-16) names the *first* of them in the order
# of the message list, as the reference client's lookups (the first match) have it: a result is placed
# after that message, and arguments and an encrypted value go to that call. So every place that indexes
# calls keeps the first holder (``setdefault``, in list order): "the first holder" below.


def hold(messages: Iterable[Any], entries: list[Held], by_id: dict[str, Held],
         calls: dict[str, tuple[Entry, Call] | Held], shared: set[str]) -> bool:
    """Append and index whole messages (all of a large snapshot's) in one pass; ``True`` when some are
    held as their JSON.

    A typed message gets a lazy entry; a message in its plain JSON is held as the dict itself until
    something needs its entry, and the call index names the message for each of its calls.
    """
    new = new_entry
    entry_class = LazyEntry
    call_of = Call.of
    append = entries.append
    lazy = False
    for message in messages:
        if type(message) is dict:
            lazy = True
            if "toolCalls" in message:
                for wire_call in message["toolCalls"]:
                    if calls.setdefault(wire_call["id"], message) is not message:  # (the first holder)
                        shared.add(wire_call["id"])
            append(message)
            by_id[message["id"]] = message
            continue
        entry = new(entry_class)
        entry.id = message_id = message.id
        entry.role = message.ROLE
        entry.frozen = entry.source = message
        entry.complete = True
        entry.wire_of = None
        tool_calls: tuple[msg.ToolCall, ...] | None = getattr(message, "tool_calls", None)
        if tool_calls is None:
            entry.calls = None
        else:
            entry.calls = made = [call_of(call) for call in tool_calls]
            for call in made:
                pair = (entry, call)
                found = calls.setdefault(call.id, pair)  # (the first holder)
                if found is not pair and holder_of(found) is not entry:
                    shared.add(call.id)
        append(entry)
        by_id[message_id] = entry
    return lazy
