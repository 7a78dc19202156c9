"""Streams shaped after the integrations ``producers.py`` does not model (``--gen integrations:SEED:N``).

``producers.py`` follows LangGraph, CrewAI, ADK, Mastra, Strands and Claude one ordering at a time;
``families.py`` draws threads, trees and patch storms. Neither writes what these integrations do when
several of their habits meet in one run (each builder in our own words, after reading how the
integration emits events; none of their code is copied):

- ``pydantic-thinking-parallel``: Pydantic AI: a reasoning span with its signature as an encrypted value
  after it closed, text, parallel calls under the model response's id (a message that may never stream
  text), a server-side result and a frontend call left pending, named or not in ``pendingToolCallIds``;
- ``llamaindex-chunk-workflow``: LlamaIndex workflows: every chunk names its ids, a whole call in one
  ``TOOL_CALL_CHUNK``, workflow ``CUSTOM`` events between chunk lanes, explicit events after chunks on other
  ids, a closing ``STATE_SNAPSHOT`` and ``MESSAGES_SNAPSHOT`` restating the run with the user's message;
- ``agno-team-members``: an Agno team: the leader delegates by calls, each member is a subagent whose
  ``parentMessageId`` is the leader's message, with tagged steps, text, calls, reasoning chunks and an
  activity; a member fails (``SUBAGENT_ERROR``) now and then;
- ``ag2-group-chat``: AG2 group chat: agents speak in turn as subagents with chunk events, each naming the
  message it answers as ``parentMessageId``, a nested executor (``parentSubagentRunId``);
- ``adk-state-array-ops``: ADK state: a snapshot with arrays and every JSON Patch op on them, ``test`` on
  elements and whole arrays, ``move`` forward, backward and between arrays, ``copy`` of elements and
  arrays, appends with ``-``; one delta whose ``test`` fails (nothing of it applies);
- ``lg-snapshot-calls-in-flight``: a LangGraph checkpoint ``MESSAGES_SNAPSHOT`` while two parallel calls
  stream their arguments and text is open: one call restated, one left out, a result restated for a call
  still in flight, the streamed message restated under another id; then everything finishes;
- ``lg-multi-interrupt``: a run interrupted with two to four interrupts, each with a ``responseSchema``
  (enums, nested objects, arrays, ``$defs``), some on pending calls, one from a suspended subagent; the
  next runs of the same stream resume them (answered or abandoned), answer the approved calls without
  starting them again (IR-28), and may stop again with new interrupts before finishing;
- ``lg-interrupt-malformed``: one of several interrupts with a slip (a boolean or array ``responseSchema``,
  no ``reason``, a null ``subagentRunId``, an ``expiresAt`` or ``metadata`` of the wrong type), judged as the
  golden ``interrupt-response-schema-true`` (``DOCUMENTED``);
- ``mixed-chunk-explicit``: chunk events and explicit start/content/end on different ids of every kind
  (text, call, reasoning) in one run, a chunk lane closed by an explicit event of another lane;
- ``mastra-activities-snapshot-roles``: an A2UI-like surface as an activity patched with ``copy``,
  ``move`` and ``test`` on its arrays, a reasoning chunk, then a ``MESSAGES_SNAPSHOT`` carrying all, some
  or none of the activity and reasoning messages (MS-03), and patches after it;
- ``legacy-client-parts``: a thread an older client wrote: pre-1.0 ``binary`` parts (data, url, an id
  alone, a filename or an empty one), a media part's ``metadata: null`` and a tool's ``parameters: null``
  in the ``RUN_STARTED.input`` echo, a snapshot restating them beside 1.0 parts, a tool result with parts,
  and ``THINKING_*`` events, some carrying ids of their own.

``resume_chain(seed, n)`` writes ``lg-multi-interrupt`` across *requests*: each turn a stream with its
starting thread (``NAME.input.json``: what our client held after the turns before, the open interrupts,
and a resume covering them, abandoning the expired ones, ``now`` pinned); an interrupted turn may end
with a late ``RUN_ERROR``.

``streams(seed, count)`` yields ``(name, events, input, None)`` as ``families.streams`` does; the same
arguments give the same bytes. Names start ``i-``.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator
from typing import Any

from .families import NOW, _fold, _Model, shaped_streams
from .producers import _P, Event, Stream, _call_entry


def _tag(events: list[Event], sub: str, keep: float = 1.0, rng: random.Random | None = None) -> list[Event]:
    """``events`` attributed to subagent ``sub`` (with ``keep`` < 1, continuations left untagged now and then)."""
    out = []
    for e in events:
        opener = e["type"].endswith("_START") or e["type"].endswith("_CHUNK") or e["type"] == "TOOL_CALL_RESULT"
        out.append(dict(e, subagentRunId=sub) if opener or rng is None or rng.random() < keep else e)
    return out


def pydantic_thinking_parallel(p: _P) -> Stream:
    """Reasoning with a signature, text, parallel calls under the response id, one answered, one left pending."""
    rng = p.rng
    run, r1, resp, c1, c2, t1 = p.id("run"), p.id("thinking"), p.id("resp"), p.id("call"), p.id("call"), p.id("tool")
    ev: list[Event] = [p.started(run), p.ev("REASONING_START", messageId=r1),
                       p.ev("REASONING_MESSAGE_START", messageId=r1, role="reasoning")]
    ev += [p.ev("REASONING_MESSAGE_CONTENT", messageId=r1, delta=d) for d in p.cut("Two tools, in parallel.")]
    ev += [p.ev("REASONING_MESSAGE_END", messageId=r1), p.ev("REASONING_END", messageId=r1)]
    if rng.random() < 0.7:
        ev.append(p.ev("REASONING_ENCRYPTED_VALUE", subtype="message", entityId=r1, encryptedValue="sig:" + r1))
    with_text = rng.random() < 0.6
    if with_text:
        ev += p.text(resp, "Let me look both up.")
    a1, a2 = {"city": "Lyon"}, {"question": "Which dates?", "options": ["mon", "tue"]}
    s1, s2 = p.cut(json.dumps(a1)), p.cut(json.dumps(a2))
    ev += [p.ev("TOOL_CALL_START", toolCallId=c1, toolCallName="weather", parentMessageId=resp),
           p.ev("TOOL_CALL_START", toolCallId=c2, toolCallName="ask_user", parentMessageId=resp)]
    for i in range(max(len(s1), len(s2))):
        ev += [p.ev("TOOL_CALL_ARGS", toolCallId=c, delta=s[i]) for c, s in ((c1, s1), (c2, s2)) if i < len(s)]
    order = [c1, c2] if rng.random() < 0.5 else [c2, c1]
    ev += [p.ev("TOOL_CALL_END", toolCallId=c) for c in order]
    ev.append(p.result(c1, t1, json.dumps({"temp": rng.randint(-5, 30)})))
    if rng.random() < 0.3:
        ev.append(p.ev("REASONING_ENCRYPTED_VALUE", subtype="tool-call", entityId=c1, encryptedValue="sig:" + c1))
    how = rng.choice(["named", "empty", "absent"])
    outcome = {"type": "success", "pendingToolCallIds": [c2]} if how == "named" else \
        {"type": "success", "pendingToolCallIds": []} if how == "empty" else None
    ev.append(p.finished(run, outcome))
    return ev, None


def llamaindex_chunk_workflow(p: _P) -> Stream:
    """Chunks naming their ids every time, a whole call in one chunk, workflow events, closing snapshots."""
    rng = p.rng
    run, u1, m1, c1, t1, m2, m3 = (p.id("run"), p.id("user"), p.id("msg"), p.id("call"), p.id("tool"), p.id("msg"),
                                   p.id("msg"))
    user = {"id": u1, "role": "user", "content": "Find the report."}
    args = {"name": "report.pdf", "limit": rng.randint(1, 9)}
    ev: list[Event] = [p.started(run), p.ev("CUSTOM", name="workflow.step", value={"step": "plan"})]
    ev += [p.ev("TEXT_MESSAGE_CHUNK", messageId=m1, role="assistant", delta=d) for d in p.cut("Searching files.")]
    if rng.random() < 0.5:
        ev.append(p.ev("CUSTOM", name="workflow.step", value={"step": "tool"}))
    ev.append(p.ev("TOOL_CALL_CHUNK", toolCallId=c1, toolCallName="find_file", parentMessageId=m1,
                   delta=json.dumps(args)))
    ev.append(p.result(c1, t1, "found: /docs/report.pdf"))
    state = {"files": ["/docs/report.pdf"], "step": "answer"}
    ev.append(p.ev("STATE_SNAPSHOT", snapshot=state))
    if rng.random() < 0.5:
        ev += [p.ev("TEXT_MESSAGE_CHUNK", messageId=m2, role="assistant", delta=d) for d in p.cut("It is here.")]
    else:
        ev += p.text(m2, "It is here.")
    if rng.random() < 0.4:
        ev += p.text(m3, " Anything else?")
    snapshot = [user, {"id": m1, "role": "assistant", "content": "Searching files.",
                       "toolCalls": [_call_entry(c1, "find_file", args)]},
                {"id": t1, "role": "tool", "toolCallId": c1, "content": "found: /docs/report.pdf"},
                {"id": m2, "role": "assistant", "content": "It is here."}]
    if rng.random() < 0.7:
        ev.append(p.ev("MESSAGES_SNAPSHOT", messages=snapshot))
    ev.append(p.finished(run))
    return ev, {"messages": [user], "threadId": p.thread} if rng.random() < 0.6 else None


def agno_team_members(p: _P) -> Stream:
    """A team leader delegating by calls to members, each a subagent under the leader's message."""
    rng = p.rng
    run, lead = p.id("run"), p.id("msg")
    ev: list[Event] = [p.started(run), *p.text(lead, "I will ask the team.")]
    members = rng.sample(["researcher", "writer", "critic"], rng.randint(1, 3))
    answers = []
    for name in members:
        call, sub, sm = p.id("call"), p.id("sub"), p.id("msg")
        ev += p.call(call, "delegate_task_to_member", {"member": name, "task": "help"}, lead)
        ev.append(p.ev("SUBAGENT_STARTED", subagentRunId=sub, name=name, parentMessageId=lead,
                       parentToolCallId=call if rng.random() < 0.6 else None))
        ev.append(p.ev("STEP_STARTED", stepName=f"{name}-run", subagentRunId=sub))
        if rng.random() < 0.5:
            ev += [p.ev("REASONING_MESSAGE_CHUNK", messageId=p.id("reason"), delta=d, subagentRunId=sub)
                   for d in p.cut("considering")]
        ev += _tag(p.text(sm, f"{name} reporting."), sub, 0.7, rng)
        if rng.random() < 0.5:
            mc = p.id("call")
            ev += _tag(p.call(mc, "search_web", {"q": name}, sm), sub, 0.5, rng)
            ev.append(p.ev("TOOL_CALL_RESULT", toolCallId=mc, messageId=p.id("tool"), content="hits", role="tool",
                           subagentRunId=sub))
        if rng.random() < 0.4:
            act = p.id("act")
            ev += [p.ev("ACTIVITY_SNAPSHOT", messageId=act, activityType="member-status",
                        content={"member": name, "tasks": ["a", "b"]}, subagentRunId=sub),
                   p.ev("ACTIVITY_DELTA", messageId=act, activityType="member-status", subagentRunId=sub,
                        patch=[{"op": "move", "from": "/tasks/0", "path": "/tasks/-"},
                               {"op": "test", "path": "/tasks", "value": ["b", "a"]},
                               {"op": "copy", "from": "/tasks/1", "path": "/done"}])]
        ev.append(p.ev("STEP_FINISHED", stepName=f"{name}-run", subagentRunId=sub))
        if rng.random() < 0.2:
            ev.append(p.ev("SUBAGENT_ERROR", subagentRunId=sub, message=f"{name} timed out"))
            ev.append(p.result(call, p.id("tool"), "member failed"))
        else:
            ev.append(p.ev("SUBAGENT_FINISHED", subagentRunId=sub, result={"member": name, "ok": True}))
            ev.append(p.result(call, p.id("tool"), f"{name}: done"))
            answers.append(name)
    ev += [*p.text(p.id("msg"), "The team answered: " + ", ".join(answers) + "."), p.finished(run)]
    return ev, None


