"""Streams shaped as real producers emit them, for the reference differential (``--gen producers:SEED:N``).

The hand-written golden streams each isolate one rule; the hostile variants reach for the edges of one
stream. Neither has the *orderings* the producer integrations of AG-UI write in practice, where several
rules meet in one run. Each builder here writes one such shape, in our own words, after reading how an
integration emits events (the names say which one; none of their code is copied):

- ``langgraph``: a text message id pinned across text -> tool -> text in one node (the second text
  reopens an ended id), tool calls re-emitted when a tool finishes with the *tool message's* id as their
  parent and as the result's id, a call whose parent message starts only after it, closing
  ``STATE_SNAPSHOT`` + ``MESSAGES_SNAPSHOT`` under ids the stream did not use, interrupts as legacy
  ``CUSTOM on_interrupt`` or as the structured outcome with the call still pending, reasoning with an
  encrypted value, a snapshot at the start of a regenerate that drops the tail of the history;
- ``crewai``: ``TEXT_MESSAGE_CHUNK`` / ``TOOL_CALL_CHUNK`` convenience events, a ``STATE_SNAPSHOT``
  side-channel between chunks of one message, a terminal ``MESSAGES_SNAPSHOT``, steps per flow method;
- ``adk``: parentless long-running calls left for the client, ``STATE_DELTA`` against a snapshot, an
  encrypted value on a tool call (a thought signature), a second run whose input carries the client's
  result;
- ``mastra`` / ``vercel``: text chunks with a tool call started under the chunk's message, activities
  (snapshot, patches, a non-replacing snapshot);
- ``strands``: ``RUN_ERROR`` in the middle of a message or of a call's arguments, a ``MESSAGES_SNAPSHOT``
  mid-run after server-side results, before the next message streams;
- ``claude``: a call started inside an open text message, the text ending after it;
- generic: a snapshot restating a call that is still streaming its arguments, predictive state (a
  ``CUSTOM`` event, then deltas as arguments stream), several runs in one stream.

``streams(seed, count)`` yields ``(name, events, input)`` for ``count`` variants of every shape: ids
(short or uuid-like), how text and arguments are cut into deltas, whether events carry ``rawEvent`` or
``timestamp``, are drawn from ``random.Random(seed, shape, n)``, so the same arguments give the same
bytes. Standard library only.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from typing import Any

Event = dict[str, Any]
Stream = tuple[list[Event], dict[str, Any] | None]


class _P:
    """What one variant draws: ids, how strings are cut, optional fields."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.uuid = rng.random() < 0.5
        self.raw = rng.random() < 0.3
        self.stamp = rng.random() < 0.3
        self.clock = 1_780_000_000_000
        self._drawn: set[str] = set()
        self.thread = self.id("thread")

    def id(self, prefix: str) -> str:
        """A new id, never one this variant drew before. Drawn from 1-9999, two of a variant's ids met by
        chance (6 variants in 14,000): a call or message id reused, which the shape never meant and which
        can meet a documented difference, so a run's report held noise that looked like a finding. Ids
        meant to repeat are repeated by the shape itself; the hostile mutations reuse ids on purpose."""
        while True:
            if self.uuid:
                h = "".join(self.rng.choice("0123456789abcdef") for _ in range(32))
                made = f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"
            else:
                made = f"{prefix}-{self.rng.randint(1, 999_999)}"
            if made not in self._drawn:
                self._drawn.add(made)
                return made

    def cut(self, text: str) -> list[str]:
        """``text`` in 1..4 non-empty pieces (producers never send an empty delta: the schema refuses it)."""
        if len(text) < 2:
            return [text]
        points = sorted(self.rng.sample(range(1, len(text)), min(len(text) - 1, self.rng.randint(0, 3))))
        return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]

    def ev(self, type_: str, **fields: Any) -> Event:
        event: Event = {"type": type_, **{k: v for k, v in fields.items() if v is not None}}
        if self.raw and type_ not in ("RUN_STARTED", "RUN_FINISHED", "RAW"):
            event["rawEvent"] = {"event": "on_chat_model_stream", "run_id": "lg", "data": {"n": self.rng.randint(0, 9)}}
        if self.stamp:
            self.clock += self.rng.randint(0, 40)
            event["timestamp"] = self.clock
        return event

    # Building blocks ---------------------------------------------------------------------------------

    def started(self, run: str, **extra: Any) -> Event:
        return self.ev("RUN_STARTED", threadId=self.thread, runId=run, **extra)

    def finished(self, run: str, outcome: Any = None, **extra: Any) -> Event:
        return self.ev("RUN_FINISHED", threadId=self.thread, runId=run, outcome=outcome, **extra)

    def text(self, mid: str, content: str, start: bool = True, end: bool = True) -> list[Event]:
        out = [self.ev("TEXT_MESSAGE_START", messageId=mid, role="assistant")] if start else []
        out += [self.ev("TEXT_MESSAGE_CONTENT", messageId=mid, delta=d) for d in self.cut(content)]
        if end:
            out.append(self.ev("TEXT_MESSAGE_END", messageId=mid))
        return out

    def call(self, cid: str, name: str, args: Any, parent: str | None, end: bool = True) -> list[Event]:
        out = [self.ev("TOOL_CALL_START", toolCallId=cid, toolCallName=name, parentMessageId=parent)]
        out += [self.ev("TOOL_CALL_ARGS", toolCallId=cid, delta=d) for d in self.cut(json.dumps(args))]
        if end:
            out.append(self.ev("TOOL_CALL_END", toolCallId=cid))
        return out

    def result(self, cid: str, mid: str, content: str) -> Event:
        return self.ev("TOOL_CALL_RESULT", toolCallId=cid, messageId=mid, content=content, role="tool")


def _call_entry(cid: str, name: str, args: Any) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


# ---------------------------------------------------------------------------------------------------
# langgraph


def lg_pinned_text_across_tool(p: _P) -> Stream:
    """Text, a tool call under the next LLM invocation's chunk id, its result, then text under the pinned id."""
    run, m1, chunk2, chunk3, c1, tm = p.id("run"), p.id("msg"), p.id("chunk"), p.id("chunk"), p.id("call"), p.id("tool")
    args = {"city": "Paris", "days": p.rng.randint(1, 5)}
    ev = [p.started(run), *p.text(m1, "Let me check the weather."), *p.call(c1, "get_weather", args, chunk2),
          p.result(c1, tm, '{"temp": 21}'), *p.text(m1, " It is 21 degrees.")]
    state = {"messages_count": 4, "city": "Paris"}
    snapshot = [{"id": m1, "role": "assistant", "content": "Let me check the weather."},
                {"id": chunk2, "role": "assistant", "content": "", "toolCalls": [_call_entry(c1, "get_weather", args)]},
                {"id": tm, "role": "tool", "toolCallId": c1, "content": '{"temp": 21}'},
                {"id": chunk3, "role": "assistant", "content": "It is 21 degrees."}]
    if p.rng.random() < 0.5:
        ev += [p.ev("STATE_SNAPSHOT", snapshot=state), p.ev("MESSAGES_SNAPSHOT", messages=snapshot)]
    ev.append(p.finished(run))
    return ev, None


