"""Python values that are JSON: what kind a value is, whether it is plain JSON, and its copies.

* :func:`describe` names a value's JSON kind for a message; :func:`plain_json` says whether a value
  holds only JSON's types (:class:`PlainList` / :class:`PlainDict` mark what was checked already);
  :func:`has_surrogate` finds half a character that UTF-8 cannot write; :func:`is_json` judges a text.
* :func:`copy_json` and :func:`deep_copy` copy JSON trees without recursion.

Reading and writing JSON text, with its defences, is :mod:`~agui_client.wire.jsonio`'s (stored
records :mod:`~agui_client.wire.records`', a large array slice by slice :mod:`~agui_client.wire.slices`').
"""

from __future__ import annotations

import copy
import json
import math
import re
from typing import Any

from .._inert import quoted_name

#: orjson, the optional faster parser and writer, or ``None`` when it is not installed: imported here
#: only, for this module and :mod:`~agui_client.wire.jsonio` (the package works without it; the
#: record and slice readers take it from jsonio, where a test can set it to ``None``).
ORJSON: Any
try:
    import orjson as ORJSON
except ImportError:  # pragma: no cover - exercised in environments without orjson
    ORJSON = None

__all__ = [
    "ORJSON",
    "describe",
    "shown_key",
    "plain_json",
    "has_surrogate",
    "PlainList",
    "PlainDict",
    "copy_json",
    "deep_copy",
    "foreign_copy",
    "is_json",
]

_JSON_CLASSES = (str, int, float, list, dict)

#: The most characters of an agent's key a message quotes (the wire's own keys are under 30).
KEY_CHARS = 100


def shown_key(key: str) -> str:
    """An object's key as a message quotes it: as every id the agent chose (``_inert.quoted_name``: its
    ``repr``, what ``repr`` leaves invisible escaped, cut past :data:`KEY_CHARS` characters with a digest
    of the whole). A key may be as long as an event (a megabyte), and a warning naming it is kept with the
    run's result and printed whole; two keys that differ past the cut still read differently. The pointer
    beside it keeps the key as it came."""
    return quoted_name(key, KEY_CHARS + 2)  # (+2: the quotes, so a key of KEY_CHARS is shown whole)


def describe(value: Any) -> str:
    """What kind of JSON value ``value`` is, for a message (``"a string"``, ``"null"`` …)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if type(value) not in _JSON_CLASSES and isinstance(value, _JSON_CLASSES):
        # (a subclass reads as what it derives from; the decoder takes the JSON types exactly)
        base = next(cls for cls in _JSON_CLASSES if isinstance(value, cls))
        return f"a {type(value).__name__}, not a plain {base.__name__}"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


class PlainList(list):  # type: ignore[type-arg]
    """A list of wire values already checked with :func:`plain_json` (so nobody walks it again).

    Only for data serialised at once and never changed (``ThreadState.dump(share_state=True)``).
    """


class PlainDict(dict):  # type: ignore[type-arg]
    """A dict of wire values already known to be plain JSON (a shallow copy; see :class:`PlainList`)."""


_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a UTF-16 surrogate (half of a character, which UTF-8 cannot encode).

    An ASCII string cannot (``isascii`` reads a flag the string keeps). Otherwise orjson, which refuses
    to write a surrogate and scans with SIMD, answers ten to thirty times faster than a regular
    expression reading every character (1 ms against 13 for 2.4 MB); without orjson, the expression.

    Example::

        >>> has_surrogate("caf\u00e9"), has_surrogate("half \ud83d")
        (False, True)
    """
    if text.isascii():
        return False
    if ORJSON is None:
        return _SURROGATE.search(text) is not None
    try:
        ORJSON.dumps(text)
    except TypeError:  # (orjson.JSONEncodeError: "surrogates not allowed")
        return True
    return False


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


def copy_json(value: Any) -> Any:
    """A deep copy of JSON data (through orjson when installed; :func:`deep_copy` otherwise)."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if ORJSON is not None:
        try:
            return ORJSON.loads(ORJSON.dumps(value))
        except (TypeError, ValueError):
            pass  # lone surrogates, integers beyond 64 bits, very deep values: the generic copy is right
    return deep_copy(value)


def foreign_copy(value: Any, plain: bool | None = None) -> Any:
    """A copy of JSON data that came with an object built elsewhere (an event, an interrupt), exactly as it is.

    The fast copy goes through orjson, which would quietly write ``NaN`` as ``null`` and a ``datetime``
    as a string; what is not plain JSON is deep-copied instead (a save then refuses it, as it must).
    ``plain``: whether ``value`` is plain JSON, if the caller knows already.
    """
    if plain if plain is not None else plain_json(value):
        return copy_json(value)
    return deep_copy(value)


def deep_copy(value: Any) -> Any:
    """``copy.deepcopy`` of a JSON-shaped tree without recursion.

    The decoder admits nesting to 512 levels, and ``copy.deepcopy`` recurses twice per level: a deep
    but valid state would end in a ``RecursionError`` (earlier still when the caller is deep). Dicts
    and lists are copied here level by level, a container met twice is copied once (as ``deepcopy``
    does, so a cycle ends); anything else is a leaf, deep-copied alone.
    """
    kind = type(value)
    if kind is not dict and kind is not list:
        return value if value is None or kind in (str, int, float, bool) else copy.deepcopy(value)
    root: Any = {} if kind is dict else []
    made: dict[int, Any] = {id(value): root}
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if type(source) is dict else enumerate(source)
        for key, item in items:
            kind = type(item)
            if kind is dict or kind is list:
                copied = made.get(id(item))
                if copied is None:
                    copied = made[id(item)] = {} if kind is dict else []
                    stack.append((item, copied))
            elif item is None or kind in (str, int, float, bool):
                copied = item
            else:
                copied = copy.deepcopy(item)
            if type(target) is dict:
                target[key] = copied
            else:
                target.append(copied)
    return root


def is_json(text: str) -> bool:
    """Whether ``text`` parses as JSON (any value; tool-call arguments are judged by this)."""
    try:
        if ORJSON is not None:
            ORJSON.loads(text)
        else:
            json.loads(text)
    except ValueError:
        try:
            json.loads(text)  # orjson refuses lone surrogates that JSON allows
        except (ValueError, RecursionError):  # (arguments nested deeper than a parser goes: not usable JSON)
            return False
    return True
