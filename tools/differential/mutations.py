"""The honest streams and the mutations of the mutation fuzzer (``tools/differential/mutate.py``).

``seeds()`` lists the honest streams (golden, ``bench/gen.py``, the differential's producer shapes,
families and SDK habits, and the demo agent's answers when given); ``mutate(rng, events, other)``
makes one case of a stream: one to four operations, drawn by level (``LEVEL_WEIGHTS``), applied to its
events, then to its payload texts, then to its SSE framing, then to its bytes. ``resume_entries``
bends the answers to a run's open interrupts. Everything is decided by the ``random.Random`` given, so
the same seed makes the same bytes.
"""

from __future__ import annotations

import copy
import json
import random
import re
import subprocess
import sys
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import families, hostile, producers, sdkwire

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "streams"

Event = Any  # a wire mapping, or a text kept as it is

# -------------------------------------------------------------------------------------------------
# Seeds: honest streams
# -------------------------------------------------------------------------------------------------


@dataclass
class Seed:
    """One honest stream: its name and events (wire mappings)."""

    name: str
    events: list[Event]


def _gen(kind: str, seed: int, scale: str) -> list[Event]:
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "gen.py"), kind, "--seed", str(seed),
                          "--scale", scale], check=True, capture_output=True, text=True)
    return hostile.parse_lines(out.stdout)


def seeds(demo: list[list[Event]] | None = None) -> list[Seed]:
    """Every honest stream the fuzzer starts from, in a fixed order."""
    out = [Seed(path.name[: -len(".jsonl")], hostile.parse_lines(path.read_text(encoding="utf-8")))
           for path in sorted(GOLDEN.glob("*.jsonl"))]
    for kind in ("chat", "tools", "mixed", "state", "snapshot"):
        out.append(Seed(f"gen-{kind}", _gen(kind, 7, "0.002")))
    for name, events, _inp, _framing in producers.streams(7, 1):
        out.append(Seed(name, list(events)))
    for name, events, _inp, _framing in families.streams(7, 1):
        out.append(Seed(name, list(events)))
    for name, events, _inp, _framing in sdkwire.streams(7, 1):
        out.append(Seed(name, [json.loads(e) if isinstance(e, str) and e.startswith("{") else e for e in events]))
    for n, events in enumerate(demo or []):
        out.append(Seed(f"demo-{n}", events))
    # (a stream nested past the client's limit, golden payload-nested-past-limit, is left out: copying it
    # would reach Python's recursion limit, and the ``nest`` operation makes such values itself)
    return [s for s in out if any(isinstance(e, dict) for e in s.events) and _depth(s.events) < 256]


def _depth(value: Any) -> int:
    """How deep ``value`` nests (without recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack += [(v, depth + 1) for v in item.values()]
        elif isinstance(item, list):
            stack += [(v, depth + 1) for v in item]
    return deepest


def _ok_json(value: Any) -> bool:
    try:
        json.loads(value)
    except ValueError:
        return False
    return True


# -------------------------------------------------------------------------------------------------
# Mutations
# -------------------------------------------------------------------------------------------------

ID_KEYS = ("messageId", "toolCallId", "parentMessageId", "runId", "threadId", "id", "entityId",
           "subagentRunId", "parentRunId", "activityType")
CONTROL = ["\x00", "\x07", "\x08", "\x1b[2J\x1b[H", "\x1b]0;owned\x07", "\x1b]8;;http://x\x1b\\", "\x9b31m", "\r",
           "\x7f", "\u202e", "\u2066", "\u200b", "\ufeff", "\u2028", "\u0085", "\x0c", "\t", "\x1bP+q\x1b\\",
           "\ud800", "\udfff", "\ud83d", "\U0010ffff", "\ufffe"]
ODD_NUMBERS: list[Any] = [2**64, -(2**63) - 1, 10**400, -1, 1.5, 1e308, -0.0, 0, True, False, None]
TYPE_SWAPS: list[Any] = [None, 0, 1.5, True, "", "x", [], {}, [1], {"a": 1}, "RUN_STARTED"]
EXPIRES = ["2026-11-29T00:00:00Z", "2026-11-30T00:00:00Z", "2026-12-01T00:00:00Z", "", "garbage", 5, None,
           "2026-02-30T00:00:00Z", "2026-11-30T24:00:00Z", "2016-12-31T23:59:60Z", "9999-12-31T23:59:59Z",
           "2026-11-30T00:00:00", "2026-11-30", "0000-01-01T00:00:00Z", "2026-11-30T00:00:00.123456789Z"]


@dataclass
class Case:
    """One case in the making: its events, then its payload texts, then its body's bytes."""

    events: list[Event]
    ops: list[str] = field(default_factory=list)
    payloads: list[str] | None = None
    framing: dict[str, Any] = field(default_factory=dict)
    body: bytes | None = None
    refused: bool | None = None  # (after the run: whether our client refused the first body)
    outcomes: list[str] = field(default_factory=list)  # (after the run: how each of the sync shell's runs ended)