def lg_tool_end_reemit(p: _P) -> Stream:
    """A call the model did not stream: START/ARGS/END with the tool message's id as parent, the result under it."""
    run, m1, c1, tm = p.id("run"), p.id("msg"), p.id("call"), p.id("tool")
    parent = tm if p.rng.random() < 0.6 else c1  # without a ToolMessage id, the call id stands for both
    ev = [p.started(run), *p.text(m1, "Looking it up."), *p.call(c1, "search", {"q": "ag-ui"}, parent),
          p.result(c1, parent, "3 results"), p.finished(run)]
    return ev, None


def lg_parent_started_later(p: _P) -> Stream:
    """A call whose parentMessageId is a message that starts (as text) only after the call ended."""
    run, m1, c1 = p.id("run"), p.id("msg"), p.id("call")
    ev = [p.started(run), *p.call(c1, "lookup", {"id": 7}, m1), *p.text(m1, "Calling lookup.")]
    if p.rng.random() < 0.5:
        ev.append(p.result(c1, p.id("tool"), "found"))
    ev.append(p.finished(run))
    return ev, None


def lg_interrupt_legacy(p: _P) -> Stream:
    """Steps per node, then the legacy on_interrupt CUSTOM event and a plain RUN_FINISHED."""
    run, m1 = p.id("run"), p.id("msg")
    ev = [p.started(run), p.ev("STEP_STARTED", stepName="agent"), *p.text(m1, "I need your approval."),
          p.ev("STEP_FINISHED", stepName="agent"), p.ev("STATE_SNAPSHOT", snapshot={"approved": None}),
          p.ev("CUSTOM", name="on_interrupt", value=json.dumps({"question": "Approve?"})), p.finished(run)]
    return ev, None


def lg_interrupt_outcome_pending_call(p: _P) -> Stream:
    """A call left unanswered, closing snapshots restating it, and the structured interrupt outcome naming it."""
    run, m1, c1, iid = p.id("run"), p.id("msg"), p.id("call"), p.id("int")
    args = {"action": "delete", "path": "notes/x.txt"}
    snapshot = [{"id": m1, "role": "assistant", "content": "", "toolCalls": [_call_entry(c1, "delete_file", args)]}]
    interrupt: dict[str, Any] = {"id": iid, "reason": "tool_call", "toolCallId": c1, "message": "Approve deletion?"}
    if p.rng.random() < 0.5:
        interrupt["responseSchema"] = {"type": "object", "properties": {"approved": {"type": "boolean"}}}
    ev = [p.started(run), *p.call(c1, "delete_file", args, m1), p.ev("STATE_SNAPSHOT", snapshot={"step": "review"}),
          p.ev("MESSAGES_SNAPSHOT", messages=snapshot)]
    if p.rng.random() < 0.5:
        ev.append(p.ev("CUSTOM", name="on_interrupt", value=json.dumps({"approve": c1})))
    ev.append(p.finished(run, {"type": "interrupt", "interrupts": [interrupt]}))
    return ev, None


def lg_interrupt_then_resume(p: _P) -> Stream:
    """Two runs: an interrupt with a call pending, then the resumed run answering it server-side and replying."""
    r1, r2, m1, m2, c1, tm, iid = (p.id("run"), p.id("run"), p.id("msg"), p.id("msg"), p.id("call"), p.id("tool"),
                                   p.id("int"))
    args = {"amount": 40}
    ev = [p.started(r1), *p.text(m1, "Transfer 40?", end=True), *p.call(c1, "transfer", args, m1),
          p.finished(r1, {"type": "interrupt", "interrupts": [{"id": iid, "reason": "approval", "toolCallId": c1}]}),
          p.started(r2, input={"threadId": p.thread, "runId": r2, "messages": [], "tools": [], "context": [],
                               "state": {}, "forwardedProps": {}, "resume": [{"interruptId": iid, "status": "resolved",
                                                                               "payload": {"approved": True}}]}),
          p.result(c1, tm, "done"), *p.text(m2, "Transferred."), p.finished(r2)]
    return ev, None


def lg_reasoning(p: _P) -> Stream:
    """A reasoning span with an encrypted value for its message, then the answer."""
    run, rid, m1 = p.id("run"), p.id("reasoning"), p.id("msg")
    ev = [p.started(run), p.ev("REASONING_START", messageId=rid),
          p.ev("REASONING_MESSAGE_START", messageId=rid, role="reasoning")]
    ev += [p.ev("REASONING_MESSAGE_CONTENT", messageId=rid, delta=d) for d in p.cut("The user wants a summary.")]
    ev += [p.ev("REASONING_MESSAGE_END", messageId=rid)]
    if p.rng.random() < 0.7:
        ev.append(p.ev("REASONING_ENCRYPTED_VALUE", subtype="message", entityId=rid,
                       encryptedValue="gAAAA" + p.id("e")))
    ev += [p.ev("REASONING_END", messageId=rid), *p.text(m1, "Here is the summary."), p.finished(run)]
    return ev, None


def lg_regenerate_snapshot(p: _P) -> Stream:
    """A regenerate: a snapshot right after RUN_STARTED drops the history's last answer, then a new one streams."""
    run, u1, a1, u2, a2, a3 = p.id("run"), p.id("user"), p.id("msg"), p.id("user"), p.id("msg"), p.id("msg")
    history = [{"id": u1, "role": "user", "content": "hi"}, {"id": a1, "role": "assistant", "content": "hello"},
               {"id": u2, "role": "user", "content": "tell me a joke"},
               {"id": a2, "role": "assistant", "content": "a bad joke"}]
    ev = [p.started(run), p.ev("MESSAGES_SNAPSHOT", messages=history[:3]), *p.text(a3, "A better joke."),
          p.ev("STATE_SNAPSHOT", snapshot={}), p.ev("MESSAGES_SNAPSHOT", messages=[*history[:3], {
              "id": a3, "role": "assistant", "content": "A better joke."}]), p.finished(run)]
    return ev, {"messages": history, "threadId": p.thread}


# ---------------------------------------------------------------------------------------------------
# crewai


