"""A thread's whole interrupt lifecycle, driven at random and checked against a small model of the spec.

The other interrupt tests check one rule at a time. Here a hypothesis ``RuleBasedStateMachine`` lives a
thread's life through the real client, against a real agent on 127.0.0.1 (``ScriptedAgent`` under
``serve``) whose every response the machine chooses: a plain answer; the interrupt outcome carrying one
to three interrupts (ids drawn from a small pool, so a later run reuses them; ``expiresAt`` in the past,
now or the future of an injected clock, written in a few ISO 8601 spellings; with or without a
``responseSchema``; now and then the first one raised twice, IR-06, or a late ``RUN_ERROR`` after the
close, CL-02); a frontend tool call left pending (success with ``pendingToolCallIds``); a
``RUN_ERROR`` after some text; a stream opening with ``RUN_ERROR`` (LC-02); the cancelled outcome; a
response cut mid-stream; a success whose ``STATE_DELTA`` edits the state the thread holds (after an
interrupted run: IR-21), with its own usage (the interrupt outcome reports usage too: IR-22); LangGraph's
pre-1.0 pause (``CUSTOM`` ``on_interrupt`` events and a bare ``RUN_FINISHED``, now and then an event
repeated or a late ``RUN_ERROR``), which a client with ``legacy_interrupts="langgraph"`` reads as the
interrupt outcome and answers in LangGraph's channel (docs/legacy-interrupts.md), and any other reads
as the success the wire says.

The consumer's moves: a new turn (or a continuation with no message), by ``run()`` or ``stream()`` (read
to its end, or left after its first event: TR-16); a
resume built with a bound ``ResumeBuilder`` or handed as plain entries, covering every interrupt, or
leaving one uncovered, answering an unknown id, answering an expired one, abandoning some, answering
with a value the schema refuses, answering one twice, or answering when nothing is open; a resume with a
builder kept from earlier (refused once the thread was interrupted again); answering a pending tool
call, by hand or by the tool loop (``run_until_done``, whose handler must not run for a run the
interrupt rules refuse); moving the clock; reloading the thread from its store into a new client object, sync
``AgentClient`` or ``AsyncAgentClient`` (the shell is part of the machine's state), with the legacy
bridge or without, on a ``MemoryStore`` or an ``SqliteStore`` in a temporary directory; rebuilding the
thread elsewhere (its record lost, its messages added to a new object on a new store) and resuming
what the agent may still wait on with ``pending_unknown=True`` (IR-26: sent as given, an id named twice
still refused; on a thread that holds interrupts the flag changes nothing).

Replicas (several client objects on one durable store) are ``test_lifecycle_replicas.py``'s machine.

The model (``Model``) is written from the interrupts page and rules.md, not from the client: which
interrupts are open and which of them have expired at the clock's time, which frontend calls are
pending, which messages the thread holds (a tool result placed after the call's message, TC-13), and
what the store holds (a run is saved when it reaches a terminal event; a cut run is not). After every
step the machine checks:

* a resume the model calls invalid is refused with the right ``ResumeRefused`` subclass naming the
  interrupt, before any request reached the agent (its request log), and leaves the thread as it was;
* a valid one is sent exactly once, carrying exactly the entries given, the thread's messages and id;
* the interrupts, pending calls and messages the client reports are the model's;
* a reloaded thread reports what it reported before (or, after a cut run, what the store holds);
* what was handed out earlier (a ``RunResult``, a ``messages`` snapshot, the shared state, a streamed
  event, the open interrupts) never changes afterwards;
* after any error the next correct step works (after a cut resume, once ``release_claim()`` was
  called, as docs/concepts/stores-and-claims.md documents: by the same object, or with ``force=True``
  by a new one after a plain release was refused as another writer's claim).

The default run is small, for CI. The long form (``AGUI_LIFECYCLE_EXAMPLES`` examples of up to
``AGUI_LIFECYCLE_STEPS`` steps each)::

    AGUI_LIFECYCLE_EXAMPLES=2000 AGUI_LIFECYCLE_STEPS=60 \\
        .venv/bin/python -m pytest tests/thread/test_lifecycle_model.py -q
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import anyio.from_thread
import attrs
import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import agui_client as ag
from agui_client.stores import MemoryStore, SqliteStore
from agui_client.testing import ANSWER_SCHEMA, Disconnect, Finish, ScriptedAgent, Start, serve, text_message, tool_call
from agui_client.wire.types import events as ev

UTC = timezone.utc
EXAMPLES = int(os.environ.get("AGUI_LIFECYCLE_EXAMPLES", "25"))
STEPS = int(os.environ.get("AGUI_LIFECYCLE_STEPS", "25"))
#: The long form runs past the suite's per-test watchdog (pytest-timeout), so it has none.
LONG = "AGUI_LIFECYCLE_EXAMPLES" in os.environ or "AGUI_LIFECYCLE_STEPS" in os.environ

#: Interrupt ids are drawn from this pool, so a later run raises a question under an id answered before.
IDS = ("i1", "i2", "i3", "i4")
#: ``expiresAt`` offsets from the clock when the interrupt is raised (seconds; ``None``: no expiry).
OFFSETS = (None, None, -60, 0, 30, 3600)
#: How ``expiresAt`` is written: the instant is the same, the spelling differs (IR-17); ``naive`` names no
#: zone (read as UTC, with an IR-17 warning: docs/expires-at.md), ``garbled`` is not a date (never expires,
#: with an IR-18 warning).
SPELLINGS = ("Z", "+02:00", "fraction", "lower", "http", "naive", "garbled")


def spelled(when: datetime, spelling: str) -> str:
    if spelling == "garbled":
        return f"around {when:%H:%M}"
    if spelling == "naive":
        return when.strftime("%Y-%m-%dT%H:%M:%S")
    if spelling == "http":
        return when.strftime("%a, %d %b %Y %H:%M:%S GMT")
    if spelling == "+02:00":
        return (when + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S+02:00")
    if spelling == "fraction":
        return when.strftime("%Y-%m-%dT%H:%M:%S.000000123Z")
    if spelling == "lower":
        return when.strftime("%Y-%m-%dt%H:%M:%Sz")
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


# --------------------------------------------------------------------------------------------------
# What the agent answers
# --------------------------------------------------------------------------------------------------

@attrs.frozen
class Ask:
    """One interrupt the agent will raise: its id, expiry offset and spelling, and whether it has a schema."""

    id: str
    offset: int | None
    spelling: str
    schema: bool


@attrs.frozen
class Response:
    """The agent's answer to the next request: ``kind``; for ``interrupt``, what it asks, and whether a late
    ``RUN_ERROR`` follows the ``RUN_FINISHED`` (CL-02)."""

    kind: str
    asks: tuple[Ask, ...] = ()
    late: bool = False
    repeat: bool = False  # (the first interrupt raised twice under its id: IR-06, a producer bug)


asks = st.lists(st.builds(Ask, id=st.sampled_from(IDS), offset=st.sampled_from(OFFSETS),
                          spelling=st.sampled_from(SPELLINGS), schema=st.booleans()),
                min_size=1, max_size=3, unique_by=lambda a: a.id).map(tuple)
responses = st.one_of(
    st.sampled_from(["plain", "tool", "tool", "error", "rejected", "cancelled", "cut", "delta"]).map(Response),
    # (as likely as all the others together)
    st.builds(Response, kind=st.just("interrupt"), asks=asks, late=st.sampled_from([False, False, True]),
              repeat=st.sampled_from([False, False, False, True])),
    # (the pre-1.0 LangGraph pause: CUSTOM on_interrupt events, then success; docs/legacy-interrupts.md)
    st.builds(Response, kind=st.just("legacy"), asks=asks, late=st.sampled_from([False, False, True]),
              repeat=st.sampled_from([False, False, True])),
)


class Director:
    """The agent's script: one callable step that plays the response the machine chose for this run."""

    def __init__(self) -> None:
        self.response: Response | None = None
        self.now: datetime = datetime(2026, 11, 30, tzinfo=UTC)

    def __call__(self, run_input: ag.RunAgentInput) -> list[Any]:
        response, self.response = self.response, None
        assert response is not None, f"request {run_input.run_id} reached the agent though the machine sent none"
        rid = run_input.run_id
        if response.kind == "plain":
            return [Start(), ev.StateSnapshotEvent(snapshot={"run": rid, "notes": [rid]}),
                    *text_message(f"{rid}-a", "Here you are"), Finish(result={"run": rid})]
        if response.kind == "delta":
            # SP-03 on the state the thread holds (across an interrupt: IR-21), and the run's own usage.
            return [Start(), ev.StateDeltaEvent(delta=({"op": "add", "path": "/seen", "value": rid},)),
                    *text_message(f"{rid}-a", "Noted"), Finish(usage=(usage(rid),))]
        if response.kind == "tool":
            return [Start(), *tool_call(f"{rid}-c", "pick", {"q": 1}, parent_message_id=f"{rid}-a"),
                    Finish(outcome=ag.RunFinishedSuccessOutcome(pending_tool_call_ids=(f"{rid}-c",)))]
        if response.kind == "error":
            return [Start(), *text_message(f"{rid}-a", "Trying"), ev.RunErrorEvent(message="it broke", code="boom")]
        if response.kind == "rejected":
            return [ev.RunErrorEvent(message="refused before the run", code="invalid")]
        if response.kind == "cancelled":
            return [Start(), Finish(outcome=ag.RunFinishedCancelledOutcome())]
        if response.kind == "cut":
            return [Start(), ev.TextMessageStartEvent(message_id=f"{rid}-a"),
                    ev.TextMessageContentEvent(message_id=f"{rid}-a", delta="half a sen"), Disconnect()]
        late = [ev.RunErrorEvent(message="a failure after the close", code="late")] if response.late else []
        interrupts = tuple(
            ag.Interrupt(id=a.id, reason="input", message=f"question {a.id} of {rid}",
                         expires_at=None if a.offset is None else spelled(self.now + timedelta(seconds=a.offset),
                                                                           a.spelling),
                         response_schema=ANSWER_SCHEMA if a.schema else None)
            for a in response.asks)
        if response.kind == "legacy":
            # ag-ui-langgraph's legacy pause: the interrupt() value as JSON text, LangGraph's id in rawEvent.
            pauses = [ev.CustomEvent(name="on_interrupt", raw_event={"id": i.id}, value=json.dumps(
                {"message": i.message, "expiresAt": i.expires_at, "responseSchema": i.response_schema}))
                for i in interrupts]
            # (a pause repeated under its id is one question: the bridge reads one interrupt per id)
            return [Start(), *pauses, *pauses[:1 if response.repeat else 0],
                    *text_message(f"{rid}-a", "A question"), Finish(), *late]
        if response.repeat:
            interrupts += interrupts[:1]
        return [Start(), ev.StateSnapshotEvent(snapshot={"asked": [a.id for a in response.asks]}),
                *text_message(f"{rid}-a", "A question"),
                Finish(outcome=ag.RunFinishedInterruptOutcome(interrupts=interrupts), usage=(usage(rid),)), *late]


