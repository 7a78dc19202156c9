"""The keywords of a guarded validator: each call, each error and each schema object applied charged to
the running check (:mod:`.schema_steps`), and the keywords with costs of their own implemented here with
bounded ones.

``pattern`` and ``patternProperties`` run on RE2; ``additionalProperties``, ``unevaluatedProperties``
and ``unevaluatedItems`` find the keys and items a schema evaluates without jsonschema's unbounded
annotation walk; ``multipleOf`` is exact on JSON's decimals and priced by the numbers' length;
``uniqueItems`` hashes instead of comparing every pair. A subschema that names a draft of its own is
refused (``embedded-dialect``) before it is applied.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from fractions import Fraction
from typing import Any, Final, TypeVar

import referencing.exceptions
from jsonschema.exceptions import ValidationError

from .._inert import quoted_name
from .schema_steps import RUNNING, CheckStopped, RunningCheck, running_check

__all__ = ["is_valid", "guarded_keywords", "charged_applicable"]

# What the calls below cost, in steps, measured (``python -m bench.schemas``) so that no shape of schema
# makes a step take much longer than judging an ordinary one does (about half a microsecond on the
# two-core machine): a keyword call (the guard around it, jsonschema's generator); resolving a
# reference (joining URIs, looking through the registry); a value of const or enum compared, or of an
# array's item made hashable for uniqueItems; one multipleOf in exact arithmetic. (Compiling a pattern
# is charged by the running check, in .schema_steps.)
_KEYWORD_COST: Final = 2
_REFERENCES: Final = ("$ref", "$dynamicRef", "$recursiveRef")
_REFERENCE_COST: Final = 16
_COMPARED_COST: Final = 3
_MULTIPLE_COST: Final = 12
# Keywords whose whole value jsonschema may walk each time the object holding them is applied.
_WALKED_WHOLE: Final = frozenset({"const", "enum", "required", "dependentRequired", "dependencies"})
# Keywords whose values are data, never evaluated as a schema by a keyword: an object under them may
# hold a "$schema" member without being a subschema.
_DATA_KEYWORDS: Final = frozenset({"const", "enum", "default", "examples"})


def is_valid(errors: Iterable[ValidationError]) -> bool:
    """Whether a validator's ``errors`` (a lazy iterator) hold none, asking for the first only."""
    return next(iter(errors), None) is None


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string") or not isinstance(pattern, str):
        return
    check = running_check()
    if check.matches(pattern, instance, check.pointer(schema, "pattern")) is False:
        yield ValidationError(f"{instance!r} does not match {quoted_name(pattern)}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object") or not isinstance(patterns, dict):
        return
    check = running_check()
    for pattern, subschema in patterns.items():
        where = check.pointer(schema, "patternProperties", pattern)
        for key, value in instance.items():
            # A pattern that cannot run applies to no key: the check is lenient, never wrong by refusing.
            if check.matches(pattern, key, where):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _claimed(check: RunningCheck, schema: Any, key: str) -> bool:
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
    check = running_check()
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
    running_check().charge(_REFERENCE_COST)
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
    """``walk`` counted as one schema application inside the others (see :meth:`~.schema_steps.RunningCheck.enter`)."""

    def nested(validator: Any, instance: Any, schema: Any) -> _Walked:
        check = running_check()
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
    check = running_check()
    check.charge(1 + len(schema) + len(instance))
    keys: set[str] = set()
    for evolved, target in _references(validator, schema):
        keys |= _evaluated_keys(evolved, instance, target)
    keys |= {key for key in instance if _claimed(check, schema, key)}
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        if keyword in schema:
            keys |= {key for key, value in instance.items() if is_valid(validator.descend(value, schema[keyword]))}
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
    running_check().charge(1 + len(schema) + len(instance))
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
            indexes |= {n for n, item in enumerate(instance) if is_valid(validator.descend(item, schema[keyword]))}
    indexes |= _from_applicators(validator, instance, schema, _evaluated_items)
    return indexes & everything