def crewai_chunks(p: _P) -> Stream:
    """Text and tool chunks, state snapshots between chunks of one message, a result, a terminal snapshot.

    A state snapshot between two chunks of one *call* closes the call's chunk stream (TC-21: any other
    event does), so the next chunk, which names no tool, is refused as a call's first chunk: by both
    clients. crewai's side channel can emit that order; drawn too.
    """
    run, m1, c1, tm = p.id("run"), p.id("msg"), p.id("call"), p.id("tool")
    args = json.dumps({"topic": "bees"})
    text = "Researching bees"
    ev = [p.started(run), p.ev("STEP_STARTED", stepName="research")]
    pieces = p.cut(text)
    for i, d in enumerate(pieces):
        ev.append(p.ev("TEXT_MESSAGE_CHUNK", messageId=m1, role="assistant", delta=d))
        if i == 0 and p.rng.random() < 0.6:
            ev.append(p.ev("STATE_SNAPSHOT", snapshot={"progress": 0.1}))
    for i, d in enumerate(p.cut(args)):
        ev.append(p.ev("TOOL_CALL_CHUNK", toolCallId=c1, toolCallName="search" if i == 0 else None,
                       parentMessageId=m1, delta=d))
        if i == 0 and p.rng.random() < 0.5:
            ev.append(p.ev("STATE_SNAPSHOT", snapshot={"progress": 0.5}))
    ev += [p.result(c1, tm, "bees are insects"), p.ev("STEP_FINISHED", stepName="research")]
    if p.rng.random() < 0.7:
        ev.append(p.ev("MESSAGES_SNAPSHOT", messages=[
            {"id": m1, "role": "assistant", "content": text, "toolCalls": [
                {"id": c1, "type": "function", "function": {"name": "search", "arguments": args}}]},
            {"id": tm, "role": "tool", "toolCallId": c1, "content": "bees are insects"}]))
    ev.append(p.finished(run))
    return ev, None


def crewai_chunk_messages(p: _P) -> Stream:
    """Two chunked messages back to back (no END between them), the second named only by its id."""
    run, m1, m2 = p.id("run"), p.id("msg"), p.id("msg")
    ev = [p.started(run)]
    ev += [p.ev("TEXT_MESSAGE_CHUNK", messageId=m1, role="assistant", delta=d) for d in p.cut("First flow step.")]
    ev += [p.ev("TEXT_MESSAGE_CHUNK", messageId=m2, delta=d) for d in p.cut("Second flow step.")]
    ev += [p.ev("CUSTOM", name="crew_progress", value={"done": True}), p.finished(run)]
    return ev, None


# ---------------------------------------------------------------------------------------------------
# adk


def adk_long_running(p: _P) -> Stream:
    """Text, then parentless long-running calls left for the client, state deltas, a plain RUN_FINISHED."""
    run, m1, c1, c2 = p.id("run"), p.id("msg"), p.id("call"), p.id("call")
    ev = [p.started(run), p.ev("STATE_SNAPSHOT", snapshot={"items": [], "status": "new"}),
          *p.text(m1, "Please confirm."),
          *p.call(c1, "confirm_changes", {"changes": ["a"]}, None)]
    if p.rng.random() < 0.5:
        ev.append(p.ev("REASONING_ENCRYPTED_VALUE", subtype="tool-call", entityId=c1, encryptedValue="sig" + p.id("s")))
    ev += [p.ev("STATE_DELTA", delta=[{"op": "add", "path": "/items/-", "value": "a"},
                                      {"op": "replace", "path": "/status", "value": "pending"}])]
    if p.rng.random() < 0.5:
        ev += p.call(c2, "pick_date", {}, None)
    ev.append(p.finished(run))
    return ev, None


def adk_resume_with_client_result(p: _P) -> Stream:
    """The second run: the input echoes the client's tool result for the call left pending, the agent answers."""
    r1, r2, m1, m2, c1, tm = p.id("run"), p.id("run"), p.id("msg"), p.id("msg"), p.id("call"), p.id("tool")
    call_msg = {"id": c1, "role": "assistant", "toolCalls": [_call_entry(c1, "approve", {"x": 1})]}
    tool_msg = {"id": tm, "role": "tool", "toolCallId": c1, "content": "approved"}
    ev = [p.started(r1), *p.call(c1, "approve", {"x": 1}, None), p.finished(r1),
          p.started(r2, input={"threadId": p.thread, "runId": r2, "messages": [call_msg, tool_msg], "tools": [],
                               "context": [], "state": {}, "forwardedProps": {}}),
          *p.text(m2, "Approved, continuing."), p.finished(r2)]
    if p.rng.random() < 0.5:
        # some servers also send the result they were given back as an event
        ev.insert(ev.index(next(e for e in ev if e.get("runId") == r2)) + 1, p.result(c1, tm, "approved"))
    _ = m1
    return ev, None


# ---------------------------------------------------------------------------------------------------
# mastra, vercel, strands, claude


def mastra_chunk_then_call(p: _P) -> Stream:
    """Text chunks, a call started under the chunk's message while the chunk is the open one, a result, more text."""
    run, m1, m2, c1, tm = p.id("run"), p.id("msg"), p.id("msg"), p.id("call"), p.id("tool")
    ev = [p.started(run)]
    ev += [p.ev("TEXT_MESSAGE_CHUNK", messageId=m1, role="assistant", delta=d) for d in p.cut("Checking stock.")]
    ev += [*p.call(c1, "stock", {"sku": "A1"}, m1), p.result(c1, tm, "12 left")]
    ev += [p.ev("TEXT_MESSAGE_CHUNK", messageId=m2, role="assistant", delta=d) for d in p.cut("12 are left.")]
    ev += [p.ev("STATE_SNAPSHOT", snapshot={"sku": "A1", "stock": 12}), p.finished(run)]
    return ev, None


def vercel_chunk_call_snapshot(p: _P) -> Stream:
    """Text chunks, a call under that message, text chunks again on the same id, a closing snapshot."""
    run, m1, c1 = p.id("run"), p.id("msg"), p.id("call")
    ev = [p.started(run)]
    ev += [p.ev("TEXT_MESSAGE_CHUNK", messageId=m1, role="assistant", delta=d) for d in p.cut("Let me see. ")]
    ev += p.call(c1, "read", {"f": "a.txt"}, m1)
    ev += [p.ev("TEXT_MESSAGE_CHUNK", messageId=m1, delta=d) for d in p.cut("Done.")]
    if p.rng.random() < 0.6:
        ev.append(p.ev("MESSAGES_SNAPSHOT", messages=[{"id": m1, "role": "assistant", "content": "Let me see. Done.",
                                                       "toolCalls": [_call_entry(c1, "read", {"f": "a.txt"})]}]))
    ev.append(p.finished(run))
    return ev, None


