"""One run, sans-IO: payloads in, verified and folded events out, and the ``RunResult`` at the end.

``RunSession`` composes the pipeline every transport drives:

    payload (JSON text) -> codec.decode -> chunks.ChunkExpander -> verify.RunVerifier -> fold.ThreadState

It stamps every ``ProtocolError`` with the run id, the event index and type, and the ``RunResult`` so
far (whose ``.state`` is what was folded before the fault), and locates every warning the same way.
``core/replaying.py``'s ``replay()`` drives a session over a recorded response as a live run would.
The fast front-end, by which a session nobody reads events from takes the commonest events straight
from their JSON, is ``core/front.py``'s: its routes (``FrontEnd``) are methods the session is built on.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from ..errors import ProtocolError, StreamEnded, StreamWarning
from ..wire import codec
from ..wire.derive import MISS
from ..wire.jsonio import (
    DEFAULT_MAX_DEPTH,
    parse_batch,
    parse_json,
    read_refused,
)
from ..wire.shapes import charged
from ..wire.sink import WARNINGS_PER_CODE, WarningList, WarningSink
from ..wire.slices import SLICED_MIN, read_slices
from ..wire.types import events as ev
from ..wire.types import run as rn
from .budget import COPY_COST, MemoryBudget
from .chunks import ChunkExpander
from .expectations import another_run, resume_gaps, run_started_differs
from .fold import ThreadState
from .front import FRONT, FrontEnd
from .held import costly_schemas, hold_from_event, hold_from_json
from .naming import CHUNKS, folded_as, type_of, warnings_folded_as
from .patch import MAX_PATCH_OPS
from .redact import redact_exception, redact_record
from .result import RunResult, response_message_ids
from .roster import Roster
from .schema import DEFAULT_MAX_SCHEMA_STEPS
from .thinking import ThinkingReader
from .verify import RunVerifier

__all__ = ["RunSession", "DEFAULT_MAX_EVENT_BYTES", "WARNINGS_PER_CODE", "WarningList", "fail_framing"]

#: Payloads parsed together (``RunSession.fold_read``): enough to spread the per-call cost, few
#: enough that their parsed values stay a small part of any thread.
_GROUP = 64

#: Payloads this large are decoded and folded with Python's cyclic garbage collector paused: see
#: ``RunSession.feed_payload``.
_PAUSE_COLLECTOR_MIN = 64 * 1024

#: Default limit on one event's size in bytes.
DEFAULT_MAX_EVENT_BYTES = 16 * 2**20


class RunSession(FrontEnd):
    """Folds one response (normally one run) into a thread, payload by payload.

    Args:
        state: the thread to fold into (a new one by default).
        run_input: the input that was sent, when known: its ids are compared with ``RUN_STARTED``'s.
        max_depth: JSON nesting limit per payload.
        collect_errors: keep going after a protocol error (the faulty event is not applied) and
            record it in ``errors`` instead of raising (each gets the final ``RunResult`` as ``.result``
            when ``end()`` is called); for verifiers and linters.
        max_errors: with ``collect_errors``, keep at most this many errors (the first ones) and count
            the rest in ``errors_dropped``, so a hostile stream with a fault per event cannot grow the
            list without end; ``None`` (the default) keeps every one.
        events: whether the caller wants the events back. With ``False`` (``replay()`` and
            ``Thread.run()`` use it) the commonest events in their plain shape are read straight from
            their JSON by a fast front-end that calls the same handlers (chunks, verifier, fold) the
            typed path reaches through an event object, and ``feed_payload`` returns no event for
            them; the thread, the errors and the warnings are the same either way.
        budget: what the run's events may make the thread hold (the client's ``max_run_memory``, charged
            as it reads the body): :meth:`admit` refuses a read past it; ``None`` (the default): no bound.
        redact: applied to the error text the run reports (``RUN_ERROR`` and ``SUBAGENT_ERROR`` messages
            and codes, as folded, stored and yielded; warnings; protocol errors' messages and
            attributes), never to the conversation (messages, state, tool calls). The client passes
            one that removes the request's credentials, which an agent may echo.
        max_patch_ops: the most operations one patch (a ``STATE_DELTA``, an ``ACTIVITY_DELTA``) may hold
            (the client's ``max_patch_ops``): a longer one is refused whole (``SP-06``); ``None``: no bound.
        max_schema_steps: the most steps the ``responseSchema`` s of one ``RUN_FINISHED``'s interrupts may
            buy the resume that answers them (the client's ``max_schema_steps``): a ``RUN_FINISHED``
            whose schemas would buy more is refused (``SCHEMA-STEPS``); ``None``: no bound.
    """

    def __init__(self, state: ThreadState | None = None, *, run_input: rn.RunAgentInput | None = None,
                 max_depth: int = DEFAULT_MAX_DEPTH, collect_errors: bool = False,
                 events: bool = True, redact: Callable[[str], str] | None = None,
                 max_errors: int | None = None, budget: MemoryBudget | None = None,
                 max_patch_ops: int | None = MAX_PATCH_OPS,
                 max_schema_steps: int | None = DEFAULT_MAX_SCHEMA_STEPS) -> None:
        self.state = state if state is not None else ThreadState(
            thread_id=run_input.thread_id if run_input is not None else None)
        self.run_input = run_input
        self.max_depth = max_depth
        self.collect_errors = collect_errors
        self.errors: list[ProtocolError] = []
        self.max_errors = max_errors
        self.budget = budget
        self.max_schema_steps = max_schema_steps
        #: Errors collected past ``max_errors``: counted, not kept.
        self.errors_dropped = 0
        self.warnings: WarningList = WarningList()
        # The thread's repairs are this response's from here on: a long-lived thread's list held every
        # run's, and each result reported them all again, as its own.
        self.state.warnings.clear()
        self._sink = WarningSink()
        # (bound once: the decoder is handed it for every event the typed path reads)
        self._thinking = ThinkingReader(self._sink).read
        self._chunks = ChunkExpander()
        self._verifier = RunVerifier(known_tool_call_ids=self.state.has_tool_call,
                                     known_message_ids=self.state.has_message)
        self._index = 0
        self._run_id: str | None = None
        # How many of the thread's own warnings (``state.warnings``: repairs found below the session,
        # such as a UTF-16 half or a restarted call judged at a cut, which name no run) were given theirs.
        self._owned = 0
        self._first_run_index = self.state.run_count
        self._ended = False
        self._failed: ProtocolError | None = None
        # Without callers for the events, what a payload parsed here holds is the fold's own (a state
        # snapshot is kept, not copied), and the front-end reads plain events without making them.
        self._events = events
        self.redact = redact
        # Whether the front-end may read the next payload: nobody reads the events, and no error stopped
        # the session (kept as a flag: it is asked for every payload).
        self._front = not events
        # The fold's parts, which the front-end's routes call (a thread keeps its parts for its life).
        self._streams = self.state.streams
        self._document = self.state.document
        self._document.max_ops = max_patch_ops  # (the response's: the next session sets its own)
        # What one response's patches may copy is bounded whatever number of runs it holds.
        self._document.new_response()
        # What pays for the shapes this response makes the readers compile: its own allowance, so that a
        # response of endless new shapes spends nobody else's (see wire.shapes).
        self._allowance = codec.Allowance()
        if run_input is not None and run_input.resume:
            self.warnings.extend(resume_gaps(self.state, run_input))  # (what it leaves out of the thread)

    # -- feeding ------------------------------------------------------------------------------------

    @property
    def index(self) -> int:
        """The index the next event will have."""
        return self._index

    @property
    def run_id(self) -> str | None:
        """The run currently (or last) being folded."""
        return self._run_id

    @property
    def terminated(self) -> bool:
        """Whether the response's last run reached ``RUN_FINISHED`` or ``RUN_ERROR``."""
        run = self.state.last_run
        return run is not None and run.terminated and self.state.run_count > self._first_run_index

    def feed_payload(self, data: str | bytes) -> list[ev.Event | ev.UnknownEvent]:
        """Decode one SSE payload / JSONL line and fold it; returns the events it produced.

        A large payload is decoded and folded with Python's cyclic garbage collector paused (when it
        was running), and the collector is started again before this returns.

        Raises:
            ProtocolError: the payload is malformed or out of sequence (located, with ``.result``).
        """
        # Decoding a large event makes its containers in one go (orjson's parse, the event objects, the
        # fold's copies), and the collector, which runs every few hundred new containers, walked them
        # again and again while they were made: of the 230 ms a 1 MiB event dense with arrays held the
        # event loop, 150 were the collector's. Nothing made here can be garbage before the event is
        # folded, so the collector gets it once, afterwards: 75 ms, and one pass of some 15 ms at the
        # collector's next turn. (A thread of the caller's own that switches the collector off meanwhile
        # would find it back on; small payloads, where there is nothing to gain, leave it alone.)
        if len(data) >= _PAUSE_COLLECTOR_MIN and gc.isenabled():
            try:
                # (paused inside the try: a KeyboardInterrupt, raised between any two lines, that landed
                # just after the pause and before a guarded line left the collector off for good)
                gc.disable()
                return self._feed_payload(data)
            finally:
                gc.enable()
        return self._feed_payload(data)

    def _feed_payload(self, data: str | bytes) -> list[ev.Event | ev.UnknownEvent]:
        if len(data) >= SLICED_MIN:  # a large snapshot, read slice by slice
            if self._front:
                value = self._read_large(data)
                if value is not None:
                    return self._feed_parsed((value,))
            large = codec.decode_large(data, self.max_depth, self._allowance)
            if large is not None:
                index = self._index
                self._index += 1
                return self._fold(large, index, adopt=not self._events, parsed=True)
        try:
            value = parse_json(data, max_depth=self.max_depth)
        except ProtocolError as exc:
            index = self._index
            self._index += 1
            if exc.event_type == "RUN_FINISHED":
                # Refused as no JSON (a number past a double, a repeated key) yet readable: the
                # interrupts it names are held open as for any RUN_FINISHED refused (core/held.py).
                named = read_refused(data)
                if type(named) is dict:
                    hold_from_json(self.state, self._run_id, named, exc)
            return self._fail(exc, index, None)
        return self._feed_parsed((value,))

    def admit(self, payloads: Sequence[str | bytes]) -> bool:
        """Whether a read's events may be folded within the run's memory budget (always, without one).

        Asked before the read is folded (its bytes were charged as they were read): a read that would
        take the thread past the budget is not parsed at all.

        Raises:
            LimitExceeded: (``RUN-MEMORY``) past the budget, located at the read's first event (the fold
                stops before it), with ``.result``; collected instead with ``collect_errors`` (then
                ``False``: the read is not folded).
        """
        budget = self.budget
        if budget is None:
            return True
        document = self._document
        refusal = budget.check(payloads, self.state.entity_count, document.copied, document.released)
        if refusal is None:
            # (what this read's copies may make is bounded before they are made: see bound_copies)
            document.bound_copies(budget.room // COPY_COST)
            return True
        self._fail(refusal, self._index, refusal.event_type)
        return False

    def fold_read(self, payloads: list[Any]) -> None:
        """Fold a network read's payloads (or a block's lines), for a caller that reads no events.

        The read is taken a group at a time: a group is parsed and proved at once when it can be
        (``parse_batch``), else its payloads go to :meth:`feed_payload` one by one. Groups are small so
        that the parsed values of a whole read are never held at once.
        """
        for start in range(0, len(payloads), _GROUP):
            group = payloads[start:start + _GROUP] if len(payloads) > _GROUP else payloads
            values = parse_batch(group, max_depth=self.max_depth)
            if values is None:
                for payload in group:
                    self.feed_payload(payload)
                continue
            self._feed_parsed(values)

    def _feed_parsed(self, values: Iterable[Any]) -> list[ev.Event | ev.UnknownEvent]:
        """Payloads parsed here, each the next event: read by the front-end when nobody wants their events
        (and no chunk lane is open), else decoded; returns the events (for a caller that wants them)."""
        out: list[ev.Event | ev.UnknownEvent] = []
        front_for = FRONT.get
        chunks, verifier = self._chunks, self._verifier  # (a session keeps its parts for its life)
        for value in values:
            index = self._index
            self._index = index + 1
            if self._front and type(value) is dict and chunks.idle and verifier.running:
                try:
                    front = front_for(value.get("type"))  # type: ignore[arg-type]
                except TypeError:  # an unhashable "type" (an array, an object): decoding says what is wrong
                    front = None
                if front is not None:
                    try:
                        # (the shape this type came in last first: finding one's own costs a tuple of the
                        # keys and its hash, some 0.1 us an event; see ``derive.Router``)
                        if front.last(value, self, index) is MISS:
                            # (a spent allowance declines every new shape: this response's objects are read
                            # under it from the start, once each, as the decoder reads them; asked only
                            # when the shape its type came in last does not fit, a few events a run)
                            if self._allowance.left > 0:
                                front(value, self, index)
                            else:
                                charged(self._allowance, front, value, self, index)
                    except codec.NewShape:
                        if self._front_charged(front, value, index):
                            continue
                    except codec.Fallback:
                        pass
                    except ProtocolError as exc:
                        self._fail(exc, index, value["type"])
                        continue
                    else:
                        continue
            folded = self._feed_value(value, index, adopt=not self._events, parsed=True)
            if self._events:
                out += folded
        return out

    def _front_charged(self, front: Any, value: dict[str, Any], index: int) -> bool:
        """Read ``value`` by the front-end again, this response's allowance paying for the shapes it
        compiles (the first read met a new shape with none in force, and had called no route); whether it
        was read (else the typed path reads it)."""
        try:
            charged(self._allowance, front, value, self, index)
        except codec.Fallback:
            return False
        except ProtocolError as exc:
            self._fail(exc, index, value["type"])
        return True

    def _read_large(self, data: str | bytes) -> dict[str, Any] | None:
        """A large MESSAGES_SNAPSHOT whose messages a fold may hold as JSON, read slice by slice (its
        roster gathered while each slice is fresh in memory, in place of its messages); ``None`` when it
        is not read that way."""
        roster = Roster(wire=True)

        def gather(items: list[Any]) -> None:
            if not codec.held_messages(items):
                raise codec.Fallback
            roster.add_wire(items)

        try:
            read = read_slices(data, codec.SNAPSHOT_HEAD, "messages", self.max_depth, gather)
        except codec.Fallback:
            return None
        if read is None:
            return None
        value = read[1]
        value["messages"] = roster
        return value

    def feed_event(self, event: ev.Event | ev.UnknownEvent | Mapping[str, Any]) -> list[ev.Event | ev.UnknownEvent]:
        """Fold one already-decoded event (or a wire mapping); returns the events it produced."""
        index = self._index
        self._index += 1
        if isinstance(event, Mapping):
            return self._feed_value(dict(event), index, adopt=False, parsed=False)
        if type(event) is ev.RunFinishedEvent or type(event) is ev.RunErrorEvent:
            # Built in Python, its usage never met the decoder's checks (TU-02, TU-04): checked here, once a run.
            event = codec.checked_usage(event, self._sink)
            if self._sink.items:
                self._take_warnings(index, event)
        return self._fold(event, index, adopt=False, parsed=False)

    def _feed_value(self, value: Any, index: int, *, adopt: bool, parsed: bool) -> list[ev.Event | ev.UnknownEvent]:
        sink = self._sink
        if type(value) is dict and type(value.get("messages")) is Roster:
            value["messages"] = value["messages"].items  # (a large snapshot the front-end did not take)
        try:
            # (a THINKING_* payload is the session's to read, even one carrying an id: see core/thinking.py)
            event = codec.decode_value(value, sink, self._thinking, self._allowance)
        except ProtocolError as exc:
            kind = value.get("type") if type(value) is dict else None
            if sink.items:  # (named by the type the payload gave, when it gave one)
                self._take_warnings(index, ev.UnknownEvent(type=kind, raw={}) if type(kind) is str else None)
            if kind == "RUN_FINISHED":
                hold_from_json(self.state, self._run_id, value, exc)
            return self._fail(exc, index, kind if isinstance(kind, str) else None)
        if sink.items:
            self._take_warnings(index, event)
        return self._fold(event, index, adopt=adopt, parsed=parsed)

    def _fold(self, event: ev.Event | ev.UnknownEvent, index: int, *,
              adopt: bool, parsed: bool) -> list[ev.Event | ev.UnknownEvent]:
        # The typed path: the event through the chunk expander, then each event it stands for through
        # the verifier's and the fold's handlers (``check`` and ``apply`` match it onto them).
        # ``parsed``: the event's JSON is as this session's parser made it (not the caller's objects).
        if self._failed is not None and not self.collect_errors:
            raise self._failed
        state = self.state
        verifier = self._verifier
        try:
            expanded = self._chunks.feed(event, index)
        except ProtocolError as exc:
            return self._fail(exc, index, type_of(event))
        # A *_CHUNK stands for the events it is folded as; what those break is named by the chunk, the
        # event the agent sent (see ``folded_as``).
        chunk = type_of(event) if type(event) in CHUNKS else None
        out: list[ev.Event | ev.UnknownEvent] = []
        for item in expanded:
            if self.redact is not None and type(item) in _ERROR_EVENTS:
                item = redact_record(item, self.redact, _ERROR_FIELDS)
            kind = type_of(item)
            if type(item) is ev.RunStartedEvent:
                self._on_run_started(item, index)
            elif type(item) is ev.RunErrorEvent and state.run_count == self._first_run_index:
                # LC-02: this response opened with RUN_ERROR, the producer refusing the input.
                # It is a run of its own that failed, never a late error of the thread's last run.
                state.open_rejected_run(self.run_input.run_id if self.run_input is not None else None)
            elif type(item) is ev.RunFinishedEvent and type(item.outcome) is rn.RunFinishedInterruptOutcome \
                    and self.max_schema_steps is not None:
                costly = costly_schemas(item.outcome.interrupts, self.max_schema_steps, plain=parsed)
                if costly is not None:
                    self._refuse(costly, index, item)
                    continue
            try:
                found = verifier.check(item, index)
            except ProtocolError as exc:
                if chunk is not None:
                    folded_as(exc, chunk, kind)
                self._refuse(exc, index, item)
                continue
            if found:
                self._add_warnings(found if chunk is None else warnings_folded_as(found, chunk, kind), index, kind)
            if type(item) is ev.RunStartedEvent and self.run_input is not None \
                    and state.run_count > self._first_run_index:
                self._another_run(item, index)
            folded = state.apply(item, adopt=adopt, parsed=parsed)
            if folded:
                self._add_warnings(folded if chunk is None else warnings_folded_as(folded, chunk, kind), index, kind)
            out.append(item)
        return out

    def _on_run_started(self, event: ev.RunStartedEvent, index: int) -> None:
        if self._run_id is not None:
            self._own_warnings()  # (what the thread found so far is the ending run's)
        self._run_id = event.run_id
        # (a RUN_STARTED naming another thread or run than the request's is said: see run_started_differs)
        found = run_started_differs(event, self.run_input, self.state, self.state.run_count == self._first_run_index)
        if found:
            self._add_warnings(found, index, event.TYPE)

    def _another_run(self, event: ev.RunStartedEvent, index: int) -> None:
        # (a response to one request normally holds one run: a second is said; see another_run)
        # (the count and the last run, never ``state.runs``: that copies every run of the thread, and a
        # response may hold run after run, so each new one would cost all those before it)
        before = self.state.last_run
        assert before is not None  # (called only once this response has folded a run)
        count = self.state.run_count - self._first_run_index
        self._add_warnings([another_run(event, before, count)], index, event.TYPE)

    def end(self) -> RunResult:
        """The stream ended: close open chunk lanes, check the run terminated, and return the result.

        Raises:
            StreamEnded: the stream ended before the run's terminal event (``.result`` holds the state).
        """
        if self._ended:
            return self.result()
        self._ended = True
        self._document.end_response()
        index = self._index
        if self._failed is not None and not self.collect_errors:
            raise self._failed
        try:
            for item in self._chunks.close():
                verified = self._verifier.check(item, index)
                if verified:
                    self._add_warnings(verified, index, type_of(item))
                self.state.apply(item)
            self._verifier.end(index)
        except StreamEnded as exc:
            self.mark_cut()  # (also when errors are collected: the stream is over)
            self._fail(exc, index if exc.index is None else exc.index, None)
        except ProtocolError as exc:
            self._fail(exc, index, None)
        result = self.result()
        for error in self.errors:
            if error.result is None:
                error.result = result
        return result

    def mark_cut(self) -> None:
        """The run stops here (an error, a dropped connection): flag what is still open as incomplete.

        The messages and tool calls being streamed are kept as far as they went, never silently
        closed, and a cut tool call is never offered as pending (LC-04).
        """
        verifier = self._verifier
        messages = [*verifier.open_message_ids, *verifier.open_reasoning_message_ids]
        # (calls restarted after their end, TC-05, are judged at the run's end: a cut is one)
        if messages or verifier.open_tool_call_ids or self._streams.restarted:
            self.state.mark_incomplete(messages, verifier.open_tool_call_ids)

    def _refuse(self, exc: ProtocolError, index: int,
                event: ev.Event | ev.UnknownEvent) -> list[ev.Event | ev.UnknownEvent]:
        # (an interrupt outcome refused still asked: its interrupts are held open, and the error carries them)
        hold_from_event(self.state, self._run_id, event, exc)
        return self._fail(exc, index, type_of(event))

    def _fail(self, exc: ProtocolError, index: int, event_type: str | None) -> list[ev.Event | ev.UnknownEvent]:
        exc.locate(run_id=self._run_id, index=index, event_type=event_type)
        if exc.__suppress_context__:
            # Raised ``from None``: the parser's own error is not shown, yet it stays reachable as the
            # context, holding the whole payload (a ``JSONDecodeError``'s ``.doc``: up to the event
            # limit, unredacted, and kept as long as the error is).
            exc.__context__ = None
        if self.redact is not None:
            # (a malformed event's excerpt, an id or a key the agent chose: all may echo the request)
            redact_exception(exc, self.redact, keep=("result", "interrupts"))
        if self.collect_errors:
            # A result per collected error would cost the whole thread each time (a hostile stream can
            # hold an error per event): end() gives them all the final one.
            if self.max_errors is not None and len(self.errors) >= self.max_errors:
                self.errors_dropped += 1
            else:
                self.errors.append(exc)
            return []
        self.mark_cut()
        exc.result = self.result()
        self._failed = exc
        self._front = False
        raise exc

    def _own_warnings(self) -> None:
        # The thread's repairs name no run; those found since the last call are the current run's (once
        # per run and per result, each warning once: not per event).
        found = self.state.warnings
        run_id = self._run_id
        for i in range(self._owned, len(found)):
            if found[i].run_id is None:
                found[i] = attrs.evolve(found[i], run_id=run_id)
        self._owned = len(found)

    def _take_warnings(self, index: int, event: Any) -> None:
        items = self._sink.items
        self._sink.items = []
        self._add_warnings(items, index, type_of(event) if event is not None else None)

    def _add_warnings(self, found: Iterable[StreamWarning], index: int, kind: str | None) -> None:
        for warning in found:
            self.warnings.append(attrs.evolve(
                warning,
                index=warning.index if warning.index is not None else index,
                event_type=warning.event_type if warning.event_type is not None else kind,
                run_id=warning.run_id if warning.run_id is not None else self._run_id,
            ))

    # -- the result ------------------------------------------------------------------------------------

    def result(self) -> RunResult:
        """The run as folded so far."""
        state = self.state
        runs = state.runs[self._first_run_index:]
        run = runs[-1] if runs else None
        # (each run's own; a response of several runs says them together: see response_message_ids)
        new_message_ids = response_message_ids(runs, state.log.by_id)
        if self._run_id is not None and len(state.warnings) > self._owned:
            self._own_warnings()
        warnings = tuple(self.warnings) + tuple(state.warnings)
        if runs and any(w.run_id is None for w in warnings):
            # (a framing fault read before RUN_STARTED was folded: the response's run)
            first = runs[0].run_id
            warnings = tuple(w if w.run_id is not None else attrs.evolve(w, run_id=first) for w in warnings)
        redact = self.redact
        if redact is not None and warnings:
            warnings = tuple(redact_record(w, redact, _WARNING_FIELDS) for w in warnings)
        return RunResult(
            thread_id=state.thread_id,
            run_id=run.run_id if run is not None else (self.run_input.run_id if self.run_input else None),
            outcome=run.outcome if run is not None else None,
            interrupts=run.interrupts if run is not None else (),
            pending_tool_call_ids=run.pending_tool_call_ids if run is not None else (),
            result=run.result if run is not None else None,
            error=run.error if run is not None else None,
            late_error=run.late_error if run is not None else None,
            usage=run.usage if run is not None else (),
            new_message_ids=new_message_ids,
            state=state,
            warnings=warnings,
            steps=tuple(run.steps) if run is not None else (),
            events=self._index,
            run_ids=tuple(r.run_id for r in runs),
            bridged=run.bridged if run is not None else None,
        )


#: Events whose text is an error report: redacted (``redact``) before they are folded or handed out.
_ERROR_EVENTS = frozenset({ev.RunErrorEvent, ev.SubagentErrorEvent})
_ERROR_FIELDS = ("message", "code", "raw_event", "metadata")
_WARNING_FIELDS = ("message", "pointer", "event_type", "run_id")


def fail_framing(session: RunSession, exc: ProtocolError) -> None:
    """Fail ``session`` where it stands with an error of the framing under its events (a frame or a
    JSONL line past the size limit), as it fails on an event it cannot take: located at its index,
    redacted, and collected or ending the run (what the replaying readers do when bytes cannot be framed)."""
    session._fail(exc, session.index, None)
