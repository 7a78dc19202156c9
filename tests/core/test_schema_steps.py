"""The client's ceiling on what one response's ``responseSchema`` s may cost: ``max_schema_steps``.

What a resume may spend checking answers grows with its schemas' text (``core.schema.shared_allowance``),
so one ``RUN_FINISHED`` of 16 MiB of schemas that multiply their work bought some 16 million steps, about
9 s of the caller's thread (an event loop's, for an async client) when its interrupts were answered. The
session now refuses such a ``RUN_FINISHED`` as it is read (``SCHEMA-STEPS``), and a resume's checks never
spend more than the ceiling. These tests count steps, never time: each hostile schema here is a
doubling ``allOf`` (which spends whatever it is allowed) padded with a long ``description`` (which buys
it one step a character).
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from clikit import agui_here
from test_checks_off_loop import on_loop
from test_schema_budget import form

from agui_client import AgentClient, LimitExceeded, UnusableResponseSchema
from agui_client.core import schema as schema_module
from agui_client.core.fold import ThreadState
from agui_client.core.fold.document import StateDocument
from agui_client.core.session import RunSession
from agui_client.testing import ScriptedAgent
from agui_client.types.run import Interrupt

__all__: list[str] = []

pytestmark = pytest.mark.timeout(120)

#: The ceiling the tests set: a twentieth of the default, so a hostile response is small to build.
CEILING = 400_000


def hostile(number: int, characters: int) -> dict[str, Any]:
    """A schema that spends whatever it is allowed, padded to about ``characters`` of JSON text."""
    defs: dict[str, Any] = {"d0": {"type": "string"}}
    for n in range(1, 31):
        defs[f"d{n}"] = {"allOf": [{"$ref": f"#/$defs/d{n - 1}"}, {"$ref": f"#/$defs/d{n - 1}"}]}
    schema: dict[str, Any] = {"$defs": defs, "$ref": "#/$defs/d30", "title": f"hostile {number}"}
    schema["description"] = "x" * max(0, characters - len(json.dumps(schema, separators=(",", ":"))))
    return schema


# An ordinary 50-field form of its own: test_schema_budget's.
ordinary = form


def answer(number: int) -> dict[str, Any]:
    values = ["some text", 42, "medium", True, "someone@example.org"]
    return {f"form{number}_f{k}": values[k % 5] for k in range(50)}


class Spent:
    """The steps the checks of one resume spent from their shared allowance (``schema.check`` watched)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.steps: list[int] = []
        self.allowed: list[int] = []
        checking = schema_module.check

        def watched(schema: Any, instance: Any, allowance: Any = None) -> Any:
            before = allowance.steps if allowance is not None else 0
            verdict = checking(schema, instance, allowance)
            if allowance is not None:
                self.steps.append(before - allowance.steps)
                self.allowed.append(before)
            return verdict

        monkeypatch.setattr(schema_module, "check", watched)


