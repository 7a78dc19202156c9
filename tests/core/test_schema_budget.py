"""What checking answers against agents' ``responseSchema``s may spend: bounded per check, enough for many forms.

A step is the schema checker's unit of work (``core.schema``: about half a microsecond each, as
``python -m bench.schemas`` measures). These tests bound steps, never time: one hostile schema,
however it multiplies its work, is stopped within its bases plus what its size and its answer's size
pay for, and a resume answering 250 interrupts, each with a 50-field form of its own, is checked in
full (before, a resume's fixed budget ran out after about 110 such forms and refused the rest; the
budget now grows with each schema and answer, so the count has no ceiling of its own: the CHANGELOG's
1,000 was measured by hand, four times this test's time).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agui_client.core import schema as schema_module
from agui_client.core.interrupts import ResumeBuilder
from agui_client.errors import InvalidResumePayload, UnusableResponseSchema
from agui_client.testing import ScriptedAgent
from agui_client.types.run import Interrupt

__all__: list[str] = []

pytestmark = pytest.mark.timeout(120)

#: What one check of a small schema may spend at most, whatever it does: a tenth of what one check
#: could spend before (2,500,000 steps and more, 0.4-1.2 s).
SMALL_SCHEMA_STEPS = 250_000


def doubling(levels: int, leaf: Any, combine: str = "allOf") -> dict[str, Any]:
    defs: dict[str, Any] = {"d0": leaf}
    for n in range(1, levels + 1):
        defs[f"d{n}"] = {combine: [{"$ref": f"#/$defs/d{n - 1}"}, {"$ref": f"#/$defs/d{n - 1}"}]}
    return {"$defs": defs, "$ref": f"#/$defs/d{levels}"}


def nested(levels: int, leaf: Any) -> Any:
    for _ in range(levels):
        leaf = {"a": leaf}
    return leaf


HOSTILE = [
    pytest.param(doubling(30, {"type": "string"}), "x", "/$defs/d", id="doubling-all-of"),
    pytest.param({"$defs": {f"d{k}": {"$ref": f"#/$defs/d{k + 1}"} for k in range(60)} | {"d60": {"type": "integer"}},
                  "type": "array", "items": {"$ref": "#/$defs/d0"}}, list(range(2_000)), "/$defs/d",
                 id="reference-chain-per-item"),
    pytest.param({"allOf": [{"properties": {"a": {"$ref": "#"}}}, {"properties": {"a": {"$ref": "#"}}}]},
                 nested(40, "x"), "/allOf", id="doubling-per-level-of-the-answer"),
    pytest.param({"$defs": {f"d{n}": {"dependentSchemas": {"a": {"$ref": f"#/$defs/d{n - 1}"},
                                                           "b": {"$ref": f"#/$defs/d{n - 1}"}}}
                            for n in range(1, 40)} | {"d0": {}},
                  "unevaluatedProperties": False, "$ref": "#/$defs/d39"}, {"a": 1, "b": 1}, "/unevaluatedProperties",
                 id="doubling-inside-unevaluated-properties"),
    pytest.param({"patternProperties": {f"^(a|b{n})*[c-z]{{2,9}}$": {} for n in range(3000)}}, {}, "",
                 id="thousands-of-patterns-to-compile"),
]


def spent(schema: Any, answer: Any) -> int:
    """The steps one resume answering one interrupt spends checking ``answer`` against ``schema``."""
    schema_module._JUDGED.clear()
    allowance = schema_module.shared_allowance([(schema, answer)])
    start = allowance.steps
    schema_module.check(schema, answer, allowance)
    return start - allowance.steps


@pytest.mark.parametrize(("schema", "answer", "pointer"), HOSTILE)
def test_a_hostile_schema_is_stopped_within_its_bound_naming_the_interrupt_and_the_place(schema: Any, answer: Any,
                                                                                         pointer: str) -> None:
    schema_module._JUDGED.clear()
    with pytest.raises(UnusableResponseSchema) as caught:
        ResumeBuilder([Interrupt(id="form-7", reason="input", response_schema=schema)]).answer("form-7", answer).build()

    refusal = caught.value
    assert (refusal.interrupt_id, refusal.ids, refusal.code) == ("form-7", ("form-7",), "over-budget")
    assert refusal.pointer is not None and refusal.pointer.startswith(pointer)
    assert [fault.interrupt_id for fault in refusal.faults["form-7"]] == ["form-7"]
    characters = len(json.dumps(schema, separators=(",", ":")))
    steps = spent(schema, answer)
    assert steps <= SMALL_SCHEMA_STEPS + characters  # (before: 500,000 to 2,000,000 steps)
    # The bound, in steps: the bases, and what the schema's and the answer's sizes pay for (the last
    # charge may go past it by one charge, a few thousand steps at most).
    bound = (schema_module.JUDGE_BUDGET + schema_module.CHECK_BUDGET + schema_module.STEPS_PER_CHAR * characters
             + schema_module.STEPS_PER_VALUE * schema_module._count(answer, 10**6))
    assert steps <= bound + 5_000


def test_many_interrupts_with_hostile_schemas_share_the_bases_of_one_check() -> None:
    # 200 distinct small schemas, each multiplying its work: together they may spend the bases once,
    # and what their characters pay for, not 200 times the bases.
    schemas = [doubling(30, {"type": "string", "title": f"schema {n}"}) for n in range(200)]
    characters = sum(len(json.dumps(schema, separators=(",", ":"))) for schema in schemas)
    schema_module._JUDGED.clear()
    allowance = schema_module.shared_allowance([(schema, "x") for schema in schemas])
    start = allowance.steps
    faults = [schema_module.check(schema, "x", allowance).fault for schema in schemas]

    assert {fault.code for fault in faults if fault is not None} == {"over-budget"}
    assert start - allowance.steps <= schema_module.JUDGE_BUDGET + schema_module.CHECK_BUDGET + characters + 5_000


FIELDS = 50


def form(number: int) -> dict[str, Any]:
    """An ordinary form of its own: 50 fields of five kinds, named and titled for this form."""
    kinds: list[dict[str, Any]] = [
        {"type": "string", "minLength": 1, "maxLength": 200},
        {"type": "integer", "minimum": 0, "maximum": 10_000},
        {"type": "string", "enum": ["low", "medium", "high"]},
        {"type": "boolean"},
        {"type": "string", "pattern": "^[^@ ]+@[^@ ]+$"},
    ]
    properties = {f"form{number}_f{k}": {"title": f"Field {k} of form {number}", **kinds[k % 5]} for k in range(FIELDS)}
    return {"title": f"Form {number}", "type": "object", "properties": properties, "required": list(properties)[:10],
            "additionalProperties": False}


def answer(number: int) -> dict[str, Any]:
    values = ["some text", 42, "medium", True, "someone@example.org"]
    return {f"form{number}_f{k}": values[k % 5] for k in range(FIELDS)}


def test_hundreds_of_interrupts_each_with_a_form_of_its_own_are_checked_in_full(drive: Any, served: Any) -> None:
    # 250 forms: main refused all but some 110 of them; a thousand proved the same at four times the suite's time.
    count = 250
    endpoint = served(ScriptedAgent.interrupts(count, response_schema=[form(n) for n in range(count)]))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")
        schema_module._JUDGED.clear()  # (each form judged afresh, as forms an agent just made are)
        wrong = thread.resume_builder()
        for n in range(count):
            given = answer(n)
            if n == 99:
                given["form99_f1"] = "many"  # (an integer field)
            if n == 248:
                del given["form248_f0"]  # (a required field)
            wrong.answer(f"interrupt-{n + 1}", given)
        with pytest.raises(InvalidResumePayload) as caught:
            thread.run(resume=wrong)
        right = thread.resume_builder()
        for n in range(count):
            right.answer(f"interrupt-{n + 1}", answer(n))
        accepted = thread.run(resume=right)

    refusal = caught.value
    # (before: UnusableResponseSchema, "over-budget" for all but some 110 of the forms)
    assert type(refusal) is InvalidResumePayload and refusal.faults == {}
    assert refusal.ids == ("interrupt-100", "interrupt-249")
    assert any("/form99_f1" in message and "integer" in message for message in refusal.errors["interrupt-100"])
    assert any("'form248_f0' is a required property" in message for message in refusal.errors["interrupt-249"])
    assert accepted.outcome == "success" and len(accepted.result["answers"]) == count
    assert endpoint.agent.request_count == 2  # (the refused resume sent nothing)
