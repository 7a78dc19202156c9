"""The streams the differential check folds: deterministic for a seed, standard library only.

Four families, in turn:

- ``soup``: random events over a small set of ids and owners, fields of the wrong type, nulls,
  unknown members, patches that do not apply, chunks without lanes, unknown types (as the fuzz
  tests draw them);
- ``talk``: mostly valid multi-run threads (text, reasoning, tool calls with and without results,
  chunks, state snapshots and deltas, messages snapshots restating the thread, activities, steps,
  subagents, every outcome, late errors, cut streams), then perhaps mutated (an event dropped,
  repeated, moved, a field retyped or nulled, a member added, a line that is not JSON);
- ``gen``: the shared stream generator's kinds at a small scale;
- ``golden``: the golden vectors' hand-written streams, as they are and mutated.

A case is ``{"name": str, "runs": [[payload, ...], ...], "framing": "sse" | "jsonl"}``; each payload
is the exact text of one event (compact or spaced JSON, keys perhaps reordered), and the runs are
folded one after another into one thread.
"""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

IDS = ["m1", "m2", "m3", "c1", "c2", "", "s1", "i1", "t1"]
OWNERS = [None, "s1", "s2", ""]
TYPES = ["RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "STEP_STARTED", "STEP_FINISHED", "TEXT_MESSAGE_START",
         "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "TEXT_MESSAGE_CHUNK", "TOOL_CALL_START", "TOOL_CALL_ARGS",
         "TOOL_CALL_END", "TOOL_CALL_CHUNK", "TOOL_CALL_RESULT", "STATE_SNAPSHOT", "STATE_DELTA", "MESSAGES_SNAPSHOT",
         "ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA", "RAW", "CUSTOM", "REASONING_START", "REASONING_MESSAGE_START",
         "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_MESSAGE_CHUNK", "REASONING_END",
         "REASONING_ENCRYPTED_VALUE", "SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR",
         "THINKING_TEXT_MESSAGE_CONTENT", "AGUI_PING"]
TEXTS = ["", "a", "hello ", "wörld", "\u2028", "😀", "\ud83d", "\ude00", "{", "}", '{"a":1}', "x" * 40]
POINTERS = ["", "/a", "/a/0", "/a/-", "/b/c", "/a~1b", "/0", "/-", "/a~0", "/c", "/a~2"]


def _json_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 2 or roll < 0.5:
        return rng.choice([None, True, False, 0, 1, -3, 2**53 + 1, 1.5, "", "v", "ü", 10**20])
    if roll < 0.75:
        return [_json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["a", "b", "c", "", "~", "/"]): _json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def _patch(rng: random.Random) -> list[Any]:
    ops: list[Any] = []
    for _ in range(rng.randint(0, 3)):
        op: Any = {"op": rng.choice(["add", "remove", "replace", "move", "copy", "test", "bogus"]),
                   "path": rng.choice(POINTERS)}
        if rng.random() < 0.7:
            op["value"] = _json_value(rng)
        if rng.random() < 0.3:
            op["from"] = rng.choice(POINTERS)
        if rng.random() < 0.05:
            op = rng.choice(["not an op", {"op": 1, "path": "/a"}, {"op": "add", "path": 7, "value": 1}])
        ops.append(op)
    return ops


def _message(rng: random.Random) -> dict[str, Any]:
    role = rng.choice(["user", "assistant", "tool", "activity", "reasoning", "system", "developer", "wizard"])
    message: dict[str, Any] = {"id": rng.choice(IDS), "role": role}
    if rng.random() < 0.8:
        message["content"] = rng.choice([rng.choice(TEXTS), {"k": 1}, [{"type": "text", "text": "p"}], None])
    if role == "tool" or rng.random() < 0.1:
        message["toolCallId"] = rng.choice(IDS)
    if role == "activity":
        message["activityType"] = "p"
    if role == "assistant" and rng.random() < 0.5:
        message["toolCalls"] = [{"id": rng.choice(IDS), "type": "function",
                                 "function": {"name": "f", "arguments": rng.choice(["{}", "x", ""])}}]
    if rng.random() < 0.15:
        message["subagentRunId"] = rng.choice(["s1", "s2", ""])
    return message


