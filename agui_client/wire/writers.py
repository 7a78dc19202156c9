"""Code derived from the wire types to write them: an encoder per class and a slot-filling constructor.

The other direction from :mod:`~agui_client.wire.derive`'s readers: an **encoder** per class is the
converter's unstructuring written out (tag first, camelCase keys, a ``None`` left out where ``None`` is
the default), checking as it goes that the values are plain JSON, and raising
:class:`~agui_client.wire.policy.Fallback` for any value it cannot vouch for; a **constructor** per
plain slotted class fills the slots directly (what ``__init__`` does, at about half the cost), and the
readers build their objects the same way (:func:`slot_setters`). Each is compiled once per class and
cached.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args

import attrs

from .policy import Fallback, Policy

__all__ = ["Writers", "replacer", "slot_setters"]


class Writers:
    """The encoders and slot-filling constructors derived from the wire classes under one :class:`Policy`."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._encoders: dict[type, Callable[[Any], dict[str, Any]]] = {}
        self._constructors: dict[type, Callable[..., Any]] = {}
        self._replacers: dict[tuple[type, tuple[str, ...]], Callable[..., Any]] = {}

    def encoder(self, cls: type) -> Callable[[Any], dict[str, Any]]:
        """``encode(obj) -> dict`` for one wire class; raises :class:`Fallback` for a value it cannot
        vouch for (not plain JSON, or an object of a class it does not know)."""
        found = self._encoders.get(cls)
        if found is None:
            if cls not in self.policy.encodable:
                raise KeyError(cls)
            found = self._encoders[cls] = self._encoder(cls)
        return found

    def _encoder(self, cls: type) -> Callable[[Any], dict[str, Any]]:
        policy = self.policy
        tag = policy.tag_of(cls)
        namespace: dict[str, Any] = {"plain": _plain, "FB": Fallback, "nested": self._nested}
        lines = [f"def encode_{cls.__name__}(o):", f"    d = {{{tag[0]!r}: {tag[1]!r}}}" if tag else "    d = {}"]
        for a in attrs.fields(attrs.resolve_types(cls)):
            key = policy.wire_name(a)
            pad = "    "
            lines.append(f"    v = o.{a.name}")
            if a.default is None:  # the converter leaves such a field out when it is None
                lines.append("    if v is not None:")
                pad = "        "
            if a.type in (str, str | None):
                lines += [f"{pad}if type(v) is not str:", f"{pad}    raise FB", f"{pad}d[{key!r}] = v"]
            elif a.type in (Any, dict[str, Any], dict[str, Any] | None):
                lines += [f"{pad}if not plain(v):", f"{pad}    raise FB", f"{pad}d[{key!r}] = v"]
            else:
                # Content parts, tool calls, sources: a tuple becomes a list and a wire class its dict
                # (a str, where the type admits one, stays as it is).
                if str in get_args(a.type):
                    lines += [f"{pad}if type(v) is str:", f"{pad}    d[{key!r}] = v", f"{pad}elif type(v) is tuple:"]
                else:
                    lines += [f"{pad}if type(v) is tuple:"]
                lines += [f"{pad}    d[{key!r}] = [nested(x) for x in v]", f"{pad}else:",
                          f"{pad}    d[{key!r}] = nested(v)"]
        lines.append("    return d")
        exec("\n".join(lines), namespace)  # noqa: S102 - code generated from the wire classes' own fields
        function: Callable[[Any], dict[str, Any]] = namespace[f"encode_{cls.__name__}"]
        return function

    def _nested(self, value: Any) -> Any:
        cls = type(value)
        if cls not in self.policy.encodable:
            raise Fallback  # (a subclass, or not a wire class: the converter decides)
        return self.encoder(cls)(value)

    def constructor(self, cls: type) -> Callable[..., Any]:
        """A constructor equivalent to ``cls(**kwargs)`` for a frozen slotted attrs class, or ``cls``."""
        found = self._constructors.get(cls)
        if found is None:
            found = self._constructors[cls] = _compile_constructor(cls)
        return found

    def replacer(self, cls: type, names: tuple[str, ...]) -> Callable[..., Any]:
        """``replace(obj, *values)``: a copy of ``obj`` (a ``cls``) with the fields ``names`` set to
        ``values``, in that order, and the others shared; ``attrs.evolve`` at a quarter of its cost
        (0.5 us against 1.9 for a message). See :func:`replacer`."""
        key = (cls, names)
        found = self._replacers.get(key)
        if found is None:
            found = self._replacers[key] = replacer(cls, names)
        return found