def usage(rid: str) -> ag.TokenUsage:
    """The usage run ``rid`` reports: its own, told apart by its number (TU: usage never carries over)."""
    n = int("".join(c for c in rid if c.isdigit()) or 0)
    return ag.TokenUsage(provider="p", model="m", input_tokens=n, output_tokens=2 * n)


# --------------------------------------------------------------------------------------------------
# The model, from the spec
# --------------------------------------------------------------------------------------------------

@attrs.frozen
class Open:
    """An open interrupt as the model holds it: its id, the instant it expires, whether it has a schema."""

    id: str
    expires: datetime | None
    schema: bool

    def expired(self, now: datetime) -> bool:
        # IR-17/IR-19: the consumer's judgment; now-or-earlier is expired.
        return self.expires is not None and self.expires <= now


@attrs.frozen
class Said:
    """A message as the model holds it."""

    id: str | None  # (None: an id the client made, a tool loop's answer)
    role: str
    calls: tuple[str, ...] = ()
    answers: str | None = None  # (a tool message: the call it answers)


@attrs.define
class Model:
    """A thread as the interrupts page and rules.md describe it."""

    messages: list[Said] = attrs.Factory(list)
    open: list[Open] = attrs.Factory(list)
    interrupted_run: str | None = None
    #: Calls the last success outcome named (pendingToolCallIds) that have no result yet. The spec names
    #: them on a success only and says nothing of what a later interrupted, failed or cancelled run does to
    #: them: unanswered, they stay pending until answered or a later success names its own (the client's
    #: documented reading, ``ThreadState.pending_tool_call_ids``).
    pending: list[str] = attrs.Factory(list)
    incomplete: set[str] = attrs.Factory(set)
    #: The shared state (SP-01: a snapshot replaces it; the next input carries it, SP-15 and IR-21).
    state: Any = attrs.Factory(dict)
    #: The usage each run reported, by run (TU: a resume's covers only its own model calls, IR-22).
    usage: dict[str, ag.TokenUsage] = attrs.Factory(dict)
    #: Which bridge read the open interrupts (``"langgraph"``: their answers go in its channel).
    via: str | None = None

    def copy(self) -> Model:
        return Model(list(self.messages), list(self.open), self.interrupted_run, list(self.pending),
                     set(self.incomplete), self.state, dict(self.usage), self.via)

    def answer_call(self, call_id: str, message_id: str | None) -> None:
        # TC-13: the tool message goes right after the assistant message that made the call, after
        # earlier results for it.
        at = next(n for n, m in enumerate(self.messages) if call_id in m.calls) + 1
        while at < len(self.messages) and self.messages[at].answers == call_id:
            at += 1
        self.messages.insert(at, Said(message_id, "tool", answers=call_id))
        self.pending.remove(call_id)

    def played(self, response: Response, rid: str, now: datetime, *, bridged: bool = False) -> None:
        """What the thread holds after the agent played ``response`` as run ``rid`` (``bridged``: read by a
        client with ``legacy_interrupts="langgraph"``)."""
        kind = response.kind
        if kind == "legacy":
            # The bridge reads the pause as the interrupt outcome; without it, the run is the success the
            # wire says (with a LEGACY-CUSTOM-INTERRUPT warning).
            kind = "interrupt" if bridged else "plain-quiet"
        if kind == "plain":
            self.state = {"run": rid, "notes": [rid]}
        if response.kind == "interrupt":
            self.state = {"asked": [a.id for a in response.asks]}
        if kind == "delta":
            # SP-03: the patch applies to the state the last run left (an interrupted one too: IR-21).
            self.state = {**self.state, "seen": rid}
        if kind == "delta" or (response.kind == "interrupt" and not response.repeat):
            self.usage[rid] = usage(rid)
        if kind in ("plain", "error", "interrupt", "cut", "delta", "plain-quiet"):
            self.messages.append(Said(f"{rid}-a", "assistant"))
        if kind == "tool":
            self.messages.append(Said(f"{rid}-a", "assistant", calls=(f"{rid}-c",)))
        if kind == "cut":
            # LC-04: the run failed; what was streamed is kept, flagged incomplete; nothing else moves.
            self.incomplete.add(f"{rid}-a")
            return
        if kind in ("plain", "tool", "delta", "plain-quiet"):
            self.via = None
            # IR-27: a success clears the open interrupts. TC-16: its pendingToolCallIds are the calls
            # left for the consumer now.
            self.open, self.interrupted_run = [], None
            self.pending = [f"{rid}-c"] if kind == "tool" else []
        elif kind == "cancelled":
            # LC-11: the cancelled outcome waits for nothing: no interrupts stay open.
            self.open, self.interrupted_run, self.via = [], None, None
        elif kind == "interrupt":
            self.via = "langgraph" if response.kind == "legacy" else None
            # IR-27/B279: the new interrupts replace the open ones (not a union).
            # IR-18: a value that is not a date never expires.
            # (an id raised twice, IR-06, is one question: the client holds the first, docs/codes.md#ir-06)
            self.open = [Open(a.id, None if a.offset is None or a.spelling == "garbled"
                              else now + timedelta(seconds=a.offset), a.schema) for a in response.asks]
            self.interrupted_run = rid
        # error, rejected: a RUN_ERROR leaves the open interrupts open (IR-27, B278, B281).


