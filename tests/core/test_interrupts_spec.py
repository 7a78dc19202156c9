"""One test per MUST / SHOULD of the AG-UI 1.0 interrupts page, each quoting the sentence it checks.

Sentences addressed to producers are tested from the consumer's side: what this client does when a
producer breaks them, or how the client keeps a producer from having to.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

import pytest

from agui_client.core.expiry import is_expired
from agui_client.core.interrupts import ResumeBuilder, check_resume
from agui_client.errors import (
    DecodeError,
    ExpiredInterruptAnswered,
    NothingToResume,
    ResumeRefused,
    UncoveredInterrupts,
    UnknownInterrupt,
)
from agui_client.types.events import RunFinishedEvent
from agui_client.types.run import (
    Interrupt,
    ResumeEntry,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
)
from agui_client.wire.codec import decode_event
from agui_client.wire.sink import collect_warnings

__all__: list[str] = []

NOW = datetime(2026, 11, 30, tzinfo=timezone.utc)


def ask(id: str, expires_at: str | None = None) -> Interrupt:
    return Interrupt(id=id, reason="approval", expires_at=expires_at)


def resolved(id: str) -> ResumeEntry:
    return ResumeEntry(interrupt_id=id, status="resolved", payload={"approved": True})


def cancelled(id: str) -> ResumeEntry:
    return ResumeEntry(interrupt_id=id, status="cancelled")


def send_resume(open_interrupts: Sequence[Interrupt], entries: Sequence[ResumeEntry],
                transport: Callable[[Sequence[ResumeEntry]], None]) -> None:
    """The shape of every send path: the egress check, then the bytes."""
    check_resume(open_interrupts, entries, now=NOW)
    transport(entries)


def finished(outcome: dict[str, Any]) -> dict[str, Any]:
    return {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1", "outcome": outcome}


# --------------------------------------------------------------------------------------------------
# Interrupting
# --------------------------------------------------------------------------------------------------


def test_a_success_outcome_carrying_interrupts_is_never_read_as_success() -> None:
    """"A producer MUST NOT report an interrupted run as success: the interrupt outcome is the only
    conforming way to end a run that stopped to ask — where the producer names what it is waiting for
    and resume entries answer it."

    A producer that breaks this by putting interrupts on a success outcome gets a DecodeError, not a
    success with its interrupts silently dropped.
    """
    with pytest.raises(DecodeError) as info:
        decode_event(finished({"type": "success", "interrupts": [{"id": "i1", "reason": "approval"}]}))
    assert info.value.pointer == "/outcome/interrupts"


def test_an_interrupt_outcome_with_nothing_to_answer_is_rejected() -> None:
    """"A run that needs outside input ends with RUN_FINISHED whose outcome is the interrupt outcome,
    carrying one or more Interrupt objects — at least one, because an interrupt outcome with nothing
    to answer would leave a consumer with nothing to do."
    """
    with pytest.raises(DecodeError) as info:
        decode_event(finished({"type": "interrupt", "interrupts": []}))
    assert info.value.pointer == "/outcome/interrupts"
    event = decode_event(finished({"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approval"}]}))
    assert isinstance(event, RunFinishedEvent)
    assert event.outcome == RunFinishedInterruptOutcome(interrupts=(ask("i1"),))


def test_a_frontend_tool_stop_is_a_success_naming_pending_calls_not_an_interrupt() -> None:
    """"A producer MUST NOT report an interrupted run as success […] A run that stopped by calling a
    frontend tool is the other, ordinary path: it finishes as success, naming the unanswered calls in
    the success outcome’s pendingToolCallIds, and the answer rides the next input’s messages."

    The pending call ids are not interrupts: using one as an interruptId is refused (B277).
    """
    event = decode_event(finished({"type": "success", "pendingToolCallIds": ["c1"]}))
    assert isinstance(event, RunFinishedEvent)
    assert event.outcome == RunFinishedSuccessOutcome(pending_tool_call_ids=("c1",))
    with pytest.raises(UnknownInterrupt) as info:
        check_resume([ask("i1")], [resolved("i1"), resolved("c1")], now=NOW)
    assert info.value.ids == ("c1",)


def test_a_resume_entry_answers_an_interrupt_by_its_id() -> None:
    """"Each interrupt’s id MUST be unique within the run; a resume entry answers it by this id."

    The entry for "i2" answers i2 and nothing else; and if a producer repeats an id, the client
    treats the id as one slot that one entry answers and two entries answer twice.
    """
    entries = ResumeBuilder([ask("i1"), ask("i2")], now=NOW).abandon("i1").answer("i2", "yes").build()
    assert [(e.interrupt_id, e.status) for e in entries] == [("i1", "cancelled"), ("i2", "resolved")]
    check_resume([ask("i1"), ask("i1")], [resolved("i1")], now=NOW)
    with pytest.raises(ResumeRefused) as info:
        check_resume([ask("i1"), ask("i1")], [resolved("i1"), resolved("i1")], now=NOW)
    assert info.value.problems["duplicate"] == ("i1",)


# --------------------------------------------------------------------------------------------------
# Resuming
# --------------------------------------------------------------------------------------------------


def test_an_entry_must_name_an_interrupt_of_the_run_being_continued() -> None:
    """"Each entry’s interruptId MUST name an interrupt from the run being continued — the most
    recent interrupted run on the thread."

    An interrupt of an older run, answered again, is not open any more: refused as unknown.
    """
    older, latest = ask("old-1"), ask("new-1")
    with pytest.raises(UnknownInterrupt) as info:
        check_resume([latest], [resolved("new-1"), resolved(older.id)], now=NOW)
    assert info.value.ids == ("old-1",)


def test_the_list_must_cover_every_interrupt_and_omission_is_not_abandonment() -> None:
    """"The resume list MUST cover every interrupt of the run being continued: each one answered, or
    explicitly abandoned by an entry with the abandoned status. Omission is not abandonment."
    """
    interrupts = [ask("i1"), ask("i2"), ask("i3")]
    with pytest.raises(UncoveredInterrupts) as info:
        ResumeBuilder(interrupts, now=NOW).answer("i1", 1).build()
    assert info.value.ids == ("i2", "i3")
    covered = ResumeBuilder(interrupts, now=NOW).answer("i1", 1).abandon("i2").abandon("i3").build()
    assert [e.status for e in covered] == ["resolved", "cancelled", "cancelled"]


def test_an_uncovered_list_is_rejected_before_anything_is_sent() -> None:
    """"A consumer MUST reject a resuming input that leaves an interrupt uncovered before the run
    starts — before anything is sent — and MUST NOT silently continue past an interrupt it has no
    entry for."

    First half: the egress check raises before the transport is reached.
    """
    sent: list[Sequence[ResumeEntry]] = []
    with pytest.raises(UncoveredInterrupts):
        send_resume([ask("i1"), ask("i2")], [resolved("i1")], sent.append)
    assert sent == []
    send_resume([ask("i1"), ask("i2")], [resolved("i1"), cancelled("i2")], sent.append)
    assert len(sent) == 1


def test_a_new_input_without_entries_does_not_continue_past_open_interrupts() -> None:
    """"A consumer MUST reject a resuming input that leaves an interrupt uncovered before the run
    starts — before anything is sent — and MUST NOT silently continue past an interrupt it has no
    entry for."

    Second half: a plain new input (no resume list at all) while interrupts are open is refused,
    not sent as if the interrupts were gone (B266).
    """
    sent: list[Sequence[ResumeEntry]] = []
    with pytest.raises(UncoveredInterrupts) as info:
        send_resume([ask("i1")], [], sent.append)
    assert info.value.ids == ("i1",)
    assert sent == []


def test_an_expired_interrupt_can_no_longer_be_answered() -> None:
    """"an interrupt the consumer judges expired can no longer be answered — the consumer rejects a
    resume entry resolving it before the run starts, as it rejects an uncovered interrupt."
    """
    sent: list[Sequence[ResumeEntry]] = []
    with pytest.raises(ExpiredInterruptAnswered) as info:
        send_resume([ask("i1", "2026-04-20T17:00:00Z")], [resolved("i1")], sent.append)
    assert info.value.ids == ("i1",)
    assert sent == []


def test_now_or_earlier_is_expired() -> None:
    """"expiresAt is deliberately format-unconstrained, so whether an interrupt has expired is the
    judging consumer’s own reading of it — the reference reads it as a date and treats now-or-earlier
    as expired."
    """
    assert is_expired(ask("i1", "2026-11-30T00:00:00Z"), NOW) is True
    assert is_expired(ask("i1", "2026-11-30T00:00:00.001Z"), NOW) is False


def test_a_value_that_is_not_a_date_is_the_consumers_reading_never_expired() -> None:
    """"expiresAt is deliberately format-unconstrained, so whether an interrupt has expired is the
    judging consumer’s own reading of it"

    A value this client cannot read as a date never expires (IR-18), with a warning, and never
    crashes the judgement.
    """
    with collect_warnings() as sink:
        entries = ResumeBuilder([ask("i1", "when the cows come home")], now=NOW).answer("i1").build()
    assert [e.status for e in entries] == ["resolved"]
    assert [w.code for w in sink.items] == ["IR-18"]


def test_an_expired_interrupt_can_and_must_still_be_abandoned() -> None:
    """"It can still be — and, coverage being mandatory, must be — abandoned, which is how a thread
    moves past an interrupt nobody answered in time."
    """
    expired = ask("i1", "2026-04-20T17:00:00Z")
    assert ResumeBuilder([expired], now=NOW).abandon("i1").build() == (cancelled("i1"),)
    with pytest.raises(UncoveredInterrupts):
        check_resume([expired], [], now=NOW)


# --------------------------------------------------------------------------------------------------
# The producer's error handling, seen from the consumer
# --------------------------------------------------------------------------------------------------


def test_the_client_never_sends_an_unrecognised_entry() -> None:
    """"An unrecognised entry — one naming an interrupt the producer did not raise: the run SHOULD
    proceed without the entry, and the producer SHOULD surface a warning rather than fail a run over
    an answer it never asked for."

    The producer's leniency is no licence: this client refuses the entry before sending it, so a
    producer never has to skip one.
    """
    sent: list[Sequence[ResumeEntry]] = []
    with pytest.raises(UnknownInterrupt) as info:
        send_resume([ask("i1")], [resolved("i1"), cancelled("zzz")], sent.append)
    assert info.value.ids == ("zzz",)
    assert sent == []


def test_the_client_never_leaves_an_interrupt_for_the_producer_to_guess_about() -> None:
    """"A producer MUST NOT perform the interrupted action on the strength of an absent entry, and
    MUST NOT treat the omission as abandonment"

    The builder never fills an omitted interrupt in (not as resolved, not as cancelled): it refuses.
    """
    builder = ResumeBuilder([ask("i1"), ask("i2")], now=NOW).abandon("i1")
    with pytest.raises(UncoveredInterrupts) as info:
        builder.build()
    assert info.value.ids == ("i2",)
    assert builder.entries == (cancelled("i1"),)


def test_an_interrupt_raised_again_must_be_covered_again() -> None:
    """"Either way the run MUST NOT end as success while an interrupt the producer knows to be open
    stands unanswered."

    When the producer ends the resumed run with the interrupt outcome again, the interrupts it
    carries are what the next list must cover.
    """
    event = decode_event(finished({"type": "interrupt", "interrupts": [{"id": "i2", "reason": "approval"}]}))
    assert isinstance(event, RunFinishedEvent)
    assert isinstance(event.outcome, RunFinishedInterruptOutcome)
    with pytest.raises(UncoveredInterrupts) as info:
        ResumeBuilder(event.outcome.interrupts, now=NOW).build()
    assert info.value.ids == ("i2",)


# --------------------------------------------------------------------------------------------------
# Error handling
# --------------------------------------------------------------------------------------------------


def test_a_resume_list_on_a_run_that_continues_nothing_is_refused() -> None:
    """"A resume list on a run that does not continue an interrupted run answers nothing; producers
    treat its entries as unrecognised, as above."

    Entries the producer would treat as unrecognised are never sent (B269).
    """
    with pytest.raises(NothingToResume) as info:
        check_resume([], [resolved("i1")], now=NOW)
    assert info.value.ids == ("i1",)
