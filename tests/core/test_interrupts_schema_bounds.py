"""A hostile ``responseSchema`` cannot hang, crash or reach out from the check of an answer.

The schema is the agent's. Every case here took minutes (or raised ``RecursionError`` /
``OverflowError``, or fetched a reference) with jsonschema used as it comes; each test runs under a
generous timeout and asserts what the check decided, never how long it took.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agui_client.cli.forms import field_errors
from agui_client.core import schema as schema_module
from agui_client.core.interrupts import SCHEMA_FAULTS, ResumeBuilder, check_resume
from agui_client.errors import (
    InvalidResumePayload,
    ResumeRefused,
    SchemaFault,
    UncoveredInterrupts,
    UnusableResponseSchema,
)
from agui_client.testing import ScriptedAgent
from agui_client.types.run import Interrupt, ResumeEntry
from agui_client.wire.sink import collect_warnings

__all__: list[str] = []

# Without the bounds the hostile cases below run for minutes; 20 s is far beyond what any of them needs.
pytestmark = pytest.mark.timeout(20)

HOSTILE = "^(a+)+$"
BACKTRACKS = "a" * 34 + "!"


def ask(schema: Any, id: str = "i1") -> Interrupt:
    return Interrupt(id=id, reason="input", response_schema=schema)


def judged(schema: Any, payload: Any) -> ResumeRefused | None:
    """What ``build()`` decides for one answer: the refusal, or ``None`` when the answer is accepted."""
    try:
        ResumeBuilder([ask(schema)]).answer("i1", payload).build()
    except ResumeRefused as exc:
        return exc
    return None


def unusable(schema: Any, payload: Any = "x") -> UnusableResponseSchema:
    refusal = judged(schema, payload)
    assert isinstance(refusal, UnusableResponseSchema), refusal
    assert refusal.interrupt_id == "i1" and refusal.ids == ("i1",) and refusal.code in SCHEMA_FAULTS
    return refusal


def refused_payload(schema: Any, payload: Any) -> InvalidResumePayload:
    """The answer is refused because it fails the schema (which could judge it)."""
    refusal = judged(schema, payload)
    assert type(refusal) is InvalidResumePayload, refusal
    return refusal


def doubling(levels: int, leaf: Any, combine: str = "allOf") -> dict[str, Any]:
    """A schema whose definition n applies definition n-1 twice: 2**levels applications of ``leaf``."""
    defs: dict[str, Any] = {"d0": leaf}
    for n in range(1, levels + 1):
        defs[f"d{n}"] = {combine: [{"$ref": f"#/$defs/d{n - 1}"}, {"$ref": f"#/$defs/d{n - 1}"}]}
    return {"$defs": defs, "$ref": f"#/$defs/d{levels}"}


# --------------------------------------------------------------------------------------------------
# Regexes run on a linear-time engine
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "payload"),
    [
        pytest.param({"pattern": HOSTILE}, BACKTRACKS, id="nested-plus-34"),
        pytest.param({"pattern": HOSTILE}, "a" * 10_000 + "!", id="nested-plus-10000"),
        pytest.param({"pattern": "(a|a)*b"}, "a" * 40, id="ambiguous-alternation"),
        pytest.param({"pattern": "^(.*a){20}$"}, "a" * 30 + "b", id="repeated-dot-star"),
        pytest.param({"pattern": r"^(\w+\s?)*$"}, "a" * 40 + "!", id="nested-quantifiers"),
        pytest.param({"type": "object", "properties": {"code": {"pattern": HOSTILE}}}, {"code": BACKTRACKS},
                     id="in-a-property"),
        pytest.param({"propertyNames": {"pattern": HOSTILE}}, {BACKTRACKS: 1}, id="property-names"),
        pytest.param({"patternProperties": {HOSTILE: {"type": "integer"}}, "additionalProperties": False},
                     {BACKTRACKS: 1}, id="additional-properties"),
        pytest.param({"patternProperties": {HOSTILE: {}}, "unevaluatedProperties": False}, {BACKTRACKS: 1},
                     id="unevaluated-properties"),
    ],
)
def test_a_backtracking_pattern_is_judged_at_once_and_refuses_what_it_does_not_match(schema: Any,
                                                                                    payload: Any) -> None:
    refusal = refused_payload(schema, payload)
    assert len(refusal.errors["i1"]) == 1


def test_a_backtracking_pattern_property_applies_to_the_keys_it_matches_only() -> None:
    schema = {"patternProperties": {HOSTILE: {"type": "integer"}}}
    assert judged(schema, {BACKTRACKS: "not an integer", "aaaa": 1}) is None
    assert refused_payload(schema, {"aaaa": "x"}).errors["i1"] == ("at /aaaa: 'x' is not of type 'integer'",)


def test_an_ordinary_pattern_still_accepts_and_refuses_as_ecma_262_reads_it() -> None:
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": r"^[A-Z]{3}-\d{4}$"}}}
    assert judged(schema, {"code": "ABC-1234"}) is None
    assert refused_payload(schema, {"code": "ABC-12345"}).errors["i1"][0].startswith("at /code:")
    # ECMA-262: "$" is the end of the text (Python's re also matches before a final newline), and \d
    # is ASCII (Python's re also matches other scripts' digits).
    refused_payload(schema, {"code": "ABC-1234\n"})
    refused_payload(schema, {"code": "ABC-١٢٣٤"})


def test_ecma_262_syntax_python_does_not_read_is_still_a_pattern() -> None:
    assert judged({"pattern": r"^\p{L}+$"}, "héllo") is None
    refused_payload({"pattern": r"^\p{L}+$"}, "h3llo")
    assert judged({"pattern": r"^\u{1F600}\u00e9$"}, "😀é") is None
    refused_payload({"pattern": "^[^]$"}, "ab")


def test_lookaheads_opening_an_anchored_pattern_are_checked_exactly() -> None:
    password = {"pattern": r"^(?=.*[A-Z])(?=.*\d)(?!.*\s).{8,}$"}
    with collect_warnings() as sink:
        assert judged(password, "Secret123") is None
        for wrong in ("secret123", "SecretPass", "Sec 1234x", "Sec1"):
            refused_payload(password, wrong)
    assert sink.items == []


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        pytest.param(r"^(\w)\1$", "backreference", id="backreference"),
        pytest.param(r"\d+(?=px)", "lookahead", id="lookahead-not-at-the-start"),
        pytest.param(r"(?<!\.)com$", "lookbehind", id="lookbehind"),
    ],
)
def test_a_pattern_the_linear_engine_cannot_run_is_not_checked_and_says_where(pattern: str, why: str) -> None:
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": pattern}}}
    with collect_warnings() as sink:
        entries = ResumeBuilder([ask(schema)]).answer("i1", {"code": "zz"}).build()
    assert [entry.payload for entry in entries] == [{"code": "zz"}]
    (warning,) = sink.items
    assert (warning.code, warning.pointer) == ("IR-30", "/responseSchema/properties/code/pattern")
    assert "'i1'" in warning.message and why in warning.message
    # The rest of the schema still judges.
    refused_payload(schema, {"code": 7})


def test_a_pattern_property_the_engine_cannot_run_covers_its_keys_without_judging_them() -> None:
    # Lenient on purpose: a key it might match is neither additional nor checked against its subschema.
    schema = {"patternProperties": {r"^(\w)\1$": {"type": "integer"}}, "additionalProperties": False}
    with collect_warnings() as sink:
        assert judged(schema, {"zz": "text"}) is None
    assert [w.code for w in sink.items] == ["IR-30"]


def test_the_form_prompt_checks_a_backtracking_pattern_at_once() -> None:
    assert field_errors({"type": "string", "pattern": HOSTILE}, BACKTRACKS) == [
        f"{BACKTRACKS!r} does not match {HOSTILE!r}"]
    assert field_errors({"type": "string", "pattern": HOSTILE}, "aaaa") == []


# --------------------------------------------------------------------------------------------------
# No network, no files
# --------------------------------------------------------------------------------------------------


async def _schema_server(scope: Any, receive: Any, send: Any) -> None:
    """Serves a JSON Schema that would accept only integers (the ``served`` fixture records each request)."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b'{"type": "integer"}'})