def ag2_group_chat(p: _P) -> Stream:
    """Agents speaking in turn as subagents, by chunks, each answering the message before; a nested executor."""
    rng = p.rng
    run, opener = p.id("run"), p.id("msg")
    ev: list[Event] = [p.started(run), *p.text(opener, "Topic: plan a trip.")]
    last = opener
    for turn, name in enumerate(rng.sample(["planner", "critic", "booker", "reviewer"], rng.randint(2, 4))):
        sub, m = p.id("sub"), p.id("msg")
        ev.append(p.ev("SUBAGENT_STARTED", subagentRunId=sub, name=name, parentMessageId=last))
        ev += [p.ev("TEXT_MESSAGE_CHUNK", messageId=m, role="assistant", delta=d, subagentRunId=sub)
               for d in p.cut(f"{name} says {turn}.")]
        if name == "booker" or rng.random() < 0.3:
            ex, c = p.id("sub"), p.id("call")
            ev.append(p.ev("SUBAGENT_STARTED", subagentRunId=ex, name="executor", parentSubagentRunId=sub,
                           parentMessageId=m if rng.random() < 0.5 else None))
            # (the executor's call is its own, parentless: under the speaker's message it would disagree with
            # that message's owner, TC-14, and both clients refuse it)
            ev.append(p.ev("TOOL_CALL_CHUNK", toolCallId=c, toolCallName="run_code",
                           delta=json.dumps({"code": "print(1)"}), subagentRunId=ex))
            ev.append(p.ev("TOOL_CALL_RESULT", toolCallId=c, messageId=p.id("tool"), content="1", role="tool",
                           subagentRunId=ex))
            ev.append(p.ev("SUBAGENT_FINISHED", subagentRunId=ex, result=1))
        ev.append(p.ev("SUBAGENT_FINISHED", subagentRunId=sub,
                       **({"result": {"said": m}} if rng.random() < 0.5 else {})))
        last = m
    ev.append(p.finished(run, result={"turns": len(ev)} if rng.random() < 0.4 else None))
    return ev, None


