"""A mutation fuzzer of whole streams, over a real server on 127.0.0.1, checking the client's invariants.

``python -m tools.differential.mutate --seed N --cases K [--oracle DIR] [--only OP,OP] [--save DIR]``

Honest streams (the golden vectors, ``bench/gen.py`` streams, the producer shapes, families and SDK
habits of the differential, and what the bundled demo agent answers) are mutated at four levels, one
to four operations per case, each drawn from a ``random.Random`` seeded with the seed and the case's
number (so ``--seed N --cases K`` is the same K cases everywhere, and case ``i`` alone is
``--seed N --first i --cases 1``):

* events: dropped, repeated, swapped, cut short, spliced from another stream; ids made to collide
  across messages, tool calls, interrupts and runs; a field's type, value, case or unicode form
  changed (NUL, C0 and C1 controls, escape sequences, bidi overrides, lone UTF-16 halves, NFD forms,
  huge and empty values); numbers out of range; interrupts with expired, repeated or missing ids;
* JSON text: duplicate keys, ``NaN``, a payload cut, trailing text, escaped surrogates, deep nesting;
* SSE frames: CR, LF and CRLF line ends mixed, comments, ``event:``/``id:``/``retry:`` fields, a
  payload over several ``data:`` lines, a missing ``data:`` prefix, a BOM at the start or later, the
  last blank line missing, empty payloads;
* bytes: flipped, inserted (NUL, 0xFF, invalid UTF-8), cut anywhere, a range repeated.

A case whose first run stops for interrupts is resumed (by the mutated body of another stream) with
entries that cover, drop, repeat, misname or expire them.

Every case runs on both shells (``AgentClient``, ``AsyncAgentClient``), each on a store of its own
(a ``MemoryStore`` and an ``SqliteStore``, drawn per case), under a deadline, and is checked for:

1. ``typed``: every failure is an ``AguiError``, never a bare ``KeyError``, ``TypeError`` …, and never a
   hang; a ``ProtocolError`` names its run and where (an event index, or a pointer);
2. ``kept``: the state folded so far is readable after the error (the thread's and the error's result);
3. ``frozen``: what was handed out (events, messages, results, interrupts, the thread's wire form at
   the end of each run) does not change afterwards;
4. ``stored``: the thread reloaded from its store equals the live one;
5. ``inert``: what the CLI's renderers write of the run holds no control character or escape sequence;
6. ``reference`` (with ``--oracle``): a stream the reference client takes and we refuse, or the other
   way round, is one ``REFUSALS`` names with the documented difference it meets.

One line per finding (``FINDING seed case op+op invariant: detail``) and a count per invariant at the
end; exit status 1 when there was a finding. ``--save DIR`` writes each failing case's bodies.
Not part of the test run except for a smoke run of a few hundred cases
(``tests/test_attack_mutations.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import functools
import io
import json
import random
import re
import sys
import tempfile
import threading
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import attrs

from . import families, hostile, producers, sdkwire

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "streams"
NOW = datetime(2026, 11, 30, tzinfo=timezone.utc)  # the clients' pinned clock (expiresAt is judged against it)

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
    import subprocess

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
    return [s for s in out if any(isinstance(e, dict) for e in s.events)]


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
    how = rng.randrange(7)
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
    """A value nested deep (written as JSON text by ``_dump``: Python's encoder would recurse too far)."""
    slot = _pick_slot(rng, case.events, lambda p, v: isinstance(v, (dict, list)) or p[-1] in ("value", "snapshot"))
    if slot:
        i, path, _ = slot
        _set(case.events[i], path, f"@@deep:{rng.choice([100, 300, 1200, 100_000])}:{rng.randrange(3)}@@")


_DEEP = re.compile(r'"@@deep:(\d+):(\d)@@"')


def _deep(match: re.Match[str]) -> str:
    depth, kind = int(match.group(1)), int(match.group(2))
    opens, closes = [("[", "]"), ('{"a":', "}"), ('[{"a":', "}]")][kind]
    return opens * depth + "1" + closes * depth


EVENT_OPS: dict[str, Callable[[random.Random, Case, list[Event]], None]] = {
    "drop": e_drop, "repeat": e_repeat, "swap": e_swap, "cut": e_cut, "splice": e_splice, "collide": e_collide,
    "retype": e_retype, "unfield": e_remove_field, "case": e_case, "unicode": e_unicode, "huge": e_huge,
    "number": e_number, "interrupt": e_interrupt, "nest": e_nest,
}


def _dump(event: Event) -> str:
    if isinstance(event, str):
        return event
    text = json.dumps(event, ensure_ascii=False)
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        text = json.dumps(event)
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


def mutate(rng: random.Random, events: list[Event], other: list[Event], only: list[str] | None = None) -> Case:
    """One case from ``events``: one to four operations, each at its level, applied in level order."""
    pool = only or ALL_OPS
    ops = sorted((rng.choice(pool) for _ in range(rng.choice([1, 1, 2, 2, 3, 4]))), key=ALL_OPS.index)
    case = Case(copy.deepcopy(events))
    for op in ops:
        if op in EVENT_OPS:
            EVENT_OPS[op](rng, case, other)
            case.ops.append(op)
    case.payloads = [_dump(e) for e in case.events]
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


# -------------------------------------------------------------------------------------------------
# The server: every request on ``/c/KEY`` gets the next body queued for KEY, in pieces
# -------------------------------------------------------------------------------------------------


class Bodies:
    """An ASGI agent answering each request on ``/c/KEY`` with the next body queued for ``KEY``, sent in
    the pieces queued with it (so a frame, a CRLF or a UTF-8 sequence is split between reads)."""

    def __init__(self) -> None:
        self.queued: dict[str, list[tuple[bytes, list[int]]]] = {}
        self._lock = threading.Lock()

    def put(self, key: str, body: bytes, cuts: list[int]) -> None:
        with self._lock:
            self.queued.setdefault(key, []).append((body, cuts))

    def drop(self, key: str) -> None:
        with self._lock:
            self.queued.pop(key, None)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        with self._lock:
            queue = self.queued.get(scope["path"].rsplit("/", 1)[-1]) or [(b"", [])]
            body, cuts = queue.pop(0) if len(queue) > 1 else queue[0]
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        at = 0
        for cut in [*cuts, len(body)]:
            if cut > at:
                await send({"type": "http.response.body", "body": body[at:cut], "more_body": True})
                at = cut
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def cuts_of(rng: random.Random, body: bytes) -> list[int]:
    """Where a body is split into reads: nowhere, everywhere, or at a few places."""
    how = rng.randrange(4)
    if how == 0 or len(body) < 2:
        return []
    if how == 1 and len(body) < 4000:
        return list(range(1, len(body)))
    return sorted(rng.sample(range(1, len(body)), min(len(body) - 1, rng.randint(1, 12))))


# -------------------------------------------------------------------------------------------------
# The checks
# -------------------------------------------------------------------------------------------------

#: What a renderer may not write: a C0 or C1 control other than LF and TAB, DEL, an escape, a bidi control.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@dataclass
class Finding:
    """One broken invariant in one case, on one shell."""

    invariant: str
    shell: str
    detail: str


class Watch:
    """What one case on one shell handed out and what it broke."""

    def __init__(self, shell: str) -> None:
        self.shell = shell
        self.handed: list[tuple[str, Any, Any]] = []
        self.findings: list[Finding] = []
        #: The thread in wire form as the last run that ended saved it.
        self.saved: dict[str, Any] | None = None
        #: Whether the first run raised a ProtocolError (the stream was refused).
        self.refused: bool | None = None

    def hand(self, what: str, obj: Any) -> None:
        """``obj`` was handed out: kept with a deep copy of it, compared at the end."""
        try:
            self.handed.append((what, obj, copy.deepcopy(obj)))
        except Exception as exc:  # noqa: BLE001 - an object that cannot be copied is itself a finding
            self.find("frozen", f"{what} cannot be copied: {type(exc).__name__}: {exc}")

    def find(self, invariant: str, detail: str) -> None:
        self.findings.append(Finding(invariant, self.shell, detail[:400]))

    def settle(self) -> None:
        for what, obj, then in self.handed:
            try:
                same = obj == then
            except Exception as exc:  # noqa: BLE001
                self.find("frozen", f"{what} cannot be compared: {type(exc).__name__}: {exc}")
                continue
            if not same:
                self.find("frozen", f"{what} changed after it was handed out")


def check_error(watch: Watch, exc: BaseException, thread: Any) -> None:
    """Invariants 1 and 2 for an error a run raised."""
    from agui_client import AguiError, ProtocolError

    if not isinstance(exc, AguiError):
        import traceback

        where = "".join(traceback.format_exception(exc)[-3:])
        watch.find("typed", f"{type(exc).__name__}: {exc!s:.200} | {where}")
        return
    if isinstance(exc, ProtocolError):
        if exc.index is None and exc.pointer is None:
            watch.find("located", f"{type(exc).__name__} [{exc.rule}] without index or pointer: {exc.detail:.200}")
        if exc.result is None:
            watch.find("kept", f"{type(exc).__name__} without the result folded so far")
    if exc.result is not None:
        try:
            json.dumps(exc.result.state.to_wire())
            _ = exc.result.messages, exc.result.text, exc.result.new_messages
        except Exception as exc2:  # noqa: BLE001
            watch.find("kept", f"the error's result is not readable: {type(exc2).__name__}: {exc2}")
    try:
        json.dumps(thread.state.to_wire())
    except Exception as exc2:  # noqa: BLE001
        watch.find("kept", f"the thread's state is not readable: {type(exc2).__name__}: {exc2}")


def check_rendered(watch: Watch, events: list[Any], result: Any, exc: BaseException | None, state: Any) -> None:
    """Invariant 5: the CLI's renderers, plain and rich, write nothing a terminal would obey."""
    from agui_client.cli import render

    for plain in (True, False):
        sink = io.StringIO()
        out = render.make_output(plain=plain, stream=sink)
        try:
            renderer = render.EventRenderer(out, state)
            for event in events:
                renderer.event(event)
            renderer.close()
            if result is not None:
                render.render_run_end(out, result, "agui")
            if exc is not None:
                render.render_error(out, exc)
            render.render_messages(out, state)
            for interrupt in state.open_interrupts:
                render.render_interrupt(out, interrupt, state, NOW)
        except Exception as exc2:  # noqa: BLE001 - a renderer that fails is a finding
            watch.find("inert", f"{'plain' if plain else 'rich'} render failed: {type(exc2).__name__}: {exc2}")
            continue
        bad = UNSAFE.search(sink.getvalue())
        if bad:
            text = sink.getvalue()
            watch.find("inert", f"{'plain' if plain else 'rich'} output holds {bad.group()!r}: "
                       f"{text[max(0, bad.start() - 60): bad.end() + 20]!r}")


def check_stored(watch: Watch, reloaded: Any, live: Any) -> None:
    """Invariant 4: the thread from the store is the live one."""
    try:
        a, b = reloaded.to_wire(), live.to_wire()
    except Exception as exc:  # noqa: BLE001
        watch.find("stored", f"to_wire failed: {type(exc).__name__}: {exc}")
        return
    if a != b:
        keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        first = keys[0]
        stored, live_text = (json.dumps(side.get(first), default=repr)[:150] for side in (a, b))
        watch.find("stored", f"reloaded thread differs in {keys}; {first}: stored {stored} live {live_text}")


# -------------------------------------------------------------------------------------------------
# Running one case on one shell
# -------------------------------------------------------------------------------------------------


@dataclass
class Step:
    """One run of a case: the body the agent answers with and how the run is asked for."""

    key: str
    message: str | None = "hi"
    resume_from: random.Random | None = None  # (when set: resume whatever is open, bent by this random)


def _client_kwargs(store: Any) -> dict[str, Any]:
    return {"store": store, "idle_timeout": 5.0, "run_timeout": 20.0, "clock": lambda: NOW, "max_retries": 0}


def _after_run(watch: Watch, thread: Any, events: list[Any], result: Any, exc: BaseException | None,
               reload: Callable[[], Any]) -> None:
    from agui_client import ProtocolError

    if watch.refused is None:
        watch.refused = isinstance(exc, ProtocolError)
    if exc is not None:
        check_error(watch, exc, thread)
    if result is not None:
        # (all of the result but its ``state``, which is the live thread: documented to change with later runs)
        watch.hand("result", {f.name: getattr(result, f.name) for f in attrs.fields(type(result)) if f.name != "state"})
        watch.hand("result.messages", result.messages)
        watch.hand("result.interrupts", result.interrupts)
    try:
        watch.hand("state.to_wire()", thread.state.to_wire())
        watch.hand("state.messages", thread.state.messages)
    except Exception as exc2:  # noqa: BLE001
        watch.find("kept", f"state unreadable: {type(exc2).__name__}: {exc2}")
        return
    check_rendered(watch, events, result, exc, thread.state)
    # A run that raised is not saved (docs/streaming.md, TR-16): the store still holds the thread as the
    # last run that ended left it. One that ended is saved: the store holds the live thread.
    try:
        reloaded = reload()
    except Exception as exc2:  # noqa: BLE001
        watch.find("stored", f"reload failed: {type(exc2).__name__}: {exc2}")
        return
    ended = any(type(e).__name__ in ("RunFinishedEvent", "RunErrorEvent") for e in events)
    if exc is None:
        watch.saved = thread.state.to_wire()
        check_stored(watch, reloaded, thread.state)
    elif ended or getattr(exc, "thread_saved", False):
        # (a run of the response ended before the failure, or it asked questions: saved as far as that)
        watch.saved = reloaded.to_wire()
    elif watch.saved is not None and reloaded.to_wire() != watch.saved:
        watch.find("stored", f"after a failed run the store no longer holds the last saved thread "
                             f"({type(exc).__name__})")


def _resume(step: Step, thread: Any) -> tuple[Any, str | None]:
    if step.resume_from is None:
        return None, step.message
    ids = [i.id for i in thread.state.open_interrupts]
    return resume_entries(step.resume_from, ids), None


def run_sync(url: str, store: Any, thread_id: str, steps: list[Step]) -> Watch:
    from agui_client import AgentClient

    watch = Watch("sync")
    with AgentClient(url, **_client_kwargs(store)) as client:
        thread = client.thread(thread_id)
        for step in steps:
            client.url = f"{url}c/{step.key}"
            events: list[Any] = []
            result, exc = None, None
            try:
                resume, message = _resume(step, thread)
                with thread.stream(message, resume=resume) as stream:
                    for event in stream:
                        events.append(event)
                        watch.hand("event", event)
                result = stream.result
            except Exception as caught:  # noqa: BLE001 - judged by check_error
                exc = caught
            _after_run(watch, thread, events, result, exc, lambda: client.thread(thread_id).state)
    watch.settle()
    return watch


async def run_async(url: str, store: Any, thread_id: str, steps: list[Step]) -> Watch:
    from agui_client import AsyncAgentClient

    watch = Watch("async")
    async with AsyncAgentClient(url, **_client_kwargs(store)) as client:
        thread = await client.load_thread(thread_id)
        for step in steps:
            client.url = f"{url}c/{step.key}"
            events: list[Any] = []
            result, exc = None, None
            try:
                resume, message = _resume(step, thread)
                async with thread.stream(message, resume=resume) as stream:
                    async for event in stream:
                        events.append(event)
                        watch.hand("event", event)
                result = stream.result
            except Exception as caught:  # noqa: BLE001 - judged by check_error
                exc = caught
            reloaded = (await client.load_thread(thread_id)).state
            _after_run(watch, thread, events, result, exc, functools.partial(lambda state: state, reloaded))
    watch.settle()
    return watch


def deadline(seconds: float, work: Callable[[], Watch], shell: str) -> Watch:
    """``work()`` in a thread of its own; a watch saying ``hang`` when it takes longer than ``seconds``."""
    box: list[Watch] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            box.append(work())
        except BaseException as exc:  # noqa: BLE001 - reported as the finding it is
            failure.append(exc)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        watch = Watch(shell)
        watch.find("hang", f"no answer in {seconds} s")
        return watch
    if failure:
        watch = Watch(shell)
        exc = failure[0]
        watch.find("typed", f"escaped the harness: {type(exc).__name__}: {exc!s:.300}")
        return watch
    return box[0]


# -------------------------------------------------------------------------------------------------
# The run
# -------------------------------------------------------------------------------------------------


def demo_streams(url: str) -> list[list[Event]]:
    """What the bundled demo agent answers: a new message, then an approving resume."""
    from agui_client import AgentClient, ResumeEntry, encode

    out: list[list[Event]] = []
    with AgentClient(url) as client:
        thread = client.thread()
        for message, resume in (("Delete the staging environment", None), (None, True)):
            entries = [ResumeEntry(interrupt_id=i.id, status="resolved", payload={"approved": True})
                       for i in thread.state.open_interrupts] if resume else None
            with thread.stream(message, resume=entries) as stream:
                out.append([encode(event) for event in stream])
    return out


@dataclass
class Tally:
    """Cases run and findings, by invariant."""

    cases: int = 0
    runs: int = 0
    findings: dict[str, int] = field(default_factory=dict)
    first: dict[str, str] = field(default_factory=dict)
    compared: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)


