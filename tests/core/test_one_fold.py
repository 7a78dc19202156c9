"""One fold, reached two ways: the fast front-end calls the very handlers the typed path calls.

A session nobody reads events from reads the commonest events in their plain shape straight from their
JSON (``core/front.py``, the fast front-end), instead of decoding an event object and matching it
onto the handlers in ``ChunkExpander.feed``, ``RunVerifier.check`` and ``ThreadState.apply``. These tests
record every handler call (verifier, chunk expander, fold parts) while the same bytes are folded with the
front-end and with it switched off, and require the same calls, with the same arguments, in the same
order; and, over random streams, the same thread, warnings and errors.
"""

from __future__ import annotations

import inspect
import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_fuzz import streams

from agui_client.core import session as session_module
from agui_client.core.chunks import ChunkExpander
from agui_client.core.fold.document import StateDocument
from agui_client.core.fold.ledger import RunLedger
from agui_client.core.fold.snapshots import Snapshots
from agui_client.core.fold.streams import Streams
from agui_client.core.roster import Roster
from agui_client.core.session import RunSession
from agui_client.core.verify import RunVerifier
from agui_client.wire.codec import Fallback, FieldError

#: The handlers of each part: every public method that is not a property or the typed entry itself.
_HANDLED: dict[type, tuple[str, ...]] = {
    RunVerifier: ("run_started", "run_finished", "run_error", "passive", "text_start", "text_content", "text_end",
                  "tool_start", "tool_args", "tool_end", "tool_result", "reasoning_start", "reasoning_message_start",
                  "reasoning_content", "reasoning_message_end", "reasoning_end", "encrypted_value", "step_started",
                  "step_finished", "subagent_started", "subagent_finished", "subagent_error", "activity_snapshot",
                  "activity_delta", "messages_snapshot"),
    ChunkExpander: ("run_started", "run_ended", "boundary", "owner_event", "explicit_start", "explicit_content",
                    "explicit_end"),
    Streams: ("text_start", "text_delta", "text_end", "tool_start", "tool_args", "tool_end", "tool_result",
              "encrypted_value"),
    StateDocument: ("snapshot", "delta"),
    Snapshots: ("activity_snapshot", "activity_delta", "messages_snapshot"),
    RunLedger: ("run_started", "run_finished", "run_error", "step_started", "step_finished", "subagent_started",
                "subagent_finished", "subagent_error"),
}


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

#: Chunk handlers whose only effect is to close lanes: while none is open (the only time the front-end
#: reads an event) they do nothing, and the front-end does not call them (``core/front.py`` says so).
_LANE_ONLY = frozenset({"ChunkExpander.owner_event", "ChunkExpander.boundary", "ChunkExpander.explicit_content"})
#: Verifier handlers whose only rule is the phase step: while a run is running (the only time the front-end
#: reads an event) they accept and change nothing, and the front-end does not call them.
_PHASE_ONLY = frozenset({"RunVerifier.passive"})


def _plain(value: Any) -> Any:
    """An argument as comparable data: a roster by what it holds (typed or JSON alike), a patch as a list."""
    if isinstance(value, Roster):
        return ("roster", list(value.by_id), sorted(value.roles), value.repeats, value.owners(),
                value.call_owners)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _record(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    calls: list[tuple[str, Any]] = []
    for cls, names in _HANDLED.items():
        for name in names:
            original = getattr(cls, name)
            parameters = list(inspect.signature(original).parameters)[1:]

            def spy(self: Any, *args: Any, _name: str = f"{cls.__name__}.{name}", _original: Any = original,
                    _parameters: list[str] = parameters) -> Any:
                if (_name in _LANE_ONLY and not self._lanes) or (_name in _PHASE_ONLY and self._phase == "running"):
                    return _original(self, *args)  # (it has nothing to do then: see below)
                bound = dict(zip(_parameters, args, strict=False))
                bound.pop("adopt", None)  # (the front-end adopts what it parsed; so does the typed path here)
                bound.pop("vet", None)  # (the decoder's check, which the typed path ran before the call)
                calls.append((_name, {k: _plain(v) for k, v in bound.items()}))
                try:
                    return _original(self, *args)
                except (Fallback, FieldError):
                    # The front-end stepped back, the part unchanged (a patch the decoder's check, asked
                    # only when needed, refuses: ``delta`` raises its FieldError, which the route turns
                    # into Fallback): no call took effect, and the typed path goes on.
                    calls.pop()
                    raise
            monkeypatch.setattr(cls, name, spy)
    return calls


def _fold(payloads: list[bytes], front: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    with monkeypatch.context() as patch:
        calls = _record(patch)
        if not front:
            patch.setattr(session_module, "FRONT", {})
        session = RunSession(collect_errors=True, events=False)
        session.fold_read(payloads)
        result = session.end()
        folded = (calls, result.state.to_wire(),
                  [(w.code, w.message, w.index, w.event_type, w.pointer) for w in result.warnings],
                  [(type(e).__name__, str(e)) for e in session.errors])
        # (THINKING_* events carry no ids: each fold mints its own)
        return tuple(json.loads(_UUID.sub("<minted>", json.dumps(folded, sort_keys=True, default=repr))))


def _compact(events: list[dict[str, Any]]) -> list[bytes]:
    return [json.dumps(e, separators=(",", ":")).encode("utf-8", "surrogatepass") for e in events]


CONVERSATION = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant", "metadata": {"k": 1}},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "hel"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "lo", "timestamp": 3},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    {"type": "REASONING_MESSAGE_START", "messageId": "r1", "role": "reasoning"},
    {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1", "delta": "hm"},
    {"type": "REASONING_MESSAGE_END", "messageId": "r1"},
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f", "parentMessageId": "m1"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{\"a\":"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "1}"},
    {"type": "TOOL_CALL_END", "toolCallId": "c1"},
    {"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "c1", "content": "ok"},
    {"type": "TOOL_CALL_START", "toolCallId": "c2", "toolCallName": "g", "subagentRunId": "s1"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c2", "delta": "not json"},
    {"type": "TOOL_CALL_END", "toolCallId": "c2"},
    {"type": "STATE_SNAPSHOT", "snapshot": {"a": [1], "b": {}}},
    {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a/-", "value": 2}]},
    {"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/missing"}]},
    {"type": "STATE_DELTA", "delta": [{"op": "merge", "path": "/a", "value": 1}]},
    {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u1", "role": "user", "content": "hi"},
                                               {"id": "m1", "role": "assistant", "content": "hello"},
                                               {"id": "u1", "role": "user", "content": "again"}]},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "nope", "delta": "x"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "after the end"},
]


