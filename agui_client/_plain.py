"""Messages in the plain wire shape: JSON the fold may hold as it is, building typed messages on demand.

A ``MESSAGES_SNAPSHOT`` restates the whole conversation, often thousands of messages, and a fold that
nobody reads events from (``replay()``, ``Thread.run()``) need not build a typed message for each: it
keeps the parsed JSON of every message in the *plain* shape, and a message becomes typed when read.

The plain shape is stricter than the codec, so that a plain message is one the codec decodes without an
error or a warning and encodes back to an equal object: every key known and of its wire type, no
``null``, tags exact, required keys present, no activity message (their authority rules go through the
typed path). Anything else is not plain, and the caller takes the ordinary path, which alone decides
errors and warnings. ``tests/test_plain.py`` checks that promise against the codec.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import repeat
from operator import itemgetter
from typing import Any

__all__ = ["PLAIN_ROLES", "PlainSnapshot", "plain_messages"]

_COMMON = frozenset({"id", "role", "content", "encryptedValue", "metadata", "subagentRunId"})
#: The keys a plain message of each role may carry.
_KEYS: dict[str, frozenset[str]] = {
    "system": _COMMON | {"name"},
    "developer": _COMMON | {"name"},
    "user": _COMMON | {"name"},
    "assistant": _COMMON | {"name", "toolCalls"},
    "tool": _COMMON | {"toolCallId", "error"},
    "reasoning": _COMMON,
}
PLAIN_ROLES = frozenset(_KEYS)
#: Roles whose content may be a list of parts (else it is a string; the assistant's may be absent).
_PARTS_ROLES = frozenset({"user", "tool"})
#: Keys whose value is a string wherever they appear (ids, names and the other optional strings).
_STRINGS = frozenset({"id", "name", "encryptedValue", "subagentRunId", "toolCallId", "error"})
_CALL_KEYS = frozenset({"id", "type", "function", "encryptedValue", "metadata"})
_MEDIA = frozenset({"image", "audio", "video", "document"})
_TEXT_PART_KEYS = frozenset({"type", "text", "id", "metadata"})
_MEDIA_PART_KEYS = frozenset({"type", "source", "id", "metadata"})
_FILE_KEYS = frozenset({"type", "value", "provider", "mimeType"})


def plain_messages(items: Any) -> set[str] | None:
    """The roles of ``items`` if it is a list of messages all in the plain shape, else ``None``."""
    if type(items) is not list:
        return None
    check_for = _CHECKS.get
    try:
        for message in items:
            check = check_for(message["role"])  # (not a dict, no role, an unhashable role: see below)
            if check is None or not check(message):
                return None
    except (KeyError, TypeError):
        return None
    return set(map(_ROLE, items))


_ROLE = itemgetter("role")
_ID = itemgetter("id")


class PlainSnapshot:
    """A snapshot's messages in the plain shape, and what the fold and the verifier need to know of
    them, gathered a slice at a time (``add``) while each slice is fresh in memory: a pass over tens of
    thousands of parsed messages later costs more than the work it does.

    Attributes:
        by_id: each message by its id, in snapshot order (the last of a repeated id).
        count: how many messages were added (more than ``len(by_id)`` when an id repeats).
        roles: the roles they hold.
        reasoning: the ids of the reasoning messages.
        owned: whether any message names a ``subagentRunId``.
        call_owners: each tool call's id -> the ``subagentRunId`` of the message holding it (the last
            message, for a call id repeated).
    """

    __slots__ = ("by_id", "count", "roles", "reasoning", "owned", "call_owners")

    def __init__(self) -> None:
        self.by_id: dict[str, dict[str, Any]] = {}
        self.count = 0
        self.roles: set[str] = set()
        self.reasoning: list[str] = []
        self.owned = False
        self.call_owners: dict[str, str | None] = {}

    @classmethod
    def of(cls, items: Any) -> PlainSnapshot | None:
        """The gathering of ``items`` in one go, or ``None`` if they are not all plain messages."""
        snapshot = cls()
        return snapshot if snapshot.add(items) else None

    @property
    def unique(self) -> bool:
        """Whether no id repeats."""
        return len(self.by_id) == self.count

    def add(self, items: Any) -> bool:
        """Gather the next slice of messages; ``False`` (the gathering is then void) if one is not plain."""
        roles = plain_messages(items)
        if roles is None:
            return False
        self.roles |= roles
        self.count += len(items)
        self.by_id.update(zip(map(_ID, items), items, strict=True))
        if "reasoning" in roles:
            self.reasoning += [message["id"] for message in items if message["role"] == "reasoning"]
        if not self.owned:
            self.owned = any(map(dict.__contains__, items, repeat("subagentRunId")))
        if "assistant" in roles:
            self.call_owners.update(_call_owners(items))
        return True


def _call_owners(items: Iterable[dict[str, Any]]) -> dict[str, str | None]:
    return {call["id"]: message.get("subagentRunId")
            for message in items if "toolCalls" in message for call in message["toolCalls"]}


# The shapes nearly every message has get a check of their own: a dict of exactly three keys that
# holds "id", "role" and "content" holds nothing else. Any other shape goes through _plain_message.

def _text_shape(message: dict[str, Any]) -> bool:  # system, developer, reasoning
    if len(message) == 3:
        return type(message["id"]) is str and type(message["content"]) is str
    return _plain_message(message)


def _user_shape(message: dict[str, Any]) -> bool:
    if len(message) == 3:
        content = message["content"]
        return type(message["id"]) is str and (type(content) is str or _plain_parts(content))
    return _plain_message(message)


def _assistant_shape(message: dict[str, Any]) -> bool:
    if len(message) == 3 and type(message["id"]) is str:
        content = message.get("content")
        if content is not None:
            return type(content) is str
        calls = message.get("toolCalls")
        if calls is not None:
            return _plain_calls(calls)
    return _plain_message(message)


def _tool_shape(message: dict[str, Any]) -> bool:
    if len(message) == 4:
        content = message["content"]
        return type(message["id"]) is str and type(message["toolCallId"]) is str and (
            type(content) is str or _plain_parts(content))
    return _plain_message(message)


_CHECKS: dict[str, Callable[[dict[str, Any]], bool]] = {
    "system": _text_shape,
    "developer": _text_shape,
    "reasoning": _text_shape,
    "user": _user_shape,
    "assistant": _assistant_shape,
    "tool": _tool_shape,
}


def _plain_message(message: dict[str, Any]) -> bool:
    """The plain shape, checked key by key (any role, any set of keys)."""
    role = message["role"]
    allowed = _KEYS[role]
    if type(message["id"]) is not str:
        return False
    content = message.get("content")
    if type(content) is not str:
        if role in _PARTS_ROLES:
            if not _plain_parts(content):
                return False
        elif role != "assistant" or "content" in message:
            return False
    if not _plain_extras(message, allowed):
        return False
    return role != "tool" or "toolCallId" in message


def _plain_extras(obj: dict[str, Any], allowed: frozenset[str]) -> bool:
    """Every key of ``obj`` (a message, tool call or content part) is one it may have, and each optional
    one is of its type (the caller checks its required keys, tags and content)."""
    if not obj.keys() <= allowed:
        return False
    for key, value in obj.items():
        if key in _STRINGS:
            if type(value) is not str:
                return False
        elif key == "metadata":
            if type(value) is not dict:
                return False
        elif key == "toolCalls":
            if not _plain_calls(value):
                return False
    return True


def _plain_calls(calls: Any) -> bool:
    if type(calls) is not list:
        return False
    for call in calls:
        if type(call) is not dict or call.get("type") != "function" or type(call.get("id")) is not str:
            return False
        function = call.get("function")
        if type(function) is not dict or len(function) != 2 or type(function.get("name")) is not str \
                or type(function.get("arguments")) is not str:
            return False
        if len(call) != 3 and not _plain_extras(call, _CALL_KEYS):
            return False
    return True


def _plain_parts(parts: Any) -> bool:
    if type(parts) is not list:
        return False
    for part in parts:
        if type(part) is not dict:
            return False
        kind = part.get("type")
        if kind == "text":
            if type(part.get("text")) is not str:
                return False
            allowed = _TEXT_PART_KEYS
        elif kind in _MEDIA:
            source = part.get("source")
            if type(source) is not dict or not _plain_source(source):
                return False
            allowed = _MEDIA_PART_KEYS
        else:
            return False
        if len(part) != 2 and not _plain_extras(part, allowed):
            return False
    return True


def _plain_source(source: dict[str, Any]) -> bool:
    kind = source.get("type")
    if type(source.get("value")) is not str:
        return False
    if kind == "url":
        return len(source) == 2 or (len(source) == 3 and type(source.get("mimeType")) is str)
    if kind == "data":
        return len(source) == 3 and type(source.get("mimeType")) is str
    if kind == "file":
        return source.keys() <= _FILE_KEYS and all(type(value) is str for value in source.values())
    return False