def mastra_activity(p: _P) -> Stream:
    """An activity built by a snapshot and patches, a non-replacing snapshot, a text answer."""
    run, a1, m1 = p.id("run"), p.id("activity"), p.id("msg")
    ev = [p.started(run), p.ev("ACTIVITY_SNAPSHOT", messageId=a1, activityType="a2ui-surface",
                               content={"steps": [], "status": "running"}),
          p.ev("ACTIVITY_DELTA", messageId=a1, activityType="a2ui-surface",
               patch=[{"op": "add", "path": "/steps/-", "value": {"name": "fetch"}}]),
          p.ev("ACTIVITY_DELTA", messageId=a1, activityType="a2ui-surface",
               patch=[{"op": "replace", "path": "/status", "value": "done"}]),
          p.ev("ACTIVITY_SNAPSHOT", messageId=a1, activityType="a2ui-surface", content={"ignored": True},
               replace=False),
          *p.text(m1, "All steps done."), p.finished(run)]
    return ev, None


def strands_error_mid_message(p: _P) -> Stream:
    """A message (or a call's arguments) cut by RUN_ERROR: the model threw."""
    run, m1, c1 = p.id("run"), p.id("msg"), p.id("call")
    ev = [p.started(run), *p.text(m1, "Starting the analysis", end=False)]
    if p.rng.random() < 0.5:
        ev += [p.ev("TEXT_MESSAGE_END", messageId=m1),
               p.ev("TOOL_CALL_START", toolCallId=c1, toolCallName="analyze", parentMessageId=m1),
               p.ev("TOOL_CALL_ARGS", toolCallId=c1, delta='{"data": [1, 2')]
    ev.append(p.ev("RUN_ERROR", message="ThrottlingException: rate exceeded", code="model_error"))
    return ev, None


def strands_snapshot_mid_run(p: _P) -> Stream:
    """Server-side tool results, then a MESSAGES_SNAPSHOT restating the thread, then the answer streams."""
    run, m1, m2, c1, c2, t1, t2 = (p.id("run"), p.id("msg"), p.id("msg"), p.id("call"), p.id("call"), p.id("tool"),
                                   p.id("tool"))
    ev = [p.started(run), *p.text(m1, "Two lookups."), *p.call(c1, "a", {"n": 1}, m1), *p.call(c2, "b", {"n": 2}, m1),
          p.result(c1, t1, "A"), p.result(c2, t2, "B"),
          p.ev("MESSAGES_SNAPSHOT", messages=[
              {"id": m1, "role": "assistant", "content": "Two lookups.",
               "toolCalls": [_call_entry(c1, "a", {"n": 1}), _call_entry(c2, "b", {"n": 2})]},
              {"id": t1, "role": "tool", "toolCallId": c1, "content": "A"},
              {"id": t2, "role": "tool", "toolCallId": c2, "content": "B"}]),
          *p.text(m2, "A and B."), p.finished(run)]
    return ev, None


def claude_call_inside_text(p: _P) -> Stream:
    """A call started under the open text message; the text continues and ends after the call."""
    run, m1, c1, tm = p.id("run"), p.id("msg"), p.id("call"), p.id("tool")
    ev = [p.started(run), *p.text(m1, "I will read the file", end=False), *p.call(c1, "Read", {"path": "a"}, m1),
          *p.text(m1, " now.", start=False), p.result(c1, tm, "contents")]
    ev.append(p.finished(run))
    return ev, None


# ---------------------------------------------------------------------------------------------------
# generic


def snapshot_restates_streaming_call(p: _P) -> Stream:
    """A MESSAGES_SNAPSHOT arrives while a call's arguments are still streaming, restating the call complete."""
    run, m1, c1 = p.id("run"), p.id("msg"), p.id("call")
    args = {"query": "long arguments"}
    text = json.dumps(args)
    half = len(text) // 2
    ev = [p.started(run), *p.text(m1, "Searching."),
          p.ev("TOOL_CALL_START", toolCallId=c1, toolCallName="search", parentMessageId=m1),
          p.ev("TOOL_CALL_ARGS", toolCallId=c1, delta=text[:half]),
          p.ev("MESSAGES_SNAPSHOT", messages=[{"id": m1, "role": "assistant", "content": "Searching.",
                                               "toolCalls": [_call_entry(c1, "search", args)]}]),
          p.ev("TOOL_CALL_ARGS", toolCallId=c1, delta=text[half:]), p.ev("TOOL_CALL_END", toolCallId=c1),
          p.finished(run)]
    return ev, None


def predictive_state(p: _P) -> Stream:
    """PredictState CUSTOM, a call whose arguments stream while STATE_DELTAs mirror them, then STATE_SNAPSHOT."""
    run, m1, c1 = p.id("run"), p.id("msg"), p.id("call")
    ev = [p.started(run), p.ev("STATE_SNAPSHOT", snapshot={"document": ""}),
          p.ev("CUSTOM", name="PredictState",
               value=[{"state_key": "document", "tool": "write", "tool_argument": "doc"}]),
          p.ev("TOOL_CALL_START", toolCallId=c1, toolCallName="write", parentMessageId=m1)]
    doc, sent = "Once upon a time", ""
    for piece in p.cut(json.dumps({"doc": doc})):
        sent += piece
        # the agent mirrors what the arguments hold so far into the state (a prefix of the document)
        shown = sent[len('{"doc": "'):].rstrip('"}')
        ev += [p.ev("TOOL_CALL_ARGS", toolCallId=c1, delta=piece),
               p.ev("STATE_DELTA", delta=[{"op": "replace", "path": "/document", "value": shown}])]
    ev += [p.ev("TOOL_CALL_END", toolCallId=c1), p.ev("STATE_SNAPSHOT", snapshot={"document": doc}),
           p.ev("TOOL_CALL_RESULT", toolCallId=c1, messageId=p.id("tool"), content="written"), p.finished(run)]
    return ev, None


def runs_in_one_stream(p: _P) -> Stream:
    """Three runs on one connection: success, then an echo of the history in RUN_STARTED.input, then cancelled."""
    r1, r2, r3, m1, m2, u2 = p.id("run"), p.id("run"), p.id("run"), p.id("msg"), p.id("msg"), p.id("user")
    echo = [{"id": m1, "role": "assistant", "content": "one"}, {"id": u2, "role": "user", "content": "again"}]
    ev = [p.started(r1), *p.text(m1, "one"), p.finished(r1, {"type": "success"}, result={"n": 1}),
          p.started(r2, parentRunId=r1, input={"threadId": p.thread, "runId": r2, "messages": echo, "tools": [],
                                               "context": [], "state": {}, "forwardedProps": {}}),
          *p.text(m2, "two"), p.finished(r2, {"type": "success"}, result={"n": 2})]
    if p.rng.random() < 0.5:
        ev += [p.started(r3), p.finished(r3, {"type": "cancelled"})]
    return ev, None


