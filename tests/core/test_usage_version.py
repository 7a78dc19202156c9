"""Token usage and the declared protocol version (bad-inputs section P) on every way a run is read.

A usage fault costs only the usage, never the run's outcome, result, pending tool calls, interrupts or
failure (B282/B283/B285, a deliberate deviation from the reference); a part exceeding its total, and a
late RUN_ERROR's own usage, are warned about and never added to a total (B287, B290); a declared
protocol version that is newer or uninterpretable is warned about once (PV-03), an older or
absent one read quietly (PV-04/B294).
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from wirekit import sse

from agui_client import RunResult, RunSession, ThreadState, replay
from agui_client.types import events as ev
from agui_client.types import run as rn
from agui_client.wire import codec, jsonio, values
from agui_client.wire.codec import camel, decode_event

START = {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}
CALL = [{"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "confirm"},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"}]
SNAPSHOT = {"type": "STATE_SNAPSHOT", "snapshot": {"k": 1}}
INTERRUPT = {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approval"}]}
GOOD = {"provider": "openai", "model": "m", "inputTokens": 5}

Events = list[dict[str, Any]]


def _finish(**fields: Any) -> dict[str, Any]:
    return {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1", **fields}


def _typed_usage(usage: Any) -> Any:
    """Usage as Python code would build it: ``TokenUsage`` objects holding whatever the wire held, unchecked."""
    if type(usage) is not list:
        return usage
    names = {camel(a.name): a.name for a in attrs.fields(rn.TokenUsage)}
    return tuple(rn.TokenUsage(**{names[k]: v for k, v in entry.items()}) if type(entry) is dict else entry
                 for entry in usage)


def _typed(event: dict[str, Any]) -> Any:
    """The event built in Python: decoded without its usage, then given the usage unchecked."""
    if "usage" not in event:
        return decode_event(event)
    rest = {k: v for k, v in event.items() if k != "usage"}
    return attrs.evolve(decode_event(rest), usage=_typed_usage(event["usage"]))


def _session(events: Events) -> RunResult:
    session = RunSession(events=True)  # what Thread.stream drives
    for event in events:
        session.feed_payload(json.dumps(event).encode())
    return session.end()


PATHS = {
    "sse": lambda events: replay(sse(*events)),
    "jsonl": lambda events: replay("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events)),
    "dicts": lambda events: replay(events),
    "typed": lambda events: replay([_typed(e) for e in events]),
    "session": _session,
    "session-stdlib": _session,  # with the standard library's parser (no orjson)
}


@pytest.fixture(params=sorted(PATHS))
def fold(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Reads a run's events one of the ways a run is read, returning the ``RunResult``."""
    if request.param == "session-stdlib":
        monkeypatch.setattr(jsonio, "_orjson", None)
        monkeypatch.setattr(values, "ORJSON", None)  # (the copies and surrogate check use it too)
    return PATHS[request.param]


def _warnings(result: RunResult) -> list[tuple[str, int | None, str | None, str | None, str | None]]:
    return [(w.code, w.index, w.event_type, w.pointer, w.run_id) for w in result.warnings]


# --------------------------------------------------------------------------------------------------
# B282 / B283 / B285: a bad usage costs only the usage
# --------------------------------------------------------------------------------------------------

BAD_USAGE = [
    pytest.param([{"inputTokens": -1}], [], "TU-04", "/usage/0/inputTokens", id="B282-negative"),
    pytest.param([GOOD, {"outputTokens": -2}], [GOOD], "TU-04", "/usage/1/outputTokens", id="B282-rest-kept"),
    pytest.param([{"inputTokens": 2**53 + 1}], [], "TU-04", "/usage/0/inputTokens", id="B283-unsafe-integer"),
    pytest.param({}, None, "TU-01", "/usage", id="B285-object"),
    pytest.param([{"inputTokens": "5"}, GOOD], [GOOD], "TU-04", "/usage/0/inputTokens", id="string-count"),
]


@pytest.mark.parametrize(("usage", "kept", "code", "pointer"), BAD_USAGE)
def test_a_bad_usage_keeps_the_outcome_and_the_interrupts(fold: Any, usage: Any, kept: Any, code: str,
                                                          pointer: str) -> None:
    result = fold([START, SNAPSHOT, _finish(outcome=INTERRUPT, usage=usage)])
    assert result.outcome == "interrupt"
    assert [i.id for i in result.interrupts] == [i.id for i in result.state.open_interrupts] == ["i1"]
    assert result.usage == (codec.decode(kept, tuple[rn.TokenUsage, ...]) if kept else ())
    assert _warnings(result) == [(code, 2, "RUN_FINISHED", pointer, "r1")]


@pytest.mark.parametrize(("usage", "kept", "code", "pointer"), BAD_USAGE)
def test_a_bad_usage_keeps_the_result_and_the_pending_tool_calls(fold: Any, usage: Any, kept: Any, code: str,
                                                                 pointer: str) -> None:
    finish = _finish(result={"answer": 42}, outcome={"type": "success", "pendingToolCallIds": ["c1"]}, usage=usage)
    result = fold([START, *CALL, finish])
    assert (result.outcome, result.result, result.pending_tool_call_ids) == ("success", {"answer": 42}, ("c1",))
    assert _warnings(result) == [(code, 3, "RUN_FINISHED", pointer, "r1")]


