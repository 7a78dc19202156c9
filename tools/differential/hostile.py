"""Hostile but valid variants of a stream, for the reference differential (``--oracle --mutate N``).

``variants(events, seed_input, seed, count)`` derives ``count`` variants of one stream; each applies
one to three of the mutations in ``MUTATIONS`` in turn. They keep to what the protocol allows where
they can (an event moves only past events about other entities, a snapshot goes where nothing is
open) and reach for its edges: ids reused or shared across kinds, empty strings, unusual unicode,
numbers at the limits of a double, snapshots that drop, restate or reorder messages, activities
written over other messages, tool results for unknown or answered calls, interrupts whose
``expiresAt`` is an unusual date, runs split in two, chunked forms of explicit messages. A few of
them make a stream the protocol refuses (an id reused while its message is open); both clients must
then refuse it alike.

Some mutations meet a deliberate difference the golden tests document wherever the stream lets them
(two messages sharing an id, a parent id ``""``, a lone UTF-16 half, ...): which, and the check that
a variant holds the situation each such golden stream pins, are ``hostile_golden.py``.

Everything is decided by a ``random.Random`` seeded with ``seed`` and the variant's number, so the
same stream, seed and count give the same variants byte for byte. Standard library plus
``agui_client`` (to know which messages a snapshot may restate at a point of the stream).
"""

from __future__ import annotations

import copy
import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Event = Any  # a wire mapping, or the text of a line that is not JSON (kept as it is)

LIFECYCLE = frozenset({"RUN_STARTED", "RUN_FINISHED", "RUN_ERROR"})
ID_KEYS = frozenset({"messageId", "toolCallId", "parentMessageId", "id", "entityId"})
NOW = "2026-11-30T00:00:00Z"  # the pinned clock of every resume input a mutation writes

UNICODE = ["😀", "👩‍👩‍👧‍👦", "e\u0301", "\u202eabc", "\u0000", "\u2028\u2029", "\ufeff", "𝔘𝔫𝔦", "日本語", "\t\r\n",
           "\\u0041", "\x7f\x1b[31m", "ﬀ", "İ", "\U0010fffd"]
NUMBERS: list[Any] = [0, -0.0, 1.0, 2**53, -(2**53), 1.7976931348623157e308, -1.7976931348623157e308, 5e-324,
                      1e21, 1e-7, 0.1, 0.30000000000000004, 123456789.123456789, 4.35, -1, 2**31, 2**32 + 0.5]
# (Left out, as documented differences every variant would repeat: a fraction below the millisecond, read
# to the microsecond here and cut by the reference, golden resume case expires-sub-millisecond; and a
# short number, a year to V8, expires-bare-number.)
EXPIRES = [NOW, "2026-11-30T00:00:00.001Z", "2026-11-29T23:59:59.999Z", "2026-11-30T00:00:00",
           "2026-11-30T01:00:00+01:00", "2026-11-30T00:00:00+00:00", "2026-11-30T00:00:00.5Z",
           "2026-11-30 00:00:00Z", "2026-11-30t00:00:00z", "2026-11-30", "20261130T000000Z", "", "garbage",
           "2026-13-01T00:00:00Z", "+002026-11-30T00:00:00Z", "1970-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
           "2026-11-30T00:00:60Z", "2026-11-30T24:00:00Z", "2026-11-29T19:00:00-05:00", "2026-11-30T00:00:01Z",
           "Mon, 30 Nov 2026 00:00:00 GMT", "2026-11-30T00:00Z", "2026-W48-1", "1780185600000"]


@dataclass
class Variant:
    """One derived stream: the mutations applied (``label``), its events and its starting thread."""

    label: str
    events: list[Event]
    input: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------------
# What a stream holds at each point


def event_type(event: Event) -> str:
    """The ``type`` of a wire mapping (``""`` for a line that is not JSON)."""
    return str(event.get("type")) if isinstance(event, dict) else ""