def lg_closing_snapshot_rich(p: _P) -> Stream:
    """A closing snapshot as a checkpoint converts: multimodal user parts, reasoning with an encrypted value and no
    text, an assistant with a name and calls, a failed tool result (``error``), content-part results."""
    run, u1, rs, a1, m2 = p.id("run"), p.id("user"), p.id("rs"), p.id("ai"), p.id("ai")
    c1, c2, t1, t2 = p.id("call"), p.id("call"), p.id("tool"), p.id("tool")
    image = {"type": "image",
             "source": {"type": "url", "value": "https://example.invalid/a.png", "mimeType": "image/png"}}
    doc = {"type": "document", "source": {"type": "data", "value": "aGVsbG8=", "mimeType": "application/pdf"}}
    user = {"id": u1, "role": "user", "content": [{"type": "text", "text": "What is in these?"}, image, doc]}
    parts = [{"type": "text", "text": "a cat"}, {"type": "image", "source": {"type": "file", "value": "file-1",
                                                                             "provider": "openai"}}]
    ev = [p.started(run), p.ev("REASONING_START", messageId=rs), p.ev("REASONING_MESSAGE_START", messageId=rs,
                                                                      role="reasoning"),
          p.ev("REASONING_MESSAGE_END", messageId=rs),
          p.ev("REASONING_ENCRYPTED_VALUE", subtype="message", entityId=rs, encryptedValue="enc1"),
          p.ev("REASONING_END", messageId=rs), *p.call(c1, "vision", {"i": 0}, a1), *p.call(c2, "ocr", {"i": 1}, a1),
          p.ev("TOOL_CALL_RESULT", toolCallId=c1, messageId=t1, content=parts, role="tool"),
          p.result(c2, t2, "ocr failed"), *p.text(m2, "A cat and a document.")]
    snapshot = [user, {"id": rs, "role": "reasoning", "content": "", "encryptedValue": "enc1"},
                {"id": a1, "role": "assistant", "content": "", "name": "vision_agent",
                 "toolCalls": [_call_entry(c1, "vision", {"i": 0}), _call_entry(c2, "ocr", {"i": 1})]},
                {"id": t1, "role": "tool", "toolCallId": c1, "content": parts},
                {"id": t2, "role": "tool", "toolCallId": c2, "content": "ocr failed", "error": "error"},
                {"id": m2, "role": "assistant", "content": "A cat and a document."}]
    if p.rng.random() < 0.5:
        snapshot.insert(0, {"id": p.id("sys"), "role": "system", "content": "be brief", "name": "policy"})
    ev += [p.ev("STATE_SNAPSHOT", snapshot={"images": 1}), p.ev("MESSAGES_SNAPSHOT", messages=snapshot),
           p.finished(run)]
    return ev, {"messages": [user], "threadId": p.thread}


def snapshot_omits_streaming_call(p: _P) -> Stream:
    """A checkpoint snapshot taken while a call streams, before its message was saved: the call is not in it."""
    run, u1, m1, c1 = p.id("run"), p.id("user"), p.id("msg"), p.id("call")
    text = json.dumps({"q": "weather in Oslo"})
    half = len(text) // 2
    ev = [p.started(run), p.ev("TOOL_CALL_START", toolCallId=c1, toolCallName="search", parentMessageId=m1),
          p.ev("TOOL_CALL_ARGS", toolCallId=c1, delta=text[:half]),
          p.ev("MESSAGES_SNAPSHOT", messages=[{"id": u1, "role": "user", "content": "weather?"}]),
          p.ev("TOOL_CALL_ARGS", toolCallId=c1, delta=text[half:]), p.ev("TOOL_CALL_END", toolCallId=c1)]
    if p.rng.random() < 0.5:
        ev.append(p.result(c1, p.id("tool"), "sunny"))
    ev.append(p.finished(run))
    return ev, {"messages": [{"id": u1, "role": "user", "content": "weather?"}], "threadId": p.thread}


def snapshot_omits_streaming_text(p: _P) -> Stream:
    """A snapshot while a text message is open that does not hold it (or holds it shorter), then more content."""
    run, u1, m1 = p.id("run"), p.id("user"), p.id("msg")
    history = [{"id": u1, "role": "user", "content": "hi"}]
    if p.rng.random() < 0.5:
        history.append({"id": m1, "role": "assistant", "content": "Hel"})
    ev = [p.started(run), *p.text(m1, "Hello", end=False), p.ev("MESSAGES_SNAPSHOT", messages=history),
          p.ev("TEXT_MESSAGE_CONTENT", messageId=m1, delta=" there"), p.ev("TEXT_MESSAGE_END", messageId=m1),
          p.finished(run)]
    return ev, {"messages": [history[0]], "threadId": p.thread}


def strands_chunks_everywhere(p: _P) -> Stream:
    """Reasoning, text and tool chunks; the tool chunk names no parent."""
    run, rs, m1, c1 = p.id("run"), p.id("rs"), p.id("msg"), p.id("call")
    ev = [p.started(run)]
    ev += [p.ev("REASONING_MESSAGE_CHUNK", messageId=rs, delta=d) for d in p.cut("thinking hard")]
    ev += [p.ev("TEXT_MESSAGE_CHUNK", messageId=m1, role="assistant", delta=d) for d in p.cut("Let me run it.")]
    for i, d in enumerate(p.cut(json.dumps({"cmd": "ls"}))):
        ev.append(p.ev("TOOL_CALL_CHUNK", toolCallId=c1 if i == 0 or p.rng.random() < 0.5 else None,
                       toolCallName="shell" if i == 0 else None, delta=d))
    ev += [p.result(c1, p.id("tool"), "a b c"), p.finished(run)]
    return ev, None


def chunk_then_explicit(p: _P) -> Stream:
    """A chunked message left open, then an explicit message and a call with explicit events (mixed producers)."""
    run, m1, m2, c1 = p.id("run"), p.id("msg"), p.id("msg"), p.id("call")
    ev = [p.started(run)]
    ev += [p.ev("TEXT_MESSAGE_CHUNK", messageId=m1, role="assistant", delta=d) for d in p.cut("Part one.")]
    ev += [*p.text(m2, "Part two."), *p.call(c1, "f", {}, m2 if p.rng.random() < 0.5 else m1), p.finished(run)]
    return ev, None


