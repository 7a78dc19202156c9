"""Pre-1.0 interrupts in the sans-IO core: the two warnings, the LangGraph bridge, its stored form, its channel.

Streams are folded with ``replay`` (the fast front-end reads plain CUSTOM events) and event by event
through ``RunSession.feed_event`` (the typed path): both must say the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agui_client import ResumeEntry, ResumeRefused, replay
from agui_client._inert import quoted_name
from agui_client.core.fold import ThreadState
from agui_client.core.legacy import (
    CUSTOM_ASKED,
    MAX_ASKS,
    TOOL_ASKED,
    forward_resume,
    looks_like_confirmation,
)
from agui_client.core.session import RunSession
from agui_client.errors import InvalidResumePayload
from agui_client.wire.types.run import Interrupt

DATA = Path(__file__).resolve().parent.parent / "data" / "legacy"
IDS = {"threadId": "t1", "runId": "r1"}


def started() -> dict[str, Any]:
    return {"type": "RUN_STARTED", **IDS}


def finished(**outcome: Any) -> dict[str, Any]:
    return {"type": "RUN_FINISHED", **IDS, **({"outcome": outcome} if outcome else {})}


def custom(value: Any, name: str = "on_interrupt", **extra: Any) -> dict[str, Any]:
    return {"type": "CUSTOM", "name": name, "value": value, **extra}


def call(call_id: str, name: str) -> list[dict[str, Any]]:
    return [{"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": name},
            {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": "{}"},
            {"type": "TOOL_CALL_END", "toolCallId": call_id}]


def both_ways(events: list[dict[str, Any]], legacy: str | None = None) -> Any:
    """The stream folded by replay (front-end) and by the typed path; both results, checked equal, the first."""
    fast_state = ThreadState(legacy_interrupts=legacy)
    fast = replay("".join(f"data: {json.dumps(e)}\n\n" for e in events), state=fast_state)
    session = RunSession(ThreadState(legacy_interrupts=legacy))
    for event in events:
        session.feed_event(event)
    typed = session.end()
    assert (fast.outcome, fast.interrupts, fast.warnings, fast.bridged, fast.pending_tool_call_ids) == (
        typed.outcome, typed.interrupts, typed.warnings, typed.bridged, typed.pending_tool_call_ids)
    assert fast_state.dump() == typed.state.dump()
    return fast


# --------------------------------------------------------------------------------------------------
# the warnings
# --------------------------------------------------------------------------------------------------

def test_a_success_after_on_interrupt_is_warned_and_nothing_else_changes() -> None:
    asked = both_ways([started(), custom('{"message": "Sure?"}'), finished()])
    plain = both_ways([started(), custom('{"message": "Sure?"}', name="progress"), finished()])

    (warning,) = asked.warnings
    assert warning.code == CUSTOM_ASKED and warning.index == 2 and warning.event_type == "RUN_FINISHED"
    assert warning.run_id == "r1" and warning.pointer == "/outcome"
    assert plain.warnings == ()
    # Ignoring CUSTOM is conformant: the run, the thread and what is open are the same either way.
    assert (asked.outcome, asked.interrupts, asked.bridged) == ("success", (), None)
    assert asked.state.dump() == plain.state.dump()
    assert asked.state.open_interrupts_via is None


def test_no_warning_when_the_run_also_sends_the_interrupt_outcome() -> None:
    # ag-ui-langgraph with emit_interrupt_outcome=True sends both; the outcome is what counts.
    outcome = {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approval"}]}
    result = both_ways([started(), custom('{"message": "Sure?"}'), finished(**outcome)], legacy="langgraph")
    assert result.outcome == "interrupt" and result.warnings == () and result.bridged is None
    assert [i.id for i in result.interrupts] == ["i1"] and result.state.open_interrupts_via is None


@pytest.mark.parametrize(("name", "looks"), [
    ("confirm_delete", True), ("confirmAction", True), ("request_approval", True), ("approve", True),
    ("ApproveTransfer", True), ("get-user-confirmation", True), ("authorize_payment", True),
    ("ask_user", True), ("askHuman", True), ("human_input", True), ("hitl.review", True),
    ("request_permission", True), ("user_consent", True),
    ("get_weather", False), ("pick_color", False), ("ask", False), ("task_runner", False),
    ("humanize_text", False), ("delete_file", False), ("", False),
])
def test_the_confirmation_name_heuristic(name: str, looks: bool) -> None:
    assert looks_like_confirmation(name) is looks


def test_a_success_leaving_a_confirmation_call_unanswered_is_warned() -> None:
    result = both_ways([started(), *call("c1", "get_weather"), *call("c2", "confirm_delete"), finished()])
    (warning,) = result.warnings
    assert warning.code == TOOL_ASKED and warning.event_type == "RUN_FINISHED"
    assert "'confirm_delete' ('c2')" in warning.message and "get_weather" not in warning.message
    assert result.outcome == "success" and result.pending_tool_call_ids == ("c1", "c2")


def test_the_confirmation_warning_quotes_names_short_and_escaped() -> None:
    name = "confirm_\x1b[31m" + "x" * 5000
    (warning,) = both_ways([started(), *call("c1", name), finished()]).warnings
    assert "\x1b" not in warning.message and len(warning.message) < 600
    # (quoted as an id: cut past 80 characters of its repr, with a digest of the whole name)
    assert repr(name)[:80] + "...#" in warning.message and quoted_name(name, 80) in warning.message


def test_answered_or_unnamed_like_a_confirmation_calls_are_not_warned() -> None:
    answered = both_ways([started(), *call("c1", "confirm_delete"),
                          {"type": "TOOL_CALL_RESULT", "messageId": "m1", "toolCallId": "c1", "content": "ok"},
                          finished()])
    frontend = both_ways([started(), *call("c1", "pick_color"), finished()])
    # A 1.0 producer that names its pending calls hands them over as frontend calls on purpose.
    named = both_ways([started(), *call("c1", "confirm_choice"), finished(type="success", pendingToolCallIds=["c1"])])
    assert answered.warnings == () and frontend.warnings == () and named.warnings == ()
    assert frontend.pending_tool_call_ids == ("c1",) and named.pending_tool_call_ids == ("c1",)


# --------------------------------------------------------------------------------------------------
# the bridge
# --------------------------------------------------------------------------------------------------

def test_the_bridge_reads_a_recorded_langgraph_pause_as_the_interrupt_outcome() -> None:
    state = ThreadState(legacy_interrupts="langgraph")
    result = replay(DATA / "approved-1.sse", state=state)

    (interrupt,) = result.interrupts
    assert result.outcome == "interrupt" and result.bridged == "langgraph" and result.warnings == ()
    assert result.pending_tool_call_ids == () and state.pending_tool_call_ids == ()
    assert state.open_interrupts == result.interrupts and state.interrupted_run_id == result.run_id
    assert state.open_interrupts_via == "langgraph"
    assert interrupt.reason == "tool_approval" and interrupt.message == "Delete /srv/x?"
    assert interrupt.response_schema is not None and interrupt.response_schema["required"] == ["approved"]
    assert interrupt.tool_call_id is not None and state.tool_call(interrupt.tool_call_id) is not None
    assert interrupt.metadata == {"langgraph": {"raw": json.loads(custom_value("approved-1.sse")),
                                                "id": interrupt.id}}


def custom_value(name: str) -> str:
    for line in (DATA / name).read_text(encoding="utf-8").splitlines():
        if '"on_interrupt"' in line:
            value: str = json.loads(line[5:])["value"]
            return value
    raise AssertionError(name)


def test_the_bridge_reads_values_of_every_shape() -> None:
    result = both_ways([
        started(),
        custom("Proceed?", rawEvent={"id": "lg-a"}),  # text the adapter sent unquoted
        custom('{"tool_call_id": "c9", "response_schema": {"type": "boolean"}, "expires_at": "2030-01-01T00:00:00Z", '
               '"reason": 7, "message": ["not", "text"]}', rawEvent={"id": "lg-b"}),
        custom({"message": "an object, not text"}),  # another producer's value, no raw copy
        custom('"quoted"', rawEvent={"id": "lg-a"}),  # the same id again: one question
        finished(),
    ], legacy="langgraph")

    a, b, c = result.interrupts
    assert (a.id, a.message, a.reason, a.response_schema) == ("lg-a", "Proceed?", "langgraph:interrupt", None)
    assert (b.id, b.tool_call_id, b.response_schema, b.expires_at) == ("lg-b", "c9", {"type": "boolean"},
                                                                      "2030-01-01T00:00:00Z")
    assert b.reason == "langgraph:interrupt" and b.message is None  # (wrong types are left out)
    assert (c.id, c.message) == ("r1:on_interrupt:2", "an object, not text")
    assert c.metadata == {"langgraph": {"raw": {"message": "an object, not text"}, "id": None}}


def test_the_run_keeps_a_bounded_number_of_asks() -> None:
    many = [custom(f'{{"message": "q{n}"}}', rawEvent={"id": f"lg-{n}"}) for n in range(MAX_ASKS + 50)]
    result = both_ways([started(), *many, finished()], legacy="langgraph")
    assert len(result.interrupts) == MAX_ASKS
    assert result.state.last_run.legacy_asked == MAX_ASKS + 50
    warned = both_ways([started(), *many, finished()])
    (warning,) = warned.warnings
    assert f"after {MAX_ASKS + 50} CUSTOM" in warning.message


def test_the_bridge_is_named_or_refused() -> None:
    with pytest.raises(ValueError) as refused:
        ThreadState(legacy_interrupts="crewai")
    assert "legacy_interrupts" in str(refused.value)
    from agui_client import AgentClient
    with pytest.raises(ValueError) as refused:
        AgentClient("http://127.0.0.1:9", legacy_interrupts="LangGraph")  # type: ignore[arg-type]
    assert "legacy_interrupts" in str(refused.value)


# --------------------------------------------------------------------------------------------------
# the stored form
# --------------------------------------------------------------------------------------------------

def test_bridged_interrupts_survive_the_stored_form() -> None:
    state = ThreadState(legacy_interrupts="langgraph")
    replay(DATA / "lean-1.sse", state=state)
    stored = json.loads(json.dumps(state.dump()))

    back = ThreadState.load(stored)
    assert stored["openInterruptsVia"] == "langgraph"
    assert back.open_interrupts == state.open_interrupts and back.open_interrupts_via == "langgraph"
    assert back.interrupted_run_id == state.interrupted_run_id
    assert back.last_run is not None and back.last_run.bridged == "langgraph"
    assert state.copy().open_interrupts_via == "langgraph" and state.copy().legacy_interrupts == "langgraph"

    # A thread whose interrupts came as the interrupt outcome stores what it always stored.
    plain = ThreadState()
    replay("".join(f"data: {json.dumps(e)}\n\n" for e in [
        started(), finished(type="interrupt", interrupts=[{"id": "i1", "reason": "x"}])]), state=plain)
    assert "openInterruptsVia" not in plain.dump()


@pytest.mark.parametrize("via", ["crewai", 3])
def test_a_stored_form_naming_an_unknown_channel_is_refused(via: Any) -> None:
    state = ThreadState(legacy_interrupts="langgraph")
    replay(DATA / "lean-1.sse", state=state)
    with pytest.raises(ValueError) as refused:
        ThreadState.load({**state.dump(), "openInterruptsVia": via})
    assert "openInterruptsVia" in str(refused.value)
    with pytest.raises(ValueError) as refused:
        ThreadState.load({**state.dump(), "openInterrupts": [], "openInterruptsVia": "langgraph"})
    assert "openInterruptsVia" in str(refused.value)


# --------------------------------------------------------------------------------------------------
# the channel
# --------------------------------------------------------------------------------------------------

def bridged(*ids: str | None) -> tuple[Interrupt, ...]:
    return tuple(Interrupt(id=i or f"r1:on_interrupt:{n}", reason="x", metadata={"langgraph": {"raw": None, "id": i}})
                 for n, i in enumerate(ids))


def test_several_answers_go_as_a_map_by_langgraph_id() -> None:
    entries = [ResumeEntry(interrupt_id="a", status="resolved", payload={"ok": True}),
               ResumeEntry(interrupt_id="b", status="cancelled")]
    props = forward_resume("langgraph", {"keep": 1}, entries, bridged("a", "b"))
    assert props == {"keep": 1, "command": {"resume": {
        "a": {"ok": True}, "b": {"__agui_cancelled__": True, "interrupt_id": "b"}}}}


def test_several_answers_to_interrupts_without_a_langgraph_id_are_refused() -> None:
    open_ = bridged("a", None)
    entries = [ResumeEntry(interrupt_id="a", status="cancelled"),
               ResumeEntry(interrupt_id="r1:on_interrupt:1", status="cancelled")]
    with pytest.raises(ResumeRefused) as refused:
        forward_resume("langgraph", None, entries, open_)
    assert refused.value.ids == ("r1:on_interrupt:1",)


@pytest.mark.parametrize("props", [[1], {"command": "go"}, {"command": {"resume": None}}])
def test_forwarded_props_the_answer_cannot_join_are_refused(props: Any) -> None:
    with pytest.raises(ResumeRefused) as refused:
        forward_resume("langgraph", props, [ResumeEntry(interrupt_id="a", status="cancelled")], bridged("a"))
    assert refused.value.problems == {"legacy-channel": ("a",)}


def test_a_null_answer_is_refused_and_text_is_sent_as_json_text() -> None:
    with pytest.raises(InvalidResumePayload):
        forward_resume("langgraph", None, [ResumeEntry(interrupt_id="a", status="resolved")], bridged("a"))
    sent = forward_resume("langgraph", None, [ResumeEntry(interrupt_id="a", status="resolved", payload="yes")],
                          bridged("a"))
    assert sent == {"command": {"resume": '"yes"'}} and json.loads(sent["command"]["resume"]) == "yes"
