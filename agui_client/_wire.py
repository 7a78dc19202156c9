"""Messages in wire form, built directly for ``ThreadState.dump()``, and the plain-JSON check.

A thread's save writes every message, and every run's request sends them all; cattrs' generic
unstructuring (a union dispatch and a hook call per field) was most of that cost. Each wire class
of ``types.messages`` (messages, tool calls, content parts, sources) gets a function generated
from its fields with the converter's rules: the tag first, camelCase keys, a ``None`` left out
where ``None`` is the default, JSON-typed fields as they are, a tuple of wire objects as a list of
their dicts. The output is ``codec.encode``'s (a test compares them over the codec's corpus).

While building, each function checks its values are plain JSON and hands the message to the
converter when one is not, so the list can say it was checked (:class:`PlainList`) and a store's
encoder need not walk it again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, get_args

import attrs

from . import codec
from .types import messages as msg

__all__ = ["PlainDict", "PlainList", "encode_messages", "plain_json"]


class PlainList(list):  # type: ignore[type-arg]
    """A list of wire values already checked with :func:`plain_json` (so nobody walks it again).

    Only for data serialised at once and never changed (``dump(share_state=True)``).
    """


class PlainDict(dict):  # type: ignore[type-arg]
    """A dict of wire values already known to be plain JSON (a shallow copy; see :class:`PlainList`)."""


def plain_json(value: Any) -> bool:
    """Whether ``value`` holds only dicts, lists, tuples, str, int, bool, None and finite floats.

    Exact types: a subclass (an enum, say) is not plain. A :class:`PlainList` or :class:`PlainDict`
    inside counts as checked. ``value`` must not be cyclic (a store runs this after orjson has written the data).
    """
    stack = [value]
    pop = stack.pop
    push = stack.append
    finite = math.isfinite
    while stack:
        node = pop()
        kind = type(node)
        if kind is dict:
            items: Any = node.values()
        elif kind is list or kind is tuple:
            items = node
        else:
            items = (node,)
        for item in items:
            kind = type(item)
            if kind is str or kind is int or item is None or kind is bool or kind is PlainList or kind is PlainDict:
                continue
            if kind is float:
                if not finite(item):
                    return False
            elif kind is dict or kind is list or kind is tuple:
                push(item)
            else:
                return False
    return True


_STR_TYPES = (str, str | None)
_AS_IS_TYPES = (Any, dict[str, Any], dict[str, Any] | None)


class _NotPlain(Exception):
    """A value is not plain JSON (or not a known wire class): the converter encodes that message."""


def _generate(cls: type, encoders: dict[type, Callable[[Any], dict[str, Any]]]) -> Callable[[Any], dict[str, Any]]:
    """``encode(obj) -> dict`` for one wire class; raises :class:`_NotPlain` for what it cannot vouch for."""
    tag = codec._tag_of(cls)
    namespace: dict[str, Any] = {"plain": plain_json, "NotPlain": _NotPlain, "nested": _nested(encoders)}
    lines = [f"def encode_{cls.__name__}(o):", f"    d = {{{tag[0]!r}: {tag[1]!r}}}" if tag else "    d = {}"]
    for a in attrs.fields(attrs.resolve_types(cls)):
        key = codec._wire_name(a)
        pad = "    "
        lines.append(f"    v = o.{a.name}")
        if a.default is None:  # the converter leaves such a field out when it is None
            lines.append("    if v is not None:")
            pad = "        "
        if a.type in _STR_TYPES:
            lines += [f"{pad}if type(v) is not str:", f"{pad}    raise NotPlain", f"{pad}d[{key!r}] = v"]
        elif a.type in _AS_IS_TYPES:
            lines += [f"{pad}if not plain(v):", f"{pad}    raise NotPlain", f"{pad}d[{key!r}] = v"]
        else:
            # Content parts, tool calls, sources: the converter turns a tuple into a list and a wire
            # class into its dict (a str, where the type admits one, stays as it is).
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


def _nested(encoders: dict[type, Callable[[Any], dict[str, Any]]]) -> Callable[[Any], Any]:
    def nested(value: Any) -> Any:
        encoder = encoders.get(type(value))
        if encoder is None:
            raise _NotPlain
        return encoder(value)
    return nested


def _wire_classes() -> list[type]:
    return [c for c in vars(msg).values() if isinstance(c, type) and attrs.has(c) and c.__module__ == msg.__name__]


_ENCODERS: dict[type, Callable[[Any], dict[str, Any]]] = {}
_ENCODERS.update({cls: _generate(cls, _ENCODERS) for cls in _wire_classes()})
assert set(get_args(msg.Message)) <= set(_ENCODERS)


def encode_messages(messages: Iterable[Any], *, checked: bool = False) -> list[Any]:
    """``codec.encode(messages)`` as a list, built directly.

    Args:
        messages: the messages.
        checked: return a :class:`PlainList` when every value is plain JSON (only for data that is
            serialised at once and never changed).
    """
    out: list[Any] = []
    append = out.append
    ok = True
    encoders = _ENCODERS
    for message in messages:
        encoder = encoders.get(type(message))
        if encoder is not None:
            try:
                append(encoder(message))
                continue
            except _NotPlain:
                pass
        # Not a wire class (a subclass, say) or not plain JSON: the converter decides, unchecked.
        append(codec.encode(message))
        ok = False
    return PlainList(out) if checked and ok else out