def _outcome(rng: random.Random) -> dict[str, Any]:
    roll = rng.random()
    if roll < 0.3:
        return {"type": "success"}
    if roll < 0.45:
        return {"type": "success", "pendingToolCallIds": [rng.choice(IDS) for _ in range(rng.randint(0, 3))]}
    if roll < 0.8:
        interrupts = []
        for _ in range(rng.randint(0, 3)):
            item: dict[str, Any] = {"id": rng.choice(IDS), "reason": rng.choice(["approval", "input"])}
            if rng.random() < 0.3:
                item["expiresAt"] = rng.choice(["2020-01-01T00:00:00Z", "garbage", "", "2999-01-01"])
            if rng.random() < 0.3:
                item["responseSchema"] = rng.choice([{"type": "object"}, True, {"type": "string"}])
            if rng.random() < 0.2:
                item["toolCallId"] = rng.choice(IDS)
            if rng.random() < 0.2:
                item["subagentRunId"] = rng.choice(["s1", "s2", ""])
            interrupts.append(item)
        return {"type": "interrupt", "interrupts": interrupts}
    if roll < 0.9:
        return {"type": "cancelled"}
    return {"type": rng.choice(["paused", "interrupt"])}


def soup_event(rng: random.Random) -> dict[str, Any]:
    """One random event: a type, and up to seven fields drawn from every event's fields."""
    kind = rng.choice(TYPES)
    event: dict[str, Any] = {"type": kind}
    fields: dict[str, Any] = {
        "threadId": lambda: "t", "runId": lambda: rng.choice(["r1", "r2"]), "messageId": lambda: rng.choice(IDS),
        "toolCallId": lambda: rng.choice(IDS), "toolCallName": lambda: rng.choice(["f", "g"]),
        "delta": lambda: _patch(rng) if kind == "STATE_DELTA" else rng.choice(TEXTS),
        "stepName": lambda: rng.choice(["plan", "act"]), "role": lambda: rng.choice(["assistant", "user", "reasoning"]),
        "parentMessageId": lambda: rng.choice(IDS), "subagentRunId": lambda: rng.choice(OWNERS),
        "content": lambda: rng.choice([rng.choice(TEXTS), _json_value(rng)]), "snapshot": lambda: _json_value(rng),
        "patch": lambda: _patch(rng), "messages": lambda: [_message(rng) for _ in range(rng.randint(0, 3))],
        "activityType": lambda: "p", "replace": lambda: rng.choice([True, False]),
        "name": lambda: rng.choice(["acme.x", "sub"]), "value": lambda: _json_value(rng),
        "event": lambda: _json_value(rng), "message": lambda: rng.choice(TEXTS), "code": lambda: rng.choice(["", "E"]),
        "outcome": lambda: _outcome(rng), "result": lambda: _json_value(rng),
        "subtype": lambda: rng.choice(["message", "tool-call", "other"]), "entityId": lambda: rng.choice(IDS),
        "encryptedValue": lambda: "e", "parentSubagentRunId": lambda: rng.choice(OWNERS),
        "timestamp": lambda: rng.choice([0, 5, "1", 2**60]),
        "metadata": lambda: rng.choice([None, {}, {"k": 1}, {"k": "v", "j": [1]}]),
        "usage": lambda: rng.choice([[{"inputTokens": 3, "outputTokens": 4}], [{"inputTokens": -1}], {"x": 1}]),
        "rawEvent": lambda: {"raw": 1}, "unknownField": lambda: rng.choice([None, 1, "x"]),
    }
    for name in rng.sample(sorted(fields), rng.randint(0, 7)):
        value = fields[name]()
        if value is None and name != "metadata" and rng.random() < 0.5:
            continue
        event[name] = value
    return event