def adk_state_array_ops(p: _P) -> Stream:
    """A state with arrays, and every JSON Patch op on them; a delta whose test fails applies nothing."""
    rng = p.rng
    run = p.id("run")
    state = {"todos": [{"t": "a", "done": False}, {"t": "b", "done": True}, {"t": "c", "done": False}],
             "done": [], "tags": ["x", "y", "z"], "matrix": [[1, 2], [3, 4]]}
    ev: list[Event] = [p.started(run), p.ev("STATE_SNAPSHOT", snapshot=state)]
    hand = [
        [{"op": "test", "path": "/todos/1", "value": {"done": True, "t": "b"}},
         {"op": "move", "from": "/todos/1", "path": "/done/-"}],
        [{"op": "move", "from": "/tags/0", "path": "/tags/2"},
         {"op": "test", "path": "/tags", "value": ["y", "z", "x"]}],
        [{"op": "move", "from": "/tags/2", "path": "/tags/0"}, {"op": "copy", "from": "/tags", "path": "/backup"}],
        [{"op": "copy", "from": "/matrix/1", "path": "/matrix/0"}, {"op": "test", "path": "/matrix/0/1", "value": 4},
         {"op": "remove", "path": "/matrix/1"}],
        [{"op": "add", "path": "/todos/0", "value": {"t": "first", "done": False}},
         {"op": "replace", "path": "/todos/1/done", "value": True}, {"op": "test", "path": "/todos/1/t", "value": "a"}],
        [{"op": "copy", "from": "/todos/0", "path": "/todos/-"}, {"op": "move", "from": "/matrix/0", "path": "/m0"}],
        [{"op": "test", "path": "/done", "value": []}, {"op": "add", "path": "/done/0", "value": "never"}],
        [{"op": "test", "path": "/tags/0", "value": "nope"}, {"op": "remove", "path": "/tags"}],
    ]
    # (the two last ones are meant to fail: /done is not empty after the first, and no tag is "nope")
    picked = sorted(rng.sample(range(len(hand)), rng.randint(3, len(hand))))
    ev += [p.ev("STATE_DELTA", delta=hand[i]) for i in picked]
    # a snapshot again, then drawn patches against it (the model knows what it holds)
    fresh = {"rows": [[0], [1, 2]], "queue": ["q1", "q2", "q3"], "seen": {"a": [1]}}
    ev.append(p.ev("STATE_SNAPSHOT", snapshot=fresh))
    model = _Model(rng, fresh)
    for _ in range(rng.randint(1, 4)):
        ev.append(p.ev("STATE_DELTA", delta=model.patch(rng.randint(1, 8), fail=rng.random() < 0.2)))
    ev += [*p.text(p.id("msg"), "State updated."), p.finished(run)]
    return ev, None


