"""One message while it may still change, and one tool call: the fold's mutable internals.

A message being streamed is an :class:`Entry` holding its text as a list of fragments (joined once,
when the message ends); a tool call is a :class:`Call` holding its arguments the same way. Whole
messages (a snapshot's, the application's, a store's) start *lazy*: an entry made from a typed message
reads its other slots from the message when first asked, and a message kept as its plain JSON has no
entry at all until one is needed. Whatever is handed out is built from an entry once (``freeze``) and
cached until the entry changes, so a caller's copy never changes under it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from ..._inert import quoted_name
from ...errors import StreamWarning
from ...wire import codec
from ...wire.types import messages as msg
from ...wire.values import has_surrogate, plain_json

__all__ = [
    "Call",
    "Entry",
    "LazyEntry",
    "Held",
    "OwnMetadata",
    "merge_metadata",
    "shown",
    "text_from",
    "whole",
    "role_of",
    "wire_entry",
    "type_held",
    "new_entry",
    "ROLE_CLASSES",
    "settle",
]



class Call:
    __slots__ = ("id", "name", "args", "metadata", "encrypted_value", "complete", "streamed", "frozen", "judged")

    def __init__(self, call_id: str, name: str, arguments: str = "", metadata: dict[str, Any] | None = None,
                 encrypted_value: str | None = None, complete: bool = True) -> None:
        self.id = call_id
        self.name = name
        self.args: list[str] = [arguments] if arguments else []
        self.metadata = metadata
        self.encrypted_value = encrypted_value
        self.complete = complete
        # Whether arguments were streamed since they were last judged whole (at the call's END, or, for
        # a call restarted in its run, TC-05, when the run ends). Until then a read repairs a copy of
        # them (``read_parts``), never them: a lone UTF-16 half may be paired by a later delta.
        self.streamed = False
        self.frozen: msg.ToolCall | None = None
        # The arguments' text last judged whole (see ``judged_whole``): held as one part, this very
        # string needs no second look for UTF-16 halves.
        self.judged: str | None = None

    @classmethod
    def of(cls, call: msg.ToolCall) -> Call:
        made = cls(call.id, call.function.name, call.function.arguments, call.metadata, call.encrypted_value)
        made.frozen = call
        return made

    @classmethod
    def of_wire(cls, call: dict[str, Any]) -> Call:
        """A tool call of a message held as plain JSON (``agui_client._plain``)."""
        function = call["function"]
        return cls(call["id"], function["name"], function["arguments"], call.get("metadata"),
                   call.get("encryptedValue"))

    def wire(self, warn: list[StreamWarning] | None) -> dict[str, Any] | None:
        """``encode(self.freeze(warn))`` built directly, or ``None`` when the metadata is not plain JSON."""
        metadata = shown(self.metadata)
        if metadata is not None and not plain_json(metadata):
            return None
        args = self.args
        arguments = ""
        if args:
            arguments = args[0]
            if len(args) != 1 or not arguments.isascii() and arguments is not self.judged:
                self.args, arguments = read_parts(args, warn, self.id, streamed=self.streamed)
        out: dict[str, Any] = {"id": self.id, "type": "function",
                               "function": {"name": self.name, "arguments": arguments}}
        if self.encrypted_value is not None:
            out["encryptedValue"] = self.encrypted_value
        if metadata is not None:
            out["metadata"] = metadata
        return out

    def freeze(self, warn: list[StreamWarning] | None) -> msg.ToolCall:
        if self.frozen is None:
            arguments = ""
            args = self.args
            if args:
                arguments = args[0]
                if len(args) != 1 or not arguments.isascii() and arguments is not self.judged:
                    self.args, arguments = read_parts(args, warn, self.id, streamed=self.streamed)
            self.frozen = _new_tool_call(
                id=self.id,
                function=_new_function_call(name=self.name, arguments=arguments),
                encrypted_value=self.encrypted_value,
                metadata=shown(self.metadata),
            )
        return self.frozen

    def judged_whole(self, warn: list[StreamWarning] | None) -> None:
        """The arguments :func:`whole` now (their stream ended or was cut), and that verdict remembered.

        What a save or a read of the call builds later looks at the arguments again only if they are
        not this very string: the verdict is the text's, and a string never changes, so whatever
        replaces or extends the arguments afterwards (a delta, a call started again) is judged anew.
        """
        if self.args:
            self.args = whole(self.args, warn, self.id)
            self.judged = self.args[0]


class Entry:
    """One message while it may still change.

    An entry made from a whole message (a snapshot's, the application's) starts *lazy* (a
    :class:`LazyEntry`): only its id, role, tool calls and the message itself are set, and ``text``,
    ``value`` and ``attrs`` are read from the message the first time anything asks for them
    (``__getattr__`` runs only for an unset slot). A snapshot of thousands of messages then costs one
    small object per message, and the fold's hot paths, which read set slots, pay nothing for it.

    A snapshot folded from its JSON (``plain_messages_snapshot``) goes further: the thread holds each
    message's plain JSON (``agui_client._plain``) with no entry at all until one is needed
    (``ThreadState._materialize``); the entry then made has the JSON in ``frozen`` and ``source``, and
    the typed message is built when first read (``freeze``); a save writes the JSON as it is. Whatever
    changes an entry also clears ``frozen``, so a dict there is always the message as it stands.
    """

    __slots__ = ("id", "role", "text", "value", "calls", "attrs", "frozen", "complete", "source", "wire_of",
                 "owned", "judged")

    def __init__(self, message_id: str, role: str) -> None:
        self.id = message_id
        self.role = role
        self.text: list[str] | None = None  # streamed content fragments (assistant/system/… text, reasoning)
        self.value: Any = None  # non-streamed content (user parts, tool content, activity content)
        self.calls: list[Call] | None = None
        self.attrs: dict[str, Any] = {}  # the message's other attributes (name, metadata, toolCallId …)
        self.frozen: msg.Message | dict[str, Any] | None = None  # (plain JSON: see the class docstring)
        self.complete = True
        self.source: msg.Message | dict[str, Any] | None = None  # what a lazy entry reads its other slots from
        # (typed message, the plain JSON it was decoded from): a save writes the JSON while ``frozen`` is
        # still that message (anything that changes the entry replaces ``frozen``, so no one clears it).
        self.wire_of: tuple[msg.Message, dict[str, Any]] | None = None
        # Whether ``value`` (an activity's content) is the fold's own: made by it, and handed out to no one
        # since. Only then may a patch change it in place (a message handed out holds the very dict).
        self.owned = False
        # The text last judged whole (see ``judged_whole``): held as one part, this very string needs no
        # second look for UTF-16 halves.
        self.judged: str | None = None

    @classmethod
    def of(cls, message: msg.Message) -> Entry:
        entry = new_entry(LazyEntry)
        entry.id = message.id
        entry.role = message.ROLE
        entry.frozen = entry.source = message
        entry.complete = True
        entry.wire_of = None
        calls: tuple[msg.ToolCall, ...] | None = getattr(message, "tool_calls", None)
        entry.calls = None if calls is None else [Call.of(c) for c in calls]
        return entry

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
            if not text:
                # (no fragment yet: left as it is, so a message re-opened and never written into still
                # keeps no content when its run ends, TX-05, whether or not it was saved meanwhile)
                out = {"id": self.id, "role": role, "content": ""}
            else:
                content = text[0]
                # (one ASCII part is whole already, as is the one part judged whole when it ended)
                if len(text) != 1 or not content.isascii() and content is not self.judged:
                    self.text, content = read_parts(text, warn, self.id, streamed=not self.complete)
                out = {"id": self.id, "role": role, "content": content}
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
                value = shown(value)
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
            kwargs["metadata"] = shown(kwargs["metadata"])
        text = self.text
        if text is not None:
            if not text:
                kwargs["content"] = ""  # (left empty, as in wire())
            elif len(text) == 1 and (text[0].isascii() or text[0] is self.judged):
                kwargs["content"] = text[0]
            else:
                self.text, kwargs["content"] = read_parts(text, warn, self.id, streamed=not self.complete)
        elif self.role != "assistant":
            kwargs["content"] = self.value
            self.owned = False  # (the message handed out holds it)
        if self.calls is not None:
            kwargs["tool_calls"] = tuple(c.freeze(warn) for c in self.calls)
        if self.role == "activity" and kwargs.get("content") is None:
            kwargs["content"] = {}
        built: msg.Message = _ROLE_BUILDERS[self.role](id=self.id, **kwargs)
        self.frozen = built
        return built

    def judged_whole(self, warn: list[StreamWarning] | None) -> list[str]:
        """The text :func:`whole` now (the message ended or was cut), that verdict remembered as for
        :meth:`Call.judged_whole`; returns the text."""
        text = self.text = whole(self.text, warn, self.id)  # type: ignore[arg-type]
        self.judged = text[0] if text else None
        return text


class LazyEntry(Entry):
    """An entry made from a whole message, whose other slots are read from it when first asked for.

    A class of its own because a class with ``__getattr__`` has every attribute read on its objects take
    CPython's general lookup (the interpreter specialises no read on such a class): 27 ns a read against
    9 on this machine. The entries a stream writes into are made whole (``Entry(...)``), and a chat
    stream's delta reads two of their slots: some 0.04-0.08 us an event of the fold's 0.9.
    """

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        # Only reached for a slot never set: the other slots of a lazy entry, read from its message;
        # an entry held as JSON also makes its tool calls (and says it is complete) when first asked.
        if name in _LAZY_SLOTS and self.source is not None:
            self._thaw(self.source)
            return object.__getattribute__(self, name)
        if name in _WIRE_SLOTS and self.source is not None:  # (never set for a typed entry: its own)
            # Both are made when either is first asked for; the other, if set since, is kept (a message
            # re-opened, TX-05, said it is not complete: its calls asked for later keep that).
            source = self.source
            if name == "calls" or not _is_set(self, "calls"):
                if type(source) is dict:
                    calls = source.get("toolCalls")
                    self.calls = None if calls is None else [Call.of_wire(call) for call in calls]
                else:  # typed since (type_held), its calls not asked for before
                    typed_calls: tuple[msg.ToolCall, ...] | None = getattr(source, "tool_calls", None)
                    self.calls = None if typed_calls is None else [Call.of(call) for call in typed_calls]
            if name == "complete" or not _is_set(self, "complete"):
                self.complete = True
            return object.__getattribute__(self, name)
        if name == "owned":
            return False  # (never set: the value came with a message, held by whoever made it)
        if name == "judged":
            return None  # (never set: the text came with a message, never judged by the fold)
        raise AttributeError(name)


def text_from(entry: Entry) -> list[str]:
    """The fragments a first delta extends: the message's content when a snapshot gave it as a string
    (one that made the message a tool or user message, whose content is not streamed), else none (TX-01)."""
    value = entry.value
    if type(value) is str:
        entry.value = None
        return [value]
    return []




def role_of(held: Held) -> str:
    return held["role"] if type(held) is dict else held.role  # type: ignore[union-attr]


def wire_entry(message: dict[str, Any]) -> Entry:
    """The entry of a message held as plain JSON: id, role and the JSON; the rest made when first read."""
    entry = new_entry(LazyEntry)
    entry.id = message["id"]
    entry.role = message["role"]
    entry.frozen = entry.source = message
    entry.wire_of = None
    return entry


def _decode_message(wire: dict[str, Any]) -> msg.Message:
    return codec.decode(wire, msg.Message)  # type: ignore[arg-type]


def type_held(entries: Iterable[Entry]) -> None:
    """Type the messages of these entries still held as plain JSON, in one decode of them all (a decode
    per message costs several times as much): what reading a thread's messages does first."""
    waiting = [entry for entry in entries if type(entry.frozen) is dict]
    if len(waiting) < 2:
        return
    typed: tuple[msg.Message, ...] = codec.decode([entry.frozen for entry in waiting], tuple[msg.Message, ...])
    for entry, message in zip(waiting, typed, strict=True):
        entry.wire_of = (message, entry.frozen)  # type: ignore[assignment]
        entry.frozen = entry.source = message


