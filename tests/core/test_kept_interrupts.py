"""The thread's own copies of its interrupts, and the copies it hands out (``KeptInterrupts``).

Whoever checks answers against interrupts' ``responseSchema`` s (the thread's ledger, a resume builder)
holds its own copies and hands out others. Each copy walked the schemas first (``plain_json``), then
copied them through orjson: 13-15 ms for 200 ordinary forms, at the fold of the ``RUN_FINISHED`` that
brought them and again at each read of ``open_interrupts`` and each ``resume_builder()``, on the
caller's thread (an event loop's). Interrupts a parser made are plain JSON: the ledger keeps their
``marshal`` bytes, made as the event is folded, and builds every copy from them, with no walk.

What must hold, and is tested here without a clock: every copy is its caller's alone (changing it
reaches neither the thread nor any other caller, nor the bytes later copies come from); what came off
the wire is copied without a walk, and without the standard library writing each schema for the ceiling;
what a caller built in Python is copied as before (a tuple a list, ``NaN`` kept, a ``datetime`` deep-copied).
"""

from __future__ import annotations

import datetime
import json
import math
from typing import Any

import pytest

import agui_client as ag
from agui_client.core import interrupts as interrupts_module
from agui_client.core import schema as schema_module
from agui_client.core.interrupts import KeptInterrupts, ResumeBuilder
from agui_client.core.session import RunSession

__all__: list[str] = []


def form(number: int) -> dict[str, Any]:
    """A small form of its own (distinct text, so no copy can be mistaken for another's)."""
    return {"title": f"Form {number} ✉", "type": "object", "required": ["to"],
            "properties": {"to": {"type": "string", "title": f"to {number}", "enum": ["a", "b"]},
                           "count": {"type": "integer", "minimum": 1}}}


def asked(count: int) -> list[dict[str, Any]]:
    return [{"id": f"i{n}", "reason": "input", "responseSchema": form(n), "metadata": {"tags": [f"t{n}"]}}
            for n in range(count)]


def folded(count: int, *, events: bool) -> tuple[RunSession, list[Any]]:
    """A session that read ``count`` forms off the wire (``events``: it hands the events out)."""
    session = RunSession(events=events)
    session.feed_payload(json.dumps({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}))
    out = session.feed_payload(json.dumps({"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
                                           "outcome": {"type": "interrupt", "interrupts": asked(count)}}))
    return session, out


def spoil(interrupts: Any) -> None:
    """What a careless caller does to interrupts it was handed: every nested container changed."""
    for interrupt in interrupts:
        interrupt.response_schema["required"].clear()
        interrupt.response_schema["properties"]["to"]["enum"].append("spoiled")
        interrupt.response_schema["title"] = "spoiled"
        interrupt.metadata["tags"].append("spoiled")


def as_wire(interrupts: Any) -> list[dict[str, Any]]:
    return [ag.encode(interrupt) for interrupt in interrupts]


