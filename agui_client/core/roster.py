"""What a list of messages holds, gathered once: the ids, roles, owners and tool calls of a snapshot.

A ``MESSAGES_SNAPSHOT`` restates the conversation, often thousands of messages. The fold merges it
into the thread and the verifier puts its ids and owners on record; both need the same facts, and a
pass over tens of thousands of messages costs more than the work it does. A :class:`Roster` gathers
them in one pass, from typed messages or from messages kept as their plain JSON (a snapshot a fold
holds as it arrived), and, for a large snapshot read slice by slice, a slice at a time while each
slice is fresh in memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import repeat
from operator import itemgetter
from typing import Any

from ..wire.types import messages as msg

__all__ = ["Roster", "Owner"]

Owner = str | None
_ROLE = itemgetter("role")
_ID = itemgetter("id")


class Roster:
    """A list of messages (typed, or their plain JSON) and what they hold.

    Attributes:
        items: the messages, in order.
        by_id: each message by its id, in the order ids first appear (the last message of a repeated id).
        roles: the roles they hold.
        repeats: ``(position, id)`` of each message whose id an earlier one had.
        reasoning: the ids of the reasoning messages, in order.
        activity: the ids of the activity messages, in order.
        owned: whether any message names a ``subagentRunId``.
        call_owners: each tool call's id -> the ``subagentRunId`` of the message holding it (the last
            message holding a repeated call id, or the first with ``first_wins``).
        wire: whether the messages are plain JSON.
    """

    __slots__ = ("items", "by_id", "roles", "repeats", "reasoning", "activity", "owned", "call_owners", "wire",
                 "_first_wins")

    def __init__(self, *, wire: bool, first_wins: bool = False) -> None:
        self.items: list[Any] = []
        self.by_id: dict[str, Any] = {}
        self.roles: set[str] = set()
        self.repeats: list[tuple[int, str]] = []
        self.reasoning: list[str] = []
        self.activity: list[str] = []
        self.owned = False
        self.call_owners: dict[str, Owner] = {}
        self.wire = wire
        self._first_wins = first_wins

    @classmethod
    def of(cls, messages: Sequence[msg.Message], *, first_wins: bool = False) -> Roster:
        """The roster of typed messages (``first_wins``: a repeated call id keeps its first owner)."""
        roster = cls(wire=False, first_wins=first_wins)
        roster.add_typed(messages)
        return roster

    @classmethod
    def of_wire(cls, items: list[dict[str, Any]]) -> Roster:
        """The roster of messages in their plain JSON (each checked by the codec as one it may hold)."""
        roster = cls(wire=True)
        roster.add_wire(items)
        return roster

    @property
    def count(self) -> int:
        """How many messages (more than ``len(by_id)`` when an id repeats)."""
        return len(self.items)

    @property
    def unique(self) -> bool:
        """Whether no id repeats."""
        return not self.repeats

    def add_typed(self, messages: Iterable[msg.Message]) -> None:
        """Gather typed messages."""
        by_id = self.by_id
        calls = self.call_owners
        first = self._first_wins
        start = len(self.items)
        for position, message in enumerate(messages, start):
            self.items.append(message)
            key = message.id
            if key in by_id:
                self.repeats.append((position, key))
            by_id[key] = message
            role = message.ROLE
            self.roles.add(role)
            owner = message.subagent_run_id
            if owner is not None:
                self.owned = True
            if role == "reasoning":
                self.reasoning.append(key)
            elif role == "activity":
                self.activity.append(key)
            elif role == "assistant":
                tool_calls: tuple[msg.ToolCall, ...] | None = message.tool_calls  # type: ignore[union-attr]
                if tool_calls:
                    for call in tool_calls:
                        if not (first and call.id in calls):
                            calls[call.id] = owner

    def add_wire(self, items: list[dict[str, Any]]) -> None:
        """Gather the next slice of messages in their plain JSON (roles and ids are strings: the codec checked them)."""
        by_id = self.by_id
        before = len(by_id)
        self.items += items
        by_id.update(zip(map(_ID, items), items, strict=True))
        if len(by_id) - before != len(items):  # (an id repeats: found in a second pass, a rare case)
            self.repeats.clear()
            seen: set[str] = set()
            for position, message in enumerate(self.items):
                key = message["id"]
                if key in seen:
                    self.repeats.append((position, key))
                seen.add(key)
        roles = set(map(_ROLE, items))
        self.roles |= roles
        if "reasoning" in roles:
            self.reasoning += [message["id"] for message in items if message["role"] == "reasoning"]
        if not self.owned:
            self.owned = any(map(dict.__contains__, items, repeat("subagentRunId")))
        if "assistant" in roles:
            self.call_owners.update({call["id"]: message.get("subagentRunId") for message in items
                                     if "toolCalls" in message for call in message["toolCalls"]})

    def owners(self) -> tuple[dict[str, Owner], dict[str, Owner], dict[str, Owner]]:
        """Each id -> the owner its message names, for the messages that are neither reasoning nor
        activity, for the reasoning messages, and for the activity messages (a repeated id: its last
        message's owner, or its first with ``first_wins``)."""
        if not self.owned and self.unique:
            # The usual snapshot: all the parent's, every id once: dict operations, no step per message.
            others: dict[str, Owner] = dict.fromkeys(self.by_id)
            for key in self.reasoning:
                del others[key]
            for key in self.activity:
                del others[key]
            return others, dict.fromkeys(self.reasoning), dict.fromkeys(self.activity)
        groups: tuple[dict[str, Owner], dict[str, Owner], dict[str, Owner]] = ({}, {}, {})
        first = self._first_wins
        wire = self.wire
        for message in self.items:
            if wire:
                key, role, owner = message["id"], message["role"], message.get("subagentRunId")
            else:
                key, role, owner = message.id, message.ROLE, message.subagent_run_id
            group = groups[1] if role == "reasoning" else groups[2] if role == "activity" else groups[0]
            if not (first and key in group):
                group[key] = owner
        return groups
