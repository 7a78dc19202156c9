"""Checking an answer before the run: ``check_answer``, a builder refusing an id that is not open at once,
and a new message on a waiting thread refused with the questions (``AwaitingAnswers``), through both shells
against a ScriptedAgent served by uvicorn on 127.0.0.1.
"""

from __future__ import annotations

from typing import Any

import pytest

import agui_client as ag
from agui_client.testing import ScriptedAgent


def test_check_answer_names_each_problem_with_its_pointer(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.demo())

    with drive.client(endpoint.url) as client:
        result = client.thread().run("Delete the staging database")
    [interrupt] = result.interrupts

    wrong = ag.check_answer(interrupt, {"approved": "maybe", "ttl_minutes": -3, "environment": "prod"})
    missing = ag.check_answer(interrupt, {"ttl_minutes": 5})
    not_json = ag.check_answer(interrupt, {"approved": True, "comment": {1, 2}})

    assert ag.check_answer(interrupt, {"approved": True, "ttl_minutes": 0}) == []
    assert [(p.pointer, p.keyword, p.code) for p in wrong] == [
        ("/approved", "type", "invalid"), ("/environment", "enum", "invalid"), ("/ttl_minutes", "minimum", "invalid")]
    assert wrong[2].message == "-3 is less than the minimum of 0"
    assert wrong[2].schema_pointer == "/properties/ttl_minutes/minimum"
    assert [(p.pointer, p.keyword, p.missing) for p in missing] == [("", "required", "approved")]
    assert "'approved' is a required property" in missing[0].message
    assert [p.missing for p in wrong] == [None, None, None]
    assert [(p.pointer, p.code) for p in not_json] == [("/comment", "not-json")]


@pytest.mark.parametrize("schema, answer, expected", [
    ({"type": "object", "properties": {"who": {"type": "object", "required": ["name", "a/b~c"]}}},
     {"who": {"name": "x"}}, [("/who", "required", "a/b~c")]),
    ({"dependentRequired": {"card": ["expiry", "cvc"]}}, {"card": "4111", "cvc": "1"},
     [("", "dependentRequired", "expiry")]),
    ({"$schema": "http://json-schema.org/draft-07/schema#", "dependencies": {"card": ["expiry"]}},
     {"card": "4111"}, [("", "dependencies", "expiry")]),
    ({"required": ["it's"]}, {}, [("", "required", "it's")]),
])
def test_check_answer_names_the_property_an_answer_lacks(schema: dict[str, Any], answer: Any,
                                                         expected: list[tuple[str, str, str]]) -> None:
    # (JSON Schema puts a missing property's problem at the object that lacks it; a form needs the field)
    problems = ag.check_answer(schema, answer)

    assert [(p.pointer, p.keyword, p.missing) for p in problems] == expected


def test_check_answer_reports_a_schema_that_cannot_judge_and_accepts_anything_without_one() -> None:
    broken = ag.Interrupt(id="i1", reason="input", response_schema={"$ref": "https://example.invalid/s.json"})
    free = ag.Interrupt(id="i2", reason="input")

    [problem] = ag.check_answer(broken, {"x": 1})

    assert problem.code == "unresolvable" and problem.pointer == ""
    assert ag.check_answer(free, ["anything", 1]) == []
    assert ag.check_answer({"type": "integer", "minimum": 1}, 0)[0].keyword == "minimum"


def test_a_new_message_while_interrupts_are_open_says_the_thread_waits_for_answers(
        drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.interrupts(2))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")
        with pytest.raises(ag.UncoveredInterrupts) as by_run:
            thread.run("never mind, do something else")
        with pytest.raises(ag.AwaitingAnswers) as by_stream, thread.stream("or this"):
            pass
        resume = thread.resume_builder().answer("interrupt-1", {"answer": "eu"}).answer("interrupt-2", {"answer": "s"})
        answered = thread.run(resume=resume)

    error = by_run.value
    assert type(error) is ag.AwaitingAnswers and type(by_stream.value) is ag.AwaitingAnswers
    assert error.ids == ("interrupt-1", "interrupt-2") and error.thread_id == thread.id
    assert [i.message for i in error.interrupts] == [f"Question {n} of 2: what should I do?" for n in (1, 2)]
    assert error.problems["uncovered"] == ("interrupt-1", "interrupt-2")
    text = str(error)
    assert "waiting for 2 answers" in text
    assert "'interrupt-1' ('Question 1 of 2: what should I do?')" in text
    assert "'interrupt-2' ('Question 2 of 2: what should I do?')" in text
    assert "thread.resume_builder()" in text and "thread.run(resume=builder)" in text
    assert endpoint.agent.request_count == 2
    assert answered.outcome == "success"


def test_a_resume_list_that_leaves_one_out_is_still_the_plain_uncovered_refusal(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.interrupts(2))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")
        with pytest.raises(ag.UncoveredInterrupts) as caught:
            thread.run(resume=[ag.ResumeEntry(interrupt_id="interrupt-1", status="cancelled")])

    assert type(caught.value) is ag.UncoveredInterrupts
    assert caught.value.ids == ("interrupt-2",)


def test_the_threads_builder_refuses_an_id_that_is_not_open_at_once(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.interrupts(2))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")
        builder = thread.resume_builder()
        with pytest.raises(ag.UnknownInterrupt) as answered:
            builder.answer("interrupt-3", {"answer": "x"})
        with pytest.raises(ag.UnknownInterrupt) as abandoned:
            builder.abandon("interrupt-3")
        result = thread.run(resume=builder.abandon("interrupt-1").abandon("interrupt-2"))

    for caught in (answered, abandoned):
        assert caught.value.ids == ("interrupt-3",)
        assert caught.value.open_ids == ("interrupt-1", "interrupt-2")
        assert "['interrupt-1', 'interrupt-2']" in str(caught.value)
    assert result.outcome == "success"
    assert [e["interruptId"] for e in endpoint.received[-1].body["resume"]] == ["interrupt-1", "interrupt-2"]
