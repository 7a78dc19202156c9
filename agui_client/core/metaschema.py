"""A draft's metaschema read once as a table of keywords, so a schema is judged in one walk.

Judging a ``responseSchema`` against its draft's metaschema with jsonschema applies the whole
metaschema to every subschema: for 2020-12, seven vocabulary metaschemas reached through ``allOf``
and ``$dynamicRef``, some 440 steps and 0.35 ms a subschema. An ordinary 50-field form took 17 ms to
judge, and a resume answering 1,000 interrupts, each with a form of its own, 17 s (so the shared
budget refused all but about 100 of them). Yet a metaschema says the same of every subschema: it is
an object (or a boolean), and each keyword it holds must fit that keyword's own schema in the
metaschema's ``properties``. Read as a table, that is:

* a keyword whose value is a subschema (``items``, ``not``), a map of them (``properties``, ``$defs``),
  a list of them (``allOf``), or one of these (draft 7's ``items``): the walk goes on into it;
* any other keyword (``type``, ``maxLength``, ``required``, ``pattern`` …): its value is judged
  against the keyword's schema alone (``nonNegativeInteger``, ``simpleTypes`` …), which holds no
  subschema, and a value met again in the same schema is not judged again;
* a keyword the metaschema does not name: anything goes, as in the metaschema.

The table is derived from the metaschema as held (:func:`keyword_table`), never written out by hand:
a metaschema with a rule the table cannot express gives no table, and its schemas are judged whole as
before. The walk (:func:`is_sound`) only ever says that a schema is sound; for anything else it says
"not known", and the caller judges the schema whole with jsonschema, whose error is the one reported.
So the table can make judging cheaper, never different.

Sans-IO, like the rest of ``core``: it reads only the registry it is given.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import referencing
import referencing.exceptions

if TYPE_CHECKING:  # (what Registry.resolver() returns; referencing does not export its name)
    from referencing._core import Resolver

__all__ = ["WALK_COST", "Leaf", "KeywordTable", "keyword_table", "is_sound"]

# Members of a metaschema (or of one keyword's schema in it) that constrain nothing.
_ANNOTATIONS: Final = frozenset({"$schema", "$id", "id", "$vocabulary", "$dynamicAnchor", "$recursiveAnchor",
                                 "$comment", "title", "description", "default", "deprecated", "$defs",
                                 "definitions", "readOnly", "writeOnly", "examples"})
# How a metaschema says "a subschema here": back to the metaschema being judged against.
_SELF: Final = ({"$dynamicRef": "#meta"}, {"$recursiveRef": "#"}, {"$ref": "#"})
#: Steps charged for each value the walk visits (a step is about half a microsecond of judging; measured
#: with ``python -m bench.schemas``).
WALK_COST: Final = 4
# References followed while reading one keyword's schema (the drafts' own chains are two or three long).
_MAX_HOPS: Final = 16


class _NoTable(Exception):
    """The metaschema holds a rule the table cannot express: its schemas are judged whole."""


class Leaf:
    """A keyword's own schema in the metaschema, holding no subschema: its value is judged against it.

    Attributes:
        schema: the keyword's schema, as the metaschema holds it.
        resolver: what its references resolve against (the vocabulary metaschema it sits in).
        only_type: the JSON type, when the schema asks for that type and nothing else (``title``,
            ``description``, ``$comment``, ``format``: ``{"type": "string"}``), so a value can be
            judged by its type alone; else ``None``.
    """

    __slots__ = ("schema", "resolver", "only_type")

    def __init__(self, schema: Any, resolver: Resolver[Any]) -> None:
        self.schema = schema
        self.resolver = resolver
        body = {key: value for key, value in schema.items() if key not in _ANNOTATIONS} \
            if isinstance(schema, dict) else None
        self.only_type: str | None = body["type"] if body is not None and list(body) == ["type"] and \
            isinstance(body["type"], str) else None


class _Map:
    """An object whose values are each judged by ``value`` (and whose names by ``names``)."""

    __slots__ = ("value", "names")

    def __init__(self, value: _Rule, names: Leaf | None) -> None:
        self.value = value
        self.names = names


class _List:
    """An array of at least ``least`` items, each judged by ``item``."""

    __slots__ = ("item", "least")

    def __init__(self, item: _Rule, least: int) -> None:
        self.item = item
        self.least = least


class _Either:
    """A value one of ``rules`` finds sound."""

    __slots__ = ("rules",)

    def __init__(self, rules: tuple[_Rule, ...]) -> None:
        self.rules = rules


_SUBSCHEMA: Final = "subschema"
_ANYTHING: Final = "anything"
_Rule = Leaf | _Map | _List | _Either | str


class KeywordTable:
    """A metaschema as a table: what each keyword's value must be, and what a subschema may be.

    Attributes:
        rules: the rule for each keyword the metaschema names.
        booleans: whether a subschema may be ``true``/``false`` (from draft 6 on).
        requires: the keywords a subschema holding a keyword must hold too (draft 4's
            ``exclusiveMaximum`` needs ``maximum``).
    """

    __slots__ = ("rules", "booleans", "requires")

    def __init__(self, rules: dict[str, _Rule], booleans: bool, requires: dict[str, list[str]]) -> None:
        self.rules = rules
        self.booleans = booleans
        self.requires = requires


def keyword_table(registry: referencing.Registry[Any], uri: str) -> KeywordTable | None:
    """The table of the metaschema at ``uri`` in ``registry``; ``None`` when it has a rule the table
    cannot express (its schemas are then judged whole)."""
    rules: dict[str, _Rule] = {}
    kinds: set[str] = {"object", "boolean"}
    requires: dict[str, list[str]] = {}
    try:
        _collect(registry.contents(uri), registry.resolver(base_uri=uri), rules, kinds, requires)
    except (_NoTable, referencing.exceptions.Unresolvable, LookupError):
        return None
    if "object" not in kinds:
        return None
    return KeywordTable(rules, "boolean" in kinds, requires)


def _collect(contents: Any, resolver: Resolver[Any], rules: dict[str, _Rule], kinds: set[str],
             requires: dict[str, list[str]]) -> None:
    """Read the rules of one metaschema (and of the vocabularies its ``allOf`` names) into ``rules``."""
    if not isinstance(contents, dict):
        raise _NoTable
    for key, value in contents.items():
        if key in _ANNOTATIONS:
            continue
        if key == "type":
            kinds &= {value} if isinstance(value, str) else set(value)
        elif key == "allOf" and isinstance(value, list):
            for part in value:
                if not (isinstance(part, dict) and set(part) == {"$ref"}):
                    raise _NoTable
                found = resolver.lookup(part["$ref"])
                _collect(found.contents, found.resolver, rules, kinds, requires)
        elif key == "properties" and isinstance(value, dict):
            for keyword, schema in value.items():
                if keyword in rules:
                    raise _NoTable  # (two vocabularies ruling one keyword: judged whole)
                rules[keyword] = _rule(schema, resolver, 0)
        elif key == "dependencies" and isinstance(value, dict) and not requires and \
                all(isinstance(needed, list) and all(isinstance(n, str) for n in needed) for needed in value.values()):
            requires.update(value)
        else:
            raise _NoTable


def _rule(schema: Any, resolver: Resolver[Any], hops: int) -> _Rule:
    """What a value under a keyword whose schema is ``schema`` must be."""
    if schema is True:
        return _ANYTHING
    if not isinstance(schema, dict) or hops > _MAX_HOPS:
        raise _NoTable
    body = {key: value for key, value in schema.items() if key not in _ANNOTATIONS}
    if body in _SELF:
        return _SUBSCHEMA
    if not body:
        return _ANYTHING
    if not _reaches_self(schema, resolver, 0):
        return Leaf(schema, resolver)
    if set(body) == {"$ref"}:
        found = resolver.lookup(body["$ref"])
        return _rule(found.contents, found.resolver, hops + 1)
    if body.get("type") == "object" and set(body) <= {"type", "additionalProperties", "propertyNames"}:
        names = body.get("propertyNames")
        if names is not None and _reaches_self(names, resolver, 0):
            raise _NoTable
        return _Map(_rule(body.get("additionalProperties", True), resolver, hops + 1),
                    None if names is None else Leaf(names, resolver))
    if body.get("type") == "array" and set(body) <= {"type", "items", "minItems"} and \
            isinstance(body.get("minItems", 0), int):
        return _List(_rule(body.get("items", True), resolver, hops + 1), body.get("minItems", 0))
    if set(body) == {"anyOf"} and isinstance(body["anyOf"], list):
        return _Either(tuple(_rule(part, resolver, hops + 1) for part in body["anyOf"]))
    raise _NoTable


def _reaches_self(schema: Any, resolver: Resolver[Any], hops: int) -> bool:
    """Whether ``schema``, or what its references lead to, says "a subschema here" anywhere."""
    if hops > _MAX_HOPS:
        raise _NoTable
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node in _SELF or "$dynamicRef" in node or "$recursiveRef" in node:
                return True
            ref = node.get("$ref")
            if isinstance(ref, str):
                found = resolver.lookup(ref)
                if _reaches_self(found.contents, found.resolver, hops + 1):
                    return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def is_sound(table: KeywordTable, schema: Any, charge: Callable[[int], None],
             fits: Callable[[Leaf, Any], bool], at: Callable[[Any], None]) -> bool:
    """Whether ``schema`` is sound by ``table``: ``False`` means "not known", never "unsound".

    ``charge`` is told :data:`WALK_COST` steps for every value walked; ``fits(leaf, value)`` judges a keyword's
    value against the keyword's own schema (and charges what that costs). When the walk ends early
    (``False``, or an exception from ``charge`` or ``fits``), ``at`` is told the innermost subschema
    object holding the value it was judging (``None`` for the schema itself), so the caller can judge
    that object whole, or say where it stopped. A value met again under the same keyword is not
    judged again (``"type": "string"`` in every field of a form).
    """
    known: dict[tuple[int, type, Any], bool] = {}

    def leaf_fits(leaf: Leaf, value: Any) -> bool:
        if isinstance(value, (str, int, float)) or value is None:  # (bool is an int: the type is in the key)
            key = (id(leaf), type(value), value)
            found = known.get(key)
            if found is None:
                found = known[key] = fits(leaf, value)
            return found
        return fits(leaf, value)

    return _sound(table, _SUBSCHEMA, schema, None, charge, leaf_fits, at)


def _sound(table: KeywordTable, rule: _Rule, value: Any, owner: Any, charge: Callable[[int], None],
           fits: Callable[[Leaf, Any], bool], at: Callable[[Any], None]) -> bool:
    # Each value is walked with the subschema object that holds it (its owner), to say where the walk ended.
    stack: list[tuple[_Rule, Any, Any]] = [(rule, value, owner)]
    try:
        while stack:
            rule, value, owner = stack.pop()
            charge(WALK_COST)
            if rule is _SUBSCHEMA:
                if isinstance(value, dict):
                    if table.requires and any(key in value and not all(n in value for n in needed)
                                              for key, needed in table.requires.items()):
                        break
                    rules = table.rules
                    stack.extend((rules[key], member, value) for key, member in value.items() if key in rules)
                elif not (isinstance(value, bool) and table.booleans):
                    break
            elif isinstance(rule, Leaf):
                if not fits(rule, value):
                    break
            elif isinstance(rule, _Map):
                if not isinstance(value, dict) or \
                        (rule.names is not None and not all(fits(rule.names, key) for key in value)):
                    break
                stack.extend((rule.value, member, owner) for member in value.values())
            elif isinstance(rule, _List):
                if not isinstance(value, list) or len(value) < rule.least:
                    break
                stack.extend((rule.item, item, owner) for item in value)
            elif isinstance(rule, _Either):
                if not any(_sound(table, choice, value, owner, charge, fits, at) for choice in rule.rules):
                    break
        else:
            return True
    except BaseException:
        at(owner)
        raise
    at(owner)
    return False
