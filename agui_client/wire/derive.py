"""Code derived from the wire types: the fast readers, validators, encoders and constructors.

Every AG-UI wire type is stated once, as a frozen attrs class in :mod:`agui_client.types`: its fields,
their wire names (camelCase of the attribute), their defaults and so whether they may be absent, and
by the absence of any other field that the type is closed. The codec's cattrs converter reads every
value through hooks built from those classes; this module and :mod:`~agui_client.wire.writers` build
the rest from the same classes and the codec's :class:`~agui_client.wire.policy.Policy` (the few facts
``attrs.fields`` cannot state: a tag, a field the wire requires though Python has a default, a check
beyond the field types):

* a **reader** per class and per *shape* (the keys an object holds, in order): a function generated
  once per shape seen, that checks each value's JSON type and hands the values on as keywords, to
  the class (a fast decoder), or to a *route* (the session's fast front-end: the same values passed
  to the handlers the typed path reaches through the event object). Anything not in the plain shape
  (an unknown or missing key, a null, a wrong type, an unknown tag, a value the class's check would
  refuse, change or warn about) raises :class:`~agui_client.wire.policy.Fallback`, and the converter's
  checked path decides; so a reader accepts only what the checked path accepts, gives the same values,
  and never warns;
* a **validator** per class: the reader's checks without building anything, stricter in one way: the
  object must hold every key the encoder writes, so that the JSON itself is the object's wire form
  (what the fold keeps of a snapshot it holds as JSON);
* an **encoder** per class: the converter's unstructuring, written out (tag first, camelCase keys, a
  ``None`` left out where ``None`` is the default), checking as it goes that the values are plain JSON;
* a **constructor** per plain slotted class, filling the slots directly (what ``__init__`` does, at
  about half the cost).

The readers and validators are this module's (:class:`Derived`); the encoders and constructors, which
write a class rather than read it, are :mod:`~agui_client.wire.writers`' (:class:`Derived` hands them
on).

Generated code is compiled once per class, and once per shape within bounds that one agent cannot
spend for the others: each response pays for the shapes it brings, from an allowance of its own, and
each reader keeps a bounded number, the ones in use kept first (see :mod:`~agui_client.wire.shapes`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

import attrs

from . import writers
from .policy import Check, Fallback, Policy
from .shapes import ShapeCache, refused
from .writers import Writers

__all__ = ["MISS", "Derived", "Field", "Router"]


def _bail(*args: Any, **kwargs: Any) -> None:
    # The ``warn`` a check gets on a fast path: a check that would warn sends the value to the
    # checked path, which runs the check again and reports the warning there.
    raise Fallback


@attrs.frozen
class Field:
    """How generated code reads one field of a class."""

    key: str  # the wire name
    name: str  # the ``__init__`` keyword
    kind: str  # "any" | "check" | "call" | "content" | "list"
    check: str  # for "check": an expression over {x} (and {h}, the helper)
    helper: Any  # for "call"/"content": the reader (or validator); for a literal: the allowed strings
    required: bool  # absent, the checked path would refuse the object
    written: bool  # the encoder always writes it (no default, or a default that is not None)
    default: Any  # the value an absent field takes


_BUILD, _VALIDATE, _ROUTE = "build", "validate", "route"


#: What a shape's route function returns, having done nothing, for an object of other keys than its shape's.
MISS: Any = object()


def _missed(value: Any, session: Any, index: int) -> Any:
    return MISS


class Router:
    """A front-end reader: ``router(value, session, index)`` hands a plain ``value``'s fields to the route.

    ``shapes`` holds the function of each shape live in its ``cache`` (shape -> function taking the same
    arguments); calling the router with another finds or compiles one (see
    :class:`~agui_client.wire.shapes.ShapeCache`: the allowance in force pays for a compile). ``last`` is the
    function of the plain shape the router read last: a caller may call it first on any object, and call the
    router only when it returns :data:`MISS`. A shape's function counts the object's keys and reads every key of
    its shape before it checks or calls anything, and returns ``MISS`` when the count differs or a key is
    absent; an object of as many keys that has them all has no other key, so it is read exactly as its own
    shape's function would read it (the functions read by key: the keys' order changes nothing). Trying it costs
    a ``len()`` where finding the shape costs a tuple of the keys and its hash: some 0.1 us an event of the
    1.7-1.8 a chat stream's replay costs, measured on the shared 2-core machine. (One attribute, the function
    that checks its own size: a thread that reads it while another sets it gets one whole function, never one
    shape's size with another's function.)
    """

    __slots__ = ("shapes", "cache", "_generic", "last")

    def __init__(self, cache: ShapeCache, generic: Callable[..., Any]) -> None:
        self.shapes = cache.live
        self.cache = cache
        self._generic = generic
        self.last: Callable[..., Any] = _missed

    def __call__(self, value: Any, session: Any, index: int) -> Any:
        if type(value) is not dict:
            raise Fallback
        shape = tuple(value)
        built = self.shapes.get(shape)
        if built is None:
            built = self.cache.miss(shape)
            if built is None:
                return self._generic(value, session, index)  # (not compiled: one function for all shapes)
        if built is not refused:
            self.last = built
        return built(value, session, index)


class Derived:
    """The code derived from the wire types under one :class:`Policy` (the codec holds one)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._readers: dict[Any, Callable[[Any], Any] | None] = {}
        self._validators: dict[Any, Callable[[Any], Any] | None] = {}
        self._validated_types: dict[Callable[[Any], Any], Any] = {}  # a validator -> the type it validates
        #: Every reader's compiled shapes (see :mod:`~agui_client.wire.shapes`), the routers' included.
        self.caches: list[ShapeCache] = []
        self._caches: dict[Callable[[Any], Any], ShapeCache] = {}
        self._routers: list[Router] = []
        # Each router made, by what it was made from: asked again, the same router is handed back, so
        # repeated calls (an import run again, a test) do not add a router and a cache each.
        self._routed: dict[tuple[Any, ...], Router | None] = {}
        self._unions: dict[Callable[[Any], Any], tuple[dict[str, Callable[[Any], Any]], str]] = {}
        self._inline = _InlineLists(self)
        writers = Writers(policy)
        #: ``encoder(cls)``, ``constructor(cls)`` and ``replacer(cls, names)``: see :class:`Writers`.
        self.encoder = writers.encoder
        self.constructor = writers.constructor
        self.replacer = writers.replacer

    # -- readers and validators ----------------------------------------------------------------

    def reader(self, t: Any) -> Callable[[Any], Any] | None:
        """The fast decoder of a wire type (class, tagged union, or tuple of them), or ``None``."""
        return self._derive(t, _BUILD)

    def validator(self, t: Any) -> Callable[[Any], Any] | None:
        """A function that returns ``True`` for JSON in the plain shape that is also ``t``'s exact wire
        form, and raises :class:`Fallback` otherwise; ``None`` when ``t`` has none."""
        return self._derive(t, _VALIDATE)

    def router(self, cls: type, route: Callable[..., Any],
               overrides: Mapping[str, Callable[[Any], Any]] | None = None, *, vetted: bool = False) -> Router | None:
        """A front-end reader for ``cls``: ``front(value, session, index)`` calls
        ``route(session, index, *fields)`` with the values of a plain ``value`` as the event would hold
        them (every field of the class, in the class's order, an absent one as its default), or raises
        :class:`Fallback`. The route's parameters must be the class's fields, in order.

        Args:
            cls: the event class.
            route: the function the values go to.
            overrides: per wire name, a reader to use instead of the field's own (a snapshot's messages
                kept as JSON, a patch kept as the list it arrived as).
            vetted: the route runs the class's check itself, when it needs its verdict (raising
                :class:`Fallback` when the check refuses), so the reader does not.

        Asked again with the same arguments, it returns the router it made then.
        """
        key = (cls, route, tuple((overrides or {}).items()), vetted)
        if key in self._routed:
            return self._routed[key]
        fields = self._fields(cls, _ROUTE, overrides or {})
        made = None if fields is None else self._class(cls, fields, _ROUTE, route, vetted=vetted)
        assert made is None or isinstance(made, Router)
        if made is not None:
            self._routers.append(made)
        self._routed[key] = made
        return made

    def clear_shapes(self) -> None:
        """Forget every compiled shape, the routers' last shapes and the caches' counts (for a test that
        must not depend on what the process read before)."""
        for cache in self.caches:
            cache.clear()
        for router in self._routers:
            router.last = _missed

    def shapes_of(self, reader: Callable[[Any], Any]) -> dict[tuple[str, ...], Callable[[Any], Any]]:
        """A class reader's compiled shapes (shape -> function), for callers that dispatch themselves."""
        cache = self._caches.get(reader)
        return {} if cache is None else cache.live

    def cache_of(self, reader: Callable[[Any], Any]) -> ShapeCache | None:
        """A class reader's (or validator's) :class:`~agui_client.wire.shapes.ShapeCache`: its live and
        resting shapes and what its misses did; ``None`` for a reader of no class."""
        return self._caches.get(reader)

    def _derive(self, t: Any, mode: str) -> Callable[[Any], Any] | None:
        cache = self._readers if mode == _BUILD else self._validators
        try:
            return cache[t]
        except KeyError:
            pass
        cache[t] = None  # (a recursive type finds no fast path rather than recursing for ever)
        made: Callable[[Any], Any] | None
        union = self.policy.unions.get(t) if _hashable(t) else None
        if union is not None:
            made = self._union(union[0], union[1], mode)
        elif _is_tuple(t):
            item = get_args(t)[0]
            made = self._list(item, mode)
        elif isinstance(t, type) and attrs.has(t):
            fields = self._fields(t, mode, {})
            made = None if fields is None else self._class(t, fields, mode, None)
        else:
            made = None
        cache[t] = made
        if mode == _VALIDATE and made is not None:
            self._validated_types[made] = t
        return made

    def _fields(self, cls: type, mode: str, overrides: Mapping[str, Callable[[Any], Any]]) -> dict[str, Field] | None:
        policy = self.policy
        attrs.resolve_types(cls)
        wire_required = policy.wire_required.get(cls, frozenset())
        out: dict[str, Field] = {}
        for a in attrs.fields(cls):
            if isinstance(a.default, attrs.Factory):  # type: ignore[arg-type]
                return None
            key = policy.wire_name(a)
            optional = _is_optional(a.type)
            inner = _without_none(a.type) if optional else a.type
            required = a.default is attrs.NOTHING or key in wire_required
            written = a.default is attrs.NOTHING or a.default is not None
            if required and optional:
                return None
            name = a.alias or a.name
            default = None if a.default is attrs.NOTHING else a.default
            if key in overrides:
                out[key] = Field(key, name, "call", "", overrides[key], required, written, default)
                continue
            # (a route gets the values the event would hold: nested objects built, as when decoding)
            how = self._field(inner, _BUILD if mode == _ROUTE else mode)
            if how is None:
                return None
            kind, detail = how
            if kind == "literal":
                out[key] = Field(key, name, "check", "type({x}) is str and {x} in {h}", detail, required, written,
                                 default)
            elif kind == "check":
                out[key] = Field(key, name, "check", detail, None, required, written, default)
            else:
                out[key] = Field(key, name, kind, "", detail, required, written, default)
        return out

    def _field(self, t: Any, mode: str) -> tuple[str, Any] | None:
        """How a (non-None) field type is read: ``("any", None)``, ``("check", expression over {x})``,
        ``("literal", allowed strings)``, ``("list", item expression)``, ``("content", parts reader)`` or
        ``("call", reader)``; ``None`` when it cannot be read fast."""
        if t is Any:
            return "any", None
        if t is str:
            return "check", "type({x}) is str"
        if t is bool:
            return "check", "type({x}) is bool"
        if t is int:
            bound = self.policy.max_int
            return "check", f"type({{x}}) is int and {-bound} <= {{x}} <= {bound}"
        if t == dict[str, Any]:
            return "check", "type({x}) is dict"
        if get_origin(t) is Literal:
            allowed = get_args(t)
            if not all(type(a) is str for a in allowed):
                return None
            return "literal", frozenset(allowed)
        if _is_tuple(t) and get_args(t)[0] is Any:
            return "list", None  # a JSON array, as it is (a tuple of it when building)
        if _is_tuple(t) and get_args(t)[0] is str:
            return "list", "type({x}) is str"
        args = get_args(t)
        if get_origin(t) in (Union, UnionType) and len(args) == 2 and str in args:
            # ``str | tuple[Part, ...]``: a string as it is, else the parts
            parts = self._derive(next(a for a in args if a is not str), mode)
            return None if parts is None else ("content", parts)
        nested = self._derive(t, mode)
        return None if nested is None else ("call", nested)

    def _union(self, table: dict[str, type], tag: str, mode: str) -> Callable[[Any], Any] | None:
        members: dict[str, Callable[[Any], Any]] = {}
        for name, member in table.items():
            made = self._derive(member, mode)
            if made is None:
                return None
            members[name] = made
        get = members.get

        def union(value: Any) -> Any:
            if type(value) is not dict:
                raise Fallback
            name = value.get(tag)
            member = get(name) if type(name) is str else None
            if member is None:
                raise Fallback
            return member(value)
        self._unions[union] = (members, tag)
        return union

    def _list(self, item_type: Any, mode: str) -> Callable[[Any], Any] | None:
        item = self._derive(item_type, mode)
        if item is None:
            return None
        validating = mode == _VALIDATE
        if validating:
            inline = self._inline.list_valid(item_type)
            if inline is not None:
                return inline
        union = self._unions.get(item)
        if union is not None:
            # A list of a tagged union (a snapshot's messages, a message's parts): each item's shape, once
            # compiled, is built without going through the member's own dispatch, which compiles new
            # shapes on the allowance in force.
            members, tag = union
            get = members.get
            tables = {name: self.shapes_of(member) for name, member in members.items()}

            def dispatch(element: dict[str, Any]) -> Callable[[Any], Any]:
                """The member's own reader for ``element`` (whose shape is not compiled yet, or whose tag is
                missing, unknown or unhashable: then ``Fallback``). The loops below first try the compiled
                shape with two subscriptions, as they run once per message of a snapshot."""
                name = element.get(tag)
                member = get(name) if type(name) is str else None
                if member is None:
                    raise Fallback
                return member

            if validating:
                def union_list_valid(value: Any) -> Any:
                    if type(value) is not list:
                        raise Fallback
                    for element in value:
                        if type(element) is not dict:
                            raise Fallback
                        try:
                            built = tables[element[tag]][tuple(element)]
                        except (KeyError, TypeError):
                            built = dispatch(element)
                        built(element)
                    return True
                return union_list_valid

            def union_list(value: Any) -> Any:
                if type(value) is not list:
                    raise Fallback
                out: list[Any] = []
                append = out.append
                for element in value:
                    if type(element) is not dict:
                        raise Fallback
                    try:
                        built = tables[element[tag]][tuple(element)]
                    except (KeyError, TypeError):
                        built = dispatch(element)
                    append(built(element))
                return tuple(out)  # (validating returned union_list_valid above)
            return union_list
        cache = self._caches.get(item)
        shapes = None if cache is None else cache.live
        if shapes is None:
            def plain_list(value: Any) -> Any:
                if type(value) is not list:
                    raise Fallback
                built = tuple(map(item, value))
                return True if validating else built
            return plain_list
        shape_of = shapes.get

        if validating:
            def class_list_valid(value: Any) -> Any:
                # (as class_list below, keeping nothing)
                if type(value) is not list:
                    raise Fallback
                for element in value:
                    if type(element) is not dict:
                        raise Fallback
                    built = shape_of(tuple(element))
                    if built is None:
                        item(element)
                    else:
                        built(element)
                return True
            return class_list_valid

        def class_list(value: Any) -> Any:
            # A list of one class (an assistant's tool calls): a compiled shape is used directly.
            if type(value) is not list:
                raise Fallback
            out: list[Any] = []
            append = out.append
            for element in value:
                if type(element) is not dict:
                    raise Fallback
                built = shape_of(tuple(element))
                append(item(element) if built is None else built(element))
            return tuple(out)  # (validating returned class_list_valid above)
        return class_list

    def _class(self, cls: type, fields: dict[str, Field], mode: str,
               route: Callable[..., Any] | None, *, vetted: bool = False) -> Callable[..., Any]:
        """A reader specialised on the *shape* of the object (its keys, in order).

        Each shape seen gets its own generated function that reads exactly those keys and passes
        exactly those keywords (the callee fills the defaults), which is much cheaper than probing
        every field.
        """
        policy = self.policy
        tag = policy.tag_of(cls)
        check = None if vetted else policy.checks.get(cls)
        # Keys that are no field: the tag (any non-null value where a union dispatched on it, and the
        # class's check decides the rest), and for a tagged class the other tag name, which the checked
        # path ignores. A validated object holds its own tag and nothing else: its JSON is its wire form.
        tags: dict[str, bool] = {}  # key -> required
        if tag is not None:
            if tag[0] not in fields:
                tags[tag[0]] = mode == _VALIDATE
            if mode != _VALIDATE:
                for other in ("type", "role"):
                    if other not in fields and other not in tags:
                        tags[other] = False
        needed = frozenset([key for key, f in fields.items() if f.required or (mode == _VALIDATE and f.written)]
                           + [key for key, required in tags.items() if required])
        setters = writers.slot_setters(cls) if mode == _BUILD else None
        callee: Any = route if mode == _ROUTE else cls
        field_error = policy.field_error

        def body(shape: tuple[str, ...], namespace: dict[str, Any], pad: str, p: str,
                 read: bool = False) -> tuple[list[str], list[Any]]:
            # The lines that check (and read) object ``v`` of this shape: one shape's function, or one
            # branch of a list validator that holds several (``p`` keeps their names apart). With ``read``,
            # the keys were read already, each into the name it is checked under (``reads``).
            namespace.update({"FB": Fallback, "bail": _bail, "FE": field_error, f"{p}check": check})
            lines: list[str] = []
            given: list[tuple[str, str]] = []
            for i, key in enumerate(shape):
                x = f"{p}x{i}"
                if key in tags:
                    # The checked path refuses a null tag. (A validated object is reached through its
                    # union, which read the tag as a string, or holds a tag its class's check reads.)
                    if mode != _VALIDATE:
                        lines.append(f"{pad}if {p}t{i} is None: raise FB" if read else
                                     f"{pad}if v[{key!r}] is None: raise FB")
                    continue
                field = fields[key]
                if not read:
                    lines.append(f"{pad}{x} = v[{key!r}]")
                self._emit(lines, namespace, field, x, i, pad, mode, p)
                given.append((field.name, x))
            if check is not None:
                lines += [f"{pad}try:", f"{pad}    if {p}check(v, bail) is not None: raise FB", f"{pad}except FE:",
                          f"{pad}    raise FB from None"]
            return lines, given

        def plain_shape(shape: tuple[str, ...]) -> bool:
            return needed <= set(shape) and all(key in fields or key in tags for key in shape)

        def reads(shape: tuple[str, ...]) -> list[str]:
            # A route's function counts and reads its keys first, all of them: an object of another count
            # or without one of them is another shape, and gets MISS with nothing done (see Router).
            names = [f"t{i}" if key in tags else f"x{i}" for i, key in enumerate(shape)]
            return [f"    if len(v) != {len(shape)}: return MISS", "    try:",
                    *[f"        {name} = v[{key!r}]" for name, key in zip(names, shape, strict=True)],
                    "    except KeyError:", "        return MISS"]

        def for_shape(shape: tuple[str, ...]) -> Callable[..., Any]:
            # (asked only of a plain shape: the cache refuses any other, and the checked path says why)
            namespace: dict[str, Any] = {"cls": cls, "R": callee, "MISS": MISS}
            lines = ["def fast(v, S, I):", *reads(shape)] if mode == _ROUTE else ["def fast(v):"]
            checks, given = body(shape, namespace, "    ", "", read=mode == _ROUTE)
            lines += checks
            lines += _finish(mode, namespace, setters, given, fields)
            exec("\n".join(lines), namespace)  # noqa: S102 - generated from the class's own fields
            built: Callable[..., Any] = namespace["fast"]
            return built

        generic = self._generic(cls, fields, tags, check, mode, callee)
        cache = ShapeCache(for_shape, plain_shape)
        self.caches.append(cache)
        if mode == _ROUTE:
            return Router(cache, generic)
        shapes, miss = cache.live, cache.miss

        def fast(value: Any) -> Any:
            if type(value) is not dict:
                raise Fallback
            shape = tuple(value)
            built = shapes.get(shape)
            if built is None:
                built = miss(shape)
                if built is None:
                    return generic(value)  # (not compiled: one function for all shapes, never one per object)
            return built(value)
        self._caches[fast] = cache
        return fast

    def _emit(self, lines: list[str], namespace: dict[str, Any], field: Field, x: str, i: int, pad: str,
              mode: str, p: str = "") -> None:
        """The generated lines that check (or read) field ``x``, the same in every reader (``p`` prefixes the
        names the lines put in ``namespace``, so that several shapes' lines can share one function)."""
        if field.kind == "any":
            if not field.required:
                lines.append(f"{pad}if {x} is None: raise FB")
        elif field.kind == "check":
            namespace[f"{p}h{i}"] = field.helper
            lines.append(f"{pad}if not ({field.check.format(x=x, h=f'{p}h{i}')}): raise FB")
        elif field.kind == "list":
            lines.append(f"{pad}if type({x}) is not list: raise FB")
            if field.helper is not None:
                lines.append(f"{pad}for e in {x}:")
                lines.append(f"{pad}    if not ({field.helper.format(x='e')}): raise FB")
            if mode == _BUILD:
                lines.append(f"{pad}{x} = tuple({x})")
        elif field.kind == "content":  # a string as it is, else content parts (no call for the common string)
            namespace[f"{p}c{i}"] = field.helper
            call = f"{p}c{i}({x})" if mode == _VALIDATE else f"{x} = {p}c{i}({x})"
            lines.append(f"{pad}if type({x}) is not str: {call}")
        elif field.helper in self._caches:
            # A nested object (a tool call's function): its shape, if compiled, is read without a call
            # through the class's dispatch; anything else goes through it (which decides, or compiles).
            namespace[f"{p}c{i}"] = field.helper
            namespace[f"{p}k{i}"] = self._caches[field.helper].live.get
            target = "_" if mode == _VALIDATE else x
            lines += [f"{pad}if type({x}) is not dict: raise FB",
                      f"{pad}{p}b{i} = {p}k{i}(tuple({x}))",
                      f"{pad}{target} = {p}c{i}({x}) if {p}b{i} is None else {p}b{i}({x})"]
        else:
            namespace[f"{p}c{i}"] = field.helper
            lines.append(f"{pad}{'_' if mode == _VALIDATE else x} = {p}c{i}({x})")

    def _generic(self, cls: type, fields: dict[str, Field], tags: dict[str, bool], check: Check | None, mode: str,
                 callee: Any) -> Callable[..., Any]:
        """The reader for any shape of ``cls``: probes every field (slower than a shape's own)."""
        namespace: dict[str, Any] = {"FB": Fallback, "R": callee, "check": check, "bail": _bail, "M": _ABSENT,
                                     "FE": self.policy.field_error, "cls": self.constructor(cls)}
        head = "def fast(v, S, I):" if mode == _ROUTE else "def fast(v):"
        lines = [head, "    g = v.get", "    n = 0", "    kw = {}"]
        counted = 0
        for i, (key, field) in enumerate(fields.items()):
            x = f"x{i}"
            needed = field.required or (mode == _VALIDATE and field.written)
            lines.append(f"    {x} = g({key!r}, M)")
            if needed:
                counted += 1
                lines.append(f"    if {x} is M: raise FB")
            else:
                lines += [f"    if {x} is not M:", "        n += 1"]
            pad = "    " if needed else "        "
            self._emit(lines, namespace, field, x, i, pad, mode)
            lines.append(f"{pad}kw[{field.name!r}] = {x}")
        for i, (key, required) in enumerate(tags.items()):
            lines.append(f"    t{i} = g({key!r}, M)")
            if required:
                counted += 1
                lines += [f"    if t{i} is M or t{i} is None: raise FB"]
            else:
                lines += [f"    if t{i} is not M:", "        n += 1", f"        if t{i} is None: raise FB"]
        lines.append(f"    if len(v) != n + {counted}: raise FB")  # an unknown key: the checked path warns
        if check is not None:
            lines += ["    try:", "        if check(v, bail) is not None: raise FB", "    except FE:",
                      "        raise FB from None"]
        if mode == _VALIDATE:
            lines.append("    return True")
        elif mode == _ROUTE:
            for i, field in enumerate(fields.values()):
                namespace[f"d{i}"] = field.default
            values = ", ".join(f"(d{i} if x{i} is M else x{i})" for i in range(len(fields)))
            lines.append(f"    return R(S, I, {values})")
        else:
            lines.append("    return cls(**kw)")
        exec("\n".join(lines), namespace)  # noqa: S102 - generated from the class's own fields
        built: Callable[..., Any] = namespace["fast"]
        return built