@pytest.mark.parametrize(
    ("keyword", "inside", "pointer"),
    [
        pytest.param("$ref", False, "/$ref", id="ref"),
        pytest.param("$ref", True, "/properties/a/$ref", id="ref-in-a-property"),
        pytest.param("$dynamicRef", False, "/$dynamicRef", id="dynamic-ref"),
    ],
)
def test_a_remote_reference_is_never_fetched(served: Any, keyword: str, inside: bool, pointer: str) -> None:
    endpoint = served(_schema_server)
    reference = {keyword: endpoint.url + "/schema.json"}
    schema = {"properties": {"a": reference}} if inside else reference

    refusal = unusable(schema, {"a": "x"} if inside else "x")

    assert (refusal.code, refusal.pointer) == ("unresolvable", pointer)
    assert endpoint.received == []


def test_a_remote_dialect_is_never_fetched_and_the_schema_is_read_as_2020_12(served: Any) -> None:
    endpoint = served(_schema_server)
    schema = {"$schema": endpoint.url + "/meta.json", "type": "boolean"}

    assert judged(schema, True) is None
    refused_payload(schema, "x")
    assert endpoint.received == []


def test_a_reference_that_is_no_string_is_unresolvable_never_an_attribute_error() -> None:
    # (draft 4's metaschema does not say "$ref" is a string, so the schema is judged sound)
    refusal = unusable({"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"a": {"$ref": 5}}},
                       {"a": 1})
    assert (refusal.code, refusal.pointer) == ("unresolvable", "/properties/a/$ref")


def test_a_file_reference_is_never_read(tmp_path: Path) -> None:
    integers = tmp_path / "schema.json"
    integers.write_text(json.dumps({"type": "integer"}))

    for uri in (integers.as_uri(), "file:///etc/passwd", "file:///dev/zero"):
        refusal = unusable({"$ref": uri}, "x")
        assert (refusal.code, refusal.pointer, refusal.keyword) == ("unresolvable", "/$ref", "$ref")


def test_formats_are_annotations_so_no_format_checker_runs_on_an_answer() -> None:
    # (Some checkers are slow or reach out, such as idn-hostname or uri with rfc3987 installed.)
    schema = {"type": "object", "properties": {name: {"format": name} for name in (
        "idn-hostname", "uri", "email", "date-time", "regex", "iri-reference")}}
    assert judged(schema, {name: "(not one" for name in schema["properties"]}) is None


def test_a_reference_to_a_draft_metaschema_resolves_locally() -> None:
    schema = {"$ref": "https://json-schema.org/draft/2020-12/schema"}
    assert judged(schema, {"type": "string"}) is None
    refused_payload(schema, {"type": 7})


# --------------------------------------------------------------------------------------------------
# Amplification, size and nesting
# --------------------------------------------------------------------------------------------------


NAMES = [f"x{n}" for n in range(9000)]


def nested(levels: int, leaf: Any) -> Any:
    for _ in range(levels):
        leaf = {"a": leaf}
    return leaf


@pytest.mark.parametrize(
    ("schema", "payload"),
    [
        pytest.param(doubling(30, {"type": "string"}), "x", id="doubling-all-of"),
        pytest.param(doubling(30, {"type": "string"}, "anyOf"), 1, id="doubling-any-of-failing"),
        pytest.param({**doubling(16, {"$ref": "#/$defs/big"}),
                      "$defs": {**doubling(16, {"$ref": "#/$defs/big"})["$defs"],
                                "big": {f"x{n}": n for n in range(9000)}}}, "x", id="doubling-into-a-large-object"),
        pytest.param({"allOf": [{"properties": {"a": {"$ref": "#"}}}, {"properties": {"a": {"$ref": "#"}}}]},
                     nested(40, "x"), id="doubling-per-level-of-the-answer"),
        pytest.param({"$defs": {f"d{n}": {"dependentSchemas": {"a": {"$ref": f"#/$defs/d{n - 1}"},
                                                               "b": {"$ref": f"#/$defs/d{n - 1}"}}}
                                for n in range(1, 40)} | {"d0": {}},
                      "unevaluatedProperties": False, "$ref": "#/$defs/d39"}, {"a": 1, "b": 1},
                     id="doubling-inside-unevaluated-properties"),
        pytest.param({"anyOf": [{"type": "integer"}] * 1000}, "y" * 100_000, id="errors-quoting-a-large-answer"),
        pytest.param(doubling(24, {"dependentRequired": {"a": NAMES}}), {"a": 1} | dict.fromkeys(NAMES, 1),
                     id="doubling-into-a-long-list"),
        pytest.param(doubling(24, {"properties": {"a": {}}, "additionalProperties": False}), dict.fromkeys(NAMES, 1),
                     id="doubling-over-a-large-answer"),
    ],
)
def test_a_schema_that_multiplies_its_work_is_refused_over_budget(schema: Any, payload: Any) -> None:
    refusal = unusable(schema, payload)
    assert refusal.code == "over-budget"


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        # (patterns are compiled as the schema is judged, each a hundred steps and more)
        pytest.param({"patternProperties": {f"^(a|b{n})*[c-z]{{2,9}}$": {} for n in range(3000)}}, "",
                     id="thousands-of-patterns"),
        # (draft 3's metaschema is no table: its schemas are judged whole, some 440 steps a subschema)
        pytest.param({"$schema": "http://json-schema.org/draft-03/schema#",
                      "properties": {f"p{n}": {} for n in range(6000)}}, "/properties/p", id="judged-whole"),
    ],
)
def test_judging_a_schema_that_multiplies_its_work_is_refused_over_budget(schema: Any, pointer: str) -> None:
    refusal = unusable(schema, {})
    assert refusal.code == "over-budget" and refusal.pointer.startswith(pointer)
    assert "judging the schema itself" in (refusal.reason or "")


