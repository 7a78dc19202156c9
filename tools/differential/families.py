"""Stream families the producer shapes and the hostile variants lack (``--gen families:SEED:N``).

``producers.py`` writes the orderings integrations emit, one run or two; ``hostile.py`` reaches for the
edges of one given stream. Neither writes, drawn afresh per variant:

- ``runs-thread``: a thread of three to six runs in one response: text, frontend calls left pending and
  answered by a later run (TC-10), interrupts answered by the next run's ``RUN_STARTED.input.resume``,
  failed and cancelled runs, state carried from run to run, snapshots restating the thread so far;
- ``chain``: the same kind of thread across *requests*: each step is its own stream whose starting
  thread (``NAME.input.json``) is what our client held after the steps before, plus what a client adds
  (a user message, the answers to pending calls, a resume covering the open interrupts);
- ``subagent-tree``: nested subagents (``parentSubagentRunId``, ``parentToolCallId``) with attributed
  text, calls, reasoning, steps and activities, errors, results of any JSON type, a suspended branch;
- ``activity-patches``: activities patched by many ``ACTIVITY_DELTA`` events (move, copy, test, ``~0``/
  ``~1`` paths, ``-`` appends, failing patches), ``replace: false`` snapshots, a type changed by a delta;
- ``state-array-storm``: ``STATE_DELTA`` events of up to 30 operations on arrays, drawn against a model
  of the state so that they apply, with now and then a failing operation (the patch must not apply);
- ``reasoning-full``: spans holding several reasoning messages, chunks, encrypted values for every kind
  of entity, while open and after;
- ``chunks-everywhere``: text, tool and reasoning chunks interleaved with state, custom, raw, step and
  activity events, chunk messages without content, re-opened chunk ids;
- ``snapshot-rewrites``: a ``MESSAGES_SNAPSHOT`` restating what streamed with results moved, dropped,
  arguments and roles changed, then more streaming into restated ids;
- ``unicode-edges`` / ``number-edges``: astral characters cut between deltas, lone surrogates, NUL,
  noncharacters in string slots; ``-0``, ``1E-400``, tiny and huge doubles, integral doubles in value
  slots, big integers and ``1e400`` in a call's arguments (all written as JSON text, so both parsers read
  them as written).

The documented differences a family would meet at every turn are left out of it (where, says the code:
big integers and overflowing numbers in value slots, lone halves in arguments, the move targets the
reference's patch library checks before the removal); ``DOCUMENTED`` names the golden stream a family
is judged as when its runs' results may differ as documented.

``streams(seed, count)`` yields ``(name, events, input, None)`` as ``producers.streams`` does; the same
arguments give the same bytes. Standard library, plus ``agui_client`` for the ``chain`` family (to know
what the client holds after each step).
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator
from typing import Any

from .producers import _P, Event, Stream, _call_entry

NOW = "2026-11-30T00:00:00Z"
# A line of JSON text written as is (number edges): hostile.dump_lines keeps a str event verbatim.
Line = str


def _esc(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _resolves(doc: Any, pointer: str, kind: type = object) -> bool:
    """Whether ``pointer`` names a container (of ``kind``) in ``doc``."""
    node = doc
    for raw in pointer.split("/")[1:] if pointer else []:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False
    return isinstance(node, (dict, list)) and isinstance(node, kind)


# ---------------------------------------------------------------------------------------------------
# A small JSON Patch model (RFC 6902), to draw operations that apply (or, on purpose, one that does not)


class _Model:
    """A JSON document and a way to draw patch operations on it, applying each to the model as drawn."""

    def __init__(self, rng: random.Random, doc: Any) -> None:
        self.rng = rng
        self.doc = copy.deepcopy(doc)

    def _containers(self, node: Any = None, path: str = "") -> list[tuple[str, Any]]:
        node = self.doc if node is None else node
        out: list[tuple[str, Any]] = []
        if isinstance(node, (dict, list)):
            out.append((path, node))
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for k, v in items:
                out += self._containers(v, f"{path}/{_esc(str(k))}") if isinstance(v, (dict, list)) else []
        return out

    def _leaves(self) -> list[tuple[str, Any, Any, Any]]:
        """(pointer, parent, key, value) of every member below the root."""
        out = []

        def walk(node: Any, path: str) -> None:
            items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
            for k, v in items:
                p = f"{path}/{_esc(str(k))}"
                out.append((p, node, k, v))
                walk(v, p)

        walk(self.doc, "")
        return out

    def value(self) -> Any:
        r = self.rng.random()
        if r < 0.4:
            return self.rng.choice([0, 1, -1, 2.5, "x", "", "a/b", "~", True, False, None, 10**6])
        if r < 0.7:
            return {self.rng.choice(["k", "a/b", "m~n", "", "-", "0"]): self.rng.randint(0, 9)}
        return [self.rng.randint(0, 9) for _ in range(self.rng.randint(0, 3))]

    def op(self) -> dict[str, Any] | None:
        """One operation that applies to the model (and is applied to it), or None."""
        rng = self.rng
        kind = rng.choice(["add", "add", "append", "remove", "replace", "move", "copy", "test", "move-array"])
        containers = self._containers()
        leaves = self._leaves()
        if kind in ("add", "append"):
            arrays = [(p, c) for p, c in containers if isinstance(c, list)]
            if kind == "append" and arrays:
                p, c = rng.choice(arrays)
                v = self.value()
                c.append(copy.deepcopy(v))
                return {"op": "add", "path": f"{p}/-", "value": v}
            p, c = rng.choice(containers)
            v = self.value()
            if isinstance(c, list):
                i = rng.randint(0, len(c))
                c.insert(i, copy.deepcopy(v))
                return {"op": "add", "path": f"{p}/{i}", "value": v}
            key = rng.choice(["n", "a/b", "x~y", "", "-", "new", "0"])
            c[key] = copy.deepcopy(v)
            return {"op": "add", "path": f"{p}/{_esc(key)}", "value": v}
        if not leaves:
            return None
        if kind == "move-array":
            arrays = [(p, c) for p, c in containers if isinstance(c, list) and len(c) >= 2]
            if not arrays:
                return None
            p, c = rng.choice(arrays)
            i = rng.randrange(len(c))
            item = c.pop(i)
            j = rng.randint(0, len(c))
            c.insert(j, item)
            return {"op": "move", "from": f"{p}/{i}", "path": f"{p}/{j}"}
        path, parent, key, v = rng.choice(leaves)
        if kind == "remove":
            del parent[key]
            return {"op": "remove", "path": path}
        if kind == "replace":
            nv = self.value()
            parent[key] = copy.deepcopy(nv)
            return {"op": "replace", "path": path, "value": nv}
        if kind == "test":
            return {"op": "test", "path": path, "value": copy.deepcopy(v)}
        # move: to a place outside the source (drawn once it is taken out); copy: anywhere
        value = copy.deepcopy(v)
        before = copy.deepcopy(self.doc) if kind == "move" else None
        if kind == "move":
            del parent[key]
        targets = self._containers()
        if before is not None:
            # Left out, as documented differences: a target below the source by its tokens (RFC 6902 forbids
            # it even where the removal shifted another element there; golden state-delta-move-into-shifted-
            # sibling) and a target whose parent is not a container of its kind in the document *before* the
            # removal (the reference checks it there; state-delta-move-target-after-removal).
            targets = [(tp, tc) for tp, tc in targets
                       if not (tp + "/").startswith(path + "/") and _resolves(before, tp, type(tc))]
            if not targets:
                self.doc = before
                return None
        tp, tc = rng.choice(targets)
        if isinstance(tc, list):
            i = rng.randint(0, len(tc))
            tc.insert(i, value)
            target = f"{tp}/{i}"
        else:
            k = rng.choice(["moved", "c", "a/b", ""])
            tc[k] = value
            target = f"{tp}/{_esc(k)}"
        return {"op": kind, "from": path, "path": target}

    def failing(self) -> dict[str, Any]:
        """An operation that does not apply to the model (the model is left as it is)."""
        rng = self.rng
        leaves = self._leaves()
        choice = rng.choice(["test", "remove-missing", "replace-missing", "index-past"])
        if choice == "test" and leaves:
            path, _, _, v = rng.choice(leaves)
            return {"op": "test", "path": path, "value": {"never": v}}
        if choice == "index-past":
            arrays = [(p, c) for p, c in self._containers() if isinstance(c, list)]
            if arrays:
                p, c = rng.choice(arrays)
                return {"op": "replace", "path": f"{p}/{len(c)}", "value": 1}
        return {"op": "remove" if choice == "remove-missing" else "replace", "path": "/no~1such/key", "value": 0}

    def patch(self, size: int, fail: bool = False) -> list[dict[str, Any]]:
        """``size`` operations; with ``fail``, one of them fails (and the model keeps none of them)."""
        before = copy.deepcopy(self.doc)
        if not fail:
            return [o for o in (self.op() for _ in range(size)) if o is not None]
        # the failing operation is drawn where it stands (drawn at the end, it might apply earlier on)
        at = self.rng.randint(0, size)
        head = [o for o in (self.op() for _ in range(at)) if o is not None]
        ops = [*head, self.failing(), *[o for o in (self.op() for _ in range(size - at)) if o is not None]]
        self.doc = before
        return ops


# ---------------------------------------------------------------------------------------------------
# Families


def runs_thread(p: _P) -> Stream:
    """Three to six runs in one response, each drawn from what a thread of runs does next."""
    rng = p.rng
    ev: list[Event] = []
    model = _Model(rng, {"turn": 0, "items": []})
    ev_state = rng.random() < 0.7
    pending_calls: list[tuple[str, str]] = []  # (call id, its assistant message)
    interrupts: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = []
    for n in range(rng.randint(3, 6)):
        run = p.id("run")
        extra: dict[str, Any] = {}
        if rng.random() < 0.3 and n:
            extra["parentRunId"] = ev[0]["runId"]
        resume = None
        if interrupts:
            resume = [{"interruptId": i["id"], "status": rng.choice(["resolved", "cancelled"]),
                       **({"payload": {"ok": True}} if rng.random() < 0.5 else {})} for i in interrupts]
        if resume is not None or rng.random() < 0.3:
            inp: dict[str, Any] = {"threadId": p.thread, "runId": run, "messages": copy.deepcopy(history),
                                   "state": {}, "tools": [], "context": [], "forwardedProps": {}}
            if resume is not None:
                inp["resume"] = resume
            if rng.random() < 0.5:
                user = {"id": p.id("user"), "role": "user", "content": f"turn {n}"}
                inp["messages"].append(user)
            extra["input"] = inp
        ev.append(p.started(run, **extra))
        interrupts = []
        if ev_state and n == 0:
            ev.append(p.ev("STATE_SNAPSHOT", snapshot=copy.deepcopy(model.doc)))
        if ev_state:
            model.doc["turn"] = n
            ev.append(p.ev("STATE_DELTA", delta=[{"op": "add", "path": "/turn", "value": n}, *model.patch(2)]))
        # answers to calls a run before left pending
        while pending_calls and rng.random() < 0.7:
            cid, _ = pending_calls.pop(0)
            ev.append(p.result(cid, p.id("tool"), f"answer {cid}"))
        m = p.id("msg")
        ev += p.text(m, rng.choice(["Sure.", "Working on it…", "Done 👍", f"Run {n}"]))
        history.append({"id": m, "role": "assistant", "content": "x"})
        how = rng.choice(["success", "success", "pending", "interrupt", "error", "cancelled", "snapshot"])
        if how == "pending":
            c = p.id("call")
            ev += p.call(c, "frontend_confirm", {"n": n}, m if rng.random() < 0.7 else None)
            pending_calls.append((c, m))
        if how == "snapshot":
            ev.append(p.ev("MESSAGES_SNAPSHOT", messages=[
                {"id": m, "role": "assistant", "content": "restated"},
                *[{"id": h["id"], "role": "assistant", "content": "older"} for h in history[:-1][-2:]]]))
        if how == "interrupt":
            interrupts = [{"id": p.id("int"), "reason": rng.choice(["approval", "input"])}
                          for _ in range(rng.randint(1, 2))]
            if pending_calls and rng.random() < 0.5:
                interrupts[0]["toolCallId"] = pending_calls[-1][0]
            ev.append(p.finished(run, {"type": "interrupt", "interrupts": interrupts}))
        elif how == "error":
            ev.append(p.ev("RUN_ERROR", message="model overloaded", code=rng.choice(["429", "overloaded"])))
        elif how == "cancelled":
            ev.append(p.finished(run, {"type": "cancelled"}))
        else:
            outcome = None
            if rng.random() < 0.5:
                outcome = {"type": "success"}
            kw: dict[str, Any] = {}
            if rng.random() < 0.4:
                kw["result"] = rng.choice([{"n": n}, [n], "text", 0, None, False])
                if kw["result"] is None:
                    del kw["result"]
            ev.append(p.finished(run, outcome, **kw))
    return ev, None


def subagent_tree(p: _P) -> Stream:
    """A delegate call starts subagent s1, which starts s2 (and perhaps s3); attributed content of every kind."""
    rng = p.rng
    run, m0, c0 = p.id("run"), p.id("msg"), p.id("call")
    s1, s2, s3 = p.id("sub"), p.id("sub"), p.id("sub")
    ev: list[Event] = [p.started(run), *p.text(m0, "Delegating."), *p.call(c0, "delegate", {"task": "t"}, m0),
                       p.ev("SUBAGENT_STARTED", subagentRunId=s1, name="planner", parentToolCallId=c0,
                            parentMessageId=m0 if rng.random() < 0.5 else None,
                            description="plans" if rng.random() < 0.5 else None),
                       p.ev("STEP_STARTED", stepName="plan", subagentRunId=s1)]
    a1 = p.id("msg")
    ev += [dict(e, subagentRunId=s1) for e in p.text(a1, "Planning the steps.")]
    ev.append(p.ev("SUBAGENT_STARTED", subagentRunId=s2, name="worker", parentSubagentRunId=s1))
    r2 = p.id("reason")
    ev += [p.ev("REASONING_START", messageId=r2, subagentRunId=s2),
           p.ev("REASONING_MESSAGE_START", messageId=r2, role="reasoning", subagentRunId=s2),
           p.ev("REASONING_MESSAGE_CONTENT", messageId=r2, delta="thinking", subagentRunId=s2),
           p.ev("REASONING_MESSAGE_END", messageId=r2), p.ev("REASONING_END", messageId=r2, subagentRunId=s2)]
    c2 = p.id("call")
    a2 = p.id("msg")
    ev += [dict(e, subagentRunId=s2) if rng.random() < 0.6 or e["type"] == "TOOL_CALL_START" else e
           for e in p.call(c2, "fetch", {"url": "x"}, a2 if rng.random() < 0.5 else None)]
    ev.append(p.ev("TOOL_CALL_RESULT", toolCallId=c2, messageId=p.id("tool"), content="fetched", role="tool",
                   subagentRunId=s2))
    if rng.random() < 0.5:
        act = p.id("act")
        ev += [p.ev("ACTIVITY_SNAPSHOT", messageId=act, activityType="progress", content={"pct": 10},
                    subagentRunId=s2),
               p.ev("ACTIVITY_DELTA", messageId=act, activityType="progress",
                    patch=[{"op": "replace", "path": "/pct", "value": 90}],
                    subagentRunId=s2 if rng.random() < 0.5 else None)]
    if rng.random() < 0.5:
        ev.append(p.ev("STATE_DELTA", delta=[{"op": "add", "path": "/by", "value": s2}], subagentRunId=s2))
    s2_end = rng.choice(["finished", "error", "result"])
    if s2_end == "error":
        ev.append(p.ev("SUBAGENT_ERROR", subagentRunId=s2, message="worker failed",
                       code="E1" if rng.random() < 0.5 else None))
    else:
        result: Any = rng.choice([None, 0, "", [], {"a": [1, {"b": None}]}, "done", False, 1.5])
        ev.append(p.ev("SUBAGENT_FINISHED", subagentRunId=s2,
                       **({"result": result} if s2_end == "result" and result is not None else {}),
                       **({"outcome": {"type": "success"}} if rng.random() < 0.3 else {})))
    suspend = rng.random() < 0.35
    if rng.random() < 0.5:
        ev.append(p.ev("SUBAGENT_STARTED", subagentRunId=s3, name="worker", parentSubagentRunId=s1))
        ev += [p.ev("TEXT_MESSAGE_CHUNK", messageId=p.id("msg"), role="assistant", delta=d, subagentRunId=s3)
               for d in p.cut("second worker")]
        ev.append(p.ev("SUBAGENT_FINISHED", subagentRunId=s3))
    # (untagged now and then: a step is finished by whoever started it, ST-04, so both clients refuse it)
    ev.append(p.ev("STEP_FINISHED", stepName="plan", subagentRunId=s1 if rng.random() < 0.85 else None))
    if suspend:
        iid = p.id("int")
        ev.append(p.ev("SUBAGENT_FINISHED", subagentRunId=s1, outcome={"type": "suspended", "interruptIds": [iid]}))
        ev.append(p.finished(run, {"type": "interrupt", "interrupts": [
            {"id": iid, "reason": "approval", "subagentRunId": s1, "message": "Proceed?"}]}))
        return ev, None
    ev.append(p.ev("SUBAGENT_FINISHED", subagentRunId=s1, result={"plan": ["a", "b"]}))
    ev += [p.result(c0, p.id("tool"), "delegated"), *p.text(p.id("msg"), "All done."), p.finished(run)]
    return ev, None


def activity_patches(p: _P) -> Stream:
    """An activity patched many times: escapes, moves, copies, tests, appends, a failing patch, types changed."""
    rng = p.rng
    run, act = p.id("run"), p.id("act")
    content = {"steps": [{"name": "a", "done": False}, {"name": "b", "done": False}], "a/b": {"~": 1},
               "log": [], "": "empty key"}
    model = _Model(rng, content)
    kind = "plan"
    ev: list[Event] = [p.started(run), p.ev("ACTIVITY_SNAPSHOT", messageId=act, activityType=kind, content=content)]
    for _ in range(rng.randint(3, 10)):
        fail = rng.random() < 0.15
        if rng.random() < 0.15:
            kind = rng.choice(["plan", "progress", "plan"])
        ev.append(p.ev("ACTIVITY_DELTA", messageId=act, activityType=kind,
                       patch=model.patch(rng.randint(0, 6), fail=fail)))
        if rng.random() < 0.15:
            again = rng.choice([True, False, None])
            fresh = {"steps": [], "log": ["restart"]}
            ev.append(p.ev("ACTIVITY_SNAPSHOT", messageId=act, activityType=kind, content=fresh, replace=again))
            if again is not False:
                model.doc = copy.deepcopy(fresh)
    if rng.random() < 0.3:
        ev += p.text(p.id("msg"), "Plan complete.")
    if rng.random() < 0.3:
        other = p.id("act")
        ev.append(p.ev("ACTIVITY_SNAPSHOT", messageId=other, activityType="other", content={},
                       replace=False if rng.random() < 0.5 else None))
        ev.append(p.ev("ACTIVITY_DELTA", messageId=other, activityType="other",
                       patch=[{"op": "add", "path": "/-", "value": 1}] if rng.random() < 0.5 else
                       [{"op": "add", "path": "/x", "value": [1]}, {"op": "copy", "from": "/x", "path": "/x/-"}]))
    ev.append(p.finished(run))
    return ev, None


def state_array_storm(p: _P) -> Stream:
    """Many STATE_DELTA events of many operations on arrays, drawn so they apply; now and then one that fails."""
    rng = p.rng
    run = p.id("run")
    state: Any = {"rows": [[1, 2], [3]], "queue": [], "meta": {"n": 0}, "a/b": [0]}
    model = _Model(rng, state)
    ev: list[Event] = [p.started(run), p.ev("STATE_SNAPSHOT", snapshot=state)]
    for _ in range(rng.randint(3, 12)):
        ev.append(p.ev("STATE_DELTA", delta=model.patch(rng.randint(1, 30), fail=rng.random() < 0.12)))
    if rng.random() < 0.3:
        ev.append(p.ev("STATE_DELTA", delta=[]))
    ev += [*p.text(p.id("msg"), "Updated."), p.finished(run)]
    return ev, None


def reasoning_full(p: _P) -> Stream:
    """A span with several reasoning messages, chunks, and encrypted values for every entity, open or closed."""
    rng = p.rng
    run, span, r1, r2, m1, c1 = p.id("run"), p.id("span"), p.id("reason"), p.id("reason"), p.id("msg"), p.id("call")
    first = span if rng.random() < 0.5 else r1

    def enc(subtype: str, entity: str) -> Event:
        return p.ev("REASONING_ENCRYPTED_VALUE", subtype=subtype, entityId=entity, encryptedValue="enc:" + p.id("v"))

    ev: list[Event] = [p.started(run), p.ev("REASONING_START", messageId=span),
                       p.ev("REASONING_MESSAGE_START", messageId=first, role="reasoning")]
    ev += [p.ev("REASONING_MESSAGE_CONTENT", messageId=first, delta=d) for d in p.cut("Step one, then two.")]
    if rng.random() < 0.4:
        ev.append(enc("message", first))  # while the message is open
    ev.append(p.ev("REASONING_MESSAGE_END", messageId=first))
    if rng.random() < 0.6:
        ev += [p.ev("REASONING_MESSAGE_CHUNK", messageId=r2 if i == 0 else None, delta=d)
               for i, d in enumerate(p.cut("More thoughts"))]
        if rng.random() < 0.5:
            ev.append(p.ev("REASONING_MESSAGE_CHUNK", delta=""))
    ev.append(p.ev("REASONING_END", messageId=span))
    if rng.random() < 0.5:
        ev.append(enc("message", span))  # the span's id (a message only when the span's message shares it)
    ev += p.text(m1, "Answer.")
    ev += p.call(c1, "act", {"x": 1}, m1)
    for _ in range(rng.randint(1, 3)):
        ev.append(rng.choice([enc("message", first), enc("message", m1), enc("tool-call", c1)]))
    if rng.random() < 0.3:
        ev.append(enc("tool-call", m1))  # a message id named as a tool call
    ev.append(p.finished(run))
    return ev, None


def chunks_everywhere(p: _P) -> Stream:
    """Text, tool and reasoning chunks interleaved with state, custom, raw, step and activity events."""
    rng = p.rng
    run, m1, c1, r1, act = p.id("run"), p.id("msg"), p.id("call"), p.id("reason"), p.id("act")
    others: list[Callable[[], Event]] = [
        lambda: p.ev("STATE_DELTA", delta=[{"op": "add", "path": "/tick", "value": rng.randint(0, 9)}]),
        lambda: p.ev("CUSTOM", name="progress", value={"p": rng.random() < 0.5}),
        lambda: p.ev("RAW", event={"provider": "x"}, source="bridge"),
        lambda: p.ev("ACTIVITY_SNAPSHOT", messageId=act, activityType="status", content={"s": "busy"}),
        lambda: p.ev("STATE_SNAPSHOT", snapshot={"tick": 0}),
    ]
    ev: list[Event] = [p.started(run)]
    lanes = {
        "text": [p.ev("TEXT_MESSAGE_CHUNK", messageId=m1 if i == 0 else None, role="assistant" if i == 0 else None,
                      delta=d) for i, d in enumerate(p.cut("Hello there, friend"))],
        "tool": [p.ev("TOOL_CALL_CHUNK", toolCallId=c1 if i == 0 else None, toolCallName="f" if i == 0 else None,
                      parentMessageId=m1 if i == 0 else None, delta=d)
                 for i, d in enumerate(p.cut(json.dumps({"q": "chunks"})))],
        "reasoning": [p.ev("REASONING_MESSAGE_CHUNK", messageId=r1 if i == 0 else None, delta=d)
                      for i, d in enumerate(p.cut("hmm"))],
    }
    order = list(lanes)
    rng.shuffle(order)
    for lane in order:
        pieces = lanes[lane]
        for i, e in enumerate(pieces):
            if i and rng.random() < 0.3:
                # another event closes the lane; the rest continue under the id again (a re-opened id)
                ev.append(rng.choice(others)())
                key = {"text": "messageId", "tool": "toolCallId", "reasoning": "messageId"}[lane]
                e = dict(e, **{key: pieces[0][key]})
                if lane == "tool":
                    e["toolCallName"] = "f"
            ev.append(e)
        if rng.random() < 0.5:
            ev.append(rng.choice(others)())
    if rng.random() < 0.4:
        # a chunk message with no content at all
        ev += [p.ev("TEXT_MESSAGE_CHUNK", messageId=p.id("msg"), role="assistant"), rng.choice(others)()]
    if rng.random() < 0.3:
        ev.append(p.ev("TEXT_MESSAGE_CHUNK", messageId=p.id("msg"), role=rng.choice(["user", "system", "developer"]),
                       name="n" if rng.random() < 0.5 else None, delta="from a chunk"))
    ev.append(p.finished(run))
    return ev, None


def snapshot_rewrites(p: _P) -> Stream:
    """What streamed, restated by a MESSAGES_SNAPSHOT with results moved or dropped and calls changed; then more."""
    rng = p.rng
    run, u0, m1, c1, c2, t1, m2 = (p.id("run"), p.id("user"), p.id("msg"), p.id("call"), p.id("call"), p.id("tool"),
                                   p.id("msg"))
    ev: list[Event] = [p.started(run), *p.text(m1, "Calling."), *p.call(c1, "f", {"a": 1}, m1),
                       *p.call(c2, "g", {"b": 2}, m1), p.result(c1, t1, "r1"), *p.text(m2, "Between.")]
    asst: dict[str, Any] = {"id": m1, "role": "assistant", "content": "Calling.",
                            "toolCalls": [_call_entry(c1, "f", {"a": 1}), _call_entry(c2, "g", {"b": 2})]}
    tool = {"id": t1, "role": "tool", "toolCallId": c1, "content": "r1"}
    second = {"id": m2, "role": "assistant", "content": "Between."}
    user = {"id": u0, "role": "user", "content": "hi"}
    how = rng.sample(["move-result", "drop-result", "change-args", "retype", "drop-call", "add-user", "reorder"],
                     rng.randint(1, 3))
    msgs: list[dict[str, Any]] = [asst, tool, second]
    if "change-args" in how:
        asst["toolCalls"][0]["function"]["arguments"] = json.dumps({"a": 2})
    if "drop-call" in how:
        asst["toolCalls"] = asst["toolCalls"][:1]
    if "move-result" in how:
        msgs = [tool, asst, second]
    if "drop-result" in how:
        msgs = [asst, second]
    if "retype" in how:
        second = {"id": m2, "role": "user", "content": "Between."}
        msgs = [m if m["id"] != m2 else second for m in msgs]
    if "add-user" in how:
        msgs.insert(rng.randint(0, len(msgs)), user)
    if "reorder" in how:
        rng.shuffle(msgs)
    ev.append(p.ev("MESSAGES_SNAPSHOT", messages=msgs))
    after = rng.sample(["result-c2", "result-c1-again", "reopen-m1", "reopen-m2", "new-text", "restart-c1"],
                       rng.randint(1, 3))
    for what in after:
        if what == "result-c2":
            ev.append(p.result(c2, p.id("tool"), "r2"))
        elif what == "result-c1-again":
            ev.append(p.result(c1, p.id("tool"), "r1 again"))
        elif what == "reopen-m1":
            ev += p.text(m1, " more")
        elif what == "reopen-m2":
            ev += p.text(m2, " tail")
        elif what == "restart-c1":
            ev += p.call(c1, "f", {"a": 3}, m1)
        else:
            ev += p.text(p.id("msg"), "After the snapshot.")
    ev.append(p.finished(run))
    return ev, {"messages": [user], "threadId": p.thread} if rng.random() < 0.5 else None


ASTRAL = ["😀", "𝔘", "\U0001f9d1\u200d\U0001f4bb", "\U0010fffd", "🇫🇷"]
ODD = ["\u0000", "\ufeff", "\uffff", "\ufffe", "\u200b", "\u0085", "\u2028", "\x7f", "e\u0301", "\U000e0001"]
LONE = ["\ud800", "\udfff", "\udbff", "\udc00"]


def unicode_edges(p: _P) -> Stream:
    """Astral characters cut between deltas (as UTF-16 halves), lone surrogates, NUL and noncharacters everywhere."""
    rng = p.rng
    run, m1, c1, r1, act = p.id("run"), p.id("msg"), p.id("call"), p.id("reason"), p.id("act")
    lone_ok = rng.random() < 0.4  # lone surrogates outside text content (text: golden text-surrogate-lone)

    def odd() -> str:
        pool = ODD + ASTRAL + (LONE if lone_ok else [])
        return "".join(rng.choice(pool) for _ in range(rng.randint(1, 3)))

    def halves(text: str) -> list[str]:
        units = text.encode("utf-16-le", "surrogatepass")
        codes = [chr(int.from_bytes(units[i:i + 2], "little")) for i in range(0, len(units), 2)]
        cuts = sorted(rng.sample(range(1, len(codes)), min(len(codes) - 1, rng.randint(1, 3))))
        return ["".join(codes[a:b]) for a, b in zip([0, *cuts], [*cuts, len(codes)], strict=True)]

    if rng.random() < 0.3:
        m1 = m1 + rng.choice(["\u0000", "😀", "\ufeff", " "])
    body = "a" + "".join(rng.choice(ASTRAL + ODD) for _ in range(4)) + "z"
    # (no lone half in the arguments: U+FFFD here, kept by the reference, golden tool-call-args-surrogate-lone)
    args = json.dumps({"q": "".join(rng.choice(ASTRAL) for _ in range(3)),
                       "".join(rng.choice(ODD + ASTRAL) for _ in range(2)): 1}, ensure_ascii=False)
    ev: list[Event] = [p.started(run)]
    ev.append(p.ev("TEXT_MESSAGE_START", messageId=m1, role="assistant", name=odd() if rng.random() < 0.3 else None))
    ev += [p.ev("TEXT_MESSAGE_CONTENT", messageId=m1, delta=d) for d in halves(body) if d]
    ev.append(p.ev("TEXT_MESSAGE_END", messageId=m1))
    ev.append(p.ev("TOOL_CALL_START", toolCallId=c1, toolCallName="f" + rng.choice(ASTRAL), parentMessageId=m1))
    ev += [p.ev("TOOL_CALL_ARGS", toolCallId=c1, delta=d) for d in halves(args) if d]
    ev.append(p.ev("TOOL_CALL_END", toolCallId=c1))
    ev.append(p.result(c1, p.id("tool"), odd()))
    ev += [p.ev("REASONING_START", messageId=r1), p.ev("REASONING_MESSAGE_START", messageId=r1, role="reasoning")]
    ev += [p.ev("REASONING_MESSAGE_CONTENT", messageId=r1, delta=d) for d in halves("r" + rng.choice(ASTRAL)) if d]
    ev += [p.ev("REASONING_MESSAGE_END", messageId=r1), p.ev("REASONING_END", messageId=r1)]
    ev.append(p.ev("STATE_SNAPSHOT", snapshot={odd(): odd(), "list": [odd(), rng.choice(ASTRAL)], "k": "v"}))
    ev.append(p.ev("STATE_DELTA", delta=[{"op": "add", "path": "/" + _esc(odd()), "value": odd()},
                                         {"op": "replace", "path": "/k", "value": odd()}]))
    ev.append(p.ev("ACTIVITY_SNAPSHOT", messageId=act, activityType="t" + odd(), content={odd(): [odd()]}))
    ev.append(p.ev("CUSTOM", name=odd(), value=odd()))
    ev.append(p.finished(run, result=odd() if rng.random() < 0.5 else None))
    return ev, None


# Numbers as JSON text. Left out of the value slots, as documented differences: integers past 2^53 (kept
# exactly here, rounded by the reference: golden state-snapshot-integer-beyond-double) and numbers that overflow
# a double (refused here, B090; null in the reference: golden state-snapshot-number-overflows-double). They still
# go into the arguments' text, which both keep as written.
NUMBER_TEXT = ["-0", "-0.0", "1E-400", "0e0", "-9007199254740991", "9007199254740991", "1.7976931348623157e308",
               "5e-324", "2.2250738585072014e-308", "0.1", "1.0", "100000000000000000000000.0",
               "9007199254740993.0", "1e16", "-1e-7", "1e21", "123456789.123456789", "4.35", "0.30000000000000004"]
TEXT_ONLY = ["1e400", "-1e400", "18446744073709551616", "-9007199254740993", "123456789012345678901234567890"]


def number_edges(p: _P) -> Stream:
    """Numbers at the edges written as JSON text in state, deltas, activities, results, metadata and args."""
    rng = p.rng
    run, m1, c1, act, t1 = p.id("run"), p.id("msg"), p.id("call"), p.id("act"), p.id("tool")

    def num() -> str:
        return rng.choice(NUMBER_TEXT)

    def line(head: dict[str, Any], tail: str) -> Line:
        text = json.dumps(head, ensure_ascii=False)
        return text[:-1] + ", " + tail + "}"

    # Events and lines written as text (a Line is kept verbatim by the writers): the stream's type names
    # events only, so the list is typed by what both are.
    ev: list[Any] = [p.started(run)]
    ev.append(line({"type": "STATE_SNAPSHOT"}, f'"snapshot": {{"a": {num()}, "b": [{num()}, {num()}], "c": 1}}'))
    ev.append(line({"type": "STATE_DELTA"}, f'"delta": [{{"op": "add", "path": "/d", "value": {num()}}}, '
                                            f'{{"op": "replace", "path": "/c", "value": {num()}}}]'))
    if rng.random() < 0.5:
        ev.append(line({"type": "STATE_DELTA"}, f'"delta": [{{"op": "test", "path": "/c", "value": {num()}}}, '
                                                f'{{"op": "add", "path": "/t", "value": true}}]'))
    ev += p.text(m1, "Numbers.")
    args = f'{{"n": {rng.choice(TEXT_ONLY)}, "m": [{num()}]}}'
    ev += [p.ev("TOOL_CALL_START", toolCallId=c1, toolCallName="calc", parentMessageId=m1),
           p.ev("TOOL_CALL_ARGS", toolCallId=c1, delta=args), p.ev("TOOL_CALL_END", toolCallId=c1),
           p.result(c1, t1, num())]
    ev.append(line({"type": "ACTIVITY_SNAPSHOT", "messageId": act, "activityType": "meter"},
                   f'"content": {{"v": {num()}}}'))
    ev.append(line({"type": "ACTIVITY_DELTA", "messageId": act, "activityType": "meter"},
                   f'"patch": [{{"op": "add", "path": "/w", "value": {num()}}}]'))
    if rng.random() < 0.4:
        ev.append(line({"type": "CUSTOM", "name": "n"}, f'"value": {num()}'))
    if rng.random() < 0.4:
        m2 = p.id("msg")
        ev.append(line({"type": "TEXT_MESSAGE_START", "messageId": m2}, f'"metadata": {{"score": {num()}}}'))
        ev.append({"type": "TEXT_MESSAGE_END", "messageId": m2})
    tail = f'"result": {{"total": {num()}}}' if rng.random() < 0.6 else f'"result": {num()}'
    ev.append(line({"type": "RUN_FINISHED", "threadId": p.thread, "runId": run}, tail))
    return ev, None


SHAPES: dict[str, Callable[[_P], Stream]] = {
    "runs-thread": runs_thread,
    "subagent-tree": subagent_tree,
    "activity-patches": activity_patches,
    "state-array-storm": state_array_storm,
    "reasoning-full": reasoning_full,
    "chunks-everywhere": chunks_everywhere,
    "snapshot-rewrites": snapshot_rewrites,
    "unicode-edges": unicode_edges,
    "number-edges": number_edges,
}


# Families that may meet a difference the golden tests document (``DIFFERENCES`` of tests/test_golden.py), as
# ``producers.DOCUMENTED``: their streams are judged as that golden stream (its fields may differ, or not).
DOCUMENTED = {
    "runs-thread": "runs-interrupt-after-success-result",  # (or -cancelled-, -error-: the result, the same field)
}


def documented(name: str) -> str | None:
    """The golden stream whose documented difference the family stream ``name`` may show."""
    if not name.startswith("f-"):
        return None
    base = name[2:].split("~", 1)[0]
    if base.startswith("chain-"):  # (a chain's step that is a whole family's stream ends with its family's name)
        return next((DOCUMENTED[family] for family in DOCUMENTED if base.endswith(f"-{family}")), None)
    return DOCUMENTED.get(base.rsplit("-s", 1)[0])


# ---------------------------------------------------------------------------------------------------
# A thread across requests: each step's starting thread is what our client held after the steps before


def _fold(events: list[Event], seed: dict[str, Any]) -> dict[str, Any]:
    """What our client holds after ``events`` from ``seed`` (wire form): messages, state, open interrupts."""
    from agui_client import ProtocolError, ThreadState, encode, replay
    from agui_client.types import Interrupt, Message
    from agui_client.wire.codec import decode

    thread = ThreadState(messages=decode(seed.get("messages", []), tuple[Message, ...]), state=seed.get("state", {}),
                         open_interrupts=decode(seed.get("pendingInterrupts", []), tuple[Interrupt, ...]))
    text = "\n".join(e if isinstance(e, str) else json.dumps(e) for e in events)
    pending: list[Any] = []
    try:
        result = replay(text.encode("utf-8", "surrogatepass"), state=thread, format="jsonl")
        pending = list(result.pending_tool_call_ids)
    except ProtocolError:
        pass
    return {"messages": encode(thread.messages), "state": copy.deepcopy(thread.state),
            "pendingInterrupts": encode(thread.open_interrupts), "pendingCalls": pending}


def chain(seed: int, n: int) -> list[tuple[str, list[Event], dict[str, Any]]]:
    """Three to five steps of one thread, each a request: ``(name, events, starting thread)``.

    A step is a short run drawn here (a reply, a frontend call, an interrupt, a snapshot, reasoning, a failure)
    or, now and then, a whole family's stream, started from what our client held after the step before.
    """
    rng = random.Random(f"{seed}:chain:{n}")
    p = _P(rng)
    held: dict[str, Any] = {"messages": [], "state": {}, "pendingInterrupts": [], "pendingCalls": []}
    out = []
    for k in range(rng.randint(3, 5)):
        run = p.id("run")
        messages = list(held["messages"])
        for cid in held["pendingCalls"]:
            messages.append({"id": p.id("tool"), "role": "tool", "toolCallId": cid, "content": "client answer"})
        messages.append({"id": p.id("user"), "role": "user", "content": f"step {k}"})
        inp: dict[str, Any] = {"messages": messages, "state": held["state"], "threadId": p.thread, "now": NOW}
        if held["pendingInterrupts"]:
            inp["pendingInterrupts"] = held["pendingInterrupts"]
            inp["resume"] = [{"interruptId": i["id"], "status": rng.choice(["resolved", "cancelled"])}
                             for i in held["pendingInterrupts"]]
        if k and rng.random() < 0.4:
            # a step that is a whole family's stream (the same thread), from what the steps before left
            family = rng.choice(sorted(SHAPES))
            body, _ = SHAPES[family](p)
            # (named after the family too, so that its documented difference applies: ``documented``)
            out.append((f"f-chain-s{seed}.{n}-k{k}-{family}", body, inp))
            held = _fold(body, inp)
            continue
        ev: list[Event] = [p.started(run)]
        if rng.random() < 0.4:
            ev[0]["input"] = {"threadId": p.thread, "runId": run, "messages": messages, "state": held["state"],
                              "tools": [], "context": [], "forwardedProps": {},
                              **({"resume": inp["resume"]} if "resume" in inp else {})}
        m = p.id("msg")
        if isinstance(held["state"], dict) and rng.random() < 0.6:
            model = _Model(rng, held["state"])
            ev.append(p.ev("STATE_DELTA", delta=model.patch(rng.randint(1, 5))))
        what = rng.choice(["text", "call", "interrupt", "snapshot", "reasoning", "error"])
        ev += p.text(m, f"Reply {k}")
        if what == "call":
            ev += p.call(p.id("call"), "frontend", {"k": k}, m if rng.random() < 0.7 else None)
        if what == "reasoning":
            r = p.id("reason")
            ev += [p.ev("REASONING_MESSAGE_CHUNK", messageId=r, delta="why"),
                   p.ev("REASONING_ENCRYPTED_VALUE", subtype="message", entityId=r, encryptedValue="e" + r)]
        if what == "snapshot":
            restated = [dict(msg) for msg in messages if msg.get("role") != "activity"][-3:]
            ev.append(p.ev("MESSAGES_SNAPSHOT", messages=[*restated, {"id": m, "role": "assistant",
                                                                      "content": "restated"}]))
        if what == "interrupt":
            ev.append(p.finished(run, {"type": "interrupt", "interrupts": [
                {"id": p.id("int"), "reason": "approval", **({"expiresAt": "2026-12-01T00:00:00Z"}
                                                              if rng.random() < 0.5 else {})}]}))
        elif what == "error":
            ev.append(p.ev("RUN_ERROR", message="failed"))
        else:
            ev.append(p.finished(run))
        out.append((f"f-chain-s{seed}.{n}-k{k}", ev, inp))
        held = _fold(ev, inp)
    return out


def streams(seed: int, count: int, only: list[str] | None = None
            ) -> Iterator[tuple[str, list[Event], dict[str, Any] | None, str | None]]:
    """``count`` variants of every family (or of those ``only`` names): ``(name, events, starting thread, None)``."""
    return shaped_streams("f", SHAPES, ("chain", chain), seed, count, only)


def shaped_streams(prefix: str, shapes: dict[str, Any],
                   chained: tuple[str, Callable[[int, int], list[tuple[str, list[Event], dict[str, Any]]]]],
                   seed: int, count: int, only: list[str] | None
                   ) -> Iterator[tuple[str, list[Event], dict[str, Any] | None, str | None]]:
    """A generator's streams: ``count`` variants of every shape (or of those ``only`` names), each drawn
    from its own seeded random, named ``{prefix}-{shape}-s{seed}.{n}``; then ``count`` of its chain
    (``chained``: the chain's name and its builder), unless ``only`` leaves it out. A shape's builder
    returns ``(events, input)``, or ``(events, input, framing)`` when it draws the SSE framing too."""
    for shape, build in shapes.items():
        if only and shape not in only:
            continue
        for n in range(count):
            # (a builder may also name the SSE framing its stream is written in: sdkwire's dialects do)
            events, inp, *framing = build(_P(random.Random(f"{seed}:{shape}:{n}")))
            yield f"{prefix}-{shape}-s{seed}.{n}", events, inp, framing[0] if framing else None
    name, chain_of = chained
    if not only or name in only:
        for n in range(count):
            for step, events, inp in chain_of(seed, n):
                yield step, events, inp, None