def _dicts(events: list[Event]) -> list[int]:
    return [i for i, e in enumerate(events) if isinstance(e, dict)]


def _slots(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every (path, value) inside ``value``, containers included."""
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _slots(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _slots(item, (*path, i))


def _set(root: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        root = root[key]
    root[path[-1]] = value


def _pick_slot(rng: random.Random, events: list[Event], want: Callable[[tuple[Any, ...], Any], bool]
               ) -> tuple[int, tuple[Any, ...], Any] | None:
    found = [(i, p, v) for i in _dicts(events) for p, v in _slots(events[i]) if p and want(p, v)]
    return rng.choice(found) if found else None


def e_drop(rng: random.Random, case: Case, other: list[Event]) -> None:
    if case.events:
        del case.events[rng.randrange(len(case.events))]


def e_repeat(rng: random.Random, case: Case, other: list[Event]) -> None:
    if case.events:
        i = rng.randrange(len(case.events))
        case.events.insert(rng.randrange(i, len(case.events) + 1), copy.deepcopy(case.events[i]))


def e_swap(rng: random.Random, case: Case, other: list[Event]) -> None:
    if len(case.events) > 1:
        i = rng.randrange(len(case.events) - 1)
        j = min(len(case.events) - 1, i + rng.choice([1, 1, 2, rng.randrange(1, len(case.events))]))
        case.events[i], case.events[j] = case.events[j], case.events[i]


def e_cut(rng: random.Random, case: Case, other: list[Event]) -> None:
    if case.events:
        del case.events[rng.randrange(len(case.events)):]


def e_splice(rng: random.Random, case: Case, other: list[Event]) -> None:
    if other:
        start = rng.randrange(len(other))
        piece = copy.deepcopy(other[start:start + rng.randint(1, 6)])
        case.events[rng.randrange(len(case.events) + 1):0] = piece


def e_collide(rng: random.Random, case: Case, other: list[Event]) -> None:
    """One id made equal to another id of the stream (of any kind: message, call, interrupt, run)."""
    ids = [(i, p, v) for i in _dicts(case.events) for p, v in _slots(case.events[i])
           if p and p[-1] in ID_KEYS and isinstance(v, str)]
    if len(ids) > 1:
        (i, path, _), (_, _, value) = rng.sample(ids, 2)
        _set(case.events[i], path, value)


def e_retype(rng: random.Random, case: Case, other: list[Event]) -> None:
    slot = _pick_slot(rng, case.events, lambda p, v: True)
    if slot:
        i, path, _ = slot
        _set(case.events[i], path, copy.deepcopy(rng.choice(TYPE_SWAPS)))


def e_remove_field(rng: random.Random, case: Case, other: list[Event]) -> None:
    slot = _pick_slot(rng, case.events, lambda p, v: isinstance(p[-1], str))
    if slot:
        i, path, _ = slot
        parent = case.events[i]
        for key in path[:-1]:
            parent = parent[key]
        del parent[path[-1]]


def e_case(rng: random.Random, case: Case, other: list[Event]) -> None:
    """A string value (often an event type or an enum) in another case, or its field name."""
    slot = _pick_slot(rng, case.events, lambda p, v: isinstance(v, str) and v != "")
    if slot:
        i, path, value = slot
        _set(case.events[i], path, rng.choice([value.lower(), value.upper(), value.title(), value.swapcase(),
                                                value.replace("_", "")]))


def e_unicode(rng: random.Random, case: Case, other: list[Event]) -> None:
    """A control character, escape sequence, bidi mark, lone UTF-16 half or other form put into a string."""
    slot = _pick_slot(rng, case.events, lambda p, v: isinstance(v, str))
    if slot:
        i, path, value = slot
        mark = rng.choice(CONTROL)
        where = rng.randint(0, len(value))
        new = rng.choice([value[:where] + mark + value[where:], mark, unicodedata.normalize("NFD", value) + "e\u0301",
                          value + mark * rng.randint(2, 50)])
        _set(case.events[i], path, new)


def e_huge(rng: random.Random, case: Case, other: list[Event]) -> None:
    slot = _pick_slot(rng, case.events, lambda p, v: isinstance(v, (str, list, dict)))
    if slot:
        i, path, _ = slot
        _set(case.events[i], path, rng.choice(["x" * rng.choice([10**5, 10**6]), "", [], {},
                                               ["y"] * 10**4, {f"k{n}": n for n in range(2000)}]))


def e_number(rng: random.Random, case: Case, other: list[Event]) -> None:
    slot = _pick_slot(rng, case.events, lambda p, v: isinstance(v, (int, float)) or p[-1] in (
        "timestamp", "inputTokens", "outputTokens", "totalTokens"))
    if slot is None:
        i = rng.choice(_dicts(case.events)) if _dicts(case.events) else None
        if i is None:
            return
        case.events[i]["timestamp"] = rng.choice(ODD_NUMBERS)
        return
    i, path, _ = slot
    _set(case.events[i], path, rng.choice(ODD_NUMBERS))


def e_interrupt(rng: random.Random, case: Case, other: list[Event]) -> None:
    """The run stops for interrupts (added where it did not), then one of them is bent."""
    finished = [i for i in _dicts(case.events) if case.events[i].get("type") == "RUN_FINISHED"]
    if not finished:
        return
    end = case.events[rng.choice(finished)]
    outcome = end.get("outcome")
    if not (isinstance(outcome, dict) and isinstance(outcome.get("interrupts"), list)
            and any(isinstance(i, dict) for i in outcome["interrupts"])):
        end["outcome"] = {"type": "interrupt", "interrupts": [
            {"id": f"i{n}", "reason": rng.choice(["approval", "input", "acme:x"]), "message": "ok?"}
            for n in range(rng.randint(1, 3))]}
    interrupts = [i for i in end["outcome"]["interrupts"] if isinstance(i, dict)]
    target = rng.choice(interrupts)
    how = rng.randrange(10)
    if how >= 7:
        return  # (asked well: the resume that follows is where the case goes)
    if how == 0:
        target["expiresAt"] = rng.choice(EXPIRES)
    elif how == 1:
        interrupts.append(copy.deepcopy(target))  # (the same id twice)
        end["outcome"]["interrupts"] = interrupts
    elif how == 2:
        target.pop("id", None)
    elif how == 3:
        target["id"] = rng.choice(["", " ", "i0\u200b", "I0", "i0" * 500, "\ud800"])
    elif how == 4:
        target["toolCallId"] = rng.choice(["missing", "", None])
    elif how == 5:
        target["responseSchema"] = rng.choice([True, {"type": "object", "required": ["x"]}, {"$ref": "#"}, []])
    else:
        target.pop("reason", None)


def e_nest(rng: random.Random, case: Case, other: list[Event]) -> None:
    """A value nested deep (written as JSON text by ``dump``: Python's encoder would recurse too far)."""
    slot = _pick_slot(rng, case.events, lambda p, v: isinstance(v, (dict, list)) or p[-1] in ("value", "snapshot"))
    if slot:
        i, path, _ = slot
        _set(case.events[i], path, f"@@deep:{rng.choice([100, 300, 1200, 100_000])}:{rng.randrange(3)}@@")


_DEEP = re.compile(r'"@@deep:(\d+):(\d)@@"')


def _deep(match: re.Match[str]) -> str:
    depth, kind = int(match.group(1)), int(match.group(2))
    opens, closes = [("[", "]"), ('{"a":', "}"), ('[{"a":', "}]")][kind]
    return opens * depth + "1" + closes * depth


def e_concat(rng: random.Random, case: Case, other: list[Event]) -> None:
    """Another whole stream after this one (a response of several runs), its ids kept or taken over."""
    more = copy.deepcopy(other)
    if rng.random() < 0.5:
        ids = {e.get("runId") for e in case.events if isinstance(e, dict) and e.get("runId")}
        for e in more:
            if isinstance(e, dict) and "runId" in e and ids:
                e["runId"] = rng.choice(sorted(ids, key=str))
    case.events += more


def e_late(rng: random.Random, case: Case, other: list[Event]) -> None:
    """An event after the terminal one: a late RUN_ERROR (CL-02), or something else."""
    case.events.append(rng.choice([{"type": "RUN_ERROR", "message": "late \x1b[31mred", "code": "late"},
                                   {"type": "RUN_ERROR", "message": "late"},
                                   {"type": "CUSTOM", "name": "n", "value": 1},
                                   {"type": "TEXT_MESSAGE_START", "messageId": "late", "role": "assistant"},
                                   {"type": "RUN_FINISHED", "threadId": "t", "runId": "r-late"}]))


EVENT_OPS: dict[str, Callable[[random.Random, Case, list[Event]], None]] = {
    "concat": e_concat, "late": e_late,
    "drop": e_drop, "repeat": e_repeat, "swap": e_swap, "cut": e_cut, "splice": e_splice, "collide": e_collide,
    "retype": e_retype, "unfield": e_remove_field, "case": e_case, "unicode": e_unicode, "huge": e_huge,
    "number": e_number, "interrupt": e_interrupt, "nest": e_nest,
}


def dump(event: Event) -> str:
    if isinstance(event, str):
        return event
    text = hostile.dump_event(event)
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        text = hostile.dump_event(event, ensure_ascii=True)
    return _DEEP.sub(_deep, text)


def j_dupkey(rng: random.Random, texts: list[str]) -> None:
    i = rng.randrange(len(texts))
    if texts[i].startswith("{"):
        texts[i] = '{"type":' + json.dumps(rng.choice(["RUN_STARTED", "CUSTOM", "X", 1])) + "," + texts[i][1:]


def j_nan(rng: random.Random, texts: list[str]) -> None:
    i = rng.randrange(len(texts))
    if texts[i].endswith("}"):
        texts[i] = texts[i][:-1] + ',"timestamp":' + rng.choice(["NaN", "Infinity", "-Infinity", "1e400",
                                                                 "9" * 5000, "-0", "1E+2", "0x10"]) + "}"


def j_cut(rng: random.Random, texts: list[str]) -> None:
    i = rng.randrange(len(texts))
    texts[i] = texts[i][: rng.randrange(len(texts[i]) + 1)]


def j_trailing(rng: random.Random, texts: list[str]) -> None:
    i = rng.randrange(len(texts))
    texts[i] += rng.choice([" ", "}", "{}", ",", " x", "\x00", "\u00a0"])


def j_escape(rng: random.Random, texts: list[str]) -> None:
    i = rng.randrange(len(texts))
    at = texts[i].find('"', texts[i].find(':"') + 2) if ':"' in texts[i] else -1
    if at > 0:
        texts[i] = texts[i][:at] + rng.choice(["\\ud800", "\\udc00x", "\\u0000", "\\u001b[31m", "\\ud83d\\ude00",
                                                "\\uDBFF\\uDFFF", "\\x41", "\\u12"]) + texts[i][at:]


def j_value(rng: random.Random, texts: list[str]) -> None:
    i = rng.randrange(len(texts))
    texts[i] = rng.choice(["null", "42", '"RUN_STARTED"', "[]", "{}", "true", '{"type":null}', "{not json"])


JSON_OPS: dict[str, Callable[[random.Random, list[str]], None]] = {
    "dupkey": j_dupkey, "nan": j_nan, "jcut": j_cut, "trailing": j_trailing, "escape": j_escape, "jvalue": j_value,
}


def frame(rng: random.Random, texts: list[str], framing: dict[str, Any]) -> bytes:
    """The SSE body of ``texts`` in ``framing``'s habits (each drawn from ``rng`` per frame)."""
    ends = framing.get("ends", ["\n"])
    out: list[str] = []
    for n, text in enumerate(texts):
        end = rng.choice(ends)
        lines: list[str] = []
        if framing.get("comments") and rng.random() < 0.3:
            lines.append(rng.choice([": ping", ":", ": \x1b[2J"]))
        if framing.get("fields") and rng.random() < 0.3:
            lines.append(rng.choice(["event: message", "event: ping", "id: 7", "id: a\x00b", "retry: abc",
                                     "retry: 10", "event:", "Data: x", "unknown: y"]))
        prefix = "data:" if framing.get("nospace") else "data: "
        if framing.get("noprefix") == n:
            lines.append(text)
        elif framing.get("split") and len(text) > 10 and rng.random() < 0.3:
            cut = rng.randrange(1, len(text))
            lines += [prefix + text[:cut], prefix + text[cut:]]
        else:
            lines.append(prefix + text)
        if framing.get("bom") == n and n:
            lines[0] = "\ufeff" + lines[0]
        out.append(end.join(lines) + end + end)
    body = "".join(out)
    if framing.get("bom") == 0:
        body = "\ufeff" + body
    if framing.get("open_end") and body.endswith(ends[0] * 2):
        body = body[: -len(ends[0])]
    return body.encode("utf-8", "surrogatepass")


def f_draw(rng: random.Random, case: Case) -> None:
    """A framing habit (or two) for the whole body."""
    n = len(case.payloads or [])
    choice = rng.randrange(9)
    if choice == 0:
        case.framing["ends"] = rng.choice([["\r\n"], ["\r"], ["\n", "\r\n"], ["\n", "\r", "\r\n"]])
    elif choice == 1:
        case.framing["comments"] = True
    elif choice == 2:
        case.framing["fields"] = True
    elif choice == 3:
        case.framing["split"] = True
    elif choice == 4:
        case.framing["noprefix"] = rng.randrange(max(n, 1))
    elif choice == 5:
        case.framing["bom"] = rng.choice([0, rng.randrange(max(n, 1))])
    elif choice == 6:
        case.framing["open_end"] = True
    elif choice == 7:
        case.framing["nospace"] = True
    else:
        if case.payloads is not None:
            case.payloads.insert(rng.randrange(n + 1), rng.choice(["", "   ", "\t"]))


def b_flip(rng: random.Random, body: bytearray) -> None:
    if body:
        body[rng.randrange(len(body))] ^= 1 << rng.randrange(8)


def b_insert(rng: random.Random, body: bytearray) -> None:
    at = rng.randrange(len(body) + 1)
    body[at:at] = rng.choice([b"\x00", b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\r", b"\n", b"\r\n\r\n",
                              b"\xe2\x80\xa8", b"\xc2\x85", b"\x1b[31m", b"data: ", b"\xf4\x90\x80\x80"])


def b_cut(rng: random.Random, body: bytearray) -> None:
    del body[rng.randrange(len(body) + 1):]


def b_repeat(rng: random.Random, body: bytearray) -> None:
    if body:
        start = rng.randrange(len(body))
        end = min(len(body), start + rng.randint(1, 200))
        body[end:end] = body[start:end]


BYTE_OPS: dict[str, Callable[[random.Random, bytearray], None]] = {
    "flip": b_flip, "insert": b_insert, "bcut": b_cut, "brepeat": b_repeat,
}
LEVELS = {"event": list(EVENT_OPS), "json": list(JSON_OPS), "frame": ["frame"], "byte": list(BYTE_OPS)}
ALL_OPS = [op for ops in LEVELS.values() for op in ops]


#: How often each level is drawn: most cases keep their frames whole, so the fold gets past the first
#: event (a byte flipped anywhere mostly ends the run at its first payload); interrupts and several runs
#: in one response weigh more, as they lead to the resume and to the saves.
LEVEL_WEIGHTS = {"event": 0.6, "frame": 0.18, "json": 0.12, "byte": 0.1}
EVENT_WEIGHTS = {op: 3.0 if op in ("interrupt", "concat") else 0.5 if op in ("retype", "unfield", "case") else 1.0
                 for op in EVENT_OPS}


def _draw(rng: random.Random, only: list[str] | None) -> str:
    if only:
        return rng.choice(only)
    level = rng.choices(list(LEVEL_WEIGHTS), weights=list(LEVEL_WEIGHTS.values()))[0]
    if level == "event":
        return rng.choices(list(EVENT_WEIGHTS), weights=list(EVENT_WEIGHTS.values()))[0]
    return rng.choice(LEVELS[level])


def mutate(rng: random.Random, events: list[Event], other: list[Event], only: list[str] | None = None) -> Case:
    """One case from ``events``: one to four operations, each at its level, applied in level order."""
    ops = sorted((_draw(rng, only) for _ in range(rng.choice([1, 1, 2, 2, 3, 4]))), key=ALL_OPS.index)
    case = Case(copy.deepcopy(events))
    for op in ops:
        if op in EVENT_OPS:
            EVENT_OPS[op](rng, case, other)
            case.ops.append(op)
    case.payloads = [dump(e) for e in case.events]
    for op in ops:
        if op in JSON_OPS and case.payloads:
            JSON_OPS[op](rng, case.payloads)
            case.ops.append(op)
        elif op == "frame":
            f_draw(rng, case)
            case.ops.append(f"frame:{','.join(sorted(case.framing)) or 'empty'}")
    body = bytearray(frame(rng, case.payloads, case.framing))
    for op in ops:
        if op in BYTE_OPS:
            BYTE_OPS[op](rng, body)
            case.ops.append(op)
    case.body = bytes(body)
    return case


def resume_entries(rng: random.Random, open_ids: list[str]) -> list[Any]:
    """Entries answering ``open_ids``, bent: one left out, one repeated, a look-alike, a wrong status …"""
    from agui_client import ResumeEntry

    entries = [ResumeEntry(interrupt_id=i, status="resolved", payload={"approved": True}) for i in open_ids]
    how = rng.randrange(8)
    if how == 1 and entries:
        entries.pop(rng.randrange(len(entries)))
    elif how == 2 and entries:
        entries.append(entries[0])
    elif how == 3:
        entries.append(ResumeEntry(interrupt_id=rng.choice(["zzz", "", "i0\u200b", "\ud800"]), status="resolved"))
    elif how == 4 and entries:
        entries[0] = ResumeEntry(interrupt_id=entries[0].interrupt_id, status="cancelled")
    elif how == 5 and entries:
        entries[0] = ResumeEntry(interrupt_id=entries[0].interrupt_id, status="resolved",
                                 payload=rng.choice([float("nan"), {"x": {1, 2}}, "\ud800", 2**70]))
    elif how == 6:
        entries = []
    return entries