def run_case(bodies: Bodies, url: str, seed: int, index: int, pool: list[Seed], stores: dict[str, Any],
             only: list[str] | None, limit: float) -> tuple[Case, list[Finding], list[bytes]]:
    """Case ``index`` of ``seed`` on both shells; its findings, and the bodies it was answered with."""
    from agui_client.stores import MemoryStore

    rng = random.Random(f"{seed}:{index}")
    base = rng.choice(pool)
    case = mutate(rng, base.events, rng.choice(pool).events, only)
    case.ops.insert(0, base.name)
    answers = [(case.body or b"", cuts_of(rng, case.body or b""))]
    resumed = rng.random() < 0.3
    if resumed:
        follow = mutate(rng, rng.choice(pool).events, [], only) if rng.random() < 0.5 else Case(
            [], body=b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r2"}\n\n'
                     b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r2"}\n\n')
        answers.append((follow.body or b"", cuts_of(rng, follow.body or b"")))
        case.ops.append("resume")
    on_sqlite = rng.random() < 0.5
    findings: list[Finding] = []
    case.refused = None
    for shell in ("sync", "async"):
        key = f"s{seed}c{index}{shell}"
        for n, (body, cuts) in enumerate(answers):
            bodies.put(f"{key}-{n}", body, cuts)
        steps = [Step(f"{key}-0")]
        if resumed:
            steps.append(Step(f"{key}-1", resume_from=random.Random(f"{seed}:{index}:resume")))
        store = stores[shell] if on_sqlite else MemoryStore()
        thread_id = f"t-{seed}-{index}"
        work = functools.partial(run_sync, url, store, thread_id, steps) if shell == "sync" else \
            functools.partial(asyncio.run, run_async(url, store, thread_id, steps))
        watch = deadline(limit, work, shell)
        findings += watch.findings
        if shell == "sync":
            case.refused = watch.refused
        for n in range(len(answers)):
            bodies.drop(f"{key}-{n}")
    return case, findings, [body for body, _ in answers]


@contextmanager
def harness(with_demo: bool = True) -> Iterator[tuple[Bodies, str, list[Seed], dict[str, Any]]]:
    """The server, the seeds and the two SQLite stores (one per shell) of a fuzzing run."""
    from agui_client.stores import SqliteStore
    from agui_client.testing import ScriptedAgent, serve

    with ExitStack() as stack:
        bodies = Bodies()
        url = stack.enter_context(serve(bodies))
        demo: list[list[Event]] = []
        if with_demo:
            demo = demo_streams(stack.enter_context(serve(ScriptedAgent.demo())))
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="agui-mutate-")))
        stores = {shell: SqliteStore(folder / f"{shell}.db") for shell in ("sync", "async")}
        for store in stores.values():
            stack.callback(store.close)
        yield bodies, url, seeds(demo), stores


