"""agui_client.testing.probing (probe, aprobe): every check passes on a conforming agent and fails (or
warns) on the ScriptedAgent fault it looks for, both in-process (httpx's ASGI transport) and over loopback HTTP."""

from __future__ import annotations

import json
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

import pytest
from wirekit import request_body

from agui_client.testing import (
    CHECKS,
    Finish,
    Gate,
    ProbeError,
    ProbeReport,
    Respond,
    ScriptedAgent,
    Start,
    Wait,
    probe,
    text_message,
    tool_call,
)
from agui_client.types import (
    CustomEvent,
    Interrupt,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedInterruptOutcome,
    SubagentFinishedEvent,
    SubagentStartedEvent,
)

PROMPT = "Delete the temporary files"

Probe = Callable[..., ProbeReport]


@pytest.fixture(params=["asgi", "http"])
def run_probe(request: pytest.FixtureRequest, served: Callable[[Any], Any]) -> Probe:
    """``run_probe(agent, **options)``: the probe against ``agent``, in-process or over loopback HTTP."""
    def go(agent: Any, **options: Any) -> ProbeReport:
        target = agent if request.param == "asgi" else served(agent).url
        return probe(target, prompt=PROMPT, **options)
    return go


def verdicts(report: ProbeReport) -> dict[str, str]:
    return {c.id: c.verdict for c in report.checks}


def evidence_text(report: ProbeReport, check_id: str) -> str:
    return "\n".join(str(e) for e in report.check(check_id).evidence)


def asking(interrupt: Interrupt) -> Callable[[RunAgentInput], list[Any]]:
    """A two-step script's first step: raise ``interrupt``."""
    return lambda run_input: [Start(), Finish(outcome=RunFinishedInterruptOutcome(interrupts=(interrupt,)))]


# --------------------------------------------------------------------------------------------------
# A conforming producer
# --------------------------------------------------------------------------------------------------


def test_a_conforming_agent_passes_every_check_that_applies(run_probe: Probe) -> None:
    agent = ScriptedAgent.approvals(2)

    report = run_probe(agent, defective=True)

    assert verdicts(report) == {
        "stream-rules": "pass", "pause-as-success": "pass", "interrupt-count": "pass",
        "interrupt-ids-unique": "pass", "response-schema": "pass", "tool-call-id": "pass",
        "subagent-run-id": "n/a", "expires-at": "n/a", "answers-proceed": "pass", "approval-result": "pass",
        "unknown-entry": "pass", "fresh-thread-resume": "pass", "uncovered-resume": "pass",
        "repeated-resume": "pass",
    }
    assert report.exit_status(strict=True) == 0
    report.assert_conformant(strict=True)
    assert [r.name for r in report.runs] == ["ask", "answer", "repeat", "ask-2", "unknown-entry", "fresh-resume",
                                             "ask-3", "uncovered"]
    assert len({r.thread_id for r in report.runs}) == 4  # a fresh thread per plan part


def test_every_check_is_reported_once_in_order_with_its_rule_and_level(run_probe: Probe) -> None:
    report = run_probe(ScriptedAgent.demo())

    assert [(c.id, c.rule, c.level) for c in report.checks] == list(CHECKS)
    assert report.check("expires-at").verdict == "pass"  # the demo's expiresAt is ISO 8601
    assert report.check("tool-call-id").verdict == "pass"


def test_without_defective_the_two_defective_inputs_are_not_sent_and_say_so(run_probe: Probe) -> None:
    agent = ScriptedAgent.approvals(1)

    report = run_probe(agent)

    for check_id in ("uncovered-resume", "repeated-resume"):
        result = report.check(check_id)
        assert result.verdict == "n/a" and "--defective is off by default" in result.reason
    assert agent.request_count == 5
    assert all(r.name not in ("repeat", "uncovered") for r in report.runs)
    # Nothing the probe sent on its own was something the agent had to skip (the one unknown entry aside).
    assert len(agent.warnings) == 2 and all("unknown interrupt 'agui-probe-never-raised-" in w
                                            for w in agent.warnings)


def test_an_agent_that_ends_up_re_interrupting_an_uncovered_interrupt_passes(run_probe: Probe) -> None:
    report = run_probe(ScriptedAgent.approvals(2, on_uncovered="reinterrupt"), defective=True)

    result = report.check("uncovered-resume")
    assert result.verdict == "pass" and result.reason == "interrupted again with the uncovered interrupt"


def test_a_rejected_uncovered_resume_passes_and_shows_the_rejection(run_probe: Probe) -> None:
    report = run_probe(ScriptedAgent.approvals(1), defective=True)

    result = report.check("uncovered-resume")
    assert result.verdict == "pass" and result.reason == "the input was rejected"
    assert "code uncovered_interrupt" in evidence_text(report, "uncovered-resume")