def lg_snapshot_calls_in_flight(p: _P) -> Stream:
    """A checkpoint snapshot while two calls stream and text is open; then all of them finish."""
    rng = p.rng
    run, u1, m1, c1, c2, t1, m2, other = (p.id("run"), p.id("user"), p.id("msg"), p.id("call"), p.id("call"),
                                          p.id("tool"), p.id("msg"), p.id("ai"))
    user = {"id": u1, "role": "user", "content": "Compare two cities."}
    a1, a2 = json.dumps({"city": "Oslo"}), json.dumps({"city": "Rome"})
    ev: list[Event] = [p.started(run), *p.text(m1, "Comparing.", end=rng.random() < 0.5),
                       p.ev("TOOL_CALL_START", toolCallId=c1, toolCallName="weather", parentMessageId=m1),
                       p.ev("TOOL_CALL_START", toolCallId=c2, toolCallName="weather", parentMessageId=m1),
                       p.ev("TOOL_CALL_ARGS", toolCallId=c1, delta=a1[:5]),
                       p.ev("TOOL_CALL_ARGS", toolCallId=c2, delta=a2[:7])]
    how = rng.sample(["restate-c1", "result-c1", "other-id", "drop-m1", "user"], rng.randint(1, 4))
    snap: list[dict[str, Any]] = [user] if "user" in how or rng.random() < 0.5 else []
    asst: dict[str, Any] = {"id": other if "other-id" in how else m1, "role": "assistant", "content": "Comparing."}
    if "restate-c1" in how:
        asst["toolCalls"] = [_call_entry(c1, "weather", {"city": "Oslo"})]
    if "drop-m1" not in how:
        snap.append(asst)
    if "result-c1" in how:
        snap.append({"id": t1, "role": "tool", "toolCallId": c1, "content": "cold"})
    ev.append(p.ev("MESSAGES_SNAPSHOT", messages=snap))
    if not any(e["type"] == "TEXT_MESSAGE_END" for e in ev):
        ev += [p.ev("TEXT_MESSAGE_CONTENT", messageId=m1, delta=" Still comparing."),
               p.ev("TEXT_MESSAGE_END", messageId=m1)]
    ev += [p.ev("TOOL_CALL_ARGS", toolCallId=c1, delta=a1[5:]), p.ev("TOOL_CALL_ARGS", toolCallId=c2, delta=a2[7:]),
           p.ev("TOOL_CALL_END", toolCallId=c2), p.ev("TOOL_CALL_END", toolCallId=c1)]
    if "result-c1" not in how:
        ev.append(p.result(c1, t1, "cold"))
    ev.append(p.result(c2, p.id("tool"), "warm"))
    ev += [*p.text(m2, "Rome is warmer."), p.finished(run)]
    return ev, {"messages": [user], "threadId": p.thread}


SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]},
    {"type": "object", "properties": {"choice": {"enum": ["a", "b", "c"]}, "note": {"type": "string"}}},
    {"type": "object", "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/item"}}},
     "$defs": {"item": {"type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}}}}},
    {"type": "object", "properties": {"edited": {"type": "object", "additionalProperties": True}},
     "oneOf": [{"required": ["edited"]}, {"required": ["skip"]}]},
    {},
]
# An answer each schema accepts (by position in SCHEMAS); a resume draws one of these mostly, else any value.
FITTING: list[Any] = [{"approved": True}, {"choice": "b"}, {"items": [{"sku": "x", "qty": 2}]},
                      {"edited": {"a": 1}}, "anything"]


def _interrupts(p: _P, calls: list[str], sub: str | None, expiring: bool) -> list[dict[str, Any]]:
    """Two to four interrupts with schemas; the first ones on ``calls``, one tagged ``sub`` when given."""
    rng = p.rng
    out = []
    for k in range(rng.randint(2, 4)):
        i: dict[str, Any] = {"id": p.id("int"), "reason": rng.choice(["tool_call", "input", "approval", "x-custom"])}
        if k < len(calls):
            i["toolCallId"] = calls[k]
        if rng.random() < 0.8:
            i["responseSchema"] = copy.deepcopy(rng.choice(SCHEMAS))
        if rng.random() < 0.6:
            i["message"] = rng.choice(["Approve?", "Pick one.", "Edit the order."])
        if expiring and rng.random() < 0.4:
            i["expiresAt"] = rng.choice(["2026-11-29T00:00:00Z", "2026-12-01T00:00:00Z", "2026-11-30T00:00:00Z"])
        if rng.random() < 0.3:
            i["metadata"] = {"node": rng.choice(["review", "approve"]), "attempt": k}
        out.append(i)
    if sub is not None:
        out[-1]["subagentRunId"] = sub
    return out


def _answers(p: _P, interrupts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A resume covering ``interrupts``: answered or abandoned; an interrupt expired at ``NOW`` abandoned."""
    rng = p.rng
    out = []
    for i in interrupts:
        expired = i.get("expiresAt", "9999") <= NOW
        status = "cancelled" if expired or rng.random() < 0.3 else "resolved"
        entry: dict[str, Any] = {"interruptId": i["id"], "status": status}
        if status == "resolved":
            # (an answer its schema refuses now and then: we refuse the resume, the reference sends it, golden
            # resume-payload-fails-schema; more often, it would hide the turns after it)
            schema = i.get("responseSchema")
            if schema is not None and rng.random() < 0.9:
                entry["payload"] = copy.deepcopy(FITTING[SCHEMAS.index(schema)])
            else:
                entry["payload"] = rng.choice([{"approved": "yes"}, {"choice": "z"}, "yes", 3, None])
                if entry["payload"] is None:
                    del entry["payload"]
        if rng.random() < 0.2:
            entry["metadata"] = {"by": "user-1"}
        out.append(entry)
    return out


def _interrupted_run(p: _P, run: str, ev: list[Event]) -> list[dict[str, Any]]:
    """Append a run's body that ends interrupted: pending calls, perhaps a suspended subagent; its interrupts."""
    rng = p.rng
    m = p.id("msg")
    ev += p.text(m, "I need a decision.")
    calls = [p.id("call") for _ in range(rng.randint(0, 2))]
    for c in calls:
        ev += p.call(c, rng.choice(["delete_row", "send_mail", "pay"]), {"id": rng.randint(1, 99)}, m)
    sub = None
    if rng.random() < 0.4:
        sub = p.id("sub")
        ev += [p.ev("SUBAGENT_STARTED", subagentRunId=sub, name="approver", parentMessageId=m),
               *_tag(p.text(p.id("msg"), "Waiting for approval."), sub)]
    interrupts = _interrupts(p, calls, sub, expiring=False)
    if sub is not None:
        ev.append(p.ev("SUBAGENT_FINISHED", subagentRunId=sub,
                       outcome={"type": "suspended", "interruptIds": [interrupts[-1]["id"]]}))
    ev.append(p.finished(run, {"type": "interrupt", "interrupts": interrupts}))
    return interrupts


def lg_multi_interrupt(p: _P) -> Stream:
    """Runs interrupted with several interrupts, resumed by the next run of the stream, until one finishes."""
    rng = p.rng
    ev: list[Event] = []
    run = p.id("run")
    ev.append(p.started(run))
    open_ = _interrupted_run(p, run, ev)
    for turn in range(rng.randint(1, 3)):
        run = p.id("run")
        resume = _answers(p, open_)
        ev.append(p.started(run, input={"threadId": p.thread, "runId": run, "messages": [], "tools": [],
                                        "context": [], "state": {}, "forwardedProps": {}, "resume": resume}))
        # the approved calls get their results now, without being started again (IR-28)
        for i, entry in zip(open_, resume, strict=True):
            if "toolCallId" in i:
                ok = entry["status"] == "resolved"
                ev.append(p.result(i["toolCallId"], p.id("tool"), "done" if ok else "skipped"))
        if turn < 2 and rng.random() < 0.5:
            open_ = _interrupted_run(p, run, ev)
            continue
        ev += [*p.text(p.id("msg"), "All settled."), p.finished(run, result={"turn": turn} if rng.random() < 0.3
                                                                  else None)]
        break
    else:
        run = p.id("run")
        ev.append(p.started(run, input={"threadId": p.thread, "runId": run, "messages": [], "tools": [],
                                        "context": [], "state": {}, "forwardedProps": {},
                                        "resume": _answers(p, open_)}))
        ev += [*p.text(p.id("msg"), "Done at last."), p.finished(run)]
    return ev, None


def lg_interrupt_malformed(p: _P) -> Stream:
    """A producer's slip in one of several interrupts (a boolean or array schema, no reason, a null tag, an
    expiresAt or metadata of the wrong type): both clients refuse the RUN_FINISHED, which interrupts stay held."""
    rng = p.rng
    run = p.id("run")
    ev: list[Event] = [p.started(run)]
    interrupts = _interrupts(p, [], None, expiring=False)
    bad = rng.choice(interrupts)
    slip = rng.choice(["schema-true", "schema-array", "no-reason", "null-tag", "expires-number", "metadata-array"])
    if slip == "no-reason":
        del bad["reason"]
    else:
        key, value = {"schema-true": ("responseSchema", True), "schema-array": ("responseSchema", [{}]),
                      "null-tag": ("subagentRunId", None), "expires-number": ("expiresAt", 1780000000),
                      "metadata-array": ("metadata", ["x"])}[slip]
        bad[key] = value
    ev += [*p.text(p.id("msg"), "Two questions."), p.finished(run, {"type": "interrupt", "interrupts": interrupts})]
    return ev, None


def mixed_chunk_explicit(p: _P) -> Stream:
    """Chunk events and explicit start/content/end on different ids of every kind, interleaved in one run."""
    rng = p.rng
    run, m1, m2, m3, c1, c2, r1, r2 = (p.id("run"), p.id("msg"), p.id("msg"), p.id("msg"), p.id("call"),
                                       p.id("call"), p.id("reason"), p.id("reason"))
    ev: list[Event] = [p.started(run)]
    ev += [p.ev("REASONING_MESSAGE_CHUNK", messageId=r1, delta=d) for d in p.cut("first thoughts")]
    ev += [p.ev("REASONING_START", messageId=r2), p.ev("REASONING_MESSAGE_START", messageId=r2, role="reasoning"),
           p.ev("REASONING_MESSAGE_CONTENT", messageId=r2, delta="more"), p.ev("REASONING_MESSAGE_END", messageId=r2),
           p.ev("REASONING_END", messageId=r2)]
    ev += p.text(m1, "Explicit text.", end=False)
    # a tool chunk while the explicit text is open; the explicit text goes on after it
    ev += [p.ev("TOOL_CALL_CHUNK", toolCallId=c1, toolCallName="f", parentMessageId=m1, delta=d)
           for d in p.cut(json.dumps({"a": 1}))]
    ev += [p.ev("TEXT_MESSAGE_CONTENT", messageId=m1, delta=" Continued."), p.ev("TEXT_MESSAGE_END", messageId=m1)]
    ev += [p.ev("TEXT_MESSAGE_CHUNK", messageId=m2, role="assistant", delta=d) for d in p.cut("Chunked text.")]
    # an explicit call closes the chunk lane
    ev += p.call(c2, "g", {"b": [1, 2]}, m2 if rng.random() < 0.5 else None)
    if rng.random() < 0.5:
        ev.append(p.result(c1, p.id("tool"), "f done"))
    ev += [p.ev("TEXT_MESSAGE_CHUNK", messageId=m3, role="assistant", delta="Last, chunked.")]
    if rng.random() < 0.5:
        ev.append(p.ev("STATE_SNAPSHOT", snapshot={"lanes": 3}))
    ev.append(p.finished(run))
    return ev, None


def mastra_activities_snapshot_roles(p: _P) -> Stream:
    """Activities and reasoning streamed, then a MESSAGES_SNAPSHOT carrying all, some or none of those roles."""
    rng = p.rng
    run, r1, m1, a1, a2 = p.id("run"), p.id("reason"), p.id("msg"), p.id("act"), p.id("act")
    surface = {"surfaceId": "main", "components": [{"id": "title", "text": "Plan"}, {"id": "list", "items": []}]}
    ev: list[Event] = [p.started(run)]
    ev += [p.ev("REASONING_MESSAGE_CHUNK", messageId=r1, delta=d) for d in p.cut("what to show")]
    ev += [p.ev("ACTIVITY_SNAPSHOT", messageId=a1, activityType="a2ui-surface", content=surface),
           p.ev("ACTIVITY_DELTA", messageId=a1, activityType="a2ui-surface", patch=[
               {"op": "add", "path": "/components/1/items/-", "value": "step 1"},
               {"op": "copy", "from": "/components/1/items/0", "path": "/components/1/items/-"},
               {"op": "test", "path": "/components/1/items", "value": ["step 1", "step 1"]},
               {"op": "move", "from": "/components/0", "path": "/components/1"}]),
           p.ev("ACTIVITY_SNAPSHOT", messageId=a2, activityType="progress", content={"pct": 5},
                replace=rng.choice([None, False, True]))]
    ev += p.text(m1, "Here is the plan.")
    snap: list[dict[str, Any]] = [{"id": m1, "role": "assistant", "content": "Here is the plan."}]
    roles = rng.sample(["activity", "reasoning", "new-activity", "new-reasoning"], rng.randint(0, 3))
    if "activity" in roles:
        snap.append({"id": a2, "role": "activity", "activityType": "progress", "content": {"pct": 50}})
    if "new-activity" in roles:
        snap.append({"id": p.id("act"), "role": "activity", "activityType": "note", "content": {"n": 1}})
    if "reasoning" in roles:
        snap.append({"id": r1, "role": "reasoning", "content": "what to show, restated"})
    if "new-reasoning" in roles:
        snap.insert(0, {"id": p.id("reason"), "role": "reasoning", "content": "earlier thoughts"})
    ev.append(p.ev("MESSAGES_SNAPSHOT", messages=snap))
    # patches after the snapshot: on an activity it kept, replaced or dropped (then there is nothing to patch)
    for act in rng.sample([a1, a2], rng.randint(1, 2)):
        ev.append(p.ev("ACTIVITY_DELTA", messageId=act, activityType="a2ui-surface" if act == a1 else "progress",
                       patch=[{"op": "add", "path": "/seen", "value": True}]))
    if rng.random() < 0.4:
        ev.append(p.ev("ACTIVITY_SNAPSHOT", messageId=a1, activityType="a2ui-surface", content={"surfaceId": "x"},
                       replace=False))
    ev.append(p.finished(run))
    return ev, None


def legacy_client_parts(p: _P) -> Stream:
    """A thread an older client wrote: ``binary`` parts, null media metadata and null tool parameters in the
    input echo, restated by a snapshot with 1.0 parts beside the old ones; a tool result with media parts."""
    rng = p.rng
    run, u1, m1, c1, t1 = p.id("run"), p.id("user"), p.id("msg"), p.id("call"), p.id("tool")
    data, url = "iVBORw0KGgo=", "https://files.example/" + p.id("f") + ".pdf"

    def old(kind: str) -> dict[str, Any]:
        part: dict[str, Any] = {"type": "binary", "mimeType": rng.choice(["image/png", "audio/wav", "video/mp4",
                                                                          "application/pdf", "text/csv"])}
        if kind in ("data", "both"):
            part["data"] = data
        if kind in ("url", "both"):
            part["url"] = url
        if kind == "id" or rng.random() < 0.3:
            part["id"] = p.id("file")
        if rng.random() < 0.5:
            part["filename"] = rng.choice(["a.png", "", "report.pdf"])
        return part

    parts: list[Any] = [{"type": "text", "text": "See the attachments."}]
    parts += [old(rng.choice(["data", "url", "both", "id"])) for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.5:
        parts.append({"type": "image", "source": {"type": "data", "value": data, "mimeType": "image/png"},
                      **({"metadata": None} if rng.random() < 0.5 else {})})
    user = {"id": u1, "role": "user", "content": parts}
    echo = {"threadId": p.thread, "runId": run, "messages": [user], "context": [], "state": {},
            "forwardedProps": {}, "tools": [{"name": "read_file", "description": "reads",
                                             **({"parameters": None} if rng.random() < 0.5 else {})}]}
    ev: list[Event] = [p.started(run, input=echo)]
    if rng.random() < 0.6:
        # an older server's thinking: THINKING_* events, now and then carrying ids of their own (not read)
        ids = [rng.choice([None, p.id("think"), m1]) for _ in range(5)]
        ev += [p.ev(kind, messageId=i, **extra) for kind, i, extra in zip(
            ("THINKING_START", "THINKING_TEXT_MESSAGE_START", "THINKING_TEXT_MESSAGE_CONTENT",
             "THINKING_TEXT_MESSAGE_END", "THINKING_END"), ids,
            ({"title": "plan"}, {}, {"delta": "files first"}, {}, {}), strict=True)]
    ev += [*p.text(m1, "Reading them."), *p.call(c1, "read_file", {"n": len(parts)}, m1)]
    result: Any = "read" if rng.random() < 0.5 else [
        {"type": "text", "text": "page 1"},
        {"type": "document", "source": {"type": "url", "value": url, "mimeType": "application/pdf"},
         "metadata": {"pages": 1}}]
    ev.append(p.ev("TOOL_CALL_RESULT", toolCallId=c1, messageId=t1, content=result, role="tool"))
    if rng.random() < 0.6:
        restated = dict(user, content=[*parts, old("data")])
        ev.append(p.ev("MESSAGES_SNAPSHOT", messages=[restated, {"id": m1, "role": "assistant", "content": "Read.",
                                                                 "toolCalls": [_call_entry(c1, "read_file", {})]},
                                                      {"id": t1, "role": "tool", "toolCallId": c1,
                                                       "content": [old("url")]}]))
    ev.append(p.finished(run))
    return ev, None


SHAPES: dict[str, Callable[[_P], Stream]] = {
    "pydantic-thinking-parallel": pydantic_thinking_parallel,
    "llamaindex-chunk-workflow": llamaindex_chunk_workflow,
    "agno-team-members": agno_team_members,
    "ag2-group-chat": ag2_group_chat,
    "adk-state-array-ops": adk_state_array_ops,
    "lg-snapshot-calls-in-flight": lg_snapshot_calls_in_flight,
    "lg-multi-interrupt": lg_multi_interrupt,
    "mixed-chunk-explicit": mixed_chunk_explicit,
    "mastra-activities-snapshot-roles": mastra_activities_snapshot_roles,
    "legacy-client-parts": legacy_client_parts,
    "lg-interrupt-malformed": lg_interrupt_malformed,
}

# Shapes that may meet a difference the golden tests document (as ``producers.DOCUMENTED``).
DOCUMENTED: dict[str, str] = {
    # both refuse; we hold the outcome's interrupts open (the golden cases: a boolean schema; a missing reason,
    # interrupt-no-reason; a null tag, interrupt-subagent-null; a field of the wrong type,
    # interrupt-fields-wrong-type: all of them in the one field pendingInterrupts)
    "lg-interrupt-malformed": "interrupt-response-schema-true",
}


def documented(name: str) -> str | None:
    """The golden stream whose documented difference the stream ``name`` (or a variant of it) may show."""
    if not name.startswith("i-"):
        return None
    return DOCUMENTED.get(name[2:].split("~", 1)[0].rsplit("-s", 1)[0])


def resume_chain(seed: int, n: int) -> list[tuple[str, list[Event], dict[str, Any]]]:
    """Two to four turns of one thread, each a request resuming the interrupts the turn before left open."""
    rng = random.Random(f"{seed}:resume-chain:{n}")
    p = _P(rng)
    held: dict[str, Any] = {"messages": [], "state": {}, "pendingInterrupts": [], "pendingCalls": []}
    out = []
    for k in range(rng.randint(2, 4)):
        run = p.id("run")
        messages = [*held["messages"], {"id": p.id("user"), "role": "user", "content": f"turn {k}"}]
        inp: dict[str, Any] = {"messages": messages, "state": held["state"], "threadId": p.thread, "now": NOW}
        ev: list[Event] = [p.started(run)]
        if held["pendingInterrupts"]:
            inp["pendingInterrupts"] = held["pendingInterrupts"]
            inp["resume"] = _answers(p, held["pendingInterrupts"])
            if rng.random() < 0.15:
                # an expired interrupt answered anyway: both clients refuse before the run
                late = [i for i in held["pendingInterrupts"] if i.get("expiresAt", "9999") <= NOW]
                for entry in inp["resume"]:
                    if late and entry["interruptId"] == late[0]["id"]:
                        entry.update(status="resolved", payload={"approved": True})
            for i, entry in zip(held["pendingInterrupts"], inp["resume"], strict=True):
                if "toolCallId" in i:
                    ev.append(p.result(i["toolCallId"], p.id("tool"), entry["status"]))
        if rng.random() < 0.5:
            model = _Model(rng, held["state"] if isinstance(held["state"], dict) else {})
            ev.append(p.ev("STATE_DELTA", delta=[{"op": "add", "path": "/turn", "value": k}]))
            if isinstance(held["state"], dict):
                model.doc["turn"] = k
                ev.append(p.ev("STATE_DELTA", delta=model.patch(rng.randint(1, 4))))
        if rng.random() < 0.6:
            m = p.id("msg")
            ev += p.text(m, "Need decisions.")
            calls = [p.id("call") for _ in range(rng.randint(0, 2))]
            for c in calls:
                ev += p.call(c, "act", {"k": k}, m)
            ev.append(p.finished(run, {"type": "interrupt", "interrupts": _interrupts(p, calls, None, True)}))
            if rng.random() < 0.2:
                # a failure surfacing after the close (IR-08): the interrupts stay open (IR-27)
                ev.append(p.ev("RUN_ERROR", message="checkpoint write failed", code="late"))
        else:
            ev += [*p.text(p.id("msg"), f"Turn {k} done."), p.finished(run)]
        out.append((f"i-resume-chain-s{seed}.{n}-k{k}", ev, inp))
        held = _fold(ev, inp)
    return out


def streams(seed: int, count: int, only: list[str] | None = None
            ) -> Iterator[tuple[str, list[Event], dict[str, Any] | None, str | None]]:
    """``count`` variants of every shape (or of those ``only`` names), then ``count`` resume chains."""
    return shaped_streams("i", SHAPES, ("resume-chain", resume_chain), seed, count, only)