def adk_delta_on_input_state(p: _P) -> Stream:
    """STATE_DELTAs against the state the client sent (no snapshot in the run), one of them a failing test op."""
    run, m1 = p.id("run"), p.id("msg")
    state = {"todos": [{"t": "a", "done": False}], "count": 1}
    ev = [p.started(run), p.ev("STATE_DELTA", delta=[{"op": "replace", "path": "/todos/0/done", "value": True},
                                                     {"op": "replace", "path": "/count", "value": 2}]),
          *p.text(m1, "Marked done."),
          p.ev("STATE_DELTA", delta=[{"op": "test", "path": "/count", "value": 2},
                                     {"op": "add", "path": "/todos/-", "value": {"t": "b", "done": False}}])]
    if p.rng.random() < 0.5:
        ev.append(p.ev("STATE_DELTA", delta=[{"op": "test", "path": "/count", "value": 99},
                                             {"op": "remove", "path": "/todos/0"}]))
    ev.append(p.finished(run))
    return ev, {"state": state, "threadId": p.thread}


def subagent_delegation(p: _P) -> Stream:
    """A call that delegates to a subagent: its messages, call and result tagged, then the parent's result."""
    run, m1, c1, s1, sm, sc, st, t1, m2 = (p.id("run"), p.id("msg"), p.id("call"), p.id("sub"), p.id("msg"),
                                           p.id("call"), p.id("tool"), p.id("tool"), p.id("msg"))
    tag = {"subagentRunId": s1}
    ev = [p.started(run), *p.text(m1, "Delegating."), *p.call(c1, "research", {"topic": "owls"}, m1),
          p.ev("SUBAGENT_STARTED", subagentRunId=s1, name="researcher", parentToolCallId=c1, parentMessageId=m1),
          p.ev("TEXT_MESSAGE_START", messageId=sm, role="assistant", **tag),
          *[p.ev("TEXT_MESSAGE_CONTENT", messageId=sm, delta=d) for d in p.cut("Owls are birds.")],
          p.ev("TEXT_MESSAGE_END", messageId=sm),
          p.ev("TOOL_CALL_START", toolCallId=sc, toolCallName="wiki", parentMessageId=sm, **tag),
          p.ev("TOOL_CALL_ARGS", toolCallId=sc, delta='{"q": "owl"}'), p.ev("TOOL_CALL_END", toolCallId=sc),
          p.ev("TOOL_CALL_RESULT", toolCallId=sc, messageId=st, content="Strigiformes", role="tool", **tag),
          p.ev("SUBAGENT_FINISHED", subagentRunId=s1, result={"summary": "owls"}, outcome={"type": "success"}),
          p.result(c1, t1, '{"summary": "owls"}'), *p.text(m2, "Owls it is."), p.finished(run)]
    return ev, None


def subagent_suspended(p: _P) -> Stream:
    """A subagent stops to ask: suspended with its interrupt ids, the run's interrupt outcome tags them."""
    run, m1, c1, s1, sc, i1 = p.id("run"), p.id("msg"), p.id("call"), p.id("sub"), p.id("call"), p.id("int")
    ev = [p.started(run), *p.call(c1, "book", {"city": "Rome"}, m1),
          p.ev("SUBAGENT_STARTED", subagentRunId=s1, name="booker", parentToolCallId=c1),
          p.ev("TOOL_CALL_START", toolCallId=sc, toolCallName="pay", subagentRunId=s1),
          p.ev("TOOL_CALL_ARGS", toolCallId=sc, delta='{"eur": 90}'), p.ev("TOOL_CALL_END", toolCallId=sc),
          p.ev("SUBAGENT_FINISHED", subagentRunId=s1, outcome={"type": "suspended", "interruptIds": [i1]}),
          p.finished(run, {"type": "interrupt", "interrupts": [
              {"id": i1, "reason": "approval", "toolCallId": sc, "subagentRunId": s1, "message": "Pay 90 EUR?"}]})]
    return ev, None


def subagents_interleaved_chunks(p: _P) -> Stream:
    """Two subagents in parallel, their text chunks interleaved (each names its message), then both finish."""
    run, s1, s2, a, b = p.id("run"), p.id("sub"), p.id("sub"), p.id("msg"), p.id("msg")
    ev = [p.started(run), p.ev("SUBAGENT_STARTED", subagentRunId=s1, name="one"),
          p.ev("SUBAGENT_STARTED", subagentRunId=s2, name="two")]
    pa, pb = p.cut("alpha beta"), p.cut("gamma delta")
    for i in range(max(len(pa), len(pb))):
        if i < len(pa):
            ev.append(p.ev("TEXT_MESSAGE_CHUNK", messageId=a, role="assistant", delta=pa[i], subagentRunId=s1))
        if i < len(pb):
            ev.append(p.ev("TEXT_MESSAGE_CHUNK", messageId=b, role="assistant", delta=pb[i], subagentRunId=s2))
    ev += [p.ev("SUBAGENT_FINISHED", subagentRunId=s1), p.ev("SUBAGENT_FINISHED", subagentRunId=s2), p.finished(run)]
    return ev, None


def runs_pending_carried(p: _P) -> Stream:
    """A call left pending by one run, answered by the next run of the stream, which leaves another pending."""
    r1, r2, m1, c1, c2, t1 = p.id("run"), p.id("run"), p.id("msg"), p.id("call"), p.id("call"), p.id("tool")
    ev = [p.started(r1), *p.text(m1, "Pick one."), *p.call(c1, "choose", {"o": [1, 2]}, m1), p.finished(r1),
          p.started(r2), p.result(c1, t1, "1"), *p.call(c2, "confirm", {"o": 1}, p.id("msg"))]
    if p.rng.random() < 0.5:
        ev.append(p.finished(r2, {"type": "success", "pendingToolCallIds": [c2]}))
    else:
        ev.append(p.finished(r2))
    return ev, None