def _from_applicators(validator: Any, instance: Any, schema: dict[str, Any],
                      walk: Callable[[Any, Any, Any], set[Any]]) -> set[Any]:
    """What the subschemas of allOf/anyOf/oneOf and if/then/else that ``instance`` satisfies evaluate."""
    found: set[Any] = set()
    for keyword in ("allOf", "anyOf", "oneOf"):
        subschemas = schema.get(keyword)
        for subschema in subschemas if isinstance(subschemas, list) else ():
            if is_valid(validator.descend(instance, subschema)):
                found |= walk(validator, instance, subschema)
    if "if" in schema:
        if is_valid(validator.descend(instance, schema["if"])):
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
              if key not in evaluated and not is_valid(validator.descend(instance[key], unevaluated, path=key))]
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
              if n not in evaluated and not is_valid(validator.descend(item, unevaluated, path=n))]
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
    running_check().charge(_MULTIPLE_COST + (bits // 4096) ** 2)
    try:
        whole = (_exact(instance) / _exact(divisor)).denominator == 1
    except (ValueError, ZeroDivisionError, OverflowError):  # NaN or infinity (Python values, not JSON)
        whole = False
    if not whole:
        yield ValidationError(f"{instance!r} is not a multiple of {divisor}")


def _canonical(value: Any, check: RunningCheck) -> Any:
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
    check = running_check()
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


def guarded_keywords(stock: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Iterator[ValidationError]]]:
    """A draft's keyword functions (``stock``, by keyword), each replaced by its bounded implementation
    here if it has one, and each charged to the running check."""
    return {keyword: _charged(keyword, _GUARDED.get(keyword, function)) for keyword, function in stock.items()}


def _charged(keyword: str, function: Callable[..., Any]) -> Callable[..., Iterator[ValidationError]]:
    """``function`` with every call and every error message it yields charged to the budget."""

    reference = keyword in _REFERENCES
    cost = _REFERENCE_COST if reference else _KEYWORD_COST

    def keyword_function(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        check = running_check()
        check.charge(cost)
        try:
            check.enter()
            if reference and not isinstance(value, str):
                # Drafts 3 and 4 leave "$ref" out of their metaschemas, so a number there is judged
                # sound, and referencing's lookup of it raised AttributeError out of the check.
                raise CheckStopped("unresolvable", f"the reference is a {type(value).__name__}, not a string")
            errors = function(validator, value, instance, schema)
            for error in errors or ():
                check.charge(1 + len(error.message) // 64)
                yield error
        except (CheckStopped, referencing.exceptions.Unresolvable):
            if check.where is None:
                check.where = check.pointer(instance) if check.judging else check.pointer(schema, keyword)
            raise
        finally:
            check.depth -= 1

    return keyword_function


def charged_applicable(rule: Callable[[Any], Iterable[tuple[str, Any]]]) -> Callable[[Any], Iterable[tuple[str, Any]]]:
    """The dialect's rule for which keywords of a schema object apply, charging each object applied."""

    def applicable(schema: Any) -> Iterable[tuple[str, Any]]:
        check = RUNNING.get()
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


def _refuse_embedded_dialect(check: RunningCheck, schema: dict[str, Any]) -> None:
    """Refuse a subschema (or a subschema about to be evaluated) that names a draft of its own.

    jsonschema evaluates such a subschema with that draft's stock validator, which has none of the
    guards here. A subschema is evaluated either through ``descend``, which calls this first, or by a
    keyword of an object this saw (``not``, ``if``, ``contains``, ``oneOf``), so its members are looked
    at too; values of data keywords (``const``, ``default`` …) are not subschemas. The objects naming a
    draft were found when the schema was surveyed (:mod:`.schema`); the root is evaluated without its
    ``$schema`` (see :func:`~agui_client.core.schema.check`), and the metaschemas without theirs.
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
        raise CheckStopped("embedded-dialect", "a subschema names its own $schema; only the root's is honoured "
                                               "(its own draft would be checked without these bounds)", where)