class _InlineLists:
    """The validators of lists of objects a :class:`Derived` writes as one function each (see
    :meth:`list_valid`): its field readings, with the per-object work around them written out."""

    def __init__(self, derived: Derived) -> None:
        self._derived = derived
        self.policy = derived.policy

    def list_valid(self, item_type: Any) -> Callable[[Any], Any] | None:
        """A validator of a list of a class or of a tagged union's members (a snapshot's messages, a
        message's tool calls), as one generated function, or ``None`` when a member cannot be inlined.

        A snapshot holds thousands of small objects, so what costs is the work per object around the
        checks: a call, the shape's key tuple, its lookup. Here each object's checks are written inline,
        nested objects and lists of them included, and a class's optional fields are probed only when
        the object holds more keys than the class needs (most hold exactly those). It accepts what the
        classes' own validators accept: every key the encoder writes and the tag (equal to the class's
        own), each of its type, nothing unknown, and the class's check.
        """
        namespace: dict[str, Any] = {"FB": Fallback, "bail": _bail, "FE": self.policy.field_error, "M": _ABSENT}
        lines = ["def valid(value):", "    if type(value) is not list: raise FB", "    try:"]
        if not self._inline_items(item_type, "value", "        ", "", lines, namespace, 0):
            return None
        lines += ["    except (KeyError, TypeError):", "        raise FB from None",  # a key absent, an unhashable tag
                  "    return True"]
        exec("\n".join(lines), namespace)  # noqa: S102 - generated from the classes' own fields
        valid: Callable[[Any], Any] = namespace["valid"]
        return valid

    def _inline_items(self, item_type: Any, seq: str, pad: str, p: str, lines: list[str],
                      namespace: dict[str, Any], depth: int) -> bool:
        """The lines that check each object of list ``seq`` (a list already) inline; ``False`` when they
        cannot be written (a class whose fields are not all readable fast)."""
        lines.append(f"{pad}for {p}v in {seq}:")
        return self._inline_value(item_type, f"{p}v", pad + "    ", p, lines, namespace, depth)

    def _inline_value(self, t: Any, v: str, pad: str, p: str, lines: list[str], namespace: dict[str, Any],
                      depth: int) -> bool:
        """The lines that check ``v`` as a ``t`` (a class or a tagged union) inline, or ``False``."""
        lines.append(f"{pad}if type({v}) is not dict: raise FB")
        union = self.policy.unions.get(t) if _hashable(t) else None
        if union is None:
            return isinstance(t, type) and self._inline_object(t, v, pad, f"{p}c_", lines, namespace, depth,
                                                               tag_known=False)
        table, tag = union
        lines.append(f"{pad}{p}t = {v}[{tag!r}]")
        for j, (name, cls) in enumerate(table.items()):  # (in the table's order: the policy's choice)
            lines.append(f"{pad}{'elif' if j else 'if'} {p}t == {name!r}:")
            if not self._inline_object(cls, v, pad + "    ", f"{p}m{j}_", lines, namespace, depth, tag_known=True):
                return False
        lines += [f"{pad}else:", f"{pad}    raise FB"]  # another tag, or not a string
        return True

    def _inline_object(self, cls: type, v: str, pad: str, p: str, lines: list[str], namespace: dict[str, Any],
                       depth: int, *, tag_known: bool) -> bool:
        """The lines that check object ``v`` (a dict already) as a ``cls`` inline (see :meth:`_list_valid`)."""
        fields = self._derived._fields(cls, _VALIDATE, {})
        if fields is None:
            return False
        tag = self.policy.tag_of(cls)
        needed = 0
        if tag is not None and tag[0] not in fields:
            needed += 1
            if not tag_known:
                lines.append(f"{pad}if {v}[{tag[0]!r}] != {tag[1]!r}: raise FB")
        optional: list[tuple[int, str, Field]] = []
        for i, (key, field) in enumerate(fields.items()):
            if field.required or field.written:
                needed += 1
                lines.append(f"{pad}{p}x{i} = {v}[{key!r}]")  # (a KeyError: absent)
                self._emit_inline(lines, namespace, field, f"{p}x{i}", i, pad, p, depth)
            else:
                optional.append((i, key, field))
        if optional:
            # Probed in the class's order, and no further once every key is accounted for.
            lines += [f"{pad}{p}l = len({v})", f"{pad}if {p}l != {needed}:", f"{pad}    {p}n = {needed}"]
            inner = pad + "    "
            for k, (i, key, field) in enumerate(optional):
                if k:
                    lines.append(f"{inner}if {p}n != {p}l:")
                    inner += "    "
                lines += [f"{inner}{p}x{i} = {v}.get({key!r}, M)", f"{inner}if {p}x{i} is not M:",
                          f"{inner}    {p}n += 1"]
                self._emit_inline(lines, namespace, field, f"{p}x{i}", i, inner + "    ", p, depth)
            lines.append(f"{inner}if {p}n != {p}l: raise FB")  # an unknown key
        else:
            lines.append(f"{pad}if len({v}) != {needed}: raise FB")
        check = self.policy.checks.get(cls)
        if check is not None and not (cls in self.policy.tag_checks and tag is not None):
            namespace[f"{p}check"] = check
            lines += [f"{pad}try:", f"{pad}    if {p}check({v}, bail) is not None: raise FB", f"{pad}except FE:",
                      f"{pad}    raise FB from None"]
        return True

    def _emit_inline(self, lines: list[str], namespace: dict[str, Any], field: Field, x: str, i: int, pad: str,
                     p: str, depth: int) -> None:
        """:meth:`_emit` for a validator, with a nested object or list of objects checked inline."""
        target = self._derived._validated_types.get(field.helper) if field.kind in ("call", "content") else None
        if target is not None and depth < 4:
            inner: list[str] = []
            inner_pad = pad
            if field.kind == "content":  # a string as it is, else a list of parts
                inner.append(f"{pad}if type({x}) is not str:")
                inner_pad += "    "
            q = f"{p}{i}_"
            if _is_tuple(target):
                inner.append(f"{inner_pad}if type({x}) is not list: raise FB")
                written = self._inline_items(get_args(target)[0], x, inner_pad, q, inner, namespace, depth + 1)
            else:
                written = self._inline_value(target, x, inner_pad, q, inner, namespace, depth + 1)
            if written:
                lines += inner
                return
        self._derived._emit(lines, namespace, field, x, i, pad, _VALIDATE, p)