def test_the_budget_names_where_checking_stopped() -> None:
    refusal = unusable(doubling(30, {"type": "string"}))
    assert refusal.pointer.startswith("/$defs/d") and refusal.keyword in ("$ref", "allOf")


def test_a_large_ordinary_answer_fits_the_budget() -> None:
    schema = {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string", "pattern": "^n"}},
                                         "required": ["name"]}}
    assert judged(schema, [{"name": f"n{n}"} for n in range(20_000)]) is None


def test_a_schema_of_exactly_the_most_values_still_judges() -> None:
    # (the object, its list and 19,998 numbers: MAX_SCHEMA_VALUES exactly)
    assert judged({"enum": list(range(19_998))}, 5) is None


@pytest.mark.parametrize(
    ("schema", "code", "pointer"),
    [
        pytest.param(nested(100, {"type": "string"}), "too-deep", "/a" * 65, id="nested-past-the-cap"),
        pytest.param({"enum": list(range(30_000))}, "too-large", "", id="many-values"),
        # (the object, its list and 19,999 numbers: one value past MAX_SCHEMA_VALUES)
        pytest.param({"enum": list(range(19_999))}, "too-large", "", id="one-value-past-the-cap"),
        pytest.param({"description": "x" * 2_000_000}, "too-large", "", id="much-text"),
        # ("description" and 999,990 characters: one character past MAX_SCHEMA_TEXT)
        pytest.param({"description": "x" * 999_990}, "too-large", "", id="one-character-past-the-cap"),
        # (a schema made in Python, not read from JSON, may hold a key JSON cannot)
        pytest.param({"properties": {1: {"type": "string"}}}, "not-a-schema", "/properties", id="key-not-a-string"),
        pytest.param({"enum": [{1, 2}]}, "not-a-schema", "/enum/0", id="not-json"),
    ],
)
def test_a_schema_too_large_or_too_deep_is_refused_never_a_recursion_error(schema: Any, code: str,
                                                                          pointer: str) -> None:
    refusal = unusable(schema)
    assert (refusal.code, refusal.pointer) == (code, pointer)