# Per message class, the attributes an entry keeps besides id, content and tool calls.
_OTHER_FIELDS: dict[type, tuple[str, ...]] = {}
_LAZY_SLOTS = frozenset({"text", "value", "attrs"})
_WIRE_SLOTS = frozenset({"calls", "complete"})


def _is_set(entry: Entry, name: str) -> bool:
    """Whether the slot ``name`` of ``entry`` is set (asked without reaching ``__getattr__``)."""
    try:
        object.__getattribute__(entry, name)
    except AttributeError:
        return False
    return True
new_entry = object.__new__

ROLE_CLASSES: dict[str, Any] = {
    c.ROLE: c
    for c in (msg.DeveloperMessage, msg.SystemMessage, msg.AssistantMessage, msg.UserMessage, msg.ToolMessage,
              msg.ActivityMessage, msg.ReasoningMessage)
}


_ROLE_BUILDERS: dict[str, Any] = {role: codec.constructor(cls) for role, cls in ROLE_CLASSES.items()}
# Per role whose streamed entries ``Entry.wire`` encodes: the other fields' Python name -> wire name.
_WIRE_FIELDS: dict[str, dict[str, str]] = {
    cls.ROLE: {a.name: codec.wire_name(a) for a in attrs.fields(cls) if a.name not in ("id", "content", "tool_calls")}
    for cls in ROLE_CLASSES.values() if cls is not msg.ActivityMessage
}
_new_tool_call = codec.constructor(msg.ToolCall)
_new_function_call = codec.constructor(msg.FunctionCall)