def _finish(mode: str, namespace: dict[str, Any], setters: list[tuple[str, Any, Any]] | None,
            given: list[tuple[str, str]], fields: Mapping[str, Field]) -> list[str]:
    if mode == _VALIDATE:
        return ["    return True"]
    if mode == _ROUTE:
        # Every field, in the class's order: a value the object gave, else the field's default.
        supplied = dict(given)
        values = []
        for j, field in enumerate(fields.values()):
            if field.name in supplied:
                values.append(supplied[field.name])
            else:
                namespace[f"d{j}"] = field.default
                values.append(f"d{j}")
        return [f"    return R(S, I, {', '.join(values)})"]
    if setters is None:
        return [f"    return cls({', '.join(f'{name}={x}' for name, x in given)})"]
    # Built slot by slot: the given keywords, else the defaults (what the frozen __init__ does).
    namespace["new"] = object.__new__
    supplied = dict(given)
    lines = ["    o = new(cls)"]
    for j, (name, setter, default) in enumerate(setters):
        namespace[f"s{j}"] = setter
        if name in supplied:
            lines.append(f"    s{j}(o, {supplied[name]})")
        else:
            namespace[f"d{j}"] = default
            lines.append(f"    s{j}(o, d{j})")
    lines.append("    return o")
    return lines



class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


_ABSENT: Any = _Absent()


def _hashable(t: Any) -> bool:
    try:
        hash(t)
    except TypeError:
        return False
    return True


def _is_tuple(t: Any) -> bool:
    args = get_args(t)
    return get_origin(t) is tuple and len(args) == 2 and args[1] is Ellipsis


def _is_optional(t: Any) -> bool:
    return get_origin(t) in (Union, UnionType) and type(None) in get_args(t)


def _without_none(t: Any) -> Any:
    rest = tuple(arg for arg in get_args(t) if arg is not type(None))
    return rest[0] if len(rest) == 1 else Union[rest]  # noqa: UP007 - a runtime union object