def quiet_points(events: list[Event]) -> list[int]:
    """Indexes ``i`` where an event may be inserted before ``events[i]`` with nothing open.

    Inside a run (after its RUN_STARTED, up to and including the position of its terminal), with no
    text message, tool call, reasoning span, step or chunk lane open.
    """
    out: list[int] = []
    in_run = False
    open_ids: set[Any] = set()
    steps = 0
    lane = False
    for i, event in enumerate(events):
        t = event_type(event)
        if in_run and not open_ids and not steps and not lane:
            out.append(i)
        lane = t.endswith("_CHUNK")
        if t == "RUN_STARTED":
            in_run, open_ids, steps = True, set(), 0
        elif t in ("RUN_FINISHED", "RUN_ERROR"):
            in_run = False
        # (the pre-1.0 THINKING_* events, which the Rust SDK still writes, open and close a span and a
        # message too; they carry no ids: one of each at a time)
        elif t in ("TEXT_MESSAGE_START", "REASONING_MESSAGE_START", "THINKING_TEXT_MESSAGE_START"):
            open_ids.add(("m", event.get("messageId")))
        elif t in ("TEXT_MESSAGE_END", "REASONING_MESSAGE_END", "THINKING_TEXT_MESSAGE_END"):
            open_ids.discard(("m", event.get("messageId")))
        elif t == "TOOL_CALL_START":
            open_ids.add(("c", event.get("toolCallId")))
        elif t == "TOOL_CALL_END":
            open_ids.discard(("c", event.get("toolCallId")))
        elif t in ("REASONING_START", "THINKING_START"):
            open_ids.add(("r", event.get("messageId")))
        elif t in ("REASONING_END", "THINKING_END"):
            open_ids.discard(("r", event.get("messageId")))
        elif t == "STEP_STARTED":
            steps += 1
        elif t == "STEP_FINISHED":
            steps -= 1
    if in_run and not open_ids and not steps and not lane:
        out.append(len(events))
    return out


def entities(events: list[Event], seed_input: dict[str, Any] | None) -> dict[str, list[Any]]:
    """The ids the stream (and its starting thread) names, by kind, in order of first appearance."""
    found: dict[str, list[Any]] = {"text": [], "reasoning": [], "tool": [], "result": [], "activity": [],
                                   "user": [], "holder": []}

    def add(kind: str, value: Any) -> None:
        if isinstance(value, str) and value not in found[kind]:
            found[kind].append(value)

    def from_messages(messages: Any) -> None:
        for m in messages if isinstance(messages, list) else []:
            if not isinstance(m, dict):
                continue
            role = m.get("role")
            kind = {"assistant": "text", "reasoning": "reasoning", "tool": "result", "activity": "activity"}.get(
                str(role), "user")
            add(kind, m.get("id"))
            for call in m.get("toolCalls") or []:
                if isinstance(call, dict):
                    add("tool", call.get("id"))
                    add("holder", m.get("id"))

    from_messages((seed_input or {}).get("messages"))
    for event in events:
        t = event_type(event)
        if not t:
            continue
        if t.startswith("TEXT_MESSAGE_"):
            add("text", event.get("messageId"))
        elif t.startswith("REASONING_MESSAGE") or t == "REASONING_START":
            add("reasoning", event.get("messageId"))
        elif t.startswith("TOOL_CALL_") and t != "TOOL_CALL_RESULT":
            add("tool", event.get("toolCallId"))
            add("holder", event.get("parentMessageId"))
        elif t == "TOOL_CALL_RESULT":
            add("result", event.get("messageId"))
        elif t.startswith("ACTIVITY_"):
            add("activity", event.get("messageId"))
        elif t == "MESSAGES_SNAPSHOT":
            from_messages(event.get("messages"))
    return found


def _keys(event: Event) -> set[Any]:
    """What an event is about: two events about disjoint things may swap places."""
    t = event_type(event)
    if not t or t in LIFECYCLE or t.endswith("_CHUNK") or t == "MESSAGES_SNAPSHOT":
        return {"*"}
    keys: set[Any] = {("id", event[k]) for k in ("messageId", "toolCallId", "parentMessageId") if k in event}
    if t.startswith("STATE_"):
        keys.add("state")
    if t.startswith("STEP_"):
        keys.add("step")
    if t.startswith("REASONING_"):
        keys.add("reasoning")
    if t.startswith("SUBAGENT_") or "subagentRunId" in event:
        keys.add(("sub", str(event.get("subagentRunId"))))
    return keys or {("solo", id(event))}


