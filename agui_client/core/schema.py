"""Checking a value against a server's JSON Schema at a bounded cost, with no network and no files.

An interrupt's ``responseSchema`` comes from the agent, so it is hostile input to the code that checks
the user's answer against it. jsonschema, used as it comes, lets such a schema:

* **hang the caller on a regex.** ``pattern``, ``patternProperties`` (also inside
  ``additionalProperties`` and ``unevaluatedProperties``) and ``format: "regex"`` run on Python's
  ``re``, which backtracks: ``^(a+)+$`` against 34 characters takes minutes. Here every pattern runs
  on RE2 (google-re2), whose time is linear in the text. RE2 has no lookaround and no
  backreferences: lookaheads that open an anchored pattern (``^(?=.*\\d).{8,}$``, the usual password
  rule) are split into separate RE2 checks, which is exact; any other pattern RE2 cannot run is not
  checked, and the caller is told where (an ``IR-30`` warning), because refusing it would leave the
  interrupt unanswerable and checking is optional in AG-UI 1.0. The ECMA-262 syntax RE2 spells
  differently (``\\uXXXX``, ``\\u{…}``, ``\\cX``, ``[]``, ``[^]``) and ECMA-262's ``.`` and ``\\s``
  are translated, so patterns mean what JSON Schema says (Python's ``re`` lets ``$`` match before a
  final newline; RE2 and ECMA-262 do not).
* **reach the network or the disk.** jsonschema's default registry fetches any ``$ref`` it cannot
  resolve locally with ``urlopen``: ``http://…`` and ``file:///…`` alike. Here the registry holds the
  schema and the drafts' own metaschemas and retrieves nothing: such a reference is unresolvable.
* **cost unbounded time or memory** by amplification (``$ref`` fan-out that doubles per level, the
  same subschema reached through ``allOf`` at every level of a nested answer, thousands of
  ``anyOf`` branches each quoting a large answer in its error), by ``uniqueItems`` (quadratic on
  objects), by ``multipleOf`` on extreme numbers (``OverflowError``), or by size and nesting
  (``RecursionError``). Here every schema object applied to a value, every keyword call and every
  error message is charged to a step budget (bases, plus what the schema's text and the answer's
  values pay for: see :data:`CHECK_BUDGET`), and the keywords with costs of their own are
  implemented with bounded ones (:mod:`.schema_keywords`); the schema's size and nesting are capped
  before anything runs.
  Judging the schema itself walks it once, by its draft's metaschema read as a table
  (:mod:`.metaschema`), not by applying the whole metaschema to every subschema.
* **switch itself to an unguarded validator**: a subschema naming its own ``$schema`` makes
  jsonschema evaluate it with that draft's stock validator, outside every guard above; it is refused.

What cannot be checked within these bounds is a :class:`~agui_client.errors.SchemaFault` (its
``code`` is one of :data:`SCHEMA_FAULTS`), never a hang or an escaping ``RecursionError``. Only
``format: "regex"`` is asserted while the schema itself is judged; formats are annotations when an
answer is checked (as in draft 2020-12), so no format checker ever runs on an answer.

The parts: this module surveys a schema, keeps the budgets and runs :func:`check`; the running check
(its steps, pointers and patterns) is :mod:`.schema_steps`, the guarded keywords are
:mod:`.schema_keywords`, and the guarded validator of each draft, with the metaschemas' registry, is
:mod:`.schema_dialects`. Everything here is sans-IO: nothing reads a clock, the budget counts work.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any, Final

import jsonschema
import referencing.exceptions
from jsonschema.exceptions import ValidationError
from jsonschema.validators import validator_for

from .._inert import quoted_name
from ..errors import SchemaFault
from ..wire.jsonio import escape as _escape
from ..wire.values import ORJSON
from .schema_dialects import guarded_dialect
from .schema_steps import RUNNING, CheckStopped, RunningCheck, json_pointer

__all__ = ["SCHEMA_FAULTS", "MAX_SCHEMA_VALUES", "MAX_SCHEMA_DEPTH", "MAX_SCHEMA_TEXT", "CHECK_BUDGET",
           "STEPS_PER_VALUE", "STEPS_PER_CHAR", "JUDGE_BUDGET", "DEFAULT_MAX_SCHEMA_STEPS", "Verdict", "check",
           "shared_allowance", "past_ceiling", "text_length", "json_pointer"]

#: The codes of :class:`~agui_client.errors.SchemaFault`, each a reason a schema cannot judge a value.
SCHEMA_FAULTS: Final = ("not-a-schema", "invalid", "too-large", "too-deep", "over-budget", "unresolvable",
                        "embedded-dialect")

#: A schema may hold this many JSON values (objects, arrays, strings, numbers … each count one).
MAX_SCHEMA_VALUES: Final = 20_000
#: … nested this deep (a subschema under ``properties`` is two levels down) …
MAX_SCHEMA_DEPTH: Final = 64
#: … and this many characters of text, keys included.
MAX_SCHEMA_TEXT: Final = 1_000_000
# A step is about half a microsecond of work on the two-core machine the bounds were measured on
# (``python -m bench.schemas``: no shape of schema makes one cost more than about 0.7 µs there); the
# costs in .schema_keywords and .schema_steps say what each call is charged.
#: Steps allowed for judging a schema against its draft's metaschema, plus :data:`STEPS_PER_CHAR` for
#: every character of its JSON text: judging walks the schema once (see :mod:`.metaschema`), about
#: 0.15 steps a character for an ordinary form, so only a schema that multiplies its own work (or
#: holds thousands of patterns to compile) comes near it.
JUDGE_BUDGET: Final = 100_000
#: Steps allowed for checking a value against a schema, plus :data:`STEPS_PER_CHAR` for every
#: character of the schema's JSON text and :data:`STEPS_PER_VALUE` for every JSON value in the answer
#: (so a large schema or a large ordinary answer still fits). A step is about one schema object
#: applied to one value (weighted by the object's size), one keyword call, 64 characters of error
#: message or of text a pattern reads. The two limits bound each phase of one check; a check (a
#: resume's too, see :func:`shared_allowance`) spends at most ``JUDGE_BUDGET + CHECK_BUDGET +
#: STEPS_PER_CHAR * characters + STEPS_PER_VALUE * values`` in all: about 0.1 s for a small schema,
#: plus about half a microsecond a character of schema and 10 µs a value of answer (a string counts
#: one value more for every 64 characters).
CHECK_BUDGET: Final = 100_000
STEPS_PER_VALUE: Final = 20
STEPS_PER_CHAR: Final = 1
#: The most steps the schemas of one response may buy a resume, by default (the client's
#: ``max_schema_steps``; see :func:`past_ceiling`): about 4.5 s of checking at most. The allowance a
#: resume is given grows with its schemas' text, and one 16 MiB ``RUN_FINISHED`` of schemas that
#: multiply their work bought 16.2 million steps (9.1 s of CPU, on the loop of an async client); 1,000
#: ordinary 50-field forms of their own (6.9 MB) buy 7.1 million and spend 3.0 million.
DEFAULT_MAX_SCHEMA_STEPS: Final = 8_000_000


class Verdict:
    """What checking a value against a schema found.

    Attributes:
        errors: the value's validation errors (empty when it passes, or when ``fault`` is set).
        fault: why the schema cannot judge the value at all (``interrupt_id`` left ``None``).
        unchecked: ``(pointer, reason)`` for every pattern that was not run, in the order met.
    """

    __slots__ = ("errors", "fault", "unchecked")

    def __init__(self, errors: list[ValidationError], fault: SchemaFault | None,
                 unchecked: Iterable[tuple[str, str]]) -> None:
        self.errors = errors
        self.fault = fault
        self.unchecked = tuple(unchecked)


# --------------------------------------------------------------------------------------------------
# check()
# --------------------------------------------------------------------------------------------------


def _names_a_dialect(node: dict[str, Any]) -> bool:
    dialect = node.get("$schema")
    return isinstance(dialect, str) and validator_for(node, default=None) is not None  # type: ignore[arg-type]


def _survey(schema: Any, pointers: dict[int, str], dialects: dict[int, str]) -> SchemaFault | None:
    """Size, nesting and JSON-ness of ``schema``, walked without recursion.

    Records each object's pointer, and the objects below the root that name a known draft.
    """
    values = text = 0
    stack: list[tuple[Any, str, int]] = [(schema, "", 0)]
    while stack:
        node, pointer, depth = stack.pop()
        values += 1
        if values > MAX_SCHEMA_VALUES:
            return _fault("too-large", "", f"it holds more than {MAX_SCHEMA_VALUES:,} JSON values")
        if depth > MAX_SCHEMA_DEPTH:
            return _fault("too-deep", pointer, f"it is nested more than {MAX_SCHEMA_DEPTH} levels deep")
        if isinstance(node, dict):
            pointers.setdefault(id(node), pointer)
            if depth and _names_a_dialect(node):
                dialects.setdefault(id(node), pointer)
            for key, value in node.items():
                if not isinstance(key, str):
                    return _fault("not-a-schema", pointer, f"key {quoted_name(key)} is not a string")
                text += len(key)
                stack.append((value, f"{pointer}/{_escape(key)}", depth + 1))
        elif isinstance(node, (list, tuple)):
            stack.extend((value, f"{pointer}/{n}", depth + 1) for n, value in enumerate(node))
        elif isinstance(node, str):
            text += len(node)
        elif not (node is None or isinstance(node, (bool, int, float))):
            return _fault("not-a-schema", pointer, f"a value of type {type(node).__name__} is not JSON")
        if text > MAX_SCHEMA_TEXT:
            return _fault("too-large", "", f"it holds more than {MAX_SCHEMA_TEXT:,} characters of text")
    return None


def _fault(code: str, pointer: str, reason: str) -> SchemaFault:
    keyword = pointer.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~") if pointer else None
    return SchemaFault(code=code, pointer=pointer, keyword=keyword, reason=reason)


# Values of an answer counted for its budget, at most (a larger answer is charged as this large).
_MAX_COUNTED: Final = 500_000


def _count(value: Any, limit: int) -> int:
    """The JSON values in ``value`` (at most about ``limit``), a string (or key) counting once more for
    every 64 characters: a pattern reads its text, so a long text answer pays for being read."""
    total, stack = 0, [value]
    while stack and total < limit:
        item = stack.pop()
        total += 1
        if isinstance(item, str):
            total += len(item) // 64
        elif isinstance(item, dict):
            total += sum(len(key) // 64 for key in item if isinstance(key, str))
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return total


class _Allowance:
    """A group's allowance: the steps its checks may still spend, the schemas whose judging it has
    paid for (by their text, :func:`_judged_key`), and each schema's text (by the schema's ``id``, the
    schema kept so the ``id`` stays its own)."""

    __slots__ = ("steps", "judged", "texts")

    def __init__(self, steps: int, texts: dict[int, tuple[Any, str | None]]) -> None:
        self.steps = steps
        self.judged: set[str] = set()
        self.texts = texts


def shared_allowance(checks: Iterable[tuple[Any, Any]], ceiling: int | None = None) -> _Allowance:
    """The steps a group of checks, ``(schema, instance)`` pairs, may spend together (spent in place by
    :func:`check`): the bases of one check (:data:`JUDGE_BUDGET`, :data:`CHECK_BUDGET`), and
    :data:`STEPS_PER_CHAR` for every character of each pair's schema and :data:`STEPS_PER_VALUE` for
    every value of its instance; never more than ``ceiling`` (the client's ``max_schema_steps``), when
    one is given.

    One resume answers every open interrupt of a run, each with a schema of the agent's, all checked in
    one call on the caller's thread (an event loop's, for a web backend). Each check alone is bounded,
    but an agent raising 200 interrupts that each carry a schema costing a second to check made their
    answers cost minutes: within one allowance, the bases are spent once, and the rest is what the
    schemas' and the answers' sizes pay for. So a resume answering 1,000 interrupts, each with a form of
    its own, is allowed what their 1,000 forms cost to read, while 1,000 small schemas that each
    multiply their work share one check's bases. Judging a schema is paid for once in a group, whether
    it is judged there or was judged before (remembered), so a group's verdict never depends on what
    the process checked earlier. What the schemas' text pays for grows with the text, so one
    ``RUN_FINISHED`` of 16 MiB of schemas bought some 16 million steps (9 s); the ceiling bounds it
    whatever the text (see :func:`past_ceiling`, which the session asks when the schemas arrive).
    """
    steps = JUDGE_BUDGET + CHECK_BUDGET
    texts: dict[int, tuple[Any, str | None]] = {}
    for schema, instance in checks:
        if id(schema) not in texts:
            texts[id(schema)] = (schema, _judged_key(schema))
        text = texts[id(schema)][1]
        steps += _paid(len(text) if text is not None else None, instance)
    return _Allowance(steps if ceiling is None else min(steps, ceiling), texts)


def _paid(characters: int | None, instance: Any) -> int:
    """What one ``(schema, instance)`` pair adds to a group's allowance: ``characters``, the length of the
    schema's text (:func:`text_length`; ``None``: it has none), and the instance's values."""
    return STEPS_PER_CHAR * (characters or 0) + STEPS_PER_VALUE * _count(instance, _MAX_COUNTED)


def past_ceiling(schemas: Iterable[Any], ceiling: int, *, plain: bool = False) -> tuple[int, int] | None:
    """Where the allowance of a resume answering ``schemas`` (:func:`shared_allowance`, each answer
    ``null``) passes ``ceiling``: the position of the schema that takes it past, and the steps it
    comes to there; ``None`` when it stays within.

    Asked when the schemas arrive (a ``RUN_FINISHED`` raising interrupts), so a response whose schemas
    would buy more work than the client allows is refused as it is read, before anyone answers it: the
    same arithmetic as the resume's allowance, stopped at the first schema past the ceiling (so a
    16 MiB event costs at most the ceiling's worth of text to measure). ``plain``: the schemas are
    plain JSON a parser made, measured by :func:`text_length` without the standard library's encoder.
    """
    steps = JUDGE_BUDGET + CHECK_BUDGET
    lengths: dict[int, tuple[Any, int | None]] = {}  # (the schema kept, so that its id stays its own)
    for position, schema in enumerate(schemas):
        if id(schema) not in lengths:
            lengths[id(schema)] = (schema, text_length(schema, plain=plain))
        steps += _paid(lengths[id(schema)][1], None)
        if steps > ceiling:
            return position, steps
    return None


def text_length(schema: Any, *, plain: bool = False) -> int | None:
    """How many characters ``schema``'s exact text holds (the key :func:`check` remembers a judgment by,
    ``json.dumps`` with the keys in their order, no spaces, non-ASCII as it is); ``None`` when JSON
    text cannot hold it (``NaN``, a ``datetime``).

    ``plain``: ``schema`` is plain JSON a parser made (str keys, finite numbers). orjson then writes it
    as the standard library would, character for character (the same escapes; an integer's digits),
    but for floats, which it spells otherwise (``1e-05`` as ``0.00001``, ``1e+16`` as ``1e16``): its
    text is counted (UTF-8 bytes read as characters) when it holds no digit followed by ``.`` or
    ``e`` (a float, or text such as ``v1.2`` inside a string), else the standard library writes it as
    before; so does anything orjson refuses (a lone surrogate, an integer past 64 bits, nesting past
    its 255 levels). 200 ordinary forms: 2-5 ms, where the standard library's text took 10-13 (a
    ``RUN_FINISHED`` bringing them is measured as it is folded, on the caller's thread).
    """
    if plain and ORJSON is not None:
        try:
            written = ORJSON.dumps(schema)
        except TypeError:  # (orjson's refusals are TypeErrors: JSONEncodeError is one)
            written = None
        if written is not None:
            marks = written.translate(_NUMERALS)
            if b"0." not in marks and b"0e" not in marks:
                return len(written) if written.isascii() else len(written.decode())
    key = _judged_key(schema)
    return len(key) if key is not None else None


#: A byte of JSON text as what :func:`text_length` looks for: every digit ``0``, ``.`` and ``e`` (either
#: case) as themselves, anything else a space.
_NUMERALS = bytes(48 if 48 <= byte <= 57 else 46 if byte == 46 else 101 if byte in (69, 101) else 32
                  for byte in range(256))


def _limited(check: RunningCheck, allowance: _Allowance | None) -> None:
    """``check``'s limit lowered to what ``allowance`` has left, if that is less."""
    if allowance is not None and allowance.steps < check.limit:
        check.limit, check.shared = max(allowance.steps, 0), True


def check(schema: Any, instance: Any, allowance: _Allowance | None = None) -> Verdict:
    """Check ``instance`` against ``schema`` (first judging the schema itself), at a bounded cost.

    The draft is the one ``$schema`` names, else 2020-12 (also for a ``$schema`` jsonschema does not
    know). References resolve within the schema and the drafts' metaschemas only. ``allowance`` (from
    :func:`shared_allowance`) is what a group of checks may still spend together: this check spends
    from it, and stops ``over-budget`` when it is spent.

    Returns:
        The errors, or the fault that kept the schema from judging, and the patterns not checked.
    """
    if not isinstance(schema, (dict, bool)):
        return Verdict([], _fault("not-a-schema", "", "it is neither an object nor a boolean, but "
                                                      f"{type(schema).__name__}"), ())
    pointers: dict[int, str] = {}
    dialects: dict[int, str] = {}
    problem = _survey(schema, pointers, dialects)
    if problem is not None:
        return Verdict([], problem, ())
    if isinstance(schema, dict) and "$schema" in schema and not isinstance(schema["$schema"], str):
        return Verdict([], _fault("invalid", "/$schema", "$schema must be a string"), ())
    known = allowance.texts.get(id(schema)) if allowance is not None else None
    key = known[1] if known is not None and known[0] is schema else _judged_key(schema)
    characters = len(key) if key is not None else 0
    # (The explicit default also keeps jsonschema from warning about a $schema it does not know.)
    dialect = guarded_dialect(validator_for(schema, default=jsonschema.Draft202012Validator))
    if isinstance(schema, dict) and "$schema" in schema:
        # Evaluated without it: jsonschema re-reads "$schema" whenever it re-enters an object (a "$ref"
        # to "#"), and would switch to the draft's stock, unguarded, validator.
        schema = {key: value for key, value in schema.items() if key != "$schema"}
        pointers[id(schema)] = ""
    check = RunningCheck(pointers, dialects, JUDGE_BUDGET + STEPS_PER_CHAR * characters)
    token = RUNNING.set(check)
    try:
        judged = _JUDGED.get(key) if key is not None else None
        if judged is not None and allowance is not None and key not in allowance.judged:
            # A group's verdict must not depend on what the process judged before: a remembered
            # judgment costs the group what judging the schema did, once (a refused resume built
            # again, its schemas judged by the first attempt, was accepted).
            _limited(check, allowance)
            check.judging = True
            check.charge(judged[1])
        if judged is None:
            _limited(check, allowance)
            check.judging = True
            flaw = (dialect.meta or dialect).first_flaw(schema, check)
            if flaw is not None:
                return Verdict([], _fault("invalid", *flaw), check.unchecked.items())
            if key is not None:
                _remember_judged(key, (tuple(check.unchecked.items()), check.steps))
        else:
            check.unchecked.update(judged[0])
        check.judging, check.where = False, None
        if allowance is not None:
            if key is not None:
                allowance.judged.add(key)
            allowance.steps -= check.steps
        check.steps, check.shared = 0, False
        check.limit = CHECK_BUDGET + STEPS_PER_CHAR * characters + STEPS_PER_VALUE * _count(instance, _MAX_COUNTED)
        _limited(check, allowance)
        return Verdict(list(dialect.make(schema).iter_errors(instance)), None, check.unchecked.items())
    except CheckStopped as stop:
        fault = _fault(stop.code, stop.pointer if stop.pointer is not None else check.where or "", stop.reason)
    except referencing.exceptions.Unresolvable as exc:
        ref = getattr(exc, "ref", "?")
        fault = _fault("unresolvable", check.where or "", f"the reference {quoted_name(ref)} does not resolve within "
                                                          "the schema (remote and file references are never fetched)")
    except RecursionError:
        fault = _fault("too-deep", "", "checking it recursed past Python's limit (a reference that loops back on "
                                       "itself without consuming the answer, or an answer nested too deeply)")
    except BaseException as exc:
        # The nesting guard keeps the stack below the limit; a check started from a stack already near
        # it may still meet the limit inside referencing's Rust maps, which panic instead of raising.
        if type(exc).__name__ != "PanicException":
            raise
        fault = _fault("too-deep", "", "checking it reached Python's recursion limit (the caller's stack was "
                                       "already deep)")
    finally:
        RUNNING.reset(token)
        if allowance is not None:
            allowance.steps -= check.steps
    return Verdict([], fault, check.unchecked.items())


#: Schemas judged sound (against their draft's metaschema) by their exact text, with the patterns that
#: judging could not check: answering thousands of interrupts that share one schema judged it once per
#: answer (about 0.8 ms each, twice per resume). Only a sound verdict is kept (a fault may depend on the
#: caller's stack); all are let go when ``_JUDGED_MAX`` are held, or their texts would take more than
#: ``_JUDGED_MEMORY`` bytes: a schema's text may be a megabyte (``MAX_SCHEMA_TEXT`` characters, four
#: bytes each outside the BMP), and 256 of them, each from an interrupt an agent raised, stayed held
#: for the life of the process.
#: Each is kept with the steps judging it took, charged to a group's shared allowance when it is used
#: again (see ``check``).
_JUDGED: dict[str, tuple[tuple[tuple[str, str], ...], int]] = {}
_JUDGED_MAX = 256
_JUDGED_MEMORY = 16 * 2**20
_judged_memory = 0  # what the texts of the schemas in ``_JUDGED`` take (``sys.getsizeof``)


def _remember_judged(key: str, judged: tuple[tuple[tuple[str, str], ...], int]) -> None:
    """Remember a sound verdict by its schema's text, letting every one go first when the bounds say so."""
    global _judged_memory
    size = sys.getsizeof(key)
    if size > _JUDGED_MEMORY:
        return
    if len(_JUDGED) >= _JUDGED_MAX or _judged_memory + size > _JUDGED_MEMORY:
        _JUDGED.clear()
        _judged_memory = 0
    if key not in _JUDGED:
        _judged_memory += size
    _JUDGED[key] = judged


def _judged_key(schema: Any) -> str | None:
    """``schema``'s exact text (its keys in their order), the key of :data:`_JUDGED`; ``None`` when it
    has no such text (a number JSON text cannot hold)."""
    try:
        return json.dumps(schema, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None