def test_a_bad_usage_on_run_error_keeps_the_failure(fold: Any) -> None:
    result = fold([START, {"type": "RUN_ERROR", "message": "overloaded", "code": "503",
                           "usage": [{"inputTokens": -1}, GOOD]}])
    assert result.outcome == "error"
    assert result.error is not None and (result.error.message, result.error.code) == ("overloaded", "503")
    assert result.usage == result.error.usage == (rn.TokenUsage(provider="openai", model="m", input_tokens=5),)
    assert _warnings(result) == [("TU-04", 1, "RUN_ERROR", "/usage/0/inputTokens", "r1")]


def test_a_usage_that_is_not_a_list_on_run_error_keeps_the_failure(fold: Any) -> None:
    result = fold([START, {"type": "RUN_ERROR", "message": "overloaded", "usage": {"inputTokens": 1}}])
    assert result.error is not None and result.error.message == "overloaded"
    assert result.usage == ()
    assert _warnings(result) == [("TU-01", 1, "RUN_ERROR", "/usage", "r1")]


def test_a_good_usage_is_read_quietly(fold: Any) -> None:
    result = fold([START, _finish(usage=[GOOD, {"provider": "openai"}])])
    assert result.usage == (rn.TokenUsage(provider="openai", model="m", input_tokens=5),
                            rn.TokenUsage(provider="openai"))
    assert result.warnings == ()


# --------------------------------------------------------------------------------------------------
# B287: parts larger than their totals
# --------------------------------------------------------------------------------------------------


def test_a_part_equal_to_its_total_is_quiet_and_one_token_more_is_warned(fold: Any) -> None:
    # (the boundary: every output token may be a reasoning token, one more cannot be)
    equal = fold([START, _finish(usage=[{"outputTokens": 5, "reasoningTokens": 5}])])
    over = fold([START, _finish(usage=[{"outputTokens": 5, "reasoningTokens": 6}])])

    assert _warnings(equal) == []
    assert _warnings(over) == [("TU-02", 1, "RUN_FINISHED", "/usage/0/reasoningTokens", "r1")]


def test_parts_exceeding_their_totals_are_warned_about_and_never_added_to_the_totals(fold: Any) -> None:
    odd = {"inputTokens": 5, "cachedInputTokens": 9, "outputTokens": 5, "reasoningTokens": 9, "totalTokens": 10}
    result = fold([START, _finish(usage=[{"inputTokens": 1, "outputTokens": 1}, odd])])
    assert _warnings(result) == [("TU-02", 1, "RUN_FINISHED", "/usage/1/reasoningTokens", "r1"),
                                 ("TU-02", 1, "RUN_FINISHED", "/usage/1/cachedInputTokens", "r1")]
    total = result.total_usage
    assert (total.input_tokens, total.output_tokens, total.total_tokens) == (6, 6, 10)
    assert (total.reasoning_tokens, total.cached_input_tokens) == (9, 9)  # parts summed as parts, kept as reported
    assert result.state.total_usage == total


def test_parts_within_their_totals_are_quiet(fold: Any) -> None:
    usage = [{"inputTokens": 9, "cachedInputTokens": 5, "cacheWriteInputTokens": 4, "outputTokens": 5,
              "reasoningTokens": 5}]
    assert fold([START, _finish(usage=usage)]).warnings == ()