class _Talk:
    """A mostly valid thread of several runs, generated block by block."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.n = 0
        self.messages: list[dict[str, Any]] = []
        self.state: Any = None
        self.open_calls: list[str] = []

    def fresh(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def run(self, run_id: str) -> list[dict[str, Any]]:
        rng = self.rng
        out: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": "t", "runId": run_id}]
        if rng.random() < 0.15:
            out[0]["input"] = {"threadId": "t", "runId": run_id, "messages": copy.deepcopy(self.messages[-3:]),
                               "tools": [], "context": [], "state": {}, "forwardedProps": {}}
        if rng.random() < 0.1:
            out[0]["protocolVersion"] = rng.choice(["1.0", "1.1", "2.0", "x"])
        for _ in range(rng.randint(1, 6)):
            out += self.block()
        out += self.finish(run_id)
        return out

    def block(self) -> list[dict[str, Any]]:
        rng = self.rng
        kind = rng.choice(["text", "text", "chunks", "reasoning", "tool", "tool", "state", "snapshot", "activity",
                           "step", "subagent", "custom", "result"])
        owner = rng.choice([None, None, None, "s1"]) if kind in ("text", "tool", "reasoning") else None
        tag = {"subagentRunId": owner} if owner is not None else {}
        if kind == "text":
            mid = self.fresh("m")
            events: list[dict[str, Any]] = [{"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant",
                                             **tag}]
            if rng.random() < 0.2:
                events[0]["metadata"] = {"k": rng.randint(0, 3)}
            text = ""
            for _ in range(rng.randint(0, 5)):
                delta = rng.choice(TEXTS[1:6])
                text += delta
                events.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": delta})
            events.append({"type": "TEXT_MESSAGE_END", "messageId": mid})
            self.messages.append({"id": mid, "role": "assistant", "content": text})
            return events
        if kind == "chunks":
            mid = self.fresh("m")
            events = [{"type": "TEXT_MESSAGE_CHUNK", "messageId": mid, "delta": "a"}]
            events += [{"type": "TEXT_MESSAGE_CHUNK", "delta": rng.choice(TEXTS[1:5])}
                       for _ in range(rng.randint(0, 3))]
            if rng.random() < 0.5:
                cid = self.fresh("c")
                events.append({"type": "TOOL_CALL_CHUNK", "toolCallId": cid, "toolCallName": "f", "delta": "{"})
                events.append({"type": "TOOL_CALL_CHUNK", "delta": "}"})
            return events
        if kind == "reasoning":
            rid = self.fresh("r")
            return [{"type": "REASONING_START", "messageId": rid, **tag},
                    {"type": "REASONING_MESSAGE_START", "messageId": rid, "role": "reasoning", **tag},
                    {"type": "REASONING_MESSAGE_CONTENT", "messageId": rid, "delta": "hm"},
                    {"type": "REASONING_MESSAGE_END", "messageId": rid},
                    {"type": "REASONING_END", "messageId": rid}]
        if kind == "tool":
            cid = self.fresh("c")
            start: dict[str, Any] = {"type": "TOOL_CALL_START", "toolCallId": cid, "toolCallName": rng.choice("fg"),
                                     **tag}
            if self.messages and rng.random() < 0.4 and self.messages[-1]["role"] == "assistant":
                start["parentMessageId"] = self.messages[-1]["id"]
            events = [start]
            for part in rng.choice([['{"a":', "1}"], ["{}"], [], ["not json"]]):
                events.append({"type": "TOOL_CALL_ARGS", "toolCallId": cid, "delta": part})
            events.append({"type": "TOOL_CALL_END", "toolCallId": cid})
            if rng.random() < 0.5:
                events.append({"type": "TOOL_CALL_RESULT", "messageId": self.fresh("t"), "toolCallId": cid,
                               "content": rng.choice(["ok", "", "42"])})
            else:
                self.open_calls.append(cid)
            return events
        if kind == "result" and self.open_calls:
            cid = self.open_calls.pop(0)
            return [{"type": "TOOL_CALL_RESULT", "messageId": self.fresh("t"), "toolCallId": cid, "role": "tool",
                     "content": "late"}]
        if kind == "state":
            if self.state is None or rng.random() < 0.3:
                self.state = {"a": [1, 2], "b": {"c": "x"}, "n": 0}
                return [{"type": "STATE_SNAPSHOT", "snapshot": copy.deepcopy(self.state)}]
            ops = rng.choice([
                [{"op": "replace", "path": "/n", "value": rng.randint(0, 9)}],
                [{"op": "add", "path": "/a/-", "value": "z"}],
                [{"op": "add", "path": "/b/d", "value": {"e": [1]}}, {"op": "remove", "path": "/b/d"}],
                [{"op": "test", "path": "/n", "value": 0}],
                [{"op": "copy", "from": "/a", "path": "/a2"}],
                [{"op": "move", "from": "/b", "path": "/bb"}, {"op": "move", "from": "/bb", "path": "/b"}],
                [{"op": "remove", "path": "/missing"}],
            ])
            return [{"type": "STATE_DELTA", "delta": ops}]
        if kind == "snapshot":
            restated = copy.deepcopy(self.messages[-rng.randint(0, 4):]) if self.messages else []
            new = {"id": self.fresh("u"), "role": rng.choice(["user", "system", "reasoning"]), "content": "s"}
            messages = [*restated, new]
            if rng.random() < 0.3:
                messages.append({"id": self.fresh("a"), "role": "assistant", "toolCalls": [
                    {"id": self.fresh("c"), "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
            self.messages.extend(messages[len(restated):])
            return [{"type": "MESSAGES_SNAPSHOT", "messages": messages}]
        if kind == "activity":
            aid = self.fresh("act")
            events = [{"type": "ACTIVITY_SNAPSHOT", "messageId": aid, "activityType": "plan", "content": {"s": [1]}}]
            if rng.random() < 0.5:
                events.append({"type": "ACTIVITY_SNAPSHOT", "messageId": aid, "activityType": "plan",
                               "content": {"s": [2]}, "replace": False})
            events.append({"type": "ACTIVITY_DELTA", "messageId": aid, "activityType": "plan",
                           "patch": rng.choice([[{"op": "add", "path": "/s/-", "value": 3}],
                                                [{"op": "replace", "path": "", "value": 1}],
                                                [{"op": "remove", "path": "/zz"}]])})
            return events
        if kind == "step":
            name = rng.choice(["plan", "act"])
            return [{"type": "STEP_STARTED", "stepName": name}, {"type": "STEP_FINISHED", "stepName": name}]
        if kind == "subagent":
            sid = self.fresh("s")
            mid = self.fresh("m")
            outcome = rng.choice([{"type": "success"}, {"type": "suspended", "interruptIds": ["i1"]}])
            end: dict[str, Any] = rng.choice([
                {"type": "SUBAGENT_FINISHED", "subagentRunId": sid, "outcome": outcome},
                {"type": "SUBAGENT_ERROR", "subagentRunId": sid, "message": "boom"}])
            return [{"type": "SUBAGENT_STARTED", "subagentRunId": sid, "name": "sub"},
                    {"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant", "subagentRunId": sid},
                    {"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": "sub says", "subagentRunId": sid},
                    {"type": "TEXT_MESSAGE_END", "messageId": mid, "subagentRunId": sid}, end]
        return [{"type": rng.choice(["CUSTOM", "RAW"]), "name": "acme.x", "value": {"k": 1}, "event": {"e": 1}}]

    def finish(self, run_id: str) -> list[dict[str, Any]]:
        rng = self.rng
        roll = rng.random()
        if roll < 0.1:
            return []  # cut: the stream ends mid-run
        if roll < 0.25:
            return [{"type": "RUN_ERROR", "message": "failed", "code": "E1"}]
        finished: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id}
        if rng.random() < 0.8:
            finished["outcome"] = _outcome(rng) if rng.random() < 0.5 else {"type": "success"}
        if rng.random() < 0.3:
            finished["usage"] = [{"inputTokens": 10, "outputTokens": 5, "totalTokens": 15, "provider": "p"}]
        if rng.random() < 0.2:
            finished["result"] = {"answer": 42}
        out = [finished]
        if rng.random() < 0.1:
            out.append({"type": "RUN_ERROR", "message": "late", "usage": [{"inputTokens": 1}]})
        return out


def _copy(event: Any) -> Any:
    # By its JSON text rather than copy.deepcopy: deepcopy takes two Python frames a level, so an event nested
    # as deep as golden payload-nested-past-limit (602 levels, which json reads and writes) overflowed the stack.
    return json.loads(json.dumps(event))


def _mutate(rng: random.Random, events: list[Any]) -> list[Any]:
    events = list(events)
    for _ in range(rng.randint(1, 3)):
        if not events:
            break
        i = rng.randrange(len(events))
        roll = rng.random()
        if roll < 0.2:
            del events[i]
        elif roll < 0.35:
            events.insert(i, _copy(events[i]))
        elif roll < 0.5 and i + 1 < len(events):
            events[i], events[i + 1] = events[i + 1], events[i]
        elif roll < 0.8 and isinstance(events[i], dict) and len(events[i]) > 1:
            event = events[i] = _copy(events[i])
            key = rng.choice([k for k in event if k != "type"] or ["type"])
            event[key] = rng.choice([None, 1, "x", [], {}, True, _json_value(rng)])
        elif roll < 0.9 and isinstance(events[i], dict):
            event = events[i] = _copy(events[i])
            event[rng.choice(["extra", "role", "subagentRunId", "metadata", "timestamp"])] = rng.choice(
                [None, "s1", {"m": 1}, 3, "user"])
        else:
            events.insert(i, rng.choice(["not json", "{", '{"type": 1}', "[]", '{"type":"AGUI_PING"}']))
    return events


def _encode(rng: random.Random, event: Any) -> str:
    if isinstance(event, str):
        return event
    if rng.random() < 0.2:
        items = list(event.items())
        rng.shuffle(items)
        event = dict(items)
    if rng.random() < 0.7:
        return json.dumps(event, separators=(",", ":"), ensure_ascii=rng.random() < 0.3)
    return json.dumps(event)


def _case(rng: random.Random, name: str, runs: list[list[Any]]) -> dict[str, Any]:
    return {"name": name, "runs": [[_encode(rng, event) for event in run] for run in runs],
            "framing": "jsonl" if rng.random() < 0.25 else "sse"}


def _soup(rng: random.Random, n: int) -> dict[str, Any]:
    runs = []
    for r in range(rng.randint(1, 3)):
        body = [soup_event(rng) for _ in range(rng.randint(0, 25))]
        runs.append([{"type": "RUN_STARTED", "threadId": "t", "runId": f"r{r}"}, *body])
    return _case(rng, f"soup-{n}", runs)


def _talk(rng: random.Random, n: int) -> dict[str, Any]:
    talk = _Talk(rng)
    runs = [talk.run(f"r{r}") for r in range(rng.randint(1, 4))]
    if rng.random() < 0.6:
        k = rng.randrange(len(runs))
        runs[k] = _mutate(rng, runs[k])
    return _case(rng, f"talk-{n}", runs)


def _gen_cases(rng: random.Random, count: int) -> Iterator[dict[str, Any]]:
    gen = ROOT / "bench" / "gen.py"
    kinds = ["chat", "state", "tools", "snapshot", "mixed"]
    for n in range(count):
        kind = kinds[n % len(kinds)]
        text = subprocess.run([sys.executable, str(gen), kind, "--seed", str(n), "--scale", "0.002"],
                              capture_output=True, text=True, check=True).stdout
        lines = [line for line in text.splitlines() if line.strip()]
        if n % 2:
            lines = [_encode(rng, e) for e in _mutate(rng, [json.loads(line) for line in lines])]
        yield {"name": f"gen-{kind}-{n}", "runs": [lines], "framing": "sse" if n % 3 else "jsonl"}
    # Large enough for the paths only big payloads take (a MESSAGES_SNAPSHOT read slice by slice).
    for kind, scale, framing in (("snapshot", "0.12", "sse"), ("snapshot", "0.12", "jsonl"), ("mixed", "0.05", "sse")):
        text = subprocess.run([sys.executable, str(gen), kind, "--seed", "3", "--scale", scale],
                              capture_output=True, text=True, check=True).stdout
        yield {"name": f"gen-{kind}-large-{framing}", "runs": [[line for line in text.splitlines() if line.strip()]],
               "framing": framing}


def _golden_cases(rng: random.Random) -> Iterator[dict[str, Any]]:
    for path in sorted((ROOT / "tests" / "golden" / "streams").glob("*.jsonl")):
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        yield {"name": f"golden-{path.stem}", "runs": [lines], "framing": "jsonl"}
        parsed: list[Any] = []
        for line in lines:
            try:
                parsed.append(json.loads(line))
            except ValueError:
                parsed.append(line)
        for k in range(2):
            yield {"name": f"golden-{path.stem}-mutant{k}", "runs": [[_encode(rng, e) for e in _mutate(rng, parsed)]],
                   "framing": "sse"}


def cases(count: int, seed: int) -> Iterator[dict[str, Any]]:
    """``count`` random cases (soup and talk alternating), then the gen and golden families."""
    rng = random.Random(seed)
    for n in range(count):
        yield _soup(rng, n) if n % 2 else _talk(rng, n)
    yield from _gen_cases(rng, 20)
    yield from _golden_cases(rng)
