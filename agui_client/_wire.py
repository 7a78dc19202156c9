"""Messages in wire form, built directly for ``ThreadState.dump()``, and the plain-JSON check.

A thread's save writes every message; cattrs' generic unstructuring (a union dispatch and a hook
call per field) was most of that cost. Each message class gets a function generated from its
fields with the converter's rules (the role tag first, camelCase keys, a ``None`` left out where
``None`` is the default, JSON-typed fields as they are); a field holding anything else (content
parts, tool calls) goes through the converter's own hook, so the output is ``codec.encode``'s.

While building, each function checks its values are plain JSON, so the list can say so
(:class:`PlainList`) and a store's encoder need not walk it again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, Union, get_args

import attrs

from . import codec
from .types import messages as msg

__all__ = ["PlainList", "encode_messages", "plain_json"]


class PlainList(list):  # type: ignore[type-arg]
    """A list of wire values already checked with :func:`plain_json` (so nobody walks it again).

    Only for data serialised at once and never changed (``dump(share_state=True)``).
    """


def plain_json(value: Any) -> bool:
    """Whether ``value`` holds only dicts, lists, tuples, str, int, bool, None and finite floats.

    Exact types: a subclass (an enum, say) is not plain. A :class:`PlainList` inside counts as
    checked. ``value`` must not be cyclic (a store runs this after orjson has written the data).
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
            if kind is str or kind is int or item is None or kind is bool or kind is PlainList:
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


def _generate(cls: type) -> Callable[[Any, list[Any]], bool]:
    """``encode(message, out) -> plain``: append the message's wire dict to ``out``."""
    tag = codec._tag_of(cls)
    assert tag is not None  # every message class has its role
    namespace: dict[str, Any] = {"plain": plain_json, "unstructure": codec._converter.unstructure}
    lines = [f"def encode_{cls.__name__}(o, out):", "    ok = True", f"    d = {{{tag[0]!r}: {tag[1]!r}}}"]
    for a in attrs.fields(attrs.resolve_types(cls)):
        key = codec._wire_name(a)
        pad = "    "
        lines.append(f"    v = o.{a.name}")
        if a.default is None:  # the converter leaves such a field out when it is None
            lines.append("    if v is not None:")
            pad = "        "
        if a.type in _STR_TYPES:
            lines += [f"{pad}d[{key!r}] = v", f"{pad}if type(v) is not str:", f"{pad}    ok = False"]
        elif a.type in _AS_IS_TYPES:
            lines += [f"{pad}d[{key!r}] = v", f"{pad}if ok and not plain(v):", f"{pad}    ok = False"]
        else:
            # The converter's unions dispatch on the value's class, as unstructure() does.
            converted = [f"{pad}v = unstructure(v)", f"{pad}d[{key!r}] = v", f"{pad}if ok and not plain(v):",
                         f"{pad}    ok = False"]
            if str in get_args(a.type):  # a str goes through the hook unchanged
                lines += [f"{pad}if type(v) is str:", f"{pad}    d[{key!r}] = v", f"{pad}else:"]
                lines += ["    " + line for line in converted]
            else:
                lines += converted
    lines += ["    out.append(d)", "    return ok"]
    exec("\n".join(lines), namespace)  # noqa: S102 - code generated from the message classes' own fields
    function: Callable[[Any, list[Any]], bool] = namespace[f"encode_{cls.__name__}"]
    return function


_ENCODERS: dict[type, Callable[[Any, list[Any]], bool]] = {
    cls: _generate(cls) for cls in get_args(msg.Message)
}
assert Union[tuple(_ENCODERS)] == msg.Message  # noqa: UP007 - the union the converter dispatches on


def encode_messages(messages: Iterable[Any], *, checked: bool = False) -> list[Any]:
    """``codec.encode(messages)`` as a list, built directly.

    Args:
        messages: the messages.
        checked: return a :class:`PlainList` when every value is plain JSON (only for data that is
            serialised at once and never changed).
    """
    out: list[Any] = []
    ok = True
    encoders = _ENCODERS
    for message in messages:
        encoder = encoders.get(type(message))
        if encoder is None:  # not a message class (a subclass, say): the converter decides
            out.append(codec.encode(message))
            ok = False
        elif not encoder(message, out):
            ok = False
    return PlainList(out) if checked and ok else out