def test_the_front_end_calls_the_handlers_the_typed_path_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    payloads = _compact(CONVERSATION)
    front = _fold(payloads, True, monkeypatch)
    typed = _fold(payloads, False, monkeypatch)
    assert front == typed
    calls = [tuple(call) for call in front[0]]
    # (the test folds what it means to: every kind the front-end reads, warnings and an error among them)
    assert {name for name, _ in calls} >= {
        "Streams.text_delta", "Streams.tool_args", "Streams.text_start", "Streams.text_end", "Streams.tool_start",
        "Streams.tool_end", "Streams.tool_result", "StateDocument.delta", "Snapshots.messages_snapshot",
        "RunVerifier.text_content", "ChunkExpander.explicit_start"}
    assert {code for code, *_ in front[2]} >= {"TC-06/AGUI204", "SP-06/AGUI302", "SP-07/AGUI303", "MS-01",
                                               "TX-05/AGUI104"}
    assert front[3], "the event after RUN_FINISHED is refused"


def test_the_front_end_really_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plain events never become event objects on the front-end (what it is for)."""
    from agui_client.wire import codec

    decoded: list[Any] = []
    real = codec.decode_value

    def counting(value: Any, sink: Any = None, legacy: Any = None, allowance: Any = None) -> Any:
        decoded.append(value.get("type") if isinstance(value, dict) else None)
        return real(value, sink, legacy, allowance)
    monkeypatch.setattr(codec, "decode_value", counting)
    session = RunSession(events=False)
    session.fold_read(_compact(CONVERSATION[:13]))
    assert decoded == ["RUN_STARTED"]  # only the run's start took the typed path


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(evs=streams)
@example(evs=[{"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},  # (a patch the check refuses only when asked)
              {"type": "STATE_DELTA", "delta": [{"op": "add", "path": ""}]},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"}])
def test_random_streams_fold_through_the_same_handler_calls(evs: list[dict[str, Any]]) -> None:
    payloads = _compact(evs)
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert _fold(payloads, True, monkeypatch) == _fold(payloads, False, monkeypatch)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(evs=st.lists(st.sampled_from(CONVERSATION[1:-1]), max_size=30))
def test_shuffled_conversations_fold_through_the_same_handler_calls(evs: list[dict[str, Any]]) -> None:
    payloads = _compact([CONVERSATION[0], *evs, CONVERSATION[-2]])
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert _fold(payloads, True, monkeypatch) == _fold(payloads, False, monkeypatch)


#: Events of one type in shapes of as many keys, one after another: the front-end tries the shape the type
#: came in last first, and must read each of these as its own shape's function reads it.
SAME_SIZE_SHAPES = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "a", "timestamp": 1},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "b", "metadata": {"k": 1}},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "c", "rawEvent": {"r": 1}},
    {"timestamp": 2, "delta": "d", "messageId": "m1", "type": "TEXT_MESSAGE_CONTENT"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "e", "timestamp": 3},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "f", "timestamp": "late"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "g", "unknown": 1},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "h", "timestamp": 4},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"},
]


def test_events_of_one_type_in_shapes_of_as_many_keys_are_each_read_as_their_own_shape(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    payloads = _compact(SAME_SIZE_SHAPES)
    front = _fold(payloads, True, monkeypatch)
    assert front == _fold(payloads, False, monkeypatch)
    deltas = [args for name, args in front[0] if name == "Streams.text_delta"]
    # Each read with its own fields; the string timestamp refused, the unknown key ignored with a warning.
    assert [(args["delta"], args["metadata"]) for args in deltas] == [
        ("a", None), ("b", {"k": 1}), ("c", None), ("d", None), ("e", None), ("g", None), ("h", None)]
    assert front[1]["messages"][0]["content"] == "abcdegh"
    assert [error for error, _ in front[3]] == ["DecodeError"]


def test_the_shape_of_the_last_event_of_a_type_is_read_without_finding_it_again(
    monkeypatch: pytest.MonkeyPatch, fresh_shapes: None,
) -> None:
    """The front-end's shortcut is taken: an event of the shape its type came in last is not looked up."""
    from agui_client.wire import derive, shapes

    looked_up: list[tuple[str, ...]] = []
    real = derive.Router.__call__

    def counting(self: derive.Router, value: Any, session: Any, index: int) -> Any:
        new = False
        try:
            return real(self, value, session, index)
        except shapes.NewShape:
            new = True  # (the session reads it again on its response's allowance: counted then)
            raise
        finally:
            if not new:
                looked_up.append(tuple(value))
    monkeypatch.setattr(derive.Router, "__call__", counting)
    session = RunSession(events=False, collect_errors=True)
    session.fold_read(_compact(SAME_SIZE_SHAPES))
    contents = [shape for shape in looked_up if "delta" in shape]
    a, b, c, d, _, _, g, _ = (tuple(event) for event in SAME_SIZE_SHAPES[2:10])
    # Looked up: each event of other keys than the plain shape read before it (b, c, d; g, whose unknown key
    # makes a shape no function reads); never one of that shape's keys: e after d (in another order), f (its
    # function refuses the string timestamp), h after g (the last plain shape still d's). The first, a, is
    # looked up: no shape was read before (fresh_shapes).
    assert contents == [a, b, c, d, g], contents
    assert session.end().state.messages[0].content == "abcdegh"


