"""The ceiling's measure of a schema's text (``schema.text_length``) counts what ``json.dumps`` writes.

The ceiling on what one response's ``responseSchema`` s may buy a resume (``SCHEMA-STEPS``) charges a
step for every character of each schema's exact text, the key a judgment is remembered by: the
standard library's ``json.dumps`` (keys in their order, no spaces, non-ASCII as it is). Writing 200
ordinary forms so took 10-11 ms of the ``RUN_FINISHED``'s fold. A schema a parser made is now counted
from orjson's text; the count must be the same, character for character, whatever the strings hold
(quotes, backslashes, control characters, non-ASCII, characters beyond the BMP) and whatever the
numbers are (orjson spells floats otherwise: those go to the standard library, as does whatever orjson
refuses). These tests compare the two counts, never time them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agui_client as ag
from agui_client.core import schema as schema_module
from agui_client.core.session import RunSession

__all__: list[str] = []


def stdlib_length(schema: Any) -> int | None:
    """The count the rule has always made: the length of ``json.dumps``'s text, ``None`` without one."""
    try:
        return len(json.dumps(schema, ensure_ascii=False, separators=(",", ":"), allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        return None


# Every character, lone surrogates included, with the ones JSON escapes drawn often. (Built once, and
# text drawn a run of characters at a time: a strategy made inside a composite was made and checked
# again at every draw, and each character was a draw of its own, some 40 ms of CPU an example. Drawn
# through a composite: a strategy's repr, which Hypothesis writes into a note, stays short.)
_OFTEN = ['"', "\\", "/", "\b", "\f", "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "\u2028", "\ufeff",
          "é", "€", "\U0001f600", "\ud800", "\udfff", "1.5", "2e9", "0.", "9e"]
_TEXTS = st.lists(st.one_of(st.sampled_from(_OFTEN), st.text(max_size=6)), max_size=4).map("".join)
_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(allow_nan=False, allow_infinity=False), _TEXTS)
_SCHEMAS = st.dictionaries(_TEXTS, st.recursive(_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(_TEXTS, inner, max_size=5)), max_leaves=30), max_size=6)


@st.composite
def schemas(draw: st.DrawFn) -> dict[str, Any]:
    """Plain JSON as a parser makes it: str keys, lists, finite numbers."""
    return draw(_SCHEMAS)


# (150 examples: 600 took 25 s alone, a minute and more beside other tests; the named cases below pin the
# hard ones)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=schemas())
def test_a_parsed_schemas_length_is_the_standard_librarys_whatever_it_holds(schema: dict[str, Any]) -> None:
    assert schema_module.text_length(schema, plain=True) == stdlib_length(schema)
    assert schema_module.text_length(schema) == stdlib_length(schema)


@pytest.mark.parametrize("value", [1e-05, 1e16, -2.5e-07, 2e-07, 1.5, 0.0, -0.0, 123456789.125, 5e-324,
                                   1.7976931348623157e308])  # (2e-07: no point, and orjson writes 2e-7)
def test_a_float_is_counted_as_python_writes_it_not_as_orjson_does(value: float) -> None:
    schema = {"type": "number", "minimum": value, "description": "plain words"}

    assert schema_module.text_length(schema, plain=True) == stdlib_length(schema)


@pytest.mark.parametrize("schema", [
    {"description": "a lone half \ud800 of a pair"},  # (orjson refuses it: the standard library counts it)
    {"maximum": 2**64},  # (past orjson's integers)
    {"enum": [1, 2**64 - 1, -(2**63)]},  # (within them: the same digits)
    {"title": "é€😀 \u2028 \x00\x1f \"quoted\" back\\slash"},
])
def test_what_orjson_refuses_or_writes_otherwise_is_counted_by_the_standard_library(schema: dict[str, Any]) -> None:
    assert schema_module.text_length(schema, plain=True) == stdlib_length(schema)


def test_nesting_past_orjsons_levels_is_counted_by_the_standard_library() -> None:
    deep: Any = {"type": "string"}
    for _ in range(300):
        deep = {"items": deep}

    assert schema_module.text_length(deep, plain=True) == stdlib_length(deep)