@pytest.mark.parametrize(
    ("schema", "payload"),
    [
        pytest.param({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}, 1,
                     id="reference-cycle"),
        pytest.param({"$ref": "#", "unevaluatedProperties": False}, {"a": 1}, id="cycle-in-unevaluated-properties"),
        pytest.param({"properties": {"a": {"$ref": "#"}}}, nested(400, "x"), id="answer-nested-too-deep"),
    ],
)
def test_nesting_past_what_the_stack_allows_is_refused_never_a_recursion_error(schema: Any, payload: Any) -> None:
    refusal = unusable(schema, payload)
    assert refusal.code == "too-deep" and refusal.keyword in ("$ref", "unevaluatedProperties")


def test_a_check_started_near_the_recursion_limit_still_ends_in_a_fault() -> None:
    frame: Any = sys._getframe()
    depth = 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1

    def dive(levels: int) -> ResumeRefused | None:
        return dive(levels - 1) if levels else judged({"$ref": "#", "unevaluatedProperties": False}, {"a": 1})

    for room in (200, 60, 25):
        refusal = dive(sys.getrecursionlimit() - depth - room)
        assert isinstance(refusal, UnusableResponseSchema) and refusal.code == "too-deep"


def test_a_deeply_nested_schema_is_refused_before_judging_the_schema_itself() -> None:
    # 200 levels of properties made jsonschema's own schema check raise RecursionError.
    schema: Any = {"type": "string"}
    for _ in range(200):
        schema = {"properties": {"a": schema}}
    assert unusable(schema).code == "too-deep"


