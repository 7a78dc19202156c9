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
  implemented here with bounded ones; the schema's size and nesting are capped before anything runs.
  Judging the schema itself walks it once, by its draft's metaschema read as a table
  (:mod:`.metaschema`), not by applying the whole metaschema to every subschema.
* **switch itself to an unguarded validator**: a subschema naming its own ``$schema`` makes
  jsonschema evaluate it with that draft's stock validator, outside every guard above; it is refused.

What cannot be checked within these bounds is a :class:`~agui_client.errors.SchemaFault` (its
``code`` is one of :data:`SCHEMA_FAULTS`), never a hang or an escaping ``RecursionError``. Only
``format: "regex"`` is asserted while the schema itself is judged; formats are annotations when an
answer is checked (as in draft 2020-12), so no format checker ever runs on an answer.

Everything here is sans-IO: nothing reads a clock, the budget counts work.
"""

from __future__ import annotations

import json
import sys
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from fractions import Fraction
from functools import cache
from types import FrameType
from typing import Any, Final, TypeVar

import jsonschema
import jsonschema_specifications
import referencing
import referencing.exceptions
import referencing.jsonschema
from jsonschema.exceptions import ValidationError
from jsonschema.validators import validator_for

from .._inert import quoted_name
from ..errors import SchemaFault
from ..wire.jsonio import escape as _escape
from .metaschema import KeywordTable, Leaf, is_sound, keyword_table
from .regex import Regex, compile_pattern

__all__ = ["SCHEMA_FAULTS", "MAX_SCHEMA_VALUES", "MAX_SCHEMA_DEPTH", "MAX_SCHEMA_TEXT", "CHECK_BUDGET",
           "STEPS_PER_VALUE", "STEPS_PER_CHAR", "JUDGE_BUDGET", "Verdict", "check", "shared_allowance",
           "json_pointer"]

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
# costs below say what each call is charged.
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

# Compiled patterns kept per check (each may hold up to RE2's memory limit, in .regex).
_REGEX_CACHE: Final = 16
# Applying a subschema inside another takes up to six Python frames (keyword, descend, reference …):
# checking stops at the nesting that fits under the interpreter's recursion limit, with room to spare,
# rather than meet RecursionError in whatever code happens to be running (the Rust maps under
# referencing turn it into a panic that is not even an Exception).
_FRAMES_PER_NESTING: Final = 6
_STACK_MARGIN: Final = 100
# What the calls below cost, in steps, measured (``python -m bench.schemas``) so that no shape of schema
# makes a step take much longer than judging an ordinary one does (about half a microsecond on the
# two-core machine): a keyword call (the guard around it, jsonschema's generator); resolving a
# reference (joining URIs, looking through the registry); compiling a pattern (RE2, and Python's re
# asked whether what RE2 refuses is a regex at all: some 50 µs); a value of const or enum compared,
# or of an array's item made hashable for uniqueItems; one multipleOf in exact arithmetic.
_KEYWORD_COST: Final = 2
_REFERENCES: Final = ("$ref", "$dynamicRef", "$recursiveRef")
_REFERENCE_COST: Final = 16
_COMPILE_COST: Final = 100
_COMPARED_COST: Final = 3
_MULTIPLE_COST: Final = 12
# Keywords whose whole value jsonschema may walk each time the object holding them is applied.
_WALKED_WHOLE: Final = frozenset({"const", "enum", "required", "dependentRequired", "dependencies"})
# Keywords whose values are data, never evaluated as a schema by a keyword: an object under them may
# hold a "$schema" member without being a subschema.
_DATA_KEYWORDS: Final = frozenset({"const", "enum", "default", "examples"})


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
# The running check: budget, pointers, compiled patterns
# --------------------------------------------------------------------------------------------------


class _Stop(Exception):
    """Checking cannot go on: the budget ran out, or the schema does something refused."""

    def __init__(self, code: str, reason: str, pointer: str | None = None) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.pointer = pointer


class _Check:
    """One check's state: the budget, where each schema object sits, the patterns compiled so far."""

    __slots__ = ("steps", "limit", "shared", "judging", "pointers", "dialects", "weights", "unchecked", "regexes",
                 "where", "node", "depth", "max_depth")

    def __init__(self, pointers: dict[int, str], dialects: dict[int, str]) -> None:
        self.steps = 0
        self.limit = JUDGE_BUDGET
        # Whether ``limit`` is what a group of checks had left (see shared_allowance), not this check's own.
        self.shared = False
        # True while the schema itself is judged: it is then the value, and pointers name its parts.
        self.judging = False
        self.pointers = pointers
        # The objects below the root that name a draft jsonschema knows (by id), with their pointers.
        self.dialects = dialects
        self.weights: dict[int, int] = {}
        self.unchecked: dict[str, str] = {}
        self.regexes: OrderedDict[str, Regex | str | None] = OrderedDict()
        # The schema pointer of the innermost keyword being evaluated when checking stopped.
        self.where: str | None = None
        # The subschema object the keyword table's walk was in when it ended (see _Dialect.first_flaw).
        self.node: Any = None
        # Schema applications in progress, one inside the other, and how many fit on the stack.
        self.depth = 0
        self.max_depth = max(8, (sys.getrecursionlimit() - _stack_depth() - _STACK_MARGIN) // _FRAMES_PER_NESTING)

    def enter(self) -> None:
        """One more schema application inside the others; call ``self.depth -= 1`` when it ends."""
        self.depth += 1
        if self.depth > self.max_depth:
            raise _Stop("too-deep", f"checking nests schemas more than {self.max_depth} deep (a reference that "
                                    "loops back on itself without consuming the answer, or an answer nested "
                                    "too deeply)")

    def charge(self, steps: int) -> None:
        self.steps += steps
        if self.steps > self.limit:
            if self.shared:
                raise _Stop("over-budget", f"the answers checked together (one resume's) had {self.limit:,} steps "
                                           "left, and this check needs more")
            if self.judging:
                raise _Stop("over-budget", f"judging the schema itself needs more than {self.limit:,} steps (it "
                                           "holds too many subschemas)")
            raise _Stop("over-budget", f"checking needs more than {self.limit:,} steps (a schema that multiplies "
                                       "its own work, or an answer too large for it)")

    def at(self, node: object) -> None:
        """Note the subschema object the keyword table's walk ended in."""
        self.node = node

    def pointer(self, node: object, *keys: str) -> str:
        base = self.pointers.get(id(node), "")
        return base + "".join("/" + _escape(key) for key in keys)

    def regex(self, pattern: str) -> Regex | str | None:
        """The compiled pattern; a reason it cannot run (str); ``None`` when it is not a regex at all."""
        if pattern in self.regexes:
            self.regexes.move_to_end(pattern)
            return self.regexes[pattern]
        self.charge(_COMPILE_COST + len(pattern) // 4)
        compiled = compile_pattern(pattern)
        self.regexes[pattern] = compiled
        if len(self.regexes) > _REGEX_CACHE:
            self.regexes.popitem(last=False)
        return compiled

    def matches(self, pattern: str, text: str, pointer: str) -> bool | None:
        """Whether ``pattern`` matches ``text``; ``None`` (and a note) when it cannot be run."""
        compiled = self.regex(pattern)
        if isinstance(compiled, Regex):
            found = compiled.search(text, self.charge)
            if found is not None:
                return found
            compiled = "the text holds a lone surrogate, which RE2 cannot read"
        self.unchecked.setdefault(pointer, compiled or "it is not a valid regular expression")
        return None


_ACTIVE: ContextVar[_Check | None] = ContextVar("agui_schema_check", default=None)


def _active() -> _Check:
    check = _ACTIVE.get()
    if check is None:  # (the guarded validators are private to this module and always run inside check())
        raise RuntimeError("a guarded validator ran outside a check")
    return check


def _stack_depth() -> int:
    frame: FrameType | None = sys._getframe()
    depth = 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


def _is_regex(instance: object) -> bool:
    """The ``regex`` format, while a schema is judged: a pattern that is no regex makes it invalid."""
    if not isinstance(instance, str):
        return True
    return _active().regex(instance) is not None


_FORMATS: Final = jsonschema.FormatChecker(formats=())
_FORMATS.checks("regex")(_is_regex)


# --------------------------------------------------------------------------------------------------
# Guarded keywords
# --------------------------------------------------------------------------------------------------


def _is_valid(errors: Iterable[ValidationError]) -> bool:
    return next(iter(errors), None) is None


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string") or not isinstance(pattern, str):
        return
    check = _active()
    if check.matches(pattern, instance, check.pointer(schema, "pattern")) is False:
        yield ValidationError(f"{instance!r} does not match {quoted_name(pattern)}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object") or not isinstance(patterns, dict):
        return
    check = _active()
    for pattern, subschema in patterns.items():
        where = check.pointer(schema, "patternProperties", pattern)
        for key, value in instance.items():
            # A pattern that cannot run applies to no key: the check is lenient, never wrong by refusing.
            if check.matches(pattern, key, where):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _claimed(check: _Check, schema: Any, key: str) -> bool:
    """Whether ``properties`` or a ``patternProperties`` pattern covers ``key`` (one that cannot run does)."""
    properties = schema.get("properties")
    if isinstance(properties, dict) and key in properties:
        return True
    patterns = schema.get("patternProperties")
    if not isinstance(patterns, dict):
        return False
    return any(check.matches(p, key, check.pointer(schema, "patternProperties", p)) is not False for p in patterns)


def _additional_properties(validator: Any, additional: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    check = _active()
    check.charge(1 + len(instance))  # every key of the answer is looked up, at every application
    extras = [key for key in instance if not _claimed(check, schema, key)]
    if validator.is_type(additional, "object"):
        for key in extras:
            yield from validator.descend(instance[key], additional, path=key)
    elif additional is False and extras:
        yield ValidationError(f"Additional properties are not allowed ({_listed(sorted(extras))} unexpected)")


def _listed(keys: list[str]) -> str:
    return ", ".join(map(repr, keys)) + (" was" if len(keys) == 1 else " were")


def _resolved(validator: Any, ref: str) -> tuple[Any, Any]:
    # The lookup jsonschema's own reference keywords make (its resolver attribute is private).
    _active().charge(_REFERENCE_COST)
    found = validator._resolver.lookup(ref)
    return validator.evolve(schema=found.contents, _resolver=found.resolver), found.contents


def _references(validator: Any, schema: dict[str, Any]) -> Iterator[tuple[Any, Any]]:
    # $recursiveRef (2019-09) and $dynamicRef (2020-12) are followed to their static target, as
    # jsonschema's own annotation walk does.
    for keyword in _REFERENCES:
        ref = schema.get(keyword)
        if isinstance(ref, str):
            yield _resolved(validator, ref)


_Walked = TypeVar("_Walked")


def _nested(walk: Callable[[Any, Any, Any], _Walked]) -> Callable[[Any, Any, Any], _Walked]:
    """``walk`` counted as one schema application inside the others (see :meth:`_Check.enter`)."""

    def nested(validator: Any, instance: Any, schema: Any) -> _Walked:
        check = _active()
        try:
            check.enter()
            return walk(validator, instance, schema)
        finally:
            check.depth -= 1

    return nested


@_nested
def _evaluated_keys(validator: Any, instance: dict[str, Any], schema: Any) -> set[str]:
    """The keys of ``instance`` that ``schema`` (and the subschemas that apply to it) evaluate."""
    if not isinstance(schema, dict):
        return set()
    check = _active()
    check.charge(1 + len(schema) + len(instance))
    keys: set[str] = set()
    for evolved, target in _references(validator, schema):
        keys |= _evaluated_keys(evolved, instance, target)
    keys |= {key for key in instance if _claimed(check, schema, key)}
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        if keyword in schema:
            keys |= {key for key, value in instance.items() if _is_valid(validator.descend(value, schema[keyword]))}
    dependent = schema.get("dependentSchemas")
    if isinstance(dependent, dict):
        for key, subschema in dependent.items():
            if key in instance:
                keys |= _evaluated_keys(validator, instance, subschema)
    keys |= _from_applicators(validator, instance, schema, _evaluated_keys)
    return keys


@_nested
def _evaluated_items(validator: Any, instance: list[Any], schema: Any) -> set[int]:
    """The indexes of ``instance`` that ``schema`` (and the subschemas that apply to it) evaluate."""
    if not isinstance(schema, dict):
        return set()
    _active().charge(1 + len(schema) + len(instance))
    everything = set(range(len(instance)))
    items = schema.get("items")
    if "items" in schema and (not isinstance(items, list) or "additionalItems" in schema):
        return everything  # (an array "items" is draft 2019-09's prefixItems)
    indexes: set[int] = set(range(len(items))) if isinstance(items, list) else set()
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list):
        indexes |= set(range(len(prefix)))
    for evolved, target in _references(validator, schema):
        indexes |= _evaluated_items(evolved, instance, target)
    for keyword in ("contains", "unevaluatedItems"):
        if keyword in schema:
            indexes |= {n for n, item in enumerate(instance) if _is_valid(validator.descend(item, schema[keyword]))}
    indexes |= _from_applicators(validator, instance, schema, _evaluated_items)
    return indexes & everything


def _from_applicators(validator: Any, instance: Any, schema: dict[str, Any],
                      walk: Callable[[Any, Any, Any], set[Any]]) -> set[Any]:
    """What the subschemas of allOf/anyOf/oneOf and if/then/else that ``instance`` satisfies evaluate."""
    found: set[Any] = set()
    for keyword in ("allOf", "anyOf", "oneOf"):
        subschemas = schema.get(keyword)
        for subschema in subschemas if isinstance(subschemas, list) else ():
            if _is_valid(validator.descend(instance, subschema)):
                found |= walk(validator, instance, subschema)
    if "if" in schema:
        if _is_valid(validator.descend(instance, schema["if"])):
            found |= walk(validator, instance, schema["if"])
            if "then" in schema:
                found |= walk(validator, instance, schema["then"])
        elif "else" in schema:
            found |= walk(validator, instance, schema["else"])
    return found


def _unevaluated_properties(validator: Any, unevaluated: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated_keys(validator, instance, schema)
    failed = [key for key in instance
              if key not in evaluated and not _is_valid(validator.descend(instance[key], unevaluated, path=key))]
    if failed and unevaluated is False:
        yield ValidationError(f"Unevaluated properties are not allowed ({_listed(sorted(failed))} unexpected)")
    elif failed:
        yield ValidationError(f"Unevaluated properties are not valid under the given schema ({_listed(failed)} "
                              "unevaluated and invalid)")


def _unevaluated_items(validator: Any, unevaluated: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "array"):
        return
    evaluated = _evaluated_items(validator, instance, schema)
    failed = [item for n, item in enumerate(instance)
              if n not in evaluated and not _is_valid(validator.descend(item, unevaluated, path=n))]
    if failed:
        yield ValidationError(f"Unevaluated items are not allowed ({', '.join(map(repr, failed))} "
                              f"{'was' if len(failed) == 1 else 'were'} unexpected)")


def _exact(number: Any) -> Fraction:
    # A float's shortest repr is the decimal the JSON text wrote (for any text a double can hold):
    # judged on it, 0.3 is a multiple of 0.1, as JSON Schema's decimal numbers mean.
    return Fraction(number) if isinstance(number, int) else Fraction(repr(number))


def _multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "number") or isinstance(divisor, bool) or \
            not isinstance(divisor, (int, float)):
        return
    # Exact arithmetic on numbers this size costs about the square of their length.
    bits = sum(value.bit_length() for value in (instance, divisor) if isinstance(value, int))
    _active().charge(_MULTIPLE_COST + (bits // 4096) ** 2)
    try:
        whole = (_exact(instance) / _exact(divisor)).denominator == 1
    except (ValueError, ZeroDivisionError, OverflowError):  # NaN or infinity (Python values, not JSON)
        whole = False
    if not whole:
        yield ValidationError(f"{instance!r} is not a multiple of {divisor}")


def _canonical(value: Any, check: _Check) -> Any:
    """A hashable stand-in equal for exactly the values JSON Schema calls equal (1 and 1.0, not true)."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, dict):
        check.charge(_COMPARED_COST * (1 + len(value)))
        return ("object", frozenset((key, _canonical(item, check)) for key, item in value.items()))
    if isinstance(value, (list, tuple)):
        check.charge(_COMPARED_COST * (1 + len(value)))
        return ("array", tuple(_canonical(item, check) for item in value))
    return ("other", id(value))


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if unique is not True or not validator.is_type(instance, "array"):
        return
    check = _active()
    seen: set[Any] = set()
    for item in instance:
        key = _canonical(item, check)
        if key in seen:
            yield ValidationError(f"{instance!r} has non-unique elements")
            return
        seen.add(key)


_GUARDED: Final[dict[str, Callable[..., Iterator[ValidationError]]]] = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "unevaluatedProperties": _unevaluated_properties,
    "unevaluatedItems": _unevaluated_items,
    "multipleOf": _multiple_of,
    "divisibleBy": _multiple_of,  # draft 3's name
    "uniqueItems": _unique_items,
}


def _charged(keyword: str, function: Callable[..., Any]) -> Callable[..., Iterator[ValidationError]]:
    """``function`` with every call and every error message it yields charged to the budget."""

    reference = keyword in _REFERENCES
    cost = _REFERENCE_COST if reference else _KEYWORD_COST

    def keyword_function(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        check = _active()
        check.charge(cost)
        try:
            check.enter()
            if reference and not isinstance(value, str):
                # Drafts 3 and 4 leave "$ref" out of their metaschemas, so a number there is judged
                # sound, and referencing's lookup of it raised AttributeError out of the check.
                raise _Stop("unresolvable", f"the reference is a {type(value).__name__}, not a string")
            errors = function(validator, value, instance, schema)
            for error in errors or ():
                check.charge(1 + len(error.message) // 64)
                yield error
        except (_Stop, referencing.exceptions.Unresolvable):
            if check.where is None:
                check.where = check.pointer(instance) if check.judging else check.pointer(schema, keyword)
            raise
        finally:
            check.depth -= 1

    return keyword_function


def _applicable(rule: Callable[[Any], Iterable[tuple[str, Any]]]) -> Callable[[Any], Iterable[tuple[str, Any]]]:
    """The dialect's rule for which keywords of a schema object apply, charging each object applied."""

    def applicable(schema: Any) -> Iterable[tuple[str, Any]]:
        check = _ACTIVE.get()
        if check is not None and isinstance(schema, dict):
            weight = check.weights.get(id(schema))
            if weight is None:
                weight = check.weights[id(schema)] = _weight(schema)
            check.charge(weight)
            if check.dialects:
                _refuse_embedded_dialect(check, schema)
        return rule(schema)

    return applicable


def _weight(schema: dict[str, Any]) -> int:
    # What jsonschema does with one schema object, apart from what it charges itself: it walks the
    # object's members (known keywords or not), a keyword walks its value (properties, required …),
    # const and enum compare whole values, and dependentRequired walks each of its lists.
    return 1 + len(schema) + sum(_COMPARED_COST * _size(value, deep=True) if key in _WALKED_WHOLE else
                                 _size(value, deep=False) for key, value in schema.items())


def _size(value: Any, *, deep: bool) -> int:
    if not isinstance(value, (dict, list, tuple)):
        return 0
    if not deep:
        return len(value)
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        total += 1
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return total


def _names_a_dialect(node: dict[str, Any]) -> bool:
    dialect = node.get("$schema")
    return isinstance(dialect, str) and validator_for(node, default=None) is not None  # type: ignore[arg-type]


def _refuse_embedded_dialect(check: _Check, schema: dict[str, Any]) -> None:
    """Refuse a subschema (or a subschema about to be evaluated) that names a draft of its own.

    jsonschema evaluates such a subschema with that draft's stock validator, which has none of the
    guards here. A subschema is evaluated either through ``descend``, which calls this first, or by a
    keyword of an object this saw (``not``, ``if``, ``contains``, ``oneOf``), so its members are looked
    at too; values of data keywords (``const``, ``default`` …) are not subschemas. The objects naming a
    draft were found by :func:`_survey`; the root is evaluated without its ``$schema`` (see
    :func:`check`), and the metaschemas without theirs.
    """
    dialects = check.dialects
    where = dialects.get(id(schema))
    for key, value in schema.items():
        if where is not None:
            break
        if key in _DATA_KEYWORDS:
            continue
        where = dialects.get(id(value))
        if where is None and isinstance(value, list):
            where = next((dialects[id(item)] for item in value if id(item) in dialects), None)
    if where is not None:
        raise _Stop("embedded-dialect", "a subschema names its own $schema; only the root's is honoured (its "
                                        "own draft would be checked without these bounds)", where)


# --------------------------------------------------------------------------------------------------
# The guarded validators and their registry
# --------------------------------------------------------------------------------------------------


class _Dialect:
    """A draft's guarded validator class, with the resolver base that holds the metaschemas."""

    __slots__ = ("validator", "meta", "registry", "specification", "_table", "_leaves")

    def __init__(self, validator: type[Any], meta: _Dialect | None, registry: referencing.Registry[Any],
                 specification: referencing.Specification[Any]) -> None:
        self.validator = validator
        self.meta = meta
        self.registry = registry
        self.specification = specification
        self._table: KeywordTable | None | bool = False  # (False: not read yet)
        self._leaves: dict[int, Any] = {}

    def make(self, schema: Any) -> Any:
        """A validator for ``schema`` whose references resolve in the schema and the metaschemas only."""
        resource = self.specification.create_resource(schema)
        uri = resource.id() or ""
        # Crawled once here, so every later anchor lookup finds the anchors without walking again.
        registry = self.registry.with_resource(uri, resource).crawl()
        return self.validator(schema, _resolver=registry.resolver(base_uri=uri))

    def _uri(self) -> str:
        return (self.validator.ID_OF(self.validator.META_SCHEMA) or "").rstrip("#")

    def judge(self) -> Any:
        """A validator for this draft's metaschema (as held in the registry, without its ``$schema``)."""
        uri = self._uri()
        return self.validator(self.registry.contents(uri), format_checker=_FORMATS,
                              _resolver=self.registry.resolver(base_uri=uri))

    def first_flaw(self, schema: Any, check: _Check) -> tuple[str, str] | None:
        """Where ``schema`` (a draft of this metaschema) fails its metaschema and why, or ``None``.

        Walked once by the metaschema read as a table (see :mod:`.metaschema`); where the table cannot
        vouch for a value, the subschema object holding it (the whole schema, for a draft without a
        table) is judged whole by jsonschema, so the error reported is jsonschema's own.
        """
        if self._table is False:
            self._table = keyword_table(self.registry, self._uri())
        node = schema
        if isinstance(self._table, KeywordTable):
            try:
                if is_sound(self._table, schema, check.charge, self._fits, check.at):
                    return None
            except _Stop:
                check.where = check.pointer(check.node if check.node is not None else schema)
                raise
            node = check.node if check.node is not None else schema
        invalid = next(iter(self.judge().iter_errors(node)), None)
        if invalid is None and node is not schema:  # (the table never refuses what jsonschema accepts)
            node, invalid = schema, next(iter(self.judge().iter_errors(schema)), None)
        if invalid is None:
            return None
        return check.pointer(node) + json_pointer(invalid.absolute_path), _shorten_reason(invalid.message)

    def _fits(self, leaf: Leaf, value: Any) -> bool:
        validator = self._leaves.get(id(leaf))
        if validator is None:
            validator = self._leaves[id(leaf)] = self.validator(leaf.schema, format_checker=_FORMATS,
                                                                _resolver=leaf.resolver)
        if leaf.only_type is not None:  # (as the type keyword would judge it, without a validator's walk)
            return bool(validator.is_type(value, leaf.only_type))
        return _is_valid(validator.iter_errors(value))


@cache
def _metaschemas() -> referencing.Registry[Any]:
    """The drafts' metaschemas, each without its "$schema" member.

    The 2019-09 and 2020-12 metaschemas are made of vocabulary metaschemas, each naming its draft; kept
    as they are, jsonschema would judge a schema with the stock validators (unguarded) as soon as it
    reached one. Without the member they are judged by the referring guarded validator, which is the
    same draft. Nothing is ever retrieved: the registry's default retrieval refuses every URI.
    """
    resources = []
    for uri in jsonschema_specifications.REGISTRY:
        contents = jsonschema_specifications.REGISTRY.contents(uri)
        specification = referencing.jsonschema.specification_with(contents["$schema"])
        bare = {key: value for key, value in contents.items() if key != "$schema"}
        resources.append((uri, specification.create_resource(bare)))
    return referencing.Registry().with_resources(resources).crawl()


@cache
def _dialect(stock: type[Any]) -> _Dialect:
    """The guarded twin of one of jsonschema's draft validators (never registered with jsonschema)."""
    validators = {keyword: _charged(keyword, _GUARDED.get(keyword, function))
                  for keyword, function in stock.VALIDATORS.items()}
    dialect_id = stock.ID_OF(stock.META_SCHEMA)
    guarded = jsonschema.validators.create(
        meta_schema=stock.META_SCHEMA, validators=validators, type_checker=stock.TYPE_CHECKER,
        format_checker=_FORMATS, id_of=stock.ID_OF,
        # Drafts up to 7 ignore the siblings of $ref; the stock class keeps that rule privately.
        applicable_validators=_applicable(stock._APPLICABLE_VALIDATORS))
    specification = referencing.jsonschema.specification_with(dialect_id or "urn:unknown-dialect",
                                                              default=referencing.Specification.OPAQUE)
    meta_stock = validator_for(stock.META_SCHEMA, default=stock)
    meta = None if meta_stock is stock else _dialect(meta_stock)
    return _Dialect(guarded, meta, _metaschemas(), specification)


# --------------------------------------------------------------------------------------------------
# check()
# --------------------------------------------------------------------------------------------------


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


def shared_allowance(checks: Iterable[tuple[Any, Any]]) -> _Allowance:
    """The steps a group of checks, ``(schema, instance)`` pairs, may spend together (spent in place by
    :func:`check`): the bases of one check (:data:`JUDGE_BUDGET`, :data:`CHECK_BUDGET`), and
    :data:`STEPS_PER_CHAR` for every character of each pair's schema and :data:`STEPS_PER_VALUE` for
    every value of its instance.

    One resume answers every open interrupt of a run, each with a schema of the agent's, all checked in
    one call on the caller's thread (an event loop's, for a web backend). Each check alone is bounded,
    but an agent raising 200 interrupts that each carry a schema costing a second to check made their
    answers cost minutes: within one allowance, the bases are spent once, and the rest is what the
    schemas' and the answers' sizes pay for. So a resume answering 1,000 interrupts, each with a form of
    its own, is allowed what their 1,000 forms cost to read, while 1,000 small schemas that each
    multiply their work share one check's bases. Judging a schema is paid for once in a group, whether
    it is judged there or was judged before (remembered), so a group's verdict never depends on what
    the process checked earlier.
    """
    steps = JUDGE_BUDGET + CHECK_BUDGET
    texts: dict[int, tuple[Any, str | None]] = {}
    for schema, instance in checks:
        if id(schema) not in texts:
            texts[id(schema)] = (schema, _judged_key(schema))
        text = texts[id(schema)][1]
        steps += STEPS_PER_CHAR * (len(text) if text is not None else 0) + STEPS_PER_VALUE * _count(instance,
                                                                                                     _MAX_COUNTED)
    return _Allowance(steps, texts)


def _limited(check: _Check, allowance: _Allowance | None) -> None:
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
    dialect = _dialect(validator_for(schema, default=jsonschema.Draft202012Validator))
    if isinstance(schema, dict) and "$schema" in schema:
        # Evaluated without it: jsonschema re-reads "$schema" whenever it re-enters an object (a "$ref"
        # to "#"), and would switch to the draft's stock, unguarded, validator.
        schema = {key: value for key, value in schema.items() if key != "$schema"}
        pointers[id(schema)] = ""
    check = _Check(pointers, dialects)
    check.limit = JUDGE_BUDGET + STEPS_PER_CHAR * characters
    token = _ACTIVE.set(check)
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
    except _Stop as stop:
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
        _ACTIVE.reset(token)
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


def json_pointer(path: Iterable[object]) -> str:
    """The JSON pointer of a jsonschema error path."""
    return "".join("/" + _escape(str(part)) for part in path)


def _shorten_reason(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"