# --------------------------------------------------------------------------------------------------
# The two shells behind one interface
# --------------------------------------------------------------------------------------------------

class Shell:
    """A client object of one shell (``sync``: ``AgentClient``; ``async``: ``AsyncAgentClient`` driven on
    a blocking portal's loop) and the thread object it loaded."""

    def __init__(self, kind: str, url: str, store: Any, clock: Callable[[], datetime],
                 portal: anyio.from_thread.BlockingPortal, thread_id: str, handlers: dict[str, Any],
                 legacy: bool = False) -> None:
        self.kind = kind
        self.portal = portal
        self.legacy = legacy  # (legacy_interrupts="langgraph": the bridge reads on_interrupt pauses)
        bridge = "langgraph" if legacy else None
        if kind == "sync":
            self.client: Any = ag.AgentClient(url, store=store, clock=clock, legacy_interrupts=bridge)
            self.thread: Any = self.client.thread(thread_id, tool_handlers=handlers)
        else:
            self.client = portal.call(lambda: ag.AsyncAgentClient(url, store=store, clock=clock,
                                                                  legacy_interrupts=bridge))
            self.thread = portal.call(lambda: self.client.load_thread(thread_id, tool_handlers=handlers))

    def run_until_done(self, message: Any, **arguments: Any) -> tuple[ag.RunResult, list[Any]]:
        """The tool loop, one run at most (the agent answers one request per step)."""
        if self.kind == "sync":
            return self.thread.run_until_done(message, max_steps=1, **arguments), []
        return self.portal.call(lambda: self.thread.run_until_done(message, max_steps=1, **arguments)), []

    def close(self) -> None:
        if self.kind == "sync":
            self.client.close()
        else:
            self.portal.call(self.client.close)

    def run(self, message: Any, **arguments: Any) -> ag.RunResult:
        if self.kind == "sync":
            return self.thread.run(message, **arguments)  # type: ignore[no-any-return]
        return self.portal.call(lambda: self.thread.run(message, **arguments))  # type: ignore[no-any-return]

    def stream(self, message: Any, *, leave: bool = False, **arguments: Any) -> tuple[ag.RunResult, list[Any]]:
        """The run through ``stream()``: its result and every event it yielded (only the first, and the
        ``with`` block left then, when ``leave``)."""
        if self.kind == "sync":
            with self.thread.stream(message, **arguments) as stream:
                events = []
                for event in stream:
                    events.append(event)
                    if leave:
                        break
            return stream.result, events

        async def read() -> tuple[ag.RunResult, list[Any]]:
            async with self.thread.stream(message, **arguments) as stream:
                events = []
                async for event in stream:
                    events.append(event)
                    if leave:
                        break
            return stream.result, events
        return self.portal.call(read)

    def release_claim(self, *, force: bool = False) -> None:
        if self.kind == "sync":
            self.thread.release_claim(force=force)
        else:
            self.portal.call(lambda: self.thread.release_claim(force=force))