def test_a_routers_last_shape_function_reads_only_objects_of_exactly_its_keys() -> None:
    """``Router.last`` may be called on any object: it reads one of its own shape's keys (in any order) and
    returns ``MISS``, having called nothing, for any other (a key more, a key less, another key)."""
    from agui_client.types import TextMessageContentEvent
    from agui_client.wire import codec, derive, shapes

    read: list[tuple[Any, ...]] = []

    def route(session: Any, index: int, message_id: str, delta: str, subagent_run_id: Any = None,
              timestamp: Any = None, raw_event: Any = None, metadata: Any = None) -> None:
        read.append((index, delta, metadata))
    router = codec.front(TextMessageContentEvent, route)
    assert router is not None
    plain = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "a"}
    assert router.last(plain, None, 0) is derive.MISS  # (no shape read yet)
    shapes.charged(shapes.Allowance(), router, plain, None, 0)  # (an allowance pays for compiling the shape)
    assert router.last({"delta": "b", "messageId": "m", "type": "TEXT_MESSAGE_CONTENT"}, None, 1) is None
    for index, other in enumerate([{**plain, "metadata": {"k": 1}}, {"type": "TEXT_MESSAGE_CONTENT", "delta": "c"},
                                   {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "timestamp": 1}], start=2):
        assert router.last(other, None, index) is derive.MISS, other
    assert read == [(0, "a", None), (1, "b", None)]


def test_front_asked_again_hands_back_its_router_and_adds_no_cache() -> None:
    """``codec.front`` made a router, and registered it and its shape cache, at every call: repeated calls
    grew the ``Derived`` instance's lists for as long as the process ran."""
    from agui_client.core.front import FrontEnd
    from agui_client.types import StateDeltaEvent, TextMessageContentEvent
    from agui_client.wire import codec

    def route(session: Any, index: int, message_id: str, delta: str, subagent_run_id: Any = None,
              timestamp: Any = None, raw_event: Any = None, metadata: Any = None) -> None:
        pass
    first = codec.front(TextMessageContentEvent, route)
    vetted = codec.front(StateDeltaEvent, FrontEnd._state_delta, vetted=True)
    caches, routers = len(codec._derived.caches), len(codec._derived._routers)

    for _ in range(50):
        assert codec.front(TextMessageContentEvent, route) is first
        assert codec.front(StateDeltaEvent, FrontEnd._state_delta, vetted=True) is vetted

    assert (len(codec._derived.caches), len(codec._derived._routers)) == (caches, routers)
    # Another route is another router (what it calls is part of what it is).
    assert codec.front(TextMessageContentEvent, lambda *values: None) is not first
    assert len(codec._derived.caches) == caches + 1