def _writes(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The schemas the standard library is asked to write for their length (``_judged_key`` watched)."""
    written: list[Any] = []
    real = schema_module._judged_key

    def watched(schema: Any) -> str | None:
        written.append(schema)
        return real(schema)

    monkeypatch.setattr(schema_module, "_judged_key", watched)
    return written


def test_an_ordinary_parsed_form_is_counted_without_the_standard_library(monkeypatch: pytest.MonkeyPatch) -> None:
    form = json.loads(json.dumps({"title": "Ship the order", "type": "object", "required": ["to"],
                                  "properties": {"to": {"type": "string", "maxLength": 200, "title": "Adresse ✉"},
                                                 "count": {"type": "integer", "minimum": 1, "maximum": 10}}}))
    with_float = json.loads(json.dumps({"type": "number", "multipleOf": 0.5}))
    in_a_string = json.loads(json.dumps({"description": "version 1.2 of the form"}))
    written = _writes(monkeypatch)

    lengths = [schema_module.text_length(schema, plain=True) for schema in (form, with_float, in_a_string)]
    typed = schema_module.text_length(form)  # (not known plain: a Python object may be anything)

    assert lengths == [stdlib_length(form), stdlib_length(with_float), stdlib_length(in_a_string)]
    assert typed == stdlib_length(form)
    # The form went without the standard library; a float, and a digit before a dot in a string (which
    # the scan cannot tell from one), went to it, as did the schema not known plain.
    assert written == [with_float, in_a_string, form]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), (1, 2), {1: "a"}])
def test_a_schema_not_known_plain_is_still_written_by_the_standard_library(value: Any) -> None:
    # (orjson would write NaN as null, a tuple as an array, and refuse an int key: the rule's answer is
    # the standard library's, so a value a caller built is measured by it)
    schema = {"const": value}

    assert schema_module.text_length(schema) == stdlib_length(schema)


def _asking(schemas: list[Any]) -> list[dict[str, Any]]:
    return [{"id": f"i{n}", "reason": "input", "responseSchema": schema} for n, schema in enumerate(schemas)]


def _refusal(schemas: list[Any], ceiling: int, *, typed: bool) -> ag.LimitExceeded | None:
    session = RunSession(max_schema_steps=ceiling, collect_errors=True)
    session.feed_payload(json.dumps({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}))
    finished = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
                "outcome": {"type": "interrupt", "interrupts": _asking(schemas)}}
    if typed:
        interrupts = tuple(ag.Interrupt(id=f"i{n}", reason="input", response_schema=schema)
                           for n, schema in enumerate(schemas))
        session.feed_event(ag.RunFinishedEvent(thread_id="t", run_id="r",
                                               outcome=ag.RunFinishedInterruptOutcome(interrupts=interrupts)))
    else:
        session.feed_payload(json.dumps(finished, ensure_ascii=False))
    refused = [error for error in session.errors if isinstance(error, ag.LimitExceeded)]
    return refused[0] if refused else None


def test_a_response_from_the_wire_is_refused_where_the_same_schemas_built_in_python_are() -> None:
    # Forms of non-ASCII text, escapes and floats: the session reading them off the wire (counted by
    # orjson where it can) and the same schemas handed in as typed events (counted by the standard
    # library) refuse the same interrupt, at the same steps.
    schemas = [{"title": f"Formulaire n° {n} \u2014 “quoted” \\ \n", "type": "object",
                "properties": {f"champ{k}": {"type": "number", "minimum": 0.25 * k, "description": "é" * (40 * k)}
                               for k in range(20)}} for n in range(6)]
    steps = schema_module.shared_allowance([(schema, None) for schema in schemas]).steps
    ceiling = steps - 1  # (the last schema takes it past)

    from_wire = _refusal(schemas, ceiling, typed=False)
    built = _refusal(schemas, ceiling, typed=True)

    assert from_wire is not None and built is not None
    assert (from_wire.rule, from_wire.interrupt_id, from_wire.pointer, str(from_wire)) == \
        (built.rule, built.interrupt_id, built.pointer, str(built))
    assert from_wire.interrupt_id == "i5" and f"{steps:,} steps" in str(from_wire)
    assert _refusal(schemas, steps, typed=False) is None