# --------------------------------------------------------------------------------------------------
# Each check, failing
# --------------------------------------------------------------------------------------------------


def test_a_broken_stream_fails_stream_rules_with_run_index_and_rule(run_probe: Probe) -> None:
    agent = ScriptedAgent([[Start(), {"type": "TEXT_MESSAGE_CONTENT", "messageId": "nowhere", "delta": "hi"},
                            Finish()]], cycle=True)

    report = run_probe(agent)

    assert report.check("stream-rules").verdict == "fail"
    first = report.check("stream-rules").evidence[0]
    assert (first.run, first.index) == ("ask", 1) and "TEXT_MESSAGE_CONTENT" in first.detail
    assert report.exit_status() == 1
    with pytest.raises(AssertionError) as raised:
        report.assert_conformant()
    assert "stream-rules [MUST] fail" in str(raised.value)


def test_a_stream_with_a_fault_per_event_keeps_the_first_hundred_errors_and_counts_the_rest(
        run_probe: Probe) -> None:
    faults = [{"type": "TEXT_MESSAGE_CONTENT", "messageId": f"nowhere-{i}", "delta": "x"} for i in range(250)]
    finishes = [Finish() for _ in range(130)]
    agent = ScriptedAgent([[Start(), *faults, *finishes]], cycle=True)

    report = run_probe(agent)

    result = report.check("stream-rules")
    assert result.verdict == "fail"
    ask = [e for e in result.evidence if e.run == "ask"]
    kept = [e for e in ask if e.index is not None]
    assert len(kept) == 100
    assert [e.index for e in kept] == list(range(1, 101))  # the first ones
    notes = [e.detail for e in ask if e.index is None]
    # 250 faulty events and 129 repeated RUN_FINISHED: 379 errors, 100 kept.
    assert "and 279 more protocol error(s), counted, not kept (the first 100 are)" in notes
    assert "and 30 more RUN_FINISHED event(s), counted, not judged (the first 99 and the last are)" in notes
    streams = sum(1 for run in report.runs if run.outcome != "rejected")
    assert result.reason.startswith(f"{379 * streams} protocol error(s) in {streams} response(s);")  # all counted