def reference_refuses(oracle: Any, body: bytes, folder: Path) -> bool | None:
    """Whether the reference client refuses ``body`` on its HTTP path (``None``: the oracle failed)."""
    from .reference import Stream, make_golden, run_reference

    path = folder / "case.sse"
    path.write_bytes(body)
    try:
        out = run_reference(oracle, Stream("case", path))
    except make_golden().OracleFailure:
        return None
    return not out.get("ok")


def fuzz(seed: int, cases: int, first: int = 0, only: list[str] | None = None, limit: float = 60.0,
         save: Path | None = None, report: Callable[[str], None] = print, oracle: Any = None,
         oracle_every: int = 10) -> Tally:
    """Run cases ``first`` … ``first + cases - 1`` of ``seed``; one line per finding through ``report``.

    With ``oracle`` (make_golden's ``Oracle``), every ``oracle_every``-th case's first body is also folded
    by the reference client, and a verdict that differs from ours is reported as a ``VERDICT`` line, for
    triage against the documented differences (not counted as a finding: most are documented ones, a
    stream without its terminal event, CR line ends, a payload the reference cannot parse where we drop
    the frame with a warning)."""
    tally = Tally()
    with harness() as (bodies, url, pool, stores), tempfile.TemporaryDirectory() as scratch:
        for index in range(first, first + cases):
            case, findings, answers = run_case(bodies, url, seed, index, pool, stores, only, limit)
            if oracle is not None and index % oracle_every == 0 and case.refused is not None:
                theirs = reference_refuses(oracle, answers[0], Path(scratch))
                tally.compared += 1
                if theirs is not None and theirs != case.refused:
                    key = f"{'+'.join(case.ops[1:])}: ours {'refuse' if case.refused else 'accept'}"
                    tally.verdicts[key] = tally.verdicts.get(key, 0) + 1
                    report(f"VERDICT {seed} {index} {'+'.join(case.ops)}: we "
                           f"{'refuse' if case.refused else 'accept'}, the reference "
                           f"{'refuses' if theirs else 'accepts'}")
            tally.cases += 1
            tally.runs += 2 * len(answers)
            for finding in findings:
                tally.findings[finding.invariant] = tally.findings.get(finding.invariant, 0) + 1
                line = f"FINDING {seed} {index} {'+'.join(case.ops)} {finding.invariant} {finding.shell}: " \
                       f"{finding.detail}"
                tally.first.setdefault(finding.invariant, line)
                report(line)
            if findings and save is not None:
                save.mkdir(parents=True, exist_ok=True)
                for n, body in enumerate(answers):
                    (save / f"s{seed}-c{index}-{n}.sse").write_bytes(body)
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.differential.mutate", description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--first", type=int, default=0, help="the first case's number (to rerun one case)")
    parser.add_argument("--only", default="", help=f"operations to draw from (comma separated): {','.join(ALL_OPS)}")
    parser.add_argument("--deadline", type=float, default=60.0, help="seconds a case may take on one shell")
    parser.add_argument("--save", type=Path, help="write each failing case's bodies here")
    parser.add_argument("--oracle", type=Path, help="the shared oracle with `npm ci` done: compare verdicts")
    parser.add_argument("--oracle-every", type=int, default=10, help="compare every K-th case with the oracle")
    parser.add_argument("--node", default="node")
    args = parser.parse_args(argv)
    only = [op for op in args.only.split(",") if op] or None
    unknown = sorted(set(only or ()) - set(ALL_OPS))
    if unknown:
        parser.error(f"unknown operations: {unknown}")
    oracle = None
    if args.oracle is not None:
        from .reference import make_golden

        oracle = make_golden().Oracle(args.oracle.resolve(), args.node)
    tally = fuzz(args.seed, args.cases, args.first, only, args.deadline, args.save, oracle=oracle,
                 oracle_every=args.oracle_every)
    print(f"seed {args.seed}: {tally.cases} cases, {tally.runs} runs, findings: "
          f"{json.dumps(tally.findings, sort_keys=True) if tally.findings else 'none'}"
          + (f"; {tally.compared} compared with the reference, {sum(tally.verdicts.values())} verdicts differ"
             if oracle is not None else ""))
    return 1 if tally.findings else 0


if __name__ == "__main__":
    sys.exit(main())