def whole(parts: list[str], warn: list[StreamWarning] | None, entity: str) -> list[str]:
    """Streamed parts as one string, joined when there are several or when they hold a UTF-16 half.

    Called when a message or a tool call's arguments end (or their stream is cut), so that a repair's
    warning belongs to the run that streamed the text, not to whoever reads the thread next.
    """
    if len(parts) == 1 and not has_surrogate(parts[0]):
        return parts
    return [_join_text(parts, warn, entity)] if parts else parts


def read_parts(parts: list[str], warn: list[StreamWarning] | None, entity: str, *,
               streamed: bool) -> tuple[list[str], str]:
    """Streamed ``parts`` (at least one) as one text for a reader, and the parts to keep in their place.

    Once the text is whole (its message or call ended), it is :func:`whole`: UTF-16 pairs joined and
    halves still alone repaired for good, with a warning. While it is ``streamed``, a half alone may be
    the first of a pair whose second comes in a later delta (for a call restarted in its run, TC-05,
    after its next START): the parts are kept joined but not repaired, and the reader gets a repaired
    copy, with no warning (the end repairs and reports what is still alone then). Reading the thread
    while a run streams (a chat showing each delta) must not change what the run folds.
    """
    if not streamed:
        kept = whole(parts, warn, entity)
        return kept, kept[0]
    if len(parts) == 1:
        text = parts[0]
    else:
        text = "".join(parts)
        parts = [text]
    return parts, _join_text(parts, None, entity) if has_surrogate(text) else text