def test_an_asgi_app_whose_response_grows_past_the_bound_stops_the_probe() -> None:
    sent = []

    async def endless(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        chunk = b'data: {"type": "CUSTOM", "name": "filler", "value": "' + b"x" * 1000 + b'"}\n\n'
        for _ in range(2048):  # about 2 MiB
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            sent.append(len(chunk))
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    with pytest.raises(ProbeError) as refused:
        probe(endless, prompt=PROMPT, max_response_bytes=64 * 1024)
    assert "grew past max_response_bytes (65536 bytes)" in str(refused.value)
    assert sum(sent) <= 64 * 1024  # the app was stopped at the bound, not run to its end


@pytest.mark.parametrize(("fault", "seen"), [("pause-as-custom", "CUSTOM event on_interrupt"),
                                              ("pause-as-tool-call", "(confirm_action) left unanswered")])
def test_a_pause_reported_as_success_warns_naming_what_it_saw(run_probe: Probe, fault: Any, seen: str) -> None:
    report = run_probe(ScriptedAgent.approvals(1, faults=[fault]))

    assert report.check("pause-as-success").verdict == "warn"
    assert seen in evidence_text(report, "pause-as-success")
    # (the fold's LEGACY-* warning says the same: judged here, not again as a stream-rule warning)
    assert report.check("stream-rules").verdict == "pass", evidence_text(report, "stream-rules")
    assert report.check("answers-proceed").verdict == "n/a"  # nothing was raised the 1.0 way
    assert "the prompt raised no interrupt (ask ended success)" in report.check("answers-proceed").reason
    report.assert_conformant()  # a heuristic warns ...
    assert report.exit_status() == 0
    with pytest.raises(AssertionError):
        report.assert_conformant(strict=True)  # ... and fails only when warnings count


def test_an_interrupt_outcome_with_no_interrupts_fails_interrupt_count(run_probe: Probe) -> None:
    def ask(run_input: RunAgentInput) -> list[Any]:
        return [Start(), {"type": "RUN_FINISHED", "threadId": run_input.thread_id, "runId": run_input.run_id,
                          "outcome": {"type": "interrupt", "interrupts": []}}]

    report = run_probe(ScriptedAgent([ask], cycle=True))

    assert report.check("interrupt-count").verdict == "fail"
    assert evidence_text(report, "interrupt-count").startswith("ask #1: an interrupt outcome with no interrupts")
    assert report.exit_status() == 1


def test_a_warning_without_a_protocol_error_warns_stream_rules(run_probe: Probe) -> None:
    def ask(run_input: RunAgentInput) -> list[Any]:
        return [Start(), {"type": "FUTURE_EVENT", "x": 1}, Finish()]

    report = run_probe(ScriptedAgent([ask], cycle=True))

    assert report.check("stream-rules").verdict == "warn"
    assert report.check("stream-rules").reason.startswith("no protocol error, ")
    assert "[UK-02] unknown event type 'FUTURE_EVENT' ignored" in evidence_text(report, "stream-rules")


def test_an_empty_interrupt_list_on_another_outcome_asks_nothing(run_probe: Probe) -> None:
    # A success outcome carrying "interrupts": [] is refused by the schema (stream-rules), but asks
    # nothing: it is no pause reported as success.
    def ask(run_input: RunAgentInput) -> list[Any]:
        return [Start(), {"type": "RUN_FINISHED", "threadId": run_input.thread_id, "runId": run_input.run_id,
                          "outcome": {"type": "success", "interrupts": []}}]

    report = run_probe(ScriptedAgent([ask], cycle=True))

    assert report.check("stream-rules").verdict == "fail"
    assert report.check("pause-as-success").verdict == "pass", evidence_text(report, "pause-as-success")


def test_a_repeated_interrupt_id_fails_interrupt_ids_unique(run_probe: Probe) -> None:
    report = run_probe(ScriptedAgent.approvals(2, faults=["repeat-interrupt-id"]))

    assert report.check("interrupt-ids-unique").verdict == "fail"
    assert "appear more than once" in evidence_text(report, "interrupt-ids-unique")
    assert report.check("stream-rules").verdict == "fail"  # the verifier refuses it too (IR-06)
    assert "[IR-06]" in evidence_text(report, "stream-rules")


def test_a_response_schema_that_is_no_schema_warns(run_probe: Probe) -> None:
    report = run_probe(ScriptedAgent.interrupts(1, response_schema={"type": "nonsense"}))

    assert report.check("response-schema").verdict == "warn"
    assert "interrupt interrupt-1: invalid" in evidence_text(report, "response-schema")
    # No conforming answer can be built for it, so the resume checks say why they did not run.
    assert report.check("answers-proceed").verdict == "n/a"
    assert "UnusableResponseSchema" in report.check("answers-proceed").reason


@pytest.mark.parametrize(("field", "check_id"), [("tool_call_id", "tool-call-id"),
                                                 ("subagent_run_id", "subagent-run-id")])
def test_an_interrupt_naming_what_the_run_never_had_warns(run_probe: Probe, field: str, check_id: str) -> None:
    interrupt = Interrupt(id="q", reason="input", **{field: "ghost"})
    agent = ScriptedAgent([asking(interrupt), [Start(), Finish()]], cycle=True)

    report = run_probe(agent)

    assert report.check(check_id).verdict == "warn"
    assert "interrupt q names" in evidence_text(report, check_id) and "ghost" in evidence_text(report, check_id)
    # Said once: the stream check leaves the same finding (SA-09, IR-07) to the field's own check.
    assert report.check("stream-rules").verdict == "pass"


def test_an_interrupt_naming_a_subagent_of_an_earlier_run_warns(run_probe: Probe) -> None:
    # A subagent id names one invocation: one that ran in the asking run cannot raise the resumed run's interrupt.
    def ask(run_input: RunAgentInput) -> list[Any]:
        return [Start(), SubagentStartedEvent(subagent_run_id="helper", name="helper"),
                SubagentFinishedEvent(subagent_run_id="helper"),
                Finish(outcome=RunFinishedInterruptOutcome(interrupts=(Interrupt(id="q", reason="input"),)))]

    again = RunFinishedInterruptOutcome(interrupts=(Interrupt(id="q2", reason="input", subagent_run_id="helper"),))
    report = run_probe(ScriptedAgent([ask, [Start(), Finish(outcome=again)]], cycle=True))

    assert report.check("subagent-run-id").verdict == "warn"
    assert "interrupt q2 names subagent helper, never started in this run" in evidence_text(report, "subagent-run-id")
    assert report.check("stream-rules").verdict == "pass"


@pytest.mark.parametrize("written", ["20260601T110000Z", "20260601T1100Z", "1780311600"])
def test_an_expires_at_meant_as_a_date_but_read_as_none_warns_naming_the_form_to_write(run_probe: Probe,
                                                                                      written: str) -> None:
    report = run_probe(ScriptedAgent.interrupts(1, expires_at=written))

    assert report.check("expires-at").verdict == "warn"
    assert f"expiresAt {written} is " in evidence_text(report, "expires-at")
    assert "read as no date; write 2026-06-01T11:00:00Z" in evidence_text(report, "expires-at")


def test_an_expires_at_number_is_reported_once_as_the_schema_violation_it_is(run_probe: Probe) -> None:
    def ask(run_input: RunAgentInput) -> list[Any]:
        interrupt = {"id": "q", "reason": "input", "expiresAt": 1780311600}
        return [Start(), {"type": "RUN_FINISHED", "threadId": run_input.thread_id, "runId": run_input.run_id,
                          "outcome": {"type": "interrupt", "interrupts": [interrupt]}}]

    report = run_probe(ScriptedAgent([ask, [Start(), Finish()]], cycle=True))

    assert report.check("stream-rules").verdict == "fail"
    assert "expected a string" in evidence_text(report, "stream-rules")
    assert report.check("expires-at").verdict == "n/a"


def test_an_unreadable_expires_at_warns(run_probe: Probe) -> None:
    report = run_probe(ScriptedAgent.interrupts(1, expires_at="next tuesday"))

    assert report.check("expires-at").verdict == "warn"
    assert "expiresAt next tuesday is not a readable date" in evidence_text(report, "expires-at")


def test_a_resume_that_fails_the_run_fails_answers_proceed(run_probe: Probe) -> None:
    agent = ScriptedAgent([asking(Interrupt(id="q", reason="input")),
                           [Start(), RunErrorEvent(message="cannot resume", code="broken")]], cycle=True)

    report = run_probe(agent)

    assert report.check("answers-proceed").verdict == "fail"
    assert "RUN_ERROR: cannot resume (code broken)" in evidence_text(report, "answers-proceed")


def test_an_answer_run_that_asks_the_same_again_fails_answers_proceed(run_probe: Probe) -> None:
    interrupt = Interrupt(id="q", reason="input")
    report = run_probe(ScriptedAgent([asking(interrupt)], cycle=True))

    assert report.check("answers-proceed").verdict == "fail"
    assert report.check("answers-proceed").reason.startswith("the run stopped again for the interrupts it was "
                                                             "answered for")


def test_a_producer_honouring_only_the_last_entry_warns_approval_result(run_probe: Probe) -> None:
    report = run_probe(ScriptedAgent.approvals(2, faults=["last-entry-only"]))

    assert report.check("approval-result").verdict == "warn"
    found = report.check("approval-result").evidence
    # The answer run dropped the first of two approvals; the unknown-entry run (the made-up entry last)
    # dropped both.
    assert [e.run for e in found] == ["answer", "unknown-entry", "unknown-entry"]
    assert "-call-1 got no result in this run, which ended success" in found[0].detail
    assert found[0].index == report.runs[1].events - 1  # the answer run's RUN_FINISHED


def test_a_producer_failing_unknown_entries_warns_unknown_entry_and_fresh_thread_resume(run_probe: Probe) -> None:
    report = run_probe(ScriptedAgent.approvals(1, faults=["fail-unknown-entry"]))

    assert report.check("unknown-entry").verdict == "warn"
    assert report.check("fresh-thread-resume").verdict == "warn"
    assert "code unknown_interrupt" in evidence_text(report, "unknown-entry")
    assert report.exit_status() == 0 and report.exit_status(strict=True) == 1


@pytest.mark.parametrize("fault", ["succeed-uncovered", "perform-uncovered"])
def test_a_producer_going_past_an_uncovered_interrupt_fails_uncovered_resume(run_probe: Probe, fault: Any) -> None:
    report = run_probe(ScriptedAgent.approvals(1, faults=[fault]), defective=True)

    result = report.check("uncovered-resume")
    assert result.verdict == "fail"
    if fault == "perform-uncovered":
        assert result.reason.startswith("the uncovered action was performed; never act on an absent entry")
        assert "a result for tool call" in evidence_text(report, "uncovered-resume")
    else:
        assert "ended as success with interrupt" in evidence_text(report, "uncovered-resume")
    assert report.exit_status() == 1


def test_a_producer_keeping_nothing_that_drops_a_gated_call_fails_uncovered_resume(run_probe: Probe) -> None:
    # Stateless, it cannot remember the interrupt, but the messages carry the gated call with neither a
    # result nor an entry: it can tell, and finishing as success drops what nobody abandoned.
    report = run_probe(ScriptedAgent.approvals(1, stateless=True), defective=True)

    assert report.check("uncovered-resume").verdict == "fail"


def test_success_past_an_uncovered_interrupt_no_call_names_only_warns(run_probe: Probe) -> None:
    report = run_probe(ScriptedAgent.interrupts(2, faults=["succeed-uncovered"]), defective=True)

    result = report.check("uncovered-resume")
    assert result.verdict == "warn" and "one that keeps nothing cannot tell" in result.reason


def test_a_repeated_resume_that_repeats_the_action_warns(run_probe: Probe) -> None:
    report = run_probe(ScriptedAgent.approvals(1, faults=["repeat-action"]), defective=True)

    assert report.check("repeated-resume").verdict == "warn"
    assert evidence_text(report, "repeated-resume").startswith("repeat #1: a second result for tool call")


# --------------------------------------------------------------------------------------------------
# Producers that conform in unusual ways, and what the messages tell their authors
# --------------------------------------------------------------------------------------------------


def test_a_stateless_producer_whose_gated_call_was_never_streamed_only_warns_uncovered_resume(
        run_probe: Probe) -> None:
    # The toolCallId names a call the ask run never streamed: the messages of the uncovered resume carry
    # nothing to notice, and a producer keeping nothing between runs is under no obligation there.
    gated = Interrupt(id="q", reason="tool_approval", tool_call_id="call-internal")

    def step(run_input: RunAgentInput) -> list[Any]:
        if run_input.resume is None:
            return [Start(), Finish(outcome=RunFinishedInterruptOutcome(interrupts=(gated,)))]
        return [Start(), Finish()]

    report = run_probe(ScriptedAgent([step], cycle=True, stateless=True), defective=True)

    result = report.check("uncovered-resume")
    assert result.verdict == "warn"
    assert "its toolCallId call-internal names no tool call the messages sent carry" in result.reason
    assert report.exit_status() == 0


def test_an_answer_run_asking_something_new_under_a_reused_id_passes_answers_proceed(run_probe: Probe) -> None:
    # Ids are unique within a run: after acting on the answer, a new question may be named "confirm" again.
    def step(run_input: RunAgentInput) -> list[Any]:
        if run_input.resume is None:
            ask = Interrupt(id="confirm", reason="tool_approval", tool_call_id="call-1", message="Delete a?")
            return [Start(), *tool_call("call-1", "delete", {"path": "a"}),
                    Finish(outcome=RunFinishedInterruptOutcome(interrupts=(ask,)))]
        if any(e.interrupt_id == "confirm" for e in run_input.resume) and len(run_input.messages) < 4:
            then = Interrupt(id="confirm", reason="tool_approval", tool_call_id="call-2", message="Delete b too?")
            return [Start(), {"type": "TOOL_CALL_RESULT", "messageId": "r-1", "toolCallId": "call-1",
                              "content": "deleted a"}, *tool_call("call-2", "delete", {"path": "b"}),
                    Finish(outcome=RunFinishedInterruptOutcome(interrupts=(then,)))]
        return [Start(), *text_message("m-done", "done"), Finish()]

    report = run_probe(ScriptedAgent([step], cycle=True, stateless=True))

    assert report.check("answers-proceed").verdict == "pass"
    assert report.check("answers-proceed").reason == "the resume ended interrupt"
    assert report.check("approval-result").verdict == "pass"


def test_an_agent_running_under_a_thread_id_of_its_own_is_told_why_its_resume_was_lost(run_probe: Probe) -> None:
    # It keys its checkpoint by the id it minted; the resume carries the request's threadId.
    asked: dict[str, int] = {}

    def step(run_input: RunAgentInput) -> list[Any]:
        asked[run_input.thread_id] = asked.get(run_input.thread_id, 0) + 1
        mine = f"server-{run_input.thread_id[-6:]}-{asked[run_input.thread_id]}"
        return [{"type": "RUN_STARTED", "threadId": mine, "runId": run_input.run_id},
                {"type": "RUN_FINISHED", "threadId": mine, "runId": run_input.run_id,
                 "outcome": {"type": "interrupt", "interrupts": [{"id": "q", "reason": "input"}]}}]

    report = run_probe(ScriptedAgent([step], cycle=True, stateless=True))

    result = report.check("answers-proceed")
    assert result.verdict == "fail"
    hint = result.evidence[-1]
    assert (hint.run, hint.index) == ("ask", 0)
    assert "the agent started this run under another threadId than the request's" in hint.detail
    assert "key the interrupted run's checkpoint by the threadId of the input" in hint.detail


def test_an_agent_refusing_the_first_request_stops_the_probe_instead_of_passing(run_probe: Probe) -> None:
    agent = ScriptedAgent([Respond(status=401, body={"error": "unauthorized"})], cycle=True)

    with pytest.raises(ProbeError) as raised:
        run_probe(agent)

    assert "the target refused the plan's first request, the plain prompt (HTTP 401" in str(raised.value)
    assert "the headers a request needs (-H)" in str(raised.value)
    assert agent.request_count == 1


def test_a_prompt_whose_run_failed_says_so_rather_than_asking_for_another_prompt(run_probe: Probe) -> None:
    agent = ScriptedAgent([[RunErrorEvent(message="model overloaded", code="overloaded")]], cycle=True)

    report = run_probe(agent)

    reason = report.check("answers-proceed").reason
    assert report.check("answers-proceed").verdict == "n/a"
    assert reason.startswith("the prompt raised no interrupt: the ask run did not finish (RUN_ERROR: model "
                             "overloaded (code overloaded)); make it finish")


def test_a_custom_event_whose_name_only_holds_a_question_word_is_not_a_question(run_probe: Probe) -> None:
    progress = CustomEvent(name="task_progress", value={"done": 1})
    asking_event = CustomEvent(name="askHuman", value={"question": "sure?"})
    agent = ScriptedAgent([[Start(), progress, asking_event, Finish()]], cycle=True)

    report = run_probe(agent)

    evidence = evidence_text(report, "pause-as-success")
    assert report.check("pause-as-success").verdict == "warn"
    assert "CUSTOM event askHuman" in evidence and "task_progress" not in evidence


@pytest.mark.parametrize("outcome", ["success", "paused"])
def test_an_outcome_carrying_interrupts_that_is_not_the_interrupt_outcome_warns_pause_as_success(
        run_probe: Probe, outcome: str) -> None:
    def step(run_input: RunAgentInput) -> list[Any]:
        return [Start(), {"type": "RUN_FINISHED", "threadId": run_input.thread_id, "runId": run_input.run_id,
                          "outcome": {"type": outcome, "interrupts": [{"id": "q", "reason": "input"}]}}]

    report = run_probe(ScriptedAgent([step], cycle=True))

    result = report.check("pause-as-success")
    assert result.verdict == "warn"
    assert result.reason.endswith("end a run that stops to ask with the interrupt outcome carrying what it asks")
    assert result.evidence[0].run == "ask" and result.evidence[0].index == 1
    assert result.evidence[0].detail == f"a {outcome} outcome carrying 1 interrupt(s)"


def test_an_uncovered_resume_failing_mid_run_passes_without_being_called_a_rejection(run_probe: Probe) -> None:
    def step(run_input: RunAgentInput) -> list[Any]:
        if run_input.resume is None:
            return asking(Interrupt(id="q", reason="input"))(run_input)
        return [Start(), RunErrorEvent(message="interrupt q is still open", code="uncovered")]

    report = run_probe(ScriptedAgent([step], cycle=True, stateless=True), defective=True)

    result = report.check("uncovered-resume")
    assert result.verdict == "pass"
    assert result.reason == "the run did not end as success (RUN_ERROR: interrupt q is still open (code uncovered))"


def _ghost(field: str) -> ScriptedAgent:
    return ScriptedAgent([asking(Interrupt(id="q", reason="input", **{field: "ghost"})), [Start(), Finish()]],
                         cycle=True)


@pytest.mark.parametrize(("check_id", "agent", "defective", "fix"), [
    ("approval-result", lambda: ScriptedAgent.approvals(2, faults=["last-entry-only"]), False,
     "in the resuming run, perform each approved call and send its result"),
    ("unknown-entry", lambda: ScriptedAgent.approvals(1, faults=["fail-unknown-entry"]), False,
     "skip such an entry (with a warning of your own) and run on"),
    ("fresh-thread-resume", lambda: ScriptedAgent.approvals(1, faults=["fail-unknown-entry"]), False,
     "its entries answer nothing: skip them and run the input"),
    ("repeated-resume", lambda: ScriptedAgent.approvals(1, faults=["repeat-action"]), True,
     "skip entries naming interrupts already answered"),
    ("answers-proceed", lambda: ScriptedAgent([asking(Interrupt(id="q", reason="input")),
                                               [Start(), RunErrorEvent(message="no")]], cycle=True), False,
     "take the entries as the answers the run stopped for and run on"),
    ("tool-call-id", lambda: _ghost("tool_call_id"), False,
     "stream the call (TOOL_CALL_START) before the interrupt that asks about it"),
    ("subagent-run-id", lambda: _ghost("subagent_run_id"), False,
     "start it (SUBAGENT_STARTED) in the run that raises its interrupt"),
    ("expires-at", lambda: ScriptedAgent.interrupts(1, expires_at="next tuesday"), False,
     "write an ISO 8601 extended-form date-time with a zone (2026-06-01T11:00:00Z)"),
    ("response-schema", lambda: ScriptedAgent.interrupts(1, response_schema={"type": "nonsense"}), False,
     "send a self-contained JSON Schema an answer can be checked against"),
    ("stream-rules", lambda: ScriptedAgent.approvals(2, faults=["repeat-interrupt-id"]), False,
     "each line names the rule's code; docs/codes.md says what to do about each"),
    ("interrupt-ids-unique", lambda: ScriptedAgent.approvals(2, faults=["repeat-interrupt-id"]), False,
     "give each interrupt of a run its own id"),
    ("interrupt-count", lambda: ScriptedAgent([[Start(), Finish(outcome=RunFinishedInterruptOutcome(interrupts=()))]],
                                              cycle=True), False,
     "carry at least one interrupt, or end the run as success"),
    ("uncovered-resume", lambda: ScriptedAgent.interrupts(2, faults=["succeed-uncovered"]), True,
     "if yours keeps it, keep the interrupt open"),
])
def test_a_check_that_does_not_pass_says_what_to_fix(check_id: str, agent: Callable[[], ScriptedAgent],
                                                     defective: bool, fix: str) -> None:
    result = probe(agent(), prompt=PROMPT, defective=defective).check(check_id)

    assert result.verdict in ("fail", "warn")
    assert result.reason.endswith("; " + fix)


def only_uuid_threads(agent: Any) -> Any:
    """``agent`` behind a check that answers 422 to a request whose threadId is not a bare UUID."""
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await agent(scope, receive, send)
            return
        body = await request_body(receive)
        try:
            uuid.UUID(json.loads(body)["threadId"])
        except ValueError:
            await send({"type": "http.response.start", "status": 422,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": b'{"detail": "threadId must be a UUID"}'})
            return
        replayed = False

        async def again() -> Any:  # the body once, then what the server says next (a disconnect)
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await agent(scope, again, send)
    return app


def test_an_agent_accepting_only_its_own_thread_id_form_is_probed_with_thread_ids(run_probe: Probe) -> None:
    with pytest.raises(ProbeError) as refused:
        run_probe(only_uuid_threads(ScriptedAgent.approvals(1)))
    assert "HTTP 422" in str(refused.value) and "(thread_ids= or --thread-prefix choose others)" in str(refused.value)

    report = run_probe(only_uuid_threads(ScriptedAgent.approvals(1)), thread_ids=lambda: str(uuid.uuid4()),
                       defective=True)

    assert report.check("answers-proceed").verdict == "pass"
    assert report.check("uncovered-resume").verdict == "pass"
    assert all(str(uuid.UUID(run.thread_id)) == run.thread_id for run in report.runs)
    assert len({run.thread_id for run in report.runs}) == 4  # still a fresh thread per plan part


# --------------------------------------------------------------------------------------------------
# Answers, reports, failures to run
# --------------------------------------------------------------------------------------------------


def test_answers_by_id_or_for_all_are_what_the_resume_carries(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.interrupts(2))

    report = probe(endpoint.url, prompt=PROMPT, answers={"interrupt-1": {"answer": "one"}, "*": {"answer": "all"}})

    assert report.check("answers-proceed").verdict == "pass"
    answer = endpoint.received[1].body
    assert answer["resume"] == [
        {"interruptId": "interrupt-1", "status": "resolved", "payload": {"answer": "one"}},
        {"interruptId": "interrupt-2", "status": "resolved", "payload": {"answer": "all"}},
    ]
    # A resume carries the thread as it stands: the prompt, then what the interrupted run added.
    assert answer["messages"][0] == endpoint.received[0].body["messages"][0]
    assert [m["role"] for m in answer["messages"]] == ["user", "assistant"]


def test_a_declined_approval_is_not_expected_to_produce_a_result() -> None:
    report = probe(ScriptedAgent.approvals(1), prompt=PROMPT, answers={"*": {"approved": False}})

    assert report.check("approval-result").verdict == "n/a"


def test_an_answer_the_schema_refuses_is_a_usage_error_before_the_resume() -> None:
    agent = ScriptedAgent.approvals(1)

    with pytest.raises(ProbeError) as raised:
        probe(agent, prompt=PROMPT, answers={"*": {"approved": "yes"}})

    assert raised.value.usage
    assert agent.request_count == 1  # the ask run only: nothing refused was sent


def test_an_unreachable_target_raises_probe_error() -> None:
    with pytest.raises(ProbeError) as raised:
        probe("http://127.0.0.1:9/", prompt=PROMPT)
    assert "could not be reached" in str(raised.value)


def test_a_secret_header_the_agent_echoes_never_reaches_the_report() -> None:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        token = dict(scope["headers"]).get(b"authorization", b"").decode()
        body = json.dumps({"type": "RUN_ERROR", "message": f"refused {token}", "code": "auth"})
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": f"data: {body}\n\n".encode()})

    report = probe(app, prompt=PROMPT, headers={"Authorization": "Bearer s3cret-value"})

    dumped = json.dumps(report.to_json()) + report.to_junit()
    assert "s3cret-value" not in dumped
    assert "refused" in dumped  # the message itself is kept, the credential taken out


def test_an_app_that_never_finishes_its_response_is_cut_at_the_run_timeout(run_probe: Probe) -> None:
    never = Gate()  # nobody opens it
    agent = ScriptedAgent([[Start(), Wait(never, timeout=60)]], cycle=True)

    report = run_probe(agent, run_timeout=0.5)

    assert [(r.name, r.outcome, r.detail) for r in report.runs] == [
        ("ask", "rejected", "no complete response within 0.5 s"),
        ("ask-2", "rejected", "no complete response within 0.5 s"),
        ("fresh-resume", "rejected", "no complete response within 0.5 s")]
    assert report.check("fresh-thread-resume").verdict == "warn"


def test_an_unknown_fault_is_refused_naming_the_faults() -> None:
    with pytest.raises(ValueError) as raised:
        ScriptedAgent.approvals(1, faults=["drop-everything"])  # type: ignore[list-item]
    assert "drop-everything" in str(raised.value) and "last-entry-only" in str(raised.value)


def test_json_and_junit_carry_every_check_and_verdict() -> None:
    report = probe(ScriptedAgent.approvals(1, faults=["succeed-uncovered"]), prompt=PROMPT, defective=True)

    data = json.loads(json.dumps(report.to_json()))
    assert [c["id"] for c in data["checks"]] == [c[0] for c in CHECKS]
    assert data["failures"] == 1 and data["defective"] is True
    suite = ET.fromstring(report.to_junit())
    assert suite.get("tests") == str(len(CHECKS)) and suite.get("failures") == "1"
    failed = [case.get("name") for case in suite if case.find("failure") is not None]
    assert failed == ["uncovered-resume [MUST]"]
    skipped = {case.get("name") for case in suite if case.find("skipped") is not None}
    assert skipped == {"subagent-run-id [SHOULD]", "expires-at [heuristic]"}


def test_the_json_keys_are_the_ones_docs_probe_md_documents_for_ci() -> None:
    # CI scripts read these keys: a key added, renamed or dropped must change the documented table too.
    import re
    from pathlib import Path

    report = probe(ScriptedAgent.approvals(1, faults=["last-entry-only"]), prompt=PROMPT)
    data = json.loads(json.dumps(report.to_json()))
    section = (Path(__file__).resolve().parent.parent / "docs" / "probe.md").read_text(encoding="utf-8")
    section = section.split("## The report for CI: JSON and JUnit", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`([a-z_]+)(?:\[\])?`", section))

    warned = next(c for c in data["checks"] if c["id"] == "approval-result")
    keys = {*data, *data["runs"][0], *data["checks"][0], *warned["evidence"][0]}
    assert keys == {"target", "prompt", "defective", "failures", "warnings", "runs", "checks", "name", "thread_id",
                    "run_id", "sent", "outcome", "detail", "events", "interrupts", "id", "rule", "level", "verdict",
                    "reason", "evidence", "run", "index"}
    assert keys <= documented, sorted(keys - documented)


def test_junit_strict_turns_warnings_into_failures_and_keeps_xml_valid_with_control_characters() -> None:
    report = probe(ScriptedAgent.interrupts(1, expires_at="soon\x1b[31m\x07"), prompt=PROMPT)

    suite = ET.fromstring(report.to_junit(strict=True))
    failed = [case.get("name") for case in suite if case.find("failure") is not None]
    assert failed == ["expires-at [heuristic]"]
    assert "\x1b" not in report.to_junit(strict=True)


def test_probe_refuses_to_run_inside_an_event_loop_and_points_at_aprobe() -> None:
    import asyncio

    from agui_client.testing import aprobe

    async def inside() -> ProbeReport:
        with pytest.raises(RuntimeError) as raised:
            probe(ScriptedAgent.approvals(1), prompt=PROMPT)
        assert "await aprobe" in str(raised.value)
        return await aprobe(ScriptedAgent.approvals(1), prompt=PROMPT)

    report = asyncio.run(inside())
    assert report.check("answers-proceed").verdict == "pass"


def test_probe_and_aprobe_take_the_same_parameters() -> None:
    import inspect

    from agui_client.testing import aprobe

    assert inspect.signature(probe).parameters.keys() == inspect.signature(aprobe).parameters.keys()
    assert [p.default for p in inspect.signature(probe).parameters.values()] == [
        p.default for p in inspect.signature(aprobe).parameters.values()]


def test_the_probe_module_and_the_probe_function_are_both_reachable() -> None:
    import importlib
    import types

    import agui_client.testing as testing

    module = importlib.import_module("agui_client.testing.probing")
    assert isinstance(module, types.ModuleType)
    assert module.probe is probe is testing.probe and callable(testing.probe)
    assert module.DEFAULT_MAX_RESPONSE_BYTES == 64 * 1024 * 1024