def _plain(value: Any) -> bool:
    """Whether ``value`` holds only dicts, lists, tuples, str, int, bool, None and finite floats."""
    from .values import plain_json

    return plain_json(value)


def slot_setters(cls: type) -> list[tuple[str, Any, Any]] | None:
    """Per field of ``cls``, in order: its ``__init__`` keyword, its slot's setter and its default.

    A frozen attrs ``__init__`` sets each field through ``object.__setattr__``; generated code that
    fills the slots directly makes the same instance for about half the cost. Only for a plain
    slotted class, whose ``__init__`` does nothing else (no validator, converter, factory or hook);
    ``None`` otherwise.
    """
    if not attrs.has(cls) or "__attrs_post_init__" in vars(cls) or "__attrs_pre_init__" in vars(cls):
        return None
    fields = attrs.fields(cls)
    slots = vars(cls).get("__slots__")
    if slots is None or set(slots) - {"__weakref__"} != {a.name for a in fields}:
        return None  # not slotted, or extra slots (a cached hash) that __init__ would fill
    setters = []
    for a in fields:
        if not a.init or a.validator is not None or a.converter is not None \
                or isinstance(a.default, attrs.Factory) or a.alias is None:  # type: ignore[arg-type]
            return None
        descriptor = vars(cls).get(a.name)
        if descriptor is None or type(descriptor).__name__ != "member_descriptor":
            return None
        setters.append((a.alias, descriptor.__set__, a.default))
    return setters


def _compile_constructor(cls: type) -> Callable[..., Any]:
    setters = slot_setters(cls)
    if setters is None:
        return cls
    namespace: dict[str, Any] = {"new": object.__new__, "cls": cls}
    parameters: list[str] = []
    body: list[str] = []
    for i, (name, setter, default) in enumerate(setters):
        namespace[f"set{i}"] = setter
        if default is attrs.NOTHING:
            parameters.append(name)
        else:
            namespace[f"default{i}"] = default
            parameters.append(f"{name}=default{i}")
        body.append(f"    set{i}(self, {name})")
    signature = f"*, {', '.join(parameters)}" if parameters else ""
    source = "\n".join([f"def build({signature}):", "    self = new(cls)", *body, "    return self"])
    exec(source, namespace)  # noqa: S102 - generated from the class's own fields
    built: Callable[..., Any] = namespace["build"]
    built.__name__ = built.__qualname__ = f"build_{cls.__name__}"
    built.__doc__ = f"Build a {cls.__name__} (as its constructor would, through the slots)."
    return built


def replacer(cls: type, names: tuple[str, ...]) -> Callable[..., Any]:
    """``replace(obj, *values)``: a copy of ``obj`` with the fields ``names`` set to ``values`` (in that
    order) and every other field's value shared, for a plain slotted class (see :func:`slot_setters`);
    built anew at each call (:meth:`Writers.replacer` keeps one per class and names).

    What ``attrs.evolve(obj, **dict(zip(names, values)))`` makes, without its reading of the fields and
    its keyword call to ``__init__`` each time: the slots are filled directly. A class that is not plain
    (a validator, a converter, extra slots) gets ``attrs.evolve`` itself.

    Raises:
        ValueError: a name is not one of ``cls``'s fields.
    """
    fields = attrs.fields(cls)
    unknown = set(names) - {a.name for a in fields}
    if unknown:
        raise ValueError(f"{cls.__name__} has no field {sorted(unknown)[0]!r}")
    setters = slot_setters(cls)
    if setters is None:
        def evolved(obj: Any, *values: Any) -> Any:
            return attrs.evolve(obj, **dict(zip(names, values, strict=True)))
        return evolved
    namespace: dict[str, Any] = {"new": object.__new__, "cls": cls}
    body = ["    copy = new(cls)"]
    for i, (a, (_, setter, _)) in enumerate(zip(fields, setters, strict=True)):
        namespace[f"set{i}"] = setter
        body.append(f"    set{i}(copy, {f'value{names.index(a.name)}' if a.name in names else f'obj.{a.name}'})")
    signature = ", ".join(["obj", *(f"value{j}" for j in range(len(names)))])
    source = "\n".join([f"def replace({signature}):", *body, "    return copy"])
    exec(source, namespace)  # noqa: S102 - generated from the class's own fields
    replace: Callable[..., Any] = namespace["replace"]
    replace.__name__ = replace.__qualname__ = f"replace_{cls.__name__}"
    replace.__doc__ = f"A copy of a {cls.__name__} with {', '.join(names)} replaced (the slots filled directly)."
    return replace
