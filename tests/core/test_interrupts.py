"""ResumeBuilder and the egress check: the resume rules (bad-inputs.md section O; IR-10 … IR-20, IR-30)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agui_client.core.interrupts import PROBLEM_KINDS, ResumeBuilder, check_resume, check_target
from agui_client.errors import (
    DuplicateResumeEntry,
    ExpiredInterruptAnswered,
    InvalidResumeEntry,
    InvalidResumePayload,
    MisdirectedResume,
    NothingToResume,
    ResumeRefused,
    UncoveredInterrupts,
    UnencodableResumePayload,
    UnencodableValue,
    UnknownInterrupt,
    UnusableResponseSchema,
)
from agui_client.types.run import Interrupt, ResumeEntry
from agui_client.wire.codec import decode, encode
from agui_client.wire.sink import collect_warnings

__all__: list[str] = []

UTC = timezone.utc
NOW = datetime(2026, 11, 30, tzinfo=UTC)
PAST = "2026-04-20T17:00:00Z"
FUTURE = "2027-01-01T00:00:00Z"
APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}


def ask(id: str, *, expires_at: str | None = None, schema: dict[str, Any] | None = None,
        tool_call_id: str | None = None) -> Interrupt:
    return Interrupt(id=id, reason="approval", expires_at=expires_at, response_schema=schema,
                     tool_call_id=tool_call_id)


def resolved(id: str, payload: Any = None) -> ResumeEntry:
    return ResumeEntry(interrupt_id=id, status="resolved", payload=payload)


def cancelled(id: str) -> ResumeEntry:
    return ResumeEntry(interrupt_id=id, status="cancelled")


def refusal(open_interrupts: Sequence[Interrupt], entries: Sequence[ResumeEntry]) -> ResumeRefused:
    with pytest.raises(ResumeRefused) as info:
        check_resume(open_interrupts, entries, now=NOW)
    return info.value


# --------------------------------------------------------------------------------------------------
# Section O, row by row
# --------------------------------------------------------------------------------------------------


def test_b265_a_list_covering_only_some_interrupts_is_refused_naming_the_rest() -> None:
    builder = ResumeBuilder([ask("i1"), ask("i2")], now=NOW).answer("i1")
    with pytest.raises(UncoveredInterrupts) as info:
        builder.build()
    assert info.value.ids == ("i2",)
    assert info.value.problems["uncovered"] == ("i2",)


def test_b266_a_new_input_with_no_resume_while_interrupts_are_open_is_refused() -> None:
    error = refusal([ask("i1")], [])
    assert type(error) is UncoveredInterrupts
    assert error.ids == ("i1",)


def test_b267_an_entry_naming_an_id_that_is_not_open_is_refused_naming_it() -> None:
    error = refusal([ask("i1")], [resolved("i1"), resolved("zzz")])
    assert type(error) is UnknownInterrupt
    assert error.ids == ("zzz",)
    assert error.problems["unknown"] == ("zzz",)


def test_b269_a_resume_list_with_no_open_interrupts_answers_nothing() -> None:
    error = refusal([], [resolved("i1")])
    assert type(error) is NothingToResume
    assert error.ids == ("i1",)
    assert error.problems["nothing"] == ("i1",)


def test_b269_building_with_no_open_interrupts_is_refused_even_without_entries() -> None:
    with pytest.raises(NothingToResume) as info:
        ResumeBuilder([], now=NOW).build()
    assert info.value.ids == ()


def test_b269_building_entries_with_no_open_interrupts_names_them_as_check_resume_does() -> None:
    # Found by the lifecycle machine (tests/thread/test_lifecycle_model.py): the builder's refusal
    # carried the ids in .ids but its message named none, unlike check_resume's for the same list.
    builder = ResumeBuilder([], now=NOW).answer("i1", "yes").abandon("i2")
    with pytest.raises(NothingToResume) as info:
        builder.build()
    assert info.value.ids == ("i1", "i2")
    assert "'i1'" in str(info.value) and "'i2'" in str(info.value)
    with pytest.raises(NothingToResume) as direct:
        check_resume([], builder.entries, now=NOW)
    assert str(info.value) == str(direct.value)


def test_no_open_interrupts_and_no_entries_is_an_ordinary_run() -> None:
    check_resume([], [], now=NOW)


@pytest.mark.parametrize("status", ["approved", "RESOLVED", "", "canceled", None, ["resolved"]])
def test_b270_a_status_other_than_resolved_or_cancelled_is_refused(status: object) -> None:
    entry = ResumeEntry(interrupt_id="i1", status=status)  # type: ignore[arg-type]
    error = refusal([ask("i1")], [entry])
    assert type(error) is InvalidResumeEntry
    assert error.kind == "invalid-entry"
    assert error.problems["invalid-entry"] == ("i1",)
    # The malformed entry still names i1, so i1 is not reported uncovered as well.
    assert error.problems["uncovered"] == ()


def test_an_entry_whose_id_is_not_a_string_is_refused() -> None:
    entry = ResumeEntry(interrupt_id=7, status="cancelled")  # type: ignore[arg-type]
    error = refusal([ask("i1")], [cancelled("i1"), entry])
    named = "<entry 1: interruptId 7, not a string>"  # (where it stands, and what it is: not the string '7')
    assert error.problems["invalid-entry"] == (named,)
    assert error.problems["unknown"] == (named,)


def test_an_entry_whose_id_is_not_a_string_never_covers_an_interrupt_its_name_spells() -> None:
    # Its name is a string an agent may have chosen as an id: the entry names no interrupt all the same,
    # so the interrupt of that id is still uncovered, and the entry is unknown and malformed.
    named = "<entry 0: interruptId 7, not a string>"
    entry = ResumeEntry(interrupt_id=7, status="cancelled")  # type: ignore[arg-type]
    error = refusal([ask(named)], [entry])
    assert error.problems["uncovered"] == (named,)
    assert (error.problems["invalid-entry"], error.problems["unknown"]) == ((named,), (named,))
    assert error.ids.count(named) == 1
    assert ResumeBuilder([ask(named)]).answer(7, 1).uncovered == (named,)  # type: ignore[arg-type]


class _Credential:
    def __repr__(self) -> str:
        return "Credential('sk-live-0123456789')\n\x1b[2J" + "x" * 10_000


@pytest.mark.parametrize(("value", "shown"), [
    (123, "interruptId 123,"), (12.5, "interruptId 12.5,"), (True, "interruptId True,"), (None, "interruptId None,"),
    (10 ** 5000, "interruptId of type int,"), ({"token": "sk-live-0123456789"}, "interruptId of type dict,"),
    (_Credential(), "interruptId of type _Credential,"), (["i1"], "interruptId of type list,"),
], ids=["int", "float", "bool", "none", "int-past-repr", "dict", "object", "list"])
def test_an_id_that_is_not_a_string_is_named_by_place_and_kind_never_by_its_repr(value: object, shown: str) -> None:
    # A resume entry built by hand with a number, an object or a list for its id: its repr was the
    # name every refusal, warning and span gave it, so the int 123 read as the id '123', an object's
    # repr (whatever it says, a token it holds, at any length, with line ends) went into the error's
    # text and its ``ids``/``problems``; an int past 4,300 digits made the refusal raise ValueError
    # (repr refuses it). It is named where it stands and what type it is.
    entries = [cancelled("i1"), ResumeEntry(interrupt_id=value, status="resolved", payload=1)]  # type: ignore[arg-type]
    error = refusal([ask("i1")], entries)
    [named] = error.problems["invalid-entry"]
    assert named.startswith("<entry 1: ") and shown in named and named.endswith(" not a string>")
    assert named in error.ids and error.problems["unknown"] == (named,)
    assert "sk-live" not in str(error) and "sk-live" not in repr(error.problems)
    assert len(str(error)) < 700 and not any(c in str(error) for c in "\n\x1b")
    builder = ResumeBuilder([ask("i1")]).abandon("i1").answer(value, 1)  # type: ignore[arg-type]
    assert named in repr(builder) and "sk-live" not in repr(builder)


def test_two_entries_with_ids_that_are_not_strings_are_two_malformed_entries_not_one_repeated() -> None:
    entries = [ResumeEntry(interrupt_id=1, status="cancelled"), ResumeEntry(interrupt_id=2, status="cancelled")]  # type: ignore[arg-type]
    error = refusal([ask("i1")], entries)
    assert error.problems["duplicate"] == ()
    assert len(error.problems["invalid-entry"]) == 2


@pytest.mark.parametrize("metadata", ["ops", [1], 3, True])
def test_an_entry_whose_metadata_is_not_an_object_is_refused_before_sending(metadata: object) -> None:
    # (the schema's ResumeEntry.metadata is an object: the reference refuses such an input before it
    # leaves, and an agent refuses the whole input after; found by a differential run)
    entry = ResumeEntry(interrupt_id="i1", status="resolved", payload={"ok": True},
                        metadata=metadata)  # type: ignore[arg-type]
    error = refusal([ask("i1")], [entry])
    assert type(error) is InvalidResumeEntry
    assert error.problems["invalid-entry"] == ("i1",)
    assert "metadata absent or an object" in str(error)
    check_resume([ask("i1")], [ResumeEntry(interrupt_id="i1", status="resolved", payload={"ok": True},
                                           metadata={"by": "ops"})], now=NOW)


def test_b271_a_resolved_entry_for_an_expired_interrupt_is_refused() -> None:
    builder = ResumeBuilder([ask("i1", expires_at=PAST)], now=NOW).answer("i1", {"ok": True})
    with pytest.raises(ExpiredInterruptAnswered) as info:
        builder.build()
    assert info.value.ids == ("i1",)


def test_b271_a_cancelled_entry_for_an_expired_interrupt_is_how_the_thread_moves_on() -> None:
    entries = ResumeBuilder([ask("i1", expires_at=PAST)], now=NOW).abandon("i1").build()
    assert entries == (cancelled("i1"),)


def test_b273_a_resolved_entry_without_payload_is_sent_without_payload() -> None:
    (entry,) = ResumeBuilder([ask("i1")], now=NOW).answer("i1").build()
    assert encode(entry) == {"interruptId": "i1", "status": "resolved"}


def test_b274_a_payload_failing_the_response_schema_is_refused_with_readable_errors() -> None:
    builder = ResumeBuilder([ask("i1", schema=APPROVAL)], now=NOW).answer("i1", {"approved": "yes"})
    with pytest.raises(InvalidResumePayload) as info:
        builder.build()
    assert info.value.ids == ("i1",)
    (message,) = info.value.errors["i1"]
    assert "/approved" in message and "boolean" in message


def test_b274_a_payload_satisfying_the_response_schema_is_sent() -> None:
    entries = ResumeBuilder([ask("i1", schema=APPROVAL)], now=NOW).answer("i1", {"approved": True}).build()
    assert entries == (resolved("i1", {"approved": True}),)


def test_b277_frontend_tool_call_ids_are_not_interrupt_ids() -> None:
    open_interrupts = [ask("i1", tool_call_id="c1")]
    error = refusal(open_interrupts, [resolved("i1"), resolved("c1")])
    assert type(error) is UnknownInterrupt
    assert error.ids == ("c1",)


# --------------------------------------------------------------------------------------------------
# Every problem at once
# --------------------------------------------------------------------------------------------------


def test_every_offending_id_is_named_at_once_and_the_class_is_the_first_kind_found() -> None:
    open_interrupts = [
        ask("late", expires_at=PAST),
        ask("typed", schema=APPROVAL),
        ask("twice"),
        ask("forgotten"),
        ask("fine"),
    ]
    entries = [
        resolved("ghost"),
        resolved("twice"),
        resolved("late", {"ok": True}),
        resolved("typed", {"approved": 1}),
        cancelled("twice"),
        cancelled("fine"),
    ]
    error = refusal(open_interrupts, entries)
    assert type(error) is UncoveredInterrupts
    assert error.problems == {
        "nothing": (),
        "uncovered": ("forgotten",),
        "expired": ("late",),
        "unknown": ("ghost",),
        "duplicate": ("twice",),
        "invalid": ("typed",),
        "invalid-entry": (),
    }
    # Raise order, then the unknown ids in the order given.
    assert error.ids == ("late", "typed", "twice", "forgotten", "ghost")
    # Payload errors are kept even when another kind gives the exception its class.
    assert set(error.errors) == {"typed"}


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ([resolved("a", {"ok": True})], ExpiredInterruptAnswered),
        ([cancelled("a"), resolved("zzz")], UnknownInterrupt),
        ([cancelled("a"), cancelled("a")], DuplicateResumeEntry),
        ([cancelled("a"), ResumeEntry(interrupt_id="zzz", status="nope")], UnknownInterrupt),  # type: ignore[arg-type]
    ],
)
def test_the_exception_class_follows_the_documented_order(
    entries: list[ResumeEntry], expected: type[ResumeRefused]
) -> None:
    error = refusal([ask("a", expires_at=PAST)], entries)
    assert type(error) is expected
    assert error.kind == next(kind for kind in PROBLEM_KINDS if error.problems[kind])


def test_expired_cancelled_then_resolved_is_both_a_duplicate_and_an_expired_answer() -> None:
    error = refusal([ask("i1", expires_at=PAST)], [cancelled("i1"), resolved("i1")])
    assert type(error) is ExpiredInterruptAnswered
    assert error.problems["expired"] == ("i1",)
    assert error.problems["duplicate"] == ("i1",)


def test_answering_twice_is_recorded_not_overwritten() -> None:
    builder = ResumeBuilder([ask("i1")], now=NOW).answer("i1", 1).answer("i1", 2)
    assert builder.entries == (resolved("i1", 1), resolved("i1", 2))
    with pytest.raises(DuplicateResumeEntry) as info:
        builder.build()
    assert info.value.ids == ("i1",)


@pytest.mark.parametrize("how", ["answer", "abandon"])
def test_an_id_that_is_not_open_is_refused_at_once_listing_the_open_ones(how: str) -> None:
    builder = ResumeBuilder([ask("i1"), ask("i2")], now=NOW).answer("i1")
    with pytest.raises(UnknownInterrupt) as info:
        builder.answer("zzz", True) if how == "answer" else builder.abandon("zzz")

    assert (info.value.ids, info.value.open_ids) == (("zzz",), ("i1", "i2"))
    assert info.value.problems["unknown"] == ("zzz",)
    assert "'i1', 'i2'" in str(info.value) and "'zzz'" in str(info.value)
    assert builder.entries == (resolved("i1"),)  # nothing recorded
    assert builder.abandon("i2").build() == (resolved("i1"), cancelled("i2"))


def test_an_unknown_id_in_a_plain_list_is_refused_naming_the_open_ones() -> None:
    error = refusal([ask("i1")], [resolved("i1"), cancelled("zzz")])

    assert type(error) is UnknownInterrupt
    assert (error.ids, error.open_ids) == (("zzz",), ("i1",))


def test_omission_is_never_abandonment_even_for_an_expired_interrupt() -> None:
    error = refusal([ask("i1", expires_at=PAST), ask("i2")], [resolved("i2")])
    assert type(error) is UncoveredInterrupts
    assert error.ids == ("i1",)
    assert error.problems["expired"] == ()


# --------------------------------------------------------------------------------------------------
# Expiry is judged at build time
# --------------------------------------------------------------------------------------------------


def test_expiry_is_judged_when_the_list_is_built_not_when_the_answer_was_given() -> None:
    clock = {"now": NOW}
    interrupts = [ask("i1", expires_at="2026-11-30T12:00:00Z")]
    builder = ResumeBuilder(interrupts, now=lambda: clock["now"]).answer("i1")
    assert not builder.expired
    assert builder.build() == (resolved("i1"),)
    clock["now"] = NOW + timedelta(hours=12)
    assert builder.expired == ("i1",)
    with pytest.raises(ExpiredInterruptAnswered):
        builder.build()


def test_an_unreadable_expiry_never_blocks_an_answer_and_warns() -> None:
    with collect_warnings() as sink:
        entries = ResumeBuilder([ask("i1", expires_at="whenever")], now=NOW).answer("i1").build()
    assert entries == (resolved("i1"),)
    assert [w.code for w in sink.items] == ["IR-18"]


# --------------------------------------------------------------------------------------------------
# Views and output order
# --------------------------------------------------------------------------------------------------


def test_views_report_the_interrupts_what_is_uncovered_expired_and_recorded() -> None:
    interrupts = [ask("i1", expires_at=PAST), ask("i2", expires_at=FUTURE), ask("i3")]
    builder = ResumeBuilder(iter(interrupts), now=NOW)
    assert builder.interrupts == tuple(interrupts)
    assert list(builder.uncovered) == ["i1", "i2", "i3"]
    assert builder.expired == ("i1",)
    builder.answer("i3", "x").abandon("i1", metadata={"by": "ops"})
    assert list(builder.uncovered) == ["i2"]
    assert builder.entries == (resolved("i3", "x"), ResumeEntry(interrupt_id="i1", status="cancelled",
                                                               metadata={"by": "ops"}))


def test_answer_and_abandon_return_the_builder_for_chaining() -> None:
    builder = ResumeBuilder([ask("i1"), ask("i2")], now=NOW)
    assert builder.answer("i1") is builder
    assert builder.abandon("i2") is builder


def test_built_entries_come_out_in_raise_order_with_metadata() -> None:
    builder = ResumeBuilder([ask("i1"), ask("i2"), ask("i3")], now=NOW)
    builder.abandon("i3").answer("i1", {"a": 1}, metadata={"sig": "abc"}).answer("i2", [1, 2])
    assert builder.build() == (
        ResumeEntry(interrupt_id="i1", status="resolved", payload={"a": 1}, metadata={"sig": "abc"}),
        resolved("i2", [1, 2]),
        cancelled("i3"),
    )


def test_a_repeated_interrupt_id_is_one_slot_that_one_entry_covers() -> None:
    # IR-06 is the producer's; if it breaks it, one entry answers the id and satisfies every copy.
    copies = [ask("i1"), ask("i1", expires_at=PAST)]
    check_resume(copies, [cancelled("i1")], now=NOW)
    error = refusal(copies, [resolved("i1")])
    assert type(error) is ExpiredInterruptAnswered
    assert error.ids == ("i1",)


def test_a_resume_list_of_the_wrong_objects_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        check_resume([ask("i1")], [{"interruptId": "i1", "status": "resolved"}], now=NOW)  # type: ignore[list-item]


# --------------------------------------------------------------------------------------------------
# responseSchema
# --------------------------------------------------------------------------------------------------


def test_no_payload_is_refused_when_the_schema_requires_one() -> None:
    builder = ResumeBuilder([ask("i1", schema=APPROVAL)], now=NOW).answer("i1")
    with pytest.raises(InvalidResumePayload) as info:
        builder.build()
    assert len(info.value.errors["i1"]) == 1


def test_no_payload_is_allowed_when_the_schema_permits_null() -> None:
    schema = {"type": ["object", "null"]}
    assert ResumeBuilder([ask("i1", schema=schema)], now=NOW).answer("i1").build() == (resolved("i1"),)


def test_a_cancelled_entry_is_not_checked_against_the_schema() -> None:
    check_resume([ask("i1", schema=APPROVAL)], [cancelled("i1")], now=NOW)


def test_every_schema_error_of_a_payload_is_reported() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}
    error = refusal([ask("i1", schema=schema)], [resolved("i1", {"a": "x", "b": 1})])
    assert len(error.errors["i1"]) == 2
    assert [m.split(":")[0] for m in error.errors["i1"]] == ["at /a", "at /b"]


def test_schema_errors_are_bounded_for_huge_payloads() -> None:
    schema = {"type": "array", "items": {"type": "string"}}
    error = refusal([ask("i1", schema=schema)], [resolved("i1", list(range(1000)))])
    assert len(error.errors["i1"]) == 11
    assert all(len(message) <= 300 for message in error.errors["i1"])
    # (jsonschema quotes the whole instance: a message of some 400 characters about one answer is cut at 300)
    whole = refusal([ask("i1", schema={"type": "string"})], [resolved("i1", list(range(100)))])
    [message] = whole.errors["i1"]
    assert len(message) == 300 and message.endswith("…") and message.startswith("[0, 1, 2")


@pytest.mark.parametrize(
    ("schema", "code", "pointer"),
    [
        pytest.param({"type": "no-such-type"}, "invalid", "/type", id="bad-type"),
        pytest.param({"pattern": "("}, "invalid", "/pattern", id="bad-regex"),
        pytest.param({"$ref": "#/definitions/missing"}, "unresolvable", "/$ref", id="dangling-ref"),
        pytest.param({"$ref": "http://127.0.0.1:9/schema.json"}, "unresolvable", "/$ref", id="remote-ref-not-fetched"),
        pytest.param({"$ref": "#"}, "too-deep", "/$ref", id="self-ref-loop"),
        pytest.param({"$schema": 7}, "invalid", "/$schema", id="schema-uri-not-a-string"),
        pytest.param(["not", "a", "schema"], "not-a-schema", "", id="not-an-object"),
    ],
)
def test_an_invalid_schema_is_reported_as_an_unusable_schema_never_a_crash(schema: Any, code: str,
                                                                           pointer: str) -> None:
    error = refusal([ask("i1", schema=schema)], [resolved("i1", {"approved": True})])
    assert type(error) is UnusableResponseSchema and isinstance(error, InvalidResumePayload)
    assert error.ids == ("i1",) and error.problems["invalid"] == ("i1",)
    assert len(error.errors["i1"]) == 1
    assert (error.interrupt_id, error.code, error.pointer) == ("i1", code, pointer)
    assert error.faults["i1"][0].code == code


def test_a_schema_without_dialect_is_read_as_draft_2020_12() -> None:
    # prefixItems exists only since 2020-12; an older draft would ignore it and accept the payload.
    schema = {"type": "array", "prefixItems": [{"type": "integer"}]}
    check_resume([ask("i1", schema=schema)], [resolved("i1", [1])], now=NOW)
    assert type(refusal([ask("i1", schema=schema)], [resolved("i1", ["x"])])) is InvalidResumePayload


def test_an_unknown_schema_dialect_is_read_with_the_newest_draft_without_warning() -> None:
    schema = {"$schema": "https://example.invalid/my-dialect", "type": "integer"}
    check_resume([ask("i1", schema=schema)], [resolved("i1", 3)], now=NOW)
    assert type(refusal([ask("i1", schema=schema)], [resolved("i1", "3")])) is InvalidResumePayload


def test_a_declared_draft_is_honoured() -> None:
    # Draft 4 reads exclusiveMaximum as a boolean modifier; 2020-12 would reject the schema.
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "maximum": 5, "exclusiveMaximum": True}
    check_resume([ask("i1", schema=schema)], [resolved("i1", 4)], now=NOW)
    assert type(refusal([ask("i1", schema=schema)], [resolved("i1", 5)])) is InvalidResumePayload


def test_a_boolean_schema_is_honoured() -> None:
    reject_all: Any = False
    check_resume([ask("i1", schema=True)], [resolved("i1", "anything")], now=NOW)  # type: ignore[arg-type]
    assert type(refusal([ask("i1", schema=reject_all)], [resolved("i1", 1)])) is InvalidResumePayload


# --------------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------------

OK_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
CHOICES = ("answer", "answer-bad-payload", "abandon", "omit", "twice")


def satisfies(interrupt: Interrupt, payload: Any) -> bool:
    if interrupt.response_schema is None:
        return True
    return isinstance(payload, dict) and isinstance(payload.get("ok"), bool)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[datetime, list[Interrupt], list[tuple[str, str]], list[str]]:
    now = draw(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)))
    ids = draw(st.lists(st.text("abcxyz-", min_size=1, max_size=4), unique=True, max_size=6))
    interrupts = []
    for id in ids:
        expiry = draw(st.one_of(
            st.none(),
            st.timedeltas(min_value=timedelta(days=-400), max_value=timedelta(days=400)).map(lambda d: now + d),
            st.just(now),
        ))
        interrupts.append(Interrupt(
            id=id,
            reason="approval",
            expires_at=None if expiry is None else expiry.isoformat().replace("+00:00", "Z"),
            response_schema=OK_SCHEMA if draw(st.booleans()) else None,
        ))
    choices = [(i.id, draw(st.sampled_from(CHOICES))) for i in interrupts]
    unknown = draw(st.lists(st.text("0123456789", min_size=1, max_size=3), max_size=2))
    return now, interrupts, choices, unknown


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios(), data=st.data())
def test_build_succeeds_exactly_when_the_list_covers_each_open_interrupt_once_validly(
    scenario: tuple[datetime, list[Interrupt], list[tuple[str, str]], list[str]], data: st.DataObject
) -> None:
    now, interrupts, choices, unknown = scenario
    by_id = {i.id: i for i in interrupts}
    builder = ResumeBuilder(interrupts, now=now)
    expected: dict[str, list[str]] = {kind: [] for kind in PROBLEM_KINDS}
    calls: list[tuple[str, str, Any]] = []
    for id, choice in choices:
        if choice == "answer":
            calls.append((id, "resolved", {"ok": True}))
        elif choice == "answer-bad-payload":
            calls.append((id, "resolved", data.draw(st.sampled_from([None, {"ok": "yes"}, 3]))))
        elif choice == "abandon":
            calls.append((id, "cancelled", None))
        elif choice == "twice":
            first, second = data.draw(st.tuples(st.sampled_from(["resolved", "cancelled"]),
                                                st.sampled_from(["resolved", "cancelled"])))
            calls += [(id, first, {"ok": True}), (id, second, {"ok": False})]
    calls += [(id, "resolved", None) for id in unknown]
    calls = data.draw(st.permutations(calls))
    open_ids = tuple(dict.fromkeys(i.id for i in interrupts))
    for id, status, payload in calls:
        record = functools.partial(builder.answer, id, payload) if status == "resolved" else functools.partial(
            builder.abandon, id)
        if interrupts and id not in by_id:
            # An id that is not open is refused as it is given, naming the open ones; nothing is recorded.
            with pytest.raises(UnknownInterrupt) as at_once:
                record()
            assert (at_once.value.ids, at_once.value.open_ids) == ((id,), open_ids)
        else:
            record()
    calls = [c for c in calls if not interrupts or c[0] in by_id]

    # The model, written independently of the implementation.
    for interrupt in interrupts:
        mine = [c for c in calls if c[0] == interrupt.id]
        answers = [c for c in mine if c[1] == "resolved"]
        expired = interrupt.expires_at is not None and datetime.fromisoformat(
            interrupt.expires_at.replace("Z", "+00:00")) <= now
        if not mine:
            expected["uncovered"].append(interrupt.id)
        if answers and expired:
            expected["expired"].append(interrupt.id)
        if len(mine) > 1:
            expected["duplicate"].append(interrupt.id)
        if any(not satisfies(interrupt, payload) for _, _, payload in answers):
            expected["invalid"].append(interrupt.id)
    # Unknown ids are reported in the order the calls first named them.
    strangers = list(dict.fromkeys(c[0] for c in calls if c[0] not in by_id))
    expected["unknown"] = strangers
    expected["duplicate"] += [u for u in strangers if unknown.count(u) > 1]
    if not interrupts:
        expected["nothing"] = strangers

    if not interrupts:
        with pytest.raises(NothingToResume):
            builder.build()
    elif any(expected.values()):
        with pytest.raises(ResumeRefused) as info:
            builder.build()
        assert info.value.problems == {kind: tuple(ids) for kind, ids in expected.items()}
        first = next(kind for kind in PROBLEM_KINDS if expected[kind])
        assert info.value.kind == first
        assert set(info.value.ids) == {i for ids in expected.values() for i in ids}
        assert set(info.value.errors) == set(expected["invalid"])
    else:
        entries = builder.build()
        assert [e.interrupt_id for e in entries] == [i.id for i in interrupts]
        assert [e.status for e in entries] == ["resolved" if c[1].startswith("answer") else "cancelled"
                                               for c in choices]
        for entry in entries:
            assert decode(encode(entry), ResumeEntry) == entry
        # The egress check agrees with the builder on the list it produced.
        check_resume(interrupts, entries, now=now)


# --------------------------------------------------------------------------------------------------
# Binding (B275, IR-10): a builder from a thread answers that thread's interrupted run only
# --------------------------------------------------------------------------------------------------


def bound(interrupts: Sequence[Interrupt], thread_id: str = "t1", run_id: str | None = "r1") -> ResumeBuilder:
    return ResumeBuilder(interrupts, now=NOW, thread_id=thread_id, run_id=run_id).answer("i1", {"ok": True})


def test_a_bound_builder_used_on_another_thread_is_misdirected() -> None:
    builder = bound([ask("i1")], thread_id="t1")

    with pytest.raises(MisdirectedResume) as info:
        check_target(builder, "t2", "r1", [ask("i1")])

    assert isinstance(info.value, ResumeRefused)
    assert (info.value.builder_thread_id, info.value.thread_id) == ("t1", "t2")
    assert info.value.ids == ("i1",)
    assert info.value.problems == {"misdirected": ("i1",)}


def test_a_bound_builder_for_an_earlier_interrupted_run_is_misdirected() -> None:
    builder = bound([ask("i1")], run_id="r1")

    with pytest.raises(MisdirectedResume) as info:
        check_target(builder, "t1", "r2", [ask("i1")])

    assert (info.value.builder_run_id, info.value.interrupted_run_id) == ("r1", "r2")


def test_a_bound_builder_is_misdirected_when_the_interrupt_under_its_id_changed_even_if_the_run_id_repeats() -> None:
    staging = Interrupt(id="i1", reason="approval", message="delete STAGING?")
    production = Interrupt(id="i1", reason="approval", message="delete PRODUCTION?")
    builder = bound([staging], run_id="r1")

    with pytest.raises(MisdirectedResume):
        check_target(builder, "t1", "r1", [production])


def test_a_bound_builder_made_when_nothing_was_open_is_misdirected_once_something_is() -> None:
    builder = ResumeBuilder([], now=NOW, thread_id="t1", run_id=None)

    with pytest.raises(MisdirectedResume):
        check_target(builder, "t1", "r1", [ask("i1")])


def test_a_bound_builder_accepts_equal_interrupts_read_again_from_the_store() -> None:
    held = [ask("i1", schema=APPROVAL)]
    reloaded = decode(encode(held), tuple[Interrupt, ...])
    builder = bound(held)

    check_target(builder, "t1", "r1", reloaded)

    assert reloaded[0] is not held[0]


def test_an_unbound_builder_is_never_misdirected() -> None:
    builder = ResumeBuilder([ask("i1")], now=NOW).answer("i1", 1)

    check_target(builder, "anything", "any-run", [ask("i2")])

    assert (builder.thread_id, builder.run_id) == (None, None)


# --------------------------------------------------------------------------------------------------
# Payloads JSON cannot hold: refused when recorded, and again at the egress check
# --------------------------------------------------------------------------------------------------

NOT_JSON = [
    pytest.param({1, 2}, "", id="set"),
    pytest.param(b"x", "", id="bytes"),
    pytest.param(float("nan"), "", id="nan"),
    pytest.param(float("inf"), "", id="inf"),
    pytest.param(float("-inf"), "", id="minus-inf"),
    pytest.param("x\ud800", "", id="lone-surrogate"),
    pytest.param(datetime(2026, 1, 1), "", id="datetime"),
    pytest.param({"a": [1, {"b/c": {1}}]}, "/a/1/b~1c", id="nested"),
    pytest.param({1: "one"}, "", id="non-string-key"),
    pytest.param({"k\udc80": 1}, "", id="lone-surrogate-key"),
]


@pytest.mark.parametrize(("payload", "pointer"), NOT_JSON)
def test_answering_with_a_payload_json_cannot_hold_is_refused_at_once(payload: Any, pointer: str) -> None:
    builder = ResumeBuilder([ask("i1")], now=NOW)

    with pytest.raises(UnencodableResumePayload) as info:
        builder.answer("i1", payload)

    error = info.value
    assert isinstance(error, InvalidResumePayload) and isinstance(error, UnencodableValue)
    assert (error.interrupt_id, error.field, error.pointer) == ("i1", "payload", pointer)
    assert error.ids == ("i1",) and error.problems == {"invalid": ("i1",)}
    assert list(error.errors) == ["i1"]
    assert builder.entries == ()


def test_metadata_json_cannot_hold_is_refused_when_answering_or_abandoning() -> None:
    builder = ResumeBuilder([ask("i1")], now=NOW)

    with pytest.raises(UnencodableResumePayload) as answered:
        builder.answer("i1", 1, metadata={"signed": b"sig"})
    with pytest.raises(UnencodableResumePayload) as abandoned:
        builder.abandon("i1", metadata={"at": datetime(2026, 1, 1)})

    assert (answered.value.field, answered.value.pointer) == ("metadata", "/signed")
    assert (abandoned.value.field, abandoned.value.pointer) == ("metadata", "/at")
    assert builder.entries == ()


@pytest.mark.parametrize(("payload", "pointer"), NOT_JSON)
def test_the_egress_check_refuses_plain_entries_json_cannot_hold(payload: Any, pointer: str) -> None:
    with pytest.raises(UnencodableResumePayload) as info:
        check_resume([ask("i1"), ask("i2")], [cancelled("i1"), resolved("i2", payload)], now=NOW)

    assert (info.value.interrupt_id, info.value.pointer) == ("i2", pointer)


# --------------------------------------------------------------------------------------------------
# The override for a thread whose open interrupts are unknown (B269)
# --------------------------------------------------------------------------------------------------


def test_pending_unknown_lets_entries_through_when_no_interrupt_is_held() -> None:
    check_resume([], [resolved("i1", 1), cancelled("i2")], now=NOW, pending_unknown=True)


def test_pending_unknown_still_refuses_malformed_and_repeated_entries() -> None:
    with pytest.raises(DuplicateResumeEntry):
        check_resume([], [resolved("i1", 1), cancelled("i1")], now=NOW, pending_unknown=True)
    with pytest.raises(InvalidResumeEntry):
        check_resume([], [ResumeEntry(interrupt_id="i1", status="approved")],  # type: ignore[arg-type]
                     now=NOW, pending_unknown=True)


def test_pending_unknown_changes_nothing_when_interrupts_are_held() -> None:
    with pytest.raises(UncoveredInterrupts) as uncovered:
        check_resume([ask("i1"), ask("i2")], [resolved("i1", 1)], now=NOW, pending_unknown=True)
    with pytest.raises(UnknownInterrupt) as unknown:
        check_resume([ask("i1")], [resolved("i1", 1), resolved("zzz", 1)], now=NOW, pending_unknown=True)

    assert uncovered.value.ids == ("i2",)
    assert unknown.value.ids == ("zzz",)


def test_a_builder_without_interrupts_builds_its_entries_only_when_pending_is_unknown() -> None:
    builder = ResumeBuilder([], now=NOW).answer("i2", "yes").abandon("i1")

    with pytest.raises(NothingToResume):
        builder.build()

    assert builder.build(pending_unknown=True) == (resolved("i2", "yes"), cancelled("i1"))


def test_a_builder_without_interrupts_still_refuses_a_repeated_id_when_pending_is_unknown() -> None:
    # pending_unknown lets entries through that answer nothing the thread holds, never a list the agent
    # could read two ways: build() refuses it as the run's own egress check would.
    builder = ResumeBuilder([], now=NOW).answer("i1", "yes").abandon("i1")

    with pytest.raises(DuplicateResumeEntry) as info:
        builder.build(pending_unknown=True)

    assert info.value.ids == ("i1",)
    assert info.value.problems["duplicate"] == ("i1",)


def test_a_refusal_names_the_first_ten_ids_and_counts_the_rest() -> None:
    # A run may raise thousands of interrupts: the message stays short, .problems keeps every id.
    asked = [ask(f"i{n}") for n in range(12)]

    error = refusal(asked, [])

    assert type(error) is UncoveredInterrupts
    assert error.problems["uncovered"] == tuple(f"i{n}" for n in range(12))
    assert "no entry for ['i0', 'i1', 'i2', 'i3', 'i4', 'i5', 'i6', 'i7', 'i8', 'i9', ...] (2 more)" in str(error)
    assert "'i10'" not in str(error)