def settle(parts: list[str], settled: int, warn: list[StreamWarning] | None, entity: str, *,
           replaced: bool) -> list[str]:
    """:func:`whole` for parts whose first ``settled`` are whole already (joined and repaired when the
    message last ended): only the parts after them are joined and repaired.

    A message re-opened (TX-05) and ended again would otherwise copy and scan all of its text at each
    end. The parts are kept few: each more than twice as long as the next, a shorter one joined to the
    one before it, so each character is copied a logarithmic number of times. ``replaced``: the whole
    parts hold a U+FFFD, which keeps a repair from being told apart, as for :func:`whole` of the text.
    """
    if len(parts) <= settled:
        return parts
    out = parts[:settled]
    out.append(_join_text(parts[settled:], None if replaced else warn, entity))
    while len(out) > 1 and len(out[-2]) <= 2 * len(out[-1]):
        last = out.pop()
        out[-1] += last
    return out


def _join_text(parts: list[str], warn: list[StreamWarning] | None, entity: str) -> str:
    text = "".join(parts)
    if not has_surrogate(text):
        return text
    # UTF-16 producers split a character into two deltas, one half each: rejoin the pairs, and
    # replace halves still unpaired so the thread can always be encoded and sent again.
    fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if has_surrogate(fixed) or "\ufffd" in fixed and "\ufffd" not in text:
        fixed = fixed.encode("utf-8", "replace").decode("utf-8")
        if warn is not None:
            warn.append(StreamWarning(code="UTF16-SURROGATE",
                                      message=f"unpaired UTF-16 surrogate in {quoted_name(entity)} replaced by U+FFFD"))
    return fixed


class OwnMetadata(dict[str, Any]):
    """Metadata the fold made and no one else holds: merged in place. Whatever shows it (a typed
    message, a wire dict) gets a plain copy (:func:`_shown`), so later merges never change what was shown."""


def merge_metadata(current: dict[str, Any] | None, update: dict[str, Any] | None) -> dict[str, Any] | None:
    # TX-11: key by key, last write wins, never recursively; the event keeps its own dict. In place once
    # the fold owns the dict: a copy per event would cost the stream's square with ever new keys.
    if update is None:
        return current
    if type(current) is OwnMetadata:
        current.update(update)
        return current
    merged = OwnMetadata() if current is None else OwnMetadata(current)
    merged.update(update)
    return merged


def shown(metadata: Any) -> Any:
    """``metadata`` as a message or a wire dict may hold it (see :class:`OwnMetadata`)."""
    return dict(metadata) if type(metadata) is OwnMetadata else metadata


#: What the log's list and index hold per message: its entry, or its plain JSON until one is needed.
Held = Entry | dict[str, Any]