# --------------------------------------------------------------------------------------------------
# Keywords with costs of their own
# --------------------------------------------------------------------------------------------------


def test_unique_items_on_a_large_array_of_objects() -> None:
    schema = {"type": "array", "uniqueItems": True}
    assert judged(schema, [{"a": n} for n in range(20_000)]) is None
    refused_payload(schema, [{"a": 1, "b": [1]}, {"b": [1.0], "a": 1}])  # equal: key order and 1 == 1.0
    assert judged(schema, [1, True, "1", None, 0, False]) is None  # a boolean is not a number


@pytest.mark.parametrize(
    ("divisor", "accepted", "refused"),
    [
        pytest.param(0.5, 10 ** 400, 0.75, id="huge-integer-by-a-fraction"),
        pytest.param(10 ** 400, 0, 1.5, id="fraction-by-a-huge-integer"),
        pytest.param(1e-308, 1e308, None, id="tiny-divisor"),
        pytest.param(0.1, 0.3, 0.35, id="decimal-values"),
    ],
)
def test_multiple_of_is_exact_on_the_decimal_values_and_never_overflows(divisor: Any, accepted: Any,
                                                                        refused: Any) -> None:
    schema = {"type": "number", "multipleOf": divisor}
    assert judged(schema, accepted) is None
    if refused is not None:
        refused_payload(schema, refused)


# --------------------------------------------------------------------------------------------------
# A subschema cannot switch to another draft's unguarded validator
# --------------------------------------------------------------------------------------------------


DRAFT_7 = "http://json-schema.org/draft-07/schema#"


@pytest.mark.parametrize(
    ("schema", "payload", "pointer"),
    [
        pytest.param({"properties": {"a": {"$schema": DRAFT_7, "pattern": HOSTILE}}}, {"a": BACKTRACKS},
                     "/properties/a", id="in-a-property"),
        pytest.param({"not": {"$schema": DRAFT_7, "pattern": HOSTILE}}, BACKTRACKS, "/not", id="under-not"),
        pytest.param({"$ref": "#/default", "default": {"$schema": DRAFT_7, "pattern": HOSTILE}}, BACKTRACKS,
                     "/default", id="reached-by-reference"),
    ],
)
def test_a_subschema_naming_its_own_draft_is_refused(schema: Any, payload: Any, pointer: str) -> None:
    refusal = unusable(schema, payload)
    assert (refusal.code, refusal.pointer) == ("embedded-dialect", pointer)


