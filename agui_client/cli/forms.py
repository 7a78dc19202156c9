"""Answers to an interrupt, built from its ``responseSchema``: asked field by field, or filled in.

The CLI turns the JSON Schema an interrupt carries into a small form: an object's properties become
one question each, in the order the schema declares them (booleans as y/n, enums as choices,
strings as text, integers and numbers checked against their bounds), defaults are shown and taken on
empty input, and required fields insist on an answer. ``yes_payload`` fills the same form without
asking, for ``--yes``. Anything the form cannot express (nested objects, arrays, no schema at all) is
asked for as JSON text and checked against its part of the schema.

The questions go through an :class:`Asker`, so the form logic is independent of the terminal.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

# (not .terminal: forms serve agui_client.testing, which runs without rich)
from .._inert import ascii_named, one_line, unmixed
from ..core.interrupts import check_answer, check_resume
from ..wire.types.base import JSON
from ..wire.types.run import Interrupt, ResumeEntry

__all__ = ["Asker", "Field", "fields", "gate_field", "describe", "yes_payload", "yes_unfilled", "ask_payload",
           "field_errors", "judge_alone", "typed_json", "answer_parts"]

#: What ``--yes`` sends, and what the JSON prompt offers, when an interrupt carries no schema.
NO_SCHEMA_ANSWER: dict[str, Any] = {"approved": True}


class Asker(Protocol):
    """Asks one question at a time (rich prompts on a terminal)."""

    def ask_bool(self, label: str, *, default: bool | None) -> bool:
        """A yes/no question; ``default`` is taken on empty input (``None``: an answer is required)."""
        ...

    def ask_choice(self, label: str, choices: Sequence[str], *, default: str | None) -> str:
        """One of ``choices``; ``default`` is taken on empty input."""
        ...

    def ask_text(self, label: str, *, default: str | None) -> str:
        """Free text; ``default`` is taken on empty input, else an empty input returns ``""``."""
        ...

    def say(self, text: str) -> None:
        """Tell the person something (an invalid answer, what is asked next)."""
        ...


class Field:
    """One property of an object schema: its name, its schema and whether it is required."""

    __slots__ = ("name", "schema", "required")

    def __init__(self, name: str, schema: Mapping[str, Any], required: bool) -> None:
        self.name = name
        self.schema = schema
        self.required = required

    @property
    def kind(self) -> str:
        """``enum``, ``const``, ``boolean``, ``integer``, ``number``, ``string`` or ``json``."""
        return _kind(self.schema)

    @property
    def has_default(self) -> bool:
        """Whether the schema gives a default."""
        return "default" in self.schema

    @property
    def shown(self) -> str:
        """The name as a label shows it: escaped and cut as a name shown where the person approves (the
        agent chose it, and it names what the answer says; see ``ascii_named``)."""
        return ascii_named(self.name, 60)

    @property
    def description(self) -> str:
        """The description (else the title) the schema gives, for the label."""
        for key in ("description", "title"):
            text = self.schema.get(key)
            if isinstance(text, str) and text.strip() and text.strip().lower() != self.name.lower():
                return text.strip()
        return ""


def fields(schema: Mapping[str, Any] | None) -> list[Field] | None:
    """The fields of an object schema with properties, in declared order; ``None`` for any other schema."""
    if not isinstance(schema, Mapping):
        return None
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties or _kind(schema, top=True) not in ("object", "json"):
        return None
    required = schema.get("required")
    names = set(required) if isinstance(required, list) else set()
    return [Field(str(name), prop if isinstance(prop, Mapping) else {}, name in names)
            for name, prop in properties.items()]


#: The values of an enum a description lists (a schema may hold thousands).
_LISTED_VALUES = 20


def describe(field: Field) -> str:
    """A short type description: ``boolean, required``, ``one of a|b|c; default a``, ``integer >= 0``."""
    schema = field.schema
    kind = field.kind
    if kind == "enum":
        values = schema.get("enum", ())
        # (as names: two values must never read the same, and the person picks one by what is shown)
        text = "one of " + "|".join(ascii_named(_show(v), 60) for v in values[:_LISTED_VALUES]) \
            + (f"|... ({len(values) - _LISTED_VALUES} more)" if len(values) > _LISTED_VALUES else "")
    elif kind == "const":
        text = f"always {ascii_named(_show(schema.get('const')), 60)}"
    else:
        text = kind if kind != "json" else _json_kind(schema)
        bounds = [f"{op} {one_line(str(schema[key]), 60)}" for key, op in (("minimum", ">="), ("exclusiveMinimum", ">"),
                                                         ("maximum", "<="), ("exclusiveMaximum", "<"))
                  if isinstance(schema.get(key), (int, float))]
        if bounds:
            text += " " + ", ".join(bounds)
    notes = [text]
    if field.required:
        notes.append("required")
    if field.has_default:
        notes.append(f"default {one_line(unmixed(_show(schema['default'])), 60)}")
    return "; ".join(notes)


def yes_payload(schema: Mapping[str, Any] | None) -> JSON:
    """The answer ``--yes`` gives: every default, ``approved: true``, and a plausible value for the
    other required fields (``true``, the first choice, the minimum, ``"yes"``)."""
    if not isinstance(schema, Mapping) or not schema:
        return dict(NO_SCHEMA_ANSWER)
    form = fields(schema)
    if form is None:
        return schema["default"] if "default" in schema else _filler(schema, 0)
    return _filled(form, 0)


#: How deep ``yes_payload`` fills required objects inside objects; deeper ones are given as ``{}``.
#: (The schema is the agent's: its nesting must not become the depth of the client's recursion.)
_FILL_DEPTH = 32


def _filled(form: list[Field], depth: int) -> dict[str, Any]:
    payload: dict[str, Any] = {}
    for field in form:
        if field.has_default:
            payload[field.name] = field.schema["default"]
        elif field.name == "approved" and field.kind in ("boolean", "json"):
            payload[field.name] = True
        elif field.required:
            payload[field.name] = _filler(field.schema, depth + 1)
    return payload


def yes_unfilled(schema: Mapping[str, Any] | None) -> list[str]:
    """The required fields ``--yes`` refuses to invent a value for (empty: ``yes_payload`` may be sent).

    ``--yes`` takes the schema's defaults, and without one it fills only what a "yes" decides: a
    boolean (``true``), a constant, an enum of one value. A required text, number, choice among several,
    list or object without a default is the person's to give (``--answer ID=JSON``): a made-up ticket
    number or the first of several environments is not an approval.
    """
    if not isinstance(schema, Mapping) or not schema:
        return []
    form = fields(schema)
    if form is None:
        return [] if "default" in schema or _decided(schema) else ["(the answer)"]
    return [f.name for f in form if f.required and not f.has_default and not _decided(f.schema)
            and not (f.name == "approved" and f.kind in ("boolean", "json"))]


def _decided(schema: Mapping[str, Any]) -> bool:
    kind = _kind(schema)
    return kind in ("const", "boolean") or (kind == "enum" and len(schema["enum"]) == 1)


def gate_field(schema: Mapping[str, Any] | None) -> Field | None:
    """The yes/no question a form can open with: the schema's first required boolean field
    (``approved`` in an approval), or ``None`` when it has none."""
    form = fields(schema)
    return next((f for f in form if f.required and f.kind == "boolean"), None) if form is not None else None


def ask_payload(schema: Mapping[str, Any] | None, asker: Asker, *, gate: bool = False) -> JSON:
    """Ask for an answer to ``schema``, field by field; every value is checked against its schema.

    With ``gate``, the :func:`gate_field` is asked first; a "no" that the schema accepts on its own
    (no other required field) is the whole answer, and the rest of the form is not asked (a refusal
    needs no details). A "yes", or a "no" the schema needs more for, goes on with the other fields.
    """
    form = fields(schema)
    if form is None:
        whole = schema if isinstance(schema, Mapping) and schema else None
        if whole is not None and _kind(whole) not in ("json", "object"):
            return _ask_value(Field("answer", whole, True), asker)
        default = None if whole is not None else json.dumps(NO_SCHEMA_ANSWER)
        return _ask_json(Field("answer (JSON)", whole or {}, True), asker, default)
    payload: dict[str, Any] = {}
    opening = gate_field(schema) if gate else None
    if opening is not None:
        payload[opening.name] = _ask_value(opening, asker)
        if payload[opening.name] is False and schema is not None and not field_errors(schema, payload):
            return payload
    for field in form:
        if opening is not None and field.name == opening.name:
            continue
        value = _ask_value(field, asker)
        if value is not _OMIT:
            payload[field.name] = value
    return payload


def field_errors(schema: Mapping[str, Any], value: Any) -> list[str]:
    """Readable reasons ``value`` fails ``schema`` (empty when it passes).

    The schema is the agent's: it is checked with the same bounds as a resume (no backtracking
    regex, no fetched reference, a step budget), so a hostile one cannot hang the prompt.
    """
    # The public check (agui_client.check_answer). A schema the form cannot use (or a part of one,
    # whose references point outside it) judges nothing here: the resume builder judges the whole
    # payload, and says why.
    return [problem.message for problem in check_answer(schema, value) if problem.code == "invalid"]


def judge_alone(interrupt: Interrupt, payload: JSON, *, max_schema_steps: int | None) -> None:
    """Judge one answer as the resume will, before the person is told it was taken: on its own (the
    other open interrupts are not answered yet) and within ``max_schema_steps``, the client's ceiling.

    Raises:
        ResumeRefused: as ``ResumeBuilder.build()`` does (expired, invalid, a schema that cannot judge).
    """
    # The client's ceiling, not the default: the run checks the answer again within it, so a form that
    # judged with another would take an answer the run then refuses (or refuse one it would send).
    # The check itself, not a builder's: a builder copies the schema it is given (its own, to check
    # against), once per answer tried, where the check only reads it.
    entry = ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload=payload)
    check_resume((interrupt,), (entry,), max_schema_steps=max_schema_steps)


def typed_json(text: str) -> Any:
    """The JSON value a person typed (an option's value, an answer at a prompt).

    As ``json.loads``, except that what is not JSON is refused here, where the person can still change
    it: ``NaN``, ``Infinity`` and a number too large for a float (which nothing could send), and
    nesting deeper than Python's JSON reader goes (a pasted ``[[[[...`` ended the command with a
    traceback).

    Raises:
        ValueError: saying why the text is not JSON.
    """
    try:
        return json.loads(text, parse_constant=_not_a_number, parse_float=_finite)
    except RecursionError:
        raise ValueError("nested deeper than the JSON reader goes") from None


def answer_parts(text: str) -> tuple[str, str] | None:
    """An ``--answer`` value that is not JSON as a whole, as (interrupt id, the JSON text of its answer);
    ``None`` when it names no id.

    ``ID=JSON`` is split at the first ``=``, the id's spaces around it dropped. An id that holds ``=``
    itself (or spaces to keep) is written as a JSON string, ``"a=b"={"ok": true}``: a value that starts
    with a JSON string followed at once by ``=`` names that string. The choice keeps every value that
    worked before meaning what it meant (an unquoted id never starts with ``"``, and a value that is
    JSON as a whole is a bare answer), and reads the same in every shell, as quoting the whole value
    for the shell keeps the inner quotes.

    >>> answer_parts('"a=b"={"ok": true}')
    ('a=b', '{"ok": true}')
    >>> answer_parts(' i1 =[1]')
    ('i1', '[1]')
    """
    if text.startswith('"'):
        try:
            named, end = json.JSONDecoder().raw_decode(text)
        except ValueError:
            named, end = None, 0
        if type(named) is str and text[end:end + 1] == "=":
            return named, text[end + 1:]
    interrupt_id, sep, payload = text.partition("=")
    return (interrupt_id.strip(), payload) if sep else None


def _not_a_number(word: str) -> Any:
    raise ValueError(f"{word} is not a JSON number")


def _finite(word: str) -> float:
    number = float(word)
    if not math.isfinite(number):
        raise ValueError(f"{one_line(word, 40)} is too large for a number")
    return number


# --------------------------------------------------------------------------------------------------

_OMIT: Any = object()


def _kind(schema: Mapping[str, Any], *, top: bool = False) -> str:
    if "const" in schema:
        return "const"
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "enum"
    declared = schema.get("type")
    if isinstance(declared, list):
        declared = next((t for t in declared if t != "null"), None)
    if declared in ("boolean", "integer", "number", "string"):
        return str(declared)
    if top and declared == "object":
        return "object"
    return "json"


def _json_kind(schema: Mapping[str, Any]) -> str:
    declared = schema.get("type")
    return f"{declared} (JSON)" if isinstance(declared, str) else "JSON"


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _filler(schema: Mapping[str, Any], depth: int) -> JSON:
    kind = _kind(schema)
    if kind == "const":
        return schema["const"]
    if kind == "enum":
        return schema["enum"][0]
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        if isinstance(low, (int, float)):
            value = low + 1 if "minimum" not in schema else low
            return int(value) if kind == "integer" else value
        return 0
    if kind == "string":
        return "yes"
    declared = schema.get("type")
    if declared == "array":
        return []
    if declared == "object" or isinstance(schema.get("properties"), Mapping):
        # An object without properties to fill (``{"type": "object"}``) is the empty object: filling it
        # as a form would find no form and come back here, without end.
        form = fields(schema) if depth < _FILL_DEPTH else None
        return _filled(form, depth) if form is not None else {}
    return None


def _label(field: Field) -> str:
    return f"{field.shown} ({one_line(unmixed(field.description), 300)})" if field.description else field.shown


def _ask_value(field: Field, asker: Asker) -> Any:
    schema = field.schema
    kind = field.kind
    default = schema.get("default", None) if field.has_default else None
    if kind == "const":
        return schema["const"]
    if kind == "boolean":
        return asker.ask_bool(_label(field), default=default if isinstance(default, bool) else None)
    if kind == "enum":
        choices = {_show(v): v for v in schema["enum"]}
        picked = asker.ask_choice(_label(field), list(choices), default=_show(default) if field.has_default else None)
        return choices.get(picked, picked)
    if kind in ("integer", "number", "string"):
        return _ask_scalar(field, asker, default)
    return _ask_json(field, asker, json.dumps(default) if field.has_default else None)


def _refuse(asker: Asker, reason: str) -> None:
    """Say why an answer is refused, before the question is asked again; once piped answers have run
    out, nobody is left to give another (``EOFError``). Without that, a default the schema itself
    refuses (``"minimum": 10, "default": 5``) was taken, refused and taken again, without end."""
    asker.say(reason)
    if getattr(asker, "ended", False):
        raise EOFError


def _ask_scalar(field: Field, asker: Asker, default: Any) -> Any:
    shown = None if not field.has_default else _show(default)
    while True:
        text = asker.ask_text(_label(field), default=shown)
        if text == "" and shown is None:
            if not field.required:
                return _OMIT
            _refuse(asker, f"{field.shown} is required")
            continue
        value: Any = text
        if field.kind in ("integer", "number"):
            value = _number(text, integer=field.kind == "integer")
            if value is None:
                _refuse(asker, f"{field.shown} must be {'an integer' if field.kind == 'integer' else 'a number'}")
                continue
        problems = field_errors(field.schema, value)
        if problems:
            _refuse(asker, f"{field.shown}: {problems[0]}")
            continue
        return value


_INTEGER = re.compile(r"[+-]?[0-9]+")


def _number(text: str, *, integer: bool) -> int | float | None:
    """The number typed, or ``None``. Integers are read exactly (``float()`` would round one past
    2**53); ``nan`` and ``inf`` are not JSON and are refused like any other non-number."""
    word = text.strip()
    if _INTEGER.fullmatch(word):
        try:
            return int(word)
        except ValueError:  # (past the interpreter's integer string limit, 4,300 digits)
            return None
    try:
        number = float(word)
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    if number.is_integer() and (integer or not any(c in word for c in ".eE")):
        return int(number)
    return None if integer else number


def _ask_json(field: Field, asker: Asker, default: str | None) -> Any:
    while True:
        text = asker.ask_text(f"{_label(field)} [JSON]" if "JSON" not in field.name else _label(field),
                              default=default)
        if text == "" and default is None:
            if not field.required:
                return _OMIT
            _refuse(asker, f"{field.shown} is required")
            continue
        try:
            value = typed_json(text)
        except ValueError as exc:
            _refuse(asker, f"not JSON: {one_line(str(exc), 200)}")
            continue
        problems = field_errors(field.schema, value) if field.schema else []
        if problems:
            _refuse(asker, f"{field.shown}: {problems[0]}")
            continue
        return value
