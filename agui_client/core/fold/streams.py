"""What streamed text, reasoning and tool calls do to the thread: one handler per event kind.

Each handler takes the event's fields as plain arguments and returns the warnings it found (their
``event_type`` is filled in by whoever knows the event: ``ThreadState.apply`` or the session).
Streamed text and arguments are appended as fragments and joined once, when the message or call
ends (or its stream is cut), so a long stream costs time linear in its length.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..._inert import quoted_name
from ...errors import StreamWarning
from ...wire.depth import containers_outside_strings
from ...wire.types import messages as msg
from ...wire.types.base import Metadata
from ...wire.values import is_json
from .entries import Call, Entry, OwnMetadata, merge_metadata, settle, text_from
from .log import MessageLog
from .records import RunRecord

__all__ = ["Streams", "NO_WARNINGS", "MAX_ARGUMENT_CONTAINERS", "too_dense_to_parse"]

NO_WARNINGS: tuple[StreamWarning, ...] = ()


def _warning(code: str, message: str, *, pointer: str | None = None) -> StreamWarning:
    return StreamWarning(code=code, message=message, pointer=pointer)


#: Tool-call arguments holding more ``[`` and ``{`` than this outside their strings are not parsed,
#: neither to judge them (TC-06) nor by :func:`~agui_client.core.fold.parsed_arguments`. A call's
#: arguments are many ``TOOL_CALL_ARGS`` deltas, bounded only by ``max_run_bytes``, and parsed whole at
#: its end: in JSON dense with containers (``[],[],…``) each costs Python's allocator and garbage
#: collector, and 32 MiB of it held the event loop 3.6 s at ``TOOL_CALL_END`` (256 MiB would take some
#: 5 GiB). Parsing 100,000 costs some 20 ms, and arguments a model writes hold far fewer.
MAX_ARGUMENT_CONTAINERS = 100_000


def too_dense_to_parse(arguments: str) -> bool:
    """Whether tool-call ``arguments`` hold more than :data:`MAX_ARGUMENT_CONTAINERS` ``[`` and ``{``
    outside their strings (or, past that many in all, more than twice as many strings), so are not parsed.

    Counted at C speed: all the brackets first, which settles nearly every call. Only past the bound
    are the strings' brackets told apart (:func:`~agui_client.wire.depth.containers_outside_strings`,
    as a dense event's depth is read: a file's text written by a tool, JSON or code, holds brackets
    that are no containers and cost nothing to parse); arguments holding more strings than that are
    not parsed either, as telling them apart would cost what parsing does.
    """
    if arguments.count("[") + arguments.count("{") <= MAX_ARGUMENT_CONTAINERS:
        return False
    if '"' not in arguments:
        return True
    # The strings are counted first, by their quotes, as each costs telling apart what parsing it would;
    # escaped quotes aside (a file's text in one string may hold a great many), taken out only when
    # they could matter, as that copies the text twice.
    quotes = arguments.count('"')
    if quotes > 4 * MAX_ARGUMENT_CONTAINERS and "\\" in arguments:
        quotes = arguments.replace("\\\\", "").replace('\\"', "").count('"')
    if quotes > 4 * MAX_ARGUMENT_CONTAINERS:
        return True
    return containers_outside_strings(arguments) > MAX_ARGUMENT_CONTAINERS


#: Texts at least this long are remembered at their message's end (``Streams._settled``), at most
#: ``_SETTLED_MAX`` of them: shorter ones cost little to join again.
_SETTLED_MIN = 64 * 1024
_SETTLED_MAX = 64


class Streams:
    """The text, reasoning and tool-call handlers, over a thread's message log.

    Args:
        log: the thread's messages.
        runs: the thread's runs (the ledger's list): the running one records the calls it started and
            answered.
    """

    def __init__(self, log: MessageLog, runs: list[RunRecord]) -> None:
        self.log = log
        self._runs = runs
        self.reopened_empty: set[str] = set()  # messages without content re-opened (TX-05), not yet closed
        self.replayed_args: dict[str, list[str]] = {}  # a replayed call's arguments before its START (TC-22)
        # Long texts as their message's end left them (the list, and how many of its parts are whole):
        # if the message is re-opened, its next end joins only what came after (``settle``). Kept only
        # while the list is the message's own, unchanged but for appended parts (a read that joins the
        # text makes a new list, and the record no longer applies).
        # (and whether those parts hold a U+FFFD: see ``settle``)
        self._settled: dict[Entry, tuple[list[str], int, bool]] = {}
        # Calls the running run ended, started again and ended again (TC-05: the reference appends the
        # new arguments to the old). Their arguments are joined and judged once, when the run ends, not
        # at each end: a call of 1 MB restarted 2,000 times was judged 2,000 times over (8.9 s), for a
        # verdict that only the last end's text decides. By id: a snapshot may drop the call meanwhile.
        self.restarted: dict[str, None] = {}

    # -- text and reasoning messages ---------------------------------------------------------------

    def text_start(self, message_id: str, role: str, name: str | None, owner: str | None,
                   metadata: Metadata | None) -> Sequence[StreamWarning]:
        """TEXT_MESSAGE_START / REASONING_MESSAGE_START: open a message, or re-open a known one (TX-05)."""
        log = self.log
        entry = log.entry(message_id)
        if entry is not None and entry.role == "activity":
            return (_warning("TX-10", f"message {quoted_name(message_id)} is an activity message; text events "
                                      "for it dropped",
                             pointer="/messageId"),)
        if entry is None:
            entry = log.open_message(message_id, role, name=name, subagent_run_id=owner)
        else:
            # TX-05: the reference re-opens a known id and appends to its content: a tool
            # message's text too; a message that had no content keeps none unless text arrives.
            entry.complete = False
            if entry.text is None:
                entry.text = text_from(entry)
                if not entry.text:
                    self.reopened_empty.add(entry.id)
        runs = self._runs
        if runs:
            runs[-1].streamed[entry] = None
        if metadata is not None:
            entry.attrs["metadata"] = merge_metadata(entry.attrs.get("metadata"), metadata)
        log.touch(entry)  # (a re-opened message may be older than the last save)
        log.changed()
        return NO_WARNINGS

    def text_delta(self, message_id: str, delta: str, metadata: Metadata | None) -> Sequence[StreamWarning]:
        """TEXT_MESSAGE_CONTENT / REASONING_MESSAGE_CONTENT: append to a held message's text."""
        log = self.log
        held = log.by_id.get(message_id)
        # (a message held as JSON gets its entry first)
        entry: Entry | None = log.entry(message_id) if type(held) is dict else held  # type: ignore[assignment]
        if entry is None or entry.role == "activity":
            return (_warning("TX-10", f"no text message {quoted_name(message_id)} to append to", pointer="/messageId"),)
        text = entry.text
        if text is None:
            text = entry.text = text_from(entry)
        text.append(delta)
        # Streamed until its END (a snapshot may have restated the open message as a whole one): a read
        # before then repairs a copy of a lone UTF-16 half, not the text (``entries.read_parts``).
        entry.complete = False
        if metadata is not None:
            entry.attrs["metadata"] = merge_metadata(entry.attrs.get("metadata"), metadata)
        entry.frozen = None
        if entry is not log.hot:  # (the message a stream writes into was touched by its start)
            log.dirty(entry)
        log.changes += 1
        return NO_WARNINGS

    def new_run(self) -> None:
        """A run starts: the long texts the last run's message ends left are let go (``_settled``).

        They are a help for a message re-opened again and again within a run; kept on, they held the
        text of messages a later ``MESSAGES_SNAPSHOT`` dropped from the thread, for as long as the
        thread object lived (a closing snapshot restating the streamed answer under another id, as
        ag-ui-langgraph sends, did so at every run).
        """
        if self._settled:
            self._settled.clear()

    def settle_reopened(self) -> None:
        """The run ended (``RUN_ERROR``) or was cut with messages re-opened and still without text: they
        keep no content, as when their END arrives with nothing in between (TX-05; the reference)."""
        log = self.log
        for message_id in self.reopened_empty:
            entry = log.entry(message_id)
            if entry is not None and not entry.text:
                entry.text = None
                log.touch(entry)
                log.changed()
        self.reopened_empty.clear()

    def text_end(self, message_id: str, metadata: Metadata | None) -> Sequence[StreamWarning]:
        """TEXT_MESSAGE_END / REASONING_MESSAGE_END: the message is whole (its text joined once)."""
        log = self.log
        entry = log.entry(message_id)
        if entry is None or entry.role == "activity":
            return (_warning("TX-10", f"no text message {quoted_name(message_id)} to close", pointer="/messageId"),)
        if entry is not log.hot:
            log.dirty(entry)
        entry.complete = True
        log.incomplete.discard(entry.id)
        if self.reopened_empty and entry.id in self.reopened_empty:
            self.reopened_empty.discard(entry.id)
            if not entry.text:
                entry.text = None  # (re-opened and closed with nothing in between: still no content)
                log.touch(entry)
        text = entry.text
        if text is not None:
            # Joined once, when the message is whole: thousands of small deltas would otherwise be
            # held as separate strings until someone reads the messages.
            settled = self._settled.pop(entry, None) if self._settled else None
            if settled is not None and settled[0] is text and len(text) >= settled[1]:
                count, replaced = settled[1], settled[2]
                if len(text) > count:  # (the new text ends up in the last part, joined or not)
                    text = entry.text = settle(text, count, log.warnings, entry.id, replaced=replaced)
                    replaced = replaced or "\ufffd" in text[-1]
            else:
                text = entry.judged_whole(log.warnings)
                replaced = None
            if text and len(text[0]) >= _SETTLED_MIN:
                if len(self._settled) >= _SETTLED_MAX:
                    self._settled.clear()
                if replaced is None:
                    replaced = any("\ufffd" in part for part in text)
                self._settled[entry] = (text, len(text), replaced)
        if metadata is not None:
            entry.attrs["metadata"] = merge_metadata(entry.attrs.get("metadata"), metadata)
            log.touch(entry)
            log.changed()
        return NO_WARNINGS

    # -- tool calls ----------------------------------------------------------------------------------

    def tool_start(self, tool_call_id: str, name: str, parent_message_id: str | None, owner: str | None,
                   metadata: Metadata | None) -> Sequence[StreamWarning]:
        """TOOL_CALL_START: a new call on its assistant message (TC-08), or a known call again (TC-22)."""
        log = self.log
        runs = self._runs
        run = runs[-1] if runs else None
        earlier = run is None or tool_call_id not in run.started_tool_calls  # (not started in this run)
        if run is not None:
            run.started_tool_calls[tool_call_id] = None
        found = log.call(tool_call_id)
        warnings: list[StreamWarning] = []
        if found is not None:
            # TC-22: a START replayed for a call already held is idempotent; a new name wins, with a warning.
            entry, call = found
            if call.complete and not earlier:
                self.restarted[call.id] = None
            if call.name != name:
                warnings.append(_warning("TC-22", f"tool call {quoted_name(call.id)} renamed from "
                                                  f"{quoted_name(call.name)} to {quoted_name(name)}"))
                call.name = name
            if call.complete and earlier:
                # A call of an earlier run comes again with its arguments (ag-ui-langgraph re-sends a call
                # interrupted in an earlier run on resume): they replace the old ones, which stand if none
                # arrive before the END. (Within one run the reference appends: TC-05.)
                self.replayed_args[call.id] = call.args
                call.args = []
            call.complete = False
        else:
            entry = self._parent_for(tool_call_id, parent_message_id, owner, warnings)
            call = log.attach_call(entry, Call(tool_call_id, name, complete=False))
        if run is not None:
            run.streamed[entry] = None
        if metadata is not None:
            call.metadata = merge_metadata(call.metadata, metadata)
        call.frozen = None
        log.touch(entry)  # (the parent named may be a message older than the last save)
        log.changed()
        return warnings

    def _parent_for(self, call_id: str, parent_id: str | None, owner: str | None,
                    warnings: list[StreamWarning]) -> Entry:
        log = self.log
        new_id = call_id
        parent = None if parent_id is None else log.entry(parent_id)
        if parent is not None and parent.role == "assistant":
            return parent
        if parent_id is not None and parent is None:
            new_id = parent_id
        if new_id == call_id and new_id in log.by_id:
            # The id this client gives the message of a call with no assistant parent (none named, or one
            # of another role) is the call's; a message holding it already (a user's, say, or the very
            # message named as parent) keeps it: one id, one message.
            new_id = log.free_id(f"{new_id}.assistant")
        if parent is not None:
            # (the message's id is named: it is the call's own only when no message held that already, and
            # whoever looks for the call's message must know which)
            warnings.append(_warning("TC-08", f"parentMessageId {quoted_name(parent_id)} names a {parent.role} "
                                              "message; the call gets its own assistant message, "
                                              f"{quoted_name(new_id)}"))
        entry = Entry(new_id, "assistant")
        if owner is not None:
            entry.attrs["subagent_run_id"] = owner
        log.insert(entry)
        return entry

    def tool_args(self, tool_call_id: str, delta: str, metadata: Metadata | None) -> Sequence[StreamWarning]:
        """TOOL_CALL_ARGS: append to a held call's arguments."""
        log = self.log
        found = log.call(tool_call_id)
        if found is None:
            return (_warning("TC-02", f"no tool call {quoted_name(tool_call_id)} to append to", pointer="/toolCallId"),)
        entry, call = found
        call.args.append(delta)
        call.streamed = True
        if metadata is not None:
            call.metadata = merge_metadata(call.metadata, metadata)
        call.frozen = None
        entry.frozen = None
        if entry is not log.hot:
            log.dirty(entry)
        log.changes += 1
        return NO_WARNINGS

    def tool_end(self, tool_call_id: str, metadata: Metadata | None) -> Sequence[StreamWarning]:
        """TOOL_CALL_END: the call's arguments are whole (joined once); arguments that are not JSON are
        kept, with a warning."""
        log = self.log
        found = log.call(tool_call_id)
        if found is None:
            return (_warning("TC-02", f"no tool call {quoted_name(tool_call_id)} to close", pointer="/toolCallId"),)
        entry, call = found
        if entry is not log.hot:
            log.dirty(entry)
        call.complete = True
        log.incomplete.discard(call.id)
        if self.replayed_args:
            before = self.replayed_args.pop(call.id, None)
            if before is not None and not call.args:
                # (what a read between the START and this END was shown, no arguments, is built again)
                call.args = before
                call.frozen = None
                log.touch(entry)
                log.changed()
        if metadata is not None:
            call.metadata = merge_metadata(call.metadata, metadata)
            call.frozen = None
            log.touch(entry)
            log.changed()
        if self.restarted and call.id in self.restarted:
            return NO_WARNINGS  # (joined and judged when the run ends: ``judge_restarted``)
        return self._judge(call)

    def _judge(self, call: Call) -> Sequence[StreamWarning]:
        call.streamed = False
        # Joined once, now that the arguments are complete (a repaired UTF-16 half stays JSON).
        call.judged_whole(self.log.warnings)
        if call.args and too_dense_to_parse(call.args[0]):
            return (_warning("TC-06/AGUI204", f"arguments of tool call {quoted_name(call.id)} are not judged: "
                             f"they hold more than {MAX_ARGUMENT_CONTAINERS:,} '[' and '{{' outside strings (kept as "
                             "sent)"),)
        if call.args and not is_json(call.args[0]):
            # TC-06: the protocol does not validate arguments; keep them raw, but say so (AGUI204).
            return (_warning("TC-06/AGUI204", f"arguments of tool call {quoted_name(call.id)} are not JSON "
                                              "(kept as sent)"),)
        return NO_WARNINGS

    def judge_restarted(self) -> Sequence[StreamWarning]:
        """The run ended (or was cut, or another began): the calls it restarted after their end (TC-05)
        are joined and judged now, once each, on all their arguments (TC-06)."""
        log = self.log
        warnings: list[StreamWarning] = []
        for call_id in self.restarted:
            found = log.call(call_id)
            if found is not None and found[1].complete:  # (a call still open is flagged as cut instead)
                warnings.extend(self._judge(found[1]))
        self.restarted.clear()
        return warnings

    def tool_result(self, message_id: str, tool_call_id: str, content: str | Sequence[msg.ContentPart],
                    owner: str | None, metadata: Metadata | None) -> Sequence[StreamWarning]:
        """TOOL_CALL_RESULT: a tool message placed after the call's assistant message (TC-13); an id that
        names another message never replaces it (TC-09)."""
        log = self.log
        runs = self._runs
        run = runs[-1] if runs else None
        if run is not None:
            run.answered_tool_calls.add(tool_call_id)
        entry = Entry(message_id, "tool")
        entry.value = content
        entry.attrs["tool_call_id"] = tool_call_id
        if owner is not None:
            entry.attrs["subagent_run_id"] = owner
        if metadata is not None:
            entry.attrs["metadata"] = OwnMetadata(metadata)
        existing = log.entry(message_id)
        warnings: Sequence[StreamWarning] = NO_WARNINGS
        if existing is None:
            log.place_tool_message(entry, tool_call_id)
        elif existing.role == "tool" and existing.attrs.get("tool_call_id") == tool_call_id:
            # One id, one message: a result re-sent under its id replaces it where it stands.
            log.replace(existing, entry)
        else:
            warnings = (self._id_taken(existing, entry, tool_call_id),)
        log.changed()
        return warnings

    def _id_taken(self, existing: Entry, entry: Entry, tool_call_id: str) -> StreamWarning:
        # TC-09: a result mints a new message, so an id that names another message (a user's, the
        # call's own assistant message, another call's result) must not replace it: that would delete
        # the message, and with it perhaps the call being answered.
        log = self.log
        taken = entry.id
        if existing.role == "assistant" and existing.calls and any(c.id == taken for c in existing.calls):
            # The assistant message is named after its call: by this client (TOOL_CALL_START had no
            # parentMessageId), or by the producer naming the call's own id as its parent (ag-ui-langgraph,
            # for a ToolMessage without id); the result is named after the call too. The result's name
            # stays, the assistant message's gives way (one message per id).
            log.rename(existing, log.free_id(f"{taken}.assistant"))
            log.place_tool_message(entry, tool_call_id)
            return _warning("TC-09", f"tool result {quoted_name(taken)} takes the id of the assistant message of call "
                                     f"{quoted_name(tool_call_id)}, named after the call (its TOOL_CALL_START named no "
                                     "parent, or the call's own id as parent); that message is now "
                                     f"{quoted_name(existing.id)}",
                            pointer="/messageId")
        entry.id = log.free_id(f"{taken}.{tool_call_id}")
        log.place_tool_message(entry, tool_call_id)
        return _warning("TC-09", f"tool result messageId {quoted_name(taken)} already names a {existing.role} "
                                 f"message; the result is kept as {quoted_name(entry.id)}", pointer="/messageId")

    def add_tool_result(self, message: msg.ToolMessage) -> None:
        """The application answers a frontend tool call: the message placed as a result is."""
        self.log.place_tool_message(Entry.of(message), message.tool_call_id)
        self.log.changed()

    # -- encrypted values ------------------------------------------------------------------------------

    def encrypted_value(self, subtype: str, entity_id: str, value: str) -> Sequence[StreamWarning]:
        """REASONING_ENCRYPTED_VALUE: stored on the tool call or message it names."""
        log = self.log
        if subtype == "tool-call":
            found = log.call(entity_id)
            if found is not None:
                found[1].encrypted_value = value
                found[1].frozen = None
                log.touch(found[0])
                log.changed()
                return NO_WARNINGS
        else:
            entry = log.entry(entity_id)
            if entry is not None and entry.role != "activity":
                entry.attrs["encrypted_value"] = value
                log.touch(entry)
                log.changed()
                return NO_WARNINGS
        return (_warning("RS-08", f"no {subtype} {quoted_name(entity_id)} for the encrypted value; nothing stored"),)