def test_the_root_dialect_is_honoured_where_the_schema_refers_back_to_itself() -> None:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "pattern": HOSTILE,
              "properties": {"a": {"$ref": "#"}}}
    refusal = refused_payload(schema, {"a": BACKTRACKS})
    assert refusal.errors["i1"] == (f"at /a: {BACKTRACKS!r} does not match {HOSTILE!r}",)


def test_data_holding_a_dialect_is_not_a_subschema() -> None:
    schema = {"const": {"$schema": DRAFT_7}, "default": {"$schema": DRAFT_7}}
    assert judged(schema, {"$schema": DRAFT_7}) is None


def test_an_older_draft_is_still_checked_with_the_bounds() -> None:
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"a": {"pattern": HOSTILE}},
              "maximum": 5, "exclusiveMaximum": True}
    refused_payload(schema, {"a": BACKTRACKS})
    refused_payload(schema, 5)
    assert judged(schema, 4) is None


# --------------------------------------------------------------------------------------------------
# The error: typed, naming the interrupt, the pointer and the reason
# --------------------------------------------------------------------------------------------------


def test_a_schema_fault_names_the_interrupt_the_pointer_and_the_reason() -> None:
    schema = {"type": "object", "properties": {"ticket": {"$ref": "#/$defs/missing"}}}
    refusal = judged(schema, {"ticket": 1})

    assert isinstance(refusal, UnusableResponseSchema) and isinstance(refusal, InvalidResumePayload)
    assert (refusal.interrupt_id, refusal.code, refusal.pointer, refusal.keyword) == (
        "i1", "unresolvable", "/properties/ticket/$ref", "$ref")
    (fault,) = refusal.faults["i1"]
    assert fault == SchemaFault(code="unresolvable", reason=refusal.reason, pointer="/properties/ticket/$ref",
                                keyword="$ref", interrupt_id="i1")
    assert refusal.problems["invalid"] == ("i1",)


def test_schema_faults_are_kept_when_another_problem_gives_the_refusal_its_class() -> None:
    with pytest.raises(UncoveredInterrupts) as caught:
        check_resume([ask({"$ref": "#/nowhere"}, "i1"), ask(None, "i2")],
                     [ResumeEntry(interrupt_id="i1", status="resolved", payload=1)])

    assert caught.value.ids == ("i1", "i2")
    assert [f.code for f in caught.value.faults["i1"]] == ["unresolvable"]


def test_an_unusable_schema_can_still_be_abandoned() -> None:
    entries = ResumeBuilder([ask(doubling(30, {"type": "string"}))]).abandon("i1").build()
    assert [entry.status for entry in entries] == ["cancelled"]


def test_a_resume_against_a_hostile_schema_is_refused_before_anything_is_sent(drive: Any, served: Any) -> None:
    # On the async shell the check runs on the event loop: bounded, it returns at once there too.
    endpoint = served(ScriptedAgent.interrupts(1, response_schema={
        "type": "object", "properties": {"code": {"type": "string", "pattern": HOSTILE}}}))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")
        with pytest.raises(InvalidResumePayload) as caught:
            thread.run(resume=thread.resume_builder().answer("interrupt-1", {"code": BACKTRACKS}))
        accepted = thread.run(resume=thread.resume_builder().answer("interrupt-1", {"code": "aaaa"}))

    assert caught.value.ids == ("interrupt-1",)
    assert accepted.outcome == "success"
    assert endpoint.agent.request_count == 2


