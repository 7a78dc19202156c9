"""The fold: verified events in, a thread's state out.

``ThreadState.apply(event)`` folds one event that the verifier accepted. Inside, the state is
mutable and indexed so that each event costs time independent of the thread's length: messages
live in an ordered list of mutable entries with an id index, streamed text and tool arguments are
lists of fragments joined only when someone asks, and JSON Patch deltas are applied in place with a
journal that undoes a failing patch (atomicity without copying the document). Outside, everything
handed out is immutable: ``messages`` is a cached tuple of frozen messages, rebuilt only after a
change; ``state`` is a copy the caller may keep.

Where the reference client (@ag-ui/client 1.0.0) defines how to fold, the fold does the same, so the
observable result matches it on the same stream; where we deliberately differ, the comment says why.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal

import attrs
from attrs import frozen

from ._build import builder
from ._plain import PlainSnapshot
from ._wire import PlainDict, PlainList, encode_messages, plain_json
from .codec import _describe as codec_describe
from .codec import _orjson, decode, encode, parse_json
from .codec import _wire_name as codec_wire_name
from .errors import ProtocolError, StreamWarning
from .patch import DEFAULT_RUN_COPY_ALLOWANCE, PatchFailed, apply_patch
from .types import events as ev
from .types import messages as msg
from .types import run as rn
from .types.base import JSON

__all__ = [
    "ThreadState",
    "RunRecord",
    "SubagentRecord",
    "StepRecord",
    "RunErrorInfo",
    "Outcome",
    "parsed_arguments",
    "sum_usage",
    "STATE_FORMAT_VERSION",
]

Outcome = Literal["success", "interrupt", "cancelled", "error"]

#: Version of the ``dump()`` / ``load()`` layout (stores keep it so later releases can read them).
STATE_FORMAT_VERSION = 1

_NO_WARNINGS: tuple[StreamWarning, ...] = ()
_EMPTY_STATE: Any = object()
_SURROGATE = re.compile("[\ud800-\udfff]")


# --------------------------------------------------------------------------------------------------
# Records handed out
# --------------------------------------------------------------------------------------------------


@frozen(kw_only=True)
class RunErrorInfo:
    """What a ``RUN_ERROR`` said.

    Attributes:
        message: the error's message, for a person.
        code: its code, if it gave one.
        late: whether it surfaced after the run had finished (CL-02).
        usage: the token usage it reported. A late error's is kept here only: the spec does not say
            whether it repeats the finished run's or adds to it, so it is never added to a total (B290).
    """

    message: str
    code: str | None = None
    late: bool = False
    usage: tuple[rn.TokenUsage, ...] = ()


@frozen(kw_only=True)
class StepRecord:
    """A step the run went through."""

    name: str
    subagent_run_id: str | None = None
    finished: bool = False


@frozen(kw_only=True)
class SubagentRecord:
    """One subagent invocation as the thread last saw it.

    Attributes:
        status: ``running``, ``success``, ``suspended`` or ``error``.
        interrupt_ids: for a suspended subagent, the run-level interrupts it raised (named in its
            outcome, or carrying its ``subagentRunId``).
    """

    subagent_run_id: str
    name: str
    run_id: str | None
    status: Literal["running", "success", "suspended", "error"] = "running"
    description: str | None = None
    parent_subagent_run_id: str | None = None
    parent_tool_call_id: str | None = None
    parent_message_id: str | None = None
    result: JSON = None
    interrupt_ids: tuple[str, ...] = ()
    error: RunErrorInfo | None = None


@attrs.define(kw_only=True)
class RunRecord:
    """The mutable record of one run while it is folded (``RunResult`` is its frozen view)."""

    run_id: str
    thread_id: str
    outcome: Outcome | None = None
    result: JSON = None
    interrupts: tuple[rn.Interrupt, ...] = ()
    pending_tool_call_ids: tuple[str, ...] = ()
    usage: tuple[rn.TokenUsage, ...] = ()
    error: RunErrorInfo | None = None
    late_error: RunErrorInfo | None = None
    steps: list[StepRecord] = attrs.Factory(list)
    open_steps: dict[tuple[str | None, str], list[int]] = attrs.Factory(dict)  # (owner, name) -> indexes in steps
    started_tool_calls: dict[str, None] = attrs.Factory(dict)  # an ordered set
    answered_tool_calls: set[str] = attrs.Factory(set)
    snapshot_tool_calls: set[str] = attrs.Factory(set)  # started: first named by a snapshot (TC-17)
    # Which ids the run found in the thread, kept as what changed since it started (a copy of every
    # id per run would cost time and memory in the thread's length, for every run): ``born`` were
    # added by the run, ``removed_before`` were there at its start and are gone.
    born: set[str] = attrs.Factory(set)
    removed_before: set[str] = attrs.Factory(set)
    new_message_ids: list[str] = attrs.Factory(list)
    echoed: set[str] = attrs.Factory(set)  # of those, the ones RUN_STARTED's input echoed (history, LC-17)
    terminated: bool = False
    parent_run_id: str | None = None
    protocol_version: str | None = None


# --------------------------------------------------------------------------------------------------
# Mutable internals
# --------------------------------------------------------------------------------------------------


class _Call:
    __slots__ = ("id", "name", "args", "metadata", "encrypted_value", "complete", "frozen")

    def __init__(self, call_id: str, name: str, arguments: str = "", metadata: dict[str, Any] | None = None,
                 encrypted_value: str | None = None, complete: bool = True) -> None:
        self.id = call_id
        self.name = name
        self.args: list[str] = [arguments] if arguments else []
        self.metadata = metadata
        self.encrypted_value = encrypted_value
        self.complete = complete
        self.frozen: msg.ToolCall | None = None

    @classmethod
    def of(cls, call: msg.ToolCall) -> _Call:
        made = cls(call.id, call.function.name, call.function.arguments, call.metadata, call.encrypted_value)
        made.frozen = call
        return made

    @classmethod
    def of_wire(cls, call: dict[str, Any]) -> _Call:
        """A tool call of a message held as plain JSON (``agui_client._plain``)."""
        function = call["function"]
        return cls(call["id"], function["name"], function["arguments"], call.get("metadata"),
                   call.get("encryptedValue"))

    def wire(self, warn: list[StreamWarning] | None) -> dict[str, Any] | None:
        """``encode(self.freeze(warn))`` built directly, or ``None`` when the metadata is not plain JSON."""
        metadata = _shown(self.metadata)
        if metadata is not None and not plain_json(metadata):
            return None
        args = self.args
        if args and (len(args) != 1 or not args[0].isascii()):
            args = self.args = _whole(args, warn, self.id)
        out: dict[str, Any] = {"id": self.id, "type": "function",
                               "function": {"name": self.name, "arguments": args[0] if args else ""}}
        if self.encrypted_value is not None:
            out["encryptedValue"] = self.encrypted_value
        if metadata is not None:
            out["metadata"] = metadata
        return out

    def freeze(self, warn: list[StreamWarning] | None) -> msg.ToolCall:
        if self.frozen is None:
            if len(self.args) > 1 or (self.args and not self.args[0].isascii() and _SURROGATE.search(self.args[0])):
                self.args = [_join_text(self.args, warn, self.id)]
            self.frozen = _new_tool_call(
                id=self.id,
                function=_new_function_call(name=self.name, arguments=self.args[0] if self.args else ""),
                encrypted_value=self.encrypted_value,
                metadata=_shown(self.metadata),
            )
        return self.frozen


class _Entry:
    """One message while it may still change.

    An entry made from a whole message (a snapshot's, the application's) starts *lazy*: only its id,
    role, tool calls and the message itself are set, and ``text``, ``value`` and ``attrs`` are read from
    the message the first time anything asks for them (``__getattr__`` runs only for an unset slot).
    A snapshot of thousands of messages then costs one small object per message, and the fold's
    hot paths, which read set slots, pay nothing for it.

    A snapshot folded from its JSON (``plain_messages_snapshot``) goes further: the thread holds each
    message's plain JSON (``agui_client._plain``) with no entry at all until one is needed
    (``ThreadState._materialize``); the entry then made has the JSON in ``frozen`` and ``source``, and
    the typed message is built when first read (``freeze``); a save writes the JSON as it is. Whatever
    changes an entry also clears ``frozen``, so a dict there is always the message as it stands.
    """

    __slots__ = ("id", "role", "text", "value", "calls", "attrs", "frozen", "complete", "source", "wire_of")

    def __init__(self, message_id: str, role: str) -> None:
        self.id = message_id
        self.role = role
        self.text: list[str] | None = None  # streamed content fragments (assistant/system/… text, reasoning)
        self.value: Any = None  # non-streamed content (user parts, tool content, activity content)
        self.calls: list[_Call] | None = None
        self.attrs: dict[str, Any] = {}  # the message's other attributes (name, metadata, toolCallId …)
        self.frozen: msg.Message | dict[str, Any] | None = None  # (plain JSON: see the class docstring)
        self.complete = True
        self.source: msg.Message | dict[str, Any] | None = None  # what a lazy entry reads its other slots from
        # (typed message, the plain JSON it was decoded from): a save writes the JSON while ``frozen`` is
        # still that message (anything that changes the entry replaces ``frozen``, so no one clears it).
        self.wire_of: tuple[msg.Message, dict[str, Any]] | None = None

    @classmethod
    def of(cls, message: msg.Message) -> _Entry:
        entry = _new_entry(cls)
        entry.id = message.id
        entry.role = message.ROLE
        entry.frozen = entry.source = message
        entry.complete = True
        entry.wire_of = None
        calls: tuple[msg.ToolCall, ...] | None = getattr(message, "tool_calls", None)
        entry.calls = None if calls is None else [_Call.of(c) for c in calls]
        return entry

    def __getattr__(self, name: str) -> Any:
        # Only reached for a slot never set: the other slots of a lazy entry, read from its message;
        # an entry held as JSON also makes its tool calls (and says it is complete) when first asked.
        if name in _LAZY_SLOTS and self.source is not None:
            self._thaw(self.source)
            return object.__getattribute__(self, name)
        if name in _WIRE_SLOTS and self.source is not None:  # (never set for a typed entry: its own)
            source = self.source
            if type(source) is dict:
                calls = source.get("toolCalls")
                self.calls = None if calls is None else [_Call.of_wire(call) for call in calls]
            else:  # typed since (_type_held), its calls not asked for before
                typed_calls: tuple[msg.ToolCall, ...] | None = getattr(source, "tool_calls", None)
                self.calls = None if typed_calls is None else [_Call.of(call) for call in typed_calls]
            self.complete = True
            return object.__getattribute__(self, name)
        raise AttributeError(name)

    def _typed(self, wire: dict[str, Any]) -> msg.Message:
        # The typed message of plain JSON held by this entry (plain: decodes without a warning).
        message = _decode_message(wire)
        if self.frozen is wire:
            self.frozen = message
            self.wire_of = (message, wire)
        self.source = message
        return message

    def _thaw(self, message: msg.Message | dict[str, Any]) -> None:
        if type(message) is dict:
            wire_content = message.get("content")
            if wire_content is None or type(wire_content) is str:  # else parts: read from the typed message
                self._thaw_wire(message, wire_content)
                return
            message = self._typed(message)
        assert not isinstance(message, dict)
        names = _OTHER_FIELDS.get(type(message))
        if names is None:
            names = _OTHER_FIELDS[type(message)] = tuple(
                a.name for a in attrs.fields(type(message)) if a.name not in ("id", "content", "tool_calls"))
        self.attrs = {name: getattr(message, name) for name in names}
        content: Any = getattr(message, "content", None)
        self.text = None
        self.value = None
        if isinstance(message, msg.AssistantMessage):
            self.text = None if content is None else [content]
        elif isinstance(message, (msg.DeveloperMessage, msg.SystemMessage, msg.ReasoningMessage)):
            self.text = [content]
        elif isinstance(message, msg.UserMessage) and isinstance(content, str):
            self.text = [content]
        else:
            self.value = content

    def _thaw_wire(self, message: dict[str, Any], content: str | None) -> None:
        # _thaw of plain JSON whose content is a string or absent (an assistant's), without typing it.
        role = message["role"]
        self.attrs = {name: message.get(key) for name, key in _WIRE_FIELDS[role].items()}
        self.text = None
        self.value = None
        if role == "tool":
            self.value = content
        elif content is not None:
            self.text = [content]

    def touch(self) -> None:
        self.frozen = None


    def wire(self, warn: list[StreamWarning] | None) -> dict[str, Any] | None:
        """``encode(self.freeze(warn))`` built from the entry without freezing it (a save need not build
        a typed message per streamed message), or ``None`` where only the typed path can say (content
        that is not a string, attributes that are not plain JSON, activity messages)."""
        role = self.role
        fields = _WIRE_FIELDS.get(role)
        if fields is None:
            return None
        text = self.text
        out: dict[str, Any]
        if text is not None:
            if len(text) != 1 or not text[0].isascii():  # (one ASCII part is whole already)
                text = self.text = _whole(text, warn, self.id) if text else [""]
            out = {"id": self.id, "role": role, "content": text[0]}
        elif role == "assistant":
            out = {"id": self.id, "role": role}
        else:
            value = self.value
            if type(value) is not str:
                return None
            out = {"id": self.id, "role": role, "content": value}
        attributes = self.attrs
        if attributes:
            for name, value in attributes.items():
                if value is None:
                    continue
                value = _shown(value)
                key = fields.get(name)
                if key is None or (type(value) is not str and not plain_json(value)):
                    return None
                out[key] = value
        calls = self.calls
        if calls is not None:
            encoded_calls = [call.wire(warn) for call in calls]
            if None in encoded_calls:
                return None
            out["toolCalls"] = encoded_calls
        return out

    def freeze(self, warn: list[StreamWarning] | None) -> msg.Message:
        frozen = self.frozen
        if frozen is not None:
            return self._typed(frozen) if type(frozen) is dict else frozen  # type: ignore[return-value]
        kwargs = dict(self.attrs)
        if "metadata" in kwargs:
            kwargs["metadata"] = _shown(kwargs["metadata"])
        if self.text is not None:
            if len(self.text) != 1:
                self.text = [_join_text(self.text, warn, self.id)]
            elif not self.text[0].isascii() and _SURROGATE.search(self.text[0]):
                self.text = [_join_text(self.text, warn, self.id)]
            kwargs["content"] = self.text[0]
        elif self.role != "assistant":
            kwargs["content"] = self.value
        if self.calls is not None:
            kwargs["tool_calls"] = tuple(c.freeze(warn) for c in self.calls)
        if self.role == "activity" and kwargs.get("content") is None:
            kwargs["content"] = {}
        built: msg.Message = _ROLE_BUILDERS[self.role](id=self.id, **kwargs)
        self.frozen = built
        return built


def _add_entries(messages: Iterable[msg.Message], entries: list[_Held], by_id: dict[str, _Held],
                 calls: dict[str, tuple[_Entry, _Call] | _Held]) -> None:
    """``_Entry.of`` for each message (all of a large snapshot's), appended and indexed in one pass."""
    new = _new_entry
    entry_class = _Entry
    call_of = _Call.of
    append = entries.append
    for message in messages:
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
                calls[call.id] = (entry, call)
        append(entry)
        by_id[message_id] = entry


def _add_wire_entries(messages: Iterable[dict[str, Any]], entries: list[Any], by_id: dict[str, Any],
                      calls: dict[str, Any]) -> None:
    """``_add_entries`` for messages in the plain shape, held as their JSON (``agui_client._plain``).

    The list and the index hold the message dicts themselves until something needs an entry
    (``ThreadState._materialize`` then makes one for each, in one pass: ``_wire_entry``); the call index
    names the message for each of its calls.
    """
    append = entries.append
    for message in messages:
        if "toolCalls" in message:
            for call in message["toolCalls"]:
                calls[call["id"]] = message
        append(message)
        by_id[message["id"]] = message


def _text_from(entry: _Entry) -> list[str]:
    """The fragments a first delta extends: the message's content when a snapshot gave it as a string
    (one that made the message a tool or user message, whose content is not streamed), else none (TX-01)."""
    value = entry.value
    if type(value) is str:
        entry.value = None
        return [value]
    return []


def _restated_streamed(run: RunRecord | None, incoming: Mapping[str, Any]) -> list[str]:
    """The messages this run added before a snapshot that the snapshot restates (none after its end)."""
    if run is None or run.terminated or not run.new_message_ids:
        return []
    echoed = run.echoed
    if echoed:
        return [message_id for message_id in run.new_message_ids if message_id in incoming and message_id not in echoed]
    return [message_id for message_id in run.new_message_ids if message_id in incoming]


def _role(held: _Held) -> str:
    return held["role"] if type(held) is dict else held.role  # type: ignore[union-attr]


def _wire_entry(message: dict[str, Any]) -> _Entry:
    """The entry of a message held as plain JSON: id, role and the JSON; the rest made when first read."""
    entry = _new_entry(_Entry)
    entry.id = message["id"]
    entry.role = message["role"]
    entry.frozen = entry.source = message
    entry.wire_of = None
    return entry


def _decode_message(wire: dict[str, Any]) -> msg.Message:
    return decode(wire, msg.Message)  # type: ignore[arg-type]


def _type_held(entries: Iterable[_Entry]) -> None:
    """Type the messages of these entries still held as plain JSON, in one decode of them all (a decode
    per message costs several times as much): what reading a thread's messages does first."""
    waiting = [entry for entry in entries if type(entry.frozen) is dict]
    if len(waiting) < 2:
        return
    typed: tuple[msg.Message, ...] = decode([entry.frozen for entry in waiting], tuple[msg.Message, ...])
    for entry, message in zip(waiting, typed, strict=True):
        entry.wire_of = (message, entry.frozen)  # type: ignore[assignment]
        entry.frozen = entry.source = message


# Per message class, the attributes an entry keeps besides id, content and tool calls.
_OTHER_FIELDS: dict[type, tuple[str, ...]] = {}
_LAZY_SLOTS = frozenset({"text", "value", "attrs"})
_WIRE_SLOTS = frozenset({"calls", "complete"})
_new_entry = object.__new__

_ROLE_CLASSES: dict[str, Any] = {
    c.ROLE: c
    for c in (msg.DeveloperMessage, msg.SystemMessage, msg.AssistantMessage, msg.UserMessage, msg.ToolMessage,
              msg.ActivityMessage, msg.ReasoningMessage)
}


_ROLE_BUILDERS: dict[str, Any] = {role: builder(cls) for role, cls in _ROLE_CLASSES.items()}
# Per role whose streamed entries ``_Entry.wire`` encodes: the other fields' Python name -> wire name.
_WIRE_FIELDS: dict[str, dict[str, str]] = {
    cls.ROLE: {a.name: codec_wire_name(a) for a in attrs.fields(cls) if a.name not in ("id", "content", "tool_calls")}
    for cls in _ROLE_CLASSES.values() if cls is not msg.ActivityMessage
}
_new_tool_call = builder(msg.ToolCall)
_new_function_call = builder(msg.FunctionCall)


def _whole(parts: list[str], warn: list[StreamWarning] | None, entity: str) -> list[str]:
    """Streamed parts as one string, joined when there are several or when they hold a UTF-16 half.

    Called when a message or a tool call's arguments end (or their stream is cut), so that a repair's
    warning belongs to the run that streamed the text, not to whoever reads the thread next.
    """
    if len(parts) == 1 and (parts[0].isascii() or _SURROGATE.search(parts[0]) is None):
        return parts  # (an ASCII text holds no surrogate: one C pass instead of a regex scan)
    return [_join_text(parts, warn, entity)] if parts else parts


def _join_text(parts: list[str], warn: list[StreamWarning] | None, entity: str) -> str:
    text = "".join(parts)
    if _SURROGATE.search(text) is None:
        return text
    # UTF-16 producers split a character into two deltas, one half each: rejoin the pairs, and
    # replace halves still unpaired so the thread can always be encoded and sent again.
    fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if _SURROGATE.search(fixed) is not None or "\ufffd" in fixed and "\ufffd" not in text:
        fixed = fixed.encode("utf-8", "replace").decode("utf-8")
        if warn is not None:
            warn.append(StreamWarning(code="B093",
                                      message=f"unpaired UTF-16 surrogate in {entity!r} replaced by U+FFFD"))
    return fixed


class _OwnMetadata(dict[str, Any]):
    """Metadata the fold made and no one else holds: merged in place. Whatever shows it (a typed
    message, a wire dict) gets a plain copy (:func:`_shown`), so later merges never change what was shown."""


def _merge_metadata(current: dict[str, Any] | None, update: dict[str, Any] | None) -> dict[str, Any] | None:
    # TX-11: key by key, last write wins, never recursively; the event keeps its own dict. In place once
    # the fold owns the dict: a copy per event would cost the stream's square with ever new keys.
    if update is None:
        return current
    if type(current) is _OwnMetadata:
        current.update(update)
        return current
    merged = _OwnMetadata() if current is None else _OwnMetadata(current)
    merged.update(update)
    return merged


def _shown(metadata: Any) -> Any:
    """``metadata`` as a message or a wire dict may hold it (see :class:`_OwnMetadata`)."""
    return dict(metadata) if type(metadata) is _OwnMetadata else metadata


def _copy_json(value: Any) -> Any:
    """A deep copy of JSON data (through orjson when installed; :func:`_deep_copy` otherwise)."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if _orjson is not None:
        try:
            return _orjson.loads(_orjson.dumps(value))
        except (TypeError, ValueError):
            pass  # lone surrogates, integers beyond 64 bits, very deep values: the generic copy is right
    return _deep_copy(value)


def _deep_copy(value: Any) -> Any:
    """``copy.deepcopy`` of a JSON-shaped tree without recursion.

    The decoder admits nesting to 512 levels, and ``copy.deepcopy`` recurses twice per level: a deep
    but valid state would end in a ``RecursionError`` (earlier still when the caller is deep). Dicts
    and lists are copied here level by level, a container met twice is copied once (as ``deepcopy``
    does, so a cycle ends); anything else is a leaf, deep-copied alone.
    """
    kind = type(value)
    if kind is not dict and kind is not list:
        return value if value is None or kind in (str, int, float, bool) else copy.deepcopy(value)
    root: Any = {} if kind is dict else []
    made: dict[int, Any] = {id(value): root}
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if type(source) is dict else enumerate(source)
        for key, item in items:
            kind = type(item)
            if kind is dict or kind is list:
                copied = made.get(id(item))
                if copied is None:
                    copied = made[id(item)] = {} if kind is dict else []
                    stack.append((item, copied))
            elif item is None or kind in (str, int, float, bool):
                copied = item
            else:
                copied = copy.deepcopy(item)
            if type(target) is dict:
                target[key] = copied
            else:
                target.append(copied)
    return root


def _foreign_copy(value: Any, plain: bool | None = None) -> Any:
    """A copy of JSON data that came with an event object built elsewhere, exactly as it is.

    The fast copy goes through orjson, which would quietly write ``NaN`` as ``null`` and a ``datetime``
    as a string; what is not plain JSON is deep-copied instead (a save then refuses it, as it must).
    """
    if plain if plain is not None else plain_json(value):
        return _copy_json(value)
    return _deep_copy(value)


def _adopted_json(value: Any) -> Any:
    """State from a store's fresh record, held as it is once known to be JSON (see :func:`_own_json`)."""
    if not plain_json(value):
        raise ValueError("state must be JSON: dicts, lists, strings, finite numbers, booleans and None")
    return value


def _own_json(value: Any) -> Any:
    """A copy of state the application supplies, refusing what JSON cannot hold.

    The fast copy goes through orjson, which would quietly write ``NaN`` as ``null`` and a ``datetime``
    as a string: the thread would then send something other than what it was given.
    """
    if not plain_json(value):
        raise ValueError("state must be JSON: dicts, lists, strings, finite numbers, booleans and None")
    return _copy_json(value)


# --------------------------------------------------------------------------------------------------
# The thread
# --------------------------------------------------------------------------------------------------


class ThreadState:
    """A thread's folded state: messages, shared state, open interrupts, usage, subagents, runs.

    ``apply(event)`` folds one verified event in time independent of the thread's length.
    Everything read from it is a snapshot the caller may keep: ``messages`` is a tuple of frozen
    messages; ``state`` is a copy.

    Args:
        messages: messages the thread starts with.
        state: the shared state it starts with (any JSON value; ``{}`` when not given, as the reference).
        thread_id: the thread's id, when known.
        open_interrupts: interrupts still waiting for an answer (a thread brought back from elsewhere).
        interrupted_run_id: the run that raised them.
    """

    def __init__(self, *, messages: Iterable[msg.Message] = (), state: JSON = _EMPTY_STATE,
                 thread_id: str | None = None, open_interrupts: Iterable[rn.Interrupt] = (),
                 interrupted_run_id: str | None = None) -> None:
        self.thread_id = thread_id
        # A message is an _Entry, or, for a snapshot's or a store's message in the plain shape, its JSON
        # (a dict) until something needs its entry: then every such message gets one (_materialize),
        # so a thread that only holds and saves them never makes an object per message.
        self._entries: list[_Held] = []
        self._by_id: dict[str, _Held] = {}
        self._lazy = False  # (whether the list may hold a dict)
        # call id -> (the message holding it, the call); or just the message (its entry or its JSON),
        # for a snapshot's message whose calls are made when first looked up (``_call``).
        self._calls: dict[str, tuple[_Entry, _Call] | _Held] = {}
        # The reference starts every thread from {} and sends it; a delta before any snapshot patches it (SP-04).
        self._state: Any = {} if state is _EMPTY_STATE else _own_json(state)
        # Whether the state is known to hold plain JSON only (what a save may skip checking): true for
        # state the thread validated or parsed itself, false after an event object built elsewhere.
        self._state_plain = True
        self._state_view: Any = None
        self._state_view_valid = False
        self.state_in_sync = True
        self._messages_view: tuple[msg.Message, ...] | None = None
        self._open_interrupts: tuple[rn.Interrupt, ...] = tuple(open_interrupts)
        self.interrupted_run_id: str | None = interrupted_run_id
        self._usage: dict[str, tuple[rn.TokenUsage, ...]] = {}
        self._subagents: dict[str, SubagentRecord] = {}
        self._runs: list[RunRecord] = []
        self._incomplete: set[str] = set()
        self._pending_tool_calls: tuple[str, ...] = ()
        # Where the last tool result went (the assistant message holding its call, its index, itself):
        # the next result for that message goes after it without walking the results before it.
        # Cleared by anything but an append that moves entries.
        self._tool_hint: tuple[_Held, int, _Entry] | None = None
        self._copy_allowance = [DEFAULT_RUN_COPY_ALLOWANCE]  # what a run's patches may copy (B194)
        self._reopened_empty: set[str] = set()  # messages without content re-opened (TX-05), not yet closed
        self._replayed_args: dict[str, list[str]] = {}  # a replayed call's arguments before its START (TC-22)
        self.version = 0
        self.warnings: list[StreamWarning] = []
        #: Take STATE_SNAPSHOT payloads without copying them. Only for a fold whose events nobody else
        #: holds (``replay()`` of text sets it): later deltas patch the snapshot's dict in place.
        self.adopt_payloads = False
        for message in messages:
            self._insert(_Entry.of(message))

    # -- reading ---------------------------------------------------------------------------------

    @property
    def messages(self) -> tuple[msg.Message, ...]:
        """Every message of the thread, in order (activity messages included)."""
        if self._messages_view is None:
            self._materialize()
            _type_held(self._made())
            self._messages_view = tuple(entry.freeze(self.warnings) for entry in self._made())
        return self._messages_view

    @property
    def state(self) -> JSON:
        """The shared state (a copy: mutating it does not change the thread)."""
        copy_state = _copy_json if self._state_plain else _deep_copy  # (orjson would write NaN as null)
        if not self._state_view_valid:
            self._state_view = copy_state(self._state)
            self._state_view_valid = True
        return copy_state(self._state_view) if isinstance(self._state_view, (dict, list)) else self._state_view

    @property
    def open_interrupts(self) -> tuple[rn.Interrupt, ...]:
        """The interrupts of the most recent interrupted run that nothing has answered yet."""
        return self._open_interrupts

    @property
    def usage_by_run(self) -> Mapping[str, tuple[rn.TokenUsage, ...]]:
        """Token usage as each run reported it (run id -> entries)."""
        return dict(self._usage)

    @property
    def total_usage(self) -> rn.TokenUsage:
        """Usage summed over every run and provider (fields no run reported stay ``None``)."""
        return sum_usage(u for entries in self._usage.values() for u in entries)

    @property
    def subagents(self) -> Mapping[str, SubagentRecord]:
        """Every subagent invocation seen, by ``subagentRunId``."""
        return dict(self._subagents)

    @property
    def runs(self) -> tuple[RunRecord, ...]:
        """The runs folded into this thread, oldest first (mutable records; treat as read-only)."""
        return tuple(self._runs)

    @property
    def run_count(self) -> int:
        """How many runs have been folded into this thread."""
        return len(self._runs)

    @property
    def last_run(self) -> RunRecord | None:
        """The most recent run, if any."""
        return self._runs[-1] if self._runs else None

    @property
    def incomplete_ids(self) -> frozenset[str]:
        """Messages and tool calls whose stream was cut before their end event."""
        return frozenset(self._incomplete)

    @property
    def pending_tool_call_ids(self) -> tuple[str, ...]:
        """Frontend tool calls the last successful run left for the consumer, still without a result."""
        pending = self._pending_tool_calls
        if not pending:
            return ()
        answered = self._answered(pending)
        return tuple(c for c in pending if c not in answered)

    def message(self, message_id: str) -> msg.Message | None:
        """The message with this id, if the thread holds one."""
        entry = self._entry(message_id)
        return None if entry is None else entry.freeze(self.warnings)

    def _messages_for(self, message_ids: Iterable[str]) -> tuple[msg.Message, ...]:
        # message() for many ids at once (a run's new messages: all of a large snapshot's). Entries are
        # made only if one of these messages is held as JSON: a run's few streamed messages in a long
        # stored thread leave the rest as they are.
        get = self._by_id.get
        held = [entry for entry in map(get, message_ids) if entry is not None]
        if any(type(entry) is dict for entry in held):
            self._materialize()
            held = [self._by_id[entry["id"]] if type(entry) is dict else entry for entry in held]
        made: list[_Entry] = held  # type: ignore[assignment]  # (no JSON among them now)
        _type_held(made)
        warn = self.warnings
        return tuple(entry.freeze(warn) for entry in made)

    def tool_call(self, tool_call_id: str) -> msg.ToolCall | None:
        """The tool call with this id, if any message holds it."""
        found = self._call(tool_call_id)
        return None if found is None else found[1].freeze(self.warnings)

    def _entry(self, message_id: str) -> _Entry | None:
        """The entry of the message with this id, if any (made first, with all others held as JSON)."""
        found = self._by_id.get(message_id)
        if type(found) is dict:
            self._materialize()
            found = self._by_id[message_id]
        assert not isinstance(found, dict)
        return found

    def _materialize(self) -> None:
        """Give every message held as JSON its entry, in one pass (one at a time would cost a search of
        the list per message)."""
        if not self._lazy:
            return
        self._lazy = False
        entries = self._entries
        by_id = self._by_id
        made: dict[int, _Entry] = {}
        for i, held in enumerate(entries):
            if type(held) is dict:
                entries[i] = entry = made[id(held)] = _wire_entry(held)
                if by_id.get(entry.id) is held:
                    by_id[entry.id] = entry
        calls = self._calls
        for call_id, holder in calls.items():
            if type(holder) is dict:
                # (each such message is in the list, so it has its entry: the entry holds the JSON,
                # which keeps its id from being reused while this runs)
                calls[call_id] = made[id(holder)]

    def _made(self) -> list[_Entry]:
        """The list of entries, once ``_materialize`` has run."""
        return self._entries  # type: ignore[return-value]

    def _call(self, call_id: str) -> tuple[_Entry, _Call] | None:
        found = self._calls.get(call_id)
        if type(found) is tuple or found is None:
            return found
        if type(found) is dict:
            self._materialize()
            found = self._calls.get(call_id)
            if type(found) is tuple or found is None:
                return found
        # A snapshot message held as JSON: its calls are made now, and indexed where it holds them.
        assert isinstance(found, _Entry)
        calls = found.calls or ()
        owned = {call.id for call in calls if self._calls.get(call.id) is found}
        for call in calls:  # (a repeated id: the last call holding it, as an eager index has it)
            if call.id in owned:
                self._calls[call.id] = (found, call)
        made = self._calls.get(call_id)
        return made if type(made) is tuple else None

    def has_tool_call(self, tool_call_id: str) -> bool:
        """Whether any message of the thread holds this tool call."""
        return tool_call_id in self._calls

    def has_message(self, message_id: str) -> bool:
        """Whether the thread holds a message with this id."""
        return message_id in self._by_id

    def input_messages(self) -> tuple[msg.Message, ...]:
        """The messages a next run's input carries: activity messages excluded (AC-06)."""
        return tuple(m for m in self.messages if not isinstance(m, msg.ActivityMessage))

    def __iter__(self) -> Iterator[msg.Message]:
        return iter(self.messages)

    def __len__(self) -> int:
        return len(self._entries)

    # -- writing by the application ---------------------------------------------------------------

    def add_message(self, message: msg.Message) -> None:
        """Append a message (a user turn, a tool result …); an existing id is replaced in place."""
        existing = self._entry(message.id)
        entry = _Entry.of(message)
        if existing is not None:
            self._replace(existing, entry)
        else:
            self._insert(entry)
        self._changed()

    def add_tool_result(self, tool_call_id: str, content: str | Sequence[msg.ContentPart], *,
                        message_id: str, error: str | None = None) -> msg.ToolMessage:
        """Answer a frontend tool call: a tool message placed after the call's assistant message."""
        message = msg.ToolMessage(id=message_id, tool_call_id=tool_call_id,
                                  content=content if isinstance(content, str) else tuple(content), error=error)
        self._place_tool_message(_Entry.of(message), tool_call_id)
        self._changed()
        return message

    def set_state(self, state: JSON) -> None:
        """Replace the shared state (a copy of ``state`` is kept).

        Raises:
            ValueError: ``state`` holds something JSON cannot (``NaN``, a ``datetime``, a set …).
        """
        self._state = _own_json(state)
        self._state_plain = True
        self.state_in_sync = True
        self._state_changed()

    def hold_interrupts(self, interrupts: Sequence[rn.Interrupt], run_id: str | None) -> None:
        """Hold interrupts open that arrived in a run the session had to reject (B233, B238)."""
        self._open_interrupts = tuple(interrupts)
        self.interrupted_run_id = run_id

    def clear_open_interrupts(self) -> None:
        """Forget the open interrupts (after a resume was sent and its run moved the thread on)."""
        self._open_interrupts = ()
        self.interrupted_run_id = None

    # -- the fold --------------------------------------------------------------------------------

    def apply(self, event: ev.Event | ev.UnknownEvent) -> Sequence[StreamWarning]:
        """Fold one event the verifier accepted; returns the warnings it produced."""
        hot = _HOT.get(type(event))
        if hot is not None:
            return hot(self, event)  # type: ignore[no-any-return]
        match event:
            case ev.TextMessageContentEvent():
                return self._on_text_content(event)
            case ev.ToolCallArgsEvent():
                return self._on_tool_args(event)
            case ev.ReasoningMessageContentEvent():
                return self._on_text_content(event)
            case ev.TextMessageStartEvent():
                return self._on_message_start(event.message_id, event.role or "assistant", event)
            case ev.ReasoningMessageStartEvent():
                return self._on_message_start(event.message_id, "reasoning", event)
            case ev.TextMessageEndEvent() | ev.ReasoningMessageEndEvent():
                return self._on_message_end(event)
            case ev.ToolCallStartEvent():
                return self._on_tool_start(event)
            case ev.ToolCallEndEvent():
                return self._on_tool_end(event)
            case ev.ToolCallResultEvent():
                return self._on_tool_result(event)
            case ev.StateSnapshotEvent():
                if self.adopt_payloads:  # its payload was parsed here: plain JSON, held by nobody else
                    self._state, self._state_plain = event.snapshot, True
                else:  # an event object from anywhere: copied as it is, and vouched for only if plain
                    self._state_plain = plain_json(event.snapshot)
                    self._state = _foreign_copy(event.snapshot, self._state_plain)
                self.state_in_sync = True
                self._state_changed()
            case ev.StateDeltaEvent():
                return self._on_state_delta(event)
            case ev.MessagesSnapshotEvent():
                return self._on_messages_snapshot(event)
            case ev.ActivitySnapshotEvent():
                return self._on_activity_snapshot(event)
            case ev.ActivityDeltaEvent():
                return self._on_activity_delta(event)
            case ev.ReasoningEncryptedValueEvent():
                return self._on_encrypted_value(event)
            case ev.RunStartedEvent():
                self._on_run_started(event)
            case ev.RunFinishedEvent():
                return self._on_run_finished(event)
            case ev.RunErrorEvent():
                return self._on_run_error(event)
            case ev.StepStartedEvent():
                run = self.last_run
                if run is not None:
                    run.open_steps.setdefault((event.subagent_run_id, event.step_name), []).append(len(run.steps))
                    run.steps.append(StepRecord(name=event.step_name, subagent_run_id=event.subagent_run_id))
            case ev.StepFinishedEvent():
                self._on_step_finished(event)
            case ev.SubagentStartedEvent():
                self._on_subagent_started(event)
            case ev.SubagentFinishedEvent():
                self._on_subagent_finished(event)
            case ev.SubagentErrorEvent():
                record = self._subagents.get(event.subagent_run_id)
                if record is not None:
                    self._subagents[event.subagent_run_id] = attrs.evolve(
                        record, status="error", error=RunErrorInfo(message=event.message, code=event.code))
            case (ev.RawEvent() | ev.CustomEvent() | ev.ReasoningStartEvent() | ev.ReasoningEndEvent()
                  | ev.UnknownEvent()):
                pass  # carry no state of their own (UK-08)
            case ev.TextMessageChunkEvent() | ev.ToolCallChunkEvent() | ev.ReasoningMessageChunkEvent():
                raise TypeError(f"{event.TYPE} must be expanded by agui_client.chunks before it is folded")
        return _NO_WARNINGS

    # -- messages ----------------------------------------------------------------------------------

    def _changed(self) -> None:
        self._messages_view = None
        self.version += 1

    def _state_changed(self) -> None:
        self._state_view_valid = False
        self._state_view = None
        self.version += 1

    def _insert(self, entry: _Entry) -> None:
        self._entries.append(entry)
        if self._index(entry):
            self._runs[-1].new_message_ids.append(entry.id)

    def _index(self, entry: _Entry) -> bool:
        """Index ``entry``; ``True`` when the running run did not find its id in the thread."""
        by_id = self._by_id
        fresh = entry.id not in by_id
        by_id[entry.id] = entry
        if entry.calls:
            for call in entry.calls:
                self._calls[call.id] = (entry, call)
        run = self._runs[-1] if self._runs else None
        if run is None or run.terminated:
            return False
        if not fresh:
            return entry.id in run.born
        if run.removed_before and entry.id in run.removed_before:  # (_note_added, inlined: once per message)
            run.removed_before.discard(entry.id)
            return False
        run.born.add(entry.id)
        return True

    def _unindex(self, entry: _Entry) -> None:
        self._tool_hint = None
        if self._by_id.get(entry.id) is entry:
            del self._by_id[entry.id]
            run = self._runs[-1] if self._runs else None
            if run is not None and not run.terminated:
                _note_removed(run, entry.id)
        if entry.calls:
            for call in entry.calls:
                held = self._calls.get(call.id)
                if held is entry or (type(held) is tuple and held[0] is entry):
                    del self._calls[call.id]

    def _replace(self, old: _Entry, new: _Entry) -> None:
        position = self._position(old)
        self._unindex(old)  # (which forgets the tool hint: the entry may change role)
        self._entries[position] = new
        self._index(new)

    def _position(self, entry: _Entry) -> int:
        # Entries touched by a stream are nearly always near the end: search backwards.
        entries = self._entries
        for i in range(len(entries) - 1, -1, -1):
            if entries[i] is entry:
                return i
        raise LookupError(entry.id)

    def _open_message(self, message_id: str, role: str, *, name: str | None = None,
                      subagent_run_id: str | None = None) -> _Entry:
        # A new streamed message (TEXT_MESSAGE_START, REASONING_MESSAGE_START, a plain fused start).
        entry = _Entry(message_id, role)
        entry.text = []
        if name is not None:
            entry.attrs["name"] = name
        if subagent_run_id is not None:
            entry.attrs["subagent_run_id"] = subagent_run_id
        entry.complete = False
        self._insert(entry)
        return entry

    def _on_message_start(self, message_id: str, role: str,
                          event: ev.TextMessageStartEvent | ev.ReasoningMessageStartEvent) -> Sequence[StreamWarning]:
        entry = self._entry(message_id)
        if entry is not None and entry.role == "activity":
            return (self._warning("TX-10", f"message {message_id!r} is an activity message; text events for it dropped",
                                  event, pointer="/messageId"),)
        if entry is None:
            entry = self._open_message(message_id, role, name=getattr(event, "name", None),
                                       subagent_run_id=event.subagent_run_id)
        else:
            # B149 / TX-05: the reference re-opens a known id and appends to its content: a tool
            # message's text too; a message that had no content keeps none unless text arrives.
            entry.complete = False
            if entry.text is None:
                entry.text = _text_from(entry)
                if not entry.text:
                    self._reopened_empty.add(entry.id)
        if event.metadata is not None:
            entry.attrs["metadata"] = _merge_metadata(entry.attrs.get("metadata"), event.metadata)
        entry.touch()
        self._changed()
        return _NO_WARNINGS

    # -- the fused path's half (RunSession folds plain events from their JSON) ----------------------
    # Each ``plain_*`` method makes exactly the change ``apply`` makes for the event without metadata or
    # owner tag, and returns ``True``; or, when the event is not that plain case (it would warn, or
    # meet a held id), changes nothing and returns ``False`` for the ordinary path to fold it.

    def plain_message_start(self, message_id: str, role: str) -> bool:
        """TEXT_MESSAGE_START opening a new message."""
        if message_id in self._by_id:
            return False
        self._open_message(message_id, role)
        self._changed()
        return True

    def plain_message_end(self, message_id: str) -> bool:
        """TEXT_MESSAGE_END of a held text message."""
        entry = self._entry(message_id)
        if entry is None or entry.role == "activity":
            return False
        self._close_message(entry)
        return True

    def plain_tool_start(self, tool_call_id: str, name: str, parent_id: str | None) -> bool:
        """TOOL_CALL_START of a new call, on a held assistant message or a new one."""
        if tool_call_id in self._calls:
            return False  # TC-22: a repeated START
        parent = self._entry(parent_id if parent_id is not None else tool_call_id)
        if parent_id is None and parent is not None:
            return False  # the call's own id already names a message
        if parent is not None and parent.role != "assistant":
            return False  # TC-08
        run = self.last_run
        if run is not None:
            run.started_tool_calls[tool_call_id] = None
        if parent is None:
            parent = _Entry(parent_id if parent_id is not None else tool_call_id, "assistant")
            self._insert(parent)
        self._attach_call(parent, _Call(tool_call_id, name, complete=False))
        parent.frozen = None
        self._changed()
        return True

    def plain_tool_end(self, tool_call_id: str) -> bool:
        """TOOL_CALL_END of a held call whose arguments are JSON (or empty)."""
        found = self._call(tool_call_id)
        if found is None:
            return False
        call = found[1]
        if call.args and not _is_json(call.args[0] if len(call.args) == 1 else "".join(call.args)):
            return False  # TC-06 warns
        self._close_call(call)
        return True

    def plain_tool_result(self, message_id: str, tool_call_id: str, content: str) -> bool:
        """TOOL_CALL_RESULT minting a new tool message."""
        if message_id in self._by_id:
            return False
        self._tool_message(message_id, tool_call_id, content)
        return True

    def append_delta(self, kind: str, entity_id: str, delta: str) -> bool:
        """Fold a streamed delta (``text``, ``reasoning`` or ``tool`` arguments) without an event object.

        Returns ``False``, changing nothing, when there is no such entity to append to (the caller then
        folds the event the ordinary way, which reports why).
        """
        if kind == "tool":
            found = self._call(entity_id)
            if found is None:
                return False
            entry, call = found
            call.args.append(delta)
            call.frozen = None
        else:
            entry = self._by_id.get(entity_id)  # type: ignore[assignment]
            if type(entry) is not _Entry:  # (not _entry(): a call per delta is felt)
                if entry is None:
                    return False
                entry = self._entry(entity_id)  # type: ignore[assignment]
            if entry.role == "activity":
                return False
            if entry.text is None:
                entry.text = _text_from(entry)
            entry.text.append(delta)
        entry.frozen = None
        self._messages_view = None
        self.version += 1
        return True

    def _on_text_content(self, event: ev.TextMessageContentEvent | ev.ReasoningMessageContentEvent
                         ) -> Sequence[StreamWarning]:
        entry: _Entry | None = self._by_id.get(event.message_id)  # type: ignore[assignment]
        if type(entry) is not _Entry and entry is not None:  # (_entry(), inlined: this runs per delta)
            entry = self._entry(event.message_id)
        if entry is None or entry.role == "activity":
            return (self._warning("TX-10", f"no text message {event.message_id!r} to append to", event,
                                  pointer="/messageId"),)
        if entry.text is None:
            entry.text = _text_from(entry)
        entry.text.append(event.delta)
        if event.metadata is not None:
            entry.attrs["metadata"] = _merge_metadata(entry.attrs.get("metadata"), event.metadata)
        entry.frozen = None
        self._messages_view = None
        self.version += 1
        return _NO_WARNINGS

    def _close_message(self, entry: _Entry) -> None:
        entry.complete = True
        self._incomplete.discard(entry.id)
        if self._reopened_empty and entry.id in self._reopened_empty:
            self._reopened_empty.discard(entry.id)
            if not entry.text:
                entry.text = None  # (re-opened and closed with nothing in between: still no content)
                entry.touch()
                return
        if entry.text is not None:
            # Joined once, when the message is whole: thousands of small deltas would otherwise be
            # held as separate strings until someone reads the messages.
            entry.text = _whole(entry.text, self.warnings, entry.id)

    def _on_message_end(self, event: ev.TextMessageEndEvent | ev.ReasoningMessageEndEvent) -> Sequence[StreamWarning]:
        entry = self._entry(event.message_id)
        if entry is None or entry.role == "activity":
            return (self._warning("TX-10", f"no text message {event.message_id!r} to close", event,
                                  pointer="/messageId"),)
        self._close_message(entry)
        if event.metadata is not None:
            entry.attrs["metadata"] = _merge_metadata(entry.attrs.get("metadata"), event.metadata)
            entry.touch()
            self._changed()
        return _NO_WARNINGS

    # -- tool calls --------------------------------------------------------------------------------

    def _on_tool_start(self, event: ev.ToolCallStartEvent) -> Sequence[StreamWarning]:
        run = self.last_run
        earlier = run is None or event.tool_call_id not in run.started_tool_calls  # (not started in this run)
        if run is not None:
            run.started_tool_calls[event.tool_call_id] = None
        found = self._call(event.tool_call_id)
        warnings: list[StreamWarning] = []
        if found is not None:
            # TC-22: a START replayed for a call already held is idempotent; a new name wins, with a warning.
            entry, call = found
            if call.name != event.tool_call_name:
                warnings.append(self._warning(
                    "TC-22", f"tool call {call.id!r} renamed from {call.name!r} to {event.tool_call_name!r}", event))
                call.name = event.tool_call_name
            if call.complete and earlier:
                # A call of an earlier run comes again with its arguments (ag-ui-langgraph re-sends a call
                # interrupted in an earlier run on resume): they replace the old ones, which stand if none
                # arrive before the END. (Within one run the reference appends: B161, TC-05.)
                self._replayed_args[call.id] = call.args
                call.args = []
            call.complete = False
        else:
            entry = self._parent_for(event, warnings)
            call = self._attach_call(entry, _Call(event.tool_call_id, event.tool_call_name, complete=False))
        if event.metadata is not None:
            call.metadata = _merge_metadata(call.metadata, event.metadata)
        call.frozen = None
        entry.touch()
        self._changed()
        return warnings

    def _attach_call(self, entry: _Entry, call: _Call) -> _Call:
        if entry.calls is None:
            entry.calls = []
        entry.calls.append(call)
        self._calls[call.id] = (entry, call)
        return call

    def _parent_for(self, event: ev.ToolCallStartEvent, warnings: list[StreamWarning]) -> _Entry:
        parent_id = event.parent_message_id
        new_id = event.tool_call_id
        if parent_id is not None:
            parent = self._entry(parent_id)
            if parent is not None and parent.role == "assistant":
                return parent
            if parent is not None:
                warnings.append(self._warning(
                    "TC-08", f"parentMessageId {parent_id!r} names a {parent.role} message; the call gets its own "
                    "assistant message", event))
            else:
                new_id = parent_id
        elif new_id in self._by_id:
            # The id this client gives a parentless call's message is the call's; a message holding it
            # already (a user's, say) keeps it: one id, one message.
            new_id = self._free_id(f"{new_id}.assistant")
        entry = _Entry(new_id, "assistant")
        if event.subagent_run_id is not None:
            entry.attrs["subagent_run_id"] = event.subagent_run_id
        self._insert(entry)
        return entry

    def _on_tool_args(self, event: ev.ToolCallArgsEvent) -> Sequence[StreamWarning]:
        found = self._call(event.tool_call_id)
        if found is None:
            return (self._warning("TC-02", f"no tool call {event.tool_call_id!r} to append to", event,
                                  pointer="/toolCallId"),)
        entry, call = found
        call.args.append(event.delta)
        if event.metadata is not None:
            call.metadata = _merge_metadata(call.metadata, event.metadata)
        call.frozen = None
        entry.frozen = None
        self._messages_view = None
        self.version += 1
        return _NO_WARNINGS

    def _close_call(self, call: _Call) -> None:
        call.complete = True
        self._incomplete.discard(call.id)
        if self._replayed_args:
            before = self._replayed_args.pop(call.id, None)
            if before is not None and not call.args:
                call.args = before
        if call.args:
            # Joined once, now that the arguments are complete (a repaired UTF-16 half stays JSON).
            call.args = _whole(call.args, self.warnings, call.id)

    def _on_tool_end(self, event: ev.ToolCallEndEvent) -> Sequence[StreamWarning]:
        found = self._call(event.tool_call_id)
        if found is None:
            return (self._warning("TC-02", f"no tool call {event.tool_call_id!r} to close", event,
                                  pointer="/toolCallId"),)
        entry, call = found
        self._close_call(call)
        if event.metadata is not None:
            call.metadata = _merge_metadata(call.metadata, event.metadata)
            call.frozen = None
            entry.touch()
            self._changed()
        if call.args and not _is_json(call.args[0]):
            # TC-06: the protocol does not validate arguments; keep them raw, but say so (AGUI204).
            return (self._warning("TC-06/AGUI204", f"arguments of tool call {call.id!r} are not JSON (kept as sent)",
                                  event),)
        return _NO_WARNINGS

    def _on_tool_result(self, event: ev.ToolCallResultEvent) -> Sequence[StreamWarning]:
        return self._tool_message(event.message_id, event.tool_call_id, event.content, event.subagent_run_id,
                                  event.metadata, event)

    def _tool_message(self, message_id: str, tool_call_id: str, content: Any, subagent_run_id: str | None = None,
                      metadata: Mapping[str, Any] | None = None, event: Any = None) -> Sequence[StreamWarning]:
        run = self.last_run
        if run is not None:
            run.answered_tool_calls.add(tool_call_id)
        entry = _Entry(message_id, "tool")
        entry.value = content
        entry.attrs["tool_call_id"] = tool_call_id
        if subagent_run_id is not None:
            entry.attrs["subagent_run_id"] = subagent_run_id
        if metadata is not None:
            entry.attrs["metadata"] = _OwnMetadata(metadata)
        existing = self._entry(message_id)
        warnings: Sequence[StreamWarning] = _NO_WARNINGS
        if existing is None:
            self._place_tool_message(entry, tool_call_id)
        elif existing.role == "tool" and existing.attrs.get("tool_call_id") == tool_call_id:
            # One id, one message: a result re-sent under its id replaces it where it stands.
            self._replace(existing, entry)
        else:
            warnings = (self._id_taken(existing, entry, tool_call_id, event),)
        self._changed()
        return warnings

    def _id_taken(self, existing: _Entry, entry: _Entry, tool_call_id: str, event: Any) -> StreamWarning:
        # TC-09: a result mints a new message, so an id that names another message (a user's, the
        # call's own assistant message, another call's result) must not replace it: that would delete
        # the message, and with it perhaps the call being answered.
        taken = entry.id
        if existing.role == "assistant" and existing.calls and any(c.id == taken for c in existing.calls):
            # The assistant message was named after its call by this client (TOOL_CALL_START had no
            # parentMessageId), and the producer names the result after the call too: the name we
            # chose gives way, the producer's stays.
            self._rename(existing, self._free_id(f"{taken}.assistant"))
            self._place_tool_message(entry, tool_call_id)
            return self._warning("TC-09", f"tool result {taken!r} takes the id this client gave the assistant "
                                 f"message of call {tool_call_id!r} (its TOOL_CALL_START named no parent); that "
                                 f"message is now {existing.id!r}", event, pointer="/messageId")
        entry.id = self._free_id(f"{taken}.{tool_call_id}")
        self._place_tool_message(entry, tool_call_id)
        return self._warning("TC-09", f"tool result messageId {taken!r} already names a {existing.role} message; "
                             f"the result is kept as {entry.id!r}", event, pointer="/messageId")

    def _free_id(self, wanted: str) -> str:
        found, n = wanted, 1
        while found in self._by_id:
            n += 1
            found = f"{wanted}.{n}"
        return found

    def _rename(self, entry: _Entry, new_id: str) -> None:
        old_id = entry.id
        del self._by_id[old_id]
        entry.id = new_id
        entry.touch()
        self._by_id[new_id] = entry
        run = self.last_run
        if run is not None:
            run.new_message_ids[:] = [new_id if i == old_id else i for i in run.new_message_ids]
            if not run.terminated:
                _note_removed(run, old_id)
                _note_added(run, new_id)

    def _place_tool_message(self, entry: _Entry, tool_call_id: str) -> None:
        # TC-13: right after the assistant message holding the call, after the tool messages that
        # already follow it; at the end when no message holds the call.
        found = self._call(tool_call_id)
        if found is None:
            self._insert(entry)
            return
        owner = found[0]
        entries = self._entries
        hint = self._tool_hint
        if hint is not None and hint[0] is owner and hint[1] < len(entries) and entries[hint[1]] is hint[2]:
            position = hint[1] + 1  # (after the result placed last for this message: those before are tools)
        else:
            position = self._position(owner) + 1
        while position < len(entries) and _role(entries[position]) == "tool":
            position += 1
        if position == len(entries):
            self._insert(entry)
        else:
            entries.insert(position, entry)
            if self._index(entry):
                self._runs[-1].new_message_ids.append(entry.id)
        self._tool_hint = (owner, position, entry)

    def _answered(self, tool_call_ids: Iterable[str]) -> set[str]:
        """Which of ``tool_call_ids`` a tool message in the thread answers (one pass over the thread)."""
        wanted = set(tool_call_ids)
        found: set[str] = set()
        for held in self._entries:
            if type(held) is dict:
                if held["role"] == "tool" and held["toolCallId"] in wanted:
                    found.add(held["toolCallId"])
            elif held.role == "tool" and held.attrs.get("tool_call_id") in wanted:  # type: ignore[union-attr, operator]
                found.add(held.attrs["tool_call_id"])  # type: ignore[union-attr]
        return found

    # -- reasoning, activities, snapshots ------------------------------------------------------------

    def _on_encrypted_value(self, event: ev.ReasoningEncryptedValueEvent) -> Sequence[StreamWarning]:
        if event.subtype == "tool-call":
            found = self._call(event.entity_id)
            if found is not None:
                found[1].encrypted_value = event.encrypted_value
                found[1].frozen = None
                found[0].touch()
                self._changed()
                return _NO_WARNINGS
        else:
            entry = self._entry(event.entity_id)
            if entry is not None and entry.role != "activity":
                entry.attrs["encrypted_value"] = event.encrypted_value
                entry.touch()
                self._changed()
                return _NO_WARNINGS
        return (self._warning(
            "RS-08", f"no {event.subtype} {event.entity_id!r} for the encrypted value; nothing stored", event),)

    def _on_activity_snapshot(self, event: ev.ActivitySnapshotEvent) -> Sequence[StreamWarning]:
        existing = self._entry(event.message_id)
        replace = event.replace is not False
        target: _Entry | None = None
        if existing is None or (replace and existing.role != "activity"):
            entry = _Entry(event.message_id, "activity")
            entry.attrs["activity_type"] = event.activity_type
            entry.value = _foreign_copy(event.content)
            if event.subagent_run_id is not None:
                entry.attrs["subagent_run_id"] = event.subagent_run_id
            if existing is None:
                self._insert(entry)
            else:
                self._replace(existing, entry)
            target = entry
        elif existing.role == "activity":
            target = existing
            if replace:
                existing.attrs["activity_type"] = event.activity_type
                existing.value = _foreign_copy(event.content)
                if event.subagent_run_id is not None:
                    existing.attrs["subagent_run_id"] = event.subagent_run_id
                else:
                    existing.attrs.pop("subagent_run_id", None)
        if target is not None and event.metadata is not None:
            target.attrs["metadata"] = _merge_metadata(target.attrs.get("metadata"), event.metadata)
        if target is not None:
            target.touch()
            self._changed()
        return _NO_WARNINGS

    def _on_activity_delta(self, event: ev.ActivityDeltaEvent) -> Sequence[StreamWarning]:
        entry = self._entry(event.message_id)
        if entry is None:
            return (self._warning("AC-04", f"no activity {event.message_id!r} to patch; delta dropped", event,
                                  pointer="/messageId"),)
        if entry.role != "activity":
            return (self._warning("AC-07", f"message {event.message_id!r} is not an activity; delta dropped", event,
                                  pointer="/messageId"),)
        if event.metadata is not None:
            entry.attrs["metadata"] = _merge_metadata(entry.attrs.get("metadata"), event.metadata)
        content = entry.value if entry.value is not None else {}
        whole = [i for i, op in enumerate(event.patch) if type(op) is dict and op.get("path") == ""]
        if entry.frozen is not None or whole:
            # A message handed out (or taken from a snapshot event) holds this dict: patch a copy. So
            # does a patch that replaces the whole content, which may leave something not an object.
            content = _copy_json(content)
        try:
            patched = apply_patch(content, event.patch, copy_allowance=self._copy_allowance)
            if type(patched) is not dict:
                # AC-01: an activity's content is an object; anything else could not even be loaded again.
                raise PatchFailed(f"the content would become {codec_describe(patched)}, not an object", whole[-1])
        except PatchFailed as exc:
            entry.touch()
            self._changed()
            return (self._warning("AC-05" if exc.rule == "SP-06" else f"{exc.rule}/AGUI303",
                                  f"activity patch did not apply: {exc}", event, pointer=f"/patch/{exc.op_index}"),)
        entry.value = patched
        entry.attrs["activity_type"] = event.activity_type
        entry.touch()
        self._changed()
        return _NO_WARNINGS

    def patch_state(self, delta: list[Any]) -> bool:
        """Apply a STATE_DELTA's patch without an event object, adopting its values (parsed for this alone).

        Returns ``False``, changing nothing, when the patch does not apply (the caller then folds the
        event the ordinary way, which reports why).
        """
        try:
            self._state = apply_patch(self._state, delta, adopt_values=True, copy_allowance=self._copy_allowance)
        except PatchFailed:
            return False
        self._state_view_valid = False  # _state_changed(), inlined for the commonest event of state streams
        self._state_view = None
        self.version += 1
        return True

    def _on_state_delta(self, event: ev.StateDeltaEvent) -> Sequence[StreamWarning]:
        try:
            self._state = apply_patch(self._state, event.delta, copy_allowance=self._copy_allowance)
            if not self.adopt_payloads:
                self._state_plain = False  # the patch's values came with an event object from anywhere
        except PatchFailed as exc:
            self.state_in_sync = False
            return (self._warning("SP-06/AGUI302" if exc.rule == "SP-06" else f"{exc.rule}/AGUI303",
                                  f"state patch did not apply (state unchanged): {exc}", event,
                                  pointer=f"/delta/{exc.op_index}"),)
        self._state_changed()
        return _NO_WARNINGS

    def _on_messages_snapshot(self, event: ev.MessagesSnapshotEvent) -> Sequence[StreamWarning]:
        warnings: list[StreamWarning] = []
        messages = event.messages
        # The last of a repeated id wins, at the place of the first (as a dict keeps it).
        incoming: dict[str, msg.Message] = {message.id: message for message in messages}
        if len(incoming) != len(messages):
            seen: set[str] = set()
            for i, message in enumerate(messages):
                if message.id in seen:
                    warnings.append(self._warning(
                        "B205", f"snapshot repeats message id {message.id!r}; the last wins", event,
                        pointer=f"/messages/{i}/id"))
                seen.add(message.id)
        roles = {getattr(kind, "ROLE", None) for kind in set(map(type, messages))}
        self._merge_snapshot(incoming, roles, _authoritative_activity_types(event.metadata), _add_entries)
        return warnings

    def plain_messages_snapshot(self, snapshot: PlainSnapshot) -> bool:
        """MESSAGES_SNAPSHOT of messages in the plain shape (``agui_client._plain``), held as the JSON
        they are; ``False``, changing nothing, if an id repeats (the ordinary path warns)."""
        if not snapshot.unique:
            return False
        self._merge_snapshot(snapshot.by_id, snapshot.roles, _UNDECLARED, _add_wire_entries)
        return True

    def _merge_snapshot(self, incoming: Mapping[str, Any], roles: set[Any], authority: Any,
                        add: Callable[[Iterable[Any], list[_Held], dict[str, _Held],
                                       dict[str, tuple[_Entry, _Call] | _Held]], None]) -> None:
        # MS-01..MS-06: ``incoming`` (id -> message, typed or plain JSON, in snapshot order) is the
        # producer's complete list; ``add`` makes entries of the messages the thread did not hold
        # (or holds their JSON: _add_wire_entries).
        has_activity = "activity" in roles
        has_reasoning = "reasoning" in roles

        def keep_local(entry: _Entry) -> bool:
            if entry.role == "activity":
                if authority is _UNDECLARED:
                    return not has_activity
                if authority is None:
                    return False
                return entry.attrs.get("activity_type") not in authority
            return entry.role == "reasoning" and not has_reasoning

        kept: list[_Held] = []
        by_id: dict[str, _Held] = {}
        calls: dict[str, tuple[_Entry, _Call] | _Held] = {}
        lazy = add is _add_wire_entries
        for held in self._entries:
            if type(held) is dict:
                # A message held as JSON (plain: never an activity; no calls if a reasoning message).
                replacement = incoming.get(held["id"])
                if replacement is not None:
                    add((replacement,), kept, by_id, calls)
                elif held["role"] == "reasoning" and not has_reasoning:
                    kept.append(held)
                    by_id[held["id"]] = held
                    lazy = True
                continue
            entry: _Entry = held  # type: ignore[assignment]
            replacement = incoming.get(entry.id)
            if replacement is not None:
                add((replacement,), kept, by_id, calls)
            elif keep_local(entry):
                kept.append(entry)
                by_id[entry.id] = entry
                if entry.calls:
                    for call in entry.calls:
                        calls[call.id] = (entry, call)
        held_ids = by_id.keys()  # (read below before ``add`` grows it with the fresh messages)
        run = self.last_run
        restated = _restated_streamed(run, incoming)
        fresh = [message for key, message in incoming.items() if key not in held_ids] if held_ids \
            else incoming.values()
        if run is not None and not run.terminated:
            # Read from the keys (the ids): a snapshot into a thread that held nothing adds them all.
            # What the snapshot dropped is found by a set difference (the usual answer: nothing).
            if len(by_id) < len(self._by_id):  # (what is kept is the old ids less what was dropped)
                for key in self._by_id.keys() - by_id.keys():
                    _note_removed(run, key)
            fresh_ids = [key for key in incoming if key not in held_ids] if held_ids else list(incoming)
            removed = run.removed_before
            if removed:
                added = [key for key in fresh_ids if key not in removed]
                removed.difference_update(fresh_ids)  # (there at the start, gone, and back)
            else:
                added = fresh_ids
            run.born.update(added)
            run.new_message_ids.extend(added)
        add(fresh, kept, by_id, calls)
        if restated and run is not None:
            self._note_snapshot_calls(run, restated, by_id, calls)
        self._entries = kept
        self._tool_hint = None
        self._by_id = by_id
        self._calls = calls
        self._lazy = lazy
        self._changed()

    def _note_snapshot_calls(self, run: RunRecord, restated: list[str], by_id: dict[str, _Held],
                             calls: Mapping[str, Any]) -> None:
        # TC-17 with MS-01: a snapshot that restates a message this run is streaming may hold calls
        # the stream never started (ag-ui-langgraph streams the first of several parallel calls and
        # names the rest only in its closing snapshot). They were made in this run, so they count as
        # started; calls of history the snapshot restates never do, so no old call becomes pending.
        known = self._calls
        for message_id in restated:
            held = by_id.get(message_id)
            if held is None:
                continue
            if type(held) is dict:
                ids = [call["id"] for call in held.get("toolCalls", ())]
            else:
                ids = [call.id for call in held.calls or ()]  # type: ignore[union-attr]
            for call_id in ids:
                if call_id not in known and call_id in calls:
                    run.started_tool_calls[call_id] = None
                    run.snapshot_tool_calls.add(call_id)

    # -- runs ----------------------------------------------------------------------------------------

    def _on_run_started(self, event: ev.RunStartedEvent) -> None:
        if self.thread_id is None:
            self.thread_id = event.thread_id
        self._copy_allowance[0] = DEFAULT_RUN_COPY_ALLOWANCE
        run = RunRecord(run_id=event.run_id, thread_id=event.thread_id, parent_run_id=event.parent_run_id,
                        protocol_version=event.protocol_version)
        self._runs.append(run)
        if event.input is not None and event.input.messages:
            # LC-17: the echoed input is history; only ids not already held are added.
            for message in event.input.messages:
                if message.id not in self._by_id:
                    self._insert(_Entry.of(message))
                    run.echoed.add(message.id)
            self._changed()

    def _on_run_finished(self, event: ev.RunFinishedEvent) -> Sequence[StreamWarning]:
        run = self.last_run
        if run is None:
            return _NO_WARNINGS
        run.terminated = True
        if event.usage is not None:
            run.usage = event.usage
            self._usage[run.run_id] = event.usage
        outcome = event.outcome
        match outcome:
            case rn.RunFinishedInterruptOutcome():
                run.outcome = "interrupt"
                run.interrupts = outcome.interrupts
                self._open_interrupts = outcome.interrupts
                self.interrupted_run_id = run.run_id
                self._link_suspended(outcome.interrupts)
            case rn.RunFinishedCancelledOutcome():
                run.outcome = "cancelled"
                self._open_interrupts = ()
                self.interrupted_run_id = None
            case rn.RunFinishedSuccessOutcome() | None:
                run.outcome = "success"
                run.result = event.result
                run.pending_tool_call_ids = self._pending_for(run, outcome)
                self._pending_tool_calls = run.pending_tool_call_ids
                self._open_interrupts = ()
                self.interrupted_run_id = None
        return _NO_WARNINGS

    def _pending_for(self, run: RunRecord, outcome: rn.RunFinishedSuccessOutcome | None) -> tuple[str, ...]:
        named = outcome.pending_tool_call_ids if outcome is not None else None
        if named:
            # TC-18: a non-empty list is the list (duplicates dropped, order kept).
            return tuple(dict.fromkeys(named))
        # TC-17: derived from the stream; a call cut mid-arguments is never offered (B075).
        # (a call a snapshot named may have its result in a snapshot too: asked only of those)
        answered_here, cut = run.answered_tool_calls, self._incomplete
        unanswered = [c for c in run.started_tool_calls if c not in answered_here and c not in cut]
        named_by_snapshot = [c for c in unanswered if c in run.snapshot_tool_calls]
        if not named_by_snapshot:
            return tuple(unanswered)
        answered = self._answered(named_by_snapshot)
        return tuple(c for c in unanswered if c not in answered)

    def _link_suspended(self, interrupts: Sequence[rn.Interrupt]) -> None:
        for interrupt in interrupts:
            if interrupt.subagent_run_id is None:
                continue
            record = self._subagents.get(interrupt.subagent_run_id)
            if record is not None and interrupt.id not in record.interrupt_ids:
                self._subagents[record.subagent_run_id] = attrs.evolve(
                    record, interrupt_ids=(*record.interrupt_ids, interrupt.id))

    def open_rejected_run(self, run_id: str | None) -> None:
        """Record a run the producer refused before starting it (a response opening with RUN_ERROR).

        LC-02 / B281: the RUN_ERROR that follows is that run's failure, not a late error of the thread's
        previous run; what the thread holds open (interrupts, pending calls) stays as it was.
        """
        self._runs.append(RunRecord(run_id=run_id or "", thread_id=self.thread_id or ""))

    def _on_run_error(self, event: ev.RunErrorEvent) -> Sequence[StreamWarning]:
        run = self.last_run
        if run is None:
            # LC-02: a stream that opens with RUN_ERROR is the producer refusing the input.
            self.open_rejected_run(None)
            run = self._runs[-1]
        usage = event.usage or ()
        if run.terminated and run.outcome != "error":
            # CL-02/CL-04: the one late error is surfaced; it neither reopens nor clears anything.
            run.late_error = RunErrorInfo(message=event.message, code=event.code, late=True, usage=usage)
            if not usage:
                return _NO_WARNINGS
            # B290: whether this repeats the finished run's usage or adds to it is unspecified; both are
            # kept as reported and neither is silently added to the other.
            return (self._warning(
                "TU-07/B290", "the late RUN_ERROR reports usage of its own: kept on late_error.usage, not added to "
                "the run's usage or the thread's totals (its scope is unspecified)", event, pointer="/usage"),)
        run.terminated = True
        run.outcome = "error"
        run.error = RunErrorInfo(message=event.message, code=event.code, usage=usage)
        if event.usage is not None:
            run.usage = event.usage
            self._usage[run.run_id] = event.usage
        return _NO_WARNINGS

    def _on_step_finished(self, event: ev.StepFinishedEvent) -> None:
        run = self.last_run
        if run is None:
            return
        # The latest open step of that name and owner (an index, not a walk back past the finished ones).
        key = (event.subagent_run_id, event.step_name)
        started = run.open_steps.get(key)
        if started:
            i = started.pop()
            if not started:
                del run.open_steps[key]
            run.steps[i] = attrs.evolve(run.steps[i], finished=True)

    def _on_subagent_started(self, event: ev.SubagentStartedEvent) -> None:
        run = self.last_run
        self._subagents[event.subagent_run_id] = SubagentRecord(
            subagent_run_id=event.subagent_run_id, name=event.name, run_id=run.run_id if run else None,
            description=event.description, parent_subagent_run_id=event.parent_subagent_run_id,
            parent_tool_call_id=event.parent_tool_call_id, parent_message_id=event.parent_message_id)

    def _on_subagent_finished(self, event: ev.SubagentFinishedEvent) -> None:
        record = self._subagents.get(event.subagent_run_id)
        if record is None:
            return
        if isinstance(event.outcome, rn.SubagentFinishedSuspendedOutcome):
            ids = tuple(event.outcome.interrupt_ids or ())
            self._subagents[event.subagent_run_id] = attrs.evolve(
                record, status="suspended", result=event.result,
                interrupt_ids=tuple(dict.fromkeys((*record.interrupt_ids, *ids))))
        else:
            self._subagents[event.subagent_run_id] = attrs.evolve(record, status="success", result=event.result)

    # -- end of stream ---------------------------------------------------------------------------------

    def mark_incomplete(self, message_ids: Iterable[str] = (), tool_call_ids: Iterable[str] = ()) -> None:
        """Flag messages and tool calls whose stream was cut (they are kept, never silently closed)."""
        # What was streamed is joined now, as it stands (a cut message is whole as far as it goes), so
        # that its repairs are reported with the run that cut it.
        for message_id in message_ids:
            entry = self._entry(message_id)
            if entry is not None:
                entry.complete = False
                self._incomplete.add(message_id)
                if entry.text is not None:
                    entry.text = _whole(entry.text, self.warnings, entry.id)
        for call_id in tool_call_ids:
            found = self._call(call_id)
            if found is not None:
                call = found[1]
                call.complete = False
                self._incomplete.add(call_id)
                if call.args:
                    call.args = _whole(call.args, self.warnings, call_id)

    def _warning(self, code: str, message: str, event: Any, *, pointer: str | None = None) -> StreamWarning:
        return StreamWarning(code=code, message=message, event_type=getattr(event, "TYPE", None), pointer=pointer)

    # -- wire form ---------------------------------------------------------------------------------------

    def to_wire(self) -> dict[str, Any]:
        """The thread in wire form: ``{"messages": [...], "state": ..., "openInterrupts": [...]}``."""
        return {
            "messages": encode(self.messages),
            "state": self.state,
            "openInterrupts": encode(self._open_interrupts),
        }

    def dump(self, *, share_state: bool = False) -> dict[str, Any]:
        """Everything a store needs to bring the thread back (``ThreadState.load`` reads it).

        Args:
            share_state: put the thread's own state document in the result instead of a copy, for a
                caller that serialises the result at once and never mutates it (the thread's save
                does): a large state is then not copied once more per save, and the messages (and a
                state the thread parsed or validated itself, as a shallow top-level copy) come marked
                as already checked to be plain JSON, which the stores do not walk again. The message
                dicts are the thread's own (it keeps them for the next save), never copies.
        """
        return {
            "format": STATE_FORMAT_VERSION,
            "threadId": self.thread_id,
            # Built directly, and marked as checked plain JSON for a save that serialises at once.
            "messages": self._wire_messages(share_state),
            "state": self._shared_state() if share_state else _copy_json(self._state),
            "stateInSync": self.state_in_sync,
            "openInterrupts": encode(self._open_interrupts),
            "interruptedRunId": self.interrupted_run_id,
            "pendingToolCallIds": list(self.pending_tool_call_ids),
            "usageByRun": {run_id: encode(entries) for run_id, entries in self._usage.items()},
            "lastOutcome": self.last_run.outcome if self.last_run else None,
            "lastRunId": self.last_run.run_id if self.last_run else None,
            "subagents": {k: _dump_subagent(v) for k, v in self._subagents.items()},
        }

    def _shared_state(self) -> Any:
        # A state known to be plain JSON goes out marked as checked (a shallow copy of its top level),
        # so a store does not walk a large document again at every save.
        state = self._state
        if self._state_plain:
            if type(state) is dict:
                return PlainDict(state)
            if type(state) is list:
                return PlainList(state)
        return state

    def _wire_messages(self, checked: bool) -> list[Any]:
        # A message held as plain JSON (a snapshot's) goes out as it is for a save that writes it at
        # once, else as a copy; a message still being streamed into an entry is encoded from the
        # entry; the others (frozen already: messages read before) go through the wire encoders.
        warn = self.warnings
        out: list[Any] = []
        append = out.append
        frozen: list[int] = []  # where typed messages wait for the wire encoders
        for entry in self._entries:
            if type(entry) is dict:
                append(entry if checked else _copy_json(entry))
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
                append(held if checked else _copy_json(held))
                continue
            else:
                cached = entry.wire_of  # type: ignore[union-attr]
                if cached is not None and cached[0] is held:  # typed from this JSON, unchanged since
                    append(cached[1] if checked else _copy_json(cached[1]))
                    continue
            frozen.append(len(out))
            append(held)
        if not frozen:
            return PlainList(out) if checked else out
        rest = encode_messages([out[i] for i in frozen], checked=checked)
        for i, encoded in zip(frozen, rest, strict=True):
            out[i] = encoded
        return PlainList(out) if checked and type(rest) is PlainList else out

    @classmethod
    def load(cls, data: Mapping[str, Any]) -> ThreadState:
        """Rebuild a thread from :meth:`dump` output (``dump(share_state=True)``'s included).

        The thread holds copies: changing ``data`` afterwards does not change it.

        Raises:
            ValueError: the data was written by a newer, unknown format, or its state is not JSON.
            DecodeError: a message is malformed.
        """
        return cls._load(data, adopt=False)

    @classmethod
    def _load(cls, data: Mapping[str, Any], *, adopt: bool) -> ThreadState:
        # ``adopt``: the data is a store's freshly parsed record, nobody else's, so the thread may
        # hold its messages and state as they are instead of copies.
        version = data.get("format", 1)
        if not isinstance(version, int) or version > STATE_FORMAT_VERSION:
            raise ValueError(f"thread state format {version!r} is newer than this release reads")
        state = data.get("state")
        # (dump(share_state=True)'s state is the dumping thread's own, marked: always copied)
        adopt_state = adopt and type(state) not in (PlainDict, PlainList)
        thread = cls(state=None if adopt_state else state, thread_id=data.get("threadId"))
        if adopt_state:
            thread._state = _adopted_json(state)
        wire = data.get("messages", [])
        if type(wire) is PlainList:
            # dump(share_state=True)'s list holds the dicts its thread holds; those are never changed
            # in place, so sharing them is safe, but the list itself is the codec's exact type.
            wire = list(wire)
        # A store's record of plain messages is held as its JSON, typed when read, as a snapshot is:
        # loading a long thread then costs a check per message instead of building each. (Data of
        # the caller's is decoded: typed messages share its strings, where a copy would copy them.)
        snapshot = PlainSnapshot.of(wire) if adopt else None
        if snapshot is None or not thread.plain_messages_snapshot(snapshot):
            for message in decode(wire, tuple[msg.Message, ...]):
                thread._insert(_Entry.of(message))
        thread.version = 0  # (however the messages went in: a loaded thread has not changed yet)
        thread.state_in_sync = bool(data.get("stateInSync", True))
        thread._open_interrupts = decode(data.get("openInterrupts", []), tuple[rn.Interrupt, ...])
        thread.interrupted_run_id = data.get("interruptedRunId")
        thread._pending_tool_calls = tuple(data.get("pendingToolCallIds", ()))
        thread._usage = {k: decode(v, tuple[rn.TokenUsage, ...]) for k, v in data.get("usageByRun", {}).items()}
        for key, value in data.get("subagents", {}).items():
            thread._subagents[key] = _load_subagent(value)
        last_outcome = data.get("lastOutcome")
        last_run = data.get("lastRunId")
        if last_run is not None:
            run = RunRecord(run_id=last_run, thread_id=thread.thread_id or "", outcome=last_outcome, terminated=True)
            run.interrupts = thread._open_interrupts if last_outcome == "interrupt" else ()
            thread._runs.append(run)
        return thread

    def copy(self) -> ThreadState:
        """An independent copy (through the dump form)."""
        return ThreadState.load(self.dump())


# The events most streams are made of, dispatched without walking the match below.
_HOT: dict[type, Any] = {
    ev.TextMessageContentEvent: ThreadState._on_text_content,
    ev.ReasoningMessageContentEvent: ThreadState._on_text_content,
    ev.ToolCallArgsEvent: ThreadState._on_tool_args,
    ev.StateDeltaEvent: ThreadState._on_state_delta,
    ev.TextMessageStartEvent: lambda self, event: self._on_message_start(event.message_id, event.role or "assistant",
                                                                         event),
    ev.TextMessageEndEvent: ThreadState._on_message_end,
    ev.ToolCallStartEvent: ThreadState._on_tool_start,
    ev.ToolCallEndEvent: ThreadState._on_tool_end,
    ev.ToolCallResultEvent: ThreadState._on_tool_result,
}

_UNDECLARED: Any = object()
#: What the thread's list and index hold per message (see ``ThreadState.__init__``).
_Held = _Entry | dict[str, Any]


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


def _dump_subagent(record: SubagentRecord) -> dict[str, Any]:
    data = attrs.asdict(record, recurse=True)
    if data.get("error") is not None:
        # SUBAGENT_ERROR reports no usage: the stored form stays what it was before errors carried any.
        del data["error"]["usage"]
    return data


def _load_subagent(data: Mapping[str, Any]) -> SubagentRecord:
    values = dict(data)
    error = values.get("error")
    if error is not None:
        values["error"] = RunErrorInfo(**error)
    values["interrupt_ids"] = tuple(values.get("interrupt_ids", ()))
    return SubagentRecord(**values)


def _note_added(run: RunRecord, message_id: str) -> bool:
    """An id the thread did not hold was added while ``run`` runs; ``True`` when the run did not find it."""
    removed = run.removed_before
    if message_id in removed:
        removed.discard(message_id)  # (there at the start, gone, and back: not the run's)
        return False
    run.born.add(message_id)
    return True


def _note_removed(run: RunRecord, message_id: str) -> None:
    """An id left the thread while ``run`` runs."""
    if message_id in run.born:
        run.born.discard(message_id)
    else:
        run.removed_before.add(message_id)


def _is_json(text: str) -> bool:
    try:
        if _orjson is not None:
            _orjson.loads(text)
        else:
            json.loads(text)
    except ValueError:
        try:
            json.loads(text)  # orjson refuses lone surrogates that JSON allows
        except (ValueError, RecursionError):  # (arguments nested deeper than a parser goes: not usable JSON)
            return False
    return True


def parsed_arguments(call: msg.ToolCall) -> JSON:
    """A tool call's arguments parsed as JSON, or ``None`` when they are not JSON (kept raw in the call)."""
    try:
        return parse_json(call.function.arguments, check_duplicates=False) if call.function.arguments else {}
    except ProtocolError:  # parse_json reports every way text is not (acceptable) JSON as one
        return None


def sum_usage(entries: Iterable[rn.TokenUsage]) -> rn.TokenUsage:
    """Sum token counts across entries; a field no entry reported stays ``None`` (TU-02, TU-05)."""
    totals: dict[str, int | None] = {name: None for name in (
        "input_tokens", "output_tokens", "total_tokens", "reasoning_tokens", "cached_input_tokens",
        "cache_write_input_tokens")}
    for usage in entries:
        for name in totals:
            value = getattr(usage, name)
            if value is not None:
                totals[name] = (totals[name] or 0) + value
    return rn.TokenUsage(
        input_tokens=totals["input_tokens"], output_tokens=totals["output_tokens"], total_tokens=totals["total_tokens"],
        reasoning_tokens=totals["reasoning_tokens"], cached_input_tokens=totals["cached_input_tokens"],
        cache_write_input_tokens=totals["cache_write_input_tokens"])