# --------------------------------------------------------------------------------------------------
# TU-03: totalTokens is the sum of the input and output totals
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["RUN_FINISHED", "RUN_ERROR"])
def test_a_total_other_than_input_plus_output_is_warned_about_and_all_three_kept_as_given(fold: Any,
                                                                                          kind: str) -> None:
    odd = {"provider": "b", "inputTokens": 5, "outputTokens": 7, "totalTokens": 20}
    end = _finish() if kind == "RUN_FINISHED" else {"type": "RUN_ERROR", "message": "overloaded"}
    result = fold([START, {**end, "usage": [{"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, odd]}])
    assert _warnings(result) == [("TU-03", 1, kind, "/usage/1/totalTokens", "r1")]
    assert result.usage[1] == rn.TokenUsage(provider="b", input_tokens=5, output_tokens=7, total_tokens=20)
    total = result.total_usage  # each total summed as reported, never one made from the others
    assert (total.input_tokens, total.output_tokens, total.total_tokens) == (6, 8, 22)


def test_a_total_smaller_than_input_plus_output_is_warned_about_too(fold: Any) -> None:
    # (a total that leaves tokens out is as wrong as one that adds some)
    result = fold([START, _finish(usage=[{"inputTokens": 5, "outputTokens": 7, "totalTokens": 11}])])

    assert _warnings(result) == [("TU-03", 1, "RUN_FINISHED", "/usage/0/totalTokens", "r1")]
    assert result.usage[0].total_tokens == 11


def test_a_total_that_is_the_sum_or_that_cannot_be_checked_is_quiet(fold: Any) -> None:
    usage = [{"inputTokens": 5, "outputTokens": 7, "totalTokens": 12}, {"inputTokens": 5, "totalTokens": 9},
             {"totalTokens": 3}]
    result = fold([START, _finish(usage=usage)])
    assert result.warnings == ()
    assert result.total_usage.total_tokens == 24


# --------------------------------------------------------------------------------------------------
# B290: usage on RUN_FINISHED and again on the late RUN_ERROR
# --------------------------------------------------------------------------------------------------

LATE = {"type": "RUN_ERROR", "message": "late", "usage": [{"provider": "a", "inputTokens": 7}]}


def test_a_late_errors_usage_is_kept_apart_with_a_warning_and_never_added(fold: Any) -> None:
    result = fold([START, _finish(usage=[{"provider": "a", "inputTokens": 10}]), LATE])
    finished = (rn.TokenUsage(provider="a", input_tokens=10),)
    assert result.outcome == "success"
    assert result.usage == finished
    assert result.late_error is not None and result.late_error.late
    assert result.late_error.usage == (rn.TokenUsage(provider="a", input_tokens=7),)
    assert result.total_usage.input_tokens == result.state.total_usage.input_tokens == 10
    assert dict(result.state.usage_by_run) == {"r1": finished}
    assert _warnings(result) == [("TU-07", 2, "RUN_ERROR", "/usage", "r1")]


def test_a_late_error_without_usage_is_not_warned_about(fold: Any) -> None:
    result = fold([START, _finish(usage=[{"inputTokens": 10}]), {"type": "RUN_ERROR", "message": "late"}])
    assert result.late_error is not None and result.late_error.usage == ()
    assert result.warnings == ()


def test_a_thread_with_a_failed_subagent_is_stored_as_before() -> None:
    """``RunErrorInfo`` now carries usage; a subagent's error has none, and its stored form is unchanged."""
    thread = ThreadState()
    replay([START, {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "helper"},
            {"type": "SUBAGENT_ERROR", "subagentRunId": "s1", "message": "boom"}, _finish()], state=thread)
    stored = thread.dump()
    assert stored["subagents"]["s1"]["error"] == {"message": "boom", "code": None, "late": False}
    assert ThreadState.load(stored).subagents == thread.subagents


# --------------------------------------------------------------------------------------------------
# PV-03 / B293: the declared protocol version
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("declared", ["1", "1.0.0", "v1", "1.x", "", " 1.0", "01.0", "1.0\n", "\u0661.\u0660",
                                      "0.01", "0.\u0669", "2.0", "1.1", "10.0", "1.10",
                                      pytest.param("9" * 5000 + ".0", id="5000-digit-major")])
def test_a_newer_or_uninterpretable_protocol_version_is_read_with_one_warning(fold: Any, declared: str) -> None:
    result = fold([{**START, "protocolVersion": declared}, _finish()])
    assert result.outcome == "success"
    assert _warnings(result) == [("PV-03", 0, "RUN_STARTED", "/protocolVersion", "r1")]


@pytest.mark.parametrize("declared", [None, "1.0", "0.9", "0.10", "0.0",
                                      pytest.param("0." + "9" * 5000, id="5000-digit-minor")])
def test_an_older_or_absent_protocol_version_is_read_quietly(fold: Any, declared: str | None) -> None:
    started = START if declared is None else {**START, "protocolVersion": declared}
    result = fold([started, _finish()])
    assert result.outcome == "success"
    assert result.warnings == ()


def test_versions_compare_as_numbers_whatever_their_length() -> None:
    """Against any version this client may speak later ("1.2"): 1.10 is newer, 1.1 older."""
    from agui_client.core.verify import _version_key

    assert _version_key("1", "10") > _version_key("1", "2") > _version_key("1", "1")
    assert _version_key("10", "0") > _version_key("9", "99")


def test_each_run_of_a_recording_is_judged_on_its_own_declaration() -> None:
    second = {"type": "RUN_STARTED", "threadId": "t1", "runId": "r2", "protocolVersion": "2.0"}
    result = replay([{**START, "protocolVersion": "1.0"}, _finish(), second,
                     {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r2"}])
    assert _warnings(result) == [("PV-03", 2, "RUN_STARTED", "/protocolVersion", "r2")]


def test_a_typed_run_finished_fed_to_a_session_has_its_usage_checked() -> None:
    """An event built in Python never met the decoder: the session checks its usage as the decoder would."""
    session = RunSession(events=True)
    session.feed_event(ev.RunStartedEvent(thread_id="t1", run_id="r1"))
    session.feed_event(ev.RunFinishedEvent(thread_id="t1", run_id="r1", usage=(rn.TokenUsage(input_tokens=-1),)))
    result = session.end()
    assert result.usage == ()
    assert _warnings(result) == [("TU-04", 1, "RUN_FINISHED", "/usage/0/inputTokens", "r1")]