# --------------------------------------------------------------------------------------------------
# The machine
# --------------------------------------------------------------------------------------------------

RESUMES = ("all", "abandon-some", "leave-one", "unknown-id", "answer-expired", "break-schema", "twice")


def channel(entries: list[tuple[str, str, Any]]) -> Any:
    """``forwardedProps.command.resume`` for bridged interrupts (docs/legacy-interrupts.md): one answer as
    it is (text as JSON text), an abandoned one as the sentinel, several as a map by LangGraph's id."""
    def answer(interrupt_id: str, status: str, payload: Any) -> Any:
        return payload if status == "resolved" else {"__agui_cancelled__": True, "interrupt_id": interrupt_id}
    if len(entries) == 1:
        value = answer(*entries[0])
        return json.dumps(value) if isinstance(value, str) else value
    return {i: answer(i, s, p) for i, s, p in entries}


def same_ids(actual: list[str], model: list[str | None]) -> bool:
    """The message ids, in order, as the model has them (``None``: any id, one the client made)."""
    return len(actual) == len(model) and all(m is None or a == m for a, m in zip(actual, model, strict=True))


def report(thread: Any) -> tuple[Any, ...]:
    """What the client says the thread holds (values that compare by content)."""
    state = thread.state
    return (state.messages, thread.open_interrupts, state.pending_tool_call_ids, state.interrupted_run_id,
            state.incomplete_ids, state.state)