def a2a_activities_then_snapshot(p: _P) -> Stream:
    """A2UI surfaces as activities (replace:false, then patches), then a closing snapshot that holds no activity,
    another type's, or says which types it is authoritative for."""
    run, a1, a2, m1 = p.id("run"), p.id("surface"), p.id("surface"), p.id("msg")
    ev = [p.started(run)]
    for aid in (a1, a2):
        ev += [p.ev("ACTIVITY_SNAPSHOT", messageId=aid, activityType="a2ui-surface", content={"operations": []},
                    replace=False),
               p.ev("ACTIVITY_DELTA", messageId=aid, activityType="a2ui-surface",
                    patch=[{"op": "add", "path": "/operations/-", "value": {"beginRendering": {"root": "r"}}}])]
    ev += p.text(m1, "Rendered two surfaces.")
    snapshot: list[dict[str, Any]] = [{"id": m1, "role": "assistant", "content": "Rendered two surfaces."}]
    event: Event = {}
    kind = p.rng.choice(["none", "other-type", "authoritative-other", "authoritative-null", "restated"])
    if kind == "other-type":
        snapshot.append({"id": p.id("act"), "role": "activity", "activityType": "progress", "content": {"pct": 100}})
    elif kind == "authoritative-other":
        event["metadata"] = {"@ag-ui/client": {"authoritativeActivityTypes": ["progress"]}}
    elif kind == "authoritative-null":
        event["metadata"] = {"@ag-ui/client": {"authoritativeActivityTypes": None}}
    elif kind == "restated":
        snapshot.insert(0, {"id": a1, "role": "activity", "activityType": "a2ui-surface",
                            "content": {"operations": ["restated"]}})
    ev += [p.ev("MESSAGES_SNAPSHOT", messages=snapshot, **event), p.finished(run)]
    return ev, None


def lg_reasoning_snapshot_other_ids(p: _P) -> Stream:
    """Reasoning streamed under one id; the closing snapshot restates it under the content block's id."""
    run, rs, ai, m1 = p.id("run"), p.id("rs"), p.id("ai"), p.id("msg")
    ev = [p.started(run), p.ev("REASONING_START", messageId=rs),
          p.ev("REASONING_MESSAGE_START", messageId=rs, role="reasoning"),
          *[p.ev("REASONING_MESSAGE_CONTENT", messageId=rs, delta=d) for d in p.cut("Weighing options.")],
          p.ev("REASONING_MESSAGE_END", messageId=rs), p.ev("REASONING_END", messageId=rs), *p.text(m1, "Option B.")]
    block_id = p.rng.choice([f"{ai}-reasoning-0", rs])
    snapshot = [{"id": block_id, "role": "reasoning", "content": "Weighing options."},
                {"id": m1, "role": "assistant", "content": "Option B."}]
    if p.rng.random() < 0.4:
        snapshot = snapshot[1:]  # the checkpoint kept no reasoning block
    ev += [p.ev("MESSAGES_SNAPSHOT", messages=snapshot), p.finished(run)]
    return ev, None


def lg_raw_passthrough(p: _P) -> Stream:
    """ag-ui-langgraph re-emits every LangChain event as RAW alongside the typed ones."""
    run, m1, c1 = p.id("run"), p.id("msg"), p.id("call")
    typed = [*p.text(m1, "Raw and typed."), *p.call(c1, "f", {"a": 1}, m1)]
    ev = [p.started(run)]
    for e in typed:
        ev.append(e)
        if p.rng.random() < 0.6:
            ev.append(p.ev("RAW", event={"event": "on_chat_model_stream", "data": {"chunk": {"content": "x"}}},
                           source="langgraph"))
    ev.append(p.finished(run))
    return ev, None


def parallel_calls_interleaved(p: _P) -> Stream:
    """Parallel tool calls whose arguments stream interleaved (explicit events), results in another order."""
    run, m1, c1, c2, c3 = p.id("run"), p.id("msg"), p.id("call"), p.id("call"), p.id("call")
    calls = [(c1, "weather", {"city": "Oslo"}), (c2, "weather", {"city": "Lima"}), (c3, "time", {"tz": "UTC"})]
    ev = [p.started(run), *p.text(m1, "Three lookups.")]
    ev += [p.ev("TOOL_CALL_START", toolCallId=c, toolCallName=n, parentMessageId=m1) for c, n, _ in calls]
    pieces = {c: p.cut(json.dumps(a)) for c, _, a in calls}
    while any(pieces.values()):
        c = p.rng.choice([k for k, v in pieces.items() if v])
        ev.append(p.ev("TOOL_CALL_ARGS", toolCallId=c, delta=pieces[c].pop(0)))
    order = [c1, c2, c3]
    p.rng.shuffle(order)
    ev += [p.ev("TOOL_CALL_END", toolCallId=c) for c in order]
    p.rng.shuffle(order)
    ev += [p.result(c, p.id("tool"), f"r-{c}") for c in order[:2]]
    ev.append(p.finished(run))
    return ev, None


def parallel_tool_chunks_interleaved(p: _P) -> Stream:
    """Tool call chunks of two calls interleaved, each chunk naming its call id (a LiteLLM-style bridge).

    A chunk of another call closes the open one (both clients), so a bridge that interleaves names the call
    again on each chunk that switches back (``named``: every chunk); one that names only a call's first chunk
    makes a stream both clients refuse (TC-21), drawn too, less often.
    """
    run, m1, c1, c2 = p.id("run"), p.id("msg"), p.id("call"), p.id("call")
    ev = [p.started(run)]
    ev += [p.ev("TEXT_MESSAGE_CHUNK", messageId=m1, role="assistant", delta=d) for d in p.cut("Two at once.")]
    a, b = p.cut(json.dumps({"x": 1})), p.cut(json.dumps({"y": 2}))
    every = p.rng.random() < 0.7
    last = None
    while a or b:
        cid, pieces, name = (c1, a, "fa") if a and (not b or p.rng.random() < 0.5) else (c2, b, "fb")
        first = not any(e.get("toolCallId") == cid for e in ev)
        named = first or (every and cid != last)
        ev.append(p.ev("TOOL_CALL_CHUNK", toolCallId=cid, toolCallName=name if named else None, parentMessageId=m1,
                       delta=pieces.pop(0)))
        last = cid
    ev.append(p.finished(run))
    return ev, None


def parallel_text_chunks_interleaved(p: _P) -> Stream:
    """Two branches of a graph streaming text chunks into two messages at once (no subagent tags)."""
    run, m1, m2 = p.id("run"), p.id("msg"), p.id("msg")
    a, b = p.cut("Branch one says hi."), p.cut("Branch two says bye.")
    ev = [p.started(run)]
    while a or b:
        mid, pieces = (m1, a) if a and (not b or p.rng.random() < 0.5) else (m2, b)
        ev.append(p.ev("TEXT_MESSAGE_CHUNK", messageId=mid, role="assistant", delta=pieces.pop(0)))
    ev.append(p.finished(run))
    return ev, None