def test_the_answers_of_one_resume_share_one_budget_so_many_costly_schemas_cost_what_one_does() -> None:
    # Each check alone is bounded, but a resume checks the answers to every open interrupt in one call:
    # 200 interrupts whose schemas each cost a second to check made answering them cost minutes, on
    # the caller's event loop. Ten small schemas, each multiplying its work (1,024 applications of its
    # leaf, some 60,000 steps), share one check's bases, not ten.
    interrupts = [ask(doubling(10, {"type": "string", "title": f"schema {n}"}), f"i{n}") for n in range(10)]
    # Alone, each schema judges and checks within its own budget.
    for interrupt in interrupts:
        ResumeBuilder([interrupt]).answer(interrupt.id, "x").build()
    schema_module._JUDGED.clear()  # (judged afresh, as ten new schemas are)

    builder = ResumeBuilder(interrupts)
    for interrupt in interrupts:
        builder.answer(interrupt.id, "x")
    with pytest.raises(UnusableResponseSchema) as caught:
        builder.build()

    refused = [interrupt.id for interrupt in interrupts if interrupt.id in caught.value.faults]
    assert 0 < len(refused) < len(interrupts)
    assert refused == [f"i{n}" for n in range(len(interrupts) - len(refused), len(interrupts))]
    assert {fault.code for faults in caught.value.faults.values() for fault in faults} == {"over-budget"}
    assert "checked together" in caught.value.reason


def test_one_resume_gets_the_same_verdict_however_often_it_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    # Schemas judged sound are remembered (judging one again cost nothing), and a remembered judgment
    # spent none of the resume's shared budget: a resume refused over-budget was accepted when built
    # again, the schemas its first attempt judged now free, and so was any resume whose schemas an
    # earlier, smaller one had judged. Whether answers are refused must not depend on what the process
    # checked before. (The budgets are made small here, and nothing allowed for the schemas' size, so
    # that judging a few forms spends them.)
    monkeypatch.setattr(schema_module, "JUDGE_BUDGET", 2_000)
    monkeypatch.setattr(schema_module, "CHECK_BUDGET", 500)
    monkeypatch.setattr(schema_module, "STEPS_PER_CHAR", 0)
    form = {f"p{k}": {"type": "string", "maxLength": 9} for k in range(30)}
    interrupts = [ask({"title": f"form {n}", "properties": form}, f"i{n}") for n in range(10)]
    schema_module._JUDGED.clear()
    refusals = []
    for _attempt in range(3):
        builder = ResumeBuilder(interrupts)
        for interrupt in interrupts:
            builder.answer(interrupt.id, {"p0": "x"})
        with pytest.raises(UnusableResponseSchema) as caught:  # (before: the second attempt passed)
            builder.build()
        refusals.append(sorted(caught.value.faults))

    assert refusals[0] and refusals[1] == refusals[0] and refusals[2] == refusals[0]
    # Nor does a resume of one of them, accepted alone, make the larger one pass.
    ResumeBuilder([interrupts[-1]]).answer(interrupts[-1].id, {"p0": "x"}).build()
    builder = ResumeBuilder(interrupts)
    for interrupt in interrupts:
        builder.answer(interrupt.id, {"p0": "x"})
    with pytest.raises(UnusableResponseSchema) as caught:
        builder.build()
    assert sorted(caught.value.faults) == refusals[0]


def test_a_schema_many_interrupts_share_is_paid_for_once_judged_before_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    # A batch of approvals often carries one schema: judging it is paid for once in the resume, whether
    # this resume judges it or an earlier one did (charged each time it is met, 50 answers spent the
    # shared budget 50 times over).
    monkeypatch.setattr(schema_module, "JUDGE_BUDGET", 40_000)
    monkeypatch.setattr(schema_module, "CHECK_BUDGET", 10_000)
    form = {"properties": {f"p{k}": {"type": "string", "maxLength": 9} for k in range(30)}}
    interrupts = [ask(form, f"i{n}") for n in range(50)]
    for fresh in (True, False):
        if fresh:
            schema_module._JUDGED.clear()
        builder = ResumeBuilder(interrupts)
        for interrupt in interrupts:
            builder.answer(interrupt.id, {"p0": "x"})
        assert len(builder.build()) == 50
    spent = []
    for fresh in (True, False):
        if fresh:
            schema_module._JUDGED.clear()
        allowance = schema_module.shared_allowance([(form, {"p0": "x"})] * 50)
        start = allowance.steps
        for _interrupt in interrupts:
            assert schema_module.check(form, {"p0": "x"}, allowance).fault is None
        spent.append(start - allowance.steps)
    assert spent[0] == spent[1] > 0  # (the same, the schema judged here or remembered)