class Lifecycle(RuleBasedStateMachine):
    """One thread's life (see the module docstring)."""

    url: str
    agent: ScriptedAgent
    director: Director

    def __init__(self) -> None:
        super().__init__()
        self.exits = contextlib.ExitStack()
        self.portal = self.exits.enter_context(anyio.from_thread.start_blocking_portal(backend="asyncio"))
        self.thread_id = f"t-{uuid.uuid4().hex[:8]}"
        self.model = Model()
        self.stored = Model()  # (what the store holds: the model as the last saved run left it)
        self.recorded = False  # (whether the store holds a record of the thread)
        self.runs = 0
        self.shell: Shell | None = None
        self.store: Any = None
        self.handed: list[tuple[Callable[[], str], str]] = []  # (read again, as first read)
        self.builders: list[tuple[Any, str | None, tuple[Open, ...]]] = []
        self.director.response = None
        self.director.now = datetime(2026, 11, 30, tzinfo=UTC)
        self.sent_before = self.agent.request_count
        self.picked: list[Any] = []  # (the tool handler's calls: an action taken)
        self.handlers = {"pick": lambda q: self.picked.append(q) or {"picked": q}}

    def teardown(self) -> None:
        if self.shell is not None:
            self.shell.close()
        if self.store is not None:
            self.store.close()
        self.exits.close()

    # -- set-up ------------------------------------------------------------------------------------

    @initialize(store=st.sampled_from(["memory", "sqlite"]), shell=st.sampled_from(["sync", "async"]),
                legacy=st.booleans())
    def open_thread(self, store: str, shell: str, legacy: bool) -> None:
        if store == "sqlite":
            folder = self.exits.enter_context(tempfile.TemporaryDirectory())
            self.store = SqliteStore(os.path.join(folder, "threads.db"))
        else:
            self.store = MemoryStore()
        self.shell = self.new_shell(shell, legacy)

    def new_shell(self, kind: str, legacy: bool | None = None) -> Shell:
        """A new client object of shell ``kind`` loading the thread (with the bridge when ``legacy``; by
        default as the one it replaces)."""
        if legacy is None:
            legacy = self.shell.legacy if self.shell is not None else False
        return Shell(kind, self.url, self.store, self.clock, self.portal, self.thread_id, self.handlers, legacy)

    def clock(self) -> datetime:
        return self.director.now

    @property
    def thread(self) -> Any:
        assert self.shell is not None
        return self.shell.thread

    # -- the agent's side --------------------------------------------------------------------------

    def next_run(self, response: Response) -> str:
        self.runs += 1
        self.director.response = response
        return f"r{self.runs}"

    def requests(self) -> int:
        return self.agent.request_count - self.sent_before

    # -- consumer moves ----------------------------------------------------------------------------

    @rule(response=responses, text=st.booleans(), streamed=st.sampled_from(["run", "stream", "leave"]))
    def turn(self, response: Response, text: bool, streamed: str) -> None:
        """A new user turn (``text``), or a continuation with no message; refused while interrupts are open."""
        rid = self.next_run(response)
        message = ag.UserMessage(id=f"{rid}-u", content="hello") if text else None
        if self.model.open:
            # IR-14: a run that does not resume the open interrupts is refused before anything is sent.
            self.refused(lambda: self.go(streamed, message, run_id=rid), ag.AwaitingAnswers,
                         [o.id for o in self.model.open])
            return
        new = [Said(message.id, "user")] if message is not None else []
        self.send(rid, response, message, new, streamed=streamed, entries=None)

    @precondition(lambda self: bool(self.model.open))
    @rule(how=st.sampled_from(RESUMES), form=st.sampled_from(["builder", "entries"]), pick=st.integers(0, 2),
          response=responses, streamed=st.sampled_from(["run", "stream", "leave"]),
          recover=st.sampled_from(["release", "another"]), unknown=st.booleans())
    def resume(self, how: str, form: str, pick: int, response: Response, streamed: str, recover: str,
               unknown: bool) -> None:
        """A resume answering the open interrupts, correctly or in one of the ways the spec forbids
        (``unknown``: with ``pending_unknown=True``, which changes nothing on a thread that holds them)."""
        now = self.director.now
        open_ = list(self.model.open)
        target = open_[pick % len(open_)]
        expired = [o for o in open_ if o.expired(now)]
        schemed = [o for o in open_ if o.schema and not o.expired(now)]
        if how == "answer-expired" and not expired:
            how = "all"
        if how == "break-schema" and not schemed:
            how = "all"
        if how == "answer-expired":
            target = expired[pick % len(expired)]
        if how == "break-schema":
            target = schemed[pick % len(schemed)]
        plan: list[tuple[str, str, Any]] = []  # (id, "resolved" | "cancelled", payload)
        for interrupt in open_:
            if how == "leave-one" and interrupt.id == target.id:
                continue
            if interrupt.expired(now) and not (how == "answer-expired" and interrupt.id == target.id):
                plan.append((interrupt.id, "cancelled", None))  # IR-20: an expired one can only be abandoned
            elif how == "abandon-some" and (interrupt.id == target.id or pick == 2):
                plan.append((interrupt.id, "cancelled", None))
            elif how == "break-schema" and interrupt.id == target.id:
                plan.append((interrupt.id, "resolved", {"answer": 5}))
            else:
                plan.append((interrupt.id, "resolved", {"answer": f"yes to {interrupt.id}"}))
        if how == "twice":
            again = plan[pick % len(plan)]
            # The same entry again, or the other decision on the same interrupt (but never an answer to an
            # expired one: that would be a second fault, and the refusal names the first kind found, in
            # the documented order of PROBLEM_KINDS).
            late = any(o.id == again[0] and o.expired(now) for o in open_)
            plan.append(again if pick < 2 or (again[1] == "cancelled" and late) else
                        (again[0], "cancelled", None) if again[1] == "resolved" else
                        (again[0], "resolved", {"answer": "after all"}))
        if how == "unknown-id":
            plan.append((next(i for i in ("zz", *IDS) if all(o.id != i for o in open_)), "resolved", {"answer": "?"}))
        refusals: dict[str, type[ag.ResumeRefused]] = {
            "leave-one": ag.UncoveredInterrupts,            # IR-12, IR-13: omission is not abandonment
            "answer-expired": ag.ExpiredInterruptAnswered,  # IR-19
            "break-schema": ag.InvalidResumePayload,        # IR-30 (B274: the client checks, docs/answers.md)
            "twice": ag.DuplicateResumeEntry,               # IR-09: one entry per interrupt
            "unknown-id": ag.UnknownInterrupt,              # IR-10
        }
        named = plan[-1][0] if how in ("twice", "unknown-id") else target.id
        rid = self.next_run(response)

        def resume_list() -> Any:
            if form == "entries":
                return [ag.ResumeEntry(interrupt_id=i, status=s, payload=p) for i, s, p in plan]
            builder = self.thread.resume_builder()
            for i, s, p in plan:
                # (docs/answers.md: answer() refuses an unknown id at once, before anything is recorded)
                builder.answer(i, p) if s == "resolved" else builder.abandon(i)
            return builder

        event(f"resume {how} ({form})")
        extra = {"pending_unknown": True} if unknown else {}
        if how in refusals:
            self.refused(lambda: self.go(streamed, None, resume=resume_list(), run_id=rid, **extra), refusals[how],
                         named)
            return
        builder = resume_list()
        if form == "builder":
            self.builders.append((builder, self.model.interrupted_run, tuple(self.model.open)))
        self.send(rid, response, None, [], streamed=streamed, entries=plan, resume=builder, recover=recover,
                  extra=extra)

    @precondition(lambda self: not self.model.open)
    @rule(form=st.sampled_from(["builder", "entries"]), response=responses)
    def resume_nothing(self, form: str, response: Response) -> None:
        """B269: a resume list when nothing is open answers nothing: refused, nothing sent."""
        rid = self.next_run(response)

        def go() -> Any:
            if form == "entries":
                return self.shell.run(None, resume=[ag.ResumeEntry(interrupt_id="i1", status="resolved",
                                                                    payload={"answer": "x"})], run_id=rid)
            builder = self.thread.resume_builder()
            builder.answer("i1", {"answer": "x"})  # (a builder holding nothing takes any id: docs/answers.md)
            return self.shell.run(None, resume=builder, run_id=rid)
        self.refused(go, ag.NothingToResume, "i1")

    @precondition(lambda self: not self.model.open)
    @rule(ids=st.lists(st.sampled_from(IDS), min_size=1, max_size=3, unique=True), abandon=st.integers(0, 3),
          form=st.sampled_from(["builder", "entries"]), twice=st.booleans(), response=responses,
          streamed=st.sampled_from(["run", "stream", "leave"]), recover=st.sampled_from(["release", "another"]))
    def resume_unknown(self, ids: list[str], abandon: int, form: str, twice: bool, response: Response,
                       streamed: str, recover: str) -> None:
        """IR-26/B269: a thread that holds no open interrupts (say, rebuilt from elsewhere) while the agent
        may be waiting on some: with ``pending_unknown=True`` the entries are sent as given (an id named
        twice is still refused, nothing sent); the run is a resume (a cut one keeps its claim)."""
        plan: list[tuple[str, str, Any]] = [(i, "cancelled", None) if n == abandon else (i, "resolved", {"answer": i})
                                            for n, i in enumerate(ids)]
        if twice:
            plan.append(plan[0])
        rid = self.next_run(response)

        def resume_list() -> Any:
            if form == "entries":
                return [ag.ResumeEntry(interrupt_id=i, status=s, payload=p) for i, s, p in plan]
            builder = self.thread.resume_builder()
            for i, s, p in plan:
                builder.answer(i, p) if s == "resolved" else builder.abandon(i)
            return builder

        event(f"resume unknown ({form}{', twice' if twice else ''})")
        if twice:
            self.refused(lambda: self.go(streamed, None, resume=resume_list(), pending_unknown=True, run_id=rid),
                         ag.DuplicateResumeEntry, plan[0][0])
            return
        self.send(rid, response, None, [], streamed=streamed, entries=plan, resume=resume_list(), recover=recover,
                  extra={"pending_unknown": True})

    @rule(shell=st.sampled_from(["sync", "async"]))
    def rebuild_elsewhere(self, shell: str) -> None:
        """The thread rebuilt from elsewhere: its store lost, a new client object on a new store under the
        same thread id, its messages added back. It holds no interrupts, whatever the agent waits on."""
        assert self.shell is not None
        messages = self.thread.state.messages
        legacy = self.shell.legacy
        self.shell.close()
        self.shell = None
        self.store.close()
        self.store = MemoryStore()
        self.shell = self.new_shell(shell, legacy)
        for message in messages:
            self.thread.add_message(message)
        # (what the run outcomes said — open interrupts, pending calls, the shared state, usage, flags —
        # was in the lost record)
        self.model = Model(messages=list(self.model.messages))
        self.stored, self.recorded = Model(), False

    @precondition(lambda self: bool(self.builders))
    @rule(pick=st.integers(0, 5), response=responses)
    def resume_with_a_kept_builder(self, pick: int, response: Response) -> None:
        """A builder made earlier, used again: refused (MisdirectedResume) unless the thread still waits on
        exactly the interrupts of the run it was made for (then it is judged as any resume)."""
        builder, run, made_for = self.builders[pick % len(self.builders)]
        rid = self.next_run(response)
        event("kept builder: " + ("misdirected" if run != self.model.interrupted_run or made_for != tuple(
            self.model.open) else "still the thread's"))
        if not self.model.open:
            # Nothing is open: the builder answers nothing. (Bound to the thread, it says so as misdirected:
            # the thread no longer waits on the run it was made for.)
            self.refused(lambda: self.shell.run(None, resume=builder, run_id=rid), ag.MisdirectedResume, None)
            return
        if run != self.model.interrupted_run or made_for != tuple(self.model.open):
            self.refused(lambda: self.shell.run(None, resume=builder, run_id=rid), ag.MisdirectedResume, None)
            return
        now = self.director.now
        plan = [(e.interrupt_id, e.status, e.payload) for e in builder.entries]
        late = [i for i, s, _ in plan if s == "resolved" and any(o.id == i and o.expired(now) for o in made_for)]
        if late:
            self.refused(lambda: self.shell.run(None, resume=builder, run_id=rid), ag.ExpiredInterruptAnswered,
                         late[0])
            return
        self.send(rid, response, None, [], streamed="run", entries=plan, resume=builder)

    @precondition(lambda self: bool(self.model.pending))
    @rule(pick=st.integers(0, 3))
    def answer_tool_call(self, pick: int) -> None:
        """TC-20: a frontend call is answered by a tool message the next run carries (never a resume entry)."""
        call = self.model.pending[pick % len(self.model.pending)]
        message_id = f"{call}-answer"
        self.thread.add_tool_result(call, {"picked": 1}, message_id=message_id)
        self.model.answer_call(call, message_id)

    @rule(response=responses, text=st.booleans(), cover=st.booleans(), unknown=st.booleans())
    def tool_loop(self, response: Response, text: bool, cover: bool, unknown: bool) -> None:
        """``run_until_done``: the calls the thread holds are answered by their handler, then one run goes
        out; on a thread waiting for answers it must resume them (``cover``: abandon every one), or be
        refused before any handler runs (an action) and before anything is sent. ``unknown``: with
        ``pending_unknown=True``, which on a thread holding no interrupts sends an answer to one the agent
        may be waiting on (IR-26), and changes nothing on one that holds some."""
        rid = self.next_run(response)
        message = ag.UserMessage(id=f"{rid}-u", content="go on") if text else None
        open_ = list(self.model.open)
        entries: list[tuple[str, str, Any]] | None = [(o.id, "cancelled", None) for o in open_] if open_ and cover \
            else None
        if not open_ and unknown:
            entries = [("i1", "resolved", {"answer": "from the loop"})]
        resume = [ag.ResumeEntry(interrupt_id=i, status=s, payload=p) for i, s, p in entries] if entries else None
        extra = {"pending_unknown": True} if unknown else {}
        picked = len(self.picked)
        event(f"tool loop: {len(self.model.pending)} held, {'waiting' if open_ else 'free'}, cover={cover}, "
              f"unknown={unknown}")
        if open_ and not cover:
            self.refused(lambda: self.shell.run_until_done(message, run_id=rid, **extra),  # type: ignore[union-attr]
                         ag.AwaitingAnswers, [o.id for o in open_])
            assert len(self.picked) == picked, "a handler ran for a run the interrupt rules refuse"
            return
        held = list(self.model.pending)
        for call in held:
            self.model.answer_call(call, None)  # (the loop's tool message: an id the client makes)
        new = [Said(message.id, "user")] if message is not None else []
        self.send(rid, response, message, new, streamed="run", entries=entries, resume=resume, loop=True, extra=extra)
        assert len(self.picked) == picked + len(held)

    @rule(seconds=st.sampled_from([1, 29, 30, 31, 600, 3600]))
    def advance_clock(self, seconds: int) -> None:
        self.director.now += timedelta(seconds=seconds)

    @rule(shell=st.sampled_from(["sync", "async"]), legacy=st.booleans())
    def reload(self, shell: str, legacy: bool) -> None:
        """The thread, loaded from its store into a new client object (of either shell, with the legacy
        bridge or without: interrupts it read keep their channel, docs/legacy-interrupts.md)."""
        assert self.shell is not None
        before = report(self.thread)
        self.shell.close()
        self.shell = None
        self.shell = self.new_shell(shell, legacy)
        # A run is saved when it ends; what a run that never ended folded (and a tool answer not yet sent)
        # lives in the object alone. Without any, the reloaded thread is the one before.
        if self.model == self.stored:
            assert report(self.thread) == before
        self.model = self.stored.copy()

    # -- what the machine checks -----------------------------------------------------------------------

    def refused(self, go: Callable[[], Any], kind: type[ag.ResumeRefused], interrupt_id: str | list[str] | None
                ) -> None:
        """``go`` must raise ``kind`` naming ``interrupt_id``, send nothing and leave the thread as it was."""
        before, sent = report(self.thread), self.requests()
        with pytest.raises(ag.ResumeRefused) as caught:
            go()
        assert isinstance(caught.value, kind), (type(caught.value), kind, caught.value)
        if interrupt_id is not None:
            for i in [interrupt_id] if isinstance(interrupt_id, str) else interrupt_id:
                assert i in caught.value.ids, (i, caught.value.ids)
                assert repr(i) in str(caught.value)
        assert self.requests() == sent, "a refused resume reached the agent"
        assert report(self.thread) == before
        error = caught.value
        said = (str(error), error.ids, error.problems)
        self.handed.append((lambda: repr((str(error), error.ids, error.problems)), repr(said)))
        self.director.response = None

    def go(self, streamed: str, message: Any, **arguments: Any) -> Any:
        """A run by ``run()`` or by ``stream()`` (read to its end, or left after the first event)."""
        assert self.shell is not None
        if streamed == "run":
            return self.shell.run(message, **arguments)
        return self.shell.stream(message, leave=streamed == "leave", **arguments)

    def let_go(self, recover: str) -> None:
        """The claim a resume that may have reached the agent kept, let go deliberately: by this object
        (``release``), or by a new client object after this one is gone (``another``: its plain release is
        refused, the claim being another writer's; ``force=True`` takes it back; docs/stores.md)."""
        assert self.shell is not None
        if recover == "release":
            self.shell.release_claim()
            return
        kind, legacy = self.shell.kind, self.shell.legacy
        self.shell.close()
        self.shell = None
        self.shell = self.new_shell(kind, legacy)
        self.model = self.stored.copy()  # (the cut run was not saved)
        with pytest.raises(ag.ConcurrentResume):
            self.shell.release_claim()
        self.shell.release_claim(force=True)

    def send(self, rid: str, response: Response, message: Any, new: list[Said], *, streamed: str,
             entries: list[tuple[str, str, Any]] | None, resume: Any = None, loop: bool = False,
             recover: str = "release", extra: dict[str, Any] | None = None) -> None:
        """A run the model calls valid: sent once, as the model says, and folded as the model says."""
        sent = self.requests()
        history = [m.id for m in self.model.messages]
        arguments: dict[str, Any] = {"run_id": rid, **(extra or {})}
        if resume is not None:
            arguments["resume"] = resume
        result: ag.RunResult | None = None
        events: list[Any] = []
        failure: ag.AguiError | None = None
        try:
            if loop:
                result, events = self.shell.run_until_done(message, **arguments)  # type: ignore[union-attr]
            elif streamed != "run":
                result, events = self.shell.stream(message, leave=streamed == "leave",  # type: ignore[union-attr]
                                                   **arguments)
            else:
                result = self.shell.run(message, **arguments)  # type: ignore[union-attr]
        except (ag.ProtocolError, ag.TransportError) as exc:
            failure = exc
        assert self.requests() == sent + 1, "a valid run was not sent exactly once"
        request = self.agent.requests[-1]
        assert request.run_id == rid and request.thread_id == self.thread_id
        # IR-21: the thread's accumulated messages, then the new turn.
        assert same_ids([m.id for m in request.messages], history + [m.id for m in new])
        assert request.state == self.model.state
        if entries is None:
            assert not request.resume
        elif self.model.via is not None:
            # Interrupts the legacy bridge read are answered in LangGraph's channel, and only there.
            assert not request.resume
            assert request.forwarded_props["command"]["resume"] == channel(entries)
        else:
            given = sorted((i, s, p if s == "resolved" else None) for i, s, p in entries)
            assert sorted((e.interrupt_id, e.status, e.payload) for e in request.resume or ()) == given
        if not self.recorded:
            # The first run of a thread the store does not hold claims it by creating its record, with the
            # thread as it is before the run (a thread rebuilt from elsewhere holds messages already).
            self.stored, self.recorded = self.model.copy(), True
        self.model.messages += new
        if streamed == "leave" and response.kind != "rejected":
            # TR-16: the caller left after RUN_STARTED: the response is closed, the run is incomplete and
            # not saved; its new turn stays in the object. A resume keeps its claim (its request reached
            # the agent: docs/streaming.md), released here on purpose, the documented next step.
            assert failure is None and result is not None
            assert result.outcome is None and "TR-16" in [w.code for w in result.warnings]
            assert [type(e).__name__ for e in events] == ["RunStartedEvent"]
            if entries is not None:
                self.let_go(recover)
            self.keep(result, events)
            return
        bridged = self.shell.legacy
        self.model.played(response, rid, self.director.now, bridged=bridged)
        if response.kind == "cut":
            assert failure is not None, "a cut response did not fail the run"
            assert failure.result is not None and failure.result.outcome is None
            # A resume whose request reached the agent keeps the thread claimed: nobody may send it again
            # unknowingly (docs/concepts/stores-and-claims.md); letting go is the caller's deliberate step.
            assert bool(getattr(failure, "claim_held", False)) == (entries is not None)
            if entries is not None:
                self.let_go(recover)
            self.keep(failure.result, events)
            return
        event(f"sent: {'resume' if entries is not None else 'turn'} -> {response.kind}")
        if response.repeat and response.kind == "interrupt":
            # IR-06, a producer bug: the run fails, but the agent stopped to ask, so its interrupts are held
            # open, and saved, for the thread to answer or abandon (docs/codes.md#ir-06).
            assert isinstance(failure, ag.SequenceError) and repr(response.asks[0].id) in str(failure), failure
            assert failure.result is not None and getattr(failure, "thread_saved", False)
            self.stored = self.model.copy()
            self.keep(failure.result, events)
            return
        assert failure is None, f"{response.kind}: {failure!r}"
        assert result is not None
        self.stored = self.model.copy()
        outcome = {"plain": "success", "tool": "success", "delta": "success", "error": "error", "rejected": "error",
                   "cancelled": "cancelled", "interrupt": "interrupt",
                   "legacy": "interrupt" if bridged else "success"}[response.kind]
        assert result.outcome == outcome
        legacy = response.kind == "legacy"
        assert result.bridged == ("langgraph" if legacy and bridged else None)
        assert ("LEGACY-CUSTOM-INTERRUPT" in [w.code for w in result.warnings]) == (legacy and not bridged)
        if legacy and bridged:
            assert [i.id for i in result.interrupts] == [a.id for a in response.asks]
        if legacy:
            # CL-02: a late RUN_ERROR after the bare RUN_FINISHED is surfaced too; the run stands.
            assert (result.late_error is not None) == response.late
        if response.kind == "interrupt":
            assert [i.id for i in result.interrupts] == [a.id for a in response.asks]
            # CL-02/CL-04: the one late RUN_ERROR is surfaced; the run stays interrupted.
            assert (result.late_error is not None) == response.late
        assert result.pending_tool_call_ids == ((f"{rid}-c",) if response.kind == "tool" else ())
        # IR-22: a run's usage is its own, a resume's too (nothing carried over from the interrupted run).
        assert result.usage == ((usage(rid),) if response.kind in ("delta", "interrupt") else ())
        self.keep(result, events)

    def keep(self, result: ag.RunResult, events: list[Any]) -> None:
        """Remember what was handed out, as it was first read: it must read the same ever after."""
        thread = self.thread
        messages, state, interrupts = thread.state.messages, thread.state.state, thread.open_interrupts
        # (every field, nested records' too, as plain data: their reprs are brief, ids and counts. But
        # ``result.state``: it is live by design. ``new_messages`` is frozen on first read, here)
        for read in (lambda: dumped(result), lambda: dumped(result.new_messages), lambda: dumped(messages),
                     lambda: repr(state), lambda: dumped(interrupts), lambda: dumped(events)):
            self.handed.append((read, read()))
        self.handed = self.handed[-60:]

    @invariant()
    def the_client_reports_the_model(self) -> None:
        if self.shell is None:
            return
        thread = self.thread
        state = thread.state
        assert [type(m).ROLE for m in state.messages] == [m.role for m in self.model.messages]
        assert same_ids([m.id for m in state.messages], [m.id for m in self.model.messages])
        for message, model in zip(state.messages, self.model.messages, strict=True):
            if model.role == "assistant":
                assert tuple(c.id for c in message.tool_calls or ()) == model.calls
            if model.role == "tool":
                assert message.tool_call_id == model.answers
        assert [i.id for i in thread.open_interrupts] == [o.id for o in self.model.open]
        assert state.interrupted_run_id == self.model.interrupted_run
        assert list(state.pending_tool_call_ids) == self.model.pending
        assert set(state.incomplete_ids) == self.model.incomplete
        assert state.state == self.model.state
        assert state.open_interrupts_via == self.model.via
        assert {run: tuple(u) for run, u in state.usage_by_run.items()} == {
            run: (u,) for run, u in self.model.usage.items()}
        now = self.director.now
        builder = thread.resume_builder()
        assert set(builder.expired) == {o.id for o in self.model.open if o.expired(now)}
        assert set(builder.uncovered) == {o.id for o in self.model.open}
        for interrupt, model in zip(thread.open_interrupts, self.model.open, strict=True):
            assert (interrupt.response_schema is not None) == model.schema

    @invariant()
    def what_was_handed_out_never_changes(self) -> None:
        for read, first in self.handed:
            assert read() == first


def dumped(value: Any) -> str:
    """Every field of ``value`` (a record, or a sequence of them), nested records' too, as plain data: the
    full dump a repr no longer is (a result's live ``state`` left out)."""
    if isinstance(value, (list, tuple)):
        return repr([dumped(item) for item in value])
    return repr(attrs.asdict(value, filter=lambda field, _: field is not attrs.fields(ag.RunResult).state))


@pytest.fixture(scope="module")
def lifecycle() -> Iterator[type[Lifecycle]]:
    director = Director()
    agent = ScriptedAgent([director], cycle=True, stateless=True)
    with serve(agent) as server:
        Lifecycle.url, Lifecycle.agent, Lifecycle.director = server.url, agent, director
        yield Lifecycle


# (expiresAt without a zone, or not a date at all, is judged with an IR-17 or IR-18 warning: expected here)
@pytest.mark.filterwarnings(r"ignore:\[IR-1[78]\] interrupt:agui_client.errors.AguiWarning")
@pytest.mark.timeout(0 if LONG else 120)
def test_a_thread_lives_as_the_interrupts_page_says(lifecycle: type[Lifecycle]) -> None:
    run_state_machine_as_test(lifecycle, settings=settings(
        max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))