def _rename(value: Any, old: Any, new: Any) -> Any:
    """``value`` with every id field (``ID_KEYS``) equal to ``old`` set to ``new``."""
    if isinstance(value, list):
        return [_rename(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: (new if k in ID_KEYS and v == old else _rename(v, old, new)) for k, v in value.items()}
    return value


def _folded(prefix: list[Event], seed_input: dict[str, Any] | None) -> tuple[list[Any], Any]:
    """The messages (wire form) and the state our client holds after ``prefix``."""
    from agui_client import ProtocolError, ThreadState, encode, replay
    from agui_client.types import Message
    from agui_client.wire.codec import decode

    messages = decode((seed_input or {}).get("messages", []), tuple[Message, ...])
    thread = ThreadState(messages=messages, state=(seed_input or {}).get("state", {}))
    text = "\n".join(e if isinstance(e, str) else dump_event(e, ensure_ascii=True) for e in prefix)
    try:
        replay(text.encode("utf-8", "surrogatepass"), state=thread, format="jsonl")
    except ProtocolError:
        pass  # a prefix usually ends mid-run; what was folded is what a snapshot there restates
    except Exception:  # noqa: BLE001 - a crash is the differential's finding, not the generator's
        return [], None
    wire = encode(thread.messages)
    return (list(wire) if isinstance(wire, list) else []), copy.deepcopy(thread.state)


def _folded_messages(prefix: list[Event], seed_input: dict[str, Any] | None) -> list[Any]:
    """The messages our client holds after ``prefix`` (wire form); a snapshot restates them."""
    return _folded(prefix, seed_input)[0]


def _pointers(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Every JSON Pointer into ``value`` with what it names (the root first)."""
    out = [(prefix, value)]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _pointers(v, f"{prefix}/{str(k).replace('~', '~0').replace('/', '~1')}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _pointers(v, f"{prefix}/{i}")
    return out


# ---------------------------------------------------------------------------------------------------
# Mutations: (rng, events, input) -> (label, events, input) or None when they do not apply

Result = tuple[str, list[Event], dict[str, Any] | None] | None


def m_reorder(rng: random.Random, events: list[Event], inp: dict[str, Any] | None) -> Result:
    """Move one event up to three places past events about other entities."""
    movable = [i for i, e in enumerate(events) if "*" not in _keys(e)]
    if not movable:
        return None
    i = rng.choice(movable)
    step = rng.choice([-1, 1])
    out = list(events)
    moved = 0
    for _ in range(rng.randint(1, 3)):
        j = i + step
        if not 0 <= j < len(out) or _keys(out[i]) & _keys(out[j]) or "*" in _keys(out[j]):
            break
        out[i], out[j] = out[j], out[i]
        i, moved = j, moved + 1
    return (f"reorder{moved:+d}" if step > 0 else f"reorder-{moved}", out, inp) if moved else None


_KINDS = ("text", "reasoning", "tool", "result", "activity", "user", "holder")


def m_rename(rng: random.Random, events: list[Event], inp: dict[str, Any] | None) -> Result:
    """Give one entity the id of another (same kind: a reused id; other kind: ids colliding across kinds)."""
    found = entities(events, inp)
    sources = [k for k in ("text", "reasoning", "tool", "result", "activity") if found[k]]
    targets = [k for k in _KINDS if found[k]]
    if not sources or not targets:
        return None
    kind = rng.choice(sources)
    old = rng.choice(found[kind])
    into = rng.choice(targets)
    new = rng.choice(found[into])
    if new == old:
        return None
    # Only from the entity's first event on, so an earlier message with the id stays what it was.
    first = next((i for i, e in enumerate(events) if isinstance(e, dict) and old in
                  (e.get("messageId"), e.get("toolCallId"))), None)
    if first is None:
        return None
    out = events[:first] + [_rename(e, old, new) for e in events[first:]]
    return f"rename-{kind}-as-{into}", out, inp


_STRING_FIELDS = ("delta", "content", "toolCallName", "stepName", "activityType", "name", "message", "code",
                  "role")


def _string_slots(events: list[Event]) -> list[tuple[int, str]]:
    return [(i, k) for i, e in enumerate(events) if isinstance(e, dict)
            for k in _STRING_FIELDS if isinstance(e.get(k), str) and not (k == "role" and e.get(k) != "assistant")]


def m_empty(rng: random.Random, events: list[Event], inp: dict[str, Any] | None) -> Result:
    """An empty string where a string is: a delta, a content, a name, or an entity's id."""
    if rng.random() < 0.35:
        found = entities(events, inp)
        pool = [(k, v) for k in ("text", "tool", "result", "activity", "reasoning") for v in found[k]]
        if pool:
            kind, old = rng.choice(pool)
            first = next((i for i, e in enumerate(events) if isinstance(e, dict) and old in
                          (e.get("messageId"), e.get("toolCallId"))), 0)
            return f"empty-id-{kind}", events[:first] + [_rename(e, old, "") for e in events[first:]], inp
    slots = [s for s in _string_slots(events) if s[1] != "role"]
    if not slots:
        return None
    i, key = rng.choice(slots)
    out = list(events)
    out[i] = {**out[i], key: ""}
    return f"empty-{key}", out, inp


def m_unicode(rng: random.Random, events: list[Event], inp: dict[str, Any] | None) -> Result:
    """Unusual unicode in a delta, content, name or id, or as keys of the state."""
    roll = rng.random()
    if roll < 0.25:
        found = entities(events, inp)
        pool = [v for k in ("text", "tool", "result", "activity") for v in found[k]]
        if pool:
            old = rng.choice(pool)
            new = f"{old}{rng.choice(UNICODE)}"
            first = next((i for i, e in enumerate(events) if isinstance(e, dict) and old in
                          (e.get("messageId"), e.get("toolCallId"))), 0)
            return "unicode-id", events[:first] + [_rename(e, old, new) for e in events[first:]], inp
    if roll < 0.4:
        points = quiet_points(events)
        if points:
            at = rng.choice(points)
            doc = {rng.choice(UNICODE): rng.choice(UNICODE) for _ in range(3)}
            return "unicode-state", events[:at] + [{"type": "STATE_SNAPSHOT", "snapshot": doc}] + events[at:], inp
    slots = [s for s in _string_slots(events) if s[1] in ("delta", "content", "message", "name")]
    if not slots:
        return None
    i, key = rng.choice(slots)
    out = list(events)
    value = out[i][key]
    sample = "".join(rng.choice(UNICODE) for _ in range(rng.randint(1, 3)))
    out[i] = {**out[i], key: rng.choice([sample, value + sample, sample + value])}
    return f"unicode-{key}", out, inp


def _number_slots(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [path]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _number_slots(v, (*path, k))]
    if isinstance(value, list):
        return [p for k, v in enumerate(value) for p in _number_slots(v, (*path, k))]
    return []


def _set(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    value = copy.copy(value)
    value[path[0]] = _set(value[path[0]], path[1:], new)
    return value


def m_numbers(rng: random.Random, events: list[Event], inp: dict[str, Any] | None) -> Result:
    """Numbers at the edges (of a double, of an int, negative zero) in state, results, activities, args."""
    # Integers beyond 2**53 in the state are a documented difference (state-snapshot-integer-beyond-double):
    # NUMBERS stays within what a double holds exactly, except where it lands in text (tool arguments).
    slots = [(i, ("snapshot", *p)) for i, e in enumerate(events) if event_type(e) == "STATE_SNAPSHOT"
             for p in _number_slots(e.get("snapshot"))]
    slots += [(i, ("delta", *p)) for i, e in enumerate(events) if event_type(e) == "STATE_DELTA"
              for p in _number_slots(e.get("delta")) if p and p[-1] == "value" or "value" in p]
    slots += [(i, ("content", *p)) for i, e in enumerate(events) if event_type(e) == "ACTIVITY_SNAPSHOT"
              for p in _number_slots(e.get("content"))]
    roll = rng.random()
    if slots and roll < 0.5:
        i, path = rng.choice(slots)
        out = list(events)
        out[i] = _set(out[i], path, rng.choice(NUMBERS))
        return "numbers-" + event_type(events[i]).lower(), out, inp
    if roll < 0.7:
        args = [i for i, e in enumerate(events) if event_type(e) in ("TOOL_CALL_ARGS", "TOOL_CALL_CHUNK")
                and isinstance(e.get("delta"), str)]
        if args:
            i = rng.choice(args)
            out = list(events)
            out[i] = {**out[i], "delta": out[i]["delta"] + rng.choice(["9007199254740993", "1e999", "-0", "0.1e-400"])}
            return "numbers-args", out, inp
    if roll < 0.85:
        finished = [i for i, e in enumerate(events) if event_type(e) == "RUN_FINISHED"]
        if finished:
            i = rng.choice(finished)
            outcome = events[i].get("outcome")
            if outcome is None or (isinstance(outcome, dict) and outcome.get("type") == "success"):
                out = list(events)
                out[i] = {**out[i], "result": {"n": rng.choice(NUMBERS), "l": [rng.choice(NUMBERS)]}}
                return "numbers-result", out, inp
    points = quiet_points(events)
    if not points:
        return None
    at = rng.choice(points)
    doc = {f"k{j}": rng.choice(NUMBERS) for j in range(4)}
    return "numbers-state", events[:at] + [{"type": "STATE_SNAPSHOT", "snapshot": doc}] + events[at:], inp


def m_snapshot(rng: random.Random, events: list[Event], inp: dict[str, Any] | None) -> Result:
    """A MESSAGES_SNAPSHOT where nothing is open: the thread restated, some dropped, reordered, edited, added."""
    points = quiet_points(events)
    if not points:
        return None
    at = rng.choice(points)
    messages = _folded_messages(events[:at], inp)
    how = rng.choice(["restate", "drop", "drop-all", "keep-last", "reverse", "shuffle", "edit", "add", "drop-holder",
                      "drop-result"])
    if how == "drop" and messages:
        del messages[rng.randrange(len(messages))]
    elif how == "drop-all":
        messages = []
    elif how == "keep-last":
        messages = messages[-1:]
    elif how == "reverse":
        messages.reverse()
    elif how == "shuffle":
        rng.shuffle(messages)
    elif how == "edit" and messages:
        k = rng.randrange(len(messages))
        messages[k] = {**messages[k], "content": rng.choice(["", "edited", rng.choice(UNICODE)])}
    elif how == "add":
        messages.insert(rng.randint(0, len(messages)), {"id": f"snap-u{at}", "role": rng.choice(
            ["user", "system", "developer", "assistant"]), "content": "added by a snapshot"})
    elif how == "drop-holder":
        holders = [k for k, m in enumerate(messages) if isinstance(m, dict) and m.get("toolCalls")]
        if not holders:
            return None
        del messages[rng.choice(holders)]
    elif how == "drop-result":
        results = [k for k, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "tool"]
        if not results:
            return None
        del messages[rng.choice(results)]
    return f"snapshot-{how}", events[:at] + [{"type": "MESSAGES_SNAPSHOT", "messages": messages}] + events[at:], inp


def m_activity(rng: random.Random, events: list[Event], inp: dict[str, Any] | None) -> Result:
    """An ACTIVITY_SNAPSHOT written over another message (text, tool result, user, reasoning, call holder)."""
    points = quiet_points(events)
    if not points:
        return None
    at = rng.choice(points)
    # (messages that exist at that point: a later result taking an activity's id is a documented collision)
    found = entities(events[:at], inp)
    kinds = [k for k in ("text", "result", "user", "reasoning", "holder", "activity", "tool") if found[k]]
    if not kinds:
        return None
    kind = rng.choice(kinds)
    target = rng.choice(found[kind])
    snapshot: dict[str, Any] = {"type": "ACTIVITY_SNAPSHOT", "messageId": target, "activityType": rng.choice(
        ["plan", "PLAN", ""]), "content": {"steps": [{"s": "a"}]}}
    replace = rng.choice([None, True, False])
    if replace is not None:
        snapshot["replace"] = replace
    added = [snapshot]
    if rng.random() < 0.4:
        added.append({"type": "ACTIVITY_DELTA", "messageId": target, "activityType": snapshot["activityType"],
                      "patch": [{"op": "add", "path": "/steps/-", "value": {"s": "b"}}]})
    return f"activity-over-{kind}-replace-{replace}", events[:at] + added + events[at:], inp


def m_tool_result(rng: random.Random, events: list[Event], inp: dict[str, Any] | None) -> Result:
    """A TOOL_CALL_RESULT for an unknown call, a call answered already (new or same message id), a history call."""
    points = quiet_points(events)
    if not points:
        return None
    at = rng.choice(points)
    earlier = [e for e in events[:at] if event_type(e) == "TOOL_CALL_RESULT"]
    found = entities(events[:at], inp)
    how = rng.choice(["unknown", "again-new-id", "again-same-id", "call", "empty-content", "role"])
    result: dict[str, Any] = {"type": "TOOL_CALL_RESULT", "messageId": f"tr{at}", "toolCallId": "no-such-call",
                              "content": "late"}
    if how in ("again-new-id", "again-same-id") and earlier:
        prior = rng.choice(earlier)
        result["toolCallId"] = prior.get("toolCallId")
        if how == "again-same-id":
            result["messageId"] = prior.get("messageId")
    elif how in ("call", "empty-content", "role") and found["tool"]:
        result["toolCallId"] = rng.choice(found["tool"])
        if how == "empty-content":
            result["content"] = ""
        if how == "role":
            result["role"] = "tool"
    else:
        how = "unknown"
    return f"tool-result-{how}", events[:at] + [result] + events[at:], inp


def _interrupts(rng: random.Random, calls: list[Any]) -> list[dict[str, Any]]:
    out = []
    for n in range(rng.randint(1, 3)):
        item: dict[str, Any] = {"id": f"int{n}", "reason": rng.choice(["approval", "input", "", "🔐"])}
        if rng.random() < 0.8:
            item["expiresAt"] = rng.choice(EXPIRES)
        if calls and rng.random() < 0.5:
            item["toolCallId"] = rng.choice(calls)
        if rng.random() < 0.3:
            item["message"] = rng.choice(["approve?", "", rng.choice(UNICODE)])
        if rng.random() < 0.2:
            item["metadata"] = {"n": rng.choice(NUMBERS)}
        out.append(item)
    return out


def m_interrupt(rng: random.Random, events: list[Event], inp: dict[str, Any] | None) -> Result:
    """Interrupts with unusual expiresAt: on the closing outcome, or pending in the starting thread with a resume."""
    calls = entities(events, inp)["tool"]
    if rng.random() < 0.5:
        finished = [i for i, e in enumerate(events) if event_type(e) == "RUN_FINISHED"]
        if not finished:
            return None
        i = finished[-1]
        out = list(events)
        out[i] = {k: v for k, v in events[i].items() if k != "result"}
        out[i]["outcome"] = {"type": "interrupt", "interrupts": _interrupts(rng, calls)}
        return "interrupt-outcome", out, inp
    if inp and inp.get("pendingInterrupts"):
        return None  # keep the stream's own resume case
    pending = _interrupts(rng, calls)
    resume = []
    for item in pending:
        roll = rng.random()
        if roll < 0.15:
            continue  # uncovered
        entry: dict[str, Any] = {"interruptId": item["id"], "status": "resolved" if roll < 0.7 else "cancelled"}
        if entry["status"] == "resolved" and rng.random() < 0.5:
            entry["payload"] = {"ok": True}
        resume.append(entry)
    new_input = {**(inp or {}), "pendingInterrupts": pending, "resume": resume, "now": NOW}
    return "interrupt-resume", list(events), new_input


def m_split_run(rng: random.Random, events: list[Event], inp: dict[str, Any] | None) -> Result:
    """Close the run where nothing is open and start another (a new run id, or the same one again)."""
    points = [p for p in quiet_points(events) if p < len(events) and event_type(events[p]) not in LIFECYCLE]
    if not points:
        return None
    at = rng.choice(points)
    started = next((e for e in reversed(events[:at]) if event_type(e) == "RUN_STARTED"), None)
    if started is None:
        return None
    run_id = started.get("runId")
    again = rng.random() < 0.3
    new_id = run_id if again else f"{run_id}-split{at}"
    finish: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": started.get("threadId"), "runId": run_id}
    if rng.random() < 0.5:
        finish["outcome"] = {"type": rng.choice(["success", "cancelled"])}
    restart = {"type": "RUN_STARTED", "threadId": started.get("threadId"), "runId": new_id}
    out = events[:at] + [finish, restart] + [
        {**e, "runId": new_id} if event_type(e) in ("RUN_FINISHED", "RUN_ERROR") and e.get("runId") == run_id else e
        for e in events[at:]]
    return "split-run-same-id" if again else "split-run", out, inp


def m_chunkify(rng: random.Random, events: list[Event], inp: dict[str, Any] | None) -> Result:
    """A contiguous explicit text message or tool call rewritten as chunks (the chunk form the protocol allows)."""
    spans = []
    for i, e in enumerate(events):
        t = event_type(e)
        if t in ("TEXT_MESSAGE_START", "TOOL_CALL_START"):
            key = "messageId" if t == "TEXT_MESSAGE_START" else "toolCallId"
            end = "TEXT_MESSAGE_END" if t == "TEXT_MESSAGE_START" else "TOOL_CALL_END"
            middle = "TEXT_MESSAGE_CONTENT" if t == "TEXT_MESSAGE_START" else "TOOL_CALL_ARGS"
            j = i + 1
            while j < len(events) and event_type(events[j]) == middle and events[j].get(key) == e.get(key):
                j += 1
            if j < len(events) and event_type(events[j]) == end and events[j].get(key) == e.get(key):
                spans.append((i, j))
    if not spans:
        return None
    i, j = rng.choice(spans)
    start = events[i]
    text = event_type(start) == "TEXT_MESSAGE_START"
    chunk_type = "TEXT_MESSAGE_CHUNK" if text else "TOOL_CALL_CHUNK"
    first: dict[str, Any] = {"type": chunk_type}
    for key in ("messageId", "role", "toolCallId", "toolCallName", "parentMessageId", "subagentRunId"):
        if key in start:
            first[key] = start[key]
    deltas = [e.get("delta", "") for e in events[i + 1:j]] or [""]
    chunks = [{**first, "delta": deltas[0]}]
    repeat_id = rng.random() < 0.5
    for delta in deltas[1:]:
        chunk: dict[str, Any] = {"type": chunk_type, "delta": delta}
        if repeat_id:
            chunk["messageId" if text else "toolCallId"] = start.get("messageId" if text else "toolCallId")
        chunks.append(chunk)
    return f"chunkify-{'text' if text else 'tool'}{'-ids' if repeat_id else ''}", events[:i] + chunks + events[
        j + 1:], inp


def m_echo_input(rng: random.Random, events: list[Event], inp: dict[str, Any] | None) -> Result:
    """A RUN_STARTED.input echoing the thread so far, with a message dropped, edited or added."""
    starts = [i for i, e in enumerate(events) if event_type(e) == "RUN_STARTED"]
    if not starts:
        return None
    i = rng.choice(starts)
    messages = _folded_messages(events[:i], inp) if i else list((inp or {}).get("messages", []))
    how = rng.choice(["restate", "drop", "edit", "add"])
    if how == "drop" and messages:
        del messages[rng.randrange(len(messages))]
    elif how == "edit" and messages:
        k = rng.randrange(len(messages))
        messages[k] = {**messages[k], "content": "edited in the echo"}
    elif how == "add":
        messages.append({"id": f"echo-u{i}", "role": "user", "content": "echoed"})
    started = events[i]
    echo = {"threadId": started.get("threadId"), "runId": started.get("runId"), "messages": messages, "tools": [],
            "context": [], "state": {}, "forwardedProps": {}}
    out = list(events)
    out[i] = {**started, "input": echo}
    return f"echo-input-{how}", out, inp


def m_patch(rng: random.Random, events: list[Event], inp: dict[str, Any] | None) -> Result:
    """A STATE_DELTA where nothing is open, with JSON Patch operations on the state held there.

    Operations that apply (add at ``-`` and at an index, move and copy between places, test then remove,
    replace of the root or of a leaf), with keys that need escaping, and now and then one that does
    not apply (the whole patch is then refused by both, or not: that is what is compared).
    """
    points = quiet_points(events)
    if not points:
        return None
    at = rng.choice(points)
    state = _folded(events[:at], inp)[1]
    if not isinstance(state, (dict, list)) or rng.random() < 0.2:
        state = {"a": [1, 2, {"b": None}], "~k/": {"": 0}, "n": -0.0}
        added: list[Event] = [{"type": "STATE_SNAPSHOT", "snapshot": state}]
    else:
        added = []
    paths = _pointers(state)
    containers = [(p, v) for p, v in paths if isinstance(v, (dict, list))]
    leaves = [p for p, v in paths if p and not isinstance(v, (dict, list))]
    ops: list[dict[str, Any]] = []
    for _ in range(rng.randint(1, 4)):
        where, value = rng.choice(containers)
        new = rng.choice([0, "", None, [], {}, {"x": [1]}, rng.choice(UNICODE), rng.choice(NUMBERS)])
        how = rng.choice(["add", "add-index", "remove", "replace", "move", "copy", "test", "replace-root"])
        if how == "add":
            key = "-" if isinstance(value, list) else rng.choice(["new", "", "~", "a/b", "😀"])
            ops.append({"op": "add", "path": f"{where}/{key.replace('~', '~0').replace('/', '~1')}" if key != "-"
                        else f"{where}/-", "value": new})
        elif how == "add-index" and isinstance(value, list):
            ops.append({"op": "add", "path": f"{where}/{rng.randint(0, len(value))}", "value": new})
        elif how in ("remove", "replace") and leaves:
            op: dict[str, Any] = {"op": how, "path": rng.choice(leaves)}
            if how == "replace":
                op["value"] = new
            ops.append(op)
        elif how in ("move", "copy") and leaves:
            source = rng.choice(leaves)
            ops.append({"op": how, "from": source, "path": f"{where}/{'-' if isinstance(value, list) else 'moved'}"})
        elif how == "test" and leaves:
            leaf = rng.choice(leaves)
            ops += [{"op": "test", "path": leaf, "value": dict(paths)[leaf]}, {"op": "remove", "path": leaf}]
        elif how == "replace-root":
            ops.append({"op": "replace", "path": "", "value": {"root": new}})
        # (each op is drawn against the state before the patch: a later one may name what an earlier
        # one moved; both clients must then agree on refusing it)
    if not ops:
        return None
    added.append({"type": "STATE_DELTA", "delta": ops})
    return f"patch-{len(ops)}", events[:at] + added + events[at:], inp


def m_reasoning(rng: random.Random, events: list[Event], inp: dict[str, Any] | None) -> Result:
    """A reasoning span inserted where nothing is open, explicit or in chunks, perhaps encrypted."""
    points = quiet_points(events)
    if not points:
        return None
    at = rng.choice(points)
    rid = f"rsn{at}"
    mid = rng.choice([rid, f"{rid}m"])
    deltas = [rng.choice(["think", "", rng.choice(UNICODE)]) for _ in range(rng.randint(1, 3))]
    span: list[Event] = [{"type": "REASONING_START", "messageId": rid}]
    if rng.random() < 0.5:
        span.append({"type": "REASONING_MESSAGE_START", "messageId": mid, "role": "reasoning"})
        span += [{"type": "REASONING_MESSAGE_CONTENT", "messageId": mid, "delta": d} for d in deltas]
        span.append({"type": "REASONING_MESSAGE_END", "messageId": mid})
        how = "explicit"
    else:
        span.append({"type": "REASONING_MESSAGE_CHUNK", "messageId": mid, "delta": deltas[0]})
        span += [{"type": "REASONING_MESSAGE_CHUNK", "delta": d} for d in deltas[1:]]
        how = "chunks"
    if rng.random() < 0.4:
        span.append({"type": "REASONING_ENCRYPTED_VALUE", "subtype": "message", "entityId": mid, "encryptedValue": "e"})
        how += "-encrypted"
    span.append({"type": "REASONING_END", "messageId": rid})
    return f"reasoning-{how}", events[:at] + span + events[at:], inp


MUTATIONS: dict[str, Callable[[random.Random, list[Event], dict[str, Any] | None], Result]] = {
    "reorder": m_reorder, "rename": m_rename, "empty": m_empty, "unicode": m_unicode, "numbers": m_numbers,
    "snapshot": m_snapshot, "activity": m_activity, "tool-result": m_tool_result, "interrupt": m_interrupt,
    "split-run": m_split_run, "chunkify": m_chunkify, "echo-input": m_echo_input, "patch": m_patch,
    "reasoning": m_reasoning,
}


def variants(events: list[Event], seed_input: dict[str, Any] | None, seed: int, count: int,
             name: str = "", only: list[str] | None = None) -> list[Variant]:
    """``count`` variants of ``events``, each one to three mutations; the same arguments give the same variants.

    ``only`` limits the mutations drawn to those named (keys of ``MUTATIONS``).
    """
    kinds = sorted(only or MUTATIONS)
    unknown = set(kinds) - set(MUTATIONS)
    if unknown:
        raise ValueError(f"no such mutation: {', '.join(sorted(unknown))} (known: {', '.join(sorted(MUTATIONS))})")
    out: list[Variant] = []
    for n in range(count):
        rng = random.Random(f"{seed}:{name}:{n}")
        current, inp, labels = list(events), seed_input, []
        for _ in range(rng.choice([1, 1, 2, 3])):
            for _attempt in range(6):
                done = MUTATIONS[rng.choice(kinds)](rng, current, inp)
                if done is not None:
                    label, current, inp = done
                    labels.append(label)
                    break
        if labels:
            out.append(Variant("+".join(labels), current, copy.deepcopy(inp) if inp is not None else None))
    return out


@dataclass(frozen=True)
class NumberText:
    """A JSON number a double cannot hold (``1e999``), kept as the stream wrote it.

    ``json`` reads such a number as infinity and writes it back as ``Infinity``, which is not JSON: a
    variant of a stream holding one tested a payload that is not JSON (golden ``payload-not-json``)
    instead of the number (golden ``*-number-overflows-double``). Mutations leave it alone (it is no
    ``float``); the writers here write its text back.
    """

    text: str


def _number(text: str) -> float | NumberText:
    value = float(text)
    return value if math.isfinite(value) else NumberText(text)


# What a NumberText is written as first, then replaced by its text (a string no stream holds: it
# starts and ends with NUL, and names this module's purpose).
_MARK = "\x00hostile number text\x00"
_MARK_JSON = json.dumps(_MARK)


def dump_event(event: Any, ensure_ascii: bool = False) -> str:
    """The JSON text of a wire mapping, each ``NumberText`` in it written as its own text."""
    kept: list[str] = []

    def keep(value: Any) -> str:
        if isinstance(value, NumberText):
            kept.append(value.text)
            return _MARK
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    text = json.dumps(event, ensure_ascii=ensure_ascii, default=keep)
    if not kept:
        return text
    parts = text.split(_MARK_JSON)
    if len(parts) != len(kept) + 1:
        raise ValueError("a string in the event is the number marker itself")
    return "".join(part + number for part, number in zip(parts, [*kept, ""], strict=True))


def parse_lines(text: str) -> list[Event]:
    """The events of a JSONL text; a line that is not JSON is kept as its text, and a number a double
    cannot hold as a ``NumberText``."""
    out: list[Event] = []
    for line in text.split("\n"):  # (not splitlines(): U+2028 and friends are text inside a JSON string)
        if not line.strip():
            continue
        try:
            out.append(json.loads(line, parse_float=_number))
        except ValueError:
            out.append(line)
    return out


def dump_lines(events: list[Event]) -> str:
    """JSONL text of ``events`` (a kept non-JSON line as it was, a ``NumberText`` as its text)."""
    lines = []
    for e in events:
        if isinstance(e, str):
            lines.append(e)
        else:
            line = dump_event(e)
            # (a lone surrogate cannot be written as UTF-8: such a line keeps its escapes)
            lines.append(dump_event(e, ensure_ascii=True) if any("\ud800" <= ch <= "\udfff" for ch in line) else line)
    return "\n".join(lines) + "\n"