class Walks:
    """The walks that judge values plain JSON (``plain_json``), the schemas the standard library writes
    for the ceiling (``_judged_key``), and the values copied one at a time rather than from the kept
    bytes (``copy_json``, ``foreign_copy``), counted."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.walked = 0
        self.written = 0
        self.one_at_a_time = 0
        walk, write = interrupts_module.plain_json, schema_module._judged_key

        def walked(value: Any, tuples: bool = True) -> bool:
            self.walked += 1
            return walk(value, tuples)

        def written(schema: Any) -> str | None:
            self.written += 1
            return write(schema)

        def one_at_a_time(copy: Any) -> Any:
            def counted(*args: Any) -> Any:
                self.one_at_a_time += 1
                return copy(*args)
            return counted

        monkeypatch.setattr(interrupts_module, "plain_json", walked)
        monkeypatch.setattr(schema_module, "_judged_key", written)
        for name in ("copy_json", "foreign_copy"):
            monkeypatch.setattr(interrupts_module, name, one_at_a_time(getattr(interrupts_module, name)))


@pytest.mark.parametrize("events", [False, True])
def test_every_copy_handed_out_is_its_callers_alone(events: bool) -> None:
    session, out = folded(3, events=events)
    state = session.state
    first_read = state.open_interrupts
    builder = ResumeBuilder(state.ledger.kept)
    spoil(first_read)
    spoil(builder.interrupts)
    spoil(session.end().interrupts)
    if events:
        spoil(out[0].outcome.interrupts)  # (the event handed out: the fold's bytes were made before)
    second_read = state.open_interrupts
    other_builder = ResumeBuilder(state.ledger.kept)

    assert as_wire(state.ledger.open_interrupts) == asked(3)
    assert as_wire(second_read) == asked(3)
    assert as_wire(other_builder.interrupts) == asked(3)
    # The builder spoiled above checks against its own copies, not the ones it handed out.
    with pytest.raises(ag.InvalidResumePayload) as caught:
        builder.answer("i0", {}).answer("i1", {"to": "a"}).answer("i2", {"to": "spoiled"}).build()
    assert caught.value.ids == ("i0", "i2")
    # No two copies share a container.
    assert first_read[0].response_schema is not second_read[0].response_schema
    assert second_read[0].response_schema["properties"] is not state.ledger.open_interrupts[0].response_schema[
        "properties"]


def test_interrupts_off_the_wire_are_copied_without_a_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    # Neither the fold, nor a read, nor a builder walks them; nor does the ceiling write each schema. Every
    # copy is made from the bytes kept as they were folded, none a value at a time.
    walks = Walks(monkeypatch)
    session, _ = folded(4, events=True)
    session.max_schema_steps = schema_module.DEFAULT_MAX_SCHEMA_STEPS
    read = session.state.open_interrupts
    builder = ResumeBuilder(session.state.ledger.kept)

    assert as_wire(read) == as_wire(builder.interrupts) == asked(4)
    assert (walks.walked, walks.written, walks.one_at_a_time) == (0, 0, 0)


def test_the_ceiling_measures_schemas_off_the_wire_without_the_standard_library(
        monkeypatch: pytest.MonkeyPatch) -> None:
    walks = Walks(monkeypatch)
    session = RunSession(max_schema_steps=schema_module.DEFAULT_MAX_SCHEMA_STEPS)
    session.feed_payload(json.dumps({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}))
    session.feed_payload(json.dumps({"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
                                     "outcome": {"type": "interrupt", "interrupts": asked(4)}}))
    from_wire = walks.written
    typed = RunSession(max_schema_steps=schema_module.DEFAULT_MAX_SCHEMA_STEPS)
    typed.feed_event({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
    typed.feed_event(ag.RunFinishedEvent(thread_id="t", run_id="r", outcome=ag.RunFinishedInterruptOutcome(
        interrupts=tuple(ag.Interrupt(id=i["id"], reason=i["reason"], response_schema=i["responseSchema"],
                                      metadata=i["metadata"]) for i in asked(4)))))

    assert from_wire == 0
    assert walks.written == 4  # (built in Python: each written by the standard library, as before)
    assert as_wire(session.state.open_interrupts) == as_wire(typed.state.open_interrupts) == asked(4)


def test_interrupts_built_in_python_are_copied_as_before() -> None:
    # A caller's event may hold what a parser never makes: a tuple (copied as a list, as orjson's copy
    # of foreign JSON makes it), NaN (kept), a datetime (deep-copied); a dict held twice.
    when = datetime.datetime(2030, 1, 2, tzinfo=datetime.timezone.utc)
    shared = {"type": "string"}
    given = (ag.Interrupt(id="tuple", reason="input", response_schema={"required": ("a", "b"), "a": shared,
                                                                         "b": shared}),
             ag.Interrupt(id="odd", reason="input", response_schema={"maximum": math.nan},
                          metadata={"at": when}),
             ag.Interrupt(id="bare", reason="input"))
    session = RunSession()
    session.feed_event({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
    session.feed_event(ag.RunFinishedEvent(thread_id="t", run_id="r",
                                           outcome=ag.RunFinishedInterruptOutcome(interrupts=given)))
    given[0].response_schema["a"]["type"] = "spoiled"
    given[1].metadata["at"] = None
    first, second = session.state.open_interrupts, session.state.open_interrupts

    assert first[0].response_schema == {"required": ["a", "b"], "a": {"type": "string"}, "b": {"type": "string"}}
    assert math.isnan(first[1].response_schema["maximum"]) and first[1].metadata == {"at": when}
    assert first[2] is given[2]  # (nothing in it can change: kept as it is)
    first[1].response_schema["maximum"] = 1
    assert math.isnan(second[1].response_schema["maximum"])
    assert math.isnan(session.state.open_interrupts[1].response_schema["maximum"])


def test_what_marshal_cannot_write_is_copied_one_value_at_a_time() -> None:
    # (nested past the levels marshal writes: the plain path keeps no bytes, and copies each value)
    deep: Any = {"type": "string"}
    for _ in range(3_000):
        deep = {"items": deep}
    kept = KeptInterrupts([ag.Interrupt(id="deep", reason="input", response_schema=deep, metadata={"k": [1]})],
                          plain=True)
    handed = kept.handed_out()
    handed[0].metadata["k"].append(2)
    handed[0].response_schema["items"] = None

    assert kept.interrupts[0].metadata == {"k": [1]} and kept.handed_out()[0].metadata == {"k": [1]}
    assert kept.interrupts[0].response_schema["items"] is not None
    assert kept.interrupts[0].response_schema is not deep


def test_a_loaded_threads_interrupts_are_copied_without_a_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    # A store's record, adopted, is as its parser made it; a caller's data is walked, as before.
    session, _ = folded(2, events=False)
    record = json.loads(json.dumps(session.state.dump()))
    walks = Walks(monkeypatch)
    adopted = ag.ThreadState.load(json.loads(json.dumps(record)), adopt=True)
    walked_adopted = walks.walked
    loaded = ag.ThreadState.load(record)
    spoil(adopted.open_interrupts)
    spoil(adopted.runs[-1].interrupts)

    assert walked_adopted == 0 and walks.walked > 0
    assert as_wire(adopted.open_interrupts) == as_wire(loaded.open_interrupts) == asked(2)