def test_a_run_finished_whose_schemas_buy_more_than_the_ceiling_is_refused_naming_the_interrupt(
        drive: Any, served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Three interrupts: an ordinary form, then two hostile schemas of 300,000 characters each. The first
    # hostile one takes what a resume would be allowed past the ceiling (the bases, 200,000, and the
    # texts' characters), and the session refuses the event there.
    schemas = [ordinary(0), hostile(1, 300_000), hostile(2, 300_000)]
    endpoint = served(ScriptedAgent.interrupts(3, response_schema=schemas))

    with drive.client(endpoint.url, max_schema_steps=CEILING) as client:
        thread = client.thread()
        with pytest.raises(LimitExceeded) as caught:
            thread.run("hi")
        refused = caught.value
        # The interrupts are held open (as for any RUN_FINISHED refused), so the thread cannot move past
        # them; answering them is checked within the same ceiling.
        held = [interrupt.id for interrupt in thread.open_interrupts]
        spent = Spent(monkeypatch)
        schema_module._JUDGED.clear()
        builder = thread.resume_builder()
        builder.answer("interrupt-1", answer(0)).answer("interrupt-2", "x").answer("interrupt-3", "x")
        with pytest.raises(UnusableResponseSchema) as unusable:
            thread.run(resume=builder)

    assert (refused.rule, refused.limit, refused.event_type) == ("SCHEMA-STEPS", CEILING, "RUN_FINISHED")
    assert refused.interrupt_id == "interrupt-2"
    assert refused.pointer == "/outcome/interrupts/1/responseSchema"
    assert refused.run_id is not None and refused.run_id == thread.state.runs[-1].run_id
    assert refused.index == 12  # (RUN_STARTED, the text message's eleven events, then the RUN_FINISHED)
    assert "max_schema_steps (400,000)" in str(refused) and "'interrupt-2'" in str(refused)
    # The state folded before the refused event is kept: the user's message and the agent's text.
    assert refused.result is not None
    assert [type(m).__name__ for m in refused.result.state.messages] == ["UserMessage", "AssistantMessage"]
    assert refused.result.text == "I need 3 answer(s) before I can go on."
    assert held == ["interrupt-1", "interrupt-2", "interrupt-3"]
    # The resume spent no more than the ceiling (the last charge may pass it by a few thousand steps),
    # though the schemas' text would have bought it 800,000.
    assert spent.allowed[0] == CEILING
    assert sum(spent.steps) <= CEILING + 5_000
    assert unusable.value.code == "over-budget" and "interrupt-2" in unusable.value.ids
    assert endpoint.agent.request_count == 1  # (the refused resume sent nothing)


def test_ordinary_forms_within_the_ceiling_are_accepted_and_answered(drive: Any, served: Any) -> None:
    # 40 forms of their own (some 3,300 characters each) buy 330,000 steps: within the ceiling, the
    # response is accepted and a resume answering every form is checked in full.
    count = 40
    endpoint = served(ScriptedAgent.interrupts(count, response_schema=[ordinary(n) for n in range(count)]))

    with drive.client(endpoint.url, max_schema_steps=CEILING) as client:
        thread = client.thread()
        asked = thread.run("hi")
        schema_module._JUDGED.clear()
        builder = thread.resume_builder()
        for n in range(count):
            builder.answer(f"interrupt-{n + 1}", answer(n))
        accepted = thread.run(resume=builder)

    assert asked.outcome == "interrupt" and len(asked.interrupts) == count
    assert accepted.outcome == "success" and len(accepted.result["answers"]) == count


def test_without_a_ceiling_the_schemas_size_pays_for_their_checks(
        drive: Any, served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # ``None``: the response is accepted, and the resume is allowed what the texts buy (as before): more
    # than the ceiling the other tests set, which refuses these very schemas.
    schemas = [hostile(1, 300_000), hostile(2, 300_000)]
    endpoint = served(ScriptedAgent.interrupts(2, response_schema=schemas))
    bought = schema_module.shared_allowance([(schema, "x") for schema in schemas]).steps

    with drive.client(endpoint.url, max_schema_steps=None) as client:
        thread = client.thread()
        asked = thread.run("hi")
        spent = Spent(monkeypatch)
        builder = thread.resume_builder().answer("interrupt-1", "x").answer("interrupt-2", "x")
        with pytest.raises(UnusableResponseSchema) as unusable:
            thread.run(resume=builder)

    assert asked.outcome == "interrupt" and [i.id for i in asked.interrupts] == ["interrupt-1", "interrupt-2"]
    assert bought > CEILING and spent.allowed[0] == bought
    assert unusable.value.code == "over-budget"
    assert endpoint.agent.request_count == 1


def test_a_session_measures_the_schemas_with_the_resumes_own_arithmetic() -> None:
    # The refusal and the resume's allowance are one rule: the session refuses exactly the schemas whose
    # shared allowance (each answer null) passes the ceiling.
    schemas = [hostile(n, 100_000) for n in range(5)]
    wanted = schema_module.shared_allowance([(schema, None) for schema in schemas]).steps
    assert schema_module.past_ceiling(schemas, wanted) is None
    assert schema_module.past_ceiling(schemas, wanted - 1) == (4, wanted)
    assert schema_module.shared_allowance([(schema, None) for schema in schemas], wanted - 1).steps == wanted - 1

    def finished(ceiling: int | None) -> LimitExceeded | None:
        session = RunSession(max_schema_steps=ceiling)
        session.feed_event({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
        interrupts = [Interrupt(id=f"i{n}", reason="input", response_schema=schema) for n, schema in enumerate(schemas)]
        # (first, an interrupt with no schema: it buys nothing, and the pointer counts it among the outcome's)
        asked = [{"id": "confirm", "reason": "confirmation"},
                 *({"id": i.id, "reason": i.reason, "responseSchema": i.response_schema} for i in interrupts)]
        try:
            session.feed_event({"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
                                "outcome": {"type": "interrupt", "interrupts": asked}})
        except LimitExceeded as exc:
            return exc
        return None

    assert finished(wanted) is None and finished(None) is None
    refused = finished(wanted - 1)
    assert refused is not None and (refused.interrupt_id, refused.index, refused.run_id) == ("i4", 1, "r")
    assert refused.pointer == "/outcome/interrupts/5/responseSchema"


def test_a_resume_is_checked_off_the_event_loop_in_the_async_shell(drive: Any, served: Any,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # A resume's checks may take seconds of CPU (up to the ceiling); on the loop, every other run on it
    # waited. The async shell plans such a run in a worker thread; the sync shell in the caller's.
    endpoint = served(ScriptedAgent.interrupts(2, response_schema=[ordinary(0), ordinary(1)]))
    where: list[tuple[bool, int]] = []
    checking = schema_module.check

    def watched(schema: Any, instance: Any, allowance: Any = None) -> Any:
        try:
            asyncio.get_running_loop()
            on_loop = True
        except RuntimeError:
            on_loop = False
        where.append((on_loop, threading.get_ident()))
        return checking(schema, instance, allowance)

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")
        monkeypatch.setattr(schema_module, "check", watched)
        builder = thread.resume_builder().answer("interrupt-1", answer(0)).answer("interrupt-2", answer(1))
        resumed = thread.run(resume=builder)

    assert resumed.outcome == "success"
    # (each answer is checked by build() and again as the egress check, both in the plan)
    assert len(where) == 4 and not any(on_loop for on_loop, _ in where)
    if drive.kind == "sync":
        assert {ident for _, ident in where} == {threading.get_ident()}


def test_only_the_checks_leave_the_event_loop_the_threads_state_is_read_where_it_is_folded(
        drive: Any, served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The worker thread makes the resume's checks, which read the answers and copies of the interrupts. The
    # rest of the plan reads the thread's folded state (its messages, typed there as they are read; its
    # state document), which the loop's other tasks may read or change meanwhile: it is read on the loop,
    # as the fold does (in the sync shell, on the caller's thread, with the checks).
    endpoint = served(ScriptedAgent.interrupts(2, response_schema=[ordinary(0), ordinary(1)]))
    reads: list[tuple[str, bool, int]] = []

    def watched(name: str, real: Any) -> Any:
        def read(*args: Any, **kwargs: Any) -> Any:
            reads.append((name, on_loop(), threading.get_ident()))
            return real(*args, **kwargs)
        return read

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")
        monkeypatch.setattr(schema_module, "check", watched("check", schema_module.check))
        monkeypatch.setattr(ThreadState, "input_messages", watched("messages", ThreadState.input_messages))
        monkeypatch.setattr(StateDocument, "copy", watched("state", StateDocument.copy))
        builder = thread.resume_builder().answer("interrupt-1", answer(0)).answer("interrupt-2", answer(1))
        assert thread.run(resume=builder).outcome == "success"

    checks = [(loop, ident) for name, loop, ident in reads if name == "check"]
    state = [(loop, ident) for name, loop, ident in reads if name != "check"]
    assert len(checks) == 4 and {name for name, _, _ in reads} == {"check", "messages", "state"}
    if drive.kind == "sync":
        assert {ident for _, _, ident in reads} == {threading.get_ident()}
    else:
        assert not any(loop for loop, _ in checks) and all(loop for loop, _ in state)


@pytest.mark.parametrize("value", [0, -1, 1.5, "100"])
def test_the_setting_takes_a_positive_int_or_none(value: Any) -> None:
    with pytest.raises(ValueError) as refused:
        AgentClient("http://127.0.0.1:9/", max_schema_steps=value)
    assert "max_schema_steps must be a positive int or None" in str(refused.value)
    client = AgentClient("http://127.0.0.1:9/")
    try:
        assert client.max_schema_steps == schema_module.DEFAULT_MAX_SCHEMA_STEPS
        client.max_schema_steps = None
        assert client.max_schema_steps is None
        with pytest.raises(ValueError):
            client.max_schema_steps = value
    finally:
        client.close()


def test_the_cli_bounds_a_responses_schemas_with_max_schema_steps(served: Any) -> None:
    endpoint = served(ScriptedAgent.interrupts(2, response_schema=[hostile(1, 300_000), hostile(2, 300_000)]))

    bounded = agui_here("run", endpoint.url, "-m", "hi", "--max-schema-steps", str(CEILING))
    unbounded = agui_here("run", endpoint.url, "-m", "hi", "--max-schema-steps", "none")
    refused = agui_here("run", endpoint.url, "-m", "hi", "--max-schema-steps", "0")

    assert bounded.returncode != 0 and "SCHEMA-STEPS" in bounded.stdout + bounded.stderr
    assert unbounded.returncode == 0, unbounded.stderr
    assert "SCHEMA-STEPS" not in unbounded.stdout + unbounded.stderr
    assert refused.returncode == 2 and "--max-schema-steps" in refused.stderr


#: Each item costs its check some 27 steps, more than the 20 it buys: 10,000 of them spend about 270,000
#: of the 400,000 the default allows them, past a ceiling of 250,000 the schema itself stays within.
COSTLY_ITEMS = {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]}}


def test_the_clis_form_checks_use_max_schema_steps(served: Any) -> None:
    endpoint = served(ScriptedAgent.interrupts(1, response_schema=COSTLY_ITEMS))
    items = json.dumps(list(range(10_000)))

    chat = agui_here("chat", endpoint.url, "--max-schema-steps", "250000", stdin=f"hi\n{items}\n")
    run = agui_here("run", endpoint.url, "-m", "hi", "--max-schema-steps", "250000", "--answer", items)

    # The chat's form refuses the answer as the run would and asks again (the input then ends), where it
    # took it with the default ceiling and the run refused it after "answer: ..." was shown.
    assert "not accepted: responseSchema cannot be used (over-budget" in chat.stdout
    assert "once more:" in chat.stdout and "\nanswer: [0, 1" not in chat.stdout
    # `agui run --answer` refuses before saying the answer was taken.
    assert run.returncode != 0 and "over-budget" in run.stdout
    assert "answer to interrupt-1" not in run.stdout
    # Neither sent a resume: the agent saw the first request of each, and nothing more.
    assert len(endpoint.received) == 2 and all("resume" not in request.body for request in endpoint.received)