def state_paths_with_escapes(p: _P) -> Stream:
    """A coding agent's state keyed by file paths: deltas with ~1 and ~0 escapes, move and copy, array appends."""
    run, m1 = p.id("run"), p.id("msg")
    ev = [p.started(run), p.ev("STATE_SNAPSHOT", snapshot={"files": {"src/app.py": "v1", "a~b": "t"}, "log": []}),
          p.ev("STATE_DELTA", delta=[{"op": "replace", "path": "/files/src~1app.py", "value": "v2"},
                                     {"op": "add", "path": "/log/-", "value": "edit app"}]),
          p.ev("STATE_DELTA", delta=[{"op": "copy", "from": "/files/src~1app.py", "path": "/files/src~1app.bak"},
                                     {"op": "move", "from": "/files/a~0b", "path": "/files/a~1b"},
                                     {"op": "add", "path": "/log/0", "value": "first"}]),
          *p.text(m1, "Edited."), p.finished(run)]
    if p.rng.random() < 0.5:
        ev.insert(-1, p.ev("STATE_DELTA", delta=[{"op": "remove", "path": "/files/src~1app.bak"},
                                                 {"op": "test", "path": "/log/1", "value": "edit app"}]))
    return ev, None


SHAPES: dict[str, Callable[[_P], Stream]] = {
    "lg-pinned-text-across-tool": lg_pinned_text_across_tool,
    "lg-tool-end-reemit": lg_tool_end_reemit,
    "lg-parent-started-later": lg_parent_started_later,
    "lg-interrupt-legacy": lg_interrupt_legacy,
    "lg-interrupt-outcome-pending-call": lg_interrupt_outcome_pending_call,
    "lg-interrupt-then-resume": lg_interrupt_then_resume,
    "lg-reasoning": lg_reasoning,
    "lg-regenerate-snapshot": lg_regenerate_snapshot,
    "crewai-chunks": crewai_chunks,
    "crewai-chunk-messages": crewai_chunk_messages,
    "adk-long-running": adk_long_running,
    "adk-resume-with-client-result": adk_resume_with_client_result,
    "mastra-chunk-then-call": mastra_chunk_then_call,
    "mastra-activity": mastra_activity,
    "vercel-chunk-call-snapshot": vercel_chunk_call_snapshot,
    "strands-error-mid-message": strands_error_mid_message,
    "strands-snapshot-mid-run": strands_snapshot_mid_run,
    "claude-call-inside-text": claude_call_inside_text,
    "snapshot-restates-streaming-call": snapshot_restates_streaming_call,
    "predictive-state": predictive_state,
    "runs-in-one-stream": runs_in_one_stream,
    "lg-closing-snapshot-rich": lg_closing_snapshot_rich,
    "snapshot-omits-streaming-call": snapshot_omits_streaming_call,
    "snapshot-omits-streaming-text": snapshot_omits_streaming_text,
    "strands-chunks-everywhere": strands_chunks_everywhere,
    "chunk-then-explicit": chunk_then_explicit,
    "adk-delta-on-input-state": adk_delta_on_input_state,
    "subagent-delegation": subagent_delegation,
    "subagent-suspended": subagent_suspended,
    "subagents-interleaved-chunks": subagents_interleaved_chunks,
    "runs-pending-carried": runs_pending_carried,
    "a2a-activities-then-snapshot": a2a_activities_then_snapshot,
    "lg-reasoning-snapshot-other-ids": lg_reasoning_snapshot_other_ids,
    "lg-raw-passthrough": lg_raw_passthrough,
    "parallel-calls-interleaved": parallel_calls_interleaved,
    "parallel-tool-chunks-interleaved": parallel_tool_chunks_interleaved,
    "parallel-text-chunks-interleaved": parallel_text_chunks_interleaved,
    "state-paths-with-escapes": state_paths_with_escapes,
}


# Shapes that meet a difference the golden tests document (``DIFFERENCES`` of tests/test_golden.py), by design:
# the golden stream documenting it. Their streams and variants are judged as that stream's variants are (the
# documented fields may differ, or not).
DOCUMENTED = {
    "lg-tool-end-reemit": "tool-call-parent-is-result-id",          # (or -call-id: the same field)
    "adk-resume-with-client-result": "tool-result-resent-same-id",  # when the result is sent back as an event
    "runs-in-one-stream": "runs-cancelled-after-success-result",    # when the third run is cancelled
}


def documented(name: str) -> str | None:
    """The golden stream whose documented difference the producer stream ``name`` (or a variant of it) may show."""
    if not name.startswith("p-"):
        return None
    shape = name[2:].split("~", 1)[0].rsplit("-s", 1)[0]
    return DOCUMENTED.get(shape)


# How producers frame events on the wire (every one valid SSE): the Python SDK's encoder (``data: JSON`` and a
# blank line), sse_starlette's default CRLF separator, keep-alive comments (ag-ui-adk sends ``: ping`` every 15 s),
# ``event:``/``id:`` fields, a ``retry:`` field first, a payload cut over several ``data:`` lines, no space after
# the colon.
FRAMINGS = ("lf", "crlf", "ping", "fields", "retry", "multiline", "nospace")


def frame(events: list[Event], style: str) -> str:
    """``events`` as an SSE body framed in ``style`` (one of ``FRAMINGS``)."""
    lines = [json.dumps(e, ensure_ascii=False) for e in events]
    if style == "crlf":
        return "".join(f"data: {line}\r\n\r\n" for line in lines)
    if style == "ping":
        return "".join(f"data: {line}\n\n" + (": ping\n\n" if i % 3 == 0 else "") for i, line in enumerate(lines))
    if style == "fields":
        return "".join(f"event: message\nid: {i}\ndata: {line}\n\n" for i, line in enumerate(lines))
    if style == "retry":
        return "retry: 15000\n\n" + "".join(f"data: {line}\n\n" for line in lines)
    if style == "multiline":
        return "".join("data: " + line.replace(', "', ',\ndata: "') + "\n\n" for line in lines)
    if style == "nospace":
        return "".join(f"data:{line}\n\n" for line in lines)
    return "".join(f"data: {line}\n\n" for line in lines)


def streams(seed: int, count: int, only: list[str] | None = None,
            sse_every: int = 0) -> Iterator[tuple[str, list[Event], dict[str, Any] | None, str | None]]:
    """``count`` variants of every shape (or of those ``only`` names): ``(name, events, starting thread, framing)``.

    With ``sse_every`` K, every K-th variant of a shape is to be written SSE-framed (``framing`` one of
    ``FRAMINGS``, drawn with the variant), so it takes the oracle's HTTP path; otherwise ``framing`` is None.
    """
    for shape, build in SHAPES.items():
        if only and shape not in only:
            continue
        for n in range(count):
            rng = random.Random(f"{seed}:{shape}:{n}")
            events, inp = build(_P(rng))
            framing = None
            if sse_every and n % sse_every == sse_every - 1:
                framing = random.Random(f"{seed}:{shape}:{n}:framing").choice(FRAMINGS)
            yield f"p-{shape}-s{seed}.{n}", events, inp, framing
